// The kernel's cpulist syntax (lib/bitmap.c bitmap_parselist) and cpumap hex syntax
// (bitmap_parse), parsed and formatted exactly as the kernel does.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "cpuset.h"

namespace cpuhpd {

// A malformed mask. `token` is the offending text, `position` its 0-based offset in
// the input the caller passed (so errors can point at it).
class MaskError : public std::runtime_error {
public:
    MaskError(std::string reason, std::string token, std::size_t position);
    const std::string& reason() const { return reason_; }
    const std::string& token() const { return token_; }
    std::size_t position() const { return position_; }

private:
    std::string reason_;
    std::string token_;
    std::size_t position_;
};

// "0-3,8,10-15", group form "0-31:2/8" (first 2 of every 8), "N" for the last CPU is not
// supported (kernel 6.1 has it only for nbits-relative lists; we take it as an error).
// A trailing newline and the empty string (or "\n") give the empty set.
// `base_offset` is added to error positions, for parsing a token inside a larger string.
CpuSet parse_cpulist(std::string_view text, std::size_t base_offset = 0);
std::string format_cpulist(const CpuSet& cpus);

// Comma-separated 32-bit hex groups, most significant first: "ff,00000000" (no 0x).
CpuSet parse_cpumap(std::string_view text, std::size_t base_offset = 0);
// Formatted for `nr_cpus` bits as /sys/devices/system/cpu/cpuN/topology/*cpus does.
std::string format_cpumap(const CpuSet& cpus, unsigned nr_cpus);

}  // namespace cpuhpd
