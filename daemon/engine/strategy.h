// The three ways of driving the kernel, each in a file of its own with the rules the
// planner, the executor, the journal and recovery ask of it (strategy_bulk.cpp,
// strategy_smt.cpp, strategy_per_cpu.cpp). Each takes CPUs in plan order and reports, per
// CPU, the errno of its attempt; it never decides about rollback (batch_phases.h does).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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

// What a strategy answers for everyone who must know something about it: one table entry
// per StrategyKind (Auto, which the planner resolves, reads as per-cpu).
struct StrategyRules {
    StrategyKind kind;
    // The kernel offers it (MachineState::capabilities, in table order).
    bool (*available)(const MachineState& machine);
    // A forced request of `cpus`: throws Refusal(NotSupported) when it cannot be done so.
    void (*check)(const CpuSet& cpus, const MachineState& machine);
    // Offline write order within secondaries and primaries: ascending (the kernel's
    // cpu_down_mask() order) or descending. Online is always ascending.
    bool offline_ascending;
    // One write for the whole batch: the runner re-reads the kernel to learn what changed,
    // and the journal records the write, not CPUs.
    bool one_shot;
    // Its requests form a batch each (smt: exactly the SMT secondaries, no more).
    bool stands_alone;
    // expedite: auto opens an rcu_expedited window around batches of two CPUs or more.
    bool wants_expedite;
    // The value of the kernel knob it changes besides the CPUs, saved in the journal before
    // the batch so that recovery can put it back (smt: smt/control); none: nothing to save.
    std::optional<std::string> (*saved_smt_control)(const MachineState& before);
    // The strategy object bound to one sysfs root and writer.
    std::unique_ptr<Strategy> (*make)(const SysfsPaths& paths, AttributeWriter& writer);
};

const StrategyRules& rules_of(StrategyKind kind);

// One-shot strategies (bulk, smt) report success or the write's errno; the runner re-reads the
// kernel's state to learn exactly which CPUs changed.
std::unique_ptr<Strategy> make_strategy(StrategyKind kind, const SysfsPaths& paths,
                                        AttributeWriter& writer);

// One write that the kernel carries out for the whole batch: `target` names the file and
// the value for the action and the CPUs in order.
using OneShotTarget = std::function<std::pair<std::filesystem::path, std::string>(
    Action, const std::vector<unsigned>&)>;
std::unique_ptr<Strategy> make_one_shot(AttributeWriter& writer, OneShotTarget target);

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
