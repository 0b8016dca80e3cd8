// The fixture the integration tests share: one World per test (temp dir, fake tree, private
// bus, the real cpuhpd) and a raw client on its bus, plus the expectations and helpers that
// tests of several areas use.
#pragma once

#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "enums.h"
#include "harness/child.h"
#include "harness/raw_client.h"
#include "harness/world.h"
#include "names.h"

namespace cpuhpd::itest {

using nlohmann::json;

// The D-Bus errors the daemon answers with, as the contract names them (dbus/names.h).
inline const std::string kInvalidMask = dbus::error_name(to_string(RefusalKind::InvalidMask));
inline const std::string kProtectedCpu = dbus::error_name(to_string(RefusalKind::ProtectedCpu));
inline const std::string kNotHotpluggable =
    dbus::error_name(to_string(RefusalKind::NotHotpluggable));
inline const std::string kTooFewOnline = dbus::error_name(to_string(RefusalKind::TooFewOnline));
inline const std::string kNotSupported = dbus::error_name(to_string(RefusalKind::NotSupported));
inline constexpr const char* kInvalidArgs = dbus::kErrorInvalidArgs;
inline constexpr const char* kAccessDenied = dbus::kErrorAccessDenied;

// Every hotpluggable CPU's online file: "0" for the listed CPUs, "1" for the others.
std::map<unsigned, std::string> expected_files(const std::set<unsigned>& offline);
std::set<unsigned> all_cpus_except(const std::set<unsigned>& out);

// Parses cpuctl --json output; a failure to parse is a test failure with the output shown.
::testing::AssertionResult parses(const RunResult& r, json& out);
// {cpu -> result} of a cpuctl JSON batch reply.
std::map<unsigned, std::string> json_results(const json& j);
std::map<unsigned, std::string> all_result(const std::set<unsigned>& cpus, const std::string& r);
std::vector<unsigned> json_order(const json& j);
// The CPUs of a kernel cpulist ("0-3,8"), read by the engine's parser.
std::set<unsigned> cpus_in(const std::string& cpulist);
std::size_t position(const std::vector<unsigned>& order, unsigned cpu);
bool any_line_matches(const std::string& text, const std::string& pattern);

// Polls `done` (bounded) until it holds; false when the timeout passes first.
bool eventually(const std::function<bool()>& done, std::chrono::seconds timeout);
// Waits (bounded) until the daemon's log contains `text`.
bool log_shows(World& world, const std::string& text, std::chrono::seconds timeout = 10s);
// Waits (bounded) until `name` has no owner on the bus; true when it has none.
bool owner_gone(RawClient& client, const std::string& name, std::chrono::seconds timeout = 10s);
// "1-13,1-13,...": `regions` regions of CPUs that can go offline together (min_online 2),
// padded with spaces to `bytes` bytes when that is longer.
std::string many_regions(std::size_t regions, std::size_t bytes = 0);
// The longest of `reads` Get Online calls, each of which must return `expected`.
std::chrono::microseconds worst_online_latency(RawClient& client, int reads,
                                               const std::string& expected);

// A sysfs file whose reads hang: `fifo` (a FIFO the test put in the tree) with its write
// end held, so that a reader waits for data (without a writer it would read EOF at once),
// and inotify telling when the daemon opens it.
class HangingRead {
public:
    explicit HangingRead(const std::filesystem::path& fifo);
    ~HangingRead();  // lets the reader go with EOF
    HangingRead(const HangingRead&) = delete;
    HangingRead& operator=(const HangingRead&) = delete;

