// A raw sd-bus client of org.cpuhpd1 on the private bus: independent of the daemon's
// sdbus-c++ glue, so that it checks the wire format the daemon really sends.
#pragma once

#include <systemd/sd-bus.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "child.h"

namespace cpuhpd::itest {

using namespace std::chrono_literals;

// One (ussis) entry of a reply.
struct CpuResult {
    unsigned cpu = 0;
    std::string result;
    std::string error;
    int errno_value = 0;
    std::string message;
};

// One (uss) entry: the summary's pinned_tasks (tid, comm, cpus) and pinned_irqs.
struct NumberedEntry {
    std::uint32_t number = 0;
    std::string name;
    std::string cpus;
    bool operator==(const NumberedEntry&) const = default;
};

using Variant =
    std::variant<std::monostate, std::string, bool, std::uint64_t, std::uint32_t, std::int32_t,
                 std::vector<std::uint32_t>, std::vector<std::string>, std::vector<NumberedEntry>>;

struct CallResult {
    bool ok = false;
    std::string error_name;  // when !ok
    std::string error_message;
    std::vector<CpuResult> results;
    std::map<std::string, Variant> summary;

    std::string str(const std::string& key) const;  // "" when absent or not a string
    std::uint64_t u64(const std::string& key) const;
    std::vector<std::uint32_t> order() const;
    // An a(uss) entry of the summary; nullopt when absent or of another type.
    std::optional<std::vector<NumberedEntry>> entries(const std::string& key) const;
    std::optional<CpuResult> result_for(unsigned cpu) const;
    std::set<unsigned> cpus() const;
    std::string describe() const;
};

// Signals seen by a RawClient.
struct BatchFinished {
    std::uint64_t batch_id = 0;
    std::string action, strategy, changed, failed;
    std::uint32_t requests = 0;
    std::uint64_t duration_us = 0;
    std::string cancelled;
};
struct HoldViolated {
    std::uint64_t hold_id = 0;
    std::string who, holder, cpus, online, action;
    std::uint64_t violations = 0;
};
struct BatchProgress {
    std::uint64_t batch_id = 0;
    std::uint32_t done = 0, total = 0;
};
struct PropertiesChanged {
    std::string interface;
    std::map<std::string, Variant> changed;
    std::vector<std::string> invalidated;
};

// Option values for method calls: string, bool or (to test type checks) a uint32.
using Option = std::variant<std::string, bool, std::uint32_t>;

// Waits (bounded by `timeout`) until `name` has an owner on the bus at `address`; throws
// std::runtime_error with the output of `owner` (the process that should own it) when it
// exits first or the time runs out.
void wait_for_owner(const std::string& address, const std::string& name, Child& owner,
                    std::chrono::seconds timeout);

// A raw sd-bus client connection to the private bus.
class RawClient {
public:
    explicit RawClient(const std::string& address);
    ~RawClient();
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    sd_bus* bus() { return bus_; }
    bool name_has_owner(const std::string& name);
    // Calls Offline/Online/SetSmt with (s, a{sv}) and parses a(ussis), a{sv}.
    CallResult call(const std::string& method, const std::string& arg,
                    const std::map<std::string, Option>& options = {},
                    std::chrono::seconds timeout = 30s);
    // The same with the options' entries in this order, duplicates included; without `arg`
    // the options are the only argument (RevertProfile).
    CallResult call_with_entries(const std::string& method, const std::optional<std::string>& arg,
                                 const std::vector<std::pair<std::string, Option>>& options,
                                 std::chrono::seconds timeout = 30s);
    // Cancel(batch_id): the id of the batch cancelled, or the D-Bus error (name, message).
    struct Cancelled {
        std::uint64_t batch_id = 0;
        std::string error_name, error_message;  // set when the call failed
    };
    Cancelled cancel(std::uint64_t batch_id);
    // HoldCpus: on success `fd` is the hold's fd (close-on-exec; the caller closes it to end
    // the hold) and `call` has the change's results and summary; else `call` has the error.
    struct Held {
        CallResult call;
        int fd = -1;
        std::uint64_t hold_id = 0;
    };
    Held hold_cpus(const std::string& mask, const std::string& state, const std::string& who,
                   const std::string& why, const std::map<std::string, Option>& options = {},
                   std::chrono::seconds timeout = 30s);
    // AttachHold: on success `fd` is the hold's new fd (close-on-exec), else `call` has the
    // error.
    Held attach_hold(std::uint64_t hold_id, std::chrono::seconds timeout = 30s);
    // ReleaseHold: the restore's results (no summary), or the error.
    CallResult release_hold(std::uint64_t hold_id, std::chrono::seconds timeout = 30s);
    struct HoldEntry {
        std::uint64_t id = 0;
        std::string cpus, state, who, why, holder;
        std::uint64_t since_us = 0;
        bool restore = false;
    };
    std::vector<HoldEntry> get_holds();
    std::string unique_name();
    // The unique name of the connection that owns `name`; "" when nobody does.
    std::string name_owner(const std::string& name);
    // Sends a signal from this connection, unicast to `destination` or, when it is empty, to
    // everybody whose match rules take it; `append` writes its body. Returns the error text,
    // "" when it was sent.
    std::string send_signal(const std::string& destination, const std::string& path,
                            const std::string& interface, const std::string& member,
                            const std::function<int(sd_bus_message*)>& append);
    // Property getters; on a D-Bus error they throw std::runtime_error with its name.
    std::string get_string(const std::string& property);
    std::vector<std::string> get_strv(const std::string& property);
    bool get_bool(const std::string& property);
    // An a{sv} property (LastRecovery), read with read_vardict().
    std::map<std::string, Variant> get_vardict(const std::string& property);
    // GetTopology; throws on error.
    struct TopologyEntry {
        unsigned cpu = 0;
        int package = -1, die = -1, core = -1, node = -1;
        std::string siblings;
        bool online = false, hotpluggable = false;
    };
    std::vector<TopologyEntry> get_topology();

