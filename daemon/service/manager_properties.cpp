// The properties of org.cpuhpd1.Manager and the signals that announce changes: read from
// the backend, converted by dbus_conversions.h.
#include <string>
#include <utility>
#include <vector>

#include "dbus_conversions.h"
#include "dbus_error.h"
#include "log.h"
#include "manager_adaptor.h"
#include "names.h"

namespace cpuhpd {

std::string ManagerAdaptor::Online() {
    return guarded("Get Online", [&] { return backend_.state().online.to_string(); });
}

std::string ManagerAdaptor::Offline() {
    return guarded("Get Offline", [&] { return backend_.state().offline().to_string(); });
}

std::string ManagerAdaptor::Possible() {
    return guarded("Get Possible", [&] { return backend_.state().possible.to_string(); });
}

std::string ManagerAdaptor::Present() {
    return guarded("Get Present", [&] { return backend_.state().present.to_string(); });
}

std::string ManagerAdaptor::Protected() {
    return guarded("Get Protected", [&] { return backend_.settings().protected_cpus.to_string(); });
}

std::string ManagerAdaptor::SmtControl() {
    return guarded("Get SmtControl", [&] { return to_string(backend_.state().smt_control); });
}

std::vector<std::string> ManagerAdaptor::Capabilities() {
    return guarded("Get Capabilities", [&] { return capability_names(backend_.state()); });
}

bool ManagerAdaptor::Busy() {
    return guarded("Get Busy", [&] { return backend_.busy(); });
}

std::map<std::string, sdbus::Variant> ManagerAdaptor::LastRecovery() {
    return guarded("Get LastRecovery", [&] { return recovery_of(backend_.last_recovery()); });
}

std::vector<ManagerAdaptor::HoldEntry> ManagerAdaptor::Holds() {
    return guarded("Get Holds", [&] { return to_dbus(backend_.holds()); });
}

std::string ManagerAdaptor::ActiveProfile() {
    return guarded("Get ActiveProfile", [&] {
        const auto active = backend_.active_profile();
        return active ? active->name : std::string();
    });
}

std::string ManagerAdaptor::ProfileCpus() {
    return guarded("Get ProfileCpus", [&] {
        const auto active = backend_.active_profile();
        return active ? active->taken.to_string() : std::string();
    });
}

std::vector<sdbus::Struct<std::string, std::string, bool, uint32_t>> ManagerAdaptor::Profiles() {
    return guarded("Get Profiles", [&] { return profiles_of(backend_.profiles()); });
}

std::map<std::string, sdbus::Variant> ManagerAdaptor::CurrentBatch() {
    return guarded("Get CurrentBatch", [&] { return batch_of(backend_.batch_in_flight()); });
}

std::map<std::string, sdbus::Variant> ManagerAdaptor::PowerProfiles() {
    return guarded("Get PowerProfiles", [&] {
        const PowerProfilesSeen seen = backend_.power_profiles();
        return std::map<std::string, sdbus::Variant>{
            {dbus::kPowerProfilesFollowed, sdbus::Variant(seen.followed)},
            {dbus::kPowerProfilesAvailable, sdbus::Variant(seen.available)},
            {dbus::kPowerProfilesProfile, sdbus::Variant(seen.profile)},
        };
    });
}

void ManagerAdaptor::announce_holds() {
    try {
        emitHoldsChanged(to_dbus(backend_.holds()));
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot emit HoldsChanged: ") + error.what());
    }
}

std::map<std::string, std::string> ManagerAdaptor::property_texts() {
    const MachineState& state = backend_.cached_state();
    std::string capabilities;
    for (const auto& name : capability_names(state)) {
        capabilities += name + " ";
    }
    const auto active = backend_.active_profile();
    const auto batch = backend_.batch_in_flight();
    const PowerProfilesSeen power = backend_.power_profiles();
    return {
        {dbus::kPropertyOnline, state.online.to_string()},
        {dbus::kPropertyOffline, state.offline().to_string()},
        {dbus::kPropertyPossible, state.possible.to_string()},
        {dbus::kPropertyPresent, state.present.to_string()},
        {dbus::kPropertySmtControl, to_string(state.smt_control)},
        {dbus::kPropertyCapabilities, capabilities},
        {dbus::kPropertyBusy, backend_.busy() ? "true" : "false"},
        {dbus::kPropertyHolds,
         [this] {
             std::string text;
             for (const auto& hold : backend_.holds()) {
                 text += std::to_string(hold.id) + ":" + hold.cpus.to_string() + " ";
             }
             return text;
         }()},
        {dbus::kPropertyActiveProfile, active ? active->name : std::string()},
        {dbus::kPropertyProfileCpus, active ? active->taken.to_string() : std::string()},
        // Its progress too: announced with each BatchProgress (throttled as it is).
        {dbus::kPropertyCurrentBatch, batch ? std::to_string(batch->batch_id) + " " +
                                                  std::to_string(batch->done) + "/" +
                                                  std::to_string(batch->total)
                                            : std::string()},
        {dbus::kPropertyPowerProfiles,
         std::string(power.followed ? "1" : "0") + (power.available ? "1 " : "0 ") + power.profile},
    };
}

void ManagerAdaptor::announce_changes() {
    auto now = property_texts();
    std::vector<std::string> changed;
    for (const auto& [name, value] : now) {
        if (announced_[name] != value) {
            changed.push_back(name);
        }
    }
    announced_ = std::move(now);
    if (changed.empty()) {
        return;
    }
    try {
        emitPropertiesChangedSignal(org::cpuhpd1::Manager_adaptor::INTERFACE_NAME, changed);
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot emit PropertiesChanged: ") + error.what());
    }
}

void ManagerAdaptor::announce_batch(const BatchReport& report) {
    try {
        emitBatchFinished(report.batch_id, to_string(report.action), to_string(report.strategy),
                          report.changed.to_string(), report.failed.to_string(),
                          static_cast<uint32_t>(report.requests),
                          static_cast<uint64_t>(report.duration.count()),
                          report.cancelled.to_string());
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot emit BatchFinished: ") + error.what());
    }
}

void ManagerAdaptor::announce_progress(std::uint64_t batch_id, std::size_t done,
                                       std::size_t total) {
    // CurrentBatch's done and total; first, so that a batch's start (CurrentBatch naming it)
    // is announced before its first BatchProgress.
    announce_changes();
    try {
        emitBatchProgress(batch_id, static_cast<uint32_t>(done), static_cast<uint32_t>(total));
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot emit BatchProgress: ") + error.what());
    }
}

}  // namespace cpuhpd
