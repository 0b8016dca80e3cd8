// The three ways of driving the kernel. Each takes CPUs in plan order and reports, per
// CPU, the errno of its attempt; it never decides about rollback (BatchRunner does).
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
};

// Called after each CPU (or after the whole write for one-shot strategies):
// (done, total).
using ProgressFn = std::function<void(std::size_t, std::size_t)>;
// Asked before each per-CPU write: false skips the CPU (its request already failed).
using ShouldWriteFn = std::function<bool(unsigned)>;

class Strategy {
public:
    virtual ~Strategy() = default;
    virtual StrategyOutcome run(Action action, const std::vector<unsigned>& order, const ShouldWriteFn& should_write,
                                const ProgressFn& progress) = 0;
};

// Strategy objects bound to one sysfs root and writer; `reread` refreshes the online mask
// after one-shot writes so the outcome names exactly the CPUs that changed.
std::unique_ptr<Strategy> make_strategy(StrategyKind kind, const SysfsPaths& paths, AttributeWriter& writer);

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
