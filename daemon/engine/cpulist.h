// The kernel's cpulist syntax (lib/bitmap.c bitmap_parselist) and cpumap hex syntax
// (bitmap_parse), parsed and formatted exactly as the kernel does.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "cpuset.h"

namespace cpuhpd {

// A malformed mask. `raw_token` is the offending text as the caller found it; token()
// is that text escaped and bounded once, here (see escape_excerpt()). `position` its 0-based offset
// in the input the caller passed (so errors can point at it). Messages quote input only through
// escape_excerpt().
class MaskError : public std::runtime_error {
public:
    MaskError(std::string reason, std::string_view raw_token, std::size_t position);
    const std::string& reason() const { return reason_; }
    const std::string& token() const { return token_; }
    std::size_t position() const { return position_; }

private:
    std::string reason_;
    std::string token_;
    std::size_t position_;
};

// ASCII whitespace (\t \n \v \f \r and space): it separates cpulist regions and mask
// arguments. Not the kernel's isspace(), which also takes byte 0xa0 (see cpulist.cpp).
inline bool is_mask_space(char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= 9 && u <= 13) || u == 32;
}
// What ends a cpulist region: whitespace or ','.
inline bool is_mask_separator(char c) {
    return is_mask_space(c) || c == ',';
}

// "0-3,8,10-15", group form "0-31:2/8" (first 2 of every 8), "N" for the last CPU is not
// supported (kernel 6.1 has it only for nbits-relative lists; we take it as an error).
// A trailing newline and the empty string (or "\n") give the empty set.
// `base_offset` is added to error positions, for parsing a token inside a larger string.
// CPU numbers must be below `cpu_bound` (at most kMaxCpus): checked for each region before
// any of its CPUs is added, so the work is bounded by the bound, not by the ranges written.
CpuSet parse_cpulist(std::string_view text, std::size_t base_offset = 0,
                     unsigned cpu_bound = kMaxCpus);
std::string format_cpulist(const CpuSet& cpus);
// A file holding a cpulist (cpuset.cpus, smp_affinity_list); nullopt when it cannot be read
// or is not one. For reports that skip what they cannot read.
std::optional<CpuSet> read_cpulist_file(const std::filesystem::path& file);

// Comma-separated 32-bit hex groups, most significant first: "ff,00000000" (no 0x).
CpuSet parse_cpumap(std::string_view text, std::size_t base_offset = 0,
                    unsigned cpu_bound = kMaxCpus);

}  // namespace cpuhpd
