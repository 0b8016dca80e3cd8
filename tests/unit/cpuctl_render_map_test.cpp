// `cpuctl topology --map` (render_map): golden outputs on fake sysfs trees (the machines of
// the other tests, read as the daemon reads them), and on made-up topologies for the levels a
// fake tree does not have (dies, nodes within a package); plain and in colour, and that no
// line is wider than the width.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "fake_sysfs.h"
#include "machine.h"
#include "render_map.h"
#include "topology.h"

namespace cpuctl {
namespace {

// Made-up topology data for what a fake tree lacks (dies; many holds): numbered as x86 Linux
// numbers it (as tests/support's FakeSysfs), the first threads of all cores, then the second
// threads, so CPU N and N + cores are siblings. Packages are spread evenly over the nodes;
// every CPU online and hotpluggable but cpu0 (no online file).
struct Shape {
    unsigned packages = 2;
    unsigned cores_per_package = 4;
    unsigned threads_per_core = 2;
    unsigned nodes = 2;
    unsigned dies_per_package = 1;
    bool cpu0_hotpluggable = false;
};

std::vector<TopologyCpu> machine(const Shape& s) {
    const unsigned cores = s.packages * s.cores_per_package;
    const unsigned packages_per_node = std::max(1u, s.packages / s.nodes);
    const unsigned cores_per_die = s.cores_per_package / s.dies_per_package;
    std::vector<TopologyCpu> cpus;
    for (unsigned c = 0; c < cores * s.threads_per_core; ++c) {
        const unsigned core = c % cores;
        TopologyCpu t;
        t.cpu = c;
        t.package = static_cast<std::int32_t>(core / s.cores_per_package);
        t.core = static_cast<std::int32_t>(core % s.cores_per_package);
        t.die = static_cast<std::int32_t>(core % s.cores_per_package / cores_per_die);
        t.node = static_cast<std::int32_t>(core / s.cores_per_package / packages_per_node);
        std::string siblings;
        for (unsigned th = 0; th < s.threads_per_core; ++th) {
            siblings += (siblings.empty() ? "" : ",") + std::to_string(core + th * cores);
        }
        t.siblings = siblings;
        t.online = true;
        t.hotpluggable = c != 0 || s.cpu0_hotpluggable;
        cpus.push_back(t);
    }
    return cpus;
}

// What GetTopology says of a fake tree (tests/support) once `offline` went offline: the
// daemon's read of the tree, its memory of the topology the kernel hid since, and its entries
// as ManagerAdaptor::GetTopology makes them. With `seen_before`, the daemon read the tree
// while every CPU was online; without, the CPUs were offline before it ever looked.
std::vector<TopologyCpu> from_tree(const cpuhpd::test::FakeTopology& shape,
                                   const std::vector<unsigned>& offline = {},
                                   bool seen_before = true) {
    cpuhpd::test::FakeSysfs tree(shape);
    cpuhpd::TopologyMemory memory("");
    if (seen_before) {
        cpuhpd::read_machine(tree.paths(), memory);
    }
    for (const unsigned cpu : offline) {
        tree.set_online(cpu, false);
    }
    const auto state = cpuhpd::read_machine(tree.paths(), memory);
    std::vector<TopologyCpu> cpus;
    for (const unsigned cpu : (state.present | state.possible).members()) {
        if (!state.present.contains(cpu) && state.topology.count(cpu) == 0) {
            continue;
        }
        cpuhpd::CpuTopology topo;
        if (const auto it = state.topology.find(cpu); it != state.topology.end()) {
            topo = it->second;
        }
        cpus.push_back({cpu, topo.package, topo.die, topo.core, topo.node,
                        topo.siblings.to_string(), state.online.contains(cpu),
                        state.hotpluggable.contains(cpu)});
    }
    return cpus;
}

// The integration tests' machine (tests/integration/harness/world.h): a node per package.
cpuhpd::test::FakeTopology smt16_tree() {
    return {.nodes = 2};
}

HoldInfo hold(std::uint64_t id, const std::string& cpus, const std::string& state,
              const std::string& who) {
    HoldInfo h;
    h.id = id;
    h.cpus = cpus;
    h.state = state;
    h.who = who;
    h.why = "kernel update";
    h.holder = ":1.42";
    return h;
}

std::string plain(const std::vector<TopologyCpu>& cpus, const std::string& protected_cpus = "0",
                  const std::vector<HoldInfo>& holds = {}, std::size_t width = 80) {
    return render_map(cpus, protected_cpus, holds, {false, width});
}

std::size_t widest_line(const std::string& text) {
    std::istringstream in(text);
    std::size_t widest = 0;
    for (std::string line; std::getline(in, line);) {
        widest = std::max(widest, line.size());
    }
    return widest;
}

// Sub-NUMA clustering, made up: cores 0-3 on node 0, 4-7 on node 1, one package.
std::vector<TopologyCpu> snc() {
    auto cpus = machine({.packages = 1, .cores_per_package = 8, .nodes = 1});
    for (auto& c : cpus) {
        c.node = c.core < 4 ? 0 : 1;
    }
    return cpus;
}
// The integration tests' machine: 2 packages x 4 cores x 2 threads, a node per package, cpu0
// protected and without an online file; hold 3 has core 4 and core 5 offline, CPU 7 is
// offline, not held.
std::vector<TopologyCpu> smt16_held() {
    return from_tree(smt16_tree(), {4, 5, 12, 13, 7});
}

std::string without_escapes(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\x1b') {
            i = text.find('m', i);
        } else {
            out += text[i];
        }
    }
    return out;
}

