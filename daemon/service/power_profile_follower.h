// Follows power-profiles-daemon (config `power_profiles`): watches the ActiveProfile
// property of net.hadess.PowerProfiles on the daemon's own bus connection and applies the
// cpuhpd profile the config maps it to, or reverts the profile in force for `none`.
//
// Everything runs on the main thread, from the event loop that serves the connection: the
// first read (GetNameOwner, then Properties.Get) is asynchronous, later values come with
// PropertiesChanged, and power-profiles-daemon appearing or going away with
// NameOwnerChanged. Nothing is polled: while nothing changes, the follower does nothing.
//
// No polkit check: the switch was authorized by power-profiles-daemon (which asks polkit),
// and the mapping from its profiles to CPUs is the administrator's config.
#pragma once

#include <sdbus-c++/sdbus-c++.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "manager_adaptor.h"

namespace cpuhpd {

inline constexpr const char* kPowerProfilesService = "net.hadess.PowerProfiles";
inline constexpr const char* kPowerProfilesPath = "/net/hadess/PowerProfiles";
inline constexpr const char* kPowerProfilesInterface = "net.hadess.PowerProfiles";
// The caller named in the requests and the log.
inline constexpr const char* kPowerProfilesCaller = "power-profiles-daemon";

class PowerProfileFollower {
public:
    // `mapping`: config `power_profiles` (ppd profile -> profile name, "" to revert).
    // Subscribes at once (the match rules are installed before this returns) and starts the
    // first read; `backend` and `connection` must outlive the follower, whose destruction
    // drops its pending calls.
    // `seen_changed` is called (main thread) when what seen() says may have changed.
    PowerProfileFollower(sdbus::IConnection& connection, ManagerBackend& backend,
                         std::map<std::string, std::string> mapping,
                         std::function<void()> seen_changed = {});
    ~PowerProfileFollower();
    PowerProfileFollower(const PowerProfileFollower&) = delete;
    PowerProfileFollower& operator=(const PowerProfileFollower&) = delete;

    // Main thread: a profile change (anybody's) has ended. A switch refused Busy meanwhile
    // is applied now.
    void profile_change_ended();

    // Whether power-profiles-daemon is on the bus, and its ActiveProfile as last seen.
    PowerProfilesSeen seen() const;

private:
    // Asks the bus who owns net.hadess.PowerProfiles; its answer goes to owner_is().
    void look_up_owner();
    // power-profiles-daemon's connection is `owner` ("" when it left the bus).
    void owner_is(const std::string& owner);
    void read_active_profile();
    // power-profiles-daemon's ActiveProfile is `ppd_profile`: follow it.
    void wanted(const std::string& ppd_profile);
    // One switch to make: power-profiles-daemon's profile `ppd` asks for cpuhpd's profile
    // `name`, applied (or, when the mapping says "", the profile in force `name` reverted).
    struct Switch {
        std::string ppd;
        std::string name;
        bool reverting = false;
    };
    // Applies what `wanted_` maps to, unless a change is running (then: later).
    void follow();
    // The switch `ppd` asks for; none when it maps to nothing or is in force already.
    std::optional<Switch> next_switch(const std::string& ppd) const;
    // Hands the switch to the backend; a refusal Busy makes it wait for the change running.
    void start(const Switch& change);
    // The backend's answer to the switch: logged; a switch that came meanwhile follows.
    void finished(const Switch& change, const ProfileAnswer& answer);

    ManagerBackend& backend_;
    std::map<std::string, std::string> mapping_;
    std::function<void()> seen_changed_;
    std::unique_ptr<sdbus::IProxy> bus_driver_;  // org.freedesktop.DBus: GetNameOwner
    std::unique_ptr<sdbus::IProxy> ppd_;         // net.hadess.PowerProfiles: Properties.Get
    sdbus::Slot owner_changes_;
    sdbus::Slot property_changes_;
    std::string owner_;             // power-profiles-daemon's unique name; "" while absent
    std::uint64_t generation_ = 0;  // bumped at each owner change: older replies are stale
    std::uint64_t lookups_ = 0;     // GetNameOwner calls made: only the last one's answer counts
    std::optional<std::string> wanted_;  // the last ActiveProfile seen
    bool in_flight_ = false;             // our apply or revert is running
    bool waiting_ = false;               // refused Busy: follow() again when a change ends
    // The apply's done callback may come after the follower is gone (the daemon drains its
    // loop after dropping it): it checks this first.
    std::shared_ptr<int> life_ = std::make_shared<int>(0);
};

}  // namespace cpuhpd
