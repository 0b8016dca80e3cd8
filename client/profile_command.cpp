#include "profile_command.h"

#include <algorithm>
#include <iostream>

#include "enums.h"
#include "exit_codes.h"
#include "names.h"
#include "render_json.h"
#include "render_table.h"

namespace cpuctl {

void add_profile_command(CLI::App& app, ProfileCommand& c) {
    c.profile = app.add_subcommand(
        "profile", "power profiles of the config: list, show, apply one, revert it");
    c.profile->require_subcommand(1);
    c.profile->footer(
        "\nA profile names CPUs to take offline (config key profiles:). Applying one takes\n"
        "them offline in one atomic batch; applying another while one is in force changes\n"
        "only what differs; revert brings back exactly the CPUs the profile took (not those\n"
        "that were offline before it).\n\nExamples:\n  cpuctl profile list\n"
        "  cpuctl profile show evacuate-package-1\n  cpuctl profile apply evacuate-package-1\n"
        "  cpuctl profile revert");
    c.list = c.profile->add_subcommand("list", "the profiles and which one is in force");
    c.show = c.profile->add_subcommand(
        "show", "a profile's definition and what applying it would change now (a dry run)");
    c.show->add_option("NAME", c.name, "the profile")->required();
    c.apply = c.profile->add_subcommand("apply", "put a profile in force");
    c.apply->add_option("NAME", c.name, "the profile (see `cpuctl profile list`)")->required();
    c.revert = c.profile->add_subcommand(
        "revert", "bring back the CPUs the profile in force took; then none is in force");
    for (auto* sub : {c.apply, c.revert}) {
        sub->add_option("--strategy", c.strategy, "force a strategy (default auto: the best one)")
            ->check(CLI::IsMember(cpuhpd::names_in(cpuhpd::kStrategyNames)));
        sub->add_flag("--dry-run", c.dry_run, "say what would change, change nothing");
    }
    c.apply->add_flag("--refuse-pinned", c.refuse_pinned, kRefusePinnedHelp);
    c.apply->add_flag("--force", c.force, kForceHelp);
}

int run_profile_command(DaemonClient& client, const ProfileCommand& c, bool json) {
    if (c.list->parsed()) {
        const auto list = client.profiles();
        const std::string active = client.active_profile();
        if (json) {
            std::cout << profiles_json(list, active) << std::endl;
        } else {
            render_profiles_table(std::cout, list, active);
        }
        return kExitOk;
    }
    BatchOptions options;
    options.dry_run = c.dry_run || c.show->parsed();
    options.refuse_pinned = c.refuse_pinned && c.apply->parsed();
    options.force = c.force && c.apply->parsed();
    if (!c.strategy.empty()) {
        options.strategy = c.strategy;
    }
    if (c.show->parsed() && !json) {
        const auto list = client.profiles();
        const auto it = std::find_if(list.begin(), list.end(),
                                     [&](const ProfileInfo& p) { return p.name == c.name; });
        if (it != list.end()) {
            render_profiles_table(std::cout, {*it}, client.active_profile());
        }
    }
    ProfileReply reply;
    try {
        reply = client.profile(c.revert->parsed() ? std::string() : c.name, options, {});
    } catch (const DaemonError& e) {
        // An unknown profile name is invalid input (2); a revert with none in force names
        // nothing: there is just nothing to revert (1).
        if (c.revert->parsed() && e.info().name == cpuhpd::dbus::error_name(cpuhpd::to_string(
                                                       cpuhpd::RefusalKind::NoSuchProfile))) {
            throw DaemonError(e.info(), kExitFailed);
        }
        throw;
    }
    if (json) {
        std::cout << profile_json(reply) << std::endl;
    } else {
        render_cpu_rows(std::cout, reply.cpus);
        std::cout << profile_summary_line(reply) << '\n';
        render_pinned(std::cout, reply.pinned_tasks, reply.pinned_irqs);
        render_partitions(std::cout, reply.partitions);
        render_affinity(std::cout, reply.affinity);
        std::cout.flush();
    }
    return exit_code_for_outcome(reply.outcome);
}

}  // namespace cpuctl
