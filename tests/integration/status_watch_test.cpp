// What is in force, shown and followed: `cpuctl status` (table and --json) with a hold and a
// profile in force and a batch in flight; the exit status of ids that name nothing; and
// `cpuctl watch --json` as a child process following an Offline, a hold, a profile, a CPU
// another tool changed, the daemon leaving and coming back, until SIGINT.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>

#include <sstream>
#include <thread>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

// night: CPUs 8-11 offline.
constexpr const char* kProfiles =
    "profiles:\n"
    "  night:\n"
    "    offline: \"8-11\"\n";

// The complete lines of `text` (a line still being written is left out).
std::vector<std::string> complete_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
        lines.push_back(text.substr(start, nl - start));
    }
    return lines;
}

// The value of `label` in a status table ("holds:  1" -> "1"); "" when no such line.
std::string table_value(const std::string& table, const std::string& label) {
    for (const auto& line : complete_lines(table)) {
        if (line.rfind(label, 0) == 0) {
            const auto value = line.find_first_not_of(' ', label.size());
            return value == std::string::npos ? std::string() : line.substr(value);
        }
    }
    return {};
}

class StatusTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.extra_yaml = kProfiles;
        return c;
    }

    json status_json() {
        const RunResult r = cpuctl({"--json", "status"});
        EXPECT_EQ(r.exit_code, 0) << r.describe();
        json j;
        EXPECT_TRUE(parses(r, j));
        return j;
    }
};

