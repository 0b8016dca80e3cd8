// The options dictionaries (a{sv}) of the D-Bus methods, decoded and checked into the
// engine's typed options (options.h): the keys are the D-Bus contract's (dbus/names.h).
// Free of sdbus-c++: option_decoding.h copies the entries out of the message.
#pragma once

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "options.h"

namespace cpuhpd {

// One dictionary entry as it arrived, in message order (duplicates included).
struct OptionEntry {
    std::string key;
    // The value when it is a string or a boolean; monostate for any other type.
    std::variant<std::monostate, std::string, bool> value;
    std::string type;  // the value's D-Bus signature, for messages ("s", "b", "u", ...)
};

// Bad options: what() names the option and what was wrong (input quoted through
// escape_excerpt()).
class OptionError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// Known keys: mode (s: kModeNames), strategy (s: kStrategyNames),
// dry_run (b), refuse_pinned (b), force (b). Unknown keys, wrong types, bad values, a key given
// twice and more than kMaxOptions entries throw OptionError; nothing is decoded from a refused
// dictionary.
RequestOptions decode_options(const std::vector<OptionEntry>& entries);
// Known keys: strategy (s), restore (b), refuse_pinned (b), force (b); otherwise as
// decode_options().
HoldOptions decode_hold_options(const std::vector<OptionEntry>& entries);
// Known keys: strategy (s), dry_run (b), refuse_pinned (b), force (b); otherwise as
// decode_options().
ProfileOptions decode_profile_options(const std::vector<OptionEntry>& entries);

// Checks HoldCpus's `who` (1-64 bytes) and `why` (at most 256 bytes): printable text, no
// control characters. Throws OptionError.
void check_hold_names(const std::string& who, const std::string& why);

}  // namespace cpuhpd
