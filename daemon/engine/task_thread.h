// One thread that runs posted tasks in order. The engine's admission thread: it resolves
// masks and reads sysfs, work that may be slow (a maximum-size mask, a sysfs file the
// kernel is slow to answer) and so must not run on the event loop.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace cpuhpd {

class TaskThread {
public:
    TaskThread();
    // Runs the tasks still queued, then joins.
    ~TaskThread();
    TaskThread(const TaskThread&) = delete;
    TaskThread& operator=(const TaskThread&) = delete;

    // Thread-safe.
    void post(std::function<void()> task);

private:
    void run();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::thread thread_;  // last: starts after every member above exists
};

}  // namespace cpuhpd
