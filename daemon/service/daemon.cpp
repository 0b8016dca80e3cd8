#include "daemon.h"

#include <systemd/sd-daemon.h>

#include <algorithm>
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
#include "service_log.h"

namespace cpuhpd {

namespace {

// BatchProgress at most this often per batch (plus the final one).
constexpr auto kProgressInterval = std::chrono::milliseconds(200);

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

EngineSetup engine_setup(const Config& config) {
    EngineSetup setup;
    setup.sysfs_root = config.sysfs_root;
    setup.proc_root = config.proc_root;
    setup.cgroup_root = config.cgroup_root;
    setup.state_dir = config.state_dir;
    setup.settings = config.engine;
    setup.profiles = config.profiles;
    return setup;
}

}  // namespace

Daemon::Daemon(Config config)
    : config_(std::move(config)),
      progress_throttle_(kProgressInterval),
      metrics_file_(config_.metrics_file.empty()
                        ? nullptr
                        : std::make_unique<MetricsFile>(config_.metrics_file)),
      engine_(engine_setup(config_), writer_, *this,
              [this](std::function<void()> task) { loop_.post(std::move(task)); }) {
    metrics_.start_time_s = std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
}

Daemon::~Daemon() {
    if (hold_grace_timer_ != nullptr) {
        sd_event_source_disable_unref(hold_grace_timer_);
    }
}

void Daemon::publish_metrics() {
    if (!metrics_file_) {
        return;
    }
    metrics_.gauges =
        gauges_of(engine_.state(), engine_.settings(), engine_.holds(), engine_.active_profile());
    metrics_file_->update(format_metrics(metrics_));
}

void Daemon::publish_metrics_soon() {
    if (!metrics_file_ || metrics_pending_) {
        return;
    }
    metrics_pending_ = true;
    loop_.post([this] {
        metrics_pending_ = false;
        publish_metrics();
    });
}

const MachineState& Daemon::state() {
    // Without uevents the tree is read again for each D-Bus message, once: a GetAll of
    // every property, or a method that asks several times, reads it once.
    if (!watch_uevents_ && !state_read_for_message_) {
        engine_.refresh();
        state_read_for_message_ = true;
    }
    return engine_.state();
}

void Daemon::state_changed() {
    // CPUs another tool changed (uevents), busy, the profile in force: the gauges.
    publish_metrics_soon();
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

void Daemon::submit(ChangeAsk ask, std::function<void(ChangeAnswer)> done) {
    engine_.change(std::move(ask), std::move(done));
}

std::uint64_t Daemon::cancel(std::uint64_t batch_id, const std::string& caller) {
    const std::uint64_t cancelled = engine_.cancel(batch_id);
    log::info("batch " + std::to_string(cancelled) + ": cancel requested by " +
                  (caller.empty() ? std::string("a caller") : caller),
              {{"BATCH_ID", std::to_string(cancelled)}});
    return cancelled;
}

void Daemon::hold(HoldAsk ask, std::function<void(HoldAnswer)> done) {
    // The hold's fd, made when the engine binds the hold to its holder.
    auto fd = std::make_shared<sdbus::UnixFd>();
    ask.bind = [this, fd](const Hold& hold) {
        if (!hold_links_) {
            throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; the hold was not kept");
        }
        try {
            *fd = hold_links_->link(hold.id, *connection_, hold.holder);
        } catch (const std::exception& error) {
            log::warning("hold " + std::to_string(hold.id) +
                         ": cannot link it to a file descriptor: " + error.what());
            throw;
        }
    };
    engine_.hold(std::move(ask), [fd, done = std::move(done)](HoldOutcome outcome) {
        if (auto* taken = std::get_if<HoldTaken>(&outcome)) {
            // If the holder is gone by now, the reply goes nowhere, its end of the fd closes
            // with it, and the hold ends as if the holder had closed it.
            done(HeldCpus{taken->id, std::move(*fd), std::move(taken->result)});
        } else {
            done(std::get<std::exception_ptr>(outcome));
        }
    });
}

void Daemon::release_hold(std::uint64_t id, const std::string& caller,
                          std::function<void(ReleaseAnswer)> done) {
    engine_.release(id, caller, std::move(done));
}

sdbus::UnixFd Daemon::attach_hold(std::uint64_t id, const std::string& caller) {
    if (!hold_links_) {
        throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; attach again when it is back");
    }
    const auto holds = engine_.holds();
    if (std::none_of(holds.begin(), holds.end(), [&](const Hold& h) { return h.id == id; })) {
        throw Refusal(RefusalKind::NoSuchHold, "no hold " + std::to_string(id) + " exists");
    }
    // The new fd first (it replaces the old link): when it cannot be made, nothing changes.
    sdbus::UnixFd fd;
    try {
        fd = hold_links_->link(id, *connection_, caller);
    } catch (const std::exception& error) {
        log::warning("hold " + std::to_string(id) +
                     ": cannot link it to a new fd: " + error.what());
        throw;
    }
    try {
        engine_.attach_hold(id, caller);
    } catch (...) {
        hold_links_->unlink(id);
        throw;
    }
    return fd;
}

void Daemon::hold_violated(const HoldViolation& violation) {
    if (adaptor_) {
        adaptor_->announce_violation(violation);
    }
}

void Daemon::start_hold_grace() {
    if (engine_.unattached_holds().empty()) {
        return;
    }
    const auto grace =
        std::chrono::duration_cast<std::chrono::microseconds>(engine_.settings().hold_grace);
    const int r = sd_event_add_time_relative(
        loop_.get(), &hold_grace_timer_, CLOCK_MONOTONIC, static_cast<std::uint64_t>(grace.count()),
        0,
        [](sd_event_source*, uint64_t, void* self) -> int {
            auto* daemon = static_cast<Daemon*>(self);
            daemon->loop_.post([daemon] {
                if (!daemon->engine_.stopping()) {
                    daemon->engine_.expire_unattached();
                }
            });
            return 0;
        },
        this);
    if (r < 0) {
        log::error(std::string("cannot arm the holds' grace timer: ") + std::strerror(-r) +
                   "; ending the holds kept across the restart now");
        engine_.expire_unattached();
        return;
    }
    log::info(std::to_string(engine_.unattached_holds().size()) +
              " hold(s) kept across the restart wait " +
              std::to_string(engine_.settings().hold_grace.count()) +
              " s for their holders to re-attach");
}

void Daemon::hold_ended(const Hold& hold) {
    if (hold_links_) {
        hold_links_->unlink(hold.id);
    }
}

void Daemon::holds_changed() {
    publish_metrics();
    if (adaptor_) {
        adaptor_->announce_holds();
    }
    state_changed();
}

void Daemon::apply_profile(ProfileAsk ask, std::function<void(ProfileAnswer)> done) {
    engine_.apply_profile(std::move(ask), std::move(done));
}

void Daemon::profile_change_ended() {
    publish_metrics();
    // After the caller's reply: the power profile follower's switch that waited for this
    // change comes next.
    loop_.post([this] {
        if (power_profiles_) {
            power_profiles_->profile_change_ended();
        }
    });
}

void Daemon::notice(const Notice& notice) {
    log_notice(notice);
}

void Daemon::request_finished(const RequestResult& result) {
    log_result(result);
}

PowerProfilesSeen Daemon::power_profiles() const {
    if (power_profiles_) {
        return power_profiles_->seen();
    }
    return PowerProfilesSeen{!config_.power_profiles.empty(), false, {}};
}

void Daemon::batch_finished(const BatchReport& report) {
    log_batch(report);
    state_changed();  // CurrentBatch is empty now
    metrics_.count(report);
    publish_metrics();
    if (adaptor_) {
        adaptor_->announce_batch(report);
    }
}

// Worker thread.
void Daemon::batch_progress(std::uint64_t batch_id, std::size_t done, std::size_t total) {
    if (!progress_throttle_.admit(batch_id, done, total, std::chrono::steady_clock::now())) {
        return;
    }
    loop_.post([this, batch_id, done, total] {
        if (!adaptor_) {
            return;
        }
        adaptor_->announce_progress(batch_id, done, total);
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
        if (uevents_->drain()) {
            engine_.refresh_later();
        }
    });
    watch_uevents_ = true;
}

void Daemon::begin_stop() {
    if (engine_.stopping()) {
        return;
    }
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
    // The engine answers the queued requests Busy through loop_.post(), which this loop
    // keeps serving until the batch in flight is over.
    engine_.stop(cancel, [this] { loop_.exit(0); });
}

void Daemon::recover_interrupted_batch() {
    const RecoveryReport& report = engine_.recover();
    metrics_.count(report);
    if (report.outcome != RecoveryOutcome::None) {
        log_recovery(report);
        engine_.refresh();
    }
}

void Daemon::settle_partitions() {
    std::optional<std::string> problem;
    log_settled(engine_.settle_partitions(problem), problem);
}

std::optional<int> Daemon::publish() {
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
        loop_,
        [this](std::uint64_t id, const std::string& reason) { engine_.end_hold(id, reason); });
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
            power_profiles_ = std::make_unique<PowerProfileFollower>(
                *connection_, *this, config_.power_profiles, [this] { state_changed(); });
        } catch (const sdbus::Error& error) {
            log::error("cannot follow power-profiles-daemon: " + error.getMessage());
            return 1;
        }
    }

    return std::nullopt;
}

