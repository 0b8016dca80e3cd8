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

RequestOptions decode_options(const std::vector<OptionEntry>& entries) {
    if (entries.size() > kMaxOptions) {
        throw OptionError("too many options (" + std::to_string(entries.size()) + "; at most " +
                          std::to_string(kMaxOptions) + ")");
    }
    RequestOptions parsed;
    std::set<std::string> seen;
    for (const auto& entry : entries) {
        const std::string key = escape_excerpt(entry.key);
        if (!seen.insert(entry.key).second) {
            throw OptionError("option '" + key + "' is given more than once");
        }
        if (entry.key == dbus::kOptionMode) {
            parsed.mode = choice(entry, key, kModeNames);
        } else if (entry.key == dbus::kOptionStrategy) {
            parsed.strategy = choice(entry, key, kStrategyNames);
        } else if (entry.key == dbus::kOptionDryRun) {
            parsed.dry_run = typed_value<bool>(entry, key, "a boolean (b)");
        } else {
            throw OptionError("unknown option '" + key + "' (known: " + dbus::kOptionMode + ", " +
                              dbus::kOptionStrategy + ", " + dbus::kOptionDryRun + ")");
        }
    }
    return parsed;
}

}  // namespace cpuhpd
