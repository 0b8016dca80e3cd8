// How the engine reports back to whoever runs it (the service): one interface, implemented
// once. The engine never calls the service otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cpuset.h"
#include "request.h"

namespace cpuhpd {

struct Hold;

// A held CPU changed without cpuhpd (a uevent or a re-read showed it).
struct HoldViolation {
    std::uint64_t hold_id = 0;
    std::string who;     // the hold's who
    std::string holder;  // its holder's bus name
    CpuSet cpus;         // the held CPUs found changed
    CpuSet online;       // of `cpus`, the ones online now
    // "restore": being put back; "report": config enforce_holds: report; "limited": put
    // back too often in the last minute (a fight with an outside writer), reported only.
    std::string action;
    std::uint64_t count = 0;  // the hold's violations so far, this one included
};

// A message for the log: what happened, in words, with structured fields (journal names in
// upper case: CPUS, BATCH_ID, HOLD_ID, ...).
struct Notice {
    enum class Level { Info, Warning, Error };
    Level level = Level::Info;
    std::string text;
    std::vector<std::pair<std::string, std::string>> fields;
};

// Called on the engine's owner thread (the one its Post function runs tasks on), except
// where said otherwise.
class EngineEvents {
public:
    virtual ~EngineEvents() = default;
    // Something the status shows may have changed: the machine state (a read was adopted),
    // busy, the holds or the profile in force.
    virtual void state_changed() = 0;
    // Any thread: a step of a running batch (every write; throttling is the receiver's).
    virtual void batch_progress(std::uint64_t batch_id, std::size_t done, std::size_t total) = 0;
    virtual void batch_finished(const BatchReport& report) = 0;
    // A change finished (or was refused at batch time), before its caller hears of it.
    virtual void request_finished(const RequestResult& result) = 0;
    // A hold was taken or ended (after hold_ended()).
    virtual void holds_changed() = 0;
    // Hold `hold` ended: whatever ties it to its holder can go.
    virtual void hold_ended(const Hold& hold) = 0;
    // A held CPU changed without cpuhpd (logged by the engine's notice before this).
    virtual void hold_violated(const HoldViolation& violation) = 0;
    // An apply or revert of a profile ended (done, failed or refused), after its caller's
    // answer: another profile change may start now.
    virtual void profile_change_ended() = 0;
    // Any thread.
    virtual void notice(const Notice& notice) = 0;
};

}  // namespace cpuhpd
