// Runs one batch: plans it, journals it, drives the chosen strategy inside an expedite
// window, rolls back atomic requests that failed, and distributes per-CPU results to
// every request. Synchronous and thread-free, so tests can drive it directly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

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
    // back (partitions.h); empty: partitions are left alone.
    BatchRunner(const SysfsPaths& paths, AttributeWriter& writer, BatchJournal& journal,
                std::function<MachineState()> read_state, const EngineSettings& settings,
                std::filesystem::path proc_root = {}, std::filesystem::path cgroup_root = {},
                std::filesystem::path partition_ledger = {});

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

private:
    const SysfsPaths& paths_;
    AttributeWriter& writer_;
    BatchJournal& journal_;
    std::function<MachineState()> read_state_;
    EngineSettings settings_;
    std::filesystem::path proc_root_;
    std::filesystem::path cgroup_root_;
    PartitionLedger ledger_;
};

}  // namespace cpuhpd
