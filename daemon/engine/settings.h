// The engine's tunables, filled from the YAML config by the daemon.
#pragma once

#include <chrono>
#include <cstddef>

#include "cpuset.h"
#include "request.h"

namespace cpuhpd {

struct EngineSettings {
    CpuSet protected_cpus = CpuSet::single(0);  // never taken offline
    unsigned min_online = 1;                    // a batch may not leave fewer online
    std::chrono::milliseconds coalesce{20};     // how long a new batch waits for company
    Expedite expedite = Expedite::Auto;
    Mode default_mode = Mode::Atomic;
    std::size_t max_queued_requests = 256;           // beyond this, callers get Busy
    RecoveryPolicy recovery = RecoveryPolicy::Auto;  // for a batch a crash interrupted
};

}  // namespace cpuhpd
