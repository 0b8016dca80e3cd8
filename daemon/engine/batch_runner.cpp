#include "batch_runner.h"

#include <chrono>

#include "batch_phases.h"
#include "journal_file.h"

namespace cpuhpd {

namespace {

// What the journal must know to undo the batch after a crash, read before the first write.
JournalRecord journal_record(const BatchState& state, const SysfsPaths& paths) {
    JournalRecord record;
    record.batch_id = state.batch_id;
    record.action = state.action;
    record.strategy = state.plan.strategy;
    record.order = state.plan.order;
    record.online_before = state.before.online;
    record.boottime_ns = boottime_ns();
    if (state.plan.expedite)
        record.rcu_expedited = read_attribute(paths.rcu_expedited());
    if (state.plan.strategy == StrategyKind::Smt && !state.before.smt_control.empty())
        record.smt_control = state.before.smt_control;
    for (std::size_t i : state.accepted)
        record.requests.push_back(
            {state.requests[i].mode, state.requests[i].cpus, state.requests[i].caller});
    return record;
}

}  // namespace

BatchRunner::BatchRunner(const SysfsPaths& paths, AttributeWriter& writer, BatchJournal& journal,
                         std::function<MachineState()> read_state, const EngineSettings& settings,
                         std::filesystem::path proc_root)
    : paths_(paths),
      writer_(writer),
      journal_(journal),
      read_state_(std::move(read_state)),
      settings_(settings),
      proc_root_(std::move(proc_root)) {}

RequestResult BatchRunner::dry_run(const Request& request, const MachineState& state) {
    validate(request, state, settings_);
    const Plan plan = make_plan(request.action, request.cpus, request.strategy, state, settings_);
    RequestResult r = result_skeleton(request, 0);
    r.strategy = plan.strategy;
    r.order = plan.order;
    if (request.action == Action::Offline) {
        r.pinned = scan_pinned(proc_root_, plan.to_change, state.online - plan.to_change);
        refuse_if_pinned(request, plan.to_change, r.pinned);
    }
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
                             const std::function<void(std::size_t, std::size_t)>& progress,
                             const CancelCheck& cancel_requested) {
    const auto started = std::chrono::steady_clock::now();
    MachineState before = read_state_();
    Pinned pinned;
    if (!requests.empty() && requests.front().action == Action::Offline) {
        // One scan for the whole batch, before the first write; admit() gives each request
        // its part.
        CpuSet leaving;
        for (const Request& request : requests)
            leaving |= request.cpus & before.online;
        pinned = scan_pinned(proc_root_, leaving, before.online - leaving);
    }
    BatchState state = admit(batch_id, requests, std::move(before), settings_, pinned);
    const bool writes = !state.plan.to_change.empty();
    if (writes) {
        // The journal's begin and end bracket every CPU write, rollback included, all of
        // them inside the expedite window.
        const BatchIo io{paths_, writer_, read_state_, journal_, cancel_requested};
        journal_.begin(journal_record(state, paths_));
        {
            ExpediteWindow window(paths_, writer_, state.plan.expedite);
            state.expedited = window.active();
            execute(state, io, progress);
            retry_best_effort(state, io, progress);
            detect_failed_atomic(state);
            roll_back_atomic(state, io, settings_);
        }
        journal_.end();
    }
    state.final_state = writes ? read_state_() : state.before;
    state.duration = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started);
    describe_cpus(state);

    BatchOutput out;
    out.report = report(state);
    out.results = std::move(state.results);
    return out;
}

}  // namespace cpuhpd
