#include "request.h"

namespace cpuhpd {

std::string to_string(Action action) {
    return action == Action::Offline ? "offline" : "online";
}

std::string to_string(Mode mode) {
    return mode == Mode::Atomic ? "atomic" : "best-effort";
}

std::string to_string(Expedite expedite) {
    switch (expedite) {
        case Expedite::Auto:
            return "auto";
        case Expedite::Always:
            return "always";
        case Expedite::Never:
            return "never";
    }
    return "auto";
}

Mode parse_mode(const std::string& name) {
    if (name == "atomic")
        return Mode::Atomic;
    if (name == "best-effort")
        return Mode::BestEffort;
    throw std::invalid_argument("unknown mode '" + name + "' (expected atomic or best-effort)");
}

Expedite parse_expedite(const std::string& name) {
    if (name == "auto")
        return Expedite::Auto;
    if (name == "always")
        return Expedite::Always;
    if (name == "never")
        return Expedite::Never;
    throw std::invalid_argument("unknown expedite value '" + name +
                                "' (expected auto, always or never)");
}

std::string to_string(RefusalKind kind) {
    switch (kind) {
        case RefusalKind::InvalidMask:
            return "InvalidMask";
        case RefusalKind::ProtectedCpu:
            return "ProtectedCpu";
        case RefusalKind::NotHotpluggable:
            return "NotHotpluggable";
        case RefusalKind::TooFewOnline:
            return "TooFewOnline";
        case RefusalKind::NotSupported:
            return "NotSupported";
        case RefusalKind::Busy:
            return "Busy";
        case RefusalKind::KernelError:
            return "KernelError";
    }
    return "InvalidMask";
}

Refusal::Refusal(RefusalKind kind, std::string message, CpuSet cpus)
    : std::runtime_error(std::move(message)), kind_(kind), cpus_(std::move(cpus)) {}

std::string to_string(CpuOutcome outcome) {
    switch (outcome) {
        case CpuOutcome::Changed:
            return "changed";
        case CpuOutcome::Unchanged:
            return "unchanged";
        case CpuOutcome::Failed:
            return "failed";
        case CpuOutcome::RolledBack:
            return "rolled-back";
        case CpuOutcome::Refused:
            return "refused";
    }
    return "unchanged";
}

std::string to_string(Outcome outcome) {
    switch (outcome) {
        case Outcome::Ok:
            return "ok";
        case Outcome::Failed:
            return "failed";
        case Outcome::Partial:
            return "partial";
    }
    return "ok";
}

Outcome summarize(const std::vector<CpuResult>& cpus) {
    bool any_bad = false;
    bool any_changed = false;
    for (const auto& r : cpus) {
        if (r.outcome == CpuOutcome::Failed || r.outcome == CpuOutcome::RolledBack ||
            r.outcome == CpuOutcome::Refused)
            any_bad = true;
        if (r.outcome == CpuOutcome::Changed)
            any_changed = true;
    }
    if (!any_bad)
        return Outcome::Ok;
    return any_changed ? Outcome::Partial : Outcome::Failed;
}

}  // namespace cpuhpd
