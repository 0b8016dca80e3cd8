// A set of CPU numbers, the engine's currency. Bounded like the kernel's NR_CPUS.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace cpuhpd {

// Largest number of CPUs the service handles (the kernel's NR_CPUS maximum on x86).
inline constexpr unsigned kMaxCpus = 8192;

class CpuSet {
public:
    CpuSet() = default;
    static CpuSet single(unsigned cpu);
    static CpuSet range(unsigned first, unsigned last);  // inclusive
    static CpuSet from(const std::vector<unsigned>& cpus);

    void add(unsigned cpu);
    void add_range(unsigned first, unsigned last);  // inclusive; nothing when first > last
    void remove(unsigned cpu);
    bool contains(unsigned cpu) const;
    bool empty() const;
    std::size_t count() const;
    // Smallest and largest member; only valid when non-empty.
    unsigned first() const;
    unsigned last() const;
    std::vector<unsigned> members() const;

    CpuSet operator|(const CpuSet& o) const;
    CpuSet operator&(const CpuSet& o) const;
    CpuSet operator-(const CpuSet& o) const;  // set difference
    CpuSet& operator|=(const CpuSet& o);
    bool operator==(const CpuSet& o) const;
    bool intersects(const CpuSet& o) const { return !(*this & o).empty(); }
    bool is_subset_of(const CpuSet& o) const { return (*this - o).empty(); }

    // Kernel cpulist text ("0-3,8"), the empty string for the empty set.
    std::string to_string() const;

private:
    void trim();
    std::vector<bool> bits_;  // bits_[cpu]; no trailing false entries
};

// Prints the cpulist form ("0-3,8", "{}" when empty): for logs and test failure messages.
std::ostream& operator<<(std::ostream& os, const CpuSet& cpus);

}  // namespace cpuhpd
