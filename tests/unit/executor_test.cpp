#include "executor.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "engine_fixture.h"
#include "input.h"

namespace cpuhpd::test {
namespace {

using namespace std::chrono_literals;

// Collects completions and lets a test wait for a number of them, with a deadline.
class Results {
public:
    Executor::Completion slot() {
        return [this](RequestResult r) {
            std::lock_guard lock(mutex_);
            results_.push_back(std::move(r));
            cv_.notify_all();
        };
    }
    std::vector<RequestResult> wait_for(std::size_t n) {
        std::unique_lock lock(mutex_);
        EXPECT_TRUE(cv_.wait_for(lock, 10s, [&] { return results_.size() >= n; }))
            << "only " << results_.size() << " of " << n << " requests completed";
        return results_;
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<RequestResult> results_;
};

// Blocks the first per-CPU write until released, so a test can queue requests while a
// batch is known to be running.
class GateWriter final : public AttributeWriter {
public:
    explicit GateWriter(AttributeWriter& inner) : inner_(inner) {}
    int write(const std::filesystem::path& file, const std::string& value) override {
        if (file.filename() == "online" && !gated_) {
            gated_ = true;
            entered_.set_value();
            release_.get_future().wait();
        }
        return inner_.write(file, value);
    }
    std::promise<void> entered_;
    std::promise<void> release_;

private:
    AttributeWriter& inner_;
    bool gated_ = false;
};

// An executor over a runner whose first write waits at a GateWriter.
struct GatedExecutor {
    explicit GatedExecutor(FakeMachine& m, const HoldTable* holds = nullptr)
        : gate(m.writer),
          runner(
              m.paths, gate, m.journal, [&m] { return m.state(); }, m.settings),
          ex(runner, m.settings, {}, holds) {}
    GateWriter gate;
    BatchRunner runner;
    Executor ex;
};

// A machine without a coalescing window, an executor over it whose first write waits at
// its gate, and the results of what is submitted.
struct GatedMachine {
    explicit GatedMachine(std::size_t max_queued = EngineSettings{}.max_queued_requests,
                          const HoldTable* holds = nullptr)
        : m({}, settings(max_queued)), g(m, holds) {}
    static EngineSettings settings(std::size_t max_queued) {
        EngineSettings s;
        s.coalesce = 0ms;
        s.max_queued_requests = max_queued;
        return s;
    }
    FakeMachine m;
    GatedExecutor g;
    Results results;
};

// A machine whose batches wait out a coalescing window of `window` (its settings), and the
// results of what is submitted. The executor is the test's own: some give it observers or a
// scope.
struct WindowedMachine {
    explicit WindowedMachine(std::chrono::milliseconds window) : m({}, settings(window)) {}
    static EngineSettings settings(std::chrono::milliseconds window) {
        EngineSettings s;
        s.coalesce = window;
        return s;
    }
    FakeMachine m;
    Results results;
};

TEST(Executor, CoalescesConcurrentCallersIntoOneBatch) {
    WindowedMachine w(300ms);
    // Not a structured binding: the callers' lambdas capture these (clang 14 refuses that).
    FakeMachine& m = w.m;
    Results& results = w.results;
    const EngineSettings& s = m.settings;
    {
        Executor ex(*m.runner, s);
        std::vector<std::thread> callers;
        for (unsigned c = 1; c <= 8; ++c) {
            callers.emplace_back([&, c] {
                ex.submit(m.request(Action::Offline, set({c})), m.state(), results.slot());
            });
        }
        for (auto& t : callers) {
            t.join();
        }
        auto done = results.wait_for(8);
        std::set<std::uint64_t> batches;
        for (const auto& r : done) {
            batches.insert(r.batch_id);
            EXPECT_EQ(r.outcome, Outcome::Ok);
            ASSERT_EQ(r.cpus.size(), 1u);  // only the caller's own CPU
            EXPECT_EQ(r.cpus[0].outcome, CpuOutcome::Changed);
        }
        EXPECT_LT(batches.size(), 8u);
    }
    EXPECT_EQ(m.fs.online(), set({0}) | CpuSet::range(9, 15));
}

TEST(Executor, RequestsArrivingDuringABatchJoinTheNextOne) {
    GatedMachine t;
    FakeMachine& m = t.m;
    Results& results = t.results;
    auto& [gate, runner, ex] = t.g;
    ex.submit(m.request(Action::Offline, set({4})), m.state(), results.slot());
    gate.entered_.get_future().wait();  // the first batch is writing now
    for (unsigned c : {5u, 6u, 7u}) {
        ex.submit(m.request(Action::Offline, set({c})), m.state(), results.slot());
    }
    gate.release_.set_value();
    auto done = results.wait_for(4);
    EXPECT_EQ(done[0].cpus[0].cpu, 4u);
    EXPECT_EQ(done[1].batch_id, done[2].batch_id);
    EXPECT_EQ(done[2].batch_id, done[3].batch_id);
    EXPECT_NE(done[0].batch_id, done[1].batch_id);
}

TEST(Executor, OppositeActionsKeepArrivalOrderInSeparateBatches) {
    WindowedMachine w(300ms);
    auto& [m, results] = w;
    const EngineSettings& s = m.settings;
    m.fs.set_online(5, false);
    Executor ex(*m.runner, s);
    ex.submit(m.request(Action::Offline, set({4})), m.state(), results.slot());
    ex.submit(m.request(Action::Online, set({5})), m.state(), results.slot());
    ex.submit(m.request(Action::Offline, set({6})), m.state(), results.slot());
    auto done = results.wait_for(3);
    ASSERT_EQ(done.size(), 3u);
    EXPECT_EQ(done[0].action, Action::Offline);
    EXPECT_EQ(done[1].action, Action::Online);
    EXPECT_EQ(done[2].action, Action::Offline);
    EXPECT_LT(done[0].batch_id, done[1].batch_id);
    EXPECT_LT(done[1].batch_id, done[2].batch_id);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({4, 6}));
}

// A request whose CPUs are all there already, with nothing queued or running, is answered
// inside submit(): no batch, no write, no wait for the coalescing window (the no-op round
// trip paid the whole window, 20 ms by default).
TEST(Executor, ANoOpOnAnIdleExecutorIsAnsweredAtOnceWithoutABatch) {
    WindowedMachine w(10s);  // a batch would make the test time out
    auto& [m, results] = w;
    const EngineSettings& s = m.settings;
    m.fs.set_online(4, false);
    Executor::Observers observers;
    int batches = 0;
    observers.batch_finished = [&](const BatchReport&) { ++batches; };
    Executor ex(*m.runner, s, observers);
    ex.submit(m.request(Action::Offline, set({4})), m.state(), results.slot());
    const auto done = results.wait_for(1);  // already there: submit() answered it
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].outcome, Outcome::Ok);
    EXPECT_EQ(done[0].batch_id, 0u);
    EXPECT_FALSE(done[0].dry_run);
    ASSERT_EQ(done[0].cpus.size(), 1u);
    EXPECT_EQ(done[0].cpus[0], (CpuResult{4, CpuOutcome::Unchanged, 0, "already offline"}));
    EXPECT_EQ(batches, 0);
    EXPECT_TRUE(m.writer.log().empty());
    EXPECT_LT(done[0].queued, s.coalesce);  // answered without waiting out the window
}

