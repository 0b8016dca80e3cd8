// The daemon's numbers for Prometheus, as node_exporter's textfile collector reads them
// (config metrics_file): what the daemon counts (batches, their durations, recoveries), the
// gauges of the state now, and the formatter of the text exposition format (0.0.4). Pure:
// no I/O, no clock; metrics_file.h writes the text.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "enums.h"
#include "holds.h"
#include "machine.h"
#include "profiles.h"
#include "recovery.h"
#include "request.h"
#include "settings.h"

namespace cpuhpd {

// How a batch that wrote to the kernel ended: Ok (nothing failed or was cancelled), Partial
// (some CPUs failed, others changed), Failed (CPUs failed and none changed: an atomic
// rollback), Cancelled (nothing failed, a cancel left CPUs unwritten).
enum class BatchOutcome { Ok, Partial, Failed, Cancelled };
inline constexpr EnumNames<BatchOutcome, 4> kBatchOutcomeNames{{
    {BatchOutcome::Ok, "ok"},
    {BatchOutcome::Partial, "partial"},
    {BatchOutcome::Failed, "failed"},
    {BatchOutcome::Cancelled, "cancelled"},
}};
BatchOutcome outcome_of(const BatchReport& report);

// Upper bounds of the batch duration histogram's buckets, in microseconds: 1 ms to 10 min
// (then +Inf).
inline constexpr std::array<std::uint64_t, 18> kDurationBucketsUs{
    1'000,      2'500,      5'000,      10'000,      25'000,      50'000,
    100'000,    250'000,    500'000,    1'000'000,   2'500'000,   5'000'000,
    10'000'000, 30'000'000, 60'000'000, 120'000'000, 300'000'000, 600'000'000,
};

struct DurationHistogram {
    // Observations per bucket, not cumulative: [i] those above bound i-1 and at most bound
    // i; the last one those above every bound (+Inf).
    std::array<std::uint64_t, kDurationBucketsUs.size() + 1> in_bucket{};
    std::uint64_t sum_us = 0;
    std::uint64_t count = 0;
    void observe(std::uint64_t us);
};

// The state now, taken from the engine before each write.
struct MetricsGauges {
    std::size_t cpus_online = 0;
    std::size_t cpus_offline = 0;    // present, not online
    std::size_t cpus_held = 0;       // in any hold
    std::size_t cpus_protected = 0;  // protected_cpus that are present
    std::size_t holds = 0;
    std::map<std::string, std::size_t> held_cpus_by_who;  // a hold's `who` -> its CPUs
    std::optional<std::string> active_profile;
};

struct Metrics {
    // Counters since the daemon started.
    std::map<std::tuple<Action, StrategyKind, BatchOutcome>, std::uint64_t> batches;
    std::map<Action, DurationHistogram> durations;
    std::map<RecoveryOutcome, std::uint64_t> recoveries;
    std::int64_t start_time_s = 0;  // Unix time the daemon started
    MetricsGauges gauges;

    void count(const BatchReport& report);
    void count(const RecoveryReport& report);  // None (nothing to recover) is not counted
};

MetricsGauges gauges_of(const MachineState& state, const EngineSettings& settings,
                        const std::vector<Hold>& holds, const std::optional<ActiveProfile>& active);

// The text exposition format: every metric named cpuhpd_*, with HELP and TYPE lines; every
// label combination the daemon can produce is written from the start (at 0), so that
// rate() sees the first batch of each kind.
std::string format_metrics(const Metrics& metrics);

// A label value as the text format quotes it: backslash, double quote and newline escaped,
// bytes that are not UTF-8 replaced by U+FFFD (holder names and profile names are user
// input).
std::string escape_label_value(std::string_view value);

// Microseconds as seconds in the shortest exact decimal ("0.0025", "600", "1.5").
std::string seconds_text(std::uint64_t us);

}  // namespace cpuhpd
