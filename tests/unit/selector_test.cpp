// select_mask: cpulists, hex cpumaps and topology selectors, and the errors that point
// at the offending argument.
#include "selector.h"

#include <gtest/gtest.h>

#include <string>

#include "fake_sysfs.h"
#include "input.h"
#include "machine.h"

namespace cpuhpd {
namespace {

using test::FakeSysfs;
using test::FakeTopology;
using test::of;

// 2 packages x 4 cores x 2 threads on 2 NUMA nodes: package p holds cores 4p..4p+3,
// core i has threads i and i + 8.
class Selector : public ::testing::Test {
protected:
    Selector() : fs_(topo()), memory_("") { machine_ = read_machine(fs_.paths(), memory_); }
    static FakeTopology topo() {
        FakeTopology t;
        t.nodes = 2;
        t.possible_extra = 112;  // possible 0-127, present 0-15
        return t;
    }
    CpuSet resolve(std::string_view expression) { return select_mask(expression, machine_).cpus; }
    MaskError error(std::string_view expression) {
        try {
            CpuSet s = resolve(expression);
            ADD_FAILURE() << "'" << expression << "' resolved to " << s;
        } catch (const MaskError& e) {
            return e;
        }
        return MaskError("", "", 0);
    }

    FakeSysfs fs_;
    TopologyMemory memory_;
    MachineState machine_;
};

TEST_F(Selector, Cpulists) {
    EXPECT_EQ(resolve("4,6,7"), of({4, 6, 7}));
    EXPECT_EQ(resolve("0-3,8,10-15"), parse_cpulist("0-3,8,10-15"));
    EXPECT_EQ(resolve("0-15:2/8"), of({0, 1, 8, 9}));
    EXPECT_EQ(resolve("  5 \n"), of({5}));
    // Not limited to present CPUs: the planner refuses those with a better message.
    EXPECT_EQ(resolve("100"), of({100}));
}

// Issue 9: CPUs beyond the last possible one are refused before any range is filled, so
// "0-8191" repeated costs no more than the machine's possible CPUs.
TEST_F(Selector, CpusBeyondTheLastPossibleOneAreRefusedWhileParsing) {
    MaskError e = error("4,100-8191");
    EXPECT_EQ(e.token(), "8191");
    EXPECT_EQ(e.position(), 6u);
    EXPECT_NE(std::string(e.what()).find("the last possible CPU is 127"), std::string::npos)
        << e.what();
    e = error("0x1,00000000,00000000,00000000,00000000");
    EXPECT_NE(std::string(e.what()).find("sets CPU 128"), std::string::npos) << e.what();
}

// Issue 9: limits on the length and the number of regions, checked before parsing.
TEST_F(Selector, MaskLengthAndRegionCountAreLimited) {
    std::string regions;
    for (std::size_t i = 0; i + 1 < kMaxMaskRegions; ++i) {
        regions += "1,";
    }
    EXPECT_EQ(resolve(regions + "2"), of({1, 2}));
    MaskError e = error(regions + "2,3");
    EXPECT_NE(std::string(e.what()).find("8193 regions; the limit is 8192"), std::string::npos)
        << e.what();
    EXPECT_LT(e.token().size(), 100u);
    const std::string longest(kMaxMaskBytes - 1, ' ');
    EXPECT_EQ(resolve(longest + "5"), of({5}));
    e = error(longest + "55");
    EXPECT_NE(std::string(e.what()).find("65537 bytes long; the limit is 65536"), std::string::npos)
        << e.what();
}

TEST_F(Selector, OnlyTheSmtSelectorAloneAsksForSmt) {
    EXPECT_TRUE(select_mask("smt", machine_).smt_selector);
    EXPECT_TRUE(select_mask(" smt\n", machine_).smt_selector);
    EXPECT_FALSE(select_mask("8-15", machine_).smt_selector);
    EXPECT_FALSE(select_mask("smt 1", machine_).smt_selector);
}

// Config profiles: syntax and limits without a machine.
TEST(MaskSyntax, ChecksEveryArgumentWithoutAMachine) {
    EXPECT_NO_THROW(check_mask_syntax("package:1 0-3,8 0xff smt all core:3 node:0 die:0"));
    EXPECT_THROW(check_mask_syntax("zzz"), MaskError);
    EXPECT_THROW(check_mask_syntax("package:"), MaskError);
    EXPECT_THROW(check_mask_syntax("1-"), MaskError);
    EXPECT_THROW(check_mask_syntax(""), MaskError);
    EXPECT_THROW(check_mask_syntax("8192"), MaskError);
}

TEST_F(Selector, HexCpumaps) {
    EXPECT_EQ(resolve("0xff,00000000"), CpuSet::range(32, 39));
    EXPECT_EQ(resolve("0x3"), of({0, 1}));
    EXPECT_EQ(resolve("0XF0"), CpuSet::range(4, 7));
}

TEST_F(Selector, All) {
    EXPECT_EQ(resolve("all"), CpuSet::range(0, 15));
}

TEST_F(Selector, Smt) {
    EXPECT_EQ(resolve("smt"), CpuSet::range(8, 15));
    fs_.set_online(9, false);  // remembered topology keeps it a secondary
    machine_ = read_machine(fs_.paths(), memory_);
    EXPECT_EQ(resolve("smt"), CpuSet::range(8, 15));
}

TEST_F(Selector, PackageDieNodeCore) {
    EXPECT_EQ(resolve("package:0"), of({0, 1, 2, 3, 8, 9, 10, 11}));
    EXPECT_EQ(resolve("package:1"), of({4, 5, 6, 7, 12, 13, 14, 15}));
    EXPECT_EQ(resolve("die:0"), CpuSet::range(0, 15));
    EXPECT_EQ(resolve("node:1"), resolve("package:1"));
    EXPECT_EQ(resolve("core:1"), of({1, 9}));
    EXPECT_EQ(resolve("core:9"), of({1, 9}));
    EXPECT_EQ(resolve("package:01"), resolve("package:1"));
}

TEST_F(Selector, OfflineCpusAreFoundByRememberedTopology) {
    fs_.set_online(12, false);
    fs_.set_online(4, false);
    machine_ = read_machine(fs_.paths(), memory_);
    EXPECT_EQ(resolve("package:1"), of({4, 5, 6, 7, 12, 13, 14, 15}));
    EXPECT_EQ(resolve("core:12"), of({4, 12}));
    EXPECT_EQ(resolve("node:1"), of({4, 5, 6, 7, 12, 13, 14, 15}));
}

TEST_F(Selector, UnionOfArguments) {
    EXPECT_EQ(resolve("0-1 package:1"), of({0, 1, 4, 5, 6, 7, 12, 13, 14, 15}));
    EXPECT_EQ(resolve("core:0\tcore:1  0x100000"), of({0, 1, 8, 9, 20}));
    EXPECT_EQ(resolve("smt 0"), of({0, 8, 9, 10, 11, 12, 13, 14, 15}));
    EXPECT_EQ(resolve("4 4 4-4"), of({4}));
}

TEST_F(Selector, EmptyExpressions) {
    EXPECT_FALSE(error("").reason().empty());
    EXPECT_EQ(error("   ").position(), 0u);
    EXPECT_EQ(error("\n").position(), 0u);
}

TEST_F(Selector, UnknownSelector) {
    MaskError e = error("0-3 foo");
    EXPECT_EQ(e.token(), "foo");
    EXPECT_EQ(e.position(), 4u);
    EXPECT_EQ(e.reason(),
              "unknown selector 'foo' (expected all, smt, package:N, die:N, node:N, core:N)");
    EXPECT_EQ(error("socket:1").token(), "socket:1");
    EXPECT_EQ(error("All").token(), "All");
    EXPECT_EQ(error("smt:1").token(), "smt:1");
    EXPECT_EQ(error("package").token(), "package");
    EXPECT_EQ(error("package:1:2").token(), "package:1:2");
}

// The token is escaped and shortened once: a long or binary token reports its own size
// and bytes, not those of an already escaped copy.
TEST_F(Selector, LongOrBinaryTokenIsEscapedOnce) {
    const std::string long_word(100, 'q');
    MaskError e = error("0 " + long_word);
    EXPECT_NE(e.token().find("...(100 bytes)"), std::string::npos) << e.token();
    EXPECT_EQ(e.token().find("bytes)...("), std::string::npos) << e.token();
    e = error("fo\x01o");
    EXPECT_EQ(e.token(), "fo\\x01o");
    e = error("package:" + std::string(60, '9'));
    EXPECT_NE(e.token().find("...(68 bytes)"), std::string::npos) << e.token();
}

TEST_F(Selector, SelectorsThatMatchNothing) {
    MaskError e = error("all package:7");
    EXPECT_EQ(e.token(), "package:7");
    EXPECT_EQ(e.position(), 4u);
    EXPECT_NE(e.reason().find("package:7"), std::string::npos);
    EXPECT_EQ(error("die:1").token(), "die:1");
    EXPECT_EQ(error("node:2").token(), "node:2");
    e = error("core:99");  // no topology known for CPU 99
    EXPECT_EQ(e.token(), "core:99");
    EXPECT_NE(e.reason().find("99"), std::string::npos);

    FakeTopology nosmt;
    nosmt.threads_per_core = 1;
    FakeSysfs single(nosmt);
    TopologyMemory memory("");
    MachineState m = read_machine(single.paths(), memory);
    try {
        select_mask("smt", m).cpus;
        ADD_FAILURE() << "smt matched CPUs on a machine without SMT";
    } catch (const MaskError& err) {
        EXPECT_EQ(err.token(), "smt");
    }
}

TEST_F(Selector, BadSelectorNumbers) {
    for (const char* bad :
         {"package:", "package:x", "node:-1", "core:1a", "die:+1", "package:99999999999999"}) {
        MaskError e = error(std::string("1 ") + bad);
        EXPECT_EQ(e.token(), bad);
        EXPECT_EQ(e.position(), 2u);
    }
}

TEST_F(Selector, ErrorPositionsAreOffsetsIntoTheWholeExpression) {
    MaskError e = error("0-3  5-1");
    EXPECT_EQ(e.token(), "5-1");
    EXPECT_EQ(e.position(), 5u);
    e = error("all 1,3,,4");
    EXPECT_EQ(e.token(), ",");
    EXPECT_EQ(e.position(), 8u);
    e = error("smt 0xff,zz");
    EXPECT_EQ(e.token(), "zz");
    EXPECT_EQ(e.position(), 9u);
    e = error("  0x");
    EXPECT_EQ(e.token(), "0x");
    EXPECT_EQ(e.position(), 2u);
    e = error("1 9000");
    EXPECT_EQ(e.token(), "9000");
    EXPECT_EQ(e.position(), 2u);
}

TEST_F(Selector, KernelOnlyFormsAreExplained) {
    MaskError e = error("0-N");
    EXPECT_EQ(e.token(), "N");
    EXPECT_EQ(e.position(), 2u);
    e = error("N");
    EXPECT_EQ(e.token(), "N");
    EXPECT_NE(e.reason().find("'N'"), std::string::npos);
    e = error("all:1/2");
    EXPECT_EQ(e.token(), "all:1/2");
    EXPECT_NE(e.reason().find("'all'"), std::string::npos);
}

TEST(SelectorWithoutSysfs, HandBuiltMachineState) {
    MachineState m;
    m.present = CpuSet::range(0, 3);
    m.topology[0] = CpuTopology{0, 0, 0, 0, of({0, 1})};
    m.topology[1] = CpuTopology{0, 0, 0, 0, of({0, 1})};
    m.topology[2] = CpuTopology{1, 1, 0, 1, of({2, 3})};
    m.topology[3] = CpuTopology{1, 1, 0, 1, of({2, 3})};
    EXPECT_EQ(select_mask("die:1", m).cpus, of({2, 3}));
    EXPECT_EQ(select_mask("smt", m).cpus, of({1, 3}));
    EXPECT_EQ(select_mask("all", m).cpus, CpuSet::range(0, 3));
    EXPECT_THROW(select_mask("all", MachineState{}).cpus, MaskError);
}

}  // namespace
}  // namespace cpuhpd
