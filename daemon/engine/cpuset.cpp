#include "cpuset.h"

#include <algorithm>
#include <ostream>
#include <stdexcept>

#include "cpulist.h"

namespace cpuhpd {

namespace {

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
    if (first > last) {
        return s;
    }
    check_cpu(last);
    s.bits_.assign(last + 1, false);
    std::fill(s.bits_.begin() + first, s.bits_.end(), true);
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
    if (cpu >= bits_.size()) {
        bits_.resize(cpu + 1, false);
    }
    bits_[cpu] = true;
}

void CpuSet::add_range(unsigned first, unsigned last) {
    if (first > last) {
        return;
    }
    check_cpu(last);
    if (last >= bits_.size()) {
        bits_.resize(last + 1, false);
    }
    // std::fill on vector<bool> sets whole words at a time.
    std::fill(bits_.begin() + first, bits_.begin() + last + 1, true);
}

void CpuSet::remove(unsigned cpu) {
    if (cpu < bits_.size()) {
        bits_[cpu] = false;
        trim();
    }
}

bool CpuSet::contains(unsigned cpu) const {
    return cpu < bits_.size() && bits_[cpu];
}

bool CpuSet::empty() const {
    return bits_.empty();
}

std::size_t CpuSet::count() const {
    return static_cast<std::size_t>(std::count(bits_.begin(), bits_.end(), true));
}

unsigned CpuSet::first() const {
    auto it = std::find(bits_.begin(), bits_.end(), true);
    if (it == bits_.end()) {
        throw std::logic_error("CpuSet::first() of an empty set");
    }
    return static_cast<unsigned>(it - bits_.begin());
}

unsigned CpuSet::last() const {
    if (bits_.empty()) {
        throw std::logic_error("CpuSet::last() of an empty set");
    }
    return static_cast<unsigned>(bits_.size() - 1);  // trimmed: the last entry is set
}

std::vector<unsigned> CpuSet::members() const {
    std::vector<unsigned> out;
    for (std::size_t i = 0; i < bits_.size(); ++i) {
        if (bits_[i]) {
            out.push_back(static_cast<unsigned>(i));
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
    std::size_t n = std::min(bits_.size(), o.bits_.size());
    r.bits_.assign(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        r.bits_[i] = bits_[i] && o.bits_[i];
    }
    r.trim();
    return r;
}

CpuSet CpuSet::operator-(const CpuSet& o) const {
    CpuSet r = *this;
    std::size_t n = std::min(r.bits_.size(), o.bits_.size());
    for (std::size_t i = 0; i < n; ++i) {
        if (o.bits_[i]) {
            r.bits_[i] = false;
        }
    }
    r.trim();
    return r;
}

CpuSet& CpuSet::operator|=(const CpuSet& o) {
    if (o.bits_.size() > bits_.size()) {
        bits_.resize(o.bits_.size(), false);
    }
    for (std::size_t i = 0; i < o.bits_.size(); ++i) {
        if (o.bits_[i]) {
            bits_[i] = true;
        }
    }
    return *this;
}

bool CpuSet::operator==(const CpuSet& o) const {
    return bits_ == o.bits_;
}

std::string CpuSet::to_string() const {
    return format_cpulist(*this);
}

void CpuSet::trim() {
    while (!bits_.empty() && !bits_.back()) {
        bits_.pop_back();
    }
}

std::ostream& operator<<(std::ostream& os, const CpuSet& cpus) {
    return os << (cpus.empty() ? std::string("{}") : format_cpulist(cpus));
}

}  // namespace cpuhpd
