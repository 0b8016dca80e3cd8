#include "phase_timer.h"

#include <cstring>

namespace cpuhpd {

std::string phases_text(const std::vector<PhaseTime>& phases) {
    std::string out;
    for (const auto& phase : phases) {
        if (!out.empty()) {
            out += ' ';
        }
        out += phase.name + "=" + std::to_string(phase.duration.count());
    }
    return out;
}

PhaseTimer::Scope::Scope(PhaseTimer* timer, const char* name) : timer_(timer) {
    if (timer_ != nullptr) {
        timer_->enter(name);
    }
}

PhaseTimer::Scope::~Scope() {
    if (timer_ != nullptr) {
        timer_->leave();
    }
}

void PhaseTimer::charge(Clock::time_point now) {
    if (!stack_.empty()) {
        totals_[stack_.back()].spent += now - mark_;
    }
    mark_ = now;
}

void PhaseTimer::enter(const char* name) {
    charge(Clock::now());
    std::size_t index = 0;
    while (index < totals_.size() && std::strcmp(totals_[index].name, name) != 0) {
        ++index;
    }
    if (index == totals_.size()) {
        totals_.push_back({name, Clock::duration::zero()});
    }
    stack_.push_back(index);
}

void PhaseTimer::leave() {
    if (stack_.empty()) {
        return;
    }
    charge(Clock::now());
    stack_.pop_back();
}

std::vector<PhaseTime> PhaseTimer::phases() const {
    std::vector<PhaseTime> out;
    out.reserve(totals_.size());
    for (const auto& total : totals_) {
        // Truncated, so the phases still add up to no more than the time they span.
        out.push_back(
            {total.name, std::chrono::duration_cast<std::chrono::microseconds>(total.spent)});
    }
    return out;
}

}  // namespace cpuhpd
