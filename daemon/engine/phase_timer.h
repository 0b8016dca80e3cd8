// Where a batch's time goes: the time of each phase the runner goes through (machine read,
// pinned-task scan, planning, journal, kernel write, re-read, ...), on the monotonic clock.
//
// Phases nest: a phase entered inside another (the journal record of each CPU, inside the
// kernel write) stops the outer one's clock until it leaves, so each phase counts only its
// own time and the phases never add up to more than the time they span. A phase entered
// again adds to its total; phases are listed in the order first entered.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace cpuhpd {

struct PhaseTime {
    std::string name;
    std::chrono::microseconds duration{0};
    bool operator==(const PhaseTime&) const = default;
};

// "read=120 plan=40 write=2300": the journal field PHASE_US; "" for none.
std::string phases_text(const std::vector<PhaseTime>& phases);

class PhaseTimer {
public:
    using Clock = std::chrono::steady_clock;

    // Enters `name` for its lifetime; a null timer times nothing.
    class Scope {
    public:
        Scope(PhaseTimer* timer, const char* name);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        PhaseTimer* timer_;
    };

    void enter(const char* name);
    void leave();

    // The phases in the order first entered, whole microseconds each. Call once every scope
    // has left.
    std::vector<PhaseTime> phases() const;

private:
    void charge(Clock::time_point now);

    struct Total {
        const char* name;
        Clock::duration spent;
    };
    std::vector<Total> totals_;
    std::vector<std::size_t> stack_;  // indices into totals_, innermost last
    Clock::time_point mark_{};
};

}  // namespace cpuhpd
