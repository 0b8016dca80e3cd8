// Giving back what the kernel took. When the last CPU of a task's affinity goes offline the
// kernel rewrites the affinity ("no longer affine to cpuN": the task's cpuset, or every
// possible CPU) and moves an IRQ affine only to leaving CPUs elsewhere; neither comes back
// with the CPU. Before an offline batch's first write the runner records every such task
// (threads included) and IRQ (pinned.h) in the affinity ledger, a state file beside the
// batch journal, saved (fsync, rename) before the journal's header, so that a crash at any
// instant after the first CPU write leaves the record for recovery. Once the CPUs an entry
// lost are all online again after a batch that brought them back with a restore asked (a
// rollback, a hold's or profile's return, recovery, an online with restore_affinity), the
// entry is settled: a task that still exists (same tid and start time) and whose affinity
// is still the kernel's gets its recorded affinity back through sched_setaffinity; an IRQ
// gets its smp_affinity_list written. An entry whose CPUs came back otherwise (an online
// with restore_affinity off, or outside cpuhpd) is dropped and said so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cpuset.h"
#include "enums.h"
#include "pinned.h"
#include "sysfs.h"

namespace cpuhpd {

// Bounds of the ledger: beyond them new entries are not recorded (and said so); a few
// hundred bytes each, the file stays far below kMaxStateBytes.
inline constexpr std::size_t kMaxAffinityTasks = 4096;
inline constexpr std::size_t kMaxAffinityIrqs = 1024;
inline constexpr const char* kAffinityLedgerFileName = "affinity";

struct AffinityEntry {
    bool irq = false;
    unsigned id = 0;                    // tid, or IRQ number
    unsigned pid = 0;                   // tasks: the thread group
    unsigned long long start_time = 0;  // tasks: stat field 22, tells a reused tid
    std::string name;                   // comm or the IRQ's actions (escaped)
    CpuSet cpus;                        // the affinity before the batch
    CpuSet leaving;                     // those of `cpus` the batch took offline
    std::uint64_t batch_id = 0;         // the batch that recorded it
    bool operator==(const AffinityEntry&) const = default;
};

enum class AffinityStatus {
    Restored,     // set back to `cpus`
    Intact,       // already `cpus` (the kernel never moved it: it slept through, a managed IRQ)
    Gone,         // the task ended (or its tid now names another: start time differs), IRQ gone
    Changed,      // somebody set an affinity meanwhile that is not the kernel's: kept
    Failed,       // sched_setaffinity or the smp_affinity_list write failed (errno)
    Dropped,      // its CPUs came back without a restore asked (restore_affinity off, outside)
    NotRecorded,  // the ledger was full when it was to be recorded: cannot be given back
};
inline constexpr EnumNames<AffinityStatus, 7> kAffinityStatusNames{{
    {AffinityStatus::Restored, "restored"},
    {AffinityStatus::Intact, "intact"},
    {AffinityStatus::Gone, "gone"},
    {AffinityStatus::Changed, "changed"},
    {AffinityStatus::Failed, "failed"},
    {AffinityStatus::Dropped, "dropped"},
    {AffinityStatus::NotRecorded, "not-recorded"},
}};
inline std::string to_string(AffinityStatus value) {
    return std::string(name_of(kAffinityStatusNames, value));
}

// What became of one recorded entry.
struct AffinityRestore {
    AffinityEntry entry;
    AffinityStatus status = AffinityStatus::Restored;
    CpuSet found;         // its affinity when settled (empty: unreadable, gone)
    int error = 0;        // Failed: the errno
    std::string message;  // for people
    bool operator==(const AffinityRestore&) const = default;
};

// "task 812 (sleep) CPU 5: restored" and the like, for logs and cpuctl.
std::string describe(const AffinityRestore& restore);

// Sets a thread's affinity. The real one is sched_setaffinity(2); tests and a fake /proc
// tree use others.
class AffinitySetter {
public:
    virtual ~AffinitySetter() = default;
    // Returns 0 or the errno.
    virtual int set(unsigned pid, unsigned tid, const CpuSet& cpus) = 0;
};

class SchedAffinitySetter final : public AffinitySetter {
public:
    int set(unsigned pid, unsigned tid, const CpuSet& cpus) override;
};

// Rewrites Cpus_allowed_list in PROC/PID/task/TID/status: the setter for a proc_root that
// is not the real /proc (a test tree), so that a fake tid never reaches a real thread.
class ProcTreeAffinitySetter final : public AffinitySetter {
public:
    explicit ProcTreeAffinitySetter(std::filesystem::path proc_root);
    int set(unsigned pid, unsigned tid, const CpuSet& cpus) override;

private:
    std::filesystem::path proc_root_;
};

class AffinityLedger {
public:
    // `file` empty: nothing is persisted.
    explicit AffinityLedger(std::filesystem::path file = {});

    // Reads the file; a problem (missing file is none) comes back as text, and the ledger
    // starts empty.
    std::optional<std::string> load();
    // Records the tasks and IRQs of `pinned` that the batch `batch_id`, taking `leaving`
    // offline, leaves without a CPU; a thread or IRQ recorded already keeps its older
    // (original) entry. Saves when anything was added. Returns the entries that did not
    // fit (NotRecorded); `save_error` gets the errno of the save, 0 when saved.
    std::vector<AffinityRestore> record(const Pinned& pinned, const CpuSet& leaving,
                                        std::uint64_t batch_id, int& save_error);
    // Settles every entry whose `leaving` CPUs are all in `online`: restored (see above)
    // when they meet `restore_for`, Dropped otherwise; forgets them and saves when any were
    // settled (`save_error` as above).
    std::vector<AffinityRestore> settle(const CpuSet& online, const CpuSet& restore_for,
                                        const std::filesystem::path& proc_root,
                                        AffinitySetter& setter, AttributeWriter& writer,
                                        int& save_error);
    int save() const;
    const std::vector<AffinityEntry>& entries() const { return entries_; }

private:
    std::filesystem::path file_;
    std::vector<AffinityEntry> entries_;
};

// Gives back one entry now, whatever its CPUs (the checks of settle()).
AffinityRestore restore_affinity(const AffinityEntry& entry, const std::filesystem::path& proc_root,
                                 AffinitySetter& setter, AttributeWriter& writer);

std::string serialize_affinity_ledger(const std::vector<AffinityEntry>& entries);
// nullopt and `problem` set when the text is not a ledger.
std::optional<std::vector<AffinityEntry>> parse_affinity_ledger(const std::string& text,
                                                                std::string& problem);

}  // namespace cpuhpd
