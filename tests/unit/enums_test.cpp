// The enum name tables: complete, unambiguous, and what options, config and messages print.
#include "enums.h"

#include <gtest/gtest.h>

#include <set>

#include "config.h"

namespace cpuhpd {
namespace {

// Every value of the enum (listed by the test, not taken from the table) has a name, and
// no two values share one.
template <typename E, std::size_t N>
void expect_complete(const EnumNames<E, N>& names, std::initializer_list<E> values) {
    ASSERT_EQ(values.size(), N);
    std::set<std::string_view> seen;
    for (const E value : values) {
        const auto name = name_of(names, value);
        EXPECT_NE(name, "unknown");
        EXPECT_TRUE(seen.insert(name).second) << name;
        EXPECT_EQ(find_by_name(names, name), value) << name;
    }
}

TEST(EnumNames, EveryValueHasOneName) {
    expect_complete(kActionNames, {Action::Offline, Action::Online});
    expect_complete(kModeNames, {Mode::Atomic, Mode::BestEffort});
    expect_complete(kExpediteNames, {Expedite::Auto, Expedite::Always, Expedite::Never});
    expect_complete(kStrategyNames, {StrategyKind::Auto, StrategyKind::Bulk, StrategyKind::Smt,
                                     StrategyKind::PerCpu});
    expect_complete(kRefusalNames,
                    {RefusalKind::InvalidMask, RefusalKind::ProtectedCpu,
                     RefusalKind::NotHotpluggable, RefusalKind::TooFewOnline,
                     RefusalKind::NotSupported, RefusalKind::Busy, RefusalKind::KernelError,
                     RefusalKind::NoSuchBatch, RefusalKind::Held, RefusalKind::NoSuchHold,
                     RefusalKind::NoSuchProfile, RefusalKind::Pinned, RefusalKind::EmptyPartition});
    expect_complete(kCpuOutcomeNames,
                    {CpuOutcome::Changed, CpuOutcome::Unchanged, CpuOutcome::Failed,
                     CpuOutcome::RolledBack, CpuOutcome::Refused, CpuOutcome::Cancelled});
    expect_complete(kOutcomeNames, {Outcome::Ok, Outcome::Failed, Outcome::Partial});
    expect_complete(kRecoveryPolicyNames,
                    {RecoveryPolicy::Auto, RecoveryPolicy::Rollback, RecoveryPolicy::Keep});
    expect_complete(kStopPolicyNames, {StopPolicy::Cancel, StopPolicy::Finish});
    expect_complete(kLogLevelNames,
                    {LogLevel::Debug, LogLevel::Info, LogLevel::Warning, LogLevel::Error});
}

TEST(Strategy, NamesRoundTrip) {
    EXPECT_EQ(to_string(StrategyKind::PerCpu), "per-cpu");
    EXPECT_EQ(find_by_name(kStrategyNames, "smt"), StrategyKind::Smt);
    EXPECT_EQ(find_by_name(kStrategyNames, "percpu"), std::nullopt);
    EXPECT_EQ(find_by_name(kStrategyNames, "Bulk"), std::nullopt);
    EXPECT_EQ(find_by_name(kStrategyNames, ""), std::nullopt);
}

TEST(EnumNames, TheWireNamesStayAsDocumented) {
    // These are D-Bus and config values: changing one breaks callers.
    EXPECT_EQ(to_string(Mode::BestEffort), "best-effort");
    EXPECT_EQ(to_string(Expedite::Never), "never");
    EXPECT_EQ(to_string(CpuOutcome::RolledBack), "rolled-back");
    EXPECT_EQ(to_string(Outcome::Partial), "partial");
    EXPECT_EQ(to_string(RefusalKind::TooFewOnline), "TooFewOnline");
    EXPECT_EQ(to_string(Action::Online), "online");
    EXPECT_EQ(to_string(CpuOutcome::Cancelled), "cancelled");
    EXPECT_EQ(to_string(RefusalKind::NoSuchBatch), "NoSuchBatch");
    EXPECT_EQ(to_string(StopPolicy::Finish), "finish");
}

TEST(EnumNames, AlternativesReadAsAList) {
    EXPECT_EQ(alternatives(kModeNames), "atomic or best-effort");
    EXPECT_EQ(alternatives(kStrategyNames), "auto, bulk, smt or per-cpu");
    EXPECT_EQ(names_in(kExpediteNames), (std::vector<std::string>{"auto", "always", "never"}));
}

}  // namespace
}  // namespace cpuhpd
