// Cancelling a batch (Cancel, SIGTERM): it stops before its next write, atomic requests
// roll back what they changed, best-effort ones keep it, and the CPUs never written are
// reported Cancelled. The cancel is polled before each write: a check that turns true on
// its n-th call stops the batch after n-1 writes.
#include <gtest/gtest.h>

#include <cerrno>

#include "batch_runner.h"
#include "engine_fixture.h"

namespace cpuhpd::test {
namespace {

// True from the (writes + 1)-th check on: the batch writes `writes` CPUs, then stops.
CancelCheck cancel_after(std::size_t writes) {
    auto checks = std::make_shared<std::size_t>(0);
    return [checks, writes] { return ++*checks > writes; };
}

std::vector<std::string> cpu_online_writes(const FakeKernelWriter& writer) {
    std::vector<std::string> out;
    for (const auto& w : writer.log()) {
        if (w.file.ends_with("/online") && w.file.find("/cpu/cpu") != std::string::npos) {
            out.push_back(w.file.substr(w.file.find("cpu/") + 4) + "=" + w.value);
        }
    }
    return out;
}

FakeTopology bulk_topology() {
    FakeTopology t;
    t.bulk = true;
    return t;
}

// Offline order for 4-9 is 9, 8, 7, 6, 5, 4: cancelled after 9 and 8.
TEST(Cancel, AnAtomicRequestStopsAfterTheCpuInFlightAndRollsBack) {
    FakeMachine m;
    auto out =
        m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 9))}, {}, cancel_after(2));
    const RequestResult& r = out.results[0];
    EXPECT_EQ(r.outcome, Outcome::Failed);
    EXPECT_EQ(cpu_online_writes(m.writer),
              (std::vector<std::string>{"cpu9/online=0", "cpu8/online=0",     // forward
                                        "cpu8/online=1", "cpu9/online=1"}));  // rollback
    for (unsigned c : {8u, 9u}) {
        EXPECT_EQ(result_for(r, c).outcome, CpuOutcome::RolledBack) << c;
        EXPECT_EQ(result_for(r, c).message, "rolled back: batch 1 was cancelled") << c;
    }
    for (unsigned c = 4; c <= 7; ++c) {
        EXPECT_EQ(result_for(r, c).outcome, CpuOutcome::Cancelled) << c;
        EXPECT_EQ(result_for(r, c).error, 0) << c;
        EXPECT_EQ(result_for(r, c).message, "not offline: batch 1 was cancelled before this CPU")
            << c;
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
    EXPECT_EQ(m.fs.read("kernel/rcu_expedited"), "0");
    EXPECT_EQ(out.report.cancelled, CpuSet::range(4, 7));
    EXPECT_TRUE(out.report.changed.empty());
    EXPECT_TRUE(out.report.failed.empty());
}

TEST(Cancel, ABestEffortRequestKeepsWhatIsDone) {
    FakeMachine m;
    auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 9), Mode::BestEffort)},
                             {}, cancel_after(3));
    const RequestResult& r = out.results[0];
    EXPECT_EQ(r.outcome, Outcome::Partial);
    for (unsigned c : {7u, 8u, 9u}) {
        EXPECT_EQ(result_for(r, c).outcome, CpuOutcome::Changed) << c;
    }
    for (unsigned c : {4u, 5u, 6u}) {
        EXPECT_EQ(result_for(r, c).outcome, CpuOutcome::Cancelled) << c;
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - CpuSet::range(7, 9));
    EXPECT_EQ(out.report.changed, CpuSet::range(7, 9));
    EXPECT_EQ(out.report.cancelled, CpuSet::range(4, 6));
}

// Two callers in one batch, each with its own result.
TEST(Cancel, EachRequestOfTheBatchGetsItsOwnResult) {
    FakeMachine m;
    auto out = m.runner->run(1,
                             {m.request(Action::Offline, set({5, 8})),
                              m.request(Action::Offline, set({4, 9}), Mode::BestEffort)},
                             {}, cancel_after(2));  // order 9, 8, 5, 4: 9 and 8 written
    EXPECT_EQ(out.results[0].outcome, Outcome::Failed);
    EXPECT_EQ(result_for(out.results[0], 8).outcome, CpuOutcome::RolledBack);
    EXPECT_EQ(result_for(out.results[0], 5).outcome, CpuOutcome::Cancelled);
    EXPECT_EQ(out.results[1].outcome, Outcome::Partial);
    EXPECT_EQ(result_for(out.results[1], 9).outcome, CpuOutcome::Changed);
    EXPECT_EQ(result_for(out.results[1], 4).outcome, CpuOutcome::Cancelled);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({9}));
    EXPECT_EQ(out.report.cancelled, set({4, 5}));
}

