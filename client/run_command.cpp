#include "run_command.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

namespace cpuctl {

namespace {

sigset_t forwarded_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) {
        sigaddset(&set, sig);
    }
    return set;
}

}  // namespace

int run_command(const std::vector<std::string>& command, const CommandCompanion* companion) {
    std::vector<char*> argv;
    for (const auto& arg : command) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);

    // Blocked before the fork, so none is lost between it and the wait; the child unblocks
    // them before exec (the mask is inherited).
    const sigset_t signals = forwarded_signals();
    sigset_t previous;
    sigprocmask(SIG_BLOCK, &signals, &previous);
    std::cout.flush();
    std::cerr.flush();
    const pid_t child = fork();
    if (child < 0) {
        const int error = errno;
        sigprocmask(SIG_SETMASK, &previous, nullptr);
        std::cerr << "cpuctl: cannot start " << command.front() << ": " << std::strerror(error)
                  << std::endl;
        return 126;
    }
    if (child == 0) {
        sigprocmask(SIG_SETMASK, &previous, nullptr);
        execvp(argv[0], argv.data());
        const int error = errno;
        std::cerr << "cpuctl: cannot run " << command.front() << ": " << std::strerror(error)
                  << std::endl;
        _exit(error == ENOENT ? 127 : 126);
    }

    // With a companion, the signals come through a signalfd polled beside its fd.
    const int sigfd = companion != nullptr ? signalfd(-1, &signals, SFD_CLOEXEC) : -1;
    int status = 0;
    for (;;) {
        siginfo_t info{};
        if (sigfd >= 0) {
            const PollSpec spec = companion->poll();
            pollfd fds[2] = {{sigfd, POLLIN, 0}, {spec.fd, spec.events, 0}};
            const int n = ::poll(fds, spec.fd >= 0 ? 2 : 1, spec.timeout_ms);
            if (n < 0) {
                continue;  // EINTR
            }
            if (n == 0 || (spec.fd >= 0 && fds[1].revents != 0)) {
                companion->ready();
            }
            if ((fds[0].revents & POLLIN) == 0) {
                continue;
            }
            signalfd_siginfo si{};
            if (::read(sigfd, &si, sizeof si) != static_cast<ssize_t>(sizeof si)) {
                continue;
            }
            info.si_signo = static_cast<int>(si.ssi_signo);
            info.si_code = si.ssi_code;
        } else if (sigwaitinfo(&signals, &info) < 0) {
            continue;  // EINTR
        }
        if (info.si_signo != SIGCHLD) {
            // Sent by a process (kill, systemctl stop): pass it on. One from the kernel (the
            // terminal's Ctrl-C) reached the command's process group already.
            if (info.si_code <= 0) {
                kill(child, info.si_signo);
            }
            continue;
        }
        const pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child) {
            break;
        }
    }
    if (sigfd >= 0) {
        close(sigfd);
    }
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}

}  // namespace cpuctl
