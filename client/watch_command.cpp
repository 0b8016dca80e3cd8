// `cpuctl watch`: follows org.cpuhpd1 as it changes, one line per event (watch_events.h),
// until SIGINT or SIGTERM. One event loop: poll(2) on the bus connection and a signalfd; the
// signals and property changes come through the proxy generated from the XML, the daemon's
// comings and goings through NameOwnerChanged. Nothing is polled.
#include <poll.h>
#include <sdbus-c++/sdbus-c++.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "cpuhpd-proxy.h"  // generated from dbus/org.cpuhpd1.Manager.xml
#include "exit_codes.h"
#include "names.h"
#include "query_commands.h"
#include "sdbus_texts.h"
#include "status_properties.h"
#include "watch_events.h"

namespace cpuctl {

namespace {

constexpr const char* kBusDriver = "org.freedesktop.DBus";
constexpr const char* kBusDriverPath = "/org/freedesktop/DBus";

std::uint64_t now_us() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

class Watcher;

// org.cpuhpd1.Manager's signals, and PropertiesChanged, handed to the Watcher; taken only
// from the connection that owns org.cpuhpd1 now (anybody may send a signal to ours).
class WatchProxy final
    : public sdbus::ProxyInterfaces<org::cpuhpd1::Manager_proxy, sdbus::Properties_proxy> {
public:
    WatchProxy(sdbus::IConnection& connection, Watcher& watcher)
        : ProxyInterfaces(connection, cpuhpd::dbus::kBusName, cpuhpd::dbus::kObjectPath),
          watcher_(watcher) {
        registerProxy();  // installs the match rules now (synchronously)
    }
    ~WatchProxy() { unregisterProxy(); }
    WatchProxy(const WatchProxy&) = delete;
    WatchProxy& operator=(const WatchProxy&) = delete;

private:
    void onPropertiesChanged(const std::string& interface, const PropertyMap& changed,
                             const std::vector<std::string>& invalidated) override;
    void onBatchFinished(const uint64_t& batch_id, const std::string& action,
                         const std::string& strategy, const std::string& changed,
                         const std::string& failed, const uint32_t& requests,
                         const uint64_t& duration_us, const std::string& cancelled) override;
    void onHoldsChanged(const DbusHolds& holds) override;
    void onHoldViolated(const uint64_t& hold_id, const std::string& who, const std::string& holder,
                        const std::string& cpus, const std::string& online,
                        const std::string& action, const uint64_t& violations) override;
    void onBatchProgress(const uint64_t& batch_id, const uint32_t& done,
                         const uint32_t& total) override;
    // No method is called through this proxy: no reply comes.
    using Results =
        std::vector<sdbus::Struct<uint32_t, std::string, std::string, int32_t, std::string>>;
    void onOfflineReply(const Results&, const PropertyMap&, const sdbus::Error*) override {}
    void onOnlineReply(const Results&, const PropertyMap&, const sdbus::Error*) override {}
    void onSetSmtReply(const Results&, const PropertyMap&, const sdbus::Error*) override {}
    void onHoldCpusReply(const sdbus::UnixFd&, const uint64_t&, const Results&, const PropertyMap&,
                         const sdbus::Error*) override {}
    void onReleaseHoldReply(const Results&, const sdbus::Error*) override {}
    void onAttachHoldReply(const sdbus::UnixFd&, const sdbus::Error*) override {}
    void onApplyProfileReply(const Results&, const PropertyMap&, const sdbus::Error*) override {}
    void onRevertProfileReply(const Results&, const PropertyMap&, const sdbus::Error*) override {}

    bool from_daemon();

    Watcher& watcher_;
};

class Watcher {
public:
    Watcher(sdbus::IConnection& connection, bool json) : connection_(connection), json_(json) {}