// RequestResult::queued runs from the request's receipt to its batch's start: the first of
// two requests coalesced into one batch waited the whole window, the second no longer.
TEST(Executor, QueuedCoversTheCoalescingWindowOfACoalescedBatch) {
    WindowedMachine w(300ms);
    auto& [m, results] = w;
    const EngineSettings& s = m.settings;
    Executor ex(*m.runner, s);
    const auto t0 = std::chrono::steady_clock::now();
    ex.submit(m.request(Action::Offline, set({4})), m.state(), results.slot());
    ex.submit(m.request(Action::Offline, set({5})), m.state(), results.slot());
    const auto done = results.wait_for(2);
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(done.size(), 2u);
    const auto& first = done[0].cpus.at(0).cpu == 4 ? done[0] : done[1];
    const auto& second = done[0].cpus.at(0).cpu == 4 ? done[1] : done[0];
    ASSERT_EQ(first.batch_id, second.batch_id);  // coalesced
    EXPECT_NE(first.batch_id, 0u);
    EXPECT_GE(first.queued, s.coalesce);
    EXPECT_LE(second.queued, first.queued);
    EXPECT_GE(second.queued.count(), 0);
    EXPECT_LE(first.queued, elapsed);
}

// A machine without a coalescing window (the default) whose batches wait up to `arrival_wait`
// for requests still being admitted.
struct ArrivalMachine {
    explicit ArrivalMachine(std::chrono::milliseconds arrival_wait)
        : m({}, settings(arrival_wait)) {}
    static EngineSettings settings(std::chrono::milliseconds arrival_wait) {
        EngineSettings s;
        EXPECT_EQ(s.coalesce, 0ms);  // the default the daemon ships with
        s.arrival_wait = arrival_wait;
        return s;
    }
    FakeMachine m;
    Results results;
};

