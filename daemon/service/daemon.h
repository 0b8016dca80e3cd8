// The service: the engine, the bus object and the event loop put together. Everything
// here runs on the main thread except the executor's worker, whose callbacks only post
// work back to the loop.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "batch_runner.h"
#include "config.h"
#include "event_loop.h"
#include "executor.h"
#include "journal.h"
#include "manager_adaptor.h"
#include "sysfs.h"
#include "topology.h"
#include "uevent_monitor.h"

namespace cpuhpd {

class Daemon final : public ManagerBackend {
public:
    explicit Daemon(Config config);
    ~Daemon() override;
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Connects to the bus, publishes the object, takes the name, notifies readiness and
    // serves until SIGTERM/SIGINT. Returns the process exit code.
    int run();

    // ManagerBackend
    const MachineState& state() override;
    const MachineState& cached_state() const override { return state_; }
    const EngineSettings& settings() const override { return config_.engine; }
    bool busy() const override { return busy_; }
    void submit(Request request, std::function<void(const RequestResult&)> done) override;

private:
    MachineState read_state();  // any thread
    void refresh();             // main thread: re-read, then announce what changed
    void schedule_announce();
    void complete(std::uint64_t token, const RequestResult& result);
    void on_batch_finished(const BatchReport& report);
    void on_progress(std::uint64_t batch_id, std::size_t done, std::size_t total);
    void start_uevents();
    // First SIGTERM/SIGINT: let go of the bus name, refuse new changes, and finish the batch
    // in flight on a helper thread while this loop goes on serving; then leave the loop.
    void begin_stop();
    std::unique_ptr<sdbus::IConnection> connect() const;

    Config config_;
    SysfsPaths paths_;
    FileAttributeWriter writer_;
    NullJournal journal_;
    std::mutex read_mutex_;  // read_machine() updates memory_, from either thread
    TopologyMemory memory_;
    std::optional<std::string> reported_save_error_;  // under read_mutex_
    BatchRunner runner_;
    EventLoop loop_;

    // Main thread only.
    MachineState state_;
    bool busy_ = false;
    std::thread stopper_;         // destroys the executor (waits for the batch in flight)
    bool watch_uevents_ = false;  // else state() re-reads once for each D-Bus message
    bool state_read_for_message_ = false;
    bool announce_pending_ = false;
    std::uint64_t next_token_ = 1;
    std::map<std::uint64_t, std::function<void(const RequestResult&)>> pending_;

    // Worker thread only: BatchProgress rate limit.
    std::uint64_t progress_batch_ = 0;
    std::chrono::steady_clock::time_point progress_last_{};

    std::unique_ptr<UeventMonitor> uevents_;
    std::unique_ptr<sdbus::IConnection> connection_;
    std::unique_ptr<ManagerAdaptor> adaptor_;
    std::unique_ptr<Executor> executor_;  // last: its worker calls into everything above
};

}  // namespace cpuhpd
