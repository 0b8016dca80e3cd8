#include "affinity.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <tuple>

#include "cpulist.h"
#include "engine_fixture.h"
#include "journal_file.h"
#include "recovery.h"

namespace cpuhpd::test {
namespace {

namespace fs = std::filesystem;

// Sets affinity by rewriting the fake tree, as the kernel would; records every call and
// fails for the tids it is told to.
struct FakeSetter : AffinitySetter {
    explicit FakeSetter(FakeProc& p) : proc(p) {}
    int set(unsigned pid, unsigned tid, const CpuSet& cpus) override {
        calls.emplace_back(tid, cpus);
        if (auto it = failures.find(tid); it != failures.end()) {
            return it->second;
        }
        proc.set_task_cpus(pid, tid, format_cpulist(cpus));
        return 0;
    }
    FakeProc& proc;
    std::vector<std::pair<unsigned, CpuSet>> calls;
    std::map<unsigned, int> failures;
};

// The fake kernel, plus what the real one does to affinity when a CPU goes offline: a task
// (or IRQ) with no CPU of its affinity online left is widened to every possible CPU (to the
// online ones for an IRQ).
struct AffinityBreakingWriter : AttributeWriter {
    AffinityBreakingWriter(FakeMachine& machine) : m(machine) {}
    int write(const fs::path& file, const std::string& value) override {
        const int result = m.writer.write(file, value);
        const CpuSet online = m.fs.online();
        for (const auto& [pid, tid] : tasks) {
            if (!parse_cpulist(m.proc.task_cpus(pid, tid)).intersects(online)) {
                m.proc.set_task_cpus(pid, tid, "0-15");
            }
        }
        for (unsigned irq : irqs) {
            if (!parse_cpulist(m.proc.irq_cpus(irq)).intersects(online)) {
                m.proc.set_irq_cpus(irq, format_cpulist(online));
            }
        }
        return result;
    }
    FakeMachine& m;
    std::vector<std::pair<unsigned, unsigned>> tasks;
    std::vector<unsigned> irqs;
};

AffinityEntry task_entry(unsigned pid, unsigned tid, const CpuSet& cpus,
                         unsigned long long start = 100) {
    return AffinityEntry{false, tid, pid, start, "sleep", cpus, cpus, 7};
}

AffinityEntry irq_entry(unsigned irq, const CpuSet& cpus) {
    return AffinityEntry{true, irq, 0, 0, "eth0", cpus, cpus, 7};
}

const AffinityRestore* find(const std::vector<AffinityRestore>& all, bool irq, unsigned id) {
    for (const auto& r : all) {
        if (r.entry.irq == irq && r.entry.id == id) {
            return &r;
        }
    }
    return nullptr;
}

// ------------------------------------------------------------------ one entry

struct RestoreOne : ::testing::Test {
    FakeMachine m;
    FakeSetter setter{m.proc};
};

TEST_F(RestoreOne, TaskTheKernelWidenedGetsItsAffinityBack) {
    m.proc.add_task(50, 51, "sleep", "0-15");
    const auto r = restore_affinity(task_entry(50, 51, set({5})), m.proc.root(), setter, m.writer);
    EXPECT_EQ(r.status, AffinityStatus::Restored) << r.message;
    EXPECT_EQ(r.found, CpuSet::range(0, 15));
    ASSERT_EQ(setter.calls.size(), 1u);
    EXPECT_EQ(setter.calls[0], std::make_pair(51u, set({5})));
    EXPECT_EQ(m.proc.task_cpus(50, 51), "5");
}

TEST_F(RestoreOne, ReusedPidIsNotTouched) {
    m.proc.add_task(50, 50, "other", "0-15", false, 999);  // a new process under the old pid
    const auto r = restore_affinity(task_entry(50, 50, set({5})), m.proc.root(), setter, m.writer);
    EXPECT_EQ(r.status, AffinityStatus::Gone);
    EXPECT_NE(r.message.find("another thread"), std::string::npos) << r.message;
    EXPECT_TRUE(setter.calls.empty());
    EXPECT_EQ(m.proc.task_cpus(50, 50), "0-15");
}

TEST_F(RestoreOne, TaskGoneIsReported) {
    const auto r = restore_affinity(task_entry(60, 60, set({5})), m.proc.root(), setter, m.writer);
    EXPECT_EQ(r.status, AffinityStatus::Gone);
    EXPECT_TRUE(setter.calls.empty());
}

TEST_F(RestoreOne, MaskChangedMeanwhileIsKept) {
    m.proc.add_task(50, 50, "sleep", "2-3");  // somebody ran taskset -p -c 2-3
    const auto r = restore_affinity(task_entry(50, 50, set({5})), m.proc.root(), setter, m.writer);
    EXPECT_EQ(r.status, AffinityStatus::Changed);
    EXPECT_EQ(r.found, CpuSet::range(2, 3));
    EXPECT_TRUE(setter.calls.empty());
    EXPECT_EQ(m.proc.task_cpus(50, 50), "2-3");
}

TEST_F(RestoreOne, TaskNeverMovedIsIntact) {
    m.proc.add_task(50, 50, "sleep", "5");  // slept through: the kernel moves it on wake-up
    const auto r = restore_affinity(task_entry(50, 50, set({5})), m.proc.root(), setter, m.writer);
    EXPECT_EQ(r.status, AffinityStatus::Intact);
    EXPECT_TRUE(setter.calls.empty());
}

TEST_F(RestoreOne, SetterErrorIsReported) {
    m.proc.add_task(50, 50, "sleep", "0-15");
    setter.failures[50] = EPERM;
    const auto r = restore_affinity(task_entry(50, 50, set({5})), m.proc.root(), setter, m.writer);
    EXPECT_EQ(r.status, AffinityStatus::Failed);
    EXPECT_EQ(r.error, EPERM);
    EXPECT_NE(r.message.find("EPERM"), std::string::npos) << r.message;
}

TEST_F(RestoreOne, IrqIsWrittenBack) {
    m.proc.add_irq(24, "0-4,6-15", {"eth0"});
    const auto r = restore_affinity(irq_entry(24, set({5})), m.proc.root(), setter, m.writer);
    EXPECT_EQ(r.status, AffinityStatus::Restored) << r.message;
    EXPECT_EQ(m.proc.irq_cpus(24), "5");
}

TEST_F(RestoreOne, IrqRefusedIsReportedWithItsErrno) {
    m.proc.add_irq(24, "0-4,6-15", {"eth0"});
    m.writer.fail_file("fake-proc/irq/24/smp_affinity_list", EIO);  // a managed IRQ
    const auto r = restore_affinity(irq_entry(24, set({5})), m.proc.root(), setter, m.writer);
    EXPECT_EQ(r.status, AffinityStatus::Failed);
    EXPECT_EQ(r.error, EIO);
    EXPECT_EQ(m.proc.irq_cpus(24), "0-4,6-15");
    EXPECT_NE(describe(r).find("irq 24 (eth0) CPU 5: failed"), std::string::npos) << describe(r);
}

TEST_F(RestoreOne, IrqGoneIsReported) {
    const auto r = restore_affinity(irq_entry(99, set({5})), m.proc.root(), setter, m.writer);
    EXPECT_EQ(r.status, AffinityStatus::Gone);
}

// ------------------------------------------------------------------ the ledger

struct Ledger : ::testing::Test {
    FakeMachine m;
    FakeSetter setter{m.proc};
    fs::path file = m.fs.root() / "affinity.ledger";
};

TEST_F(Ledger, RoundTripsThroughItsFile) {
    AffinityLedger ledger(file);
    Pinned pinned;
    pinned.tasks.push_back({51, "a b\\x09", set({5}), 50, 1234});
    pinned.irqs.push_back({24, "eth0,eth1", CpuSet::range(5, 6)});
    int err = -1;
    EXPECT_TRUE(ledger.record(pinned, CpuSet::range(5, 7), 3, err).empty());
    EXPECT_EQ(err, 0);
    AffinityLedger again(file);
    EXPECT_EQ(again.load(), std::nullopt);
    EXPECT_EQ(again.entries(), ledger.entries());
    ASSERT_EQ(again.entries().size(), 2u);
    EXPECT_EQ(again.entries()[0].start_time, 1234u);
    EXPECT_EQ(again.entries()[0].pid, 50u);
    EXPECT_EQ(again.entries()[1].leaving, CpuSet::range(5, 6));
}

TEST_F(Ledger, AGarbledFileIsRefusedAndStartsEmpty) {
    {
        AffinityLedger ledger(file);
        Pinned pinned;
        pinned.irqs.push_back({24, "", set({5})});
        int err = 0;
        ledger.record(pinned, set({5}), 1, err);
    }
    std::string problem;
    EXPECT_FALSE(parse_affinity_ledger("cpuhpd-affinity-ledger 1\ntask\t1\t2\n", problem));
    EXPECT_NE(problem.find("line 2"), std::string::npos) << problem;
    EXPECT_FALSE(parse_affinity_ledger("something else\n", problem));
}

TEST_F(Ledger, AnEntryRecordedAlreadyKeepsItsOriginalMask) {
    AffinityLedger ledger;
    Pinned first;
    first.tasks.push_back({51, "t", set({5}), 50, 100});
    int err = 0;
    ledger.record(first, set({5}), 1, err);
    Pinned second;
    second.tasks.push_back({51, "t", CpuSet::range(0, 15), 50, 100});  // widened by the kernel
    ledger.record(second, CpuSet::range(0, 15), 2, err);
    ASSERT_EQ(ledger.entries().size(), 1u);
    EXPECT_EQ(ledger.entries()[0].cpus, set({5}));
}

TEST_F(Ledger, IsBoundedAndSaysWhatDidNotFit) {
    AffinityLedger ledger;
    Pinned pinned;
    for (unsigned irq = 0; irq < kMaxAffinityIrqs + 2; ++irq) {
        pinned.irqs.push_back({irq, "", set({5})});
    }
    int err = 0;
    const auto unrecorded = ledger.record(pinned, set({5}), 1, err);
    EXPECT_EQ(ledger.entries().size(), kMaxAffinityIrqs);
    ASSERT_EQ(unrecorded.size(), 2u);
    EXPECT_EQ(unrecorded[0].status, AffinityStatus::NotRecorded);
}

TEST_F(Ledger, SettlesOnlyEntriesWhoseCpusAreAllBack) {
    AffinityLedger ledger(file);
    Pinned pinned;
    m.proc.add_task(50, 50, "a", "0-15");
    m.proc.add_task(60, 60, "b", "0-15");
    pinned.tasks.push_back({50, "a", set({5}), 50, 100});
    pinned.tasks.push_back({60, "b", CpuSet::range(5, 6), 60, 100});
    int err = 0;
    ledger.record(pinned, CpuSet::range(5, 6), 1, err);
    CpuSet online = CpuSet::range(0, 15);
    online.remove(6);
    const auto settled = ledger.settle(online, set({5}), m.proc.root(), setter, m.writer, err);
    ASSERT_EQ(settled.size(), 1u);
    EXPECT_EQ(settled[0].entry.id, 50u);
    EXPECT_EQ(settled[0].status, AffinityStatus::Restored);
    EXPECT_EQ(ledger.entries().size(), 1u);  // task 60 waits for CPU 6
    AffinityLedger saved(file);
    saved.load();
    EXPECT_EQ(saved.entries().size(), 1u);
    // CPU 6 back without a restore asked: dropped, untouched.
    const auto dropped =
        ledger.settle(CpuSet::range(0, 15), {}, m.proc.root(), setter, m.writer, err);
    ASSERT_EQ(dropped.size(), 1u);
    EXPECT_EQ(dropped[0].status, AffinityStatus::Dropped);
    EXPECT_EQ(m.proc.task_cpus(60, 60), "0-15");
    EXPECT_FALSE(fs::exists(file));
}

// ------------------------------------------------------------------ through the runner

struct ThroughRunner : ::testing::TestWithParam<StrategyKind> {
    ThroughRunner() : m(FakeTopology{.bulk = true}), kernel(m), setter(m.proc) {
        m.proc.add_task(50, 50, "pinned", "5");
        m.proc.add_task(50, 52, "pinned-thread", "5-6");
        m.proc.add_task(70, 70, "free", "0-15");
        m.proc.add_irq(24, "6", {"eth0"});
        kernel.tasks = {{50, 50}, {50, 52}, {70, 70}};
        kernel.irqs = {24};
        runner = make_runner();
    }
    std::unique_ptr<BatchRunner> make_runner() {
        return std::make_unique<BatchRunner>(
            m.paths, kernel, m.journal, [this] { return m.state(); }, m.settings, m.proc.root(),
            fs::path{}, fs::path{}, ledger, &setter);
    }
    FakeMachine m;
    AffinityBreakingWriter kernel;
    FakeSetter setter;
    fs::path ledger = m.fs.root() / "affinity.ledger";
    std::unique_ptr<BatchRunner> runner;
};

TEST_P(ThroughRunner, RollbackOfAnAtomicOfflineGivesAffinityBack) {
    // Per CPU the offline order is 7, 6, 5, 4; the fake bulk write goes 4, 5, 6, 7 and stops
    // at the failure: either way 5 and 6 went down first.
    m.writer.fail_cpu(GetParam() == StrategyKind::Bulk ? 7 : 4, EBUSY);
    const auto out =
        runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 7), Mode::Atomic, GetParam())});
    ASSERT_EQ(out.results.size(), 1u);
    EXPECT_EQ(out.results[0].outcome, Outcome::Failed);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
    const auto& affinity = out.results[0].affinity;
    ASSERT_EQ(affinity.size(), 3u);
    for (const auto& r : affinity) {
        EXPECT_EQ(r.status, AffinityStatus::Restored) << describe(r);
    }
    EXPECT_EQ(m.proc.task_cpus(50, 50), "5");
    EXPECT_EQ(m.proc.task_cpus(50, 52), "5-6");
    EXPECT_EQ(m.proc.task_cpus(70, 70), "0-15");
    EXPECT_EQ(m.proc.irq_cpus(24), "6");
    EXPECT_EQ(out.report.affinity.size(), 3u);
    EXPECT_FALSE(fs::exists(ledger));
}

