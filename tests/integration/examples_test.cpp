// The client examples of docs/clients.md (docs/examples/) against the private test bus: the
// Python (Gio) client and the busctl script, run as a user would run them, output checked;
// and README's cpuctl example, each command run again and its output compared.
#include <gtest/gtest.h>
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "harness/child.h"
#include "harness/files.h"
#include "harness/world.h"

namespace cpuhpd::itest {
namespace {

const std::string kExamples = (source_dir() / "docs/examples").string();

bool has_line(const std::string& text, const std::string& pattern) {
    return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

// The commands of README's cpuctl example ("# cpuctl ARGS" lines) and the output below each.
std::vector<std::pair<std::string, std::string>> readme_example() {
    const std::string readme = read_file(source_dir() / "README.md");
    const auto begin = readme.find("\n# cpuctl offline 4,6,7\n");
    const auto end = readme.find("```", begin);
    std::vector<std::pair<std::string, std::string>> out;
    if (begin == std::string::npos || end == std::string::npos) {
        return out;
    }
    std::istringstream in(readme.substr(begin + 1, end - begin - 1));
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("# cpuctl ", 0) == 0) {
            out.emplace_back(line.substr(9), "");
        } else if (!out.empty()) {
            out.back().second += line + "\n";
        }
    }
    return out;
}

// Every key of a JSON value, as paths ("cpus[].cpu"): the shape of an answer, not its values.
void key_paths(const nlohmann::json& j, const std::string& at, std::set<std::string>& out) {
    if (j.is_object()) {
        for (const auto& [key, value] : j.items()) {
            out.insert(at + "." + key);
            key_paths(value, at + "." + key, out);
        }
    } else if (j.is_array()) {
        for (const auto& element : j) {
            key_paths(element, at + "[]", out);
        }
    }
}

// Output with what differs from run to run (the time, the batch id) made the same.
std::string without_times(const std::string& text) {
    return std::regex_replace(
        std::regex_replace(text, std::regex("in [0-9]+\\.[0-9]+ s"), "in T s"),
        std::regex("batch [0-9]+"), "batch N");
}

class ExamplesTest : public ::testing::Test {
protected:
    void SetUp() override {
        world_ = std::make_unique<World>();
        world_->start_bus();
        try {
            world_->start_daemon();
        } catch (const std::exception& e) {
            FAIL() << e.what();
        }
    }
    void TearDown() override {
        if (world_ && HasFailure()) {
            std::cerr << "---- cpuhpd stderr ----\n" << world_->daemon_log() << "----\n";
        }
        world_.reset();
    }

    // Runs argv with the harness's guard environment plus `env`, bounded.
    RunResult run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::optional<std::string>>& env = {}) {
        auto e = world_->guard_env();
        for (const auto& [k, v] : env) {
            e[k] = v;
        }
        const std::string n = std::to_string(++runs_);
        Child c;
        c.start(argv, e, world_->dir() / ("example." + n + ".out"),
                world_->dir() / ("example." + n + ".err"));
        RunResult r;
        if (!c.wait_until(Clock::now() + 60s)) {
            c.stop(100ms);
        } else {
            r.exit_code = c.exit_code();
        }
        r.out = c.out();
        r.err = c.err();
        return r;
    }

    std::unique_ptr<World> world_;
    unsigned runs_ = 0;
};

