// Mask expressions as callers send them (select_mask, check_mask_syntax) on a 2-package,
// 4-core, 2-thread machine with CPUs 0-15 possible and present: any input resolves or throws
// MaskError; an expression that resolves also passes the machine-free syntax check.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "selector.h"

namespace {

cpuhpd::MachineState make_machine() {
    cpuhpd::MachineState m;
    m.possible = cpuhpd::CpuSet::range(0, 15);
    m.present = m.possible;
    m.online = cpuhpd::CpuSet::range(0, 13);
    m.hotpluggable = cpuhpd::CpuSet::range(1, 15);
    m.smt_control = cpuhpd::SmtControl::On;
    for (unsigned cpu = 0; cpu < 16; ++cpu) {
        cpuhpd::CpuTopology t;
        t.package = static_cast<int>((cpu % 8) / 4);
        t.die = 0;
        t.core = static_cast<int>(cpu % 4);
        t.node = t.package;
        t.siblings = cpuhpd::CpuSet::single(cpu % 8) | cpuhpd::CpuSet::single(cpu % 8 + 8);
        m.topology.emplace(cpu, t);
    }
    return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const cpuhpd::MachineState machine = make_machine();
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    bool resolved = false;
    try {
        const cpuhpd::MaskSelection s = cpuhpd::select_mask(text, machine);
        // "0x0" resolves to no CPU (the planner refuses that); nothing beyond CPU 15.
        if (!s.named.is_subset_of(s.cpus) || (!s.cpus.empty() && s.cpus.last() > 15)) {
            std::abort();
        }
        resolved = true;
    } catch (const cpuhpd::MaskError&) {
    }
    try {
        cpuhpd::check_mask_syntax(text);
    } catch (const cpuhpd::MaskError&) {
        if (resolved) {
            std::abort();  // the config would refuse a mask the daemon accepts
        }
    }
    return 0;
}