TEST_P(ThroughRunner, PlainOfflineThenOnlineRestoresAcrossARestart) {
    auto out =
        runner->run(1, {m.request(Action::Offline, CpuSet::range(5, 6), Mode::Atomic, GetParam())});
    EXPECT_EQ(out.results[0].outcome, Outcome::Ok);
    EXPECT_TRUE(out.results[0].affinity.empty());
    EXPECT_EQ(m.proc.task_cpus(50, 50), "0-15");  // the kernel's
    EXPECT_TRUE(fs::exists(ledger));
    runner = make_runner();               // a daemon restart in between: the ledger is read back
    m.proc.set_task_cpus(50, 52, "1-2");  // and somebody re-pinned one thread meanwhile
    out =
        runner->run(2, {m.request(Action::Online, CpuSet::range(5, 6), Mode::Atomic, GetParam())});
    EXPECT_EQ(out.results[0].outcome, Outcome::Ok);
    const auto& affinity = out.results[0].affinity;
    ASSERT_EQ(affinity.size(), 3u);
    EXPECT_EQ(find(affinity, false, 50)->status, AffinityStatus::Restored);
    EXPECT_EQ(find(affinity, false, 52)->status, AffinityStatus::Changed);
    EXPECT_EQ(find(affinity, true, 24)->status, AffinityStatus::Restored);
    EXPECT_EQ(m.proc.task_cpus(50, 50), "5");
    EXPECT_EQ(m.proc.task_cpus(50, 52), "1-2");
    EXPECT_EQ(m.proc.irq_cpus(24), "6");
    EXPECT_FALSE(fs::exists(ledger));
}

