// The kernel's cpumap text of a CPU set, for the tests of parse_cpumap() (the daemon only
// reads cpumaps, so this lives with the tests).
#pragma once

#include <cstdint>
#include <string>

#include "cpuset.h"

namespace cpuhpd {

// Formatted for `nr_cpus` bits as /sys/devices/system/cpu/cpuN/topology/*cpus does.
inline std::string format_cpumap(const CpuSet& cpus, unsigned nr_cpus) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    unsigned chunksz = nr_cpus % 32 == 0 ? 32 : nr_cpus % 32;
    unsigned aligned = (nr_cpus + 31) / 32 * 32;
    for (long i = static_cast<long>(aligned) - 32; i >= 0; i -= 32) {
        std::uint32_t val = 0;
        for (unsigned bit = 0; bit < chunksz; ++bit) {
            if (cpus.contains(static_cast<unsigned>(i) + bit)) {
                val |= std::uint32_t{1} << bit;
            }
        }
        if (!out.empty()) {
            out += ',';
        }
        unsigned width = (chunksz + 3) / 4;
        for (unsigned d = width; d > 0; --d) {
            out += hex[(val >> ((d - 1) * 4)) & 15];
        }
        chunksz = 32;
    }
    return out;
}

}  // namespace cpuhpd
