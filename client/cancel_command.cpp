// `cpuctl cancel [BATCH_ID]`: stop the running batch before its next write.
#include <iostream>

#include "enums.h"
#include "exit_codes.h"
#include "names.h"
#include "query_commands.h"
#include "render_json.h"
#include "render_table.h"

namespace cpuctl {

void add_cancel_command(CLI::App& app, CancelCommand& c) {
    c.command = app.add_subcommand(
        "cancel", "stop the running batch before its next write (atomic requests roll back)");
    c.command->add_option("BATCH_ID", c.batch_id,
                          "the batch to cancel (default: whichever runs; the id is in "
                          "BatchProgress, the replies and the log)");
    c.command->add_flag(
        "--no-wait", c.no_wait,
        "return once the daemon has the cancel, without waiting for the batch to end");
    c.command->footer(
        "\nThe CPU being written finishes (a bulk or smt write is one step and cannot be\n"
        "stopped). Atomic requests of the batch bring back what they changed; best-effort\n"
        "ones keep it. Every caller of the batch gets its reply, with 'cancelled' for the\n"
        "CPUs never written. Exit status: 0 cancelled (or --no-wait), 1 no batch running\n"
        "(no BATCH_ID given) or the batch ended before the cancel took effect, 2 BATCH_ID is\n"
        "not the running batch (NoSuchBatch).\n\nExamples:\n  cpuctl cancel\n"
        "  cpuctl cancel 42 --no-wait");
}

int run_cancel_command(DaemonClient& client, const CancelCommand& c, bool json) {
    CancelReply reply;
    try {
        reply = client.cancel(c.batch_id, !c.no_wait);
    } catch (const DaemonError& e) {
        // A batch id that names no running batch is invalid input (2); with no id, there is
        // just nothing to cancel (1).
        if (c.batch_id == 0 && e.info().name == cpuhpd::dbus::error_name(cpuhpd::to_string(
                                                    cpuhpd::RefusalKind::NoSuchBatch))) {
            throw DaemonError(e.info(), kExitFailed);
        }
        throw;
    }
    if (json) {
        std::cout << cancel_json(reply) << std::endl;
    } else {
        std::cout << cancel_summary_line(reply) << std::endl;
    }
    return reply.finished && reply.cancelled.empty() ? kExitFailed : kExitOk;
}

}  // namespace cpuctl
