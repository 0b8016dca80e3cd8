#include "power_profile_follower.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>
#include <variant>
#include <vector>

#include "bus_signals.h"
#include "log.h"

namespace cpuhpd {

namespace {

constexpr const char* kPropertiesInterface = "org.freedesktop.DBus.Properties";
constexpr const char* kActiveProfile = "ActiveProfile";

std::string error_text(const sdbus::Error& error) {
    return error.getName() + ": " + error.getMessage();
}

}  // namespace

PowerProfileFollower::PowerProfileFollower(sdbus::IConnection& connection, ManagerBackend& backend,
                                           std::map<std::string, std::string> mapping,
                                           std::function<void()> seen_changed)
    : backend_(backend),
      mapping_(std::move(mapping)),
      seen_changed_(std::move(seen_changed)),
      bus_driver_(sdbus::createProxy(connection, kBusDriver, kBusDriverPath)),
      ppd_(sdbus::createProxy(connection, kPowerProfilesService, kPowerProfilesPath)) {
    // Subscribed before the first read, so no change between the two is missed. Who owns
    // the name is always the bus's answer to GetNameOwner: the signal only says when to ask.
    owner_changes_ = connection.addMatch(
        std::string("type='signal',sender='") + kBusDriver + "',path='" + kBusDriverPath +
            "',interface='" + kBusDriver + "',member='NameOwnerChanged',arg0='" +
            kPowerProfilesService + "'",
        guarded_handler(
            SignalKind::PowerProfilesNameOwnerChanged, "NameOwnerChanged for power-profiles-daemon",
            [] { return kBusDriver; },
            [this](sdbus::Message& message) {
                const auto change = decode_name_owner_changed(message);
                if (!change) {
                    throw std::runtime_error("its arguments are not three strings");
                }
                if (change->name == kPowerProfilesService) {
                    look_up_owner();
                }
            }));
    // No sender in the rule (the bus resolves a well-known sender, sd-bus's own filter would
    // not): the handler takes the signal only from the connection that the bus said owns the
    // name, so nobody else on the bus can make the daemon take CPUs away.
    property_changes_ = connection.addMatch(
        std::string("type='signal',path='") + kPowerProfilesPath + "',interface='" +
            kPropertiesInterface + "',member='PropertiesChanged',arg0='" + kPowerProfilesInterface +
            "'",
        guarded_handler(
            SignalKind::PowerProfilesChanged, "PropertiesChanged of power-profiles-daemon",
            [this] { return owner_; },
            [this](sdbus::Message& message) {
                const auto change =
                    decode_string_property_change(message, kPowerProfilesInterface, kActiveProfile);
                if (!change) {
                    throw std::runtime_error("not a PropertiesChanged with a string " +
                                             std::string(kActiveProfile));
                }
                if (change->value) {
                    wanted(*change->value);
                } else if (change->invalidated) {
                    read_active_profile();
                }
            }));
    std::string names;
    for (const auto& [ppd, profile] : mapping_) {
        names += (names.empty() ? "" : ", ") + ppd + " -> " + (profile.empty() ? "none" : profile);
    }
    log::info(std::string("following ") + kPowerProfilesService + " (" + names + ")");
    look_up_owner();
}

void PowerProfileFollower::look_up_owner() {
    const std::uint64_t lookup = ++lookups_;
    try {
        bus_driver_->callMethodAsync("GetNameOwner")
            .onInterface(kBusDriver)
            .withArguments(std::string(kPowerProfilesService))
            .uponReplyInvoke([this, lookup](const sdbus::Error* error, std::string owner) {
                if (lookup != lookups_) {
                    return;  // a later look-up is on its way and says more recently who owns it
                }
                if (error == nullptr) {
                    owner_is(owner);
                } else if (error->getName() == kNameHasNoOwner) {
                    if (owner_.empty()) {
                        log::info(std::string(kPowerProfilesService) +
                                  " is not on the bus; following it once it appears (" +
                                  error_text(*error) + ")");
                    }
                    owner_is("");
                } else {
                    log::warning(std::string("cannot ask the bus who owns ") +
                                 kPowerProfilesService + ": " + error_text(*error));
                }
            });
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot ask the bus who owns ") + kPowerProfilesService + ": " +
                     error_text(error));
    }
}

PowerProfileFollower::~PowerProfileFollower() = default;

PowerProfilesSeen PowerProfileFollower::seen() const {
    PowerProfilesSeen seen;
    seen.followed = true;
    seen.available = !owner_.empty();
    if (seen.available && wanted_) {
        seen.profile = *wanted_;
    }
    return seen;
}

void PowerProfileFollower::owner_is(const std::string& owner) {
    if (owner == owner_) {
        return;
    }
    ++generation_;
    owner_ = owner;
    if (seen_changed_) {
        seen_changed_();
    }
    if (owner_.empty()) {
        log::info(std::string(kPowerProfilesService) +
                  " left the bus; the profile in force stays until it comes back");
        return;
    }
    log::debug(std::string(kPowerProfilesService) + " is owned by " + owner_ +
               "; reading its ActiveProfile");
    read_active_profile();
}

