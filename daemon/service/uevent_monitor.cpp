// Uses libnl-3 for the netlink socket: allocation, connect/bind, the multicast-group
// membership and a receive path that sizes its buffer to the message (MSG_PEEK) come
// ready-made and maintained, instead of hand-written socket(AF_NETLINK)/bind/setsockopt/
// recvmsg code. Nothing else of libnl is used; the uevent payload is plain text.
#include "uevent_monitor.h"

#include <linux/netlink.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

namespace cpuhpd {

namespace {

constexpr int kKernelGroup = 1;  // the kernel's uevent multicast group (udev re-sends on 2)
constexpr int kReceiveBuffer = 4 * 1024 * 1024;  // a whole batch of 2048 CPUs fits

}  // namespace

bool is_cpu_change_uevent(const unsigned char* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    // The header "ACTION@DEVPATH" ends at the first NUL; then KEY=VALUE entries.
    std::size_t pos = text.find('\0');
    if (pos == std::string_view::npos || text.find('@') > pos) {
        return false;  // not a kernel uevent (libudev messages start "libudev\0")
    }
    bool cpu = false;
    bool change = false;
    while (pos < text.size()) {
        const std::size_t start = pos + 1;
        std::size_t end = text.find('\0', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        const std::string_view entry = text.substr(start, end - start);
        if (entry == "SUBSYSTEM=cpu") {
            cpu = true;
        } else if (entry == "ACTION=online" || entry == "ACTION=offline" || entry == "ACTION=add" ||
                   entry == "ACTION=remove") {
            change = true;
        }
        pos = end;
    }
    return cpu && change;
}

namespace {

// The kernel's netlink socket.
class KernelUevents final : public UeventMonitor {
public:
    explicit KernelUevents(nl_sock* sock) : sock_(sock) {}
    ~KernelUevents() override { nl_socket_free(sock_); }
    KernelUevents(const KernelUevents&) = delete;
    KernelUevents& operator=(const KernelUevents&) = delete;

    int fd() const override { return nl_socket_get_fd(sock_); }

    bool drain() override {
        bool changed = false;
        for (;;) {
            sockaddr_nl from{};
            unsigned char* buffer = nullptr;
            const int n = nl_recv(sock_, &from, &buffer, nullptr);
            if (n > 0) {
                // Only the kernel (port 0) sends real uevents; ignore anything else.
                if (from.nl_pid == 0 && is_cpu_change_uevent(buffer, static_cast<std::size_t>(n))) {
                    changed = true;
                }
                std::free(buffer);
                continue;
            }
            std::free(buffer);
            if (n < 0 && n != -NLE_AGAIN && n != -NLE_INTR) {
                // ENOBUFS (reported as NLE_NOMEM): the kernel dropped messages; assume a change.
                changed = true;
            }
            if (n == -NLE_INTR) {
                continue;
            }
            return changed;
        }
    }

private:
    nl_sock* sock_;
};

// A Unix datagram socket bound at `path`, removed again when closed.
class SocketUevents final : public UeventMonitor {
public:
    SocketUevents(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
    ~SocketUevents() override {
        ::close(fd_);
        ::unlink(path_.c_str());
    }
    SocketUevents(const SocketUevents&) = delete;
    SocketUevents& operator=(const SocketUevents&) = delete;

    int fd() const override { return fd_; }

    bool drain() override {
        bool changed = false;
        std::array<unsigned char, 8192> buffer{};  // uevents are at most 2048 bytes
        for (;;) {
            const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
            if (n > 0) {
                changed =
                    is_cpu_change_uevent(buffer.data(), static_cast<std::size_t>(n)) || changed;
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else {
                return changed;
            }
        }
    }

private:
    int fd_;
    std::filesystem::path path_;
};

}  // namespace

std::unique_ptr<UeventMonitor> UeventMonitor::open(std::string& error) {
    nl_sock* sock = nl_socket_alloc();
    if (sock == nullptr) {
        error = "cannot allocate a netlink socket";
        return nullptr;
    }
    nl_socket_disable_seq_check(sock);  // uevents carry no netlink sequence numbers
    int r = nl_connect(sock, NETLINK_KOBJECT_UEVENT);
    if (r >= 0) {
        r = nl_socket_add_membership(sock, kKernelGroup);
    }
    if (r >= 0) {
        r = nl_socket_set_nonblocking(sock);
    }
    if (r < 0) {
        error = std::string("cannot listen to kernel uevents: ") + nl_geterror(r);
        nl_socket_free(sock);
        return nullptr;
    }
    // Best effort: a bigger buffer only makes overruns rarer, and drain() copes with them.
    (void)nl_socket_set_buffer_size(sock, kReceiveBuffer, 0);
    nl_socket_enable_msg_peek(sock);
    return std::make_unique<KernelUevents>(sock);
}

std::unique_ptr<UeventMonitor> UeventMonitor::open_socket(const std::filesystem::path& path,
                                                          std::string& error) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.native().size() >= sizeof(address.sun_path)) {
        error = "the uevent socket path " + path.string() + " is too long";
        return nullptr;
    }
    std::memcpy(address.sun_path, path.c_str(), path.native().size());
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error = std::string("cannot create the uevent socket: ") + std::strerror(errno);
        return nullptr;
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        ::unlink(path.c_str());
    }
    const mode_t old_mask = ::umask(0077);
    const int r = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
    const int bind_errno = errno;
    ::umask(old_mask);
    if (r != 0) {
        error = "cannot bind the uevent socket " + path.string() + ": " + std::strerror(bind_errno);
        ::close(fd);
        return nullptr;
    }
    return std::make_unique<SocketUevents>(fd, path);
}

}  // namespace cpuhpd
