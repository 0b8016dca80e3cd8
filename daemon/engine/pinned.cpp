#include "pinned.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

#include "cpulist.h"
#include "input.h"
#include "sysfs.h"

namespace cpuhpd {

namespace {

namespace fs = std::filesystem;

// PF_KTHREAD of include/linux/sched.h: the flags field of /proc/PID/stat has it for
// kernel threads.
constexpr unsigned long kPfKthread = 0x00200000;
constexpr std::size_t kDescribedTasks = 4;

std::optional<unsigned> number_of(const fs::path& entry) {
    const std::string name = entry.filename().string();
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
    if (ec != std::errc{} || end != name.data() + name.size() || name.empty()) {
        return std::nullopt;
    }
    return value;
}

// The numbered entries of `dir`, ascending; none when it cannot be listed.
std::vector<unsigned> numbered_entries(const fs::path& dir) {
    std::vector<unsigned> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (const auto n = number_of(it->path())) {
            out.push_back(*n);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// "Cpus_allowed_list:\t0-3" of a status file.
std::optional<CpuSet> allowed_cpus(const std::string& status) {
    constexpr std::string_view key = "\nCpus_allowed_list:";
    const auto at = status.find(key);
    if (at == std::string::npos) {
        return std::nullopt;
    }
    auto begin = at + key.size();
    while (begin < status.size() && (status[begin] == '\t' || status[begin] == ' ')) {
        ++begin;
    }
    const auto end = status.find('\n', begin);
    try {
        return parse_cpulist(std::string_view(status).substr(begin, end - begin));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

struct Stat {
    std::string comm;
    unsigned long flags = 0;
    unsigned long long start_time = 0;
};

// "pid (comm) state ppid pgrp session tty_nr tpgid flags ...": comm may hold spaces and
// parentheses, so the fields are counted from its last ')'.
std::optional<Stat> parse_stat(const std::string& text) {
    const auto open = text.find('(');
    const auto close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) {
        return std::nullopt;
    }
    Stat stat;
    stat.comm = text.substr(open + 1, close - open - 1);
    std::string_view rest = std::string_view(text).substr(close + 1);
    for (int field = 3; field <= 22; ++field) {
        const auto begin = rest.find_first_not_of(' ');
        if (begin == std::string_view::npos) {
            return std::nullopt;
        }
        rest.remove_prefix(begin);
        const auto end = std::min(rest.find(' '), rest.size());
        if (field == 9) {
            const auto [p, ec] = std::from_chars(rest.data(), rest.data() + end, stat.flags);
            if (ec != std::errc{}) {
                return std::nullopt;
            }
        } else if (field == 22) {
            const auto [p, ec] = std::from_chars(rest.data(), rest.data() + end, stat.start_time);
            if (ec != std::errc{}) {
                return std::nullopt;
            }
        }
        rest.remove_prefix(end);
    }
    return stat;
}

bool pinned_by(const CpuSet& affinity, const CpuSet& leaving, const CpuSet& staying) {
    return affinity.intersects(leaving) && !affinity.intersects(staying);
}

// The names of the IRQ's actions: the directories /proc/irq/N holds, one per handler.
std::string irq_name(const fs::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code type_ec;
        if (it->is_directory(type_ec)) {
            names.push_back(it->path().filename().string());
        }
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& name : names) {
        out += (out.empty() ? "" : ",") + name;
    }
    return escape_excerpt(out, 128);
}

}  // namespace

Pinned scan_pinned(const fs::path& proc_root, const CpuSet& leaving, const CpuSet& staying) {
    Pinned out;
    if (proc_root.empty() || leaving.empty()) {
        return out;
    }
    for (unsigned pid : numbered_entries(proc_root)) {
        const fs::path tasks = proc_root / std::to_string(pid) / "task";
        for (unsigned tid : numbered_entries(tasks)) {
            const fs::path dir = tasks / std::to_string(tid);
            const auto status = read_attribute(dir / "status");
            const auto affinity = status ? allowed_cpus("\n" + *status) : std::nullopt;
            if (!affinity || !pinned_by(*affinity, leaving, staying)) {
                continue;
            }
            const auto stat_text = read_attribute(dir / "stat");
            const auto stat = stat_text ? parse_stat(*stat_text) : std::nullopt;
            if (!stat || (stat->flags & kPfKthread) != 0) {
                continue;
            }
            out.tasks.push_back(
                {tid, escape_excerpt(stat->comm, 64), *affinity, pid, stat->start_time});
        }
    }
    std::sort(out.tasks.begin(), out.tasks.end(),
              [](const PinnedTask& a, const PinnedTask& b) { return a.tid < b.tid; });
    const fs::path irqs = proc_root / "irq";
    for (unsigned irq : numbered_entries(irqs)) {
        const fs::path dir = irqs / std::to_string(irq);
        const auto affinity = read_cpulist_file(dir / "smp_affinity_list");
        if (affinity && pinned_by(*affinity, leaving, staying)) {
            out.irqs.push_back({irq, irq_name(dir), *affinity});
        }
    }
    return out;
}

Pinned narrow_pinned(const Pinned& all, const CpuSet& leaving, const CpuSet& staying) {
    Pinned out;
    for (const auto& task : all.tasks) {
        if (pinned_by(task.cpus, leaving, staying)) {
            out.tasks.push_back(task);
        }
    }
    for (const auto& irq : all.irqs) {
        if (pinned_by(irq.cpus, leaving, staying)) {
            out.irqs.push_back(irq);
        }
    }
    return out;
}

std::optional<unsigned long long> read_start_time(const fs::path& stat_file) {
    const auto text = read_attribute(stat_file);
    const auto stat = text ? parse_stat(*text) : std::nullopt;
    if (!stat) {
        return std::nullopt;
    }
    return stat->start_time;
}

std::optional<CpuSet> read_allowed_cpus(const fs::path& status_file) {
    const auto status = read_attribute(status_file);
    return status ? allowed_cpus("\n" + *status) : std::nullopt;
}

std::string describe_pinned_tasks(const std::vector<PinnedTask>& tasks) {
    std::string out;
    for (std::size_t i = 0; i < tasks.size() && i < kDescribedTasks; ++i) {
        out += (i == 0 ? "" : ", ") + std::string("task ") + std::to_string(tasks[i].tid) + " (" +
               tasks[i].comm + ") on CPU " + tasks[i].cpus.to_string();
    }
    if (tasks.size() > kDescribedTasks) {
        out += " and " + std::to_string(tasks.size() - kDescribedTasks) + " more";
    }
    return out;
}

}  // namespace cpuhpd
