#include "options.h"

#include <set>

#include "input.h"
#include "names.h"

namespace cpuhpd {

namespace {

// The entry's value as a T, which the message calls `type` ("a string (s)").
template <typename T>
const T& typed_value(const OptionEntry& entry, const std::string& key, const char* type) {
    if (const auto* value = std::get_if<T>(&entry.value)) {
        return *value;
    }
    throw OptionError("option '" + key + "' must be " + type + ", not " +
                      escape_excerpt(entry.type));
}

// A string option naming one value of an enum's table.
template <typename E, std::size_t N>
E choice(const OptionEntry& entry, const std::string& key, const EnumNames<E, N>& names) {
    const std::string& text = typed_value<std::string>(entry, key, "a string (s)");
    if (const auto value = find_by_name(names, text)) {
        return *value;
    }
    throw OptionError("invalid " + key + " '" + escape_excerpt(text) + "': expected " +
                      alternatives(names));
}

}  // namespace

namespace {

// Calls `decode(entry, key)` for each entry after the checks every dictionary gets (size,
// duplicates); `decode` returns false for a key it does not know.
template <typename Decode>
void decode_entries(const std::vector<OptionEntry>& entries, const std::string& known,
                    Decode&& decode) {
    if (entries.size() > kMaxOptions) {
        throw OptionError("too many options (" + std::to_string(entries.size()) + "; at most " +
                          std::to_string(kMaxOptions) + ")");
    }
    std::set<std::string> seen;
    for (const auto& entry : entries) {
        const std::string key = escape_excerpt(entry.key);
        if (!seen.insert(entry.key).second) {
            throw OptionError("option '" + key + "' is given more than once");
        }
        if (!decode(entry, key)) {
            throw OptionError("unknown option '" + key + "' (known: " + known + ")");
        }
    }
}

}  // namespace

RequestOptions decode_options(const std::vector<OptionEntry>& entries) {
    RequestOptions parsed;
    decode_entries(entries,
                   std::string(dbus::kOptionMode) + ", " + dbus::kOptionStrategy + ", " +
                       dbus::kOptionDryRun + ", " + dbus::kOptionRefusePinned + ", " +
                       dbus::kOptionForce,
                   [&](const OptionEntry& entry, const std::string& key) {
                       if (entry.key == dbus::kOptionMode) {
                           parsed.mode = choice(entry, key, kModeNames);
                       } else if (entry.key == dbus::kOptionStrategy) {
                           parsed.strategy = choice(entry, key, kStrategyNames);
                       } else if (entry.key == dbus::kOptionDryRun) {
                           parsed.dry_run = typed_value<bool>(entry, key, "a boolean (b)");
                       } else if (entry.key == dbus::kOptionRefusePinned) {
                           parsed.refuse_pinned = typed_value<bool>(entry, key, "a boolean (b)");
                       } else if (entry.key == dbus::kOptionForce) {
                           parsed.force = typed_value<bool>(entry, key, "a boolean (b)");
                       } else {
                           return false;
                       }
                       return true;
                   });
    return parsed;
}

HoldOptions decode_hold_options(const std::vector<OptionEntry>& entries) {
    HoldOptions parsed;
    decode_entries(entries,
                   std::string(dbus::kOptionStrategy) + ", " + dbus::kOptionRestore + ", " +
                       dbus::kOptionRefusePinned + ", " + dbus::kOptionForce,
                   [&](const OptionEntry& entry, const std::string& key) {
                       if (entry.key == dbus::kOptionStrategy) {
                           parsed.strategy = choice(entry, key, kStrategyNames);
                       } else if (entry.key == dbus::kOptionRestore) {
                           parsed.restore = typed_value<bool>(entry, key, "a boolean (b)");
                       } else if (entry.key == dbus::kOptionRefusePinned) {
                           parsed.refuse_pinned = typed_value<bool>(entry, key, "a boolean (b)");
                       } else if (entry.key == dbus::kOptionForce) {
                           parsed.force = typed_value<bool>(entry, key, "a boolean (b)");
                       } else {
                           return false;
                       }
                       return true;
                   });
    return parsed;
}

ProfileOptions decode_profile_options(const std::vector<OptionEntry>& entries) {
    ProfileOptions parsed;
    decode_entries(entries,
                   std::string(dbus::kOptionStrategy) + ", " + dbus::kOptionDryRun + ", " +
                       dbus::kOptionRefusePinned + ", " + dbus::kOptionForce,
                   [&](const OptionEntry& entry, const std::string& key) {
                       if (entry.key == dbus::kOptionStrategy) {
                           parsed.strategy = choice(entry, key, kStrategyNames);
                       } else if (entry.key == dbus::kOptionDryRun) {
                           parsed.dry_run = typed_value<bool>(entry, key, "a boolean (b)");
                       } else if (entry.key == dbus::kOptionRefusePinned) {
                           parsed.refuse_pinned = typed_value<bool>(entry, key, "a boolean (b)");
                       } else if (entry.key == dbus::kOptionForce) {
                           parsed.force = typed_value<bool>(entry, key, "a boolean (b)");
                       } else {
                           return false;
                       }
                       return true;
                   });
    return parsed;
}

namespace {

void check_hold_name(const char* name, const std::string& text, std::size_t min_bytes,
                     std::size_t max_bytes) {
    if (text.size() < min_bytes || text.size() > max_bytes) {
        throw OptionError(std::string(name) + " must be " +
                          (min_bytes > 0 ? std::to_string(min_bytes) + "-" : "at most ") +
                          std::to_string(max_bytes) + " bytes, not " + std::to_string(text.size()));
    }
    for (const unsigned char c : text) {
        if (c < 0x20 || c == 0x7f) {
            throw OptionError(std::string(name) + " '" + escape_excerpt(text) +
                              "' has a control character");
        }
    }
}

}  // namespace

void check_hold_names(const std::string& who, const std::string& why) {
    check_hold_name("who", who, 1, 64);
    check_hold_name("why", why, 0, 256);
}

}  // namespace cpuhpd
