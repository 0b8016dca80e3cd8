// The engine's vocabulary, shared with the service and cpuctl (vocabulary/, free of D-Bus and
// of the engine's code): each enum beside the one table of its names. Printing, parsing
// and every list of allowed values (options, config, cpuctl, messages) come from the table,
// so a new value is added in one place.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cpuhpd {

template <typename E>
struct EnumName {
    E value;
    std::string_view name;
};

template <typename E, std::size_t N>
using EnumNames = std::array<EnumName<E>, N>;

enum class Action { Offline, Online };
inline constexpr EnumNames<Action, 2> kActionNames{{
    {Action::Offline, "offline"},
    {Action::Online, "online"},
}};
constexpr Action opposite(Action action) {
    return action == Action::Offline ? Action::Online : Action::Offline;
}

enum class Mode { Atomic, BestEffort };
inline constexpr EnumNames<Mode, 2> kModeNames{{
    {Mode::Atomic, "atomic"},
    {Mode::BestEffort, "best-effort"},
}};

enum class Expedite { Auto, Always, Never };
inline constexpr EnumNames<Expedite, 3> kExpediteNames{{
    {Expedite::Auto, "auto"},
    {Expedite::Always, "always"},
    {Expedite::Never, "never"},
}};

// What start-up recovery does with the CPUs of a batch a crash interrupted (config
// `recovery`): Auto puts back those of atomic requests and keeps those of best-effort ones.
enum class RecoveryPolicy { Auto, Rollback, Keep };
inline constexpr EnumNames<RecoveryPolicy, 3> kRecoveryPolicyNames{{
    {RecoveryPolicy::Auto, "auto"},
    {RecoveryPolicy::Rollback, "rollback"},
    {RecoveryPolicy::Keep, "keep"},
}};

// smt/control as the kernel reports it (Documentation/ABI/testing/sysfs-devices-system-cpu);
// Absent when there is no such file. Only On and Off can be switched.
enum class SmtControl { Absent, On, Off, ForceOff, NotSupported, NotImplemented };
inline constexpr EnumNames<SmtControl, 6> kSmtControlNames{{
    {SmtControl::Absent, ""},
    {SmtControl::On, "on"},
    {SmtControl::Off, "off"},
    {SmtControl::ForceOff, "forceoff"},
    {SmtControl::NotSupported, "notsupported"},
    {SmtControl::NotImplemented, "notimplemented"},
}};

// How a batch drives the kernel (strategy.h implements each but Auto, which the planner
// turns into the best one the kernel offers).
enum class StrategyKind { Auto, Bulk, Smt, PerCpu };
inline constexpr EnumNames<StrategyKind, 4> kStrategyNames{{
    {StrategyKind::Auto, "auto"},
    {StrategyKind::Bulk, "bulk"},
    {StrategyKind::Smt, "smt"},
    {StrategyKind::PerCpu, "per-cpu"},
}};

// Why a request was refused before anything was touched; the name is the D-Bus error's
// last part. KernelError: the batch could not run at all (sysfs unreadable, an unexpected
// failure). NoSuchBatch: Cancel named a batch that is not running. Held: another caller's
// hold has the CPUs (holds.h). NoSuchHold: ReleaseHold named a hold that does not exist.
// NoSuchProfile: ApplyProfile named no profile of the config, or RevertProfile found none
// in force. Pinned: the request asked refuse_pinned and a task would lose every CPU of its
// affinity (pinned.h). EmptyPartition: a cgroup cpuset partition would lose every CPU it
// has online and the request did not pass force (partitions.h).
enum class RefusalKind {
    InvalidMask,
    ProtectedCpu,
    NotHotpluggable,
    TooFewOnline,
    NotSupported,
    Busy,
    KernelError,
    NoSuchBatch,
    Held,
    NoSuchHold,
    NoSuchProfile,
    Pinned,
    EmptyPartition
};
inline constexpr EnumNames<RefusalKind, 13> kRefusalNames{{
    {RefusalKind::InvalidMask, "InvalidMask"},
    {RefusalKind::ProtectedCpu, "ProtectedCpu"},
    {RefusalKind::NotHotpluggable, "NotHotpluggable"},
    {RefusalKind::TooFewOnline, "TooFewOnline"},
    {RefusalKind::NotSupported, "NotSupported"},
    {RefusalKind::Busy, "Busy"},
    {RefusalKind::KernelError, "KernelError"},
    {RefusalKind::NoSuchBatch, "NoSuchBatch"},
    {RefusalKind::Held, "Held"},
    {RefusalKind::NoSuchHold, "NoSuchHold"},
    {RefusalKind::NoSuchProfile, "NoSuchProfile"},
    {RefusalKind::Pinned, "Pinned"},
    {RefusalKind::EmptyPartition, "EmptyPartition"},
}};

