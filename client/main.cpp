// cpuctl: the command-line client of cpuhpd. Parses the command line (CLI11) and dispatches
// to the command's file (change_command.cpp, query_commands.h, profile_command.cpp), which
// calls the daemon through DaemonClient and prints a table or, with --json, the shapes of
// docs/interface.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "change_command.h"
#include "command_word.h"
#include "daemon_client.h"
#include "exit_codes.h"
#include "map_command.h"
#include "names.h"
#include "parsed.h"
#include "profile_command.h"
#include "query_commands.h"
#include "render_json.h"
#include "render_table.h"

#ifndef CPUHPD_VERSION
#define CPUHPD_VERSION "unknown"
#endif

namespace {

constexpr const char* kExitHelp = R"(
Exit status: 0 all done, 1 failed (nothing left changed) or daemon/D-Bus error,
2 usage error or input the daemon refused, 64 partial success (--best-effort).)";

// The global options and every command, as parsed.
struct Args {
    bool json = false;
    double timeout_s = 600.0;
    std::string bus_address;
    cpuctl::ChangeCommand change;
    cpuctl::StatusCommand status;
    cpuctl::TopologyCommand topology;
    cpuctl::CancelCommand cancel;
    cpuctl::HoldsCommand holds;
    cpuctl::ReleaseCommand release;
    cpuctl::ProfileCommand profile;
    cpuctl::WatchCommand watch;
    bool map = false;  // topology --map, status --map
    bool no_color = false;
};

void add_global_options(CLI::App& app, Args& a) {
    app.require_subcommand(1);
    app.fallthrough();  // global options are accepted after the subcommand too
    app.set_help_all_flag("--help-all", "help on every command");
    app.set_version_flag("--version", std::string("cpuctl ") + CPUHPD_VERSION);
    app.footer(std::string(cpuctl::kMaskHelp) + "\n" + cpuctl::kBatchExamples +
               "\n  cpuctl plan offline smt\n" +
               "  cpuctl smt off\n  cpuctl cancel\n  cpuctl status\n  cpuctl --json topology\n" +
               "  cpuctl profile apply evacuate-package-1\n  cpuctl --json watch\n" + kExitHelp);
    app.add_flag("--json", a.json, "print JSON (docs/interface.md shapes) instead of tables");
    app.add_option("--timeout", a.timeout_s,
                   "how long any command waits for the daemon, in seconds; exit 1 when it "
                   "passes (batches on big machines take minutes)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_option("--bus-address", a.bus_address,
                   "D-Bus address of the bus cpuhpd is on (default: $DBUS_SYSTEM_BUS_ADDRESS, "
                   "else the system bus)");
}

// cpuctl's commands, in the order `cpuctl --help` lists them, with the words that name
// them.
struct CommandGroup {
    std::array<std::string_view, 3> names;  // "" fills the rest
    void (*add)(CLI::App&, Args&);
};
const CommandGroup kCommands[] = {
    {{"offline", "online", "plan"},
     [](CLI::App& app, Args& a) { cpuctl::add_change_commands(app, a.change); }},
    {{"status"}, [](CLI::App& app, Args& a) { cpuctl::add_status_command(app, a.status); }},
    {{"topology"}, [](CLI::App& app, Args& a) { cpuctl::add_topology_command(app, a.topology); }},
    {{"smt"}, [](CLI::App& app, Args& a) { cpuctl::add_smt_command(app, a.change); }},
    {{"cancel"}, [](CLI::App& app, Args& a) { cpuctl::add_cancel_command(app, a.cancel); }},
    {{"holds"}, [](CLI::App& app, Args& a) { cpuctl::add_holds_command(app, a.holds); }},
    {{"release"}, [](CLI::App& app, Args& a) { cpuctl::add_release_command(app, a.release); }},
    {{"profile"}, [](CLI::App& app, Args& a) { cpuctl::add_profile_command(app, a.profile); }},
    {{"watch"}, [](CLI::App& app, Args& a) { cpuctl::add_watch_command(app, a.watch); }},
};

// The command `word` names, or every command when it names none (help, a usage error).
// Building only the one named spares cpuctl's start the construction of every other
// command's options: CLI11 builds each as an object of its own.
void add_commands(CLI::App& app, Args& a, std::string_view word) {
    const auto names = [word](const CommandGroup& g) {
        return !word.empty() && std::find(g.names.begin(), g.names.end(), word) != g.names.end();
    };
    const bool known = std::any_of(std::begin(kCommands), std::end(kCommands), names);
    for (const auto& group : kCommands) {
        if (!known || names(group)) {
            group.add(app, a);
        }
    }
    for (auto* sub : {a.status.command, a.topology.command}) {
        if (sub != nullptr) {
            sub->add_flag("--map", a.map,
                          "draw the machine: packages, cores, threads and their state");
            sub->add_flag("--no-color", a.no_color,
                          "--map without colour (none when not a terminal)");
        }
    }
}

