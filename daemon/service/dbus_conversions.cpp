#include "dbus_conversions.h"

#include <chrono>

#include "names.h"
#include "sysfs.h"

namespace cpuhpd {

namespace {

// The summary's pinned_tasks and pinned_irqs, a(uss) each.
void add_pinned(DbusSummary& summary, const Pinned& pinned) {
    using Entry = sdbus::Struct<uint32_t, std::string, std::string>;
    std::vector<Entry> tasks;
    tasks.reserve(pinned.tasks.size());
    for (const auto& task : pinned.tasks) {
        tasks.emplace_back(static_cast<uint32_t>(task.tid), task.comm, task.cpus.to_string());
    }
    std::vector<Entry> irqs;
    irqs.reserve(pinned.irqs.size());
    for (const auto& irq : pinned.irqs) {
        irqs.emplace_back(static_cast<uint32_t>(irq.irq), irq.name, irq.cpus.to_string());
    }
    summary[dbus::kSummaryPinnedTasks] = sdbus::Variant(tasks);
    summary[dbus::kSummaryPinnedIrqs] = sdbus::Variant(irqs);
}

// The summary's partitions, a(sss): path, cpuset.cpus before and after.
void add_partitions(DbusSummary& summary, const std::vector<PartitionChange>& changes) {
    std::vector<sdbus::Struct<std::string, std::string, std::string>> entries;
    entries.reserve(changes.size());
    for (const auto& change : changes) {
        entries.emplace_back(change.path, change.before.to_string(), change.after.to_string());
    }
    summary[dbus::kSummaryPartitions] = sdbus::Variant(entries);
}

// The summary's affinity, a(susssis).
void add_affinity(DbusSummary& summary, const std::vector<AffinityRestore>& settled) {
    using Entry = sdbus::Struct<std::string, uint32_t, std::string, std::string, std::string,
                                int32_t, std::string>;
    std::vector<Entry> entries;
    entries.reserve(settled.size());
    for (const auto& s : settled) {
        entries.emplace_back(s.entry.irq ? "irq" : "task", static_cast<uint32_t>(s.entry.id),
                             s.entry.name, s.entry.cpus.to_string(), to_string(s.status),
                             static_cast<int32_t>(s.error), s.message);
    }
    summary[dbus::kSummaryAffinity] = sdbus::Variant(entries);
}

// The summary's phases, a(st): name, microseconds, in the order the batch went through them.
void add_phases(DbusSummary& summary, const std::vector<PhaseTime>& phases) {
    std::vector<sdbus::Struct<std::string, uint64_t>> entries;
    entries.reserve(phases.size());
    for (const auto& phase : phases) {
        entries.emplace_back(phase.name, static_cast<uint64_t>(phase.duration.count()));
    }
    summary[dbus::kSummaryPhases] = sdbus::Variant(entries);
}

}  // namespace

std::vector<DbusCpuResult> to_dbus(const std::vector<CpuResult>& cpus) {
    std::vector<DbusCpuResult> entries;
    entries.reserve(cpus.size());
    for (const auto& cpu : cpus) {
        entries.emplace_back(static_cast<uint32_t>(cpu.cpu), to_string(cpu.outcome),
                             cpu.error != 0 ? errno_name(cpu.error) : std::string(),
                             static_cast<int32_t>(cpu.error), cpu.message);
    }
    return entries;
}

DbusSummary summary_of(const RequestResult& result) {
    DbusSummary summary;
    summary[dbus::kSummaryAction] = sdbus::Variant(to_string(result.action));
    summary[dbus::kSummaryMask] = sdbus::Variant(result.mask);
    summary[dbus::kSummaryMode] = sdbus::Variant(to_string(result.mode));
    summary[dbus::kSummaryStrategy] = sdbus::Variant(to_string(result.strategy));
    summary[dbus::kSummaryDryRun] = sdbus::Variant(result.dry_run);
    summary[dbus::kSummaryBatchId] = sdbus::Variant(static_cast<uint64_t>(result.batch_id));
    summary[dbus::kSummaryDurationUs] =
        sdbus::Variant(static_cast<uint64_t>(result.duration.count()));
    summary[dbus::kSummaryQueuedUs] = sdbus::Variant(static_cast<uint64_t>(result.queued.count()));
    std::vector<uint32_t> order(result.order.begin(), result.order.end());
    summary[dbus::kSummaryOrder] = sdbus::Variant(order);
    summary[dbus::kSummaryOutcome] = sdbus::Variant(to_string(result.outcome));
    add_phases(summary, result.phases);
    if (result.action == Action::Offline) {
        add_pinned(summary, result.pinned);
    }
    add_partitions(summary, result.partitions);
    add_affinity(summary, result.affinity);
    return summary;
}

std::vector<std::string> capability_names(const MachineState& state) {
    std::vector<std::string> names;
    for (const auto kind : state.capabilities()) {
        names.push_back(to_string(kind));
    }
    return names;
}

std::vector<DbusHold> to_dbus(const std::vector<Hold>& holds) {
    std::vector<DbusHold> entries;
    entries.reserve(holds.size());
    for (const auto& hold : holds) {
        entries.emplace_back(
            static_cast<uint64_t>(hold.id), hold.cpus.to_string(), to_string(hold.state), hold.who,
            hold.why, hold.holder,
            static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(hold.since.time_since_epoch())
                    .count()),
            hold.restore);
    }
    return entries;
}

