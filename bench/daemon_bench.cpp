// cpuhpd-bench: the daemon's own costs, on the host. The real cpuhpd runs on a fake sysfs
// tree (16 CPUs) on a private dbus-daemon (the integration-test harness, World); the
// engine's parse + plan runs in-process on an 8192-CPU fake tree (the tests'
// FakeSysfs). Nothing touches the host's CPUs.
//
//   cpuhpd-bench [--quick] [--out FILE.csv]
//
// Prints one CSV row per figure: metric,value,unit,goal,met. Goals (issue 8): no-op round
// trip < 2 ms median, parse + plan < 1 ms, RSS < 10 MiB, 0 idle wake-ups, no growth
// after the storm.
#include <poll.h>
#include <systemd/sd-bus.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_figures.h"
#include "enums.h"
#include "fake_sysfs.h"
#include "harness/raw_client.h"
#include "harness/world.h"
#include "machine.h"
#include "planner.h"
#include "selector.h"
#include "settings.h"
#include "topology.h"

namespace {

using cpuhpd::bench::Clock;
using cpuhpd::bench::ms_since;
using cpuhpd::bench::percentile;
using cpuhpd::bench::Rows;
using namespace std::chrono_literals;
namespace itest = cpuhpd::itest;

// A field of /proc/PID/status (or of a task's status), in its unit (kB for VmRSS).
long status_field(const std::filesystem::path& status, const std::string& key) {
    std::ifstream in(status);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key + ":", 0) == 0) {
            return std::stol(line.substr(key.size() + 1));
        }
    }
    return -1;
}

long rss_kib(pid_t pid) {
    return status_field("/proc/" + std::to_string(pid) + "/status", "VmRSS");
}

// Context switches of every thread of the process: each is a wake-up (or preemption).
long context_switches(pid_t pid) {
    long sum = 0;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
        sum += status_field(task.path() / "status", "voluntary_ctxt_switches");
        sum += status_field(task.path() / "status", "nonvoluntary_ctxt_switches");
    }
    return sum;
}

// "No growth", read as: at most 100 KiB more resident (page and allocator granularity).
constexpr long kNoGrowthKib = 100;
constexpr const char* kNoGrowth = "no growth (<= 0.1 MiB)";

const char* yes_no(bool b) {
    return b ? "yes" : "no";
}

// ---------------------------------------------------------------- parse + plan
void parse_and_plan(Rows& rows, bool quick) {
    cpuhpd::test::FakeTopology topo;
    topo.packages = 2;
    topo.cores_per_package = 2048;
    topo.threads_per_core = 2;  // 8192 CPUs
    cpuhpd::test::FakeSysfs fs(topo);
    cpuhpd::TopologyMemory memory(fs.root() / "topology.cache");
    const cpuhpd::MachineState machine = cpuhpd::read_machine(fs.paths(), memory);
    const cpuhpd::EngineSettings settings;
    const std::vector<std::pair<std::string, std::string>> masks = {
        {"parse+plan 8192-CPU mask 1-8191 (median)", "1-8191"},
        {"parse+plan 8192-CPU mask 1-8191:1/2 (median)", "1-8191:1/2"},
        {"parse+plan 8192-CPU selector all (median)", "all"},
    };
    for (const auto& [name, mask] : masks) {
        std::vector<double> t, t_select, t_validate, t_plan;
        const int reps = quick ? 3 : 200;  // quick: a smoke run, maybe under ASan (seconds each)
        std::size_t planned = 0;
        for (int i = 0; i < reps; ++i) {
            const auto t0 = Clock::now();
            cpuhpd::Request request;
            request.action = cpuhpd::Action::Offline;
            request.mask = mask;
            const cpuhpd::MaskSelection selection = cpuhpd::select_mask(mask, machine);
            request.cpus = selection.cpus;
            request.selected_only = selection.cpus - selection.named;
            const auto t1 = Clock::now();
            cpuhpd::narrow_to_eligible(request, machine, settings);
            cpuhpd::validate(request, machine, settings);
            const auto t2 = Clock::now();
            const cpuhpd::Plan plan = cpuhpd::make_plan(
                request.action, request.cpus, cpuhpd::StrategyKind::Auto, machine, settings);
            t.push_back(ms_since(t0));
            t_select.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
            t_validate.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
            t_plan.push_back(ms_since(t2));
            planned = plan.order.size();
        }
        const double m = percentile(t, 50);
        const std::string base = name.substr(0, name.size() - 9);
        rows.add(name, m, "ms", "< 1 ms", yes_no(m < 1.0));
        rows.add(base + " (p99)", percentile(t, 99), "ms");
        rows.add(base + ": select_mask (median)", percentile(t_select, 50), "ms");
        rows.add(base + ": narrow_to_eligible + validate (median)", percentile(t_validate, 50),
                 "ms");
        rows.add(base + ": make_plan (median)", percentile(t_plan, 50), "ms");
        std::cerr << "cpuhpd-bench:   (" << mask << ": " << planned << " CPUs planned)\n";
    }
}

