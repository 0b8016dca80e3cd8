// Profiles: what applying, switching and reverting one changes (daemon/engine/profiles.h).
#include "profiles.h"

#include <gtest/gtest.h>

#include "cpulist.h"
#include "engine_fixture.h"
#include "request.h"

namespace cpuhpd::test {
namespace {

// 2 packages x 4 cores x 2 threads, one NUMA node per package: package 1 (node 1) is CPUs
// 4-7 and their siblings 12-15; CPU 0 is protected and has no online file.
FakeTopology two_nodes() {
    FakeTopology topo;
    topo.nodes = 2;
    return topo;
}

Profile profile(std::string offline, bool smt_off = false, unsigned per_node = 0) {
    Profile p;
    p.offline = std::move(offline);
    p.smt_off = smt_off;
    p.min_online_per_node = per_node;
    return p;
}

TEST(Profiles, ApplyingTakesTheMaskAndWithSmtOffTheSiblings) {
    FakeMachine m(two_nodes());
    const MachineState state = m.state();
    const auto t = plan_profile(profile("package:1"), std::nullopt, state, m.settings);
    EXPECT_EQ(t.to_offline, set({4, 5, 6, 7, 12, 13, 14, 15}));
    EXPECT_TRUE(t.to_online.empty());
    EXPECT_EQ(t.taken_after, t.to_offline);
    const auto smt = plan_profile(profile("package:1", true), std::nullopt, state, m.settings);
    EXPECT_EQ(smt.to_offline, CpuSet::range(4, 15));
    const auto smt_only = plan_profile(profile("", true), std::nullopt, state, m.settings);
    EXPECT_EQ(smt_only.to_offline, CpuSet::range(8, 15));
}

// Reverting must not bring back what was offline before the profile.
TEST(Profiles, CpusOfflineBeforeAreNeitherTakenNorBroughtBack) {
    FakeMachine m(two_nodes());
    MachineState state = m.state();
    state.online.remove(5);
    const auto t = plan_profile(profile("package:1"), std::nullopt, state, m.settings);
    EXPECT_EQ(t.to_offline, set({4, 6, 7, 12, 13, 14, 15}));
    EXPECT_EQ(t.taken_after, t.to_offline);
    state.online = state.online - t.to_offline;
    const auto back = plan_revert(ActiveProfile{"night", t.taken_after}, state);
    EXPECT_EQ(back.to_online, set({4, 6, 7, 12, 13, 14, 15}));
    EXPECT_TRUE(back.to_offline.empty());
}

TEST(Profiles, SwitchingChangesOnlyWhatDiffers) {
    FakeMachine m(two_nodes());
    MachineState state = m.state();
    const ActiveProfile night{"night", set({4, 5, 6, 7, 12, 13, 14, 15})};
    state.online = state.online - night.taken;
    const auto t = plan_profile(profile("6-7,14-15 2"), night, state, m.settings);
    EXPECT_EQ(t.to_online, set({4, 5, 12, 13}));
    EXPECT_EQ(t.to_offline, set({2}));
    EXPECT_EQ(t.taken_after, set({2, 6, 7, 14, 15}));
}

// A CPU the profile took that someone brought back is taken again; one it took that is
// offline still stays taken.
TEST(Profiles, ReapplyingTakesBackWhatOthersBroughtOnline) {
    FakeMachine m(two_nodes());
    MachineState state = m.state();
    const ActiveProfile night{"night", set({4, 5})};
    state.online.remove(4);  // 5 was brought back by another caller
    const auto t = plan_profile(profile("4-5"), night, state, m.settings);
    EXPECT_TRUE(t.to_online.empty());
    EXPECT_EQ(t.to_offline, set({5}));
    EXPECT_EQ(t.taken_after, set({4, 5}));
}

TEST(Profiles, MinOnlinePerNodeKeepsTheLowestNumberedCpus) {
    FakeMachine m(two_nodes());
    const auto t = plan_profile(profile("all", false, 2), std::nullopt, m.state(), m.settings);
    // Node 0 keeps 0 (protected) and 1; node 1 keeps 4 and 5.
    EXPECT_EQ(t.to_offline, set({2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
}

TEST(Profiles, RefusalsAreThoseOfOffline) {
    FakeMachine m(two_nodes());
    const MachineState state = m.state();
    try {
        plan_profile(profile("0-1"), std::nullopt, state, m.settings);
        FAIL() << "a protected CPU named by number was taken";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::ProtectedCpu);
    }
    EngineSettings settings = m.settings;
    settings.min_online = 4;
    try {
        plan_profile(profile("all"), std::nullopt, state, settings);
        FAIL() << "min_online was not kept";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::TooFewOnline);
    }
    EXPECT_THROW(plan_profile(profile("package:7"), std::nullopt, state, m.settings), MaskError);
}

TEST(Profiles, TheStateFileRoundTrips) {
    const ActiveProfile active{"power-saver", set({4, 5, 6, 7, 12})};
    const std::string text = format_active_profile(active);
    EXPECT_EQ(text, "power-saver\n4-7,12\n");
    const auto back = parse_active_profile(text);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->name, "power-saver");
    EXPECT_EQ(back->taken, active.taken);
    const auto none_taken = parse_active_profile("idle\n\n");
    ASSERT_TRUE(none_taken);
    EXPECT_TRUE(none_taken->taken.empty());
    EXPECT_FALSE(parse_active_profile(""));
    EXPECT_FALSE(parse_active_profile("night\n4-x\n"));
    EXPECT_FALSE(parse_active_profile("night"));
}

}  // namespace
}  // namespace cpuhpd::test
