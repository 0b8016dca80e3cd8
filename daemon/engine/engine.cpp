#include "engine.h"

#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace cpuhpd {

namespace {

std::filesystem::path prepare_state_dir(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        throw std::runtime_error("cannot create the state directory " + dir.string() + ": " +
                                 ec.message());
    }
    return dir;
}

}  // namespace

Engine::Engine(EngineSetup setup, AttributeWriter& writer, EngineEvents& events, Post post)
    : setup_(std::move(setup)),
      paths_(setup_.sysfs_root),
      writer_(writer),
      events_(events),
      post_(std::move(post)),
      journal_(prepare_state_dir(setup_.state_dir),
               [this](const std::string& problem) { notice(Notice::Level::Warning, problem); }),
      memory_(setup_.state_dir / "topology.cache"),
      runner_(
          paths_, writer_, journal_, [this] { return read(); }, setup_.settings, setup_.proc_root,
          setup_.cgroup_root, setup_.state_dir / "partitions",
          setup_.state_dir / kAffinityLedgerFileName, setup_.affinity_setter) {
    if (const auto problem = memory_.load()) {
        notice(Notice::Level::Warning, "ignoring the topology cache: " + *problem);
    }
    state_ = read();
    if (state_.present.empty()) {
        throw std::runtime_error("no CPUs found below " + paths_.cpu_dir().string());
    }
}

Engine::~Engine() = default;

void Engine::notice(Notice::Level level, std::string text,
                    std::vector<std::pair<std::string, std::string>> fields) {
    events_.notice(Notice{level, std::move(text), std::move(fields)});
}

MachineState Engine::read() {
    const std::lock_guard lock(read_mutex_);
    MachineState state = read_machine(paths_, memory_);
    // Without the cache, "package:1" stops resolving after a restart while package 1 is
    // offline: say so once per distinct failure, and once when it works again.
    if (memory_.save_error() != reported_save_error_) {
        if (memory_.save_error()) {
            notice(Notice::Level::Warning,
                   *memory_.save_error() +
                       "; the topology of offline CPUs will be unknown after a restart");
        } else {
            notice(Notice::Level::Info, "topology cache saved again");
        }
        reported_save_error_ = memory_.save_error();
    }
    // Posted under the lock, so the owner adopts the reads in the order they were made.
    post_([this, state] { adopt(state); });
    return state;
}

void Engine::adopt(MachineState state) {
    state_ = std::move(state);
    events_.state_changed();
    defend_holds();
}

const MachineState& Engine::refresh() {
    // Needed now; read() also posted its adoption (and the announcement of any change).
    state_ = read();
    return state_;
}

void Engine::refresh_later() {
    if (busy_ || !admission_ || refresh_queued_.exchange(true)) {
        return;
    }
    post_admission([this] {
        refresh_queued_ = false;  // a change noticed from now on queues another re-read
        read();                   // adopted on the owner's thread
    });
}

const RecoveryReport& Engine::recover() {
    // Its own runner, with no journal: the journal being recovered stays in place until
    // recovery is done, so a crash during recovery recovers again at the next start.
    NullJournal no_journal;
    BatchRunner recovery_runner(
        paths_, writer_, no_journal, [this] { return read(); }, setup_.settings);
    last_recovery_ = cpuhpd::recover(
        setup_.state_dir, paths_, writer_, recovery_runner, [this] { return read(); },
        setup_.settings, loaded_held_);
    if (const auto& problem = runner_.affinity_problem()) {
        notice(Notice::Level::Warning, "ignoring the affinity ledger: " + *problem +
                                           "; affinity the kernel rewrote is not given back");
    }
    // The CPUs recovery put back: what the interrupted batch recorded for them is given back
    // now (its ledger was saved before the batch's first write).
    int save_error = 0;
    last_recovery_.affinity = runner_.settle_affinity(last_recovery_.restored, save_error);
    add_affinity_summary(last_recovery_);
    if (save_error != 0) {
        notice(Notice::Level::Warning,
               "the affinity ledger could not be saved: " + errno_name(save_error) + " (" +
                   errno_text(save_error) + ")");
    }
    return last_recovery_;
}

std::vector<PartitionChange> Engine::settle_partitions(std::optional<std::string>& problem) {
    return runner_.settle_partitions(problem);
}

std::optional<BatchInFlight> Engine::batch_in_flight() const {
    std::lock_guard lock(in_flight_mutex_);
    return in_flight_;
}

void Engine::start() {
    Executor::Observers observers;
    observers.batch_started = [this](std::uint64_t batch_id, const std::vector<Request>& requests) {
        BatchInFlight batch;
        batch.batch_id = batch_id;
        batch.action = requests.empty() ? Action::Offline : requests.front().action;
        for (const auto& request : requests) {
            batch.cpus |= request.cpus;
        }
        batch.requests = requests.size();
        batch.since = std::chrono::system_clock::now();
        {
            std::lock_guard lock(in_flight_mutex_);
            in_flight_ = std::move(batch);
        }
        post_([this] { events_.state_changed(); });
    };
    observers.batch_finished = [this](const BatchReport& report) {
        {
            std::lock_guard lock(in_flight_mutex_);
            in_flight_.reset();
        }
        post_([this, report] { events_.batch_finished(report); });
    };
    observers.progress = [this](std::uint64_t batch_id, std::size_t done, std::size_t total) {
        {
            std::lock_guard lock(in_flight_mutex_);
            if (in_flight_ && in_flight_->batch_id == batch_id) {
                in_flight_->done = done;
                in_flight_->total = total;
            }
        }
        events_.batch_progress(batch_id, done, total);
    };
    observers.busy_changed = [this](bool busy) {
        post_([this, busy] {
            busy_ = busy;
            events_.state_changed();
            // Uevents during a batch are not followed (its reads cover its own changes), and
            // holds are not judged on them: once idle, one more read judges the held CPUs
            // (an outside writer may have struck during the batch).
            if (!busy && !holds_.list().empty()) {
                refresh_later();
            }
        });
    };
    executor_ = std::make_unique<Executor>(runner_, setup_.settings, std::move(observers), &holds_);
    admission_ = std::make_unique<TaskThread>();
}