TEST_F(ExamplesTest, PythonClientOfflinesAndOnlinesAndFollowsTheBatchSignals) {
    const std::string py = kExamples + "/cpuhpd-client.py";
    // The bus from the environment.
    RunResult r = run({"/usr/bin/python3", py, "offline", "4,6,7", "--strategy", "per-cpu"},
                      {{"CPUHPD_BUS_ADDRESS", world_->bus_address()}});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    for (unsigned cpu : {4u, 6u, 7u}) {
        EXPECT_TRUE(has_line(r.out, "^cpu " + std::to_string(cpu) + ": changed - "))
            << r.describe();
        EXPECT_EQ(world_->tree().read("devices/system/cpu/cpu" + std::to_string(cpu) + "/online"),
                  "0");
    }
    EXPECT_TRUE(has_line(r.out, "^progress: batch [0-9]+ 3/3$")) << r.describe();
    EXPECT_TRUE(has_line(r.out,
                         "^finished: batch [0-9]+ offline via per-cpu, changed '4,6-7', "
                         "failed '', 1 request\\(s\\)"))
        << r.describe();
    EXPECT_TRUE(has_line(r.out,
                         "^summary: offline '4,6,7' outcome ok, strategy per-cpu, mode "
                         "atomic, batch [1-9][0-9]*, order \\[(7, 6, 4|4, 6, 7)\\]"))
        << r.describe();

    // The bus from the argument; best-effort mode is passed through.
    r = run({"/usr/bin/python3", py, "--bus-address", world_->bus_address(), "online", "4,6,7",
             "--mode", "best-effort"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(has_line(r.out, "^summary: online '4,6,7' outcome ok, .*mode best-effort"))
        << r.describe();
    EXPECT_TRUE(has_line(r.out, "^finished: batch [0-9]+ online via ")) << r.describe();
    for (const auto& [cpu, value] : world_->tree().online_files()) {
        EXPECT_EQ(value, "1") << "cpu" << cpu;
    }
}

TEST_F(ExamplesTest, PythonClientReportsRefusalsAndDryRunsTouchNothing) {
    const std::string py = kExamples + "/cpuhpd-client.py";
    const std::map<std::string, std::optional<std::string>> env{
        {"CPUHPD_BUS_ADDRESS", world_->bus_address()}};
    RunResult r = run({"/usr/bin/python3", py, "offline", "0"}, env);
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_TRUE(has_line(r.err, "^error: org.cpuhpd1.Error.ProtectedCpu: ")) << r.describe();

    r = run({"/usr/bin/python3", py, "offline", "package:1", "--dry-run"}, env);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(has_line(r.out, "^summary: offline 'package:1' outcome ok, .* batch 0, "))
        << r.describe();
    EXPECT_FALSE(has_line(r.out, "^finished: ")) << r.describe();
    for (const auto& [cpu, value] : world_->tree().online_files()) {
        EXPECT_EQ(value, "1") << "cpu" << cpu;
    }
}

TEST_F(ExamplesTest, BusctlScriptOfflinesAndOnlines) {
    if (::access("/usr/bin/busctl", X_OK) != 0 && ::access("/bin/busctl", X_OK) != 0) {
        GTEST_SKIP() << "busctl (package systemd) is not installed";
    }
    RunResult r = run({"/bin/sh", kExamples + "/busctl-example.sh", "4,6,7"},
                      {{"CPUHPD_BUS_ADDRESS", world_->bus_address()}});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    // Online before, after the Offline call, and after the Online call.
    std::regex online_re("^s \"([^\"]*)\"$", std::regex::multiline);
    std::vector<std::string> seen;
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), online_re);
         it != std::sregex_iterator(); ++it) {
        seen.push_back((*it)[1]);
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"0-15", "0-3,5,8-15", "0-15"})) << r.describe();
    // The Offline reply as docs/clients.md shows it: the options were passed through.
    EXPECT_TRUE(has_line(
        r.out,
        "^a\\(ussis\\)a\\{sv\\} 3 4 \"changed\" \"\" 0 \"offline\" 6 \"changed\" \"\" 0 "
        "\"offline\" 7 \"changed\" \"\" 0 \"offline\" 15 \"action\" s \"offline\" \"affinity\" "
        "a\\(susssis\\) 0 \"batch_id\" t "
        "[0-9]+ \"dry_run\" b false \"duration_us\" t [0-9]+ \"mask\" s \"4,6,7\" \"mode\" s "
        "\"best-effort\" \"order\" au 3 7 6 4 \"outcome\" s \"ok\" \"partitions\" a\\(sss\\) 0 "
        "\"phases\" a\\(st\\) 11 \"read\" [0-9]+ \"pinned\" [0-9]+ \"partitions\" [0-9]+ "
        "\"admit\" [0-9]+ \"plan\" [0-9]+ \"affinity\" [0-9]+ \"journal\" [0-9]+ "
        "\"expedite\" [0-9]+ \"write\" [0-9]+ \"reread\" [0-9]+ \"rollback\" [0-9]+ "
        "\"pinned_irqs\" a\\(uss\\) 0 \"pinned_tasks\" a\\(uss\\) 0 \"queued_us\" t [0-9]+ "
        "\"strategy\" s \"per-cpu\"$"))
        << r.describe();
    EXPECT_TRUE(has_line(r.out, "\"mode\":\\{\"type\":\"s\",\"data\":\"atomic\"\\}"))
        << r.describe();
    for (const auto& [cpu, value] : world_->tree().online_files()) {
        EXPECT_EQ(value, "1") << "cpu" << cpu;
    }
}

TEST_F(ExamplesTest, ReadmeCpuctlExampleIsWhatCpuctlPrints) {
    const auto example = readme_example();
    ASSERT_GE(example.size(), 3u) << "README.md has no cpuctl example starting with "
                                     "'# cpuctl offline 4,6,7'";
    for (const auto& [command, shown] : example) {
        std::vector<std::string> args;
        std::istringstream words(command);
        for (std::string w; words >> w;) {
            args.push_back(w);
        }
        const RunResult r = world_->cpuctl(args);
        const std::string printed = r.out + r.err;
        if (shown.rfind("{", 0) == 0) {
            // JSON: the same keys, everywhere (the values of a batch's times differ).
            std::set<std::string> shown_keys, printed_keys;
            key_paths(nlohmann::json::parse(shown), "", shown_keys);
            ASSERT_TRUE(nlohmann::json::accept(r.out)) << r.describe();
            key_paths(nlohmann::json::parse(r.out), "", printed_keys);
            EXPECT_EQ(shown_keys, printed_keys) << "cpuctl " << command << "\n" << r.out;
        } else {
            EXPECT_EQ(without_times(shown), without_times(printed)) << "cpuctl " << command;
        }
    }
}

}  // namespace
}  // namespace cpuhpd::itest
