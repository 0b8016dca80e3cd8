// `cpuctl status`: online/offline CPUs, what the kernel offers, the last recovery.
#include <iostream>

#include "exit_codes.h"
#include "query_commands.h"
#include "render_json.h"
#include "render_table.h"

namespace cpuctl {

void add_status_command(CLI::App& app, StatusCommand& c) {
    c.command = app.add_subcommand(
        "status", "show online/offline CPUs, what the kernel offers, the last recovery");
    c.command->footer("\nExamples:\n  cpuctl status\n  cpuctl --json status");
}

int run_status_command(DaemonClient& client, const StatusCommand&, bool json) {
    auto s = client.status();
    if (json) {
        std::cout << status_json(s) << std::endl;
    } else {
        render_status_table(std::cout, s);
    }
    return kExitOk;
}

}  // namespace cpuctl
