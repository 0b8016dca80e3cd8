// Runs one batch: plans it, journals it, drives the chosen strategy inside an expedite
// window, rolls back atomic requests that failed, and distributes per-CPU results to
// every request. Synchronous (the walks of an offline batch run on short-lived threads it
// joins before going on), so tests can drive it directly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "affinity.h"
#include "batch_phases.h"
#include "journal.h"
#include "machine.h"
#include "planner.h"
#include "request.h"
#include "settings.h"
#include "sysfs.h"

namespace cpuhpd {

struct BatchOutput {
    std::vector<RequestResult> results;  // one per request, same order
    BatchReport report;
};

class BatchRunner {
public:
    // `read_state` gives a fresh MachineState (re-read after the writes to learn what
    // really changed). `proc_root` is where the pinned tasks and IRQs of an offline batch
    // are read (pinned.h); empty: none are looked for. `cgroup_root` is where cpuset
    // partitions are shrunk and restored, `partition_ledger` the state file of what is owed
    // back (partitions.h); empty: partitions are left alone. `affinity_ledger` is the state
    // file of the affinity the kernel took from pinned tasks and IRQs (affinity.h; empty: kept
    // in memory only), given back through `affinity_setter` (none: sched_setaffinity for the
    // real /proc, a rewrite of the status files for any other proc_root).
    BatchRunner(const SysfsPaths& paths, AttributeWriter& writer, BatchJournal& journal,
                std::function<MachineState()> read_state, const EngineSettings& settings,
                std::filesystem::path proc_root = {}, std::filesystem::path cgroup_root = {},
                std::filesystem::path partition_ledger = {},
                std::filesystem::path affinity_ledger = {}, AffinitySetter* affinity_setter = {});

    // All requests have the same action. Requests refused at this point get their
    // `refusal` set and are not touched. `cancel_requested` is polled before each write: once
    // true, the batch stops after the write in flight, atomic requests roll back and the
    // CPUs not reached are reported Cancelled.
    BatchOutput run(std::uint64_t batch_id, const std::vector<Request>& requests,
                    const std::function<void(std::size_t, std::size_t)>& progress = {},
                    const CancelCheck& cancel_requested = {});

    // The plan a dry run reports; throws Refusal like validate().
    RequestResult dry_run(const Request& request, const MachineState& state);

    // At start (after recovery): loads the partition ledger and gives back what it owes to
    // the CPUs online now. `problem` says why the ledger was unreadable (then it is empty).
    std::vector<PartitionChange> settle_partitions(std::optional<std::string>& problem);

    // The affinity ledger (affinity.h), loaded at construction: why it was unreadable.
    const std::optional<std::string>& affinity_problem() const { return affinity_problem_; }
    // Settles the ledger's entries whose CPUs are online now, restoring those that meet
    // `restore_for` (after recovery: the CPUs it put back). `save_error` as the ledger's.
    std::vector<AffinityRestore> settle_affinity(const CpuSet& restore_for, int& save_error);

private:
    const SysfsPaths& paths_;
    AttributeWriter& writer_;
    BatchJournal& journal_;
    std::function<MachineState()> read_state_;
    EngineSettings settings_;
    std::filesystem::path proc_root_;
    std::filesystem::path cgroup_root_;
    PartitionLedger ledger_;
    AffinityLedger affinity_;
    std::optional<std::string> affinity_problem_;
    std::unique_ptr<AffinitySetter> own_setter_;
    AffinitySetter* setter_;
};

}  // namespace cpuhpd