DbusSummary summary_of(const ProfileDone& done) {
    DbusSummary summary;
    summary[dbus::kSummaryProfile] = sdbus::Variant(done.name);
    summary[dbus::kSummaryOffline] = sdbus::Variant(done.transition.to_offline.to_string());
    summary[dbus::kSummaryOnline] = sdbus::Variant(done.transition.to_online.to_string());
    summary[dbus::kSummaryTaken] = sdbus::Variant(
        done.dry_run ? done.transition.taken_after.to_string()
                     : (done.active ? done.active->taken.to_string() : std::string()));
    summary[dbus::kSummaryActive] = sdbus::Variant(done.active ? done.active->name : std::string());
    summary[dbus::kSummaryOutcome] = sdbus::Variant(to_string(done.outcome));
    summary[dbus::kSummaryDryRun] = sdbus::Variant(done.dry_run);
    summary[dbus::kSummaryDurationUs] =
        sdbus::Variant(static_cast<uint64_t>(done.duration.count()));
    add_pinned(summary, done.pinned);
    add_partitions(summary, done.partitions);
    add_affinity(summary, done.affinity);
    return summary;
}

DbusSummary recovery_of(const RecoveryReport& r) {
    DbusSummary out;
    out[dbus::kRecoveryOutcome] = sdbus::Variant(to_string(r.outcome));
    out[dbus::kRecoverySummary] = sdbus::Variant(r.summary);
    out[dbus::kRecoveryTime] = sdbus::Variant(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(r.when.time_since_epoch()).count()));
    switch (r.outcome) {
        case RecoveryOutcome::None:
            break;
        case RecoveryOutcome::Rejected:
            out[dbus::kRecoveryMovedTo] = sdbus::Variant(r.moved_to);
            break;
        case RecoveryOutcome::Finished:
        case RecoveryOutcome::Stale:
        case RecoveryOutcome::Recovered:
            out[dbus::kRecoveryBatchId] = sdbus::Variant(static_cast<uint64_t>(r.batch_id));
            out[dbus::kRecoveryAction] = sdbus::Variant(to_string(r.action));
            out[dbus::kRecoveryStrategy] = sdbus::Variant(to_string(r.strategy));
            out[dbus::kRecoveryPlanned] = sdbus::Variant(r.planned.to_string());
            out[dbus::kRecoveryFound] = sdbus::Variant(r.found.to_string());
            out[dbus::kRecoveryRestored] = sdbus::Variant(r.restored.to_string());
            out[dbus::kRecoveryKept] = sdbus::Variant(r.kept.to_string());
            out[dbus::kRecoveryFailed] = sdbus::Variant(r.failed.to_string());
            out[dbus::kRecoveryRcuExpeditedRestored] = sdbus::Variant(r.rcu_expedited_restored);
            out[dbus::kRecoverySmtControlRestored] = sdbus::Variant(r.smt_control_restored);
            break;
    }
    return out;
}

DbusSummary batch_of(const std::optional<BatchInFlight>& batch) {
    DbusSummary out;
    if (!batch) {
        return out;
    }
    out[dbus::kBatchId] = sdbus::Variant(static_cast<uint64_t>(batch->batch_id));
    out[dbus::kBatchAction] = sdbus::Variant(to_string(batch->action));
    out[dbus::kBatchCpus] = sdbus::Variant(batch->cpus.to_string());
    out[dbus::kBatchRequests] = sdbus::Variant(static_cast<uint32_t>(batch->requests));
    out[dbus::kBatchDone] = sdbus::Variant(static_cast<uint32_t>(batch->done));
    out[dbus::kBatchTotal] = sdbus::Variant(static_cast<uint32_t>(batch->total));
    out[dbus::kBatchSince] = sdbus::Variant(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(batch->since.time_since_epoch())
            .count()));
    return out;
}

std::vector<DbusTopologyEntry> topology_of(const MachineState& state) {
    CpuSet cpus = state.present;
    for (const auto& [cpu, topo] : state.topology) {
        cpus.add(cpu);
    }
    std::vector<DbusTopologyEntry> entries;
    for (const unsigned cpu : cpus.members()) {
        CpuTopology topo;
        if (const auto it = state.topology.find(cpu); it != state.topology.end()) {
            topo = it->second;
        }
        entries.emplace_back(static_cast<uint32_t>(cpu), static_cast<int32_t>(topo.package),
                             static_cast<int32_t>(topo.die), static_cast<int32_t>(topo.core),
                             static_cast<int32_t>(topo.node), topo.siblings.to_string(),
                             state.online.contains(cpu), state.hotpluggable.contains(cpu));
    }
    return entries;
}

std::vector<DbusProfile> profiles_of(const std::map<std::string, Profile>& profiles) {
    std::vector<DbusProfile> entries;
    for (const auto& [name, profile] : profiles) {
        entries.emplace_back(name, profile.offline, profile.smt_off,
                             static_cast<uint32_t>(profile.min_online_per_node));
    }
    return entries;
}

}  // namespace cpuhpd
