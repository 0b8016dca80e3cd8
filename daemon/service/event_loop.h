// The daemon's one event loop, on the main thread: sd-event with the D-Bus connection,
// signals, the watchdog, kernel uevents and a queue through which other threads hand
// work back to the main thread.
#pragma once

#include <systemd/sd-event.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sdbus {
class IConnection;
}

namespace cpuhpd {

class EventLoop {
public:
    // Takes SIGTERM and SIGINT (they must already be blocked in every thread) and arms the
    // watchdog when the service manager asked for one (WATCHDOG_USEC).
    EventLoop();
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Serves `connection` from this loop. sdbus-c++ 1.2 has no attachSdEventLoop() (it
    // came in 1.3), so the loop drives it through getEventLoopPollData() and
    // processPendingRequest(), as sd-bus's own sd_bus_attach_event() does: before each
    // poll the bus says which events and which deadline it waits for.
    void attach(sdbus::IConnection& connection);

    // Calls `hook` on the main thread before each D-Bus message is dispatched.
    void before_each_message(std::function<void()> hook);

    // Calls `on_readable` on the main thread whenever `fd` is readable (or hung up: a pipe
    // whose writers are gone). Returns the watch's id, for unwatch().
    std::uint64_t watch(int fd, std::function<void()> on_readable);
    // Stops watching; may be called from the watch's own callback. The fd stays open.
    void unwatch(std::uint64_t id);

    // Thread-safe: runs `task` on the main thread at its next iteration.
    void post(std::function<void()> task);

    // Called on the main thread at the first SIGTERM/SIGINT instead of leaving the loop;
    // the handler calls exit() when the service has wound down. Later signals are ignored.
    void on_stop_signal(std::function<void()> handler);

    // Runs until a signal (without a stop handler) or exit(); returns the exit code.
    int run();
    void exit(int code);
    // Runs the queued tasks now (after run() returned, to deliver late completions).
    void drain();

    sd_event* get() const { return event_; }

private:
    static int on_bus_prepare(sd_event_source* source, void* self);
    static int on_bus_io(sd_event_source* source, int fd, uint32_t revents, void* self);
    static int on_bus_time(sd_event_source* source, uint64_t usec, void* self);
    static int on_wake(sd_event_source* source, int fd, uint32_t revents, void* self);
    static int on_watched(sd_event_source* source, int fd, uint32_t revents, void* self);
    static int on_signal(sd_event_source* source, const struct signalfd_siginfo* info, void* self);
    void process_bus();
    void note_handler_failure(const std::string& what);

    sd_event* event_ = nullptr;
    sdbus::IConnection* bus_ = nullptr;
    sd_event_source* bus_io_ = nullptr;
    sd_event_source* bus_time_ = nullptr;
    int wake_fd_ = -1;  // eventfd written by post()
    sd_event_source* wake_source_ = nullptr;
    std::vector<sd_event_source*> sources_;  // signals
    struct Watcher {
        EventLoop* loop = nullptr;
        sd_event_source* source = nullptr;
        std::function<void()> on_readable;
    };
    std::map<std::uint64_t, std::unique_ptr<Watcher>> watchers_;
    // Unwatched during a callback (perhaps their own): freed once it has returned.
    std::vector<std::unique_ptr<Watcher>> retired_;
    std::uint64_t next_watch_ = 1;

    std::function<void()> stop_handler_;
    std::function<void()> before_message_;
    bool stop_signalled_ = false;
    std::chrono::steady_clock::time_point handler_failures_since_{};
    int handler_failures_ = 0;

    std::mutex mutex_;
    std::deque<std::function<void()>> tasks_;
};

}  // namespace cpuhpd
