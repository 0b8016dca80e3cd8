// ProgressThrottle: which BatchProgress steps are sent, on a clock the test moves.
#include <gtest/gtest.h>

#include <chrono>

#include "progress_throttle.h"

namespace cpuhpd {
namespace {

using std::chrono::milliseconds;

class ProgressThrottleTest : public testing::Test {
protected:
    ProgressThrottle throttle{milliseconds(200)};
    ProgressThrottle::Clock::time_point start = ProgressThrottle::Clock::now();

    bool admit(std::uint64_t batch, std::size_t done, std::size_t total, milliseconds at) {
        return throttle.admit(batch, done, total, start + at);
    }
};

TEST_F(ProgressThrottleTest, TheFirstStepOfABatchIsSent) {
    EXPECT_TRUE(admit(1, 1, 100, milliseconds(0)));
}

TEST_F(ProgressThrottleTest, StepsWithinTheIntervalAreDropped) {
    ASSERT_TRUE(admit(1, 1, 100, milliseconds(0)));
    EXPECT_FALSE(admit(1, 2, 100, milliseconds(1)));
    EXPECT_FALSE(admit(1, 3, 100, milliseconds(199)));
}

TEST_F(ProgressThrottleTest, AStepIsSentOnceTheIntervalHasPassedSinceTheLastSent) {
    ASSERT_TRUE(admit(1, 1, 100, milliseconds(0)));
    EXPECT_FALSE(admit(1, 2, 100, milliseconds(150)));
    EXPECT_TRUE(admit(1, 3, 100, milliseconds(200)));
    // Measured from the step sent at 200 ms, not from the dropped one at 150 ms.
    EXPECT_FALSE(admit(1, 4, 100, milliseconds(399)));
    EXPECT_TRUE(admit(1, 5, 100, milliseconds(400)));
}

TEST_F(ProgressThrottleTest, TheLastStepIsAlwaysSent) {
    ASSERT_TRUE(admit(1, 1, 100, milliseconds(0)));
    EXPECT_TRUE(admit(1, 100, 100, milliseconds(1)));
}

TEST_F(ProgressThrottleTest, ANewBatchIsSentAtOnceAndRestartsTheInterval) {
    ASSERT_TRUE(admit(1, 1, 100, milliseconds(0)));
    EXPECT_TRUE(admit(2, 1, 50, milliseconds(1)));
    EXPECT_FALSE(admit(2, 2, 50, milliseconds(100)));
    EXPECT_TRUE(admit(2, 3, 50, milliseconds(201)));
}

TEST_F(ProgressThrottleTest, TheFirstBatchIsSentWhateverItsId) {
    // Batch ids start at 0 in a fresh throttle too: no earlier step means no interval.
    EXPECT_TRUE(admit(0, 1, 100, milliseconds(0)));
    EXPECT_FALSE(admit(0, 2, 100, milliseconds(10)));
}

}  // namespace
}  // namespace cpuhpd
