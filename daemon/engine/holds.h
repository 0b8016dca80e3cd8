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
#include <variant>
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
    // The uid that took it, as the bus vouched for it (AttachHold is allowed to it); none
    // when unknown (the engine's own tests, a caller the bus gave no uid for).
    std::optional<std::uint32_t> uid;
    // Its change is done: from now on its CPUs are defended (a hold whose change is still
    // queued is not).
    bool established = false;
    // False for a hold loaded from the state directory after a restart until its holder
    // re-attaches (AttachHold); `holder` is then the old connection's name, which no longer
    // lets requests through.
    bool attached = true;
    // Times a held CPU was found changed without cpuhpd (HoldViolated).
    std::uint64_t violations = 0;
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
    // Puts back holds loaded from the state directory, with their ids (new ids continue
    // after `next_id` and after every id put back). Any held before are dropped.
    void reload(std::vector<Hold> holds, std::uint64_t next_id);
    std::uint64_t next_id() const;
    // Marks hold `id` established (its change done); false when there is no such hold.
    bool establish(std::uint64_t id);
    // Hold `id` is now held by `holder` (a re-attach); nullopt when there is no such hold.
    std::optional<Hold> attach(std::uint64_t id, const std::string& holder);
    // Counts a violation of hold `id`; the hold as it is now, or nullopt.
    std::optional<Hold> count_violation(std::uint64_t id);

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

// The name a request the engine makes for hold `id` carries (its restore, putting back its
// CPUs): the hold itself lets such a request through.
std::string hold_caller(std::uint64_t id);

// The holds file in the state directory (state_dir/holds): what a restarted daemon takes the
// holds in force from. One header line, then one line per hold, tab-separated:
//   cpuhpd-holds 1 boottime_ns=N next_id=N
//   ID UID|- STATE CPUS ONLINE_BEFORE RESTORE(0|1) SINCE_S VIOLATIONS HOLDER WHO WHY
// (who and why are printable and never hold a tab; CPU lists "-" when empty).
inline constexpr const char* kHoldsFileName = "holds";
struct HoldsFile {
    std::uint64_t boottime_ns = 0;  // of the boot that wrote it (a later boot ended them)
    std::uint64_t next_id = 1;
    std::vector<Hold> holds;
};
std::string format_holds(const HoldsFile& file);
// The holds of `text`, or a message saying what is wrong with it.
std::variant<HoldsFile, std::string> parse_holds(const std::string& text);

// "2026-12-02 08:40:12 UTC": when a hold began, for messages and `cpuctl holds`.
std::string utc_text(std::chrono::system_clock::time_point when);

// "hold 3 by live-update (kernel update), offline since 2026-12-02 08:40:12 UTC": for
// messages and logs.
std::string describe(const Hold& hold);

}  // namespace cpuhpd