TEST_P(ThroughRunner, OnlineWithRestoreAffinityOffDropsTheRecord) {
    runner->run(1, {m.request(Action::Offline, CpuSet::range(5, 6), Mode::Atomic, GetParam())});
    Request online = m.request(Action::Online, CpuSet::range(5, 6), Mode::Atomic, GetParam());
    online.restore_affinity = false;
    const auto out = runner->run(2, {online});
    ASSERT_EQ(out.results[0].affinity.size(), 3u);
    for (const auto& r : out.results[0].affinity) {
        EXPECT_EQ(r.status, AffinityStatus::Dropped) << describe(r);
    }
    EXPECT_TRUE(setter.calls.empty());
    EXPECT_EQ(m.proc.task_cpus(50, 50), "0-15");
    EXPECT_FALSE(fs::exists(ledger));
}

TEST_P(ThroughRunner, OnlineOfPartOfTheCpusRestoresOnlyTheirEntries) {
    runner->run(1, {m.request(Action::Offline, CpuSet::range(5, 6), Mode::Atomic, GetParam())});
    const auto out =
        runner->run(2, {m.request(Action::Online, set({5}), Mode::Atomic, GetParam())});
    ASSERT_EQ(out.results[0].affinity.size(), 1u);
    EXPECT_EQ(out.results[0].affinity[0].entry.id, 50u);
    EXPECT_EQ(m.proc.task_cpus(50, 50), "5");
    EXPECT_EQ(m.proc.task_cpus(50, 52), "0-15");  // waits for CPU 6
    EXPECT_TRUE(fs::exists(ledger));
}