// A lone request on an idle executor starts its batch at once: nothing is on its way, so
// neither the (unset) coalescing window nor the wait for arrivals holds it.
TEST(Executor, ALoneRequestStartsItsBatchAtOnce) {
    ArrivalMachine a(20s);  // waited out, Results::wait_for would give up first (10 s)
    auto& [m, results] = a;
    Executor ex(*m.runner, m.settings);
    ex.submit(m.request(Action::Offline, set({4})), m.state(), results.slot());
    const auto done = results.wait_for(1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_NE(done[0].batch_id, 0u);
    EXPECT_EQ(done[0].cpus.at(0).outcome, CpuOutcome::Changed);
    EXPECT_LT(done[0].queued, m.settings.arrival_wait);
}

// A request received before the batch starts but still being admitted (announced with
// expect_arrival()) joins that batch instead of following it alone.
TEST(Executor, ARequestStillBeingAdmittedJoinsTheBatchAheadOfIt) {
    ArrivalMachine a(20s);
    auto& [m, results] = a;
    std::promise<void> started;
    std::once_flag first_batch;
    Executor::Observers observers;
    observers.batch_started = [&](std::uint64_t, const std::vector<Request>&) {
        std::call_once(first_batch, [&] { started.set_value(); });
    };
    Executor ex(*m.runner, m.settings, observers);
    ex.expect_arrival();
    ex.expect_arrival();
    ex.submit(m.request(Action::Offline, set({4})), m.state(), results.slot());
    ex.arrival_ended();
    // The second is still on its way: no batch may start without it.
    auto batch_started = started.get_future();
    EXPECT_EQ(batch_started.wait_for(200ms), std::future_status::timeout)
        << "a batch started while a request received before it was still being admitted";
    ex.submit(m.request(Action::Offline, set({5})), m.state(), results.slot());
    ex.arrival_ended();
    const auto done = results.wait_for(2);
    ASSERT_EQ(done.size(), 2u);
    EXPECT_NE(done[0].batch_id, 0u);
    EXPECT_EQ(done[0].batch_id, done[1].batch_id);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({4, 5}));
}

// An arrival that never comes (an admission stuck in a slow read, or a stream of new ones)
// holds the batch back for arrival_wait at most.
TEST(Executor, AnArrivalThatDoesNotComeHoldsTheBatchBackForArrivalWaitAtMost) {
    ArrivalMachine a(300ms);
    auto& [m, results] = a;
    Executor ex(*m.runner, m.settings);
    ex.expect_arrival();  // never ended
    ex.submit(m.request(Action::Offline, set({4})), m.state(), results.slot());
    const auto done = results.wait_for(1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].cpus.at(0).outcome, CpuOutcome::Changed);
    EXPECT_GE(done[0].queued, m.settings.arrival_wait);
}

