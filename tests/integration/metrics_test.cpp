// The metrics file (config metrics_file) of the real daemon: its values after a batch, a
// hold and a profile driven over the bus; promtool's verdict on it; a directory that is
// missing (logged once, the daemon serves on, and writes once the directory is there).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

namespace fs = std::filesystem;

// The samples of a metrics file: "name{labels}" as written -> value.
using Samples = std::map<std::string, std::string>;

Samples samples_in(const fs::path& file) {
    Samples out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') {
            continue;
        }
        const auto space = line.rfind(' ');
        out[line.substr(0, space)] = line.substr(space + 1);
    }
    return out;
}

// The batches of the file counted over every label combination.
long batches_in(const Samples& samples) {
    long total = 0;
    for (const auto& [series, value] : samples) {
        if (series.rfind("cpuhpd_batches_total{", 0) == 0) {
            total += std::stol(value);
        }
    }
    return total;
}

struct Promtool {
    int status = -1;  // -1: not run
    std::string output;
};

bool have_promtool() {
    return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

// `promtool check metrics` on the file: exit status and everything it printed.
Promtool promtool_check(const fs::path& file) {
    Promtool result;
    const std::string command = "promtool check metrics < '" + file.string() + "' 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) {
        return result;
    }
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
        result.output.append(buffer, n);
    }
    const int status = ::pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    return result;
}

class MetricsTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.extra_yaml = "metrics_file: " + metrics_file().string() +
                       "\n"
                       "profiles:\n"
                       "  evacuate-package-1:\n"
                       "    offline: \"package:1\"\n";
        return c;
    }
    void prepare_tree(test::FakeSysfs&) override {
        if (create_directory_) {
            fs::create_directories(metrics_file().parent_path());
        }
    }
    fs::path metrics_file() const { return world_->dir() / "node-exporter" / "cpuhpd.prom"; }

    // Waits (bounded) until every series of `expected` has its value in the file; on a
    // timeout, says which did not and what the file holds.
    ::testing::AssertionResult shows(const Samples& expected) {
        Samples seen;
        const bool ok = eventually(
            [&] {
                seen = samples_in(metrics_file());
                for (const auto& [series, value] : expected) {
                    const auto it = seen.find(series);
                    if (it == seen.end() || it->second != value) {
                        return false;
                    }
                }
                return true;
            },
            10s);
        if (ok) {
            return ::testing::AssertionSuccess();
        }
        auto failure = ::testing::AssertionFailure();
        for (const auto& [series, value] : expected) {
            const auto it = seen.find(series);
            failure << series << ": expected " << value << ", file has "
                    << (it == seen.end() ? std::string("no such series") : it->second) << "\n";
        }
        return failure;
    }

    // Waits (bounded) until the file counts `n` batches in all. A hold or a profile is
    // announced before the batch that made it is counted: the batch follows.
    bool batches_reach(long n) {
        return eventually([&] { return batches_in(samples_in(metrics_file())) == n; }, 10s);
    }

    bool create_directory_ = true;
};

const std::string kOfflinePerCpuOk =
    R"(cpuhpd_batches_total{action="offline",strategy="per-cpu",outcome="ok"})";
const std::string kNoProfile = R"(cpuhpd_active_profile_info{profile=""})";
const std::string kEvacuate = R"(cpuhpd_active_profile_info{profile="evacuate-package-1"})";
// A holder's name with every character the text format escapes or that is not ASCII (the
// bus refuses control characters in it, so no newline).
const std::string kHostileWho = "live \"update\" \\ caf\xC3\xA9";
const std::string kHostileSeries = R"(cpuhpd_hold_cpus{who="live \"update\" \\ caf)"
                                   "\xC3\xA9"
                                   R"("})";

