// The machine model: one consistent reading of the kernel's CPU state.
#pragma once

#include <string>
#include <vector>

#include "cpuset.h"
#include "enums.h"
#include "sysfs.h"
#include "topology.h"

namespace cpuhpd {

struct MachineState {
    CpuSet possible;
    CpuSet present;
    CpuSet online;
    CpuSet hotpluggable;  // CPUs that have a cpuN/online file
    SmtControl smt_control = SmtControl::Absent;
    bool bulk_writable =
        false;             // devices/system/cpu/offline and online are writable (companion patch)
    TopologyMap topology;  // live + remembered topology, for every CPU seen so far

    CpuSet offline() const { return present - online; }
    // Strategies this kernel offers, in preference order ("bulk", "smt", "per-cpu").
    std::vector<StrategyKind> capabilities() const;
    // Every SMT thread that is not the first (lowest-numbered) of its core, among present CPUs.
    CpuSet smt_secondaries() const;
};

// Reads the state below `paths.root()` and refreshes `memory` with the topology of the
// CPUs that are online now.
MachineState read_machine(const SysfsPaths& paths, TopologyMemory& memory);

}  // namespace cpuhpd
