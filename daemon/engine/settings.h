// The engine's tunables, filled from the YAML config by the daemon.
#pragma once

#include <chrono>
#include <cstddef>

#include "cpuset.h"
#include "enums.h"
#include "request.h"

namespace cpuhpd {

// What the engine does when a held CPU changes without cpuhpd (config enforce_holds).
enum class EnforceHolds {
    Restore,  // put it back (bounded: kMaxReputsPerMinute per hold), report it
    Report,   // report it only
};
inline constexpr EnumNames<EnforceHolds, 2> kEnforceHoldsNames{{
    {EnforceHolds::Restore, "restore"},
    {EnforceHolds::Report, "report"},
}};

// Config hold_grace_s: how long after a restart a hold waits for its holder to re-attach.
inline constexpr long long kMinHoldGraceS = 1;
inline constexpr long long kMaxHoldGraceS = 86400;

struct EngineSettings {
    CpuSet protected_cpus = CpuSet::single(0);  // never taken offline
    unsigned min_online = 1;                    // a batch may not leave fewer online
    // How long a batch that finds the executor idle waits for requests not received yet
    // (config coalesce_ms). None by default: a lone request goes at once, and requests that
    // come together still share a batch (those received while one runs join the next, and
    // those still being admitted are waited for, up to arrival_wait).
    std::chrono::milliseconds coalesce{0};
    // The longest a batch waits for requests received before it started that are still
    // being admitted (a machine read each list; tens of ms on a loaded machine).
    std::chrono::milliseconds arrival_wait{50};
    Expedite expedite = Expedite::Auto;
    Mode default_mode = Mode::Atomic;
    std::size_t max_queued_requests = 256;           // beyond this, callers get Busy
    RecoveryPolicy recovery = RecoveryPolicy::Auto;  // for a batch a crash interrupted
    std::chrono::seconds hold_grace{60};             // after a restart, for holders to re-attach
    EnforceHolds enforce_holds = EnforceHolds::Restore;
};

}  // namespace cpuhpd
