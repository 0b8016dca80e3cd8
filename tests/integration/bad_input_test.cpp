// Requests the daemon refuses: malformed, oversized or hostile masks, protected CPUs, bad
// options. Each refusal carries its error name and changes nothing.
#include <gtest/gtest.h>

#include <algorithm>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

struct Refused {
    std::string mask;
    std::map<std::string, Option> options;
    std::string error;
    std::vector<std::string> must_mention;  // the message names one of these; empty: no check
};

TEST_F(CpuhpdTest, RefusalsCarryTheirErrorNamesAndTouchNothing) {
    const std::vector<Refused> cases = {
        {"5-1", {}, kInvalidMask, {"5-1"}},
        {"abc", {}, kInvalidMask, {"abc"}},
        {"1,,2", {}, kInvalidMask, {"1,,2", "position 2"}},
        {"package:9x", {}, kInvalidMask, {"package:9x"}},
        {"99", {}, kInvalidMask, {"99"}},
        {"0", {}, kProtectedCpu, {"0"}},
        {"0-3", {}, kProtectedCpu, {"0"}},
        {"1-15", {}, kTooFewOnline, {}},
        {"4", {{"bogus", std::string("x")}}, kInvalidArgs, {"bogus"}},
        {"4", {{"mode", true}}, kInvalidArgs, {"mode"}},
        {"4", {{"dry_run", std::string("yes")}}, kInvalidArgs, {"dry_run"}},
        {"4", {{"strategy", std::uint32_t{3}}}, kInvalidArgs, {"strategy"}},
        {"4", {{"strategy", std::string("bulk")}}, kNotSupported, {}},
    };
    tree().write("kernel/rcu_expedited", "0");
    for (const auto& c : cases) {
        SCOPED_TRACE("Offline('" + c.mask + "')");
        CallResult res = client_->call("Offline", c.mask, c.options);
        ASSERT_FALSE(res.ok) << res.describe();
        EXPECT_EQ(res.error_name, c.error) << res.error_message;
        if (!c.must_mention.empty()) {
            bool named = std::any_of(c.must_mention.begin(), c.must_mention.end(),
                                     [&](const std::string& token) {
                                         return res.error_message.find(token) != std::string::npos;
                                     });
            EXPECT_TRUE(named) << "message does not name '" << c.must_mention.front()
                               << "': " << res.error_message;
        }
        EXPECT_EQ(tree().online_files(), expected_files({}));
        EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
    }
    // Online refusals too: cpu 99 is not present.
    CallResult res = client_->call("Online", "99");
    ASSERT_FALSE(res.ok) << res.describe();
    EXPECT_EQ(res.error_name, kInvalidMask);
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

class CustomProtectedTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.protected_cpus = "15";
        return c;
    }
};

TEST_F(CustomProtectedTest, ProtectedCpusComeFromTheConfigAndCpu0IsNotHotpluggable) {
    EXPECT_EQ(client_->get_string("Protected"), "15");
    CallResult res = client_->call("Offline", "14-15");
    ASSERT_FALSE(res.ok) << res.describe();
    EXPECT_EQ(res.error_name, kProtectedCpu);
    EXPECT_NE(res.error_message.find("15"), std::string::npos) << res.error_message;

    res = client_->call("Offline", "0-1");
    ASSERT_FALSE(res.ok) << res.describe();
    EXPECT_EQ(res.error_name, kNotHotpluggable);
    EXPECT_NE(res.error_message.find("0"), std::string::npos) << res.error_message;
    EXPECT_EQ(tree().online_files(), expected_files({}));

    RunResult r = cpuctl({"offline", "0"});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    // Bringing cpu0 online is not a change: it is online and needs no file.
    res = client_->call("Online", "0");
    ASSERT_TRUE(res.ok) << res.describe();
    ASSERT_TRUE(res.result_for(0)) << res.describe();
    EXPECT_EQ(res.result_for(0)->result, "unchanged") << res.describe();
}

bool printable_ascii(const std::string& text) {
    return std::all_of(text.begin(), text.end(), [](char c) {
        return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
    });
}

