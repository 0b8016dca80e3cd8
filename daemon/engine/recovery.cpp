#include "recovery.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <variant>

#include "cpulist.h"
#include "input.h"
#include "journal_file.h"

namespace cpuhpd {

namespace {

std::string cpus_or_none(const CpuSet& cpus) {
    return cpus.empty() ? "none" : cpus.to_string();
}

// Reads the journal without following a link or blocking on a FIFO; the text, or why not.
std::variant<std::string, std::string> read_journal_file(const std::filesystem::path& file) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return std::variant<std::string, std::string>(std::in_place_index<1>,
                                                      std::string("open: ") + std::strerror(errno));
    }
    struct stat st {};
    std::optional<std::string> problem;
    if (::fstat(fd, &st) != 0) {
        problem = std::string("fstat: ") + std::strerror(errno);
    } else {
        problem = untrusted_state_file(st, kMaxJournalBytes);
    }
    std::string text;
    while (!problem) {
        char buf[65536];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            problem = std::string("read: ") + std::strerror(errno);
        } else if (n == 0) {
            break;
        } else if (text.size() + static_cast<std::size_t>(n) > kMaxJournalBytes) {
            problem = "it is larger than " + std::to_string(kMaxJournalBytes) + " bytes";
        } else {
            text.append(buf, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    if (problem) {
        return std::variant<std::string, std::string>(std::in_place_index<1>, *problem);
    }
    return std::variant<std::string, std::string>(std::in_place_index<0>, std::move(text));
}

RecoveryReport rejected(RecoveryReport report, const std::filesystem::path& file,
                        const std::string& why) {
    report.outcome = RecoveryOutcome::Rejected;
    const std::filesystem::path aside = file.string() + ".rejected";
    // rename() moves a link itself, never what it points to.
    if (::rename(file.c_str(), aside.c_str()) == 0) {
        report.moved_to = aside.string();
        report.summary = "the batch journal " + file.string() + " was not used (" + why +
                         "); moved to " + aside.string() +
                         "; nothing was changed: check the CPUs and /sys/kernel/rcu_expedited";
    } else {
        report.summary = "the batch journal " + file.string() + " was not used (" + why +
                         ") and cannot be moved aside (" + std::strerror(errno) +
                         "); nothing was changed: check the CPUs and /sys/kernel/rcu_expedited";
    }
    return report;
}

bool wants_rollback(unsigned cpu, const JournalRecord& record, RecoveryPolicy policy) {
    if (policy != RecoveryPolicy::Auto) {
        return policy == RecoveryPolicy::Rollback;
    }
    bool named = false;
    for (const JournalRequest& request : record.requests) {
        if (!request.cpus.contains(cpu)) {
            continue;
        }
        named = true;
        if (request.mode == Mode::Atomic) {
            return true;
        }
    }
    return !named;  // planned but named by no request: put it back, as atomic would
}

// Puts back a value the batch changed, if it differs now; true when written.
bool put_back(const std::filesystem::path& file, const std::optional<std::string>& value,
              AttributeWriter& writer) {
    if (!value) {
        return false;
    }
    const auto now = read_attribute(file);
    if (!now || *now == *value) {
        return false;
    }
    return writer.write(file, *value) == 0;
}

}  // namespace

std::string count_affinity(const std::vector<AffinityRestore>& settled) {
    std::map<AffinityStatus, std::size_t> counts;
    for (const auto& s : settled) {
        ++counts[s.status];
    }
    std::string out;
    for (const auto& [status, n] : counts) {
        out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + to_string(status);
    }
    return out;
}

void add_affinity_summary(RecoveryReport& report) {
    if (!report.affinity.empty()) {
        report.summary += "; affinity of pinned tasks and IRQs: " + count_affinity(report.affinity);
    }
}

RecoveryReport recover(const std::filesystem::path& state_dir, const SysfsPaths& paths,
                       AttributeWriter& writer, BatchRunner& runner,
                       const std::function<MachineState()>& read_state,
                       const EngineSettings& settings, const CpuSet& held) {
    RecoveryReport report;
    report.when = std::chrono::system_clock::now();
    const std::filesystem::path file = state_dir / kJournalFileName;
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) {
        if (errno == ENOENT) {
            report.summary = "no interrupted batch";
            return report;
        }
        return rejected(report, file, std::string("lstat: ") + std::strerror(errno));
    }
    if (const auto why = untrusted_state_file(st, kMaxJournalBytes)) {
        return rejected(report, file, *why);
    }
    const auto text = read_journal_file(file);
    if (text.index() == 1) {
        return rejected(report, file, std::get<1>(text));
    }
    auto parsed = parse_journal(std::get<0>(text));
    if (const auto* error = std::get_if<std::string>(&parsed)) {
        return rejected(report, file, *error);
    }
    const JournalRecord& record = std::get<JournalRecord>(parsed);

