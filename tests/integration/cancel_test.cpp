// Cancel and `cpuctl cancel`: a batch held while it writes cpu12 (the 4th CPU of 15..1) is
// cancelled; once let go, it stops after cpu12, atomic requests roll back, best-effort ones
// keep what is done, and every caller gets its results with "cancelled" for CPUs never
// written. cpu12's online file is a FIFO: the daemon's write blocks in open() until the test
// opens it for reading; the test then says through the summary list that cpu12 went offline
// (reads of an empty FIFO fall back to it) and keeps its read end open, so that the rollback's
// write of cpu12 goes through too.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>
#include <thread>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

constexpr const char* kAllAps = "1-15";
constexpr const char* kNoSuchBatch = "org.cpuhpd1.Error.NoSuchBatch";

class CancelTest : public PinnedBatchTest {
protected:
    // Starts Offline 1-15 with `options` on its own connection and holds it at cpu12, after
    // 15, 14 and 13 went offline.
    void start_pinned_batch(const std::map<std::string, Option>& options) {
        ASSERT_EQ(planned_order("Offline", kAllAps),
                  (std::vector<unsigned>{15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}));
        block_writes_to(12);
        watcher_ = std::make_unique<RawClient>(world_->bus_address());
        watcher_->subscribe();
        caller_ = std::thread([this, options] {
            RawClient c(world_->bus_address());
            reply_ = c.call("Offline", kAllAps, options, 60s);
        });
        ASSERT_TRUE(files_show({13, 14, 15}, "0")) << "the batch did not reach cpu12";
    }

    // Lets the write of cpu12 go through (it went offline) and waits for the reply.
    void release_cpu12() {
        tree().write("devices/system/cpu/online", "0-11");
        cpu12_reader_.fd = drain_after_write(tree().online_file(12));
        ASSERT_GE(cpu12_reader_.fd, 0) << "the daemon never wrote cpu12";
        caller_.join();
    }

    // The BatchFinished of batch 1 (bounded wait).
    BatchFinished finished() {
        EXPECT_TRUE(watcher_->wait_for([&] { return !watcher_->batches().empty(); }, 10000ms))
            << "no BatchFinished";
        return watcher_->batches().empty() ? BatchFinished{} : watcher_->batches().front();
    }

    void expect_results(const std::set<unsigned>& cpus, const std::string& result) {
        for (unsigned cpu : cpus) {
            const auto r = reply_.result_for(cpu);
            ASSERT_TRUE(r.has_value()) << "no result for CPU " << cpu;
            EXPECT_EQ(r->result, result) << "CPU " << cpu << ": " << r->message;
        }
    }

    std::unique_ptr<RawClient> watcher_;
    std::thread caller_;
    Join join_{caller_};
    CallResult reply_;
    Fd cpu12_reader_{-1};
};

TEST_F(CancelTest, AnAtomicBatchStopsAfterTheCpuInFlightAndRollsBack) {
    start_pinned_batch({});
    // cpuctl cancel: asks for whichever batch runs, then waits for its BatchFinished.
    const auto canceller = world_->spawn_cpuctl({"--json", "cancel"});
    ASSERT_TRUE(log_shows(*world_, "batch 1: cancel requested by")) << world_->daemon_log();
    release_cpu12();

    ASSERT_TRUE(reply_.ok) << reply_.describe();
    EXPECT_EQ(reply_.str("outcome"), "failed");
    expect_results({12, 13, 14, 15}, "rolled-back");
    expect_results(cpus_in("1-11"), "cancelled");
    EXPECT_EQ(reply_.result_for(5)->message, "not offline: batch 1 was cancelled before this CPU");
    EXPECT_EQ(reply_.result_for(15)->message, "rolled back: batch 1 was cancelled");
    EXPECT_EQ(finished().cancelled, "1-11");

    ASSERT_TRUE(canceller->wait_until(Clock::now() + 20s)) << "cpuctl cancel did not return";
    EXPECT_EQ(canceller->exit_code(), 0) << canceller->err();
    json j;
    ASSERT_TRUE(parses({canceller->exit_code(), canceller->out(), canceller->err()}, j));
    EXPECT_EQ(j["batch_id"], 1);
    EXPECT_EQ(j["finished"], true);
    EXPECT_EQ(j["action"], "offline");
    EXPECT_EQ(j["cancelled"], "1-11");

    unblock(12, "1");  // the rollback wrote "1" into the FIFO
    tree().write("devices/system/cpu/online", "0-15");
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
    EXPECT_TRUE(log_shows(*world_, "cancelled before 1-11")) << world_->daemon_log();
}

