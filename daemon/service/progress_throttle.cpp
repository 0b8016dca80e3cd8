#include "progress_throttle.h"

namespace cpuhpd {

bool ProgressThrottle::admit(std::uint64_t batch_id, std::size_t done, std::size_t total,
                             Clock::time_point now) {
    const bool first = batch_id != batch_id_;
    if (!first && done < total && now - last_ < interval_) {
        return false;
    }
    batch_id_ = batch_id;
    last_ = now;
    return true;
}

}  // namespace cpuhpd
