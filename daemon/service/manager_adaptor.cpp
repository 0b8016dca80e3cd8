#include "manager_adaptor.h"

#include <unistd.h>

#include <exception>
#include <memory>
#include <utility>

#include "cpulist.h"
#include "log.h"
#include "names.h"
#include "planner.h"
#include "selector.h"
#include "sysfs.h"

namespace cpuhpd {

namespace {

constexpr const char* kInvalidArgs = "org.freedesktop.DBus.Error.InvalidArgs";
constexpr const char* kAccessDenied = "org.freedesktop.DBus.Error.AccessDenied";
constexpr const char* kFailed = "org.freedesktop.DBus.Error.Failed";

// Runs a handler body and turns whatever it throws into an sdbus::Error: in sdbus-c++ 1.2
// anything else escaping a handler aborts the daemon.
template <typename Body>
auto guarded(const char* what, Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const sdbus::Error&) {
        throw;
    } catch (const Refusal& refusal) {
        throw sdbus::Error(error_name(refusal.kind()), refusal.what());
    } catch (const MaskError& error) {
        throw sdbus::Error(std::string(dbus::kErrorPrefix) + "InvalidMask",
                           "invalid mask '" + error.token() + "' at position " +
                               std::to_string(error.position()) + ": " + error.reason());
    } catch (const std::exception& error) {
        log::error(std::string(what) + " failed: " + error.what());
        throw sdbus::Error(kFailed, error.what());
    } catch (...) {
        log::error(std::string(what) + " failed with an unknown exception");
        throw sdbus::Error(kFailed, "internal error");
    }
}

std::vector<ManagerAdaptor::ResultEntry> to_dbus(const std::vector<CpuResult>& cpus) {
    std::vector<ManagerAdaptor::ResultEntry> entries;
    entries.reserve(cpus.size());
    for (const auto& cpu : cpus) {
        entries.emplace_back(static_cast<uint32_t>(cpu.cpu), to_string(cpu.outcome),
                             cpu.error != 0 ? errno_name(cpu.error) : std::string(),
                             static_cast<int32_t>(cpu.error), cpu.message);
    }
    return entries;
}

ManagerAdaptor::Summary summary_of(const RequestResult& result) {
    ManagerAdaptor::Summary summary;
    summary["action"] = sdbus::Variant(to_string(result.action));
    summary["mask"] = sdbus::Variant(result.mask);
    summary["mode"] = sdbus::Variant(to_string(result.mode));
    summary["strategy"] = sdbus::Variant(to_string(result.strategy));
    summary["dry_run"] = sdbus::Variant(result.dry_run);
    summary["batch_id"] = sdbus::Variant(static_cast<uint64_t>(result.batch_id));
    summary["duration_us"] = sdbus::Variant(static_cast<uint64_t>(result.duration.count()));
    std::vector<uint32_t> order(result.order.begin(), result.order.end());
    summary["order"] = sdbus::Variant(order);
    summary["outcome"] = sdbus::Variant(to_string(result.outcome));
    return summary;
}

std::vector<std::string> capability_names(const MachineState& state) {
    std::vector<std::string> names;
    for (const auto kind : state.capabilities()) {
        names.push_back(to_string(kind));
    }
    return names;
}

}  // namespace

std::string error_name(RefusalKind kind) {
    return dbus::kErrorPrefix + to_string(kind);
}

ManagerAdaptor::ManagerAdaptor(sdbus::IConnection& connection, ManagerBackend& backend)
    : AdaptorInterfaces(connection, dbus::kObjectPath), backend_(backend) {
    announced_ = property_texts();
    registerAdaptor();
}

ManagerAdaptor::~ManagerAdaptor() {
    unregisterAdaptor();
}

ManagerAdaptor::Options ManagerAdaptor::parse_options(
    const std::map<std::string, sdbus::Variant>& options) {
    Options parsed;
    for (const auto& [key, value] : options) {
        if (key == "mode") {
            if (!value.containsValueOfType<std::string>()) {
                throw sdbus::Error(kInvalidArgs, "option 'mode' must be a string (s)");
            }
            const auto text = value.get<std::string>();
            try {
                parsed.mode = parse_mode(text);
            } catch (const std::invalid_argument&) {
                throw sdbus::Error(kInvalidArgs,
                                   "invalid mode '" + text + "': expected atomic or best-effort");
            }
        } else if (key == "strategy") {
            if (!value.containsValueOfType<std::string>()) {
                throw sdbus::Error(kInvalidArgs, "option 'strategy' must be a string (s)");
            }
            const auto text = value.get<std::string>();
            try {
                parsed.strategy = parse_strategy(text);
            } catch (const std::invalid_argument&) {
                throw sdbus::Error(kInvalidArgs, "invalid strategy '" + text +
                                                     "': expected auto, bulk, smt or per-cpu");
            }
        } else if (key == "dry_run") {
            if (!value.containsValueOfType<bool>()) {
                throw sdbus::Error(kInvalidArgs, "option 'dry_run' must be a boolean (b)");
            }
            parsed.dry_run = value.get<bool>();
        } else {
            throw sdbus::Error(kInvalidArgs, "unknown option '" + key + "'");
        }
    }
    return parsed;
}

// Changing CPU state needs root. The bus policy already says so on the system bus; this
// also covers private buses and a policy that was edited. A daemon that does not run as
// root (tests on a fake tree) also accepts its own user, who could write that tree anyway.
void ManagerAdaptor::check_access(const Options& options) const {
    if (options.dry_run) {
        return;
    }
    const auto* message = getObject().getCurrentlyProcessedMessage();
    uid_t uid = static_cast<uid_t>(-1);
    try {
        if (message != nullptr) {
            uid = message->getCredsUid();
        }
    } catch (const sdbus::Error& error) {
        log::warning(std::string("cannot read the caller's credentials: ") + error.what());
    }
    if (uid == static_cast<uid_t>(-1) || (uid != 0 && uid != geteuid())) {
        throw sdbus::Error(kAccessDenied, "changing CPU state needs root");
    }
}

