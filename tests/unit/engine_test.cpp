// The engine's front door (daemon/engine/engine.h): changes, holds and profiles flow through
// it over a fake machine, with the test as its owner thread. No bus.
#include "engine.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>

#include "engine_fixture.h"

namespace cpuhpd::test {
namespace {

using namespace std::chrono_literals;

// The owner's loop: tasks the engine posts wait here until the test pumps them.
class TestLoop {
public:
    Engine::Post post() {
        return [this](std::function<void()> task) {
            const std::lock_guard lock(mutex_);
            tasks_.push_back(std::move(task));
            wake_.notify_all();
        };
    }
    // Runs posted tasks until `done` holds (checked between tasks); false after 10 s.
    bool pump_until(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (!done()) {
            std::unique_lock lock(mutex_);
            if (!wake_.wait_until(lock, deadline, [&] { return !tasks_.empty(); })) {
                return false;
            }
            auto task = std::move(tasks_.front());
            tasks_.pop_front();
            lock.unlock();
            task();
        }
        return true;
    }
    // Runs what is posted until nothing more comes for a moment.
    void settle() {
        for (;;) {
            std::unique_lock lock(mutex_);
            if (!wake_.wait_for(lock, 200ms, [&] { return !tasks_.empty(); })) {
                return;
            }
            auto task = std::move(tasks_.front());
            tasks_.pop_front();
            lock.unlock();
            task();
        }
    }

private:
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
};

// Records what the engine reports.
struct RecordingEvents final : EngineEvents {
    void state_changed() override { ++state_changes; }
    void batch_progress(std::uint64_t, std::size_t, std::size_t) override {}
    void batch_finished(const BatchReport& report) override { batches.push_back(report); }
    void request_finished(const RequestResult& result) override { finished.push_back(result); }
    void holds_changed() override { ++holds_changes; }
    void hold_ended(const Hold& hold) override { ended.push_back(hold.id); }
    void profile_change_ended() override { ++profile_changes_ended; }
    void notice(const Notice& notice) override {
        const std::lock_guard lock(mutex);
        notices.push_back(notice.text);
    }
    bool said(const std::string& part) {
        const std::lock_guard lock(mutex);
        for (const auto& text : notices) {
            if (text.find(part) != std::string::npos) {
                return true;
            }
        }
        return false;
    }

    int state_changes = 0;
    int holds_changes = 0;
    int profile_changes_ended = 0;
    std::vector<BatchReport> batches;
    std::vector<RequestResult> finished;
    std::vector<std::uint64_t> ended;
    std::mutex mutex;
    std::vector<std::string> notices;
};

// 16 CPUs (2 packages x 4 cores x 2 threads; CPU 0 protected) and an engine over them.
struct EngineTest : ::testing::Test {
    EngineTest() {
        setup.sysfs_root = machine.fs.root();
        setup.proc_root = machine.proc.root();
        setup.cgroup_root = machine.cgroup_root();
        setup.state_dir = machine.fs.root() / "state";
        setup.settings.coalesce = 0ms;
        Profile night;
        night.offline = "package:1";
        Profile smt_off;
        smt_off.offline = "6-7";
        smt_off.smt_off = true;
        setup.profiles = {{"night", night}, {"smt-off", smt_off}};
    }
    void SetUp() override {
        engine = std::make_unique<Engine>(setup, machine.writer, events, loop.post());
        engine->load_active_profile();
        engine->start();
    }
    void TearDown() override {
        if (engine) {
            engine->shutdown();
            loop.settle();
        }
    }

