// Following power-profiles-daemon (config power_profiles): the real power-profiles-daemon on
// the private bus, switched with the real powerprofilesctl, which it authorizes with the
// real polkitd (net.hadess.PowerProfiles.switch-profile); cpuhpd applies and reverts the
// mapped profiles on the fake tree.
#include <gtest/gtest.h>

#include <iostream>
#include <thread>

#include "fixture.h"
#include "harness/polkitd.h"
#include "harness/power_profiles_daemon.h"

namespace cpuhpd::itest {
namespace {

// Whoever asks may switch the power profile (the test runs as root outside any session,
// which the action's defaults refuse).
constexpr const char* kRules = R"(polkit.addRule(function(action, subject) {
    if (action.id == "net.hadess.PowerProfiles.switch-profile")
        return polkit.Result.YES;
    return polkit.Result.NOT_HANDLED;
});
)";

// Package 1: CPUs 4-7 and their SMT siblings 12-15.
const std::set<unsigned> kPackage1{4, 5, 6, 7, 12, 13, 14, 15};

// A PinnedBatchTest for its held batches (one test uses them); the others run with the
// default settings (coalescing, the tree re-read).
class PowerProfilesTest : public PinnedBatchTest {
protected:
    virtual std::string profiles() const {
        return "profiles:\n"
               "  evacuate:\n"
               "    offline: \"package:1\"\n";
    }
    // The worked example of config/cpuhpd.yaml.
    virtual std::string mapping() const {
        return "power_profiles:\n"
               "  power-saver: evacuate\n"
               "  balanced: none\n"
               "  performance: none\n";
    }
    std::string extra_yaml() const override { return profiles() + mapping(); }
    DaemonConfig config() const override {
        DaemonConfig c;
        c.extra_yaml = extra_yaml();
        return c;
    }

    void SetUp() override {
        // cpuhpd starts first: power-profiles-daemon appears on the bus after it.
        CpuhpdTest::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        for (const std::string& why :
             {Polkitd::unavailable_reason(), PowerProfilesDaemon::unavailable_reason()}) {
            if (!why.empty()) {
                GTEST_SKIP() << why;
            }
        }
        client_->subscribe();
        try {
            polkitd_.start(world_->dir(), world_->bus_address(), kRules,
                           {PowerProfilesDaemon::kActions});
        } catch (const std::exception& e) {
            FAIL() << e.what();
        }
    }
    void TearDown() override {
        if (HasFailure()) {
            std::cerr << "---- power-profiles-daemon ----\n"
                      << ppd_.log() << "---- polkitd ----\n"
                      << polkitd_.log() << "----\n";
        }
        ppd_.stop();
        polkitd_.stop();
        CpuhpdTest::TearDown();
    }

    void start_ppd() {
        try {
            ppd_.start(world_->dir(), world_->bus_address());
        } catch (const std::exception& e) {
            FAIL() << e.what();
        }
    }
    ::testing::AssertionResult set(const std::string& profile) {
        const RunResult r = ppd_.ctl({"set", profile});
        if (r.exit_code != 0) {
            return ::testing::AssertionFailure()
                   << "powerprofilesctl set " << profile << ": " << r.describe();
        }
        const RunResult got = ppd_.ctl({"get"});
        if (got.out != profile + "\n") {
            return ::testing::AssertionFailure() << "powerprofilesctl get: " << got.describe();
        }
        return ::testing::AssertionSuccess();
    }
    std::string active() { return client_->get_string("ActiveProfile"); }
    // Waits (bounded) until cpuhpd announces (PropertiesChanged) ActiveProfile `name`, then
    // reads it back.
    ::testing::AssertionResult announces(const std::string& name, std::size_t from) {
        const bool seen = client_->wait_for(
            [&] {
                const auto& changes = client_->property_changes();
                for (std::size_t i = changes.size(); i > from; --i) {
                    const auto it = changes[i - 1].changed.find("ActiveProfile");
                    if (it != changes[i - 1].changed.end()) {
                        const auto* value = std::get_if<std::string>(&it->second);
                        return value != nullptr && *value == name;
                    }
                }
                return false;
            },
            30s);
        if (!seen) {
            return ::testing::AssertionFailure()
                   << "no PropertiesChanged with ActiveProfile '" << name << "' in 30 s";
        }
        if (active() != name) {
            return ::testing::AssertionFailure() << "ActiveProfile is '" << active() << "'";
        }
        return ::testing::AssertionSuccess();
    }

    Polkitd polkitd_;
    PowerProfilesDaemon ppd_;
};

TEST_F(PowerProfilesTest, PowerSaverEvacuatesPackage1AndBalancedBringsItBack) {
    ASSERT_TRUE(log_shows(*world_, "net.hadess.PowerProfiles is not on the bus"))
        << world_->daemon_log();
    ASSERT_NO_FATAL_FAILURE(start_ppd());
    // It starts balanced (none): nothing is in force, nothing to revert.
    ASSERT_TRUE(set("balanced"));
    EXPECT_EQ(active(), "");

    std::size_t from = client_->property_changes().size();
    ASSERT_TRUE(set("power-saver"));
    ASSERT_TRUE(announces("evacuate", from));
    EXPECT_EQ(tree().online_files(), expected_files(kPackage1));
    EXPECT_EQ(client_->get_string("ProfileCpus"), "4-7,12-15");

    from = client_->property_changes().size();
    ASSERT_TRUE(set("balanced"));
    ASSERT_TRUE(announces("", from));
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(client_->get_string("ProfileCpus"), "");

    const std::string log = world_->daemon_log();
    std::cout << log;
    EXPECT_TRUE(any_line_matches(log, "power profile power-saver: profile evacuate applied: ok"))
        << log;
    EXPECT_TRUE(any_line_matches(log, "power profile balanced: profile evacuate reverted: ok"))
        << log;
}

