// The engine's holds: taking one (its change, then binding it to its holder), ending one
// (released, holder gone) and the restore that follows.
#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "engine.h"
#include "journal_file.h"
#include "planner.h"
#include "state_file.h"

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
    hold.uid = ask.uid;
    return hold;
}

// Of `hold`'s CPUs, the ones its state keeps online.
CpuSet online_by_state(const Hold& hold) {
    return hold.state == Action::Online ? hold.cpus : CpuSet{};
}

// Holds files are small: 256 holds of a few hundred bytes.
constexpr std::size_t kMaxHoldsFileBytes = 1 << 20;

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
    const auto received = std::chrono::steady_clock::now();
    unanswered_.emplace(token, Unanswered{ask.change.caller, {}, std::move(done)});
    post_admission(
        [this, token, ask = std::move(ask), received] { admit_hold(token, ask, received); });
}

void Engine::admit_hold(std::uint64_t token, const HoldAsk& ask,
                        std::chrono::steady_clock::time_point received) {
    try {
        if (!executor_) {
            throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; nothing was changed");
        }
        const MachineState state = read();
        Request request = resolve(ask.change, state, setup_.settings);
        request.received = received;
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
    holds_.establish(id);
    guards_[id].online = online_by_state(*hold);
    // On disk before the reply: a daemon restarted from now on keeps the hold.
    save_holds();
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
    // A put-back still queued runs before the restore: the restore plans from the state it
    // leaves (else a CPU a writer brought online, put back offline after the restore was
    // planned, would stay offline with no hold left).
    const CpuSet expected = expected_online(*hold);
    const CpuSet putting_back = guards_[id].reputting;
    const CpuSet putting_online = putting_back & expected;
    const CpuSet putting_offline = putting_back - expected;
    guards_.erase(id);
    if (!stopping_) {
        // A daemon stopping keeps the file: its successor takes the holds back.
        save_holds();
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
    post_admission([this, hold = *hold, putting_online, putting_offline, done = std::move(done)] {
        restore_hold(hold, putting_online, putting_offline, done);
    });
}

Hold Engine::attach_hold(std::uint64_t id, const std::string& holder) {
    if (stopping_) {
        throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; attach again when it is back");
    }
    const auto before = holds_.find(id);
    if (!before) {
        throw Refusal(RefusalKind::NoSuchHold, "no hold " + std::to_string(id) + " exists");
    }
    auto hold = holds_.attach(id, holder);
    if (!hold) {
        throw Refusal(RefusalKind::NoSuchHold, "no hold " + std::to_string(id) + " exists");
    }
    save_holds();
    events_.notice(hold_notice(
        describe(*hold) + (before->attached ? " given a new fd for " : " re-attached by ") + holder,
        *hold));
    events_.holds_changed();
    return *hold;
}

std::vector<std::uint64_t> Engine::unattached_holds() const {
    std::vector<std::uint64_t> ids;
    for (const Hold& hold : holds_.list()) {
        if (!hold.attached) {
            ids.push_back(hold.id);
        }
    }
    return ids;
}

void Engine::expire_unattached() {
    for (const std::uint64_t id : unattached_holds()) {
        end_hold(id, "its holder did not re-attach within " +
                         std::to_string(setup_.settings.hold_grace.count()) +
                         " s of the restart (hold_grace_s)");
    }
}

void Engine::save_holds() {
    HoldsFile file;
    file.boottime_ns = boottime_ns();
    file.next_id = holds_.next_id();
    for (Hold& hold : holds_.list()) {
        if (hold.established) {
            file.holds.push_back(std::move(hold));
        }
    }
    const auto path = setup_.state_dir / kHoldsFileName;
    std::string step;
    if (const int err = replace_file(path, format_holds(file), step); err != 0) {
        notice(Notice::Level::Warning, "cannot save " + path.string() + ": " + step + ": " +
                                           std::strerror(err) +
                                           "; a restarted cpuhpd will not know the holds");
    }
}

std::size_t Engine::load_holds() {
    const auto path = setup_.state_dir / kHoldsFileName;
    std::string problem;
    const auto text = read_state_file(path, kMaxHoldsFileBytes, problem);
    if (!text) {
        if (!problem.empty()) {
            notice(Notice::Level::Warning, "ignoring the holds file: " + problem);
        }
        return 0;
    }
    auto parsed = parse_holds(*text);
    if (const auto* error = std::get_if<std::string>(&parsed)) {
        const std::string aside = path.string() + ".rejected";
        std::error_code ec;
        std::filesystem::rename(path, aside, ec);
        notice(Notice::Level::Warning, "ignoring " + path.string() + " (" + *error +
                                           "); moved to " + aside + ": no hold is kept");
        return 0;
    }
    HoldsFile& file = std::get<HoldsFile>(parsed);
    if (file.boottime_ns > boottime_ns()) {
        std::error_code ec;
        std::filesystem::remove(path, ec);
        if (!file.holds.empty()) {
            notice(Notice::Level::Info,
                   std::to_string(file.holds.size()) + " hold(s) of an earlier boot ended with it");
        }
        return 0;
    }
    for (Hold& hold : file.holds) {
        hold.attached = false;
        guards_[hold.id].online = online_by_state(hold);
        loaded_held_ |= hold.cpus;
        events_.notice(hold_notice(describe(hold) + " kept across the restart: CPU " +
                                       hold.cpus.to_string() + " stay held; it ends with " +
                                       (hold.restore ? "its restore" : "no restore") +
                                       " unless its holder re-attaches (AttachHold) within " +
                                       std::to_string(setup_.settings.hold_grace.count()) + " s",
                                   hold));
    }
    const std::size_t count = file.holds.size();
    holds_.reload(std::move(file.holds), file.next_id);
    if (count > 0) {
        events_.holds_changed();
    }
    return count;
}

CpuSet Engine::loaded_held_cpus() const {
    return loaded_held_;
}

CpuSet Engine::expected_online(const Hold& hold) const {
    const auto it = guards_.find(hold.id);
    return it != guards_.end() && it->second.online ? *it->second.online : online_by_state(hold);
}

void Engine::follow_holder_change(const std::string& caller, const RequestResult& result) {
    if (caller.empty() || result.dry_run) {
        return;
    }
    for (const Hold& hold : holds_.list()) {
        if (!hold.attached || hold.holder != caller || !hold.established) {
            continue;
        }
        std::optional<CpuSet>& known = guards_[hold.id].online;
        if (!known) {
            known = CpuSet{};
        }
        CpuSet& online = *known;
        for (const CpuResult& cpu : result.cpus) {
            if (cpu.outcome != CpuOutcome::Changed || !hold.cpus.contains(cpu.cpu)) {
                continue;
            }
            if (result.action == Action::Online) {
                online.add(cpu.cpu);
            } else {
                online = online - CpuSet::single(cpu.cpu);
            }
        }
    }
}

void Engine::defend_holds() {
    // Nothing is judged while a batch runs or a change waits for its answer: those reads
    // show cpuhpd's own writes half done. The next read after them judges.
    if (busy_ || stopping_ || !admission_ || !unanswered_.empty()) {
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    for (const Hold& hold : holds_.list()) {
        if (!hold.established) {
            continue;
        }
        HoldGuard& guard = guards_[hold.id];
        const CpuSet expected = expected_online(hold);
        const CpuSet present = hold.cpus & state_.present;
        const CpuSet online_now = present & state_.online;
        const CpuSet wrong =
            ((online_now - expected) | ((expected & present) - online_now)) - guard.reputting;
        CpuSet& known = guard.known_wrong;
        const CpuSet fresh = wrong - known;
        known = wrong;
        if (fresh.empty()) {
            continue;
        }
        auto& times = guard.reputs;
        times.erase(std::remove_if(times.begin(), times.end(),
                                   [&](auto t) { return now - t >= std::chrono::minutes(1); }),
                    times.end());
        const bool report_only = setup_.settings.enforce_holds == EnforceHolds::Report;
        const bool limited = !report_only && times.size() >= kMaxReputsPerMinute;
        const auto counted = holds_.count_violation(hold.id);
        HoldViolation violation;
        violation.hold_id = hold.id;
        violation.who = hold.who;
        violation.holder = hold.holder;
        violation.cpus = fresh;
        violation.online = fresh & online_now;
        violation.action = report_only ? "report" : limited ? "limited" : "restore";
        violation.count = counted ? counted->violations : hold.violations + 1;
        std::string changed;
        if (!violation.online.empty()) {
            changed += "CPU " + violation.online.to_string() + " came online";
        }
        if (const CpuSet went = fresh - online_now; !went.empty()) {
            changed += (changed.empty() ? "" : ", ") + std::string("CPU ") + went.to_string() +
                       " went offline";
        }
        notice(
            Notice::Level::Warning,
            describe(hold) + ", holder " + hold.holder + ": " + changed +
                " without cpuhpd (violation " + std::to_string(violation.count) + "); " +
                (report_only ? "reported only (enforce_holds: report)"
                 : limited   ? "not put back: put back " + std::to_string(times.size()) +
                                 " times in the last minute already (at most " +
                                 std::to_string(kMaxReputsPerMinute) + "); reported only until then"
                           : "putting it back"),
            {{"HOLD_ID", std::to_string(hold.id)},
             {"HOLD_WHO", hold.who},
             {"HOLDER", hold.holder},
             {"CPUS", fresh.to_string()},
             {"VIOLATIONS", std::to_string(violation.count)},
             {"ENFORCE", violation.action}});
        save_holds();
        events_.hold_violated(violation);
        if (report_only || limited) {
            continue;
        }
        times.push_back(now);
        guard.reputting |= wrong;
        const CpuSet back_online = expected & wrong;
        const CpuSet back_offline = wrong - expected;
        post_admission([this, id = hold.id, back_online, back_offline] {
            const MachineState state = read();
            // Not a structured binding: clang before 16 cannot capture one in a lambda (the
            // fuzz build and clang-tidy use clang 14).
            for (const auto& step : {std::pair{Action::Online, back_online},
                                     std::pair{Action::Offline, back_offline}}) {
                const Action action = step.first;
                const CpuSet cpus = step.second;
                if (cpus.empty()) {
                    continue;
                }
                Request request;
                request.action = action;
                request.cpus = cpus;
                request.mask = cpus.to_string();
                request.mode = Mode::BestEffort;
                request.caller = hold_caller(id);
                auto finished = [this, id, cpus](const RequestResult& result) {
                    events_.request_finished(result);
                    // Judged again at the next read (the one after the batch, below): a
                    // put-back that failed, or a writer that struck again during it, is a
                    // new violation (bounded by kMaxReputsPerMinute).
                    if (auto it = guards_.find(id); it != guards_.end()) {
                        it->second.reputting = it->second.reputting - cpus;
                        it->second.known_wrong = it->second.known_wrong - cpus;
                    }
                };
                try {
                    queue(std::move(request), state, finished);
                } catch (const std::exception& error) {
                    notice(Notice::Level::Warning, "hold " + std::to_string(id) +
                                                       ": cannot put CPU " + cpus.to_string() +
                                                       " back: " + error.what());
                    post_([this, id, cpus] {
                        if (auto it = guards_.find(id); it != guards_.end()) {
                            it->second.reputting = it->second.reputting - cpus;
                        }
                    });
                }
            }
        });
    }
}

void Engine::restore_hold(const Hold& hold, const CpuSet& putting_online,
                          const CpuSet& putting_offline, std::function<void(ReleaseAnswer)> done) {
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
        MachineState state = read();
        state.online = (state.online - putting_offline) | putting_online;
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
