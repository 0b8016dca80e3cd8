#include "options.h"

#include <set>

#include "input.h"

namespace cpuhpd {

namespace {

const std::string& string_value(const OptionEntry& entry, const std::string& key) {
    if (const auto* text = std::get_if<std::string>(&entry.value)) {
        return *text;
    }
    throw OptionError("option '" + key + "' must be a string (s), not " +
                      escape_excerpt(entry.type));
}

// A string option with a fixed set of values, parsed by `parse` (which throws
// std::invalid_argument for any other value).
template <typename Parse>
auto choice(const OptionEntry& entry, const std::string& key, Parse parse, const char* expected) {
    const std::string& text = string_value(entry, key);
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
            const auto* flag = std::get_if<bool>(&entry.value);
            if (flag == nullptr) {
                throw OptionError("option 'dry_run' must be a boolean (b), not " +
                                  escape_excerpt(entry.type));
            }
            parsed.dry_run = *flag;
        } else {
            throw OptionError("unknown option '" + key + "' (known: mode, strategy, dry_run)");
        }
    }
    return parsed;
}

}  // namespace cpuhpd
