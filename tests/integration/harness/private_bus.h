// A private dbus-daemon for one test, configured from tests/integration/bus/*.conf.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "child.h"

namespace cpuhpd::itest {

class PrivateBus {
public:
    // Starts dbus-daemon with its socket, configuration and logs in `dir`, and waits (bounded)
    // for its printed address. With `project_policy` the bus denies method calls by default,
    // as the system bus does, and includes the project's dbus/org.cpuhpd1.conf (system-like.conf);
    // otherwise everything is allowed (permissive.conf). `extra_config` is inserted inside
    // <busconfig> (e.g. <limit> elements for the benchmark's 1000 callers).
    void start(const std::filesystem::path& dir, bool project_policy,
               const std::string& extra_config,
               const std::map<std::string, std::optional<std::string>>& env);
    void stop() { daemon_.stop(); }
    const std::string& address() const { return address_; }

private:
    Child daemon_;
    std::string address_;
};

}  // namespace cpuhpd::itest
