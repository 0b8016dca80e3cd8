// The service: the engine, the bus object and the event loop put together. Everything
// here runs on the main thread except the executor's worker, whose callbacks only post
// work back to the loop.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "batch_runner.h"
#include "config.h"
#include "event_loop.h"
#include "executor.h"
#include "hold_links.h"
#include "holds.h"
#include "journal_file.h"
#include "manager_adaptor.h"
#include "power_profile_follower.h"
#include "progress_throttle.h"
#include "recovery.h"
#include "sysfs.h"
#include "task_thread.h"
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
    const RecoveryReport& last_recovery() const override { return last_recovery_; }
    void submit(ChangeAsk ask, std::function<void(ChangeAnswer)> done) override;
    std::uint64_t cancel(std::uint64_t batch_id, const std::string& caller) override;
    void hold(HoldAsk ask, std::function<void(HoldAnswer)> done) override;
    void release_hold(std::uint64_t id, const std::string& caller,
                      std::function<void(ReleaseAnswer)> done) override;
    std::vector<Hold> holds() const override { return holds_.list(); }
    const std::map<std::string, Profile>& profiles() const override { return config_.profiles; }
    std::optional<ActiveProfile> active_profile() const override { return active_profile_; }
    void apply_profile(ProfileAsk ask, std::function<void(ProfileAnswer)> done) override;

private:
    struct Unanswered {
        std::string caller;
        std::function<void(ChangeAnswer)> done;     // a change
        std::function<void(HoldAnswer)> hold_done;  // or a hold
    };

    // Any thread. Every read is also handed to the main thread (in the order of the reads),
    // which adopts it as state_ and announces what changed: so the main thread never waits
    // for sysfs when serving /sys, and properties read after a batch's replies show its end.
    MachineState read_state();
    void adopt(MachineState state);  // main thread
    void refresh();                  // main thread: re-read (no uevents), adopt
    void schedule_announce();
    // Admission thread: resolves the change against a fresh read and queues it.
    void admit(std::uint64_t token, const ChangeAsk& ask);
    void complete(std::uint64_t token, ChangeAnswer answer);
    // Counts a change of `caller` as unanswered (throws Refusal(Busy) beyond its share, or
    // when stopping) and returns its token; take_unanswered() ends that.
    std::uint64_t count_unanswered(const std::string& caller);
    std::optional<Unanswered> take_unanswered(std::uint64_t token);

    // Holds (daemon_holds.cpp). Admission thread: resolves the hold's change, takes the hold
    // and queues the change.
    void admit_hold(std::uint64_t token, const HoldAsk& ask);
    // Main thread: the hold's change is done (or refused): link the hold to its fd and
    // reply, or drop it.
    void finish_hold(std::uint64_t token, std::uint64_t id, ChangeAnswer answer);
    // Main thread: ends hold `id` and, if it asked, restores its CPUs; `done` (may be empty)
    // gets the restore's results.
    void end_hold(std::uint64_t id, const std::string& reason,
                  std::function<void(ReleaseAnswer)> done);
    // Admission thread: brings the CPUs of an ended hold back to their state before it.
    void restore_hold(const Hold& hold, std::function<void(ReleaseAnswer)> done);
    void announce_holds();
    // Profiles (daemon_profiles.cpp). Admission thread: plans `profile` (none: revert
    // `active`) against a fresh read and queues its changes; `done` runs on the main thread.
    void run_profile(const ProfileAsk& ask, const std::optional<Profile>& profile,
                     const std::optional<ActiveProfile>& active,
                     const std::function<void(ProfileAnswer)>& done);
    // The state file of the profile in force (state_dir/profile): read at start, written
    // after every change.
    void load_active_profile();
    void save_active_profile();
    // Main thread: tells the power profile follower (soon, from the loop) that the profile
    // change in progress has ended.
    void profile_change_ended();
    void log_result(const RequestResult& result) const;
    void on_batch_finished(const BatchReport& report);
    void on_progress(std::uint64_t batch_id, std::size_t done, std::size_t total);
    void start_uevents();
    // Before the name is taken: undoes a batch the last daemon left unfinished.
    void recover_interrupted_batch();
    // Then gives cpuset partitions back the online CPUs the last daemon took from them.
    void settle_partitions();
    // First SIGTERM/SIGINT: let go of the bus name, refuse new changes, cancel the batch in
    // flight (or let it finish: config on_stop) and wait for it on the admission thread
    // while this loop goes on serving; then leave the loop.
    void begin_stop();
    std::unique_ptr<sdbus::IConnection> connect() const;

    Config config_;
    SysfsPaths paths_;
    FileAttributeWriter writer_;
    FileJournal journal_;
    std::mutex read_mutex_;  // read_machine() updates memory_, from any thread
    TopologyMemory memory_;
    std::optional<std::string> reported_save_error_;  // under read_mutex_
    BatchRunner runner_;
    EventLoop loop_;

    // Main thread only.
    MachineState state_;
    RecoveryReport last_recovery_;
    bool busy_ = false;
    bool stopping_ = false;       // after the first SIGTERM/SIGINT
    bool watch_uevents_ = false;  // else state() re-reads once for each D-Bus message
    bool state_read_for_message_ = false;
    bool announce_pending_ = false;
    std::uint64_t next_token_ = 1;
    std::map<std::uint64_t, Unanswered> unanswered_;
    std::map<std::string, std::size_t> unanswered_by_caller_;
    std::atomic<bool> refresh_queued_{false};  // a uevent's re-read waits to be started
    std::optional<ActiveProfile> active_profile_;
    bool profile_changing_ = false;  // an apply or revert is queued or running

    ProgressThrottle progress_throttle_;  // worker thread only
    HoldTable holds_;                     // any thread

    std::unique_ptr<UeventMonitor> uevents_;
    std::unique_ptr<sdbus::IConnection> connection_;
    std::unique_ptr<ManagerAdaptor> adaptor_;
    std::unique_ptr<HoldLinks> hold_links_;  // main thread; needs connection_
    // Main thread; needs connection_; only with config power_profiles. Told when a profile
    // change ends (daemon_profiles.cpp).
    std::unique_ptr<PowerProfileFollower> power_profiles_;
    // Used on the admission thread only, once run() has started it; its worker calls into
    // everything above.
    std::unique_ptr<Executor> executor_;
    // Last: resolves changes and re-reads sysfs after uevents, off the event loop; its tasks
    // use everything above.
    std::unique_ptr<TaskThread> admission_;
};

}  // namespace cpuhpd
