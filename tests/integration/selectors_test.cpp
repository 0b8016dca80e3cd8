// Selectors (package:, core:, node:, die:, smt, hex masks, groups) resolved against the fake
// tree's topology, and the order they are taken in.
#include <gtest/gtest.h>

#include <algorithm>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

TEST_F(CpuhpdTest, SelectorsResolveAsTheTreeTopologySays) {
    struct Case {
        std::string mask;
        std::set<unsigned> cpus;
    };
    const std::vector<Case> cases = {
        {"package:1", {4, 5, 6, 7, 12, 13, 14, 15}},
        {"package:0", {0, 1, 2, 3, 8, 9, 10, 11}},
        {"core:5", {5, 13}},
        {"core:13", {5, 13}},
        {"smt", {8, 9, 10, 11, 12, 13, 14, 15}},
        {"node:1", {4, 5, 6, 7, 12, 13, 14, 15}},
        {"die:0", all_cpus_except({})},
        {"0x30", {4, 5}},
        {"1-15:2/4", {1, 2, 5, 6, 9, 10, 13, 14}},
        {"core:5 2", {2, 5, 13}},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE("mask '" + c.mask + "'");
        // Offline of a mask with cpu0 is refused (protected), so resolve those through Online.
        const char* method = c.cpus.count(0) ? "Online" : "Offline";
        CallResult res = client_->call(method, c.mask, {{"dry_run", true}});
        ASSERT_TRUE(res.ok) << res.describe();
        EXPECT_EQ(res.cpus(), c.cpus) << res.describe();
        EXPECT_EQ(res.u64("batch_id"), 0u) << res.describe();
    }
    // Nothing above touched the tree.
    EXPECT_EQ(tree().online_files(), expected_files({}));

    // cpuctl: several arguments are a union.
    RunResult r = cpuctl({"--json", "offline", "--dry-run", "core:5", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    std::set<unsigned> got;
    for (const auto& [cpu, result] : json_results(j)) {
        got.insert(cpu);
    }
    EXPECT_EQ(got, (std::set<unsigned>{2, 5, 13})) << r.out;
    EXPECT_TRUE(j.at("dry_run").get<bool>());
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

TEST_F(CpuhpdTest, SelectorOfflineTakesSiblingsFirstAndOnlineBringsPrimariesFirst) {
    RunResult r = cpuctl({"--json", "offline", "package:1"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    std::set<unsigned> pkg1{4, 5, 6, 7, 12, 13, 14, 15};
    EXPECT_EQ(json_results(j), all_result(pkg1, "changed")) << r.out;
    EXPECT_EQ(tree().online_files(), expected_files(pkg1));
    auto order = json_order(j);
    EXPECT_EQ(std::set<unsigned>(order.begin(), order.end()), pkg1) << r.out;
    for (unsigned primary : {4u, 5u, 6u, 7u}) {
        EXPECT_LT(position(order, primary + 8), position(order, primary))
            << "offline order must take sibling " << primary + 8 << " before " << primary << "\n"
            << r.out;
    }

    // The topology of offline CPUs is remembered: package:1 still resolves.
    r = cpuctl({"--json", "online", "package:1"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(json_results(j), all_result(pkg1, "changed")) << r.out;
    EXPECT_EQ(tree().online_files(), expected_files({}));
    order = json_order(j);
    for (unsigned primary : {4u, 5u, 6u, 7u}) {
        EXPECT_LT(position(order, primary), position(order, primary + 8))
            << "online order must bring " << primary << " before sibling " << primary + 8 << "\n"
            << r.out;
    }
}

TEST_F(CpuhpdTest, SmtSelectorWithPerCpuStrategyTakesEverySecondaryThread) {
    RunResult r = cpuctl({"--json", "offline", "--strategy", "per-cpu", "smt"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    std::set<unsigned> secondaries{8, 9, 10, 11, 12, 13, 14, 15};
    EXPECT_EQ(json_results(j), all_result(secondaries, "changed")) << r.out;
    EXPECT_EQ(j.at("strategy").get<std::string>(), "per-cpu");
    EXPECT_EQ(tree().online_files(), expected_files(secondaries));
    EXPECT_EQ(tree().read("devices/system/cpu/smt/control"), "on") << "per-cpu must not use smt";
}

}  // namespace
}  // namespace cpuhpd::itest
