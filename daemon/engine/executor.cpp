#include "executor.h"

#include <algorithm>

#include "input.h"
#include "planner.h"

namespace cpuhpd {

namespace {

using SteadyClock = std::chrono::steady_clock;

// RequestResult::queued: from `received` to `until`, whole microseconds, never negative.
std::chrono::microseconds waited(SteadyClock::time_point received, SteadyClock::time_point until) {
    return std::max(std::chrono::microseconds(0),
                    std::chrono::duration_cast<std::chrono::microseconds>(until - received));
}

// Answers `request` now, before or without a batch: its queued time runs until now.
void answer_now(const Executor::Completion& done, const Request& request, RequestResult result) {
    result.queued = waited(request.received, SteadyClock::now());
    done(std::move(result));
}

}  // namespace

Executor::Executor(BatchRunner& runner, EngineSettings settings, Observers observers,
                   const HoldTable* holds)
    : runner_(runner),
      settings_(std::move(settings)),
      observers_(std::move(observers)),
      holds_(holds),
      thread_([this] { worker(); }) {}

Executor::~Executor() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    // Whatever was still queued is answered, never dropped.
    for (auto& pending : queue_) {
        answer_now(pending.done, pending.request,
                   refused_result(
                       pending.request,
                       Refusal(RefusalKind::Busy, "cpuhpd is shutting down; nothing was changed")));
    }
}

void Executor::submit(Request request, const MachineState& state, Completion done) {
    if (request.received == SteadyClock::time_point{}) {
        request.received = SteadyClock::now();
    }
    narrow_to_eligible(request, state, settings_);
    if (holds_ != nullptr) {
        holds_->admit(request);
    }
    if (request.dry_run) {
        answer_now(done, request, runner_.dry_run(request, state));
        return;
    }
    // Refuse up front what can never succeed, so the caller hears at once.
    validate(request, state, settings_);
    const CpuSet target = request.action == Action::Offline ? state.offline() : state.online;
    const bool nothing_to_change = (request.cpus - target).empty();
    {
        std::unique_lock lock(mutex_);
        // Every CPU is there already and no batch is queued or running that could change
        // that first: answered now, instead of waiting out the coalescing window for a batch
        // that would write nothing.
        if (nothing_to_change && !running_batch_ && queue_.empty() && !stopping_) {
            lock.unlock();
            answer_now(done, request, runner_.dry_run(request, state));
            return;
        }
        if (stopping_) {
            throw Refusal(RefusalKind::Busy, "cpuhpd is shutting down");
        }
        if (queue_.size() >= settings_.max_queued_requests) {
            throw Refusal(RefusalKind::Busy, std::to_string(queue_.size()) +
                                                 " requests are queued already; try again");
        }
        if (!request.caller.empty() &&
            std::count_if(queue_.begin(), queue_.end(), [&](const Pending& p) {
                return p.request.caller == request.caller;
            }) >= static_cast<std::ptrdiff_t>(kMaxQueuedPerCaller)) {
            throw Refusal(RefusalKind::Busy,
                          "this caller has " + std::to_string(kMaxQueuedPerCaller) +
                              " requests queued already (the most one caller may have); wait "
                              "for their replies");
        }
        const bool was_idle = !running_batch_ && queue_.empty();
        queue_.push_back({std::move(request), std::move(done)});
        if (was_idle && observers_.busy_changed) {
            observers_.busy_changed(true);
        }
    }
    wake_.notify_all();
}

void Executor::expect_arrival(std::size_t requests) {
    std::lock_guard lock(mutex_);
    arriving_ += requests;
}

void Executor::arrival_ended() {
    {
        std::lock_guard lock(mutex_);
        if (arriving_ == 0 || --arriving_ != 0) {
            return;
        }
    }
    wake_.notify_all();
}

std::uint64_t Executor::cancel(std::uint64_t batch_id) {
    std::lock_guard lock(mutex_);
    if (running_batch_id_ == 0) {
        throw Refusal(RefusalKind::NoSuchBatch,
                      batch_id == 0 ? "no batch is running"
                                    : "batch " + std::to_string(batch_id) +
                                          " is not running (no batch is running now)");
    }
    if (batch_id != 0 && batch_id != running_batch_id_) {
        throw Refusal(RefusalKind::NoSuchBatch, "batch " + std::to_string(batch_id) +
                                                    " is not running (batch " +
                                                    std::to_string(running_batch_id_) + " is)");
    }
    cancelled_batch_ = running_batch_id_;
    return running_batch_id_;
}