// The coalescing window opens at the request's receipt, not when it reaches the queue: a
// request whose admission took the whole window goes at once instead of waiting it again.
TEST(Executor, TheCoalescingWindowOpensAtTheFirstRequestsReceipt) {
    WindowedMachine w(20s);  // waited from submit(), Results::wait_for would give up first (10 s)
    auto& [m, results] = w;
    const EngineSettings& s = m.settings;
    Executor ex(*m.runner, s);
    Request late = m.request(Action::Offline, set({4}));
    late.received = std::chrono::steady_clock::now() - s.coalesce;
    ex.submit(late, m.state(), results.slot());
    const auto done = results.wait_for(1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_NE(done[0].batch_id, 0u);
    EXPECT_EQ(done[0].cpus.at(0).outcome, CpuOutcome::Changed);
    EXPECT_GE(done[0].queued, s.coalesce);
}

// A request the engine received earlier (Request::received set, as Engine::change does)
// counts from then, whether it gets a batch or is answered at once.
TEST(Executor, QueuedStartsAtTheRequestsReceipt) {
    GatedMachine t;
    FakeMachine& m = t.m;
    Results& results = t.results;
    auto& [gate, runner, ex] = t.g;
    gate.release_.set_value();  // no gate: the batch runs through
    Request change = m.request(Action::Offline, set({4}));
    change.received = std::chrono::steady_clock::now() - 200ms;
    ex.submit(change, m.state(), results.slot());
    Request dry = m.request(Action::Offline, set({5}));
    dry.dry_run = true;
    dry.received = std::chrono::steady_clock::now() - 300ms;
    ex.submit(dry, m.state(), results.slot());
    const auto done = results.wait_for(2);
    ASSERT_EQ(done.size(), 2u);
    for (const auto& r : done) {
        if (r.dry_run) {
            EXPECT_EQ(r.batch_id, 0u);
            EXPECT_GE(r.queued, 300ms);
        } else {
            EXPECT_NE(r.batch_id, 0u);
            EXPECT_GE(r.queued, 200ms);
        }
        EXPECT_LT(r.queued, 10s);
    }
}

// While a batch is queued or running, a request that looks like a no-op now may not be one
// by its turn (the batch ahead may change its CPUs): it waits for its own batch.
TEST(Executor, ANoOpBehindABatchWaitsItsTurn) {
    GatedMachine t;
    FakeMachine& m = t.m;
    Results& results = t.results;
    auto& [gate, runner, ex] = t.g;
    m.fs.set_online(5, false);
    ex.submit(m.request(Action::Online, set({5})), m.state(), results.slot());
    gate.entered_.get_future().wait();  // bringing 5 online now
    ex.submit(m.request(Action::Offline, set({5})), m.state(), results.slot());
    gate.release_.set_value();
    const auto done = results.wait_for(2);
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[1].action, Action::Offline);
    EXPECT_NE(done[1].batch_id, 0u);
    EXPECT_EQ(done[1].cpus[0].outcome, CpuOutcome::Changed);
    EXPECT_FALSE(m.fs.online().contains(5));
}

TEST(Executor, RefusesUpFrontWithoutQueueing) {
    FakeMachine m;
    Executor ex(*m.runner, m.settings);
    Results results;
    try {
        ex.submit(m.request(Action::Offline, set({0, 3})), m.state(), results.slot());
        FAIL() << "protected CPU 0 was accepted";
    } catch (const Refusal& r) {
        EXPECT_EQ(r.kind(), RefusalKind::ProtectedCpu);
    }
    EXPECT_TRUE(m.writer.log().empty());
}

TEST(Executor, SaysBusyWhenTheQueueIsFull) {
    GatedMachine t(1);
    FakeMachine& m = t.m;
    Results& results = t.results;
    auto& [gate, runner, ex] = t.g;
    ex.submit(m.request(Action::Offline, set({4})), m.state(), results.slot());
    gate.entered_.get_future().wait();
    ex.submit(m.request(Action::Offline, set({5})), m.state(), results.slot());  // queued
    try {
        ex.submit(m.request(Action::Offline, set({6})), m.state(), results.slot());
        ADD_FAILURE() << "a full queue accepted another request";
    } catch (const Refusal& r) {
        EXPECT_EQ(r.kind(), RefusalKind::Busy);
    }
    gate.release_.set_value();
    results.wait_for(2);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({4, 5}));
}

