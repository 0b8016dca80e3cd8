// An unprivileged caller on a bus configured like the system bus (which lets everybody send
// signals) forging every signal the daemon listens to: the bus driver's NameOwnerChanged
// (for a holder, for power-profiles-daemon) and power-profiles-daemon's PropertiesChanged,
// well-formed and malformed, unicast to the daemon and broadcast. None of them may end a
// hold, apply a profile or stop the daemon. Plus the state files the daemon reads at start
// and the length of quoted caller input.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fixture.h"
#include "harness/in_child.h"

namespace cpuhpd::itest {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCpuhpd = "org.cpuhpd1";
constexpr const char* kDriver = "org.freedesktop.DBus";
constexpr const char* kDriverPath = "/org/freedesktop/DBus";
constexpr const char* kPpd = "net.hadess.PowerProfiles";
constexpr const char* kPpdPath = "/net/hadess/PowerProfiles";

// The bodies a forger sends as NameOwnerChanged: well-formed (name, old, new), then
// malformed ones that sdbus-c++ 1.2 cannot read as (sss).
std::string forge_name_owner_changed(RawClient& c, const std::string& destination,
                                     const std::string& name, const std::string& old_owner,
                                     const std::string& new_owner) {
    std::string errors;
    const auto send = [&](const std::function<int(sd_bus_message*)>& body) {
        errors += c.send_signal(destination, kDriverPath, kDriver, "NameOwnerChanged", body);
    };
    send([&](sd_bus_message* m) {
        return sd_bus_message_append(m, "sss", name.c_str(), old_owner.c_str(), new_owner.c_str());
    });
    send([&](sd_bus_message* m) { return sd_bus_message_append(m, "s", name.c_str()); });
    send([&](sd_bus_message* m) { return sd_bus_message_append(m, "u", 7U); });
    send([&](sd_bus_message*) { return 0; });  // no arguments at all
    return errors;
}

// PropertiesChanged of net.hadess.PowerProfiles saying ActiveProfile is `profile`, then
// malformed ones (ActiveProfile as a number, a truncated body).
std::string forge_active_profile(RawClient& c, const std::string& destination,
                                 const std::string& profile) {
    std::string errors;
    const auto send = [&](const std::function<int(sd_bus_message*)>& body) {
        errors += c.send_signal(destination, kPpdPath, "org.freedesktop.DBus.Properties",
                                "PropertiesChanged", body);
    };
    send([&](sd_bus_message* m) {
        return sd_bus_message_append(m, "sa{sv}as", kPpd, 1, "ActiveProfile", "s", profile.c_str(),
                                     0);
    });
    send([&](sd_bus_message* m) {
        return sd_bus_message_append(m, "sa{sv}as", kPpd, 1, "ActiveProfile", "u", 3U, 0);
    });
    send([&](sd_bus_message* m) { return sd_bus_message_append(m, "s", kPpd); });
    return errors;
}

// The project's bus policy on a bus that denies method calls by default and lets everybody
// send signals, as Debian's system bus does.
class ForgedSignalsTest : public CpuhpdTest {
protected:
    bool project_policy() const override { return true; }
    void SetUp() override {
        if (geteuid() != 0) {
            GTEST_SKIP() << "needs root to switch to uid 65534 in a child";
        }
        CpuhpdTest::SetUp();
    }
    bool files_are(const std::set<unsigned>& offline) {
        return eventually([&] { return tree().online_files() == expected_files(offline); }, 10s);
    }
};

TEST_F(ForgedSignalsTest, NameOwnerChangedFromAnotherCallerNeitherEndsAHoldNorStopsTheDaemon) {
    RawClient holder(world_->bus_address());
    auto held = holder.hold_cpus("4-7", "offline", "orchestrator", "kernel update");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd fd{held.fd};
    ASSERT_TRUE(files_are({4, 5, 6, 7}));
    const std::string holder_name = holder.unique_name();
    const std::string daemon = client_->name_owner(kCpuhpd);
    ASSERT_FALSE(daemon.empty());
    const std::string address = world_->bus_address();
    const std::string out = as_user(kNobody, kNobody, [&](const std::function<void()>&) {
        RawClient c(address);
        std::string s;
        for (const std::string& destination : {daemon, std::string()}) {
            s += forge_name_owner_changed(c, destination, holder_name, holder_name, "");
        }
        // The daemon handles one connection's messages in order: every signal above has
        // been handled when this reply comes.
        return s + "online=" + c.get_string("Online");
    });
    EXPECT_EQ(out, "online=0-3,8-15");
    EXPECT_TRUE(client_->name_has_owner(kCpuhpd)) << world_->daemon_log();
    EXPECT_EQ(client_->get_holds().size(), 1U);
    EXPECT_EQ(tree().online_files(), expected_files({4, 5, 6, 7}));
    EXPECT_TRUE(log_shows(*world_, "signal dropped: sent by :")) << world_->daemon_log();
    EXPECT_EQ(world_->daemon_log().find("left the bus"), std::string::npos);
    // The hold is still its holder's: its release restores the CPUs.
    const CallResult released = holder.release_hold(held.hold_id);
    EXPECT_TRUE(released.ok) << released.describe();
    EXPECT_TRUE(files_are({}));
}

// Power profiles followed, and no power-profiles-daemon on the bus: a caller claiming to be
// it (NameOwnerChanged naming itself the owner) and announcing power-saver is ignored.
class ForgedPowerProfilesTest : public ForgedSignalsTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.extra_yaml =
            "profiles:\n"
            "  evacuate:\n"
            "    offline: \"package:1\"\n"
            "power_profiles:\n"
            "  power-saver: evacuate\n"
            "  balanced: none\n";
        return c;
    }
};

