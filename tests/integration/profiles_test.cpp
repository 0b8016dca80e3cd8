// Profiles (config profiles:): ApplyProfile, RevertProfile, ActiveProfile, ProfileCpus and
// Profiles over the bus, and `cpuctl profile`, against the real daemon on the fake tree.
#include <gtest/gtest.h>

#include <cstring>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

// Package 1 is CPUs 4-7 and their SMT siblings 12-15.
class ProfilesTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.extra_yaml =
            "profiles:\n"
            "  evacuate-package-1:\n"
            "    offline: \"package:1\"\n"
            "  lean:\n"
            "    offline: \"6-7,14-15 2\"\n"
            "  nosmt:\n"
            "    smt: \"off\"\n";
        return c;
    }

    std::string active() { return client_->get_string("ActiveProfile"); }
    std::string taken() { return client_->get_string("ProfileCpus"); }
};

TEST_F(ProfilesTest, RevertBringsBackWhatTheProfileTookAndNothingElse) {
    ASSERT_TRUE(client_->call("Offline", "5").ok);  // offline before the profile
    const CallResult applied = client_->call("ApplyProfile", "evacuate-package-1");
    ASSERT_TRUE(applied.ok) << applied.describe();
    EXPECT_EQ(applied.str("profile"), "evacuate-package-1");
    EXPECT_EQ(applied.str("offline"), "4,6-7,12-15");
    EXPECT_EQ(applied.str("online"), "");
    EXPECT_EQ(applied.str("taken"), "4,6-7,12-15");
    EXPECT_EQ(applied.str("active"), "evacuate-package-1");
    EXPECT_EQ(applied.str("outcome"), "ok");
    EXPECT_EQ(applied.cpus(), (std::set<unsigned>{4, 6, 7, 12, 13, 14, 15}));
    EXPECT_EQ(tree().online_files(), expected_files({4, 5, 6, 7, 12, 13, 14, 15}));
    EXPECT_EQ(active(), "evacuate-package-1");
    EXPECT_EQ(taken(), "4,6-7,12-15");

    const CallResult reverted = client_->call_with_entries("RevertProfile", std::nullopt, {});
    ASSERT_TRUE(reverted.ok) << reverted.describe();
    EXPECT_EQ(reverted.str("online"), "4,6-7,12-15");
    EXPECT_EQ(reverted.str("active"), "");
    EXPECT_EQ(tree().online_files(), expected_files({5}));
    EXPECT_EQ(active(), "");
    EXPECT_EQ(taken(), "");
}

TEST_F(ProfilesTest, SwitchingProfilesChangesOnlyTheCpusThatDiffer) {
    ASSERT_TRUE(client_->call("ApplyProfile", "evacuate-package-1").ok);
    const CallResult lean = client_->call("ApplyProfile", "lean");
    ASSERT_TRUE(lean.ok) << lean.describe();
    EXPECT_EQ(lean.str("online"), "4-5,12-13");
    EXPECT_EQ(lean.str("offline"), "2");
    EXPECT_EQ(lean.str("taken"), "2,6-7,14-15");
    // Only the CPUs that moved were written.
    EXPECT_EQ(lean.cpus(), (std::set<unsigned>{2, 4, 5, 12, 13}));
    EXPECT_EQ(tree().online_files(), expected_files({2, 6, 7, 14, 15}));
    EXPECT_EQ(active(), "lean");
}

TEST_F(ProfilesTest, ADryRunSaysWhatWouldChangeAndChangesNothing) {
    const CallResult plan =
        client_->call("ApplyProfile", "nosmt", {{"dry_run", true}, {"strategy", "per-cpu"}});
    ASSERT_TRUE(plan.ok) << plan.describe();
    EXPECT_EQ(plan.str("offline"), "8-15");
    EXPECT_EQ(plan.str("active"), "");
    EXPECT_TRUE(plan.results.empty());
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(active(), "");
}

TEST_F(ProfilesTest, BadRequestsAreRefusedAndChangeNothing) {
    const CallResult unknown = client_->call("ApplyProfile", "no-such");
    EXPECT_EQ(unknown.error_name, "org.cpuhpd1.Error.NoSuchProfile");
    EXPECT_NE(unknown.error_message.find("evacuate-package-1, lean, nosmt"), std::string::npos)
        << unknown.error_message;
    EXPECT_EQ(client_->call_with_entries("RevertProfile", std::nullopt, {}).error_name,
              "org.cpuhpd1.Error.NoSuchProfile");
    EXPECT_EQ(client_->call("ApplyProfile", "").error_name, kInvalidArgs);
    EXPECT_EQ(client_->call("ApplyProfile", "lean", {{"mode", "best-effort"}}).error_name,
              kInvalidArgs);
    EXPECT_EQ(client_->call("ApplyProfile", "lean", {{"dry_run", std::uint32_t{1}}}).error_name,
              kInvalidArgs);
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(active(), "");
}

