// The engine's profiles: applying one (or switching from the one in force with the fewest
// changes), reverting it, and the state file that lets a restarted engine know what the
// profile in force took.
#include <algorithm>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>

#include "batch_phases.h"
#include "engine.h"
#include "input.h"
#include "state_file.h"

namespace cpuhpd {

namespace {

constexpr const char* kProfileFile = "profile";

std::string cpus_or_dash(const CpuSet& cpus) {
    return cpus.empty() ? "-" : cpus.to_string();
}

Notice profile_notice(const std::string& text, const std::string& name, const CpuSet& cpus) {
    return Notice{Notice::Level::Info, text, {{"PROFILE", name}, {"CPUS", cpus.to_string()}}};
}

// A profile request refused when it was queued (the exception being handled), answered as a
// failed result.
RequestResult queue_refused(const Request& request) {
    try {
        throw;
    } catch (const Refusal& refusal) {
        return refused_result(request, refusal);
    } catch (const std::exception& error) {
        return refused_result(request, Refusal(RefusalKind::KernelError, error.what()));
    }
}

// The two requests of a profile change: back online first (best-effort: what can come
// back, does), then offline in one atomic batch: it is taken whole or not at all.
std::vector<Request> profile_requests(const ProfileAsk& ask, const std::string& name,
                                      const ProfileTransition& t) {
    std::vector<Request> requests;
    for (const auto& [action, cpus, mode] :
         {std::tuple{Action::Online, t.to_online, Mode::BestEffort},
          std::tuple{Action::Offline, t.to_offline, Mode::Atomic}}) {
        if (cpus.empty()) {
            continue;
        }
        Request request;
        request.action = action;
        request.cpus = cpus;
        request.selected_only = cpus;  // held or protected since: left out
        request.mask = "profile " + name + ": " + cpus.to_string();
        request.mode = mode;
        request.strategy = ask.strategy.value_or(StrategyKind::Auto);
        request.refuse_pinned = ask.refuse_pinned && action == Action::Offline;
        request.force = ask.force;
        request.caller = ask.caller;
        requests.push_back(std::move(request));
    }
    return requests;
}

}  // namespace

// One apply or revert while its requests run.
struct Engine::ProfileRun {
    ProfileDone result;
    std::size_t waiting = 1;      // run_profile's own finish below
    bool offline_failed = false;  // the offline part was refused or rolled back
    bool reverting = false;
    std::optional<ActiveProfile> before;  // the profile in force when it began
    std::function<void(ProfileAnswer)> done;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

void Engine::load_active_profile() {
    const auto file = setup_.state_dir / kProfileFile;
    std::string problem;
    const auto text = read_state_file(file, kMaxStateBytes, problem);
    if (!text) {
        if (!problem.empty()) {
            notice(Notice::Level::Warning, "ignoring the profile state file: " + problem);
        }
        return;
    }
    active_profile_ = parse_active_profile(*text);
    if (!active_profile_) {
        notice(Notice::Level::Warning, "ignoring " + file.string() + ": not a profile state file");
        return;
    }
    events_.notice(profile_notice("profile " + active_profile_->name + " is in force (from " +
                                      file.string() + "); it took CPU " +
                                      active_profile_->taken.to_string(),
                                  active_profile_->name, active_profile_->taken));
}

void Engine::save_active_profile() {
    const auto file = setup_.state_dir / kProfileFile;
    if (!active_profile_) {
        std::error_code ec;
        std::filesystem::remove(file, ec);
        return;
    }
    std::string step;
    if (const int err = replace_file(file, format_active_profile(*active_profile_), step);
        err != 0) {
        notice(Notice::Level::Warning,
               "cannot save " + file.string() + ": " + step + ": " + std::strerror(err) +
                   "; a restarted cpuhpd will not know the profile in force");
    }
}

std::optional<Profile> Engine::profile_to_apply(const ProfileAsk& ask) const {
    if (ask.name.empty()) {
        if (!active_profile_) {
            throw Refusal(RefusalKind::NoSuchProfile, "no profile is in force; nothing to revert");
        }
        return std::nullopt;
    }
    const auto it = setup_.profiles.find(ask.name);
    if (it == setup_.profiles.end()) {
        std::string known;
        for (const auto& [name, unused] : setup_.profiles) {
            known += (known.empty() ? "" : ", ") + name;
        }
        throw Refusal(RefusalKind::NoSuchProfile,
                      "no profile '" + escape_excerpt(ask.name, kMaxExcerptBytes) +
                          "' in the config (" +
                          (known.empty() ? std::string("it has none") : "it has " + known) + ")");
    }
    return it->second;
}

void Engine::apply_profile(ProfileAsk ask, std::function<void(ProfileAnswer)> done) {
    if (stopping_) {
        throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; nothing was changed");
    }
    std::optional<Profile> profile = profile_to_apply(ask);
    if (profile_changing_ && !ask.dry_run) {
        throw Refusal(RefusalKind::Busy, "another profile change is in progress; try again");
    }
    if (!ask.dry_run) {
        profile_changing_ = true;
    }
    post_admission([this, ask = std::move(ask), profile, active = active_profile_,
                    done = std::move(done)] { run_profile(ask, profile, active, done); });
}

void Engine::revert_profile(ProfileAsk ask, std::function<void(ProfileAnswer)> done) {
    ask.name.clear();
    apply_profile(std::move(ask), std::move(done));
}

// Admission thread.
void Engine::run_profile(const ProfileAsk& ask, const std::optional<Profile>& profile,
                         const std::optional<ActiveProfile>& active,
                         const std::function<void(ProfileAnswer)>& done) {
    auto run = std::make_shared<ProfileRun>();
    run->done = done;
    run->result.name = profile ? ask.name : active->name;
    run->result.dry_run = ask.dry_run;
    run->reverting = !profile;
    run->before = active;
    try {
        if (!executor_) {
            throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; nothing was changed");
        }
        const MachineState state = read();
        std::vector<Request> requests = plan_profile_run(ask, profile, active, state, run->result);
        run->waiting += requests.size();
        // Announced together: a batch that could take several of them waits for the rest.
        executor_->expect_arrival(requests.size());
        for (auto& request : requests) {
            try {
                queue(request, state,
                      [this, run](const RequestResult& r) { finish_profile_run(*run, &r); });
            } catch (...) {
                post_([this, run, refused = queue_refused(request)] {
                    finish_profile_run(*run, &refused);
                });
            }
            executor_->arrival_ended();
        }
    } catch (...) {
        post_([this, run, error = std::current_exception()] {
            if (!run->result.dry_run) {
                profile_changing_ = false;
            }
            run->done(error);  // nothing was queued: answer with the refusal alone
            if (!run->result.dry_run) {
                events_.profile_change_ended();
            }
        });
        return;
    }
    post_([this, run] { finish_profile_run(*run, nullptr); });
}

// Admission thread: what the profile change does, checked before anything changes.
std::vector<Request> Engine::plan_profile_run(const ProfileAsk& ask,
                                              const std::optional<Profile>& profile,
                                              const std::optional<ActiveProfile>& active,
                                              const MachineState& state, ProfileDone& result) {
    result.transition = profile ? plan_profile(*profile, active, state, setup_.settings)
                                : plan_revert(*active, state);
    const ProfileTransition& t = result.transition;
    // Refused here, before the online part: the caller gets Error.Pinned or EmptyPartition
    // and nothing changes. The offline batch checks again when it starts.
    const CpuSet leaving = t.to_offline & state.online;
    const CpuSet online_then = state.online | t.to_online;
    result.pinned = scan_pinned(setup_.proc_root, leaving, online_then - leaving);
    Request offline;
    offline.refuse_pinned = ask.refuse_pinned;
    offline.force = ask.force;
    const auto partitions = find_partitions(setup_.cgroup_root);
    refuse_offline(offline, leaving, leaving, online_then, result.pinned, partitions);
    if (ask.dry_run) {
        result.partitions = plan_shrink(partitions, leaving, online_then);
        return {};
    }
    return profile_requests(ask, result.name, t);
}

// Owner thread: one of the run's requests is done (`result`), or run_profile is (none).
void Engine::finish_profile_run(ProfileRun& run, const RequestResult* result) {
    if (result != nullptr) {
        events_.request_finished(*result);
        auto& cpus = run.result.cpus;
        cpus.insert(cpus.end(), result->cpus.begin(), result->cpus.end());
        if (result->action == Action::Offline) {
            run.result.pinned = result->pinned;
        }
        auto& partitions = run.result.partitions;
        partitions.insert(partitions.end(), result->partitions.begin(), result->partitions.end());
        run.result.affinity.insert(run.result.affinity.end(), result->affinity.begin(),
                                   result->affinity.end());
        if (result->refusal || result->outcome != Outcome::Ok) {
            run.result.outcome = Outcome::Partial;
            // Atomic: nothing of it stayed offline.
            run.offline_failed |= result->action == Action::Offline;
        }
    }
    if (--run.waiting > 0) {
        return;
    }
    ProfileDone& r = run.result;
    if (r.outcome != Outcome::Ok &&
        std::none_of(r.cpus.begin(), r.cpus.end(),
                     [](const CpuResult& cpu) { return cpu.outcome == CpuOutcome::Changed; })) {
        r.outcome = Outcome::Failed;
    }
    std::sort(r.cpus.begin(), r.cpus.end(),
              [](const CpuResult& a, const CpuResult& b) { return a.cpu < b.cpu; });
    r.duration = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - run.start);
    if (r.dry_run) {
        run.done(std::move(r));
        return;
    }
    // The new profile is in force once its offline part is done; CPUs of the old one that
    // did not come back stay taken (a revert brings them back). When the offline part
    // failed, the old profile stays in force with what of it is still offline.
    const CpuSet offline_now = state_.present - state_.online;
    const CpuSet old_left = run.before ? run.before->taken & offline_now : CpuSet{};
    if (!run.reverting && !run.offline_failed) {
        active_profile_ = ActiveProfile{r.name, r.transition.taken_after | old_left};
    } else if (run.before && !old_left.empty()) {
        active_profile_ = ActiveProfile{run.before->name, old_left};
    } else {
        active_profile_.reset();
    }
    r.active = active_profile_;
    save_active_profile();
    profile_changing_ = false;
    events_.notice(profile_notice(
        "profile " + r.name + (run.reverting ? " reverted" : " applied") + ": " +
            to_string(r.outcome) + "; offline " + cpus_or_dash(r.transition.to_offline) +
            ", back online " + cpus_or_dash(r.transition.to_online) +
            "; in force: " + (active_profile_ ? active_profile_->name : std::string("none")),
        r.name, r.transition.to_offline | r.transition.to_online));
    events_.state_changed();
    run.done(std::move(r));
    events_.profile_change_ended();
}

}  // namespace cpuhpd
