// What a batch taking CPUs offline leaves without a CPU: user tasks and IRQs whose affinity
// has CPUs going away and none that stays online. The kernel moves such a task anyway
// (breaking its affinity, "no longer affine to cpuN") and migrates or shuts down such an
// IRQ; the caller is told, and may ask for a refusal instead (Request::refuse_pinned).
// Read from an injected /proc; kernel threads are left out (per-CPU kthreads are parked
// by the hotplug machinery itself).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cpuset.h"

namespace cpuhpd {

struct PinnedTask {
    unsigned tid = 0;
    std::string comm;  // escaped (escape_excerpt): the kernel allows any bytes
    CpuSet cpus;       // its affinity (Cpus_allowed_list)
    unsigned pid = 0;  // its thread group (the /proc/PID it was read under)
    // Field 22 of its stat (starttime, clock ticks after boot): with the tid, names the
    // thread even after its tid is reused (affinity.h).
    unsigned long long start_time = 0;
    bool operator==(const PinnedTask&) const = default;
};

struct PinnedIrq {
    unsigned irq = 0;
    std::string name;  // its actions' names, comma-separated, escaped; "" when none
    CpuSet cpus;       // smp_affinity_list
    bool operator==(const PinnedIrq&) const = default;
};

struct Pinned {
    std::vector<PinnedTask> tasks;  // ascending tid
    std::vector<PinnedIrq> irqs;    // ascending irq
    bool operator==(const Pinned&) const = default;
};

// Reads every thread's affinity and every IRQ's (proc_root/irq/N/smp_affinity_list) and
// keeps those that meet `leaving` and nothing of `staying`. A thread's affinity comes from
// sched_getaffinity(2) when proc_root is this process's own procfs, from
// proc_root/PID/task/TID/status otherwise (a test tree); a kept thread's status and stat
// are read for its record. Threads that end while they are read, and unreadable files, are
// skipped: this is a report, never a reason to fail a batch. An empty proc_root reads
// nothing.
Pinned scan_pinned(const std::filesystem::path& proc_root, const CpuSet& leaving,
                   const CpuSet& staying);

// The entries of `all` (a scan for a larger `leaving`, or a smaller `staying`) that meet
// `leaving` and nothing of `staying`.
Pinned narrow_pinned(const Pinned& all, const CpuSet& leaving, const CpuSet& staying);

// Field 22 (starttime) of a /proc/PID/task/TID/stat file; nullopt when unreadable.
std::optional<unsigned long long> read_start_time(const std::filesystem::path& stat_file);
// Cpus_allowed_list of a /proc/PID/task/TID/status file; nullopt when unreadable.
std::optional<CpuSet> read_allowed_cpus(const std::filesystem::path& status_file);

// "task 812 (sleep) on CPU 8-15, ..." for a refusal: the first few tasks, then a count.
std::string describe_pinned_tasks(const std::vector<PinnedTask>& tasks);

}  // namespace cpuhpd
