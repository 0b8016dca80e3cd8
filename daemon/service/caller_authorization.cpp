#include "caller_authorization.h"

#include <unistd.h>

#include <utility>

#include "dbus_error.h"
#include "log.h"
#include "names.h"

namespace cpuhpd {

namespace {

// How long the bus driver may take to say who a caller is.
constexpr std::uint64_t kCredentialsTimeoutUs = 5'000'000;

}  // namespace

CallerAuthorization::CallerAuthorization(sdbus::IConnection& connection)
    : bus_driver_(sdbus::createProxy(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus")),
      polkit_(connection) {}

// The caller's uid as the bus verified it: UnixUserID of
// org.freedesktop.DBus.GetConnectionCredentials, which the bus took from the socket
// (SO_PEERCRED) when the caller connected. Never looked up by PID (/proc/PID may belong to
// another process by now). Empty, with `why` set, when the bus gives none.
std::optional<uid_t> CallerAuthorization::verified_uid(const sdbus::Message* message,
                                                       std::string& why) const {
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
void CallerAuthorization::authorize(const sdbus::Message* message, const std::string& sender,
                                    const char* action, const char* what,
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
    const std::optional<uid_t> uid = verified_uid(message, why);
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

}  // namespace cpuhpd
