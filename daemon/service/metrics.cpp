#include "metrics.h"

#include <algorithm>

namespace cpuhpd {

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), 0 when there is none.
std::size_t utf8_sequence(std::string_view s) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80) {
        return 1;
    }
    std::size_t length = 0;
    unsigned char low = 0x80;  // the range of the second byte
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        low = lead == 0xE0 ? 0xA0 : 0x80;
        high = lead == 0xED ? 0x9F : 0xBF;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        low = lead == 0xF0 ? 0x90 : 0x80;
        high = lead == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (s.size() < length || byte(1) < low || byte(1) > high) {
        return 0;
    }
    for (std::size_t i = 2; i < length; ++i) {
        if (byte(i) < 0x80 || byte(i) > 0xBF) {
            return 0;
        }
    }
    return length;
}

// Appends one metric family's HELP and TYPE lines.
void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

using Labels = std::vector<std::pair<std::string_view, std::string>>;

void sample(std::string& out, std::string_view name, const Labels& labels,
            const std::string& value) {
    out.append(name);
    if (!labels.empty()) {
        out.append("{");
        for (std::size_t i = 0; i < labels.size(); ++i) {
            out.append(i == 0 ? "" : ",").append(labels[i].first).append("=\"");
            out.append(escape_label_value(labels[i].second)).append("\"");
        }
        out.append("}");
    }
    out.append(" ").append(value).append("\n");
}

void sample(std::string& out, std::string_view name, const Labels& labels, std::uint64_t value) {
    sample(out, name, labels, std::to_string(value));
}

// The strategies a batch reports (Auto is only ever asked for).
std::vector<StrategyKind> batch_strategies() {
    std::vector<StrategyKind> out;
    for (const auto& entry : kStrategyNames) {
        if (entry.value != StrategyKind::Auto) {
            out.push_back(entry.value);
        }
    }
    return out;
}

void format_batches(std::string& out, const Metrics& m) {
    family(out, "cpuhpd_batches_total", "counter",
           "Batches that wrote to the kernel, by action, strategy and outcome (ok, partial: "
           "some CPUs failed, failed: none changed, cancelled).");
    for (const auto& action : kActionNames) {
        for (const StrategyKind strategy : batch_strategies()) {
            for (const auto& outcome : kBatchOutcomeNames) {
                const auto it = m.batches.find({action.value, strategy, outcome.value});
                sample(out, "cpuhpd_batches_total",
                       {{"action", std::string(action.name)},
                        {"strategy", to_string(strategy)},
                        {"outcome", std::string(outcome.name)}},
                       it == m.batches.end() ? 0 : it->second);
            }
        }
    }
}

void format_durations(std::string& out, const Metrics& m) {
    family(out, "cpuhpd_batch_duration_seconds", "histogram",
           "How long batches took, from their first write to their last (rollback included), "
           "by action.");
    for (const auto& action : kActionNames) {
        const auto it = m.durations.find(action.value);
        const DurationHistogram h = it == m.durations.end() ? DurationHistogram{} : it->second;
        const std::string name(action.name);
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < h.in_bucket.size(); ++i) {
            cumulative += h.in_bucket[i];
            const std::string le =
                i < kDurationBucketsUs.size() ? seconds_text(kDurationBucketsUs[i]) : "+Inf";
            sample(out, "cpuhpd_batch_duration_seconds_bucket", {{"action", name}, {"le", le}},
                   cumulative);
        }
        sample(out, "cpuhpd_batch_duration_seconds_sum", {{"action", name}},
               seconds_text(h.sum_us));
        sample(out, "cpuhpd_batch_duration_seconds_count", {{"action", name}}, h.count);
    }
}

void format_gauges(std::string& out, const MetricsGauges& g) {
    const struct {
        std::string_view name;
        std::string_view help;
        std::size_t value;
    } cpus[] = {
        {"cpuhpd_cpus_online", "CPUs online.", g.cpus_online},
        {"cpuhpd_cpus_offline", "CPUs present and offline.", g.cpus_offline},
        {"cpuhpd_cpus_held", "CPUs in a hold (only its holder may change them).", g.cpus_held},
        {"cpuhpd_cpus_protected", "Present CPUs of the config's protected_cpus.", g.cpus_protected},
        {"cpuhpd_holds", "Holds in force.", g.holds},
    };
    for (const auto& gauge : cpus) {
        family(out, gauge.name, "gauge", gauge.help);
        sample(out, gauge.name, {}, gauge.value);
    }
    family(out, "cpuhpd_hold_cpus", "gauge",
           "CPUs held, by the name the holders gave (who); no sample when nothing is held.");
    for (const auto& [who, count] : g.held_cpus_by_who) {
        sample(out, "cpuhpd_hold_cpus", {{"who", who}}, count);
    }
    family(out, "cpuhpd_active_profile_info", "gauge",
           "Always 1; the label profile names the profile in force (empty: none).");
    sample(out, "cpuhpd_active_profile_info", {{"profile", g.active_profile.value_or("")}}, 1);
}