    ChangeAsk ask(Action action, std::string mask, std::string caller = ":1.1") {
        ChangeAsk a;
        a.action = action;
        a.mask = std::move(mask);
        a.caller = std::move(caller);
        return a;
    }
    ChangeAnswer change(ChangeAsk a) {
        std::optional<ChangeAnswer> answer;
        engine->change(std::move(a), [&](ChangeAnswer got) { answer = std::move(got); });
        EXPECT_TRUE(loop.pump_until([&] { return answer.has_value(); }));
        return answer.value_or(std::make_exception_ptr(std::runtime_error("no answer")));
    }
    HoldOutcome hold(HoldAsk a) {
        std::optional<HoldOutcome> answer;
        engine->hold(std::move(a), [&](HoldOutcome got) { answer = std::move(got); });
        EXPECT_TRUE(loop.pump_until([&] { return answer.has_value(); }));
        return answer.value_or(std::make_exception_ptr(std::runtime_error("no answer")));
    }
    ProfileAnswer profile(const std::string& name, bool dry_run = false) {
        ProfileAsk a;
        a.name = name;
        a.dry_run = dry_run;
        a.caller = ":1.1";
        std::optional<ProfileAnswer> answer;
        auto done = [&](ProfileAnswer got) { answer = std::move(got); };
        if (name.empty()) {
            engine->revert_profile(std::move(a), done);
        } else {
            engine->apply_profile(std::move(a), done);
        }
        EXPECT_TRUE(loop.pump_until([&] { return answer.has_value(); }));
        return answer.value_or(std::make_exception_ptr(std::runtime_error("no answer")));
    }
    std::string state_file(const std::string& name) {
        std::ifstream in(setup.state_dir / name);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }

    FakeMachine machine;
    EngineSetup setup;
    TestLoop loop;
    RecordingEvents events;
    std::unique_ptr<Engine> engine;
};

RefusalKind refusal_of(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const Refusal& refusal) {
        return refusal.kind();
    } catch (...) {
        ADD_FAILURE() << "not a Refusal";
    }
    return RefusalKind::Busy;
}

TEST_F(EngineTest, AChangeIsReadResolvedQueuedAndAnsweredOnTheOwnerThread) {
    const auto answer = change(ask(Action::Offline, "4-5"));
    ASSERT_TRUE(std::holds_alternative<RequestResult>(answer));
    const auto& result = std::get<RequestResult>(answer);
    EXPECT_EQ(result.outcome, Outcome::Ok);
    EXPECT_EQ(result.cpus.size(), 2U);
    EXPECT_FALSE(machine.fs.online().contains(4));
    EXPECT_FALSE(machine.fs.online().contains(5));
    ASSERT_EQ(events.finished.size(), 1U);
    loop.pump_until([&] { return !events.batches.empty(); });
    ASSERT_EQ(events.batches.size(), 1U);
    EXPECT_EQ(events.batches[0].changed, set({4, 5}));
    // The state adopted on the owner's thread shows the batch's end.
    loop.settle();
    EXPECT_FALSE(engine->state().online.contains(4));
    EXPECT_GT(events.state_changes, 0);
}

TEST_F(EngineTest, ABadMaskIsAnsweredWithTheError) {
    const auto answer = change(ask(Action::Offline, "4-"));
    ASSERT_TRUE(std::holds_alternative<std::exception_ptr>(answer));
    EXPECT_TRUE(events.finished.empty());
}

TEST_F(EngineTest, AfterStopChangesAreRefusedBusy) {
    bool stopped = false;
    engine->stop(true, [&] { stopped = true; });
    EXPECT_TRUE(loop.pump_until([&] { return stopped; }));
    EXPECT_THROW(engine->change(ask(Action::Offline, "4"), [](ChangeAnswer) {}), Refusal);
    EXPECT_THROW(engine->cancel(0), Refusal);
}

TEST_F(EngineTest, CancelWithoutABatchIsNoSuchBatch) {
    try {
        engine->cancel(0);
        ADD_FAILURE() << "no refusal";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::NoSuchBatch);
    }
}

