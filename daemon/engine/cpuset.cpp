#include "cpuset.h"

#include <algorithm>
#include <bit>
#include <ostream>
#include <stdexcept>

#include "cpulist.h"

namespace cpuhpd {

namespace {

constexpr unsigned kWordBits = 64;

std::uint64_t bit(unsigned cpu) {
    return std::uint64_t{1} << (cpu % kWordBits);
}

void check_cpu(unsigned cpu) {
    if (cpu >= kMaxCpus) {
        throw std::out_of_range("CPU " + std::to_string(cpu) +
                                " is beyond the largest supported CPU " +
                                std::to_string(kMaxCpus - 1));
    }
}

}  // namespace

CpuSet CpuSet::single(unsigned cpu) {
    CpuSet s;
    s.add(cpu);
    return s;
}

CpuSet CpuSet::range(unsigned first, unsigned last) {
    CpuSet s;
    s.add_range(first, last);
    return s;
}

CpuSet CpuSet::from(const std::vector<unsigned>& cpus) {
    CpuSet s;
    for (unsigned cpu : cpus) {
        s.add(cpu);
    }
    return s;
}

void CpuSet::add(unsigned cpu) {
    check_cpu(cpu);
    if (cpu / kWordBits >= words_.size()) {
        words_.resize(cpu / kWordBits + 1, 0);
    }
    words_[cpu / kWordBits] |= bit(cpu);
}

void CpuSet::add_range(unsigned first, unsigned last) {
    if (first > last) {
        return;
    }
    check_cpu(last);
    if (last / kWordBits >= words_.size()) {
        words_.resize(last / kWordBits + 1, 0);
    }
    for (unsigned w = first / kWordBits; w <= last / kWordBits; ++w) {
        const unsigned lo = w == first / kWordBits ? first % kWordBits : 0;
        const unsigned hi = w == last / kWordBits ? last % kWordBits : kWordBits - 1;
        words_[w] |= (~std::uint64_t{0} >> (kWordBits - 1 - hi)) & (~std::uint64_t{0} << lo);
    }
}

void CpuSet::remove(unsigned cpu) {
    if (cpu / kWordBits < words_.size()) {
        words_[cpu / kWordBits] &= ~bit(cpu);
        trim();
    }
}

bool CpuSet::contains(unsigned cpu) const {
    return cpu / kWordBits < words_.size() && (words_[cpu / kWordBits] & bit(cpu)) != 0;
}

bool CpuSet::empty() const {
    return words_.empty();
}

std::size_t CpuSet::count() const {
    std::size_t n = 0;
    for (const std::uint64_t w : words_) {
        n += static_cast<std::size_t>(std::popcount(w));
    }
    return n;
}

unsigned CpuSet::first() const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
        if (words_[w] != 0) {
            return static_cast<unsigned>(w * kWordBits) +
                   static_cast<unsigned>(std::countr_zero(words_[w]));
        }
    }
    throw std::logic_error("CpuSet::first() of an empty set");
}

unsigned CpuSet::last() const {
    if (words_.empty()) {
        throw std::logic_error("CpuSet::last() of an empty set");
    }
    // trimmed: the last word is not zero
    return static_cast<unsigned>(words_.size() * kWordBits - 1) -
           static_cast<unsigned>(std::countl_zero(words_.back()));
}

std::vector<unsigned> CpuSet::members() const {
    std::vector<unsigned> out;
    out.reserve(count());
    for (std::size_t w = 0; w < words_.size(); ++w) {
        for (std::uint64_t rest = words_[w]; rest != 0; rest &= rest - 1) {
            out.push_back(static_cast<unsigned>(w * kWordBits) +
                          static_cast<unsigned>(std::countr_zero(rest)));
        }
    }
    return out;
}

CpuSet CpuSet::operator|(const CpuSet& o) const {
    CpuSet r = *this;
    r |= o;
    return r;
}

CpuSet CpuSet::operator&(const CpuSet& o) const {
    CpuSet r;
    r.words_.resize(std::min(words_.size(), o.words_.size()));
    for (std::size_t w = 0; w < r.words_.size(); ++w) {
        r.words_[w] = words_[w] & o.words_[w];
    }
    r.trim();
    return r;
}

CpuSet CpuSet::operator-(const CpuSet& o) const {
    CpuSet r = *this;
    const std::size_t n = std::min(r.words_.size(), o.words_.size());
    for (std::size_t w = 0; w < n; ++w) {
        r.words_[w] &= ~o.words_[w];
    }
    r.trim();
    return r;
}

CpuSet& CpuSet::operator|=(const CpuSet& o) {
    if (o.words_.size() > words_.size()) {
        words_.resize(o.words_.size(), 0);
    }
    for (std::size_t w = 0; w < o.words_.size(); ++w) {
        words_[w] |= o.words_[w];
    }
    return *this;
}

bool CpuSet::operator==(const CpuSet& o) const {
    return words_ == o.words_;
}

std::string CpuSet::to_string() const {
    return format_cpulist(*this);
}

void CpuSet::trim() {
    while (!words_.empty() && words_.back() == 0) {
        words_.pop_back();
    }
}

std::ostream& operator<<(std::ostream& os, const CpuSet& cpus) {
    return os << (cpus.empty() ? std::string("{}") : format_cpulist(cpus));
}

}  // namespace cpuhpd
