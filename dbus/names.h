// The names of the org.cpuhpd1 D-Bus contract that the interface XML cannot carry into
// generated code: bus name and path, error names, the keys of the options and summary
// dictionaries, SetSmt's states, property names. Shared by the service, cpuctl and the tests;
// header-only, free of sdbus-c++ and of the engine: D-Bus strings only. Method, signal and
// property signatures come from the generated glue (dbus/CMakeLists.txt); the values of
// enum-like strings come from the name tables in vocabulary/enums.h, which the service and
// cpuctl pair with these. The XML documents each of them.
#pragma once

#include <string>
#include <string_view>

namespace cpuhpd::dbus {

inline constexpr const char* kBusName = "org.cpuhpd1";
inline constexpr const char* kObjectPath = "/org/cpuhpd1";
inline constexpr const char* kInterface = "org.cpuhpd1.Manager";

// HoldViolated's `action`: what the service did about held CPUs changed without it.
inline constexpr const char* kViolationRestore = "restore";  // puts them back
inline constexpr const char* kViolationReport = "report";    // config enforce_holds: report
inline constexpr const char* kViolationLimited = "limited";  // put back too often: reports

// The service's own errors: kErrorPrefix + a name of kRefusalNames (InvalidMask, ...).
inline constexpr const char* kErrorPrefix = "org.cpuhpd1.Error.";
inline std::string error_name(std::string_view refusal) {
    return kErrorPrefix + std::string(refusal);
}

// Standard errors the service sends, or that cpuctl explains.
inline constexpr const char* kErrorInvalidArgs = "org.freedesktop.DBus.Error.InvalidArgs";
inline constexpr const char* kErrorAccessDenied = "org.freedesktop.DBus.Error.AccessDenied";
inline constexpr const char* kErrorInteractiveAuthorizationRequired =
    "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired";
inline constexpr const char* kErrorFailed = "org.freedesktop.DBus.Error.Failed";
inline constexpr const char* kErrorServiceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown";
inline constexpr const char* kErrorNameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner";
inline constexpr const char* kErrorNoServer = "org.freedesktop.DBus.Error.NoServer";
inline constexpr const char* kErrorNoReply = "org.freedesktop.DBus.Error.NoReply";
inline constexpr const char* kErrorTimeout = "org.freedesktop.DBus.Error.Timeout";

// Keys of the options dictionary (a{sv}) of Offline, Online and SetSmt. Values: "mode" a name
// of kModeNames, "strategy" one of kStrategyNames, "dry_run" a boolean.
inline constexpr const char* kOptionMode = "mode";
inline constexpr const char* kOptionStrategy = "strategy";
inline constexpr const char* kOptionDryRun = "dry_run";
// HoldCpus takes "strategy" and this boolean.
inline constexpr const char* kOptionRestore = "restore";
// Offline, SetSmt and ApplyProfile take this boolean: refuse (Error.Pinned) when a task
// would lose every CPU of its affinity.
inline constexpr const char* kOptionRefusePinned = "refuse_pinned";
// ... and this boolean: let a cgroup cpuset partition lose every CPU (the kernel invalidates
// it) instead of refusing with Error.EmptyPartition.
inline constexpr const char* kOptionForce = "force";
// Online takes this boolean (default true): give the tasks and IRQs whose affinity the
// kernel rewrote when cpuhpd took these CPUs offline their affinity back. False: the
// records of these CPUs are dropped. Offline accepts it and changes nothing.
inline constexpr const char* kOptionRestoreAffinity = "restore_affinity";

// Keys of the summary dictionary (a{sv}) of their replies. "action" is a name of
// kActionNames, "mode" of kModeNames, "strategy" of kStrategyNames, "outcome" of
// kOutcomeNames; the result of each CPU is a name of kCpuOutcomeNames.
inline constexpr const char* kSummaryAction = "action";
inline constexpr const char* kSummaryMask = "mask";
inline constexpr const char* kSummaryMode = "mode";
inline constexpr const char* kSummaryStrategy = "strategy";
inline constexpr const char* kSummaryDryRun = "dry_run";
inline constexpr const char* kSummaryBatchId = "batch_id";
inline constexpr const char* kSummaryDurationUs = "duration_us";
inline constexpr const char* kSummaryOrder = "order";
inline constexpr const char* kSummaryOutcome = "outcome";
// Whenever CPUs go offline (Offline, SetSmt off, and the profiles' summaries), a(uss): the
// tasks (tid, comm, affinity cpulist) and IRQs (number, action names, affinity cpulist)
// whose affinity has CPUs going away and none staying online.
inline constexpr const char* kSummaryPinnedTasks = "pinned_tasks";
inline constexpr const char* kSummaryPinnedIrqs = "pinned_irqs";
// a(sss): the cgroup cpuset partitions the change shrank or gave CPUs back to (path below the
// cgroup root, cpuset.cpus before, after); for a dry run, the shrinks it would make.
inline constexpr const char* kSummaryPartitions = "partitions";
// a(susssis): the affinity the kernel took from pinned tasks and IRQs, given back or not when
// CPUs of the change came back (a rollback, an online of CPUs cpuhpd took down, a hold's
// restore, a profile's revert): kind ("task" or "irq"), tid or IRQ number, name, the
// affinity recorded before (cpulist), status (a name of kAffinityStatusNames: restored,
// intact, gone, changed, failed, dropped, not-recorded), errno (0 if none), message.
inline constexpr const char* kSummaryAffinity = "affinity";
// a(st): where the batch's time (duration_us) went, in the order the batch went through its
// phases: name, microseconds. Each phase counts only its own time (a journal record inside the
// kernel write is the journal's), so they add up to no more than duration_us. A phase the
// batch did not go through is absent; empty for a dry run and a refused request. Names:
// read, partitions, pinned, admit, plan, affinity, journal, expedite, write, reread, rollback.
inline constexpr const char* kSummaryPhases = "phases";
// t: microseconds from the daemon's receipt of the request (after the caller was authorized)
// to the start of its batch: the machine read and resolution, the wait behind a running
// batch and the coalescing window. For a request answered without a batch (a dry run,
// nothing to change, refused at batch time), to its answer. Not in duration_us.
inline constexpr const char* kSummaryQueuedUs = "queued_us";

// The states SetSmt accepts.
inline constexpr const char* kSmtOn = "on";
inline constexpr const char* kSmtOff = "off";

// Property names, for GetAll and PropertiesChanged (the generated glue has one getter each).
inline constexpr const char* kPropertyOnline = "Online";
inline constexpr const char* kPropertyOffline = "Offline";
inline constexpr const char* kPropertyPossible = "Possible";
inline constexpr const char* kPropertyPresent = "Present";
inline constexpr const char* kPropertyProtected = "Protected";
inline constexpr const char* kPropertySmtControl = "SmtControl";
inline constexpr const char* kPropertyCapabilities = "Capabilities";
inline constexpr const char* kPropertyBusy = "Busy";
inline constexpr const char* kPropertyLastRecovery = "LastRecovery";
inline constexpr const char* kPropertyHolds = "Holds";
inline constexpr const char* kPropertyActiveProfile = "ActiveProfile";
inline constexpr const char* kPropertyProfileCpus = "ProfileCpus";
inline constexpr const char* kPropertyProfiles = "Profiles";
inline constexpr const char* kPropertyCurrentBatch = "CurrentBatch";
inline constexpr const char* kPropertyPowerProfiles = "PowerProfiles";

// Keys of CurrentBatch (a{sv}; empty while no batch runs).
inline constexpr const char* kBatchId = "batch_id";
inline constexpr const char* kBatchAction = "action";
inline constexpr const char* kBatchCpus = "cpus";
inline constexpr const char* kBatchRequests = "requests";
inline constexpr const char* kBatchDone = "done";
inline constexpr const char* kBatchTotal = "total";
inline constexpr const char* kBatchSince = "since";

// Keys of PowerProfiles (a{sv}).
inline constexpr const char* kPowerProfilesFollowed = "followed";
inline constexpr const char* kPowerProfilesAvailable = "available";
inline constexpr const char* kPowerProfilesProfile = "profile";

// Keys of ApplyProfile's and RevertProfile's summary (a{sv}), besides outcome, dry_run and
// duration_us.
inline constexpr const char* kSummaryProfile = "profile";
inline constexpr const char* kSummaryOffline = "offline";
inline constexpr const char* kSummaryOnline = "online";
inline constexpr const char* kSummaryTaken = "taken";
inline constexpr const char* kSummaryActive = "active";

// Keys of LastRecovery (a{sv}).
inline constexpr const char* kRecoveryOutcome = "outcome";
inline constexpr const char* kRecoverySummary = "summary";
inline constexpr const char* kRecoveryTime = "time";
inline constexpr const char* kRecoveryBatchId = "batch_id";
inline constexpr const char* kRecoveryAction = "action";
inline constexpr const char* kRecoveryStrategy = "strategy";
inline constexpr const char* kRecoveryPlanned = "planned";
inline constexpr const char* kRecoveryFound = "found";
inline constexpr const char* kRecoveryRestored = "restored";
inline constexpr const char* kRecoveryKept = "kept";
inline constexpr const char* kRecoveryFailed = "failed";
inline constexpr const char* kRecoveryRcuExpeditedRestored = "rcu_expedited_restored";
inline constexpr const char* kRecoverySmtControlRestored = "smt_control_restored";
inline constexpr const char* kRecoveryMovedTo = "moved_to";

}  // namespace cpuhpd::dbus
