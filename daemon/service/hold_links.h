// Ties each hold to the file descriptor its holder got and to the holder's bus connection,
// as systemd-logind ties an inhibitor to a FIFO: when every copy of the fd is closed, or
// the holder's unique name leaves the bus, the hold is gone. That the name left is never
// taken from a signal's arguments: NameOwnerChanged only from the bus driver makes the
// daemon ask the bus (GetNameOwner), and the bus's answer decides.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "event_loop.h"

namespace cpuhpd {

class HoldLinks {
public:
    // Called on the main thread, from a task of its own (never inside a bus or fd callback),
    // at least once for each linked hold that goes away; `reason` says how.
    using Gone = std::function<void(std::uint64_t id, const std::string& reason)>;

    HoldLinks(EventLoop& loop, Gone on_gone);
    ~HoldLinks();
    HoldLinks(const HoldLinks&) = delete;
    HoldLinks& operator=(const HoldLinks&) = delete;

    // Opens hold `id`'s pipe: the service keeps and watches the read end, the write end is
    // returned for the holder. Watches `holder` (a unique bus name; none when empty) on
    // `connection`; replaces the link hold `id` had (its old fd no longer ends it). Throws
    // std::system_error or sdbus::Error (the old link stays then).
    sdbus::UnixFd link(std::uint64_t id, sdbus::IConnection& connection, const std::string& holder);
    // Forgets hold `id` (no call to on_gone): closes the service's end and stops watching.
    void unlink(std::uint64_t id);
    std::size_t size() const { return links_.size(); }

private:
    struct Link {
        int read_fd = -1;
        std::uint64_t watch = 0;
        sdbus::Slot holder_watch;
    };
    void on_readable(std::uint64_t id);
    void gone(std::uint64_t id, std::string reason);
    // Asks the bus whether `holder` still has a connection; ends hold `id` when it has not.
    void confirm_holder_left(std::uint64_t id, const std::string& holder);

    EventLoop& loop_;
    Gone on_gone_;
    std::map<std::uint64_t, Link> links_;
    // org.freedesktop.DBus on the holders' connection (made at the first link); its
    // destruction drops the GetNameOwner calls still pending.
    std::unique_ptr<sdbus::IProxy> bus_driver_;
};

}  // namespace cpuhpd
