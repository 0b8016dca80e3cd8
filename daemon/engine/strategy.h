// The three ways of driving the kernel. Each takes CPUs in plan order and reports, per
// CPU, the errno of its attempt; it never decides about rollback (batch_phases.h does).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "machine.h"
#include "request.h"
#include "sysfs.h"

namespace cpuhpd {

struct StrategyOutcome {
    // Per attempted CPU: 0 if it reached the target state, else the errno.
    std::map<unsigned, int> attempted;
    // Errno that stopped the strategy as a whole (bulk or smt write), 0 if none; CPUs of the
    // batch not in `attempted` were left alone.
    int batch_error = 0;
    // The CPUs of the order never reached because `stop_requested` said so, in order.
    std::vector<unsigned> stopped_before;
};

// How the batch runner follows and steers a strategy while it runs.
struct StrategyHooks {
    // Asked before each per-CPU write: false skips the CPU (its atomic request failed).
    std::function<bool(unsigned)> should_write;
    // Told after each per-CPU write: (cpu, errno or 0).
    std::function<void(unsigned, int)> on_result;
    // Told after each CPU or one-shot write: (done, total).
    std::function<void(std::size_t, std::size_t)> progress;
    // Asked before each per-CPU write: true stops the strategy there (a cancel). A one-shot
    // write is never stopped once made; it is one step.
    std::function<bool()> stop_requested;
};

class Strategy {
public:
    virtual ~Strategy() = default;
    virtual StrategyOutcome run(Action action, const std::vector<unsigned>& order,
                                const StrategyHooks& hooks) = 0;
};

// Strategy objects bound to one sysfs root and writer (StrategyKind and its names: enums.h).
// One-shot strategies (bulk, smt) report success or the write's errno; the runner re-reads the
// kernel's state to learn exactly which CPUs changed.
std::unique_ptr<Strategy> make_strategy(StrategyKind kind, const SysfsPaths& paths,
                                        AttributeWriter& writer);

// Sets kernel/rcu_expedited to 1 for the lifetime of the window and restores the value it
// found, on every path out (also exceptions). A missing file makes it a no-op.
class ExpediteWindow {
public:
    ExpediteWindow(const SysfsPaths& paths, AttributeWriter& writer, bool enable);
    ~ExpediteWindow();
    ExpediteWindow(const ExpediteWindow&) = delete;
    ExpediteWindow& operator=(const ExpediteWindow&) = delete;
    bool active() const { return active_; }

private:
    const SysfsPaths& paths_;
    AttributeWriter& writer_;
    std::string old_value_;
    bool active_ = false;
};

}  // namespace cpuhpd
