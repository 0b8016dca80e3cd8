#include "manager_adaptor.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <utility>

#include "dbus_conversions.h"
#include "dbus_error.h"
#include "input.h"
#include "log.h"
#include "names.h"
#include "option_decoding.h"
#include "sysfs.h"

namespace cpuhpd {

namespace {

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
      authorization_(connection) {
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

void ManagerAdaptor::authorize(const char* action, const char* what,
                               const std::map<std::string, std::string>& details,
                               std::function<void()> proceed,
                               std::function<void(const sdbus::Error&)> refuse) {
    authorization_.authorize(getObject().getCurrentlyProcessedMessage(), caller(), action, what,
                             details, std::move(proceed), std::move(refuse));
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
        {
            std::string why_no_uid;
            const auto uid =
                authorization_.verified_uid(getObject().getCurrentlyProcessedMessage(), why_no_uid);
            if (uid) {
                ask.uid = static_cast<std::uint32_t>(*uid);
            }
        }
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

void ManagerAdaptor::AttachHold(sdbus::Result<sdbus::UnixFd>&& result, uint64_t hold_id) {
    guarded("AttachHold", [&] {
        using Call = sdbus::Result<sdbus::UnixFd>;
        auto reply = std::make_shared<Call>(std::move(result));
        auto attach = [this, reply, hold_id, sender = caller()] {
            sdbus::UnixFd fd = backend_.attach_hold(hold_id, sender);
            reply_or_fail(*reply, [&] { reply->returnResults(fd); });
        };
        const auto holds = backend_.holds();
        const auto hold = std::find_if(holds.begin(), holds.end(),
                                       [&](const Hold& h) { return h.id == hold_id; });
        if (hold == holds.end()) {
            throw Refusal(RefusalKind::NoSuchHold, "no hold " + std::to_string(hold_id) +
                                                       " exists (it ended, or never was)");
        }
        // The uid that took the hold may always attach it again; anyone else needs the
        // right to take holds (uid 0 passes at once, others ask polkit).
        std::string why;
        const auto uid =
            authorization_.verified_uid(getObject().getCurrentlyProcessedMessage(), why);
        if (uid && hold->uid && *uid == *hold->uid) {
            attach();
        } else {
            authorize(kActionHoldCpus, "AttachHold", {{"hold", std::to_string(hold_id)}},
                      std::move(attach), refuser(reply));
        }
    });
}

void ManagerAdaptor::announce_violation(const HoldViolation& violation) {
    try {
        emitHoldViolated(violation.hold_id, violation.who, violation.holder,
                         violation.cpus.to_string(), violation.online.to_string(), violation.action,
                         violation.count);
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot emit HoldViolated: ") + error.what());
    }
}

void ManagerAdaptor::profile_change(ChangeResult&& result, ProfileAsk ask, const char* what) {
    ask.caller = caller();
    auto reply = std::make_shared<ChangeResult>(std::move(result));
    const bool dry_run = ask.dry_run;
    const std::map<std::string, std::string> details{{"profile", ask.name}};
    auto run = [this, reply, what, ask = std::move(ask)] {
        backend_.apply_profile(ask, [reply, what](ProfileAnswer answer) {
            reply_with(*reply, what, answer, [&](const ProfileDone& done) {
                reply->returnResults(to_dbus(done.cpus), summary_of(done));
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
    return guarded("GetTopology", [&] { return topology_of(backend_.state()); });
}

}  // namespace cpuhpd
