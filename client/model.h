// Plain data that cpuctl gets from the daemon: no D-Bus types, so that rendering and exit-code
// logic can be tested without a bus. daemon_client.cpp fills CpuResult and TopologyCpu from the
// generated proxy's structs field by field (to_model): a field the XML adds, drops or retypes
// breaks the build there. The names of the summary's keys and of the enum-like values are in
// dbus/names.h and vocabulary/enums.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cpuctl {

// One entry of the a(ussis) results of Offline, Online and SetSmt.
struct CpuResult {
    std::uint32_t cpu = 0;
    std::string result;  // changed, unchanged, failed, rolled-back, refused, cancelled
    std::string error;   // errno name, "" when none
    std::int32_t errnum = 0;
    std::string message;  // what happened, in words
};

// One entry of the summary's "pinned_tasks" (a(uss)): a user task (thread) whose affinity has
// CPUs going offline and none staying online. `comm` as the daemon sent it (it escapes it);
// the table escapes it again.
struct PinnedTask {
    std::uint32_t tid = 0;
    std::string comm;
    std::string cpus;  // its affinity, a cpulist
};

// One entry of the summary's "pinned_irqs" (a(uss)), likewise for an IRQ.
struct PinnedIrq {
    std::uint32_t irq = 0;
    std::string name;  // its actions' names, comma-joined; "" when none
    std::string cpus;  // its affinity, a cpulist
};

// One entry of the summary's "partitions" (a(sss)): a cgroup cpuset partition the change
// shrank or gave CPUs back to.
struct PartitionChange {
    std::string path;    // below the cgroup root
    std::string before;  // cpuset.cpus, a cpulist
    std::string after;
};

// One entry of the summary's "phases" (a(st)): where the batch's time went.
struct PhaseEntry {
    std::string name;  // read, partitions, pinned, admit, plan, ..., write, reread, rollback
    std::uint64_t us = 0;
};

// One entry of the summary's "affinity" (a(susssis)): the affinity the kernel took from a
// pinned task or IRQ, given back or not when its CPUs came back.
struct AffinityEntry {
    std::string kind;  // task, irq
    std::uint32_t id = 0;
    std::string name;
    std::string cpus;    // the affinity recorded before the CPUs went offline
    std::string status;  // restored, intact, gone, changed, failed, dropped, not-recorded
    std::int32_t error = 0;
    std::string message;
};

// Results and summary of one Offline, Online or SetSmt call.
struct BatchReply {
    std::string action;  // offline, online
    std::string mask;
    std::string mode;      // atomic, best-effort
    std::string strategy;  // bulk, smt, per-cpu
    bool dry_run = false;
    std::uint64_t batch_id = 0;
    std::uint64_t duration_us = 0;
    // From the daemon's receipt of the call to its batch's start (the coalescing window
    // included); 0 from a daemon without it.
    std::uint64_t queued_us = 0;
    std::string outcome;  // ok, failed, partial
    std::vector<std::uint32_t> order;
    std::vector<CpuResult> cpus;
    // Whenever CPUs go offline (and in dry runs); empty when the summary has none (online).
    std::vector<PinnedTask> pinned_tasks;
    std::vector<PinnedIrq> pinned_irqs;
    std::vector<PartitionChange> partitions;
    std::vector<AffinityEntry> affinity;
    std::vector<PhaseEntry> phases;  // in the order the batch went through them
};

// What `cpuctl cancel` learned: the batch Cancel named and, when it waited for the batch's
// BatchFinished, how the batch ended (cpulists).
struct CancelReply {
    std::uint64_t batch_id = 0;
    bool finished = false;  // false: did not wait (--no-wait)
    std::string action;
    std::string changed;
    std::string failed;
    std::string cancelled;  // the CPUs the cancel left unwritten; "" when it came too late
};

// One entry of the Holds property's a(tssssstb).
struct HoldInfo {
    std::uint64_t id = 0;
    std::string cpus;
    std::string state;  // offline, online
    std::string who;
    std::string why;
    std::string holder;          // the holder's unique bus name
    std::uint64_t since_us = 0;  // CLOCK_REALTIME
    bool restore = true;
};

// The CurrentBatch property: the batch running now (batch_id 0: none).
struct BatchInFlight {
    std::uint64_t batch_id = 0;
    std::string action;
    std::string cpus;
    std::uint32_t requests = 0;
    std::uint32_t done = 0;
    std::uint32_t total = 0;
    std::uint64_t since_us = 0;
};

// The PowerProfiles property: power-profiles-daemon as cpuhpd sees it.
struct PowerProfilesInfo {
    bool followed = false;
    bool available = false;
    std::string profile;  // its ActiveProfile; "" when unknown
};

// The properties of org.cpuhpd1.Manager.
struct Status {
    std::string online;
    std::string offline;
    std::string possible;
    std::string present;
    std::string protected_cpus;
    std::string smt_control;
    std::vector<std::string> capabilities;
    bool busy = false;
    // LastRecovery: "none" when the last daemon ended cleanly; the summary says the rest.
    std::string recovery_outcome;
    std::string recovery_summary;
    std::uint64_t recovery_time_us = 0;
    // What is in force: the holds, the profile and what it took, the batch running.
    std::vector<HoldInfo> holds;
    std::string active_profile;  // "" for none
    std::string profile_cpus;
    PowerProfilesInfo power_profiles;
    BatchInFlight batch;
};

// One entry of GetTopology's a(uiiiisbb); -1 means unknown.
struct TopologyCpu {
    std::uint32_t cpu = 0;
    std::int32_t package = -1;
    std::int32_t die = -1;
    std::int32_t core = -1;
    std::int32_t node = -1;
    std::string siblings;
    bool online = false;
    bool hotpluggable = false;
};

// One entry of the Profiles property's a(ssbu).
struct ProfileInfo {
    std::string name;
    std::string offline;  // the mask as written in the config
    bool smt_off = false;
    std::uint32_t min_online_per_node = 0;
};

// The reply of ApplyProfile or RevertProfile.
struct ProfileReply {
    std::string profile;
    std::string offline;  // cpulists: taken offline, brought back online (or would be)
    std::string online;
    std::string taken;   // what the profile in force has taken now
    std::string active;  // the profile in force now, "" for none
    std::string outcome;
    bool dry_run = false;
    std::uint64_t duration_us = 0;
    std::vector<CpuResult> cpus;
    bool reverted = false;  // RevertProfile's reply
    // As in BatchReply: what the CPUs the profile takes offline leave without a CPU.
    std::vector<PinnedTask> pinned_tasks;
    std::vector<PinnedIrq> pinned_irqs;
    std::vector<PartitionChange> partitions;
    std::vector<AffinityEntry> affinity;
};

// A D-Bus error (from the daemon, the bus or the connection), or a usage error.
struct ErrorInfo {
    std::string name;     // e.g. org.cpuhpd1.Error.InvalidMask
    std::string message;  // the daemon's message, or a local explanation
};

// The name of ErrorInfo for a usage error cpuctl finds itself.
inline constexpr const char* kUsageError = "cpuctl.Error.Usage";

}  // namespace cpuctl
