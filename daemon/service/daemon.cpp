#include "daemon.h"

#include <systemd/sd-daemon.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "input.h"
#include "log.h"
#include "names.h"

namespace cpuhpd {

namespace {

// Changes one caller may have waiting for their replies (admission, queue and batch).
constexpr std::size_t kMaxUnansweredPerCaller = 2 * kMaxQueuedPerCaller;

// BatchProgress at most this often per batch (plus the final one).
constexpr auto kProgressInterval = std::chrono::milliseconds(200);

std::filesystem::path prepare_state_dir(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        throw std::runtime_error("cannot create the state directory " + dir.string() + ": " +
                                 ec.message());
    }
    return dir;
}

// SIGTERM or SIGINT came during the start-up. They are blocked in every thread (the loop takes
// them through a signalfd once it runs), so until then they wait as pending: the start-up
// looks between its steps, and leaves before serving instead of after a step that may wait
// (recovery's writes, connecting to the bus, taking the name).
std::optional<std::string> stop_signal_pending() {
    sigset_t pending;
    if (sigpending(&pending) != 0) {
        return std::nullopt;
    }
    for (const int sig : {SIGTERM, SIGINT}) {
        if (sigismember(&pending, sig) == 1) {
            return std::string("SIG") + sigabbrev_np(sig);
        }
    }
    return std::nullopt;
}

bool stopped_while_starting(const char* step) {
    const auto signal = stop_signal_pending();
    if (signal) {
        log::info("received " + *signal + " while starting (" + step +
                  "); stopping before serving");
        sd_notify(0, "STOPPING=1\nSTATUS=Stopped while starting");
    }
    return signal.has_value();
}

std::string duration_text(std::chrono::microseconds duration) {
    return std::to_string(duration.count()) + "us";
}

}  // namespace

Daemon::Daemon(Config config)
    : config_(std::move(config)),
      paths_(config_.sysfs_root),
      journal_(prepare_state_dir(config_.state_dir),
               [](const std::string& problem) { log::warning(problem); }),
      memory_(config_.state_dir / "topology.cache"),
      runner_(
          paths_, writer_, journal_, [this] { return read_state(); }, config_.engine,
          config_.proc_root, config_.cgroup_root, config_.state_dir / "partitions"),
      progress_throttle_(kProgressInterval) {
    if (const auto problem = memory_.load()) {
        log::warning("ignoring the topology cache: " + *problem);
    }
    state_ = read_state();
    if (state_.present.empty()) {
        throw std::runtime_error("no CPUs found below " + paths_.cpu_dir().string());
    }
}

Daemon::~Daemon() = default;

MachineState Daemon::read_state() {
    const std::lock_guard lock(read_mutex_);
    MachineState state = read_machine(paths_, memory_);
    // Without the cache, "package:1" stops resolving after a restart while package 1 is
    // offline: say so once per distinct failure, and once when it works again.
    if (memory_.save_error() != reported_save_error_) {
        if (memory_.save_error()) {
            log::warning(*memory_.save_error() +
                         "; the topology of offline CPUs will be unknown after a restart");
        } else {
            log::info("topology cache saved again");
        }
        reported_save_error_ = memory_.save_error();
    }
    // Posted under the lock, so the main thread adopts the reads in the order they were made.
    loop_.post([this, state] { adopt(state); });
    return state;
}

void Daemon::adopt(MachineState state) {
    state_ = std::move(state);
    schedule_announce();
}

const MachineState& Daemon::state() {
    // Without uevents the tree is read again for each D-Bus message, once: a GetAll of
    // every property, or a method that asks several times, reads it once.
    if (!watch_uevents_ && !state_read_for_message_) {
        refresh();
        state_read_for_message_ = true;
    }
    return state_;
}

void Daemon::refresh() {
    // Needed now, for this message; read_state() also posted its adoption (and the
    // announcement of any change) to this loop.
    state_ = read_state();
}

void Daemon::schedule_announce() {
    if (announce_pending_ || !adaptor_) {
        return;
    }
    announce_pending_ = true;
    loop_.post([this] {
        announce_pending_ = false;
        if (adaptor_) {
            adaptor_->announce_changes();
        }
    });
}

