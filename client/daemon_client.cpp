#include "daemon_client.h"

#include <poll.h>
#include <sdbus-c++/sdbus-c++.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#include "names.h"

namespace cpuctl {
namespace {

using ResultStruct = sdbus::Struct<uint32_t, std::string, std::string, int32_t, std::string>;
using Results = std::vector<ResultStruct>;
using Dict = std::map<std::string, sdbus::Variant>;
using TopologyStruct =
    sdbus::Struct<uint32_t, int32_t, int32_t, int32_t, int32_t, std::string, bool, bool>;

constexpr const char* kDefaultSystemBus = "unix:path=/run/dbus/system_bus_socket";

std::string noReplyText(std::chrono::microseconds timeout) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(timeout.count()) / 1e6);
    return std::string("no reply from cpuhpd within ") + seconds +
           " s (--timeout); the daemon may be stopped or hung";
}

// poll(2)'s timeout in ms: the sooner of sd-bus's next deadline (absolute CLOCK_MONOTONIC
// microseconds, UINT64_MAX for none) and `left` of our own, rounded up so that poll never
// returns just before the deadline and spins.
int pollTimeoutMs(std::uint64_t busDeadlineUsec, std::chrono::steady_clock::duration left) {
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(left);
    if (busDeadlineUsec != UINT64_MAX) {
        timespec ts{};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        const std::uint64_t nowUsec = static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
                                      static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
        const std::uint64_t busLeft = busDeadlineUsec > nowUsec ? busDeadlineUsec - nowUsec : 0;
        wait = std::min(wait, std::chrono::milliseconds((busLeft + 999) / 1000));
    }
    return static_cast<int>(std::min<std::int64_t>(wait.count(), 60000));
}

[[noreturn]] void rethrow(const sdbus::Error& e) {
    throw DaemonError(ErrorInfo{e.getName(), e.getMessage()});
}

template <typename T>
T field(const Dict& dict, const std::string& key, T fallback = T{}) {
    auto it = dict.find(key);
    if (it == dict.end() || !it->second.template containsValueOfType<T>()) {
        return fallback;
    }
    return it->second.template get<T>();
}

BatchReply toBatchReply(const Results& results, const Dict& summary) {
    using namespace cpuhpd::dbus;
    BatchReply r;
    r.action = field<std::string>(summary, kSummaryAction);
    r.mask = field<std::string>(summary, kSummaryMask);
    r.mode = field<std::string>(summary, kSummaryMode);
    r.strategy = field<std::string>(summary, kSummaryStrategy);
    r.dry_run = field<bool>(summary, kSummaryDryRun);
    r.batch_id = field<uint64_t>(summary, kSummaryBatchId);
    r.duration_us = field<uint64_t>(summary, kSummaryDurationUs);
    r.outcome = field<std::string>(summary, kSummaryOutcome);
    r.order = field<std::vector<uint32_t>>(summary, kSummaryOrder);
    for (const auto& s : results) {
        r.cpus.push_back(CpuResult{s.get<0>(), s.get<1>(), s.get<2>(), s.get<3>(), s.get<4>()});
    }
    return r;
}

Dict toOptions(const BatchOptions& o) {
    Dict d;
    if (o.best_effort) {
        d[cpuhpd::dbus::kOptionMode] = sdbus::Variant(cpuhpd::to_string(cpuhpd::Mode::BestEffort));
    }
    if (o.strategy) {
        d[cpuhpd::dbus::kOptionStrategy] = sdbus::Variant(*o.strategy);
    }
    if (o.dry_run) {
        d[cpuhpd::dbus::kOptionDryRun] = sdbus::Variant(true);
    }
    return d;
}

}  // namespace

std::string DaemonClient::describeBus(const std::optional<std::string>& busAddress) {
    if (busAddress) {
        return "the bus at " + *busAddress;
    }
    const char* env = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
    return std::string("the system bus (") + (env && *env ? env : kDefaultSystemBus) + ")";
}