    // Subscribes (NameOwnerChanged first, then the daemon's signals), then reads who owns
    // org.cpuhpd1 and its properties, and prints the first line.
    void start() {
        name_changes_ = connection_.addMatch(
            std::string("type='signal',sender='") + kBusDriver + "',path='" + kBusDriverPath +
                "',interface='" + kBusDriver + "',member='NameOwnerChanged',arg0='" +
                cpuhpd::dbus::kBusName + "'",
            [this](sdbus::Message& message) { name_owner_changed(message); });
        proxy_ = std::make_unique<WatchProxy>(connection_, *this);
        owner_ = name_owner();
        if (!owner_.empty()) {
            read_all(status_);
        }
        WatchEvent e;
        e.kind = WatchEvent::Kind::Watching;
        e.time_us = now_us();
        e.owner = owner_;
        e.status = status_;
        print(e);
    }

    // Runs until SIGINT or SIGTERM arrives on `signal_fd`: exit 0. A lost bus connection is
    // thrown (DaemonError).
    int run(int signal_fd) {
        for (;;) {
            process_pending();
            if (resync_) {
                resync_ = false;
                daemon_back();
                continue;
            }
            const auto pd = connection_.getEventLoopPollData();
            pollfd fds[2] = {{pd.fd, pd.events, 0}, {signal_fd, POLLIN, 0}};
            if (::poll(fds, 2, poll_timeout_ms(pd.timeout_usec)) < 0) {
                if (errno == EINTR) {
                    continue;
                }
                throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorFailed,
                                            std::string("poll: ") + std::strerror(errno)});
            }
            if ((fds[1].revents & POLLIN) != 0) {
                signalfd_siginfo info{};
                if (::read(signal_fd, &info, sizeof info) == sizeof info) {
                    return kExitOk;
                }
            }
        }
    }

    const std::string& owner() const { return owner_; }

    void properties_changed(const PropertyMap& changed, bool invalidated) {
        const Status before = status_;
        update_status(status_, changed);
        print_changes(before);
        if (invalidated) {
            resync_values_ = true;
        }
    }
    void holds_changed(std::vector<HoldInfo> holds) {
        const Status before = status_;
        status_.holds = std::move(holds);
        print_changes(before);
    }
    void batch_progress(std::uint64_t batch_id, std::uint32_t done, std::uint32_t total) {
        WatchEvent e;
        e.kind = WatchEvent::Kind::BatchProgress;
        e.time_us = now_us();
        e.progress_batch = batch_id;
        e.progress_done = done;
        e.progress_total = total;
        print(e);
    }
    void hold_violated(HoldViolation violation) {
        WatchEvent e;
        e.kind = WatchEvent::Kind::HoldViolated;
        e.time_us = now_us();
        e.violation = std::move(violation);
        print(e);
    }
    void batch_finished(BatchEnd end) {
        WatchEvent e;
        e.kind = WatchEvent::Kind::BatchFinished;
        e.time_us = now_us();
        e.finished = std::move(end);
        print(e);
    }
    // A handler failed: said on stderr, the watch goes on.
    static void warn(const std::string& what) {
        std::cerr << "cpuctl: watch: " << what << std::endl;
    }

private:
    static int poll_timeout_ms(std::uint64_t deadline_usec) {
        if (deadline_usec == UINT64_MAX) {
            return -1;
        }
        timespec ts{};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        const std::uint64_t now = static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
                                  static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
        const std::uint64_t left = deadline_usec > now ? deadline_usec - now : 0;
        return static_cast<int>(std::min<std::uint64_t>((left + 999) / 1000, 60000));
    }

    void process_pending() {
        for (;;) {
            try {
                if (!connection_.processPendingRequest()) {
                    return;
                }
            } catch (const sdbus::Error& e) {
                // A lost connection ends the watch; anything else was one message the glue
                // could not decode (a malformed signal anybody may send): dropped.
                if (cpuhpd::dbus::bus_processing_failed(e)) {
                    throw DaemonError(
                        ErrorInfo{e.getName(), "lost the bus connection: " + e.getMessage()});
                }
                warn("a message was dropped: " + e.getMessage());
            }
        }
    }