// argv up to the first "--"; what follows it goes to `command`.
std::vector<char*> split_command(int argc, char** argv, std::vector<std::string>& command) {
    std::vector<char*> own;
    int i = 0;
    for (; i < argc; ++i) {
        if (i > 0 && std::string(argv[i]) == "--") {
            break;
        }
        own.push_back(argv[i]);
    }
    for (++i; i < argc; ++i) {
        command.emplace_back(argv[i]);
    }
    return own;
}

int report_error(const cpuctl::ErrorInfo& e, const std::string& bus, bool json,
                 std::optional<int> exit_code = std::nullopt) {
    if (json) {
        std::cout << cpuctl::error_json(e) << std::endl;
    }
    std::cerr << "cpuctl: " << cpuctl::describe_error(e, bus) << std::endl;
    return exit_code ? *exit_code : cpuctl::exit_code_for_error(e.name);
}

bool argv_has_json(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--json") {
            return true;
        }
    }
    return false;
}

// A command line CLI11 refused (or --help, --version): prints what fits, returns the status.
int parse_failed(const CLI::ParseError& e, CLI::App& app, int argc, char** argv) {
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && app.get_subcommands().empty()) {
        // No command: the usage with the command list; a word that is no command: say so.
        const auto rest = app.remaining();
        const std::string message =
            rest.empty() ? "a command is required" : "unknown command '" + rest.front() + "'";
        if (argv_has_json(argc, argv)) {
            std::cout << cpuctl::error_json({cpuctl::kUsageError, message}) << std::endl;
        }
        std::cerr << "cpuctl: " << message << "\n";
        if (rest.empty()) {
            std::cerr << "\n" << app.help();
        } else {
            std::cerr << "Run with --help for the commands.\n";
        }
        return cpuctl::kExitUsage;
    }
    int rc = app.exit(e);  // prints help (rc 0) or the error and a hint
    if (rc == 0) {
        return cpuctl::kExitOk;
    }
    if (argv_has_json(argc, argv)) {
        std::cout << cpuctl::error_json({cpuctl::kUsageError, e.what()}) << std::endl;
    }
    return cpuctl::kExitUsage;
}

int dispatch(cpuctl::DaemonClient& client, const Args& a) {
    if (a.map) {
        return cpuctl::run_map_command(client, cpuctl::parsed(a.status.command), a.no_color);
    }
    if (cpuctl::parsed(a.status.command)) {
        return cpuctl::run_status_command(client, a.status, a.json);
    }
    if (cpuctl::parsed(a.cancel.command)) {
        return cpuctl::run_cancel_command(client, a.cancel, a.json);
    }
    if (cpuctl::parsed(a.holds.command)) {
        return cpuctl::run_holds_command(client, a.holds, a.json);
    }
    if (cpuctl::parsed(a.release.command)) {
        return cpuctl::run_release_command(client, a.release, a.json);
    }
    if (cpuctl::parsed(a.profile.profile)) {
        return cpuctl::run_profile_command(client, a.profile, a.json);
    }
    if (cpuctl::parsed(a.watch.command)) {
        return cpuctl::run_watch_command(client.connection(), a.watch, a.json);
    }
    if (cpuctl::parsed(a.topology.command)) {
        return cpuctl::run_topology_command(client, a.topology, a.json);
    }
    return cpuctl::run_change_command(client, a.change, a.json);
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    CLI::App app{"cpuctl: take CPUs offline and online in bulk through the cpuhpd service.",
                 "cpuctl"};
    add_global_options(app, a);
    std::vector<char*> own_args = split_command(argc, argv, a.change.command);
    add_commands(app, a, cpuctl::command_word(own_args));
    try {
        app.parse(static_cast<int>(own_args.size()), own_args.data());
        cpuctl::check_change_command(a.change);
        if (a.map && a.json) {
            throw CLI::ValidationError("--map", "a picture, not JSON: leave out --json");
        }
        cpuctl::check_command_after_dashes(a.change, a.json,
                                           argc > static_cast<int>(own_args.size()));
    } catch (const CLI::ParseError& e) {
        return parse_failed(e, app, argc, argv);
    }

    std::optional<std::string> bus_address;
    if (!a.bus_address.empty()) {
        bus_address = a.bus_address;
    }
    const std::string bus = cpuctl::DaemonClient::describe_bus(bus_address);
    auto timeout = std::chrono::microseconds(static_cast<std::int64_t>(a.timeout_s * 1e6));
    try {
        cpuctl::DaemonClient client(bus_address, timeout);
        return dispatch(client, a);
    } catch (const cpuctl::DaemonError& e) {
        return report_error(e.info(), bus, a.json, e.exit_code());
    } catch (const std::exception& e) {
        return report_error({cpuhpd::dbus::kErrorFailed, e.what()}, bus, a.json);
    }
}
