#include "batch_phases.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <utility>

#include "engine_fixture.h"

namespace cpuhpd::test {
namespace {

using namespace std::chrono_literals;

// A fake machine with the BatchIo the writing phases take.
struct Phases {
    explicit Phases(FakeTopology topo = {}, EngineSettings settings = {}) : m(topo, settings) {}

    BatchState admit(std::vector<Request> requests) {
        return cpuhpd::admit(1, std::move(requests), m.state(), m.settings);
    }
    // execute, retry_best_effort and detect_failed_atomic, as the runner calls them.
    void run_forward(BatchState& state) {
        execute(state, io, {});
        retry_best_effort(state, io, {});
        detect_failed_atomic(state);
    }
    // The writes to CPU state so far, relative to devices/system/cpu/: "cpu7/online=0".
    std::vector<std::string> cpu_writes() const {
        const std::string prefix = "devices/system/cpu/";
        std::vector<std::string> out;
        for (const auto& w : m.writer.log()) {
            if (w.file.starts_with(prefix)) {
                out.push_back(w.file.substr(prefix.size()) + "=" + w.value);
            }
        }
        return out;
    }

    FakeMachine m;
    std::function<MachineState()> read{[this] { return m.state(); }};
    NullJournal journal;
    bool cancel_now = false;  // a test sets it to cancel the batch at its next check
    CancelCheck cancel_requested{[this] { return cancel_now; }};
    BatchIo io{m.paths, m.writer, read, journal, cancel_requested};
};

FakeTopology bulk_topology() {
    FakeTopology t;
    t.bulk = true;
    return t;
}

using Strings = std::vector<std::string>;

// --- admit ---

TEST(Admit, RefusesARequestThatBecameImpossibleAndPlansOnlyTheRest) {
    EngineSettings s;
    s.min_online = 10;
    Phases p({}, s);
    BatchState state = p.admit({p.m.request(Action::Offline, CpuSet::range(10, 15)),
                                p.m.request(Action::Offline, CpuSet::range(6, 9))});
    EXPECT_EQ(state.accepted, (std::vector<std::size_t>{0}));
    ASSERT_EQ(state.results.size(), 2u);
    const RequestResult& refused = state.results[1];
    ASSERT_TRUE(refused.refusal.has_value());
    EXPECT_EQ(refused.refusal->kind(), RefusalKind::TooFewOnline);
    EXPECT_EQ(refused.outcome, Outcome::Failed);
    ASSERT_EQ(refused.cpus.size(), 4u);
    for (const auto& c : refused.cpus) {
        EXPECT_EQ(c.outcome, CpuOutcome::Refused) << c.cpu;
        EXPECT_EQ(c.message, refused.refusal->what()) << c.cpu;
    }
    EXPECT_TRUE(state.results[0].cpus.empty());  // describe_cpus fills it
    EXPECT_EQ(state.results[0].batch_id, 1u);
    EXPECT_EQ(state.plan.requested, CpuSet::range(10, 15));
    EXPECT_EQ(state.plan.to_change, CpuSet::range(10, 15));
    EXPECT_TRUE(p.m.writer.log().empty());
}

TEST(Admit, TakesTheStrategyOfTheFirstAcceptedRequest) {
    Phases p;
    BatchState state = p.admit(
        {p.m.request(Action::Offline, set({0}), Mode::Atomic, StrategyKind::PerCpu),  // protected
         p.m.request(Action::Offline, CpuSet::range(8, 15), Mode::Atomic, StrategyKind::Smt)});
    EXPECT_EQ(state.accepted, (std::vector<std::size_t>{1}));
    EXPECT_EQ(state.results[0].refusal->kind(), RefusalKind::ProtectedCpu);
    EXPECT_EQ(state.plan.strategy, StrategyKind::Smt);
}

TEST(Admit, PlansOnlyTheCpusNotYetInTheTargetState) {
    Phases p;
    p.m.fs.set_online(5, false);
    BatchState state = p.admit({p.m.request(Action::Offline, set({4, 5}))});
    EXPECT_EQ(state.plan.requested, set({4, 5}));
    EXPECT_EQ(state.plan.to_change, set({4}));
    EXPECT_EQ(state.plan.order, (std::vector<unsigned>{4}));
    EXPECT_FALSE(state.before.online.contains(5));

    BatchState empty = p.admit({});
    EXPECT_EQ(empty.action, Action::Offline);
    EXPECT_TRUE(empty.plan.to_change.empty());
    EXPECT_TRUE(empty.results.empty());
}

// --- execute ---

TEST(Execute, WritesThePlanInOrderAndReadsTheStateAfter) {
    Phases p;
    BatchState state = p.admit({p.m.request(Action::Offline, CpuSet::range(4, 7))});
    std::vector<std::pair<std::size_t, std::size_t>> progress;
    execute(state, p.io,
            [&](std::size_t done, std::size_t total) { progress.emplace_back(done, total); });
    EXPECT_EQ(p.cpu_writes(),
              (Strings{"cpu7/online=0", "cpu6/online=0", "cpu5/online=0", "cpu4/online=0"}));
    EXPECT_TRUE(p.m.writer.writes_to("kernel/rcu_expedited").empty());  // the runner's window
    EXPECT_EQ(state.outcome.attempted, (std::map<unsigned, int>{{4, 0}, {5, 0}, {6, 0}, {7, 0}}));
    EXPECT_EQ(state.outcome.batch_error, 0);
    EXPECT_EQ(state.after.online, CpuSet::range(0, 15) - CpuSet::range(4, 7));
    EXPECT_TRUE(state.failed_atomic.empty());
    EXPECT_EQ(progress,
              (std::vector<std::pair<std::size_t, std::size_t>>{{1, 4}, {2, 4}, {3, 4}, {4, 4}}));
}

// Order 7, 6, 5, 4: CPU 7 fails, so the atomic request stops; CPU 5 is still written for
// the best-effort request that also names it.
TEST(Execute, SkipsTheCpusOfAFailedAtomicRequestUnlessABestEffortOneNamesThem) {
    Phases p;
    p.m.writer.fail_cpu(7, EBUSY);
    BatchState state = p.admit({p.m.request(Action::Offline, set({5, 6, 7})),
                                p.m.request(Action::Offline, set({4, 5}), Mode::BestEffort)});
    execute(state, p.io, {});
    EXPECT_EQ(p.cpu_writes(), (Strings{"cpu7/online=0", "cpu5/online=0", "cpu4/online=0"}));
    EXPECT_EQ(state.failed_atomic, (std::set<std::size_t>{0}));
    EXPECT_EQ(state.outcome.attempted, (std::map<unsigned, int>{{4, 0}, {5, 0}, {7, EBUSY}}));
    EXPECT_EQ(state.after.online, CpuSet::range(0, 15) - set({4, 5}));
}

// --- retry_best_effort ---

// The fake kernel takes 8-15 down in ascending order and stops at 10.
TEST(RetryBestEffort, WritesOnlyTheBestEffortCpusAFailedBulkWriteLeft) {
    Phases p(bulk_topology());
    p.m.writer.fail_cpu(10, EBUSY);
    BatchState state =
        p.admit({p.m.request(Action::Offline, CpuSet::range(8, 11)),
                 p.m.request(Action::Offline, CpuSet::range(12, 15), Mode::BestEffort)});
    execute(state, p.io, {});
    ASSERT_EQ(state.outcome.batch_error, EBUSY);
    EXPECT_TRUE(state.outcome.attempted.empty());
    retry_best_effort(state, p.io, {});
    EXPECT_EQ(p.cpu_writes(), (Strings{"offline=8-15\n", "cpu12/online=0", "cpu13/online=0",
                                       "cpu14/online=0", "cpu15/online=0"}));
    EXPECT_EQ(state.retried, CpuSet::range(12, 15));
    EXPECT_EQ(state.outcome.attempted,
              (std::map<unsigned, int>{{12, 0}, {13, 0}, {14, 0}, {15, 0}}));
    EXPECT_EQ(state.outcome.batch_error, EBUSY);  // kept for the messages
    EXPECT_EQ(state.after.online, CpuSet::range(0, 7) | set({10, 11}));
}

TEST(RetryBestEffort, DoesNothingAfterPerCpuFailures) {
    Phases p;
    p.m.writer.fail_cpu(5, EBUSY, 2);  // would fail again on a retry
    BatchState state =
        p.admit({p.m.request(Action::Offline, CpuSet::range(4, 7), Mode::BestEffort)});
    execute(state, p.io, {});
    const auto writes = p.m.writer.log().size();
    retry_best_effort(state, p.io, {});
    EXPECT_EQ(p.m.writer.log().size(), writes);
    EXPECT_TRUE(state.retried.empty());
    EXPECT_EQ(state.outcome.attempted.at(5), EBUSY);
}

TEST(RetryBestEffort, DoesNothingForAtomicRequests) {
    Phases p(bulk_topology());
    p.m.writer.fail_cpu(12, EBUSY);
    BatchState state = p.admit({p.m.request(Action::Offline, CpuSet::range(8, 15))});
    execute(state, p.io, {});
    ASSERT_EQ(state.outcome.batch_error, EBUSY);
    retry_best_effort(state, p.io, {});
    EXPECT_EQ(p.cpu_writes(), (Strings{"offline=8-15\n"}));
    EXPECT_TRUE(state.retried.empty());
    EXPECT_TRUE(state.outcome.attempted.empty());
}

// --- detect_failed_atomic ---

TEST(DetectFailedAtomic, MarksAtomicRequestsWithAPlannedCpuNotInTheTargetState) {
    Phases p;
    p.m.fs.set_online(4, false);
    BatchState state = p.admit({p.m.request(Action::Offline, set({8, 9})),
                                p.m.request(Action::Offline, set({10, 11})),
                                p.m.request(Action::Offline, set({12, 13}), Mode::BestEffort),
                                p.m.request(Action::Offline, set({4}))});
    state.after = state.before;
    // 11 and 13 stayed online; 4 (already offline, not planned) came back meanwhile.
    state.after.online = state.before.online - set({8, 9, 10, 12});
    state.after.online.add(4);
    detect_failed_atomic(state);
    EXPECT_EQ(state.failed_atomic, (std::set<std::size_t>{1}));
}

// A bulk write tells no per-CPU errno: execute marks nothing, the state after does.
TEST(DetectFailedAtomic, FindsWhatAFailedBulkWriteLeftSoItIsRolledBack) {
    Phases p(bulk_topology());
    p.m.writer.fail_cpu(12, EBUSY);
    BatchState state = p.admit({p.m.request(Action::Offline, CpuSet::range(8, 15))});
    execute(state, p.io, {});
    EXPECT_TRUE(state.failed_atomic.empty());
    detect_failed_atomic(state);
    EXPECT_EQ(state.failed_atomic, (std::set<std::size_t>{0}));
    EXPECT_EQ(cpus_to_restore(state), CpuSet::range(8, 11));
    roll_back_atomic(state, p.io, p.m.settings);
    EXPECT_EQ(state.rolled_back, CpuSet::range(8, 11));
    EXPECT_EQ(p.m.fs.online(), CpuSet::range(0, 15));
}

// --- roll_back_atomic ---

// Order 9, 8, 7, 6, 5, 4: CPU 4 fails after 5 went down.
TEST(RollBackAtomic, RestoresExactlyTheCpusOfTheFailedAtomicRequest) {
    Phases p;
    p.m.writer.fail_cpu(4, EBUSY);
    BatchState state = p.admit({p.m.request(Action::Offline, set({4, 5})),
                                p.m.request(Action::Offline, set({6, 7}), Mode::BestEffort),
                                p.m.request(Action::Offline, set({8, 9}))});
    p.run_forward(state);
    ASSERT_EQ(state.failed_atomic, (std::set<std::size_t>{0}));
    EXPECT_EQ(cpus_to_restore(state), set({5}));
    roll_back_atomic(state, p.io, p.m.settings);
    EXPECT_EQ(state.rolled_back, set({5}));
    EXPECT_TRUE(state.rollback_errors.empty());
    EXPECT_EQ(p.m.fs.online(), CpuSet::range(0, 15) - set({6, 7, 8, 9}));
    EXPECT_EQ(p.m.writer.writes_to("devices/system/cpu/cpu5/online"), (Strings{"0", "1"}));
    EXPECT_EQ(p.m.writer.writes_to("devices/system/cpu/cpu6/online"), (Strings{"0"}));
    EXPECT_EQ(p.m.writer.writes_to("devices/system/cpu/cpu8/online"), (Strings{"0"}));
}

// Order 6, 5, 4: CPU 4 fails the first request; CPU 5 stays offline for the second.
TEST(RollBackAtomic, KeepsACpuThatARequestWhichSucceededAlsoNamed) {
    Phases p;
    p.m.writer.fail_cpu(4, EBUSY);
    BatchState state = p.admit(
        {p.m.request(Action::Offline, set({4, 5})), p.m.request(Action::Offline, set({5, 6}))});
    p.run_forward(state);
    ASSERT_EQ(state.failed_atomic, (std::set<std::size_t>{0}));
    const auto writes = p.m.writer.log().size();
    EXPECT_TRUE(cpus_to_restore(state).empty());
    roll_back_atomic(state, p.io, p.m.settings);
    EXPECT_EQ(p.m.writer.log().size(), writes);
    EXPECT_TRUE(state.rolled_back.empty());
    EXPECT_EQ(p.m.fs.online(), CpuSet::range(0, 15) - set({5, 6}));
}

// Order 6, 5, 4: CPU 4 fails; restoring goes 5, 6 and CPU 5 refuses to come back.
TEST(RollBackAtomic, RecordsTheErrnoOfARestoreThatFails) {
    Phases p;
    p.m.writer.fail_cpu(4, EBUSY);
    BatchState state = p.admit({p.m.request(Action::Offline, CpuSet::range(4, 6))});
    p.run_forward(state);
    p.m.writer.fail_cpu(5, EPERM);
    roll_back_atomic(state, p.io, p.m.settings);
    EXPECT_EQ(state.rolled_back, set({6}));
    EXPECT_EQ(state.rollback_errors, (std::map<unsigned, int>{{5, EPERM}}));
    EXPECT_EQ(p.cpu_writes(), (Strings{"cpu6/online=0", "cpu5/online=0", "cpu4/online=0",
                                       "cpu5/online=1", "cpu6/online=1"}));
    EXPECT_EQ(p.m.fs.online(), CpuSet::range(0, 15) - set({5}));
}

// --- describe_cpus (on hand-made states: it touches nothing) ---

TEST(DescribeCpus, TellsTheRolledBackAndNotAttemptedCpusWhichCpuFailed) {
    Phases p;
    BatchState state = p.admit({p.m.request(Action::Offline, CpuSet::range(4, 7))});
    state.outcome.attempted = {{7, 0}, {6, 0}, {5, EBUSY}};
    state.rolled_back = set({6, 7});
    state.final_state = state.before;
    state.duration = 42us;
    describe_cpus(state);
    const RequestResult& r = state.results[0];
    EXPECT_EQ(r.order, (std::vector<unsigned>{7, 6, 5, 4}));
    EXPECT_EQ(r.strategy, StrategyKind::PerCpu);
    EXPECT_EQ(r.duration, 42us);
    EXPECT_EQ(r.outcome, Outcome::Failed);
    EXPECT_EQ(r.cpus,
              (std::vector<CpuResult>{
                  {4, CpuOutcome::Refused, 0, "not attempted: CPU 5 of this request failed first"},
                  {5, CpuOutcome::Failed, EBUSY, errno_text(EBUSY)},
                  {6, CpuOutcome::RolledBack, 0, "rolled back: CPU 5 of this request failed"},
                  {7, CpuOutcome::RolledBack, 0, "rolled back: CPU 5 of this request failed"}}));
}

// Each request names its own first failure, counting only its own CPUs.
TEST(DescribeCpus, TheFirstFailureIsThatOfTheRequest) {
    Phases p;
    BatchState state = p.admit(
        {p.m.request(Action::Offline, set({4, 7})), p.m.request(Action::Offline, set({5, 6}))});
    state.outcome.attempted = {{7, EBUSY}, {6, 0}, {5, EPERM}};
    state.rolled_back = set({6});
    state.final_state = state.before;
    describe_cpus(state);
    EXPECT_EQ(result_for(state.results[0], 4).message,
              "not attempted: CPU 7 of this request failed first");
    EXPECT_EQ(result_for(state.results[1], 6).message, "rolled back: CPU 5 of this request failed");
}

TEST(DescribeCpus, TellsAlreadyInTargetChangedAndAFailedRollback) {
    Phases p;
    p.m.fs.set_online(3, false);
    BatchState state = p.admit({p.m.request(Action::Offline, set({3, 4, 5, 6}), Mode::BestEffort)});
    state.outcome.attempted = {{6, 0}, {5, 0}, {4, EBUSY}};
    state.rollback_errors = {{5, EPERM}};
    state.final_state = state.before;
    state.final_state.online = state.before.online - set({5, 6});
    describe_cpus(state);
    const RequestResult& r = state.results[0];
    EXPECT_EQ(result_for(r, 3), (CpuResult{3, CpuOutcome::Unchanged, 0, "already offline"}));
    EXPECT_EQ(result_for(r, 4), (CpuResult{4, CpuOutcome::Failed, EBUSY, errno_text(EBUSY)}));
    EXPECT_EQ(result_for(r, 5),
              (CpuResult{5, CpuOutcome::Changed, EPERM,
                         "left offline: rollback failed: EPERM (" + errno_text(EPERM) + ")"}));
    EXPECT_EQ(result_for(r, 6), (CpuResult{6, CpuOutcome::Changed, 0, "offline"}));
    EXPECT_EQ(r.outcome, Outcome::Partial);
}

// The bulk write stopped at 12 with EAGAIN; the retry got 12 down, 13 failed on its own,
// 14 and 15 were never tried again.
TEST(DescribeCpus, TellsTheRetryAndTheFailedOneShotWrite) {
    Phases p(bulk_topology());
    BatchState state =
        p.admit({p.m.request(Action::Offline, CpuSet::range(8, 13), Mode::BestEffort),
                 p.m.request(Action::Offline, set({14, 15}))});
    ASSERT_EQ(state.plan.strategy, StrategyKind::Bulk);
    state.outcome.batch_error = EAGAIN;
    state.outcome.attempted = {{12, 0}, {13, EBUSY}};
    state.retried = set({12, 13});
    state.final_state = state.before;
    state.final_state.online = state.before.online - CpuSet::range(8, 12);
    describe_cpus(state);
    const RequestResult& r = state.results[0];
    for (unsigned cpu : {8u, 9u, 10u, 11u}) {
        EXPECT_EQ(result_for(r, cpu), (CpuResult{cpu, CpuOutcome::Changed, 0, "offline"}));
    }
    EXPECT_EQ(result_for(r, 12),
              (CpuResult{12, CpuOutcome::Changed, 0,
                         "offline on a per-CPU retry after the bulk write failed: EAGAIN (" +
                             errno_text(EAGAIN) + ")"}));
    EXPECT_EQ(result_for(r, 13), (CpuResult{13, CpuOutcome::Failed, EBUSY, errno_text(EBUSY)}));
    EXPECT_EQ(r.outcome, Outcome::Partial);
    for (unsigned cpu : {14u, 15u}) {
        EXPECT_EQ(result_for(state.results[1], cpu),
                  (CpuResult{cpu, CpuOutcome::Failed, EAGAIN,
                             "bulk write failed: " + errno_text(EAGAIN) + "; CPU not changed"}));
    }
}

TEST(DescribeCpus, AWriteTheKernelAcceptedButDidNotCarryOutIsEio) {
    Phases p;
    BatchState state = p.admit({p.m.request(Action::Offline, set({4}))});
    state.outcome.attempted = {{4, 0}};
    state.final_state = state.before;  // CPU 4 still online
    describe_cpus(state);
    EXPECT_EQ(
        state.results[0].cpus,
        (std::vector<CpuResult>{{4, CpuOutcome::Failed, EIO,
                                 "the kernel accepted the write but the CPU is still online"}}));
}

// --- report ---

TEST(Report, ChangedComesFromTheFinalStateAndFailedFromTheAcceptedResults) {
    Phases p;
    BatchState state = p.admit({p.m.request(Action::Offline, set({4, 5, 6}), Mode::BestEffort),
                                p.m.request(Action::Offline, set({0}))});  // protected: refused
    state.outcome.attempted = {{6, EBUSY}, {5, 0}, {4, 0}};
    state.final_state = state.before;
    state.final_state.online = state.before.online - set({4, 5});
    state.expedited = true;
    state.duration = 1234us;
    describe_cpus(state);
    const BatchReport report = cpuhpd::report(state);
    EXPECT_EQ(report.batch_id, 1u);
    EXPECT_EQ(report.action, Action::Offline);
    EXPECT_EQ(report.strategy, StrategyKind::PerCpu);
    EXPECT_EQ(report.changed, set({4, 5}));
    EXPECT_EQ(report.failed, set({6}));
    EXPECT_EQ(report.requests, 2u);
    EXPECT_EQ(report.duration, 1234us);
    EXPECT_TRUE(report.expedited);
}

// --- the phases in the runner's order give what the runner gives ---

TEST(Phases, InTheDocumentedOrderTheyGiveWhatBatchRunnerGives) {
    auto requests = [](FakeMachine& m) {
        return std::vector<Request>{
            m.request(Action::Offline, CpuSet::range(8, 11)),
            m.request(Action::Offline, CpuSet::range(12, 15), Mode::BestEffort),
            m.request(Action::Offline, set({0}))};
    };
    Phases p(bulk_topology());
    p.m.writer.fail_cpu(10, EBUSY);
    FakeMachine runner(bulk_topology());
    runner.writer.fail_cpu(10, EBUSY);
    const BatchOutput expected = runner.runner->run(1, requests(runner));

    BatchState state = p.admit(requests(p.m));
    {
        ExpediteWindow window(p.m.paths, p.m.writer, state.plan.expedite);
        state.expedited = window.active();
        p.run_forward(state);
        roll_back_atomic(state, p.io, p.m.settings);
    }
    state.final_state = p.m.state();
    describe_cpus(state);
    const BatchReport report = cpuhpd::report(state);

    ASSERT_EQ(state.results.size(), expected.results.size());
    for (std::size_t i = 0; i < expected.results.size(); ++i) {
        EXPECT_EQ(state.results[i].cpus, expected.results[i].cpus) << i;
        EXPECT_EQ(state.results[i].order, expected.results[i].order) << i;
        EXPECT_EQ(state.results[i].outcome, expected.results[i].outcome) << i;
    }
    EXPECT_EQ(report.changed, expected.report.changed);
    EXPECT_EQ(report.failed, expected.report.failed);
    EXPECT_EQ(report.expedited, expected.report.expedited);
    EXPECT_EQ(p.m.fs.online(), runner.fs.online());
    ASSERT_EQ(p.m.writer.log().size(), runner.writer.log().size());
    for (std::size_t i = 0; i < runner.writer.log().size(); ++i) {
        EXPECT_EQ(p.m.writer.log()[i].file, runner.writer.log()[i].file) << i;
        EXPECT_EQ(p.m.writer.log()[i].value, runner.writer.log()[i].value) << i;
    }
}

}  // namespace
}  // namespace cpuhpd::test
