// `cpuctl topology`: every CPU's node, package, die, core and siblings.
#include <iostream>

#include "exit_codes.h"
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
    auto cpus = client.topology();
    if (json) {
        std::cout << topology_json(cpus) << std::endl;
    } else {
        render_topology_table(std::cout, cpus);
    }
    return kExitOk;
}

}  // namespace cpuctl
