#include "polkitd.h"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "files.h"
#include "raw_client.h"

namespace cpuhpd::itest {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPolkitd = "/usr/lib/polkit-1/polkitd";
constexpr const char* kUnshare = "/usr/bin/unshare";
constexpr const char* kPolkitName = "org.freedesktop.PolicyKit1";

// Run inside the new mount namespace (private propagation: unshare's default), so the
// bind mounts vanish with polkitd.
constexpr const char* kMountAndRun =
    "mount --bind \"$1\" /usr/share/polkit-1/actions && "
    "mount --bind \"$2\" /etc/polkit-1/rules.d && exec \"$3\" --no-debug";

}  // namespace

std::string Polkitd::unavailable_reason() {
    if (::geteuid() != 0) {
        return "needs root for a mount namespace with the test's polkit rules";
    }
    for (const char* program : {kPolkitd, kUnshare}) {
        if (::access(program, X_OK) != 0) {
            return std::string(program) + " is missing (scripts/install-deps.sh installs it)";
        }
    }
    for (const char* dir : {"/usr/share/polkit-1/actions", "/etc/polkit-1/rules.d"}) {
        if (!fs::is_directory(dir)) {
            return std::string(dir) + " is missing (package polkitd)";
        }
    }
    // A container may forbid mount namespaces even to root.
    const std::string probe = std::string(kUnshare) + " -m /bin/true >/dev/null 2>&1";
    if (std::system(probe.c_str()) != 0) {
        return "unshare -m fails here: no private mount namespace for the test's polkit rules";
    }
    return {};
}

void Polkitd::start(const fs::path& dir, const std::string& bus_address, const std::string& rules,
                    const std::vector<fs::path>& extra_actions) {
    const fs::path actions = dir / "polkit-actions";
    const fs::path rules_dir = dir / "polkit-rules";
    fs::create_directories(actions);
    fs::create_directories(rules_dir);
    const fs::path policy = source_dir() / "dbus/org.cpuhpd1.policy";
    write_file(actions / "org.cpuhpd1.policy", read_file(policy));
    for (const fs::path& file : extra_actions) {
        write_file(actions / file.filename(), read_file(file));
    }
    write_file(rules_dir / "50-cpuhpd-test.rules", rules);
    // polkitd may run as its own user: let it read what it needs.
    for (const fs::path& path : {actions, rules_dir}) {
        fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
    }
    daemon_.start({kUnshare, "-m", "/bin/sh", "-c", kMountAndRun, "sh", actions.string(),
                   rules_dir.string(), kPolkitd},
                  {{"DBUS_SYSTEM_BUS_ADDRESS", bus_address}}, dir / "polkitd.out",
                  dir / "polkitd.err");
    wait_for_owner(bus_address, kPolkitName, daemon_, 30s);
}

}  // namespace cpuhpd::itest
