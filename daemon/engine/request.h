// What callers ask of the engine and what they get back. Free of D-Bus.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "affinity.h"
#include "cpuset.h"
#include "enums.h"
#include "partitions.h"
#include "phase_timer.h"
#include "pinned.h"

namespace cpuhpd {

struct Request {
    Action action = Action::Offline;
    std::string mask;  // the caller's text, for messages and logs
    CpuSet cpus;       // resolved
    // CPUs that only a selector brought in ("all", "package:0"): going offline, the
    // protected and non-hotpluggable ones among them are left out instead of refused.
    CpuSet selected_only;
    Mode mode = Mode::Atomic;
    StrategyKind strategy = StrategyKind::Auto;
    bool dry_run = false;
    // Going offline: refuse (RefusalKind::Pinned) rather than leave a task without a CPU.
    bool refuse_pinned = false;
    // Going offline: let a cgroup cpuset partition lose all its CPUs (the kernel then
    // invalidates it) instead of refusing (RefusalKind::EmptyPartition).
    bool force = false;
    // Going online: give the tasks and IRQs whose affinity the kernel rewrote when cpuhpd
    // took these CPUs offline their affinity back (affinity.h). On by default: the CPUs come
    // back for what ran there; off, the records of these CPUs are dropped. Going offline it
    // changes nothing (the record is always made: a rollback gives back regardless).
    bool restore_affinity = true;
    std::string caller;  // for logs: bus name or "cpuctl"
    // When the engine received the request (Engine::change, Engine::hold, a restore it
    // queued itself); the executor sets it at submit() when nobody did. The start of
    // RequestResult::queued.
    std::chrono::steady_clock::time_point received{};
};

// A request refused before anything was touched (enums.h: the kinds).
class Refusal : public std::runtime_error {
public:
    Refusal(RefusalKind kind, std::string message, CpuSet cpus = {});
    RefusalKind kind() const { return kind_; }
    const CpuSet& cpus() const { return cpus_; }

private:
    RefusalKind kind_;
    CpuSet cpus_;
};

struct CpuResult {
    unsigned cpu = 0;
    CpuOutcome outcome = CpuOutcome::Unchanged;
    int error = 0;        // errno of the failure, 0 if none
    std::string message;  // human text: errno text or why it was not attempted
    bool operator==(const CpuResult&) const = default;
};

struct RequestResult {
    Action action = Action::Offline;
    Mode mode = Mode::Atomic;
    std::string mask;
    StrategyKind strategy = StrategyKind::PerCpu;  // the strategy the batch used
    bool dry_run = false;
    std::uint64_t batch_id = 0;
    std::chrono::microseconds duration{0};  // of the whole batch
    // From the engine's receipt of the request (Request::received: the machine read and
    // resolution on the admission thread, the executor's queue behind a running batch and
    // the coalescing window) to the start of its batch; for a request answered without a
    // batch (a dry run, nothing to change, refused), to its answer. Not in it: the bus, the
    // caller's authorization, and the reply after the batch.
    std::chrono::microseconds queued{0};
    // Where the batch's time went, phase by phase (phase_timer.h), the same for every
    // request of the batch; empty for a dry run and a refused request.
    std::vector<PhaseTime> phases;
    std::vector<unsigned> order;  // the CPUs of this request in the order written
    std::vector<CpuResult> cpus;  // one per requested CPU, ascending
    Outcome outcome = Outcome::Ok;
    std::optional<Refusal> refusal;  // set when the request was refused at batch time
    // Going offline: what this request's CPUs leave without a CPU, read before the first
    // write (with the whole batch's CPUs gone).
    Pinned pinned;
    // The cpuset partitions the batch shrank (offline) or gave CPUs back to (online, and
    // rollbacks) that hold CPUs of this request; for a dry run, the shrinks it would make.
    std::vector<PartitionChange> partitions;
    // Affinity given back (or not, and why) to the tasks and IRQs that lost CPUs of this
    // request (affinity.h): by a rollback, or an online of CPUs cpuhpd took down.
    std::vector<AffinityRestore> affinity;
};

// The result of `request` refused by `refusal` before any of its CPUs was touched.
RequestResult refused_result(const Request& request, Refusal refusal);

// Derives the request outcome from its per-CPU results.
Outcome summarize(const std::vector<CpuResult>& cpus);

// What every finished batch reports (the BatchFinished signal and the log line).
struct BatchReport {
    std::uint64_t batch_id = 0;
    Action action = Action::Offline;
    StrategyKind strategy = StrategyKind::PerCpu;
    CpuSet changed;
    CpuSet failed;
    std::size_t requests = 0;
    std::chrono::microseconds duration{0};
    std::vector<PhaseTime> phases;  // where `duration` went (phase_timer.h)
    bool expedited = false;
    CpuSet cancelled;  // planned CPUs a cancel left unwritten (empty: not cancelled in time)
    std::vector<PartitionChange> partitions;  // the cpuset partitions shrunk or given back
    std::vector<AffinityRestore> affinity;    // every entry settled (or not recorded)
    int affinity_ledger_error = 0;            // errno of the ledger's save, 0 if saved
};

}  // namespace cpuhpd
