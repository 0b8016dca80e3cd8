// Asks polkit (org.freedesktop.PolicyKit1) whether a bus caller may do one of cpuhpd's
// actions (dbus/org.cpuhpd1.policy), without blocking the main thread: CheckAuthorization
// is called asynchronously on the daemon's own connection and the verdict comes back on the
// thread that processes it.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace cpuhpd {

// The polkit actions of dbus/org.cpuhpd1.policy.
inline constexpr const char* kActionChangeCpus = "org.cpuhpd1.change-cpus";
inline constexpr const char* kActionSwitchSmt = "org.cpuhpd1.switch-smt";
inline constexpr const char* kActionHoldCpus = "org.cpuhpd1.hold-cpus";
inline constexpr const char* kActionApplyProfile = "org.cpuhpd1.apply-profile";

struct PolkitVerdict {
    enum class Kind {
        Authorized,
        // polkit would ask the user to authenticate, but the caller did not allow interaction.
        ChallengeNeeded,
        Denied,
        // polkit could not be asked (not on the bus, failed, timed out).
        Unavailable,
    };
    Kind kind = Kind::Denied;
    std::string detail;  // what polkit or the bus said, for Unavailable
};

// Whether the call's sender set ALLOW_INTERACTIVE_AUTHORIZATION in its message header.
bool allows_interactive_authorization(const sdbus::Message& call);

class PolkitAuthority {
public:
    explicit PolkitAuthority(sdbus::IConnection& connection);

    // Asks whether bus name `sender` may do `action`; `details` are shown in an
    // authentication dialog. `done` is called exactly once, later, on the connection's
    // thread; it must not throw.
    void check(const std::string& action, const std::string& sender, bool interactive,
               const std::map<std::string, std::string>& details,
               std::function<void(PolkitVerdict)> done);

private:
    std::unique_ptr<sdbus::IProxy> authority_;
};

}  // namespace cpuhpd
