// The Daemon's profiles: applying one (or switching from the one in force), reverting it,
// and the state file that lets a restarted daemon know what the profile in force took.
#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "batch_phases.h"
#include "daemon.h"
#include "input.h"
#include "log.h"
#include "state_file.h"

namespace cpuhpd {

namespace {

constexpr const char* kProfileFile = "profile";

std::string cpus_or_dash(const CpuSet& cpus) {
    return cpus.empty() ? "-" : cpus.to_string();
}

void log_profile(const std::string& text, const std::string& name, const CpuSet& cpus) {
    log::info(text, {{"PROFILE", name}, {"CPUS", cpus.to_string()}});
}

}  // namespace

void Daemon::load_active_profile() {
    const auto file = config_.state_dir / kProfileFile;
    std::string problem;
    const auto text = read_state_file(file, kMaxStateBytes, problem);
    if (!text) {
        if (!problem.empty()) {
            log::warning("ignoring the profile state file: " + problem);
        }
        return;
    }
    active_profile_ = parse_active_profile(*text);
    if (!active_profile_) {
        log::warning("ignoring " + file.string() + ": not a profile state file");
        return;
    }
    log_profile("profile " + active_profile_->name + " is in force (from " + file.string() +
                    "); it took CPU " + active_profile_->taken.to_string(),
                active_profile_->name, active_profile_->taken);
}

void Daemon::save_active_profile() {
    const auto file = config_.state_dir / kProfileFile;
    if (!active_profile_) {
        std::error_code ec;
        std::filesystem::remove(file, ec);
        return;
    }
    std::string step;
    if (const int err = replace_file(file, format_active_profile(*active_profile_), step);
        err != 0) {
        log::warning("cannot save " + file.string() + ": " + step + ": " + std::strerror(err) +
                     "; a restarted cpuhpd will not know the profile in force");
    }
}

void Daemon::profile_change_ended() {
    // After the caller's reply: the power profile follower's switch that waited for this
    // change comes next.
    loop_.post([this] {
        if (power_profiles_) {
            power_profiles_->profile_change_ended();
        }
    });
}

void Daemon::apply_profile(ProfileAsk ask, std::function<void(ProfileAnswer)> done) {
    if (stopping_) {
        throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; nothing was changed");
    }
    std::optional<Profile> profile;
    if (!ask.name.empty()) {
        const auto it = config_.profiles.find(ask.name);
        if (it == config_.profiles.end()) {
            std::string known;
            for (const auto& [name, unused] : config_.profiles) {
                known += (known.empty() ? "" : ", ") + name;
            }
            throw Refusal(
                RefusalKind::NoSuchProfile,
                "no profile '" + escape_excerpt(ask.name, kMaxExcerptBytes) + "' in the config (" +
                    (known.empty() ? std::string("it has none") : "it has " + known) + ")");
        }
        profile = it->second;
    } else if (!active_profile_) {
        throw Refusal(RefusalKind::NoSuchProfile, "no profile is in force; nothing to revert");
    }
    if (profile_changing_ && !ask.dry_run) {
        throw Refusal(RefusalKind::Busy, "another profile change is in progress; try again");
    }
    if (!ask.dry_run) {
        profile_changing_ = true;
    }
    admission_->post([this, ask = std::move(ask), profile, active = active_profile_,
                      done = std::move(done)] { run_profile(ask, profile, active, done); });
}

void Daemon::run_profile(const ProfileAsk& ask, const std::optional<Profile>& profile,
                         const std::optional<ActiveProfile>& active,
                         const std::function<void(ProfileAnswer)>& done) {
    struct Run {
        ProfileDone result;
        std::size_t waiting = 1;      // this function's own finished() below
        bool offline_failed = false;  // the offline part was refused or rolled back
        std::function<void(ProfileAnswer)> done;
        std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    };
    auto run = std::make_shared<Run>();
    run->done = done;
    run->result.name = profile ? ask.name : active->name;
    run->result.dry_run = ask.dry_run;
    auto finished = [this, run, reverting = !profile,
                     before = active](const RequestResult* result) {
        // Main thread.
        if (result != nullptr) {
            log_result(*result);
            auto& cpus = run->result.cpus;
            cpus.insert(cpus.end(), result->cpus.begin(), result->cpus.end());
            if (result->action == Action::Offline) {
                run->result.pinned = result->pinned;
            }
            auto& partitions = run->result.partitions;
            partitions.insert(partitions.end(), result->partitions.begin(),
                              result->partitions.end());
            if (result->refusal || result->outcome != Outcome::Ok) {
                run->result.outcome = Outcome::Partial;
                // Atomic: nothing of it stayed offline.
                run->offline_failed |= result->action == Action::Offline;
            }
        }
        if (--run->waiting > 0) {
            return;
        }
        ProfileDone& r = run->result;
        if (r.outcome != Outcome::Ok &&
            std::none_of(r.cpus.begin(), r.cpus.end(),
                         [](const CpuResult& cpu) { return cpu.outcome == CpuOutcome::Changed; })) {
            r.outcome = Outcome::Failed;
        }
        std::sort(r.cpus.begin(), r.cpus.end(),
                  [](const CpuResult& a, const CpuResult& b) { return a.cpu < b.cpu; });
        r.duration = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - run->start);
        if (!r.dry_run) {
            // The new profile is in force once its offline part is done; CPUs of the old one
            // that did not come back stay taken (a revert brings them back). When the offline
            // part failed, the old profile stays in force with what of it is still offline.
            const CpuSet offline_now = state_.present - state_.online;
            const CpuSet old_left = before ? before->taken & offline_now : CpuSet{};
            if (!reverting && !run->offline_failed) {
                active_profile_ = ActiveProfile{r.name, r.transition.taken_after | old_left};
            } else if (before && !old_left.empty()) {
                active_profile_ = ActiveProfile{before->name, old_left};
            } else {
                active_profile_.reset();
            }
            r.active = active_profile_;
            save_active_profile();
            profile_changing_ = false;
            profile_change_ended();
            log_profile("profile " + r.name + (reverting ? " reverted" : " applied") + ": " +
                            to_string(r.outcome) + "; offline " +
                            cpus_or_dash(r.transition.to_offline) + ", back online " +
                            cpus_or_dash(r.transition.to_online) + "; in force: " +
                            (active_profile_ ? active_profile_->name : std::string("none")),
                        r.name, r.transition.to_offline | r.transition.to_online);
            schedule_announce();
        }
        run->done(std::move(r));
    };
    try {
        if (!executor_) {
            throw Refusal(RefusalKind::Busy, "cpuhpd is stopping; nothing was changed");
        }
        const MachineState state = read_state();
        run->result.transition = profile ? plan_profile(*profile, active, state, config_.engine)
                                         : plan_revert(*active, state);
        const ProfileTransition& t = run->result.transition;
        std::vector<Request> requests;
        {
            // Refused here, before the online part: the caller gets Error.Pinned or
            // EmptyPartition and nothing changes. The offline batch checks again when it
            // starts.
            const CpuSet leaving = t.to_offline & state.online;
            run->result.pinned =
                scan_pinned(config_.proc_root, leaving, (state.online | t.to_online) - leaving);
            Request offline;
            offline.refuse_pinned = ask.refuse_pinned;
            offline.force = ask.force;
            refuse_if_pinned(offline, leaving, run->result.pinned);
            const CpuSet online_then = state.online | t.to_online;
            const auto partitions = find_partitions(config_.cgroup_root);
            refuse_if_emptied(offline, leaving, leaving, online_then, partitions);
            if (ask.dry_run) {
                run->result.partitions = plan_shrink(partitions, leaving, online_then);
            }
        }
        if (!ask.dry_run) {
            // Back online first (best-effort: what can come back, does), then offline in one
            // atomic batch: it is taken whole or not at all.
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
                request.mask = "profile " + run->result.name + ": " + cpus.to_string();
                request.mode = mode;
                request.strategy = ask.strategy.value_or(StrategyKind::Auto);
                request.refuse_pinned = ask.refuse_pinned && action == Action::Offline;
                request.force = ask.force;
                request.caller = ask.caller;
                requests.push_back(std::move(request));
            }
        }
        run->waiting += requests.size();
        for (auto& request : requests) {
            RequestResult refused;
            refused.action = request.action;
            refused.mask = request.mask;
            refused.outcome = Outcome::Failed;
            try {
                executor_->submit(std::move(request), state, [this, finished](RequestResult r) {
                    loop_.post([finished, r = std::move(r)] { finished(&r); });
                });
            } catch (...) {
                try {
                    throw;
                } catch (const Refusal& refusal) {
                    refused.refusal = refusal;
                } catch (const std::exception& error) {
                    refused.refusal = Refusal(RefusalKind::KernelError, error.what());
                }
                loop_.post([finished, refused] { finished(&refused); });
            }
        }
    } catch (...) {
        loop_.post([this, run, error = std::current_exception()] {
            if (!run->result.dry_run) {
                profile_changing_ = false;
                profile_change_ended();
            }
            run->waiting = 0;  // nothing was queued: answer with the refusal alone
            run->done(error);
        });
        return;
    }
    loop_.post([finished] { finished(nullptr); });
}

}  // namespace cpuhpd
