// decode_options: the a{sv} options of Offline, Online and SetSmt as they arrived.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "input.h"
#include "option_dictionary.h"

namespace cpuhpd {
namespace {

OptionEntry text(std::string key, std::string value) {
    return OptionEntry{std::move(key), std::move(value), "s"};
}

OptionEntry flag(std::string key, bool value) {
    return OptionEntry{std::move(key), value, "b"};
}

std::string error_of(const std::vector<OptionEntry>& entries) {
    try {
        decode_options(entries);
    } catch (const OptionError& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
}

TEST(Options, DecodesTheKnownKeys) {
    const RequestOptions o = decode_options(
        {text("mode", "best-effort"), text("strategy", "per-cpu"), flag("dry_run", true)});
    EXPECT_EQ(o.mode, Mode::BestEffort);
    EXPECT_EQ(o.strategy, StrategyKind::PerCpu);
    EXPECT_TRUE(o.dry_run);
    const RequestOptions none = decode_options({});
    EXPECT_FALSE(none.mode.has_value());
    EXPECT_FALSE(none.strategy.has_value());
    EXPECT_FALSE(none.dry_run);
    EXPECT_FALSE(none.refuse_pinned);
    EXPECT_TRUE(decode_options({flag("refuse_pinned", true)}).refuse_pinned);
    EXPECT_TRUE(none.restore_affinity);  // online gives back what the kernel took, by default
    EXPECT_FALSE(decode_options({flag("restore_affinity", false)}).restore_affinity);
    EXPECT_TRUE(decode_hold_options({flag("refuse_pinned", true)}).refuse_pinned);
    EXPECT_TRUE(decode_profile_options({flag("refuse_pinned", true)}).refuse_pinned);
    EXPECT_FALSE(none.force);
    EXPECT_TRUE(decode_options({flag("force", true)}).force);
    EXPECT_TRUE(decode_hold_options({flag("force", true)}).force);
    EXPECT_TRUE(decode_profile_options({flag("force", true)}).force);
    EXPECT_EQ(error_of({text("refuse_pinned", "yes")}),
              "option 'refuse_pinned' must be a boolean (b), not s");
}

// Issue 9: "dry_run=true, dry_run=false" was a dry run (the first won) and the reverse
// really took CPUs offline. A key given twice is refused, whatever the values.
TEST(Options, AKeyGivenTwiceIsRefusedNamingIt) {
    EXPECT_EQ(error_of({flag("dry_run", true), flag("dry_run", false)}),
              "option 'dry_run' is given more than once");
    EXPECT_EQ(error_of({flag("dry_run", false), flag("dry_run", true)}),
              "option 'dry_run' is given more than once");
    EXPECT_EQ(error_of({text("mode", "atomic"), flag("dry_run", true), text("mode", "atomic")}),
              "option 'mode' is given more than once");
}

TEST(Options, TooManyEntriesAreRefusedBeforeAnyIsRead) {
    std::vector<OptionEntry> many;
    for (std::size_t i = 0; i <= kMaxOptions; ++i) {
        many.push_back(text("x" + std::to_string(i), "y"));
    }
    EXPECT_EQ(error_of(many), "too many options (17; at most 16)");
}

TEST(Options, BadKeysTypesAndValuesAreNamedAndQuotedEscaped) {
    EXPECT_EQ(error_of({text("nope\x1b", "x")}),
              "unknown option 'nope\\x1b' (known: mode, strategy, dry_run, refuse_pinned, force, "
              "restore_affinity)");
    EXPECT_EQ(error_of({OptionEntry{"dry_run", std::monostate{}, "u"}}),
              "option 'dry_run' must be a boolean (b), not u");
    EXPECT_EQ(error_of({flag("mode", true)}), "option 'mode' must be a string (s), not b");
    EXPECT_EQ(error_of({text("strategy", "fast\xc3\xa0")}),
              "invalid strategy 'fast\\xc3\\xa0': expected auto, bulk, smt or per-cpu");
    EXPECT_EQ(error_of({text("mode", std::string(1000, 'a'))}).size(),
              std::string("invalid mode '': expected atomic or best-effort").size() + 48 +
                  std::string("...(1000 bytes)").size());
}

std::string hold_error_of(const std::vector<OptionEntry>& entries) {
    try {
        decode_hold_options(entries);
    } catch (const OptionError& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
}

TEST(HoldOptions, DecodeStrategyAndRestore) {
    const HoldOptions none = decode_hold_options({});
    EXPECT_TRUE(none.restore);
    EXPECT_FALSE(none.strategy);
    const HoldOptions o =
        decode_hold_options({text("strategy", "per-cpu"), flag("restore", false)});
    EXPECT_FALSE(o.restore);
    EXPECT_EQ(o.strategy, StrategyKind::PerCpu);
}

// A hold's change is atomic and real: mode and dry_run are not options of HoldCpus.
TEST(HoldOptions, RefuseModeDryRunAndBadValues) {
    EXPECT_EQ(hold_error_of({text("mode", "best-effort")}),
              "unknown option 'mode' (known: strategy, restore, refuse_pinned, force)");
    EXPECT_EQ(hold_error_of({flag("dry_run", true)}),
              "unknown option 'dry_run' (known: strategy, restore, refuse_pinned, force)");
    EXPECT_EQ(hold_error_of({text("restore", "yes")}),
              "option 'restore' must be a boolean (b), not s");
    EXPECT_EQ(hold_error_of({flag("restore", true), flag("restore", true)}),
              "option 'restore' is given more than once");
    // And the change options do not know restore.
    EXPECT_EQ(error_of({flag("restore", true)}),
              "unknown option 'restore' (known: mode, strategy, dry_run, refuse_pinned, force, "
              "restore_affinity)");
}

TEST(HoldOptions, WhoAndWhyArePrintableAndBounded) {
    EXPECT_NO_THROW(check_hold_names("live-update", "kernel update"));
    EXPECT_NO_THROW(check_hold_names("x", ""));
    EXPECT_THROW(check_hold_names("", "why"), OptionError);
    EXPECT_THROW(check_hold_names(std::string(65, 'a'), ""), OptionError);
    EXPECT_THROW(check_hold_names("a", std::string(257, 'a')), OptionError);
    EXPECT_THROW(check_hold_names("evil\nwho", ""), OptionError);
    try {
        check_hold_names("evil\x1b[2J", "");
        FAIL() << "a control character was accepted";
    } catch (const OptionError& e) {
        EXPECT_STREQ(e.what(), "who 'evil\\x1b[2J' has a control character");
    }
    EXPECT_THROW(check_hold_names("who", "line\nbreak"), OptionError);
}

}  // namespace
}  // namespace cpuhpd
