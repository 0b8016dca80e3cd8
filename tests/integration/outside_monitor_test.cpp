// The signals `cpuctl watch` follows, seen by a client we did not write: `gdbus monitor`
// (GLib) on the private bus, while a hold is taken, a held CPU is written behind the daemon's
// back and put back, the hold ends and a batch runs. What it prints is what any GLib or
// Python orchestrator would get.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>

#include "fixture.h"
#include "harness/child.h"

namespace cpuhpd::itest {
namespace {

constexpr const char* kGdbus = "/usr/bin/gdbus";

class OutsideMonitorTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.uevent_socket = true;  // outside changes reach the daemon as uevents, as on /sys
        return c;
    }

    // Waits (bounded) until the monitor has printed a line matching `pattern`.
    bool monitor_shows(const std::string& pattern) {
        const std::regex re(pattern, std::regex::multiline);
        return eventually([&] { return std::regex_search(monitor_.out(), re); }, 10s);
    }

    Child monitor_;
};

TEST_F(OutsideMonitorTest, GdbusMonitorSeesHoldsViolationsBatchesAndPropertyChanges) {
    if (::access(kGdbus, X_OK) != 0) {
        GTEST_SKIP() << "gdbus (package libglib2.0-bin) is not installed";
    }
    monitor_.start({kGdbus, "monitor", "--address", world_->bus_address(), "--dest", "org.cpuhpd1",
                    "--object-path", "/org/cpuhpd1"},
                   world_->guard_env(), world_->dir() / "gdbus.out", world_->dir() / "gdbus.err");
    // gdbus has added its match rules once it says who owns the name.
    ASSERT_TRUE(monitor_shows("^The name org\\.cpuhpd1 is owned by :"))
        << monitor_.out() << monitor_.err();

    RawClient orchestrator(world_->bus_address());
    auto held = orchestrator.hold_cpus("4-5", "offline", "live-update", "");
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd fd{held.fd};
    const std::string id = std::to_string(held.hold_id);
    EXPECT_TRUE(
        monitor_shows("org\\.cpuhpd1\\.Manager\\.HoldsChanged \\(\\[\\(uint64 " + id + ", '4-5'"))
        << monitor_.out();
    EXPECT_TRUE(
        monitor_shows("org\\.freedesktop\\.DBus\\.Properties\\.PropertiesChanged "
                      "\\('org\\.cpuhpd1\\.Manager', \\{.*'Holds': <\\[\\(uint64 " +
                      id + ", '4-5'"))
        << monitor_.out();
    EXPECT_TRUE(monitor_shows("'Offline': <'4-5'>")) << monitor_.out();

    // A udev rule's write and its uevent: put back, and told.
    tree().set_online(4, true);
    world_->send_uevent("online", 4);
    EXPECT_TRUE(monitor_shows("org\\.cpuhpd1\\.Manager\\.HoldViolated \\(uint64 " + id +
                              ", 'live-update', '" + orchestrator.unique_name() +
                              "', '4', '4', 'restore', uint64 1\\)"))
        << monitor_.out();

    // The hold ends with its fd: restored, and the Holds property is empty again.
    fd.reset();
    EXPECT_TRUE(monitor_shows("'Holds': <@a\\(tssssstb\\) \\[\\]>")) << monitor_.out();
    EXPECT_TRUE(eventually([&] { return tree().online_files() == expected_files({}); }, 10s));

    // A batch: its progress, its end, and the batch in flight as a property.
    ASSERT_TRUE(client_->call("Offline", "6-7").ok);
    EXPECT_TRUE(
        monitor_shows("org\\.cpuhpd1\\.Manager\\.BatchProgress \\(uint64 [0-9]+, "
                      "uint32 2, uint32 2\\)"))
        << monitor_.out();
    EXPECT_TRUE(
        monitor_shows("org\\.cpuhpd1\\.Manager\\.BatchFinished \\(uint64 [0-9]+, "
                      "'offline', '[a-z-]+', '6-7', ''"))
        << monitor_.out();
    EXPECT_TRUE(
        monitor_shows("'CurrentBatch': <\\{'action': <'offline'>, 'batch_id': <uint64 [0-9]+>, "
                      "'cpus': <'6-7'>"))
        << monitor_.out();
    monitor_.stop(1000ms);
}

}  // namespace
}  // namespace cpuhpd::itest