int Daemon::run() {
    if (stopped_while_starting("before recovery")) {
        return 0;
    }
    // Before recovery, which leaves their CPUs as the holds have them.
    engine_.load_holds();
    // Before any batch can start and before the name is taken.
    recover_interrupted_batch();
    settle_partitions();
    engine_.load_active_profile();
    // The first write: the recovery, and the state the daemon starts from.
    publish_metrics();
    if (stopped_while_starting("after recovery")) {
        return 0;
    }
    engine_.start();
    // Before the name is taken: a caller who sees org.cpuhpd1 may rely on uevents being
    // heard. One more read (nothing is served yet) covers what changed since the
    // constructor's.
    start_uevents();
    if (watch_uevents_) {
        engine_.refresh();
    }

    if (const auto code = publish()) {
        return *code;
    }
    log::info(std::string("serving ") + dbus::kBusName + " on the " + config_.bus +
                  " bus; online " + engine_.state().online.to_string() + ", capabilities " +
                  [this] {
                      std::string names;
                      for (const auto kind : engine_.state().capabilities()) {
                          names += (names.empty() ? "" : ",") + to_string(kind);
                      }
                      return names;
                  }(),
              {{"CPUS", engine_.state().online.to_string()}});
    sd_notify(0, "READY=1\nSTATUS=Serving org.cpuhpd1");
    start_hold_grace();

    return wind_down(loop_.run());
}

int Daemon::wind_down(int code) {
    power_profiles_.reset();  // no switch is started while the daemon winds down

    // After a stop signal (begin_stop() said STOPPING=1) the admission thread has finished
    // the batch; after a failure of the loop (the bus went away) the changes waiting to be
    // admitted are queued and the batch in flight is finished here. Queued requests are
    // answered Busy; then those replies are delivered and the bus is let go.
    if (!engine_.stopping()) {
        sd_notify(0, "STOPPING=1\nSTATUS=Finishing the batch in flight");
    }
    engine_.shutdown();
    loop_.drain();
    loop_.drain();
    if (const auto holds = engine_.holds(); !holds.empty()) {
        log::info(std::to_string(holds.size()) + " hold(s) kept in " +
                  (config_.state_dir / kHoldsFileName).string() +
                  " for the next start: their holders may re-attach within " +
                  std::to_string(engine_.settings().hold_grace.count()) + " s of it");
    }
    hold_links_.reset();  // its bus matches go before the connection
    adaptor_.reset();
    uevents_.reset();
    connection_.reset();
    log::info("stopped");
    return code;
}

}  // namespace cpuhpd
