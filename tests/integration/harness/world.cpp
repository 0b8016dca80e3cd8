#include "world.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "files.h"
#include "raw_client.h"

#ifndef CPUHPD_BIN
#error "CPUHPD_BIN must be defined"
#endif
#ifndef CPUCTL_BIN
#error "CPUCTL_BIN must be defined"
#endif

namespace cpuhpd::itest {

namespace fs = std::filesystem;

namespace {

test::FakeTopology integration_topology() {
    test::FakeTopology topology;
    topology.packages = kPackages;
    topology.cores_per_package = kCoresPerPackage;
    topology.threads_per_core = kThreadsPerCore;
    topology.nodes = kPackages;
    topology.plain_files = true;
    return topology;
}

}  // namespace

World::World() : tree_(integration_topology(), tmp_.path() / "sys"), proc_(tmp_.path() / "proc") {
    fs::create_directories(tmp_.path() / "state");
}

World::~World() {
    daemon_.stop();
    bus_.stop();
}

std::map<std::string, std::optional<std::string>> World::guard_env() const {
    std::string nowhere = "unix:path=" + (tmp_.path() / "no-such-bus").string();
    return {{"DBUS_SYSTEM_BUS_ADDRESS", nowhere},   {"DBUS_SESSION_BUS_ADDRESS", nowhere},
            {"DBUS_STARTER_ADDRESS", std::nullopt}, {"NOTIFY_SOCKET", std::nullopt},
            {"WATCHDOG_USEC", std::nullopt},        {"WATCHDOG_PID", std::nullopt}};
}

void World::start_bus(bool project_policy, const std::string& extra_config) {
    bus_.start(tmp_.path(), project_policy, extra_config, guard_env());
}

void World::start_daemon(const DaemonConfig& config, bool wait_for_name) {
    fs::path conf = tmp_.path() / "cpuhpd.yaml";
    write_file(conf, "protected_cpus: \"" + config.protected_cpus +
                         "\"\n"
                         "min_online: " +
                         std::to_string(config.min_online) +
                         "\n"
                         "coalesce_ms: " +
                         std::to_string(config.coalesce_ms) + "\n" + config.extra_yaml);
    std::vector<std::string> argv{CPUHPD_BIN,
                                  "--bus",
                                  bus_.address(),
                                  "--sysfs-root",
                                  tree_.root(),
                                  "--state-dir",
                                  tmp_.path() / "state",
                                  "--config",
                                  conf.string(),
                                  "--log-level",
                                  config.log_level,
                                  "--cgroup-root",
                                  (tmp_.path() / "cgroup").string(),
                                  "--proc-root",
                                  proc_.root()};
    if (config.uevent_socket) {
        argv.push_back("--uevent-socket");
        argv.push_back(uevent_socket_path());
    }
    daemon_.start(argv, guard_env(), tmp_.path() / "cpuhpd.out", tmp_.path() / "cpuhpd.err");
    if (wait_for_name) {
        wait_for_owner(bus_.address(), "org.cpuhpd1", daemon_, 15s);
    }
}

void World::stop_daemon() {
    daemon_.stop();
}

std::string World::uevent_socket_path() const {
    return (tmp_.path() / "uevents.sock").string();
}

void World::send_uevent(const std::string& action, unsigned cpu) {
    const std::string devpath = "/devices/system/cpu/cpu" + std::to_string(cpu);
    std::string payload = action + "@" + devpath;
    for (const std::string& entry :
         {"ACTION=" + action, "DEVPATH=" + devpath, std::string("SUBSYSTEM=cpu"),
          std::string("SEQNUM=") + std::to_string(++uevents_sent_)}) {
        payload += '\0';
        payload += entry;
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = uevent_socket_path();
    std::memcpy(address.sun_path, path.c_str(),
                std::min(path.size(), sizeof(address.sun_path) - 1));
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        throw std::runtime_error("socket for a uevent: " + error_text(errno));
    }
    const std::string what = "send a uevent to " + path;
    const ssize_t n = ::sendto(fd, payload.data(), payload.size(), 0,
                               reinterpret_cast<const sockaddr*>(&address), sizeof(address));
    const int error = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(payload.size())) {
        throw std::runtime_error(what + ": " + error_text(error));
    }
}

RunResult World::cpuctl(const std::vector<std::string>& args, bool with_address,
                        const std::map<std::string, std::optional<std::string>>& env,
                        std::chrono::seconds timeout) {
    std::vector<std::string> argv{CPUCTL_BIN};
    if (with_address) {
        argv.push_back("--bus-address");
        argv.push_back(bus_.address());
    }
    argv.insert(argv.end(), args.begin(), args.end());
    auto e = guard_env();
    for (const auto& [k, v] : env) {
        e[k] = v;
    }
    return run(argv, e, timeout);
}

RunResult World::cpuctl_as(uid_t uid, gid_t gid, const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/setpriv",
                                  "--reuid=" + std::to_string(uid),
                                  "--regid=" + std::to_string(gid),
                                  "--clear-groups",
                                  CPUCTL_BIN,
                                  "--bus-address",
                                  bus_.address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, guard_env(), 60s);
}

RunResult World::run(const std::vector<std::string>& argv,
                     const std::map<std::string, std::optional<std::string>>& env,
                     std::chrono::seconds timeout) {
    unsigned n = ++runs_;
    Child c;
    c.start(argv, env, tmp_.path() / ("cpuctl." + std::to_string(n) + ".out"),
            tmp_.path() / ("cpuctl." + std::to_string(n) + ".err"));
    RunResult rr;
    if (!c.wait_until(Clock::now() + timeout)) {
        c.stop(100ms);
        rr.exit_code = -1;
    } else {
        rr.exit_code = c.exit_code();
    }
    rr.out = c.out();
    rr.err = c.err();
    return rr;
}

std::unique_ptr<Child> World::spawn_cpuctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{CPUCTL_BIN, "--bus-address", bus_.address()};
    argv.insert(argv.end(), args.begin(), args.end());
    unsigned n = ++runs_;
    auto c = std::make_unique<Child>();
    c->start(argv, guard_env(), tmp_.path() / ("cpuctl." + std::to_string(n) + ".out"),
             tmp_.path() / ("cpuctl." + std::to_string(n) + ".err"));
    return c;
}

}  // namespace cpuhpd::itest
