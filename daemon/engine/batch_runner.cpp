#include "batch_runner.h"

#include <chrono>
#include <set>

#include "strategy.h"

namespace cpuhpd {

namespace {

Action opposite(Action action) {
    return action == Action::Offline ? Action::Online : Action::Offline;
}

bool in_target(Action action, unsigned cpu, const MachineState& state) {
    return state.online.contains(cpu) == (action == Action::Online);
}

RequestResult skeleton(const Request& request, std::uint64_t batch_id) {
    RequestResult r;
    r.action = request.action;
    r.mode = request.mode;
    r.mask = request.mask;
    r.dry_run = request.dry_run;
    r.batch_id = batch_id;
    return r;
}

void refuse(RequestResult& result, const Request& request, const Refusal& refusal) {
    result.refusal = refusal;
    result.outcome = Outcome::Failed;
    for (unsigned cpu : request.cpus.members())
        result.cpus.push_back({cpu, CpuOutcome::Refused, 0, refusal.what()});
}

std::vector<unsigned> filter_order(const std::vector<unsigned>& order, const CpuSet& cpus) {
    std::vector<unsigned> out;
    for (unsigned cpu : order)
        if (cpus.contains(cpu))
            out.push_back(cpu);
    return out;
}

}  // namespace

BatchRunner::BatchRunner(const SysfsPaths& paths, AttributeWriter& writer, BatchJournal& journal,
                         std::function<MachineState()> read_state, const EngineSettings& settings)
    : paths_(paths),
      writer_(writer),
      journal_(journal),
      read_state_(std::move(read_state)),
      settings_(settings) {}

RequestResult BatchRunner::dry_run(const Request& request) {
    const MachineState state = read_state_();
    validate(request, state, settings_);
    const Plan plan = make_plan(request.action, request.cpus, request.strategy, state, settings_);
    RequestResult r = skeleton(request, 0);
    r.strategy = plan.strategy;
    r.order = plan.order;
    for (unsigned cpu : request.cpus.members()) {
        const bool changes = plan.to_change.contains(cpu);
        r.cpus.push_back({cpu, CpuOutcome::Unchanged, 0,
                          changes ? "dry run: would go " + to_string(request.action)
                                  : "already " + to_string(request.action)});
    }
    r.outcome = Outcome::Ok;
    return r;
}

BatchOutput BatchRunner::run(std::uint64_t batch_id, const std::vector<Request>& requests,
                             const std::function<void(std::size_t, std::size_t)>& progress) {
    const auto started = std::chrono::steady_clock::now();
    BatchOutput out;
    out.results.reserve(requests.size());
    const MachineState before = read_state_();
    const Action action = requests.empty() ? Action::Offline : requests.front().action;

    // Validate again against the state at batch time, counting earlier requests' CPUs.
    std::vector<std::size_t> accepted;
    CpuSet leaving;
    CpuSet requested;
    for (std::size_t i = 0; i < requests.size(); ++i) {
        out.results.push_back(skeleton(requests[i], batch_id));
        try {
            validate(requests[i], before, settings_, leaving);
            accepted.push_back(i);
            requested |= requests[i].cpus;
            if (action == Action::Offline)
                leaving |= requests[i].cpus & before.online;
        } catch (const Refusal& refusal) {
            refuse(out.results[i], requests[i], refusal);
        }
    }
    const StrategyKind forced =
        accepted.empty() ? StrategyKind::Auto : requests[accepted.front()].strategy;
    const Plan plan = make_plan(action, requested, forced, before, settings_);

    // Atomic requests that saw a failure stop writing their remaining CPUs.
    std::set<std::size_t> failed_atomic;
    auto owners = [&](unsigned cpu) {
        std::vector<std::size_t> o;
        for (std::size_t i : accepted)
            if (requests[i].cpus.contains(cpu))
                o.push_back(i);
        return o;
    };
    StrategyHooks hooks;
    hooks.should_write = [&](unsigned cpu) {
        for (std::size_t i : owners(cpu))
            if (requests[i].mode == Mode::BestEffort || !failed_atomic.contains(i))
                return true;
        return false;
    };
    hooks.on_result = [&](unsigned cpu, int err) {
        if (err == 0)
            return;
        for (std::size_t i : owners(cpu))
            if (requests[i].mode == Mode::Atomic)
                failed_atomic.insert(i);
    };
    hooks.progress = progress;

    StrategyOutcome outcome;
    std::map<unsigned, int> rollback_errors;
    CpuSet rolled_back;
    CpuSet retried;  // CPUs a stopped one-shot write left behind, then written one by one
    bool expedited = false;
    if (!plan.to_change.empty()) {
        journal_.begin(batch_id, plan);
        ExpediteWindow window(paths_, writer_, plan.expedite);
        expedited = window.active();
        outcome = make_strategy(plan.strategy, paths_, writer_)->run(action, plan.order, hooks);

        MachineState after = read_state_();
        // A one-shot write that stopped part-way: best-effort callers still want every CPU
        // tried and a precise errno for each, so the rest goes CPU by CPU.
        if (outcome.batch_error != 0) {
            std::vector<unsigned> rest;
            for (unsigned cpu : plan.order) {
                if (in_target(action, cpu, after))
                    continue;
                bool best_effort_owner = false;
                for (std::size_t i : owners(cpu))
                    best_effort_owner |= requests[i].mode == Mode::BestEffort;
                if (best_effort_owner)
                    rest.push_back(cpu);
            }
            if (!rest.empty()) {
                StrategyHooks plain;
                plain.progress = progress;
                auto retry =
                    make_strategy(StrategyKind::PerCpu, paths_, writer_)->run(action, rest, plain);
                for (auto [cpu, err] : retry.attempted) {
                    outcome.attempted[cpu] = err;
                    retried.add(cpu);
                }
                after = read_state_();
            }
        }
        // Per-CPU failures of atomic requests are known only now for one-shot strategies.
        for (std::size_t i : accepted) {
            if (requests[i].mode != Mode::Atomic)
                continue;
            for (unsigned cpu : (requests[i].cpus & plan.to_change).members())
                if (!in_target(action, cpu, after))
                    failed_atomic.insert(i);
        }
        // Roll back what failed atomic requests changed, unless a request that succeeded
        // (or does not roll back) also asked for that CPU.
        CpuSet to_restore;
        for (std::size_t i : failed_atomic)
            for (unsigned cpu : (requests[i].cpus & plan.to_change).members()) {
                if (!in_target(action, cpu, after))
                    continue;
                bool keep = false;
                for (std::size_t j : owners(cpu))
                    keep |= !failed_atomic.contains(j);
                if (!keep)
                    to_restore.add(cpu);
            }
        if (!to_restore.empty()) {
            const Plan undo =
                make_plan(opposite(action), to_restore, StrategyKind::PerCpu, after, settings_);
            auto restored = make_strategy(StrategyKind::PerCpu, paths_, writer_)
                                ->run(opposite(action), undo.order, {});
            for (auto [cpu, err] : restored.attempted) {
                if (err == 0)
                    rolled_back.add(cpu);
                else
                    rollback_errors[cpu] = err;
            }
        }
        journal_.end(batch_id);
    }
    const MachineState final_state = plan.to_change.empty() ? before : read_state_();
    const auto duration = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started);