std::string ManagerAdaptor::caller() const {
    const auto* message = getObject().getCurrentlyProcessedMessage();
    if (message == nullptr) {
        return {};
    }
    try {
        return message->getSender();
    } catch (const sdbus::Error&) {
        return {};
    }
}

void ManagerAdaptor::start(ChangeResult result, Action action, const std::string& mask,
                           const CpuSet& cpus, const CpuSet& selected_only, const Options& options,
                           StrategyKind default_strategy) {
    Request request;
    request.action = action;
    request.mask = mask;
    request.cpus = cpus;
    request.selected_only = selected_only;
    request.mode = options.mode.value_or(backend_.settings().default_mode);
    request.strategy = options.strategy.value_or(default_strategy);
    request.dry_run = options.dry_run;
    request.caller = caller();
    // std::function needs a copyable target and sdbus::Result is move-only. The backend
    // keeps this callback on the main thread, so the reply is sent and dropped there.
    auto reply = std::make_shared<ChangeResult>(std::move(result));
    backend_.submit(std::move(request), [reply](const RequestResult& done) {
        const ChangeResult& call = *reply;
        try {
            if (done.refusal) {
                call.returnError(
                    sdbus::Error(error_name(done.refusal->kind()), done.refusal->what()));
            } else {
                call.returnResults(to_dbus(done.cpus), summary_of(done));
            }
        } catch (const std::exception& error) {
            // The caller went away or the connection broke: nothing left to tell anyone.
            log::warning(std::string("cannot send a reply: ") + error.what());
        }
    });
}

void ManagerAdaptor::change(ChangeResult&& result, Action action, const std::string& mask,
                            const std::map<std::string, sdbus::Variant>& options) {
    const Options parsed = parse_options(options);
    check_access(parsed);
    const MachineState& state = backend_.state();
    const MaskSelection selection = select_mask(mask, state);
    start(std::move(result), action, mask, selection.cpus, selection.cpus - selection.named, parsed,
          StrategyKind::Auto);
}

void ManagerAdaptor::Offline(ChangeResult&& result, std::string mask,
                             std::map<std::string, sdbus::Variant> options) {
    guarded("Offline", [&] { change(std::move(result), Action::Offline, mask, options); });
}

void ManagerAdaptor::Online(ChangeResult&& result, std::string mask,
                            std::map<std::string, sdbus::Variant> options) {
    guarded("Online", [&] { change(std::move(result), Action::Online, mask, options); });
}

void ManagerAdaptor::SetSmt(ChangeResult&& result, std::string state,
                            std::map<std::string, sdbus::Variant> options) {
    guarded("SetSmt", [&] {
        Action action = Action::Offline;
        if (state == "off") {
            action = Action::Offline;
        } else if (state == "on") {
            action = Action::Online;
        } else {
            throw sdbus::Error(kInvalidArgs,
                               "invalid SMT state '" + state + "': expected on or off");
        }
        const Options parsed = parse_options(options);
        check_access(parsed);
        const MachineState& machine = backend_.state();
        const CpuSet cpus = machine.smt_secondaries();
        if (cpus.empty()) {
            throw sdbus::Error(error_name(RefusalKind::NotSupported),
                               "this machine has no SMT sibling threads");
        }
        // smt/control when it can switch exactly these CPUs (it cannot when some siblings
        // were changed one by one), else whatever the engine finds best.
        const StrategyKind strategy =
            smt_control_applies(action, cpus, machine) ? StrategyKind::Smt : StrategyKind::Auto;
        start(std::move(result), action, "smt", cpus, cpus, parsed, strategy);
    });
}

std::vector<ManagerAdaptor::TopologyEntry> ManagerAdaptor::GetTopology() {
    return guarded("GetTopology", [&] {
        const MachineState& state = backend_.state();
        CpuSet cpus = state.present;
        for (const auto& [cpu, topo] : state.topology) {
            cpus.add(cpu);
        }
        std::vector<TopologyEntry> entries;
        for (const unsigned cpu : cpus.members()) {
            CpuTopology topo;
            if (const auto it = state.topology.find(cpu); it != state.topology.end()) {
                topo = it->second;
            }
            entries.emplace_back(static_cast<uint32_t>(cpu), static_cast<int32_t>(topo.package),
                                 static_cast<int32_t>(topo.die), static_cast<int32_t>(topo.core),
                                 static_cast<int32_t>(topo.node), topo.siblings.to_string(),
                                 state.online.contains(cpu), state.hotpluggable.contains(cpu));
        }
        return entries;
    });
}

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
    return guarded("Get SmtControl", [&] { return backend_.state().smt_control; });
}

std::vector<std::string> ManagerAdaptor::Capabilities() {
    return guarded("Get Capabilities", [&] { return capability_names(backend_.state()); });
}

bool ManagerAdaptor::Busy() {
    return guarded("Get Busy", [&] { return backend_.busy(); });
}

std::map<std::string, std::string> ManagerAdaptor::property_texts() {
    const MachineState& state = backend_.cached_state();
    std::string capabilities;
    for (const auto& name : capability_names(state)) {
        capabilities += name + " ";
    }
    return {
        {"Online", state.online.to_string()},
        {"Offline", state.offline().to_string()},
        {"Possible", state.possible.to_string()},
        {"Present", state.present.to_string()},
        {"SmtControl", state.smt_control},
        {"Capabilities", capabilities},
        {"Busy", backend_.busy() ? "true" : "false"},
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

}  // namespace cpuhpd