TEST_F(EngineTest, AHoldTakesItsCpusKeepsOthersOffThemAndItsReleaseRestoresThem) {
    HoldAsk a;
    a.change = ask(Action::Offline, "4-5", ":1.7");
    a.who = "live-update";
    a.why = "test";
    std::vector<std::uint64_t> bound;
    a.bind = [&](const Hold& hold) { bound.push_back(hold.id); };
    const auto outcome = hold(std::move(a));
    ASSERT_TRUE(std::holds_alternative<HoldTaken>(outcome));
    const auto id = std::get<HoldTaken>(outcome).id;
    EXPECT_EQ(bound, std::vector<std::uint64_t>{id});
    EXPECT_FALSE(machine.fs.online().contains(4));
    ASSERT_EQ(engine->holds().size(), 1U);
    EXPECT_EQ(engine->holds()[0].holder, ":1.7");
    EXPECT_EQ(events.holds_changes, 1);

    // Someone else may not bring them back.
    const auto other = change(ask(Action::Online, "4", ":1.8"));
    ASSERT_TRUE(std::holds_alternative<std::exception_ptr>(other));
    EXPECT_EQ(refusal_of(std::get<std::exception_ptr>(other)), RefusalKind::Held);

    std::optional<ReleaseAnswer> released;
    engine->release(id, ":1.7", [&](ReleaseAnswer got) { released = std::move(got); });
    EXPECT_EQ(events.ended, std::vector<std::uint64_t>{id});
    ASSERT_TRUE(loop.pump_until([&] { return released.has_value(); }));
    ASSERT_TRUE(std::holds_alternative<std::vector<CpuResult>>(*released));
    EXPECT_EQ(std::get<std::vector<CpuResult>>(*released).size(), 2U);
    EXPECT_TRUE(machine.fs.online().contains(4));
    EXPECT_TRUE(machine.fs.online().contains(5));
    EXPECT_TRUE(engine->holds().empty());
    EXPECT_TRUE(events.said("released by its holder; restoring CPU 4-5"));
    EXPECT_THROW(engine->release(id, ":1.7", {}), Refusal);
}

TEST_F(EngineTest, AHoldThatCannotBeBoundEndsAndIsRestored) {
    HoldAsk a;
    a.change = ask(Action::Offline, "6", ":1.7");
    a.who = "x";
    a.bind = [](const Hold&) { throw std::runtime_error("no fd"); };
    const auto outcome = hold(std::move(a));
    ASSERT_TRUE(std::holds_alternative<std::exception_ptr>(outcome));
    EXPECT_TRUE(engine->holds().empty());
    EXPECT_TRUE(loop.pump_until([&] { return machine.fs.online().contains(6); }));
    EXPECT_TRUE(events.said("it could not be linked to a file descriptor"));
}

TEST_F(EngineTest, AHoldWhoseChangeFailsIsNotKept) {
    machine.writer.fail_cpu(5, EBUSY);
    HoldAsk a;
    a.change = ask(Action::Offline, "4-5", ":1.7");
    a.who = "x";
    const auto outcome = hold(std::move(a));
    ASSERT_TRUE(std::holds_alternative<std::exception_ptr>(outcome));
    EXPECT_EQ(refusal_of(std::get<std::exception_ptr>(outcome)), RefusalKind::KernelError);
    EXPECT_TRUE(engine->holds().empty());
    EXPECT_TRUE(machine.fs.online().contains(4));  // atomic: rolled back
}

TEST_F(EngineTest, AHoldEndedByItsHolderLeavingWithoutRestoreLeavesTheCpus) {
    HoldAsk a;
    a.change = ask(Action::Offline, "7", ":1.7");
    a.who = "x";
    a.restore = false;
    const auto outcome = hold(std::move(a));
    ASSERT_TRUE(std::holds_alternative<HoldTaken>(outcome));
    engine->end_hold(std::get<HoldTaken>(outcome).id, "its holder left the bus");
    loop.settle();
    EXPECT_FALSE(machine.fs.online().contains(7));
    EXPECT_TRUE(events.said("ended: its holder left the bus; no restore asked"));
}

