// D-Bus properties and the signals of a batch: PropertiesChanged, BatchFinished, BatchProgress,
// Busy.
#include <gtest/gtest.h>

#include <optional>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

TEST_F(CpuhpdTest, PropertiesReflectTheTree) {
    EXPECT_EQ(client_->get_string("Online"), "0-15");
    EXPECT_EQ(client_->get_string("Offline"), "");
    EXPECT_EQ(client_->get_string("Possible"), "0-15");
    EXPECT_EQ(client_->get_string("Present"), "0-15");
    EXPECT_EQ(client_->get_string("Protected"), "0");
    EXPECT_EQ(client_->get_string("SmtControl"), "on");
    EXPECT_FALSE(client_->get_bool("Busy"));
    auto caps = client_->get_strv("Capabilities");
    EXPECT_EQ(caps, (std::vector<std::string>{"smt", "per-cpu"}))
        << "best first; no bulk on a tree with read-only cpu/online and cpu/offline";

    auto topo = client_->get_topology();
    ASSERT_EQ(topo.size(), kCpus);
    for (const auto& e : topo) {
        SCOPED_TRACE("cpu " + std::to_string(e.cpu));
        EXPECT_EQ(e.package, static_cast<int>(tree().package_of(e.cpu)));
        EXPECT_EQ(e.die, 0);
        EXPECT_EQ(e.core, static_cast<int>(tree().core_of(e.cpu)));
        EXPECT_EQ(e.node, static_cast<int>(tree().package_of(e.cpu)));
        EXPECT_EQ(cpus_in(e.siblings), (std::set<unsigned>{e.cpu, tree().sibling_of(e.cpu)}));
        EXPECT_TRUE(e.online);
        EXPECT_EQ(e.hotpluggable, e.cpu != 0);
    }
}

TEST_F(CpuhpdTest, OfflineBatchEmitsPropertiesChangedAndBatchFinished) {
    client_->subscribe();
    CallResult res = client_->call("Offline", "4,6,7");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(res.str("outcome"), "ok");
    EXPECT_EQ(res.str("action"), "offline");
    EXPECT_EQ(res.str("mask"), "4,6,7");
    EXPECT_EQ(res.str("mode"), "atomic");
    EXPECT_EQ(res.str("strategy"), "per-cpu");
    std::uint64_t batch = res.u64("batch_id");
    EXPECT_GT(batch, 0u) << res.describe();
    ASSERT_EQ(res.cpus(), (std::set<unsigned>{4, 6, 7}));
    for (const auto& c : res.results) {
        EXPECT_EQ(c.result, "changed") << res.describe();
        EXPECT_EQ(c.error, "");
        EXPECT_EQ(c.errno_value, 0);
    }
    auto order = res.order();
    EXPECT_EQ(std::set<unsigned>(order.begin(), order.end()), (std::set<unsigned>{4, 6, 7}));

    auto last_value = [&](const std::string& prop) -> std::optional<std::string> {
        std::optional<std::string> v;
        for (const auto& pc : client_->property_changes()) {
            if (pc.interface != "org.cpuhpd1.Manager") {
                continue;
            }
            auto it = pc.changed.find(prop);
            if (it != pc.changed.end()) {
                if (auto* s = std::get_if<std::string>(&it->second)) {
                    v = *s;
                }
            }
        }
        return v;
    };
    bool got = client_->wait_for(
        [&] {
            return last_value("Online") == std::optional<std::string>("0-3,5,8-15") &&
                   last_value("Offline") == std::optional<std::string>("4,6-7") &&
                   !client_->batches().empty();
        },
        10s);
    EXPECT_TRUE(got) << "Online=" << last_value("Online").value_or("<no signal>")
                     << " Offline=" << last_value("Offline").value_or("<no signal>")
                     << " BatchFinished signals: " << client_->batches().size()
                     << " PropertiesChanged signals: " << client_->property_changes().size();
    ASSERT_FALSE(client_->batches().empty());
    const auto& b = client_->batches().back();
    EXPECT_EQ(b.batch_id, batch);
    EXPECT_EQ(b.action, "offline");
    EXPECT_EQ(b.strategy, "per-cpu");
    EXPECT_EQ(b.changed, "4,6-7");
    EXPECT_EQ(b.failed, "");
    EXPECT_EQ(b.requests, 1u);

    EXPECT_EQ(client_->get_string("Online"), "0-3,5,8-15");
    EXPECT_EQ(client_->get_string("Offline"), "4,6-7");
    EXPECT_FALSE(client_->get_bool("Busy"));

    // Topology of offline CPUs is the one last seen.
    auto topo = client_->get_topology();
    ASSERT_EQ(topo.size(), kCpus);
    EXPECT_FALSE(topo[4].online);
    EXPECT_EQ(topo[4].package, 1);
    EXPECT_TRUE(topo[5].online);

    // And back.
    res = client_->call("Online", "4,6,7");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_GT(res.u64("batch_id"), batch);
    got = client_->wait_for(
        [&] {
            return last_value("Online") == std::optional<std::string>("0-15") &&
                   last_value("Offline") == std::optional<std::string>("");
        },
        10s);
    EXPECT_TRUE(got) << "Online=" << last_value("Online").value_or("<no signal>")
                     << " Offline=" << last_value("Offline").value_or("<no signal>");
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

TEST_F(CpuhpdTest, BatchProgressCountsEachCpuOfAPerCpuBatch) {
    client_->subscribe();
    CallResult res = client_->call("Offline", "4-7");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(res.str("strategy"), "per-cpu");
    std::uint64_t batch = res.u64("batch_id");
    bool got = client_->wait_for(
        [&] {
            return !client_->batches().empty() && !client_->progress().empty() &&
                   client_->progress().back().done == 4;
        },
        10s);
    std::string seen;
    for (const auto& p : client_->progress()) {
        seen += std::to_string(p.batch_id) + ":" + std::to_string(p.done) + "/" +
                std::to_string(p.total) + " ";
    }
    EXPECT_TRUE(got) << "BatchProgress seen: " << seen;
    std::uint32_t last = 0;
    for (const auto& p : client_->progress()) {
        EXPECT_EQ(p.batch_id, batch) << seen;
        EXPECT_EQ(p.total, 4u) << seen;
        EXPECT_GT(p.done, last) << "progress must increase: " << seen;
        last = p.done;
    }
    EXPECT_EQ(last, 4u) << seen;
}

TEST_F(CpuhpdTest, BusyIsTrueOnlyWhileABatchRuns) {
    client_->subscribe();
    CallResult res = client_->call("Offline", "1-3");
    ASSERT_TRUE(res.ok) << res.describe();
    std::vector<bool> busy;
    auto collect = [&] {
        busy.clear();
        for (const auto& pc : client_->property_changes()) {
            auto it = pc.changed.find("Busy");
            if (it != pc.changed.end()) {
                if (auto* b = std::get_if<bool>(&it->second)) {
                    busy.push_back(*b);
                }
            }
        }
        return !client_->batches().empty() && !busy.empty() && !busy.back();
    };
    EXPECT_TRUE(client_->wait_for(collect, 5s)) << "no PropertiesChanged with Busy=false";
    collect();
    EXPECT_EQ(busy, (std::vector<bool>{true, false})) << "Busy changes around one batch";
    EXPECT_FALSE(client_->get_bool("Busy"));
}

}  // namespace
}  // namespace cpuhpd::itest
