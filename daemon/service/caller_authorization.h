// Who may change CPU state: the caller's uid as the bus vouches for it, then polkit. The
// adaptor asks before it hands a changing call to the engine. Main thread.
#pragma once

#include <sdbus-c++/sdbus-c++.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "polkit_authority.h"

namespace cpuhpd {

class CallerAuthorization {
public:
    explicit CallerAuthorization(sdbus::IConnection& connection);

    // Runs `proceed` once the caller of `message` (bus name `sender`) may do polkit `action`:
    // at once for uid 0 (and the daemon's own user), else when polkit says so. Otherwise
    // `refuse` gets AccessDenied (InteractiveAuthorizationRequired when polkit would ask
    // and the caller did not allow it). What `proceed` throws goes to `refuse` as well.
    // `what` (the call) and `details` (shown by an authentication dialog) describe it.
    void authorize(const sdbus::Message* message, const std::string& sender, const char* action,
                   const char* what, const std::map<std::string, std::string>& details,
                   std::function<void()> proceed, std::function<void(const sdbus::Error&)> refuse);

    // The uid of the caller of `message` as the bus verified it; nullopt (with `why`) when
    // the bus gives none.
    std::optional<uid_t> verified_uid(const sdbus::Message* message, std::string& why) const;

private:
    std::unique_ptr<sdbus::IProxy> bus_driver_;  // org.freedesktop.DBus, for credentials
    PolkitAuthority polkit_;  // last: its pending checks (which use the caller's objects) end first
};

}  // namespace cpuhpd
