#include "event_loop.h"

#include <sdbus-c++/sdbus-c++.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "input.h"
#include "log.h"
#include "sdbus_texts.h"

namespace cpuhpd {

namespace {

void check(int r, const char* what) {
    if (r < 0) {
        throw std::runtime_error(std::string(what) + ": " + std::strerror(-r));
    }
}

}  // namespace

EventLoop::EventLoop() {
    check(sd_event_new(&event_), "sd_event_new");
    // Pings the watchdog from the loop itself, so a hung loop is noticed and restarted.
    check(sd_event_set_watchdog(event_, 1), "sd_event_set_watchdog");
    for (const int sig : {SIGTERM, SIGINT}) {
        sd_event_source* source = nullptr;
        check(sd_event_add_signal(event_, &source, sig, &EventLoop::on_signal, this),
              "sd_event_add_signal");
        sources_.push_back(source);
    }
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) {
        check(-errno, "eventfd");
    }
    check(sd_event_add_io(event_, &wake_source_, wake_fd_, EPOLLIN, &EventLoop::on_wake, this),
          "sd_event_add_io(eventfd)");
}

EventLoop::~EventLoop() {
    for (auto* source : sources_) {
        sd_event_source_disable_unref(source);
    }
    for (auto& [id, watcher] : watchers_) {
        sd_event_source_disable_unref(watcher->source);
    }
    sd_event_source_disable_unref(bus_io_);
    sd_event_source_disable_unref(bus_time_);
    sd_event_source_disable_unref(wake_source_);
    if (wake_fd_ >= 0) {
        close(wake_fd_);
    }
    sd_event_unref(event_);
}

void EventLoop::attach(sdbus::IConnection& connection) {
    bus_ = &connection;
    const auto poll = connection.getEventLoopPollData();
    check(sd_event_add_io(event_, &bus_io_, poll.fd, static_cast<uint32_t>(poll.events),
                          &EventLoop::on_bus_io, this),
          "sd_event_add_io(bus)");
    check(sd_event_source_set_prepare(bus_io_, &EventLoop::on_bus_prepare),
          "sd_event_source_set_prepare");
    // Accuracy 1us: a deadline of "now" (messages already queued in sd-bus) must not wait
    // for sd-event's default 250 ms timer slack.
    check(sd_event_add_time(event_, &bus_time_, CLOCK_MONOTONIC, UINT64_MAX, 1,
                            &EventLoop::on_bus_time, this),
          "sd_event_add_time(bus)");
    check(sd_event_source_set_enabled(bus_time_, SD_EVENT_OFF), "sd_event_source_set_enabled");
}

int EventLoop::on_bus_prepare(sd_event_source* /*source*/, void* self) {
    auto* loop = static_cast<EventLoop*>(self);
    try {
        const auto poll = loop->bus_->getEventLoopPollData();
        sd_event_source_set_io_events(loop->bus_io_, static_cast<uint32_t>(poll.events));
        if (poll.timeout_usec == UINT64_MAX) {
            sd_event_source_set_enabled(loop->bus_time_, SD_EVENT_OFF);
        } else {
            sd_event_source_set_time(loop->bus_time_, poll.timeout_usec);
            sd_event_source_set_enabled(loop->bus_time_, SD_EVENT_ONESHOT);
        }
    } catch (const std::exception& e) {
        log::error(std::string("D-Bus connection failed: ") + e.what());
        sd_event_exit(loop->event_, 1);
    }
    return 0;
}

void EventLoop::process_bus() {
    // processPendingRequest() dispatches at most one message. Only sd_bus_process() failing
    // means the connection is gone (the bus daemon exited): an exception from anything else
    // is a handler's (every handler of ours catches its own; this is the last line for
    // sdbus-c++'s own decoding of a signal's or reply's arguments) and costs one message.
    for (;;) {
        try {
            do {
                if (before_message_) {
                    before_message_();
                }
            } while (bus_->processPendingRequest());
            return;
        } catch (const sdbus::Error& e) {
            if (dbus::bus_processing_failed(e)) {
                log::error(std::string("D-Bus connection failed: ") + e.what());
                sd_event_exit(event_, 1);
                return;
            }
            note_handler_failure(e.getName() + ": " + e.getMessage());
        } catch (const std::exception& e) {
            note_handler_failure(e.what());
        }
    }
}

