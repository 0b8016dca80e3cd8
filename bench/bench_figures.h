// What cpuhpd-bench and cpuhpd-scan-bench share: the clock, the percentile of a set of
// samples and the CSV rows both print (metric,value,unit,goal,met).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace cpuhpd::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The `p`th percentile (0-100) of `v`, nearest rank; 0 for no samples.
inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

// One CSV row per figure, each also told on stderr as "TOOL: metric = value unit".
class Rows {
public:
    explicit Rows(std::string tool) : tool_(std::move(tool)) {
        out_ << "metric,value,unit,goal,met\n";
    }

    void add(const std::string& metric, double value, const std::string& unit,
             const std::string& goal = "", const std::string& met = "") {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3f", value);
        // The metric names have commas: quote them (CSV, RFC 4180).
        out_ << '"' << metric << "\"," << buf << ',' << unit << ',' << goal << ',' << met << '\n';
        std::cerr << tool_ << ": " << metric << " = " << buf << ' ' << unit
                  << (goal.empty() ? "" : " (goal " + goal + ": " + met + ")") << '\n';
    }

    // Median, then min and max, of `samples` (in ms); returns the median.
    double add_spread(const std::string& metric, const std::vector<double>& samples,
                      const std::string& goal = "", const std::string& met = "") {
        const double m = percentile(samples, 50);
        add(metric + " (median)", m, "ms", goal, met);
        add(metric + " (min)", percentile(samples, 0), "ms");
        add(metric + " (max)", percentile(samples, 100), "ms");
        return m;
    }

    // The rows to `file`, or to stdout when it is empty.
    void write(const std::string& file) const {
        if (file.empty()) {
            std::cout << out_.str();
        } else {
            std::ofstream(file) << out_.str();
        }
    }

private:
    std::string tool_;
    std::ostringstream out_;
};

}  // namespace cpuhpd::bench
