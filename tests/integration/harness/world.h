// One test's world: a temporary directory holding the fake sysfs tree, a private bus and
// the real cpuhpd, with the real cpuctl run against them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child.h"
#include "fake_proc.h"
#include "fake_sysfs.h"
#include "private_bus.h"
#include "temp_dir.h"

namespace cpuhpd::itest {

// The machine of the integration tests: 2 packages x 4 cores x 2 threads, one NUMA node per
// package, cpu0 without an online file. The daemon writes the tree's plain files.
inline constexpr unsigned kPackages = 2;
inline constexpr unsigned kCoresPerPackage = 4;
inline constexpr unsigned kThreadsPerCore = 2;
inline constexpr unsigned kCpus = kPackages * kCoresPerPackage * kThreadsPerCore;

struct DaemonConfig {
    std::string protected_cpus = "0";
    unsigned min_online = 2;
    unsigned coalesce_ms = 0;  // the daemon's default
    std::string extra_yaml;    // appended verbatim
    std::string log_level = "debug";
    // Start with --uevent-socket: the daemon keeps its state from uevents, as on /sys,
    // and send_uevent() plays the kernel.
    bool uevent_socket = false;
};

class World {
public:
    World();
    ~World();

    const std::filesystem::path& dir() const { return tmp_.path(); }
    test::FakeSysfs& tree() { return tree_; }
    // The daemon's --proc-root: no tasks and no IRQs until a test adds them.
    test::FakeProc& proc() { return proc_; }
    const std::string& bus_address() const { return bus_.address(); }

    // Starts dbus-daemon and waits (bounded) for its printed address. With `project_policy`
    // the bus denies method calls by default, as the system bus does, and includes the
    // project's dbus/org.cpuhpd1.conf; otherwise everything is allowed. `extra_config` is
    // appended inside <busconfig> (e.g. <limit> elements for the benchmark's 1000 callers).
    void start_bus(bool project_policy = false, const std::string& extra_config = "");
    // Writes the config, starts cpuhpd and (with `wait_for_name`) waits until org.cpuhpd1
    // has an owner. Throws std::runtime_error with the daemon's stderr when it exits early or
    // never appears.
    void start_daemon(const DaemonConfig& config = {}, bool wait_for_name = true);
    void stop_daemon();
    // Sends the uevent the kernel sends when `cpu` goes `action` ("online", "offline") to
    // the daemon's --uevent-socket.
    void send_uevent(const std::string& action, unsigned cpu);
    Child& daemon() { return daemon_; }
    std::string daemon_log() const { return daemon_.err(); }

    // Runs cpuctl with `--bus-address <address>` prepended (unless `with_address` is false)
    // and DBUS_SYSTEM_BUS_ADDRESS pointing at a socket that does not exist (unless `env`
    // overrides it), so that a client ignoring its options never reaches a real bus.
    RunResult cpuctl(const std::vector<std::string>& args, bool with_address = true,
                     const std::map<std::string, std::optional<std::string>>& env = {},
                     std::chrono::seconds timeout = 60s);
    // cpuctl as user `uid`/`gid` (through setpriv, no supplementary groups), with
    // `--bus-address`.
    RunResult cpuctl_as(uid_t uid, gid_t gid, const std::vector<std::string>& args);
    // Starts cpuctl without waiting (for concurrency tests).
    std::unique_ptr<Child> spawn_cpuctl(const std::vector<std::string>& args);

    std::map<std::string, std::optional<std::string>> guard_env() const;

private:
    std::string uevent_socket_path() const;
    // Runs `argv` (cpuctl, or a wrapper of it) to completion or `timeout`.
    RunResult run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::optional<std::string>>& env,
                  std::chrono::seconds timeout);

    TempDir tmp_;
    test::FakeSysfs tree_;
    test::FakeProc proc_;
    PrivateBus bus_;
    Child daemon_;
    unsigned runs_ = 0;
    unsigned uevents_sent_ = 0;
};

}  // namespace cpuhpd::itest