// The state directory keeps what the profile took: a restarted daemon can still revert it.
TEST_F(ProfilesTest, TheProfileInForceSurvivesARestart) {
    ASSERT_TRUE(client_->call("ApplyProfile", "evacuate-package-1").ok);
    client_.reset();
    world_->stop_daemon();
    world_->start_daemon(config());
    client_ = std::make_unique<RawClient>(world_->bus_address());
    EXPECT_EQ(active(), "evacuate-package-1");
    EXPECT_EQ(taken(), "4-7,12-15");
    ASSERT_TRUE(client_->call_with_entries("RevertProfile", std::nullopt, {}).ok);
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

TEST_F(ProfilesTest, CpuctlListsAppliesAndReverts) {
    RunResult list = cpuctl({"profile", "list"});
    EXPECT_EQ(list.exit_code, 0) << list.describe();
    EXPECT_EQ(list.out,
              "PROFILE             OFFLINE      SMT  MIN/NODE  ACTIVE\n"
              "evacuate-package-1  package:1    -    -         no\n"
              "lean                6-7,14-15 2  -    -         no\n"
              "nosmt               -            off  -         no\n");
    RunResult apply = cpuctl({"profile", "apply", "evacuate-package-1"});
    EXPECT_EQ(apply.exit_code, 0) << apply.describe();
    EXPECT_NE(apply.out.find("profile evacuate-package-1 applied: ok; offline 4-7,12-15, back "
                             "online -; in force: evacuate-package-1 (took 4-7,12-15)"),
              std::string::npos)
        << apply.out;
    RunResult json = cpuctl({"--json", "profile", "list"});
    EXPECT_NE(json.out.find("\"active\":\"evacuate-package-1\""), std::string::npos) << json.out;
    RunResult revert = cpuctl({"profile", "revert"});
    EXPECT_EQ(revert.exit_code, 0) << revert.describe();
    EXPECT_NE(revert.out.find("reverted: ok"), std::string::npos) << revert.out;
    EXPECT_EQ(tree().online_files(), expected_files({}));
    RunResult again = cpuctl({"profile", "revert"});
    EXPECT_EQ(again.exit_code, 1) << again.describe();
    EXPECT_NE(again.err.find("no profile is in force"), std::string::npos) << again.err;
    RunResult unknown = cpuctl({"profile", "apply", "nope"});
    EXPECT_EQ(unknown.exit_code, 2) << unknown.describe();
}

// cpu5/online cannot be written: the offline part of a profile that takes package 1 fails.
class ProfileFailureTest : public ProfilesTest {
protected:
    void SetUp() override {
        ProfilesTest::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        if (const int rc = tree().make_unwritable(5); rc != 0) {
            GTEST_SKIP() << "cannot make cpu5/online unwritable for root on this filesystem "
                            "(FS_IOC_SETFLAGS immutable: "
                         << std::strerror(rc) << ")";
        }
    }
};

// Atomic: a profile whose CPUs cannot all go offline is not in force, and takes nothing.
TEST_F(ProfileFailureTest, AProfileThatCannotBeAppliedIsNotInForce) {
    const CallResult failed = client_->call("ApplyProfile", "evacuate-package-1");
    ASSERT_TRUE(failed.ok) << failed.describe();
    EXPECT_EQ(failed.str("outcome"), "failed");
    EXPECT_EQ(failed.str("active"), "");
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(active(), "");
}

// Switching from lean fails half-way: lean's CPUs that evacuate leaves came back, the offline
// part rolled back, and lean stays in force with what of it is still offline.
TEST_F(ProfileFailureTest, AFailedSwitchLeavesTheOldProfileInForceWithWhatItStillHas) {
    ASSERT_TRUE(client_->call("ApplyProfile", "lean").ok);
    const CallResult failed = client_->call("ApplyProfile", "evacuate-package-1");
    ASSERT_TRUE(failed.ok) << failed.describe();
    EXPECT_EQ(failed.str("outcome"), "partial");
    EXPECT_EQ(tree().online_files(), expected_files({6, 7, 14, 15}));
    EXPECT_EQ(active(), "lean");
    EXPECT_EQ(taken(), "6-7,14-15");
    ASSERT_TRUE(client_->call_with_entries("RevertProfile", std::nullopt, {}).ok);
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(active(), "");
}

}  // namespace
}  // namespace cpuhpd::itest
