#include "private_bus.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "files.h"

namespace cpuhpd::itest {

namespace fs = std::filesystem;

namespace {

void replace_all(std::string& text, const std::string& placeholder, const std::string& value) {
    for (auto at = text.find(placeholder); at != std::string::npos;
         at = text.find(placeholder, at + value.size())) {
        text.replace(at, placeholder.size(), value);
    }
}

// The bus configuration template with its placeholders filled in.
std::string bus_config(bool project_policy, const fs::path& socket,
                       const std::string& extra_config) {
    const fs::path template_file = source_dir() / "tests/integration/bus" /
                                   (project_policy ? "system-like.conf" : "permissive.conf");
    std::string config = read_file(template_file);
    if (config.empty()) {
        throw std::runtime_error("cannot read " + template_file.string());
    }
    replace_all(config, "@SOCKET_PATH@", socket.string());
    replace_all(config, "@SOURCE_DIR@", source_dir().string());
    replace_all(config, "@EXTRA_CONFIG@", extra_config);
    return config;
}

}  // namespace

void PrivateBus::start(const fs::path& dir, bool project_policy, const std::string& extra_config,
                       const std::map<std::string, std::optional<std::string>>& env) {
    const fs::path conf = dir / "bus.conf";
    write_file(conf, bus_config(project_policy, dir / "bus", extra_config));
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
        throw std::runtime_error("pipe2: " + error_text(errno));
    }
    // Keep both ends above 3 so that dup2(w, 3) in the child is a real dup.
    int r_end = ::fcntl(p[0], F_DUPFD_CLOEXEC, 10);
    int w_end = ::fcntl(p[1], F_DUPFD_CLOEXEC, 10);
    ::close(p[0]);
    ::close(p[1]);
    try {
        daemon_.start({"/usr/bin/dbus-daemon", "--config-file=" + conf.string(), "--nofork",
                       "--print-address=3"},
                      env, dir / "dbus-daemon.out", dir / "dbus-daemon.err", w_end);
    } catch (...) {
        ::close(r_end);
        ::close(w_end);
        throw;
    }
    ::close(w_end);
    std::string line;
    auto deadline = Clock::now() + 10s;
    while (line.find('\n') == std::string::npos) {
        auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            ::close(r_end);
            throw std::runtime_error("dbus-daemon printed no address within 10 s: " +
                                     daemon_.err());
        }
        pollfd pfd{r_end, POLLIN, 0};
        int pr = ::poll(&pfd, 1, static_cast<int>(left));
        if (pr < 0 && errno == EINTR) {
            continue;
        }
        if (pr <= 0) {
            continue;
        }
        char buf[512];
        ssize_t n = ::read(r_end, buf, sizeof buf);
        if (n <= 0) {
            ::close(r_end);
            throw std::runtime_error("dbus-daemon closed its address pipe: " + daemon_.err());
        }
        line.append(buf, static_cast<std::size_t>(n));
    }
    ::close(r_end);
    address_ = line.substr(0, line.find('\n'));
}

}  // namespace cpuhpd::itest