// Issue 9 (fairness): one caller cannot fill the whole queue; others still get in.
TEST(Executor, OneCallerMayQueueOnlyItsShare) {
    GatedMachine t;
    FakeMachine& m = t.m;
    Results& results = t.results;
    auto& [gate, runner, ex] = t.g;
    auto from = [&](const std::string& caller, Action action, const CpuSet& cpus) {
        Request r = m.request(action, cpus);
        r.caller = caller;
        return r;
    };
    ex.submit(from(":1.7", Action::Offline, set({4})), m.state(), results.slot());
    gate.entered_.get_future().wait();  // that batch runs; what follows is queued
    for (std::size_t i = 0; i < kMaxQueuedPerCaller; ++i) {
        ex.submit(from(":1.7", Action::Online, set({5})), m.state(), results.slot());
    }
    try {
        ex.submit(from(":1.7", Action::Online, set({5})), m.state(), results.slot());
        ADD_FAILURE() << "one caller queued more than its share";
    } catch (const Refusal& r) {
        EXPECT_EQ(r.kind(), RefusalKind::Busy);
        EXPECT_NE(std::string(r.what()).find("the most one caller may have"), std::string::npos)
            << r.what();
    }
    ex.submit(from(":1.8", Action::Online, set({5})), m.state(), results.slot());
    gate.release_.set_value();
    results.wait_for(kMaxQueuedPerCaller + 2);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({4}));
}

TEST(Executor, ReportsBusyTransitionsAndFinishedBatches) {
    EngineSettings s;
    s.coalesce = 0ms;
    FakeMachine m({}, s);
    std::mutex mu;
    std::vector<bool> busy;
    std::vector<BatchReport> reports;
    Executor::Observers obs;
    obs.busy_changed = [&](bool b) {
        std::lock_guard l(mu);
        busy.push_back(b);
    };
    obs.batch_finished = [&](const BatchReport& r) {
        std::lock_guard l(mu);
        reports.push_back(r);
    };
    Results results;
    {
        Executor ex(*m.runner, s, obs);
        ex.submit(m.request(Action::Offline, set({4, 5})), m.state(), results.slot());
        results.wait_for(1);
    }
    std::lock_guard l(mu);
    EXPECT_EQ(busy, (std::vector<bool>{true, false}));
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].changed, set({4, 5}));
    EXPECT_TRUE(reports[0].expedited);
}

// The gate holds the first write (CPU 7 of 4-7): the cancel lands while it is in flight.
TEST(Executor, CancelStopsTheRunningBatchAfterTheCpuInFlight) {
    GatedMachine t;
    FakeMachine& m = t.m;
    auto& [gate, runner, ex] = t.g;
    try {
        ex.cancel(0);
        ADD_FAILURE() << "cancelled with no batch running";
    } catch (const Refusal& r) {
        EXPECT_EQ(r.kind(), RefusalKind::NoSuchBatch);
        EXPECT_STREQ(r.what(), "no batch is running");
    }
    ex.submit(m.request(Action::Offline, CpuSet::range(4, 7)), m.state(), t.results.slot());
    gate.entered_.get_future().wait();
    try {
        ex.cancel(2);
        ADD_FAILURE() << "cancelled a batch that is not running";
    } catch (const Refusal& r) {
        EXPECT_EQ(r.kind(), RefusalKind::NoSuchBatch);
        EXPECT_STREQ(r.what(), "batch 2 is not running (batch 1 is)");
    }
    EXPECT_EQ(ex.cancel(0), 1u);
    EXPECT_EQ(ex.cancel(1), 1u);  // twice is no error
    gate.release_.set_value();
    const auto done = t.results.wait_for(1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].batch_id, 1u);
    EXPECT_EQ(done[0].outcome, Outcome::Failed);
    ASSERT_EQ(done[0].cpus.size(), 4u);
    EXPECT_EQ(done[0].cpus[3].outcome, CpuOutcome::RolledBack);  // CPU 7, written, then undone
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(done[0].cpus[i].outcome, CpuOutcome::Cancelled) << done[0].cpus[i].cpu;
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
    // The next batch is not cancelled.
    ex.submit(m.request(Action::Offline, set({4})), m.state(), t.results.slot());
    const auto next = t.results.wait_for(2);
    EXPECT_EQ(next[1].outcome, Outcome::Ok);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({4}));
}

// A stop cancels the batch in flight and any batch that would start after it.
TEST(Executor, CancelAllStopsTheBatchInFlight) {
    GatedMachine t;
    FakeMachine& m = t.m;
    auto& [gate, runner, ex] = t.g;
    ex.submit(m.request(Action::Offline, CpuSet::range(4, 7), Mode::BestEffort), m.state(),
              t.results.slot());
    gate.entered_.get_future().wait();
    ex.cancel_all();
    gate.release_.set_value();
    const auto done = t.results.wait_for(1);
    EXPECT_EQ(done[0].outcome, Outcome::Partial);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({7}));
}

