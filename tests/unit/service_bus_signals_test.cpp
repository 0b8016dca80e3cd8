// The signal decoders and the sender check every signal handler of the daemon goes through
// (bus_signals.h): well-formed bodies decode, anything else is refused without throwing.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "bus_signals.h"

namespace sdbus {
// Exported by libsdbus-c++ 1.2 (Variant builds its messages with it) but declared only in
// its private headers; the one way to build a message without a bus.
PlainMessage createPlainMessage();
}  // namespace sdbus

namespace cpuhpd {
namespace {

template <typename... Args>
sdbus::PlainMessage body(const Args&... args) {
    sdbus::PlainMessage message = sdbus::createPlainMessage();
    (message << ... << args);
    message.seal();
    message.rewind(true);
    return message;
}

TEST(NameOwnerChangedDecoding, ThreeStringsDecode) {
    auto m = body(std::string(":1.3"), std::string(":1.3"), std::string());
    const auto change = decode_name_owner_changed(m);
    ASSERT_TRUE(change);
    EXPECT_EQ(change->name, ":1.3");
    EXPECT_EQ(change->old_owner, ":1.3");
    EXPECT_EQ(change->new_owner, "");
}

TEST(NameOwnerChangedDecoding, AnythingElseIsRefused) {
    auto one = body(std::string(":1.3"));
    EXPECT_FALSE(decode_name_owner_changed(one));
    auto number = body(std::uint32_t{7});
    EXPECT_FALSE(decode_name_owner_changed(number));
    auto mixed = body(std::string("a"), std::uint32_t{7}, std::string("c"));
    EXPECT_FALSE(decode_name_owner_changed(mixed));
    auto empty = sdbus::createPlainMessage();
    empty.seal();
    EXPECT_FALSE(decode_name_owner_changed(empty));
}

constexpr const char* kPpd = "net.hadess.PowerProfiles";

TEST(PropertyChangeDecoding, TheStringValueAndTheInvalidationAreRead) {
    auto changed = body(std::string(kPpd),
                        std::map<std::string, sdbus::Variant>{
                            {"ActiveProfile", sdbus::Variant(std::string("power-saver"))}},
                        std::vector<std::string>{});
    const auto change = decode_string_property_change(changed, kPpd, "ActiveProfile");
    ASSERT_TRUE(change);
    EXPECT_EQ(change->value, "power-saver");
    EXPECT_FALSE(change->invalidated);

    auto invalidated = body(std::string(kPpd), std::map<std::string, sdbus::Variant>{},
                            std::vector<std::string>{"ActiveProfile"});
    const auto again = decode_string_property_change(invalidated, kPpd, "ActiveProfile");
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->value);
    EXPECT_TRUE(again->invalidated);

    auto other = body(std::string(kPpd),
                      std::map<std::string, sdbus::Variant>{{"Other", sdbus::Variant(true)}},
                      std::vector<std::string>{});
    const auto unrelated = decode_string_property_change(other, kPpd, "ActiveProfile");
    ASSERT_TRUE(unrelated);
    EXPECT_FALSE(unrelated->value);
    EXPECT_FALSE(unrelated->invalidated);
}

TEST(PropertyChangeDecoding, WrongInterfaceTypeOrShapeIsRefused) {
    auto wrong_interface = body(
        std::string("org.example"),
        std::map<std::string, sdbus::Variant>{{"ActiveProfile", sdbus::Variant(std::string("x"))}},
        std::vector<std::string>{});
    EXPECT_FALSE(decode_string_property_change(wrong_interface, kPpd, "ActiveProfile"));
    auto number = body(std::string(kPpd),
                       std::map<std::string, sdbus::Variant>{{"ActiveProfile", sdbus::Variant(3U)}},
                       std::vector<std::string>{});
    EXPECT_FALSE(decode_string_property_change(number, kPpd, "ActiveProfile"));
    auto truncated = body(std::string(kPpd));
    EXPECT_FALSE(decode_string_property_change(truncated, kPpd, "ActiveProfile"));
}

TEST(SenderCheck, OnlyTheExpectedConnectionMaySend) {
    EXPECT_EQ(refuse_sender("org.freedesktop.DBus", kBusDriver), "");
    EXPECT_EQ(refuse_sender(":1.8", ":1.8"), "");
    EXPECT_EQ(refuse_sender(":1.9", kBusDriver), "sent by :1.9, not by org.freedesktop.DBus");
    EXPECT_EQ(refuse_sender("", ":1.8"), "sent by no sender, not by :1.8");
    EXPECT_EQ(refuse_sender(":1.8", ""), "nobody is expected to send it now (sender :1.8)");
    // A hostile sender is quoted short and printable.
    const std::string why = refuse_sender(std::string(1000, 'x') + "\x1b", kBusDriver);
    EXPECT_LT(why.size(), 320U);
    EXPECT_NE(why.find("...(1001 bytes)"), std::string::npos);
}

TEST(GuardedHandler, NothingEscapesAndOnlyTheExpectedSenderIsServed) {
    int calls = 0;
    auto handler = guarded_handler(
        SignalKind::HolderNameOwnerChanged, "test", [] { return std::string(); },
        [&](sdbus::Message&) {
            ++calls;
            throw std::runtime_error("boom");
        });
    // A plain message has no sender: refused before the body runs, and nothing thrown.
    auto m = body(std::string("x"));
    EXPECT_NO_THROW(handler(m));
    EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace cpuhpd
