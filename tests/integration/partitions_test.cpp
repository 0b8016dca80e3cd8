// cgroup cpuset partitions (issue 15 item 3) through the real daemon on the fake tree: the
// daemon's --cgroup-root is a plain directory shaped like cgroupfs.
#include <gtest/gtest.h>

#include "fixture.h"
#include "harness/files.h"

namespace cpuhpd::itest {
namespace {

inline constexpr const char* kEmptyPartition = "org.cpuhpd1.Error.EmptyPartition";

// Package 1 is CPUs 4-7 and their SMT siblings 12-15.
class PartitionsTest : public CpuhpdTest {
protected:
    void SetUp() override {
        CpuhpdTest::SetUp();
        const auto dir = world_->dir() / "cgroup" / "rt";
        std::filesystem::create_directories(dir);
        write_file(dir / "cpuset.cpus.partition", "root\n");
        write_file(dir / "cpuset.cpus", "3-7,12-15\n");
    }
    std::string partition_cpus() {
        return read_file(world_->dir() / "cgroup" / "rt" / "cpuset.cpus");
    }
    std::filesystem::path ledger() { return world_->dir() / "state" / "partitions"; }
};

TEST_F(PartitionsTest, ShrunkBeforeTheCpusGoAndRestoredWhenTheyReturnAcrossARestart) {
    const CallResult plan = client_->call("Offline", "package:1", {{"dry_run", true}});
    ASSERT_TRUE(plan.ok) << plan.describe();
    EXPECT_NE(plan.describe().find("partitions="), std::string::npos) << plan.describe();
    EXPECT_EQ(partition_cpus(), "3-7,12-15\n");

    const CallResult off = client_->call("Offline", "package:1");
    ASSERT_TRUE(off.ok) << off.describe();
    EXPECT_EQ(partition_cpus(), "3");
    EXPECT_EQ(read_file(ledger()), "/rt\t4-7,12-15\n");
    EXPECT_TRUE(log_shows(*world_, ": cpuset partition /rt (root): CPU 3-7,12-15 -> 3"))
        << world_->daemon_log();

    // A restarted daemon still owes the CPUs: they come back to the partition with them.
    client_.reset();
    world_->stop_daemon();
    world_->start_daemon(config());
    client_ = std::make_unique<RawClient>(world_->bus_address());
    const CallResult on = client_->call("Online", "package:1");
    ASSERT_TRUE(on.ok) << on.describe();
    EXPECT_EQ(partition_cpus(), "3-7,12-15");
    EXPECT_FALSE(std::filesystem::exists(ledger()));
}

TEST_F(PartitionsTest, EmptyingThePartitionIsRefusedUnlessForced) {
    const CallResult refused = client_->call("Offline", "3-7,12-15");
    EXPECT_EQ(refused.error_name, kEmptyPartition) << refused.describe();
    EXPECT_NE(refused.error_message.find("partition /rt (root, CPU 3-7,12-15)"), std::string::npos)
        << refused.error_message;
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(partition_cpus(), "3-7,12-15\n");
    RunResult r = cpuctl({"offline", "3-7,12-15"});
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_NE(r.err.find("EmptyPartition"), std::string::npos) << r.err;

    r = cpuctl({"offline", "--force", "3-7,12-15"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(partition_cpus(), "3-7,12-15\n") << "left to the kernel";
}

TEST_F(PartitionsTest, CpuctlShowsThePartitionLine) {
    const RunResult r = cpuctl({"offline", "12-15"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(any_line_matches(r.out, "^partition /rt: CPU 3-7,12-15 -> 3-7$")) << r.out;
}

}  // namespace
}  // namespace cpuhpd::itest
