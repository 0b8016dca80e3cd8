// `cpuctl topology --map` and `cpuctl status --map` against the real daemon on the fake tree
// (2 packages x 4 cores x 2 threads, cpu0 protected and without an online file), with a hold
// taken and a CPU offline; and once through tmux at 80 columns, where it is in colour.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>

#include "fixture.h"

#ifndef CPUCTL_BIN
#error "CPUCTL_BIN must be defined"
#endif

namespace cpuhpd::itest {
namespace {

// What the map of the test machine shows once hold `hold_id` holds cores 4 and 5 (4-5,12-13)
// offline and CPU 7 went offline.
std::string expected_map(std::uint64_t hold_id) {
    return "machine: 16 CPUs, 2 packages, 8 cores, 2 nodes\n"
           "  package 0, node 0: 8 of 8 online\n"
           "    [ 0+#  8+ ]  [ 1+   9+ ]  [ 2+  10+ ]  [ 3+  11+ ]\n"
           "  package 1, node 1: 3 of 8 online\n"
           "    [ 4-a 12-a]  [ 5-a 13-a]  [ 6+  14+ ]  [ 7-  15+ ]\n"
           "\n"
           "+ online (11)  - offline (5)  P protected  # not hotpluggable\n"
           "a  hold " +
           std::to_string(hold_id) + ": 4 CPUs held offline by live-update\n";
}

class TopologyMapTest : public CpuhpdTest {
protected:
    // Takes the hold and CPU 7 offline; the hold lasts while `holder_` and `fd_` live.
    std::uint64_t hold_and_offline() {
        holder_ = std::make_unique<RawClient>(world_->bus_address());
        auto held = holder_->hold_cpus("4-5,12-13", "offline", "live-update", "kernel update");
        EXPECT_TRUE(held.call.ok) << held.call.describe();
        fd_.fd = held.fd;
        const auto off = cpuctl({"offline", "7"});
        EXPECT_EQ(off.exit_code, 0) << off.describe();
        EXPECT_EQ(tree().online_files(), expected_files({4, 5, 7, 12, 13}));
        return held.hold_id;
    }

    std::unique_ptr<RawClient> holder_;
    Fd fd_;
};

TEST_F(TopologyMapTest, MapShowsHeldOfflineAndNotHotpluggableCpus) {
    const auto hold_id = hold_and_offline();
    const auto r = cpuctl({"topology", "--map", "--no-color"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(r.out, expected_map(hold_id));
    EXPECT_EQ(r.err, "");
}

// Not a terminal (the harness's stdout is a file): no colour without --no-color either.
TEST_F(TopologyMapTest, NoColourWhenStdoutIsNoTerminal) {
    const auto hold_id = hold_and_offline();
    const auto r = cpuctl({"topology", "--map"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(r.out, expected_map(hold_id));
}

TEST_F(TopologyMapTest, StatusMapIsTheStatusTableThenTheMap) {
    const auto hold_id = hold_and_offline();
    const auto r = cpuctl({"status", "--map", "--no-color"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_EQ(r.out.rfind("online:", 0), 0u) << r.out;
    const std::string map = expected_map(hold_id);
    ASSERT_GT(r.out.size(), map.size()) << r.out;
    EXPECT_EQ(r.out.substr(r.out.size() - map.size()), map);
    EXPECT_NE(r.out.find("\n\nmachine: 16 CPUs"), std::string::npos) << r.out;
}

TEST_F(TopologyMapTest, MapWithJsonIsAUsageError) {
    const auto r = cpuctl({"--json", "topology", "--map"});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_NE(r.err.find("--map"), std::string::npos) << r.describe();
}

// tmux at `columns` x 50 running `command`; stop() ends its server (its own socket, under the
// test's directory).
class Tmux {
public:
    Tmux(const std::filesystem::path& dir, unsigned columns, const std::string& command)
        : dir_(dir), socket_(dir / "tmux.sock") {
        ok_ = run({"new-session", "-d", "-x", std::to_string(columns), "-y", "50", "-s", "map",
                   command})
                  .exit_code == 0;
    }
    ~Tmux() { run({"kill-server"}); }
    Tmux(const Tmux&) = delete;
    Tmux& operator=(const Tmux&) = delete;

    bool started() const { return ok_; }
    // The pane's text; with `escapes`, its colours and attributes as escape sequences.
    std::string capture(bool escapes) {
        std::vector<std::string> args{"capture-pane", "-p", "-t", "map"};
        if (escapes) {
            args.push_back("-e");
        }
        return run(args).out;
    }

    static bool available() { return ::access("/usr/bin/tmux", X_OK) == 0; }

private:
    RunResult run(const std::vector<std::string>& args) {
        std::vector<std::string> argv{"/usr/bin/tmux", "-S", socket_.string(), "-f", "/dev/null"};
        argv.insert(argv.end(), args.begin(), args.end());
        Child child;
        const auto n = std::to_string(runs_++);
        child.start(argv, {{"TERM", "xterm-256color"}, {"NO_COLOR", std::nullopt}},
                    dir_ / ("tmux." + n + ".out"), dir_ / ("tmux." + n + ".err"));
        RunResult r;
        if (child.wait_until(Clock::now() + 20s)) {
            r.exit_code = child.exit_code();
        }
        r.out = child.out();
        r.err = child.err();
        return r;
    }

    std::filesystem::path dir_;
    std::filesystem::path socket_;
    bool ok_ = false;
    unsigned runs_ = 0;
};

std::string strip_escapes(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\x1b') {
            const auto end = text.find_first_of("ABCDEFGHJKSTfhlmsu", i + 1);
            if (end == std::string::npos) {
                break;
            }
            i = end;
        } else {
            out += text[i];
        }
    }
    return out;
}

TEST_F(TopologyMapTest, InTmuxAtEightyColumnsItFitsAndIsInColour) {
    if (!Tmux::available()) {
        GTEST_SKIP() << "tmux is not installed (/usr/bin/tmux; Debian's tmux, "
                        "scripts/install-deps.sh installs it)";
    }
    const auto hold_id = hold_and_offline();
    // A shell in the pane runs cpuctl, then says it is done and waits to be captured.
    const std::string command = "env -u NO_COLOR TERM=xterm-256color '" + std::string(CPUCTL_BIN) +
                                "' --bus-address '" + world_->bus_address() +
                                "' topology --map; echo cpuctl-exit=$?; sleep 60";
    Tmux tmux(world_->dir(), 80, command);
    ASSERT_TRUE(tmux.started()) << "tmux new-session failed";
    std::string screen;
    ASSERT_TRUE(eventually(
        [&] {
            screen = tmux.capture(true);
            return screen.find("cpuctl-exit=") != std::string::npos;
        },
        20s))
        << screen;
    const std::string text = strip_escapes(screen);
    EXPECT_NE(text.find("cpuctl-exit=0"), std::string::npos) << text;
    // The colour is there: green online CPUs, a held one's yellow letter, and more.
    EXPECT_NE(screen.find("\x1b["), std::string::npos) << screen;
    EXPECT_NE(screen.find("\x1b[32m"), std::string::npos) << screen;
    EXPECT_NE(text.find(expected_map(hold_id)), std::string::npos) << text;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        EXPECT_LE(line.size(), 80u) << line;
    }
    // What tmux shows without escapes is what --no-color prints.
    EXPECT_NE(tmux.capture(false).find(expected_map(hold_id)), std::string::npos);
}

}  // namespace
}  // namespace cpuhpd::itest
