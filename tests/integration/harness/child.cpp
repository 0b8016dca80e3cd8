#include "child.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "files.h"

extern char** environ;

namespace cpuhpd::itest {

namespace fs = std::filesystem;

Child::~Child() {
    if (pid_ > 0 && !exited_) {
        ::kill(pid_, SIGKILL);
        int st = 0;
        ::waitpid(pid_, &st, 0);
    }
}

void Child::start(const std::vector<std::string>& argv,
                  const std::map<std::string, std::optional<std::string>>& env,
                  const fs::path& out_file, const fs::path& err_file, int pass_fd) {
    out_file_ = out_file;
    err_file_ = err_file;
    std::map<std::string, std::string> envmap;
    for (char** e = environ; e && *e; ++e) {
        std::string kv(*e);
        auto eq = kv.find('=');
        if (eq != std::string::npos) {
            envmap[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
    }
    for (const auto& [k, v] : env) {
        if (v) {
            envmap[k] = *v;
        } else {
            envmap.erase(k);
        }
    }
    std::vector<std::string> envstr;
    for (const auto& [k, v] : envmap) {
        envstr.push_back(k + "=" + v);
    }
    std::vector<char*> envp;
    for (auto& s : envstr) {
        envp.push_back(s.data());
    }
    envp.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> argp;
    for (auto& s : args) {
        argp.push_back(s.data());
    }
    argp.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (pass_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, pass_fd, 3);
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Own process group, default signal dispositions and an empty mask.
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, argp[0], &fa, &attr, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        throw std::runtime_error("posix_spawn " + argv[0] + ": " + error_text(rc));
    }
    pid_ = pid;
    exited_ = false;
}

bool Child::running() {
    if (pid_ <= 0 || exited_) {
        return false;
    }
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
        exited_ = true;
        status_ = st;
        return false;
    }
    return true;
}

bool Child::wait_until(Clock::time_point deadline) {
    auto step = 1ms;
    while (running()) {
        if (Clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(step);
        step = std::min(step * 2, std::chrono::milliseconds(20));
    }
    return true;
}

void Child::stop(std::chrono::milliseconds grace) {
    if (!running()) {
        return;
    }
    ::kill(pid_, SIGTERM);
    if (!wait_until(Clock::now() + grace)) {
        ::kill(pid_, SIGKILL);
        int st = 0;
        ::waitpid(pid_, &st, 0);
        exited_ = true;
        status_ = st;
    }
}

int Child::exit_code() const {
    if (!exited_) {
        return -1;
    }
    if (WIFEXITED(status_)) {
        return WEXITSTATUS(status_);
    }
    if (WIFSIGNALED(status_)) {
        return 128 + WTERMSIG(status_);
    }
    return -1;
}

std::string Child::out() const {
    return read_file(out_file_);
}
std::string Child::err() const {
    return read_file(err_file_);
}

std::string RunResult::describe() const {
    return "exit code " + std::to_string(exit_code) + "\n--- stdout ---\n" + out +
           "\n--- stderr ---\n" + err;
}

}  // namespace cpuhpd::itest
