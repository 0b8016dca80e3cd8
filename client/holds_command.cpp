// `cpuctl holds`: the holds on CPUs, who holds which, and why.
#include "query_commands.h"
#include "render_json.h"
#include "render_table.h"

namespace cpuctl {

void add_holds_command(CLI::App& app, HoldsCommand& c) {
    c.command = app.add_subcommand("holds", "list the holds on CPUs: who holds which, and why");
    c.command->footer("\nExamples:\n  cpuctl holds\n  cpuctl --json holds");
}

int run_holds_command(DaemonClient& client, const HoldsCommand&, bool json) {
    return print_answer(client.holds(), json, holds_json, render_holds_table);
}

}  // namespace cpuctl
