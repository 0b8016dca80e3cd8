#include "batch_runner.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "engine_fixture.h"

namespace cpuhpd::test {
namespace {

CpuOutcome outcome_of(const RequestResult& r, unsigned cpu) {
    for (const auto& c : r.cpus) {
        if (c.cpu == cpu) {
            return c.outcome;
        }
    }
    ADD_FAILURE() << "no result for CPU " << cpu;
    return CpuOutcome::Unchanged;
}

TEST(BatchRunner, PerCpuOfflineChangesExactlyTheRequestedCpus) {
    FakeMachine m;
    auto out = m.runner->run(1, {m.request(Action::Offline, set({4, 6, 7}))});
    ASSERT_EQ(out.results.size(), 1u);
    const auto& r = out.results[0];
    EXPECT_EQ(r.outcome, Outcome::Ok);
    EXPECT_EQ(r.strategy, StrategyKind::PerCpu);
    EXPECT_EQ(r.order, (std::vector<unsigned>{7, 6, 4}));
    for (unsigned c : {4u, 6u, 7u}) {
        EXPECT_EQ(outcome_of(r, c), CpuOutcome::Changed);
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({4, 6, 7}));
    EXPECT_EQ(m.fs.read("devices/system/cpu/cpu6/online"), "0");
    EXPECT_EQ(out.report.changed, set({4, 6, 7}));
    EXPECT_TRUE(out.report.failed.empty());
}

TEST(BatchRunner, AlreadyOfflineCpusAreUnchanged) {
    FakeMachine m;
    m.fs.set_online(5, false);
    auto r = m.runner->run(1, {m.request(Action::Offline, set({4, 5}))}).results[0];
    EXPECT_EQ(outcome_of(r, 5), CpuOutcome::Unchanged);
    EXPECT_EQ(outcome_of(r, 4), CpuOutcome::Changed);
    EXPECT_EQ(m.writer.writes_to("devices/system/cpu/cpu5/online").size(), 0u);
}

TEST(BatchRunner, PerCpuBatchRunsInsideOneExpediteWindow) {
    FakeMachine m;
    m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 7))});
    EXPECT_EQ(m.writer.writes_to("kernel/rcu_expedited"), (std::vector<std::string>{"1", "0"}));
    EXPECT_EQ(m.writer.expedited_during_cpu_writes(), (std::vector<std::string>(4, "1")));
    EXPECT_EQ(m.fs.read("kernel/rcu_expedited"), "0");
}

TEST(BatchRunner, ExpediteLeavesAnAlreadyExpeditedKernelAlone) {
    FakeMachine m;
    m.fs.write("kernel/rcu_expedited", "1");
    m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 7))});
    EXPECT_TRUE(m.writer.writes_to("kernel/rcu_expedited").empty());
    EXPECT_EQ(m.fs.read("kernel/rcu_expedited"), "1");
}

class MidBatchFailure : public ::testing::TestWithParam<int> {};

// Offline order for 4-7 is 7, 6, 5, 4: CPU 5 fails after 7 and 6 went down.
TEST_P(MidBatchFailure, AtomicRollsBackEveryCpuItChanged) {
    FakeMachine m;
    m.writer.fail_cpu(5, GetParam());
    auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 7))});
    const auto& r = out.results[0];
    EXPECT_EQ(r.outcome, Outcome::Failed);
    EXPECT_EQ(outcome_of(r, 7), CpuOutcome::RolledBack);
    EXPECT_EQ(outcome_of(r, 6), CpuOutcome::RolledBack);
    EXPECT_EQ(outcome_of(r, 5), CpuOutcome::Failed);
    EXPECT_EQ(outcome_of(r, 4), CpuOutcome::Refused);  // never attempted
    EXPECT_EQ(r.cpus[1].error, GetParam());            // CPU 5
    EXPECT_EQ(r.cpus[1].message, errno_text(GetParam()));
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
    EXPECT_TRUE(m.writer.writes_to("devices/system/cpu/cpu4/online").empty());
    EXPECT_EQ(m.fs.read("kernel/rcu_expedited"), "0");
    EXPECT_EQ(out.report.failed, set({5}));
    EXPECT_TRUE(out.report.changed.empty());
}