void format_recoveries(std::string& out, const Metrics& m) {
    family(out, "cpuhpd_recoveries_total", "counter",
           "Start-up recoveries from a batch journal, by what was found (finished, stale, "
           "recovered: an interrupted batch undone or kept, rejected: an untrusted journal).");
    for (const auto& outcome : kRecoveryOutcomeNames) {
        if (outcome.value == RecoveryOutcome::None) {
            continue;
        }
        const auto it = m.recoveries.find(outcome.value);
        sample(out, "cpuhpd_recoveries_total", {{"outcome", std::string(outcome.name)}},
               it == m.recoveries.end() ? 0 : it->second);
    }
    family(out, "cpuhpd_start_time_seconds", "gauge",
           "When the daemon started, in seconds since the epoch; the counters count from there.");
    sample(out, "cpuhpd_start_time_seconds", {}, std::to_string(m.start_time_s));
}

}  // namespace

BatchOutcome outcome_of(const BatchReport& report) {
    if (!report.failed.empty()) {
        return report.changed.empty() ? BatchOutcome::Failed : BatchOutcome::Partial;
    }
    return report.cancelled.empty() ? BatchOutcome::Ok : BatchOutcome::Cancelled;
}

void DurationHistogram::observe(std::uint64_t us) {
    const auto bound = std::lower_bound(kDurationBucketsUs.begin(), kDurationBucketsUs.end(), us);
    ++in_bucket[static_cast<std::size_t>(bound - kDurationBucketsUs.begin())];
    sum_us += us;
    ++count;
}

void Metrics::count(const BatchReport& report) {
    ++batches[{report.action, report.strategy, outcome_of(report)}];
    durations[report.action].observe(
        static_cast<std::uint64_t>(std::max<std::int64_t>(report.duration.count(), 0)));
}

void Metrics::count(const RecoveryReport& report) {
    if (report.outcome != RecoveryOutcome::None) {
        ++recoveries[report.outcome];
    }
}

MetricsGauges gauges_of(const MachineState& state, const EngineSettings& settings,
                        const std::vector<Hold>& holds,
                        const std::optional<ActiveProfile>& active) {
    MetricsGauges g;
    g.cpus_online = state.online.count();
    g.cpus_offline = state.offline().count();
    g.cpus_protected = (settings.protected_cpus & state.present).count();
    CpuSet held;
    for (const Hold& hold : holds) {
        held |= hold.cpus;
        g.held_cpus_by_who[hold.who] += hold.cpus.count();
    }
    g.cpus_held = held.count();
    g.holds = holds.size();
    if (active) {
        g.active_profile = active->name;
    }
    return g;
}

std::string format_metrics(const Metrics& metrics) {
    std::string out;
    out.reserve(8192);
    format_batches(out, metrics);
    format_durations(out, metrics);
    format_gauges(out, metrics.gauges);
    format_recoveries(out, metrics);
    return out;
}

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    while (!value.empty()) {
        const std::size_t length = utf8_sequence(value);
        if (length == 0) {
            out.append("\xEF\xBF\xBD");  // U+FFFD for the byte that starts no character
            value.remove_prefix(1);
            continue;
        }
        const char c = value.front();
        if (c == '\\') {
            out.append("\\\\");
        } else if (c == '"') {
            out.append("\\\"");
        } else if (c == '\n') {
            out.append("\\n");
        } else {
            out.append(value.substr(0, length));
        }
        value.remove_prefix(length);
    }
    return out;
}

std::string seconds_text(std::uint64_t us) {
    std::string text = std::to_string(us / 1'000'000);
    std::string fraction = std::to_string(us % 1'000'000);
    fraction.insert(0, 6 - fraction.size(), '0');
    while (!fraction.empty() && fraction.back() == '0') {
        fraction.pop_back();
    }
    return fraction.empty() ? text : text + "." + fraction;
}

}  // namespace cpuhpd