std::uint64_t Daemon::count_unanswered(const std::string& caller) {
    if (stopping_) {
        throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; nothing was changed");
    }
    // Bounds what one caller can make the admission thread do (each change is resolved
    // there, a maximum-size mask in milliseconds) and what it holds in memory.
    std::size_t& count = unanswered_by_caller_[caller];
    if (count >= kMaxUnansweredPerCaller) {
        throw Refusal(RefusalKind::Busy, "this caller has " +
                                             std::to_string(kMaxUnansweredPerCaller) +
                                             " changes unanswered already (the most one caller "
                                             "may have); wait for their replies");
    }
    ++count;
    return next_token_++;
}

std::optional<Daemon::Unanswered> Daemon::take_unanswered(std::uint64_t token) {
    const auto it = unanswered_.find(token);
    if (it == unanswered_.end()) {
        return std::nullopt;
    }
    Unanswered entry = std::move(it->second);
    unanswered_.erase(it);
    if (const auto count = unanswered_by_caller_.find(entry.caller);
        count != unanswered_by_caller_.end() && --count->second == 0) {
        unanswered_by_caller_.erase(count);
    }
    return entry;
}

void Daemon::submit(ChangeAsk ask, std::function<void(ChangeAnswer)> done) {
    const std::uint64_t token = count_unanswered(ask.caller);
    unanswered_.emplace(token, Unanswered{ask.caller, std::move(done), {}});
    admission_->post([this, token, ask = std::move(ask)] { admit(token, ask); });
}

std::uint64_t Daemon::cancel(std::uint64_t batch_id, const std::string& caller) {
    if (stopping_) {
        throw Refusal(RefusalKind::Busy,
                      std::string("cpuhpd is stopping; the batch in flight is being ") +
                          (config_.on_stop == StopPolicy::Cancel ? "cancelled" : "finished"));
    }
    // No batch runs unless run() made the executor, and only begin_stop() lets it go.
    const std::uint64_t cancelled = executor_ ? executor_->cancel(batch_id) : 0;
    if (cancelled == 0) {
        throw Refusal(RefusalKind::NoSuchBatch, "no batch is running");
    }
    log::info("batch " + std::to_string(cancelled) + ": cancel requested by " +
                  (caller.empty() ? std::string("a caller") : caller),
              {{"BATCH_ID", std::to_string(cancelled)}});
    return cancelled;
}

void Daemon::admit(std::uint64_t token, const ChangeAsk& ask) {
    try {
        if (!executor_) {
            throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; nothing was changed");
        }
        const MachineState state = read_state();
        // Called on the worker thread (or right here for a dry run): hand the result back
        // to the main thread, where the reply is sent.
        executor_->submit(resolve(ask, state, config_.engine), state,
                          [this, token](RequestResult result) {
                              loop_.post([this, token, result = std::move(result)]() mutable {
                                  complete(token, std::move(result));
                              });
                          });
    } catch (...) {
        loop_.post([this, token, error = std::current_exception()] { complete(token, error); });
    }
}

void Daemon::complete(std::uint64_t token, ChangeAnswer answer) {
    auto entry = take_unanswered(token);
    if (!entry) {
        return;
    }
    if (const auto* result = std::get_if<RequestResult>(&answer)) {
        log_result(*result);
    }
    entry->done(std::move(answer));
}

void Daemon::log_result(const RequestResult& result) const {
    const std::string action = to_string(result.action);
    if (result.refusal) {
        log::info(action + " " + result.mask + " refused: " + result.refusal->what(),
                  {{"ACTION", action}, {"BATCH_ID", std::to_string(result.batch_id)}});
    } else if (!result.dry_run) {
        CpuSet cpus;
        for (const auto& cpu : result.cpus) {
            cpus.add(cpu.cpu);
            if (cpu.outcome == CpuOutcome::Failed) {
                log::warning("cpu " + std::to_string(cpu.cpu) + ": " + action +
                                 " failed: " + errno_name(cpu.error) + " (" + cpu.message + ")",
                             {{"CPUS", std::to_string(cpu.cpu)},
                              {"ACTION", action},
                              {"ERRNO", errno_name(cpu.error)},
                              {"BATCH_ID", std::to_string(result.batch_id)}});
            }
        }
        log::info(action + " '" + result.mask + "': " + to_string(result.outcome),
                  {{"ACTION", action},
                   {"CPUS", cpus.to_string()},
                   {"STRATEGY", to_string(result.strategy)},
                   {"MODE", to_string(result.mode)},
                   {"OUTCOME", to_string(result.outcome)},
                   {"BATCH_ID", std::to_string(result.batch_id)},
                   {"DURATION_US", std::to_string(result.duration.count())}});
        // No re-read here: the batch's last read of the machine was handed to this thread
        // before its results, so properties read after the reply show the new state.
    }
}