    std::string name_owner() {
        auto bus = sdbus::createProxy(connection_, kBusDriver, kBusDriverPath);
        std::string owner;
        try {
            bus->callMethod("GetNameOwner")
                .onInterface(kBusDriver)
                .withArguments(std::string(cpuhpd::dbus::kBusName))
                .storeResultsTo(owner);
        } catch (const sdbus::Error&) {
            return {};  // nobody owns it
        }
        return owner;
    }

    // GetAll into `s`; false (and `s` untouched) when the daemon did not answer.
    bool read_all(Status& s) {
        try {
            Status fresh;
            update_status(fresh, proxy_->GetAll(org::cpuhpd1::Manager_proxy::INTERFACE_NAME));
            s = std::move(fresh);
            return true;
        } catch (const sdbus::Error& e) {
            warn("cannot read cpuhpd's properties: " + e.getName() + ": " + e.getMessage());
            return false;
        }
    }

    void name_owner_changed(sdbus::Message& message) {
        try {
            if (message.getSender() != kBusDriver) {
                return;  // only the bus says who owns a name
            }
            std::string name;
            std::string old_owner;
            std::string new_owner;
            message >> name >> old_owner >> new_owner;
            if (name != cpuhpd::dbus::kBusName) {
                return;
            }
            if (new_owner.empty()) {
                if (owner_.empty()) {
                    return;
                }
                WatchEvent e;
                e.kind = WatchEvent::Kind::DaemonGone;
                e.time_us = now_us();
                e.owner = owner_;
                owner_.clear();
                print(e);
                return;
            }
            owner_ = new_owner;
            resync_ = true;  // read it from the loop, not from inside this handler
        } catch (const std::exception& e) {
            warn(std::string("a NameOwnerChanged was dropped: ") + e.what());
        }
    }

    // org.cpuhpd1 has an owner again: its state now, and what changed meanwhile.
    void daemon_back() {
        Status now;
        if (!read_all(now)) {
            return;
        }
        WatchEvent e;
        e.kind = WatchEvent::Kind::DaemonBack;
        e.time_us = now_us();
        e.owner = owner_;
        e.status = now;
        print(e);
        const Status before = status_;
        status_ = now;
        print_changes(before);
    }

    void print_changes(const Status& before) {
        for (const auto& e : watch_events(before, status_, now_us())) {
            print(e);
        }
    }

    void print(const WatchEvent& e) { std::cout << watch_line(e, json_) << std::endl; }

    sdbus::IConnection& connection_;
    bool json_;
    std::string owner_;  // org.cpuhpd1's unique name; "" while nobody owns it
    Status status_;      // as last read or changed
    bool resync_ = false;
    bool resync_values_ = false;
    sdbus::Slot name_changes_;
    std::unique_ptr<WatchProxy> proxy_;  // last: its handlers use the members above
};

bool WatchProxy::from_daemon() {
    const auto* message = getProxy().getCurrentlyProcessedMessage();
    return message != nullptr && !watcher_.owner().empty() &&
           message->getSender() == watcher_.owner();
}

// Each handler catches what it throws: sdbus-c++ must not see it.
void WatchProxy::onPropertiesChanged(const std::string& interface, const PropertyMap& changed,
                                     const std::vector<std::string>& invalidated) {
    try {
        if (from_daemon() && interface == org::cpuhpd1::Manager_proxy::INTERFACE_NAME) {
            watcher_.properties_changed(changed, !invalidated.empty());
        }
    } catch (const std::exception& e) {
        Watcher::warn(std::string("a PropertiesChanged was dropped: ") + e.what());
    }
}

