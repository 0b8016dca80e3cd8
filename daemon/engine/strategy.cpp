#include "strategy.h"

#include "cpulist.h"

namespace cpuhpd {

namespace {

// cpuN/online, one write per CPU in plan order.
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
            if (hooks.should_write && !hooks.should_write(cpu))
                continue;
            const int err = writer_.write(paths_.cpu_online(cpu), value);
            out.attempted[cpu] = err;
            if (hooks.on_result)
                hooks.on_result(cpu, err);
            if (hooks.progress)
                hooks.progress(done, order.size());
        }
        return out;
    }

private:
    const SysfsPaths& paths_;
    AttributeWriter& writer_;
};

// One write that the kernel carries out for the whole batch: a cpulist to cpu/offline or
// cpu/online (the companion patch: the kernel orders, batches and stops at the first
// failure itself), or "off"/"on" to smt/control (the kernel switches every secondary).
class OneShotStrategy final : public Strategy {
public:
    using Target = std::function<std::pair<std::filesystem::path, std::string>(
        Action, const std::vector<unsigned>&)>;
    OneShotStrategy(AttributeWriter& writer, Target target)
        : writer_(writer), target_(std::move(target)) {}

    StrategyOutcome run(Action action, const std::vector<unsigned>& order,
                        const StrategyHooks& hooks) override {
        StrategyOutcome out;
        if (order.empty())
            return out;
        if (hooks.stop_requested && hooks.stop_requested()) {
            out.stopped_before = order;
            return out;
        }
        const auto [file, value] = target_(action, order);
        out.batch_error = writer_.write(file, value);
        if (out.batch_error == 0)
            for (unsigned cpu : order)
                out.attempted[cpu] = 0;
        if (hooks.progress)
            hooks.progress(order.size(), order.size());
        return out;
    }

private:
    AttributeWriter& writer_;
    Target target_;
};

}  // namespace

std::unique_ptr<Strategy> make_strategy(StrategyKind kind, const SysfsPaths& paths,
                                        AttributeWriter& writer) {
    switch (kind) {
        case StrategyKind::Bulk:
            return std::make_unique<OneShotStrategy>(
                writer, [&paths](Action action, const std::vector<unsigned>& cpus) {
                    return std::pair{action == Action::Offline ? paths.offline() : paths.online(),
                                     format_cpulist(CpuSet::from(cpus)) + "\n"};
                });
        case StrategyKind::Smt:
            return std::make_unique<OneShotStrategy>(
                writer, [&paths](Action action, const std::vector<unsigned>&) {
                    return std::pair{paths.smt_control(),
                                     std::string(action == Action::Offline ? "off" : "on")};
                });
        case StrategyKind::Auto:
        case StrategyKind::PerCpu:
            break;
    }
    return std::make_unique<PerCpuStrategy>(paths, writer);
}

ExpediteWindow::ExpediteWindow(const SysfsPaths& paths, AttributeWriter& writer, bool enable)
    : paths_(paths), writer_(writer) {
    if (!enable)
        return;
    auto old = read_attribute(paths_.rcu_expedited());
    if (!old)
        return;  // kernel without the knob: nothing to do
    old_value_ = *old;
    if (old_value_ == "1")
        return;  // already expedited: leave it as found
    active_ = writer_.write(paths_.rcu_expedited(), "1") == 0;
}

ExpediteWindow::~ExpediteWindow() {
    if (active_)
        writer_.write(paths_.rcu_expedited(), old_value_);
}

}  // namespace cpuhpd
