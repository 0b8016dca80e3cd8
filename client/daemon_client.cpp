#include "daemon_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sdbus-c++/sdbus-c++.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "cpuhpd-proxy.h"  // generated from dbus/org.cpuhpd1.Manager.xml
#include "enums.h"
#include "names.h"
#include "sdbus_texts.h"
#include "status_properties.h"

namespace cpuctl {

namespace {

// The reply types of Offline, Online and SetSmt. The `override`s of ManagerProxy below hold
// them to the generated class: when the XML changes them, cpuctl does not build.
using Results =
    std::vector<sdbus::Struct<uint32_t, std::string, std::string, int32_t, std::string>>;
using Dict = std::map<std::string, sdbus::Variant>;

}  // namespace

// org.cpuhpd1.Manager through the generated proxy. The XML marks Offline, Online and SetSmt
// Method.Async "clientserver": the generated calls are asynchronous and their replies (or
// errors) arrive in on*Reply, which keep the last one. The connection is the caller's: nothing
// is received unless DaemonClient runs it.
// The reply of a call that DaemonClient::call_and_wait made: an error, or the results and
// the summary (empty for ReleaseHold).
struct CallReply {
    std::optional<ErrorInfo> error;
    Results results;
    Dict summary;
};

class ManagerProxy final
    : public sdbus::ProxyInterfaces<org::cpuhpd1::Manager_proxy, sdbus::Properties_proxy> {
public:
    explicit ManagerProxy(sdbus::IConnection& connection)
        : ProxyInterfaces(connection, cpuhpd::dbus::kBusName, cpuhpd::dbus::kObjectPath) {}
    ~ManagerProxy() { unregisterProxy(); }
    ManagerProxy(const ManagerProxy&) = delete;
    ManagerProxy& operator=(const ManagerProxy&) = delete;

    // Subscribes to the signals cpuctl acts on: only a batch that shows progress, and a
    // cancel that waits for its batch's end, need them. From then on BatchProgress calls
    // `progress` and BatchFinished fills `finished`. Each match rule is a synchronous AddMatch
    // round trip to the bus (sd-bus) before the call, so the signals cpuctl ignores
    // (HoldsChanged, HoldViolated, PropertiesChanged) get none.
    void follow_signals(ProgressFn progress = {}) {
        progress_ = std::move(progress);
        if (!registered_) {
            auto& proxy = getProxy();
            proxy.unregisterSignalHandler(org::cpuhpd1::Manager_proxy::INTERFACE_NAME,
                                          "HoldsChanged");
            proxy.unregisterSignalHandler(org::cpuhpd1::Manager_proxy::INTERFACE_NAME,
                                          "HoldViolated");
            proxy.unregisterSignalHandler("org.freedesktop.DBus.Properties", "PropertiesChanged");
            registerProxy();
            registered_ = true;
            ask_daemon_name();
        }
    }

    // The reply of the last change call, once it has arrived.
    std::optional<CallReply> reply;
    // HoldCpus's fd and id, with `reply`; the fd is ours, close-on-exec.
    int hold_fd = -1;
    std::uint64_t hold_id = 0;
    // BatchFinished signals seen since follow_signals(), by batch id.
    std::map<std::uint64_t, CancelReply> finished;

private:
    void onPropertiesChanged(const std::string& /*interface*/, const Dict& /*changed*/,
                             const std::vector<std::string>& /*invalidated*/) override {}
    void onBatchFinished(const uint64_t& batch_id, const std::string& action,
                         const std::string& /*strategy*/, const std::string& changed,
                         const std::string& failed, const uint32_t& /*requests*/,
                         const uint64_t& /*duration_us*/, const std::string& cancelled) override {
        if (!from_daemon()) {
            return;
        }
        finished[batch_id] = CancelReply{batch_id, true, action, changed, failed, cancelled};
    }
    void onHoldsChanged(
        const std::vector<sdbus::Struct<uint64_t, std::string, std::string, std::string,
                                        std::string, std::string, uint64_t, bool>>& /*holds*/)
        override {}
    void onBatchProgress(const uint64_t& /*batch_id*/, const uint32_t& done,
                         const uint32_t& total) override {
        if (progress_ && from_daemon()) {
            progress_(done, total);
        }
    }
    void onOfflineReply(const Results& results, const Dict& summary,
                        const sdbus::Error* error) override {
        keep_reply(results, summary, error);
    }
    void onOnlineReply(const Results& results, const Dict& summary,
                       const sdbus::Error* error) override {
        keep_reply(results, summary, error);
    }
    void onSetSmtReply(const Results& results, const Dict& summary,
                       const sdbus::Error* error) override {
        keep_reply(results, summary, error);
    }

    void onHoldCpusReply(const sdbus::UnixFd& fd, const uint64_t& id, const Results& results,
                         const Dict& summary, const sdbus::Error* error) override {
        keep_reply(results, summary, error);
        if (error == nullptr) {
            // sdbus::UnixFd dup()s without close-on-exec: a command cpuctl runs must not
            // inherit the hold and keep it after cpuctl has let go.
            hold_fd = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
            hold_id = id;
        }
    }
    void onHoldViolated(const uint64_t& /*hold_id*/, const std::string& /*who*/,
                        const std::string& /*holder*/, const std::string& /*cpus*/,
                        const std::string& /*online*/, const std::string& /*action*/,
                        const uint64_t& /*violations*/) override {}
    void onAttachHoldReply(const sdbus::UnixFd& fd, const sdbus::Error* error) override {
        keep_reply({}, {}, error);
        if (error == nullptr) {
            hold_fd = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
        }
    }
    void onReleaseHoldReply(const Results& results, const sdbus::Error* error) override {
        keep_reply(results, {}, error);
    }
    void onApplyProfileReply(const Results& results, const Dict& summary,
                             const sdbus::Error* error) override {
        keep_reply(results, summary, error);
    }
    void onRevertProfileReply(const Results& results, const Dict& summary,
                              const sdbus::Error* error) override {
        keep_reply(results, summary, error);
    }

    void keep_reply(const Results& results, const Dict& summary, const sdbus::Error* error) {
        CallReply r;
        if (error != nullptr) {
            r.error = ErrorInfo{error->getName(), error->getMessage()};
        } else {
            r.results = results;
            r.summary = summary;
        }
        reply = std::move(r);
    }

    // Signals are taken only from the daemon's connection: anybody may send a signal to ours
    // (dbus-daemon delivers unicast signals whatever the match rules say, and sd-bus does not
    // check a well-known sender itself). Asked without waiting: the bus driver answers
    // before it routes cpuctl's next message (the call) to the daemon, so the answer arrives
    // before any signal that call makes the daemon send; until it arrives, no signal is taken.
    void ask_daemon_name() {
        bus_driver_ = sdbus::createProxy(getProxy().getConnection(), "org.freedesktop.DBus",
                                         "/org/freedesktop/DBus");
        bus_driver_->callMethodAsync("GetNameOwner")
            .onInterface("org.freedesktop.DBus")
            .withArguments(std::string(cpuhpd::dbus::kBusName))
            .uponReplyInvoke([this](const sdbus::Error* error, const std::string& owner) {
                if (error == nullptr) {
                    daemon_ = owner;  // nobody owns it (an error): no signal is taken
                }
            });
    }

    // The signal being handled comes from the daemon's connection.
    bool from_daemon() {
        const auto* message = getProxy().getCurrentlyProcessedMessage();
        return message != nullptr && !daemon_.empty() && message->getSender() == daemon_;
    }

    ProgressFn progress_;
    bool registered_ = false;
    std::string daemon_;  // org.cpuhpd1's unique name when the signals were subscribed
    std::unique_ptr<sdbus::IProxy> bus_driver_;  // asks GetNameOwner; lives as long as this proxy
};

namespace {

constexpr const char* kDefaultSystemBus = "unix:path=/run/dbus/system_bus_socket";

std::string no_reply_text(std::chrono::microseconds timeout) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(timeout.count()) / 1e6);
    return std::string("no reply from cpuhpd within ") + seconds +
           " s (--timeout); the daemon may be stopped or hung";
}

