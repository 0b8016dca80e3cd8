// cpuctl's exit codes (docs/interface.md) and how results and errors map to them.
#pragma once

#include <string_view>

namespace cpuctl {

inline constexpr int kExitOk = 0;        // every CPU changed or was already in the state
inline constexpr int kExitFailed = 1;    // nothing left changed, daemon absent, D-Bus failure
inline constexpr int kExitUsage = 2;     // usage error or input the daemon refused
inline constexpr int kExitPartial = 64;  // best-effort with some failures

// From the summary's "outcome": ok -> 0, partial -> 64, failed (or anything else) -> 1.
int exit_code_for_outcome(std::string_view outcome);

// From a D-Bus error name: the daemon's refusals of the input (InvalidMask, ProtectedCpu,
// NotHotpluggable, TooFewOnline, NotSupported, InvalidArgs, and the ids that name nothing:
// NoSuchBatch, NoSuchHold, NoSuchProfile) -> 2, anything else -> 1. A command that named no
// id (`cancel` with no batch running, `profile revert` with none in force) overrides it: 1
// (DaemonError's exit code).
int exit_code_for_error(std::string_view name);

}  // namespace cpuctl
