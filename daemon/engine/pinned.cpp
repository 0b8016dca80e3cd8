#include "pinned.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "attribute_at.h"
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

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
// A thread's status is about 1.4 kB; Cpus_allowed_list is in its first 1.2 kB.
constexpr std::size_t kStatusChunk = 4096;

// The numbered entries of `name` below the directory `dir`, in directory order; none when
// it cannot be listed.
std::vector<unsigned> numbered_entries_at(int dir, const char* name) {
    std::vector<unsigned> out;
    const int fd = ::openat(dir, name, kDirFlags);
    if (fd < 0) {
        return out;
    }
    for (const auto& entry : list_directory(fd)) {
        const std::string& n = entry.name;
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), value);
        if (ec == std::errc{} && end == n.data() + n.size() && !n.empty()) {
            out.push_back(value);
        }
    }
    return out;
}

// The value of "Cpus_allowed_list:" in the status file `name` below `dir`, read into `buf`
// (kept by the caller from thread to thread: no allocation per thread) only as far as that
// line ends: one read for a real thread's status, more when it is longer (a Groups line
// of thousands of groups comes first). nullopt when the file is unreadable or has no such
// line; the view is into `buf`.
std::optional<std::string_view> allowed_list_at(int dir, const std::string& name,
                                                std::string& buf) {
    constexpr std::string_view key = "\nCpus_allowed_list:";
    const OwnedFd fd(open_at(dir, name.c_str(), O_RDONLY));
    if (fd.get() < 0) {
        return std::nullopt;
    }
    std::size_t used = 0;
    std::size_t value = std::string_view::npos;  // where the list starts
    while (true) {
        if (buf.size() < used + kStatusChunk) {
            buf.resize(used + kStatusChunk);
        }
        const ssize_t n = ::read(fd.get(), buf.data() + used, kStatusChunk);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return std::nullopt;
        }
        if (n == 0) {
            break;
        }
        // Search from where the key may start: it may straddle two reads.
        const std::size_t from = used >= key.size() ? used - key.size() : 0;
        used += static_cast<std::size_t>(n);
        const std::string_view text(buf.data(), used);
        if (value == std::string_view::npos) {
            if (from == 0 && text.starts_with(key.substr(1))) {
                value = key.size() - 1;  // the first line (not so in the kernel's order)
            } else if (const auto at = text.find(key, from); at != text.npos) {
                value = at + key.size();
            }
        }
        if (value != std::string_view::npos && text.find('\n', value) != text.npos) {
            break;
        }
    }
    const std::string_view text(buf.data(), used);
    if (value == std::string_view::npos) {
        return std::nullopt;
    }
    // The end of the file ends the line too.
    const auto begin = std::min(text.find_first_not_of(" \t", value), text.size());
    return text.substr(begin, text.find('\n', begin) - begin);
}

// What an affinity (a Cpus_allowed_list) means for the batch.
struct Verdict {
    bool pinned = false;
    CpuSet cpus;
};

// Verdicts by affinity: most threads share a handful of them (every CPU, one NUMA node,
// ...), so each distinct one is decoded and judged once. The key is the affinity as read
// (a Cpus_allowed_list, or a kernel cpumask's bytes); `decode` turns it into a CpuSet
// (nullopt: malformed).
class VerdictCache {
public:
    using Decode = std::optional<CpuSet> (*)(std::string_view);
    VerdictCache(const CpuSet& leaving, const CpuSet& staying, Decode decode)
        : leaving_(leaving), staying_(staying), decode_(decode) {}
    // nullptr for an affinity that does not decode.
    const Verdict* of(std::string_view key) {
        auto it = cache_.find(std::string(key));
        if (it == cache_.end()) {
            std::optional<Verdict> verdict;
            if (const auto cpus = decode_(key)) {
                verdict = Verdict{pinned_by(*cpus, leaving_, staying_), *cpus};
            }
            it = cache_.emplace(std::string(key), std::move(verdict)).first;
        }
        return it->second ? &*it->second : nullptr;
    }

private:
    const CpuSet& leaving_;
    const CpuSet& staying_;
    Decode decode_;
    std::unordered_map<std::string, std::optional<Verdict>> cache_;
};

