// Holds (HoldCpus, ReleaseHold, the Holds property) and `cpuctl offline|online MASK --
// COMMAND`, against the real daemon on a private bus: contention between two callers, every
// way a hold ends (fd closed, holder gone, ReleaseHold, the holder killed), restore or not,
// bad input, and that many holds leave no fds behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

constexpr const char* kHeld = "org.cpuhpd1.Error.Held";
constexpr const char* kNoSuchHold = "org.cpuhpd1.Error.NoSuchHold";

// True once `file` has something in it (a shell's `echo $$ > file` creates it empty first).
bool written(const std::filesystem::path& file) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    return !ec && size > 0;
}

std::size_t open_fds(pid_t pid) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
        ++n;
    }
    return n;
}

class HoldsTest : public CpuhpdTest {
protected:
    bool holds_empty() { return client_->get_holds().empty(); }
    bool files_are(const std::set<unsigned>& offline) {
        return eventually([&] { return tree().online_files() == expected_files(offline); }, 10s);
    }
};

// Package 1 of the test machine.
const std::set<unsigned> kPackage1{4, 5, 6, 7, 12, 13, 14, 15};

TEST_F(HoldsTest, AnotherCallerIsRefusedUntilTheHoldEndsThenTheCpusComeBack) {
    RawClient orchestrator(world_->bus_address());
    auto held = orchestrator.hold_cpus("package:1", "offline", "live-update", "kernel update");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd fd{held.fd};
    ASSERT_GE(fd.fd, 0);
    EXPECT_EQ(held.call.str("outcome"), "ok");
    EXPECT_TRUE(files_are(kPackage1));

    // The Holds property names the hold.
    const auto holds = client_->get_holds();
    ASSERT_EQ(holds.size(), 1u);
    EXPECT_EQ(holds[0].id, held.hold_id);
    EXPECT_EQ(holds[0].cpus, "4-7,12-15");
    EXPECT_EQ(holds[0].state, "offline");
    EXPECT_EQ(holds[0].who, "live-update");
    EXPECT_EQ(holds[0].why, "kernel update");
    EXPECT_EQ(holds[0].holder, orchestrator.unique_name());
    EXPECT_TRUE(holds[0].restore);

    // Another caller naming a held CPU is refused, with the holder and the reason, and
    // nothing changes.
    const auto refused = client_->call("Online", "3-5");
    EXPECT_FALSE(refused.ok);
    EXPECT_EQ(refused.error_name, kHeld);
    EXPECT_NE(refused.error_message.find("CPU 4-5 is held: hold " + std::to_string(held.hold_id) +
                                         " by live-update (kernel update), offline since"),
              std::string::npos)
        << refused.error_message;
    // cpuctl says the same.
    const auto by_cpuctl = cpuctl({"online", "package:0", "12"});
    EXPECT_EQ(by_cpuctl.exit_code, 1) << by_cpuctl.describe();  // not bad input: try later
    EXPECT_NE(by_cpuctl.err.find("Held"), std::string::npos) << by_cpuctl.describe();
    EXPECT_TRUE(files_are(kPackage1));

    // A selector that names only held CPUs is refused the same way.
    const auto whole = client_->call("Online", "package:1");
    EXPECT_EQ(whole.error_name, kHeld) << whole.describe();
    EXPECT_NE(whole.error_message.find("every CPU of 'package:1' that could change is held"),
              std::string::npos)
        << whole.error_message;
    // Other selectors leave the held CPUs out.
    const auto all = client_->call("Online", "all");
    EXPECT_TRUE(all.ok) << all.describe();
    EXPECT_EQ(all.cpus().count(4), 0u);
    EXPECT_TRUE(files_are(kPackage1));

    // The holder may change its own CPUs.
    const auto own = orchestrator.call("Online", "15");
    EXPECT_TRUE(own.ok) << own.describe();
    EXPECT_TRUE(files_are({4, 5, 6, 7, 12, 13, 14}));

    // Closing the fd ends the hold; the CPUs go back to how they were before it.
    fd.reset();
    EXPECT_TRUE(eventually([&] { return holds_empty(); }, 10s));
    EXPECT_TRUE(files_are({}));
    EXPECT_TRUE(
        log_shows(*world_, "ended: its file descriptor was closed; restoring CPU 4-7,12-15"));
    const auto now = client_->call("Offline", "4");
    EXPECT_TRUE(now.ok) << now.describe();
}

TEST_F(HoldsTest, ReleaseHoldRepliesOnceTheRestoreIsDone) {
    RawClient orchestrator(world_->bus_address());
    auto held = orchestrator.hold_cpus("4-7", "offline", "orchestrator", "");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd fd{held.fd};
    const auto released = orchestrator.release_hold(held.hold_id);
    ASSERT_TRUE(released.ok) << released.describe();
    EXPECT_EQ(released.cpus(), (std::set<unsigned>{4, 5, 6, 7}));
    for (const auto& r : released.results) {
        EXPECT_EQ(r.result, "changed") << r.cpu;
    }
    // Already back when the reply came: no waiting here.
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_TRUE(holds_empty());
    const auto again = orchestrator.release_hold(held.hold_id);
    EXPECT_EQ(again.error_name, kNoSuchHold) << again.describe();
    const auto never = orchestrator.release_hold(12345);
    EXPECT_EQ(never.error_name, kNoSuchHold) << never.describe();
}