    report.batch_id = record.batch_id;
    report.action = record.action;
    report.strategy = record.strategy;
    report.planned = CpuSet::from(record.order);
    const std::string batch = "batch " + std::to_string(record.batch_id) + " (" +
                              to_string(record.action) + " " + cpus_or_none(report.planned) +
                              " via " + to_string(record.strategy) + ")";
    if (record.ended) {
        remove_journal_file(file);
        report.outcome = RecoveryOutcome::Finished;
        report.summary = batch + " had finished; its journal was removed";
        return report;
    }
    if (record.boottime_ns > boottime_ns()) {
        remove_journal_file(file);
        report.outcome = RecoveryOutcome::Stale;
        report.summary = batch +
                         " was interrupted before the last boot, which reset every CPU; "
                         "its journal was removed";
        return report;
    }

    // The interrupted batch: first the knobs, then the CPUs, then the journal goes. The
    // machine is read before: putting smt/control back moves CPUs, which were found changed.
    report.outcome = RecoveryOutcome::Recovered;
    const MachineState now = read_state();
    report.rcu_expedited_restored = put_back(paths.rcu_expedited(), record.rcu_expedited, writer);
    bool rollback_any = false;
    for (const unsigned cpu : record.order) {
        rollback_any |= wants_rollback(cpu, record, settings.recovery);
    }
    if (rollback_any) {
        report.smt_control_restored = put_back(paths.smt_control(), record.smt_control, writer);
    }

    CpuSet to_restore;
    for (const unsigned cpu : record.order) {
        if (now.online.contains(cpu) == record.online_before.contains(cpu)) {
            continue;
        }
        report.found.add(cpu);
        (wants_rollback(cpu, record, settings.recovery) && !held.contains(cpu) ? to_restore
                                                                               : report.kept)
            .add(cpu);
    }
    std::string refusal;
    if (!to_restore.empty()) {
        Request request;
        request.action = opposite(record.action);
        request.cpus = to_restore;
        request.mask = format_cpulist(to_restore);
        request.mode = Mode::BestEffort;  // put back every CPU that can be
        request.caller = "recovery of batch " + std::to_string(record.batch_id);
        const BatchOutput out = runner.run(0, {request});
        if (!out.results.empty() && out.results.front().refusal) {
            refusal = out.results.front().refusal->what();
        }
        const MachineState after = read_state();
        for (const unsigned cpu : to_restore.members()) {
            (after.online.contains(cpu) == record.online_before.contains(cpu) ? report.restored
                                                                              : report.failed)
                .add(cpu);
        }
    }
    remove_journal_file(file);

    report.summary = batch + " was interrupted: " + std::to_string(report.found.count()) + " of " +
                     std::to_string(report.planned.count()) + " CPUs had changed (" +
                     cpus_or_none(report.found) + "); put back " + cpus_or_none(report.restored);
    if (!report.kept.empty()) {
        const CpuSet kept_held = report.kept & held;
        const CpuSet kept_other = report.kept - held;
        if (!kept_other.empty()) {
            report.summary += ", kept " + kept_other.to_string() + " (best-effort)";
        }
        if (!kept_held.empty()) {
            report.summary +=
                ", kept " + kept_held.to_string() + " (held by a hold kept across the restart)";
        }
    }
    if (!report.failed.empty()) {
        report.summary += ", failed to put back " + report.failed.to_string() +
                          (refusal.empty() ? "" : " (" + refusal + ")");
    }
    if (report.rcu_expedited_restored) {
        report.summary += "; rcu_expedited restored to " + *record.rcu_expedited;
    }
    if (report.smt_control_restored) {
        report.summary += "; smt/control restored to " + *record.smt_control;
    }
    return report;
}

}  // namespace cpuhpd
