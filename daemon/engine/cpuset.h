// A set of CPU numbers, the engine's currency. Bounded like the kernel's NR_CPUS.
#pragma once

#include <cstddef>
#include <cstdint>
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
    // Bit cpu % 64 of words_[cpu / 64]; no trailing zero words, so equal sets compare
    // equal. Words, not vector<bool>: first(), count() and members() run a word at a time
    // (make_plan asks first() of every CPU's siblings; 8192 CPUs took 15 ms bit by bit).
    std::vector<std::uint64_t> words_;
};

// Prints the cpulist form ("0-3,8", "{}" when empty): for logs and test failure messages.
std::ostream& operator<<(std::ostream& os, const CpuSet& cpus);

}  // namespace cpuhpd
