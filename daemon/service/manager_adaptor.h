// The org.cpuhpd1.Manager object: converts D-Bus arguments to engine requests and engine
// results to D-Bus replies, nothing more. Every handler runs on the main thread and
// translates every exception into an sdbus::Error (sdbus-c++ 1.2 aborts otherwise).
#pragma once

#include <sdbus-c++/sdbus-c++.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "admission.h"
#include "caller_authorization.h"
#include "cpuhpd-adaptor.h"
#include "dbus_conversions.h"
#include "engine.h"
#include "holds.h"
#include "machine.h"
#include "options.h"
#include "profiles.h"
#include "recovery.h"
#include "request.h"
#include "settings.h"

namespace cpuhpd {

// A hold granted: its id, the holder's end of its fd, and the result of its change.
struct HeldCpus {
    std::uint64_t id = 0;
    sdbus::UnixFd fd;
    RequestResult result;
};
using HoldAnswer = std::variant<HeldCpus, std::exception_ptr>;

// What the service knows of power-profiles-daemon (config power_profiles).
struct PowerProfilesSeen {
    bool followed = false;   // the config maps its profiles
    bool available = false;  // it owns its name on the bus now
    std::string profile;     // its ActiveProfile as last seen; "" when unknown or absent
};

// What the adaptor needs from the daemon. Implemented by Daemon; all calls on the main
// thread.
class ManagerBackend {
public:
    virtual ~ManagerBackend() = default;
    // The machine state the service works from (re-read first when there is no uevent
    // source to keep it current).
    virtual const MachineState& state() = 0;
    // The last state read, as is (for change announcements).
    virtual const MachineState& cached_state() const = 0;
    virtual const EngineSettings& settings() const = 0;
    virtual bool busy() const = 0;
    // What start-up recovery found and did (fixed once the service serves).
    virtual const RecoveryReport& last_recovery() const = 0;
    // Resolves and queues the change off the main thread; `done` is called later on the
    // main thread, exactly once. Throws Refusal(Busy) at once when the service is stopping or
    // the caller has too many unanswered changes.
    virtual void submit(ChangeAsk ask, std::function<void(ChangeAnswer)> done) = 0;
    // Cancels the running batch `batch_id` (0: whichever runs) for `caller`; returns its id.
    // Throws Refusal(NoSuchBatch) when none such runs, Refusal(Busy) when stopping.
    virtual std::uint64_t cancel(std::uint64_t batch_id, const std::string& caller) = 0;
    // Takes the hold and its change off the main thread; `done` is called later on the main
    // thread, exactly once. Throws Refusal(Busy) at once as submit() does.
    virtual void hold(HoldAsk ask, std::function<void(HoldAnswer)> done) = 0;
    // Ends hold `id` for `caller` and restores its CPUs if it asked; `done` is called on the
    // main thread when the restore is done. Throws Refusal(NoSuchHold) at once when there is
    // no such hold, Refusal(Busy) when stopping.
    virtual void release_hold(std::uint64_t id, const std::string& caller,
                              std::function<void(ReleaseAnswer)> done) = 0;
    virtual std::vector<Hold> holds() const = 0;
    // Makes `caller` the holder of hold `id` and returns the holder's end of a new fd for
    // it. Throws Refusal(NoSuchHold), Refusal(Busy), or what linking the fd throws.
    virtual sdbus::UnixFd attach_hold(std::uint64_t id, const std::string& caller) = 0;
    // The config's profiles, and the one in force (none: nothing applied).
    virtual const std::map<std::string, Profile>& profiles() const = 0;
    virtual std::optional<ActiveProfile> active_profile() const = 0;
    // Applies (or reverts) a profile off the main thread; `done` is called later on the main
    // thread, exactly once. Throws Refusal at once: NoSuchProfile (unknown name, or nothing
    // to revert), Busy (stopping, or another profile change is in progress).
    virtual void apply_profile(ProfileAsk ask, std::function<void(ProfileAnswer)> done) = 0;
    // The batch running now (none between batches).
    virtual std::optional<BatchInFlight> batch_in_flight() const = 0;
    virtual PowerProfilesSeen power_profiles() const = 0;
};

class ManagerAdaptor final
    : public sdbus::AdaptorInterfaces<org::cpuhpd1::Manager_adaptor, sdbus::Properties_adaptor> {
public:
    using ResultEntry = DbusCpuResult;
    using Summary = DbusSummary;
    using ChangeResult = sdbus::Result<std::vector<ResultEntry>, Summary>;
    using HoldEntry = DbusHold;
    using TopologyEntry = DbusTopologyEntry;

    ManagerAdaptor(sdbus::IConnection& connection, ManagerBackend& backend);
    ~ManagerAdaptor();

    // Emits PropertiesChanged for the properties whose value differs from the last one
    // announced (or read by a client).
    void announce_changes();

private:
    void Offline(ChangeResult&& result, std::string mask,
                 std::map<std::string, sdbus::Variant> options) override;
    void Online(ChangeResult&& result, std::string mask,
                std::map<std::string, sdbus::Variant> options) override;
    void SetSmt(ChangeResult&& result, std::string state,
                std::map<std::string, sdbus::Variant> options) override;
    void Cancel(sdbus::Result<uint64_t>&& result, uint64_t batch_id) override;
    void HoldCpus(
        sdbus::Result<sdbus::UnixFd, uint64_t, std::vector<ResultEntry>, Summary>&& result,
        std::string mask, std::string state, std::string who, std::string why,
        std::map<std::string, sdbus::Variant> options) override;
    void ReleaseHold(sdbus::Result<std::vector<ResultEntry>>&& result, uint64_t hold_id) override;
    void AttachHold(sdbus::Result<sdbus::UnixFd>&& result, uint64_t hold_id) override;
    void ApplyProfile(ChangeResult&& result, std::string name,
                      std::map<std::string, sdbus::Variant> options) override;
    void RevertProfile(ChangeResult&& result,
                       std::map<std::string, sdbus::Variant> options) override;
    std::vector<TopologyEntry> GetTopology() override;

    std::string Online() override;
    std::string Offline() override;
    std::string Possible() override;
    std::string Present() override;
    std::string Protected() override;
    std::string SmtControl() override;
    std::vector<std::string> Capabilities() override;
    bool Busy() override;
    std::map<std::string, sdbus::Variant> LastRecovery() override;
    std::vector<HoldEntry> Holds() override;
    std::string ActiveProfile() override;
    std::string ProfileCpus() override;
    std::vector<sdbus::Struct<std::string, std::string, bool, uint32_t>> Profiles() override;
    std::map<std::string, sdbus::Variant> CurrentBatch() override;
    std::map<std::string, sdbus::Variant> PowerProfiles() override;

public:
    // HoldsChanged, with the holds in force now.
    void announce_holds();
    // HoldViolated.
    void announce_violation(const HoldViolation& violation);
    // BatchFinished and BatchProgress (manager_properties.cpp).
    void announce_batch(const BatchReport& report);
    void announce_progress(std::uint64_t batch_id, std::size_t done, std::size_t total);

private:
    // Decodes the options of the call being processed (throws OptionError).
    RequestOptions read_options(const std::map<std::string, sdbus::Variant>& options) const;
    // CallerAuthorization::authorize() for the call being processed.
    void authorize(const char* action, const char* what,
                   const std::map<std::string, std::string>& details, std::function<void()> proceed,
                   std::function<void(const sdbus::Error&)> refuse);
    std::string caller() const;
    // ApplyProfile (a name) and RevertProfile (none): authorizes, hands the profile change to
    // the backend, replies when it answers.
    void profile_change(ChangeResult&& result, ProfileAsk ask, const char* what);
    // Checks the options and the caller, then hands the change to the backend; the reply is
    // sent when the backend answers.
    void change(ChangeResult&& result, ChangeAsk ask,
                const std::map<std::string, sdbus::Variant>& options);

    // Every changing property's value as text, by property name.
    std::map<std::string, std::string> property_texts();

    ManagerBackend& backend_;
    std::map<std::string, std::string> announced_;  // property -> comparable text
    CallerAuthorization authorization_;  // last: its pending checks (which use `this`) end first
};

}  // namespace cpuhpd
