// The options of a change, a hold and a profile change as the engine takes them: typed.
// Where they come from (the a{sv} dictionaries of the D-Bus methods) is the service's
// business (daemon/service/option_dictionary.h).
#pragma once

#include <optional>

#include "enums.h"

namespace cpuhpd {

struct RequestOptions {
    std::optional<Mode> mode;
    std::optional<StrategyKind> strategy;
    bool dry_run = false;
    bool refuse_pinned = false;    // Request::refuse_pinned
    bool force = false;            // Request::force
    bool restore_affinity = true;  // Request::restore_affinity
};

// The options of HoldCpus: a hold's change is always atomic and never a dry run.
struct HoldOptions {
    std::optional<StrategyKind> strategy;
    bool restore = true;
    bool refuse_pinned = false;
    bool force = false;
};

// The options of ApplyProfile and RevertProfile: the offline part is always atomic, the
// return best-effort.
struct ProfileOptions {
    std::optional<StrategyKind> strategy;
    bool dry_run = false;
    bool refuse_pinned = false;  // for the offline part
    bool force = false;          // for the offline part
};

}  // namespace cpuhpd