// `cpuctl cancel` waits for the batch's BatchFinished, and anybody may send a signal: a
// BatchFinished for batch 1 forged by another connection, unicast to cpuctl and broadcast,
// with values the real one does not have, must not end the wait nor show in what it prints.
TEST_F(CancelTest, CpuctlCancelTakesBatchFinishedOnlyFromTheDaemon) {
    start_pinned_batch({});
    const auto canceller = world_->spawn_cpuctl({"--json", "cancel"});
    ASSERT_TRUE(log_shows(*world_, "batch 1: cancel requested by :")) << world_->daemon_log();
    const std::string log = world_->daemon_log();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(log, m, std::regex("cancel requested by (:[0-9.]+)")));
    const std::string cpuctl_name = m[1];

    RawClient forger(world_->bus_address());
    for (const std::string& destination : {cpuctl_name, std::string()}) {
        EXPECT_EQ(
            forger.send_signal(destination, "/org/cpuhpd1", "org.cpuhpd1.Manager", "BatchFinished",
                               [](sd_bus_message* msg) {
                                   return sd_bus_message_append(msg, "tssssuts", std::uint64_t{1},
                                                                "offline", "loop", "1-15", "", 1U,
                                                                std::uint64_t{5}, "");
                               }),
            "");
    }
    // A round trip on the forger's connection: the bus routed its signals before this reply,
    // so they reach cpuctl before the daemon's BatchFinished, which comes only after cpu12.
    EXPECT_FALSE(forger.get_string("Online").empty());
    release_cpu12();

    ASSERT_TRUE(canceller->wait_until(Clock::now() + 20s)) << "cpuctl cancel did not return";
    EXPECT_EQ(canceller->exit_code(), 0) << canceller->err();
    json j;
    ASSERT_TRUE(parses({canceller->exit_code(), canceller->out(), canceller->err()}, j));
    EXPECT_EQ(j["batch_id"], 1);
    EXPECT_EQ(j["cancelled"], "1-11") << canceller->out();
    EXPECT_NE(j["changed"], "1-15") << canceller->out();
    unblock(12, "1");  // the rollback wrote "1" into the FIFO
}

TEST_F(CancelTest, ABestEffortBatchKeepsWhatIsDone) {
    start_pinned_batch({{"mode", std::string("best-effort")}});
    RawClient admin(world_->bus_address());
    const auto wrong = admin.cancel(7);
    EXPECT_EQ(wrong.error_name, kNoSuchBatch);
    EXPECT_EQ(wrong.error_message, "batch 7 is not running (batch 1 is)");
    const auto cancelled = admin.cancel(1);
    EXPECT_EQ(cancelled.error_name, "") << cancelled.error_message;
    EXPECT_EQ(cancelled.batch_id, 1u);
    release_cpu12();

    ASSERT_TRUE(reply_.ok) << reply_.describe();
    EXPECT_EQ(reply_.str("outcome"), "partial");
    expect_results({12, 13, 14, 15}, "changed");
    expect_results(cpus_in("1-11"), "cancelled");
    const BatchFinished end = finished();
    EXPECT_EQ(end.cancelled, "1-11");
    EXPECT_EQ(end.changed, "12-15");
    unblock(12, "0");
    EXPECT_EQ(tree().online_files(), expected_files({12, 13, 14, 15}));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
}

TEST_F(CancelTest, WithNoBatchRunningNothingIsCancelled) {
    const RunResult r = cpuctl({"cancel"});
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_NE(r.err.find("no batch is running"), std::string::npos) << r.describe();
    const RunResult j = cpuctl({"--json", "cancel", "3"});
    EXPECT_EQ(j.exit_code, 2) << j.describe();
    EXPECT_NE(j.out.find(kNoSuchBatch), std::string::npos) << j.describe();
    EXPECT_NE(j.out.find("batch 3 is not running (no batch is running now)"), std::string::npos)
        << j.describe();
}

}  // namespace
}  // namespace cpuhpd::itest
