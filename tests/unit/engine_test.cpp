// The engine's front door (daemon/engine/engine.h): changes, holds and profiles flow through
// it over a fake machine, with the test as its owner thread. No bus.
#include "engine.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>

#include "engine_fixture.h"
#include "journal_file.h"

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
    void hold_violated(const HoldViolation& violation) override { violations.push_back(violation); }
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
    std::vector<HoldViolation> violations;
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
    // Takes a hold of `mask` for `holder` (uid 1000); its id.
    std::uint64_t take_hold(const std::string& mask, const std::string& holder = ":1.7",
                            Action state = Action::Offline) {
        HoldAsk a;
        a.change = ask(state, mask, holder);
        a.who = "live-update";
        a.why = "kernel update";
        a.uid = 1000;
        const auto outcome = hold(std::move(a));
        EXPECT_TRUE(std::holds_alternative<HoldTaken>(outcome));
        return std::holds_alternative<HoldTaken>(outcome) ? std::get<HoldTaken>(outcome).id : 0;
    }
    // A restart: the engine goes (as after kill -9: nothing ends its holds) and a new one
    // starts from the same state directory, loading the holds before recovery.
    std::size_t restart() {
        engine->shutdown();
        loop.settle();
        engine = std::make_unique<Engine>(setup, machine.writer, events, loop.post());
        const std::size_t loaded = engine->load_holds();
        engine->recover();
        engine->start();
        return loaded;
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

TEST_F(EngineTest, AHoldIsWrittenToTheStateDirectoryBeforeItsAnswer) {
    std::optional<HoldOutcome> answer;
    std::string file_at_answer;
    HoldAsk a;
    a.change = ask(Action::Offline, "4-5", ":1.7");
    a.who = "live-update";
    a.why = "kernel update";
    a.uid = 1000;
    engine->hold(std::move(a), [&](HoldOutcome got) {
        file_at_answer = state_file(kHoldsFileName);
        answer = std::move(got);
    });
    ASSERT_TRUE(loop.pump_until([&] { return answer.has_value(); }));
    ASSERT_TRUE(std::holds_alternative<HoldTaken>(*answer));
    const auto parsed = parse_holds(file_at_answer);
    ASSERT_TRUE(std::holds_alternative<HoldsFile>(parsed)) << std::get<std::string>(parsed);
    const auto& file = std::get<HoldsFile>(parsed);
    ASSERT_EQ(file.holds.size(), 1U);
    EXPECT_EQ(file.holds[0].id, std::get<HoldTaken>(*answer).id);
    EXPECT_EQ(file.holds[0].cpus, set({4, 5}));
    EXPECT_EQ(file.holds[0].uid, std::optional<std::uint32_t>(1000));
    EXPECT_EQ(file.holds[0].who, "live-update");
    EXPECT_EQ(file.holds[0].why, "kernel update");
    EXPECT_EQ(file.holds[0].holder, ":1.7");

    // Released: gone from the file too.
    std::optional<ReleaseAnswer> released;
    engine->release(file.holds[0].id, ":1.7", [&](ReleaseAnswer got) { released = got; });
    ASSERT_TRUE(loop.pump_until([&] { return released.has_value(); }));
    const auto after = parse_holds(state_file(kHoldsFileName));
    ASSERT_TRUE(std::holds_alternative<HoldsFile>(after));
    EXPECT_TRUE(std::get<HoldsFile>(after).holds.empty());
}

TEST_F(EngineTest, AHoldSurvivesARestartUnattachedAndStillRefusesOthers) {
    const auto id = take_hold("4-5");
    ASSERT_EQ(restart(), 1U);
    ASSERT_EQ(engine->holds().size(), 1U);
    const Hold kept = engine->holds()[0];
    EXPECT_EQ(kept.id, id);
    EXPECT_FALSE(kept.attached);
    EXPECT_EQ(kept.uid, std::optional<std::uint32_t>(1000));
    EXPECT_EQ(engine->unattached_holds(), std::vector<std::uint64_t>{id});
    EXPECT_FALSE(machine.fs.online().contains(4));
    EXPECT_TRUE(events.said("kept across the restart"));
    // Others are refused, and so is a caller that happens to reuse the old holder's name.
    for (const char* caller : {":1.8", ":1.7"}) {
        const auto other = change(ask(Action::Online, "4", caller));
        ASSERT_TRUE(std::holds_alternative<std::exception_ptr>(other)) << caller;
        EXPECT_EQ(refusal_of(std::get<std::exception_ptr>(other)), RefusalKind::Held);
    }
    // A new hold gets a new id, after the kept one.
    EXPECT_GT(take_hold("6", ":1.9"), id);
}

TEST_F(EngineTest, AReattachedHoldIsKeptPastTheGracePeriod) {
    const auto id = take_hold("4-5");
    restart();
    EXPECT_THROW(engine->attach_hold(id + 100, ":2.1"), Refusal);
    const Hold attached = engine->attach_hold(id, ":2.1");
    EXPECT_TRUE(attached.attached);
    EXPECT_EQ(attached.holder, ":2.1");
    EXPECT_TRUE(engine->unattached_holds().empty());
    EXPECT_TRUE(events.said("re-attached by :2.1"));
    engine->expire_unattached();
    loop.settle();
    ASSERT_EQ(engine->holds().size(), 1U);
    EXPECT_FALSE(machine.fs.online().contains(4));
    // The new holder may change its CPUs; the file names it.
    EXPECT_TRUE(std::holds_alternative<RequestResult>(change(ask(Action::Online, "4", ":2.1"))));
    const auto parsed = parse_holds(state_file(kHoldsFileName));
    ASSERT_TRUE(std::holds_alternative<HoldsFile>(parsed));
    EXPECT_EQ(std::get<HoldsFile>(parsed).holds.at(0).holder, ":2.1");
}

TEST_F(EngineTest, AHoldNotReattachedEndsWithItsRestoreAfterTheGracePeriod) {
    take_hold("4-5");
    restart();
    ASSERT_FALSE(machine.fs.online().contains(4));
    engine->expire_unattached();
    EXPECT_TRUE(engine->holds().empty());
    EXPECT_TRUE(loop.pump_until(
        [&] { return machine.fs.online().contains(4) && machine.fs.online().contains(5); }));
    EXPECT_TRUE(events.said("did not re-attach within 60 s"));
    loop.settle();
    const auto parsed = parse_holds(state_file(kHoldsFileName));
    ASSERT_TRUE(std::holds_alternative<HoldsFile>(parsed));
    EXPECT_TRUE(std::get<HoldsFile>(parsed).holds.empty());
    // A second restart finds nothing to keep.
    EXPECT_EQ(restart(), 0U);
}

TEST_F(EngineTest, HoldsOfAnEarlierBootAndBadHoldsFilesAreNotKept) {
    engine->shutdown();
    loop.settle();
    std::filesystem::create_directories(setup.state_dir);
    HoldsFile old;
    old.boottime_ns = boottime_ns() + 3'600'000'000'000ULL;  // written "later" in its boot
    Hold hold;
    hold.id = 3;
    hold.cpus = set({4});
    hold.who = "x";
    hold.since = std::chrono::system_clock::now();
    old.holds.push_back(hold);
    std::ofstream(setup.state_dir / kHoldsFileName) << format_holds(old);
    engine = std::make_unique<Engine>(setup, machine.writer, events, loop.post());
    EXPECT_EQ(engine->load_holds(), 0U);
    EXPECT_TRUE(events.said("ended with it"));
    EXPECT_FALSE(std::filesystem::exists(setup.state_dir / kHoldsFileName));

    std::ofstream(setup.state_dir / kHoldsFileName)
        << "cpuhpd-holds 1 boottime_ns=1 next_id=2\nnonsense\n";
    EXPECT_EQ(engine->load_holds(), 0U);
    EXPECT_TRUE(events.said("moved to"));
    EXPECT_TRUE(
        std::filesystem::exists(setup.state_dir / (std::string(kHoldsFileName) + ".rejected")));
    engine->start();
}

TEST_F(EngineTest, AHeldCpuChangedOutsideIsPutBackAndCounted) {
    const auto id = take_hold("4-5");
    loop.settle();
    machine.fs.set_online(4, true);  // a udev rule's write
    engine->refresh();
    ASSERT_TRUE(loop.pump_until([&] { return !events.violations.empty(); }));
    const HoldViolation& v = events.violations.at(0);
    EXPECT_EQ(v.hold_id, id);
    EXPECT_EQ(v.cpus, set({4}));
    EXPECT_EQ(v.online, set({4}));
    EXPECT_EQ(v.action, "restore");
    EXPECT_EQ(v.count, 1U);
    EXPECT_EQ(v.holder, ":1.7");
    EXPECT_TRUE(loop.pump_until([&] { return !machine.fs.online().contains(4); }));
    EXPECT_TRUE(events.said("CPU 4 came online without cpuhpd"));
    loop.settle();
    EXPECT_EQ(engine->holds().at(0).violations, 1U);
    const auto parsed = parse_holds(state_file(kHoldsFileName));
    ASSERT_TRUE(std::holds_alternative<HoldsFile>(parsed));
    EXPECT_EQ(std::get<HoldsFile>(parsed).holds.at(0).violations, 1U);
    // The holder's own change is no violation.
    EXPECT_TRUE(std::holds_alternative<RequestResult>(change(ask(Action::Online, "5", ":1.7"))));
    loop.settle();
    engine->refresh();
    loop.settle();
    EXPECT_EQ(events.violations.size(), 1U);
    EXPECT_TRUE(machine.fs.online().contains(5));
}

TEST_F(EngineTest, AWriterThatFightsAHoldIsPutBackAFewTimesThenOnlyReported) {
    take_hold("6");
    loop.settle();
    for (std::size_t i = 0; i < kMaxReputsPerMinute + 2; ++i) {
        machine.fs.set_online(6, true);
        engine->refresh();
        ASSERT_TRUE(loop.pump_until([&] { return events.violations.size() == i + 1; })) << i;
        if (i < kMaxReputsPerMinute) {
            EXPECT_EQ(events.violations.back().action, "restore") << i;
            ASSERT_TRUE(loop.pump_until([&] { return !machine.fs.online().contains(6); })) << i;
            loop.settle();
        } else {
            EXPECT_EQ(events.violations.back().action, "limited") << i;
            loop.settle();
            EXPECT_TRUE(machine.fs.online().contains(6)) << i;
            machine.fs.set_online(6, false);  // the writer turns
            engine->refresh();
            loop.settle();
        }
    }
    EXPECT_EQ(engine->holds().at(0).violations, kMaxReputsPerMinute + 2);
}

TEST_F(EngineTest, EnforceHoldsReportLeavesTheChange) {
    engine->shutdown();
    loop.settle();
    setup.settings.enforce_holds = EnforceHolds::Report;
    engine = std::make_unique<Engine>(setup, machine.writer, events, loop.post());
    engine->start();
    take_hold("4");
    loop.settle();
    machine.fs.set_online(4, true);
    engine->refresh();
    ASSERT_TRUE(loop.pump_until([&] { return !events.violations.empty(); }));
    EXPECT_EQ(events.violations[0].action, "report");
    // Reported once while it stays so.
    engine->refresh();
    loop.settle();
    EXPECT_EQ(events.violations.size(), 1U);
    EXPECT_TRUE(machine.fs.online().contains(4));
}

TEST_F(EngineTest, RecoveryLeavesTheCpusOfKeptHoldsAsHeld) {
    take_hold("4-5");
    engine->shutdown();
    loop.settle();
    // A journal of an interrupted atomic offline of 4-7 that had done 4-7 (4-5 were held
    // offline before it by the hold... and 6-7 went down in it).
    machine.fs.set_online(6, false);
    machine.fs.set_online(7, false);
    JournalRecord record;
    record.batch_id = 9;
    record.action = Action::Offline;
    record.strategy = StrategyKind::PerCpu;
    record.order = {4, 5, 6, 7};
    record.online_before = set({4, 5, 6, 7});
    record.boottime_ns = boottime_ns();
    JournalRequest request;
    request.cpus = set({4, 5, 6, 7});
    request.mode = Mode::Atomic;
    record.requests.push_back(request);
    {
        FileJournal journal(setup.state_dir, {});
        journal.begin(record);
        for (const unsigned cpu : record.order) {
            journal.cpu_written(cpu, 0);
        }
    }
    engine = std::make_unique<Engine>(setup, machine.writer, events, loop.post());
    ASSERT_EQ(engine->load_holds(), 1U);
    const RecoveryReport& report = engine->recover();
    EXPECT_EQ(report.outcome, RecoveryOutcome::Recovered);
    EXPECT_EQ(report.restored, set({6, 7}));
    EXPECT_EQ(report.kept, set({4, 5}));
    EXPECT_FALSE(machine.fs.online().contains(4));
    EXPECT_TRUE(machine.fs.online().contains(6));
    engine->start();
}

// `cpu/present` as a sysfs file the kernel is slow to answer: a FIFO whose reads wait until the
// test lets them through (release()). It counts the reads as they open it (inotify), so a test
// knows when one waits. The engine reads the machine one read at a time (its read mutex), so
// each read gets exactly the answer written for it.
class SlowPresent {
public:
    explicit SlowPresent(FakeSysfs& fs)
        : file_(fs.cpu_dir() / "present"), text_(fs.read("devices/system/cpu/present") + "\n") {
        const auto fifo = fs.cpu_dir() / "present.fifo";
        check(::mkfifo(fifo.c_str(), 0644), "mkfifo");
        fifo_ = check(::open(fifo.c_str(), O_RDWR | O_CLOEXEC), "open");
        inotify_ = check(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK), "inotify_init1");
        check(::inotify_add_watch(inotify_, fs.cpu_dir().c_str(), IN_OPEN), "inotify_add_watch");
        check(::pipe2(stop_, O_CLOEXEC), "pipe2");
        std::filesystem::rename(fifo, file_);
        server_ = std::thread([this] { serve(); });
    }
    // Lets the reads through and puts the plain file back. After the engine's last read of
    // the FIFO: one that opened it after this would wait forever.
    ~SlowPresent() {
        release();
        const auto plain = file_.string() + ".plain";
        std::ofstream(plain) << text_;
        std::error_code ec;
        std::filesystem::rename(plain, file_, ec);
        const char stop = 0;
        if (::write(stop_[1], &stop, 1) == 1) {
            server_.join();
        } else {
            server_.detach();  // cannot happen (an empty pipe); better than std::terminate
        }
        for (const int fd : {fifo_, inotify_, stop_[0], stop_[1]}) {
            ::close(fd);
        }
    }
    SlowPresent(const SlowPresent&) = delete;
    SlowPresent& operator=(const SlowPresent&) = delete;

    // Waits (10 s at most) until `count` reads have opened the file.
    bool wait_for_reads(int count) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, 10s, [&] { return reads_ >= count; });
    }
    // The read waiting, and every later one, is answered at once.
    void release() {
        {
            const std::lock_guard lock(mutex_);
            released_ = true;
        }
        changed_.notify_all();
    }
    int reads() {
        const std::lock_guard lock(mutex_);
        return reads_;
    }

