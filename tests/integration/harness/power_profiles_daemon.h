// The real power-profiles-daemon (Debian's package, 0.12) on a test's private bus, as its
// system bus. Without a platform driver it offers power-saver and balanced (its placeholder
// driver). It runs in a private mount namespace (unshare -m) so that what it would write
// on the machine stays in the test's directory: its state file (/var/lib is the test's
// directory there) and battery charge settings (/sys/class/power_supply is empty there);
// UMOCKDEV_DIR points its CPU drivers (intel_pstate, platform_profile) at an empty tree, so
// it never changes the host's CPU settings either.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "child.h"

namespace cpuhpd::itest {

class PowerProfilesDaemon {
public:
    static constexpr const char* kName = "net.hadess.PowerProfiles";
    // Its polkit actions (net.hadess.PowerProfiles.switch-profile guards Set ActiveProfile).
    static constexpr const char* kActions =
        "/usr/share/polkit-1/actions/net.hadess.PowerProfiles.policy";

    // Why it cannot run here, or "" when it can (root, the daemon, powerprofilesctl with
    // python3-gi, unshare -m).
    static std::string unavailable_reason();

    // Starts it on the bus at `bus_address` and waits (bounded) until it owns its name. Files
    // and logs go into `dir`. Throws std::runtime_error with its output when it exits early
    // or never appears.
    void start(const std::filesystem::path& dir, const std::string& bus_address);
    void stop() { daemon_.stop(); }
    std::string log() const { return daemon_.out() + daemon_.err(); }

    // Runs powerprofilesctl (e.g. {"set", "power-saver"}) against the same bus, bounded.
    RunResult ctl(const std::vector<std::string>& args);

private:
    Child daemon_;
    std::filesystem::path dir_;
    std::string bus_address_;
    unsigned runs_ = 0;
};

}  // namespace cpuhpd::itest
