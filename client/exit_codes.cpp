#include "exit_codes.h"

#include <array>

namespace cpuctl {

int exitCodeForOutcome(std::string_view outcome) {
    if (outcome == "ok") {
        return kExitOk;
    }
    if (outcome == "partial") {
        return kExitPartial;
    }
    return kExitFailed;
}

int exitCodeForError(std::string_view errorName) {
    static constexpr std::array<std::string_view, 7> kInputErrors = {
        "org.cpuhpd1.Error.InvalidMask",
        "org.cpuhpd1.Error.ProtectedCpu",
        "org.cpuhpd1.Error.NotHotpluggable",
        "org.cpuhpd1.Error.TooFewOnline",
        "org.cpuhpd1.Error.NotSupported",
        "org.freedesktop.DBus.Error.InvalidArgs",
        "cpuctl.Error.Usage",
    };
    for (auto name : kInputErrors) {
        if (errorName == name) {
            return kExitUsage;
        }
    }
    return kExitFailed;
}

}  // namespace cpuctl
