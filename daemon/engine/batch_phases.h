// The phases of one batch, each a function over one BatchState value, so that each can be
// run and checked alone. BatchRunner::run calls them in this order:
//
//   admit                   validate at batch time, plan the accepted requests
//   [journal begin, expedite window open]   only when the plan changes a CPU
//   execute                 drive the planned strategy
//   retry_best_effort       CPU by CPU what a failed one-shot write left, for best-effort
//   detect_failed_atomic    atomic requests with a CPU that did not reach the target
//   roll_back_atomic        undo what only failed atomic requests changed
//   [journal end, expedite window closed]
//   (the runner reads final_state and measures duration and the phases: phase_timer.h)
//   describe_cpus           one CpuResult per requested CPU, and each request's outcome
//   report                  the BatchReport
//
// A phase reads the fields earlier phases filled in and fills in its own (see the
// comments on BatchState). No phase opens the journal or the expedite window; the runner
// brackets the writing phases with them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "journal.h"
#include "machine.h"
#include "phase_timer.h"
#include "planner.h"
#include "request.h"
#include "settings.h"
#include "strategy.h"
#include "sysfs.h"

namespace cpuhpd {

// (done, total) after each CPU or one-shot write.
using BatchProgress = std::function<void(std::size_t, std::size_t)>;

// Polled between writes: true once the batch is to stop (Cancel, SIGTERM). Empty: never.
using CancelCheck = std::function<bool()>;

// What the writing phases touch: the sysfs tree, its writer, a fresh reading of the
// machine after the writes, the journal each write is recorded in, and whether the batch
// has been cancelled.
struct BatchIo {
    const SysfsPaths& paths;
    AttributeWriter& writer;
    const std::function<MachineState()>& read_state;
    BatchJournal& journal;
    const CancelCheck& cancel_requested;
};

struct BatchState {
    // admit
    std::uint64_t batch_id = 0;
    Action action = Action::Offline;  // every request's; Offline for an empty batch
    std::vector<Request> requests;
    MachineState before;                 // what the batch was validated and planned against
    std::vector<RequestResult> results;  // one per request; refused ones are final here
    std::vector<std::size_t> accepted;   // indices into requests, ascending
    Plan plan;                           // for the union of the accepted requests

    // runner, inside the window
    bool expedited = false;

    // execute, retry_best_effort
    StrategyOutcome outcome;  // per-CPU errno of every write, the retry's replacing the first
    CpuSet retried;           // CPUs the per-CPU retry wrote
    CpuSet cancelled;         // planned CPUs never written because the batch was cancelled
    MachineState after;       // read after the last forward write

    // execute (atomic requests that saw a per-CPU failure), detect_failed_atomic (the rest)
    std::set<std::size_t> failed_atomic;

    // roll_back_atomic
    CpuSet rolled_back;                       // restored to their state before the batch
    std::map<unsigned, int> rollback_errors;  // cpu -> errno of the restoring write
    // Whether roll_back_atomic wrote at all (every restore it tried is in one of the two).
    bool rollback_wrote() const { return !rolled_back.empty() || !rollback_errors.empty(); }

    // runner, after the window closed
    MachineState final_state;  // `before` when the plan changed nothing
    std::chrono::microseconds duration{0};
    std::vector<PhaseTime> phases;  // where `duration` went (phase_timer.h)

    // The accepted requests that name `cpu`, ascending.
    std::vector<std::size_t> owners(unsigned cpu) const;
};

// A result carrying the request's own fields and nothing decided yet.
RequestResult result_skeleton(const Request& request, std::uint64_t batch_id);

// Validates each request against `before` (counting the CPUs earlier requests take
// offline against min_online), refuses the ones that fail with every CPU Refused, and
// plans the union of the rest with the strategy the first accepted request asked for.
// Touches nothing.
// Going offline, `pinned` is a scan (pinned.h) for the CPUs of all the requests: each
// accepted request's result gets the part its CPUs leave without a CPU, and a request with
// refuse_pinned is refused when it, with the requests accepted before it, would leave a
// task so. A request that would leave one of `partitions` (cpuset partitions, partitions.h)
// without a CPU online, with the requests before it, is refused unless it passed force.
// The planning is timed as the phase "plan" of `timer`, if given.
BatchState admit(std::uint64_t batch_id, std::vector<Request> requests, MachineState before,
                 const EngineSettings& settings, const Pinned& pinned = {},
                 const std::vector<Partition>& partitions = {}, PhaseTimer* timer = nullptr);

// The checks before CPUs go offline (admit, a dry run, a profile's offline part), before
// anything changes: throws Refusal(Pinned) when `request` asked refuse_pinned and `lost` has
// tasks that its CPUs `mine` take away; Refusal(EmptyPartition) unless `request` passed
// force, when taking `leaving` (all the CPUs going, `mine` among them) from `online` would
// leave one of `partitions` meeting `mine` without a CPU online.
void refuse_offline(const Request& request, const CpuSet& mine, const CpuSet& leaving,
                    const CpuSet& online, const Pinned& lost,
                    const std::vector<Partition>& partitions);

// Runs the plan's strategy over plan.order. A per-CPU write is skipped when every request
// naming the CPU is atomic and has already failed; a failed write marks the atomic
// requests naming the CPU failed. Every write is recorded in the journal. A cancel stops it
// before the next write and puts the CPUs left in `cancelled`. Then reads `after`. Call
// only when plan.to_change is not empty.
void execute(BatchState& state, const BatchIo& io, const BatchProgress& progress);

// When the one-shot (bulk or smt) write failed, writes CPU by CPU the planned CPUs still
// not in the target state that a best-effort request names, records each errno in
// `outcome` and the CPU in `retried`, and reads `after` again. Nothing otherwise, and
// nothing more once the batch is cancelled (the CPUs left go to `cancelled`).
void retry_best_effort(BatchState& state, const BatchIo& io, const BatchProgress& progress);

// Marks failed every atomic request with a planned CPU not in the target state in
// `after` (a one-shot write tells no per-CPU errno, so execute cannot; a cancelled CPU
// counts too, so a cancel rolls atomic requests back). Touches nothing.
void detect_failed_atomic(BatchState& state);

// The CPUs roll_back_atomic restores: the planned CPUs of failed atomic requests that
// reached the target state, unless a request that did not fail also names them.
CpuSet cpus_to_restore(const BatchState& state);

// Writes cpus_to_restore() back, CPU by CPU in the planner's order for the opposite
// action, and records each in `rolled_back` or `rollback_errors` (and the journal). A
// cancel does not stop it: it is what a cancel asks for.
void roll_back_atomic(BatchState& state, const BatchIo& io, const EngineSettings& settings);

// Fills, for each accepted request, the strategy, duration, its CPUs in write order, one
// CpuResult per CPU it named (ascending) and the outcome. Reads final_state. Touches
// nothing.
void describe_cpus(BatchState& state);

// The batch's report: changed = planned CPUs in the target state in final_state;
// failed = CPUs that describe_cpus found Failed.
BatchReport report(const BatchState& state);

}  // namespace cpuhpd