private:
    static int check(int result, const char* call) {
        if (result < 0) {
            throw std::system_error(errno, std::generic_category(), call);
        }
        return result;
    }
    void serve() {
        for (;;) {
            pollfd fds[2] = {{inotify_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
            if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
                return;
            }
            // The opens first: a reader that came before the stop still gets its answer.
            if ((fds[0].revents & POLLIN) != 0) {
                alignas(inotify_event) char buf[4096];
                const ssize_t n = ::read(inotify_, buf, sizeof buf);
                for (char* p = buf; n > 0 && p < buf + n;) {
                    const auto* event = reinterpret_cast<const inotify_event*>(p);
                    if (event->len > 0 && std::string_view(event->name) == "present") {
                        answer();
                    }
                    p += sizeof(inotify_event) + event->len;
                }
                continue;
            }
            if (fds[1].revents != 0) {
                return;
            }
        }
    }
    void answer() {
        std::unique_lock lock(mutex_);
        ++reads_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return released_; });
        lock.unlock();
        if (::write(fifo_, text_.data(), text_.size()) != static_cast<ssize_t>(text_.size())) {
            ADD_FAILURE() << "cannot answer a read of " << file_;
        }
    }

    std::filesystem::path file_;
    std::string text_;  // what the plain file held
    int fifo_ = -1;     // O_RDWR: it counts as a writer, so a reader waits instead of seeing EOF
    int inotify_ = -1;
    int stop_[2] = {-1, -1};
    std::mutex mutex_;
    std::condition_variable changed_;
    int reads_ = 0;
    bool released_ = false;
    std::thread server_;  // started last, once every member above exists
};

