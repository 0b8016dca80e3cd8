// The D-Bus side of cpuctl: calls org.cpuhpd1.Manager through the proxy generated from
// dbus/org.cpuhpd1.Manager.xml and turns the replies into the plain structs of model.h.
// Every failure (connection, bus, daemon) is thrown as DaemonError.
#pragma once

#include <sdbus-c++/TypeTraits.h>  // sdbus::Slot

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model.h"

namespace sdbus {
class IConnection;
}  // namespace sdbus

namespace cpuctl {

class DaemonError : public std::runtime_error {
public:
    // `exit_code`: the status cpuctl exits with, when the error name alone does not say it
    // (exit_code_for_error()).
    explicit DaemonError(ErrorInfo info, std::optional<int> exit_code = std::nullopt)
        : std::runtime_error(info.name + ": " + info.message),
          info_(std::move(info)),
          exit_code_(exit_code) {}
    const ErrorInfo& info() const { return info_; }
    const std::optional<int>& exit_code() const { return exit_code_; }

private:
    ErrorInfo info_;
    std::optional<int> exit_code_;
};

// The methods that change CPU state.
enum class BatchMethod {
    Offline,  // argument: the mask
    Online,   // argument: the mask
    SetSmt,   // argument: on or off
};

// The help of --refuse-pinned (offline, plan, smt, profile apply).
inline constexpr const char* kRefusePinnedHelp =
    "refuse (nothing changed) when a task would lose every CPU it may run on";
// The help of --force (the same commands).
inline constexpr const char* kForceHelp =
    "let a cgroup cpuset partition lose every CPU (the kernel invalidates it) instead of "
    "refusing";

// Options of Offline, Online, SetSmt and ApplyProfile/RevertProfile; unset ones are left out
// so the daemon's defaults apply.
struct BatchOptions {
    bool best_effort = false;
    std::optional<std::string> strategy;
    bool dry_run = false;
    // "refuse_pinned": refuse (Error.Pinned, nothing changed) when a task would lose every
    // CPU of its affinity.
    bool refuse_pinned = false;
    bool force = false;  // "force": a cpuset partition may lose every CPU
};

// HoldCpus's options and names.
struct HoldRequest {
    BatchMethod method = BatchMethod::Offline;  // Offline or Online: the state to hold
    std::string mask;
    std::string who;
    std::string why;
    std::optional<std::string> strategy;
    bool restore = true;
    bool refuse_pinned = false;  // as in BatchOptions
    bool force = false;          // as in BatchOptions
};

// A hold cpuctl got: it lasts while `fd` is open (closed with this object) or until released.
class HoldGrant {
public:
    HoldGrant(int fd, std::uint64_t id, BatchReply change);
    ~HoldGrant();
    HoldGrant(HoldGrant&& other) noexcept;
    HoldGrant& operator=(HoldGrant&&) = delete;
    HoldGrant(const HoldGrant&) = delete;
    HoldGrant& operator=(const HoldGrant&) = delete;

    std::uint64_t id() const { return id_; }
    const BatchReply& change() const { return change_; }
    // The hold's new fd (AttachHold) replaces the old one, which is closed.
    void replace_fd(int fd);

private:
    int fd_;
    std::uint64_t id_;
    BatchReply change_;
};

// What to poll for the bus while cpuctl waits for something else (run_command.h).
struct PollSpec {
    int fd = -1;
    short events = 0;
    int timeout_ms = -1;  // -1: none
};

// Called with (done, total) on every BatchProgress signal while a batch call waits.
using ProgressFn = std::function<void(std::uint32_t done, std::uint32_t total)>;

class ManagerProxy;  // the generated proxy's implementation, in daemon_client.cpp
struct CallReply;    // a reply that ManagerProxy keeps, in daemon_client.cpp

class DaemonClient {
public:
    // Connects to `bus_address` when given, else to the system bus (sd-bus honours
    // DBUS_SYSTEM_BUS_ADDRESS). `timeout` bounds every method call.
    DaemonClient(std::optional<std::string> bus_address, std::chrono::microseconds timeout);
    ~DaemonClient();
    DaemonClient(const DaemonClient&) = delete;
    DaemonClient& operator=(const DaemonClient&) = delete;

    // Which bus this client talks to, for messages: "the system bus (unix:path=...)".
    static std::string describe_bus(const std::optional<std::string>& bus_address);
    // The bus connection (`cpuctl watch` runs its own loop on it).
    sdbus::IConnection& connection() { return *connection_; }

    // With a progress callback the BatchProgress signals are dispatched while waiting.
    BatchReply batch(BatchMethod method, const std::string& argument, const BatchOptions& options,
                     const ProgressFn& progress);
    // Cancel(batch_id) (0: the batch running now); with `wait`, also waits (up to the
    // timeout) for that batch's BatchFinished.
    CancelReply cancel(std::uint64_t batch_id, bool wait);
    // HoldCpus: takes the CPUs and holds them; its fd is close-on-exec, so a command cpuctl
    // runs does not keep the hold alive.
    HoldGrant hold(const HoldRequest& request, const ProgressFn& progress);
    // ReleaseHold: ends the hold and waits for its restore; the CPUs the restore wrote.
    std::vector<CpuResult> release_hold(std::uint64_t id);
    // AttachHold: become the holder of hold `id` again (after cpuhpd restarted); its new
    // fd, close-on-exec.
    int attach_hold(std::uint64_t id);
    // Calls `changed` (from dispatch()) whenever org.cpuhpd1 gets an owner (true) or loses
    // it (false), as the bus driver's NameOwnerChanged says.
    void follow_daemon_name(std::function<void(bool present)> changed);
    // For a loop of the caller's: what to poll, and dispatching what arrived.
    PollSpec poll_spec();
    void dispatch();
    std::vector<HoldInfo> holds();
    // ApplyProfile (`name`) or, with an empty name, RevertProfile.
    ProfileReply profile(const std::string& name, const BatchOptions& options,
                         const ProgressFn& progress);
    // The config's profiles, and the one in force ("" for none).
    std::vector<ProfileInfo> profiles();
    std::string active_profile();
    Status status();
    std::vector<TopologyCpu> topology();

private:
    // Makes one asynchronous call (`call`, on the proxy) and runs the connection until its
    // reply arrives, dispatching signals meanwhile (BatchProgress to `progress` when given);
    // an error reply is thrown as DaemonError. The reply stays valid until the next call.
    const CallReply& call_and_wait(const std::function<void(ManagerProxy&)>& call,
                                   const ProgressFn& progress = {});
    // Runs the connection (dispatching replies and signals) until `done` or the timeout.
    void run_until(const std::function<bool()>& done);

    std::unique_ptr<sdbus::IConnection> connection_;
    std::unique_ptr<ManagerProxy> proxy_;
    std::chrono::microseconds timeout_;
    sdbus::Slot daemon_name_watch_;
};

}  // namespace cpuctl
