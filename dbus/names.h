// D-Bus names shared by the daemon and cpuctl.
#pragma once

namespace cpuhpd::dbus {

inline constexpr const char* kBusName = "org.cpuhpd1";
inline constexpr const char* kObjectPath = "/org/cpuhpd1";
inline constexpr const char* kInterface = "org.cpuhpd1.Manager";
inline constexpr const char* kErrorPrefix =
    "org.cpuhpd1.Error.";  // + InvalidMask, ProtectedCpu, ...

}  // namespace cpuhpd::dbus
