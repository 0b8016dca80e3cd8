// A CPU whose online file cannot be written: best-effort keeps the rest, atomic rolls back.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

class InjectedFailureTest : public CpuhpdTest {
protected:
    void SetUp() override {
        CpuhpdTest::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        int rc = tree().make_unwritable(5);
        if (rc != 0) {
            GTEST_SKIP() << "cannot make cpu5/online unwritable for root on this filesystem "
                            "(FS_IOC_SETFLAGS immutable: "
                         << std::strerror(rc) << ")";
        }
    }
};

TEST_F(InjectedFailureTest, BestEffortReportsTheFailedCpuAndKeepsTheOthers) {
    RunResult r = cpuctl({"--json", "offline", "--best-effort", "4-6"});
    EXPECT_EQ(r.exit_code, 64) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(j.at("outcome").get<std::string>(), "partial");
    EXPECT_EQ(j.at("mode").get<std::string>(), "best-effort");
    EXPECT_EQ(json_results(j),
              (std::map<unsigned, std::string>{{4, "changed"}, {5, "failed"}, {6, "changed"}}))
        << r.out;
    for (const auto& c : j.at("cpus").get<json::array_t>()) {
        if (c.at("cpu").get<double>() == 5) {
            EXPECT_EQ(c.at("error").get<std::string>(), "EPERM") << r.out;
        }
    }
    EXPECT_EQ(tree().online_files(), expected_files({4, 6}));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
}

TEST_F(InjectedFailureTest, AtomicFailureRollsBackAndLeavesNothingChanged) {
    client_->subscribe();
    CallResult res = client_->call("Offline", "4-6");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(res.str("outcome"), "failed") << res.describe();
    EXPECT_EQ(res.str("mode"), "atomic") << res.describe();
    ASSERT_EQ(res.cpus(), (std::set<unsigned>{4, 5, 6})) << res.describe();
    EXPECT_EQ(res.result_for(5)->result, "failed") << res.describe();
    EXPECT_EQ(res.result_for(5)->error, "EPERM") << res.describe();
    EXPECT_EQ(res.result_for(5)->errno_value, EPERM) << res.describe();
    auto order = res.order();
    std::vector<unsigned> ord(order.begin(), order.end());
    for (unsigned c : {4u, 6u}) {
        const std::string result =
            res.result_for(c)->result;  // a copy: result_for returns a temporary
        if (position(ord, c) < position(ord, 5)) {
            EXPECT_EQ(result, "rolled-back") << "cpu " << c << " was written before 5\n"
                                             << res.describe();
        } else {
            EXPECT_NE(result, "changed") << res.describe();
            EXPECT_NE(result, "failed") << res.describe();
        }
    }
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
    ASSERT_TRUE(client_->wait_for([&] { return !client_->batches().empty(); }, 10s))
        << "no BatchFinished after a failed batch that wrote to the kernel";
    const auto& b = client_->batches().back();
    EXPECT_EQ(b.batch_id, res.u64("batch_id"));
    EXPECT_EQ(cpus_in(b.failed), (std::set<unsigned>{5})) << b.failed;

    // cpuctl: exit 1, and the tree is unchanged.
    RunResult r = cpuctl({"--json", "offline", "4-6"});
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(j.at("outcome").get<std::string>(), "failed");
    EXPECT_EQ(json_results(j)[5], "failed") << r.out;
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

}  // namespace
}  // namespace cpuhpd::itest
