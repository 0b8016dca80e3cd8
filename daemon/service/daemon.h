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
#include <optional>
#include <string>

#include "config.h"
#include "engine.h"
#include "event_loop.h"
#include "hold_links.h"
#include "manager_adaptor.h"
#include "metrics.h"
#include "metrics_file.h"
#include "power_profile_follower.h"
#include "progress_throttle.h"
#include "sysfs.h"
#include "uevent_monitor.h"

namespace cpuhpd {

class Daemon final : public ManagerBackend, private EngineEvents {
public:
    explicit Daemon(Config config);
    ~Daemon() override;
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Connects to the bus, publishes the object, takes the name, notifies readiness and
    // serves until SIGTERM/SIGINT. Returns the process exit code.
    int run();

    // ManagerBackend: the engine's answers, on the main thread.
    const MachineState& state() override;
    const MachineState& cached_state() const override { return engine_.state(); }
    const EngineSettings& settings() const override { return engine_.settings(); }
    bool busy() const override { return engine_.busy(); }
    const RecoveryReport& last_recovery() const override { return engine_.last_recovery(); }
    void submit(ChangeAsk ask, std::function<void(ChangeAnswer)> done) override;
    std::uint64_t cancel(std::uint64_t batch_id, const std::string& caller) override;
    void hold(HoldAsk ask, std::function<void(HoldAnswer)> done) override;
    void release_hold(std::uint64_t id, const std::string& caller,
                      std::function<void(ReleaseAnswer)> done) override;
    std::vector<Hold> holds() const override { return engine_.holds(); }
    sdbus::UnixFd attach_hold(std::uint64_t id, const std::string& caller) override;
    const std::map<std::string, Profile>& profiles() const override { return engine_.profiles(); }
    std::optional<ActiveProfile> active_profile() const override {
        return engine_.active_profile();
    }
    void apply_profile(ProfileAsk ask, std::function<void(ProfileAnswer)> done) override;
    std::optional<BatchInFlight> batch_in_flight() const override {
        return engine_.batch_in_flight();
    }
    PowerProfilesSeen power_profiles() const override;

private:
    // EngineEvents: the engine reports; the service logs, announces and emits.
    void state_changed() override;
    void batch_progress(std::uint64_t batch_id, std::size_t done, std::size_t total) override;
    void batch_finished(const BatchReport& report) override;
    void request_finished(const RequestResult& result) override;
    void holds_changed() override;
    void hold_ended(const Hold& hold) override;
    void hold_violated(const HoldViolation& violation) override;
    void profile_change_ended() override;
    void notice(const Notice& notice) override;

    // Rewrites the metrics file (config metrics_file) from the counters and the engine's
    // state, when its text changed; publish_metrics_soon() does it once for any number of
    // calls before the loop's next turn.
    void publish_metrics();
    void publish_metrics_soon();

    void start_uevents();
    // Holds kept across a restart: ends those whose holder has not re-attached once the
    // grace period (config hold_grace_s) is over.
    void start_hold_grace();
    // Before the name is taken: undoes a batch the last daemon left unfinished.
    void recover_interrupted_batch();
    // Then gives cpuset partitions back the online CPUs the last daemon took from them.
    void settle_partitions();
    // First SIGTERM/SIGINT: let go of the bus name, refuse new changes, cancel the batch in
    // flight (or let it finish: config on_stop) and wait for it while this loop goes on
    // serving; then leave the loop.
    void begin_stop();
    std::unique_ptr<sdbus::IConnection> connect() const;
    // Connects, publishes the object, takes the name and starts following
    // power-profiles-daemon; an exit code when the daemon cannot serve (or stopped meanwhile).
    std::optional<int> publish();
    // After the loop: the batch in flight finished, replies delivered, the bus let go.
    int wind_down(int code);

    Config config_;
    FileAttributeWriter writer_;
    EventLoop loop_;
    // Main thread only.
    bool watch_uevents_ = false;  // else state() re-reads once for each D-Bus message
    bool state_read_for_message_ = false;
    bool announce_pending_ = false;
    ProgressThrottle progress_throttle_;  // worker thread only
    // Main thread; metrics_file_ only with config metrics_file.
    Metrics metrics_;
    std::unique_ptr<MetricsFile> metrics_file_;
    bool metrics_pending_ = false;
    sd_event_source* hold_grace_timer_ = nullptr;  // main thread

    std::unique_ptr<UeventMonitor> uevents_;
    std::unique_ptr<sdbus::IConnection> connection_;
    std::unique_ptr<ManagerAdaptor> adaptor_;
    std::unique_ptr<HoldLinks> hold_links_;  // main thread; needs connection_
    // Main thread; needs connection_; only with config power_profiles. Told when a profile
    // change ends.
    std::unique_ptr<PowerProfileFollower> power_profiles_;
    // Last: its threads report through this object and post to loop_.
    Engine engine_;
};

}  // namespace cpuhpd
