#include "polkit_authority.h"

#include <systemd/sd-bus.h>

#include <exception>
#include <tuple>
#include <utility>

#include "log.h"

namespace cpuhpd {

namespace {

constexpr const char* kPolkitService = "org.freedesktop.PolicyKit1";
constexpr const char* kAuthorityPath = "/org/freedesktop/PolicyKit1/Authority";
constexpr const char* kAuthorityInterface = "org.freedesktop.PolicyKit1.Authority";
// CheckAuthorizationFlags: AllowUserInteraction.
constexpr std::uint32_t kAllowUserInteraction = 1;
// polkit answers at once unless it asks a user; a user typing a password gets longer.
constexpr std::uint64_t kCheckTimeoutUs = 25'000'000;
constexpr std::uint64_t kInteractiveTimeoutUs = 300'000'000;

// sdbus-c++ 1.2 has no accessor for the header flag, and keeps the sd_bus_message in a
// protected member; a pointer to that member named through a derived class reads it
// without casting the message to a type it is not.
struct MessageInternals : sdbus::Message {
    static sd_bus_message* raw(const sdbus::Message& message) {
        return static_cast<sd_bus_message*>(message.*(&MessageInternals::msg_));
    }
};

using Subject = sdbus::Struct<std::string, std::map<std::string, sdbus::Variant>>;
using AuthorizationResult = sdbus::Struct<bool, bool, std::map<std::string, std::string>>;

}  // namespace

bool allows_interactive_authorization(const sdbus::Message& call) {
    sd_bus_message* raw = MessageInternals::raw(call);
    return raw != nullptr && sd_bus_message_get_allow_interactive_authorization(raw) > 0;
}

PolkitAuthority::PolkitAuthority(sdbus::IConnection& connection)
    : authority_(sdbus::createProxy(connection, kPolkitService, kAuthorityPath)) {}

void PolkitAuthority::check(const std::string& action, const std::string& sender, bool interactive,
                            const std::map<std::string, std::string>& details,
                            std::function<void(PolkitVerdict)> done) {
    const Subject subject{"system-bus-name", {{"name", sdbus::Variant(sender)}}};
    const std::uint32_t flags = interactive ? kAllowUserInteraction : 0;
    auto reply = [done](const sdbus::Error* error, AuthorizationResult result) {
        PolkitVerdict verdict;
        if (error != nullptr) {
            verdict.kind = PolkitVerdict::Kind::Unavailable;
            verdict.detail = error->getName() + ": " + error->getMessage();
        } else if (std::get<0>(result)) {
            verdict.kind = PolkitVerdict::Kind::Authorized;
        } else if (std::get<1>(result)) {
            verdict.kind = PolkitVerdict::Kind::ChallengeNeeded;
        } else {
            verdict.kind = PolkitVerdict::Kind::Denied;
        }
        done(std::move(verdict));
    };
    try {
        authority_->callMethodAsync("CheckAuthorization")
            .onInterface(kAuthorityInterface)
            .withTimeout(interactive ? kInteractiveTimeoutUs : kCheckTimeoutUs)
            .withArguments(subject, action, details, flags, std::string())
            .uponReplyInvoke(std::move(reply));
    } catch (const sdbus::Error& error) {
        // Not even sent (the connection broke): answer now, as the reply would have.
        done(PolkitVerdict{PolkitVerdict::Kind::Unavailable,
                           error.getName() + ": " + error.getMessage()});
    }
}

}  // namespace cpuhpd