std::uint64_t Engine::count_unanswered(const std::string& caller) {
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

std::optional<Engine::Unanswered> Engine::take_unanswered(std::uint64_t token) {
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

void Engine::change(ChangeAsk ask, std::function<void(ChangeAnswer)> done) {
    const auto received = std::chrono::steady_clock::now();
    const std::uint64_t token = count_unanswered(ask.caller);
    unanswered_.emplace(token, Unanswered{ask.caller, std::move(done), {}});
    // Announced to the executor at once: a batch that starts before this change is admitted
    // waits for it (the executor only goes away after stop(), which sets stopping_ first).
    const bool announced = !stopping_ && executor_;
    if (announced) {
        executor_->expect_arrival();
    }
    // A read takes tens of milliseconds on a loaded machine: one read per change would feed
    // a burst of changes to the executor one read apart. The changes that come while a task
    // to admit them waits join it and share its read.
    const std::lock_guard lock(waiting_mutex_);
    if (!open_changes_) {
        open_changes_ = std::make_shared<WaitingChanges>();
        admission_->post([this, changes = open_changes_] { admit_changes(changes); });
    }
    open_changes_->push_back({token, std::move(ask), received, announced});
}

void Engine::post_admission(std::function<void()> task) {
    // Closed and posted under one lock: a change either joins a list posted before `task`
    // or starts one posted after it.
    const std::lock_guard lock(waiting_mutex_);
    open_changes_.reset();
    admission_->post(std::move(task));
}

std::uint64_t Engine::cancel(std::uint64_t batch_id) {
    if (stopping_) {
        throw Refusal(RefusalKind::Busy,
                      std::string("cpuhpd is stopping; the batch in flight is being ") +
                          (stop_cancels_ ? "cancelled" : "finished"));
    }
    // No batch runs unless start() made the executor, and only stop() lets it go.
    const std::uint64_t cancelled = executor_ ? executor_->cancel(batch_id) : 0;
    if (cancelled == 0) {
        throw Refusal(RefusalKind::NoSuchBatch, "no batch is running");
    }
    return cancelled;
}

void Engine::queue(Request request, const MachineState& state,
                   std::function<void(RequestResult)> done) {
    // Called on the worker thread (or right here for a dry run): hand the result back to
    // the owner's thread.
    executor_->submit(
        std::move(request), state, [this, done = std::move(done)](RequestResult result) {
            post_([done, result = std::move(result)]() mutable { done(std::move(result)); });
        });
}

void Engine::admit_changes(const std::shared_ptr<WaitingChanges>& changes) {
    WaitingChanges taken;
    {
        const std::lock_guard lock(waiting_mutex_);
        if (open_changes_ == changes) {
            open_changes_.reset();
        }
        taken.swap(*changes);
    }
    auto refuse = [this](std::uint64_t token, std::exception_ptr error) {
        post_([this, token, error = std::move(error)] { complete(token, error); });
    };
    // After a change is queued or refused: the batch it could join need not wait for it.
    auto arrived = [this](const WaitingChange& change) {
        if (change.announced && executor_) {
            executor_->arrival_ended();
        }
    };
    MachineState state;
    try {
        if (!executor_) {
            throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; nothing was changed");
        }
        state = read();
    } catch (...) {
        for (const auto& change : taken) {
            refuse(change.token, std::current_exception());
            arrived(change);
        }
        return;
    }
    for (const auto& change : taken) {
        // What refuses one change answers that change only.
        try {
            Request request = resolve(change.ask, state, setup_.settings);
            request.received = change.received;
            queue(std::move(request), state, [this, token = change.token](RequestResult result) {
                complete(token, std::move(result));
            });
        } catch (...) {
            refuse(change.token, std::current_exception());
        }
        arrived(change);
    }
}

void Engine::complete(std::uint64_t token, ChangeAnswer answer) {
    auto entry = take_unanswered(token);
    if (!entry) {
        return;
    }
    if (const auto* result = std::get_if<RequestResult>(&answer)) {
        follow_holder_change(entry->caller, *result);
        events_.request_finished(*result);
    }
    entry->done(std::move(answer));
}

void Engine::stop(bool cancel_batch, std::function<void()> stopped) {
    stopping_ = true;
    stop_cancels_ = cancel_batch;
    // The executor lives until the task below resets it, which only this function posts.
    if (cancel_batch && executor_) {
        executor_->cancel_all();
    }
    if (!admission_) {
        post_(std::move(stopped));
        return;
    }
    // After the changes admitted before it: the executor's destructor waits for the batch
    // in flight (cancelled: it stops after the write in flight and rolls atomic requests
    // back) and answers the queued requests Busy, through post_, which the owner keeps
    // serving meanwhile.
    post_admission([this, stopped = std::move(stopped)] {
        executor_.reset();
        post_(stopped);
    });
}

void Engine::shutdown() {
    admission_.reset();
    executor_.reset();
}

}  // namespace cpuhpd
