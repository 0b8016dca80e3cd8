// cpuctl on its own: output forms, exit codes, how it finds the bus, and what it says when the
// daemon is missing or stopped.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "fixture.h"
#include "harness/files.h"

namespace cpuhpd::itest {
namespace {

TEST_F(CpuhpdTest, CpuctlOfflineThenOnlineChangesExactlyTheNamedCpus) {
    RunResult r = cpuctl({"--json", "offline", "4,6,7"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(j.at("action").get<std::string>(), "offline");
    EXPECT_EQ(j.at("outcome").get<std::string>(), "ok");
    EXPECT_FALSE(j.at("dry_run").get<bool>());
    EXPECT_EQ(json_results(j), all_result({4, 6, 7}, "changed")) << r.out;
    EXPECT_GT(j.at("batch_id").get<double>(), 0);
    EXPECT_EQ(tree().online_files(), expected_files({4, 6, 7}));
    EXPECT_EQ(tree().read("devices/system/cpu/cpu0/online"), "<absent>");

    r = cpuctl({"--json", "online", "4,6,7"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(j.at("action").get<std::string>(), "online");
    EXPECT_EQ(json_results(j), all_result({4, 6, 7}, "changed")) << r.out;
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

TEST_F(CpuhpdTest, CpuctlJsonHasTheBatchsPhasesInOrderWithinItsDuration) {
    RunResult r = cpuctl({"--json", "offline", "4,6,7"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    ASSERT_TRUE(j.contains("phases")) << r.out;
    const std::vector<std::string> expected = {"read",  "pinned",   "partitions", "admit",
                                               "plan",  "affinity", "journal",    "expedite",
                                               "write", "reread",   "rollback"};
    std::string pattern = "\"phases\":\\{";
    for (std::size_t i = 0; i < expected.size(); ++i) {
        pattern += (i == 0 ? "\"" : ",\"") + expected[i] + "\":[0-9]+";
    }
    pattern += "\\}";
    EXPECT_TRUE(std::regex_search(r.out, std::regex(pattern))) << pattern << "\n" << r.out;
    std::uint64_t total = 0;
    for (const auto& [name, us] : j.at("phases").items()) {
        ASSERT_TRUE(us.is_number_unsigned()) << name << ": " << us;
        total += us.get<std::uint64_t>();
    }
    EXPECT_LE(total, j.at("duration_us").get<std::uint64_t>()) << r.out;
    // The time before the batch, beside it (not part of duration_us).
    ASSERT_TRUE(j.contains("queued_us")) << r.out;
    EXPECT_TRUE(j.at("queued_us").is_number_unsigned()) << r.out;
    EXPECT_TRUE(log_shows(*world_, "queued_us=")) << world_->daemon_log();
    // The batch's log line has them too (stderr: phase_us="read=.. ...").
    EXPECT_TRUE(log_shows(*world_, "phase_us=\"read=")) << world_->daemon_log();

    // An online has no pinned-task scan; a dry run (plan) has no phases.
    r = cpuctl({"--json", "online", "4,6,7"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    ASSERT_TRUE(parses(r, j));
    EXPECT_FALSE(j.at("phases").contains("pinned")) << r.out;
    EXPECT_TRUE(j.at("phases").contains("write")) << r.out;
    r = cpuctl({"--json", "plan", "offline", "4"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    ASSERT_TRUE(parses(r, j));
    EXPECT_TRUE(j.at("phases").empty()) << r.out;
    EXPECT_TRUE(j.at("queued_us").is_number_unsigned()) << r.out;  // to the answer
}

TEST_F(CpuhpdTest, CpuctlReportsUnchangedForCpusAlreadyInTheState) {
    RunResult r = cpuctl({"--json", "offline", "4"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    r = cpuctl({"--json", "offline", "4-5"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(json_results(j), (std::map<unsigned, std::string>{{4, "unchanged"}, {5, "changed"}}))
        << r.out;
    EXPECT_EQ(tree().online_files(), expected_files({4, 5}));
}

TEST_F(CpuhpdTest, CpuctlTableOutputHasALinePerCpuAndASummary) {
    RunResult r = cpuctl({"offline", "4,6,7"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    for (unsigned c : {4u, 6u, 7u}) {
        EXPECT_TRUE(any_line_matches(r.out, "^\\s*" + std::to_string(c) + "\\s+changed\\b"))
            << "no table line for CPU " << c << "\n"
            << r.out;
    }
    EXPECT_FALSE(any_line_matches(r.out, "^\\s*5\\s+")) << r.out;
    EXPECT_TRUE(any_line_matches(r.out, "\\b3 changed\\b")) << "no summary line\n" << r.out;

    r = cpuctl({"status"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(any_line_matches(r.out, "online:?\\s+0-3,5,8-15\\b")) << r.out;
    EXPECT_TRUE(any_line_matches(r.out, "offline:?\\s+4,6-7\\b")) << r.out;

    r = cpuctl({"topology"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    for (unsigned c = 0; c < kCpus; ++c) {
        EXPECT_TRUE(any_line_matches(r.out, "^\\s*" + std::to_string(c) + "\\s"))
            << "no topology line for CPU " << c << "\n"
            << r.out;
    }
}

TEST_F(CpuhpdTest, CpuctlStatusAndTopologyJson) {
    RunResult r = cpuctl({"--json", "offline", "5"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    r = cpuctl({"--json", "status"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(j.at("online").get<std::string>(), "0-4,6-15");
    EXPECT_EQ(j.at("offline").get<std::string>(), "5");
    EXPECT_EQ(j.at("possible").get<std::string>(), "0-15");
    EXPECT_EQ(j.at("present").get<std::string>(), "0-15");
    EXPECT_EQ(j.at("protected").get<std::string>(), "0");
    EXPECT_EQ(j.at("smt_control").get<std::string>(), "on");
    EXPECT_FALSE(j.at("busy").get<bool>());
    std::vector<std::string> caps;
    for (const auto& c : j.at("capabilities").get<json::array_t>()) {
        caps.push_back(c.get<std::string>());
    }
    EXPECT_NE(std::find(caps.begin(), caps.end(), "per-cpu"), caps.end()) << r.out;
    EXPECT_EQ(std::find(caps.begin(), caps.end(), "bulk"), caps.end())
        << "the tree has read-only cpu/online and cpu/offline: no bulk\n"
        << r.out;

    r = cpuctl({"--json", "topology"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    ASSERT_TRUE(parses(r, j));
    const auto& cpus = j.at("cpus").get<json::array_t>();
    ASSERT_EQ(cpus.size(), kCpus) << r.out;
    for (const auto& c : cpus) {
        auto n = static_cast<unsigned>(c.at("cpu").get<double>());
        SCOPED_TRACE("cpu " + std::to_string(n));
        EXPECT_EQ(c.at("package").get<double>(), tree().package_of(n));
        EXPECT_EQ(c.at("core").get<double>(), tree().core_of(n));
        EXPECT_EQ(c.at("node").get<double>(), tree().package_of(n));
        EXPECT_EQ(cpus_in(c.at("siblings").get<std::string>()),
                  (std::set<unsigned>{n, tree().sibling_of(n)}));
        EXPECT_EQ(c.at("online").get<bool>(), n != 5);
        EXPECT_EQ(c.at("hotpluggable").get<bool>(), n != 0);
    }
}

TEST_F(CpuhpdTest, CpuctlFindsTheBusThroughDbusSystemBusAddress) {
    RunResult r = world_->cpuctl({"--json", "status"}, /*with_address=*/false,
                                 {{"DBUS_SYSTEM_BUS_ADDRESS", world_->bus_address()}});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    EXPECT_EQ(j.at("online").get<std::string>(), "0-15");

    r = world_->cpuctl({"--json", "offline", "3"}, /*with_address=*/false,
                       {{"DBUS_SYSTEM_BUS_ADDRESS", world_->bus_address()}});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(tree().online_files(), expected_files({3}));
}

TEST_F(CpuhpdTest, CpuctlExitsWithTwoOnRefusalsAndUsageErrors) {
    for (const std::string mask : {"5-1", "abc", "1,,2", "99", "0", "1-15"}) {
        RunResult r = cpuctl({"offline", mask});
        EXPECT_EQ(r.exit_code, 2) << "cpuctl offline " << mask << "\n" << r.describe();
        EXPECT_FALSE(r.err.empty()) << "cpuctl offline " << mask << " printed no error";
        EXPECT_EQ(tree().online_files(), expected_files({}));
    }
    RunResult r = cpuctl({"--json", "offline", "abc"});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    r = cpuctl({"offline", "--no-such-option", "4"});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    r = cpuctl({"frobnicate"});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

TEST(CpuhpdNoDaemon, CpuctlSaysTheDaemonIsNotRunning) {
    World world;
    world.start_bus();
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"status"}, std::vector<std::string>{"offline", "4"}}) {
        RunResult r = world.cpuctl(args, true, {}, 30s);
        EXPECT_EQ(r.exit_code, 1) << r.describe();
        std::string err = r.err;
        std::transform(err.begin(), err.end(), err.begin(), ::tolower);
        EXPECT_NE(err.find("not running"), std::string::npos) << r.describe();
        EXPECT_NE(err.find("cpuhpd"), std::string::npos) << r.describe();
    }
    EXPECT_EQ(world.tree().online_files(), expected_files({}));
}

// A bus address where nothing listens: cpuctl names the bus it tried, exits 1 (not 2: the
// command line was right) and changes nothing. A sanitized cpuctl runs with the suppression
// of sdbus-c++ 1.2's leak on that path (sdbus-open-leak.supp).
TEST(CpuhpdNoDaemon, CpuctlSaysWhichBusItCannotReach) {
    World world;
    const std::string address = "unix:path=" + (world.dir() / "no-bus-here").string();
    const std::string suppressions =
        (source_dir() / "tests/integration/sdbus-open-leak.supp").string();
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"status"}, std::vector<std::string>{"offline", "4"}}) {
        std::vector<std::string> argv{"--bus-address", address};
        argv.insert(argv.end(), args.begin(), args.end());
        const RunResult r =
            world.cpuctl(argv, false, {{"LSAN_OPTIONS", "suppressions=" + suppressions}}, 30s);
        EXPECT_EQ(r.exit_code, 1) << r.describe();
        EXPECT_NE(r.err.find("cannot connect to the bus at " + address), std::string::npos)
            << r.describe();
    }
    EXPECT_EQ(world.tree().online_files(), expected_files({}));
}

// A daemon that is alive but never answers (SIGSTOP) hung every cpuctl command but status:
// each one now gives up after --timeout, says so, and exits 1.
TEST_F(CpuhpdTest, CpuctlHonoursTimeoutForEveryCommandWhileTheDaemonIsStopped) {
    const pid_t pid = world_->daemon().pid();
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
    Resume resume{pid};
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"offline", "1"}, std::vector<std::string>{"online", "1"},
          std::vector<std::string>{"plan", "offline", "1"}, std::vector<std::string>{"smt", "off"},
          std::vector<std::string>{"status"}, std::vector<std::string>{"topology"}}) {
        std::vector<std::string> argv{"--timeout", "1"};
        argv.insert(argv.end(), args.begin(), args.end());
        const RunResult r = world_->cpuctl(argv, true, {}, 30s);
        EXPECT_EQ(r.exit_code, 1) << r.describe();  // -1: still waiting after 30 s, killed
        EXPECT_TRUE(r.err.find("Timeout") != std::string::npos ||
                    r.err.find("NoReply") != std::string::npos)
            << r.describe();
    }
}

}  // namespace
}  // namespace cpuhpd::itest