// Holds every write while paused: the executor's worker stays in the middle of its batch
// until resume().
class PausingWriter final : public AttributeWriter {
public:
    explicit PausingWriter(AttributeWriter& writer) : writer_(writer) {}
    int write(const std::filesystem::path& file, const std::string& value) override {
        {
            std::unique_lock lock(mutex_);
            ++held_;
            changed_.notify_all();
            changed_.wait(lock, [this] { return !paused_; });
            --held_;
        }
        return writer_.write(file, value);
    }
    void pause() {
        const std::lock_guard lock(mutex_);
        paused_ = true;
    }
    void resume() {
        {
            const std::lock_guard lock(mutex_);
            paused_ = false;
        }
        changed_.notify_all();
    }
    // Waits (10 s at most) until a write is held.
    bool wait_until_holding() {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, 10s, [this] { return held_ > 0; });
    }

private:
    AttributeWriter& writer_;
    std::mutex mutex_;
    std::condition_variable changed_;
    int held_ = 0;
    bool paused_ = false;
};

// The engine writes through a PausingWriter, and its reads of the machine can be made slow.
struct EngineAdmissionTest : EngineTest {
    void SetUp() override {
        // Long enough that a batch waiting for a change still being admitted never gives up
        // on it here, however slow the reads of a loaded CI host.
        setup.settings.arrival_wait = 10s;
        engine = std::make_unique<Engine>(setup, writer, events, loop.post());
        engine->start();
    }
    void TearDown() override {
        // The engine's shutdown waits for its threads: nothing may hold them.
        writer.resume();
        if (present) {
            present->release();
        }
        EngineTest::TearDown();
        engine.reset();  // before the writer and the FIFO it uses
        present.reset();
    }
    // The admission thread is busy from now on: a re-read (as after a uevent) waits in a slow
    // read of the machine until present->release().
    void hold_admission() {
        present = std::make_unique<SlowPresent>(machine.fs);
        engine->refresh_later();
        ASSERT_TRUE(present->wait_for_reads(1));
    }

