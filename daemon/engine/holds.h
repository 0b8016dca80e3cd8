// Holds on CPUs, after systemd-logind's inhibitors: a caller takes CPUs and, while its hold
// lasts, only it may change them. Free of D-Bus and of file descriptors (the service ties
// each hold to one). Thread-safe: the admission thread takes holds and checks requests,
// the executor's worker checks again at batch time, the main thread ends holds.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cpuset.h"
#include "enums.h"
#include "request.h"

namespace cpuhpd {

struct Hold {
    std::uint64_t id = 0;  // assigned by HoldTable::take
    // The caller that took it (a bus name): its own requests may change the held CPUs.
    std::string holder;
    std::string who;                 // what the holder calls itself ("live-update")
    std::string why;                 // in words ("kernel live update")
    Action state = Action::Offline;  // the state the hold took the CPUs to
    CpuSet cpus;
    CpuSet online_before;  // of `cpus`, the ones online when the hold was taken
    bool restore = true;   // when it ends, bring `cpus` back to how they were before
    std::chrono::system_clock::time_point since;
};

// Most holds at once, and per holder: each costs the service a file descriptor.
inline constexpr std::size_t kMaxHolds = 256;
inline constexpr std::size_t kMaxHoldsPerHolder = 16;

class HoldTable {
public:
    // Registers `hold` and returns its id. Throws Refusal(Held) when another hold has any
    // of its CPUs, Refusal(Busy) beyond kMaxHolds or kMaxHoldsPerHolder.
    std::uint64_t take(Hold hold);
    // Removes the hold; nullopt when there is none of that id (ended already).
    std::optional<Hold> end(std::uint64_t id);
    std::optional<Hold> find(std::uint64_t id) const;
    std::vector<Hold> list() const;  // by id

    // A held CPU is changed only by its holder. For anyone else's request the held CPUs that
    // only a selector brought in are left out (as protected ones are), and a held CPU named
    // by number refuses the whole request: Refusal(Held), naming the hold, its holder and
    // why; so does a request a selector named only held CPUs for. Requests without a caller
    // (the service's own) are checked like any other.
    void admit(Request& request) const;

private:
    mutable std::mutex mutex_;
    std::map<std::uint64_t, Hold> holds_;
    std::uint64_t next_id_ = 1;
};

// "2026-12-02 08:40:12 UTC": when a hold began, for messages and `cpuctl holds`.
std::string utc_text(std::chrono::system_clock::time_point when);

// "hold 3 by live-update (kernel update), offline since 2026-12-02 08:40:12 UTC": for
// messages and logs.
std::string describe(const Hold& hold);

}  // namespace cpuhpd
