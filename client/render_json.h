// --json output of cpuctl: exactly the shapes of docs/interface.md, one object per line.
#pragma once

#include <string>
#include <vector>

#include "model.h"

namespace cpuctl {

// The shape of docs/interface.md, with "pinned_tasks":[{"tid":..,"comm":..,"cpus":..}]
// and "pinned_irqs":[{"irq":..,"name":..,"cpus":..}], always there (empty for online), and
// ending with "phases":{"read":..,"plan":..,...} (microseconds, in the batch's order; {} for
// a dry run).
std::string batch_json(const BatchReply& reply);
std::string status_json(const Status& status);
std::string cancel_json(const CancelReply& reply);
std::string topology_json(const std::vector<TopologyCpu>& cpus);
std::string holds_json(const std::vector<HoldInfo>& holds);
// {"hold_id":3,"restored":[...results as in batch_json...]}
std::string release_json(std::uint64_t id, const std::vector<CpuResult>& restored);
// {"profiles":[{"name":..,"offline":..,"smt_off":..,"min_online_per_node":..}],"active":..}
std::string profiles_json(const std::vector<ProfileInfo>& profiles, const std::string& active);
// {"profile":..,"offline":..,"online":..,"taken":..,"active":..,"outcome":..,"dry_run":..,
//  "duration_us":..,"cpus":[...as in batch_json...],"pinned_tasks":[..],"pinned_irqs":[..]}
std::string profile_json(const ProfileReply& reply);
// {"error":"org.cpuhpd1.Error.InvalidMask","message":"..."}
std::string error_json(const ErrorInfo& error);

}  // namespace cpuctl