TEST_P(MidBatchFailure, BestEffortGoesOnAndReportsEachCpu) {
    FakeMachine m;
    m.writer.fail_cpu(5, GetParam());
    auto r = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 7), Mode::BestEffort)})
                 .results[0];
    EXPECT_EQ(r.outcome, Outcome::Partial);
    EXPECT_EQ(outcome_of(r, 5), CpuOutcome::Failed);
    for (unsigned c : {4u, 6u, 7u}) {
        EXPECT_EQ(outcome_of(r, c), CpuOutcome::Changed);
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({4, 6, 7}));
    EXPECT_EQ(m.fs.read("kernel/rcu_expedited"), "0");
}

INSTANTIATE_TEST_SUITE_P(Errnos, MidBatchFailure, ::testing::Values(EBUSY, EPERM, ENOSPC));

TEST(BatchRunner, ExpediteIsRestoredWhenEveryCpuFails) {
    FakeMachine m;
    m.fs.write("kernel/rcu_expedited", "0");
    m.writer.fail_cpu(7, EBUSY);
    m.writer.fail_cpu(6, EBUSY);
    auto r =
        m.runner->run(1, {m.request(Action::Offline, set({6, 7}), Mode::BestEffort)}).results[0];
    EXPECT_EQ(r.outcome, Outcome::Failed);
    EXPECT_EQ(m.fs.read("kernel/rcu_expedited"), "0");
    EXPECT_EQ(m.writer.writes_to("kernel/rcu_expedited"), (std::vector<std::string>{"1", "0"}));
}

TEST(BatchRunner, AFailingRequestDoesNotRollBackItsBatchNeighbours) {
    FakeMachine m;
    m.writer.fail_cpu(5, EBUSY);
    auto out = m.runner->run(
        1, {m.request(Action::Offline, set({4, 5})), m.request(Action::Offline, set({6, 7}))});
    EXPECT_EQ(out.results[0].outcome, Outcome::Failed);
    EXPECT_EQ(out.results[1].outcome, Outcome::Ok);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({6, 7}));
    // Each caller hears only about its own CPUs.
    ASSERT_EQ(out.results[1].cpus.size(), 2u);
    EXPECT_EQ(out.results[1].cpus[0].cpu, 6u);
}

TEST(BatchRunner, RequestThatBecameImpossibleIsRefusedAlone) {
    EngineSettings s;
    s.min_online = 10;
    FakeMachine m({}, s);
    auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(10, 15)),
                                 m.request(Action::Offline, CpuSet::range(6, 9))});
    EXPECT_EQ(out.results[0].outcome, Outcome::Ok);
    ASSERT_TRUE(out.results[1].refusal.has_value());
    EXPECT_EQ(out.results[1].refusal->kind(), RefusalKind::TooFewOnline);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 9));
}

TEST(BatchRunner, SmtStrategyWritesSmtControlOnce) {
    FakeMachine m;
    auto r = m.runner
                 ->run(1, {m.request(Action::Offline, CpuSet::range(8, 15), Mode::Atomic,
                                     StrategyKind::Smt)})
                 .results[0];
    EXPECT_EQ(r.strategy, StrategyKind::Smt);
    EXPECT_EQ(r.outcome, Outcome::Ok);
    EXPECT_EQ(m.writer.writes_to("devices/system/cpu/smt/control"),
              (std::vector<std::string>{"off"}));
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 7));
    auto back = m.runner
                    ->run(2, {m.request(Action::Online, CpuSet::range(8, 15), Mode::Atomic,
                                        StrategyKind::Smt)})
                    .results[0];
    EXPECT_EQ(back.strategy, StrategyKind::Smt);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
}

