#include "batch_phases.h"

#include <cerrno>
#include <optional>
#include <string>
#include <utility>

namespace cpuhpd {

namespace {

bool in_target(Action action, unsigned cpu, const MachineState& state) {
    return state.online.contains(cpu) == (action == Action::Online);
}

void refuse(RequestResult& result, const Request& request, const Refusal& refusal) {
    result.refusal = refusal;
    result.outcome = Outcome::Failed;
    for (unsigned cpu : request.cpus.members()) {
        result.cpus.push_back({cpu, CpuOutcome::Refused, 0, refusal.what()});
    }
}

std::vector<unsigned> filter_order(const std::vector<unsigned>& order, const CpuSet& cpus) {
    std::vector<unsigned> out;
    for (unsigned cpu : order) {
        if (cpus.contains(cpu)) {
            out.push_back(cpu);
        }
    }
    return out;
}

// The first CPU in `order` (one request's) whose write failed, or that a failed one-shot
// write left behind and no rollback explains.
std::optional<unsigned> first_failure(const BatchState& state, const std::vector<unsigned>& order) {
    const StrategyOutcome& outcome = state.outcome;
    for (unsigned cpu : order) {
        auto it = outcome.attempted.find(cpu);
        if ((it != outcome.attempted.end() && it->second != 0) ||
            (it == outcome.attempted.end() && outcome.batch_error != 0 &&
             !in_target(state.action, cpu, state.final_state) &&
             !state.rolled_back.contains(cpu))) {
            return cpu;
        }
    }
    return std::nullopt;
}

// One CPU of one request; `failure` is that request's first_failure().
CpuResult describe_cpu(const BatchState& state, unsigned cpu, std::optional<unsigned> failure) {
    const Action action = state.action;
    const StrategyOutcome& outcome = state.outcome;
    if (!state.plan.to_change.contains(cpu)) {
        return {cpu, CpuOutcome::Unchanged, 0, "already " + to_string(action)};
    }
    auto it = outcome.attempted.find(cpu);
    const int err = it != outcome.attempted.end() ? it->second : 0;
    if (state.rolled_back.contains(cpu)) {
        return {cpu, CpuOutcome::RolledBack, 0,
                failure || state.cancelled.empty()
                    ? "rolled back: CPU " + std::to_string(failure.value_or(cpu)) +
                          " of this request failed"
                    : "rolled back: batch " + std::to_string(state.batch_id) + " was cancelled"};
    }
    if (auto rb = state.rollback_errors.find(cpu); rb != state.rollback_errors.end()) {
        return {cpu, CpuOutcome::Changed, rb->second,
                "left " + to_string(action) + ": rollback failed: " + errno_name(rb->second) +
                    " (" + errno_text(rb->second) + ")"};
    }
    if (in_target(action, cpu, state.final_state)) {
        // A transient failure that the per-CPU retry got past is still worth telling: the
        // caller asked for one batch and got two writes.
        std::string message = to_string(action);
        if (state.retried.contains(cpu)) {
            message += " on a per-CPU retry after the " + to_string(state.plan.strategy) +
                       " write failed: " + errno_name(outcome.batch_error) + " (" +
                       errno_text(outcome.batch_error) + ")";
        }
        return {cpu, CpuOutcome::Changed, 0, std::move(message)};
    }
    if (err != 0) {
        return {cpu, CpuOutcome::Failed, err, errno_text(err)};
    }
    if (state.cancelled.contains(cpu)) {
        std::string message = "not " + to_string(action) + ": batch " +
                              std::to_string(state.batch_id) + " was cancelled before this CPU";
        if (outcome.batch_error != 0) {  // the best-effort retry was cancelled
            message += " (after the " + to_string(state.plan.strategy) +
                       " write failed: " + errno_name(outcome.batch_error) + ")";
        }
        return {cpu, CpuOutcome::Cancelled, 0, std::move(message)};
    }
    if (outcome.batch_error != 0) {
        return {cpu, CpuOutcome::Failed, outcome.batch_error,
                to_string(state.plan.strategy) +
                    " write failed: " + errno_text(outcome.batch_error) + "; CPU not changed"};
    }
    if (it == outcome.attempted.end()) {
        return {cpu, CpuOutcome::Refused, 0,
                "not attempted: CPU " + std::to_string(failure.value_or(cpu)) +
                    " of this request failed first"};
    }
    return {cpu, CpuOutcome::Failed, EIO,
            "the kernel accepted the write but the CPU is still " + to_string(opposite(action))};
}

void refuse_if_pinned(const Request& request, const CpuSet& leaving, const Pinned& lost) {
    if (!request.refuse_pinned || lost.tasks.empty()) {
        return;
    }
    throw Refusal(RefusalKind::Pinned,
                  "taking CPU " + leaving.to_string() + " offline would leave " +
                      std::to_string(lost.tasks.size()) + " task" +
                      (lost.tasks.size() == 1 ? "" : "s") + " without a CPU to run on: " +
                      describe_pinned_tasks(lost.tasks) + " (refuse_pinned); nothing was changed",
                  leaving);
}

void refuse_if_emptied(const Request& request, const CpuSet& mine, const CpuSet& leaving,
                       const CpuSet& online, const std::vector<Partition>& partitions) {
    if (request.force) {
        return;
    }
    for (const Partition& p : emptied_partitions(partitions, leaving, online)) {
        if (p.cpus.intersects(mine)) {
            throw Refusal(RefusalKind::EmptyPartition,
                          "taking CPU " + mine.to_string() +
                              " offline would leave cpuset partition " + p.path + " (" + p.kind +
                              ", CPU " + p.cpus.to_string() +
                              ") without an online CPU, and the kernel would invalidate it; "
                              "nothing was changed (option force allows it)",
                          mine);
        }
    }
}

}  // namespace

std::vector<std::size_t> BatchState::owners(unsigned cpu) const {
    std::vector<std::size_t> o;
    for (std::size_t i : accepted) {
        if (requests[i].cpus.contains(cpu)) {
            o.push_back(i);
        }
    }
    return o;
}

void refuse_offline(const Request& request, const CpuSet& mine, const CpuSet& leaving,
                    const CpuSet& online, const Pinned& lost,
                    const std::vector<Partition>& partitions) {
    refuse_if_pinned(request, mine, lost);
    refuse_if_emptied(request, mine, leaving, online, partitions);
}

RequestResult result_skeleton(const Request& request, std::uint64_t batch_id) {
    RequestResult r;
    r.action = request.action;
    r.mode = request.mode;
    r.mask = request.mask;
    r.dry_run = request.dry_run;
    r.batch_id = batch_id;
    return r;
}

BatchState admit(std::uint64_t batch_id, std::vector<Request> requests, MachineState before,
                 const EngineSettings& settings, const Pinned& pinned,
                 const std::vector<Partition>& partitions, PhaseTimer* timer) {
    BatchState state;
    state.batch_id = batch_id;
    state.action = requests.empty() ? Action::Offline : requests.front().action;
    state.requests = std::move(requests);
    state.before = std::move(before);
    state.results.reserve(state.requests.size());
    CpuSet leaving;  // CPUs earlier accepted requests take offline
    CpuSet requested;
    for (std::size_t i = 0; i < state.requests.size(); ++i) {
        const Request& request = state.requests[i];
        state.results.push_back(result_skeleton(request, batch_id));
        try {
            validate(request, state.before, settings, leaving);
            if (state.action == Action::Offline) {
                const CpuSet mine = request.cpus & state.before.online;
                refuse_offline(request, mine, leaving | mine, state.before.online,
                               narrow_pinned(pinned, mine, state.before.online - (leaving | mine)),
                               partitions);
                leaving |= mine;
            }
            state.accepted.push_back(i);
            requested |= request.cpus;
        } catch (const Refusal& refusal) {
            refuse(state.results[i], request, refusal);
        }
    }
    if (state.action == Action::Offline) {
        for (std::size_t i : state.accepted) {
            state.results[i].pinned =
                narrow_pinned(pinned, state.requests[i].cpus & state.before.online,
                              state.before.online - leaving);
        }
    }
    const StrategyKind forced = state.accepted.empty()
                                    ? StrategyKind::Auto
                                    : state.requests[state.accepted.front()].strategy;
    const PhaseTimer::Scope planning(timer, "plan");
    state.plan = make_plan(state.action, requested, forced, state.before, settings);
    return state;
}

void execute(BatchState& state, const BatchIo& io, const BatchProgress& progress) {
    StrategyHooks hooks;
    hooks.should_write = [&state](unsigned cpu) {
        for (std::size_t i : state.owners(cpu)) {
            if (state.requests[i].mode == Mode::BestEffort || !state.failed_atomic.contains(i)) {
                return true;
            }
        }
        return false;
    };
    hooks.on_result = [&state, &io](unsigned cpu, int err) {
        io.journal.cpu_written(cpu, err);
        if (err == 0) {
            return;
        }
        for (std::size_t i : state.owners(cpu)) {
            if (state.requests[i].mode == Mode::Atomic) {
                state.failed_atomic.insert(i);
            }
        }
    };
    hooks.progress = progress;
    hooks.stop_requested = io.cancel_requested;
    state.outcome = make_strategy(state.plan.strategy, io.paths, io.writer)
                        ->run(state.action, state.plan.order, hooks);
    for (unsigned cpu : state.outcome.stopped_before) {
        state.cancelled.add(cpu);
    }
    if (rules_of(state.plan.strategy).one_shot && state.outcome.stopped_before.empty()) {
        io.journal.one_shot_written(state.outcome.batch_error);
    }
    state.after = io.read_state();
}

void retry_best_effort(BatchState& state, const BatchIo& io, const BatchProgress& progress) {
    if (state.outcome.batch_error == 0) {
        return;
    }
    std::vector<unsigned> rest;
    for (unsigned cpu : state.plan.order) {
        if (in_target(state.action, cpu, state.after)) {
            continue;
        }
        bool best_effort_owner = false;
        for (std::size_t i : state.owners(cpu)) {
            best_effort_owner |= state.requests[i].mode == Mode::BestEffort;
        }
        if (best_effort_owner) {
            rest.push_back(cpu);
        }
    }
    if (rest.empty()) {
        return;
    }
    StrategyHooks plain;
    plain.progress = progress;
    plain.on_result = [&io](unsigned cpu, int err) { io.journal.cpu_written(cpu, err); };
    plain.stop_requested = io.cancel_requested;
    auto retry =
        make_strategy(StrategyKind::PerCpu, io.paths, io.writer)->run(state.action, rest, plain);
    for (auto [cpu, err] : retry.attempted) {
        state.outcome.attempted[cpu] = err;
        state.retried.add(cpu);
    }
    for (unsigned cpu : retry.stopped_before) {
        state.cancelled.add(cpu);
    }
    state.after = io.read_state();
}

void detect_failed_atomic(BatchState& state) {
    for (std::size_t i : state.accepted) {
        if (state.requests[i].mode != Mode::Atomic) {
            continue;
        }
        for (unsigned cpu : (state.requests[i].cpus & state.plan.to_change).members()) {
            if (!in_target(state.action, cpu, state.after)) {
                state.failed_atomic.insert(i);
            }
        }
    }
}

CpuSet cpus_to_restore(const BatchState& state) {
    CpuSet to_restore;
    for (std::size_t i : state.failed_atomic) {
        for (unsigned cpu : (state.requests[i].cpus & state.plan.to_change).members()) {
            if (!in_target(state.action, cpu, state.after)) {
                continue;
            }
            bool keep = false;
            for (std::size_t j : state.owners(cpu)) {
                keep |= !state.failed_atomic.contains(j);
            }
            if (!keep) {
                to_restore.add(cpu);
            }
        }
    }
    return to_restore;
}

void roll_back_atomic(BatchState& state, const BatchIo& io, const EngineSettings& settings) {
    const CpuSet to_restore = cpus_to_restore(state);
    if (to_restore.empty()) {
        return;
    }
    const Action back = opposite(state.action);
    const Plan undo = make_plan(back, to_restore, StrategyKind::PerCpu, state.after, settings);
    io.journal.rollback_started();
    StrategyHooks journaled;
    journaled.on_result = [&io](unsigned cpu, int err) { io.journal.cpu_restored(cpu, err); };
    auto restored =
        make_strategy(StrategyKind::PerCpu, io.paths, io.writer)->run(back, undo.order, journaled);
    for (auto [cpu, err] : restored.attempted) {
        if (err == 0) {
            state.rolled_back.add(cpu);
        } else {
            state.rollback_errors[cpu] = err;
        }
    }
}

void describe_cpus(BatchState& state) {
    for (std::size_t i : state.accepted) {
        const Request& request = state.requests[i];
        RequestResult& r = state.results[i];
        r.strategy = state.plan.strategy;
        r.duration = state.duration;
        r.phases = state.phases;
        r.order = filter_order(state.plan.order, request.cpus);
        const std::optional<unsigned> failure = first_failure(state, r.order);
        r.cpus.clear();
        for (unsigned cpu : request.cpus.members()) {
            r.cpus.push_back(describe_cpu(state, cpu, failure));
        }
        r.outcome = summarize(r.cpus);
    }
}

BatchReport report(const BatchState& state) {
    BatchReport out;
    out.batch_id = state.batch_id;
    out.action = state.action;
    out.strategy = state.plan.strategy;
    out.requests = state.requests.size();
    out.duration = state.duration;
    out.phases = state.phases;
    out.expedited = state.expedited;
    out.cancelled = state.cancelled;
    for (unsigned cpu : state.plan.to_change.members()) {
        if (in_target(state.action, cpu, state.final_state)) {
            out.changed.add(cpu);
        }
    }
    for (std::size_t i : state.accepted) {
        for (const auto& c : state.results[i].cpus) {
            if (c.outcome == CpuOutcome::Failed) {
                out.failed.add(c.cpu);
            }
        }
    }
    return out;
}

}  // namespace cpuhpd
