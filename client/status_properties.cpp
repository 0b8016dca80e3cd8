#include "status_properties.h"

#include <tuple>
#include <utility>

#include "cpuhpd-proxy.h"  // generated from dbus/org.cpuhpd1.Manager.xml
#include "names.h"

namespace cpuctl {

namespace {

using Proxy = org::cpuhpd1::Manager_proxy;

// The value of `key` in `dict` when it has the type T; `fallback` otherwise.
template <typename T>
T field(const PropertyMap& dict, const std::string& key, T fallback = T{}) {
    auto it = dict.find(key);
    if (it == dict.end() || !it->second.template containsValueOfType<T>()) {
        return fallback;
    }
    return it->second.template get<T>();
}

// Sets `out` from property `name` of `props`, read as T (its generated getter's type), when
// there; true when it was.
template <typename T, typename Out>
bool take(const PropertyMap& props, const char* name, Out& out) {
    auto it = props.find(name);
    if (it == props.end() || !it->second.template containsValueOfType<T>()) {
        return false;
    }
    out = it->second.template get<T>();
    return true;
}

}  // namespace

std::vector<HoldInfo> holds_of(const DbusHolds& holds) {
    std::vector<HoldInfo> out;
    for (const auto& entry : holds) {
        out.push_back(std::apply(
            [](const auto&... f) { return HoldInfo{f...}; },
            static_cast<const std::tuple<uint64_t, std::string, std::string, std::string,
                                         std::string, std::string, uint64_t, bool>&>(entry)));
    }
    return out;
}

std::vector<std::string> update_status(Status& s, const PropertyMap& props) {
    using namespace cpuhpd::dbus;
    std::vector<std::string> set;
    Proxy* p = nullptr;  // in decltype only
    auto plain = [&](bool taken, const char* name) {
        if (taken) {
            set.emplace_back(name);
        }
    };
    plain(take<decltype(p->Online())>(props, kPropertyOnline, s.online), kPropertyOnline);
    plain(take<decltype(p->Offline())>(props, kPropertyOffline, s.offline), kPropertyOffline);
    plain(take<decltype(p->Possible())>(props, kPropertyPossible, s.possible), kPropertyPossible);
    plain(take<decltype(p->Present())>(props, kPropertyPresent, s.present), kPropertyPresent);
    plain(take<decltype(p->Protected())>(props, kPropertyProtected, s.protected_cpus),
          kPropertyProtected);
    plain(take<decltype(p->SmtControl())>(props, kPropertySmtControl, s.smt_control),
          kPropertySmtControl);
    plain(take<decltype(p->Capabilities())>(props, kPropertyCapabilities, s.capabilities),
          kPropertyCapabilities);
    plain(take<decltype(p->Busy())>(props, kPropertyBusy, s.busy), kPropertyBusy);
    plain(take<decltype(p->ActiveProfile())>(props, kPropertyActiveProfile, s.active_profile),
          kPropertyActiveProfile);
    plain(take<decltype(p->ProfileCpus())>(props, kPropertyProfileCpus, s.profile_cpus),
          kPropertyProfileCpus);

    if (decltype(p->LastRecovery()) recovery;
        take<decltype(p->LastRecovery())>(props, kPropertyLastRecovery, recovery)) {
        s.recovery_outcome = field<std::string>(recovery, kRecoveryOutcome);
        s.recovery_summary = field<std::string>(recovery, kRecoverySummary);
        s.recovery_time_us = field<uint64_t>(recovery, kRecoveryTime);
        set.emplace_back(kPropertyLastRecovery);
    }
    if (decltype(p->Holds()) holds; take<decltype(p->Holds())>(props, kPropertyHolds, holds)) {
        s.holds = holds_of(holds);
        set.emplace_back(kPropertyHolds);
    }
    if (decltype(p->CurrentBatch()) batch;
        take<decltype(p->CurrentBatch())>(props, kPropertyCurrentBatch, batch)) {
        s.batch = BatchInFlight{
            field<uint64_t>(batch, kBatchId),      field<std::string>(batch, kBatchAction),
            field<std::string>(batch, kBatchCpus), field<uint32_t>(batch, kBatchRequests),
            field<uint32_t>(batch, kBatchDone),    field<uint32_t>(batch, kBatchTotal),
            field<uint64_t>(batch, kBatchSince)};
        set.emplace_back(kPropertyCurrentBatch);
    }
    if (decltype(p->PowerProfiles()) power;
        take<decltype(p->PowerProfiles())>(props, kPropertyPowerProfiles, power)) {
        s.power_profiles = PowerProfilesInfo{field<bool>(power, kPowerProfilesFollowed),
                                             field<bool>(power, kPowerProfilesAvailable),
                                             field<std::string>(power, kPowerProfilesProfile)};
        set.emplace_back(kPropertyPowerProfiles);
    }
    return set;
}

}  // namespace cpuctl
