// plan and --dry-run: they show strategy and order and write nothing.
#include <gtest/gtest.h>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

TEST_F(CpuhpdTest, PlanAndDryRunShowOrderAndStrategyAndTouchNothing) {
    client_->subscribe();
    RunResult r = cpuctl({"--json", "plan", "offline", "4-7"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    EXPECT_TRUE(j.at("dry_run").get<bool>());
    EXPECT_EQ(j.at("strategy").get<std::string>(), "per-cpu") << r.out;
    auto order = json_order(j);
    EXPECT_EQ(std::set<unsigned>(order.begin(), order.end()), (std::set<unsigned>{4, 5, 6, 7}))
        << r.out;
    EXPECT_EQ(order.size(), 4u) << r.out;
    EXPECT_EQ(tree().online_files(), expected_files({}));

    r = cpuctl({"--json", "offline", "--dry-run", "4-7"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    ASSERT_TRUE(parses(r, j));
    EXPECT_TRUE(j.at("dry_run").get<bool>());
    EXPECT_EQ(json_order(j), order) << "plan and --dry-run disagree";
    EXPECT_EQ(tree().online_files(), expected_files({}));

    // The request that is exactly every secondary thread goes through smt/control.
    r = cpuctl({"--json", "plan", "offline", "smt"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(j.at("strategy").get<std::string>(), "smt") << r.out;
    EXPECT_EQ(tree().read("devices/system/cpu/smt/control"), "on");

    // Table form names strategy and order.
    r = cpuctl({"plan", "offline", "core:5"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(any_line_matches(r.out, "per-cpu")) << r.out;
    EXPECT_TRUE(any_line_matches(r.out, "13,\\s*5")) << "offline order 13 then 5\n" << r.out;

    // A dry run writes nothing, so no BatchFinished.
    EXPECT_FALSE(client_->wait_for([&] { return !client_->batches().empty(); }, 500ms))
        << "BatchFinished after dry runs, batch " << client_->batches().front().batch_id;
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
}

}  // namespace
}  // namespace cpuhpd::itest