TEST_P(ThroughRunner, PidReusedBetweenOfflineAndOnlineIsLeftAlone) {
    runner->run(1, {m.request(Action::Offline, set({5}), Mode::Atomic, GetParam())});
    kernel.tasks = {{70, 70}};  // process 50 ends; a new one gets its pid
    m.proc.remove_task(50);
    m.proc.add_task(50, 50, "newcomer", "0-15", false, 5000);
    const auto out =
        runner->run(2, {m.request(Action::Online, set({5}), Mode::Atomic, GetParam())});
    ASSERT_NE(find(out.results[0].affinity, false, 50), nullptr);
    EXPECT_EQ(find(out.results[0].affinity, false, 50)->status, AffinityStatus::Gone);
    EXPECT_EQ(m.proc.task_cpus(50, 50), "0-15");
    EXPECT_TRUE(setter.calls.empty());
}

INSTANTIATE_TEST_SUITE_P(Strategies, ThroughRunner,
                         ::testing::Values(StrategyKind::PerCpu, StrategyKind::Bulk),
                         [](const auto& param_info) {
                             return param_info.param == StrategyKind::Bulk ? "Bulk" : "PerCpu";
                         });

// A journal that never ends: the daemon was killed mid-batch.
struct KilledJournal final : BatchJournal {
    explicit KilledJournal(fs::path dir) : file(std::move(dir), {}) {}
    void begin(const JournalRecord& r) override { file.begin(r); }
    void cpu_written(unsigned cpu, int err) override { file.cpu_written(cpu, err); }
    void one_shot_written(int err) override { file.one_shot_written(err); }
    void rollback_started() override { file.rollback_started(); }
    void cpu_restored(unsigned cpu, int err) override { file.cpu_restored(cpu, err); }
    void end() override {}
    FileJournal file;
};

