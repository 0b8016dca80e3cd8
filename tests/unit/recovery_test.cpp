#include "recovery.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>

#include "engine_fixture.h"
#include "journal_file.h"
#include "journal_test_support.h"

namespace cpuhpd::test {
namespace {

namespace fs = std::filesystem;

const std::string kRcu = "kernel/rcu_expedited";
const std::string kSmtControl = "devices/system/cpu/smt/control";

// A fake machine, a state directory, and recovery over both.
struct Recovery : ::testing::Test {
    RecoveryReport recover_now(RecoveryPolicy policy = RecoveryPolicy::Auto) {
        EngineSettings settings = m.settings;
        settings.recovery = policy;
        return recover(
            state.path(), m.paths, m.writer, *m.runner, [this] { return m.state(); }, settings);
    }

    // An offline batch of CPUs 7, 6, 5, 4 begun on the whole machine with rcu_expedited 0.
    JournalRecord offline_record(std::vector<JournalRequest> requests = {}) {
        JournalRecord r;
        r.batch_id = 41;
        r.action = Action::Offline;
        r.strategy = StrategyKind::PerCpu;
        r.order = {7, 6, 5, 4};
        r.online_before = m.fs.online();
        r.rcu_expedited = "0";
        r.boottime_ns = boottime_ns();
        r.requests = requests.empty()
                         ? std::vector<JournalRequest>{{Mode::Atomic, CpuSet::range(4, 7), ":1.5"}}
                         : requests;
        return r;
    }

    // The journal FileJournal leaves when the daemon dies after writing `written`.
    void write_interrupted(const JournalRecord& record, const std::vector<unsigned>& written) {
        FileJournal journal(state.path(), {});
        journal.begin(record);
        for (unsigned cpu : written) {
            journal.cpu_written(cpu, 0);
        }
    }

    // The machine as the daemon left it: `offline` down, inside the expedite window.
    void crash_mid_batch(const CpuSet& offline) {
        for (unsigned cpu : offline.members()) {
            m.fs.set_online(cpu, false);
        }
        m.fs.write(kRcu, "1");
    }

    // A journal that recovery would act on, were it trusted: for the Rejected tests.
    std::string interrupted_journal_text() {
        return serialize_journal_header(offline_record()) + sealed_line("written cpu=7 errno=0") +
               sealed_line("written cpu=6 errno=0");
    }

    void expect_rejected_untouched(const RecoveryReport& report) {
        EXPECT_EQ(report.outcome, RecoveryOutcome::Rejected) << report.summary;
        EXPECT_EQ(report.moved_to, state.rejected().string());
        EXPECT_TRUE(fs::exists(fs::symlink_status(state.rejected())));
        EXPECT_FALSE(fs::exists(fs::symlink_status(state.journal())));
        EXPECT_TRUE(m.writer.log().empty()) << m.writer.log().size() << " writes";
        EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({6, 7}));
        EXPECT_EQ(m.fs.read(kRcu), "1");
    }

