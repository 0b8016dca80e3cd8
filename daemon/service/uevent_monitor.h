// Kernel uevents for CPUs (ACTION=online|offline|add|remove, SUBSYSTEM=cpu), so that the
// service notices CPUs changed behind its back (chcpu, smt/control, another tool).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

namespace cpuhpd {

// A source of uevents: the kernel's netlink socket or the --uevent-socket one.
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
    virtual ~UeventMonitor() = default;

    virtual int fd() const = 0;
    // Reads every queued message; true when at least one was a CPU state change (or when
    // messages were lost to a receive-buffer overrun, which may have hidden one).
    virtual bool drain() = 0;
};

// True for a kernel uevent payload ("ACTION@DEVPATH\0KEY=VALUE\0...") of the cpu subsystem
// with ACTION online, offline, add or remove. Exposed for tests.
bool is_cpu_change_uevent(const unsigned char* data, std::size_t size);

}  // namespace cpuhpd