void Daemon::on_batch_finished(const BatchReport& report) {
    for (const auto& change : report.partitions) {
        const std::string text = "batch " + std::to_string(report.batch_id) +
                                 ": cpuset partition " + change.path + " (" + change.kind +
                                 "): CPU " + change.before.to_string() + " -> " +
                                 (change.after.empty() ? "-" : change.after.to_string());
        log::write(change.error != 0 ? log::Level::Warning : log::Level::Info,
                   change.error != 0 ? text + " failed: " + errno_name(change.error) + " (" +
                                           errno_text(change.error) + ")"
                                     : text,
                   {{"BATCH_ID", std::to_string(report.batch_id)},
                    {"PARTITION", change.path},
                    {"CPUS", change.after.to_string()}});
    }
    const std::string action = to_string(report.action);
    const std::string strategy = to_string(report.strategy);
    std::string text = "batch " + std::to_string(report.batch_id) + ": " + action + " " +
                       (report.changed.empty() ? "nothing" : report.changed.to_string()) + " via " +
                       strategy + " in " + duration_text(report.duration) + ", " +
                       std::to_string(report.requests) + " request(s)";
    if (report.expedited) {
        text += ", rcu expedited";
    }
    if (!report.failed.empty()) {
        text += ", failed: " + report.failed.to_string();
    }
    if (!report.cancelled.empty()) {
        text += ", cancelled before " + report.cancelled.to_string();
    }
    log::write(report.failed.empty() ? log::Level::Info : log::Level::Warning, text,
               {{"BATCH_ID", std::to_string(report.batch_id)},
                {"ACTION", action},
                {"STRATEGY", strategy},
                {"CPUS", report.changed.to_string()},
                {"FAILED_CPUS", report.failed.to_string()},
                {"CANCELLED_CPUS", report.cancelled.to_string()},
                {"REQUESTS", std::to_string(report.requests)},
                {"DURATION_US", std::to_string(report.duration.count())},
                {"EXPEDITED", report.expedited ? "1" : "0"}});
    if (adaptor_) {
        try {
            adaptor_->emitBatchFinished(
                report.batch_id, action, strategy, report.changed.to_string(),
                report.failed.to_string(), static_cast<uint32_t>(report.requests),
                static_cast<uint64_t>(report.duration.count()), report.cancelled.to_string());
        } catch (const sdbus::Error& error) {
            log::warning(std::string("cannot emit BatchFinished: ") + error.what());
        }
    }
}

// Worker thread.
void Daemon::on_progress(std::uint64_t batch_id, std::size_t done, std::size_t total) {
    if (!progress_throttle_.admit(batch_id, done, total, std::chrono::steady_clock::now())) {
        return;
    }
    loop_.post([this, batch_id, done, total] {
        if (!adaptor_) {
            return;
        }
        try {
            adaptor_->emitBatchProgress(batch_id, static_cast<uint32_t>(done),
                                        static_cast<uint32_t>(total));
        } catch (const sdbus::Error& error) {
            log::warning(std::string("cannot emit BatchProgress: ") + error.what());
        }
    });
}

std::unique_ptr<sdbus::IConnection> Daemon::connect() const {
    if (config_.bus == "system") {
        return sdbus::createSystemBusConnection();
    }
    if (config_.bus == "session") {
        return sdbus::createSessionBusConnection();
    }
    // An address ("unix:path=..."): sdbus-c++ 1.2 can only open those as a "session"
    // connection, which for a bus daemon is the same thing (Hello, name ownership).
    return sdbus::createSessionBusConnectionWithAddress(config_.bus);
}

