// The daemon's configuration: /etc/cpuhpd/cpuhpd.yaml, loaded with yaml-cpp.
#pragma once

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "../daemon/engine/profiles.h"
#include "../daemon/engine/settings.h"
#include "enums.h"

namespace cpuhpd {

// What SIGTERM does with the batch in flight (config `on_stop`): Cancel stops it as Cancel
// does (after the CPU in flight; atomic requests roll back); Finish lets it run to its end.
enum class StopPolicy { Cancel, Finish };
inline constexpr EnumNames<StopPolicy, 2> kStopPolicyNames{{
    {StopPolicy::Cancel, "cancel"},
    {StopPolicy::Finish, "finish"},
}};

inline std::string to_string(StopPolicy value) {
    return std::string(name_of(kStopPolicyNames, value));
}

// The daemon's log levels (config log_level, cpuhpd --log-level), lowest first.
enum class LogLevel { Debug, Info, Warning, Error };
inline constexpr EnumNames<LogLevel, 4> kLogLevelNames{{
    {LogLevel::Debug, "debug"},
    {LogLevel::Info, "info"},
    {LogLevel::Warning, "warning"},
    {LogLevel::Error, "error"},
}};

// A config file that cannot be used. what() reads "FILE:LINE: key 'KEY': reason".
class ConfigError : public std::runtime_error {
public:
    ConfigError(const std::filesystem::path& file, int line, const std::string& key,
                const std::string& reason);
};

struct Config {
    std::filesystem::path sysfs_root = "/sys";
    // Where the tasks and IRQs pinned to CPUs going offline are read (pinned.h).
    std::filesystem::path proc_root = "/proc";
    // Where cgroup v2 is mounted: the cpuset partitions shrunk and restored around batches
    // (partitions.h).
    std::filesystem::path cgroup_root = "/sys/fs/cgroup";
    std::string bus = "system";  // "system", "session" or a D-Bus address
    std::filesystem::path state_dir = "/run/cpuhpd";
    std::string log_level = "info";  // debug, info, warning, error
    // Where CPU uevents come from instead of the kernel (command line only, see
    // UeventMonitor::open_socket); empty: the kernel's, when sysfs_root is /sys.
    std::filesystem::path uevent_socket;
    StopPolicy on_stop = StopPolicy::Cancel;  // the batch in flight at SIGTERM
    // Where the daemon writes its Prometheus metrics (metrics.h) after every change, for
    // node_exporter's textfile collector; empty: nowhere.
    std::filesystem::path metrics_file;
    EngineSettings engine;
    std::map<std::string, Profile> profiles;
    // power-profiles-daemon's ActiveProfile ("power-saver", ...) -> the name of a profile in
    // `profiles`, or "" (the word `none` in the file): revert the profile in force. Empty: the
    // daemon does not watch power-profiles-daemon.
    std::map<std::string, std::string> power_profiles;
};

// Reads and validates the file. Unknown keys, wrong types and bad values throw ConfigError
// with the file, the line and the key. A missing file throws ConfigError too unless
// `missing_ok`, in which case the defaults are returned.
Config load_config(const std::filesystem::path& file, bool missing_ok = false);
// Same, from text (for tests and --check-config); `name` is used in messages.
// Limits: the file is a regular file (a symbolic link to one is followed) of at most
// kMaxConfigBytes (input.h), one YAML document. Profile masks are checked for syntax (their
// CPUs only when applied: selectors need the machine).
Config parse_config(const std::string& text, const std::filesystem::path& name);

// An absolute directory path in one spelling: "/sys/", "/sys/." and "/sys" are "/sys".
std::filesystem::path normalize_directory(const std::filesystem::path& path);

}  // namespace cpuhpd
