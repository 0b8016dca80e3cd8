// A polkit authentication agent for one process, for tests of interactive authorization:
// registered (as root) for that process, it answers every BeginAuthentication at once by
// telling polkit that root authenticated (AuthenticationAgentResponse2, which only uid 0
// may call), and records what polkit asked. Runs its own connection on its own thread.
#pragma once

#include <sys/types.h>
#include <systemd/sd-bus.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cpuhpd::itest {

class PolkitAgent {
public:
    struct Request {
        std::string action_id;
        std::string message;  // as polkit expanded it for the dialog
    };

    // Registers for process `pid` with polkit on the bus at `address`; throws
    // std::runtime_error when polkit refuses.
    PolkitAgent(const std::string& address, pid_t pid);
    ~PolkitAgent();
    PolkitAgent(const PolkitAgent&) = delete;
    PolkitAgent& operator=(const PolkitAgent&) = delete;

    std::vector<Request> requests();

    // sd-bus method handlers (public for the vtable).
    static int on_begin_entry(sd_bus_message* m, void* userdata, sd_bus_error* error);
    static int on_cancel_entry(sd_bus_message* m, void* userdata, sd_bus_error* error);

private:
    void run();

    sd_bus* bus_ = nullptr;
    sd_bus_slot* slot_ = nullptr;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::vector<Request> requests_;
    std::thread thread_;
};

}  // namespace cpuhpd::itest