TEST(Cancel, BeforeTheFirstWriteNothingIsWritten) {
    FakeMachine m;
    auto out =
        m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 7))}, {}, cancel_after(0));
    EXPECT_TRUE(cpu_online_writes(m.writer).empty());
    EXPECT_EQ(out.results[0].outcome, Outcome::Failed);
    for (const auto& c : out.results[0].cpus) {
        EXPECT_EQ(c.outcome, CpuOutcome::Cancelled) << c.cpu;
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
    EXPECT_EQ(m.fs.read("kernel/rcu_expedited"), "0");
}

TEST(Cancel, AfterTheLastWriteItChangesNothing) {
    FakeMachine m;
    auto out =
        m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 7))}, {}, cancel_after(4));
    EXPECT_EQ(out.results[0].outcome, Outcome::Ok);
    EXPECT_TRUE(out.report.cancelled.empty());
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - CpuSet::range(4, 7));
}

// A bulk write is one step: cancelled before it, nothing is written; once made, it stands.
TEST(Cancel, ABulkBatchIsCancelledOnlyBeforeItsWrite) {
    {
        FakeMachine m(bulk_topology());
        auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 11))}, {},
                                 cancel_after(0));
        EXPECT_TRUE(m.writer.writes_to("devices/system/cpu/offline").empty());
        EXPECT_EQ(out.report.cancelled, CpuSet::range(4, 11));
        EXPECT_EQ(out.results[0].cpus[0].outcome, CpuOutcome::Cancelled);
        EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
    }
    {
        FakeMachine m(bulk_topology());
        auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 11))}, {},
                                 cancel_after(1));
        EXPECT_EQ(out.results[0].outcome, Outcome::Ok);
        EXPECT_TRUE(out.report.cancelled.empty());
        EXPECT_EQ(m.fs.online(), CpuSet::range(0, 3) | CpuSet::range(12, 15));
    }
}

// The bulk write stops at 12; the best-effort retry, CPU by CPU, is cancelled after 12 and 13.
TEST(Cancel, StopsTheBestEffortRetryOfAFailedBulkWrite) {
    FakeMachine m(bulk_topology());
    m.writer.fail_cpu(12, EAGAIN, 1);
    auto out =
        m.runner->run(1, {m.request(Action::Offline, CpuSet::range(8, 15), Mode::BestEffort)}, {},
                      cancel_after(3));  // the bulk write, then 12 and 13 of the retry
    const RequestResult& r = out.results[0];
    EXPECT_EQ(r.outcome, Outcome::Partial);
    for (unsigned c = 8; c <= 13; ++c) {
        EXPECT_EQ(result_for(r, c).outcome, CpuOutcome::Changed) << c;
    }
    for (unsigned c : {14u, 15u}) {
        EXPECT_EQ(result_for(r, c).outcome, CpuOutcome::Cancelled) << c;
        EXPECT_NE(result_for(r, c).message.find("after the bulk write failed: EAGAIN"),
                  std::string::npos)
            << result_for(r, c).message;
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 7) | set({14, 15}));
}

// The rollback is what a cancel asks for: a cancel that is still set does not stop it.
TEST(Cancel, NeverStopsTheRollback) {
    FakeMachine m;
    m.writer.fail_cpu(5, EBUSY);
    auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(4, 9))}, {},
                             cancel_after(5));  // 9, 8, 7, 6 written, 5 fails, then cancelled
    EXPECT_EQ(out.results[0].outcome, Outcome::Failed);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
    EXPECT_EQ(result_for(out.results[0], 5).outcome, CpuOutcome::Failed);
    EXPECT_EQ(result_for(out.results[0], 9).message, "rolled back: CPU 5 of this request failed");
}

}  // namespace
}  // namespace cpuhpd::test