TEST(AffinityRecovery, RecoveryGivesBackWhatTheInterruptedBatchRecorded) {
    FakeMachine m;
    AffinityBreakingWriter kernel(m);
    FakeSetter setter(m.proc);
    m.proc.add_task(50, 50, "pinned", "5");
    m.proc.add_irq(24, "5", {"eth0"});
    kernel.tasks = {{50, 50}};
    kernel.irqs = {24};
    const fs::path dir = m.fs.root() / "state";
    fs::create_directories(dir);
    const fs::path ledger = dir / kAffinityLedgerFileName;
    {
        KilledJournal journal(dir);
        BatchRunner doomed(
            m.paths, kernel, journal, [&m] { return m.state(); }, m.settings, m.proc.root(),
            fs::path{}, fs::path{}, ledger, &setter);
        doomed.run(9, {m.request(Action::Offline, CpuSet::range(4, 5))});
    }
    ASSERT_TRUE(fs::exists(dir / kJournalFileName));
    EXPECT_EQ(m.proc.task_cpus(50, 50), "0-15");
    // The next start: its runner reads the ledger, recovery puts the CPUs back, the engine
    // settles what they owe (Engine::recover).
    BatchRunner runner(
        m.paths, kernel, m.journal, [&m] { return m.state(); }, m.settings, m.proc.root(),
        fs::path{}, fs::path{}, ledger, &setter);
    NullJournal none;
    BatchRunner recovery_runner(
        m.paths, kernel, none, [&m] { return m.state(); }, m.settings);
    RecoveryReport report = recover(
        dir, m.paths, kernel, recovery_runner, [&m] { return m.state(); }, m.settings);
    EXPECT_EQ(report.outcome, RecoveryOutcome::Recovered);
    EXPECT_EQ(report.restored, CpuSet::range(4, 5));
    int err = -1;
    report.affinity = runner.settle_affinity(report.restored, err);
    EXPECT_EQ(err, 0);
    add_affinity_summary(report);
    ASSERT_EQ(report.affinity.size(), 2u);
    EXPECT_EQ(m.proc.task_cpus(50, 50), "5");
    EXPECT_EQ(m.proc.irq_cpus(24), "5");
    EXPECT_NE(report.summary.find("affinity of pinned tasks and IRQs: 2 restored"),
              std::string::npos)
        << report.summary;
    EXPECT_FALSE(fs::exists(ledger));
}

}  // namespace
}  // namespace cpuhpd::test