void PowerProfileFollower::read_active_profile() {
    try {
        ppd_->callMethodAsync("Get")
            .onInterface(kPropertiesInterface)
            .withArguments(std::string(kPowerProfilesInterface), std::string(kActiveProfile))
            .uponReplyInvoke(
                [this, generation = generation_](const sdbus::Error* error, sdbus::Variant value) {
                    if (generation != generation_) {
                        return;  // another owner since: its own read is on the way
                    }
                    try {
                        if (error != nullptr) {
                            throw *error;
                        }
                        wanted(value.get<std::string>());
                    } catch (const sdbus::Error& failure) {
                        log::warning(std::string("cannot read ") + kPowerProfilesService +
                                     " ActiveProfile: " + error_text(failure));
                    }
                });
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot ask ") + kPowerProfilesService +
                     " for ActiveProfile: " + error_text(error));
    }
}

void PowerProfileFollower::wanted(const std::string& ppd_profile) {
    if (wanted_ == ppd_profile) {
        return;  // read again (it came back to the bus) with the same value: nothing new
    }
    wanted_ = ppd_profile;
    if (seen_changed_) {
        seen_changed_();
    }
    const auto it = mapping_.find(ppd_profile);
    if (it == mapping_.end()) {
        log::debug("power profile " + ppd_profile + " is not in power_profiles; nothing changes",
                   {{"POWER_PROFILE", ppd_profile}});
        return;
    }
    log::info("power profile is " + ppd_profile + ": " +
                  (it->second.empty() ? std::string("no profile") : "profile " + it->second) +
                  " wanted",
              {{"POWER_PROFILE", ppd_profile},
               {"PROFILE", it->second.empty() ? std::string("none") : it->second}});
    follow();
}

void PowerProfileFollower::profile_change_ended() {
    if (waiting_ && !in_flight_) {
        waiting_ = false;
        follow();
    }
}

void PowerProfileFollower::follow() {
    if (!wanted_) {
        return;
    }
    if (in_flight_) {
        waiting_ = true;  // after ours: finished() follows again
        return;
    }
    if (const auto next = next_switch(*wanted_)) {
        start(*next);
    }
}

std::optional<PowerProfileFollower::Switch> PowerProfileFollower::next_switch(
    const std::string& ppd) const {
    const auto it = mapping_.find(ppd);
    if (it == mapping_.end()) {
        return std::nullopt;
    }
    const std::string& target = it->second;
    const auto active = backend_.active_profile();
    if (target.empty() ? !active : (active && active->name == target)) {
        log::debug("power profile " + ppd + ": " +
                       (active ? "profile " + active->name + " is" : std::string("none is")) +
                       " in force already",
                   {{"POWER_PROFILE", ppd}});
        return std::nullopt;
    }
    return Switch{ppd, target.empty() ? active->name : target, target.empty()};
}

void PowerProfileFollower::start(const Switch& change) {
    const std::string& ppd = change.ppd;
    const std::string& name = change.name;
    const char* verb = change.reverting ? "reverting" : "applying";
    ProfileAsk ask;
    ask.name = change.reverting ? std::string() : name;
    ask.caller = kPowerProfilesCaller;
    in_flight_ = true;
    try {
        backend_.apply_profile(
            ask, [this, life = std::weak_ptr<int>(life_), change](ProfileAnswer answer) {
                if (life.expired()) {
                    return;  // the daemon is stopping and dropped the follower
                }
                finished(change, answer);
            });
        log::info("power profile " + ppd + ": " + verb + " profile " + name,
                  {{"POWER_PROFILE", ppd}, {"PROFILE", name}, {"CALLER", kPowerProfilesCaller}});
    } catch (const Refusal& refusal) {
        in_flight_ = false;
        if (refusal.kind() == RefusalKind::Busy) {
            // Another change is running: follow when it ends (profile_change_ended()).
            waiting_ = true;
            log::info("power profile " + ppd + ": " + verb + " profile " + name +
                          " when the change in progress ends (" + refusal.what() + ")",
                      {{"POWER_PROFILE", ppd}, {"PROFILE", name}});
            return;
        }
        log::warning("power profile " + ppd + ": " + verb + " profile " + name +
                         " refused: " + refusal.what(),
                     {{"POWER_PROFILE", ppd}, {"PROFILE", name}});
    } catch (const std::exception& error) {
        in_flight_ = false;
        log::warning(
            "power profile " + ppd + ": " + verb + " profile " + name + " failed: " + error.what(),
            {{"POWER_PROFILE", ppd}, {"PROFILE", name}});
    }
}

void PowerProfileFollower::finished(const Switch& change, const ProfileAnswer& answer) {
    const std::string& ppd = change.ppd;
    const std::string& name = change.name;
    in_flight_ = false;
    if (const auto* done = std::get_if<ProfileDone>(&answer)) {
        log::write(
            done->outcome == Outcome::Ok ? log::Level::Info : log::Level::Warning,
            "power profile " + ppd + ": profile " + name +
                (change.reverting ? " reverted: " : " applied: ") + to_string(done->outcome) +
                "; in force: " + (done->active ? done->active->name : std::string("none")),
            {{"POWER_PROFILE", ppd}, {"PROFILE", name}, {"OUTCOME", to_string(done->outcome)}});
    } else {
        try {
            std::rethrow_exception(std::get<std::exception_ptr>(answer));
        } catch (const std::exception& error) {
            log::warning("power profile " + ppd + ": " +
                             (change.reverting ? "reverting" : "applying") + " profile " + name +
                             " refused: " + error.what(),
                         {{"POWER_PROFILE", ppd}, {"PROFILE", name}});
        }
    }
    // A switch that came meanwhile (the latest one) is followed now.
    if (waiting_) {
        waiting_ = false;
        follow();
    }
}

}  // namespace cpuhpd
