// Engine values as D-Bus values: the result entries, the summary dictionaries, the holds, the
// topology and the recovery report of org.cpuhpd1.Manager. Main thread; no policy.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine.h"

namespace cpuhpd {

// a(ussis): cpu, outcome, errno name, errno, message.
using DbusCpuResult = sdbus::Struct<uint32_t, std::string, std::string, int32_t, std::string>;
// a{sv}: the summary of a change or a profile change, and LastRecovery.
using DbusSummary = std::map<std::string, sdbus::Variant>;
// (tssssstb): id, cpus, state, who, why, holder, since (us since the epoch), restore.
using DbusHold = sdbus::Struct<uint64_t, std::string, std::string, std::string, std::string,
                               std::string, uint64_t, bool>;
// cpu, package, die, core, node, siblings, online, hotpluggable.
using DbusTopologyEntry =
    sdbus::Struct<uint32_t, int32_t, int32_t, int32_t, int32_t, std::string, bool, bool>;
// name, offline mask, smt_off, min_online_per_node.
using DbusProfile = sdbus::Struct<std::string, std::string, bool, uint32_t>;

std::vector<DbusCpuResult> to_dbus(const std::vector<CpuResult>& cpus);
std::vector<DbusHold> to_dbus(const std::vector<Hold>& holds);
DbusSummary summary_of(const RequestResult& result);
DbusSummary summary_of(const ProfileDone& done);
DbusSummary recovery_of(const RecoveryReport& r);
// CurrentBatch: empty when none runs.
DbusSummary batch_of(const std::optional<BatchInFlight>& batch);
std::vector<DbusTopologyEntry> topology_of(const MachineState& state);
std::vector<DbusProfile> profiles_of(const std::map<std::string, Profile>& profiles);
std::vector<std::string> capability_names(const MachineState& state);

}  // namespace cpuhpd