// A mask with a UTF-8 character holding byte 0xa0 (no-break space, "à") got no reply at all:
// the error message was invalid UTF-8 and sd-bus dropped the reply. Every refusal now comes
// back, with the input quoted escaped, in ASCII.
TEST_F(CpuhpdTest, MasksWithUtf8OrControlBytesGetAnAsciiErrorReply) {
    for (const std::string& mask :
         {std::string("1\xc2\xa0"
                      "2"),
          std::string("\xc3\xa0"), std::string("1,\x1b[2J"), std::string("1-2:3")}) {
        const CallResult r = client_->call("Offline", mask, {}, 10s);
        ASSERT_FALSE(r.ok) << r.describe();
        EXPECT_EQ(r.error_name, kInvalidMask) << r.describe();
        EXPECT_TRUE(printable_ascii(r.error_message)) << r.error_message;
    }
    CallResult r = client_->call("SetSmt", "\xc3\xa0", {}, 10s);
    EXPECT_EQ(r.error_name, kInvalidArgs) << r.describe();
    EXPECT_TRUE(printable_ascii(r.error_message)) << r.error_message;
    r = client_->call("Offline", "1", {{"mode", std::string("\xc3\xa0\x1b")}}, 10s);
    EXPECT_EQ(r.error_name, kInvalidArgs) << r.describe();
    EXPECT_EQ(r.error_message, "invalid mode '\\xc3\\xa0\\x1b': expected atomic or best-effort");
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

// A 1 MB mask was filled bit by bit on the main thread (seconds; the watchdog waited) and
// echoed whole, twice, in the error. The limits are checked before any work and the reply
// quotes a bounded part.
TEST_F(CpuhpdTest, OversizedMasksAreRefusedBeforeAnyWorkWithABoundedMessage) {
    std::string huge;
    for (int i = 0; i < 150000; ++i) {
        huge += "0-8191 ";
    }
    CallResult r = client_->call("Offline", huge, {}, 30s);
    ASSERT_FALSE(r.ok);
    EXPECT_EQ(r.error_name, kInvalidMask) << r.error_name;
    EXPECT_LT(r.error_message.size(), 300u) << r.error_message.substr(0, 300);
    EXPECT_NE(r.error_message.find("1050000 bytes long; the limit is 65536"), std::string::npos)
        << r.error_message.substr(0, 300);
    // 8193 short regions fit in 64 KiB but are one too many.
    r = client_->call("Offline", many_regions(8193), {{"dry_run", true}}, 30s);
    EXPECT_EQ(r.error_name, kInvalidMask) << r.describe();
    EXPECT_NE(r.error_message.find("8193 regions; the limit is 8192"), std::string::npos);
    // Ranges beyond the possible CPUs are refused before they are filled.
    r = client_->call("Offline", "1,16-8191", {}, 30s);
    EXPECT_EQ(r.error_name, kInvalidMask) << r.describe();
    EXPECT_NE(r.error_message.find("the last possible CPU is 15"), std::string::npos)
        << r.error_message;
    // The largest request that is allowed works.
    r = client_->call("Offline", many_regions(8192, 65536), {{"dry_run", true}}, 30s);
    ASSERT_TRUE(r.ok) << r.describe();
    EXPECT_EQ(r.cpus().size(), 13u);
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

// "dry_run=true, dry_run=false" was a dry run (the first key won) and the reverse really took
// the CPU offline. A key given twice is refused, whatever the order, and nothing changes.
TEST_F(CpuhpdTest, OptionKeysGivenTwiceAreRefusedNamingTheKey) {
    for (const bool first : {true, false}) {
        const CallResult r = client_->call_with_entries(
            "Offline", "4", {{"dry_run", first}, {"dry_run", !first}}, 10s);
        ASSERT_FALSE(r.ok) << r.describe();
        EXPECT_EQ(r.error_name, kInvalidArgs);
        EXPECT_EQ(r.error_message, "option 'dry_run' is given more than once");
    }
    std::vector<std::pair<std::string, Option>> many;
    for (int i = 0; i < 100; ++i) {
        many.emplace_back("k" + std::to_string(i), true);
    }
    const CallResult r = client_->call_with_entries("Offline", "4", many, 10s);
    EXPECT_EQ(r.error_name, kInvalidArgs);
    EXPECT_EQ(r.error_message, "too many options (17; at most 16)");
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

}  // namespace
}  // namespace cpuhpd::itest
