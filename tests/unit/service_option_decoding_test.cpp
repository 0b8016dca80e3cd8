// read_request_options: the a{sv} options of a change call, read from the message as it
// arrived (so a key given twice is seen) or, without a message, from the glue's map.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "option_decoding.h"

namespace sdbus {
// Exported by libsdbus-c++ 1.2 (Variant builds its messages with it) but declared only in
// its private headers; the one way to build a message without a bus.
PlainMessage createPlainMessage();
}  // namespace sdbus

namespace cpuhpd {
namespace {

using Options = std::map<std::string, sdbus::Variant>;
using Entries = std::vector<std::pair<std::string, sdbus::Variant>>;

// A sealed message with the arguments of Offline/Online/SetSmt: (s, a{sv}), the entries in
// the order given, duplicates included.
sdbus::PlainMessage change_call(const Entries& entries) {
    sdbus::PlainMessage message = sdbus::createPlainMessage();
    message << std::string("4-7");
    message.openContainer("{sv}");
    for (const auto& [key, value] : entries) {
        message.openDictEntry("sv");
        message << key << value;
        message.closeDictEntry();
    }
    message.closeContainer();
    message.seal();
    return message;
}

std::string error_of(const sdbus::Message* message, const Options& fallback = {}) {
    try {
        read_request_options(message, fallback);
    } catch (const OptionError& error) {
        return error.what();
    }
    ADD_FAILURE() << "no OptionError";
    return {};
}

std::string error_of(const Options& options) {
    return error_of(nullptr, options);
}

TEST(ServiceOptionDecoding, DecodesTheKnownKeysFromTheMessage) {
    const auto message = change_call({{"mode", sdbus::Variant(std::string("best-effort"))},
                                      {"strategy", sdbus::Variant(std::string("bulk"))},
                                      {"dry_run", sdbus::Variant(true)}});
    const RequestOptions options = read_request_options(&message, {});
    EXPECT_EQ(options.mode, Mode::BestEffort);
    EXPECT_EQ(options.strategy, StrategyKind::Bulk);
    EXPECT_TRUE(options.dry_run);
}

TEST(ServiceOptionDecoding, TheMessageWinsOverTheMap) {
    const auto message = change_call({{"dry_run", sdbus::Variant(false)}});
    const RequestOptions options =
        read_request_options(&message, {{"dry_run", sdbus::Variant(true)}});
    EXPECT_FALSE(options.dry_run);
}

TEST(ServiceOptionDecoding, AnEmptyDictionaryIsTheDefaults) {
    const auto message = change_call({});
    const RequestOptions options = read_request_options(&message, {});
    EXPECT_FALSE(options.mode.has_value());
    EXPECT_FALSE(options.strategy.has_value());
    EXPECT_FALSE(options.dry_run);
}

// Issue 9: the map the glue builds keeps one of two equal keys, so a caller could send
// "dry_run=true, dry_run=false" and have the second taken.
TEST(ServiceOptionDecoding, AKeyGivenTwiceInTheMessageIsRefused) {
    const auto message =
        change_call({{"dry_run", sdbus::Variant(true)}, {"dry_run", sdbus::Variant(false)}});
    EXPECT_EQ(error_of(&message, {{"dry_run", sdbus::Variant(false)}}),
              "option 'dry_run' is given more than once");
}

TEST(ServiceOptionDecoding, ReadsTheMessageFromItsStartWhereverItsReadPositionIs) {
    auto message = change_call({{"mode", sdbus::Variant(std::string("best-effort"))}});
    // The glue has read the arguments already.
    std::string mask;
    Options options;
    message >> mask >> options;
    ASSERT_EQ(mask, "4-7");
    EXPECT_EQ(read_request_options(&message, {}).mode, Mode::BestEffort);
    // And reading leaves it readable again.
    EXPECT_EQ(read_request_options(&message, {}).mode, Mode::BestEffort);
}

TEST(ServiceOptionDecoding, AnOversizedDictionaryIsRefusedAfterReadingOneEntryTooMany) {
    Entries many;
    for (int i = 0; i < 1000; ++i) {
        many.emplace_back("key" + std::to_string(i), sdbus::Variant(true));
    }
    const auto message = change_call(many);
    EXPECT_EQ(error_of(&message), "too many options (17; at most 16)");
}

// Unreachable through the generated glue, which checks the signature first. sd-bus reports
// the missing container itself (System.Error.ENXIO), not as the InvalidArgs the adaptor
// would give when an array ended early; either way the caller gets an error, no defaults.
TEST(ServiceOptionDecoding, AMessageWithoutADictionaryIsAnError) {
    sdbus::PlainMessage message = sdbus::createPlainMessage();
    message << std::string("4-7");
    message.seal();
    EXPECT_THROW(read_request_options(&message, {{"dry_run", sdbus::Variant(true)}}), sdbus::Error);
}

TEST(ServiceOptionDecoding, WithoutAMessageTheMapIsDecoded) {
    const RequestOptions options =
        read_request_options(nullptr, {{"mode", sdbus::Variant(std::string("atomic"))},
                                       {"strategy", sdbus::Variant(std::string("per-cpu"))}});
    EXPECT_EQ(options.mode, Mode::Atomic);
    EXPECT_EQ(options.strategy, StrategyKind::PerCpu);
    EXPECT_FALSE(options.dry_run);
}

TEST(ServiceOptionDecoding, UnknownKeysAreRefusedNamingThem) {
    EXPECT_EQ(error_of({{"forced", sdbus::Variant(true)}}),
              "unknown option 'forced' (known: mode, strategy, dry_run, refuse_pinned, force, "
              "restore_affinity)");
    EXPECT_EQ(error_of({{"Mode", sdbus::Variant(std::string("atomic"))}}),
              "unknown option 'Mode' (known: mode, strategy, dry_run, refuse_pinned, force, "
              "restore_affinity)");
}

TEST(ServiceOptionDecoding, WrongVariantTypesAreRefusedNamingTheTypeSent) {
    EXPECT_EQ(error_of({{"dry_run", sdbus::Variant(std::uint32_t{1})}}),
              "option 'dry_run' must be a boolean (b), not u");
    EXPECT_EQ(error_of({{"dry_run", sdbus::Variant(std::string("true"))}}),
              "option 'dry_run' must be a boolean (b), not s");
    EXPECT_EQ(error_of({{"mode", sdbus::Variant(std::vector<std::string>{"atomic"})}}),
              "option 'mode' must be a string (s), not as");
    EXPECT_EQ(error_of({{"strategy", sdbus::Variant(std::int32_t{0})}}),
              "option 'strategy' must be a string (s), not i");
}

TEST(ServiceOptionDecoding, BadValuesAreRefusedNamingTheChoices) {
    EXPECT_EQ(error_of({{"mode", sdbus::Variant(std::string("fast"))}}),
              "invalid mode 'fast': expected atomic or best-effort");
    EXPECT_EQ(error_of({{"strategy", sdbus::Variant(std::string(""))}}),
              "invalid strategy '': expected auto, bulk, smt or per-cpu");
}

}  // namespace
}  // namespace cpuhpd