TEST_F(MetricsTest, TheFileFollowsABatchAHoldAndAProfile) {
    // At start: the machine as it is (16 CPUs, all online; cpu0 protected), nothing counted.
    ASSERT_TRUE(shows({{"cpuhpd_cpus_online", "16"},
                       {"cpuhpd_cpus_offline", "0"},
                       {"cpuhpd_cpus_protected", "1"},
                       {"cpuhpd_cpus_held", "0"},
                       {"cpuhpd_holds", "0"},
                       {kNoProfile, "1"},
                       {kOfflinePerCpuOk, "0"},
                       {R"(cpuhpd_batch_duration_seconds_count{action="offline"})", "0"},
                       {R"(cpuhpd_recoveries_total{outcome="recovered"})", "0"}}));
    EXPECT_TRUE(batches_reach(0));

    // A batch.
    const CallResult offline = client_->call("Offline", "4-5", {{"strategy", "per-cpu"}});
    ASSERT_TRUE(offline.ok) << offline.describe();
    EXPECT_TRUE(shows({{kOfflinePerCpuOk, "1"},
                       {R"(cpuhpd_batch_duration_seconds_count{action="offline"})", "1"},
                       {R"(cpuhpd_batch_duration_seconds_bucket{action="offline",le="+Inf"})", "1"},
                       {R"(cpuhpd_batch_duration_seconds_count{action="online"})", "0"},
                       {"cpuhpd_cpus_online", "14"},
                       {"cpuhpd_cpus_offline", "2"}}));
    EXPECT_TRUE(batches_reach(1));

    // A hold, by a holder whose name needs escaping; then its end (the fd closed), which
    // brings its CPUs back.
    {
        RawClient orchestrator(world_->bus_address());
        auto held = orchestrator.hold_cpus("6-7", "offline", kHostileWho, "metrics test", {});
        ASSERT_TRUE(held.call.ok) << held.call.describe();
        Fd fd{held.fd};
        EXPECT_TRUE(shows({{"cpuhpd_holds", "1"},
                           {"cpuhpd_cpus_held", "2"},
                           {kHostileSeries, "2"},
                           {"cpuhpd_cpus_offline", "4"}}));
        EXPECT_TRUE(batches_reach(2));
        fd.reset();
        EXPECT_TRUE(shows(
            {{"cpuhpd_holds", "0"}, {"cpuhpd_cpus_held", "0"}, {"cpuhpd_cpus_offline", "2"}}));
        EXPECT_EQ(samples_in(metrics_file()).count(kHostileSeries), 0u);
        EXPECT_TRUE(batches_reach(3));  // the restore
    }

    // A profile, then its revert.
    const CallResult applied = client_->call("ApplyProfile", "evacuate-package-1");
    ASSERT_TRUE(applied.ok) << applied.describe();
    EXPECT_TRUE(shows({{kEvacuate, "1"}, {"cpuhpd_cpus_offline", "8"}}));
    EXPECT_EQ(samples_in(metrics_file()).count(kNoProfile), 0u);
    const CallResult reverted = client_->call_with_entries("RevertProfile", std::nullopt, {});
    ASSERT_TRUE(reverted.ok) << reverted.describe();
    EXPECT_TRUE(shows({{kNoProfile, "1"}, {"cpuhpd_cpus_offline", "2"}}));
    EXPECT_EQ(samples_in(metrics_file()).count(kEvacuate), 0u);
    // No temporary file is left behind (one may be there for an instant, while a write is
    // on its way to the rename).
    std::vector<std::string> names;
    EXPECT_TRUE(eventually(
        [&] {
            names.clear();
            for (const auto& entry : fs::directory_iterator(metrics_file().parent_path())) {
                names.push_back(entry.path().filename().string());
            }
            return names == std::vector<std::string>{"cpuhpd.prom"};
        },
        10s))
        << ::testing::PrintToString(names);
}

// promtool (Debian's prometheus package) parses and lints the file as the daemon wrote it at
// start, after a batch, during a hold and with a profile in force: no complaint at all.
TEST_F(MetricsTest, PromtoolFindsNothingToSay) {
    if (!have_promtool()) {
        GTEST_SKIP() << "promtool is not installed (Debian package prometheus; "
                        "scripts/install-deps.sh installs it): the file was not checked";
    }
    const auto check = [&](const std::string& when) {
        const Promtool result = promtool_check(metrics_file());
        EXPECT_EQ(result.status, 0) << when << ": promtool says:\n" << result.output;
        EXPECT_EQ(result.output, "") << when << ": promtool says:\n" << result.output;
        std::cout << "promtool check metrics (" << when << "): exit " << result.status
                  << (result.output.empty() ? ", no output\n" : ":\n" + result.output);
    };
    ASSERT_TRUE(shows({{"cpuhpd_holds", "0"}}));
    check("at start");
    ASSERT_TRUE(client_->call("Offline", "4-5").ok);
    ASSERT_TRUE(shows({{"cpuhpd_cpus_offline", "2"}}));
    check("after a batch");
    RawClient orchestrator(world_->bus_address());
    auto held = orchestrator.hold_cpus("6-7", "offline", kHostileWho, "metrics test", {});
    ASSERT_TRUE(held.call.ok) << held.call.describe();
    Fd fd{held.fd};
    ASSERT_TRUE(shows({{kHostileSeries, "2"}}));
    check("during a hold");
    ASSERT_TRUE(client_->call("ApplyProfile", "evacuate-package-1").ok);
    ASSERT_TRUE(shows({{kEvacuate, "1"}}));
    check("with a profile in force");
    // The file as promtool saw it last, for the test's log.
    std::ifstream in(metrics_file());
    std::cout << "---- " << metrics_file().string() << " ----\n" << in.rdbuf() << "----\n";
}

// The directory is missing: the daemon says so once, with the path and the errno text,
// serves on, and writes the file at the first change after the directory appeared.
class MetricsMissingDirectoryTest : public MetricsTest {
protected:
    MetricsMissingDirectoryTest() { create_directory_ = false; }
};

TEST_F(MetricsMissingDirectoryTest, IsLoggedOnceAndNeverStopsTheDaemon) {
    const std::string warning = "cannot write the metrics file " + metrics_file().string() +
                                " (create temporary file): No such file or directory";
    ASSERT_TRUE(log_shows(*world_, warning));
    ASSERT_TRUE(client_->call("Offline", "4").ok);
    ASSERT_TRUE(client_->call("Online", "4").ok);
    EXPECT_FALSE(fs::exists(metrics_file()));
    const std::string log = world_->daemon_log();
    EXPECT_EQ(log.find("cannot write the metrics file", log.find(warning) + 1), std::string::npos)
        << log;

    fs::create_directories(metrics_file().parent_path());
    ASSERT_TRUE(client_->call("Offline", "4").ok);
    EXPECT_TRUE(shows({{kOfflinePerCpuOk, "2"}, {"cpuhpd_cpus_offline", "1"}}));
    EXPECT_TRUE(
        log_shows(*world_, "writing the metrics file " + metrics_file().string() + " again"));
    EXPECT_TRUE(world_->daemon().running());
}

}  // namespace
}  // namespace cpuhpd::itest