DaemonClient::DaemonClient(std::optional<std::string> busAddress, std::chrono::microseconds timeout)
    : timeout_(timeout) {
    try {
        // The "session" in the name only labels the connection: sd-bus connects to the address
        // given, as a bus client.
        connection_ = busAddress ? sdbus::createSessionBusConnectionWithAddress(*busAddress)
                                 : sdbus::createSystemBusConnection();
    } catch (const sdbus::Error& e) {
        // sdbus-c++ reports "Failed to open bus (...)" under its own error name; the D-Bus name
        // for "could not connect" is NoServer.
        throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorNoServer, e.getMessage()});
    }
    proxy_ = sdbus::createProxy(*connection_, cpuhpd::dbus::kBusName, cpuhpd::dbus::kObjectPath);
}

DaemonClient::~DaemonClient() = default;

BatchReply DaemonClient::batch(const std::string& method, const std::string& argument,
                               const BatchOptions& options, const ProgressFn& progress) {
    try {
        if (progress) {
            proxy_->uponSignal("BatchProgress")
                .onInterface(cpuhpd::dbus::kInterface)
                .call([&progress](uint64_t /*batch_id*/, uint32_t done, uint32_t total) {
                    progress(done, total);
                });
            proxy_->finishRegistration();
        }

        // Asynchronous call, and this thread runs the connection until the reply (or sd-bus's
        // timeout error reply) arrives, so that signals are dispatched while we wait.
        bool replied = false;
        std::optional<ErrorInfo> error;
        BatchReply reply;
        auto pending = proxy_->callMethodAsync(method)
                           .onInterface(cpuhpd::dbus::kInterface)
                           .withTimeout(timeout_)
                           .withArguments(argument, toOptions(options))
                           .uponReplyInvoke([&](const sdbus::Error* e, const Results& results,
                                                const Dict& summary) {
                               replied = true;
                               if (e != nullptr) {
                                   error = ErrorInfo{e->getName(), e->getMessage()};
                               } else {
                                   reply = toBatchReply(results, summary);
                               }
                           });
        // Our own deadline, not only sd-bus's: the loop ends when --timeout has passed
        // whatever the bus says about its next timer.
        const auto deadline = std::chrono::steady_clock::now() + timeout_;
        while (!replied) {
            if (connection_->processPendingRequest()) {
                continue;  // more may be queued
            }
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline) {
                throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorTimeout, noReplyText(timeout_)});
            }
            auto pd = connection_->getEventLoopPollData();
            pollfd pfd{pd.fd, pd.events, 0};
            if (::poll(&pfd, 1, pollTimeoutMs(pd.timeout_usec, deadline - now)) < 0 &&
                errno != EINTR) {
                throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorFailed,
                                            std::string("poll: ") + std::strerror(errno)});
            }
        }
        if (error) {
            throw DaemonError(*error);
        }
        return reply;
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

Status DaemonClient::status() {
    try {
        Dict props;
        proxy_->callMethod("GetAll")
            .onInterface("org.freedesktop.DBus.Properties")
            .withTimeout(timeout_)
            .withArguments(std::string(cpuhpd::dbus::kInterface))
            .storeResultsTo(props);
        using namespace cpuhpd::dbus;
        Status s;
        s.online = field<std::string>(props, kPropertyOnline);
        s.offline = field<std::string>(props, kPropertyOffline);
        s.possible = field<std::string>(props, kPropertyPossible);
        s.present = field<std::string>(props, kPropertyPresent);
        s.protected_cpus = field<std::string>(props, kPropertyProtected);
        s.smt_control = field<std::string>(props, kPropertySmtControl);
        s.capabilities = field<std::vector<std::string>>(props, kPropertyCapabilities);
        s.busy = field<bool>(props, kPropertyBusy);
        return s;
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

std::vector<TopologyCpu> DaemonClient::topology() {
    try {
        std::vector<TopologyStruct> raw;
        proxy_->callMethod("GetTopology")
            .onInterface(cpuhpd::dbus::kInterface)
            .withTimeout(timeout_)
            .storeResultsTo(raw);
        std::vector<TopologyCpu> cpus;
        for (const auto& t : raw) {
            cpus.push_back(TopologyCpu{t.get<0>(), t.get<1>(), t.get<2>(), t.get<3>(), t.get<4>(),
                                       t.get<5>(), t.get<6>(), t.get<7>()});
        }
        return cpus;
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

}  // namespace cpuctl