TEST_F(HoldsTest, WithoutRestoreTheCpusStayAsTheHolderLeftThem) {
    RawClient orchestrator(world_->bus_address());
    auto held = orchestrator.hold_cpus("4-7", "offline", "orchestrator", "", {{"restore", false}});
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    ::close(held.fd);
    EXPECT_TRUE(eventually([&] { return holds_empty(); }, 10s));
    EXPECT_TRUE(log_shows(*world_, "; no restore asked"));
    EXPECT_EQ(tree().online_files(), expected_files({4, 5, 6, 7}));
}

TEST_F(HoldsTest, HoldsNeverOverlap) {
    RawClient first(world_->bus_address());
    RawClient second(world_->bus_address());
    auto a = first.hold_cpus("4-7", "offline", "first", "");
    ASSERT_TRUE(a.call.ok) << a.call.describe();
    Fd fd{a.fd};
    // Not even in the same state: one holder per CPU.
    auto b = second.hold_cpus("7-8", "offline", "second", "");
    EXPECT_FALSE(b.call.ok);
    EXPECT_EQ(b.call.error_name, kHeld);
    EXPECT_NE(b.call.error_message.find("CPU 7 already held: hold " + std::to_string(a.hold_id) +
                                        " by first"),
              std::string::npos)
        << b.call.error_message;
    EXPECT_EQ(client_->get_holds().size(), 1u);
    EXPECT_EQ(tree().online_files(), expected_files({4, 5, 6, 7}));
}

// The holder's connection goes away while the fd lives on (passed to another process):
// the hold ends anyway.
TEST_F(HoldsTest, AHoldEndsWhenItsHolderLeavesTheBus) {
    auto orchestrator = std::make_unique<RawClient>(world_->bus_address());
    auto held = orchestrator->hold_cpus("4-7", "offline", "orchestrator", "");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd fd{held.fd};
    const std::string name = orchestrator->unique_name();
    orchestrator.reset();
    EXPECT_TRUE(eventually([&] { return holds_empty(); }, 10s));
    EXPECT_TRUE(log_shows(*world_, "ended: its holder " + name + " left the bus"));
    EXPECT_TRUE(files_are({}));
}