    FakeMachine m;
    StateDir state;
};

TEST_F(Recovery, NoJournalIsNoneAndWritesNothing) {
    crash_mid_batch(set({7}));
    const RecoveryReport report = recover_now();
    EXPECT_EQ(report.outcome, RecoveryOutcome::None);
    EXPECT_TRUE(m.writer.log().empty());
    EXPECT_FALSE(m.fs.online().contains(7));
}

TEST_F(Recovery, EndedBatchIsFinishedAndItsJournalRemoved) {
    write_text(state.journal(), serialize_journal_header(offline_record()) + sealed_line("end"));
    ASSERT_EQ(::chmod(state.journal().c_str(), 0600), 0);
    crash_mid_batch(set({6, 7}));
    const RecoveryReport report = recover_now();
    EXPECT_EQ(report.outcome, RecoveryOutcome::Finished) << report.summary;
    EXPECT_EQ(report.batch_id, 41u);
    EXPECT_FALSE(fs::exists(state.journal()));
    EXPECT_TRUE(m.writer.log().empty());
}

TEST_F(Recovery, InterruptedOfflineBatchIsRolledBack) {
    write_interrupted(offline_record(), {7, 6});
    crash_mid_batch(set({6, 7}));
    const RecoveryReport report = recover_now();
    EXPECT_EQ(report.outcome, RecoveryOutcome::Recovered) << report.summary;
    EXPECT_EQ(report.planned, CpuSet::range(4, 7));
    EXPECT_EQ(report.found, set({6, 7}));
    EXPECT_EQ(report.restored, set({6, 7}));
    EXPECT_TRUE(report.kept.empty());
    EXPECT_TRUE(report.failed.empty());
    EXPECT_TRUE(report.rcu_expedited_restored);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
    EXPECT_EQ(m.fs.read(kRcu), "0");
    EXPECT_FALSE(fs::exists(state.journal()));
}

TEST_F(Recovery, KeepPolicyLeavesTheCpusAsTheBatchMadeThem) {
    write_interrupted(offline_record(), {7, 6});
    crash_mid_batch(set({6, 7}));
    const RecoveryReport report = recover_now(RecoveryPolicy::Keep);
    EXPECT_EQ(report.outcome, RecoveryOutcome::Recovered) << report.summary;
    EXPECT_EQ(report.kept, set({6, 7}));
    EXPECT_TRUE(report.restored.empty());
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({6, 7}));
    EXPECT_TRUE(m.writer.writes_to("devices/system/cpu/cpu6/online").empty());
    EXPECT_TRUE(m.writer.writes_to("devices/system/cpu/cpu7/online").empty());
    EXPECT_FALSE(fs::exists(state.journal()));
}

TEST_F(Recovery, AutoRestoresOnlyTheAtomicRequestsCpus) {
    write_interrupted(offline_record({{Mode::Atomic, set({6, 7}), ":1.5"},
                                      {Mode::BestEffort, set({4, 5}), ":1.6"}}),
                      {7, 6, 5, 4});
    crash_mid_batch(CpuSet::range(4, 7));
    const RecoveryReport report = recover_now(RecoveryPolicy::Auto);
    EXPECT_EQ(report.outcome, RecoveryOutcome::Recovered) << report.summary;
    EXPECT_EQ(report.found, CpuSet::range(4, 7));
    EXPECT_EQ(report.restored, set({6, 7}));
    EXPECT_EQ(report.kept, set({4, 5}));
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({4, 5}));
}

TEST_F(Recovery, SmtControlIsPutBackUnderRollback) {
    JournalRecord record;
    record.batch_id = 9;
    record.action = Action::Offline;
    record.strategy = StrategyKind::Smt;
    record.order = CpuSet::range(8, 15).members();
    record.online_before = CpuSet::range(0, 15);
    record.smt_control = "on";
    record.boottime_ns = boottime_ns();
    record.requests = {{Mode::Atomic, CpuSet::range(8, 15), ":1.7"}};
    write_interrupted(record, {});
    FakeKernelWriter kernel(m.fs);  // not m.writer, whose log shows what recovery wrote
    ASSERT_EQ(kernel.write(m.paths.smt_control(), "off"), 0);
    ASSERT_EQ(m.fs.online(), CpuSet::range(0, 7));

    const RecoveryReport report = recover_now(RecoveryPolicy::Rollback);
    EXPECT_EQ(report.outcome, RecoveryOutcome::Recovered) << report.summary;
    EXPECT_TRUE(report.smt_control_restored);
    EXPECT_FALSE(report.rcu_expedited_restored);
    // Found as the crash left them, though smt/control brought them back.
    EXPECT_EQ(report.found, CpuSet::range(8, 15));
    EXPECT_EQ(report.restored, CpuSet::range(8, 15));
    EXPECT_EQ(m.writer.writes_to(kSmtControl), (std::vector<std::string>{"on"}));
    EXPECT_EQ(m.fs.read(kSmtControl), "on");
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
    EXPECT_TRUE(m.writer.writes_to(kRcu).empty());
}

