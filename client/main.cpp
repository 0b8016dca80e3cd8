// cpuctl: the command-line client of cpuhpd. Parses the command line (CLI11), calls the daemon
// through DaemonClient and prints a table or, with --json, the shapes of docs/interface.md.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "daemon_client.h"
#include "exit_codes.h"
#include "hold_command.h"
#include "map_command.h"
#include "names.h"
#include "profile_command.h"
#include "progress.h"
#include "render_json.h"
#include "render_table.h"

#ifndef CPUHPD_VERSION
#define CPUHPD_VERSION "unknown"
#endif

namespace {

constexpr const char* kMaskHelp = R"(MASK (several are a union):
  4-7             a kernel cpulist: ranges and single CPUs
  4,6,7           a list
  0-31:2/8        group form: from 0-31, the first 2 of every 8 (0,1,8,9,16,17,24,25)
  0xff            a hex cpumap (commas allowed: 0xff,00000000)
  package:1       every CPU of package 1 (also die:N, node:N)
  core:4          the SMT threads of CPU 4's core
  smt             every SMT thread that is not the first of its core
  all             every present CPU; going offline, the protected ones and those
                  without an online file are left out)";

constexpr const char* kBatchExamples = R"(
With -- COMMAND [ARGS...], the CPUs are held while COMMAND runs (no other caller
may change them), then restored; cpuctl exits with COMMAND's status (128+N if
signal N killed it). SIGINT/SIGTERM/SIGHUP go to COMMAND; the restore follows.

Examples:
  cpuctl offline 4,6,7
  cpuctl offline package:1 -- ./live-update.sh --stage 2
  cpuctl offline package:1 --best-effort
  cpuctl offline 0-31:2/8 --strategy per-cpu
  cpuctl online all
  cpuctl --json online node:0 0xff)";

constexpr const char* kExitHelp = R"(
Exit status: 0 all done, 1 failed (nothing left changed) or daemon/D-Bus error,
2 usage error or input the daemon refused, 64 partial success (--best-effort).)";

struct Args {
    bool json = false;
    double timeout_s = 600.0;
    std::string bus_address;
    std::vector<std::string> masks;
    std::string plan_action;
    std::string smt_state;
    bool best_effort = false;
    std::string strategy;
    bool dry_run = false;
    bool refuse_pinned = false;
    bool force = false;
    std::uint64_t batch_id = 0;
    bool no_wait = false;
    std::uint64_t hold_id = 0;
    // offline/online MASK -- COMMAND: hold the CPUs while COMMAND runs.
    std::vector<std::string> command;
    std::string who = "cpuctl";
    std::string why;
    bool no_restore = false;
    bool map = false;  // topology --map, status --map
    bool no_color = false;
};