void Daemon::start_uevents() {
    std::string error;
    if (!config_.uevent_socket.empty()) {
        uevents_ = UeventMonitor::open_socket(config_.uevent_socket, error);
        if (!uevents_) {
            throw std::runtime_error(error);
        }
        log::info("taking CPU uevents from " + config_.uevent_socket.string());
    } else if (normalize_directory(config_.sysfs_root) != std::filesystem::path("/sys")) {
        // Uevents come from the real kernel: they would only confuse a daemon pointed at a
        // fake tree (tests), which instead re-reads its tree on every call.
        log::info("sysfs root is " + config_.sysfs_root.string() +
                  ", not /sys, and no --uevent-socket: re-reading it on each call");
        return;
    } else {
        uevents_ = UeventMonitor::open(error);
        if (!uevents_) {
            log::warning(error + "; CPU changes made by other tools are noticed on the next call");
            return;
        }
    }
    loop_.watch(uevents_->fd(), [this] {
        // At most one re-read waiting, however many uevents come; it runs on the admission
        // thread, so a slow sysfs file never stalls this loop. During a batch the uevents
        // are our own and the batch's last read covers them.
        if (uevents_->drain() && !busy_ && !refresh_queued_.exchange(true)) {
            admission_->post([this] {
                refresh_queued_ = false;  // a uevent from now on queues another re-read
                read_state();             // adopted on the main thread
            });
        }
    });
    watch_uevents_ = true;
}

void Daemon::begin_stop() {
    if (stopping_) {
        return;
    }
    stopping_ = true;
    const bool cancel = config_.on_stop == StopPolicy::Cancel;
    sd_notify(0, cancel ? "STOPPING=1\nSTATUS=Cancelling the batch in flight"
                        : "STOPPING=1\nSTATUS=Finishing the batch in flight");
    // Callers of org.cpuhpd1 hear at once that nobody serves it (or activate a new
    // instance) instead of waiting for a name that answers nothing; calls already addressed
    // to this connection get replies: reads are served, changes refused Busy.
    try {
        connection_->releaseName(dbus::kBusName);
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot release ") + dbus::kBusName + ": " + error.getMessage());
    }
    log::info(std::string("released ") + dbus::kBusName +
              (cancel ? "; cancelling the batch in flight (on_stop: cancel)"
                      : "; finishing the batch in flight (on_stop: finish)"));
    // The executor lives until the task below resets it, which only this function posts.
    if (cancel) {
        executor_->cancel_all();
    }
    // After the changes admitted before it: the executor's destructor waits for the batch in
    // flight (cancelled: it stops after the write in flight and rolls atomic requests back)
    // and answers the queued requests Busy, through loop_.post(), which this loop keeps
    // serving meanwhile.
    admission_->post([this] {
        executor_.reset();
        loop_.post([this] { loop_.exit(0); });
    });
}

void Daemon::recover_interrupted_batch() {
    // Its own runner, with no journal: the journal being recovered stays in place until
    // recovery is done, so a crash during recovery recovers again at the next start.
    NullJournal no_journal;
    BatchRunner recovery_runner(
        paths_, writer_, no_journal, [this] { return read_state(); }, config_.engine);
    last_recovery_ = recover(
        config_.state_dir, paths_, writer_, recovery_runner, [this] { return read_state(); },
        config_.engine);
    const RecoveryReport& r = last_recovery_;
    if (r.outcome == RecoveryOutcome::None) {
        return;
    }
    const bool trouble = r.outcome == RecoveryOutcome::Rejected || !r.failed.empty();
    log::write(trouble ? log::Level::Error : log::Level::Warning, "recovery: " + r.summary,
               {{"RECOVERY", to_string(r.outcome)},
                {"BATCH_ID", std::to_string(r.batch_id)},
                {"ACTION", to_string(r.action)},
                {"STRATEGY", to_string(r.strategy)},
                {"CPUS", r.planned.to_string()},
                {"FOUND_CPUS", r.found.to_string()},
                {"RESTORED_CPUS", r.restored.to_string()},
                {"KEPT_CPUS", r.kept.to_string()},
                {"FAILED_CPUS", r.failed.to_string()}});
    state_ = read_state();
}

void Daemon::settle_partitions() {
    std::optional<std::string> problem;
    for (const auto& change : runner_.settle_partitions(problem)) {
        const std::string what = "cpuset partition " + change.path + ": gave back CPU " +
                                 (change.after - change.before).to_string() +
                                 " taken before a restart";
        if (change.error != 0) {
            log::warning(what + " failed: " + errno_name(change.error),
                         {{"PARTITION", change.path}, {"CPUS", change.after.to_string()}});
        } else {
            log::info(what, {{"PARTITION", change.path}, {"CPUS", change.after.to_string()}});
        }
    }
    if (problem) {
        log::warning("ignoring the partition ledger: " + *problem);
    }
}

