#include "render_table.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string_view>

#include "enums.h"
#include "holds.h"
#include "input.h"
#include "names.h"

namespace cpuctl {
namespace {

std::string or_dash(const std::string& s) {
    return s.empty() ? "-" : s;
}

// Control characters (a newline in a kernel message) would break the table's lines.
std::string one_line(std::string s) {
    for (auto& c : s) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            c = ' ';
        }
    }
    return s;
}

// A task's comm or an IRQ's action names: the daemon escapes them already (escape_excerpt);
// again here, in case it is an older one (idempotent on escaped text). The bound is far above
// what the kernel lets a name be.
std::string escaped_name(const std::string& name) {
    return cpuhpd::escape_excerpt(name, 1024);
}

// "pinned: ... and 3 more tasks\n" when more than kMaxPinnedShown; else "".
std::string more_line(std::size_t count, const char* kind) {
    if (count <= kMaxPinnedShown) {
        return "";
    }
    const std::size_t more = count - kMaxPinnedShown;
    return "pinned: ... and " + std::to_string(more) + " more " + kind + (more == 1 ? "" : "s") +
           "\n";
}

std::string int_or_dash(std::int32_t v) {
    return v < 0 ? "-" : std::to_string(v);
}

const char* yes_no(bool b) {
    return b ? "yes" : "no";
}

// Left-aligned columns, two spaces apart; the last column is not padded.
void print_rows(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> widths;
    for (const auto& row : rows) {
        widths.resize(std::max(widths.size(), row.size()), 0);
        for (std::size_t i = 0; i < row.size(); ++i) {
            widths[i] = std::max(widths[i], row[i].size());
        }
    }
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size()) {
                line.append(widths[i] - row[i].size() + 2, ' ');
            }
        }
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        out << line << '\n';
    }
}

std::string_view name_of(cpuhpd::CpuOutcome outcome) {
    return cpuhpd::name_of(cpuhpd::kCpuOutcomeNames, outcome);
}

std::size_t count_result(const BatchReply& reply, std::string_view result) {
    return static_cast<std::size_t>(
        std::count_if(reply.cpus.begin(), reply.cpus.end(),
                      [&](const CpuResult& c) { return c.result == result; }));
}

}  // namespace

std::string seconds_text(std::uint64_t us) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%llu.%03llu s", static_cast<unsigned long long>(us / 1000000),
                  static_cast<unsigned long long>((us % 1000000) / 1000));
    return buf;
}

std::string join_cpus(const std::vector<std::uint32_t>& cpus) {
    std::string s;
    for (auto cpu : cpus) {
        if (!s.empty()) {
            s += ',';
        }
        s += std::to_string(cpu);
    }
    return s;
}

std::string cancel_summary_line(const CancelReply& reply) {
    const std::string batch = "batch " + std::to_string(reply.batch_id);
    if (!reply.finished) {
        return batch + ": cancel requested; it stops before its next write";
    }
    const std::string end =
        "changed " + or_dash(reply.changed) + ", failed " + or_dash(reply.failed);
    if (reply.cancelled.empty()) {
        return batch + " (" + reply.action + ") ended before the cancel took effect: " + end;
    }
    // `changed` is the end state: CPUs of atomic requests that were rolled back are not in it.
    return batch + " (" + reply.action + ") cancelled: never written " + reply.cancelled + "; " +
           end;
}

