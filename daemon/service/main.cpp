// cpuhpd: the bulk CPU hotplug service. Parses the command line and the config, then
// hands over to Daemon.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "config.h"
#include "daemon.h"
#include "enums.h"
#include "log.h"

#ifndef CPUHPD_DEFAULT_CONFIG
#error "CPUHPD_DEFAULT_CONFIG must be defined by the build"
#endif
#ifndef CPUHPD_VERSION
#define CPUHPD_VERSION "unknown"
#endif

namespace {

struct Options {
    std::optional<std::string> config;
    std::optional<std::string> sysfs_root;
    std::optional<std::string> proc_root;
    std::optional<std::string> cgroup_root;
    std::optional<std::string> state_dir;
    std::optional<std::string> bus;
    std::optional<int> coalesce_ms;
    std::optional<std::string> log_level;
    std::optional<std::string> uevent_socket;
    bool check_config = false;
    std::optional<std::string> check_file;  // cpuhpd --check-config FILE
};

void fail(const std::string& message) {
    std::fprintf(stderr, "cpuhpd: error: %s\n", message.c_str());
}

// Command-line values override the file's; they get the same checks.
bool apply(const Options& options, cpuhpd::Config& config) {
    if (options.sysfs_root) {
        config.sysfs_root = *options.sysfs_root;
    }
    if (options.proc_root) {
        config.proc_root = *options.proc_root;
    }
    if (options.cgroup_root) {
        config.cgroup_root = *options.cgroup_root;
    }
    if (options.state_dir) {
        config.state_dir = *options.state_dir;
    }
    if (options.bus) {
        if (options.bus->empty()) {
            fail("--bus: expected system, session or a D-Bus address");
            return false;
        }
        config.bus = *options.bus;
    }
    if (options.coalesce_ms) {
        config.engine.coalesce = std::chrono::milliseconds(*options.coalesce_ms);
    }
    if (options.log_level) {
        config.log_level = *options.log_level;
    }
    if (options.uevent_socket) {
        config.uevent_socket = std::filesystem::absolute(*options.uevent_socket);
    }
    config.sysfs_root = cpuhpd::normalize_directory(std::filesystem::absolute(config.sysfs_root));
    config.state_dir = cpuhpd::normalize_directory(std::filesystem::absolute(config.state_dir));
    config.proc_root = cpuhpd::normalize_directory(std::filesystem::absolute(config.proc_root));
    config.cgroup_root = cpuhpd::normalize_directory(std::filesystem::absolute(config.cgroup_root));
    return true;
}

void add_options(CLI::App& app, Options& options) {
    app.add_option("--config", options.config,
                   "Config file (default " CPUHPD_DEFAULT_CONFIG ", which may be missing)");
    app.add_option("--sysfs-root", options.sysfs_root, "Where sysfs is mounted (default /sys)");
    app.add_option("--proc-root", options.proc_root,
                   "Where procfs is mounted, for the tasks and IRQs pinned to CPUs going "
                   "offline (default /proc)");
    app.add_option("--cgroup-root", options.cgroup_root,
                   "Where cgroup v2 is mounted, for the cpuset partitions shrunk before CPUs go "
                   "offline and restored when they are back (default /sys/fs/cgroup)");
    app.add_option("--state-dir", options.state_dir,
                   "Runtime state directory (default /run/cpuhpd)");
    app.add_option("--bus", options.bus, "system, session or a D-Bus address (default system)");
    app.add_option("--coalesce-ms", options.coalesce_ms,
                   "How long a batch that finds cpuhpd idle waits for requests not received yet, "
                   "0..10000 ms (default 0: a lone request goes at once)")
        ->check(CLI::Range(0, 10000));
    app.add_option("--log-level", options.log_level, cpuhpd::alternatives(cpuhpd::kLogLevelNames))
        ->check(CLI::IsMember(cpuhpd::names_in(cpuhpd::kLogLevelNames)));
    app.add_option("--uevent-socket", options.uevent_socket,
                   "Take CPU uevents from datagrams sent to this Unix socket, created here, "
                   "instead of the kernel: for a --sysfs-root other than /sys (tests)");
    app.add_flag("--check-config", options.check_config,
                 "Check the config file (and the options) and exit");
    app.add_option("FILE", options.check_file,
                   "With --check-config: the file to check (the same as --config FILE)");
}

// --check-config FILE: FILE is the config to check (a FILE alone, or two files, are refused).
bool take_check_file(Options& options) {
    if (options.check_file) {
        if (!options.check_config) {
            fail("a FILE argument is only accepted with --check-config (else --config FILE)");
            return false;
        }
        if (options.config && *options.config != *options.check_file) {
            fail("--check-config: two files named (" + *options.check_file + " and --config " +
                 *options.config + ")");
            return false;
        }
        options.config = options.check_file;
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"cpuhpd: takes CPUs offline and online in bulk, over D-Bus (org.cpuhpd1)",
                 "cpuhpd"};
    Options options;
    add_options(app, options);
    app.set_version_flag("--version", std::string("cpuhpd ") + CPUHPD_VERSION);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error);
        return code == 0 ? 0 : 2;
    }
    if (!take_check_file(options)) {
        return 2;
    }

    cpuhpd::Config config;
    const std::filesystem::path config_file = options.config.value_or(CPUHPD_DEFAULT_CONFIG);
    try {
        // The default file is optional; a file named on the command line is not.
        config = cpuhpd::load_config(config_file, !options.config.has_value());
    } catch (const cpuhpd::ConfigError& error) {
        fail(error.what());
        return 1;
    }
    if (!apply(options, config)) {
        return 1;
    }
    const auto level = cpuhpd::find_by_name(cpuhpd::kLogLevelNames, config.log_level);
    if (options.check_config) {
        std::printf("%s: OK\n", config_file.c_str());
        return 0;
    }
    cpuhpd::log::init(level.value_or(cpuhpd::log::Level::Info));

    // sd-event takes these through a signalfd: block them before any thread starts, so
    // that every thread inherits the mask. A reply to a vanished client must not kill us.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    try {
        cpuhpd::Daemon daemon(std::move(config));
        return daemon.run();
    } catch (const std::exception& error) {
        cpuhpd::log::error(error.what());
        return 1;
    }
}
