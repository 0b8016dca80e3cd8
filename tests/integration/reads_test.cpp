// How the daemon reads the machine without uevents: changes behind its back are seen, the tree is
// read once per message, and reads stay fast under large requests.
#include <gtest/gtest.h>
#include <sys/inotify.h>

#include <atomic>
#include <iostream>
#include <thread>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

TEST_F(CpuhpdTest, ChangesMadeBehindTheDaemonsBackAreSeen) {
    tree().write("devices/system/cpu/cpu9/online", "0");
    EXPECT_EQ(client_->get_string("Online"), "0-8,10-15");
    EXPECT_EQ(client_->get_string("Offline"), "9");
    CallResult res = client_->call("Offline", "9-10");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(res.result_for(9)->result, "unchanged") << res.describe();
    EXPECT_EQ(res.result_for(10)->result, "changed") << res.describe();
    EXPECT_EQ(res.order(), (std::vector<std::uint32_t>{10})) << res.describe();
    res = client_->call("Online", "9");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(res.result_for(9)->result, "changed") << res.describe();
    EXPECT_EQ(tree().online_files(), expected_files({10}));
}

// While the largest allowed request is parsed and answered, again and again, another
// caller's status read stays fast (goal: under 100 ms; asserted with a margin for a loaded
// 2-core machine, the measured value printed).
TEST_F(CpuhpdTest, StatusStaysResponsiveWhileMaximumSizeRequestsAreHandled) {
    const std::string biggest = many_regions(8192, 65536);
    std::atomic<bool> stop{false};
    std::atomic<int> served{0};
    std::thread flood([&] {
        RawClient c(world_->bus_address());
        while (!stop) {
            if (c.call("Offline", biggest, {{"dry_run", true}}, 30s).ok) {
                ++served;
            }
        }
    });
    const auto worst = worst_online_latency(*client_, 50, "0-15");
    stop = true;
    flood.join();
    std::cout << "[ measured ] worst status (Get Online) latency while maximum-size requests ("
              << biggest.size() << " bytes, 8192 regions) were handled: " << worst.count()
              << " us; " << served << " such requests served meanwhile" << std::endl;
    EXPECT_GT(served, 0);
    EXPECT_LT(worst, 100ms);  // issue 9's goal
}

// Without uevents (a tree that is not /sys) the daemon read the whole tree again for each
// property of a GetAll: six times for one `cpuctl status`, a cost that a flood of reads
// multiplies. It reads it once for each message now.
TEST_F(CpuhpdTest, StatusReadsTheTreeOncePerMessage) {
    const int opens = count_events(tree().cpu_dir(), IN_OPEN, IN_OPEN, "present", [&] {
        const RunResult r = cpuctl({"--json", "status"});
        EXPECT_EQ(r.exit_code, 0) << r.describe();
    });
    EXPECT_EQ(opens, 1);
    // A change made behind the daemon's back is still seen by the next message.
    tree().write("devices/system/cpu/cpu5/online", "0");
    tree().write("devices/system/cpu/online", "0-4,6-15");
    EXPECT_EQ(client_->get_string("Online"), "0-4,6-15");
}

}  // namespace
}  // namespace cpuhpd::itest
