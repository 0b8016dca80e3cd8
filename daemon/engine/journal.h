// Where a batch records its intent before its first write, each CPU as it completes, and
// its end, so that a crash mid-batch can be recognised and repaired at the next start
// (recovery.h). The file format and its guarantees: journal_file.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cpuset.h"
#include "enums.h"

namespace cpuhpd {

struct JournalRequest {
    Mode mode = Mode::Atomic;
    CpuSet cpus;
    std::string caller;
};

// One batch as the journal holds it: what begin() records, then what the batch appends.
struct JournalRecord {
    std::uint64_t batch_id = 0;
    Action action = Action::Offline;
    StrategyKind strategy = StrategyKind::PerCpu;
    std::vector<unsigned> order;  // the planned CPUs, in write order
    CpuSet online_before;
    // Values to put back: rcu_expedited when the batch opens the expedite window,
    // smt/control when the batch writes it.
    std::optional<std::string> rcu_expedited;
    std::optional<std::string> smt_control;
    std::vector<JournalRequest> requests;  // the accepted ones
    // CLOCK_BOOTTIME when the batch began: a journal from an earlier boot has a larger one
    // than the clock now, if the machine has not been up longer since (state_dir belongs
    // on a tmpfs such as /run, which no journal outlives).
    std::uint64_t boottime_ns = 0;

    // Appended while the batch runs.
    std::map<unsigned, int> written;    // cpu -> errno of its forward write (0: done)
    std::optional<int> one_shot_error;  // errno of the bulk or smt write, once made
    bool rolling_back = false;          // the batch began undoing failed atomic requests
    std::map<unsigned, int> restored;   // cpu -> errno of its rollback write
    bool ended = false;                 // every write is done; nothing to recover
};

class BatchJournal {
public:
    virtual ~BatchJournal() = default;
    // Before the first write of the batch (and before the expedite window opens).
    virtual void begin(const JournalRecord& record) = 0;
    virtual void cpu_written(unsigned cpu, int err) = 0;
    virtual void one_shot_written(int err) = 0;
    virtual void rollback_started() = 0;
    virtual void cpu_restored(unsigned cpu, int err) = 0;
    // After the last write (and after the expedite window closed).
    virtual void end() = 0;
};

// Records nothing: for runs that must not replace the journal (recovery, tests).
class NullJournal final : public BatchJournal {
public:
    void begin(const JournalRecord&) override {}
    void cpu_written(unsigned, int) override {}
    void one_shot_written(int) override {}
    void rollback_started() override {}
    void cpu_restored(unsigned, int) override {}
    void end() override {}
};

}  // namespace cpuhpd
