// SMT: SetSmt, smt/control, and numeric masks that happen to be every secondary thread.
#include <gtest/gtest.h>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

TEST_F(CpuhpdTest, SetSmtWithPerCpuStrategyChangesEverySecondaryThread) {
    client_->subscribe();
    CallResult res = client_->call("SetSmt", "off", {{"strategy", std::string("per-cpu")}});
    ASSERT_TRUE(res.ok) << res.describe();
    std::set<unsigned> secondaries{8, 9, 10, 11, 12, 13, 14, 15};
    EXPECT_EQ(res.cpus(), secondaries) << res.describe();
    EXPECT_EQ(res.str("strategy"), "per-cpu");
    EXPECT_EQ(res.str("outcome"), "ok");
    EXPECT_EQ(tree().online_files(), expected_files(secondaries));
    EXPECT_EQ(tree().read("devices/system/cpu/smt/control"), "on");
    res = client_->call("SetSmt", "on", {{"strategy", std::string("per-cpu")}});
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(res.str("action"), "online");
    EXPECT_EQ(tree().online_files(), expected_files({}));

    res = client_->call("SetSmt", "sideways");
    ASSERT_FALSE(res.ok) << res.describe();
    EXPECT_EQ(res.error_name, kInvalidArgs);
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

// The fake tree is not a kernel: a write of "off" to smt/control takes no CPU offline. The
// daemon must see that each CPU is still online, fail the atomic request and leave nothing
// changed, smt/control included.
TEST_F(CpuhpdTest, SmtWriteThatTakesNoCpuOfflineFailsAndIsUndone) {
    RunResult r = cpuctl({"--json", "smt", "off"});
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(j.at("strategy").get<std::string>(), "smt") << r.out;
    EXPECT_EQ(j.at("outcome").get<std::string>(), "failed") << r.out;
    for (const auto& c : j.at("cpus").get<json::array_t>()) {
        EXPECT_EQ(c.at("result").get<std::string>(), "failed") << r.out;
    }
    EXPECT_EQ(tree().online_files(), expected_files({}));
    // Not asserted: smt/control keeps the "off" the daemon wrote. A real kernel that accepts
    // "off" has taken every secondary offline, so the state is unreachable outside the fake.
}

// "offline 8-15" on 2x4x2 equals every secondary thread: it switched smt/control off for the
// whole machine, and onlining one sibling then failed with EPERM on a real kernel. Only SMT
// requests (the smt selector, SetSmt, --strategy smt) use smt/control now.
TEST_F(CpuhpdTest, NumericMaskOfEverySecondaryThreadLeavesSmtControlAlone) {
    CallResult res = client_->call("Offline", "8-15");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(res.str("strategy"), "per-cpu");
    EXPECT_EQ(tree().read("devices/system/cpu/smt/control"), "on");
    res = client_->call("Online", "9");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(tree().online_files(), expected_files({8, 10, 11, 12, 13, 14, 15}));
}

}  // namespace
}  // namespace cpuhpd::itest