// ---------------------------------------------------------------- round trips
void round_trips(Rows& rows, itest::World& w, const std::string& tag, int n, int n_cpuctl) {
    itest::RawClient client(w.bus_address());
    std::vector<double> t;
    for (int i = 0; i < n; ++i) {
        const auto t0 = Clock::now();
        const itest::CallResult r = client.call("Online", "1");  // already online: a no-op
        t.push_back(ms_since(t0));
        if (!r.ok) {
            throw std::runtime_error("no-op Online failed: " + r.describe());
        }
    }
    const double m = percentile(t, 50);
    rows.add("no-op Online round trip, raw sd-bus, " + tag + " (median)", m, "ms", "< 2 ms",
             yes_no(m < 2.0));
    rows.add("no-op Online round trip, raw sd-bus, " + tag + " (p99)", percentile(t, 99), "ms");
    t.clear();
    for (int i = 0; i < n; ++i) {
        const auto t0 = Clock::now();
        client.get_string("Online");
        t.push_back(ms_since(t0));
    }
    rows.add("status (Online property) round trip, raw sd-bus, " + tag + " (median)",
             percentile(t, 50), "ms");
    rows.add("status (Online property) round trip, raw sd-bus, " + tag + " (p99)",
             percentile(t, 99), "ms");
    if (n_cpuctl > 0) {
        t.clear();
        for (int i = 0; i < n_cpuctl; ++i) {
            const auto t0 = Clock::now();
            const itest::RunResult r = w.cpuctl({"online", "1"});
            t.push_back(ms_since(t0));
            if (r.exit_code != 0) {
                throw std::runtime_error("cpuctl online 1: " + r.describe());
            }
        }
        const double cm = percentile(t, 50);
        rows.add("no-op cpuctl online 1, process start to exit, " + tag + " (median)", cm, "ms",
                 "< 2 ms", yes_no(cm < 2.0));
        rows.add("no-op cpuctl online 1, process start to exit, " + tag + " (p99)",
                 percentile(t, 99), "ms");
    }
}

// ---------------------------------------------------------------- 1000 callers
struct StormCall {
    Clock::time_point sent;
    double ms = -1;
    bool error = false;
    std::string error_name;
};

int on_storm_reply(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* c = static_cast<StormCall*>(userdata);
    c->ms = ms_since(c->sent);
    if (sd_bus_message_is_method_error(m, nullptr)) {
        c->error = true;
        const sd_bus_error* e = sd_bus_message_get_error(m);
        c->error_name = e && e->name ? e->name : "?";
    }
    return 0;
}

