// Power-policy profiles: named sets of CPUs to take offline (config `profiles:`), and the
// changes that apply one, switch from one to another, or revert one. Pure: reads a
// MachineState, touches nothing; the daemon queues the changes as ordinary requests.
#pragma once

#include <optional>
#include <string>

#include "machine.h"
#include "settings.h"

namespace cpuhpd {

struct Profile {
    std::string offline;               // a mask expression: cpulists, cpumaps, selectors
    bool smt_off = false;              // also take every SMT sibling thread offline
    unsigned min_online_per_node = 0;  // keep at least this many CPUs online in each node
};

// The profile in force and the CPUs it took offline: those it found online. Reverting
// brings back exactly these, never CPUs that were offline before it.
struct ActiveProfile {
    std::string name;
    CpuSet taken;
};

struct ProfileTransition {
    CpuSet to_online;    // CPUs the profile in force took that the next one leaves
    CpuSet to_offline;   // CPUs the next profile takes that are online now
    CpuSet taken_after;  // what the next profile will have taken once both are done
};

// What applying `profile` changes on `machine` when `active` is in force (none: nothing
// taken yet): the CPUs of its mask (selectors leave out protected CPUs and those without an
// online file, CPUs named by number are refused as for Offline) and, with smt_off, the SMT
// siblings; then, per NUMA node, the lowest-numbered of them stay online while the node
// would keep fewer than min_online_per_node. The fewest changes: CPUs both profiles take
// stay offline. Throws MaskError or Refusal (InvalidMask, ProtectedCpu, NotHotpluggable,
// TooFewOnline: fewer than settings.min_online CPUs would stay online).
ProfileTransition plan_profile(const Profile& profile, const std::optional<ActiveProfile>& active,
                               const MachineState& machine, const EngineSettings& settings);

// Reverting `active`: its CPUs that are offline now come back.
ProfileTransition plan_revert(const ActiveProfile& active, const MachineState& machine);

// The state file of the profile in force ("NAME\nCPULIST\n") and back. parse returns
// nothing for text that is not one.
std::string format_active_profile(const ActiveProfile& active);
std::optional<ActiveProfile> parse_active_profile(const std::string& text);

}  // namespace cpuhpd
