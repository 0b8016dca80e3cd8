#include "options.h"

#include <set>

#include "input.h"

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

// A string option with a fixed set of values, parsed by `parse` (which throws
// std::invalid_argument for any other value).
template <typename Parse>
auto choice(const OptionEntry& entry, const std::string& key, Parse parse, const char* expected) {
    const std::string& text = typed_value<std::string>(entry, key, "a string (s)");
    try {
        return parse(text);
    } catch (const std::invalid_argument&) {
        throw OptionError("invalid " + key + " '" + escape_excerpt(text) + "': expected " +
                          expected);
    }
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
        if (entry.key == "mode") {
            parsed.mode = choice(entry, key, parse_mode, "atomic or best-effort");
        } else if (entry.key == "strategy") {
            parsed.strategy = choice(entry, key, parse_strategy, "auto, bulk, smt or per-cpu");
        } else if (entry.key == "dry_run") {
            parsed.dry_run = typed_value<bool>(entry, key, "a boolean (b)");
        } else {
            throw OptionError("unknown option '" + key + "' (known: mode, strategy, dry_run)");
        }
    }
    return parsed;
}

}  // namespace cpuhpd
