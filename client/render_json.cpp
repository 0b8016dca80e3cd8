#include "render_json.h"

#include "json_parts.h"

namespace cpuctl {
namespace {

Json cpus_json(const std::vector<CpuResult>& results) {
    Json cpus = Json::array();
    for (const auto& c : results) {
        cpus.push_back(
            {{"cpu", c.cpu}, {"result", c.result}, {"error", c.error}, {"message", c.message}});
    }
    return cpus;
}

Json pinned_tasks_json(const std::vector<PinnedTask>& tasks) {
    Json arr = Json::array();
    for (const auto& t : tasks) {
        arr.push_back({{"tid", t.tid}, {"comm", t.comm}, {"cpus", t.cpus}});
    }
    return arr;
}

Json pinned_irqs_json(const std::vector<PinnedIrq>& irqs) {
    Json arr = Json::array();
    for (const auto& i : irqs) {
        arr.push_back({{"irq", i.irq}, {"name", i.name}, {"cpus", i.cpus}});
    }
    return arr;
}

Json partitions_json(const std::vector<PartitionChange>& changes) {
    Json arr = Json::array();
    for (const auto& c : changes) {
        arr.push_back({{"path", c.path}, {"before", c.before}, {"after", c.after}});
    }
    return arr;
}

Json affinity_json(const std::vector<AffinityEntry>& entries) {
    Json arr = Json::array();
    for (const auto& e : entries) {
        arr.push_back({{"kind", e.kind},
                       {"id", e.id},
                       {"name", e.name},
                       {"cpus", e.cpus},
                       {"status", e.status},
                       {"errno", e.error},
                       {"message", e.message}});
    }
    return arr;
}

}  // namespace

Json holds_array(const std::vector<HoldInfo>& holds) {
    Json arr = Json::array();
    for (const auto& h : holds) {
        arr.push_back(hold_object(h));
    }
    return arr;
}

Json hold_object(const HoldInfo& h) {
    return {{"hold_id", h.id},        {"cpus", h.cpus},      {"state", h.state},
            {"who", h.who},           {"why", h.why},        {"holder", h.holder},
            {"since_us", h.since_us}, {"restore", h.restore}};
}

Json power_profiles_object(const PowerProfilesInfo& p) {
    return {{"followed", p.followed}, {"available", p.available}, {"profile", p.profile}};
}

Json batch_object(const BatchInFlight& b) {
    if (b.batch_id == 0) {
        return nullptr;
    }
    return {{"batch_id", b.batch_id}, {"action", b.action}, {"cpus", b.cpus},
            {"requests", b.requests}, {"done", b.done},     {"total", b.total},
            {"since_us", b.since_us}};
}

std::string dump(const Json& j) {
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// {"read":120,"plan":40,...}: an object in the batch's order.
Json phases_json(const std::vector<PhaseEntry>& phases) {
    Json j = Json::object();
    for (const auto& phase : phases) {
        j[phase.name] = phase.us;
    }
    return j;
}

std::string batch_json(const BatchReply& r) {
    Json cpus = cpus_json(r.cpus);
    Json j = {{"action", r.action},
              {"mask", r.mask},
              {"mode", r.mode},
              {"strategy", r.strategy},
              {"dry_run", r.dry_run},
              {"batch_id", r.batch_id},
              {"duration_us", r.duration_us},
              {"queued_us", r.queued_us},
              {"outcome", r.outcome},
              {"order", r.order},
              {"cpus", std::move(cpus)},
              {"pinned_tasks", pinned_tasks_json(r.pinned_tasks)},
              {"pinned_irqs", pinned_irqs_json(r.pinned_irqs)},
              {"partitions", partitions_json(r.partitions)},
              {"affinity", affinity_json(r.affinity)},
              {"phases", phases_json(r.phases)}};
    return dump(j);
}

Json status_object(const Status& s) {
    return {{"online", s.online},
            {"offline", s.offline},
            {"possible", s.possible},
            {"present", s.present},
            {"protected", s.protected_cpus},
            {"smt_control", s.smt_control},
            {"capabilities", s.capabilities},
            {"busy", s.busy},
            {"last_recovery",
             {{"outcome", s.recovery_outcome},
              {"summary", s.recovery_summary},
              {"time_us", s.recovery_time_us}}},
            {"holds", holds_array(s.holds)},
            {"profile", {{"active", s.active_profile}, {"taken", s.profile_cpus}}},
            {"power_profiles", power_profiles_object(s.power_profiles)},
            {"batch", batch_object(s.batch)}};
}

std::string status_json(const Status& s) {
    return dump(status_object(s));
}

std::string cancel_json(const CancelReply& r) {
    Json j = {{"batch_id", r.batch_id}, {"finished", r.finished}};
    if (r.finished) {
        j["action"] = r.action;
        j["changed"] = r.changed;
        j["failed"] = r.failed;
        j["cancelled"] = r.cancelled;
    }
    return dump(j);
}

std::string topology_json(const std::vector<TopologyCpu>& cpus) {
    Json arr = Json::array();
    for (const auto& c : cpus) {
        arr.push_back({{"cpu", c.cpu},
                       {"package", c.package},
                       {"die", c.die},
                       {"core", c.core},
                       {"node", c.node},
                       {"siblings", c.siblings},
                       {"online", c.online},
                       {"hotpluggable", c.hotpluggable}});
    }
    return dump(Json{{"cpus", std::move(arr)}});
}

std::string holds_json(const std::vector<HoldInfo>& holds) {
    return dump(Json{{"holds", holds_array(holds)}});
}

std::string release_json(std::uint64_t id, const std::vector<CpuResult>& restored) {
    return dump(Json{{"hold_id", id}, {"restored", cpus_json(restored)}});
}

std::string profiles_json(const std::vector<ProfileInfo>& profiles, const std::string& active) {
    Json arr = Json::array();
    for (const auto& p : profiles) {
        arr.push_back({{"name", p.name},
                       {"offline", p.offline},
                       {"smt_off", p.smt_off},
                       {"min_online_per_node", p.min_online_per_node}});
    }
    return dump(Json{{"profiles", std::move(arr)}, {"active", active}});
}

std::string profile_json(const ProfileReply& r) {
    return dump(Json{{"profile", r.profile},
                     {"offline", r.offline},
                     {"online", r.online},
                     {"taken", r.taken},
                     {"active", r.active},
                     {"outcome", r.outcome},
                     {"dry_run", r.dry_run},
                     {"duration_us", r.duration_us},
                     {"cpus", cpus_json(r.cpus)},
                     {"pinned_tasks", pinned_tasks_json(r.pinned_tasks)},
                     {"pinned_irqs", pinned_irqs_json(r.pinned_irqs)},
                     {"partitions", partitions_json(r.partitions)},
                     {"affinity", affinity_json(r.affinity)}});
}

std::string error_json(const ErrorInfo& e) {
    return dump(Json{{"error", e.name}, {"message", e.message}});
}

}  // namespace cpuctl
