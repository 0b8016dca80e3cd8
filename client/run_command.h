// Runs a command as cpuctl's child and waits for it, as systemd-inhibit does, so that cpuctl
// outlives it and can undo what it did before (release a hold).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "daemon_client.h"

namespace cpuctl {

// Something cpuctl serves while the command runs (the bus: a hold's re-attach): what to poll
// for, and what to do when it is ready or its timeout passed.
struct CommandCompanion {
    std::function<PollSpec()> poll;
    std::function<void()> ready;
};

// Runs `command` (argv; found on PATH) and returns its exit status as a shell reports it:
// its exit code, 128 + N when signal N killed it, 127 when it was not found, 126 when it
// could not be run (a message on stderr says why). SIGINT, SIGTERM, SIGHUP and SIGQUIT sent
// to cpuctl meanwhile do not end cpuctl: they are passed on to the command (a terminal's
// Ctrl-C, which reaches the command too, is not sent twice), and cpuctl waits for it.
// With `companion`, it is served meanwhile (what it throws is its own to catch).
int run_command(const std::vector<std::string>& command,
                const CommandCompanion* companion = nullptr);

}  // namespace cpuctl
