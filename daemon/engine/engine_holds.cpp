// The engine's holds: taking one (its change, then binding it to its holder), ending one
// (released, holder gone) and the restore that follows.
#include <algorithm>
#include <memory>
#include <utility>

#include "engine.h"
#include "planner.h"

namespace cpuhpd {

namespace {

// "cpu 5: EBUSY (Device or resource busy), cpu 6: ...": why a hold's change failed.
std::string failures_of(const RequestResult& result) {
    std::string text;
    for (const auto& cpu : result.cpus) {
        if (cpu.outcome == CpuOutcome::Failed) {
            text += (text.empty() ? "" : ", ") + std::string("cpu ") + std::to_string(cpu.cpu) +
                    ": " + errno_name(cpu.error) + " (" + cpu.message + ")";
        }
    }
    return text.empty() ? to_string(result.outcome) : text;
}

Notice hold_notice(const std::string& text, const Hold& hold) {
    return Notice{Notice::Level::Info,
                  text,
                  {{"HOLD_ID", std::to_string(hold.id)},
                   {"HOLD_WHO", hold.who},
                   {"HOLDER", hold.holder},
                   {"ACTION", to_string(hold.state)},
                   {"CPUS", hold.cpus.to_string()}}};
}

// The hold `ask` takes on the CPUs of `request`, read from `state`.
Hold hold_for(const HoldAsk& ask, const Request& request, const MachineState& state) {
    Hold hold;
    hold.holder = ask.change.caller;
    hold.who = ask.who;
    hold.why = ask.why;
    hold.state = request.action;
    hold.cpus = request.cpus;
    hold.online_before = request.cpus & state.online;
    hold.restore = ask.restore;
    hold.since = std::chrono::system_clock::now();
    return hold;
}

// The best-effort requests that bring the CPUs of `hold` back to their state before it.
std::vector<Request> restore_requests(const Hold& hold, const MachineState& state) {
    const CpuSet back_online = hold.online_before - state.online;
    const CpuSet back_offline = (hold.cpus - hold.online_before) & state.online;
    std::vector<Request> requests;
    for (const auto& [action, cpus] :
         {std::pair{Action::Online, back_online}, std::pair{Action::Offline, back_offline}}) {
        if (cpus.empty()) {
            continue;
        }
        Request request;
        request.action = action;
        request.cpus = cpus;
        // Left out, not refused, when they cannot change now (protected, or held anew).
        request.selected_only = cpus;
        request.mask = cpus.to_string();
        request.mode = Mode::BestEffort;
        request.caller = "hold " + std::to_string(hold.id);
        requests.push_back(std::move(request));
    }
    return requests;
}

}  // namespace

void Engine::hold(HoldAsk ask, std::function<void(HoldOutcome)> done) {
    const std::uint64_t token = count_unanswered(ask.change.caller);
    unanswered_.emplace(token, Unanswered{ask.change.caller, {}, std::move(done)});
    admission_->post([this, token, ask = std::move(ask)] { admit_hold(token, ask); });
}

void Engine::admit_hold(std::uint64_t token, const HoldAsk& ask) {
    try {
        if (!executor_) {
            throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; nothing was changed");
        }
        const MachineState state = read();
        Request request = resolve(ask.change, state, setup_.settings);
        narrow_to_eligible(request, state, setup_.settings);
        if (request.cpus.empty()) {
            throw Refusal(RefusalKind::InvalidMask,
                          "'" + request.mask + "' leaves no CPU that could be held");
        }
        // Taken before the change is queued: a request admitted from now on that would
        // change these CPUs is refused, and one queued already is refused at batch time.
        const std::uint64_t id = holds_.take(hold_for(ask, request, state));
        try {
            queue(std::move(request), state,
                  [this, token, id, bind = ask.bind](RequestResult result) {
                      finish_hold(token, id, bind, std::move(result));
                  });
        } catch (...) {
            holds_.end(id);
            throw;
        }
    } catch (...) {
        post_(
            [this, token, error = std::current_exception()] { finish_hold(token, 0, {}, error); });
    }
}

void Engine::finish_hold(std::uint64_t token, std::uint64_t id,
                         const std::function<void(const Hold&)>& bind, ChangeAnswer answer) {
    auto entry = take_unanswered(token);
    auto refuse = [&](std::exception_ptr error) {
        if (id != 0) {
            holds_.end(id);
        }
        if (entry) {
            entry->hold_done(std::move(error));
        }
    };
    if (const auto* thrown = std::get_if<std::exception_ptr>(&answer)) {
        refuse(*thrown);
        return;
    }
    auto& result = std::get<RequestResult>(answer);
    events_.request_finished(result);
    if (result.refusal) {
        refuse(std::make_exception_ptr(*result.refusal));
        return;
    }
    if (result.outcome != Outcome::Ok) {
        // Atomic: whatever the change did is undone already.
        refuse(std::make_exception_ptr(Refusal(
            RefusalKind::KernelError,
            "the hold's change failed and was undone; nothing is held: " + failures_of(result))));
        return;
    }
    const auto hold = holds_.find(id);
    if (!hold || !entry) {
        refuse(std::make_exception_ptr(
            Refusal(RefusalKind::Busy, hold ? "cpuhpd is stopping; the hold was not kept"
                                            : "the hold was released before its change was done")));
        return;
    }
    if (bind) {
        try {
            bind(*hold);
        } catch (...) {
            end_hold(id, "it could not be linked to a file descriptor");
            entry->hold_done(std::current_exception());
            return;
        }
    }
    events_.notice(hold_notice(
        describe(*hold) + " taken by " + hold->holder + ": CPU " + hold->cpus.to_string() +
            (hold->restore ? "; restored when it ends" : "; not restored when it ends"),
        *hold));
    events_.holds_changed();
    // If the holder is gone by now, the answer goes nowhere and the hold ends when whatever
    // bound it to its holder notices.
    entry->hold_done(HoldTaken{id, std::move(result)});
}

void Engine::release(std::uint64_t id, const std::string& caller,
                     std::function<void(ReleaseAnswer)> done) {
    if (stopping_) {
        throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; holds end without a restore");
    }
    const auto hold = holds_.find(id);
    if (!hold) {
        throw Refusal(RefusalKind::NoSuchHold, "no hold " + std::to_string(id) + " exists");
    }
    // A hold whose change is still queued may be released too: its restore is queued
    // behind that change.
    end_hold(id, caller == hold->holder ? "released by its holder" : "released by " + caller,
             std::move(done));
}

void Engine::end_hold(std::uint64_t id, const std::string& reason,
                      std::function<void(ReleaseAnswer)> done) {
    const auto hold = holds_.end(id);
    if (!hold) {
        if (done) {
            done(std::make_exception_ptr(
                Refusal(RefusalKind::NoSuchHold, "no hold " + std::to_string(id) + " exists")));
        }
        return;
    }
    events_.hold_ended(*hold);
    const bool restore = hold->restore && !stopping_ && executor_;
    events_.notice(hold_notice(describe(*hold) + " ended: " + reason +
                                   (restore         ? "; restoring CPU " + hold->cpus.to_string()
                                    : hold->restore ? "; not restored: cpuhpd is stopping"
                                                    : "; no restore asked"),
                               *hold));
    events_.holds_changed();
    if (!restore) {
        if (done) {
            done(std::vector<CpuResult>{});
        }
        return;
    }
    admission_->post([this, hold = *hold, done = std::move(done)] { restore_hold(hold, done); });
}

void Engine::restore_hold(const Hold& hold, std::function<void(ReleaseAnswer)> done) {
    struct Restore {
        std::size_t waiting = 0;
        std::vector<CpuResult> results;
        std::function<void(ReleaseAnswer)> done;
    };
    auto restore = std::make_shared<Restore>();
    restore->done = std::move(done);
    restore->waiting = 1;  // this function: its own finished() below
    auto finished = [this, restore, id = hold.id](std::vector<CpuResult> cpus) {
        // Owner thread.
        restore->results.insert(restore->results.end(), cpus.begin(), cpus.end());
        if (--restore->waiting == 0) {
            std::sort(restore->results.begin(), restore->results.end(),
                      [](const CpuResult& a, const CpuResult& b) { return a.cpu < b.cpu; });
            notice(Notice::Level::Info, "hold " + std::to_string(id) + ": restore done",
                   {{"HOLD_ID", std::to_string(id)}});
            if (restore->done) {
                restore->done(std::move(restore->results));
            }
        }
    };
    try {
        const MachineState state = read();
        std::vector<Request> requests = restore_requests(hold, state);
        restore->waiting += requests.size();
        for (auto& request : requests) {
            try {
                queue(std::move(request), state, [this, finished](const RequestResult& r) {
                    events_.request_finished(r);
                    finished(r.cpus);
                });
            } catch (const std::exception& error) {
                notice(Notice::Level::Warning,
                       "hold " + std::to_string(hold.id) + ": cannot restore: " + error.what());
                post_([finished] { finished({}); });
            }
        }
    } catch (const std::exception& error) {
        notice(Notice::Level::Warning,
               "hold " + std::to_string(hold.id) + ": cannot restore: " + error.what());
    }
    post_([finished] { finished({}); });
}

}  // namespace cpuhpd
