// Engine exceptions as D-Bus errors: the name a client matches on and a message sd-bus can
// always send. Needs no bus, so the mapping is tested on its own.
#pragma once

#include <sdbus-c++/Error.h>

#include <exception>
#include <string>

#include "names.h"
#include "request.h"

namespace cpuhpd {

// The standard error names, from dbus/names.h where cpuctl and the tests read them too.
inline constexpr const char* kInvalidArgs = dbus::kErrorInvalidArgs;
inline constexpr const char* kAccessDenied = dbus::kErrorAccessDenied;
inline constexpr const char* kFailed = dbus::kErrorFailed;
// "org.cpuhpd1.Error.<Kind>": the D-Bus error name of a refusal.
inline std::string error_name(RefusalKind kind) {
    return dbus::error_name(to_string(kind));
}

// An error that sd-bus can always send: a message of printable ASCII (invalid UTF-8 makes
// sd-bus refuse the reply and drop it), bounded.
sdbus::Error sendable(const std::string& name, const std::string& message);

// The D-Bus error for an exception thrown by the engine or a handler (`what`: the call, for
// the log when the failure was unexpected).
sdbus::Error to_dbus_error(const char* what, const std::exception_ptr& thrown);

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

}  // namespace cpuhpd