TEST_F(Recovery, ACpuTheKernelRefusesIsReportedFailed) {
    write_interrupted(offline_record(), {7, 6});
    crash_mid_batch(set({6, 7}));
    m.writer.fail_cpu(6, EBUSY, 5);
    const RecoveryReport report = recover_now(RecoveryPolicy::Rollback);
    EXPECT_EQ(report.outcome, RecoveryOutcome::Recovered) << report.summary;
    EXPECT_EQ(report.failed, set({6}));
    EXPECT_EQ(report.restored, set({7}));
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({6}));
    EXPECT_NE(report.summary.find("failed"), std::string::npos) << report.summary;
    EXPECT_FALSE(fs::exists(state.journal()));
}

TEST_F(Recovery, JournalFromAnEarlierBootIsStale) {
    JournalRecord record = offline_record();
    record.boottime_ns = boottime_ns() + 3600ULL * 1000000000ULL;
    write_interrupted(record, {7, 6});
    crash_mid_batch(set({6, 7}));
    const RecoveryReport report = recover_now();
    EXPECT_EQ(report.outcome, RecoveryOutcome::Stale) << report.summary;
    EXPECT_TRUE(m.writer.log().empty());
    EXPECT_FALSE(fs::exists(state.journal()));
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({6, 7}));
}

TEST_F(Recovery, SymlinkIsRejectedAndItsTargetUntouched) {
    const fs::path target = state.path() / "elsewhere";
    const std::string text = interrupted_journal_text();
    write_text(target, text);
    ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
    fs::create_symlink(target, state.journal());
    crash_mid_batch(set({6, 7}));
    expect_rejected_untouched(recover_now());
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(state.rejected())));
    EXPECT_EQ(read_text(target), text);
}

TEST_F(Recovery, FifoIsRejectedWithoutBlocking) {
    ASSERT_EQ(::mkfifo(state.journal().c_str(), 0600), 0);
    crash_mid_batch(set({6, 7}));
    auto done = std::async(std::launch::async, [this] { return recover_now(); });
    if (done.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
        // Give the blocked reader a writer and its end of file, so the test can end.
        const int fd = ::open(state.journal().c_str(), O_WRONLY | O_NONBLOCK);
        if (fd >= 0) {
            ::close(fd);
        }
        ADD_FAILURE() << "recovery blocked on a FIFO";
    }
    expect_rejected_untouched(done.get());
}

TEST_F(Recovery, GroupWritableJournalIsRejected) {
    write_text(state.journal(), interrupted_journal_text());
    ASSERT_EQ(::chmod(state.journal().c_str(), 0620), 0);
    crash_mid_batch(set({6, 7}));
    expect_rejected_untouched(recover_now());
}

TEST_F(Recovery, OversizedJournalIsRejected) {
    write_text(state.journal(), interrupted_journal_text());
    ASSERT_EQ(::chmod(state.journal().c_str(), 0600), 0);
    ASSERT_EQ(::truncate(state.journal().c_str(), static_cast<off_t>(kMaxJournalBytes + 1)), 0);
    crash_mid_batch(set({6, 7}));
    expect_rejected_untouched(recover_now());
}

TEST_F(Recovery, CorruptJournalIsRejected) {
    std::string text = interrupted_journal_text() + sealed_line("end");
    text.replace(text.find("written cpu=7"), 13, "written cpu=4");  // breaks that line's sum
    write_text(state.journal(), text);
    ASSERT_EQ(::chmod(state.journal().c_str(), 0600), 0);
    crash_mid_batch(set({6, 7}));
    const RecoveryReport report = recover_now();
    expect_rejected_untouched(report);
    EXPECT_NE(report.summary.find("checksum"), std::string::npos) << report.summary;
}

TEST_F(Recovery, ForeignOwnedJournalIsRejected) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "giving the journal to another owner needs root";
    }
    write_interrupted(offline_record(), {7, 6});
    ASSERT_EQ(::chown(state.journal().c_str(), 65534, 65534), 0);
    crash_mid_batch(set({6, 7}));
    const RecoveryReport report = recover_now();
    expect_rejected_untouched(report);
    EXPECT_NE(report.summary.find("65534"), std::string::npos) << report.summary;
}

}  // namespace
}  // namespace cpuhpd::test
