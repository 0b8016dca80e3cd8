#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "command_word.h"

namespace cpuctl {
namespace {

// command_word over a command line given as words (argv[0] included).
std::string word_of(std::vector<std::string> words) {
    std::vector<char*> args;
    for (auto& w : words) {
        args.push_back(w.data());
    }
    return std::string(command_word(args));
}

TEST(CpuctlCommandWord, TheFirstWordThatIsNoOptionNamesTheCommand) {
    EXPECT_EQ(word_of({"cpuctl", "offline", "4-7"}), "offline");
    EXPECT_EQ(word_of({"cpuctl", "--json", "status"}), "status");
    EXPECT_EQ(word_of({"cpuctl", "smt", "off", "--strategy", "per-cpu"}), "smt");
    EXPECT_EQ(word_of({"cpuctl", "--timeout=5", "holds"}), "holds");
}

TEST(CpuctlCommandWord, AGlobalOptionsValueIsNoCommandWhateverItLooksLike) {
    EXPECT_EQ(word_of({"cpuctl", "--timeout", "5", "topology"}), "topology");
    EXPECT_EQ(word_of({"cpuctl", "--bus-address", "status", "cancel"}), "cancel");
    EXPECT_EQ(word_of({"cpuctl", "--bus-address", "-x", "watch"}), "watch");
    EXPECT_EQ(word_of({"cpuctl", "--bus-address"}), "");
}

TEST(CpuctlCommandWord, HelpOrTheVersionAnywhereAsksForEveryCommand) {
    EXPECT_EQ(word_of({"cpuctl", "--help"}), "");
    EXPECT_EQ(word_of({"cpuctl", "offline", "--help"}), "");
    EXPECT_EQ(word_of({"cpuctl", "status", "-h"}), "");
    EXPECT_EQ(word_of({"cpuctl", "--help-all"}), "");
    EXPECT_EQ(word_of({"cpuctl", "online", "1", "--version"}), "");
}

TEST(CpuctlCommandWord, NoWordNoCommand) {
    EXPECT_EQ(word_of({"cpuctl"}), "");
    EXPECT_EQ(word_of({"cpuctl", "--json"}), "");
}

}  // namespace
}  // namespace cpuctl
