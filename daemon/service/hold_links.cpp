#include "hold_links.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "bus_signals.h"
#include "log.h"

namespace cpuhpd {

namespace {

// Bytes a holder writes into its end are read and dropped, at most this much per wake-up
// (the watch is level-triggered: the rest comes next time, without starving the loop).
constexpr int kMaxReadsPerWake = 16;

}  // namespace

HoldLinks::HoldLinks(EventLoop& loop, Gone on_gone) : loop_(loop), on_gone_(std::move(on_gone)) {}

HoldLinks::~HoldLinks() {
    while (!links_.empty()) {
        unlink(links_.begin()->first);
    }
}

sdbus::UnixFd HoldLinks::link(std::uint64_t id, sdbus::IConnection& connection,
                              const std::string& holder) {
    std::array<int, 2> ends{};
    if (pipe2(ends.data(), O_CLOEXEC | O_NONBLOCK) != 0) {
        throw std::system_error(errno, std::generic_category(), "pipe2");
    }
    sdbus::UnixFd holder_end(ends[1], sdbus::adopt_fd);
    Link link;
    link.read_fd = ends[0];
    try {
        link.watch = loop_.watch(ends[0], [this, id] { on_readable(id); });
        if (!holder.empty()) {
            // Unique names are never reused on a bus, so this fires once, when the holder's
            // connection closes.
            if (!bus_driver_) {
                bus_driver_ = sdbus::createProxy(connection, kBusDriver, kBusDriverPath);
            }
            link.holder_watch = connection.addMatch(
                std::string("type='signal',sender='") + kBusDriver + "',path='" + kBusDriverPath +
                    "',interface='" + kBusDriver + "',member='NameOwnerChanged',arg0='" + holder +
                    "'",
                guarded_handler(
                    SignalKind::HolderNameOwnerChanged,
                    "NameOwnerChanged for hold " + std::to_string(id), [] { return kBusDriver; },
                    [this, id, holder](sdbus::Message& message) {
                        const auto change = decode_name_owner_changed(message);
                        if (!change) {
                            throw std::runtime_error("its arguments are not three strings");
                        }
                        if (change->name == holder && change->new_owner.empty()) {
                            confirm_holder_left(id, holder);
                        }
                    }));
        }
    } catch (...) {
        if (link.watch != 0) {
            loop_.unwatch(link.watch);
        }
        close(ends[0]);
        throw;
    }
    unlink(id);  // a new link for the hold (AttachHold) replaces the old one
    links_.emplace(id, std::move(link));
    return holder_end;
}

void HoldLinks::unlink(std::uint64_t id) {
    const auto it = links_.find(id);
    if (it == links_.end()) {
        return;
    }
    loop_.unwatch(it->second.watch);
    close(it->second.read_fd);
    links_.erase(it);
}

void HoldLinks::on_readable(std::uint64_t id) {
    const auto it = links_.find(id);
    if (it == links_.end()) {
        return;
    }
    std::array<char, 4096> dropped{};
    for (int i = 0; i < kMaxReadsPerWake; ++i) {
        const ssize_t n = read(it->second.read_fd, dropped.data(), dropped.size());
        if (n == 0) {
            // Every write end is closed. Stop watching now: the end stays readable.
            loop_.unwatch(it->second.watch);
            it->second.watch = 0;
            gone(id, "its file descriptor was closed");
            return;
        }
        if (n < 0) {
            if (errno != EINTR) {
                return;  // EAGAIN: drained
            }
        }
    }
}

void HoldLinks::confirm_holder_left(std::uint64_t id, const std::string& holder) {
    bus_driver_->callMethodAsync("GetNameOwner")
        .onInterface(kBusDriver)
        .withArguments(holder)
        .uponReplyInvoke([this, id, holder](const sdbus::Error* error, std::string owner) {
            if (links_.count(id) == 0) {
                return;  // ended meanwhile
            }
            if (error == nullptr) {
                log::warning("hold " + std::to_string(id) + ": told that its holder " + holder +
                             " left the bus, but the bus says " + owner +
                             " is still there; the hold stays");
                return;
            }
            if (error->getName() != kNameHasNoOwner) {
                log::warning("hold " + std::to_string(id) + ": cannot ask the bus whether " +
                             holder + " is still there (" + error->getName() + ": " +
                             error->getMessage() + "); the hold stays");
                return;
            }
            gone(id, "its holder " + holder + " left the bus");
        });
}

void HoldLinks::gone(std::uint64_t id, std::string reason) {
    loop_.post([this, id, reason = std::move(reason)] {
        if (links_.count(id) != 0) {
            on_gone_(id, reason);
        }
    });
}

}  // namespace cpuhpd