    bool holding() const { return writer_ >= 0 && inotify_ >= 0; }
    // Waits (bounded) until somebody opens the FIFO; from then on that reader waits for
    // release(). False on timeout.
    bool wait_for_reader(std::chrono::milliseconds timeout);
    // The read returns `value`, then EOF.
    void release(const std::string& value);

private:
    int writer_ = -1;  // O_RDWR: opening never waits, and it counts as a writer
    int inotify_ = -1;
};

// SIGCONT on scope exit, so that a failed assertion never leaves the daemon stopped.
struct Resume {
    pid_t pid;
    ~Resume();
};

// Joins the thread on scope exit, so that a failed assertion never leaves it running.
struct Join {
    std::thread& t;
    ~Join() {
        if (t.joinable()) {
            t.join();
        }
    }
};

// Closes the descriptor on scope exit (or at reset()).
struct Fd {
    int fd = -1;
    ~Fd() { reset(); }
    void reset() {
        if (fd >= 0) {
            ::close(fd);
            fd = -1;
        }
    }
};

// Calls `on_event` for each inotify event queued on the non-blocking `fd`, in order.
template <typename F>
void drain_inotify(int fd, F on_event) {
    alignas(inotify_event) char buf[4096];
    for (;;) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) {
            return;
        }
        for (char* p = buf; p < buf + n;) {
            const auto* ev = reinterpret_cast<const inotify_event*>(p);
            on_event(*ev);
            p += sizeof(inotify_event) + ev->len;
        }
    }
}

// Counts the inotify events in `count_mask` on `watched` while `body` runs: on the file itself
// (`name` empty) or, when `watched` is a directory, on its entry `name`.
template <typename F>
int count_events(const std::filesystem::path& watched, std::uint32_t watch_mask,
                 std::uint32_t count_mask, const std::string& name, F body) {
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd < 0) {
        return -1;
    }
    inotify_add_watch(fd, watched.c_str(), watch_mask);
    body();
    int count = 0;
    drain_inotify(fd, [&](const inotify_event& ev) {
        const std::string entry = ev.len > 0 ? std::string(ev.name) : std::string();
        if ((ev.mask & count_mask) != 0 && entry == name) {
            ++count;
        }
    });
    close(fd);
    return count;
}

// One World and a RawClient on its bus for each test; derived fixtures choose the config,
// prepare the tree before the daemon starts, or ask for the project's bus policy.
class CpuhpdTest : public ::testing::Test {
protected:
    virtual DaemonConfig config() const { return {}; }
    virtual void prepare_tree(test::FakeSysfs&) {}
    virtual bool project_policy() const { return false; }

    void SetUp() override;
    void TearDown() override;

    test::FakeSysfs& tree() { return world_->tree(); }
    RunResult cpuctl(const std::vector<std::string>& args) { return world_->cpuctl(args); }

    // A crash: SIGKILL, reaped (bounded); client_ is dropped first.
    void kill_daemon();
    // The daemon started again on the same bus, state directory and config(); a new client_.
    void restart_daemon();

    std::unique_ptr<World> world_;
    std::unique_ptr<RawClient> client_;
};

// A batch held at a known step: the next CPU's online file is turned into a FIFO, so the
// daemon's write of it blocks in open() (no reader) until the test lets it go. The daemon
// keeps its state from uevents, as on /sys: re-reading the tree for every D-Bus message
// would open the FIFO and let the blocked write through.
class PinnedBatchTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override;  // min_online 1, no coalescing, uevents
    virtual std::string extra_yaml() const { return ""; }

    // The order the daemon writes `mask` in (a dry run).
    std::vector<unsigned> planned_order(const std::string& method, const std::string& mask);
    // cpuN/online becomes a FIFO: the daemon's next write of it blocks in open() (no reader),
    // and its reads of it find nothing and fall back to the summary list.
    void block_writes_to(unsigned cpu);
    // A regular online file again, holding what the (fake) kernel's state is.
    void unblock(unsigned cpu, const std::string& value);
    // Waits (bounded) until the online file of each of `cpus` holds `value`.
    bool files_show(const std::set<unsigned>& cpus, const std::string& value);
};

// A reader for a FIFO the daemon writes: opened without waiting (the daemon's open then
// finds it, before or after), then, once the daemon has written and closed (bounded wait),
// whatever it wrote is taken out of the pipe, so that no later read by the daemon finds
// it there. Returns the open read end (later writes of the FIFO go through while it is
// open), or -1 when the daemon never came.
int drain_after_write(const std::filesystem::path& fifo);

}  // namespace cpuhpd::itest
