// How the engine reports back to whoever runs it (the service): one interface, implemented
// once. The engine never calls the service otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "request.h"

namespace cpuhpd {

struct Hold;

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
    // An apply or revert of a profile ended (done, failed or refused), after its caller's
    // answer: another profile change may start now.
    virtual void profile_change_ended() = 0;
    // Any thread.
    virtual void notice(const Notice& notice) = 0;
};

}  // namespace cpuhpd