TEST_F(PowerProfilesTest, TheProfileInForceAtStartIsFollowed) {
    ASSERT_NO_FATAL_FAILURE(start_ppd());
    ASSERT_TRUE(set("power-saver"));
    ASSERT_TRUE(log_shows(*world_, "power profile power-saver: profile evacuate applied: ok"))
        << world_->daemon_log();
    ASSERT_TRUE(set("balanced"));
    ASSERT_TRUE(log_shows(*world_, "power profile balanced: profile evacuate reverted: ok"))
        << world_->daemon_log();

    // A new cpuhpd while power-profiles-daemon says power-saver: its first read applies it.
    world_->stop_daemon();
    ASSERT_TRUE(set("power-saver"));
    EXPECT_EQ(tree().online_files(), expected_files({}));
    try {
        world_->start_daemon(config());
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    client_ = std::make_unique<RawClient>(world_->bus_address());
    client_->subscribe();
    ASSERT_TRUE(log_shows(*world_, "power profile power-saver: profile evacuate applied: ok"))
        << world_->daemon_log();
    EXPECT_EQ(active(), "evacuate");
    EXPECT_EQ(tree().online_files(), expected_files(kPackage1));
}

// Balanced is not in the mapping: switching to it leaves the profile in force alone.
class UnmappedPowerProfileTest : public PowerProfilesTest {
protected:
    std::string mapping() const override {
        return "power_profiles:\n"
               "  power-saver: evacuate\n"
               "  performance: none\n";
    }
};

TEST_F(UnmappedPowerProfileTest, AnUnmappedProfileChangesNothing) {
    ASSERT_NO_FATAL_FAILURE(start_ppd());
    ASSERT_TRUE(log_shows(*world_, "power profile balanced is not in power_profiles"))
        << world_->daemon_log();
    EXPECT_EQ(active(), "");

    const std::size_t from = client_->property_changes().size();
    ASSERT_TRUE(set("power-saver"));
    ASSERT_TRUE(announces("evacuate", from));
    const std::size_t lines_before = world_->daemon_log().size();

    ASSERT_TRUE(set("balanced"));
    // Bounded wait for the daemon to have seen the switch, then nothing else happened.
    ASSERT_TRUE(eventually(
        [&] {
            return world_->daemon_log()
                       .substr(lines_before)
                       .find("power profile balanced is not in power_profiles") !=
                   std::string::npos;
        },
        10s))
        << world_->daemon_log();
    EXPECT_EQ(active(), "evacuate");
    EXPECT_EQ(tree().online_files(), expected_files(kPackage1));
}

// A switch that comes while somebody else's profile change runs is refused Busy inside the
// daemon; the follower applies it when that change ends.
class PowerProfileAfterBusyTest : public PowerProfilesTest {
protected:
    std::string profiles() const override {
        return PowerProfilesTest::profiles() +
               "  lean:\n"
               "    offline: \"5\"\n";
    }
    DaemonConfig config() const override { return PinnedBatchTest::config(); }  // held batches
};

TEST_F(PowerProfileAfterBusyTest, ASwitchDuringAnotherProfileChangeIsFollowedWhenItEnds) {
    ASSERT_NO_FATAL_FAILURE(start_ppd());
    ASSERT_TRUE(set("balanced"));
    ASSERT_TRUE(log_shows(*world_, "power profile is balanced: no profile wanted"))
        << world_->daemon_log();

    // An administrator applies lean; its batch is held at its only CPU.
    block_writes_to(5);
    CallResult lean;
    std::thread admin([&] {
        RawClient c(world_->bus_address());
        lean = c.call("ApplyProfile", "lean", {}, 60s);
    });
    Join join{admin};
    ASSERT_TRUE(eventually([&] { return client_->get_bool("Busy"); }, 10s))
        << "the lean batch did not start\n"
        << world_->daemon_log();

    ASSERT_TRUE(set("power-saver"));
    ASSERT_TRUE(log_shows(*world_,
                          "power profile power-saver: applying profile evacuate when the change "
                          "in progress ends"))
        << world_->daemon_log();

    // The held write goes through: lean ends, then the follower goes from lean to evacuate.
    tree().write("devices/system/cpu/online", "0-4,6-15");
    Fd cpu5_reader{drain_after_write(tree().online_file(5))};
    ASSERT_GE(cpu5_reader.fd, 0) << "the daemon never wrote cpu5";
    admin.join();
    ASSERT_TRUE(lean.ok) << lean.describe();
    ASSERT_TRUE(log_shows(*world_, "power profile power-saver: profile evacuate applied: ok"))
        << world_->daemon_log();
    EXPECT_EQ(active(), "evacuate");
    // Evacuate took over CPU 5 from lean: its revert brings the whole package back.
    EXPECT_EQ(client_->get_string("ProfileCpus"), "4-7,12-15");
    unblock(5, "0");
    EXPECT_EQ(tree().online_files(), expected_files(kPackage1));
}

}  // namespace
}  // namespace cpuhpd::itest