    PausingWriter writer{machine.writer};
    std::unique_ptr<SlowPresent> present;
};

TEST_F(EngineAdmissionTest, ChangesThatComeWhileAdmissionIsBusyShareOneReadAndOneBatch) {
    // A batch runs, held at its first write: the changes below queue behind it and make the
    // next batch, whatever the coalescing window.
    writer.pause();
    std::optional<ChangeAnswer> running;
    engine->change(ask(Action::Offline, "1", ":1.2"),
                   [&](ChangeAnswer got) { running = std::move(got); });
    ASSERT_TRUE(writer.wait_until_holding());
    // The loop has not run the executor's busy report yet, so the engine takes the re-read.
    ASSERT_NO_FATAL_FAILURE(hold_admission());

    constexpr int kChanges = 8;
    std::vector<std::optional<ChangeAnswer>> answers(kChanges);
    for (int i = 0; i < kChanges; ++i) {
        engine->change(ask(Action::Offline, std::to_string(2 + i), ":1." + std::to_string(10 + i)),
                       [&answers, i](ChangeAnswer got) { answers[i] = std::move(got); });
    }
    // Answered once every change before it was admitted.
    std::optional<ProfileAnswer> dry_run;
    ProfileAsk night;
    night.name = "night";
    night.dry_run = true;
    night.caller = ":1.1";
    engine->apply_profile(night, [&](ProfileAnswer got) { dry_run = std::move(got); });
    present->release();
    ASSERT_TRUE(loop.pump_until([&] { return dry_run.has_value(); }));
    // The re-read, one for all eight changes, and the dry run's.
    EXPECT_EQ(present->reads(), 3);

    writer.resume();
    ASSERT_TRUE(loop.pump_until([&] {
        return running && events.batches.size() == 2 &&
               std::all_of(answers.begin(), answers.end(),
                           [](const auto& a) { return a.has_value(); });
    }));
    ASSERT_TRUE(std::holds_alternative<RequestResult>(*running));
    std::set<std::uint64_t> batch_ids;
    for (const auto& answer : answers) {
        ASSERT_TRUE(std::holds_alternative<RequestResult>(*answer));
        EXPECT_EQ(std::get<RequestResult>(*answer).outcome, Outcome::Ok);
        batch_ids.insert(std::get<RequestResult>(*answer).batch_id);
    }
    EXPECT_EQ(batch_ids, std::set<std::uint64_t>{events.batches[1].batch_id});
    EXPECT_NE(events.batches[1].batch_id, std::get<RequestResult>(*running).batch_id);
    EXPECT_EQ(events.batches[1].requests, std::size_t{kChanges});
    EXPECT_EQ(machine.fs.online(), set({0, 10, 11, 12, 13, 14, 15}));
}

