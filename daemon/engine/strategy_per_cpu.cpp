// per-cpu: one write of cpuN/online per CPU, in plan order. Always available; the only
// strategy an rcu_expedited window speeds up (each write waits for its own grace periods).
#include "strategy.h"

namespace cpuhpd {

namespace {

class PerCpuStrategy final : public Strategy {
public:
    PerCpuStrategy(const SysfsPaths& paths, AttributeWriter& writer)
        : paths_(paths), writer_(writer) {}

    StrategyOutcome run(Action action, const std::vector<unsigned>& order,
                        const StrategyHooks& hooks) override {
        StrategyOutcome out;
        const std::string value = action == Action::Offline ? "0" : "1";
        std::size_t done = 0;
        for (unsigned cpu : order) {
            if (hooks.stop_requested && hooks.stop_requested()) {
                out.stopped_before.assign(order.begin() + static_cast<std::ptrdiff_t>(done),
                                          order.end());
                break;
            }
            ++done;
            if (hooks.should_write && !hooks.should_write(cpu)) {
                continue;
            }
            const int err = writer_.write(paths_.cpu_online(cpu), value);
            out.attempted[cpu] = err;
            if (hooks.on_result) {
                hooks.on_result(cpu, err);
            }
            if (hooks.progress) {
                hooks.progress(done, order.size());
            }
        }
        return out;
    }

private:
    const SysfsPaths& paths_;
    AttributeWriter& writer_;
};

}  // namespace

extern const StrategyRules kPerCpuRules;
const StrategyRules kPerCpuRules{
    StrategyKind::PerCpu,
    [](const MachineState&) { return true; },
    [](const CpuSet&, const MachineState&) {},
    /*offline_ascending=*/false,
    /*one_shot=*/false,
    /*stands_alone=*/false,
    /*wants_expedite=*/true,
    [](const MachineState&) { return std::optional<std::string>(); },
    [](const SysfsPaths& paths, AttributeWriter& writer) -> std::unique_ptr<Strategy> {
        return std::make_unique<PerCpuStrategy>(paths, writer);
    },
};

}  // namespace cpuhpd