TEST_F(StatusTest, ShowsTheHoldsAndTheProfileInForceAndNothingWhenNone) {
    json none = status_json();
    EXPECT_EQ(none["holds"], json::array());
    EXPECT_EQ(none["profile"], (json{{"active", ""}, {"taken", ""}}));
    EXPECT_EQ(none["power_profiles"],
              (json{{"followed", false}, {"available", false}, {"profile", ""}}));
    EXPECT_TRUE(none["batch"].is_null()) << none.dump();
    EXPECT_EQ(none["last_recovery"]["outcome"], "none");
    const RunResult empty = cpuctl({"status"});
    ASSERT_EQ(empty.exit_code, 0) << empty.describe();
    EXPECT_EQ(table_value(empty.out, "holds:"), "0") << empty.out;
    EXPECT_EQ(table_value(empty.out, "profile:"), "none") << empty.out;
    EXPECT_EQ(table_value(empty.out, "batch:"), "none") << empty.out;
    EXPECT_EQ(table_value(empty.out, "power profiles:"), "not followed") << empty.out;
    EXPECT_FALSE(any_line_matches(empty.out, "^hold [0-9]+:")) << empty.out;

    auto held = client_->hold_cpus("4-5", "offline", "live-update", "kernel update");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd hold_fd{held.fd};
    const RunResult applied = cpuctl({"profile", "apply", "night"});
    ASSERT_EQ(applied.exit_code, 0) << applied.describe();

    const json j = status_json();
    ASSERT_EQ(j["holds"].size(), 1u) << j.dump();
    const json& h = j["holds"][0];
    EXPECT_EQ(h["hold_id"], held.hold_id);
    EXPECT_EQ(h["cpus"], "4-5");
    EXPECT_EQ(h["state"], "offline");
    EXPECT_EQ(h["who"], "live-update");
    EXPECT_EQ(h["why"], "kernel update");
    EXPECT_EQ(h["holder"], client_->unique_name());
    EXPECT_GT(h["since_us"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(j["profile"], (json{{"active", "night"}, {"taken", "8-11"}}));
    EXPECT_EQ(j["offline"], "4-5,8-11");
    EXPECT_TRUE(j["batch"].is_null());

    const RunResult table = cpuctl({"status"});
    ASSERT_EQ(table.exit_code, 0) << table.describe();
    EXPECT_EQ(table_value(table.out, "holds:"), "1") << table.out;
    const std::string hold_line =
        table_value(table.out, "hold " + std::to_string(held.hold_id) + ":");
    EXPECT_TRUE(hold_line.rfind("offline 4-5, by live-update (kernel update), since 20", 0) == 0)
        << table.out;
    EXPECT_TRUE(hold_line.size() > 4 && hold_line.substr(hold_line.size() - 4) == " UTC")
        << table.out;
    EXPECT_EQ(table_value(table.out, "profile:"), "night (took 8-11)") << table.out;
    EXPECT_EQ(table_value(table.out, "batch:"), "none") << table.out;

    // Both ended: status says so.
    hold_fd.reset();
    ASSERT_TRUE(eventually([&] { return client_->get_holds().empty(); }, 10s));
    ASSERT_EQ(cpuctl({"profile", "revert"}).exit_code, 0);
    const json after = status_json();
    EXPECT_EQ(after["holds"], json::array());
    EXPECT_EQ(after["profile"], (json{{"active", ""}, {"taken", ""}}));
    const RunResult table_after = cpuctl({"status"});
    EXPECT_EQ(table_value(table_after.out, "holds:"), "0") << table_after.out;
    EXPECT_EQ(table_value(table_after.out, "profile:"), "none") << table_after.out;
}

TEST_F(StatusTest, IdsThatNameNothingExit2AndCommandsWithoutIdExit1) {
    struct Case {
        std::vector<std::string> args;
        int exit_code;
        std::string error;
    };
    const std::string no_profile = dbus::error_name(to_string(RefusalKind::NoSuchProfile));
    const std::string no_hold = dbus::error_name(to_string(RefusalKind::NoSuchHold));
    const std::string no_batch = dbus::error_name(to_string(RefusalKind::NoSuchBatch));
    for (const Case& c : std::vector<Case>{
             {{"profile", "apply", "nosuch"}, 2, no_profile},
             {{"profile", "show", "nosuch"}, 2, no_profile},
             {{"release", "99"}, 2, no_hold},
             {{"cancel", "99"}, 2, no_batch},
             {{"cancel", "99", "--no-wait"}, 2, no_batch},
             // Nothing named: nothing to cancel, nothing to revert.
             {{"cancel"}, 1, no_batch},
             {{"profile", "revert"}, 1, no_profile},
         }) {
        std::string what;
        for (const auto& a : c.args) {
            what += a + " ";
        }
        const RunResult r = cpuctl(c.args);
        EXPECT_EQ(r.exit_code, c.exit_code) << what << r.describe();
        EXPECT_NE(r.err.find(c.error), std::string::npos) << what << r.describe();
        std::vector<std::string> with_json{"--json"};
        with_json.insert(with_json.end(), c.args.begin(), c.args.end());
        const RunResult rj = cpuctl(with_json);
        EXPECT_EQ(rj.exit_code, c.exit_code) << what << rj.describe();
        json j;
        ASSERT_TRUE(parses(rj, j)) << what;
        EXPECT_EQ(j["error"], c.error) << what;
    }
    EXPECT_EQ(tree().online_files(), expected_files({}));  // nothing changed
}

// A batch in flight: Offline 13-15 held while it writes cpu14 (its second CPU).
class StatusBatchTest : public PinnedBatchTest {};

TEST_F(StatusBatchTest, ShowsTheBatchInFlight) {
    ASSERT_EQ(planned_order("Offline", "13-15"), (std::vector<unsigned>{15, 14, 13}));
    block_writes_to(14);
    CallResult reply;
    std::thread caller([&] {
        RawClient c(world_->bus_address());
        reply = c.call("Offline", "13-15", {}, 60s);
    });
    Join join{caller};
    ASSERT_TRUE(files_show({15}, "0")) << "the batch did not reach cpu14";

    const RunResult r = cpuctl({"--json", "status"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    json j;
    ASSERT_TRUE(parses(r, j));
    const json& b = j["batch"];
    ASSERT_TRUE(b.is_object()) << j.dump();
    EXPECT_EQ(b["batch_id"], 1);
    EXPECT_EQ(b["action"], "offline");
    EXPECT_EQ(b["cpus"], "13-15");
    EXPECT_EQ(b["requests"], 1);
    EXPECT_LE(b["done"].get<unsigned>(), b["total"].get<unsigned>());
    EXPECT_GT(b["since_us"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(j["busy"], true);
    const RunResult table = cpuctl({"status"});
    EXPECT_EQ(table_value(table.out, "batch:").rfind("1: offline 13-15, 1 request", 0), 0u)
        << table.out;

    // Let it go: cpu14 and then cpu13 go offline.
    tree().write("devices/system/cpu/online", "0-13");
    Fd reader{drain_after_write(tree().online_file(14))};
    ASSERT_GE(reader.fd, 0) << "the daemon never wrote cpu14";
    caller.join();
    ASSERT_TRUE(reply.ok) << reply.describe();
    ASSERT_TRUE(eventually(
        [&] {
            const RunResult s = cpuctl({"--json", "status"});
            json k;
            return s.exit_code == 0 && parses(s, k) && k["batch"].is_null();
        },
        10s));
}

// Waits for lines printed into the files of the test's directory (a child's stdout) with
// inotify: no sleeping, a deadline.
class OutputWaiter {
public:
    explicit OutputWaiter(const std::filesystem::path& dir)
        : fd_(inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
        if (fd_ >= 0) {
            inotify_add_watch(fd_, dir.c_str(), IN_MODIFY | IN_CLOSE_WRITE);
        }
    }
    ~OutputWaiter() {
        if (fd_ >= 0) {
            close(fd_);
        }
    }
    // Until `done()` holds (checked at once and after each write) or `timeout` passes.
    bool wait(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
        const auto deadline = Clock::now() + timeout;
        while (!done()) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0 || fd_ < 0) {
                return false;
            }
            pollfd p{fd_, POLLIN, 0};
            ::poll(&p, 1, static_cast<int>(left.count()) + 1);
            drain_inotify(fd_, [](const inotify_event&) {});
        }
        return true;
    }

private:
    int fd_;
};

class WatchTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.extra_yaml = kProfiles;
        c.uevent_socket = true;  // CPUs another tool changes are noticed at once
        c.coalesce_ms = 0;
        return c;
    }

    void start_watch(bool with_json = true) {
        std::vector<std::string> args{"watch"};
        if (with_json) {
            args.insert(args.begin(), "--json");
        }
        watch_ = world_->spawn_cpuctl(args);
        waiter_ = std::make_unique<OutputWaiter>(world_->dir());
        ASSERT_TRUE(next_event("watching")) << watch_->err();
    }

    // The JSON lines printed so far.
    std::vector<json> events() {
        std::vector<json> out;
        for (const auto& line : complete_lines(watch_->out())) {
            out.push_back(json::parse(line, nullptr, false));
        }
        return out;
    }

    // Waits for the next event (after those already taken) that is `name` and for which
    // `match` holds; skips the events before it. Nullopt on timeout.
    std::optional<json> next_event(const std::string& name,
                                   const std::function<bool(const json&)>& match = {}) {
        std::optional<json> found;
        waiter_->wait(
            [&] {
                const auto all = events();
                for (std::size_t i = taken_; i < all.size(); ++i) {
                    EXPECT_FALSE(all[i].is_discarded()) << "not JSON: line " << i;
                    if (all[i].value("event", "") == name && (!match || match(all[i]))) {
                        found = all[i];
                        taken_ = i + 1;
                        return true;
                    }
                }
                return false;
            },
            15000ms);
        if (!found) {
            ADD_FAILURE() << "no " << name << " event; printed:\n"
                          << watch_->out() << "\nstderr:\n"
                          << watch_->err();
        }
        return found;
    }

    // SIGINT: exit 0, bounded.
    void interrupt() {
        ASSERT_EQ(kill(watch_->pid(), SIGINT), 0);
        ASSERT_TRUE(watch_->wait_until(Clock::now() + 10s)) << "cpuctl watch did not stop";
        EXPECT_EQ(watch_->exit_code(), 0) << watch_->err();
    }

    std::unique_ptr<Child> watch_;
    std::unique_ptr<OutputWaiter> waiter_;
    std::size_t taken_ = 0;
};

TEST_F(WatchTest, FollowsABatchAHoldAProfileAndOutsideChangesUntilSigint) {
    start_watch();
    const json first = events().front();
    EXPECT_EQ(first["owner"], client_->name_owner(dbus::kBusName));
    EXPECT_EQ(first["status"]["online"], "0-15");
    EXPECT_EQ(first["status"]["holds"], json::array());
    EXPECT_FALSE(first["time"].get<std::string>().empty());

    // A batch: its start, its end, and the CPUs it changed.
    ASSERT_EQ(cpuctl({"offline", "3", "--strategy", "per-cpu"}).exit_code, 0);
    const auto started = next_event("batch-started");
    ASSERT_TRUE(started);
    const auto id = (*started)["batch"]["batch_id"].get<std::uint64_t>();
    EXPECT_EQ((*started)["batch"]["action"], "offline");
    EXPECT_EQ((*started)["batch"]["cpus"], "3");
    const std::size_t after_start = taken_;
    const auto finished = next_event("batch-finished");
    ASSERT_TRUE(finished);
    EXPECT_EQ((*finished)["batch_id"], id);
    EXPECT_EQ((*finished)["changed"], "3");
    EXPECT_EQ((*finished)["failed"], "");
    EXPECT_EQ((*finished)["strategy"], "per-cpu");
    // The CPU state's PropertiesChanged: after the start, before or after the end.
    const std::size_t after_end = taken_;
    taken_ = after_start;
    EXPECT_TRUE(next_event("cpus", [](const json& e) { return e["offline"] == "3"; }));
    taken_ = std::max(taken_, after_end);

    // A hold, taken and ended.
    auto held = client_->hold_cpus("4-5", "offline", "live-update", "kernel update");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd hold_fd{held.fd};
    const auto taken = next_event("hold-taken");
    ASSERT_TRUE(taken);
    EXPECT_EQ((*taken)["hold"]["hold_id"], held.hold_id);
    EXPECT_EQ((*taken)["hold"]["cpus"], "4-5");
    EXPECT_EQ((*taken)["hold"]["who"], "live-update");
    hold_fd.reset();
    const auto ended = next_event("hold-ended");
    ASSERT_TRUE(ended);
    EXPECT_EQ((*ended)["hold"]["hold_id"], held.hold_id);

    // A profile.
    ASSERT_EQ(cpuctl({"profile", "apply", "night"}).exit_code, 0);
    const auto profile =
        next_event("profile", [](const json& e) { return e["active"] == "night"; });
    ASSERT_TRUE(profile);
    EXPECT_EQ((*profile)["taken"], "8-11");

    // Another tool takes cpu2 offline: the uevent, then the property change.
    tree().write("devices/system/cpu/cpu2/online", "0");
    tree().write("devices/system/cpu/online", "0-1,6-7,12-15");
    world_->send_uevent("offline", 2);
    EXPECT_TRUE(next_event("cpus", [](const json& e) {
        return cpus_in(e["offline"].get<std::string>()).count(2) == 1;
    }));

    interrupt();
    // Every line is a JSON object with a time and an event.
    for (const auto& e : events()) {
        ASSERT_FALSE(e.is_discarded());
        EXPECT_TRUE(e.contains("time") && e.contains("event")) << e.dump();
    }
}

TEST_F(WatchTest, TellsWhenTheDaemonLeavesAndComesBack) {
    start_watch();
    const std::string owner = events().front()["owner"];
    world_->stop_daemon();
    const auto gone = next_event("daemon-gone");
    ASSERT_TRUE(gone);
    EXPECT_EQ((*gone)["owner"], owner);
    ASSERT_NO_THROW(world_->start_daemon(config()));
    const auto back = next_event("daemon-back");
    ASSERT_TRUE(back);
    EXPECT_NE((*back)["owner"], owner);
    EXPECT_EQ((*back)["owner"], client_->name_owner(dbus::kBusName));
    EXPECT_EQ((*back)["status"]["online"], "0-15");
    // Still following the new daemon.
    ASSERT_EQ(cpuctl({"offline", "3"}).exit_code, 0);
    EXPECT_TRUE(next_event("batch-finished", [](const json& e) { return e["changed"] == "3"; }));
    interrupt();
}

TEST_F(WatchTest, TextLinesHaveATimeAndSayWhatHappened) {
    watch_ = world_->spawn_cpuctl({"watch"});
    waiter_ = std::make_unique<OutputWaiter>(world_->dir());
    ASSERT_TRUE(waiter_->wait([&] { return !complete_lines(watch_->out()).empty(); }, 15000ms))
        << watch_->err();
    ASSERT_EQ(cpuctl({"offline", "3"}).exit_code, 0);
    const std::string time = "^20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9:.]+Z ";
    EXPECT_TRUE(waiter_->wait(
        [&] {
            return any_line_matches(watch_->out(),
                                    time + "batch [0-9]+ finished: offline, changed 3, failed -");
        },
        15000ms))
        << watch_->out();
    EXPECT_TRUE(any_line_matches(watch_->out(), time + "watching cpuhpd \\(:[0-9.]+\\): online "))
        << watch_->out();
    EXPECT_TRUE(
        any_line_matches(watch_->out(), time + "batch [0-9]+ started: offline 3, 1 request"))
        << watch_->out();
    ASSERT_EQ(kill(watch_->pid(), SIGTERM), 0);
    ASSERT_TRUE(watch_->wait_until(Clock::now() + 10s));
    EXPECT_EQ(watch_->exit_code(), 0) << watch_->err();
}

}  // namespace
}  // namespace cpuhpd::itest
