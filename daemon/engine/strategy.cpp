#include "strategy.h"

namespace cpuhpd {

// Each strategy's rules, from its own file.
extern const StrategyRules kBulkRules;
extern const StrategyRules kSmtRules;
extern const StrategyRules kPerCpuRules;

namespace {

// One write that the kernel carries out for the whole batch: a cpulist to cpu/offline or
// cpu/online (the companion patch: the kernel orders, batches and stops at the first
// failure itself), or "off"/"on" to smt/control (the kernel switches every secondary).
class OneShotStrategy final : public Strategy {
public:
    OneShotStrategy(AttributeWriter& writer, OneShotTarget target)
        : writer_(writer), target_(std::move(target)) {}

    StrategyOutcome run(Action action, const std::vector<unsigned>& order,
                        const StrategyHooks& hooks) override {
        StrategyOutcome out;
        if (order.empty()) {
            return out;
        }
        if (hooks.stop_requested && hooks.stop_requested()) {
            out.stopped_before = order;
            return out;
        }
        const auto [file, value] = target_(action, order);
        out.batch_error = writer_.write(file, value);
        if (out.batch_error == 0) {
            for (unsigned cpu : order) {
                out.attempted[cpu] = 0;
            }
        }
        if (hooks.progress) {
            hooks.progress(order.size(), order.size());
        }
        return out;
    }

private:
    AttributeWriter& writer_;
    OneShotTarget target_;
};

}  // namespace

std::unique_ptr<Strategy> make_one_shot(AttributeWriter& writer, OneShotTarget target) {
    return std::make_unique<OneShotStrategy>(writer, std::move(target));
}

const StrategyRules& rules_of(StrategyKind kind) {
    switch (kind) {
        case StrategyKind::Bulk:
            return kBulkRules;
        case StrategyKind::Smt:
            return kSmtRules;
        case StrategyKind::Auto:
        case StrategyKind::PerCpu:
            break;
    }
    return kPerCpuRules;
}

std::unique_ptr<Strategy> make_strategy(StrategyKind kind, const SysfsPaths& paths,
                                        AttributeWriter& writer) {
    return rules_of(kind).make(paths, writer);
}

ExpediteWindow::ExpediteWindow(const SysfsPaths& paths, AttributeWriter& writer, bool enable)
    : paths_(paths), writer_(writer) {
    if (!enable) {
        return;
    }
    auto old = read_attribute(paths_.rcu_expedited());
    if (!old) {
        return;  // kernel without the knob: nothing to do
    }
    old_value_ = *old;
    if (old_value_ == "1") {
        return;  // already expedited: leave it as found
    }
    active_ = writer_.write(paths_.rcu_expedited(), "1") == 0;
}

ExpediteWindow::~ExpediteWindow() {
    if (active_) {
        writer_.write(paths_.rcu_expedited(), old_value_);
    }
}

}  // namespace cpuhpd
