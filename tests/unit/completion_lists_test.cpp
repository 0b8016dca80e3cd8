// The word lists of the completion scripts (completion/cpuctl.bash, completion/_cpuctl)
// against the tables they copy: strategies (kStrategyNames), plan's actions (kActionNames),
// SetSmt's states (dbus/names.h), the selectors (selector_words), and the commands, bash's
// against zsh's (tests/cli/cli-test.sh holds bash's against `cpuctl --help`). A strategy,
// selector or command the scripts lack fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "enums.h"
#include "names.h"
#include "selector.h"

namespace cpuhpd {
namespace {

std::string script(const std::string& name) {
    std::ifstream in(std::string(CPUHPD_SOURCE_DIR) + "/completion/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<std::string> words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;) {
        out.push_back(w);
    }
    return out;
}

// The first group of every match of `pattern` in `text`, split into words.
std::vector<std::vector<std::string>> lists(const std::string& text, const std::string& pattern) {
    std::vector<std::vector<std::string>> out;
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
         ++it) {
        out.push_back(words((*it)[1].str()));
    }
    return out;
}

// Every first group of the matches, as a set (for lists the scripts build one by one).
std::set<std::string> found(const std::string& text, const std::string& pattern) {
    std::set<std::string> out;
    for (const auto& list : lists(text, pattern)) {
        out.insert(list.begin(), list.end());
    }
    return out;
}

std::set<std::string> as_set(const std::vector<std::string>& list) {
    return {list.begin(), list.end()};
}

// Every list `pattern` finds in `text` (at least `at_least` of them) is `expected`.
void expect_lists(const std::string& text, const std::string& pattern,
                  const std::vector<std::string>& expected, std::size_t at_least,
                  const std::string& what) {
    const auto all = lists(text, pattern);
    EXPECT_GE(all.size(), at_least) << what << ": the pattern " << pattern << " matched less";
    for (const auto& list : all) {
        EXPECT_EQ(list, expected) << what;
    }
}

const std::string kBash = "cpuctl.bash";
const std::string kZsh = "_cpuctl";

TEST(CompletionLists, ScriptsAreThere) {
    EXPECT_FALSE(script(kBash).empty());
    EXPECT_FALSE(script(kZsh).empty());
}

TEST(CompletionLists, StrategiesAreTheEngines) {
    const auto strategies = names_in(kStrategyNames);
    expect_lists(script(kBash), R"re(--strategy\)\s*COMPREPLY=\(\$\(compgen -W "([^"]*)")re",
                 strategies, 1, "bash --strategy");
    expect_lists(script(kZsh), R"re(:strategy:\(([^)]*)\))re", strategies, 2, "zsh --strategy");
}

TEST(CompletionLists, PlanActionsAreTheEngines) {
    const auto actions = names_in(kActionNames);
    expect_lists(script(kBash), R"re(if \(\(nargs == 0\)\); then words="([^"]*)")re", actions, 1,
                 "bash plan");
    expect_lists(script(kZsh), R"re('1:action:\(([^)]*)\))re", actions, 1, "zsh plan");
}

TEST(CompletionLists, SmtStatesAreSetSmts) {
    const std::vector<std::string> states{dbus::kSmtOn, dbus::kSmtOff};
    expect_lists(script(kBash), R"re(smt\) \(\(nargs == 0\)\) && words="([^"]*)")re", states, 1,
                 "bash smt");
    expect_lists(script(kZsh), R"re('1:state:\(([^)]*)\))re", states, 1, "zsh smt");
}

TEST(CompletionLists, SelectorsAreTheEngines) {
    const auto alone = selector_words(false);
    const auto numbered = as_set(selector_words(true));
    const std::string bash = script(kBash);
    expect_lists(bash, R"re(local out=\(([^)]*)\))re", alone, 1, "bash selectors alone");
    EXPECT_EQ(found(bash, R"re(seen\[([a-z]+):)re"), numbered) << "bash numbered selectors";
    const std::string zsh = script(kZsh);
    const auto line = lists(zsh, R"re(sels=\(([^\n]*)\)\n)re");
    ASSERT_EQ(line.size(), 1u) << "zsh: one line sels=(...)";
    std::string joined;
    for (const auto& w : line.front()) {
        joined += w + " ";
    }
    EXPECT_EQ(found(joined, R"re('([a-z]+):)re"), as_set(alone)) << "zsh selectors alone";
    EXPECT_EQ(found(zsh, R"re(sels\+=\("([a-z]+)\\\\:)re"), numbered) << "zsh numbered selectors";
}

TEST(CompletionLists, BashAndZshOfferTheSameCommands) {
    const auto bash = lists(script(kBash), R"re(local commands="([^"]*)")re");
    ASSERT_EQ(bash.size(), 1u);
    const std::string zsh = script(kZsh);
    const auto start = zsh.find("commands=(");
    ASSERT_NE(start, std::string::npos);
    const std::string block = zsh.substr(start, zsh.find("\n    )", start) - start);
    EXPECT_EQ(found(block, R"re(\n\s*'([a-z]+):)re"), as_set(bash.front()));
}

}  // namespace
}  // namespace cpuhpd
