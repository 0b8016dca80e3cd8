// `cpuctl topology`: every CPU's node, package, die, core and siblings.
#include "query_commands.h"
#include "render_json.h"
#include "render_table.h"

namespace cpuctl {

void add_topology_command(CLI::App& app, TopologyCommand& c) {
    c.command =
        app.add_subcommand("topology", "show every CPU's node, package, die, core, siblings");
    c.command->footer("\nExamples:\n  cpuctl topology\n  cpuctl topology --json");
}

int run_topology_command(DaemonClient& client, const TopologyCommand&, bool json) {
    return print_answer(client.topology(), json, topology_json, render_topology_table);
}

}  // namespace cpuctl