std::optional<CpuSet> decode_cpulist(std::string_view list) {
    try {
        return parse_cpulist(list);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::optional<CpuSet> decode_cpumask(std::string_view bytes) {
    CpuSet cpus;
    for (std::size_t byte = 0; byte < bytes.size(); ++byte) {
        const auto bits = static_cast<unsigned char>(bytes[byte]);
        for (unsigned bit = 0; bit < 8; ++bit) {
            if ((bits & (1U << bit)) != 0) {
                cpus.add(static_cast<unsigned>(byte * 8 + bit));
            }
        }
    }
    return cpus;
}

// Whether `proc` is the procfs of this process's pid namespace: only there does a tid
// listed under it name the thread sched_getaffinity(2) would ask about.
bool is_own_procfs(int proc) {
    struct statfs fs_info {};
    if (::fstatfs(proc, &fs_info) != 0 || fs_info.f_type != PROC_SUPER_MAGIC) {
        return false;
    }
    char self[32];
    const ssize_t n = ::readlinkat(proc, "self", self, sizeof self);
    return n > 0 &&
           std::string_view(self, static_cast<std::size_t>(n)) == std::to_string(::getpid());
}

// Whether the process whose task directory is `task_dir` (below the procfs `proc`) has one
// thread: procfs counts the threads in that directory's link count (2 + threads,
// proc_task_getattr()), so one fstatat spares the listing.
bool single_threaded(int proc, const std::string& task_dir) {
    struct stat st {};
    return ::fstatat(proc, task_dir.c_str(), &st, 0) == 0 && st.st_nlink == 3;
}

// A thread's affinity as the kernel's cpumask, through sched_getaffinity(2): one system call
// and no text, where its status file is about 1.4 kB that procfs formats on every read.
class KernelAffinity {
public:
    // The mask's bytes (into a buffer reused from thread to thread); nullopt when the thread
    // has ended or the kernel refuses.
    std::optional<std::string_view> of(unsigned tid) {
        while (true) {
            // The raw call returns the size the kernel copied (its cpumask_size()); glibc's
            // wrapper hides it.
            const long n = ::syscall(SYS_sched_getaffinity, static_cast<pid_t>(tid), mask_.size(),
                                     mask_.data());
            if (n >= 0) {
                return std::string_view(mask_.data(), static_cast<std::size_t>(n));
            }
            if (errno == EINVAL && mask_.size() < kLargestMask) {
                mask_.resize(mask_.size() * 2);  // more possible CPUs than the buffer holds
                continue;
            }
            return std::nullopt;
        }
    }

private:
    static constexpr std::size_t kLargestMask = 1 << 16;  // bytes: 512Ki CPUs
    std::vector<char> mask_ = std::vector<char>(kMaxCpus / 8);
};

// The pinned threads of the processes `pids` below the /proc directory `proc`. On this
// process's own procfs each thread's affinity comes from the kernel (KernelAffinity) and
// only a pinned thread's status is read, for its affinity as procfs prints it (the system
// call's mask leaves out inactive CPUs; the verdict is the same, as `leaving` and `staying`
// are online CPUs); on any other tree (a test's) from the status files, so that a fake tid
// never reaches a real thread.
std::vector<PinnedTask> scan_tasks(int proc, const std::vector<unsigned>& pids,
                                   const CpuSet& leaving, const CpuSet& staying) {
    std::vector<PinnedTask> out;
    VerdictCache verdicts(leaving, staying, decode_cpulist);
    VerdictCache kernel_verdicts(leaving, staying, decode_cpumask);
    std::optional<KernelAffinity> kernel;
    if (is_own_procfs(proc)) {
        kernel.emplace();
    }
    std::string buf;
    for (unsigned pid : pids) {
        const std::string task_dir = std::to_string(pid) + "/task";
        std::vector<unsigned> tids;
        if (kernel && single_threaded(proc, task_dir)) {
            tids.push_back(pid);  // most processes: no listing of their task directory
        } else {
            const OwnedFd tasks(open_at(proc, task_dir.c_str(), kDirFlags));
            if (tasks.get() < 0) {
                continue;  // ended meanwhile
            }
            tids = numbered_entries_at(tasks.get(), ".");
        }
        for (unsigned tid : tids) {
            if (kernel) {
                const auto mask = kernel->of(tid);
                const Verdict* verdict = mask ? kernel_verdicts.of(*mask) : nullptr;
                if (verdict == nullptr || !verdict->pinned) {
                    continue;  // most threads: no path is built, no file read
                }
            }
            const std::string thread = task_dir + "/" + std::to_string(tid);
            std::optional<Stat> stat;
            // A user thread, not a kernel one (the kernel moves those itself), from its
            // stat file.
            auto read_user_stat = [&] {
                const auto text = read_attribute_at(proc, (thread + "/stat").c_str());
                stat = text ? parse_stat(*text) : std::nullopt;
                return stat && (stat->flags & kPfKthread) == 0;
            };
            // Most threads the kernel's mask finds pinned are the per-CPU kthreads of the
            // leaving CPUs (several per CPU): their short stat file says so before the status
            // file, which procfs formats at about 1.4 kB, is read at all.
            if (kernel && !read_user_stat()) {
                continue;
            }
            const auto list = allowed_list_at(proc, thread + "/status", buf);
            const Verdict* verdict = list ? verdicts.of(*list) : nullptr;
            if (verdict == nullptr || !verdict->pinned || (!stat && !read_user_stat())) {
                continue;
            }
            out.push_back(
                {tid, escape_excerpt(stat->comm, 64), verdict->cpus, pid, stat->start_time});
        }
    }
    return out;
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
    const OwnedFd proc(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (proc.get() < 0) {
        return out;
    }
    const std::vector<unsigned> pids = numbered_entries_at(proc.get(), ".");
    // One thread walks them all. A second one on half of the processes (from 512 on) gained
    // no clear time: the scan of 50,000 threads in cpuhpd-scan-bench, medians of 5 runs per
    // variant on 2 busy cores (2026-12-05), went from 504 to 456 ms with it (nice 0) and
    // from 323 to 375 ms (the bench at nice -10), for the same CPU time (209-217 ms).
    out.tasks = scan_tasks(proc.get(), pids, leaving, staying);
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
