// The commands of cpuctl that ask the daemon and print its answer: `status`, `topology`,
// `holds`, `release HOLD_ID`, `cancel [BATCH_ID]` and `watch`, each in a file of its own
// (status_command.cpp, topology_command.cpp, holds_command.cpp, release_command.cpp,
// cancel_command.cpp), as add_*_command() (the command line) and run_*_command() (the call).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <iostream>
#include <string>

#include "daemon_client.h"
#include "exit_codes.h"

namespace cpuctl {

// The shape of status, topology and holds: what the daemon answered, printed as JSON
// (`to_json`) or as a table (`render_table`); exit 0.
template <typename Answer>
int print_answer(const Answer& answer, bool json, std::string (*to_json)(const Answer&),
                 void (*render_table)(std::ostream&, const Answer&)) {
    if (json) {
        std::cout << to_json(answer) << std::endl;
    } else {
        render_table(std::cout, answer);
    }
    return kExitOk;
}

struct StatusCommand {
    CLI::App* command = nullptr;
};
void add_status_command(CLI::App& app, StatusCommand& c);
int run_status_command(DaemonClient& client, const StatusCommand& c, bool json);

struct TopologyCommand {
    CLI::App* command = nullptr;
};
void add_topology_command(CLI::App& app, TopologyCommand& c);
int run_topology_command(DaemonClient& client, const TopologyCommand& c, bool json);

struct HoldsCommand {
    CLI::App* command = nullptr;
};
void add_holds_command(CLI::App& app, HoldsCommand& c);
int run_holds_command(DaemonClient& client, const HoldsCommand& c, bool json);

struct ReleaseCommand {
    CLI::App* command = nullptr;
    std::uint64_t hold_id = 0;
};
void add_release_command(CLI::App& app, ReleaseCommand& c);
int run_release_command(DaemonClient& client, const ReleaseCommand& c, bool json);

struct CancelCommand {
    CLI::App* command = nullptr;
    std::uint64_t batch_id = 0;
    bool no_wait = false;
};
void add_cancel_command(CLI::App& app, CancelCommand& c);
int run_cancel_command(DaemonClient& client, const CancelCommand& c, bool json);

// `cpuctl watch` (watch_command.cpp): runs on the client's connection until SIGINT/SIGTERM.
struct WatchCommand {
    CLI::App* command = nullptr;
};
void add_watch_command(CLI::App& app, WatchCommand& c);
int run_watch_command(sdbus::IConnection& connection, const WatchCommand& c, bool json);

}  // namespace cpuctl
