// `cpuctl profile list|show|apply|revert`: the config's power profiles through ApplyProfile,
// RevertProfile and the Profiles and ActiveProfile properties.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "daemon_client.h"

namespace cpuctl {

struct ProfileCommand {
    CLI::App* profile = nullptr;
    CLI::App* list = nullptr;
    CLI::App* show = nullptr;
    CLI::App* apply = nullptr;
    CLI::App* revert = nullptr;
    std::string name;
    std::string strategy;
    bool dry_run = false;
    bool refuse_pinned = false;  // apply only
    bool force = false;          // apply only
};

// Adds the commands to `app`; `command` must outlive the parse.
void add_profile_command(CLI::App& app, ProfileCommand& command);

// Runs the parsed command; returns the exit status (exit_codes.h). Throws DaemonError.
int run_profile_command(DaemonClient& client, const ProfileCommand& command, bool json);

}  // namespace cpuctl
