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
#include "names.h"
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
Examples:
  cpuctl offline 4,6,7
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
    std::uint64_t batch_id = 0;
    bool no_wait = false;
};

void add_batch_options(CLI::App* sub, Args& a, bool with_dry_run) {
    sub->add_flag("--best-effort", a.best_effort,
                  "go on after a failure and report each CPU (default: the daemon's mode, "
                  "atomic unless configured: undo everything on any failure)");
    sub->add_option("--strategy", a.strategy, "force a strategy (default auto: the best one)")
        ->check(CLI::IsMember(cpuhpd::names_in(cpuhpd::kStrategyNames)));
    if (with_dry_run) {
        sub->add_flag("--dry-run", a.dry_run,
                      "print the plan (strategy and order), change nothing");
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
               kExitHelp);
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
    auto* off = app.add_subcommand("offline", "take the CPUs of MASK offline");
    off->add_option("MASK", a.masks, "CPUs to take offline (see below)")->required();
    add_batch_options(off, a, true);
    off->footer(batch_footer);

    auto* on = app.add_subcommand("online", "bring the CPUs of MASK online");
    on->add_option("MASK", a.masks, "CPUs to bring online (see below)")->required();
    add_batch_options(on, a, true);
    on->footer(batch_footer);

    auto* plan = app.add_subcommand("plan", "show what offline/online MASK would do (a dry run)");
    plan->add_option("ACTION", a.plan_action, "offline or online")
        ->required()
        ->check(CLI::IsMember(cpuhpd::names_in(cpuhpd::kActionNames)));
    plan->add_option("MASK", a.masks, "CPUs (see below)")->required();
    add_batch_options(plan, a, false);
    plan->footer(std::string("\n") + kMaskHelp +
                 "\n\nExamples:\n  cpuctl plan offline package:1\n  cpuctl plan online all "
                 "--strategy per-cpu");

    auto* status = app.add_subcommand(
        "status", "show online/offline CPUs, what the kernel offers, the last recovery");
    status->footer("\nExamples:\n  cpuctl status\n  cpuctl --json status");

    auto* topo =
        app.add_subcommand("topology", "show every CPU's node, package, die, core, siblings");
    topo->footer("\nExamples:\n  cpuctl topology\n  cpuctl topology --json");

    auto* smt =
        app.add_subcommand("smt", "take every secondary SMT thread offline, or back online");
    smt->add_option("STATE", a.smt_state, "on or off")
        ->required()
        ->check(
            CLI::IsMember(std::vector<std::string>{cpuhpd::dbus::kSmtOn, cpuhpd::dbus::kSmtOff}));
    add_batch_options(smt, a, true);
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

    try {
        app.parse(argc, argv);
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

        cpuctl::ProgressLine progress(
            label, !a.json && !a.dry_run && cpuctl::ProgressLine::stderr_is_terminal());
        cpuctl::ProgressFn on_progress;
        if (progress.enabled()) {
            on_progress = [&progress](std::uint32_t done, std::uint32_t total) {
                progress.update(done, total);
            };
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