TEST(CpuctlRenderMap, Smt16) {
    EXPECT_EQ(plain(from_tree(smt16_tree())), R"(machine: 16 CPUs, 2 packages, 8 cores, 2 nodes
  package 0, node 0: 8 of 8 online
    [ 0+#  8+ ]  [ 1+   9+ ]  [ 2+  10+ ]  [ 3+  11+ ]
  package 1, node 1: 8 of 8 online
    [ 4+  12+ ]  [ 5+  13+ ]  [ 6+  14+ ]  [ 7+  15+ ]

+ online (16)  - offline (0)  P protected  # not hotpluggable
)");
}

TEST(CpuctlRenderMap, HeldCoresNameTheirHold) {
    EXPECT_EQ(plain(smt16_held(), "0", {hold(3, "4-5,12-13", "offline", "live-update")}),
              R"(machine: 16 CPUs, 2 packages, 8 cores, 2 nodes
  package 0, node 0: 8 of 8 online
    [ 0+#  8+ ]  [ 1+   9+ ]  [ 2+  10+ ]  [ 3+  11+ ]
  package 1, node 1: 3 of 8 online
    [ 4-a 12-a]  [ 5-a 13-a]  [ 6+  14+ ]  [ 7-  15+ ]

+ online (11)  - offline (5)  P protected  # not hotpluggable
a  hold 3: 4 CPUs held offline by live-update
)");
}

TEST(CpuctlRenderMap, Numa8) {
    // As the guest tests' numa8: 2 sockets x 4 cores x 1 thread, nodes 0 (0-3) and 1 (4-7).
    EXPECT_EQ(plain(from_tree({.packages = 2,
                               .cores_per_package = 4,
                               .threads_per_core = 1,
                               .nodes = 2,
                               .smt_control = "notsupported"})),
              R"(machine: 8 CPUs, 2 packages, 8 cores, 2 nodes
  package 0, node 0: 4 of 4 online
    [0+#]  [1+ ]  [2+ ]  [3+ ]
  package 1, node 1: 4 of 4 online
    [4+ ]  [5+ ]  [6+ ]  [7+ ]

+ online (8)  - offline (0)  P protected  # not hotpluggable
)");
}

TEST(CpuctlRenderMap, Tree256FitsEightyColumns) {
    const auto map = plain(from_tree({.packages = 2, .cores_per_package = 64, .nodes = 2}));
    EXPECT_EQ(map, R"(machine: 256 CPUs, 2 packages, 128 cores, 2 nodes
  package 0, node 0: 128 of 128 online
    [  0+# 128+ ]  [  1+  129+ ]  [  2+  130+ ]  [  3+  131+ ]  [  4+  132+ ]
    [  5+  133+ ]  [  6+  134+ ]  [  7+  135+ ]  [  8+  136+ ]  [  9+  137+ ]
    [ 10+  138+ ]  [ 11+  139+ ]  [ 12+  140+ ]  [ 13+  141+ ]  [ 14+  142+ ]
    [ 15+  143+ ]  [ 16+  144+ ]  [ 17+  145+ ]  [ 18+  146+ ]  [ 19+  147+ ]
    [ 20+  148+ ]  [ 21+  149+ ]  [ 22+  150+ ]  [ 23+  151+ ]  [ 24+  152+ ]
    [ 25+  153+ ]  [ 26+  154+ ]  [ 27+  155+ ]  [ 28+  156+ ]  [ 29+  157+ ]
    [ 30+  158+ ]  [ 31+  159+ ]  [ 32+  160+ ]  [ 33+  161+ ]  [ 34+  162+ ]
    [ 35+  163+ ]  [ 36+  164+ ]  [ 37+  165+ ]  [ 38+  166+ ]  [ 39+  167+ ]
    [ 40+  168+ ]  [ 41+  169+ ]  [ 42+  170+ ]  [ 43+  171+ ]  [ 44+  172+ ]
    [ 45+  173+ ]  [ 46+  174+ ]  [ 47+  175+ ]  [ 48+  176+ ]  [ 49+  177+ ]
    [ 50+  178+ ]  [ 51+  179+ ]  [ 52+  180+ ]  [ 53+  181+ ]  [ 54+  182+ ]
    [ 55+  183+ ]  [ 56+  184+ ]  [ 57+  185+ ]  [ 58+  186+ ]  [ 59+  187+ ]
    [ 60+  188+ ]  [ 61+  189+ ]  [ 62+  190+ ]  [ 63+  191+ ]
  package 1, node 1: 128 of 128 online
    [ 64+  192+ ]  [ 65+  193+ ]  [ 66+  194+ ]  [ 67+  195+ ]  [ 68+  196+ ]
    [ 69+  197+ ]  [ 70+  198+ ]  [ 71+  199+ ]  [ 72+  200+ ]  [ 73+  201+ ]
    [ 74+  202+ ]  [ 75+  203+ ]  [ 76+  204+ ]  [ 77+  205+ ]  [ 78+  206+ ]
    [ 79+  207+ ]  [ 80+  208+ ]  [ 81+  209+ ]  [ 82+  210+ ]  [ 83+  211+ ]
    [ 84+  212+ ]  [ 85+  213+ ]  [ 86+  214+ ]  [ 87+  215+ ]  [ 88+  216+ ]
    [ 89+  217+ ]  [ 90+  218+ ]  [ 91+  219+ ]  [ 92+  220+ ]  [ 93+  221+ ]
    [ 94+  222+ ]  [ 95+  223+ ]  [ 96+  224+ ]  [ 97+  225+ ]  [ 98+  226+ ]
    [ 99+  227+ ]  [100+  228+ ]  [101+  229+ ]  [102+  230+ ]  [103+  231+ ]
    [104+  232+ ]  [105+  233+ ]  [106+  234+ ]  [107+  235+ ]  [108+  236+ ]
    [109+  237+ ]  [110+  238+ ]  [111+  239+ ]  [112+  240+ ]  [113+  241+ ]
    [114+  242+ ]  [115+  243+ ]  [116+  244+ ]  [117+  245+ ]  [118+  246+ ]
    [119+  247+ ]  [120+  248+ ]  [121+  249+ ]  [122+  250+ ]  [123+  251+ ]
    [124+  252+ ]  [125+  253+ ]  [126+  254+ ]  [127+  255+ ]

+ online (256)  - offline (0)  P protected  # not hotpluggable
)");
    EXPECT_LE(widest_line(map), 80u);
}

TEST(CpuctlRenderMap, PackageWhollyOffline) {
    // The daemon saw package 1 online, then it went offline: the map keeps its cores.
    const auto cpus = from_tree(smt16_tree(), {4, 5, 6, 7, 12, 13, 14, 15});
    EXPECT_EQ(plain(cpus), R"(machine: 16 CPUs, 2 packages, 8 cores, 2 nodes
  package 0, node 0: 8 of 8 online
    [ 0+#  8+ ]  [ 1+   9+ ]  [ 2+  10+ ]  [ 3+  11+ ]
  package 1, node 1: 0 of 8 online
    [ 4-  12- ]  [ 5-  13- ]  [ 6-  14- ]  [ 7-  15- ]

+ online (8)  - offline (8)  P protected  # not hotpluggable
)");
}

// Offline since before the daemon first saw them: the kernel shows no topology/ for them.
TEST(CpuctlRenderMap, PackageOfflineSinceBootHasNoKnownTopology) {
    EXPECT_EQ(plain(from_tree(smt16_tree(), {4, 5, 6, 7, 12, 13, 14, 15}, false)),
              R"(machine: 16 CPUs, 1 package, 4 cores, 1 node
  package 0: 8 of 8 online
    [ 0+#  8+ ]  [ 1+   9+ ]  [ 2+  10+ ]  [ 3+  11+ ]
  package ?: 0 of 8 online
    [ 4- ]  [ 5- ]  [ 6- ]  [ 7- ]  [12- ]  [13- ]  [14- ]  [15- ]

+ online (8)  - offline (8)  P protected  # not hotpluggable
package ?: offline since before cpuhpd first saw them (topology unknown)
)");
}

TEST(CpuctlRenderMap, ProtectedCpu0) {
    EXPECT_EQ(plain(from_tree({.nodes = 2, .cpu0_hotpluggable = true}), "0"),
              R"(machine: 16 CPUs, 2 packages, 8 cores, 2 nodes
  package 0, node 0: 8 of 8 online
    [ 0+P  8+ ]  [ 1+   9+ ]  [ 2+  10+ ]  [ 3+  11+ ]
  package 1, node 1: 8 of 8 online
    [ 4+  12+ ]  [ 5+  13+ ]  [ 6+  14+ ]  [ 7+  15+ ]

+ online (16)  - offline (0)  P protected  # not hotpluggable
)");
}

// # (no online file) wins over P; CPU 1 is protected and hotpluggable.
TEST(CpuctlRenderMap, NotHotpluggableCpu) {
    EXPECT_EQ(plain(from_tree({.packages = 1, .cores_per_package = 4}), "1"),
              R"(machine: 8 CPUs, 1 package, 4 cores, 1 node
  [0+# 4+ ]  [1+P 5+ ]  [2+  6+ ]  [3+  7+ ]

+ online (8)  - offline (0)  P protected  # not hotpluggable
)");
}

// Sub-NUMA clustering: two nodes in one package; the package says nothing.
TEST(CpuctlRenderMap, NodesWithinAPackage) {
    EXPECT_EQ(plain(snc()), R"(machine: 16 CPUs, 1 package, 8 cores, 2 nodes
  node 0: 8 of 8 online
    [ 0+#  8+ ]  [ 1+   9+ ]  [ 2+  10+ ]  [ 3+  11+ ]
  node 1: 8 of 8 online
    [ 4+  12+ ]  [ 5+  13+ ]  [ 6+  14+ ]  [ 7+  15+ ]

+ online (16)  - offline (0)  P protected  # not hotpluggable
)");
}

TEST(CpuctlRenderMap, NodesOfSeveralPackages) {
    EXPECT_EQ(plain(machine({.packages = 4, .cores_per_package = 2, .nodes = 2})),
              R"(machine: 16 CPUs, 4 packages, 8 cores, 2 nodes
  node 0: 8 of 8 online
    package 0: 4 of 4 online
      [ 0+#  8+ ]  [ 1+   9+ ]
    package 1: 4 of 4 online
      [ 2+  10+ ]  [ 3+  11+ ]
  node 1: 8 of 8 online
    package 2: 4 of 4 online
      [ 4+  12+ ]  [ 5+  13+ ]
    package 3: 4 of 4 online
      [ 6+  14+ ]  [ 7+  15+ ]

+ online (16)  - offline (0)  P protected  # not hotpluggable
)");
}

TEST(CpuctlRenderMap, DiesWhenAPackageHasSeveral) {
    EXPECT_EQ(plain(machine({.packages = 2, .cores_per_package = 8, .dies_per_package = 2})),
              R"(machine: 32 CPUs, 2 packages, 4 dies, 16 cores, 2 nodes
  package 0, node 0: 16 of 16 online
    die 0: 8 of 8 online
      [ 0+# 16+ ]  [ 1+  17+ ]  [ 2+  18+ ]  [ 3+  19+ ]
    die 1: 8 of 8 online
      [ 4+  20+ ]  [ 5+  21+ ]  [ 6+  22+ ]  [ 7+  23+ ]
  package 1, node 1: 16 of 16 online
    die 0: 8 of 8 online
      [ 8+  24+ ]  [ 9+  25+ ]  [10+  26+ ]  [11+  27+ ]
    die 1: 8 of 8 online
      [12+  28+ ]  [13+  29+ ]  [14+  30+ ]  [15+  31+ ]

+ online (32)  - offline (0)  P protected  # not hotpluggable
)");
}

// Below kMinMapWidth the map takes kMinMapWidth; a core wider than a line goes on over
// several.
TEST(CpuctlRenderMap, ACoreWiderThanALineWraps) {
    const auto map =
        plain(machine({.packages = 1, .cores_per_package = 2, .threads_per_core = 8, .nodes = 1}),
              "0", {}, 30);
    EXPECT_EQ(map, R"(machine: 16 CPUs, 1 package, 2 cores
  1 node
  [ 0+#  2+   4+   6+   8+  10+  12+
   14+ ]
  [ 1+   3+   5+   7+   9+  11+  13+
   15+ ]

+ online (16)  - offline (0)
P protected  # not hotpluggable
)");
    EXPECT_LE(widest_line(map), kMinMapWidth);
}

TEST(CpuctlRenderMap, BeyondTwoHundredFiftySixThreadsItWraps) {
    for (const std::size_t width : {80u, 100u, 132u}) {
        const auto map = plain(machine({.packages = 2, .cores_per_package = 512}), "0", {}, width);
        EXPECT_LE(widest_line(map), width);
        EXPECT_NE(map.find("[ 511+  1535+ ]"), std::string::npos) << map;
        // Several cores on a line, not one under the other: 1024 cores, 2048 threads.
        EXPECT_LT(std::count(map.begin(), map.end(), '\n'), 1024 / 3) << map;
    }
}

TEST(CpuctlRenderMap, ColourOnlyWhenAsked) {
    const std::vector<HoldInfo> holds{hold(3, "4-5,12-13", "offline", "live-update")};
    const auto coloured = render_map(smt16_held(), "0", holds, {true, 80});
    const auto text = plain(smt16_held(), "0", holds);
    EXPECT_EQ(text.find('\x1b'), std::string::npos);
    // The same picture: the colour is on the symbols, never instead of them.
    EXPECT_EQ(without_escapes(coloured), text);
    EXPECT_NE(coloured.find("\x1b[32m6+\x1b[0m"), std::string::npos) << coloured;  // green
    EXPECT_NE(coloured.find("\x1b[31m4-\x1b[0m\x1b[1;33ma\x1b[0m"), std::string::npos);
    EXPECT_NE(coloured.find("\x1b[1;35m#\x1b[0m"), std::string::npos);
    EXPECT_NE(coloured.find("\x1b[1;36mP\x1b[0m protected"), std::string::npos);
}

TEST(CpuctlRenderMap, HoldsBeyondTheLettersShareAStar) {
    std::vector<HoldInfo> holds;
    for (unsigned i = 0; i < 60; ++i) {
        holds.push_back(hold(100 + i, std::to_string(4 + i), "offline", "orchestrator"));
    }
    const auto map = plain(machine({.packages = 2, .cores_per_package = 32}), "0", holds);
    EXPECT_NE(map.find("[  4+a  68+ ]"), std::string::npos) << map;
    EXPECT_NE(map.find("[ 44+O 108+ ]  [ 45+Q 109+ ]"), std::string::npos) << map;  // no P
    EXPECT_NE(map.find("[ 55+* 119+ ]"), std::string::npos) << map;
    EXPECT_NE(map.find("\nZ  hold 150: 1 CPU held offline by orchestrator\n"
                       "*  9 more holds (cpuctl holds)\n"),
              std::string::npos)
        << map;
}

TEST(CpuctlRenderMap, AHolderNameIsEscapedAndCut) {
    const auto map =
        plain(machine({}), "0", {hold(7, "1", "online", "evil\x1b[31m" + std::string(100, 'x'))});
    EXPECT_EQ(map.find('\x1b'), std::string::npos);
    EXPECT_NE(map.find("\na  hold 7: 1 CPU held online by evil\\x1b[31mxxx"), std::string::npos)
        << map;
    EXPECT_LE(widest_line(map), 80u);
}

TEST(CpuctlRenderMap, MalformedListsMarkNothing) {
    EXPECT_EQ(plain(machine({.cpu0_hotpluggable = true}), "zero", {hold(1, "4-", "offline", "x")}),
              plain(machine({.cpu0_hotpluggable = true}), "", {hold(1, "", "offline", "x")}));
}

TEST(CpuctlRenderMap, NoCpus) {
    EXPECT_EQ(plain({}), "machine: no CPUs\n");
}

}  // namespace
}  // namespace cpuctl
