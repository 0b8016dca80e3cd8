// decode_options: the a{sv} options of Offline, Online and SetSmt as they arrived.
#include "options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "input.h"

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
              "unknown option 'nope\\x1b' (known: mode, strategy, dry_run)");
    EXPECT_EQ(error_of({OptionEntry{"dry_run", std::monostate{}, "u"}}),
              "option 'dry_run' must be a boolean (b), not u");
    EXPECT_EQ(error_of({flag("mode", true)}), "option 'mode' must be a string (s), not b");
    EXPECT_EQ(error_of({text("strategy", "fast\xc3\xa0")}),
              "invalid strategy 'fast\\xc3\\xa0': expected auto, bulk, smt or per-cpu");
    EXPECT_EQ(error_of({text("mode", std::string(1000, 'a'))}).size(),
              std::string("invalid mode '': expected atomic or best-effort").size() + 48 +
                  std::string("...(1000 bytes)").size());
}

}  // namespace
}  // namespace cpuhpd
