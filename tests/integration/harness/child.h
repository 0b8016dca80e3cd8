// A child process (the daemon, dbus-daemon, cpuctl) with stdout and stderr in files, and
// deadlines on every wait.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cpuhpd::itest {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

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

}  // namespace cpuhpd::itest