// Two changes received while nothing runs, admitted by two reads (a dry run between them
// closes the first list): the first change's batch waits for the second, which was received
// before it could start, instead of leaving it a batch of its own.
TEST_F(EngineAdmissionTest, AChangeReceivedBeforeABatchStartsJoinsItThoughAdmittedByALaterRead) {
    ASSERT_NO_FATAL_FAILURE(hold_admission());
    std::optional<ChangeAnswer> first;
    std::optional<ProfileAnswer> dry_run;
    std::optional<ChangeAnswer> second;
    engine->change(ask(Action::Offline, "2", ":1.2"),
                   [&](ChangeAnswer got) { first = std::move(got); });
    ProfileAsk night;
    night.name = "night";
    night.dry_run = true;
    night.caller = ":1.1";
    engine->apply_profile(night, [&](ProfileAnswer got) { dry_run = std::move(got); });
    engine->change(ask(Action::Offline, "3", ":1.3"),
                   [&](ChangeAnswer got) { second = std::move(got); });
    present->release();
    ASSERT_TRUE(
        loop.pump_until([&] { return first && dry_run && second && !events.batches.empty(); }));
    ASSERT_TRUE(std::holds_alternative<RequestResult>(*first));
    ASSERT_TRUE(std::holds_alternative<RequestResult>(*second));
    EXPECT_EQ(std::get<RequestResult>(*first).outcome, Outcome::Ok);
    EXPECT_EQ(std::get<RequestResult>(*first).batch_id, std::get<RequestResult>(*second).batch_id);
    ASSERT_EQ(events.batches.size(), 1u);
    EXPECT_EQ(events.batches[0].requests, 2u);
    EXPECT_EQ(machine.fs.online(), CpuSet::range(0, 15) - set({2, 3}));
}