void WatchProxy::onBatchFinished(const uint64_t& batch_id, const std::string& action,
                                 const std::string& strategy, const std::string& changed,
                                 const std::string& failed, const uint32_t& requests,
                                 const uint64_t& duration_us, const std::string& cancelled) {
    try {
        if (from_daemon()) {
            watcher_.batch_finished(BatchEnd{batch_id, action, strategy, changed, failed, requests,
                                             duration_us, cancelled});
        }
    } catch (const std::exception& e) {
        Watcher::warn(std::string("a BatchFinished was dropped: ") + e.what());
    }
}

void WatchProxy::onHoldsChanged(const DbusHolds& holds) {
    try {
        if (from_daemon()) {
            watcher_.holds_changed(holds_of(holds));
        }
    } catch (const std::exception& e) {
        Watcher::warn(std::string("a HoldsChanged was dropped: ") + e.what());
    }
}

void WatchProxy::onHoldViolated(const uint64_t& hold_id, const std::string& who,
                                const std::string& holder, const std::string& cpus,
                                const std::string& online, const std::string& action,
                                const uint64_t& violations) {
    try {
        if (from_daemon()) {
            watcher_.hold_violated(
                HoldViolation{hold_id, who, holder, cpus, online, action, violations});
        }
    } catch (const std::exception& e) {
        Watcher::warn(std::string("a HoldViolated was dropped: ") + e.what());
    }
}

void WatchProxy::onBatchProgress(const uint64_t& batch_id, const uint32_t& done,
                                 const uint32_t& total) {
    try {
        if (from_daemon()) {
            watcher_.batch_progress(batch_id, done, total);
        }
    } catch (const std::exception& e) {
        Watcher::warn(std::string("a BatchProgress was dropped: ") + e.what());
    }
}

// SIGINT and SIGTERM, blocked, as a descriptor the loop polls.
class StopSignals {
public:
    StopSignals() {
        sigemptyset(&mask_);
        sigaddset(&mask_, SIGINT);
        sigaddset(&mask_, SIGTERM);
        if (::sigprocmask(SIG_BLOCK, &mask_, nullptr) != 0 ||
            (fd_ = ::signalfd(-1, &mask_, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
            throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorFailed,
                                        std::string("signalfd: ") + std::strerror(errno)});
        }
    }
    ~StopSignals() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        ::sigprocmask(SIG_UNBLOCK, &mask_, nullptr);
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;
    int fd() const { return fd_; }

private:
    sigset_t mask_{};
    int fd_ = -1;
};

}  // namespace

void add_watch_command(CLI::App& app, WatchCommand& c) {
    c.command = app.add_subcommand(
        "watch", "follow the service: batches, holds, profiles, CPU changes, one line each");
    c.command->footer(
        "\nPrints a line when it starts (who serves org.cpuhpd1 and what is in force), then\n"
        "one per event, each with its UTC time: batch started, its progress and its end,\n"
        "hold taken or ended, profile in force, power-profiles-daemon's profile, CPUs that\n"
        "changed (by cpuhpd or another tool), SMT control. With --json, one JSON object per\n"
        "line (docs/interface.md). It listens to the daemon's signals; it never polls.\n"
        "When cpuhpd leaves the bus (stopped, restarted, crashed) it prints a line and\n"
        "keeps waiting; when cpuhpd is back it prints its state, what changed meanwhile\n"
        "and its last recovery, if any. Runs until SIGINT or SIGTERM (exit 0); exit 1 when\n"
        "the bus connection itself is lost.\n\nExamples:\n  cpuctl watch\n"
        "  cpuctl --json watch >> orchestrator.log");
}

int run_watch_command(sdbus::IConnection& connection, const WatchCommand&, bool json) {
    StopSignals stop;  // before anything: a SIGINT from now on ends the watch cleanly
    Watcher watcher(connection, json);
    try {
        watcher.start();
    } catch (const sdbus::Error& e) {
        throw DaemonError(ErrorInfo{e.getName(), e.getMessage()});
    }
    return watcher.run(stop.fd());
}

}  // namespace cpuctl