std::string batch_summary_line(const BatchReply& reply) {
    std::string line = reply.action + " " + (reply.mask.empty() ? "(none)" : reply.mask) + ": ";
    if (reply.dry_run) {
        line += "dry run, " + std::to_string(reply.order.size()) + " to change with strategy " +
                or_dash(reply.strategy) + ", order " +
                (reply.order.empty() ? "-" : join_cpus(reply.order));
        return line;
    }
    std::vector<std::string> parts;
    const auto changed = name_of(cpuhpd::CpuOutcome::Changed);
    parts.push_back(std::to_string(count_result(reply, changed)) + " " + std::string(changed));
    for (const auto& [outcome, r] : cpuhpd::kCpuOutcomeNames) {
        if (outcome == cpuhpd::CpuOutcome::Changed) {
            continue;
        }
        if (auto n = count_result(reply, r); n > 0) {
            std::string name(r);
            std::replace(name.begin(), name.end(), '-', ' ');
            parts.push_back(std::to_string(n) + " " + name);
        }
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
        line += (i == 0 ? "" : ", ") + parts[i];
    }
    line += " in " + seconds_text(reply.duration_us) + " (strategy " + or_dash(reply.strategy) +
            ", batch " + std::to_string(reply.batch_id);
    if (reply.outcome != cpuhpd::name_of(cpuhpd::kOutcomeNames, cpuhpd::Outcome::Ok)) {
        line += ", outcome " + or_dash(reply.outcome);
    }
    line += ")";
    return line;
}

void render_batch_table(std::ostream& out, const BatchReply& reply) {
    if (reply.dry_run) {
        out << "strategy: " << or_dash(reply.strategy) << '\n';
        out << "order:    " << (reply.order.empty() ? "-" : join_cpus(reply.order)) << '\n';
    }
    render_cpu_rows(out, reply.cpus);
    out << batch_summary_line(reply) << '\n';
    render_pinned(out, reply.pinned_tasks, reply.pinned_irqs);
    render_partitions(out, reply.partitions);
    render_affinity(out, reply.affinity);
}

void render_affinity(std::ostream& out, const std::vector<AffinityEntry>& entries) {
    for (std::size_t i = 0; i < entries.size() && i < kMaxPinnedShown; ++i) {
        const auto& e = entries[i];
        out << "affinity: " << escaped_name(e.kind) << ' ' << e.id;
        if (!e.name.empty()) {
            out << " (" << escaped_name(e.name) << ")";
        }
        out << " CPU " << one_line(e.cpus) << ": " << escaped_name(e.status);
        if (!e.message.empty()) {
            out << ": " << escaped_name(e.message);
        }
        out << '\n';
    }
    if (entries.size() > kMaxPinnedShown) {
        out << "affinity: ... and " << entries.size() - kMaxPinnedShown << " more\n";
    }
}

void render_partitions(std::ostream& out, const std::vector<PartitionChange>& changes) {
    for (const auto& c : changes) {
        out << "partition " << escaped_name(c.path) << ": CPU " << one_line(c.before) << " -> "
            << one_line(c.after.empty() ? "-" : c.after) << '\n';
    }
}

void render_pinned(std::ostream& out, const std::vector<PinnedTask>& tasks,
                   const std::vector<PinnedIrq>& irqs) {
    for (std::size_t i = 0; i < tasks.size() && i < kMaxPinnedShown; ++i) {
        out << "pinned: task " << tasks[i].tid << " (" << escaped_name(tasks[i].comm) << ") on CPU "
            << one_line(tasks[i].cpus) << '\n';
    }
    out << more_line(tasks.size(), "task");
    for (std::size_t i = 0; i < irqs.size() && i < kMaxPinnedShown; ++i) {
        out << "pinned: irq " << irqs[i].irq;
        if (!irqs[i].name.empty()) {
            out << " (" << escaped_name(irqs[i].name) << ")";
        }
        out << " on CPU " << one_line(irqs[i].cpus) << '\n';
    }
    out << more_line(irqs.size(), "irq");
}

void render_cpu_rows(std::ostream& out, const std::vector<CpuResult>& cpus) {
    if (cpus.empty()) {
        return;
    }
    std::vector<std::vector<std::string>> rows{{"CPU", "RESULT", "ERROR", "MESSAGE"}};
    for (const auto& c : cpus) {
        rows.push_back({std::to_string(c.cpu), c.result, or_dash(c.error), one_line(c.message)});
    }
    print_rows(out, rows);
}

