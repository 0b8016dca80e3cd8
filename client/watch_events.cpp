#include "watch_events.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>

#include "json_parts.h"
#include "render_table.h"

namespace cpuctl {

namespace {

std::string or_dash(const std::string& s) {
    return s.empty() ? "-" : s;
}

std::string count_of(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "online 0-15, offline 4-7, 1 hold, profile none, batch none".
std::string summary_text(const Status& s) {
    return "online " + or_dash(s.online) + ", offline " + or_dash(s.offline) + ", " +
           count_of(s.holds.size(), "hold", "holds") + ", profile " +
           profile_status_line(s.active_profile, s.profile_cpus) + ", batch " +
           batch_status_line(s.batch);
}

std::string text_of(const WatchEvent& e) {
    using K = WatchEvent::Kind;
    const Status& s = e.status;
    switch (e.kind) {
        case K::Watching:
            if (e.owner.empty()) {
                return "watching: cpuhpd is not on the bus; waiting for it";
            }
            return "watching cpuhpd (" + e.owner + "): " + summary_text(s);
        case K::DaemonGone:
            return "cpuhpd left the bus (" + or_dash(e.owner) + "); waiting for it to come back";
        case K::DaemonBack:
            return "cpuhpd is back on the bus (" + e.owner + "): " + summary_text(s);
        case K::Cpus:
            return "cpus: online " + or_dash(s.online) + ", offline " + or_dash(s.offline);
        case K::Smt:
            return "smt control: " + or_dash(s.smt_control);
        case K::BatchStarted:
            return "batch " + std::to_string(s.batch.batch_id) + " started: " + s.batch.action +
                   " " + or_dash(s.batch.cpus) + ", " +
                   count_of(s.batch.requests, "request", "requests");
        case K::BatchProgress:
            return "batch " + std::to_string(e.progress_batch) + ": " +
                   std::to_string(e.progress_done) + "/" + std::to_string(e.progress_total) +
                   " done";
        case K::BatchFinished: {
            const BatchEnd& f = e.finished;
            std::string line = "batch " + std::to_string(f.batch_id) + " finished: " + f.action +
                               ", changed " + or_dash(f.changed) + ", failed " + or_dash(f.failed);
            if (!f.cancelled.empty()) {
                line += ", cancelled " + f.cancelled;
            }
            return line + " (strategy " + or_dash(f.strategy) + ", " +
                   count_of(f.requests, "request", "requests") + ", " +
                   seconds_text(f.duration_us) + ")";
        }
        case K::HoldTaken:
            return "hold " + std::to_string(e.hold.id) + " taken: " + hold_status_line(e.hold) +
                   ", holder " + or_dash(e.hold.holder);
        case K::HoldEnded:
            return "hold " + std::to_string(e.hold.id) + " ended: " + hold_status_line(e.hold);
        case K::HoldViolated: {
            const HoldViolation& v = e.violation;
            return "hold " + std::to_string(v.hold_id) + " violated: CPU " + or_dash(v.cpus) +
                   " changed without cpuhpd (online now: " + or_dash(v.online) + "), held by " +
                   or_dash(v.who) + "; " + or_dash(v.action) + " (violation " +
                   std::to_string(v.violations) + ")";
        }
        case K::Profile:
            return "profile: " + profile_status_line(s.active_profile, s.profile_cpus);
        case K::PowerProfiles:
            return "power profiles: " + power_profiles_status_line(s.power_profiles);
        case K::Recovery:
            return "last recovery: " + recovery_status_line(s);
    }
    return {};
}

Json json_of(const WatchEvent& e) {
    using K = WatchEvent::Kind;
    const Status& s = e.status;
    Json j = {{"time", iso_time(e.time_us)}, {"event", watch_event_name(e.kind)}};
    switch (e.kind) {
        case K::Watching:
        case K::DaemonBack:
            j["owner"] = e.owner;
            j["status"] = e.owner.empty() ? Json(nullptr) : status_object(s);
            break;
        case K::DaemonGone:
            j["owner"] = e.owner;
            break;
        case K::Cpus:
            j["online"] = s.online;
            j["offline"] = s.offline;
            break;
        case K::Smt:
            j["smt_control"] = s.smt_control;
            break;
        case K::BatchStarted:
            j["batch"] = batch_object(s.batch);
            break;
        case K::BatchProgress:
            j["batch_id"] = e.progress_batch;
            j["done"] = e.progress_done;
            j["total"] = e.progress_total;
            break;
        case K::BatchFinished:
            j["batch_id"] = e.finished.batch_id;
            j["action"] = e.finished.action;
            j["strategy"] = e.finished.strategy;
            j["changed"] = e.finished.changed;
            j["failed"] = e.finished.failed;
            j["cancelled"] = e.finished.cancelled;
            j["requests"] = e.finished.requests;
            j["duration_us"] = e.finished.duration_us;
            break;
        case K::HoldTaken:
        case K::HoldEnded:
            j["hold"] = hold_object(e.hold);
            break;
        case K::HoldViolated:
            j["hold_id"] = e.violation.hold_id;
            j["who"] = e.violation.who;
            j["holder"] = e.violation.holder;
            j["cpus"] = e.violation.cpus;
            j["online"] = e.violation.online;
            j["action"] = e.violation.action;
            j["violations"] = e.violation.violations;
            break;
        case K::Profile:
            j["active"] = s.active_profile;
            j["taken"] = s.profile_cpus;
            break;
        case K::PowerProfiles:
            j["power_profiles"] = power_profiles_object(s.power_profiles);
            break;
        case K::Recovery:
            j["outcome"] = s.recovery_outcome;
            j["summary"] = s.recovery_summary;
            j["time_us"] = s.recovery_time_us;
            break;
    }
    return j;
}

}  // namespace

std::string watch_event_name(WatchEvent::Kind kind) {
    using K = WatchEvent::Kind;
    switch (kind) {
        case K::Watching:
            return "watching";
        case K::DaemonGone:
            return "daemon-gone";
        case K::DaemonBack:
            return "daemon-back";
        case K::Cpus:
            return "cpus";
        case K::Smt:
            return "smt";
        case K::BatchStarted:
            return "batch-started";
        case K::BatchProgress:
            return "batch-progress";
        case K::BatchFinished:
            return "batch-finished";
        case K::HoldTaken:
            return "hold-taken";
        case K::HoldEnded:
            return "hold-ended";
        case K::HoldViolated:
            return "hold-violated";
        case K::Profile:
            return "profile";
        case K::PowerProfiles:
            return "power-profiles";
        case K::Recovery:
            return "recovery";
    }
    return "unknown";
}

std::string iso_time(std::uint64_t time_us) {
    const std::time_t seconds = static_cast<std::time_t>(time_us / 1000000);
    std::tm parts{};
    gmtime_r(&seconds, &parts);
    char text[40];
    const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
    char millis[8];
    std::snprintf(millis, sizeof millis, ".%03uZ", static_cast<unsigned>((time_us / 1000) % 1000));
    return std::string(text, n) + millis;
}

std::string watch_line(const WatchEvent& event, bool json) {
    if (json) {
        return dump(json_of(event));
    }
    return iso_time(event.time_us) + " " + text_of(event);
}

std::vector<WatchEvent> watch_events(const Status& before, const Status& after,
                                     std::uint64_t time_us) {
    using K = WatchEvent::Kind;
    std::vector<WatchEvent> out;
    auto add = [&](K kind) -> WatchEvent& {
        WatchEvent e;
        e.kind = kind;
        e.time_us = time_us;
        e.status = after;
        out.push_back(std::move(e));
        return out.back();
    };
    if (before.online != after.online || before.offline != after.offline) {
        add(K::Cpus);
    }
    if (before.smt_control != after.smt_control) {
        add(K::Smt);
    }
    std::map<std::uint64_t, const HoldInfo*> had;
    std::map<std::uint64_t, const HoldInfo*> has;
    for (const auto& h : before.holds) {
        had[h.id] = &h;
    }
    for (const auto& h : after.holds) {
        has[h.id] = &h;
    }
    for (const auto& [id, hold] : had) {
        if (has.count(id) == 0) {
            add(K::HoldEnded).hold = *hold;
        }
    }
    for (const auto& [id, hold] : has) {
        if (had.count(id) == 0) {
            add(K::HoldTaken).hold = *hold;
        }
    }
    if (before.active_profile != after.active_profile ||
        before.profile_cpus != after.profile_cpus) {
        add(K::Profile);
    }
    const auto& p = before.power_profiles;
    const auto& q = after.power_profiles;
    if (p.followed != q.followed || p.available != q.available || p.profile != q.profile) {
        add(K::PowerProfiles);
    }
    if (after.batch.batch_id != 0 && after.batch.batch_id != before.batch.batch_id) {
        add(K::BatchStarted);
    }
    if (after.recovery_time_us != before.recovery_time_us && !after.recovery_outcome.empty() &&
        after.recovery_outcome != "none") {
        add(K::Recovery);
    }
    return out;
}

}  // namespace cpuctl