int Daemon::run() {
    Executor::Observers observers;
    observers.batch_finished = [this](const BatchReport& report) {
        loop_.post([this, report] { on_batch_finished(report); });
    };
    observers.progress = [this](std::uint64_t batch_id, std::size_t done, std::size_t total) {
        on_progress(batch_id, done, total);
    };
    observers.busy_changed = [this](bool busy) {
        loop_.post([this, busy] {
            busy_ = busy;
            schedule_announce();
        });
    };
    if (stopped_while_starting("before recovery")) {
        return 0;
    }
    // Before any batch can start and before the name is taken.
    recover_interrupted_batch();
    settle_partitions();
    load_active_profile();
    if (stopped_while_starting("after recovery")) {
        return 0;
    }
    executor_ = std::make_unique<Executor>(runner_, config_.engine, std::move(observers), &holds_);
    admission_ = std::make_unique<TaskThread>();
    // Before the name is taken: a caller who sees org.cpuhpd1 may rely on uevents being
    // heard. One more read (nothing is served yet) covers what changed since the
    // constructor's.
    start_uevents();
    if (watch_uevents_) {
        state_ = read_state();
    }

    try {
        connection_ = connect();
    } catch (const sdbus::Error& error) {
        log::error("cannot connect to the " + config_.bus + " bus: " + error.getMessage());
        return 1;
    }
    if (stopped_while_starting("connected to the bus, before taking the name")) {
        return 0;
    }
    loop_.attach(*connection_);
    loop_.before_each_message([this] { state_read_for_message_ = false; });
    // As hostnamed: publish the object first, then take the name, then report ready.
    adaptor_ = std::make_unique<ManagerAdaptor>(*connection_, *this);
    hold_links_ = std::make_unique<HoldLinks>(
        loop_, [this](std::uint64_t id, const std::string& reason) { end_hold(id, reason, {}); });
    try {
        connection_->requestName(dbus::kBusName);
    } catch (const sdbus::Error& error) {
        log::error(std::string("cannot own the bus name ") + dbus::kBusName + ": " +
                   error.getMessage() + " (is another cpuhpd running, or does the bus policy " +
                   "not allow this user to own it?)");
        return 1;
    }
    loop_.on_stop_signal([this] { begin_stop(); });
    if (!config_.power_profiles.empty()) {
        // Its first read is answered in the loop; its switches are changes like any other.
        try {
            power_profiles_ =
                std::make_unique<PowerProfileFollower>(*connection_, *this, config_.power_profiles);
        } catch (const sdbus::Error& error) {
            log::error("cannot follow power-profiles-daemon: " + error.getMessage());
            return 1;
        }
    }

    log::info(std::string("serving ") + dbus::kBusName + " on the " + config_.bus +
                  " bus; online " + state_.online.to_string() + ", capabilities " +
                  [this] {
                      std::string names;
                      for (const auto kind : state_.capabilities()) {
                          names += (names.empty() ? "" : ",") + to_string(kind);
                      }
                      return names;
                  }(),
              {{"CPUS", state_.online.to_string()}});
    sd_notify(0, "READY=1\nSTATUS=Serving org.cpuhpd1");

    const int code = loop_.run();
    power_profiles_.reset();  // no switch is started while the daemon winds down

    // After a stop signal (begin_stop() said STOPPING=1) the admission thread has finished
    // the batch; after a failure of the loop (the bus went away) the changes waiting to be
    // admitted are queued and the batch in flight is finished here. Queued requests are
    // answered Busy; then those replies are delivered and the bus is let go.
    if (!stopping_) {
        sd_notify(0, "STOPPING=1\nSTATUS=Finishing the batch in flight");
    }
    admission_.reset();
    executor_.reset();
    loop_.drain();
    loop_.drain();
    if (const auto holds = holds_.list(); !holds.empty()) {
        log::info(std::to_string(holds.size()) +
                  " hold(s) end with the service, without a restore; their CPUs stay as they are");
    }
    hold_links_.reset();  // its bus matches go before the connection
    adaptor_.reset();
    uevents_.reset();
    connection_.reset();
    log::info("stopped");
    return code;
}

}  // namespace cpuhpd
