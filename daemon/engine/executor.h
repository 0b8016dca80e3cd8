// The engine's front door: one worker thread, one batch at a time. Requests that arrive
// while a batch runs join the next batch, and so do requests received before a batch
// starts that are still being admitted (announced by expect_arrival()), unless they ask the
// opposite action (then arrival order is kept and they form a later batch). A request that
// finds the executor idle with nothing else on its way starts its batch at once, unless the
// settings ask for a coalescing window (EngineSettings::coalesce, opened at the first
// request's Request::received) to wait for requests not received yet.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "batch_runner.h"
#include "holds.h"
#include "request.h"

namespace cpuhpd {

class Executor {
public:
    using Completion = std::function<void(RequestResult)>;  // called on the worker thread

    struct Observers {
        std::function<void(const BatchReport&)> batch_finished;  // worker thread
        std::function<void(std::uint64_t, std::size_t, std::size_t)>
            progress;                            // batch_id, done, total
        std::function<void(bool)> busy_changed;  // worker thread
        // Worker thread: batch `batch_id` starts with `requests` (before its first write).
        std::function<void(std::uint64_t, const std::vector<Request>&)> batch_started;
    };

    // `holds` (may be null) is checked at submit() and again when a request's batch starts:
    // a hold taken meanwhile refuses the requests queued before it that would change its
    // CPUs.
    Executor(BatchRunner& runner, EngineSettings settings, Observers observers = {},
             const HoldTable* holds = nullptr);
    ~Executor();  // stops the worker after the batch in flight; queued requests are answered Busy

    // Validates against `state`, the caller's one reading of the machine for this request
    // (the same it resolved the request with), and queues the request. Throws Refusal
    // (nothing touched) when it can never succeed, the queue is full, or its caller
    // (Request::caller, when set) has kMaxQueuedPerCaller requests queued already. Dry runs are
    // answered at once, on the calling thread, and never queued; so is a request whose CPUs
    // are all in the asked state already while no batch is queued or running (batch_id 0).
    void submit(Request request, const MachineState& state, Completion done);

    // `requests` were received and are on their way to submit() (being admitted): a batch
    // that could take them does not start without them, for at most
    // EngineSettings::arrival_wait after its first request's receipt. Each request is ended
    // by one arrival_ended(), after its submit() or its refusal.
    void expect_arrival(std::size_t requests = 1);
    void arrival_ended();

    // Cancels the batch running now, if its id is `batch_id` (0: whichever runs): it stops
    // before its next write, atomic requests roll back, and every caller of the batch gets
    // its results (CPUs not reached: Cancelled). Returns the batch's id. Throws
    // Refusal(NoSuchBatch) when no such batch is running (queued requests have no batch yet).
    std::uint64_t cancel(std::uint64_t batch_id);
    // Cancels the batch running now and any that starts later (for a stop).
    void cancel_all();

private:
    struct Pending {
        Request request;
        Completion done;
    };
    void worker();
    std::vector<Pending> take_batch(std::unique_lock<std::mutex>& lock);
    // Answers, and removes from `batch`, the requests a hold refuses now.
    void refuse_held(std::vector<Pending>& batch);

    BatchRunner& runner_;
    EngineSettings settings_;
    Observers observers_;
    const HoldTable* holds_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Pending> queue_;
    bool running_batch_ = false;
    std::uint64_t running_batch_id_ = 0;  // 0 while no batch runs
    bool just_ran_batch_ = false;         // the queue was not empty when the last batch ended
    bool stopping_ = false;
    std::size_t arriving_ = 0;  // expect_arrival() calls not ended yet
    std::uint64_t next_batch_id_ = 1;
    // Read by the batch between its writes, without the mutex.
    std::atomic<std::uint64_t> cancelled_batch_{0};
    std::atomic<bool> cancel_all_{false};
    std::thread thread_;  // last: starts after every member above exists
};

}  // namespace cpuhpd
