// CpuSet, and cpulist/cpumap parsing and formatting checked against Linux 6.1's
// lib/bitmap.c (bitmap_parselist, bitmap_parse) and lib/vsprintf.c (%*pbl, %*pb).
#include "cpulist.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "cpumap_text.h"
#include "cpuset.h"
#include "sysfs.h"

namespace cpuhpd {
namespace {

CpuSet of(std::vector<unsigned> cpus) {
    return CpuSet::from(cpus);
}

MaskError list_error(std::string_view text, std::size_t base = 0) {
    try {
        CpuSet s = parse_cpulist(text, base);
        ADD_FAILURE() << "'" << text << "' parsed as '" << s.to_string() << "'";
    } catch (const MaskError& e) {
        return e;
    }
    return MaskError("", "", 0);
}

MaskError map_error(std::string_view text, std::size_t base = 0) {
    try {
        CpuSet s = parse_cpumap(text, base);
        ADD_FAILURE() << "'" << text << "' parsed as '" << s.to_string() << "'";
    } catch (const MaskError& e) {
        return e;
    }
    return MaskError("", "", 0);
}

TEST(FormatCpulist, MatchesTheKernelsListFormat) {
    EXPECT_EQ(format_cpulist(CpuSet()), "");
    EXPECT_EQ(format_cpulist(of({0})), "0");
    EXPECT_EQ(format_cpulist(of({0, 1})), "0-1");  // %*pbl prints a pair as a range
    EXPECT_EQ(format_cpulist(of({0, 1, 2, 3, 8, 10, 11, 12, 13, 14, 15})), "0-3,8,10-15");
    EXPECT_EQ(format_cpulist(of({1, 3, 5})), "1,3,5");
    EXPECT_EQ(format_cpulist(CpuSet::range(0, kMaxCpus - 1)), "0-8191");
    EXPECT_EQ(of({4, 5, 9}).to_string(), "4-5,9");
}

TEST(ParseCpulist, Regions) {
    EXPECT_EQ(parse_cpulist("0-3,8,10-15"), parse_cpulist("0,1,2,3,8,10,11,12,13,14,15"));
    EXPECT_EQ(parse_cpulist("5"), of({5}));
    EXPECT_EQ(parse_cpulist("5-5"), of({5}));
    EXPECT_EQ(parse_cpulist("007"), of({7}));  // leading zeros are decimal, as kstrtox base 10
    EXPECT_EQ(parse_cpulist("3,1,2"), CpuSet::range(1, 3));
    EXPECT_EQ(parse_cpulist("0-3,2-5"), CpuSet::range(0, 5));
    EXPECT_EQ(parse_cpulist("8191"), of({8191}));
}

TEST(ParseCpulist, GroupForm) {
    EXPECT_EQ(parse_cpulist("0-31:2/8"), of({0, 1, 8, 9, 16, 17, 24, 25}));
    // The kernel's own example.
    EXPECT_EQ(parse_cpulist("0-1023:2/256"), of({0, 1, 256, 257, 512, 513, 768, 769}));
    EXPECT_EQ(parse_cpulist("0-9:3/4"), of({0, 1, 2, 4, 5, 6, 8, 9}));  // last group cut at 9
    EXPECT_EQ(parse_cpulist("4-7:4/4"), CpuSet::range(4, 7));
    EXPECT_EQ(parse_cpulist("2-12:1/5"), of({2, 7, 12}));
    EXPECT_EQ(parse_cpulist("0-7:1/100000"), of({0}));  // group sizes are not CPU numbers
    EXPECT_EQ(parse_cpulist("0-8191:1/2").count(), 4096u);
}

TEST(ParseCpulist, EmptyInputsAndNewlines) {
    EXPECT_TRUE(parse_cpulist("").empty());
    EXPECT_TRUE(parse_cpulist("\n").empty());
    EXPECT_TRUE(parse_cpulist("   ").empty());
    EXPECT_EQ(parse_cpulist("0-3\n"), CpuSet::range(0, 3));
    EXPECT_EQ(parse_cpulist("0-3\n\n"), CpuSet::range(0, 3));
}

TEST(ParseCpulist, WhitespaceSeparatesRegionsLikeTheKernel) {
    // bitmap_find_region skips isspace() and ',' before each region.
    EXPECT_EQ(parse_cpulist(" 1, 2 "), of({1, 2}));
    EXPECT_EQ(parse_cpulist("1 2\t3"), of({1, 2, 3}));
    EXPECT_EQ(parse_cpulist("1 ,2"), of({1, 2}));
    EXPECT_EQ(parse_cpulist("0-3:1/2 8"), of({0, 2, 8}));
    // ...but not inside one.
    EXPECT_EQ(list_error("1 -2").token(), "-2");
    EXPECT_EQ(list_error("1- 2").token(), "1-");
}

struct BadList {
    const char* text;
    const char* token;
    std::size_t position;
};

class ParseCpulistErrors : public ::testing::TestWithParam<BadList> {};

TEST_P(ParseCpulistErrors, NameTheTokenAndItsPosition) {
    const BadList& bad = GetParam();
    MaskError e = list_error(bad.text);
    EXPECT_EQ(e.token(), bad.token) << bad.text << ": " << e.what();
    EXPECT_EQ(e.position(), bad.position) << bad.text << ": " << e.what();
    EXPECT_FALSE(e.reason().empty());
    EXPECT_EQ(std::string(e.what()), e.reason());
}

INSTANTIATE_TEST_SUITE_P(
    Kernel61, ParseCpulistErrors,
    ::testing::Values(BadList{"5-1", "5-1", 0},                // reversed
                      BadList{"0,5-1", "5-1", 2},              //
                      BadList{"1-", "1-", 0},                  // missing end
                      BadList{"-1", "-1", 0},                  // missing start
                      BadList{"1,,2", ",", 2},                 // empty region
                      BadList{",1", ",", 0},                   //
                      BadList{"1,", ",", 1},                   //
                      BadList{"1, ,2", ",", 3},                //
                      BadList{",", ",", 0},                    //
                      BadList{"0-31:0/8", "0-31:0/8", 0},      // zero used
                      BadList{"0-31:9/8", "0-31:9/8", 0},      // used > group
                      BadList{"0-31:1/0", "0-31:1/0", 0},      // zero group
                      BadList{"0-31:1", "0-31:1", 0},          // no group size
                      BadList{"0-31:/8", "0-31:/8", 0},        //
                      BadList{"0-31:1/8x", "0-31:1/8x", 0},    //
                      BadList{"3:1/2", "3:1/2", 0},            // group form needs a range
                      BadList{"1-2-3", "1-2-3", 0},            //
                      BadList{"abc", "abc", 0},                // non-digits
                      BadList{"1a", "1a", 0},                  //
                      BadList{"+1", "+1", 0},                  //
                      BadList{"0x3", "0x3", 0},                //
                      BadList{"1;2", "1;2", 0},                //
                      BadList{"4,8192", "8192", 2},            // >= kMaxCpus
                      BadList{"0-8192", "8192", 2},            //
                      BadList{"9000-9001", "9000", 0},         //
                      BadList{"4294967295", "4294967295", 0},  // fits u32, still out of range
                      BadList{"4294967296", "4294967296", 0},  // overflows u32
                      BadList{"1-99999999999999999999999", "99999999999999999999999", 2},
                      BadList{"0-7:99999999999/100000000000", "99999999999", 4},
                      BadList{"N", "N", 0},      // last bit: nbits unknown here
                      BadList{"0-N", "N", 2},    //
                      BadList{"all", "all", 0},  // likewise
                      BadList{"ALL:1/2", "ALL:1/2", 0},
                      BadList{"1\n2", "2", 2}));  // the kernel would ignore what follows

TEST(ParseCpulist, PositionsIncludeTheBaseOffset) {
    MaskError e = list_error("0-3,7-5", 10);
    EXPECT_EQ(e.token(), "7-5");
    EXPECT_EQ(e.position(), 14u);
    EXPECT_NE(e.reason().find("7-5"), std::string::npos);
}

TEST(ParseCpulist, RoundTripsItsOwnFormat) {
    for (const char* text : {"0", "0-1", "0-3,8,10-15", "1,3,5,7", "0-8191", "100-200,4000"}) {
        EXPECT_EQ(format_cpulist(parse_cpulist(text)), text);
    }
    CpuSet odd;
    for (unsigned c = 1; c < kMaxCpus; c += 3) {
        odd.add(c);
    }
    EXPECT_EQ(parse_cpulist(format_cpulist(odd)), odd);
}

TEST(ParseCpumap, Groups) {
    EXPECT_EQ(parse_cpumap("ff,00000000"), CpuSet::range(32, 39));
    EXPECT_EQ(parse_cpumap("00000003"), of({0, 1}));
    EXPECT_EQ(parse_cpumap("3"), of({0, 1}));
    EXPECT_EQ(parse_cpumap("FFFF"), CpuSet::range(0, 15));
    EXPECT_EQ(parse_cpumap("80000000,00000001"), of({0, 63}));
    EXPECT_EQ(parse_cpumap("1,0,0"), of({64}));
    EXPECT_EQ(parse_cpumap("ffff\n"), CpuSet::range(0, 15));
    EXPECT_TRUE(parse_cpumap("").empty());
    EXPECT_TRUE(parse_cpumap("\n").empty());
    EXPECT_TRUE(parse_cpumap("0").empty());
    // bitmap_parse allows "1,,5", ",44", "," and whitespace between groups.
    EXPECT_EQ(parse_cpumap("1,,5"), of({0, 2, 32}));
    EXPECT_EQ(parse_cpumap(",44"), of({2, 6}));
    EXPECT_TRUE(parse_cpumap(",").empty());
    EXPECT_EQ(parse_cpumap(" 1 00000000 "), of({32}));
    // 256 groups of 32 bits: CPUs up to 8191.
    std::string top = "80000000";
    for (int i = 0; i < 255; ++i) {
        top += ",00000000";
    }
    EXPECT_EQ(parse_cpumap(top), of({8191}));
}

TEST(ParseCpumap, Errors) {
    MaskError e = map_error("ff,1x0");
    EXPECT_EQ(e.token(), "1x0");
    EXPECT_EQ(e.position(), 3u);
    e = map_error("123456789");  // more than 32 bits in a group
    EXPECT_EQ(e.token(), "123456789");
    e = map_error("000000001,0");  // the kernel counts digits, not value
    EXPECT_EQ(e.token(), "000000001");
    e = map_error("0xff", 5);
    EXPECT_EQ(e.token(), "0xff");
    EXPECT_EQ(e.position(), 5u);
    e = map_error("-1");
    EXPECT_EQ(e.token(), "-1");
    std::string too_many = "1";
    for (int i = 0; i < 256; ++i) {
        too_many += ",0";
    }
    e = map_error(too_many);
    EXPECT_EQ(e.token(), "1");
    EXPECT_EQ(e.position(), 0u);
}

TEST(ParseCpumap, LongGroupIsQuotedInPartOnce) {
    MaskError e = map_error(std::string(100, 'f'));
    EXPECT_NE(e.token().find("...(100 bytes)"), std::string::npos) << e.token();
    EXPECT_EQ(e.token().find("bytes)...("), std::string::npos) << e.token();
    e = map_error("1\x7f");
    EXPECT_EQ(e.token(), "1\\x7f");
}

TEST(FormatCpumap, PadsToNrCpusAsTheKernel) {
    EXPECT_EQ(format_cpumap(CpuSet::range(32, 39), 64), "000000ff,00000000");
    EXPECT_EQ(format_cpumap(CpuSet::range(32, 39), 40), "ff,00000000");
    EXPECT_EQ(format_cpumap(of({0, 1}), 16), "0003");
    EXPECT_EQ(format_cpumap(of({0, 8}), 2), "1");  // bits at or beyond nr_cpus are not shown
    EXPECT_EQ(format_cpumap(of({0}), 1), "1");
    EXPECT_EQ(format_cpumap(of({0}), 32), "00000001");
    EXPECT_EQ(format_cpumap(of({0}), 33), "0,00000001");
    EXPECT_EQ(format_cpumap(of({32}), 36), "1,00000000");
    EXPECT_EQ(format_cpumap(CpuSet(), 8), "00");
    EXPECT_EQ(format_cpumap(of({1, 3}), 0), "");
    for (unsigned nr : {1u, 4u, 16u, 31u, 32u, 33u, 64u, 100u, 8192u}) {
        CpuSet s = of({0, nr - 1, nr / 2});
        EXPECT_EQ(parse_cpumap(format_cpumap(s, nr)), s) << nr;
    }
}

TEST(Errno, NamesAndTexts) {
    const std::vector<std::pair<int, const char*>> names = {
        {EPERM, "EPERM"},   {ENOENT, "ENOENT"},  {EIO, "EIO"},
        {EBUSY, "EBUSY"},   {EINVAL, "EINVAL"},  {ENOSPC, "ENOSPC"},
        {ERANGE, "ERANGE"}, {EAGAIN, "EAGAIN"},  {EACCES, "EACCES"},
        {EROFS, "EROFS"},   {ENODEV, "ENODEV"},  {ENXIO, "ENXIO"},
        {EISDIR, "EISDIR"}, {ENOMEM, "ENOMEM"},  {ETIMEDOUT, "ETIMEDOUT"},
        {EEXIST, "EEXIST"}, {ENOTSUP, "ENOTSUP"}};
    for (const auto& [err, name] : names) {
        EXPECT_EQ(errno_name(err), name);
    }
    EXPECT_EQ(errno_name(98765), "E98765");
    EXPECT_EQ(errno_name(-3), "E-3");
    EXPECT_EQ(errno_text(EBUSY), "Device or resource busy");
    EXPECT_EQ(errno_text(EPERM), "Operation not permitted");
    EXPECT_FALSE(errno_text(98765).empty());
}

// True when every byte is printable ASCII (what sd-bus can always send as a message).
bool printable_ascii(const std::string& text) {
    for (const char c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
            return false;
        }
    }
    return true;
}

// Issue 9: found by a fuzzer: "1-2:3" read one byte past the region to describe what
// followed the used count (and reported "byte 0x00").
TEST(Cpulist, GroupFormCutAfterTheUsedCountSaysTheRegionEnded) {
    MaskError e = list_error("1-2:3");
    EXPECT_NE(std::string(e.what()).find("found the end of the region"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("0x00"), std::string::npos) << e.what();
    e = list_error("1-2:3,4");
    EXPECT_NE(std::string(e.what()).find("found the end of the region"), std::string::npos)
        << e.what();
}

// Issue 9: byte 0xa0 is the second byte of UTF-8 characters (U+00A0 no-break space is
// "\xc2\xa0", U+00E0 is "\xc3\xa0"): it is not a separator, and the message quotes the
// input escaped, as valid ASCII.
TEST(Cpulist, NoBreakSpaceIsNotASeparatorAndMessagesAreAscii) {
    for (const std::string text : {"1\xc2\xa0"
                                   "2",
                                   "1,\xc3\xa0", "1\xa0"}) {
        const MaskError e = list_error(text);
        EXPECT_TRUE(printable_ascii(e.what())) << e.what();
        EXPECT_TRUE(printable_ascii(e.token())) << e.token();
        EXPECT_NE(std::string(e.what()).find("\\xa0"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parse_cpumap("ff\xa0"
                              "00"),
                 MaskError);
}

TEST(Cpulist, ControlBytesAreEscapedAndLongInputIsQuotedInPart) {
    MaskError e = list_error("1,\x1b[2J");
    EXPECT_TRUE(printable_ascii(e.what())) << e.what();
    EXPECT_NE(std::string(e.what()).find("\\x1b[2J"), std::string::npos) << e.what();
    const std::string huge = "1-" + std::string(99998, 'x');
    e = list_error(huge);
    EXPECT_LT(std::string(e.what()).size(), 400u);
    EXPECT_LT(e.token().size(), 100u);
    EXPECT_NE(e.token().find("(100000 bytes)"), std::string::npos) << e.token();
}

TEST(Cpulist, CpuBoundIsCheckedBeforeAnyCpuIsAdded) {
    EXPECT_EQ(parse_cpulist("0-15", 0, 16), CpuSet::range(0, 15));
    try {
        parse_cpulist("0-3,2-16", 0, 16);
        FAIL() << "no error";
    } catch (const MaskError& e) {
        EXPECT_EQ(e.token(), "16");
        EXPECT_EQ(e.position(), 6u);
        EXPECT_NE(std::string(e.what()).find("the last possible CPU is 15"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(parse_cpumap("10000", 0, 16), MaskError);
    EXPECT_EQ(parse_cpumap("ffff", 0, 16), CpuSet::range(0, 15));
    // Group form and plain ranges fill the same CPUs as before.
    EXPECT_EQ(parse_cpulist("0-31:2/8"), of({0, 1, 8, 9, 16, 17, 24, 25}));
    EXPECT_EQ(parse_cpulist("0-8191"), CpuSet::range(0, 8191));
}

}  // namespace
}  // namespace cpuhpd
