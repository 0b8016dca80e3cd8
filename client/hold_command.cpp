#include "hold_command.h"

#include <iostream>

#include "render_table.h"
#include "run_command.h"

namespace cpuctl {

namespace {

constexpr std::size_t kMaxWhy = 256;

}  // namespace

std::string command_line(const std::string& action, const std::string& mask,
                         const std::vector<std::string>& command) {
    std::string line = "cpuctl " + action + " " + mask + " --";
    for (const auto& arg : command) {
        line += " " + arg;
    }
    for (char& c : line) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            c = '?';
        }
    }
    if (line.size() > kMaxWhy) {
        // Cut on a character boundary (never inside a UTF-8 sequence).
        std::size_t cut = kMaxWhy - 3;
        while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) {
            --cut;
        }
        line = line.substr(0, cut) + "...";
    }
    return line;
}

int run_held(DaemonClient& client, const HoldRequest& request,
             const std::vector<std::string>& command, const ProgressFn& progress,
             const std::function<void()>& taken) {
    const HoldGrant grant = client.hold(request, progress);
    taken();
    std::cerr << "cpuctl: hold " << grant.id() << ": " << batch_summary_line(grant.change())
              << '\n';
    render_pinned(std::cerr, grant.change().pinned_tasks, grant.change().pinned_irqs);
    render_partitions(std::cerr, grant.change().partitions);
    std::cerr.flush();
    const int status = run_command(command);
    try {
        const auto restored = client.release_hold(grant.id());
        std::cerr << "cpuctl: " << release_summary_line(grant.id(), restored) << std::endl;
    } catch (const DaemonError& e) {
        // The fd closes when cpuctl exits: the daemon ends the hold and restores then.
        std::cerr << "cpuctl: cannot release hold " << grant.id() << ": " << e.what()
                  << " (it ends when cpuctl exits)" << std::endl;
    }
    return status;
}

}  // namespace cpuctl
