// Holds outlive the daemon and are defended: a hold taken, the daemon killed with SIGKILL and
// started again, the hold still refusing others; AttachHold (and cpuctl's own re-attach with
// the command still running); the grace period ending an unclaimed hold with its restore;
// and a held CPU's online file written behind the daemon's back, put back, HoldViolated.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fixture.h"
#include "harness/in_child.h"

namespace cpuhpd::itest {
namespace {

constexpr const char* kHeld = "org.cpuhpd1.Error.Held";
constexpr const char* kNoSuchHold = "org.cpuhpd1.Error.NoSuchHold";
constexpr const char* kAccessDeniedName = "org.freedesktop.DBus.Error.AccessDenied";

bool written(const std::filesystem::path& file) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    return !ec && size > 0;
}

class HoldPersistenceTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.uevent_socket = true;  // the daemon keeps its state from uevents, as on /sys
        c.extra_yaml = "hold_grace_s: " + std::to_string(grace_s_) + "\n";
        return c;
    }

    bool files_are(const std::set<unsigned>& offline) {
        return eventually([&] { return tree().online_files() == expected_files(offline); }, 15s);
    }

    int grace_s_ = 30;
};

TEST_F(HoldPersistenceTest, AHoldSurvivesSigkillRefusesOthersAndIsReattached) {
    RawClient orchestrator(world_->bus_address());
    auto held = orchestrator.hold_cpus("4-5", "offline", "live-update", "kernel update");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd old_fd{held.fd};
    EXPECT_TRUE(files_are({4, 5}));

    kill_daemon();
    restart_daemon();

    // Still there, with its id, its names and its CPUs still offline.
    const auto holds = client_->get_holds();
    ASSERT_EQ(holds.size(), 1u);
    EXPECT_EQ(holds[0].id, held.hold_id);
    EXPECT_EQ(holds[0].cpus, "4-5");
    EXPECT_EQ(holds[0].who, "live-update");
    EXPECT_EQ(tree().online_files(), expected_files({4, 5}));
    EXPECT_NE(world_->daemon().err().find("kept across the restart"), std::string::npos)
        << world_->daemon().err();

    // Others are still refused.
    const auto refused = client_->call("Online", "4");
    EXPECT_FALSE(refused.ok);
    EXPECT_EQ(refused.error_name, kHeld) << refused.describe();

    // Bad re-attaches change nothing: an id that does not exist, another uid's hold.
    const auto none = orchestrator.attach_hold(held.hold_id + 100);
    EXPECT_FALSE(none.call.ok);
    EXPECT_EQ(none.call.error_name, kNoSuchHold) << none.call.error_message;
    if (geteuid() == 0) {
        const std::string address = world_->bus_address();
        const std::uint64_t id = held.hold_id;
        const std::string out = as_user(kNobody, kNobody, [&](const std::function<void()>&) {
            RawClient c(address);
            const auto r = c.attach_hold(id);
            return r.call.ok ? std::string("ok") : r.call.error_name;
        });
        EXPECT_EQ(out, kAccessDeniedName);
    }
    ASSERT_EQ(client_->get_holds().size(), 1u);
    EXPECT_EQ(client_->get_holds()[0].holder, orchestrator.unique_name());  // the old name

    // Its holder re-attaches and gets a new fd.
    const auto attached = orchestrator.attach_hold(held.hold_id);
    ASSERT_TRUE(attached.call.ok) << attached.call.describe();
    Fd new_fd{attached.fd};
    ASSERT_GE(new_fd.fd, 0);
    EXPECT_TRUE(eventually(
        [&] { return world_->daemon().err().find("re-attached by") != std::string::npos; }, 5s));

    // Closing the new fd ends the hold and restores.
    new_fd.reset();
    EXPECT_TRUE(eventually([&] { return client_->get_holds().empty(); }, 10s));
    EXPECT_TRUE(files_are({}));
}

TEST_F(HoldPersistenceTest, AnUnclaimedHoldEndsWithItsRestoreAfterTheGracePeriod) {
    grace_s_ = 1;
    client_.reset();
    world_.reset();
    SetUp();  // again, with the short grace period
    RawClient orchestrator(world_->bus_address());
    auto held = orchestrator.hold_cpus("6-7", "offline", "live-update", "");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd fd{held.fd};
    kill_daemon();
    restart_daemon();
    // Held at first (the restarted daemon kept it), then restored when nobody came back.
    EXPECT_TRUE(files_are({}));
    EXPECT_TRUE(eventually([&] { return client_->get_holds().empty(); }, 10s));
    EXPECT_NE(world_->daemon().err().find("did not re-attach within 1 s"), std::string::npos)
        << world_->daemon().err();
}

