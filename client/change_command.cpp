#include "change_command.h"

#include <cstdint>
#include <iostream>

#include "enums.h"
#include "exit_codes.h"
#include "hold_command.h"
#include "names.h"
#include "parsed.h"
#include "progress.h"
#include "render_json.h"
#include "render_table.h"

namespace cpuctl {

namespace {

void add_hold_options(CLI::App* sub, ChangeCommand& c) {
    sub->add_option("--who", c.who,
                    "with -- COMMAND: what the hold calls its holder in `cpuctl holds` and the "
                    "log")
        ->capture_default_str();
    sub->add_option("--why", c.why, "with -- COMMAND: why (default: the command line)");
    sub->add_flag("--no-restore", c.no_restore,
                  "with -- COMMAND: leave the CPUs as they are when COMMAND ends");
}

// --refuse-pinned on the commands that may take CPUs offline (not online: nothing to refuse).
void add_batch_options(CLI::App* sub, ChangeCommand& c, bool with_dry_run,
                       bool with_refuse_pinned) {
    sub->add_flag("--best-effort", c.best_effort,
                  "go on after a failure and report each CPU (default: the daemon's mode, "
                  "atomic unless configured: undo everything on any failure)");
    sub->add_option("--strategy", c.strategy, "force a strategy (default auto: the best one)")
        ->check(CLI::IsMember(cpuhpd::names_in(cpuhpd::kStrategyNames)));
    if (with_dry_run) {
        sub->add_flag("--dry-run", c.dry_run,
                      "print the plan (strategy and order), change nothing");
    }
    if (with_refuse_pinned) {
        sub->add_flag("--refuse-pinned", c.refuse_pinned, kRefusePinnedHelp);
        sub->add_flag("--force", c.force, kForceHelp);
    }
}

std::string join_masks(const std::vector<std::string>& masks) {
    std::string s;
    for (const auto& m : masks) {
        s += (s.empty() ? "" : " ") + m;
    }
    return s;
}

// What the parsed command asks of the daemon: the method, its argument and the label of
// the progress line.
struct Call {
    BatchMethod method = BatchMethod::Offline;
    std::string argument;
    std::string label;
    bool dry_run = false;
};

Call call_of(const ChangeCommand& c) {
    Call call;
    call.dry_run = c.dry_run;
    if (parsed(c.smt)) {
        call.method = BatchMethod::SetSmt;
        call.argument = c.smt_state;
        call.label = "smt " + c.smt_state;
        return call;
    }
    const std::string action =
        parsed(c.plan) ? c.plan_action : (parsed(c.offline) ? "offline" : "online");
    call.method = action == "offline" ? BatchMethod::Offline : BatchMethod::Online;
    call.argument = join_masks(c.masks);
    call.label = action;
    if (parsed(c.plan)) {
        call.dry_run = true;
    }
    return call;
}

}  // namespace

void add_change_commands(CLI::App& app, ChangeCommand& c) {
    const std::string batch_footer = std::string("\n") + kMaskHelp + "\n" + kBatchExamples;
    c.offline = app.add_subcommand(
        "offline", "take the CPUs of MASK offline [and hold them while -- COMMAND runs]");
    c.offline->add_option("MASK", c.masks, "CPUs to take offline (see below)")->required();
    add_batch_options(c.offline, c, true, true);
    add_hold_options(c.offline, c);
    c.offline->footer(batch_footer);

    c.online = app.add_subcommand(
        "online", "bring the CPUs of MASK online [and hold them while -- COMMAND runs]");
    c.online->add_option("MASK", c.masks, "CPUs to bring online (see below)")->required();
    add_batch_options(c.online, c, true, false);
    add_hold_options(c.online, c);
    c.online->footer(batch_footer);

    c.plan = app.add_subcommand("plan", "show what offline/online MASK would do (a dry run)");
    c.plan->add_option("ACTION", c.plan_action, "offline or online")
        ->required()
        ->check(CLI::IsMember(cpuhpd::names_in(cpuhpd::kActionNames)));
    c.plan->add_option("MASK", c.masks, "CPUs (see below)")->required();
    add_batch_options(c.plan, c, false, true);
    c.plan->footer(std::string("\n") + kMaskHelp +
                   "\n\nExamples:\n  cpuctl plan offline package:1\n  cpuctl plan online all "
                   "--strategy per-cpu");
}

void add_smt_command(CLI::App& app, ChangeCommand& c) {
    c.smt = app.add_subcommand("smt", "take every secondary SMT thread offline, or back online");
    c.smt->add_option("STATE", c.smt_state, "on or off")
        ->required()
        ->check(
            CLI::IsMember(std::vector<std::string>{cpuhpd::dbus::kSmtOn, cpuhpd::dbus::kSmtOff}));
    add_batch_options(c.smt, c, true, true);
    c.smt->footer("\nExamples:\n  cpuctl smt off\n  cpuctl smt on --strategy per-cpu");
}

void check_change_command(const ChangeCommand& c) {
    if (!c.command.empty() && !parsed(c.offline) && !parsed(c.online)) {
        throw CLI::ValidationError("-- COMMAND", "only offline and online run a command");
    }
    if (!c.command.empty() && c.dry_run) {
        throw CLI::ValidationError("-- COMMAND", "a dry run holds nothing to run a command");
    }
    if (!c.command.empty() && c.best_effort) {
        throw CLI::ValidationError("--best-effort", "a hold's change is always atomic");
    }
    for (auto* sub : {c.offline, c.online}) {
        for (const char* name : {"--who", "--why", "--no-restore"}) {
            if (c.command.empty() && sub != nullptr && sub->count(name) > 0) {
                throw CLI::ValidationError(name, "only with -- COMMAND");
            }
        }
    }
}

void check_command_after_dashes(const ChangeCommand& c, bool json, bool nothing_after_dashes) {
    if (!c.command.empty() && json) {
        throw CLI::ValidationError("-- COMMAND", "--json: stdout is the command's");
    }
    if (c.command.empty() && nothing_after_dashes) {
        throw CLI::ValidationError("-- COMMAND", "nothing follows --");
    }
}

int run_change_command(DaemonClient& client, const ChangeCommand& c, bool json) {
    const Call call = call_of(c);
    BatchOptions options;
    options.best_effort = c.best_effort;
    if (!c.strategy.empty()) {
        options.strategy = c.strategy;
    }
    options.dry_run = call.dry_run;
    options.refuse_pinned = c.refuse_pinned;
    options.force = c.force;

    ProgressLine progress(call.label, !json && !call.dry_run && ProgressLine::stderr_is_terminal());
    ProgressFn on_progress;
    if (progress.enabled()) {
        on_progress = [&progress](std::uint32_t done, std::uint32_t total) {
            progress.update(done, total);
        };
    }
    if (!c.command.empty()) {
        HoldRequest request;
        request.method = call.method;
        request.mask = call.argument;
        request.who = c.who;
        request.why = c.why.empty() ? command_line(call.label, call.argument, c.command) : c.why;
        request.strategy = options.strategy;
        request.restore = !c.no_restore;
        request.refuse_pinned = c.refuse_pinned;
        request.force = c.force;
        return run_held(client, request, c.command, on_progress, [&progress] { progress.clear(); });
    }
    auto reply = client.batch(call.method, call.argument, options, on_progress);
    progress.clear();
    if (json) {
        std::cout << batch_json(reply) << std::endl;
    } else {
        render_batch_table(std::cout, reply);
        std::cout.flush();
        render_batch_failures(std::cerr, reply);
    }
    return exit_code_for_outcome(reply.outcome);
}

}  // namespace cpuctl
