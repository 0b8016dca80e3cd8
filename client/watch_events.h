// What `cpuctl watch` prints: one event per line, as text or (--json) as a JSON object, from
// the signals and property changes of org.cpuhpd1.Manager. Free of D-Bus (watch_command.cpp
// turns messages into these), so that the lines can be tested without a bus.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model.h"

namespace cpuctl {

// BatchFinished's arguments.
struct BatchEnd {
    std::uint64_t batch_id = 0;
    std::string action;
    std::string strategy;
    std::string changed;  // cpulists
    std::string failed;
    std::uint32_t requests = 0;
    std::uint64_t duration_us = 0;
    std::string cancelled;
};

// HoldViolated's arguments.
struct HoldViolation {
    std::uint64_t hold_id = 0;
    std::string who;
    std::string holder;
    std::string cpus;    // the held CPUs found changed (cpulist)
    std::string online;  // those of them online now
    std::string action;  // restore, report, limited
    std::uint64_t violations = 0;
};

struct WatchEvent {
    enum class Kind {
        Watching,       // the start: who serves org.cpuhpd1 ("" nobody) and `status`
        DaemonGone,     // org.cpuhpd1 lost its owner (`owner`: the one that left)
        DaemonBack,     // it has one again: `owner`, `status`
        Cpus,           // Online/Offline changed: status.online, status.offline
        Smt,            // SmtControl changed: status.smt_control
        BatchStarted,   // CurrentBatch names a new batch: status.batch
        BatchProgress,  // BatchProgress: progress_*
        BatchFinished,  // BatchFinished: finished
        HoldTaken,      // a hold appeared: hold
        HoldEnded,      // a hold went: hold (as it was)
        HoldViolated,   // HoldViolated: violation
        Profile,        // ActiveProfile/ProfileCpus changed: status.active_profile, profile_cpus
        PowerProfiles,  // PowerProfiles changed: status.power_profiles
        Recovery,       // LastRecovery of a daemon that came back tells of a recovery
    };
    Kind kind = Kind::Watching;
    std::uint64_t time_us = 0;  // when cpuctl saw it (CLOCK_REALTIME)
    std::string owner;
    Status status;
    HoldInfo hold;
    BatchEnd finished;
    HoldViolation violation;
    std::uint64_t progress_batch = 0;
    std::uint32_t progress_done = 0;
    std::uint32_t progress_total = 0;
};

// The events that tell how `before` became `after` (the status before and after a signal),
// in this order: cpus, smt, holds ended, holds taken, profile, power profiles, batch
// started, recovery (a LastRecovery with another time and an outcome other than none).
// Busy, Capabilities and the batch's progress are left out (BatchProgress and BatchFinished
// tell those).
std::vector<WatchEvent> watch_events(const Status& before, const Status& after,
                                     std::uint64_t time_us);

// The event's kind as the JSON says it ("batch-finished", ...).
std::string watch_event_name(WatchEvent::Kind kind);
// "2026-12-05T01:30:00.123Z".
std::string iso_time(std::uint64_t time_us);
// One line, without the newline: "<iso time> <text>" or {"time":..,"event":..,...}.
std::string watch_line(const WatchEvent& event, bool json);

}  // namespace cpuctl
