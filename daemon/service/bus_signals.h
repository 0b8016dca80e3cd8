// The signals the daemon receives, checked and decoded in one place. Every signal handler
// of the daemon is made by guarded_handler(), so that:
// - a signal is taken only from the connection it must come from: dbus-daemon sets the
//   sender of every message (the bus driver's own signals have the sender
//   org.freedesktop.DBus, which no client can own), but delivers unicast signals whatever the
//   match rules say, and sd-bus does not check a well-known sender of a match locally;
// - nothing a handler throws reaches the event loop, which would take it for a failed
//   connection: a malformed message is logged (rate-limited) and dropped.
// The decoders below need no bus (the fuzz target feeds them plain messages).
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cpuhpd {

inline constexpr const char* kBusDriver = "org.freedesktop.DBus";
inline constexpr const char* kBusDriverPath = "/org/freedesktop/DBus";
// GetNameOwner's answer for a name nobody owns.
inline constexpr const char* kNameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner";

// org.freedesktop.DBus.NameOwnerChanged (sss).
struct NameOwnerChange {
    std::string name;
    std::string old_owner;
    std::string new_owner;
};
// nullopt when the body is not three strings.
std::optional<NameOwnerChange> decode_name_owner_changed(sdbus::Message& message);

// org.freedesktop.DBus.Properties.PropertiesChanged (sa{sv}as), as far as one string property
// `property` of `interface` is concerned.
struct StringPropertyChange {
    std::optional<std::string> value;  // its new value, when the signal carries one
    bool invalidated = false;          // named in the invalidated list: read it again
};
// nullopt when the body is malformed, names another interface, or carries `property` with a
// value that is not a string. A change that leaves `property` alone has neither field set.
std::optional<StringPropertyChange> decode_string_property_change(sdbus::Message& message,
                                                                  const std::string& interface,
                                                                  const std::string& property);

// Why the sender `sender` may not send this signal ("" when it may): `expected` is the bus
// driver's name or a unique name learnt from the bus (GetNameOwner); an empty `expected`
// accepts nobody.
std::string refuse_sender(const std::string& sender, const std::string& expected);

// The signals the daemon takes. Dropped ones are logged at most a few lines per kind every
// 10 s: a bounded set of budgets, whatever the handlers' names say (a hold's id, say).
enum class SignalKind {
    HolderNameOwnerChanged,         // a holder left the bus (hold_links.cpp)
    PowerProfilesNameOwnerChanged,  // power-profiles-daemon came or went
    PowerProfilesChanged,           // its ActiveProfile changed
};

// A signal handler for `connection.addMatch()`: calls `body` for the messages whose sender
// `expected_sender()` accepts (refuse_sender), drops the others, and catches whatever `body`
// throws; both are logged (naming `what`), at most a few lines per `kind` every 10 s.
// `expected_sender` is asked for every message (an owner can change).
sdbus::message_handler guarded_handler(SignalKind kind, std::string what,
                                       std::function<std::string()> expected_sender,
                                       std::function<void(sdbus::Message&)> body);

}  // namespace cpuhpd
