#include "planner.h"

#include <gtest/gtest.h>

#include "engine_fixture.h"

namespace cpuhpd::test {
namespace {

// 2 packages x 4 cores x 2 threads: CPUs 0-7 are first threads, 8-15 their siblings.
TEST(Planner, OfflineOrderPutsSiblingsBeforePrimaries) {
    FakeMachine m;
    const Plan plan =
        make_plan(Action::Offline, set({3, 4, 11, 12}), StrategyKind::Auto, m.state(), m.settings);
    EXPECT_EQ(plan.strategy, StrategyKind::PerCpu);
    EXPECT_EQ(plan.order, (std::vector<unsigned>{12, 11, 4, 3}));
}

TEST(Planner, OnlineOrderPutsPrimariesFirst) {
    FakeMachine m;
    for (unsigned c : {3u, 4u, 11u, 12u}) {
        m.fs.set_online(c, false);
    }
    const Plan plan =
        make_plan(Action::Online, set({3, 4, 11, 12}), StrategyKind::Auto, m.state(), m.settings);
    EXPECT_EQ(plan.order, (std::vector<unsigned>{3, 4, 11, 12}));
}

TEST(Planner, SkipsCpusAlreadyInTargetState) {
    FakeMachine m;
    m.fs.set_online(5, false);
    const Plan plan =
        make_plan(Action::Offline, set({4, 5, 6}), StrategyKind::Auto, m.state(), m.settings);
    EXPECT_EQ(plan.to_change, set({4, 6}));
    EXPECT_EQ(plan.order, (std::vector<unsigned>{6, 4}));
}

// Issue 9: smt/control switches SMT off for the whole machine, after which bringing one
// sibling back fails with EPERM. A numeric mask that happens to equal every secondary
// thread ("offline 8-15") must not pick it; only a forced smt strategy does.
TEST(Planner, NeverChoosesSmtControlUnlessForced) {
    FakeMachine m;
    const MachineState state = m.state();
    EXPECT_EQ(state.smt_secondaries(), CpuSet::range(8, 15));
    EXPECT_EQ(
        make_plan(Action::Offline, CpuSet::range(8, 15), StrategyKind::Auto, state, m.settings)
            .strategy,
        StrategyKind::PerCpu);
    EXPECT_EQ(make_plan(Action::Offline, CpuSet::range(8, 15), StrategyKind::Smt, state, m.settings)
                  .strategy,
              StrategyKind::Smt);
    EXPECT_EQ(make_plan(Action::Online, CpuSet::range(8, 15), StrategyKind::Auto, state, m.settings)
                  .strategy,
              StrategyKind::PerCpu);
}

TEST(Planner, ChoosesBulkWhenTheKernelOffersIt) {
    FakeTopology topo;
    topo.bulk = true;
    FakeMachine m(topo);
    const MachineState state = m.state();
    EXPECT_TRUE(state.bulk_writable);
    EXPECT_EQ(
        make_plan(Action::Offline, CpuSet::range(8, 15), StrategyKind::Auto, state, m.settings)
            .strategy,
        StrategyKind::Bulk);
    EXPECT_EQ(
        make_plan(Action::Offline, set({4}), StrategyKind::PerCpu, state, m.settings).strategy,
        StrategyKind::PerCpu);
}

TEST(Planner, ExpediteFollowsTheSetting) {
    EngineSettings s;
    FakeMachine m({}, s);
    EXPECT_TRUE(make_plan(Action::Offline, set({4, 5}), StrategyKind::Auto, m.state(), s).expedite);
    EXPECT_FALSE(make_plan(Action::Offline, set({4}), StrategyKind::Auto, m.state(), s).expedite);
    s.expedite = Expedite::Always;
    EXPECT_TRUE(make_plan(Action::Offline, set({4}), StrategyKind::Auto, m.state(), s).expedite);
    s.expedite = Expedite::Never;
    EXPECT_FALSE(
        make_plan(Action::Offline, set({4, 5}), StrategyKind::Auto, m.state(), s).expedite);
}

// The bulk interface expedites its batch in the kernel: no rcu_expedited window around it,
// unless the setting asks for one.
TEST(Planner, AutoExpediteLeavesBulkBatchesToTheKernel) {
    EngineSettings s;
    FakeTopology t;
    t.bulk = true;
    FakeMachine m(t, s);
    auto state = m.state();
    EXPECT_FALSE(
        make_plan(Action::Offline, CpuSet::range(8, 15), StrategyKind::Auto, state, s).expedite);
    EXPECT_TRUE(
        make_plan(Action::Offline, CpuSet::range(8, 15), StrategyKind::PerCpu, state, s).expedite);
    s.expedite = Expedite::Always;
    EXPECT_TRUE(
        make_plan(Action::Offline, CpuSet::range(8, 15), StrategyKind::Auto, state, s).expedite);
}

Refusal refusal_of(FakeMachine& m, const Request& r, const CpuSet& leaving = {}) {
    try {
        validate(r, m.state(), m.settings, leaving);
    } catch (const Refusal& refusal) {
        return refusal;
    }
    ADD_FAILURE() << "request " << r.mask << " was not refused";
    return Refusal(RefusalKind::Busy, "none");
}

TEST(Validate, RefusesCpusNotPresent) {
    FakeMachine m;
    const Refusal r = refusal_of(m, m.request(Action::Offline, set({4, 99})));
    EXPECT_EQ(r.kind(), RefusalKind::InvalidMask);
    EXPECT_NE(std::string(r.what()).find("99"), std::string::npos);
}

TEST(Validate, RefusesProtectedCpusGoingOffline) {
    FakeMachine m;
    const Refusal r = refusal_of(m, m.request(Action::Offline, set({0, 4})));
    EXPECT_EQ(r.kind(), RefusalKind::ProtectedCpu);
    EXPECT_EQ(r.cpus(), set({0}));
    EXPECT_NO_THROW(validate(m.request(Action::Online, set({0})), m.state(), m.settings));
}

TEST(Validate, RefusesCpusWithoutOnlineFile) {
    EngineSettings s;
    s.protected_cpus = {};
    FakeMachine m({}, s);
    const Refusal r = refusal_of(m, m.request(Action::Offline, set({0})));
    EXPECT_EQ(r.kind(), RefusalKind::NotHotpluggable);
}

TEST(Validate, RefusesLeavingFewerThanMinOnline) {
    EngineSettings s;
    s.min_online = 4;
    FakeMachine m({}, s);
    EXPECT_NO_THROW(validate(m.request(Action::Offline, CpuSet::range(4, 15)), m.state(), s));
    EXPECT_EQ(refusal_of(m, m.request(Action::Offline, CpuSet::range(3, 15))).kind(),
              RefusalKind::TooFewOnline);
    // CPUs that earlier requests of the batch take count too.
    EXPECT_EQ(refusal_of(m, m.request(Action::Offline, set({3})), CpuSet::range(4, 15)).kind(),
              RefusalKind::TooFewOnline);
}

TEST(Validate, RefusesForcedStrategiesTheKernelLacks) {
    FakeMachine m;
    EXPECT_EQ(refusal_of(m, m.request(Action::Offline, set({4}), Mode::Atomic, StrategyKind::Bulk))
                  .kind(),
              RefusalKind::NotSupported);
    EXPECT_EQ(
        refusal_of(m, m.request(Action::Offline, set({8, 9}), Mode::Atomic, StrategyKind::Smt))
            .kind(),
        RefusalKind::NotSupported);
    EXPECT_NO_THROW(
        validate(m.request(Action::Offline, CpuSet::range(8, 15), Mode::Atomic, StrategyKind::Smt),
                 m.state(), m.settings));
}

TEST(Validate, RefusesTheEmptyMask) {
    FakeMachine m;
    EXPECT_EQ(refusal_of(m, m.request(Action::Offline, CpuSet{})).kind(), RefusalKind::InvalidMask);
}

}  // namespace
}  // namespace cpuhpd::test

