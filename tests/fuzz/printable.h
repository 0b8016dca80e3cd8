// Shared by the fuzzers: messages must be what sd-bus can always send.
#pragma once

#include <cstdlib>
#include <string>

namespace cpuhpd::fuzz {

// Aborts (a finding) unless every byte of `text` is printable ASCII.
inline void check_printable(const std::string& text) {
    for (const char c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
            std::abort();  // a message sd-bus might refuse to send
        }
    }
}

}  // namespace cpuhpd::fuzz
