#include "option_dictionary.h"

#include <algorithm>
#include <functional>
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

// One known key of a dictionary and what its entry sets.
struct Field {
    const char* key;
    std::function<void(const OptionEntry&, const std::string&)> set;
};

Field flag_field(const char* key, bool& out) {
    return {key, [&out](const OptionEntry& entry, const std::string& shown) {
                out = typed_value<bool>(entry, shown, "a boolean (b)");
            }};
}

template <typename E, std::size_t N>
Field choice_field(const char* key, std::optional<E>& out, const EnumNames<E, N>& names) {
    return {key, [&out, &names](const OptionEntry& entry, const std::string& shown) {
                out = choice(entry, shown, names);
            }};
}

// Decodes `entries` into what `fields` point at, after the checks every dictionary gets
// (size, duplicates, unknown keys, which name the known ones in the order of `fields`).
void decode_fields(const std::vector<OptionEntry>& entries, const std::vector<Field>& fields) {
    if (entries.size() > kMaxOptions) {
        throw OptionError("too many options (" + std::to_string(entries.size()) + "; at most " +
                          std::to_string(kMaxOptions) + ")");
    }
    std::set<std::string> seen;
    for (const auto& entry : entries) {
        const std::string shown = escape_excerpt(entry.key);
        if (!seen.insert(entry.key).second) {
            throw OptionError("option '" + shown + "' is given more than once");
        }
        const auto field = std::find_if(fields.begin(), fields.end(),
                                        [&](const Field& f) { return entry.key == f.key; });
        if (field == fields.end()) {
            std::string known;
            for (const auto& f : fields) {
                known += (known.empty() ? "" : ", ") + std::string(f.key);
            }
            throw OptionError("unknown option '" + shown + "' (known: " + known + ")");
        }
        field->set(entry, shown);
    }
}

}  // namespace

RequestOptions decode_options(const std::vector<OptionEntry>& entries) {
    RequestOptions parsed;
    decode_fields(entries, {choice_field(dbus::kOptionMode, parsed.mode, kModeNames),
                            choice_field(dbus::kOptionStrategy, parsed.strategy, kStrategyNames),
                            flag_field(dbus::kOptionDryRun, parsed.dry_run),
                            flag_field(dbus::kOptionRefusePinned, parsed.refuse_pinned),
                            flag_field(dbus::kOptionForce, parsed.force),
                            flag_field(dbus::kOptionRestoreAffinity, parsed.restore_affinity)});
    return parsed;
}

HoldOptions decode_hold_options(const std::vector<OptionEntry>& entries) {
    HoldOptions parsed;
    decode_fields(entries, {choice_field(dbus::kOptionStrategy, parsed.strategy, kStrategyNames),
                            flag_field(dbus::kOptionRestore, parsed.restore),
                            flag_field(dbus::kOptionRefusePinned, parsed.refuse_pinned),
                            flag_field(dbus::kOptionForce, parsed.force)});
    return parsed;
}

ProfileOptions decode_profile_options(const std::vector<OptionEntry>& entries) {
    ProfileOptions parsed;
    decode_fields(entries, {choice_field(dbus::kOptionStrategy, parsed.strategy, kStrategyNames),
                            flag_field(dbus::kOptionDryRun, parsed.dry_run),
                            flag_field(dbus::kOptionRefusePinned, parsed.refuse_pinned),
                            flag_field(dbus::kOptionForce, parsed.force)});
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
