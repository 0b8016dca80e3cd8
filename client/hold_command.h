// `cpuctl offline|online MASK -- COMMAND`: hold the CPUs while COMMAND runs, then restore
// them, as `systemd-inhibit COMMAND` holds an inhibitor lock.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "daemon_client.h"

namespace cpuctl {

// Takes the hold, runs `command`, releases the hold (waiting for the restore) and returns
// `command`'s exit status (run_command.h). What cpuctl says goes to stderr: stdout is
// COMMAND's. `taken` is called once the hold's change is done (to clear a progress line).
// Throws DaemonError when the hold cannot be taken (COMMAND does not run then).
int run_held(DaemonClient& client, const HoldRequest& request,
             const std::vector<std::string>& command, const ProgressFn& progress,
             const std::function<void()>& taken);

// The default `why` of such a hold: "cpuctl offline 4-7 -- ./update.sh --fast", printable
// and at most 256 bytes, as the daemon takes it.
std::string command_line(const std::string& action, const std::string& mask,
                         const std::vector<std::string>& command);

}  // namespace cpuctl
