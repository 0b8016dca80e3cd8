// Human-readable output of cpuctl (the default, without --json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "model.h"

namespace cpuctl {

// The per-CPU table (CPU RESULT ERROR MESSAGE), for a dry run the strategy and order, then the
// summary line, e.g. "offline 4,6,7: 3 changed in 1.234 s (strategy per-cpu, batch 7)", then
// the pinned tasks and IRQs (render_pinned).
void render_batch_table(std::ostream& out, const BatchReply& reply);

// What the CPUs going offline leave without a CPU, one line each (nothing when none):
// "pinned: task 812 (sleep) on CPU 8-15", "pinned: irq 42 (eth0-rx-3) on CPU 12" (an IRQ
// without a name: "pinned: irq 42 on CPU 12"). At most kMaxPinnedShown of each kind, then
// "pinned: ... and 5 more tasks" ("... and 1 more irq"). Names are escaped (printable ASCII
// kept, every other byte \xNN): a task may name itself anything.
inline constexpr std::size_t kMaxPinnedShown = 32;
void render_pinned(std::ostream& out, const std::vector<PinnedTask>& tasks,
                   const std::vector<PinnedIrq>& irqs);
// "partition /rt: CPU 8-15 -> 8-11", one line per cgroup cpuset partition changed.
void render_partitions(std::ostream& out, const std::vector<PartitionChange>& changes);
// "affinity: task 812 (sleep) CPU 5: restored: CPU 0-15 -> 5", one line per entry.
void render_affinity(std::ostream& out, const std::vector<AffinityEntry>& entries);

// A duration in seconds with milliseconds: "1.234 s".
std::string seconds_text(std::uint64_t us);
// The per-CPU table alone (nothing when there are no CPUs).
void render_cpu_rows(std::ostream& out, const std::vector<CpuResult>& cpus);
// PROFILE OFFLINE SMT MIN/NODE ACTIVE; "no profiles" when the config has none.
void render_profiles_table(std::ostream& out, const std::vector<ProfileInfo>& profiles,
                           const std::string& active);
// What ApplyProfile or RevertProfile did, in one line: "profile night applied: ok; offline
// 4-7, back online -; in force: night (took 4-7) in 0.120 s".
std::string profile_summary_line(const ProfileReply& reply);
// One line per CPU that did not end in the requested state, naming the CPU and the reason,
// like chcpu: "cpuctl: CPU 5: offline failed: EBUSY (Device or resource busy)". Nothing when all
// went well.
void render_batch_failures(std::ostream& err, const BatchReply& reply);

// The summary line alone (no trailing newline).
std::string batch_summary_line(const BatchReply& reply);

// "online: 0-15" ... "busy: no", "last recovery: none", then what is in force: "holds: 1",
// one "hold 3: offline 4-7, by who (why), since ..." line per hold, "profile: night (took
// 4-7)" or "profile: none", "power profiles: not followed", "batch: none" or "batch: 7:
// offline 4-7, 2 requests, 3/8 done, since ...".
void render_status_table(std::ostream& out, const Status& status);
// The parts of those lines after the label (also in `cpuctl watch`'s lines).
std::string utc_us(std::uint64_t us);  // "2026-12-05 01:30:00 UTC"
std::string hold_status_line(const HoldInfo& hold);
std::string profile_status_line(const std::string& active, const std::string& cpus);
std::string power_profiles_status_line(const PowerProfilesInfo& power);
std::string batch_status_line(const BatchInFlight& batch);
std::string recovery_status_line(const Status& status);

// What `cpuctl cancel` prints: one line on the batch and, when it waited, how it ended.
std::string cancel_summary_line(const CancelReply& reply);

// Like `lscpu -e`: CPU NODE PACKAGE DIE CORE SIBLINGS ONLINE HOTPLUG.
void render_topology_table(std::ostream& out, const std::vector<TopologyCpu>& cpus);

// HOLD CPUS STATE WHO WHY SINCE HOLDER RESTORE; "no holds" when there are none.
void render_holds_table(std::ostream& out, const std::vector<HoldInfo>& holds);

// What the restore after a hold wrote, in one line: "hold 3 released; restored 4-7".
std::string release_summary_line(std::uint64_t id, const std::vector<CpuResult>& restored);

// The message for an error, without the "cpuctl: " prefix. `bus` names the bus the client
// talked to, e.g. "the system bus (unix:path=/run/dbus/system_bus_socket)".
std::string describe_error(const ErrorInfo& error, const std::string& bus);

// "4,6,7" from {4,6,7}, in the given order (not sorted: an order is an order).
std::string join_cpus(const std::vector<std::uint32_t>& cpus);

}  // namespace cpuctl
