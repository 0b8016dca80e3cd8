// Engine exceptions as D-Bus errors: the name a client matches on and a message sd-bus can
// always send. Needs no bus, so the mapping is tested on its own.
#pragma once

#include <sdbus-c++/Error.h>

#include <exception>
#include <string>

#include "request.h"

namespace cpuhpd {

inline constexpr const char* kInvalidArgs = "org.freedesktop.DBus.Error.InvalidArgs";
inline constexpr const char* kAccessDenied = "org.freedesktop.DBus.Error.AccessDenied";
inline constexpr const char* kFailed = "org.freedesktop.DBus.Error.Failed";

// "org.cpuhpd1.Error.<Kind>" for a refusal.
std::string error_name(RefusalKind kind);

// An error that sd-bus can always send: a message of printable ASCII (invalid UTF-8 makes
// sd-bus refuse the reply and drop it), bounded.
sdbus::Error sendable(const std::string& name, const std::string& message);

// The D-Bus error for an exception thrown by the engine or a handler (`what`: the call, for
// the log when the failure was unexpected).
sdbus::Error to_dbus_error(const char* what, const std::exception_ptr& thrown);

}  // namespace cpuhpd