void storm(Rows& rows, itest::World& w, int callers) {
    std::vector<std::unique_ptr<itest::RawClient>> clients;
    clients.reserve(static_cast<std::size_t>(callers));
    for (int i = 0; i < callers; ++i) {
        clients.push_back(std::make_unique<itest::RawClient>(w.bus_address()));
    }
    // Status latency from a separate connection and thread, during the storm.
    std::atomic<bool> stop{false};
    std::vector<double> status_ms;
    std::thread poller([&] {
        itest::RawClient c(w.bus_address());
        while (!stop) {
            const auto t0 = Clock::now();
            try {
                c.get_string("Online");
            } catch (const std::exception&) {
                // counted as a slow sample: the time until the error
            }
            status_ms.push_back(ms_since(t0));
            std::this_thread::sleep_for(5ms);
        }
    });
    std::this_thread::sleep_for(50ms);
    std::vector<StormCall> calls(static_cast<std::size_t>(callers));
    std::vector<sd_bus_slot*> slots(static_cast<std::size_t>(callers), nullptr);
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < clients.size(); ++i) {
        calls[i].sent = Clock::now();
        sd_bus_message* msg = nullptr;
        sd_bus* bus = clients[i]->bus();
        int r = sd_bus_message_new_method_call(bus, &msg, "org.cpuhpd1", "/org/cpuhpd1",
                                               "org.cpuhpd1.Manager", "Online");
        if (r >= 0) {
            r = sd_bus_message_append(msg, "sa{sv}", "1", 0);
        }
        if (r >= 0) {
            r = sd_bus_call_async(bus, &slots[i], msg, on_storm_reply, &calls[i], 120'000'000);
        }
        sd_bus_message_unref(msg);
        if (r < 0) {
            throw std::runtime_error(std::string("storm: call_async: ") + std::strerror(-r));
        }
        sd_bus_flush(bus);
    }
    const double sent_ms = ms_since(t0);
    std::size_t done = 0;
    const auto deadline = Clock::now() + 120s;
    std::vector<pollfd> fds(clients.size());
    while (done < clients.size() && Clock::now() < deadline) {
        for (std::size_t i = 0; i < clients.size(); ++i) {
            while (sd_bus_process(clients[i]->bus(), nullptr) > 0) {
            }
            fds[i] = {sd_bus_get_fd(clients[i]->bus()),
                      static_cast<short>(sd_bus_get_events(clients[i]->bus())), 0};
        }
        done = static_cast<std::size_t>(std::count_if(
            calls.begin(), calls.end(), [](const StormCall& c) { return c.ms >= 0; }));
        if (done < clients.size()) {
            ::poll(fds.data(), fds.size(), 100);
        }
    }
    const double last_ms = ms_since(t0);
    stop = true;
    poller.join();
    for (sd_bus_slot* s : slots) {
        sd_bus_slot_unref(s);
    }
    std::vector<double> ok_ms;
    std::size_t errors = 0;
    std::string error_names;
    for (const auto& c : calls) {
        if (c.ms < 0) {
            continue;
        }
        if (c.error) {
            ++errors;
            if (error_names.find(c.error_name) == std::string::npos) {
                error_names += (error_names.empty() ? "" : " ") + c.error_name;
            }
        } else {
            ok_ms.push_back(c.ms);
        }
    }
    const std::string tag = std::to_string(callers) + " concurrent callers";
    rows.add(tag + ": time to send every call", sent_ms, "ms");
    rows.add(tag + ": time to the last reply", last_ms, "ms");
    rows.add(tag + ": replies received", static_cast<double>(done), "calls",
             std::to_string(callers), yes_no(done == clients.size()));
    rows.add(tag + ": of which errors (" + (error_names.empty() ? "none" : error_names) + ")",
             static_cast<double>(errors), "calls");
    rows.add(tag + ": reply latency of successful calls (median)", percentile(ok_ms, 50), "ms");
    rows.add(tag + ": reply latency of successful calls (p99)", percentile(ok_ms, 99), "ms");
    rows.add(tag + ": status latency during the storm (median)", percentile(status_ms, 50), "ms");
    rows.add(tag + ": status latency during the storm (max)", percentile(status_ms, 100), "ms");
}

