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
    HoldGrant grant = client.hold(request, progress);
    taken();
    std::cerr << "cpuctl: hold " << grant.id() << ": " << batch_summary_line(grant.change())
              << '\n';
    render_pinned(std::cerr, grant.change().pinned_tasks, grant.change().pinned_irqs);
    render_partitions(std::cerr, grant.change().partitions);
    std::cerr.flush();
    // cpuhpd may restart while the command runs (an upgrade, a crash): the hold waits for
    // us (hold_grace_s), and we re-attach as soon as its name is back, so the command runs
    // on undisturbed. No polling: the bus driver tells us.
    bool daemon_back = false;
    client.follow_daemon_name([&](bool present) {
        if (present) {
            daemon_back = true;
        } else {
            std::cerr << "cpuctl: cpuhpd left the bus; hold " << grant.id()
                      << " waits for it to come back" << std::endl;
        }
    });
    CommandCompanion companion;
    companion.poll = [&] { return client.poll_spec(); };
    companion.ready = [&] {
        try {
            client.dispatch();
        } catch (const DaemonError& e) {
            std::cerr << "cpuctl: the bus connection failed: " << e.what() << std::endl;
            companion.poll = [] { return PollSpec{}; };  // wait for the command only
            return;
        }
        if (!daemon_back) {
            return;
        }
        daemon_back = false;
        try {
            grant.replace_fd(client.attach_hold(grant.id()));
            std::cerr << "cpuctl: cpuhpd is back; hold " << grant.id() << " re-attached"
                      << std::endl;
        } catch (const DaemonError& e) {
            std::cerr << "cpuctl: cannot re-attach hold " << grant.id() << ": " << e.what()
                      << std::endl;
        }
    };
    const int status = run_command(command, &companion);
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
