#include "power_profiles_daemon.h"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "files.h"
#include "raw_client.h"

namespace cpuhpd::itest {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDaemon = "/usr/libexec/power-profiles-daemon";
constexpr const char* kCtl = "/usr/bin/powerprofilesctl";
constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kUnshare = "/usr/bin/unshare";

// Inside the new mount namespace (private propagation: unshare's default; the mounts vanish
// with the daemon): $1 over /var/lib (its state.ini goes there), $2, empty, over
// /sys/class/power_supply (its trickle-charge action finds no battery), then the daemon.
constexpr const char* kMountAndRun =
    "mount --bind \"$1\" /var/lib && mkdir -p /var/lib/power-profiles-daemon && "
    "if [ -d /sys/class/power_supply ]; then mount --bind \"$2\" /sys/class/power_supply; fi && "
    "exec \"$3\" --verbose";

}  // namespace

std::string PowerProfilesDaemon::unavailable_reason() {
    if (::geteuid() != 0) {
        return "needs root for a mount namespace that keeps power-profiles-daemon's state in "
               "the test's directory";
    }
    for (const char* program : {kDaemon, kCtl, kPython, kUnshare}) {
        if (::access(program, X_OK) != 0) {
            return std::string(program) +
                   " is missing (scripts/install-deps.sh installs power-profiles-daemon)";
        }
    }
    if (std::system("/usr/bin/python3 -c 'import gi' >/dev/null 2>&1") != 0) {
        return "powerprofilesctl needs python3-gi (scripts/install-deps.sh installs it)";
    }
    if (std::system("/usr/bin/unshare -m /bin/true >/dev/null 2>&1") != 0) {
        return "unshare -m fails here: no private mount namespace for power-profiles-daemon";
    }
    return {};
}

void PowerProfilesDaemon::start(const fs::path& dir, const std::string& bus_address) {
    dir_ = dir;
    bus_address_ = bus_address;
    const fs::path var_lib = dir / "ppd-var-lib";
    const fs::path no_supplies = dir / "ppd-no-power-supply";
    const fs::path no_sysfs = dir / "ppd-umockdev";
    for (const fs::path& path : {var_lib, no_supplies, no_sysfs}) {
        fs::create_directories(path);
    }
    daemon_.start({kUnshare, "-m", "/bin/sh", "-c", kMountAndRun, "sh", var_lib.string(),
                   no_supplies.string(), kDaemon},
                  {{"DBUS_SYSTEM_BUS_ADDRESS", bus_address},
                   {"UMOCKDEV_DIR", no_sysfs.string()},
                   {"POWER_PROFILE_DAEMON_FAKE_DRIVER", std::nullopt}},
                  dir / "ppd.out", dir / "ppd.err");
    wait_for_owner(bus_address, kName, daemon_, 30s);
}

RunResult PowerProfilesDaemon::ctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{kPython, kCtl};
    argv.insert(argv.end(), args.begin(), args.end());
    const unsigned n = ++runs_;
    Child c;
    c.start(argv, {{"DBUS_SYSTEM_BUS_ADDRESS", bus_address_}},
            dir_ / ("powerprofilesctl." + std::to_string(n) + ".out"),
            dir_ / ("powerprofilesctl." + std::to_string(n) + ".err"));
    RunResult rr;
    if (!c.wait_until(Clock::now() + 30s)) {
        c.stop(100ms);
    } else {
        rr.exit_code = c.exit_code();
    }
    rr.out = c.out();
    rr.err = c.err();
    return rr;
}

}  // namespace cpuhpd::itest
