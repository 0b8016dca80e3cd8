#include "batch_runner.h"

#include <chrono>
#include <future>
#include <optional>
#include <set>
#include <system_error>

#include "batch_phases.h"
#include "journal_file.h"
#include "phase_timer.h"

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
    if (state.plan.expedite) {
        record.rcu_expedited = read_attribute(paths.rcu_expedited());
    }
    record.smt_control = rules_of(state.plan.strategy).saved_smt_control(state.before);
    for (std::size_t i : state.accepted) {
        record.requests.push_back(
            {state.requests[i].mode, state.requests[i].cpus, state.requests[i].caller});
    }
    return record;
}

// What the accepted requests of an offline batch leave without a CPU, each thread and IRQ
// once.
Pinned taken_affinity(const BatchState& state) {
    Pinned out;
    std::set<unsigned> tids;
    std::set<unsigned> irqs;
    for (std::size_t i : state.accepted) {
        for (const auto& task : state.results[i].pinned.tasks) {
            if (tids.insert(task.tid).second) {
                out.tasks.push_back(task);
            }
        }
        for (const auto& irq : state.results[i].pinned.irqs) {
            if (irqs.insert(irq.irq).second) {
                out.irqs.push_back(irq);
            }
        }
    }
    return out;
}

// The batch's journal, each record timed as the phase "journal" (inside the kernel write's
// phase, it stops that one's clock).
class TimedJournal final : public BatchJournal {
public:
    TimedJournal(BatchJournal& inner, PhaseTimer& timer) : inner_(inner), timer_(timer) {}
    void begin(const JournalRecord& record) override {
        const PhaseTimer::Scope scope(&timer_, "journal");
        inner_.begin(record);
    }
    void cpu_written(unsigned cpu, int err) override {
        const PhaseTimer::Scope scope(&timer_, "journal");
        inner_.cpu_written(cpu, err);
    }
    void one_shot_written(int err) override {
        const PhaseTimer::Scope scope(&timer_, "journal");
        inner_.one_shot_written(err);
    }
    void rollback_started() override {
        const PhaseTimer::Scope scope(&timer_, "journal");
        inner_.rollback_started();
    }
    void cpu_restored(unsigned cpu, int err) override {
        const PhaseTimer::Scope scope(&timer_, "journal");
        inner_.cpu_restored(cpu, err);
    }
    void end() override {
        const PhaseTimer::Scope scope(&timer_, "journal");
        inner_.end();
    }

private:
    BatchJournal& inner_;
    PhaseTimer& timer_;
};

}  // namespace

BatchRunner::BatchRunner(const SysfsPaths& paths, AttributeWriter& writer, BatchJournal& journal,
                         std::function<MachineState()> read_state, const EngineSettings& settings,
                         std::filesystem::path proc_root, std::filesystem::path cgroup_root,
                         std::filesystem::path partition_ledger,
                         std::filesystem::path affinity_ledger, AffinitySetter* affinity_setter)
    : paths_(paths),
      writer_(writer),
      journal_(journal),
      read_state_(std::move(read_state)),
      settings_(settings),
      proc_root_(std::move(proc_root)),
      cgroup_root_(std::move(cgroup_root)),
      ledger_(std::move(partition_ledger)),
      affinity_(std::move(affinity_ledger)),
      setter_(affinity_setter) {
    affinity_problem_ = affinity_.load();
    if (setter_ == nullptr) {
        if (proc_root_ == "/proc") {
            own_setter_ = std::make_unique<SchedAffinitySetter>();
        } else {
            own_setter_ = std::make_unique<ProcTreeAffinitySetter>(proc_root_);
        }
        setter_ = own_setter_.get();
    }
}

std::vector<AffinityRestore> BatchRunner::settle_affinity(const CpuSet& restore_for,
                                                          int& save_error) {
    save_error = 0;
    if (affinity_.entries().empty()) {
        return {};
    }
    return affinity_.settle(read_state_().online, restore_for, proc_root_, *setter_, writer_,
                            save_error);
}

std::vector<PartitionChange> BatchRunner::settle_partitions(std::optional<std::string>& problem) {
    problem = ledger_.load();
    if (cgroup_root_.empty() || ledger_.empty()) {
        return {};
    }
    auto changes = ledger_.plan_restore(cgroup_root_, read_state_().online);
    apply_partition_changes(changes, cgroup_root_, writer_);
    ledger_.save();
    return changes;
}