TEST_F(HoldPersistenceTest, CpuctlReattachesOnItsOwnAndTheCommandRunsOn) {
    grace_s_ = 2;
    client_.reset();
    world_.reset();
    SetUp();
    const auto pid_file = world_->dir() / "command.pid";
    auto holder = world_->spawn_cpuctl(
        {"offline", "4-5", "--", "sh", "-c", "echo $$ > " + pid_file.string() + "; exec sleep 60"});
    ASSERT_TRUE(eventually([&] { return written(pid_file); }, 20s)) << holder->err();
    ASSERT_EQ(client_->get_holds().size(), 1u);
    const auto id = client_->get_holds()[0].id;

    kill_daemon();
    restart_daemon();
    EXPECT_TRUE(
        eventually([&] { return holder->err().find("re-attached") != std::string::npos; }, 10s))
        << holder->err();
    // Past the grace period: the hold is kept, the command runs on.
    EXPECT_FALSE(eventually([&] { return client_->get_holds().empty(); },
                            std::chrono::seconds(grace_s_ + 2)));
    ASSERT_EQ(client_->get_holds().size(), 1u);
    EXPECT_EQ(client_->get_holds()[0].id, id);
    EXPECT_EQ(tree().online_files(), expected_files({4, 5}));
    pid_t command = 0;
    std::ifstream(pid_file) >> command;
    ASSERT_GT(command, 0);
    EXPECT_EQ(::kill(command, 0), 0) << "the command should still run";
    EXPECT_TRUE(holder->running());

    // The command ends: cpuctl releases the same hold and the CPUs come back.
    ::kill(command, SIGTERM);
    ASSERT_TRUE(holder->wait_until(Clock::now() + 20s)) << holder->err();
    EXPECT_EQ(holder->exit_code(), 128 + SIGTERM) << holder->err();
    EXPECT_NE(holder->err().find("hold " + std::to_string(id) + " released"), std::string::npos)
        << holder->err();
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_TRUE(client_->get_holds().empty());
}

TEST_F(HoldPersistenceTest, AHeldCpuWrittenBehindTheDaemonsBackIsPutBack) {
    RawClient orchestrator(world_->bus_address());
    auto held = orchestrator.hold_cpus("4-5", "offline", "live-update", "");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd fd{held.fd};
    client_->subscribe();
    ASSERT_TRUE(files_are({4, 5}));

    // A udev rule's write, and the kernel's uevent for it.
    tree().set_online(4, true);
    world_->send_uevent("online", 4);
    ASSERT_TRUE(client_->wait_for([&] { return !client_->violations().empty(); }, 10s))
        << world_->daemon().err();
    const auto& v = client_->violations().at(0);
    EXPECT_EQ(v.hold_id, held.hold_id);
    EXPECT_EQ(v.cpus, "4");
    EXPECT_EQ(v.online, "4");
    EXPECT_EQ(v.action, "restore");
    EXPECT_EQ(v.violations, 1u);
    EXPECT_EQ(v.who, "live-update");
    EXPECT_EQ(v.holder, orchestrator.unique_name());
    EXPECT_TRUE(files_are({4, 5}));
    EXPECT_NE(world_->daemon().err().find("CPU 4 came online without cpuhpd"), std::string::npos)
        << world_->daemon().err();
    EXPECT_EQ(client_->get_holds().size(), 1u);
}

TEST_F(HoldPersistenceTest, AGracePeriodOutOfRangeIsAConfigErrorWithFileLineAndKey) {
    client_.reset();
    world_->stop_daemon();
    DaemonConfig bad = config();
    bad.extra_yaml = "hold_grace_s: 0\n";
    try {
        world_->start_daemon(bad);
        ADD_FAILURE() << "the daemon started with hold_grace_s: 0";
    } catch (const std::runtime_error& error) {
        const std::string text = error.what();
        EXPECT_NE(text.find("key 'hold_grace_s': '0' is out of range 1..86400"), std::string::npos)
            << text;
        EXPECT_NE(text.find("cpuhpd.yaml:"), std::string::npos) << text;
    }
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

}  // namespace
}  // namespace cpuhpd::itest
