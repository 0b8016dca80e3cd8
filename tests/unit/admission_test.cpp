// resolve(): a caller's change, as the adaptor hands it over, turned into a Request against
// one read of the machine.
#include "admission.h"

#include <gtest/gtest.h>

#include "cpulist.h"
#include "engine_fixture.h"

namespace cpuhpd::test {
namespace {

ChangeAsk ask(Action action, std::string mask) {
    ChangeAsk a;
    a.action = action;
    a.mask = std::move(mask);
    a.caller = ":1.7";
    return a;
}

TEST(Admission, NumberedCpusAreNamedAndSelectorCpusAreSelectedOnly) {
    FakeMachine m;
    const Request r = resolve(ask(Action::Offline, "4 package:1"), m.state(), m.settings);
    EXPECT_EQ(r.action, Action::Offline);
    EXPECT_EQ(r.mask, "4 package:1");
    EXPECT_EQ(r.caller, ":1.7");
    // Package 1 of 2x4x2 is cores 4-7 and their siblings 12-15.
    EXPECT_EQ(r.cpus, set({4, 5, 6, 7, 12, 13, 14, 15}));
    EXPECT_EQ(r.selected_only, set({5, 6, 7, 12, 13, 14, 15}));
    EXPECT_EQ(r.strategy, StrategyKind::Auto);
    EXPECT_EQ(r.mode, Mode::Atomic);
    EXPECT_FALSE(r.dry_run);
}

// Only a caller who asked for SMT gets smt/control: a numeric mask equal to every
// secondary thread switched SMT off for the whole machine (issue 9).
TEST(Admission, SmtControlOnlyForTheSmtSelectorOrSetSmt) {
    FakeMachine m;
    const MachineState state = m.state();
    EXPECT_EQ(resolve(ask(Action::Offline, "8-15"), state, m.settings).strategy,
              StrategyKind::Auto);
    EXPECT_EQ(resolve(ask(Action::Offline, "smt"), state, m.settings).strategy, StrategyKind::Smt);
    ChangeAsk set_smt = ask(Action::Offline, "smt");
    set_smt.smt_siblings = true;
    const Request r = resolve(set_smt, state, m.settings);
    EXPECT_EQ(r.strategy, StrategyKind::Smt);
    EXPECT_EQ(r.cpus, CpuSet::range(8, 15));
    EXPECT_EQ(r.selected_only, CpuSet::range(8, 15));
}

TEST(Admission, OptionsOverrideTheDefaults) {
    EngineSettings settings;
    settings.default_mode = Mode::BestEffort;
    FakeMachine m({}, settings);
    ChangeAsk a = ask(Action::Online, "smt");
    EXPECT_EQ(resolve(a, m.state(), m.settings).mode, Mode::BestEffort);
    a.options.mode = Mode::Atomic;
    a.options.strategy = StrategyKind::PerCpu;
    a.options.dry_run = true;
    const Request r = resolve(a, m.state(), m.settings);
    EXPECT_EQ(r.mode, Mode::Atomic);
    EXPECT_EQ(r.strategy, StrategyKind::PerCpu);
    EXPECT_TRUE(r.dry_run);
}

TEST(Admission, SetSmtOnAMachineWithoutSmtIsNotSupported) {
    FakeTopology topo;
    topo.threads_per_core = 1;
    topo.smt_control = "notsupported";
    FakeMachine m(topo);
    ChangeAsk a = ask(Action::Offline, "smt");
    a.smt_siblings = true;
    try {
        resolve(a, m.state(), m.settings);
        FAIL() << "resolved SetSmt on a machine without SMT";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::NotSupported);
        EXPECT_STREQ(refusal.what(), "this machine has no SMT sibling threads");
    }
}

TEST(Admission, ABadMaskIsAMaskError) {
    FakeMachine m;
    EXPECT_THROW(resolve(ask(Action::Offline, "4-"), m.state(), m.settings), MaskError);
    EXPECT_THROW(resolve(ask(Action::Offline, "package:9"), m.state(), m.settings), MaskError);
}

}  // namespace
}  // namespace cpuhpd::test
