// bulk: one write of a cpulist to cpu/offline or cpu/online (the companion kernel patch,
// kernel/): the kernel orders the CPUs (ascending, as cpu_down_mask() walks them), batches
// them, stops at the first failure and expedites its own grace periods.
#include "cpulist.h"
#include "strategy.h"

namespace cpuhpd {

extern const StrategyRules kBulkRules;
const StrategyRules kBulkRules{
    StrategyKind::Bulk,
    [](const MachineState& machine) { return machine.bulk_writable; },
    [](const CpuSet&, const MachineState& machine) {
        if (!machine.bulk_writable) {
            throw Refusal(
                RefusalKind::NotSupported,
                "strategy bulk needs the companion kernel patch (writable "
                "/sys/devices/system/cpu/offline and online); this kernel does not offer it");
        }
    },
    /*offline_ascending=*/true,
    /*one_shot=*/true,
    /*stands_alone=*/false,
    /*wants_expedite=*/false,
    [](const MachineState&) { return std::optional<std::string>(); },
    [](const SysfsPaths& paths, AttributeWriter& writer) {
        return make_one_shot(writer, [&paths](Action action, const std::vector<unsigned>& cpus) {
            return std::pair{action == Action::Offline ? paths.offline() : paths.online(),
                             format_cpulist(CpuSet::from(cpus)) + "\n"};
        });
    },
};

}  // namespace cpuhpd
