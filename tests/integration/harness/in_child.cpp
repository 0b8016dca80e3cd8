#include "in_child.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <exception>

#include "child.h"

namespace cpuhpd::itest {

namespace {

constexpr const char* kReady = "<ready>";

}  // namespace

std::string in_child(const ChildBody& fn, const std::function<void()>& on_ready) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        return "<pipe failed>";
    }
    pid_t pid = fork();
    if (pid < 0) {
        return "<fork failed>";
    }
    if (pid == 0) {
        close(p[0]);
        std::string out;
        auto ready = [&] {
            ssize_t n = write(p[1], kReady, std::strlen(kReady));
            (void)n;
        };
        try {
            out = fn(ready);
        } catch (const std::exception& e) {
            out = std::string("<exception: ") + e.what() + ">";
        }
        ssize_t n = write(p[1], out.data(), out.size());
        (void)n;
        _exit(0);
    }
    close(p[1]);
    std::string out;
    bool readied = false;
    auto deadline = Clock::now() + 30s;
    for (;;) {
        auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            kill(pid, SIGKILL);
            out += "<timeout>";
            break;
        }
        pollfd pfd{p[0], POLLIN, 0};
        if (poll(&pfd, 1, static_cast<int>(left)) <= 0) {
            continue;
        }
        char buf[1024];
        ssize_t n = read(p[0], buf, sizeof buf);
        if (n <= 0) {
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
        if (auto at = out.find(kReady); !readied && at != std::string::npos) {
            out.erase(at, std::strlen(kReady));
            readied = true;
            if (on_ready) {
                on_ready();
            }
        }
    }
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return out;
}

std::string as_user(uid_t uid, gid_t gid, const ChildBody& fn,
                    const std::function<void()>& on_ready) {
    return in_child(
        [&](const std::function<void()>& ready) {
            if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
                return std::string("<setuid failed>");
            }
            return fn(ready);
        },
        on_ready);
}

}  // namespace cpuhpd::itest