TEST_F(ForgedPowerProfilesTest, ACallerClaimingToBePowerProfilesDaemonChangesNothing) {
    ASSERT_TRUE(log_shows(*world_, std::string(kPpd) + " is not on the bus"))
        << world_->daemon_log();
    const std::string daemon = client_->name_owner(kCpuhpd);
    ASSERT_FALSE(daemon.empty());
    const std::string address = world_->bus_address();
    const std::string out = as_user(kNobody, kNobody, [&](const std::function<void()>&) {
        RawClient c(address);
        const std::string me = c.unique_name();
        std::string s;
        for (const std::string& destination : {daemon, std::string()}) {
            s += forge_name_owner_changed(c, destination, kPpd, "", me);
            s += forge_active_profile(c, destination, "power-saver");
        }
        return s + "online=" + c.get_string("Online");
    });
    EXPECT_EQ(out, "online=0-15");
    EXPECT_TRUE(client_->name_has_owner(kCpuhpd)) << world_->daemon_log();
    EXPECT_TRUE(log_shows(*world_, "PropertiesChanged of power-profiles-daemon: signal dropped"))
        << world_->daemon_log();
    EXPECT_EQ(client_->get_string("ActiveProfile"), "");
    EXPECT_EQ(tree().online_files(), expected_files({}));
    const std::string log = world_->daemon_log();
    EXPECT_EQ(log.find("is owned by"), std::string::npos) << log;
    EXPECT_EQ(log.find("applying profile"), std::string::npos) << log;
}

// Files under the state directory that cpuhpd could not have written are moved aside at
// start, never waited on or trusted.
class HostileStateFileTest : public CpuhpdTest {
protected:
    virtual void make(const fs::path& file) = 0;
    void prepare_tree(test::FakeSysfs&) override {
        fs::create_directories(state());
        make(state() / "profile");
    }
    fs::path state() const { return world_->dir() / "state"; }
};

// A FIFO hung the start-up (blocked in open, SIGTERM unheard).
class FifoProfileStateTest : public HostileStateFileTest {
protected:
    void make(const fs::path& file) override { ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0); }
};

TEST_F(FifoProfileStateTest, DaemonStartsAndMovesItAside) {
    EXPECT_TRUE(log_shows(*world_, "is not a regular file")) << world_->daemon_log();
    EXPECT_TRUE(log_shows(*world_, "moved to " + (state() / "profile.rejected").string()));
    EXPECT_TRUE(fs::is_fifo(state() / "profile.rejected"));
    EXPECT_FALSE(fs::exists(fs::symlink_status(state() / "profile")));
    EXPECT_EQ(client_->get_string("Online"), "0-15");
}

// A well-formed state file that somebody else owns would make the daemon believe a profile
// is in force (and give its CPUs back at revert).
class ForeignProfileStateTest : public HostileStateFileTest {
protected:
    void make(const fs::path& file) override {
        std::ofstream(file) << "evacuate\n4-7\n";
        ASSERT_EQ(::chown(file.c_str(), kNobody, kNobody), 0);
    }
    void SetUp() override {
        if (geteuid() != 0) {
            GTEST_SKIP() << "needs root to give the file to uid 65534";
        }
        HostileStateFileTest::SetUp();
    }
};

TEST_F(ForeignProfileStateTest, IsNotBelievedAndMovedAside) {
    EXPECT_TRUE(log_shows(*world_, "owned by uid 65534")) << world_->daemon_log();
    EXPECT_TRUE(fs::exists(state() / "profile.rejected"));
    EXPECT_EQ(client_->get_string("ActiveProfile"), "");
}

// Quoted caller input is at most 256 bytes in an error, however long the input.
TEST_F(CpuhpdTest, ALongProfileNameIsQuotedShort) {
    const std::string name(100000, 'x');
    const CallResult r = client_->call_with_entries("ApplyProfile", name, {});
    ASSERT_FALSE(r.ok);
    EXPECT_NE(r.error_message.find("...(100000 bytes)"), std::string::npos) << r.error_message;
    EXPECT_LT(r.error_message.size(), 512U) << r.error_message.size();
}

// SIGTERM during the start-up (here: while it waits on a slow sysfs read) ends the daemon
// before it takes the name: it was blocked, for the loop's signalfd, and is looked for between
// the start-up's steps.
TEST(StartUpTest, SigtermWhileStartingEndsTheDaemonBeforeItTakesTheName) {
    World world;
    const fs::path online = fs::path(world.tree().root()) / "devices/system/cpu/cpu5/online";
    fs::remove(online);
    ASSERT_EQ(::mkfifo(online.c_str(), 0644), 0);
    HangingRead slow(online);
    ASSERT_TRUE(slow.holding());
    world.start_bus();
    world.start_daemon({}, false);
    ASSERT_TRUE(slow.wait_for_reader(15000ms)) << world.daemon_log();
    ASSERT_EQ(::kill(world.daemon().pid(), SIGTERM), 0);
    slow.release("1");
    ASSERT_TRUE(world.daemon().wait_until(Clock::now() + 15s)) << world.daemon_log();
    EXPECT_EQ(world.daemon().exit_code(), 0) << world.daemon_log();
    EXPECT_NE(world.daemon_log().find("received SIGTERM while starting"), std::string::npos)
        << world.daemon_log();
    EXPECT_EQ(world.daemon_log().find("serving org.cpuhpd1"), std::string::npos)
        << world.daemon_log();
}

}  // namespace
}  // namespace cpuhpd::itest