// poll(2)'s timeout in ms: the sooner of sd-bus's next deadline (absolute CLOCK_MONOTONIC
// microseconds, UINT64_MAX for none) and `left` of our own, rounded up so that poll never
// returns just before the deadline and spins.
int poll_timeout_ms(std::uint64_t bus_deadline_usec, std::chrono::steady_clock::duration left) {
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(left);
    if (bus_deadline_usec != UINT64_MAX) {
        timespec ts{};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        const std::uint64_t now_usec = static_cast<std::uint64_t>(ts.tv_sec) * 1000000u +
                                       static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
        const std::uint64_t bus_left =
            bus_deadline_usec > now_usec ? bus_deadline_usec - now_usec : 0;
        wait = std::min(wait, std::chrono::milliseconds((bus_left + 999) / 1000));
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

// One struct of the model from one D-Bus struct, field by field: a narrowing conversion, or a
// D-Bus struct with more (too many initializers) or fewer fields (-Wmissing-field-initializers)
// than the model, fails to compile.
template <typename Model, typename... Fields>
Model to_model(const sdbus::Struct<Fields...>& entry) {
    return std::apply([](const auto&... fields) { return Model{fields...}; },
                      static_cast<const std::tuple<Fields...>&>(entry));
}

// The summary's "pinned_tasks" and "pinned_irqs" (a(uss)): absent (online results) or of
// another type, none.
using PinnedEntries = std::vector<sdbus::Struct<uint32_t, std::string, std::string>>;

template <typename Model>
std::vector<Model> pinned(const Dict& summary, const char* key) {
    std::vector<Model> out;
    for (const auto& entry : field<PinnedEntries>(summary, key)) {
        out.push_back(to_model<Model>(entry));
    }
    return out;
}

// The summary's "partitions" (a(sss)); absent, none.
std::vector<PartitionChange> partitions(const Dict& summary) {
    using Entries = std::vector<sdbus::Struct<std::string, std::string, std::string>>;
    std::vector<PartitionChange> out;
    for (const auto& entry : field<Entries>(summary, cpuhpd::dbus::kSummaryPartitions)) {
        out.push_back(to_model<PartitionChange>(entry));
    }
    return out;
}

// The summary's "affinity" (a(susssis)); absent, none.
std::vector<AffinityEntry> affinity(const Dict& summary) {
    using Entries = std::vector<sdbus::Struct<std::string, uint32_t, std::string, std::string,
                                              std::string, int32_t, std::string>>;
    std::vector<AffinityEntry> out;
    for (const auto& entry : field<Entries>(summary, cpuhpd::dbus::kSummaryAffinity)) {
        out.push_back(to_model<AffinityEntry>(entry));
    }
    return out;
}

// The summary's "phases" (a(st)); absent (an older daemon), none.
std::vector<PhaseEntry> phases(const Dict& summary) {
    using Entries = std::vector<sdbus::Struct<std::string, uint64_t>>;
    std::vector<PhaseEntry> out;
    for (const auto& entry : field<Entries>(summary, cpuhpd::dbus::kSummaryPhases)) {
        out.push_back(to_model<PhaseEntry>(entry));
    }
    return out;
}

std::vector<CpuResult> cpu_results(const Results& results) {
    std::vector<CpuResult> cpus;
    for (const auto& entry : results) {
        cpus.push_back(to_model<CpuResult>(entry));
    }
    return cpus;
}

BatchReply to_batch_reply(const Results& results, const Dict& summary) {
    using namespace cpuhpd::dbus;
    BatchReply r;
    r.action = field<std::string>(summary, kSummaryAction);
    r.mask = field<std::string>(summary, kSummaryMask);
    r.mode = field<std::string>(summary, kSummaryMode);
    r.strategy = field<std::string>(summary, kSummaryStrategy);
    r.dry_run = field<bool>(summary, kSummaryDryRun);
    r.batch_id = field<uint64_t>(summary, kSummaryBatchId);
    r.duration_us = field<uint64_t>(summary, kSummaryDurationUs);
    r.queued_us = field<uint64_t>(summary, kSummaryQueuedUs);
    r.outcome = field<std::string>(summary, kSummaryOutcome);
    r.order = field<std::vector<uint32_t>>(summary, kSummaryOrder);
    r.cpus = cpu_results(results);
    r.pinned_tasks = pinned<PinnedTask>(summary, kSummaryPinnedTasks);
    r.pinned_irqs = pinned<PinnedIrq>(summary, kSummaryPinnedIrqs);
    r.partitions = partitions(summary);
    r.affinity = affinity(summary);
    r.phases = phases(summary);
    return r;
}

// The options dictionary (a{sv}) of every call that takes one: only the keys whose value
// differs from the daemon's default. `restore` is HoldCpus's alone.
Dict to_options(const BatchOptions& o, bool restore = true) {
    using namespace cpuhpd::dbus;
    Dict d;
    if (o.best_effort) {
        d[kOptionMode] = sdbus::Variant(cpuhpd::to_string(cpuhpd::Mode::BestEffort));
    }
    if (o.strategy) {
        d[kOptionStrategy] = sdbus::Variant(*o.strategy);
    }
    if (o.dry_run) {
        d[kOptionDryRun] = sdbus::Variant(true);
    }
    if (!restore) {
        d[kOptionRestore] = sdbus::Variant(false);
    }
    if (o.refuse_pinned) {
        d[kOptionRefusePinned] = sdbus::Variant(true);
    }
    if (o.force) {
        d[kOptionForce] = sdbus::Variant(true);
    }
    return d;
}

}  // namespace

std::string DaemonClient::describe_bus(const std::optional<std::string>& bus_address) {
    if (bus_address) {
        return "the bus at " + *bus_address;
    }
    const char* env = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
    return std::string("the system bus (") + (env && *env ? env : kDefaultSystemBus) + ")";
}

DaemonClient::DaemonClient(std::optional<std::string> bus_address,
                           std::chrono::microseconds timeout)
    : timeout_(timeout) {
    try {
        // The "session" in the name only labels the connection: sd-bus connects to the address
        // given, as a bus client.
        connection_ = bus_address ? sdbus::createSessionBusConnectionWithAddress(*bus_address)
                                  : sdbus::createSystemBusConnection();
    } catch (const sdbus::Error& e) {
        // sdbus-c++ reports "Failed to open bus (...)" under its own error name; the D-Bus name
        // for "could not connect" is NoServer.
        throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorNoServer, e.getMessage()});
    }
    // The generated calls take no timeout of their own: this one bounds every call.
    connection_->setMethodCallTimeout(timeout_);
    proxy_ = std::make_unique<ManagerProxy>(*connection_);
}

