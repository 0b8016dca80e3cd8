#include "phase_timer.h"

#include <gtest/gtest.h>

#include <chrono>

namespace cpuhpd {
namespace {

using std::chrono::microseconds;
using Clock = std::chrono::steady_clock;

// Busy until at least `us` have passed on the monotonic clock (no sleep: the time is spent in
// the phase for certain).
void spend(microseconds us) {
    const auto until = Clock::now() + us;
    while (Clock::now() < until) {
    }
}

microseconds sum(const std::vector<PhaseTime>& phases) {
    microseconds total{0};
    for (const auto& phase : phases) {
        total += phase.duration;
    }
    return total;
}

TEST(PhaseTimer, NestedPhaseStopsTheOuterOnesClock) {
    PhaseTimer timer;
    const auto started = Clock::now();
    {
        const PhaseTimer::Scope outer(&timer, "write");
        const PhaseTimer::Scope inner(&timer, "journal");
        spend(microseconds(20000));
    }
    const auto span = std::chrono::duration_cast<microseconds>(Clock::now() - started);
    const auto phases = timer.phases();
    ASSERT_EQ(phases.size(), 2u);
    EXPECT_EQ(phases[0].name, "write");
    EXPECT_EQ(phases[1].name, "journal");
    EXPECT_GE(phases[1].duration, microseconds(20000));
    // Were the journal's 20 ms the write's too, the two would add up to more than the span.
    EXPECT_LE(sum(phases), span);
}

TEST(PhaseTimer, APhaseEnteredAgainAddsUpAndKeepsItsFirstPlace) {
    PhaseTimer timer;
    {
        const PhaseTimer::Scope scope(&timer, "read");
        spend(microseconds(3000));
    }
    { const PhaseTimer::Scope scope(&timer, "plan"); }
    {
        const PhaseTimer::Scope scope(&timer, "read");
        spend(microseconds(3000));
    }
    const auto phases = timer.phases();
    ASSERT_EQ(phases.size(), 2u);
    EXPECT_EQ(phases[0].name, "read");
    EXPECT_GE(phases[0].duration, microseconds(6000));
    EXPECT_EQ(phases[1].name, "plan");
    EXPECT_GE(phases[1].duration, microseconds(0));
}

TEST(PhaseTimer, TimeOutsideEveryPhaseIsNobodys) {
    PhaseTimer timer;
    const auto started = Clock::now();
    { const PhaseTimer::Scope scope(&timer, "read"); }
    const auto gap_started = Clock::now();
    spend(microseconds(20000));  // between phases: the runner's own bookkeeping
    const auto gap = std::chrono::duration_cast<microseconds>(Clock::now() - gap_started);
    { const PhaseTimer::Scope scope(&timer, "write"); }
    const auto span = std::chrono::duration_cast<microseconds>(Clock::now() - started);
    const auto phases = timer.phases();
    ASSERT_EQ(phases.size(), 2u);
    EXPECT_LE(sum(phases), span - gap);
}

TEST(PhaseTimer, ANullTimerTimesNothing) {
    const PhaseTimer::Scope scope(nullptr, "read");
    PhaseTimer timer;
    EXPECT_TRUE(timer.phases().empty());
}

TEST(PhaseTimer, TextIsNameEqualsMicrosecondsInOrder) {
    EXPECT_EQ(phases_text({{"read", microseconds(120)},
                           {"plan", microseconds(40)},
                           {"write", microseconds(2300)}}),
              "read=120 plan=40 write=2300");
    EXPECT_EQ(phases_text({}), "");
}

}  // namespace
}  // namespace cpuhpd