// Cancelled: planned, but the batch was cancelled before its turn (never written).
enum class CpuOutcome { Changed, Unchanged, Failed, RolledBack, Refused, Cancelled };
inline constexpr EnumNames<CpuOutcome, 6> kCpuOutcomeNames{{
    {CpuOutcome::Changed, "changed"},
    {CpuOutcome::Unchanged, "unchanged"},
    {CpuOutcome::Failed, "failed"},
    {CpuOutcome::RolledBack, "rolled-back"},
    {CpuOutcome::Refused, "refused"},
    {CpuOutcome::Cancelled, "cancelled"},
}};

enum class Outcome { Ok, Failed, Partial };
inline constexpr EnumNames<Outcome, 3> kOutcomeNames{{
    {Outcome::Ok, "ok"},
    {Outcome::Failed, "failed"},
    {Outcome::Partial, "partial"},
}};

// The name of `value` in `names`; every value has one (the tables are complete).
template <typename E, std::size_t N>
constexpr std::string_view name_of(const EnumNames<E, N>& names, E value) {
    for (const auto& entry : names) {
        if (entry.value == value) {
            return entry.name;
        }
    }
    return "unknown";
}

template <typename E, std::size_t N>
constexpr std::optional<E> find_by_name(const EnumNames<E, N>& names, std::string_view name) {
    for (const auto& entry : names) {
        if (entry.name == name) {
            return entry.value;
        }
    }
    return std::nullopt;
}

// Every name of the table, in table order (for CLI and config checks).
template <typename E, std::size_t N>
std::vector<std::string> names_in(const EnumNames<E, N>& names) {
    std::vector<std::string> out;
    for (const auto& entry : names) {
        out.emplace_back(entry.name);
    }
    return out;
}

// "a, b or c": the names as a message lists the choices.
template <typename E, std::size_t N>
std::string alternatives(const EnumNames<E, N>& names) {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
        out += i == 0 ? "" : (i + 1 == N ? " or " : ", ");
        out += names[i].name;
    }
    return out;
}

inline std::string to_string(Action value) {
    return std::string(name_of(kActionNames, value));
}
inline std::string to_string(Mode value) {
    return std::string(name_of(kModeNames, value));
}
inline std::string to_string(Expedite value) {
    return std::string(name_of(kExpediteNames, value));
}
inline std::string to_string(RecoveryPolicy value) {
    return std::string(name_of(kRecoveryPolicyNames, value));
}
inline std::string to_string(SmtControl value) {
    return std::string(name_of(kSmtControlNames, value));
}
inline std::string to_string(StrategyKind value) {
    return std::string(name_of(kStrategyNames, value));
}
inline std::string to_string(RefusalKind value) {
    return std::string(name_of(kRefusalNames, value));
}
inline std::string to_string(CpuOutcome value) {
    return std::string(name_of(kCpuOutcomeNames, value));
}
inline std::string to_string(Outcome value) {
    return std::string(name_of(kOutcomeNames, value));
}

}  // namespace cpuhpd
