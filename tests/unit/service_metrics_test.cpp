// The metrics (metrics.h, metrics_file.h): the text of a known state, word for word; label
// values from hostile names; the histogram's buckets; the atomic file and its failures.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "metrics.h"
#include "metrics_file.h"

namespace cpuhpd {
namespace {

BatchReport batch(Action action, StrategyKind strategy, std::chrono::microseconds duration,
                  CpuSet changed, CpuSet failed = {}, CpuSet cancelled = {}) {
    BatchReport report;
    report.action = action;
    report.strategy = strategy;
    report.duration = duration;
    report.changed = std::move(changed);
    report.failed = std::move(failed);
    report.cancelled = std::move(cancelled);
    return report;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

// The lines of `text` that are samples of `name` (exactly that name, then '{' or ' ').
std::vector<std::string> samples_of(const std::string& text, const std::string& name) {
    std::vector<std::string> out;
    for (const auto& line : lines_of(text)) {
        if (line.rfind(name, 0) == 0 && line.size() > name.size() &&
            (line[name.size()] == '{' || line[name.size()] == ' ')) {
            out.push_back(line);
        }
    }
    return out;
}

std::uint64_t value_of(const std::string& line) {
    return std::stoull(line.substr(line.rfind(' ') + 1));
}

TEST(Metrics, OutcomeOfABatch) {
    using std::chrono::microseconds;
    const auto one = CpuSet::single(1);
    const auto two = CpuSet::single(2);
    EXPECT_EQ(outcome_of(batch(Action::Offline, StrategyKind::Bulk, microseconds(1), one)),
              BatchOutcome::Ok);
    EXPECT_EQ(outcome_of(batch(Action::Offline, StrategyKind::Bulk, microseconds(1), one, two)),
              BatchOutcome::Partial);
    EXPECT_EQ(outcome_of(batch(Action::Offline, StrategyKind::Bulk, microseconds(1), {}, two)),
              BatchOutcome::Failed);
    EXPECT_EQ(outcome_of(batch(Action::Offline, StrategyKind::Bulk, microseconds(1), one, {}, two)),
              BatchOutcome::Cancelled);
}

TEST(Metrics, SecondsText) {
    EXPECT_EQ(seconds_text(0), "0");
    EXPECT_EQ(seconds_text(1'000), "0.001");
    EXPECT_EQ(seconds_text(2'500), "0.0025");
    EXPECT_EQ(seconds_text(1'500'000), "1.5");
    EXPECT_EQ(seconds_text(600'000'000), "600");
    EXPECT_EQ(seconds_text(3'000'001), "3.000001");
}

// A daemon that ran three batches (one took 12 minutes, past the last bound), recovered an
// interrupted batch at start, holds 4-5 for live-update and has profile "night" in force.
Metrics known_metrics() {
    using std::chrono::microseconds;
    Metrics m;
    m.start_time_s = 1764892800;
    m.count(batch(Action::Offline, StrategyKind::Bulk, microseconds(3'000), CpuSet::range(4, 7)));
    m.count(batch(Action::Online, StrategyKind::PerCpu, microseconds(2'000'000), CpuSet::single(4),
                  CpuSet::single(5)));
    m.count(batch(Action::Offline, StrategyKind::PerCpu, microseconds(720'000'000),
                  CpuSet::single(8), {}, CpuSet::single(9)));
    RecoveryReport recovery;
    recovery.outcome = RecoveryOutcome::Recovered;
    m.count(recovery);
    RecoveryReport none;
    m.count(none);  // nothing to recover: not a recovery
    MachineState state;
    state.present = CpuSet::range(0, 15);
    state.online = CpuSet::range(0, 15) - CpuSet::range(4, 7);
    EngineSettings settings;
    settings.protected_cpus = CpuSet::from({0, 1, 99});  // 99 is not present
    Hold hold;
    hold.id = 1;
    hold.who = "live-update";
    hold.cpus = CpuSet::range(4, 5);
    m.gauges = gauges_of(state, settings, {hold}, ActiveProfile{"night", CpuSet::range(6, 7)});
    return m;
}

constexpr const char* kGolden =
    R"(# HELP cpuhpd_batches_total Batches that wrote to the kernel, by action, strategy and outcome (ok, partial: some CPUs failed, failed: none changed, cancelled).
# TYPE cpuhpd_batches_total counter
cpuhpd_batches_total{action="offline",strategy="bulk",outcome="ok"} 1
cpuhpd_batches_total{action="offline",strategy="bulk",outcome="partial"} 0
cpuhpd_batches_total{action="offline",strategy="bulk",outcome="failed"} 0
cpuhpd_batches_total{action="offline",strategy="bulk",outcome="cancelled"} 0
cpuhpd_batches_total{action="offline",strategy="smt",outcome="ok"} 0
cpuhpd_batches_total{action="offline",strategy="smt",outcome="partial"} 0
cpuhpd_batches_total{action="offline",strategy="smt",outcome="failed"} 0
cpuhpd_batches_total{action="offline",strategy="smt",outcome="cancelled"} 0
cpuhpd_batches_total{action="offline",strategy="per-cpu",outcome="ok"} 0
cpuhpd_batches_total{action="offline",strategy="per-cpu",outcome="partial"} 0
cpuhpd_batches_total{action="offline",strategy="per-cpu",outcome="failed"} 0
cpuhpd_batches_total{action="offline",strategy="per-cpu",outcome="cancelled"} 1
cpuhpd_batches_total{action="online",strategy="bulk",outcome="ok"} 0
cpuhpd_batches_total{action="online",strategy="bulk",outcome="partial"} 0
cpuhpd_batches_total{action="online",strategy="bulk",outcome="failed"} 0
cpuhpd_batches_total{action="online",strategy="bulk",outcome="cancelled"} 0
cpuhpd_batches_total{action="online",strategy="smt",outcome="ok"} 0
cpuhpd_batches_total{action="online",strategy="smt",outcome="partial"} 0
cpuhpd_batches_total{action="online",strategy="smt",outcome="failed"} 0
cpuhpd_batches_total{action="online",strategy="smt",outcome="cancelled"} 0
cpuhpd_batches_total{action="online",strategy="per-cpu",outcome="ok"} 0
cpuhpd_batches_total{action="online",strategy="per-cpu",outcome="partial"} 1
cpuhpd_batches_total{action="online",strategy="per-cpu",outcome="failed"} 0
cpuhpd_batches_total{action="online",strategy="per-cpu",outcome="cancelled"} 0
# HELP cpuhpd_batch_duration_seconds How long batches took, from their first write to their last (rollback included), by action.
# TYPE cpuhpd_batch_duration_seconds histogram
cpuhpd_batch_duration_seconds_bucket{action="offline",le="0.001"} 0
cpuhpd_batch_duration_seconds_bucket{action="offline",le="0.0025"} 0
cpuhpd_batch_duration_seconds_bucket{action="offline",le="0.005"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="0.01"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="0.025"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="0.05"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="0.1"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="0.25"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="0.5"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="1"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="2.5"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="5"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="10"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="30"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="60"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="120"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="300"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="600"} 1
cpuhpd_batch_duration_seconds_bucket{action="offline",le="+Inf"} 2
cpuhpd_batch_duration_seconds_sum{action="offline"} 720.003
cpuhpd_batch_duration_seconds_count{action="offline"} 2
cpuhpd_batch_duration_seconds_bucket{action="online",le="0.001"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="0.0025"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="0.005"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="0.01"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="0.025"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="0.05"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="0.1"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="0.25"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="0.5"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="1"} 0
cpuhpd_batch_duration_seconds_bucket{action="online",le="2.5"} 1
cpuhpd_batch_duration_seconds_bucket{action="online",le="5"} 1
cpuhpd_batch_duration_seconds_bucket{action="online",le="10"} 1
cpuhpd_batch_duration_seconds_bucket{action="online",le="30"} 1
cpuhpd_batch_duration_seconds_bucket{action="online",le="60"} 1
cpuhpd_batch_duration_seconds_bucket{action="online",le="120"} 1
cpuhpd_batch_duration_seconds_bucket{action="online",le="300"} 1
cpuhpd_batch_duration_seconds_bucket{action="online",le="600"} 1
cpuhpd_batch_duration_seconds_bucket{action="online",le="+Inf"} 1
cpuhpd_batch_duration_seconds_sum{action="online"} 2
cpuhpd_batch_duration_seconds_count{action="online"} 1
# HELP cpuhpd_cpus_online CPUs online.
# TYPE cpuhpd_cpus_online gauge
cpuhpd_cpus_online 12
# HELP cpuhpd_cpus_offline CPUs present and offline.
# TYPE cpuhpd_cpus_offline gauge
cpuhpd_cpus_offline 4
# HELP cpuhpd_cpus_held CPUs in a hold (only its holder may change them).
# TYPE cpuhpd_cpus_held gauge
cpuhpd_cpus_held 2
# HELP cpuhpd_cpus_protected Present CPUs of the config's protected_cpus.
# TYPE cpuhpd_cpus_protected gauge
cpuhpd_cpus_protected 2
# HELP cpuhpd_holds Holds in force.
# TYPE cpuhpd_holds gauge
cpuhpd_holds 1
# HELP cpuhpd_hold_cpus CPUs held, by the name the holders gave (who); no sample when nothing is held.
# TYPE cpuhpd_hold_cpus gauge
cpuhpd_hold_cpus{who="live-update"} 2
# HELP cpuhpd_active_profile_info Always 1; the label profile names the profile in force (empty: none).
# TYPE cpuhpd_active_profile_info gauge
cpuhpd_active_profile_info{profile="night"} 1
# HELP cpuhpd_recoveries_total Start-up recoveries from a batch journal, by what was found (finished, stale, recovered: an interrupted batch undone or kept, rejected: an untrusted journal).
# TYPE cpuhpd_recoveries_total counter
cpuhpd_recoveries_total{outcome="finished"} 0
cpuhpd_recoveries_total{outcome="stale"} 0
cpuhpd_recoveries_total{outcome="recovered"} 1
cpuhpd_recoveries_total{outcome="rejected"} 0
# HELP cpuhpd_start_time_seconds When the daemon started, in seconds since the epoch; the counters count from there.
# TYPE cpuhpd_start_time_seconds gauge
cpuhpd_start_time_seconds 1764892800
)";

TEST(Metrics, TheTextOfAKnownState) {
    EXPECT_EQ(format_metrics(known_metrics()), kGolden);
}

TEST(Metrics, NoHoldsNoProfile) {
    Metrics m;
    MachineState state;
    state.present = CpuSet::range(0, 3);
    state.online = CpuSet::range(0, 3);
    m.gauges = gauges_of(state, EngineSettings{}, {}, std::nullopt);
    const std::string text = format_metrics(m);
    EXPECT_TRUE(samples_of(text, "cpuhpd_hold_cpus").empty()) << text;
    EXPECT_EQ(samples_of(text, "cpuhpd_holds"), std::vector<std::string>{"cpuhpd_holds 0"});
    EXPECT_EQ(samples_of(text, "cpuhpd_active_profile_info"),
              std::vector<std::string>{"cpuhpd_active_profile_info{profile=\"\"} 1"});
    EXPECT_EQ(samples_of(text, "cpuhpd_cpus_held"), std::vector<std::string>{"cpuhpd_cpus_held 0"});
}

TEST(Metrics, LabelValuesAreEscaped) {
    EXPECT_EQ(escape_label_value("plain-name_1.2"), "plain-name_1.2");
    EXPECT_EQ(escape_label_value("a\"b"), "a\\\"b");
    EXPECT_EQ(escape_label_value("back\\slash"), "back\\\\slash");
    EXPECT_EQ(escape_label_value("two\nlines"), "two\\nlines");
    EXPECT_EQ(escape_label_value("\\n"), "\\\\n");  // a backslash and an n, not a newline
    EXPECT_EQ(escape_label_value("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5"),
              "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5");  // UTF-8 stays
    // Not UTF-8: a lone continuation byte, a truncated sequence, an overlong '/', a UTF-16
    // surrogate, beyond U+10FFFF: each offending byte becomes U+FFFD.
    EXPECT_EQ(escape_label_value("x\x80y"), "x\xEF\xBF\xBDy");
    EXPECT_EQ(escape_label_value("\xC3"), "\xEF\xBF\xBD");
    EXPECT_EQ(escape_label_value("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(escape_label_value("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(escape_label_value("\xF4\x90\x80\x80"),
              "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

// Names that try to end the label, add a sample or a comment line: each stays one sample
// whose label reads back (unescaped) as the name given, and every line of the text is a
// comment or a well-formed sample.
TEST(Metrics, HostileNamesStayInTheirLabel) {
    const std::vector<std::string> hostile = {
        "x\"} 1\ncpuhpd_holds 999\n# TYPE evil counter",
        "\\",
        "\"",
        "a\\\"b",
        "line\r\nbreak",
        std::string("nul\0byte", 8),
        "bad \xFF utf8",
    };
    MachineState state;
    state.present = CpuSet::range(0, 15);
    state.online = CpuSet::range(0, 15);
    std::vector<Hold> holds;
    for (std::size_t i = 0; i < hostile.size(); ++i) {
        Hold hold;
        hold.id = i + 1;
        hold.who = hostile[i];
        hold.cpus = CpuSet::single(static_cast<unsigned>(i + 1));
        holds.push_back(hold);
    }
    Metrics m;
    m.gauges = gauges_of(state, EngineSettings{}, holds, ActiveProfile{"x\"}\n", {}});
    const std::string text = format_metrics(m);

    const std::regex sample_line(
        R"(^[a-z_]+(\{[a-z_]+="(?:[^"\\\n]|\\[\\"n])*"(,[a-z_]+="(?:[^"\\\n]|\\[\\"n])*")*\})? )"
        R"((?:[0-9]+(\.[0-9]+)?|\+Inf)$)");
    for (const auto& line : lines_of(text)) {
        if (line.rfind("# HELP cpuhpd_", 0) == 0 || line.rfind("# TYPE cpuhpd_", 0) == 0) {
            continue;
        }
        EXPECT_TRUE(std::regex_match(line, sample_line)) << "line: " << line;
    }
    EXPECT_EQ(samples_of(text, "cpuhpd_holds"),
              std::vector<std::string>{"cpuhpd_holds " + std::to_string(hostile.size())});
    const auto held = samples_of(text, "cpuhpd_hold_cpus");
    ASSERT_EQ(held.size(), hostile.size()) << text;
    EXPECT_NE(std::find(held.begin(), held.end(),
                        "cpuhpd_hold_cpus{who=\"x\\\"} 1\\ncpuhpd_holds 999\\n# TYPE evil "
                        "counter\"} 1"),
              held.end())
        << text;
    EXPECT_NE(std::find(held.begin(), held.end(), "cpuhpd_hold_cpus{who=\"\\\\\"} 1"), held.end());
    EXPECT_NE(
        std::find(held.begin(), held.end(), "cpuhpd_hold_cpus{who=\"bad \xEF\xBF\xBD utf8\"} 1"),
        held.end());
    EXPECT_EQ(samples_of(text, "cpuhpd_active_profile_info"),
              std::vector<std::string>{"cpuhpd_active_profile_info{profile=\"x\\\"}\\n\"} 1"});
}

// Every bucket holds what the bounds below it hold (cumulative, never decreasing); +Inf holds
// every observation and equals _count; _sum is the sum. A duration on a bound is in it (le).
TEST(Metrics, HistogramBucketsAreCumulative) {
    Metrics m;
    std::uint64_t sum_us = 0;
    std::vector<std::uint64_t> durations = {0,           999,          1'000,       1'001,
                                            7'000,       2'500'000,    599'999'999, 600'000'000,
                                            600'000'001, 3'600'000'000};
    for (std::uint64_t bound : kDurationBucketsUs) {
        durations.push_back(bound);
    }
    for (std::uint64_t us : durations) {
        m.count(batch(Action::Online, StrategyKind::Bulk, std::chrono::microseconds(us),
                      CpuSet::single(1)));
        sum_us += us;
    }
    const std::string text = format_metrics(m);
    std::vector<std::string> buckets;
    for (const auto& line : samples_of(text, "cpuhpd_batch_duration_seconds_bucket")) {
        if (line.find("action=\"online\"") != std::string::npos) {
            buckets.push_back(line);
        }
    }
    ASSERT_EQ(buckets.size(), kDurationBucketsUs.size() + 1);
    std::uint64_t previous = 0;
    for (std::size_t i = 0; i < kDurationBucketsUs.size(); ++i) {
        const std::uint64_t expected = static_cast<std::uint64_t>(
            std::count_if(durations.begin(), durations.end(),
                          [&](std::uint64_t us) { return us <= kDurationBucketsUs[i]; }));
        EXPECT_NE(buckets[i].find("le=\"" + seconds_text(kDurationBucketsUs[i]) + "\""),
                  std::string::npos)
            << buckets[i];
        EXPECT_EQ(value_of(buckets[i]), expected) << buckets[i];
        EXPECT_GE(value_of(buckets[i]), previous) << buckets[i];
        previous = value_of(buckets[i]);
    }
    EXPECT_NE(buckets.back().find("le=\"+Inf\""), std::string::npos);
    EXPECT_EQ(value_of(buckets.back()), durations.size());
    EXPECT_EQ(samples_of(text, "cpuhpd_batch_duration_seconds_count"),
              (std::vector<std::string>{"cpuhpd_batch_duration_seconds_count{action=\"offline\"} 0",
                                        "cpuhpd_batch_duration_seconds_count{action=\"online\"} " +
                                            std::to_string(durations.size())}));
    EXPECT_EQ(samples_of(text, "cpuhpd_batch_duration_seconds_sum")[1],
              "cpuhpd_batch_duration_seconds_sum{action=\"online\"} " + seconds_text(sum_us));
    // The first bound is 1 ms, the last 10 min.
    EXPECT_EQ(kDurationBucketsUs.front(), 1'000u);
    EXPECT_EQ(kDurationBucketsUs.back(), 600'000'000u);
}

class MetricsFileTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("cpuhpd-metrics-test-" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string read(const std::filesystem::path& file) {
        std::ifstream in(file);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }
    std::vector<std::string> entries(const std::filesystem::path& dir) {
        std::vector<std::string> names;
        for (const auto& entry : std::filesystem::directory_iterator(dir)) {
            names.push_back(entry.path().filename().string());
        }
        return names;
    }
    std::filesystem::path dir_;
};

TEST_F(MetricsFileTest, ReplacesTheFileReadableByAllWithNothingLeftBeside) {
    const auto file = dir_ / "cpuhpd.prom";
    MetricsFile metrics(file);
    ASSERT_TRUE(metrics.update("a 1\n"));
    EXPECT_EQ(read(file), "a 1\n");
    const auto inode = [&] {
        struct stat st {};
        ::stat(file.c_str(), &st);
        return st.st_ino;
    };
    const auto first = inode();
    ASSERT_TRUE(metrics.update("a 2\n"));
    EXPECT_EQ(read(file), "a 2\n");
    EXPECT_NE(inode(), first);  // a new file renamed over the old one, not rewritten in place
    // The same text again is not written again.
    const auto second = inode();
    ASSERT_TRUE(metrics.update("a 2\n"));
    EXPECT_EQ(inode(), second);
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);  // node_exporter runs as another user
    EXPECT_EQ(entries(dir_), std::vector<std::string>{"cpuhpd.prom"});
}

TEST_F(MetricsFileTest, AFailureIsLoggedOnceAndTheNextChangeTriesAgain) {
    const auto missing = dir_ / "node-exporter";
    MetricsFile metrics(missing / "cpuhpd.prom");
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(metrics.update("a 1\n"));
    EXPECT_FALSE(metrics.update("a 2\n"));
    EXPECT_FALSE(metrics.update("a 3\n"));
    std::filesystem::create_directories(missing);
    EXPECT_TRUE(metrics.update("a 3\n"));  // the same text: it was never written
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(read(missing / "cpuhpd.prom"), "a 3\n");
    const std::string warning = "cannot write the metrics file " +
                                (missing / "cpuhpd.prom").string() +
                                " (create temporary file): No such file or directory";
    const auto first = log.find(warning);
    EXPECT_NE(first, std::string::npos) << log;
    EXPECT_EQ(log.find("cannot write", first + 1), std::string::npos) << log;  // once
    EXPECT_NE(log.find("writing the metrics file " + (missing / "cpuhpd.prom").string() + " again"),
              std::string::npos)
        << log;
}

}  // namespace
}  // namespace cpuhpd