// Issue 9: the mask 8-15 equals every secondary thread; without a forced smt strategy it
// goes through the per-CPU files and smt/control stays on, so each sibling can come back
// on its own.
TEST(BatchRunner, NumericMaskOfEverySecondaryLeavesSmtControlAlone) {
    FakeMachine m;
    auto r = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(8, 15))}).results[0];
    EXPECT_EQ(r.strategy, StrategyKind::PerCpu);
    EXPECT_EQ(r.outcome, Outcome::Ok);
    EXPECT_TRUE(m.writer.writes_to("devices/system/cpu/smt/control").empty());
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 7));
    auto one = m.runner->run(2, {m.request(Action::Online, set({9}))}).results[0];
    EXPECT_EQ(one.outcome, Outcome::Ok);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 7) | set({9}));
}

FakeTopology bulk_topology() {
    FakeTopology t;
    t.bulk = true;
    return t;
}

TEST(BatchRunner, BulkStrategyWritesOneCpulist) {
    FakeMachine m(bulk_topology());
    auto r = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 11))}).results[0];
    EXPECT_EQ(r.strategy, StrategyKind::Bulk);
    EXPECT_EQ(r.outcome, Outcome::Ok);
    EXPECT_EQ(m.writer.writes_to("devices/system/cpu/offline"),
              (std::vector<std::string>{"4-11\n"}));
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 3) | CpuSet::range(12, 15));
}

// The fake kernel takes 8-15 down in ascending order and stops at 12.
TEST(BatchRunner, BulkFailureInAtomicModeRollsBackWhatTheKernelDid) {
    FakeMachine m(bulk_topology());
    m.writer.fail_cpu(12, EBUSY);
    auto r = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(8, 15))}).results[0];
    EXPECT_EQ(r.outcome, Outcome::Failed);
    for (unsigned c = 8; c <= 11; ++c) {
        EXPECT_EQ(outcome_of(r, c), CpuOutcome::RolledBack) << c;
    }
    for (unsigned c = 12; c <= 15; ++c) {
        EXPECT_EQ(outcome_of(r, c), CpuOutcome::Failed) << c;
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
}

TEST(BatchRunner, BulkFailureInBestEffortModeFinishesCpuByCpu) {
    FakeMachine m(bulk_topology());
    m.writer.fail_cpu(12, EBUSY, 2);  // fails in the bulk write and again on its own
    auto r = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(8, 15), Mode::BestEffort)})
                 .results[0];
    EXPECT_EQ(r.outcome, Outcome::Partial);
    EXPECT_EQ(outcome_of(r, 12), CpuOutcome::Failed);
    EXPECT_EQ(r.cpus[4].error, EBUSY);
    for (unsigned c : {8u, 9u, 10u, 11u, 13u, 14u, 15u}) {
        EXPECT_EQ(outcome_of(r, c), CpuOutcome::Changed) << c;
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 7) | set({12}));
}

// The kernel's failure is one-shot (like cpuN/hotplug/fail): the retry gets past it, and
// the CPUs the retry changed say so, with the errno of the bulk write.
TEST(BatchRunner, BulkFailureThatTheRetryGetsPastIsStillReported) {
    FakeMachine m(bulk_topology());
    m.writer.fail_cpu(12, EAGAIN, 1);
    auto r = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(8, 15), Mode::BestEffort)})
                 .results[0];
    EXPECT_EQ(r.outcome, Outcome::Ok);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 7));
    for (const auto& c : r.cpus) {
        EXPECT_EQ(c.outcome, CpuOutcome::Changed) << c.cpu;
        const bool retried = c.cpu >= 12;  // the kernel stopped at 12: 8-11 were done
        EXPECT_EQ(c.message.find("per-CPU retry after the bulk write failed: EAGAIN") !=
                      std::string::npos,
                  retried)
            << c.cpu << ": " << c.message;
    }
}

TEST(BatchRunner, DryRunTouchesNothing) {
    FakeMachine m;
    Request req = m.request(Action::Offline, set({4, 12}));
    req.dry_run = true;
    auto r = m.runner->dry_run(req, m.state());
    EXPECT_TRUE(r.dry_run);
    EXPECT_EQ(r.order, (std::vector<unsigned>{12, 4}));
    EXPECT_TRUE(m.writer.log().empty());
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
}

}  // namespace
}  // namespace cpuhpd::test