TEST_F(HoldsTest, BadInputIsRefusedAndNothingChanges) {
    struct Case {
        std::string mask, state, who, why;
        std::map<std::string, Option> options;
        std::string error;
    };
    const std::vector<Case> cases{
        {"4-7", "sideways", "x", "", {}, kInvalidArgs},
        {"4-7", "offline", "", "", {}, kInvalidArgs},
        {"4-7", "offline", "evil\x1b[2J", "", {}, kInvalidArgs},
        {"4-7", "offline", "x", "line\nbreak", {}, kInvalidArgs},
        {"4-7", "offline", std::string(65, 'w'), "", {}, kInvalidArgs},
        {"4-7", "offline", "x", "", {{"mode", std::string("best-effort")}}, kInvalidArgs},
        {"4-7", "offline", "x", "", {{"dry_run", true}}, kInvalidArgs},
        {"4-7", "offline", "x", "", {{"restore", std::string("yes")}}, kInvalidArgs},
        {"4-", "offline", "x", "", {}, kInvalidMask},
        {"0", "offline", "x", "", {}, kProtectedCpu},
        {"1-15", "offline", "x", "", {}, kTooFewOnline},
    };
    for (const auto& c : cases) {
        auto held = client_->hold_cpus(c.mask, c.state, c.who, c.why, c.options);
        EXPECT_FALSE(held.call.ok) << c.mask << " " << c.state << " " << c.who;
        EXPECT_EQ(held.call.error_name, c.error) << held.call.describe();
        EXPECT_LT(held.fd, 0);
    }
    EXPECT_TRUE(holds_empty());
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

TEST_F(HoldsTest, ManyShortHoldsLeaveNoFdsBehind) {
    RawClient orchestrator(world_->bus_address());
    const pid_t daemon = world_->daemon().pid();
    // The count after one round, so that whatever is opened once is counted. A file the
    // daemon reads just then (its re-read after a batch) may be counted once, here or at the
    // end: the end count must come down to the baseline, where a leak of one fd per round
    // leaves it 40 above.
    std::size_t baseline = 0;
    for (int round = 0; round < 41; ++round) {
        auto held =
            orchestrator.hold_cpus("4-7", "offline", "loop", "round " + std::to_string(round));
        ASSERT_TRUE(held.call.ok) << held.call.describe();
        ::close(held.fd);
        ASSERT_TRUE(eventually([&] { return holds_empty(); }, 10s)) << "round " << round;
        ASSERT_TRUE(files_are({})) << "round " << round;
        if (round == 0) {
            baseline = open_fds(daemon);
        } else if (round == 40) {
            EXPECT_TRUE(eventually([&] { return open_fds(daemon) <= baseline; }, 10s))
                << open_fds(daemon) << " fds open, " << baseline << " after the first round";
        }
    }
}

// --- cpuctl offline|online MASK -- COMMAND

TEST_F(HoldsTest, CpuctlHoldsWhileTheCommandRunsAndExitsWithItsStatus) {
    const auto seen = world_->dir() / "seen";
    const auto online4 = tree().root() / "devices/system/cpu/cpu4/online";
    const auto r = cpuctl({"offline", "4-7", "--who", "test", "--", "sh", "-c",
                           "cat " + online4.string() + " > " + seen.string() + "; exit 3"});
    EXPECT_EQ(r.exit_code, 3) << r.describe();
    std::ifstream in(seen);
    std::string value;
    in >> value;
    EXPECT_EQ(value, "0") << "cpu4 was not offline while the command ran";
    // Restored before cpuctl returned.
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_TRUE(holds_empty());
    EXPECT_NE(r.err.find("hold 1 released; restored 4,5,6,7"), std::string::npos) << r.describe();

    const auto failed = cpuctl({"offline", "4-7", "--", "false"});
    EXPECT_EQ(failed.exit_code, 1) << failed.describe();
    const auto killed = cpuctl({"online", "5", "--", "sh", "-c", "kill -TERM $$"});
    EXPECT_EQ(killed.exit_code, 128 + SIGTERM) << killed.describe();
    const auto missing = cpuctl({"offline", "4-7", "--", "/nonexistent/command"});
    EXPECT_EQ(missing.exit_code, 127) << missing.describe();
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_TRUE(holds_empty());
}

TEST_F(HoldsTest, CpuctlRefusesACommandWithWhatCannotHold) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"offline", "4-7", "--dry-run", "--", "true"},
          std::vector<std::string>{"offline", "4-7", "--best-effort", "--", "true"},
          std::vector<std::string>{"--json", "offline", "4-7", "--", "true"},
          std::vector<std::string>{"status", "--", "true"},
          std::vector<std::string>{"offline", "4-7", "--"},
          std::vector<std::string>{"offline", "4-7", "--who", "x"}}) {
        const auto r = cpuctl(args);
        EXPECT_EQ(r.exit_code, 2) << r.describe();
    }
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

// The holder killed with SIGKILL: its fd closes with it, the hold ends and the CPUs come
// back, while the command it ran goes on (it did not inherit the fd).
TEST_F(HoldsTest, AKilledHolderEndsItsHoldAndTheCpusComeBack) {
    const auto pid_file = world_->dir() / "command.pid";
    auto holder = world_->spawn_cpuctl(
        {"offline", "4-7", "--", "sh", "-c", "echo $$ > " + pid_file.string() + "; exec sleep 60"});
    ASSERT_TRUE(eventually([&] { return client_->get_holds().size() == 1; }, 20s)) << holder->err();
    ASSERT_TRUE(eventually([&] { return written(pid_file); }, 10s));
    EXPECT_EQ(tree().online_files(), expected_files({4, 5, 6, 7}));
    ::kill(holder->pid(), SIGKILL);
    EXPECT_TRUE(eventually([&] { return holds_empty(); }, 10s));
    EXPECT_TRUE(files_are({}));
    pid_t command = 0;
    std::ifstream(pid_file) >> command;
    ASSERT_GT(command, 0);
    EXPECT_EQ(::kill(command, 0), 0) << "the command should outlive the hold";
    ::kill(command, SIGKILL);
}

// SIGTERM to cpuctl goes to the command; cpuctl restores the CPUs and exits with its status.
TEST_F(HoldsTest, CpuctlPassesSigtermOnAndRestoresAfterTheCommand) {
    // The pid file says the command runs: cpuctl waits for it from then on.
    const auto pid_file = world_->dir() / "command.pid";
    auto holder = world_->spawn_cpuctl(
        {"offline", "4-7", "--", "sh", "-c", "echo $$ > " + pid_file.string() + "; exec sleep 60"});
    ASSERT_TRUE(eventually([&] { return written(pid_file); }, 20s)) << holder->err();
    ::kill(holder->pid(), SIGTERM);
    ASSERT_TRUE(holder->wait_until(Clock::now() + 20s)) << holder->err();
    EXPECT_EQ(holder->exit_code(), 128 + SIGTERM) << holder->err();
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_TRUE(holds_empty());
    EXPECT_NE(holder->err().find("restored 4,5,6,7"), std::string::npos) << holder->err();
}

}  // namespace
}  // namespace cpuhpd::itest
