// read_machine against fake sysfs trees, and the MachineState helpers.
#include "machine.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>

#include "fake_sysfs.h"

namespace cpuhpd {
namespace {

using test::FakeSysfs;
using test::FakeTopology;
using test::of;

MachineState read(const FakeSysfs& fs) {
    TopologyMemory memory("");
    return read_machine(fs.paths(), memory);
}

TEST(ReadMachine, DefaultFakeMachine) {
    FakeSysfs fs;  // 2 packages x 4 cores x 2 threads, cpu0 not hotpluggable
    MachineState m = read(fs);
    EXPECT_EQ(m.possible, CpuSet::range(0, 15));
    EXPECT_EQ(m.present, CpuSet::range(0, 15));
    EXPECT_EQ(m.online, CpuSet::range(0, 15));
    EXPECT_TRUE(m.offline().empty());
    EXPECT_EQ(m.hotpluggable, CpuSet::range(1, 15));
    EXPECT_EQ(m.smt_control, SmtControl::On);
    EXPECT_FALSE(m.bulk_writable);
    ASSERT_EQ(m.topology.size(), 16u);
    const CpuTopology& t = m.topology.at(13);  // core 5 overall: package 1, core_id 1
    EXPECT_EQ(t.package, 1);
    EXPECT_EQ(t.die, 0);
    EXPECT_EQ(t.core, 1);
    EXPECT_EQ(t.node, 0);
    EXPECT_EQ(t.siblings, of({5, 13}));
    EXPECT_EQ(m.topology.at(0).siblings, of({0, 8}));
}

TEST(ReadMachine, OfflineCpusKeepTheirRememberedTopology) {
    FakeSysfs fs;
    TopologyMemory memory("");
    read_machine(fs.paths(), memory);
    fs.set_online(5, false);
    fs.set_online(13, false);
    ASSERT_FALSE(std::filesystem::exists(fs.paths().cpu_topology(5)));
    MachineState m = read_machine(fs.paths(), memory);
    EXPECT_EQ(m.online, CpuSet::range(0, 15) - of({5, 13}));
    EXPECT_EQ(m.offline(), of({5, 13}));
    EXPECT_EQ(m.hotpluggable, CpuSet::range(1, 15));
    ASSERT_TRUE(m.topology.count(5));
    EXPECT_EQ(m.topology.at(5).package, 1);
    EXPECT_EQ(m.topology.at(13).siblings, of({5, 13}));
    EXPECT_EQ(m.topology, memory.known());

    // Without memory, an offline CPU's topology is unknown.
    EXPECT_EQ(read(fs).topology.count(5), 0u);
}

TEST(ReadMachine, OfflineSiblingsStayInTheSiblingLists) {
    FakeSysfs fs;
    TopologyMemory memory("");
    read_machine(fs.paths(), memory);
    fs.set_online(9, false);
    // As x86 does (remove_siblinginfo): an offline CPU leaves its siblings' lists.
    fs.write("devices/system/cpu/cpu1/topology/thread_siblings_list", "1");
    MachineState m = read_machine(fs.paths(), memory);
    EXPECT_EQ(m.topology.at(1).siblings, of({1, 9}));
    EXPECT_EQ(m.topology.at(9).siblings, of({1, 9}));
    EXPECT_TRUE(m.smt_secondaries().contains(9));
    EXPECT_FALSE(m.smt_secondaries().contains(1));

    // Now the primary is offline and the secondary online, seeing only itself.
    fs.set_online(9, true);
    fs.set_online(1, false);
    fs.write("devices/system/cpu/cpu9/topology/thread_siblings_list", "9");
    m = read_machine(fs.paths(), memory);
    EXPECT_EQ(m.topology.at(9).siblings, of({1, 9}));
    EXPECT_EQ(m.smt_secondaries(), CpuSet::range(8, 15));
}

// The kernel sets a CPU's topology as it comes up: a CPU that stayed online is not read again
// (a batch's reads cost one file per CPU); one that came online, or all after a change of the
// present CPUs, are.
TEST(ReadMachine, TopologyIsReadAgainOnlyForCpusThatCameOnlineOrWhenPresentChanges) {
    FakeSysfs fs;
    TopologyMemory memory("");
    read_machine(fs.paths(), memory);
    const std::string core3 = "devices/system/cpu/cpu3/topology/core_id";
    const std::string core4 = "devices/system/cpu/cpu4/topology/core_id";
    fs.write(core3, "7");
    EXPECT_EQ(read_machine(fs.paths(), memory).topology.at(3).core, 3) << "read again";

    fs.set_online(4, false);
    read_machine(fs.paths(), memory);
    fs.set_online(4, true);
    fs.write(core4, "6");
    MachineState m = read_machine(fs.paths(), memory);
    EXPECT_EQ(m.topology.at(4).core, 6) << "CPU 4 came online: its topology is read";
    EXPECT_EQ(m.topology.at(3).core, 3);

    fs.write("devices/system/cpu/present", "0-14");
    m = read_machine(fs.paths(), memory);
    EXPECT_EQ(m.topology.at(3).core, 7) << "the present CPUs changed: every online CPU is read";
}

// A CPU first read as it comes online names a sibling that stayed online (and was not read
// again): that sibling's list gets it too, as a fresh read of both would say.
TEST(ReadMachine, ASiblingThatComesOnlineJoinsTheListOfOneThatStayedOnline) {
    FakeSysfs fs;
    fs.set_online(9, false);
    fs.write("devices/system/cpu/cpu1/topology/thread_siblings_list", "1");
    TopologyMemory memory("");  // started with CPU 9 offline: nothing known of it
    MachineState m = read_machine(fs.paths(), memory);
    ASSERT_EQ(m.topology.at(1).siblings, of({1}));
    fs.set_online(9, true);
    fs.write("devices/system/cpu/cpu1/topology/thread_siblings_list", "1,9");
    m = read_machine(fs.paths(), memory);
    EXPECT_EQ(m.topology.at(9).siblings, of({1, 9}));
    EXPECT_EQ(m.topology.at(1).siblings, of({1, 9}));
    EXPECT_EQ(m.topology, memory.known());
    EXPECT_TRUE(m.smt_secondaries().contains(9));
}

TEST(ReadMachine, TopologySurvivesARestartThroughTheCache) {
    FakeSysfs fs;
    const auto cache = fs.root() / "state" / "topology.cache";
    {
        TopologyMemory memory(cache);
        EXPECT_EQ(memory.load(), std::nullopt);
        read_machine(fs.paths(), memory);
    }
    fs.set_online(6, false);
    TopologyMemory memory(cache);
    EXPECT_EQ(memory.load(), std::nullopt);
    MachineState m = read_machine(fs.paths(), memory);
    ASSERT_TRUE(m.topology.count(6));
    EXPECT_EQ(m.topology.at(6).siblings, of({6, 14}));
    EXPECT_FALSE(m.online.contains(6));
}

TEST(ReadMachine, CpuWithoutOnlineFileFollowsTheOnlineList) {
    FakeSysfs fs;
    EXPECT_TRUE(read(fs).online.contains(0));
    fs.write("devices/system/cpu/online", "1-15");
    MachineState m = read(fs);
    EXPECT_FALSE(m.online.contains(0));
    EXPECT_FALSE(m.hotpluggable.contains(0));
    EXPECT_TRUE(m.online.contains(1));
}

TEST(ReadMachine, PerCpuOnlineFileIsTheAuthority) {
    FakeSysfs fs;
    fs.write("devices/system/cpu/cpu3/online", "0");  // summary still says online
    MachineState m = read(fs);
    EXPECT_FALSE(m.online.contains(3));
    EXPECT_TRUE(m.hotpluggable.contains(3));
}

TEST(ReadMachine, Cpu0Hotpluggable) {
    FakeTopology topo;
    topo.cpu0_hotpluggable = true;
    FakeSysfs fs(topo);
    EXPECT_EQ(read(fs).hotpluggable, CpuSet::range(0, 15));
}

TEST(ReadMachine, PossibleBeyondPresent) {
    FakeTopology topo;
    topo.possible_extra = 4;
    FakeSysfs fs(topo);
    MachineState m = read(fs);
    EXPECT_EQ(m.possible, CpuSet::range(0, 19));
    EXPECT_EQ(m.present, CpuSet::range(0, 15));
    EXPECT_EQ(m.online, CpuSet::range(0, 15));
    EXPECT_TRUE(m.offline().empty());  // offline() is present CPUs only
}

TEST(ReadMachine, BulkWritableFollowsTheFileModes) {
    FakeTopology topo;
    topo.bulk = true;
    FakeSysfs fs(topo);
    EXPECT_TRUE(read(fs).bulk_writable);
    // Root may write a 0444 file anyway: the mode bits decide, not access(2).
    ASSERT_EQ(::chmod(fs.paths().offline().c_str(), 0444), 0);
    EXPECT_FALSE(read(fs).bulk_writable);
    ASSERT_EQ(::chmod(fs.paths().offline().c_str(), 0200), 0);
    ASSERT_EQ(::chmod(fs.paths().online().c_str(), 0444), 0);
    EXPECT_FALSE(read(fs).bulk_writable);
    ASSERT_EQ(::chmod(fs.paths().online().c_str(), 0644), 0);
    EXPECT_TRUE(read(fs).bulk_writable);

    FakeSysfs stock;
    EXPECT_FALSE(read(stock).bulk_writable);
}

TEST(ReadMachine, SmtControlAbsentOrNotSupported) {
    FakeTopology topo;
    topo.smt_control = "";
    FakeSysfs none(topo);
    EXPECT_EQ(read(none).smt_control, SmtControl::Absent);
    topo.smt_control = "notsupported";
    FakeSysfs ns(topo);
    EXPECT_EQ(read(ns).smt_control, SmtControl::NotSupported);
}

TEST(ReadMachine, NumaNodes) {
    FakeTopology topo;
    topo.nodes = 2;
    FakeSysfs fs(topo);
    MachineState m = read(fs);
    EXPECT_EQ(m.topology.at(3).node, 0);
    EXPECT_EQ(m.topology.at(11).node, 0);
    EXPECT_EQ(m.topology.at(4).node, 1);
    EXPECT_EQ(m.topology.at(15).node, 1);
}

TEST(ReadMachine, MissingSummaryFilesAreAnError) {
    FakeSysfs fs;
    std::filesystem::remove(fs.paths().present());
    TopologyMemory memory("");
    EXPECT_THROW(read_machine(fs.paths(), memory), std::runtime_error);
}

TEST(MachineState, Capabilities) {
    MachineState m;
    EXPECT_EQ(m.capabilities(), std::vector<StrategyKind>{StrategyKind::PerCpu});
    m.smt_control = SmtControl::On;
    EXPECT_EQ(m.capabilities(),
              (std::vector<StrategyKind>{StrategyKind::Smt, StrategyKind::PerCpu}));
    m.smt_control = SmtControl::Off;
    m.bulk_writable = true;
    EXPECT_EQ(m.capabilities(), (std::vector<StrategyKind>{StrategyKind::Bulk, StrategyKind::Smt,
                                                           StrategyKind::PerCpu}));
    for (const auto control : {SmtControl::ForceOff, SmtControl::NotSupported,
                               SmtControl::NotImplemented, SmtControl::Absent}) {
        m.smt_control = control;
        EXPECT_EQ(m.capabilities(),
                  (std::vector<StrategyKind>{StrategyKind::Bulk, StrategyKind::PerCpu}))
            << to_string(control);
    }
}

TEST(MachineState, SmtSecondaries) {
    FakeSysfs fs;
    TopologyMemory memory("");
    read_machine(fs.paths(), memory);
    fs.set_online(12, false);  // an offline secondary still counts (remembered topology)
    MachineState m = read_machine(fs.paths(), memory);
    EXPECT_EQ(m.smt_secondaries(), CpuSet::range(8, 15));

    FakeTopology nosmt;
    nosmt.threads_per_core = 1;
    FakeSysfs single(nosmt);
    EXPECT_TRUE(read(single).smt_secondaries().empty());
}

TEST(MachineState, SmtSecondariesUsesSiblingLists) {
    MachineState m;
    m.present = CpuSet::range(0, 5);
    // Adjacent numbering (0,1), (2,3), a 4-thread core (4,5 + absent 6,7), CPU 5 unknown.
    m.topology[0].siblings = of({0, 1});
    m.topology[1].siblings = of({0, 1});
    m.topology[2].siblings = of({2, 3});
    m.topology[3].siblings = of({2, 3});
    m.topology[4].siblings = of({4, 5, 6, 7});
    m.topology[7].siblings = of({4, 5, 6, 7});  // not present
    EXPECT_EQ(m.smt_secondaries(), of({1, 3}));
}

}  // namespace
}  // namespace cpuhpd
