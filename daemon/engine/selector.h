// Turns a user's mask expression into a CPU set, resolving selectors from the topology.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cpulist.h"
#include "machine.h"

namespace cpuhpd {

// The expression is one or more whitespace-separated arguments, whose union is taken.
// Each argument is one of:
//   a kernel cpulist        "0-3,8,10-15", "0-31:2/8"
//   a cpumap with 0x prefix "0xff,00000000"
//   a selector              "all" (every present CPU), "smt" (every SMT thread that is not
//                           the first of its core), "package:N", "die:N" (dies of every
//                           package with die_id N), "node:N", "core:N" (the threads of
//                           CPU N's core)
// Throws MaskError naming the offending argument and its offset in `expression`; an
// empty expression, an unknown selector, or a selector that matches no CPU are errors, and
// so are CPU numbers beyond the machine's last possible CPU. Limits (input.h), checked
// before anything is parsed: kMaxMaskBytes bytes, kMaxMaskRegions regions.
// The selection tells apart the CPUs the caller named by number (cpulist or cpumap) from
// those only a selector brought in: "offline all" means every CPU that can go offline,
// while "offline 0" means CPU 0 and is refused if it is protected.
struct MaskSelection {
    CpuSet cpus;   // the union of every argument
    CpuSet named;  // the CPUs named by number
    // The expression is the selector "smt" alone: the caller asked for SMT, so the
    // smt/control strategy may be used (a numeric mask never switches SMT off).
    bool smt_selector = false;
};
MaskSelection select_mask(std::string_view expression, const MachineState& machine);

// The selectors' words, in table order: `numbered` false, those that stand alone ("all",
// "smt"); true, those that take ":N" ("package", "die", "node", "core"). The completion
// scripts offer the same (tests/unit/completion_lists_test.cpp).
std::vector<std::string> selector_words(bool numbered);

// The syntax and limits alone, without a machine (config profiles): every argument must
// be a valid cpulist, cpumap or selector. Throws MaskError.
void check_mask_syntax(std::string_view expression);

}  // namespace cpuhpd
