#include "holds.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine_fixture.h"

namespace cpuhpd::test {
namespace {

Hold hold_of(const std::string& holder, const CpuSet& cpus, Action state = Action::Offline) {
    Hold h;
    h.holder = holder;
    h.who = "live-update";
    h.why = "kernel update";
    h.state = state;
    h.cpus = cpus;
    return h;
}

Request request_of(const std::string& caller, Action action, const CpuSet& cpus,
                   const CpuSet& selected_only = {}) {
    Request r;
    r.caller = caller;
    r.action = action;
    r.cpus = cpus;
    r.mask = cpus.to_string();
    r.selected_only = selected_only;
    return r;
}

TEST(HoldTable, AnotherCallerNamingAHeldCpuIsRefusedWithTheHoldNamed) {
    HoldTable table;
    const auto id = table.take(hold_of(":1.5", CpuSet::range(4, 7)));
    Request r = request_of(":1.9", Action::Online, CpuSet::range(6, 9));
    try {
        table.admit(r);
        FAIL() << "a held CPU was admitted";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::Held);
        EXPECT_EQ(refusal.cpus(), CpuSet::range(6, 7));
        const std::string text = refusal.what();
        EXPECT_NE(text.find("CPU 6-7 is held: hold " + std::to_string(id) + " by live-update"),
                  std::string::npos)
            << text;
        EXPECT_NE(text.find("(kernel update), offline since "), std::string::npos) << text;
    }
    EXPECT_EQ(r.cpus, CpuSet::range(6, 9));  // untouched when refused
}

TEST(HoldTable, TheHolderMayChangeItsOwnCpus) {
    HoldTable table;
    table.take(hold_of(":1.5", CpuSet::range(4, 7)));
    Request r = request_of(":1.5", Action::Online, CpuSet::range(4, 5));
    EXPECT_NO_THROW(table.admit(r));
    EXPECT_EQ(r.cpus, CpuSet::range(4, 5));
}

TEST(HoldTable, HeldCpusThatOnlyASelectorBroughtInAreLeftOut) {
    HoldTable table;
    table.take(hold_of(":1.5", CpuSet::range(4, 7)));
    Request r = request_of(":1.9", Action::Online, CpuSet::range(1, 15), CpuSet::range(1, 15));
    table.admit(r);
    EXPECT_EQ(r.cpus, CpuSet::range(1, 3) | CpuSet::range(8, 15));
}

// "online package:1" while package 1 is held: nothing left, so Held, not an empty mask.
TEST(HoldTable, ASelectorThatNamesOnlyHeldCpusIsRefusedWithTheHold) {
    HoldTable table;
    table.take(hold_of(":1.5", CpuSet::range(4, 7)));
    Request r = request_of(":1.9", Action::Online, CpuSet::range(4, 7), CpuSet::range(4, 7));
    r.mask = "package:1";
    try {
        table.admit(r);
        FAIL() << "an all-held selector was admitted";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::Held);
        EXPECT_EQ(refusal.cpus(), CpuSet::range(4, 7));
        EXPECT_NE(std::string(refusal.what())
                      .find("every CPU of 'package:1' that could change is held (CPU 4-7; hold "),
                  std::string::npos)
            << refusal.what();
    }
}

TEST(HoldTable, RequestsWithoutACallerAreCheckedToo) {
    HoldTable table;
    table.take(hold_of("", CpuSet::range(4, 7)));  // even a hold whose holder has no name
    Request r = request_of("", Action::Online, CpuSet::single(4));
    EXPECT_THROW(table.admit(r), Refusal);
}

TEST(HoldTable, OverlappingHoldsAreRefusedWhateverTheirState) {
    HoldTable table;
    table.take(hold_of(":1.5", CpuSet::range(4, 7)));
    for (const Action state : {Action::Offline, Action::Online}) {
        try {
            table.take(hold_of(":1.9", CpuSet::range(7, 8), state));
            FAIL() << "an overlapping hold was taken";
        } catch (const Refusal& refusal) {
            EXPECT_EQ(refusal.kind(), RefusalKind::Held);
            EXPECT_EQ(refusal.cpus(), CpuSet::single(7));
        }
    }
    EXPECT_EQ(table.list().size(), 1u);
    EXPECT_NO_THROW(table.take(hold_of(":1.9", CpuSet::range(8, 9))));
}

TEST(HoldTable, AnEndedHoldFreesItsCpusAndEndsOnce) {
    HoldTable table;
    const auto id = table.take(hold_of(":1.5", CpuSet::range(4, 7)));
    const auto ended = table.end(id);
    ASSERT_TRUE(ended);
    EXPECT_EQ(ended->id, id);
    EXPECT_EQ(ended->cpus, CpuSet::range(4, 7));
    EXPECT_FALSE(table.end(id));
    Request r = request_of(":1.9", Action::Online, CpuSet::range(4, 7));
    EXPECT_NO_THROW(table.admit(r));
    EXPECT_TRUE(table.list().empty());
}

TEST(HoldTable, LimitsHoldsPerHolder) {
    HoldTable table;
    for (unsigned i = 0; i < kMaxHoldsPerHolder; ++i) {
        table.take(hold_of(":1.5", CpuSet::single(i + 1)));
    }
    try {
        table.take(hold_of(":1.5", CpuSet::single(100)));
        FAIL() << "more holds than one holder may have";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::Busy);
    }
    EXPECT_NO_THROW(table.take(hold_of(":1.6", CpuSet::single(100))));
    const auto holds = table.list();
    EXPECT_EQ(std::count_if(holds.begin(), holds.end(),
                            [](const Hold& hold) { return hold.holder == ":1.5"; }),
              static_cast<std::ptrdiff_t>(kMaxHoldsPerHolder));
}

}  // namespace
}  // namespace cpuhpd::test
