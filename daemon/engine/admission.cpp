#include "admission.h"

#include "planner.h"
#include "selector.h"

namespace cpuhpd {

namespace {

StrategyKind smt_or_auto(Action action, const CpuSet& cpus, const MachineState& machine) {
    return smt_control_applies(action, cpus, machine) ? StrategyKind::Smt : StrategyKind::Auto;
}

}  // namespace

Request resolve(const ChangeAsk& ask, const MachineState& machine, const EngineSettings& settings) {
    Request request;
    request.action = ask.action;
    request.mask = ask.mask;
    request.mode = ask.options.mode.value_or(settings.default_mode);
    request.dry_run = ask.options.dry_run;
    request.refuse_pinned = ask.options.refuse_pinned;
    request.force = ask.options.force;
    request.restore_affinity = ask.options.restore_affinity;
    request.caller = ask.caller;
    StrategyKind default_strategy = StrategyKind::Auto;
    if (ask.smt_siblings) {
        request.cpus = machine.smt_secondaries();
        if (request.cpus.empty()) {
            throw Refusal(RefusalKind::NotSupported, "this machine has no SMT sibling threads");
        }
        request.selected_only = request.cpus;
        default_strategy = smt_or_auto(ask.action, request.cpus, machine);
    } else {
        const MaskSelection selection = select_mask(ask.mask, machine);
        request.cpus = selection.cpus;
        request.selected_only = selection.cpus - selection.named;
        if (selection.smt_selector) {
            default_strategy = smt_or_auto(ask.action, selection.cpus, machine);
        }
    }
    request.strategy = ask.options.strategy.value_or(default_strategy);
    return request;
}

}  // namespace cpuhpd