    // Subscribes to BatchFinished, BatchProgress and PropertiesChanged of /org/cpuhpd1
    // (synchronously: the match is installed on the bus when this returns).
    void subscribe();
    // Processes incoming messages until `done()` is true or the deadline passes.
    bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout);
    const std::vector<BatchFinished>& batches() const { return batches_; }
    const std::vector<BatchProgress>& progress() const { return progress_; }
    // HoldViolated signals seen since subscribe().
    const std::vector<HoldViolated>& violations() const { return violations_; }
    const std::vector<PropertiesChanged>& property_changes() const { return property_changes_; }

private:
    static int on_batch_finished(sd_bus_message* m, void* userdata, sd_bus_error* err);
    static int on_properties_changed(sd_bus_message* m, void* userdata, sd_bus_error* err);
    static int on_batch_progress(sd_bus_message* m, void* userdata, sd_bus_error* err);
    static int on_hold_violated(sd_bus_message* m, void* userdata, sd_bus_error* err);
    sd_bus_slot* violated_slot_ = nullptr;
    std::vector<HoldViolated> violations_;
    sd_bus* bus_ = nullptr;
    sd_bus_slot* batch_slot_ = nullptr;
    sd_bus_slot* props_slot_ = nullptr;
    sd_bus_slot* progress_slot_ = nullptr;
    std::vector<BatchFinished> batches_;
    std::vector<PropertiesChanged> property_changes_;
    std::vector<BatchProgress> progress_;
};

// Reads an a{sv} dictionary at the current position of `m` (types s, b, t, u, i, au, as;
// anything else is skipped and recorded as monostate).
int read_vardict(sd_bus_message* m, std::map<std::string, Variant>& out);

}  // namespace cpuhpd::itest