void render_profiles_table(std::ostream& out, const std::vector<ProfileInfo>& profiles,
                           const std::string& active) {
    if (profiles.empty()) {
        out << "no profiles (config key profiles:)\n";
        return;
    }
    std::vector<std::vector<std::string>> rows{{"PROFILE", "OFFLINE", "SMT", "MIN/NODE", "ACTIVE"}};
    for (const auto& p : profiles) {
        rows.push_back({p.name, or_dash(p.offline), p.smt_off ? "off" : "-",
                        p.min_online_per_node == 0 ? "-" : std::to_string(p.min_online_per_node),
                        yes_no(p.name == active)});
    }
    print_rows(out, rows);
}

std::string profile_summary_line(const ProfileReply& r) {
    std::string line = "profile " + r.profile;
    if (r.dry_run) {
        return line + " (dry run): would take offline " + or_dash(r.offline) +
               ", would bring back " + or_dash(r.online) + "; it would have taken " +
               or_dash(r.taken);
    }
    line += r.reverted ? " reverted: " : " applied: ";
    line +=
        r.outcome + "; offline " + or_dash(r.offline) + ", back online " + or_dash(r.online) +
        "; in force: " +
        (r.active.empty() ? std::string("none") : r.active + " (took " + or_dash(r.taken) + ")");
    return line + " in " + seconds_text(r.duration_us);
}

void render_batch_failures(std::ostream& err, const BatchReply& reply) {
    for (const auto& c : reply.cpus) {
        if (c.result == name_of(cpuhpd::CpuOutcome::Changed) ||
            c.result == name_of(cpuhpd::CpuOutcome::Unchanged)) {
            continue;
        }
        err << "cpuctl: CPU " << c.cpu << ": " << reply.action << " " << c.result;
        if (!c.error.empty() || !c.message.empty()) {
            err << ": ";
            if (!c.error.empty()) {
                err << c.error;
                if (!c.message.empty()) {
                    err << " (" << one_line(c.message) << ")";
                }
            } else {
                err << one_line(c.message);
            }
        }
        err << '\n';
    }
}

std::string utc_us(std::uint64_t us) {
    return cpuhpd::utc_text(std::chrono::system_clock::time_point(std::chrono::microseconds(us)));
}

std::string hold_status_line(const HoldInfo& h) {
    std::string line = h.state + " " + h.cpus + ", by " + one_line(h.who);
    if (!h.why.empty()) {
        line += " (" + one_line(h.why) + ")";
    }
    return line + ", since " + utc_us(h.since_us);
}

std::string profile_status_line(const std::string& active, const std::string& cpus) {
    if (active.empty()) {
        return "none";
    }
    return active + " (took " + or_dash(cpus) + ")";
}

std::string power_profiles_status_line(const PowerProfilesInfo& p) {
    if (!p.followed) {
        return "not followed";
    }
    if (!p.available) {
        return "followed; power-profiles-daemon is not on the bus";
    }
    return "followed; power-profiles-daemon's profile " + or_dash(p.profile);
}

std::string batch_status_line(const BatchInFlight& b) {
    if (b.batch_id == 0) {
        return "none";
    }
    std::string line = std::to_string(b.batch_id) + ": " + b.action + " " + or_dash(b.cpus) + ", " +
                       std::to_string(b.requests) + (b.requests == 1 ? " request" : " requests");
    if (b.total > 0) {
        line += ", " + std::to_string(b.done) + "/" + std::to_string(b.total) + " done";
    }
    return line + ", since " + utc_us(b.since_us);
}

std::string recovery_status_line(const Status& s) {
    if (s.recovery_outcome.empty() || s.recovery_outcome == "none") {
        return "none";
    }
    std::string line = s.recovery_outcome;
    if (s.recovery_time_us != 0) {
        line += " at " + utc_us(s.recovery_time_us);
    }
    return line + ": " + s.recovery_summary;
}

