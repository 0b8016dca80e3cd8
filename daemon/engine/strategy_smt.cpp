// smt: one write of "off" or "on" to smt/control; the kernel switches every SMT secondary
// thread of the machine. Used only when the caller asked for SMT (SetSmt, the "smt"
// selector, or strategy smt), never because a numeric mask happens to equal the
// secondaries: it switches SMT for the whole machine (and a later per-CPU online of one
// sibling then fails with EPERM). The journal keeps smt/control's value for recovery.
#include "planner.h"
#include "strategy.h"

namespace cpuhpd {

bool smt_control_applies(Action action, const CpuSet& cpus, const MachineState& machine) {
    const CpuSet secondaries = machine.smt_secondaries();
    if (secondaries.empty() || !(cpus == secondaries)) {
        return false;
    }
    // "on" when already on is a no-op in the kernel, so switching on needs "off" now.
    return machine.smt_control == (action == Action::Offline ? SmtControl::On : SmtControl::Off);
}

namespace {

bool switchable(const MachineState& machine) {
    return machine.smt_control == SmtControl::On || machine.smt_control == SmtControl::Off;
}

void check_smt(const CpuSet& cpus, const MachineState& machine) {
    if (!switchable(machine)) {
        throw Refusal(
            RefusalKind::NotSupported,
            "strategy smt needs smt/control to be on or off; it is '" +
                (machine.smt_control == SmtControl::Absent ? std::string("absent")
                                                           : to_string(machine.smt_control)) +
                "'");
    }
    if (!(cpus == machine.smt_secondaries())) {
        throw Refusal(RefusalKind::NotSupported,
                      "strategy smt applies only to exactly the SMT secondaries (" +
                          machine.smt_secondaries().to_string() + "), not " + cpus.to_string());
    }
}

}  // namespace

extern const StrategyRules kSmtRules;
const StrategyRules kSmtRules{
    StrategyKind::Smt,
    switchable,
    check_smt,
    /*offline_ascending=*/false,
    /*one_shot=*/true,
    /*stands_alone=*/true,
    /*wants_expedite=*/false,
    [](const MachineState& before) {
        return before.smt_control == SmtControl::Absent
                   ? std::optional<std::string>()
                   : std::optional<std::string>(to_string(before.smt_control));
    },
    [](const SysfsPaths& paths, AttributeWriter& writer) {
        return make_one_shot(writer, [&paths](Action action, const std::vector<unsigned>&) {
            return std::pair{paths.smt_control(),
                             std::string(action == Action::Offline ? "off" : "on")};
        });
    },
};

}  // namespace cpuhpd
