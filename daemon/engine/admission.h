// A change as a caller asks for it, and its resolution against the machine into a Request
// the executor can queue. Free of D-Bus; runs off the event-loop thread, because a
// maximum-size mask takes milliseconds to resolve.
#pragma once

#include <string>

#include "machine.h"
#include "options.h"
#include "request.h"
#include "settings.h"

namespace cpuhpd {

struct ChangeAsk {
    Action action = Action::Offline;
    // The caller's mask expression; for SetSmt, "smt" (every SMT sibling thread).
    std::string mask;
    // SetSmt: the CPUs are the machine's SMT secondaries, and a machine without any refuses.
    bool smt_siblings = false;
    RequestOptions options;
    std::string caller;  // bus name, for logs and the per-caller queue limit
};

// The request `ask` makes of `machine`. smt/control is chosen only when the caller asked
// for SMT (SetSmt or the "smt" selector) and it switches exactly these CPUs; a numeric
// mask never switches SMT off. Throws MaskError, or Refusal(NotSupported) for SetSmt on a
// machine without SMT.
Request resolve(const ChangeAsk& ask, const MachineState& machine, const EngineSettings& settings);

}  // namespace cpuhpd