void render_status_table(std::ostream& out, const Status& s) {
    std::string caps;
    for (const auto& c : s.capabilities) {
        caps += (caps.empty() ? "" : " ") + c;
    }
    std::vector<std::vector<std::string>> rows{{"online:", s.online},
                                               {"offline:", s.offline},
                                               {"possible:", s.possible},
                                               {"present:", s.present},
                                               {"protected:", s.protected_cpus},
                                               {"smt control:", or_dash(s.smt_control)},
                                               {"capabilities:", caps},
                                               {"busy:", yes_no(s.busy)},
                                               {"last recovery:", recovery_status_line(s)},
                                               {"holds:", std::to_string(s.holds.size())}};
    for (const auto& h : s.holds) {
        rows.push_back({"hold " + std::to_string(h.id) + ":", hold_status_line(h)});
    }
    rows.push_back({"profile:", profile_status_line(s.active_profile, s.profile_cpus)});
    rows.push_back({"power profiles:", power_profiles_status_line(s.power_profiles)});
    rows.push_back({"batch:", batch_status_line(s.batch)});
    print_rows(out, rows);
}

void render_topology_table(std::ostream& out, const std::vector<TopologyCpu>& cpus) {
    std::vector<std::vector<std::string>> rows{
        {"CPU", "NODE", "PACKAGE", "DIE", "CORE", "SIBLINGS", "ONLINE", "HOTPLUG"}};
    for (const auto& c : cpus) {
        rows.push_back({std::to_string(c.cpu), int_or_dash(c.node), int_or_dash(c.package),
                        int_or_dash(c.die), int_or_dash(c.core), or_dash(c.siblings),
                        yes_no(c.online), yes_no(c.hotpluggable)});
    }
    print_rows(out, rows);
}

void render_holds_table(std::ostream& out, const std::vector<HoldInfo>& holds) {
    if (holds.empty()) {
        out << "no holds\n";
        return;
    }
    std::vector<std::vector<std::string>> rows{
        {"HOLD", "CPUS", "STATE", "WHO", "WHY", "SINCE", "HOLDER", "RESTORE"}};
    for (const auto& h : holds) {
        rows.push_back({std::to_string(h.id), h.cpus, h.state, h.who, or_dash(h.why),
                        cpuhpd::utc_text(std::chrono::system_clock::time_point(
                            std::chrono::microseconds(h.since_us))),
                        h.holder, yes_no(h.restore)});
    }
    print_rows(out, rows);
}

std::string release_summary_line(std::uint64_t id, const std::vector<CpuResult>& restored) {
    std::vector<std::uint32_t> changed;
    std::vector<std::uint32_t> failed;
    for (const auto& cpu : restored) {
        if (cpu.result == cpuhpd::to_string(cpuhpd::CpuOutcome::Changed)) {
            changed.push_back(cpu.cpu);
        } else if (cpu.result == cpuhpd::to_string(cpuhpd::CpuOutcome::Failed)) {
            failed.push_back(cpu.cpu);
        }
    }
    std::string line = "hold " + std::to_string(id) + " released; ";
    line += changed.empty() ? "nothing to restore" : "restored " + join_cpus(changed);
    if (!failed.empty()) {
        line += "; restore failed: " + join_cpus(failed);
    }
    return line;
}

std::string describe_error(const ErrorInfo& e, const std::string& bus) {
    const std::string& n = e.name;
    using namespace cpuhpd::dbus;
    if (n == kErrorServiceUnknown || n == kErrorNameHasNoOwner) {
        return std::string("cpuhpd is not running (no owner of ") + kBusName + " on " + bus + ")";
    }
    if (n == kErrorAccessDenied) {
        return "permission denied: " + e.message +
               " (run as root, or have a polkit rule grant the action)";
    }
    if (n == kErrorInteractiveAuthorizationRequired) {
        return "authentication required: " + e.message +
               " (cpuctl does not ask for a password: run as root, or have a polkit rule grant "
               "the action)";
    }
    if (n == kErrorNoServer) {
        return "cannot connect to " + bus + ": " + e.message;
    }
    if (n == kErrorNoReply || n == kErrorTimeout) {
        return n + ": " + e.message +
               " (the batch may still be running: see `cpuctl status`; raise --timeout)";
    }
    if (n == kUsageError) {
        return e.message;
    }
    return n + ": " + e.message;
}

}  // namespace cpuctl
