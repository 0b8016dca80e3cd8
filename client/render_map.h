// `cpuctl topology --map`: a picture of the machine in the terminal, nested as the hardware is
// (node, package, die, core, threads; only the levels that tell something), each thread marked
// online, offline, held (by which hold), protected or not hotpluggable, with a legend under it.
// A pure function of the plain data the daemon sends (model.h): golden-tested without a bus.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model.h"

namespace cpuctl {

struct MapOptions {
    // ANSI colours (SGR escapes) on the marks, the headers and the legend. Without it the text
    // holds no escape byte at all: the symbols alone say everything.
    bool color = false;
    // The columns the map may use (a terminal's width); no line is wider. Below kMinMapWidth
    // the map uses kMinMapWidth.
    std::size_t width = 80;
};

inline constexpr std::size_t kMinMapWidth = 40;

// The map, one '\n'-terminated line after another:
//
//   machine: 16 CPUs, 2 packages, 8 cores, 2 nodes
//     package 0, node 0: 8 of 8 online
//       [ 0+#  8+ ]  [ 1+   9+ ]  [ 2+  10+ ]  [ 3+  11+ ]
//     package 1, node 1: 4 of 8 online
//       [ 4-a 12-a]  [ 5-a 13-a]  [ 6+  14+ ]  [ 7+  15+ ]
//
//   + online (12)  - offline (4)  P protected  # not hotpluggable
//   a  hold 3: 4 CPUs held offline by live-update
//
// A core is [...] with its threads (CPU numbers) in it; each CPU is followed by + (online) or
// - (offline) and one more column: a hold's letter (a-z, then A-Z but P, then *), else # (no
// online file: the kernel cannot take it offline), else P (protected by the daemon's config),
// else blank. Cores go left to right in CPU order and wrap at the width. A level (node,
// package, die) is shown when it splits its parent; a level that matches its parent one to one
// is named in the parent's header ("package 0, node 0"); one with a single value is left out.
// CPUs whose package is unknown (offline since before the daemon first saw them) are under
// "package ?"; an unknown die or node is left out. Under the legend, one line per hold (its
// letter, id, CPUs in the map, state, who). `protected_cpus` and the holds' cpus are
// cpulists; a malformed one marks nothing.
std::string render_map(const std::vector<TopologyCpu>& cpus, const std::string& protected_cpus,
                       const std::vector<HoldInfo>& holds, const MapOptions& options = {});

}  // namespace cpuctl
