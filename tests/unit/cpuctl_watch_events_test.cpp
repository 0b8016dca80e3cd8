// cpuctl watch's lines for HoldViolated (the other events are checked through a real daemon
// in tests/integration/status_watch_test.cpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "watch_events.h"

namespace cpuctl {
namespace {

WatchEvent violation_event() {
    WatchEvent e;
    e.kind = WatchEvent::Kind::HoldViolated;
    e.time_us = 1796436918041695;  // 2026-12-05T...
    e.violation = HoldViolation{3, "live-update", ":1.16", "15", "15", "limited", 6};
    return e;
}

TEST(CpuctlWatchEvents, HoldViolatedAsText) {
    const std::string line = watch_line(violation_event(), false);
    EXPECT_NE(line.find("hold 3 violated: CPU 15 changed without cpuhpd (online now: 15), held "
                        "by live-update; limited (violation 6)"),
              std::string::npos)
        << line;
    EXPECT_EQ(line.rfind(iso_time(1796436918041695) + " ", 0), 0u) << line;
}

TEST(CpuctlWatchEvents, HoldViolatedAsJson) {
    const auto j = nlohmann::json::parse(watch_line(violation_event(), true));
    EXPECT_EQ(j.at("event"), "hold-violated");
    EXPECT_EQ(j.at("hold_id"), 3);
    EXPECT_EQ(j.at("who"), "live-update");
    EXPECT_EQ(j.at("holder"), ":1.16");
    EXPECT_EQ(j.at("cpus"), "15");
    EXPECT_EQ(j.at("online"), "15");
    EXPECT_EQ(j.at("action"), "limited");
    EXPECT_EQ(j.at("violations"), 6);
    EXPECT_EQ(watch_event_name(WatchEvent::Kind::HoldViolated), "hold-violated");
}

}  // namespace
}  // namespace cpuctl
