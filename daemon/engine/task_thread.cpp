#include "task_thread.h"

#include <utility>

namespace cpuhpd {

TaskThread::TaskThread() : thread_([this] { run(); }) {}

TaskThread::~TaskThread() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
}

void TaskThread::post(std::function<void()> task) {
    {
        const std::lock_guard lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
}

void TaskThread::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) {
            return;  // stopping, and nothing left to run
        }
        {
            auto task = std::move(tasks_.front());
            tasks_.pop_front();
            lock.unlock();
            task();
            // Destroyed here, unlocked: its captures may take other locks (dropping the last
            // reference to an sdbus-c++ reply takes the bus's), whose holders may be calling
            // post() meanwhile.
        }
        lock.lock();
    }
}

}  // namespace cpuhpd
