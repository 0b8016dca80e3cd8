// `cpuctl holds`: the holds on CPUs, who holds which, and why.
#include <iostream>

#include "exit_codes.h"
#include "query_commands.h"
#include "render_json.h"
#include "render_table.h"

namespace cpuctl {

void add_holds_command(CLI::App& app, HoldsCommand& c) {
    c.command = app.add_subcommand("holds", "list the holds on CPUs: who holds which, and why");
    c.command->footer("\nExamples:\n  cpuctl holds\n  cpuctl --json holds");
}

int run_holds_command(DaemonClient& client, const HoldsCommand&, bool json) {
    const auto list = client.holds();
    if (json) {
        std::cout << holds_json(list) << std::endl;
    } else {
        render_holds_table(std::cout, list);
    }
    return kExitOk;
}

}  // namespace cpuctl
