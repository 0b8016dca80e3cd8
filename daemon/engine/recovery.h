// Start-up recovery from the batch journal (journal_file.h) of a daemon that died mid-batch:
// put back rcu_expedited and smt/control, bring the interrupted batch's CPUs back to where
// they were before it (or keep them, per the recovery setting and each request's mode), and
// say what was found and done. Runs before the bus name is taken; a crash during recovery
// leaves the journal in place, so the next start recovers again.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "affinity.h"
#include "batch_runner.h"
#include "journal.h"
#include "machine.h"
#include "settings.h"
#include "sysfs.h"

namespace cpuhpd {

// What recovery found, as the LastRecovery property and the log tell it.
enum class RecoveryOutcome {
    None,       // no journal: the last daemon ended cleanly (or never ran a batch)
    Finished,   // the journal of a batch that had ended: removed
    Stale,      // a journal from before the last boot: the machine reset every CPU
    Recovered,  // an interrupted batch, recovered (see the CPU sets)
    Rejected,   // a journal that cannot be trusted: moved aside, nothing changed
};
inline constexpr EnumNames<RecoveryOutcome, 5> kRecoveryOutcomeNames{{
    {RecoveryOutcome::None, "none"},
    {RecoveryOutcome::Finished, "finished"},
    {RecoveryOutcome::Stale, "stale"},
    {RecoveryOutcome::Recovered, "recovered"},
    {RecoveryOutcome::Rejected, "rejected"},
}};
inline std::string to_string(RecoveryOutcome value) {
    return std::string(name_of(kRecoveryOutcomeNames, value));
}

struct RecoveryReport {
    RecoveryOutcome outcome = RecoveryOutcome::None;
    std::chrono::system_clock::time_point when{};
    // The interrupted batch (Recovered, Finished, Stale).
    std::uint64_t batch_id = 0;
    Action action = Action::Offline;
    StrategyKind strategy = StrategyKind::PerCpu;
    CpuSet planned;   // every CPU the batch was to change
    CpuSet found;     // planned CPUs found not in their state before the batch
    CpuSet restored;  // put back in their state before the batch
    CpuSet kept;      // left as the batch made them (best-effort requests, recovery: keep)
    CpuSet failed;    // to be restored, but the write failed
    bool rcu_expedited_restored = false;
    bool smt_control_restored = false;
    std::string moved_to;  // Rejected: where the journal went
    // Affinity given back after the CPUs came back (affinity.h), by the engine.
    std::vector<AffinityRestore> affinity;
    std::string summary;  // one sentence for people
};

// "2 restored, 1 gone": how many of each status.
std::string count_affinity(const std::vector<AffinityRestore>& settled);
// Appends what `report.affinity` says to its summary ("; affinity: 2 restored, 1 gone").
void add_affinity_summary(RecoveryReport& report);

// `read_state` reads the machine; `runner` (with a NullJournal: the journal being
// recovered stays until recovery is done) writes the restoring batch. Never throws for a
// bad journal; throws only what `runner` throws. CPUs of `held` (held by holds a restarted
// daemon keeps, holds.h) are left as they are, reported kept: the holds defend them.
RecoveryReport recover(const std::filesystem::path& state_dir, const SysfsPaths& paths,
                       AttributeWriter& writer, BatchRunner& runner,
                       const std::function<MachineState()>& read_state,
                       const EngineSettings& settings, const CpuSet& held = {});

}  // namespace cpuhpd