DaemonClient::~DaemonClient() = default;

BatchReply DaemonClient::batch(BatchMethod method, const std::string& argument,
                               const BatchOptions& options, const ProgressFn& progress) {
    try {
        const CallReply& reply = call_and_wait(
            [&](ManagerProxy& proxy) {
                switch (method) {
                    case BatchMethod::Offline:
                        proxy.Offline(argument, to_options(options));
                        break;
                    case BatchMethod::Online:
                        proxy.Online(argument, to_options(options));
                        break;
                    case BatchMethod::SetSmt:
                        proxy.SetSmt(argument, to_options(options));
                        break;
                }
            },
            progress);
        return to_batch_reply(reply.results, reply.summary);
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

const CallReply& DaemonClient::call_and_wait(const std::function<void(ManagerProxy&)>& call,
                                             const ProgressFn& progress) {
    // Asynchronous call, and this thread runs the connection until the reply (or sd-bus's
    // timeout error reply) arrives, so that signals are dispatched while we wait.
    if (progress) {
        proxy_->follow_signals(progress);
    }
    proxy_->reply.reset();
    call(*proxy_);
    run_until([this] { return proxy_->reply.has_value(); });
    const CallReply& reply = *proxy_->reply;
    if (reply.error) {
        throw DaemonError(*reply.error);
    }
    return reply;
}

HoldGrant::HoldGrant(int fd, std::uint64_t id, BatchReply change)
    : fd_(fd), id_(id), change_(std::move(change)) {}

HoldGrant::~HoldGrant() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void HoldGrant::replace_fd(int fd) {
    if (fd_ >= 0) {
        ::close(fd_);
    }
    fd_ = fd;
}

HoldGrant::HoldGrant(HoldGrant&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), id_(other.id_), change_(std::move(other.change_)) {}

HoldGrant DaemonClient::hold(const HoldRequest& request, const ProgressFn& progress) {
    try {
        const auto state = request.method == BatchMethod::Online ? cpuhpd::Action::Online
                                                                 : cpuhpd::Action::Offline;
        const Dict options = to_options({.strategy = request.strategy,
                                         .refuse_pinned = request.refuse_pinned,
                                         .force = request.force},
                                        request.restore);
        const CallReply& reply = call_and_wait(
            [&](ManagerProxy& proxy) {
                proxy.HoldCpus(request.mask, cpuhpd::to_string(state), request.who, request.why,
                               options);
            },
            progress);
        if (proxy_->hold_fd < 0) {
            throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorFailed,
                                        "the hold's file descriptor could not be kept"});
        }
        return HoldGrant(std::exchange(proxy_->hold_fd, -1), proxy_->hold_id,
                         to_batch_reply(reply.results, reply.summary));
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

int DaemonClient::attach_hold(std::uint64_t id) {
    try {
        proxy_->hold_fd = -1;
        call_and_wait([&](ManagerProxy& proxy) { proxy.AttachHold(id); });
        if (proxy_->hold_fd < 0) {
            throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorFailed,
                                        "the hold's new file descriptor could not be kept"});
        }
        return std::exchange(proxy_->hold_fd, -1);
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

void DaemonClient::follow_daemon_name(std::function<void(bool present)> changed) {
    // Only the bus driver's NameOwnerChanged, for our name: sd-bus matches the sender.
    daemon_name_watch_ = connection_->addMatch(
        std::string("type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                    "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='") +
            cpuhpd::dbus::kBusName + "'",
        [changed = std::move(changed)](sdbus::Message& message) {
            std::string name, old_owner, new_owner;
            try {
                message >> name >> old_owner >> new_owner;
            } catch (const sdbus::Error&) {
                return;  // not three strings: not the bus driver's
            }
            if (name == cpuhpd::dbus::kBusName) {
                changed(!new_owner.empty());
            }
        });
}

PollSpec DaemonClient::poll_spec() {
    const auto pd = connection_->getEventLoopPollData();
    return PollSpec{pd.fd, pd.events, poll_timeout_ms(pd.timeout_usec, timeout_)};
}

void DaemonClient::dispatch() {
    for (int i = 0; i < 64; ++i) {
        try {
            if (!connection_->processPendingRequest()) {
                return;
            }
        } catch (const sdbus::Error& e) {
            if (cpuhpd::dbus::bus_processing_failed(e)) {
                throw DaemonError(ErrorInfo{e.getName(), e.getMessage()});
            }
        }
    }
}

std::vector<CpuResult> DaemonClient::release_hold(std::uint64_t id) {
    try {
        return cpu_results(
            call_and_wait([&](ManagerProxy& proxy) { proxy.ReleaseHold(id); }).results);
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

std::vector<HoldInfo> DaemonClient::holds() {
    try {
        return holds_of(proxy_->Holds());
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

void DaemonClient::run_until(const std::function<bool()>& done) {
    // Our own deadline, not only sd-bus's: the loop ends when --timeout has passed
    // whatever the bus says about its next timer.
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (!done()) {
        try {
            if (connection_->processPendingRequest()) {
                continue;  // more may be queued
            }
        } catch (const sdbus::Error& e) {
            // sd_bus_process() failing is a lost connection; anything else was the generated
            // glue failing to decode a message (a malformed signal anybody may send us):
            // that message is dropped and the wait goes on.
            if (cpuhpd::dbus::bus_processing_failed(e)) {
                throw;
            }
            continue;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorTimeout, no_reply_text(timeout_)});
        }
        auto pd = connection_->getEventLoopPollData();
        pollfd pfd{pd.fd, pd.events, 0};
        if (::poll(&pfd, 1, poll_timeout_ms(pd.timeout_usec, deadline - now)) < 0 &&
            errno != EINTR) {
            throw DaemonError(ErrorInfo{cpuhpd::dbus::kErrorFailed,
                                        std::string("poll: ") + std::strerror(errno)});
        }
    }
}

CancelReply DaemonClient::cancel(std::uint64_t batch_id, bool wait) {
    try {
        // Subscribed before the call: the daemon sends the batch's BatchFinished only after
        // its reply to Cancel.
        if (wait) {
            proxy_->follow_signals();
        }
        CancelReply r;
        r.batch_id = proxy_->Cancel(batch_id);
        if (!wait) {
            return r;
        }
        run_until([&] { return proxy_->finished.count(r.batch_id) > 0; });
        return proxy_->finished.at(r.batch_id);
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

Status DaemonClient::status() {
    try {
        // All properties from one moment (one GetAll).
        Status s;
        update_status(s, proxy_->GetAll(org::cpuhpd1::Manager_proxy::INTERFACE_NAME));
        return s;
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

ProfileReply DaemonClient::profile(const std::string& name, const BatchOptions& options,
                                   const ProgressFn& progress) {
    try {
        // A profile has no mode: best_effort is not sent.
        const Dict dict = to_options({.strategy = options.strategy,
                                      .dry_run = options.dry_run,
                                      .refuse_pinned = options.refuse_pinned,
                                      .force = options.force});
        const CallReply& reply = call_and_wait(
            [&](ManagerProxy& proxy) {
                if (name.empty()) {
                    proxy.RevertProfile(dict);
                } else {
                    proxy.ApplyProfile(name, dict);
                }
            },
            progress);
        using namespace cpuhpd::dbus;
        const Dict& summary = reply.summary;
        ProfileReply r;
        r.profile = field<std::string>(summary, kSummaryProfile);
        r.offline = field<std::string>(summary, kSummaryOffline);
        r.online = field<std::string>(summary, kSummaryOnline);
        r.taken = field<std::string>(summary, kSummaryTaken);
        r.active = field<std::string>(summary, kSummaryActive);
        r.outcome = field<std::string>(summary, kSummaryOutcome);
        r.dry_run = field<bool>(summary, kSummaryDryRun);
        r.duration_us = field<uint64_t>(summary, kSummaryDurationUs);
        r.reverted = name.empty();
        r.cpus = cpu_results(reply.results);
        r.pinned_tasks = pinned<PinnedTask>(summary, kSummaryPinnedTasks);
        r.pinned_irqs = pinned<PinnedIrq>(summary, kSummaryPinnedIrqs);
        r.partitions = partitions(summary);
        r.affinity = affinity(summary);
        return r;
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

std::vector<ProfileInfo> DaemonClient::profiles() {
    try {
        std::vector<ProfileInfo> list;
        for (const auto& entry : proxy_->Profiles()) {
            list.push_back(to_model<ProfileInfo>(entry));
        }
        return list;
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

std::string DaemonClient::active_profile() {
    try {
        return proxy_->ActiveProfile();
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

std::vector<TopologyCpu> DaemonClient::topology() {
    try {
        std::vector<TopologyCpu> cpus;
        for (const auto& entry : proxy_->GetTopology()) {
            cpus.push_back(to_model<TopologyCpu>(entry));
        }
        return cpus;
    } catch (const sdbus::Error& e) {
        rethrow(e);
    }
}

}  // namespace cpuctl
