// The topology of offline CPUs, remembered across restarts, and a cache file that cannot be used.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

TEST_F(CpuhpdTest, TopologyOfOfflineCpusSurvivesADaemonRestart) {
    RunResult r = cpuctl({"--json", "offline", "package:1"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    std::set<unsigned> pkg1{4, 5, 6, 7, 12, 13, 14, 15};
    // As the kernel does: an offline CPU has no topology/ directory.
    for (unsigned c : pkg1) {
        std::filesystem::remove_all(tree().cpu_dir() / ("cpu" + std::to_string(c)) / "topology");
    }
    client_.reset();
    world_->stop_daemon();
    EXPECT_EQ(world_->daemon().exit_code(), 0) << "cpuhpd on SIGTERM:\n" << world_->daemon_log();
    ASSERT_NO_THROW(world_->start_daemon());
    client_ = std::make_unique<RawClient>(world_->bus_address());

    auto topo = client_->get_topology();
    ASSERT_EQ(topo.size(), kCpus);
    for (unsigned c : pkg1) {
        EXPECT_EQ(topo[c].package, 1) << "cpu " << c;
        EXPECT_EQ(cpus_in(topo[c].siblings), (std::set<unsigned>{c, tree().sibling_of(c)}))
            << "cpu " << c;
        EXPECT_FALSE(topo[c].online) << "cpu " << c;
    }
    r = cpuctl({"--json", "online", "package:1"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(json_results(j), all_result(pkg1, "changed")) << r.out;
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

// The topology cache that cannot be saved was silent; after a restart "package:1" did not
// resolve while package 1 was offline. The failure is logged, with what it costs.
class UnsavableTopologyCacheTest : public CpuhpdTest {
protected:
    // A directory where the cache goes, which cannot be moved aside either (a non-empty
    // directory holds its .rejected name).
    void prepare_tree(test::FakeSysfs&) override {
        const auto state = world_->dir() / "state";
        std::filesystem::create_directories(state / "topology.cache");
        std::filesystem::create_directories(state / "topology.cache.rejected" / "full");
    }
};

TEST_F(UnsavableTopologyCacheTest, SaveFailureIsLogged) {
    EXPECT_TRUE(log_shows(*world_, "cannot be moved aside")) << world_->daemon_log();
    EXPECT_TRUE(log_shows(*world_, "cannot save topology cache")) << world_->daemon_log();
    EXPECT_NE(world_->daemon_log().find("unknown after a restart"), std::string::npos);
}

// A topology cache that is a FIFO hung the start-up: now it is ignored with a message.
class FifoTopologyCacheTest : public CpuhpdTest {
protected:
    void prepare_tree(test::FakeSysfs&) override {
        std::filesystem::create_directories(world_->dir() / "state");
        ASSERT_EQ(::mkfifo((world_->dir() / "state" / "topology.cache").c_str(), 0600), 0);
    }
};

TEST_F(FifoTopologyCacheTest, DaemonStartsAndSaysWhyTheCacheWasIgnored) {
    EXPECT_TRUE(log_shows(*world_, "is not a regular file")) << world_->daemon_log();
    EXPECT_EQ(client_->get_string("Online"), "0-15");
}

}  // namespace
}  // namespace cpuhpd::itest