Request by_caller(Request r, const std::string& caller) {
    r.caller = caller;
    return r;
}

Hold hold_on(const CpuSet& cpus) {
    Hold h;
    h.holder = ":1.5";
    h.who = "orchestrator";
    h.cpus = cpus;
    return h;
}

TEST(Executor, AHeldCpuRefusesAnotherCallersRequestAtOnce) {
    FakeMachine m;
    HoldTable holds;
    holds.take(hold_on(set({4, 5})));
    Executor ex(*m.runner, m.settings, {}, &holds);
    Results results;
    try {
        ex.submit(by_caller(m.request(Action::Offline, set({5, 6})), ":1.9"), m.state(),
                  results.slot());
        FAIL() << "a held CPU was queued";
    } catch (const Refusal& r) {
        EXPECT_EQ(r.kind(), RefusalKind::Held);
    }
    ex.submit(by_caller(m.request(Action::Offline, set({5, 6})), ":1.5"), m.state(),
              results.slot());
    const auto done = results.wait_for(1);
    EXPECT_EQ(done[0].outcome, Outcome::Ok);
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15) - set({5, 6}));
}

// An executor checking `holds`: a batch (offline 4) held at its first write, then
// `queued` (offline of each CPU, in order) queued behind it, then a hold on `held` taken,
// then the batch let go. Returns the first `answers` results, in the order they came.
struct HoldAfterQueueing {
    HoldAfterQueueing(const std::vector<std::pair<unsigned, const char*>>& queued,
                      const CpuSet& held, std::size_t answers)
        : t(EngineSettings{}.max_queued_requests, &holds) {
        auto& [gate, runner, ex] = t.g;
        FakeMachine& m = t.m;
        ex.submit(by_caller(m.request(Action::Offline, set({4})), ":1.9"), m.state(),
                  t.results.slot());
        gate.entered_.get_future().wait();
        for (const auto& [cpu, caller] : queued) {
            ex.submit(by_caller(m.request(Action::Offline, set({cpu})), caller), m.state(),
                      t.results.slot());
        }
        holds.take(hold_on(held));
        gate.release_.set_value();
        done = t.results.wait_for(answers);
    }
    HoldTable holds;
    GatedMachine t;
    std::vector<RequestResult> done;
};

// A hold taken while a request waits in the queue refuses it when its batch starts: the
// request was admitted before the hold, but would change the hold's CPUs after it.
TEST(Executor, AHoldTakenWhileARequestIsQueuedRefusesItAtBatchTime) {
    HoldAfterQueueing h({{6, ":1.9"}, {7, ":1.7"}}, set({6}), 3);
    const auto& done = h.done;
    ASSERT_EQ(done.size(), 3u);
    EXPECT_EQ(done[0].outcome, Outcome::Ok);
    // The refused request is answered before the batch of the one it was queued with.
    ASSERT_TRUE(done[1].refusal);
    EXPECT_EQ(done[1].refusal->kind(), RefusalKind::Held);
    EXPECT_EQ(done[1].mask, "6");
    EXPECT_EQ(done[2].outcome, Outcome::Ok);
    EXPECT_EQ(h.t.m.fs.online(), CpuSet::range(0, 15) - set({4, 7}));
}

TEST(Executor, ABatchAllOfWhoseRequestsAHoldRefusedWritesNothing) {
    HoldAfterQueueing h({{6, ":1.9"}}, set({6}), 2);
    ASSERT_EQ(h.done.size(), 2u);
    ASSERT_TRUE(h.done[1].refusal);
    EXPECT_EQ(h.done[1].refusal->kind(), RefusalKind::Held);
    FakeMachine& m = h.t.m;
    EXPECT_TRUE(m.fs.online().contains(6));
    // Idle again: a later request is served.
    h.t.g.ex.submit(by_caller(m.request(Action::Offline, set({8})), ":1.9"), m.state(),
                    h.t.results.slot());
    EXPECT_EQ(h.t.results.wait_for(3)[2].outcome, Outcome::Ok);
}

}  // namespace
}  // namespace cpuhpd::test