    // Results for each request, one entry per CPU it named.
    for (std::size_t i : accepted) {
        RequestResult& r = out.results[i];
        r.strategy = plan.strategy;
        r.duration = duration;
        r.order = filter_order(plan.order, requests[i].cpus);
        std::optional<unsigned> first_failure;
        for (unsigned cpu : r.order) {
            auto it = outcome.attempted.find(cpu);
            if ((it != outcome.attempted.end() && it->second != 0) ||
                (it == outcome.attempted.end() && outcome.batch_error != 0 &&
                 !in_target(action, cpu, final_state) && !rolled_back.contains(cpu))) {
                first_failure = cpu;
                break;
            }
        }
        for (unsigned cpu : requests[i].cpus.members()) {
            CpuResult c{cpu, CpuOutcome::Unchanged, 0, "already " + to_string(action)};
            if (plan.to_change.contains(cpu)) {
                auto it = outcome.attempted.find(cpu);
                const int err = it != outcome.attempted.end() ? it->second : 0;
                if (rolled_back.contains(cpu)) {
                    c = {cpu, CpuOutcome::RolledBack, 0,
                         "rolled back: CPU " + std::to_string(first_failure.value_or(cpu)) +
                             " of this request failed"};
                } else if (auto rb = rollback_errors.find(cpu); rb != rollback_errors.end()) {
                    c = {cpu, CpuOutcome::Changed, rb->second,
                         "left " + to_string(action) + ": rollback failed: " +
                             errno_name(rb->second) + " (" + errno_text(rb->second) + ")"};
                } else if (in_target(action, cpu, final_state)) {
                    // A transient failure that the per-CPU retry got past is still worth
                    // telling: the caller asked for one batch and got two writes.
                    std::string message = to_string(action);
                    if (retried.contains(cpu))
                        message += " on a per-CPU retry after the " + to_string(plan.strategy) +
                                   " write failed: " + errno_name(outcome.batch_error) + " (" +
                                   errno_text(outcome.batch_error) + ")";
                    c = {cpu, CpuOutcome::Changed, 0, std::move(message)};
                } else if (err != 0) {
                    c = {cpu, CpuOutcome::Failed, err, errno_text(err)};
                } else if (outcome.batch_error != 0) {
                    c = {cpu, CpuOutcome::Failed, outcome.batch_error,
                         to_string(plan.strategy) + " write failed: " +
                             errno_text(outcome.batch_error) + "; CPU not changed"};
                } else if (it == outcome.attempted.end()) {
                    c = {cpu, CpuOutcome::Refused, 0,
                         "not attempted: CPU " + std::to_string(first_failure.value_or(cpu)) +
                             " of this request failed first"};
                } else {
                    c = {cpu, CpuOutcome::Failed, EIO,
                         "the kernel accepted the write but the CPU is still " +
                             to_string(opposite(action))};
                }
            }
            r.cpus.push_back(std::move(c));
        }
        r.outcome = summarize(r.cpus);
    }

    BatchReport& report = out.report;
    report.batch_id = batch_id;
    report.action = action;
    report.strategy = plan.strategy;
    report.requests = requests.size();
    report.duration = duration;
    report.expedited = expedited;
    for (unsigned cpu : plan.to_change.members())
        if (in_target(action, cpu, final_state))
            report.changed.add(cpu);
    for (std::size_t i : accepted)
        for (const auto& c : out.results[i].cpus)
            if (c.outcome == CpuOutcome::Failed)
                report.failed.add(c.cpu);
    return out;
}

}  // namespace cpuhpd
