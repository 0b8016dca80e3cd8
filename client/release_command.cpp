// `cpuctl release HOLD_ID`: end a hold now and restore its CPUs.
#include <iostream>

#include "exit_codes.h"
#include "query_commands.h"
#include "render_json.h"
#include "render_table.h"

namespace cpuctl {

void add_release_command(CLI::App& app, ReleaseCommand& c) {
    c.command = app.add_subcommand(
        "release", "end a hold now and restore its CPUs (its holder's, or an admin's override)");
    c.command->add_option("HOLD_ID", c.hold_id, "the hold (see `cpuctl holds`)")->required();
    c.command->footer("\nReplies when the restore is done.\n\nExamples:\n  cpuctl release 3");
}

int run_release_command(DaemonClient& client, const ReleaseCommand& c, bool json) {
    const auto restored = client.release_hold(c.hold_id);
    if (json) {
        std::cout << release_json(c.hold_id, restored) << std::endl;
    } else {
        std::cout << release_summary_line(c.hold_id, restored) << std::endl;
    }
    return kExitOk;
}

}  // namespace cpuctl