void EventLoop::note_handler_failure(const std::string& what) {
    // Rate-limited: a flood of malformed messages must not flood the journal.
    const auto now = std::chrono::steady_clock::now();
    if (now - handler_failures_since_ >= std::chrono::seconds(10)) {
        if (handler_failures_ > 5) {
            log::warning(std::to_string(handler_failures_ - 5) +
                         " more D-Bus messages dropped in 10 s (not logged one by one)");
        }
        handler_failures_since_ = now;
        handler_failures_ = 0;
    }
    if (++handler_failures_ <= 5) {
        log::warning("D-Bus message dropped: its handler failed: " + escape_excerpt(what, 256));
    }
}

int EventLoop::on_bus_io(sd_event_source* /*source*/, int /*fd*/, uint32_t /*revents*/,
                         void* self) {
    static_cast<EventLoop*>(self)->process_bus();
    return 0;
}

int EventLoop::on_bus_time(sd_event_source* /*source*/, uint64_t /*usec*/, void* self) {
    static_cast<EventLoop*>(self)->process_bus();
    return 0;
}

std::uint64_t EventLoop::watch(int fd, std::function<void()> on_readable) {
    auto watcher = std::make_unique<Watcher>();
    watcher->loop = this;
    watcher->on_readable = std::move(on_readable);
    check(sd_event_add_io(event_, &watcher->source, fd, EPOLLIN, &EventLoop::on_watched,
                          watcher.get()),
          "sd_event_add_io");
    const std::uint64_t id = next_watch_++;
    watchers_.emplace(id, std::move(watcher));
    return id;
}

void EventLoop::unwatch(std::uint64_t id) {
    const auto it = watchers_.find(id);
    if (it == watchers_.end()) {
        return;
    }
    // sd-event defers freeing a source that is being dispatched; the callback object is
    // kept until the callback running now (perhaps this one's) has returned.
    it->second->source = sd_event_source_disable_unref(it->second->source);
    retired_.push_back(std::move(it->second));
    watchers_.erase(it);
}

int EventLoop::on_watched(sd_event_source* /*source*/, int /*fd*/, uint32_t /*revents*/,
                          void* watcher) {
    EventLoop* loop = static_cast<Watcher*>(watcher)->loop;
    try {
        static_cast<Watcher*>(watcher)->on_readable();
    } catch (const std::exception& e) {
        log::error(std::string("event handler failed: ") + e.what());
    }
    loop->retired_.clear();
    return 0;
}

void EventLoop::post(std::function<void()> task) {
    {
        const std::lock_guard lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    const uint64_t one = 1;
    // EAGAIN only when the counter is about to overflow: it is non-zero then, which is
    // all the loop needs to wake up.
    [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
}

void EventLoop::drain() {
    std::deque<std::function<void()>> tasks;
    {
        const std::lock_guard lock(mutex_);
        tasks.swap(tasks_);
    }
    for (auto& task : tasks) {
        try {
            task();
        } catch (const std::exception& e) {
            log::error(std::string("main-thread task failed: ") + e.what());
        }
    }
}

int EventLoop::on_wake(sd_event_source* /*source*/, int fd, uint32_t /*revents*/, void* self) {
    uint64_t count = 0;
    [[maybe_unused]] const auto n = ::read(fd, &count, sizeof count);
    static_cast<EventLoop*>(self)->drain();
    return 0;
}

int EventLoop::on_signal(sd_event_source* /*source*/, const struct signalfd_siginfo* info,
                         void* self) {
    auto* loop = static_cast<EventLoop*>(self);
    const std::string name = std::string("SIG") + sigabbrev_np(static_cast<int>(info->ssi_signo));
    if (loop->stop_signalled_) {
        log::info("received " + name + " while stopping; still finishing the batch in flight");
        return 0;
    }
    loop->stop_signalled_ = true;
    log::info("received " + name + ", stopping");
    if (!loop->stop_handler_) {
        sd_event_exit(loop->event_, 0);
        return 0;
    }
    try {
        loop->stop_handler_();
    } catch (const std::exception& e) {
        log::error(std::string("stopping failed: ") + e.what());
        sd_event_exit(loop->event_, 1);
    }
    return 0;
}

void EventLoop::before_each_message(std::function<void()> hook) {
    before_message_ = std::move(hook);
}

void EventLoop::on_stop_signal(std::function<void()> handler) {
    stop_handler_ = std::move(handler);
}

int EventLoop::run() {
    const int r = sd_event_loop(event_);
    if (r < 0) {
        throw std::runtime_error(std::string("event loop failed: ") + std::strerror(-r));
    }
    return r;
}

void EventLoop::exit(int code) {
    sd_event_exit(event_, code);
}

}  // namespace cpuhpd
