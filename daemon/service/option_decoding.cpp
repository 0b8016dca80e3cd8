#include "option_decoding.h"

#include <utility>
#include <vector>

#include "dbus_error.h"
#include "input.h"

namespace cpuhpd {

namespace {

OptionEntry entry_of(std::string key, const sdbus::Variant& value) {
    OptionEntry entry;
    entry.key = std::move(key);
    entry.type = value.peekValueType();
    if (value.containsValueOfType<std::string>()) {
        entry.value = value.get<std::string>();
    } else if (value.containsValueOfType<bool>()) {
        entry.value = value.get<bool>();
    }
    return entry;
}

// The dictionary in message order, duplicates included. The message's arguments were read
// already; rewinding moves only its read position. At most kMaxOptions + 1 entries are
// read: more is refused anyway.
std::vector<OptionEntry> option_entries(const sdbus::Message* message,
                                        const std::map<std::string, sdbus::Variant>& fallback,
                                        int strings_before) {
    std::vector<OptionEntry> entries;
    if (message == nullptr) {
        for (const auto& [key, value] : fallback) {
            entries.push_back(entry_of(key, value));
        }
        return entries;
    }
    auto& msg = const_cast<sdbus::Message&>(*message);
    msg.rewind(true);
    for (int i = 0; i < strings_before; ++i) {
        std::string skipped;  // the mask, the SMT state, HoldCpus's state, who and why
        msg >> skipped;
    }
    if (!msg.enterContainer("{sv}")) {
        throw sdbus::Error(kInvalidArgs, "cannot read the options dictionary");
    }
    while (entries.size() <= kMaxOptions && msg.enterDictEntry("sv")) {
        std::string key;
        sdbus::Variant value;
        msg >> key >> value;
        entries.push_back(entry_of(std::move(key), value));
        msg.exitDictEntry();
    }
    msg.clearFlags();
    return entries;
}

}  // namespace

RequestOptions read_request_options(const sdbus::Message* message,
                                    const std::map<std::string, sdbus::Variant>& fallback) {
    return decode_options(option_entries(message, fallback, 1));
}

HoldOptions read_hold_options(const sdbus::Message* message,
                              const std::map<std::string, sdbus::Variant>& fallback) {
    return decode_hold_options(option_entries(message, fallback, 4));
}

ProfileOptions read_profile_options(const sdbus::Message* message,
                                    const std::map<std::string, sdbus::Variant>& fallback,
                                    int strings_before) {
    return decode_profile_options(option_entries(message, fallback, strings_before));
}

}  // namespace cpuhpd
