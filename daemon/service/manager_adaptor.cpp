#include "manager_adaptor.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <utility>

#include "dbus_error.h"
#include "input.h"
#include "log.h"
#include "names.h"
#include "option_decoding.h"
#include "sysfs.h"

namespace cpuhpd {

namespace {

// How long the bus driver may take to say who a caller is.
constexpr std::uint64_t kCredentialsTimeoutUs = 5'000'000;

// Runs a handler body and turns whatever it throws into an sdbus::Error: in sdbus-c++ 1.2
// anything else escaping a handler aborts the daemon.
template <typename Body>
auto guarded(const char* what, Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (...) {
        throw to_dbus_error(what, std::current_exception());
    }
}

std::vector<ManagerAdaptor::ResultEntry> to_dbus(const std::vector<CpuResult>& cpus) {
    std::vector<ManagerAdaptor::ResultEntry> entries;
    entries.reserve(cpus.size());
    for (const auto& cpu : cpus) {
        entries.emplace_back(static_cast<uint32_t>(cpu.cpu), to_string(cpu.outcome),
                             cpu.error != 0 ? errno_name(cpu.error) : std::string(),
                             static_cast<int32_t>(cpu.error), cpu.message);
    }
    return entries;
}

// The summary's pinned_tasks and pinned_irqs, a(uss) each.
void add_pinned(ManagerAdaptor::Summary& summary, const Pinned& pinned) {
    using Entry = sdbus::Struct<uint32_t, std::string, std::string>;
    std::vector<Entry> tasks;
    tasks.reserve(pinned.tasks.size());
    for (const auto& task : pinned.tasks) {
        tasks.emplace_back(static_cast<uint32_t>(task.tid), task.comm, task.cpus.to_string());
    }
    std::vector<Entry> irqs;
    irqs.reserve(pinned.irqs.size());
    for (const auto& irq : pinned.irqs) {
        irqs.emplace_back(static_cast<uint32_t>(irq.irq), irq.name, irq.cpus.to_string());
    }
    summary[dbus::kSummaryPinnedTasks] = sdbus::Variant(tasks);
    summary[dbus::kSummaryPinnedIrqs] = sdbus::Variant(irqs);
}

// The summary's partitions, a(sss): path, cpuset.cpus before and after.
void add_partitions(ManagerAdaptor::Summary& summary, const std::vector<PartitionChange>& changes) {
    std::vector<sdbus::Struct<std::string, std::string, std::string>> entries;
    entries.reserve(changes.size());
    for (const auto& change : changes) {
        entries.emplace_back(change.path, change.before.to_string(), change.after.to_string());
    }
    summary[dbus::kSummaryPartitions] = sdbus::Variant(entries);
}

ManagerAdaptor::Summary summary_of(const RequestResult& result) {
    ManagerAdaptor::Summary summary;
    summary[dbus::kSummaryAction] = sdbus::Variant(to_string(result.action));
    summary[dbus::kSummaryMask] = sdbus::Variant(result.mask);
    summary[dbus::kSummaryMode] = sdbus::Variant(to_string(result.mode));
    summary[dbus::kSummaryStrategy] = sdbus::Variant(to_string(result.strategy));
    summary[dbus::kSummaryDryRun] = sdbus::Variant(result.dry_run);
    summary[dbus::kSummaryBatchId] = sdbus::Variant(static_cast<uint64_t>(result.batch_id));
    summary[dbus::kSummaryDurationUs] =
        sdbus::Variant(static_cast<uint64_t>(result.duration.count()));
    std::vector<uint32_t> order(result.order.begin(), result.order.end());
    summary[dbus::kSummaryOrder] = sdbus::Variant(order);
    summary[dbus::kSummaryOutcome] = sdbus::Variant(to_string(result.outcome));
    if (result.action == Action::Offline) {
        add_pinned(summary, result.pinned);
    }
    add_partitions(summary, result.partitions);
    return summary;
}

std::vector<std::string> capability_names(const MachineState& state) {
    std::vector<std::string> names;
    for (const auto kind : state.capabilities()) {
        names.push_back(to_string(kind));
    }
    return names;
}

std::vector<ManagerAdaptor::HoldEntry> to_dbus(const std::vector<Hold>& holds) {
    std::vector<ManagerAdaptor::HoldEntry> entries;
    entries.reserve(holds.size());
    for (const auto& hold : holds) {
        entries.emplace_back(
            static_cast<uint64_t>(hold.id), hold.cpus.to_string(), to_string(hold.state), hold.who,
            hold.why, hold.holder,
            static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(hold.since.time_since_epoch())
                    .count()),
            hold.restore);
    }
    return entries;
}

// Sends what `send` sends; when it cannot be sent, a generic error is, and if that fails
// too, the caller went away or the connection broke: logged.
template <typename Call, typename Send>
void reply_or_fail(const Call& call, Send&& send) {
    try {
        send();
    } catch (const std::exception& error) {
        log::warning(std::string("cannot send a reply: ") + error.what());
        try {
            call.returnError(sdbus::Error(kFailed, "cpuhpd could not send the reply"));
        } catch (const std::exception& again) {
            log::warning(std::string("cannot send an error reply either: ") + again.what());
        }
    }
}

// Replies to `call` with the backend's answer: the error it holds, or what `send` sends for
// its value.
template <typename Call, typename Value, typename Send>
void reply_with(const Call& call, const char* what,
                const std::variant<Value, std::exception_ptr>& answer, Send&& send) {
    reply_or_fail(call, [&] {
        if (const auto* thrown = std::get_if<std::exception_ptr>(&answer)) {
            call.returnError(to_dbus_error(what, *thrown));
            return;
        }
        send(std::get<Value>(answer));
    });
}

// The refusal path of authorize(): an error reply to `call`.
template <typename Call>
std::function<void(const sdbus::Error&)> refuser(const std::shared_ptr<Call>& call) {
    return [call](const sdbus::Error& error) {
        reply_or_fail(*call,
                      [&] { call->returnError(sendable(error.getName(), error.getMessage())); });
    };
}

ChangeAsk ask_for(Action action, std::string mask) {
    ChangeAsk ask;
    ask.action = action;
    ask.mask = std::move(mask);
    return ask;
}

}  // namespace

