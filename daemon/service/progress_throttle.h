// How often BatchProgress is sent: a batch of thousands of CPUs must not flood the bus.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace cpuhpd {

class ProgressThrottle {
public:
    using Clock = std::chrono::steady_clock;

    explicit ProgressThrottle(Clock::duration interval) : interval_(interval) {}

    // Whether the step `done` of `total` of batch `batch_id`, reached at `now`, is
    // announced: a batch's first step and its last (done == total) always are, the
    // others when `interval` has passed since the last one announced.
    bool admit(std::uint64_t batch_id, std::size_t done, std::size_t total, Clock::time_point now);

private:
    Clock::duration interval_;
    std::uint64_t batch_id_ = 0;
    Clock::time_point last_{};
};

}  // namespace cpuhpd