void Executor::cancel_all() {
    cancel_all_ = true;
}

std::vector<Executor::Pending> Executor::take_batch(std::unique_lock<std::mutex>&) {
    // The longest run at the head of the queue with the head's action and strategy:
    // arrival order is kept, and opposite actions never share a batch. A forced smt
    // request stands alone, since it must be exactly the SMT secondaries.
    std::vector<Pending> batch;
    const Action action = queue_.front().request.action;
    const StrategyKind strategy = queue_.front().request.strategy;
    while (!queue_.empty() && queue_.front().request.action == action &&
           queue_.front().request.strategy == strategy) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
        if (rules_of(strategy).stands_alone) {
            break;
        }
    }
    return batch;
}

void Executor::refuse_held(std::vector<Pending>& batch) {
    if (holds_ == nullptr) {
        return;
    }
    std::vector<Pending> admitted;
    for (auto& pending : batch) {
        try {
            holds_->admit(pending.request);
            admitted.push_back(std::move(pending));
        } catch (const Refusal& refusal) {
            answer_now(pending.done, pending.request, refused_result(pending.request, refusal));
        }
    }
    batch = std::move(admitted);
}

void Executor::worker() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) {
            return;
        }
        // A batch does not leave behind the requests received before it could start: those
        // still being admitted are waited for (bounded, so that a stream of arrivals cannot
        // hold the queue back). A request that finds the executor idle goes at once when
        // nothing else is on its way; only a configured coalescing window makes it wait for
        // requests not received yet. Requests queued while a batch ran have waited already.
        // Both waits count from the first request's receipt, not from its arrival here: its
        // machine read and resolution on the admission thread count against them.
        const auto first_received = queue_.front().request.received;
        if (!just_ran_batch_ && settings_.coalesce.count() > 0) {
            wake_.wait_until(lock, first_received + settings_.coalesce,
                             [this] { return stopping_; });
        }
        wake_.wait_until(lock, first_received + settings_.arrival_wait,
                         [this] { return stopping_ || arriving_ == 0; });
        if (stopping_) {
            return;
        }
        std::vector<Pending> batch = take_batch(lock);
        running_batch_ = true;
        if (holds_ != nullptr) {
            lock.unlock();
            refuse_held(batch);
            lock.lock();
            if (batch.empty()) {
                running_batch_ = false;
                just_ran_batch_ = !queue_.empty();
                if (queue_.empty() && observers_.busy_changed) {
                    observers_.busy_changed(false);
                }
                continue;
            }
        }
        const std::uint64_t batch_id = next_batch_id_++;
        running_batch_id_ = batch_id;
        lock.unlock();

        // The end of every request's RequestResult::queued.
        const auto started = SteadyClock::now();
        std::vector<Request> requests;
        requests.reserve(batch.size());
        for (const auto& p : batch) {
            requests.push_back(p.request);
        }
        if (observers_.batch_started) {
            observers_.batch_started(batch_id, requests);
        }
        BatchOutput output;
        try {
            output = runner_.run(
                batch_id, requests,
                [this, batch_id](std::size_t done, std::size_t total) {
                    if (observers_.progress) {
                        observers_.progress(batch_id, done, total);
                    }
                },
                [this, batch_id] { return cancel_all_ || cancelled_batch_ == batch_id; });
        } catch (const std::exception& e) {
            output.results.clear();
            for (const auto& req : requests) {
                RequestResult r =
                    refused_result(req, Refusal(RefusalKind::KernelError,
                                                std::string("batch could not run: ") + e.what()));
                r.batch_id = batch_id;
                output.results.push_back(std::move(r));
            }
            output.report.batch_id = batch_id;
            output.report.action = requests.front().action;
            output.report.requests = requests.size();
        }
        {
            // From here on the batch cannot be cancelled: Cancel says so rather than claim
            // a batch whose replies and BatchFinished may be out already.
            std::lock_guard ended(mutex_);
            running_batch_id_ = 0;
        }
        for (std::size_t i = 0; i < batch.size(); ++i) {
            output.results[i].queued = waited(batch[i].request.received, started);
            batch[i].done(std::move(output.results[i]));
        }
        if (observers_.batch_finished) {
            observers_.batch_finished(output.report);
        }

        lock.lock();
        running_batch_ = false;
        just_ran_batch_ = !queue_.empty();
        if (queue_.empty() && observers_.busy_changed) {
            observers_.busy_changed(false);
        }
    }
}

}  // namespace cpuhpd