void add_hold_options(CLI::App* sub, Args& a) {
    sub->add_option("--who", a.who,
                    "with -- COMMAND: what the hold calls its holder in `cpuctl holds` and the "
                    "log")
        ->capture_default_str();
    sub->add_option("--why", a.why, "with -- COMMAND: why (default: the command line)");
    sub->add_flag("--no-restore", a.no_restore,
                  "with -- COMMAND: leave the CPUs as they are when COMMAND ends");
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

// --refuse-pinned on the commands that may take CPUs offline (not online: nothing to refuse).
void add_batch_options(CLI::App* sub, Args& a, bool with_dry_run, bool with_refuse_pinned) {
    sub->add_flag("--best-effort", a.best_effort,
                  "go on after a failure and report each CPU (default: the daemon's mode, "
                  "atomic unless configured: undo everything on any failure)");
    sub->add_option("--strategy", a.strategy, "force a strategy (default auto: the best one)")
        ->check(CLI::IsMember(cpuhpd::names_in(cpuhpd::kStrategyNames)));
    if (with_dry_run) {
        sub->add_flag("--dry-run", a.dry_run,
                      "print the plan (strategy and order), change nothing");
    }
    if (with_refuse_pinned) {
        sub->add_flag("--refuse-pinned", a.refuse_pinned, cpuctl::kRefusePinnedHelp);
        sub->add_flag("--force", a.force, cpuctl::kForceHelp);
    }
}

std::string join_masks(const std::vector<std::string>& masks) {
    std::string s;
    for (const auto& m : masks) {
        s += (s.empty() ? "" : " ") + m;
    }
    return s;
}

int report_error(const cpuctl::ErrorInfo& e, const std::string& bus, bool json) {
    if (json) {
        std::cout << cpuctl::error_json(e) << std::endl;
    }
    std::cerr << "cpuctl: " << cpuctl::describe_error(e, bus) << std::endl;
    return cpuctl::exit_code_for_error(e.name);
}

bool argv_has_json(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--json") {
            return true;
        }
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    Args a;
    CLI::App app{"cpuctl: take CPUs offline and online in bulk through the cpuhpd service.",
                 "cpuctl"};
    app.require_subcommand(1);
    app.fallthrough();  // global options are accepted after the subcommand too
    app.set_help_all_flag("--help-all", "help on every command");
    app.set_version_flag("--version", std::string("cpuctl ") + CPUHPD_VERSION);
    app.footer(std::string(kMaskHelp) + "\n" + kBatchExamples + "\n  cpuctl plan offline smt\n" +
               "  cpuctl smt off\n  cpuctl cancel\n  cpuctl status\n  cpuctl --json topology\n" +
               "  cpuctl profile apply evacuate-package-1\n" + kExitHelp);
    app.add_flag("--json", a.json, "print JSON (docs/interface.md shapes) instead of tables");
    app.add_option("--timeout", a.timeout_s,
                   "how long any command waits for the daemon, in seconds; exit 1 when it "
                   "passes (batches on big machines take minutes)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_option("--bus-address", a.bus_address,
                   "D-Bus address of the bus cpuhpd is on (default: $DBUS_SYSTEM_BUS_ADDRESS, "
                   "else the system bus)");

    const std::string batch_footer = std::string("\n") + kMaskHelp + "\n" + kBatchExamples;
    auto* off = app.add_subcommand(
        "offline", "take the CPUs of MASK offline [and hold them while -- COMMAND runs]");
    off->add_option("MASK", a.masks, "CPUs to take offline (see below)")->required();
    add_batch_options(off, a, true, true);
    add_hold_options(off, a);
    off->footer(batch_footer);

    auto* on = app.add_subcommand(
        "online", "bring the CPUs of MASK online [and hold them while -- COMMAND runs]");
    on->add_option("MASK", a.masks, "CPUs to bring online (see below)")->required();
    add_batch_options(on, a, true, false);
    add_hold_options(on, a);
    on->footer(batch_footer);

    auto* plan = app.add_subcommand("plan", "show what offline/online MASK would do (a dry run)");
    plan->add_option("ACTION", a.plan_action, "offline or online")
        ->required()
        ->check(CLI::IsMember(cpuhpd::names_in(cpuhpd::kActionNames)));
    plan->add_option("MASK", a.masks, "CPUs (see below)")->required();
    add_batch_options(plan, a, false, true);
    plan->footer(std::string("\n") + kMaskHelp +
                 "\n\nExamples:\n  cpuctl plan offline package:1\n  cpuctl plan online all "
                 "--strategy per-cpu");

    auto* status = app.add_subcommand(
        "status", "show online/offline CPUs, what the kernel offers, the last recovery");
    status->footer("\nExamples:\n  cpuctl status\n  cpuctl --json status");

    auto* topo =
        app.add_subcommand("topology", "show every CPU's node, package, die, core, siblings");
    topo->footer("\nExamples:\n  cpuctl topology\n  cpuctl topology --json");
    for (auto* sub : {status, topo}) {
        sub->add_flag("--map", a.map, "draw the machine: packages, cores, threads and their state");
        sub->add_flag("--no-color", a.no_color, "--map without colour (none when not a terminal)");
    }

    auto* smt =
        app.add_subcommand("smt", "take every secondary SMT thread offline, or back online");
    smt->add_option("STATE", a.smt_state, "on or off")
        ->required()
        ->check(
            CLI::IsMember(std::vector<std::string>{cpuhpd::dbus::kSmtOn, cpuhpd::dbus::kSmtOff}));
    add_batch_options(smt, a, true, true);
    smt->footer("\nExamples:\n  cpuctl smt off\n  cpuctl smt on --strategy per-cpu");

    auto* cancel = app.add_subcommand(
        "cancel", "stop the running batch before its next write (atomic requests roll back)");
    cancel->add_option("BATCH_ID", a.batch_id,
                       "the batch to cancel (default: whichever runs; the id is in BatchProgress, "
                       "the replies and the log)");
    cancel->add_flag("--no-wait", a.no_wait,
                     "return once the daemon has the cancel, without waiting for the batch to end");
    cancel->footer(
        "\nThe CPU being written finishes (a bulk or smt write is one step and cannot be\n"
        "stopped). Atomic requests of the batch bring back what they changed; best-effort\n"
        "ones keep it. Every caller of the batch gets its reply, with 'cancelled' for the\n"
        "CPUs never written. Exit status: 0 cancelled (or --no-wait), 1 no batch running or\n"
        "the batch ended before the cancel took effect.\n\nExamples:\n  cpuctl cancel\n"
        "  cpuctl cancel 42 --no-wait");

    auto* holds = app.add_subcommand("holds", "list the holds on CPUs: who holds which, and why");
    holds->footer("\nExamples:\n  cpuctl holds\n  cpuctl --json holds");

    auto* release = app.add_subcommand(
        "release", "end a hold now and restore its CPUs (its holder's, or an admin's override)");
    release->add_option("HOLD_ID", a.hold_id, "the hold (see `cpuctl holds`)")->required();
    release->footer("\nReplies when the restore is done.\n\nExamples:\n  cpuctl release 3");

    cpuctl::ProfileCommand profile;
    cpuctl::add_profile_command(app, profile);

    std::vector<char*> own_args = split_command(argc, argv, a.command);
    try {
        app.parse(static_cast<int>(own_args.size()), own_args.data());
        if (!a.command.empty() && !off->parsed() && !on->parsed()) {
            throw CLI::ValidationError("-- COMMAND", "only offline and online run a command");
        }
        if (!a.command.empty() && a.dry_run) {
            throw CLI::ValidationError("-- COMMAND", "a dry run holds nothing to run a command");
        }
        if (!a.command.empty() && a.best_effort) {
            throw CLI::ValidationError("--best-effort", "a hold's change is always atomic");
        }
        for (auto* sub : {off, on}) {
            for (const char* name : {"--who", "--why", "--no-restore"}) {
                if (a.command.empty() && sub->count(name) > 0) {
                    throw CLI::ValidationError(name, "only with -- COMMAND");
                }
            }
        }
        if (a.map && a.json) {
            throw CLI::ValidationError("--map", "a picture, not JSON: leave out --json");
        }
        if (!a.command.empty() && a.json) {
            throw CLI::ValidationError("-- COMMAND", "--json: stdout is the command's");
        }
        if (a.command.empty() && argc > static_cast<int>(own_args.size())) {
            throw CLI::ValidationError("-- COMMAND", "nothing follows --");
        }
    } catch (const CLI::ParseError& e) {
        if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr &&
            app.get_subcommands().empty()) {
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

    std::optional<std::string> bus_address;
    if (!a.bus_address.empty()) {
        bus_address = a.bus_address;
    }
    const std::string bus = cpuctl::DaemonClient::describe_bus(bus_address);
    auto timeout = std::chrono::microseconds(static_cast<std::int64_t>(a.timeout_s * 1e6));

    try {
        cpuctl::DaemonClient client(bus_address, timeout);
        if (a.map) {
            return cpuctl::run_map_command(client, status->parsed(), a.no_color);
        }

        if (status->parsed()) {
            auto s = client.status();
            if (a.json) {
                std::cout << cpuctl::status_json(s) << std::endl;
            } else {
                cpuctl::render_status_table(std::cout, s);
            }
            return cpuctl::kExitOk;
        }
        if (cancel->parsed()) {
            const auto reply = client.cancel(a.batch_id, !a.no_wait);
            if (a.json) {
                std::cout << cpuctl::cancel_json(reply) << std::endl;
            } else {
                std::cout << cpuctl::cancel_summary_line(reply) << std::endl;
            }
            return reply.finished && reply.cancelled.empty() ? cpuctl::kExitFailed
                                                             : cpuctl::kExitOk;
        }
        if (holds->parsed()) {
            const auto list = client.holds();
            if (a.json) {
                std::cout << cpuctl::holds_json(list) << std::endl;
            } else {
                cpuctl::render_holds_table(std::cout, list);
            }
            return cpuctl::kExitOk;
        }
        if (release->parsed()) {
            const auto restored = client.release_hold(a.hold_id);
            if (a.json) {
                std::cout << cpuctl::release_json(a.hold_id, restored) << std::endl;
            } else {
                std::cout << cpuctl::release_summary_line(a.hold_id, restored) << std::endl;
            }
            return cpuctl::kExitOk;
        }
        if (profile.profile->parsed()) {
            return cpuctl::run_profile_command(client, profile, a.json);
        }
        if (topo->parsed()) {
            auto cpus = client.topology();
            if (a.json) {
                std::cout << cpuctl::topology_json(cpus) << std::endl;
            } else {
                cpuctl::render_topology_table(std::cout, cpus);
            }
            return cpuctl::kExitOk;
        }

        auto method = cpuctl::BatchMethod::Offline;
        std::string argument;
        std::string label;
        if (smt->parsed()) {
            method = cpuctl::BatchMethod::SetSmt;
            argument = a.smt_state;
            label = "smt " + a.smt_state;
        } else {
            const std::string action =
                plan->parsed() ? a.plan_action : (off->parsed() ? "offline" : "online");
            method =
                action == "offline" ? cpuctl::BatchMethod::Offline : cpuctl::BatchMethod::Online;
            argument = join_masks(a.masks);
            label = action;
            if (plan->parsed()) {
                a.dry_run = true;
            }
        }
        cpuctl::BatchOptions options;
        options.best_effort = a.best_effort;
        if (!a.strategy.empty()) {
            options.strategy = a.strategy;
        }
        options.dry_run = a.dry_run;
        options.refuse_pinned = a.refuse_pinned;
        options.force = a.force;

        cpuctl::ProgressLine progress(
            label, !a.json && !a.dry_run && cpuctl::ProgressLine::stderr_is_terminal());
        cpuctl::ProgressFn on_progress;
        if (progress.enabled()) {
            on_progress = [&progress](std::uint32_t done, std::uint32_t total) {
                progress.update(done, total);
            };
        }
        if (!a.command.empty()) {
            cpuctl::HoldRequest request;
            request.method = method;
            request.mask = argument;
            request.who = a.who;
            request.why = a.why.empty() ? cpuctl::command_line(label, argument, a.command) : a.why;
            request.strategy = options.strategy;
            request.restore = !a.no_restore;
            request.refuse_pinned = a.refuse_pinned;
            request.force = a.force;
            return cpuctl::run_held(client, request, a.command, on_progress,
                                    [&progress] { progress.clear(); });
        }
        auto reply = client.batch(method, argument, options, on_progress);
        progress.clear();

        if (a.json) {
            std::cout << cpuctl::batch_json(reply) << std::endl;
        } else {
            cpuctl::render_batch_table(std::cout, reply);
            std::cout.flush();
            cpuctl::render_batch_failures(std::cerr, reply);
        }
        return cpuctl::exit_code_for_outcome(reply.outcome);
    } catch (const cpuctl::DaemonError& e) {
        return report_error(e.info(), bus, a.json);
    } catch (const std::exception& e) {
        return report_error({cpuhpd::dbus::kErrorFailed, e.what()}, bus, a.json);
    }
}
