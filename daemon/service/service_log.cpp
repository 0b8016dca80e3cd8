#include "service_log.h"

#include <string>
#include <vector>

#include "log.h"
#include "sysfs.h"

namespace cpuhpd {

namespace {

std::string duration_text(std::chrono::microseconds duration) {
    return std::to_string(duration.count()) + "us";
}

log::Level level_of(Notice::Level level) {
    switch (level) {
        case Notice::Level::Info:
            return log::Level::Info;
        case Notice::Level::Warning:
            return log::Level::Warning;
        case Notice::Level::Error:
            return log::Level::Error;
    }
    return log::Level::Info;
}

// One line per affinity entry settled (affinity.h), with its journal fields.
void log_affinity(const std::string& prefix, std::uint64_t batch_id,
                  const std::vector<AffinityRestore>& settled) {
    for (const auto& s : settled) {
        std::vector<log::Field> fields{{"BATCH_ID", std::to_string(batch_id)},
                                       {"AFFINITY", to_string(s.status)},
                                       {"AFFINITY_CPUS", s.entry.cpus.to_string()},
                                       {"CPUS", s.entry.leaving.to_string()}};
        if (s.entry.irq) {
            fields.emplace_back("IRQ", std::to_string(s.entry.id));
        } else {
            fields.emplace_back("TID", std::to_string(s.entry.id));
            fields.emplace_back("PID", std::to_string(s.entry.pid));
        }
        if (s.error != 0) {
            fields.emplace_back("ERRNO", errno_name(s.error));
        }
        const bool bad =
            s.status == AffinityStatus::Failed || s.status == AffinityStatus::NotRecorded;
        log::write(bad ? log::Level::Warning : log::Level::Info, prefix + describe(s), fields);
    }
}

}  // namespace

void log_notice(const Notice& notice) {
    std::vector<log::Field> fields;
    fields.reserve(notice.fields.size());
    for (const auto& [key, value] : notice.fields) {
        fields.emplace_back(key, value);
    }
    log::write(level_of(notice.level), notice.text, fields);
}

void log_result(const RequestResult& result) {
    const std::string action = to_string(result.action);
    if (result.refusal) {
        log::info(action + " " + result.mask + " refused: " + result.refusal->what(),
                  {{"ACTION", action}, {"BATCH_ID", std::to_string(result.batch_id)}});
    } else if (!result.dry_run) {
        CpuSet cpus;
        for (const auto& cpu : result.cpus) {
            cpus.add(cpu.cpu);
            if (cpu.outcome == CpuOutcome::Failed) {
                log::warning("cpu " + std::to_string(cpu.cpu) + ": " + action +
                                 " failed: " + errno_name(cpu.error) + " (" + cpu.message + ")",
                             {{"CPUS", std::to_string(cpu.cpu)},
                              {"ACTION", action},
                              {"ERRNO", errno_name(cpu.error)},
                              {"BATCH_ID", std::to_string(result.batch_id)}});
            }
        }
        log::info(action + " '" + result.mask + "': " + to_string(result.outcome),
                  {{"ACTION", action},
                   {"CPUS", cpus.to_string()},
                   {"STRATEGY", to_string(result.strategy)},
                   {"MODE", to_string(result.mode)},
                   {"OUTCOME", to_string(result.outcome)},
                   {"BATCH_ID", std::to_string(result.batch_id)},
                   {"DURATION_US", std::to_string(result.duration.count())},
                   {"QUEUED_US", std::to_string(result.queued.count())}});
        // No re-read here: the batch's last read of the machine was handed to this thread
        // before its results, so properties read after the reply show the new state.
    }
}

void log_batch(const BatchReport& report) {
    for (const auto& change : report.partitions) {
        const std::string text = "batch " + std::to_string(report.batch_id) +
                                 ": cpuset partition " + change.path + " (" + change.kind +
                                 "): CPU " + change.before.to_string() + " -> " +
                                 (change.after.empty() ? "-" : change.after.to_string());
        log::write(change.error != 0 ? log::Level::Warning : log::Level::Info,
                   change.error != 0 ? text + " failed: " + errno_name(change.error) + " (" +
                                           errno_text(change.error) + ")"
                                     : text,
                   {{"BATCH_ID", std::to_string(report.batch_id)},
                    {"PARTITION", change.path},
                    {"CPUS", change.after.to_string()}});
        if (change.ledger_error != 0) {
            log::warning(
                "batch " + std::to_string(report.batch_id) + ": cpuset partition " + change.path +
                    ": the partition ledger could not be saved: " +
                    errno_name(change.ledger_error) + " (" + errno_text(change.ledger_error) +
                    "); a restart may not give the partition its CPUs back as owed",
                {{"BATCH_ID", std::to_string(report.batch_id)}, {"PARTITION", change.path}});
        }
    }
    log_affinity("batch " + std::to_string(report.batch_id) + ": affinity of ", report.batch_id,
                 report.affinity);
    if (report.affinity_ledger_error != 0) {
        log::warning("batch " + std::to_string(report.batch_id) +
                         ": the affinity ledger could not be saved: " +
                         errno_name(report.affinity_ledger_error) + " (" +
                         errno_text(report.affinity_ledger_error) +
                         "); a restart may not give pinned tasks their affinity back",
                     {{"BATCH_ID", std::to_string(report.batch_id)}});
    }
    const std::string action = to_string(report.action);
    const std::string strategy = to_string(report.strategy);
    std::string text = "batch " + std::to_string(report.batch_id) + ": " + action + " " +
                       (report.changed.empty() ? "nothing" : report.changed.to_string()) + " via " +
                       strategy + " in " + duration_text(report.duration) + ", " +
                       std::to_string(report.requests) + " request(s)";
    if (report.expedited) {
        text += ", rcu expedited";
    }
    if (!report.failed.empty()) {
        text += ", failed: " + report.failed.to_string();
    }
    if (!report.cancelled.empty()) {
        text += ", cancelled before " + report.cancelled.to_string();
    }
    log::write(report.failed.empty() ? log::Level::Info : log::Level::Warning, text,
               {{"BATCH_ID", std::to_string(report.batch_id)},
                {"ACTION", action},
                {"STRATEGY", strategy},
                {"CPUS", report.changed.to_string()},
                {"FAILED_CPUS", report.failed.to_string()},
                {"CANCELLED_CPUS", report.cancelled.to_string()},
                {"REQUESTS", std::to_string(report.requests)},
                {"DURATION_US", std::to_string(report.duration.count())},
                {"PHASE_US", phases_text(report.phases)},
                {"EXPEDITED", report.expedited ? "1" : "0"}});
}

void log_recovery(const RecoveryReport& r) {
    const bool trouble = r.outcome == RecoveryOutcome::Rejected || !r.failed.empty();
    log::write(trouble ? log::Level::Error : log::Level::Warning, "recovery: " + r.summary,
               {{"RECOVERY", to_string(r.outcome)},
                {"BATCH_ID", std::to_string(r.batch_id)},
                {"ACTION", to_string(r.action)},
                {"STRATEGY", to_string(r.strategy)},
                {"CPUS", r.planned.to_string()},
                {"FOUND_CPUS", r.found.to_string()},
                {"RESTORED_CPUS", r.restored.to_string()},
                {"KEPT_CPUS", r.kept.to_string()},
                {"FAILED_CPUS", r.failed.to_string()}});
    log_affinity("recovery: affinity of ", r.batch_id, r.affinity);
}

void log_settled(const std::vector<PartitionChange>& changes,
                 const std::optional<std::string>& problem) {
    for (const auto& change : changes) {
        const std::string what = "cpuset partition " + change.path + ": gave back CPU " +
                                 (change.after - change.before).to_string() +
                                 " taken before a restart";
        if (change.error != 0) {
            log::warning(what + " failed: " + errno_name(change.error),
                         {{"PARTITION", change.path}, {"CPUS", change.after.to_string()}});
        } else {
            log::info(what, {{"PARTITION", change.path}, {"CPUS", change.after.to_string()}});
        }
    }
    if (problem) {
        log::warning("ignoring the partition ledger: " + *problem);
    }
}

}  // namespace cpuhpd