TEST_F(EngineAdmissionTest, AChangeMadeAfterAnotherAdmissionTaskIsAdmittedAfterIt) {
    ASSERT_NO_FATAL_FAILURE(hold_admission());
    // A change (whose admission waits for company), the profile that takes package 1
    // (4-7, 12-15) offline, and a change that brings CPU 4 back. The last must not join the
    // first: admitted before the profile, it would find CPU 4 online, and the profile would
    // then take it.
    std::optional<ChangeAnswer> first;
    std::optional<ProfileAnswer> profile_done;
    std::optional<ChangeAnswer> last;
    engine->change(ask(Action::Offline, "2"), [&](ChangeAnswer got) { first = std::move(got); });
    ProfileAsk night;
    night.name = "night";
    night.caller = ":1.1";
    engine->apply_profile(night, [&](ProfileAnswer got) { profile_done = std::move(got); });
    engine->change(ask(Action::Online, "4"), [&](ChangeAnswer got) { last = std::move(got); });
    present->release();

    ASSERT_TRUE(loop.pump_until([&] { return first && profile_done && last; }));
    EXPECT_TRUE(std::holds_alternative<RequestResult>(*first));
    EXPECT_TRUE(std::holds_alternative<ProfileDone>(*profile_done));
    ASSERT_TRUE(std::holds_alternative<RequestResult>(*last));
    EXPECT_EQ(std::get<RequestResult>(*last).outcome, Outcome::Ok);
    EXPECT_EQ(machine.fs.online(), set({0, 1, 3, 4, 8, 9, 10, 11}));
}

}  // namespace
}  // namespace cpuhpd::test