ManagerAdaptor::ManagerAdaptor(sdbus::IConnection& connection, ManagerBackend& backend)
    : AdaptorInterfaces(connection, dbus::kObjectPath),
      backend_(backend),
      bus_driver_(sdbus::createProxy(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus")),
      polkit_(connection) {
    announced_ = property_texts();
    registerAdaptor();
}

ManagerAdaptor::~ManagerAdaptor() {
    unregisterAdaptor();
}

RequestOptions ManagerAdaptor::read_options(
    const std::map<std::string, sdbus::Variant>& options) const {
    return read_request_options(getObject().getCurrentlyProcessedMessage(), options);
}

// The caller's uid as the bus verified it: UnixUserID of
// org.freedesktop.DBus.GetConnectionCredentials, which the bus took from the socket
// (SO_PEERCRED) when the caller connected. Never looked up by PID (/proc/PID may belong to
// another process by now). Empty, with `why` set, when the bus gives none.
std::optional<uid_t> ManagerAdaptor::verified_caller_uid(std::string& why) const {
    const auto* message = getObject().getCurrentlyProcessedMessage();
    if (message == nullptr) {
        why = "no message is being processed";
        return std::nullopt;
    }
    try {
        std::map<std::string, sdbus::Variant> creds;
        bus_driver_->callMethod("GetConnectionCredentials")
            .onInterface("org.freedesktop.DBus")
            .withTimeout(kCredentialsTimeoutUs)
            .withArguments(message->getSender())
            .storeResultsTo(creds);
        const auto it = creds.find("UnixUserID");
        if (it == creds.end() || !it->second.containsValueOfType<uint32_t>()) {
            why = "the bus reports no UnixUserID for the caller";
            return std::nullopt;
        }
        return static_cast<uid_t>(it->second.get<uint32_t>());
    } catch (const sdbus::Error& error) {
        why = "GetConnectionCredentials failed: " + error.getName() + ": " + error.getMessage();
        return std::nullopt;
    }
}

// Changing CPU state needs root or polkit's word. uid 0 passes without asking polkit, as
// does the daemon's own user when it is not root (tests on a fake tree: that user could
// write the tree anyway). Anyone else is asked about through polkit, which judges the
// caller by its bus name. A caller whose identity the bus cannot vouch for is refused.
void ManagerAdaptor::authorize(const char* action, const char* what,
                               const std::map<std::string, std::string>& details,
                               std::function<void()> proceed,
                               std::function<void(const sdbus::Error&)> refuse) {
    auto run = [what, proceed = std::move(proceed), refuse] {
        try {
            proceed();
        } catch (...) {
            refuse(to_dbus_error(what, std::current_exception()));
        }
    };
    std::string why;
    const std::optional<uid_t> uid = verified_caller_uid(why);
    const std::string sender = caller();
    if (!uid) {
        log::warning(std::string("refusing ") + what + " from " + sender +
                     ": cannot verify the caller's identity: " + why);
        refuse(sdbus::Error(kAccessDenied,
                            "cannot verify the caller's identity (" + why +
                                "); changing CPU state needs credentials the bus vouches for"));
        return;
    }
    if (*uid == 0 || *uid == geteuid()) {
        run();
        return;
    }
    const auto* message = getObject().getCurrentlyProcessedMessage();
    const bool interactive = message != nullptr && allows_interactive_authorization(*message);
    const std::string caller_text = sender + " (uid " + std::to_string(*uid) + ")";
    polkit_.check(
        action, sender, interactive, details,
        [action = std::string(action), what = std::string(what), caller_text, run = std::move(run),
         refuse](const PolkitVerdict& verdict) {
            switch (verdict.kind) {
                case PolkitVerdict::Kind::Authorized:
                    run();
                    return;
                case PolkitVerdict::Kind::ChallengeNeeded:
                    refuse(sdbus::Error(dbus::kErrorInteractiveAuthorizationRequired,
                                        what + " needs authentication (polkit action " + action +
                                            "); allow interactive authorization in the call to be "
                                            "asked"));
                    return;
                case PolkitVerdict::Kind::Denied:
                    log::info("polkit refused " + what + " to " + caller_text + " (" + action +
                              ")");
                    refuse(sdbus::Error(kAccessDenied, "not authorized: " + what +
                                                           " needs root or polkit "
                                                           "action " +
                                                           action));
                    return;
                case PolkitVerdict::Kind::Unavailable:
                    log::warning("cannot ask polkit whether " + caller_text + " may " + action +
                                 ": " + verdict.detail);
                    refuse(sdbus::Error(kAccessDenied, what + " needs root or polkit action " +
                                                           action +
                                                           ", and polkit could not be "
                                                           "asked: " +
                                                           verdict.detail));
                    return;
            }
        });
}

std::string ManagerAdaptor::caller() const {
    const auto* message = getObject().getCurrentlyProcessedMessage();
    if (message == nullptr) {
        return {};
    }
    try {
        return message->getSender();
    } catch (const sdbus::Error&) {
        return {};
    }
}

void ManagerAdaptor::change(ChangeResult&& result, ChangeAsk ask,
                            const std::map<std::string, sdbus::Variant>& options) {
    ask.options = read_options(options);
    ask.caller = caller();
    const char* what = ask.smt_siblings                ? "SetSmt"
                       : ask.action == Action::Offline ? "Offline"
                                                       : "Online";
    const char* action = ask.smt_siblings ? kActionSwitchSmt : kActionChangeCpus;
    const std::map<std::string, std::string> details{{"mask", ask.mask},
                                                     {"state", to_string(ask.action)}};
    const bool dry_run = ask.options.dry_run;
    // std::function needs a copyable target and sdbus::Result is move-only. The backend
    // calls back on the main thread, so the reply is sent and dropped there.
    auto reply = std::make_shared<ChangeResult>(std::move(result));
    auto submit = [this, reply, what, ask = std::move(ask)] {
        backend_.submit(ask, [reply, what](ChangeAnswer answer) {
            reply_with(*reply, what, answer, [&](const RequestResult& done) {
                if (done.refusal) {
                    reply->returnError(
                        sendable(error_name(done.refusal->kind()), done.refusal->what()));
                } else {
                    reply->returnResults(to_dbus(done.cpus), summary_of(done));
                }
            });
        });
    };
    if (dry_run) {  // a read: anyone may
        submit();
        return;
    }
    authorize(action, what, details, std::move(submit), refuser(reply));
}

void ManagerAdaptor::Offline(ChangeResult&& result, std::string mask,
                             std::map<std::string, sdbus::Variant> options) {
    guarded("Offline",
            [&] { change(std::move(result), ask_for(Action::Offline, std::move(mask)), options); });
}

void ManagerAdaptor::Online(ChangeResult&& result, std::string mask,
                            std::map<std::string, sdbus::Variant> options) {
    guarded("Online",
            [&] { change(std::move(result), ask_for(Action::Online, std::move(mask)), options); });
}

void ManagerAdaptor::SetSmt(ChangeResult&& result, std::string state,
                            std::map<std::string, sdbus::Variant> options) {
    guarded("SetSmt", [&] {
        if (state != dbus::kSmtOff && state != dbus::kSmtOn) {
            throw sdbus::Error(kInvalidArgs, "invalid SMT state '" + escape_excerpt(state) +
                                                 "': expected on or off");
        }
        const Action action = state == dbus::kSmtOff ? Action::Offline : Action::Online;
        ChangeAsk ask = ask_for(action, "smt");
        ask.smt_siblings = true;
        change(std::move(result), std::move(ask), options);
    });
}

void ManagerAdaptor::Cancel(sdbus::Result<uint64_t>&& result, uint64_t batch_id) {
    guarded("Cancel", [&] {
        auto reply = std::make_shared<sdbus::Result<uint64_t>>(std::move(result));
        authorize(
            kActionChangeCpus, "Cancel", {{"batch", std::to_string(batch_id)}},
            [this, reply, batch_id, sender = caller()] {
                const auto cancelled = static_cast<uint64_t>(backend_.cancel(batch_id, sender));
                reply_or_fail(*reply, [&] { reply->returnResults(cancelled); });
            },
            refuser(reply));
    });
}

void ManagerAdaptor::HoldCpus(
    sdbus::Result<sdbus::UnixFd, uint64_t, std::vector<ResultEntry>, Summary>&& result,
    std::string mask, std::string state, std::string who, std::string why,
    std::map<std::string, sdbus::Variant> options) {
    guarded("HoldCpus", [&] {
        const auto action = find_by_name(kActionNames, state);
        if (!action) {
            throw sdbus::Error(kInvalidArgs, "invalid state '" + escape_excerpt(state) +
                                                 "': expected " + alternatives(kActionNames));
        }
        check_hold_names(who, why);
        const HoldOptions hold_options =
            read_hold_options(getObject().getCurrentlyProcessedMessage(), options);
        HoldAsk ask;
        ask.change = ask_for(*action, std::move(mask));
        ask.change.options.mode = Mode::Atomic;
        ask.change.options.strategy = hold_options.strategy;
        ask.change.options.refuse_pinned = hold_options.refuse_pinned;
        ask.change.options.force = hold_options.force;
        ask.change.caller = caller();
        ask.who = std::move(who);
        ask.why = std::move(why);
        ask.restore = hold_options.restore;
        const std::map<std::string, std::string> details{
            {"mask", ask.change.mask}, {"state", state}, {"who", ask.who}, {"why", ask.why}};
        using Call = sdbus::Result<sdbus::UnixFd, uint64_t, std::vector<ResultEntry>, Summary>;
        auto reply = std::make_shared<Call>(std::move(result));
        auto take = [this, reply, ask = std::move(ask)] {
            backend_.hold(ask, [reply](HoldAnswer answer) {
                reply_with(*reply, "HoldCpus", answer, [&](const HeldCpus& held) {
                    reply->returnResults(held.fd, static_cast<uint64_t>(held.id),
                                         to_dbus(held.result.cpus), summary_of(held.result));
                });
            });
        };
        authorize(kActionHoldCpus, "HoldCpus", details, std::move(take), refuser(reply));
    });
}

void ManagerAdaptor::ReleaseHold(sdbus::Result<std::vector<ResultEntry>>&& result,
                                 uint64_t hold_id) {
    guarded("ReleaseHold", [&] {
        using Call = sdbus::Result<std::vector<ResultEntry>>;
        auto reply = std::make_shared<Call>(std::move(result));
        auto release = [this, reply, hold_id, sender = caller()] {
            backend_.release_hold(hold_id, sender, [reply](ReleaseAnswer answer) {
                reply_with(*reply, "ReleaseHold", answer, [&](const std::vector<CpuResult>& cpus) {
                    reply->returnResults(to_dbus(cpus));
                });
            });
        };
        // The holder may always let go of its own hold; breaking another's needs the right
        // to take holds.
        const auto holds = backend_.holds();
        const bool own = std::any_of(holds.begin(), holds.end(), [&](const Hold& hold) {
            return hold.id == hold_id && hold.holder == caller();
        });
        if (own) {
            release();
        } else {
            authorize(kActionHoldCpus, "ReleaseHold", {{"hold", std::to_string(hold_id)}},
                      std::move(release), refuser(reply));
        }
    });
}

void ManagerAdaptor::profile_change(ChangeResult&& result, ProfileAsk ask, const char* what) {
    ask.caller = caller();
    auto reply = std::make_shared<ChangeResult>(std::move(result));
    const bool dry_run = ask.dry_run;
    const std::map<std::string, std::string> details{{"profile", ask.name}};
    auto run = [this, reply, what, ask = std::move(ask)] {
        backend_.apply_profile(ask, [reply, what](ProfileAnswer answer) {
            reply_with(*reply, what, answer, [&](const ProfileDone& done) {
                Summary summary;
                summary[dbus::kSummaryProfile] = sdbus::Variant(done.name);
                summary[dbus::kSummaryOffline] =
                    sdbus::Variant(done.transition.to_offline.to_string());
                summary[dbus::kSummaryOnline] =
                    sdbus::Variant(done.transition.to_online.to_string());
                summary[dbus::kSummaryTaken] = sdbus::Variant(
                    done.dry_run ? done.transition.taken_after.to_string()
                                 : (done.active ? done.active->taken.to_string() : std::string()));
                summary[dbus::kSummaryActive] =
                    sdbus::Variant(done.active ? done.active->name : std::string());
                summary[dbus::kSummaryOutcome] = sdbus::Variant(to_string(done.outcome));
                summary[dbus::kSummaryDryRun] = sdbus::Variant(done.dry_run);
                summary[dbus::kSummaryDurationUs] =
                    sdbus::Variant(static_cast<uint64_t>(done.duration.count()));
                add_pinned(summary, done.pinned);
                add_partitions(summary, done.partitions);
                reply->returnResults(to_dbus(done.cpus), summary);
            });
        });
    };
    if (dry_run) {  // a read: anyone may
        run();
        return;
    }
    authorize(kActionApplyProfile, what, details, std::move(run), refuser(reply));
}

void ManagerAdaptor::ApplyProfile(ChangeResult&& result, std::string name,
                                  std::map<std::string, sdbus::Variant> options) {
    guarded("ApplyProfile", [&] {
        const ProfileOptions parsed =
            read_profile_options(getObject().getCurrentlyProcessedMessage(), options, 1);
        if (name.empty()) {
            throw sdbus::Error(kInvalidArgs, "the profile name is empty");
        }
        ProfileAsk ask;
        ask.name = std::move(name);
        ask.dry_run = parsed.dry_run;
        ask.strategy = parsed.strategy;
        ask.refuse_pinned = parsed.refuse_pinned;
        ask.force = parsed.force;
        profile_change(std::move(result), std::move(ask), "ApplyProfile");
    });
}

void ManagerAdaptor::RevertProfile(ChangeResult&& result,
                                   std::map<std::string, sdbus::Variant> options) {
    guarded("RevertProfile", [&] {
        const ProfileOptions parsed =
            read_profile_options(getObject().getCurrentlyProcessedMessage(), options, 0);
        ProfileAsk ask;
        ask.dry_run = parsed.dry_run;
        ask.strategy = parsed.strategy;
        profile_change(std::move(result), std::move(ask), "RevertProfile");
    });
}

std::vector<ManagerAdaptor::TopologyEntry> ManagerAdaptor::GetTopology() {
    return guarded("GetTopology", [&] {
        const MachineState& state = backend_.state();
        CpuSet cpus = state.present;
        for (const auto& [cpu, topo] : state.topology) {
            cpus.add(cpu);
        }
        std::vector<TopologyEntry> entries;
        for (const unsigned cpu : cpus.members()) {
            CpuTopology topo;
            if (const auto it = state.topology.find(cpu); it != state.topology.end()) {
                topo = it->second;
            }
            entries.emplace_back(static_cast<uint32_t>(cpu), static_cast<int32_t>(topo.package),
                                 static_cast<int32_t>(topo.die), static_cast<int32_t>(topo.core),
                                 static_cast<int32_t>(topo.node), topo.siblings.to_string(),
                                 state.online.contains(cpu), state.hotpluggable.contains(cpu));
        }
        return entries;
    });
}

std::string ManagerAdaptor::Online() {
    return guarded("Get Online", [&] { return backend_.state().online.to_string(); });
}

std::string ManagerAdaptor::Offline() {
    return guarded("Get Offline", [&] { return backend_.state().offline().to_string(); });
}

std::string ManagerAdaptor::Possible() {
    return guarded("Get Possible", [&] { return backend_.state().possible.to_string(); });
}

std::string ManagerAdaptor::Present() {
    return guarded("Get Present", [&] { return backend_.state().present.to_string(); });
}

std::string ManagerAdaptor::Protected() {
    return guarded("Get Protected", [&] { return backend_.settings().protected_cpus.to_string(); });
}

std::string ManagerAdaptor::SmtControl() {
    return guarded("Get SmtControl", [&] { return backend_.state().smt_control; });
}

std::vector<std::string> ManagerAdaptor::Capabilities() {
    return guarded("Get Capabilities", [&] { return capability_names(backend_.state()); });
}

bool ManagerAdaptor::Busy() {
    return guarded("Get Busy", [&] { return backend_.busy(); });
}

std::map<std::string, sdbus::Variant> ManagerAdaptor::LastRecovery() {
    return guarded("Get LastRecovery", [&] {
        const RecoveryReport& r = backend_.last_recovery();
        std::map<std::string, sdbus::Variant> out;
        out[dbus::kRecoveryOutcome] = sdbus::Variant(to_string(r.outcome));
        out[dbus::kRecoverySummary] = sdbus::Variant(r.summary);
        out[dbus::kRecoveryTime] = sdbus::Variant(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(r.when.time_since_epoch())
                .count()));
        switch (r.outcome) {
            case RecoveryOutcome::None:
                break;
            case RecoveryOutcome::Rejected:
                out[dbus::kRecoveryMovedTo] = sdbus::Variant(r.moved_to);
                break;
            case RecoveryOutcome::Finished:
            case RecoveryOutcome::Stale:
            case RecoveryOutcome::Recovered:
                out[dbus::kRecoveryBatchId] = sdbus::Variant(static_cast<uint64_t>(r.batch_id));
                out[dbus::kRecoveryAction] = sdbus::Variant(to_string(r.action));
                out[dbus::kRecoveryStrategy] = sdbus::Variant(to_string(r.strategy));
                out[dbus::kRecoveryPlanned] = sdbus::Variant(r.planned.to_string());
                out[dbus::kRecoveryFound] = sdbus::Variant(r.found.to_string());
                out[dbus::kRecoveryRestored] = sdbus::Variant(r.restored.to_string());
                out[dbus::kRecoveryKept] = sdbus::Variant(r.kept.to_string());
                out[dbus::kRecoveryFailed] = sdbus::Variant(r.failed.to_string());
                out[dbus::kRecoveryRcuExpeditedRestored] = sdbus::Variant(r.rcu_expedited_restored);
                out[dbus::kRecoverySmtControlRestored] = sdbus::Variant(r.smt_control_restored);
                break;
        }
        return out;
    });
}

std::vector<ManagerAdaptor::HoldEntry> ManagerAdaptor::Holds() {
    return guarded("Get Holds", [&] { return to_dbus(backend_.holds()); });
}

std::string ManagerAdaptor::ActiveProfile() {
    return guarded("Get ActiveProfile", [&] {
        const auto active = backend_.active_profile();
        return active ? active->name : std::string();
    });
}

std::string ManagerAdaptor::ProfileCpus() {
    return guarded("Get ProfileCpus", [&] {
        const auto active = backend_.active_profile();
        return active ? active->taken.to_string() : std::string();
    });
}

std::vector<sdbus::Struct<std::string, std::string, bool, uint32_t>> ManagerAdaptor::Profiles() {
    return guarded("Get Profiles", [&] {
        std::vector<sdbus::Struct<std::string, std::string, bool, uint32_t>> entries;
        for (const auto& [name, profile] : backend_.profiles()) {
            entries.emplace_back(name, profile.offline, profile.smt_off,
                                 static_cast<uint32_t>(profile.min_online_per_node));
        }
        return entries;
    });
}

void ManagerAdaptor::announce_holds() {
    try {
        emitHoldsChanged(to_dbus(backend_.holds()));
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot emit HoldsChanged: ") + error.what());
    }
}

std::map<std::string, std::string> ManagerAdaptor::property_texts() {
    const MachineState& state = backend_.cached_state();
    std::string capabilities;
    for (const auto& name : capability_names(state)) {
        capabilities += name + " ";
    }
    const auto active = backend_.active_profile();
    return {
        {dbus::kPropertyOnline, state.online.to_string()},
        {dbus::kPropertyOffline, state.offline().to_string()},
        {dbus::kPropertyPossible, state.possible.to_string()},
        {dbus::kPropertyPresent, state.present.to_string()},
        {dbus::kPropertySmtControl, state.smt_control},
        {dbus::kPropertyCapabilities, capabilities},
        {dbus::kPropertyBusy, backend_.busy() ? "true" : "false"},
        {dbus::kPropertyHolds,
         [this] {
             std::string text;
             for (const auto& hold : backend_.holds()) {
                 text += std::to_string(hold.id) + ":" + hold.cpus.to_string() + " ";
             }
             return text;
         }()},
        {dbus::kPropertyActiveProfile, active ? active->name : std::string()},
        {dbus::kPropertyProfileCpus, active ? active->taken.to_string() : std::string()},
    };
}

void ManagerAdaptor::announce_changes() {
    auto now = property_texts();
    std::vector<std::string> changed;
    for (const auto& [name, value] : now) {
        if (announced_[name] != value) {
            changed.push_back(name);
        }
    }
    announced_ = std::move(now);
    if (changed.empty()) {
        return;
    }
    try {
        emitPropertiesChangedSignal(org::cpuhpd1::Manager_adaptor::INTERFACE_NAME, changed);
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot emit PropertiesChanged: ") + error.what());
    }
}

}  // namespace cpuhpd
