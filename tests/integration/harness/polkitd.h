// A real polkitd on a test's private bus. It reads the project's actions
// (dbus/org.cpuhpd1.policy) and the test's rules, which a private mount namespace
// (unshare -m) puts over /usr/share/polkit-1/actions and /etc/polkit-1/rules.d, so the
// machine's own polkit configuration is neither read nor changed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "child.h"

namespace cpuhpd::itest {

class Polkitd {
public:
    // Why polkitd cannot run here, or "" when it can (root, polkitd and unshare present).
    static std::string unavailable_reason();

    // Starts polkitd with `rules` (JavaScript) as its only rules file, on the bus at
    // `bus_address` (as its system bus), and waits (bounded) until it owns
    // org.freedesktop.PolicyKit1. Files and logs go into `dir`. Throws std::runtime_error
    // with polkitd's output when it exits or never appears.
    // `extra_actions`: more action files (another service's, e.g. power-profiles-daemon's)
    // to put beside the project's.
    void start(const std::filesystem::path& dir, const std::string& bus_address,
               const std::string& rules,
               const std::vector<std::filesystem::path>& extra_actions = {});
    void stop() { daemon_.stop(); }
    std::string log() const { return daemon_.out() + daemon_.err(); }

private:
    Child daemon_;
};

}  // namespace cpuhpd::itest
