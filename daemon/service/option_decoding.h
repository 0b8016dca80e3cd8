// The options dictionary (a{sv}) of the changing methods as engine options. Reads
// the entries out of the message; what they mean is decided by decode_options() (options.h).
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <map>
#include <string>

#include "option_dictionary.h"

namespace cpuhpd {

// The options of the call `message` (arguments: a string, then a{sv}), read from the
// message itself so that a key given twice is seen: the generated glue hands the handler
// a std::map, which keeps one of two equal keys. Without a message, `fallback` is decoded.
// Throws OptionError for bad options, sdbus::Error when the message holds no dictionary.
RequestOptions read_request_options(const sdbus::Message* message,
                                    const std::map<std::string, sdbus::Variant>& fallback);
// The same for HoldCpus (arguments: four strings, then a{sv}).
HoldOptions read_hold_options(const sdbus::Message* message,
                              const std::map<std::string, sdbus::Variant>& fallback);
// The same for ApplyProfile (`strings_before` 1: the name) and RevertProfile (0).
ProfileOptions read_profile_options(const sdbus::Message* message,
                                    const std::map<std::string, sdbus::Variant>& fallback,
                                    int strings_before);

}  // namespace cpuhpd
