#include "profiles.h"

#include <map>
#include <sstream>

#include "admission.h"
#include "cpulist.h"
#include "planner.h"

namespace cpuhpd {

namespace {

// The CPUs `profile` wants offline on `machine`, before min_online_per_node.
CpuSet profile_cpus(const Profile& profile, const MachineState& machine,
                    const EngineSettings& settings) {
    CpuSet cpus;
    if (!profile.offline.empty()) {
        ChangeAsk ask;
        ask.action = Action::Offline;
        ask.mask = profile.offline;
        Request request = resolve(ask, machine, settings);
        narrow_to_eligible(request, machine, settings);
        cpus = request.cpus;
    }
    if (profile.smt_off) {
        const CpuSet fixed = machine.online - machine.hotpluggable;
        cpus |= machine.smt_secondaries() - settings.protected_cpus - fixed;
    }
    return cpus;
}

// Leaves online, per node, the lowest-numbered CPUs of `target` while the node would keep
// fewer than `minimum` online CPUs once `target` is offline.
CpuSet keep_per_node(const CpuSet& target, const CpuSet& online_after_return, unsigned minimum,
                     const MachineState& machine) {
    if (minimum == 0) {
        return target;
    }
    std::map<int, CpuSet> by_node;  // node -> its CPUs that are online or coming back
    for (const unsigned cpu : online_after_return.members()) {
        const auto it = machine.topology.find(cpu);
        by_node[it == machine.topology.end() ? -1 : it->second.node].add(cpu);
    }
    CpuSet result = target;
    for (const auto& [node, cpus] : by_node) {
        std::size_t left = (cpus - target).count();
        for (const unsigned cpu : (cpus & target).members()) {
            if (left >= minimum) {
                break;
            }
            result.remove(cpu);
            ++left;
        }
    }
    return result;
}

}  // namespace

ProfileTransition plan_profile(const Profile& profile, const std::optional<ActiveProfile>& active,
                               const MachineState& machine, const EngineSettings& settings) {
    const CpuSet taken_before = active ? active->taken : CpuSet{};
    const CpuSet offline_now = machine.present - machine.online;
    CpuSet target = profile_cpus(profile, machine, settings);
    // What the profile in force took and the next one leaves comes back first.
    ProfileTransition transition;
    transition.to_online = (taken_before - target) & offline_now;
    const CpuSet online_after_return = machine.online | transition.to_online;
    target = keep_per_node(target, online_after_return, profile.min_online_per_node, machine);
    transition.to_online = (taken_before - target) & offline_now;
    transition.to_offline = target & (machine.online | transition.to_online);
    transition.taken_after = transition.to_offline | (taken_before & target & offline_now);

    // Checked as an Offline of the whole target once the returning CPUs are back: CPUs
    // named by number that may not go offline are refused, and min_online counts.
    MachineState after_return = machine;
    after_return.online = online_after_return;
    Request request;
    request.action = Action::Offline;
    request.mask = profile.offline.empty() ? "smt" : profile.offline;
    request.cpus = target;
    validate(request, after_return, settings);
    return transition;
}

ProfileTransition plan_revert(const ActiveProfile& active, const MachineState& machine) {
    ProfileTransition transition;
    transition.to_online = active.taken & (machine.present - machine.online);
    return transition;
}

std::string format_active_profile(const ActiveProfile& active) {
    return active.name + "\n" + active.taken.to_string() + "\n";
}

std::optional<ActiveProfile> parse_active_profile(const std::string& text) {
    std::istringstream in(text);
    ActiveProfile active;
    std::string cpus;
    if (!std::getline(in, active.name) || active.name.empty() || !std::getline(in, cpus)) {
        return std::nullopt;
    }
    if (cpus.empty()) {
        return active;
    }
    try {
        active.taken = parse_cpulist(cpus);
    } catch (const MaskError&) {
        return std::nullopt;
    }
    return active;
}

}  // namespace cpuhpd
