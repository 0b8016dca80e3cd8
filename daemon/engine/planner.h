// Validation, strategy choice and write order for a batch. Pure: reads a MachineState,
// touches nothing, so dry runs and the journal see exactly what will be done.
#pragma once

#include <vector>

#include "machine.h"
#include "request.h"
#include "settings.h"

namespace cpuhpd {

// Throws Refusal when the request can never be carried out on this machine: CPUs not
// present (InvalidMask), protected CPUs going offline (ProtectedCpu), CPUs without an
// online file that would have to change (NotHotpluggable), fewer than min_online CPUs
// left online (TooFewOnline), a forced strategy this kernel or batch cannot use
// (NotSupported). `already_leaving` are CPUs that earlier requests of the same batch take
// offline, counted against min_online.
void validate(const Request& request, const MachineState& machine, const EngineSettings& settings,
              const CpuSet& already_leaving = {});

// Leaves out, for an offline request, the protected CPUs and the CPUs without an online
// file that only a selector named (see Request::selected_only).
void narrow_to_eligible(Request& request, const MachineState& machine,
                        const EngineSettings& settings);

struct Plan {
    Action action = Action::Offline;
    StrategyKind strategy = StrategyKind::PerCpu;
    CpuSet requested;             // union of the batch's requests
    CpuSet to_change;             // requested CPUs not yet in the target state
    std::vector<unsigned> order;  // to_change in write order
    bool expedite = false;        // wrap the batch in an rcu_expedited=1 window
};

// `forced` is the strategy every request of the batch asked for, or Auto. Auto picks bulk
// when the kernel offers it, else per-cpu; smt only when forced (SetSmt, the "smt"
// selector, or an explicit strategy).
// Offline order: SMT secondaries first, then primaries, each descending (ascending with
// the bulk strategy, as the kernel's cpu_down_mask() goes); online order: primaries
// first, then secondaries, each ascending.
Plan make_plan(Action action, const CpuSet& requested, StrategyKind forced,
               const MachineState& machine, const EngineSettings& settings);

// True when `cpus` is exactly the machine's SMT secondaries and smt/control can switch
// them all in one write for `action`.
bool smt_control_applies(Action action, const CpuSet& cpus, const MachineState& machine);

}  // namespace cpuhpd
