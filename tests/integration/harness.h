// Integration test harness: a fake sysfs tree that works with plain file writes, a private
// dbus-daemon, the real cpuhpd and cpuctl binaries as child processes, and a raw sd-bus
// client that is independent of the daemon's sdbus-c++ glue. Every wait has a deadline.
#pragma once

#include <sys/types.h>
#include <systemd/sd-bus.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cpuhpd::itest {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Kernel cpulist text for a set ("0-3,8"), and back (throws std::invalid_argument).
std::string to_cpulist(const std::set<unsigned>& cpus);
std::set<unsigned> parse_cpulist(const std::string& text);

// A temporary directory, removed (with any immutable flags cleared) on destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// Sets or clears the immutable inode flag (chattr +i); returns 0 or the errno.
int set_immutable(const std::filesystem::path& file, bool on);

// 16 CPUs, 2 packages x 4 cores x 2 threads, siblings N and N+8 (x86 numbering),
// one NUMA node per package. cpu0 has no online file. Plain files only.
class FakeTree {
public:
    static constexpr unsigned kCpus = 16;
    static constexpr unsigned kCoresPerPackage = 4;
    static constexpr unsigned kCores = 8;

    explicit FakeTree(std::filesystem::path root);
    ~FakeTree();  // clears immutable flags set through make_unwritable

    const std::filesystem::path& root() const { return root_; }
    std::filesystem::path cpu_dir() const { return root_ / "devices/system/cpu"; }
    std::filesystem::path online_file(unsigned cpu) const;

    static unsigned package_of(unsigned cpu) { return (cpu % kCores) / kCoresPerPackage; }
    static unsigned core_of(unsigned cpu) { return cpu % kCoresPerPackage; }
    static unsigned sibling_of(unsigned cpu) { return (cpu + kCores) % kCpus; }

    // File content without the trailing newline; "<absent>" when missing or unreadable.
    std::string read(const std::string& relative) const;
    void write(const std::string& relative, const std::string& value);  // adds '\n'
    // cpuN/online contents for every hotpluggable CPU (1..15).
    std::map<unsigned, std::string> online_files() const;
    // Makes writes to cpuN/online fail for root too (EPERM through chattr +i).
    // Returns 0 or the errno of the ioctl (the filesystem may not support it).
    int make_unwritable(unsigned cpu);

private:
    std::filesystem::path root_;
    std::vector<std::filesystem::path> immutable_;
};

// A child process with stdout and stderr in files.
class Child {
public:
    Child() = default;
    ~Child();  // kills (SIGKILL) and reaps if still running
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    // argv[0] is the program path. `env` entries override or add to the current environment
    // (a value of std::nullopt removes the variable). `pass_fd` is dup'ed to fd 3 in the child.
    void start(const std::vector<std::string>& argv,
               const std::map<std::string, std::optional<std::string>>& env,
               const std::filesystem::path& out_file, const std::filesystem::path& err_file,
               int pass_fd = -1);
    pid_t pid() const { return pid_; }
    bool running();  // reaps if it has exited
    // Waits for exit until the deadline; returns false on timeout.
    bool wait_until(Clock::time_point deadline);
    // SIGTERM, wait up to `grace`, then SIGKILL and reap.
    void stop(std::chrono::milliseconds grace = 5000ms);
    int raw_status() const { return status_; }
    // Exit code, or 128+signal when killed by a signal, or -1 when still running.
    int exit_code() const;
    std::string out() const;
    std::string err() const;

private:
    pid_t pid_ = -1;
    bool exited_ = false;
    int status_ = 0;
    std::filesystem::path out_file_, err_file_;
};

struct RunResult {
    int exit_code = -1;  // -1: timed out (and killed)
    std::string out;
    std::string err;
    std::string describe() const;  // for assertion messages
};

// One (ussis) entry of a reply.
struct CpuResult {
    unsigned cpu = 0;
    std::string result;
    std::string error;
    int errno_value = 0;
    std::string message;
};

using Variant = std::variant<std::monostate, std::string, bool, std::uint64_t, std::uint32_t,
                             std::int32_t, std::vector<std::uint32_t>, std::vector<std::string>>;

struct CallResult {
    bool ok = false;
    std::string error_name;  // when !ok
    std::string error_message;
    std::vector<CpuResult> results;
    std::map<std::string, Variant> summary;

    std::string str(const std::string& key) const;  // "" when absent or not a string
    std::uint64_t u64(const std::string& key) const;
    std::vector<std::uint32_t> order() const;
    std::optional<CpuResult> result_for(unsigned cpu) const;
    std::set<unsigned> cpus() const;
    std::string describe() const;
};

