// `cpuctl status`: online/offline CPUs, what the kernel offers, the last recovery.
#include "query_commands.h"
#include "render_json.h"
#include "render_table.h"

namespace cpuctl {

void add_status_command(CLI::App& app, StatusCommand& c) {
    c.command = app.add_subcommand(
        "status",
        "show online/offline CPUs, what the kernel offers, the last recovery, what is in force");
    c.command->footer("\nExamples:\n  cpuctl status\n  cpuctl --json status");
}

int run_status_command(DaemonClient& client, const StatusCommand&, bool json) {
    return print_answer(client.status(), json, status_json, render_status_table);
}

}  // namespace cpuctl
