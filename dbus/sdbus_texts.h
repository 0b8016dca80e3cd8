// What sdbus-c++ 1.2 tells only in the text of its exceptions, for the daemon's event loop and
// cpuctl alike (both link sdbus-c++ through the cpuhpd_dbus target).
#pragma once

#include <sdbus-c++/Error.h>

namespace cpuhpd::dbus {

// The text that starts sdbus-c++ 1.2's exception when sd_bus_process() itself fails.
inline constexpr const char* kBusProcessingFailed = "Failed to process bus requests";

// `error` says that sd_bus_process() failed, i.e. the connection is lost; any other error
// out of processPendingRequest() is a handler's, or the generated glue's decoding one message.
inline bool bus_processing_failed(const sdbus::Error& error) {
    return error.getMessage().rfind(kBusProcessingFailed, 0) == 0;
}

}  // namespace cpuhpd::dbus
