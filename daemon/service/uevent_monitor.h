// Kernel uevents for CPUs (ACTION=online|offline|add|remove, SUBSYSTEM=cpu), so that the
// service notices CPUs changed behind its back (chcpu, smt/control, another tool).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

struct nl_sock;

namespace cpuhpd {

class UeventMonitor {
public:
    // Opens a NETLINK_KOBJECT_UEVENT socket in the kernel's multicast group, non-blocking.
    // Returns nullptr and sets `error` when that is impossible (no netlink in a container,
    // a seccomp filter, ...): the caller goes on without uevents.
    static std::unique_ptr<UeventMonitor> open(std::string& error);
    // Binds a Unix datagram socket at `path` (owner only; a stale socket there is replaced)
    // whose datagrams are taken as kernel uevent payloads: the uevent source of a daemon
    // that serves a sysfs tree other than /sys (tests, a mirror of a machine), so that it
    // keeps its state current as it does on /sys. Removed again by the destructor.
    static std::unique_ptr<UeventMonitor> open_socket(const std::filesystem::path& path,
                                                      std::string& error);
    ~UeventMonitor();
    UeventMonitor(const UeventMonitor&) = delete;
    UeventMonitor& operator=(const UeventMonitor&) = delete;

    int fd() const;
    // Reads every queued message; true when at least one was a CPU state change (or when
    // messages were lost to a receive-buffer overrun, which may have hidden one).
    bool drain();

private:
    explicit UeventMonitor(nl_sock* sock) : sock_(sock) {}
    UeventMonitor(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
    bool drain_socket();

    nl_sock* sock_ = nullptr;  // the kernel's netlink socket, or
    int fd_ = -1;              // the Unix datagram socket bound at path_
    std::filesystem::path path_;
};

// True for a kernel uevent payload ("ACTION@DEVPATH\0KEY=VALUE\0...") of the cpu subsystem
// with ACTION online, offline, add or remove. Exposed for tests.
bool is_cpu_change_uevent(const unsigned char* data, std::size_t size);

}  // namespace cpuhpd
