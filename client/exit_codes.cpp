#include "exit_codes.h"

#include "enums.h"
#include "model.h"
#include "names.h"

namespace cpuctl {

int exit_code_for_outcome(std::string_view outcome) {
    if (outcome == cpuhpd::name_of(cpuhpd::kOutcomeNames, cpuhpd::Outcome::Ok)) {
        return kExitOk;
    }
    if (outcome == cpuhpd::name_of(cpuhpd::kOutcomeNames, cpuhpd::Outcome::Partial)) {
        return kExitPartial;
    }
    return kExitFailed;
}

int exit_code_for_error(std::string_view name) {
    using cpuhpd::RefusalKind;
    // The refusals of the input, an id that names nothing among them; Busy and KernelError
    // are no fault of it.
    for (auto kind :
         {RefusalKind::InvalidMask, RefusalKind::ProtectedCpu, RefusalKind::NotHotpluggable,
          RefusalKind::TooFewOnline, RefusalKind::NotSupported, RefusalKind::NoSuchBatch,
          RefusalKind::NoSuchHold, RefusalKind::NoSuchProfile}) {
        if (name == cpuhpd::dbus::error_name(cpuhpd::to_string(kind))) {
            return kExitUsage;
        }
    }
    if (name == cpuhpd::dbus::kErrorInvalidArgs || name == kUsageError) {
        return kExitUsage;
    }
    return kExitFailed;
}

}  // namespace cpuctl
