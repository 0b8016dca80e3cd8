// Where a batch's time goes (phase_timer.h): the runner reports every phase it went
// through, named, in order, each counting only its own time.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "batch_runner.h"
#include "engine_fixture.h"

namespace cpuhpd::test {
namespace {

using std::chrono::microseconds;

std::vector<std::string> names(const std::vector<PhaseTime>& phases) {
    std::vector<std::string> out;
    for (const auto& phase : phases) {
        out.push_back(phase.name);
    }
    return out;
}

microseconds sum(const std::vector<PhaseTime>& phases) {
    microseconds total{0};
    for (const auto& phase : phases) {
        EXPECT_GE(phase.duration.count(), 0) << phase.name;
        total += phase.duration;
    }
    return total;
}

microseconds phase(const std::vector<PhaseTime>& phases, const std::string& name) {
    for (const auto& p : phases) {
        if (p.name == name) {
            return p.duration;
        }
    }
    ADD_FAILURE() << "no phase " << name;
    return microseconds(0);
}

// Busy until at least `us` have passed on the monotonic clock.
void spend(microseconds us) {
    const auto until = std::chrono::steady_clock::now() + us;
    while (std::chrono::steady_clock::now() < until) {
    }
}

// A journal whose every record takes 5 ms: its time must be the journal's, not the kernel
// write's it is made inside of.
class SlowJournal final : public BatchJournal {
public:
    void begin(const JournalRecord&) override { spend(kRecord); }
    void cpu_written(unsigned, int) override { spend(kRecord); }
    void one_shot_written(int) override { spend(kRecord); }
    void rollback_started() override { spend(kRecord); }
    void cpu_restored(unsigned, int) override { spend(kRecord); }
    void end() override { spend(kRecord); }
    static constexpr microseconds kRecord{5000};
};

const std::vector<std::string> kOfflinePhases = {"read",  "pinned",   "partitions", "admit",
                                                 "plan",  "affinity", "journal",    "expedite",
                                                 "write", "reread",   "rollback"};

TEST(BatchRunnerPhases, OfflineReportsEveryPhaseInOrderWithinTheDuration) {
    FakeMachine m;
    auto out = m.runner->run(1, {m.request(Action::Offline, set({4, 6, 7}))});
    ASSERT_EQ(out.results[0].outcome, Outcome::Ok);
    EXPECT_EQ(names(out.report.phases), kOfflinePhases);
    EXPECT_LE(sum(out.report.phases), out.report.duration);
    EXPECT_EQ(out.results[0].phases, out.report.phases);
    EXPECT_EQ(out.results[0].duration, out.report.duration);
}

TEST(BatchRunnerPhases, JournalTimeInsideTheWritesIsTheJournals) {
    FakeMachine m;
    SlowJournal journal;
    BatchRunner runner(
        m.paths, m.writer, journal, [&m] { return m.state(); }, m.settings, m.proc.root(),
        m.cgroup_root(), m.fs.root() / "partitions.ledger");
    auto out = runner.run(
        1, {m.request(Action::Offline, set({4, 6, 7}), Mode::Atomic, StrategyKind::PerCpu)});
    ASSERT_EQ(out.results[0].outcome, Outcome::Ok);
    const auto& phases = out.report.phases;
    // begin, three CPUs, end.
    EXPECT_GE(phase(phases, "journal"), 5 * SlowJournal::kRecord);
    // Counted in "write" too, the 15 ms of the three CPU records would push the phases
    // past the batch's duration.
    EXPECT_LE(sum(phases), out.report.duration);
}

TEST(BatchRunnerPhases, ARollbackIsAPhaseOfItsOwn) {
    FakeMachine m;
    m.writer.fail_cpu(5, EBUSY);
    auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 7))});
    ASSERT_EQ(out.results[0].outcome, Outcome::Failed);
    EXPECT_EQ(names(out.report.phases), kOfflinePhases);
    EXPECT_LE(sum(out.report.phases), out.report.duration);
}

// The machine is read before a batch and once after its writes. A rollback writes after
// that read, so only then is it read again for the state the batch leaves.
TEST(BatchRunnerPhases, ReadsTheMachineAgainOnlyAfterARollbackWrote) {
    for (const bool fail : {false, true}) {
        FakeMachine m;
        if (fail) {
            m.writer.fail_cpu(5, EBUSY);
        }
        int reads = 0;
        BatchRunner runner(
            m.paths, m.writer, m.journal,
            [&] {
                ++reads;
                return m.state();
            },
            m.settings, m.proc.root(), m.cgroup_root(), m.fs.root() / "partitions.ledger");
        auto out = runner.run(1, {m.request(Action::Offline, CpuSet::range(4, 7), Mode::Atomic,
                                            StrategyKind::PerCpu)});
        ASSERT_EQ(out.results[0].outcome, fail ? Outcome::Failed : Outcome::Ok);
        EXPECT_EQ(reads, fail ? 3 : 2) << (fail ? "rolled back" : "no rollback");
        // Offline order 7, 6, 5, 4: with CPU 5 failing, 7 and 6 went down and came back.
        // What the batch reports as left is what the kernel has.
        EXPECT_EQ(result_for(out.results[0], 7).outcome,
                  fail ? CpuOutcome::RolledBack : CpuOutcome::Changed);
        EXPECT_EQ(m.state().online & CpuSet::range(4, 7), fail ? CpuSet::range(4, 7) : CpuSet());
    }
}

// CPU 5 offline, one request of `action` for it: the phases the batch goes through.
struct CpuFiveOfflineCase {
    const char* name;
    Action action;
    std::vector<std::string> phases;
};

class BatchRunnerPhasesOfCpuFiveOffline : public ::testing::TestWithParam<CpuFiveOfflineCase> {};

TEST_P(BatchRunnerPhasesOfCpuFiveOffline, AreTheseWithinTheDuration) {
    FakeMachine m;
    m.fs.set_online(5, false);
    auto out = m.runner->run(1, {m.request(GetParam().action, set({5}))});
    ASSERT_EQ(out.results[0].outcome, Outcome::Ok);
    EXPECT_EQ(names(out.report.phases), GetParam().phases);
    EXPECT_LE(sum(out.report.phases), out.report.duration);
}

INSTANTIATE_TEST_SUITE_P(BatchRunnerPhases, BatchRunnerPhasesOfCpuFiveOffline,
                         ::testing::Values(
                             // An online batch has no pinned scan.
                             CpuFiveOfflineCase{"OnlineHasNoPinnedScan",
                                                Action::Online,
                                                {"read", "admit", "plan", "journal", "expedite",
                                                 "write", "reread", "rollback"}},
                             // Nothing to change: nothing written, and no phase says otherwise.
                             CpuFiveOfflineCase{"OfflineHasNothingToChangeAndWritesNothing",
                                                Action::Offline,
                                                {"read", "pinned", "partitions", "admit", "plan"}}),
                         [](const ::testing::TestParamInfo<CpuFiveOfflineCase>& p) {
                             return p.param.name;
                         });

TEST(BatchRunnerPhases, RefusedRequestsAndDryRunsHaveNone) {
    FakeMachine m;
    auto out = m.runner->run(1, {m.request(Action::Offline, set({0}))});  // protected
    ASSERT_TRUE(out.results[0].refusal.has_value());
    EXPECT_TRUE(out.results[0].phases.empty());
    EXPECT_FALSE(out.report.phases.empty());  // the batch itself still read and planned
    const auto dry = m.runner->dry_run(m.request(Action::Offline, set({4})), m.state());
    EXPECT_TRUE(dry.phases.empty());
}

}  // namespace
}  // namespace cpuhpd::test