TEST_F(EngineTest, ProfilesApplySwitchWithTheFewestChangesAndRevert) {
    const auto night = profile("night");
    ASSERT_TRUE(std::holds_alternative<ProfileDone>(night));
    const auto& applied = std::get<ProfileDone>(night);
    EXPECT_EQ(applied.outcome, Outcome::Ok);
    EXPECT_EQ(applied.transition.to_offline, set({4, 5, 6, 7, 12, 13, 14, 15}));
    ASSERT_TRUE(engine->active_profile());
    EXPECT_EQ(engine->active_profile()->name, "night");
    EXPECT_EQ(state_file("profile"), format_active_profile(*engine->active_profile()));
    EXPECT_EQ(events.profile_changes_ended, 1);

    // 6-7 and every sibling: 6, 7, 14 and 15 stay offline, 4, 5, 12 and 13 come back...
    const auto smt = profile("smt-off");
    ASSERT_TRUE(std::holds_alternative<ProfileDone>(smt));
    const auto& switched = std::get<ProfileDone>(smt);
    EXPECT_EQ(switched.transition.to_online, set({4, 5}));
    EXPECT_EQ(switched.transition.to_offline, set({8, 9, 10, 11}));
    EXPECT_EQ(machine.fs.online(), set({0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(engine->active_profile()->name, "smt-off");

    const auto reverted = profile("");
    ASSERT_TRUE(std::holds_alternative<ProfileDone>(reverted));
    EXPECT_EQ(std::get<ProfileDone>(reverted).name, "smt-off");
    EXPECT_EQ(machine.fs.online(), CpuSet::range(0, 15));
    EXPECT_FALSE(engine->active_profile());
    EXPECT_FALSE(std::filesystem::exists(setup.state_dir / "profile"));
    EXPECT_EQ(events.profile_changes_ended, 3);
}

TEST_F(EngineTest, AProfileDryRunChangesNothing) {
    const auto night = profile("night", true);
    ASSERT_TRUE(std::holds_alternative<ProfileDone>(night));
    EXPECT_TRUE(std::get<ProfileDone>(night).dry_run);
    EXPECT_EQ(machine.fs.online(), CpuSet::range(0, 15));
    EXPECT_FALSE(engine->active_profile());
    EXPECT_EQ(events.profile_changes_ended, 0);
}

TEST_F(EngineTest, UnknownProfilesAndRevertingNothingAreRefused) {
    ProfileAsk day;
    day.name = "day";
    try {
        engine->apply_profile(day, {});
        ADD_FAILURE() << "no refusal";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::NoSuchProfile);
        EXPECT_STREQ(refusal.what(), "no profile 'day' in the config (it has night, smt-off)");
    }
    EXPECT_THROW(engine->revert_profile(ProfileAsk{}, {}), Refusal);
}

TEST_F(EngineTest, OneProfileChangeAtATime) {
    std::optional<ProfileAnswer> first;
    ProfileAsk a;
    a.name = "night";
    engine->apply_profile(a, [&](ProfileAnswer got) { first = std::move(got); });
    try {
        engine->apply_profile(a, {});
        ADD_FAILURE() << "no refusal";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::Busy);
    }
    ASSERT_TRUE(loop.pump_until([&] { return first.has_value(); }));
}

TEST_F(EngineTest, AProfileInForceIsLoadedFromTheStateDirectory) {
    engine->shutdown();
    loop.settle();
    std::filesystem::create_directories(setup.state_dir);
    std::ofstream(setup.state_dir / "profile") << format_active_profile({"night", set({4, 5})});
    engine = std::make_unique<Engine>(setup, machine.writer, events, loop.post());
    engine->load_active_profile();
    engine->start();
    ASSERT_TRUE(engine->active_profile());
    EXPECT_EQ(engine->active_profile()->name, "night");
    EXPECT_EQ(engine->active_profile()->taken, set({4, 5}));
    EXPECT_TRUE(events.said("profile night is in force"));
}

}  // namespace
}  // namespace cpuhpd::test
