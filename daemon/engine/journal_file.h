// The batch journal on disk: <state_dir>/batch.journal.
//
// Text, one record per line, each line ending in " sum=<FNV-1a 64 of the line before it>":
//
//   cpuhpd-batch-journal 1
//   begin batch=7 action=offline strategy=per-cpu order=7,6,5 online_before=0-7
//         rcu_expedited=0 smt_control=- boottime_ns=123 requests=1     (one line)
//   request mode=atomic cpus=5-7 caller=:1.42
//   written cpu=7 errno=0
//   one-shot errno=0          rollback          restored cpu=7 errno=0          end
//
// What survives what:
// - The header (the first line, begin, its request lines) is written to a new file,
//   fsynced, renamed over batch.journal and the directory fsynced before the batch's first
//   write: after a crash at any instant the journal is either absent (nothing was written
//   yet) or holds the whole header.
// - Later records are appended with one write(2) each and no fsync: a killed process loses
//   nothing the kernel accepted (the page cache outlives it), and a machine crash resets
//   every CPU anyway (the state directory, /run/cpuhpd by default, is gone with it too;
//   a journal older than the boot is recognised and discarded). A torn last line (no newline
//   or a wrong sum) is dropped, never trusted; a bad line before the last makes the journal
//   unreadable.
// - The end: an "end" record, then the file is removed and the directory fsynced.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <variant>

#include "journal.h"

namespace cpuhpd {

inline constexpr const char* kJournalFileName = "batch.journal";
// A journal larger than this is not ours (8192 CPUs written and restored: about 0.5 MiB).
inline constexpr std::size_t kMaxJournalBytes = 4 * 1024 * 1024;

class FileJournal final : public BatchJournal {
public:
    // `warn` hears every failure to write the journal; the batch goes on without it.
    FileJournal(std::filesystem::path dir, std::function<void(const std::string&)> warn);
    ~FileJournal() override;
    FileJournal(const FileJournal&) = delete;
    FileJournal& operator=(const FileJournal&) = delete;

    const std::filesystem::path& path() const { return path_; }

    void begin(const JournalRecord& record) override;
    void cpu_written(unsigned cpu, int err) override;
    void one_shot_written(int err) override;
    void rollback_started() override;
    void cpu_restored(unsigned cpu, int err) override;
    void end() override;

private:
    void append(const std::string& line);
    void fail(const std::string& what, int err);

    std::filesystem::path dir_;
    std::filesystem::path path_;
    std::function<void(const std::string&)> warn_;
    int fd_ = -1;             // the journal of the batch in flight, open for appending
    bool installed_ = false;  // that journal is at path_ (renamed into place, not yet ended)
};

// Removes a journal and fsyncs its directory, so that the removal outlives a power loss
// too. Returns 0 or unlink's errno (the directory is then left alone).
int remove_journal_file(const std::filesystem::path& file);

// CLOCK_BOOTTIME now, in nanoseconds.
std::uint64_t boottime_ns();

// The text of a record's header (the magic line, begin and its request lines).
std::string serialize_journal_header(const JournalRecord& record);

// Parses a journal's text. A torn last line is dropped; anything else wrong is an error,
// returned as the reason (a std::string).
std::variant<JournalRecord, std::string> parse_journal(const std::string& text);

}  // namespace cpuhpd
