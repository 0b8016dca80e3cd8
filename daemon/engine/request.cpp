#include "request.h"

#include <utility>

namespace cpuhpd {

Refusal::Refusal(RefusalKind kind, std::string message, CpuSet cpus)
    : std::runtime_error(std::move(message)), kind_(kind), cpus_(std::move(cpus)) {}

Outcome summarize(const std::vector<CpuResult>& cpus) {
    bool any_bad = false;
    bool any_changed = false;
    for (const auto& r : cpus) {
        if (r.outcome == CpuOutcome::Failed || r.outcome == CpuOutcome::RolledBack ||
            r.outcome == CpuOutcome::Refused || r.outcome == CpuOutcome::Cancelled) {
            any_bad = true;
        }
        if (r.outcome == CpuOutcome::Changed) {
            any_changed = true;
        }
    }
    if (!any_bad) {
        return Outcome::Ok;
    }
    return any_changed ? Outcome::Partial : Outcome::Failed;
}

RequestResult refused_result(const Request& request, Refusal refusal) {
    RequestResult r;
    r.action = request.action;
    r.mode = request.mode;
    r.mask = request.mask;
    r.outcome = Outcome::Failed;
    r.refusal = std::move(refusal);
    return r;
}

}  // namespace cpuhpd