RequestResult BatchRunner::dry_run(const Request& request, const MachineState& state) {
    validate(request, state, settings_);
    const Plan plan = make_plan(request.action, request.cpus, request.strategy, state, settings_);
    RequestResult r = result_skeleton(request, 0);
    r.strategy = plan.strategy;
    r.order = plan.order;
    if (request.action == Action::Offline) {
        r.pinned = scan_pinned(proc_root_, plan.to_change, state.online - plan.to_change);
        const auto partitions = find_partitions(cgroup_root_);
        refuse_offline(request, plan.to_change, plan.to_change, state.online, r.pinned, partitions);
        r.partitions = plan_shrink(partitions, plan.to_change, state.online);
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
    // Every phase below runs inside `started` .. `state.duration` (phase_timer.h).
    PhaseTimer timer;
    MachineState before;
    {
        const PhaseTimer::Scope scope(&timer, "read");
        before = read_state_();
    }
    const bool offline = !requests.empty() && requests.front().action == Action::Offline;
    Pinned pinned;
    std::vector<Partition> partitions;
    if (offline) {
        // The two walks read different trees: the cgroup tree's on a thread of its own while
        // this one reads /proc (the batch waits for both before admitting anything). Timed
        // as "pinned" (the /proc scan) and "partitions" (what of the cgroup walk outlasted
        // it), so the phases still add up to no more than the batch's duration.
        std::future<std::vector<Partition>> partitions_walk;
        try {
            partitions_walk =
                std::async(std::launch::async, [this] { return find_partitions(cgroup_root_); });
        } catch (const std::system_error&) {  // no thread to be had: walked below instead
        }
        // One scan for the whole batch, before the first write; admit() gives each request
        // its part.
        CpuSet leaving;
        for (const Request& request : requests) {
            leaving |= request.cpus & before.online;
        }
        {
            const PhaseTimer::Scope scope(&timer, "pinned");
            pinned = scan_pinned(proc_root_, leaving, before.online - leaving);
        }
        const PhaseTimer::Scope scope(&timer, "partitions");
        partitions =
            partitions_walk.valid() ? partitions_walk.get() : find_partitions(cgroup_root_);
    }
    BatchState state;
    {
        const PhaseTimer::Scope scope(&timer, "admit");
        state = admit(batch_id, requests, std::move(before), settings_, pinned, partitions, &timer);
    }
    std::vector<AffinityRestore> affinity_unrecorded;
    int affinity_error = 0;
    std::vector<PartitionChange> partition_changes;
    const bool writes = !state.plan.to_change.empty();
    // The re-reads after the writes, timed as "reread" (inside the write's phase too).
    const std::function<MachineState()> reread = [this, &timer] {
        const PhaseTimer::Scope scope(&timer, "reread");
        return read_state_();
    };
    if (writes) {
        // The journal's begin and end bracket every CPU write, rollback included, all of
        // them inside the expedite window.
        TimedJournal journal(journal_, timer);
        const BatchIo io{paths_, writer_, reread, journal, cancel_requested};
        if (offline) {
            // Saved before the journal's header, so that whatever the journal makes recovery
            // undo has its affinity record already.
            const PhaseTimer::Scope scope(&timer, "affinity");
            affinity_unrecorded = affinity_.record(taken_affinity(state), state.plan.to_change,
                                                   batch_id, affinity_error);
        }
        journal.begin(journal_record(state, paths_));
        std::optional<ExpediteWindow> window;
        {
            const PhaseTimer::Scope scope(&timer, "expedite");
            window.emplace(paths_, writer_, state.plan.expedite);
        }
        state.expedited = window->active();
        if (offline) {
            // One write per partition before the first CPU: the kernel then has nothing
            // of theirs to rework per CPU. Recorded first, so a restart can give back.
            const PhaseTimer::Scope scope(&timer, "partitions");
            partition_changes = plan_shrink(partitions, state.plan.to_change, state.before.online);
            for (auto& change : partition_changes) {
                change.ledger_error = ledger_.take(change);
            }
            apply_partition_changes(partition_changes, cgroup_root_, writer_);
        }
        {
            const PhaseTimer::Scope scope(&timer, "write");
            execute(state, io, progress);
            retry_best_effort(state, io, progress);
            detect_failed_atomic(state);
        }
        {
            const PhaseTimer::Scope scope(&timer, "rollback");
            roll_back_atomic(state, io, settings_);
        }
        {
            const PhaseTimer::Scope scope(&timer, "expedite");
            window.reset();
        }
        journal.end();
    }
    // The forward writes' re-read stands for the end of the batch unless a rollback wrote
    // after it: the window's close and the journal's end change no CPU.
    if (!writes) {
        state.final_state = state.before;
    } else if (state.rollback_wrote()) {
        state.final_state = reread();
    } else {
        state.final_state = state.after;
    }
    if (writes && !cgroup_root_.empty() && !ledger_.empty()) {
        // CPUs back online (this batch's, or an offline batch's rollback): one write per
        // partition owed some.
        const PhaseTimer::Scope scope(&timer, "partitions");
        auto restores = ledger_.plan_restore(cgroup_root_, state.final_state.online);
        apply_partition_changes(restores, cgroup_root_, writer_);
        const int saved = ledger_.save();
        for (auto& restore : restores) {
            restore.ledger_error = saved;
        }
        partition_changes.insert(partition_changes.end(), restores.begin(), restores.end());
    }
    std::vector<AffinityRestore> affinity = std::move(affinity_unrecorded);
    if (writes && !affinity_.entries().empty()) {
        // CPUs back online: the rollback's (and the CPUs of a failed write, which never
        // left), or an online's that asked for it.
        const PhaseTimer::Scope scope(&timer, "affinity");
        CpuSet restore_for;
        for (std::size_t i : state.accepted) {
            if (offline || state.requests[i].restore_affinity) {
                restore_for |= state.requests[i].cpus & state.plan.to_change;
            }
        }
        int settle_error = 0;
        auto settled = affinity_.settle(state.final_state.online, restore_for, proc_root_, *setter_,
                                        writer_, settle_error);
        affinity_error = affinity_error != 0 ? affinity_error : settle_error;
        affinity.insert(affinity.end(), settled.begin(), settled.end());
    }
    state.phases = timer.phases();
    state.duration = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started);
    describe_cpus(state);

    for (std::size_t i : state.accepted) {
        for (const auto& change : partition_changes) {
            const CpuSet moved = (change.before - change.after) | (change.after - change.before);
            if (moved.intersects(state.requests[i].cpus)) {
                state.results[i].partitions.push_back(change);
            }
        }
    }
    for (std::size_t i : state.accepted) {
        for (const auto& entry : affinity) {
            if (entry.entry.leaving.intersects(state.requests[i].cpus)) {
                state.results[i].affinity.push_back(entry);
            }
        }
    }
    BatchOutput out;
    out.report = report(state);
    out.report.partitions = std::move(partition_changes);
    out.report.affinity = std::move(affinity);
    out.report.affinity_ledger_error = affinity_error;
    out.results = std::move(state.results);
    return out;
}

}  // namespace cpuhpd