// Signals seen by a RawClient.
struct BatchFinished {
    std::uint64_t batch_id = 0;
    std::string action, strategy, changed, failed;
    std::uint32_t requests = 0;
    std::uint64_t duration_us = 0;
};
struct BatchProgress {
    std::uint64_t batch_id = 0;
    std::uint32_t done = 0, total = 0;
};
struct PropertiesChanged {
    std::string interface;
    std::map<std::string, Variant> changed;
    std::vector<std::string> invalidated;
};

// Option values for method calls: string, bool or (to test type checks) a uint32.
using Option = std::variant<std::string, bool, std::uint32_t>;

// A raw sd-bus client connection to the private bus.
class RawClient {
public:
    explicit RawClient(const std::string& address);
    ~RawClient();
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    sd_bus* bus() { return bus_; }
    bool name_has_owner(const std::string& name);
    // Calls Offline/Online/SetSmt with (s, a{sv}) and parses a(ussis), a{sv}.
    CallResult call(const std::string& method, const std::string& arg,
                    const std::map<std::string, Option>& options = {},
                    std::chrono::seconds timeout = 30s);
    // The same with the options' entries in this order, duplicates included.
    CallResult call_with_entries(const std::string& method, const std::string& arg,
                                 const std::vector<std::pair<std::string, Option>>& options,
                                 std::chrono::seconds timeout = 30s);
    // Property getters; on a D-Bus error they throw std::runtime_error with its name.
    std::string get_string(const std::string& property);
    std::vector<std::string> get_strv(const std::string& property);
    bool get_bool(const std::string& property);
    // GetTopology; throws on error.
    struct TopologyEntry {
        unsigned cpu = 0;
        int package = -1, die = -1, core = -1, node = -1;
        std::string siblings;
        bool online = false, hotpluggable = false;
    };
    std::vector<TopologyEntry> get_topology();

    // Subscribes to BatchFinished, BatchProgress and PropertiesChanged of /org/cpuhpd1
    // (synchronously: the match is installed on the bus when this returns).
    void subscribe();
    // Processes incoming messages until `done()` is true or the deadline passes.
    bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout);
    const std::vector<BatchFinished>& batches() const { return batches_; }
    const std::vector<BatchProgress>& progress() const { return progress_; }
    const std::vector<PropertiesChanged>& property_changes() const { return property_changes_; }

private:
    static int on_batch_finished(sd_bus_message* m, void* userdata, sd_bus_error* err);
    static int on_properties_changed(sd_bus_message* m, void* userdata, sd_bus_error* err);
    static int on_batch_progress(sd_bus_message* m, void* userdata, sd_bus_error* err);
    sd_bus* bus_ = nullptr;
    sd_bus_slot* batch_slot_ = nullptr;
    sd_bus_slot* props_slot_ = nullptr;
    sd_bus_slot* progress_slot_ = nullptr;
    std::vector<BatchFinished> batches_;
    std::vector<PropertiesChanged> property_changes_;
    std::vector<BatchProgress> progress_;
};

// Reads an a{sv} dictionary at the current position of `m` (types s, b, t, u, i, au, as;
// anything else is skipped and recorded as monostate).
int read_vardict(sd_bus_message* m, std::map<std::string, Variant>& out);

struct DaemonConfig {
    std::string protected_cpus = "0";
    unsigned min_online = 2;
    unsigned coalesce_ms = 20;
    std::string extra_yaml;  // appended verbatim
    std::string log_level = "debug";
    // Start with --uevent-socket: the daemon keeps its state from uevents, as on /sys,
    // and send_uevent() plays the kernel.
    bool uevent_socket = false;
};

// One test's world: temp dir, fake tree, private bus, daemon.
class World {
public:
    World();
    ~World();

    const std::filesystem::path& dir() const { return tmp_.path(); }
    FakeTree& tree() { return tree_; }
    const std::string& bus_address() const { return address_; }

    // Starts dbus-daemon and waits (bounded) for its printed address. With `project_policy`
    // the bus denies method calls by default, as the system bus does, and includes the
    // project's dbus/org.cpuhpd1.conf; otherwise everything is allowed. `extra_config` is
    // appended inside <busconfig> (e.g. <limit> elements for the benchmark's 1000 callers).
    void start_bus(bool project_policy = false, const std::string& extra_config = "");
    // Writes the config, starts cpuhpd and waits until org.cpuhpd1 has an owner. Throws
    // std::runtime_error with the daemon's stderr when it exits early or never appears.
    void start_daemon(const DaemonConfig& config = {});
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
    // Starts cpuctl without waiting (for concurrency tests).
    std::unique_ptr<Child> spawn_cpuctl(const std::vector<std::string>& args);

    std::map<std::string, std::optional<std::string>> guard_env() const;

private:
    std::string uevent_socket_path() const;

    TempDir tmp_;
    FakeTree tree_;
    Child bus_;
    Child daemon_;
    std::string address_;
    unsigned runs_ = 0;
    unsigned uevents_sent_ = 0;
};

}  // namespace cpuhpd::itest
