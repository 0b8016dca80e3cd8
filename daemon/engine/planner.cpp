#include "planner.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "strategy.h"

namespace cpuhpd {

namespace {

CpuSet needing_change(Action action, const CpuSet& cpus, const MachineState& machine) {
    return action == Action::Offline ? (cpus & machine.online) : (cpus - machine.online);
}

// A CPU without recorded siblings counts as a primary.
bool is_primary_thread(unsigned cpu, const CpuTopology* topology) {
    return topology == nullptr || topology->siblings.empty() || topology->siblings.first() == cpu;
}

std::string plural_cpus(const CpuSet& cpus) {
    return (cpus.count() == 1 ? "CPU " : "CPUs ") + cpus.to_string();
}

}  // namespace

void validate(const Request& request, const MachineState& machine, const EngineSettings& settings,
              const CpuSet& already_leaving) {
    const CpuSet& cpus = request.cpus;
    if (cpus.empty()) {
        throw Refusal(RefusalKind::InvalidMask,
                      "the mask '" + request.mask + "' names no CPU that can go " +
                          to_string(request.action) +
                          " (selectors leave out protected CPUs and CPUs without "
                          "an online file)");
    }
    if (const CpuSet absent = cpus - machine.present; !absent.empty()) {
        throw Refusal(RefusalKind::InvalidMask,
                      plural_cpus(absent) +
                          " not present (present CPUs: " + machine.present.to_string() + ")",
                      absent);
    }
    if (request.action == Action::Offline) {
        if (const CpuSet prot = cpus & settings.protected_cpus; !prot.empty()) {
            throw Refusal(RefusalKind::ProtectedCpu,
                          plural_cpus(prot) + " protected (protected_cpus: " +
                              settings.protected_cpus.to_string() + "); not taken offline",
                          prot);
        }
    }
    const CpuSet to_change = needing_change(request.action, cpus, machine);
    if (const CpuSet fixed = to_change - machine.hotpluggable; !fixed.empty()) {
        throw Refusal(RefusalKind::NotHotpluggable,
                      plural_cpus(fixed) + " cannot be taken " + to_string(request.action) +
                          ": the kernel offers no online file for " +
                          (fixed.count() == 1 ? "it" : "them"),
                      fixed);
    }
    if (request.action == Action::Offline) {
        const CpuSet remaining = machine.online - already_leaving - to_change;
        if (remaining.count() < settings.min_online) {
            throw Refusal(RefusalKind::TooFewOnline,
                          "taking " + plural_cpus(to_change) + " offline would leave " +
                              std::to_string(remaining.count()) + " CPU(s) online (" +
                              remaining.to_string() + "); min_online is " +
                              std::to_string(settings.min_online),
                          to_change);
        }
    }
    if (request.strategy != StrategyKind::Auto) {
        rules_of(request.strategy).check(cpus, machine);
    }
}

void narrow_to_eligible(Request& request, const MachineState& machine,
                        const EngineSettings& settings) {
    if (request.action != Action::Offline) {
        return;
    }
    const CpuSet fixed = machine.online - machine.hotpluggable;
    request.cpus = request.cpus - (request.selected_only & (settings.protected_cpus | fixed));
}

Plan make_plan(Action action, const CpuSet& requested, StrategyKind forced,
               const MachineState& machine, const EngineSettings& settings) {
    Plan plan;
    plan.action = action;
    plan.requested = requested;
    plan.to_change = needing_change(action, requested, machine);
    // smt/control switches SMT for the whole machine (and a later per-CPU online of one
    // sibling then fails with EPERM): it is used only when the caller asked for SMT, i.e.
    // forced, never because a numeric mask happens to equal every secondary thread.
    if (forced != StrategyKind::Auto) {
        plan.strategy = forced;
    } else if (rules_of(StrategyKind::Bulk).available(machine)) {
        plan.strategy = StrategyKind::Bulk;
    } else {
        plan.strategy = StrategyKind::PerCpu;
    }
    const StrategyRules& rules = rules_of(plan.strategy);

    // Siblings go down before their primaries; primaries come up first. Within each class
    // the companion patch walks the CPUs in ascending order (report what it does); per-CPU
    // offlines go from the highest CPU down. One pass, one is_primary_thread() per CPU: a
    // sort that asked it per comparison took 180-360 ms for 8192 CPUs.
    std::vector<unsigned> primaries;
    std::vector<unsigned> secondaries;
    for_each_topology(
        machine.topology, plan.to_change, [&](unsigned cpu, const CpuTopology* topology) {
            (is_primary_thread(cpu, topology) ? primaries : secondaries).push_back(cpu);
        });
    if (action == Action::Offline && !rules.offline_ascending) {
        std::reverse(primaries.begin(), primaries.end());
        std::reverse(secondaries.begin(), secondaries.end());
    }
    std::vector<unsigned>& first = action == Action::Offline ? secondaries : primaries;
    const std::vector<unsigned>& second = action == Action::Offline ? primaries : secondaries;
    first.insert(first.end(), second.begin(), second.end());
    plan.order = std::move(first);

    switch (settings.expedite) {
        case Expedite::Always:
            plan.expedite = !plan.to_change.empty();
            break;
        case Expedite::Never:
            plan.expedite = false;
            break;
        case Expedite::Auto:
            // Only per-CPU writes gain: the bulk kernel interface expedites its own batch
            // (rcu_expedite_gp(), kernel series v2), smt/control loops in the kernel, and a
            // single CPU pays one grace period either way.
            plan.expedite = rules.wants_expedite && plan.to_change.count() >= 2;
            break;
    }
    return plan;
}

}  // namespace cpuhpd