namespace cpuhpd::test {
namespace {

TEST(NarrowToEligible, SelectorsLeaveOutProtectedAndFixedCpusGoingOffline) {
    FakeMachine m;
    Request r = m.request(Action::Offline, CpuSet::range(0, 15));
    r.selected_only = CpuSet::range(0, 15);  // "all"
    narrow_to_eligible(r, m.state(), m.settings);
    EXPECT_EQ(r.cpus, CpuSet::range(1, 15));
}

TEST(NarrowToEligible, CpusNamedByNumberStayAndAreRefused) {
    FakeMachine m;
    Request r = m.request(Action::Offline, CpuSet::range(0, 15));
    r.selected_only = CpuSet::range(4, 15);  // "0-3 package:1"-like: 0 named by number
    narrow_to_eligible(r, m.state(), m.settings);
    EXPECT_EQ(r.cpus, CpuSet::range(0, 15));
    EXPECT_THROW(validate(r, m.state(), m.settings), Refusal);
}

TEST(NarrowToEligible, OnlineRequestsAreLeftAlone) {
    FakeMachine m;
    Request r = m.request(Action::Online, CpuSet::range(0, 15));
    r.selected_only = CpuSet::range(0, 15);
    narrow_to_eligible(r, m.state(), m.settings);
    EXPECT_EQ(r.cpus, CpuSet::range(0, 15));
}

TEST(Planner, BulkOfflineOrderIsTheKernels) {
    FakeTopology topo;
    topo.bulk = true;
    FakeMachine m(topo);
    const Plan plan =
        make_plan(Action::Offline, set({3, 4, 11, 12}), StrategyKind::Auto, m.state(), m.settings);
    EXPECT_EQ(plan.strategy, StrategyKind::Bulk);
    EXPECT_EQ(plan.order, (std::vector<unsigned>{11, 12, 3, 4}));
}

}  // namespace
}  // namespace cpuhpd::test