// A private bus with room for the storm's callers (dbus-daemon's defaults cap one uid at 256
// connections) and cpuhpd on it with min_online 1, logging at info.
void start_world(itest::World& w, unsigned coalesce_ms) {
    w.start_bus(false,
                "  <limit name=\"max_connections_per_user\">4096</limit>\n"
                "  <limit name=\"max_completed_connections\">4096</limit>\n"
                "  <limit name=\"max_incomplete_connections\">4096</limit>\n"
                "  <limit name=\"max_replies_per_connection\">4096</limit>\n"
                "  <limit name=\"max_match_rules_per_connection\">4096</limit>\n");
    itest::DaemonConfig config;
    config.min_online = 1;
    config.coalesce_ms = coalesce_ms;
    config.log_level = "info";
    w.start_daemon(config);
}

// The resident-set rows: the size against the 10 MiB goal, and the growth since `before`.
void add_rss(Rows& rows, const std::string& metric, long kib) {
    rows.add(metric, static_cast<double>(kib) / 1024.0, "MiB", "< 10 MiB", yes_no(kib < 10 * 1024));
}

void add_rss_growth(Rows& rows, const std::string& metric, long before, long after) {
    rows.add(metric, static_cast<double>(after - before) / 1024.0, "MiB", kNoGrowth,
             yes_no(after - before <= kNoGrowthKib));
}

void daemon_figures(Rows& rows, bool quick) {
    // 1. The shipped defaults (coalesce_ms 20): idle, round trips, storm, memory.
    {
        itest::World w;
        start_world(w, itest::DaemonConfig{}.coalesce_ms);
        const pid_t pid = w.daemon().pid();
        std::this_thread::sleep_for(2s);
        add_rss(rows, "RSS at rest", rss_kib(pid));
        const int idle_s = quick ? 10 : 60;
        const long cs0 = context_switches(pid);
        std::this_thread::sleep_for(std::chrono::seconds(idle_s));
        const double per_min = static_cast<double>(context_switches(pid) - cs0) * 60.0 / idle_s;
        rows.add("idle wake-ups (context switches of every thread, over " + std::to_string(idle_s) +
                     " s, per minute)",
                 per_min, "per min", "0", yes_no(per_min == 0));
        round_trips(rows, w, "coalesce_ms 20 (default)", quick ? 50 : 300, quick ? 5 : 50);
        const long before = rss_kib(pid);
        storm(rows, w, 1000);
        std::this_thread::sleep_for(2s);
        const long after = rss_kib(pid);
        add_rss(rows, "RSS after the storm", after);
        add_rss_growth(rows, "RSS growth over the storm", before, after);
    }
    // 2. coalesce_ms 0: the service's own per-request cost, and 10,000 requests.
    {
        itest::World w;
        start_world(w, 0);
        const pid_t pid = w.daemon().pid();
        round_trips(rows, w, "coalesce_ms 0", quick ? 50 : 1000, 0);
        const long before = rss_kib(pid);
        const int n = quick ? 1000 : 10000;
        itest::RawClient client(w.bus_address());
        const auto t0 = Clock::now();
        for (int i = 0; i < n; ++i) {
            if (!client.call("Online", "1").ok) {
                throw std::runtime_error("request " + std::to_string(i) + " failed");
            }
        }
        rows.add(std::to_string(n) + " sequential no-op requests, coalesce_ms 0: total",
                 ms_since(t0), "ms");
        const long after = rss_kib(pid);
        add_rss(rows, "RSS after " + std::to_string(n) + " requests", after);
        add_rss_growth(rows, "RSS growth over " + std::to_string(n) + " requests", before, after);
    }
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    std::string out_file;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--quick") {
            quick = true;
        } else if (a == "--out" && i + 1 < argc) {
            out_file = argv[++i];
        } else {
            std::cerr << "usage: cpuhpd-bench [--quick] [--out FILE.csv]\n";
            return 2;
        }
    }
    Rows rows("cpuhpd-bench");
    try {
        parse_and_plan(rows, quick);
        daemon_figures(rows, quick);
    } catch (const std::exception& e) {
        std::cerr << "cpuhpd-bench: error: " << e.what() << '\n';
        return 1;
    }
    rows.write(out_file);
    return 0;
}
