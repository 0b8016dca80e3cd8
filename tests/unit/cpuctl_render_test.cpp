#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "render_json.h"
#include "render_table.h"

namespace cpuctl {
namespace {

BatchReply sample_reply() {
    BatchReply r;
    r.action = "offline";
    r.mask = "4,6-7";
    r.mode = "atomic";
    r.strategy = "per-cpu";
    r.batch_id = 7;
    r.duration_us = 1234567;
    r.queued_us = 20412;
    r.outcome = "ok";
    r.order = {7, 6, 4};
    r.cpus = {{4, "changed", "", 0, "offline"},
              {6, "changed", "", 0, "offline"},
              {7, "unchanged", "", 0, "already offline"}};
    return r;
}

TEST(CpuctlRenderJson, BatchHasTheContractShape) {
    EXPECT_EQ(
        batch_json(sample_reply()),
        R"({"action":"offline","mask":"4,6-7","mode":"atomic","strategy":"per-cpu",)"
        R"("dry_run":false,"batch_id":7,"duration_us":1234567,"queued_us":20412,"outcome":"ok",)"
        R"("order":[7,6,4],"cpus":[{"cpu":4,"result":"changed","error":"","message":"offline"},)"
        R"({"cpu":6,"result":"changed","error":"","message":"offline"},)"
        R"({"cpu":7,"result":"unchanged","error":"","message":"already offline"}],)"
        R"("pinned_tasks":[],"pinned_irqs":[],"partitions":[],"affinity":[],"phases":{}})");
}

TEST(CpuctlRenderJson, EmptyBatchHasEmptyArrays) {
    BatchReply r;
    r.action = "online";
    r.outcome = "ok";
    r.dry_run = true;
    EXPECT_EQ(batch_json(r),
              R"({"action":"online","mask":"","mode":"","strategy":"","dry_run":true,)"
              R"("batch_id":0,"duration_us":0,"queued_us":0,"outcome":"ok","order":[],"cpus":[],)"
              R"("pinned_tasks":[],"pinned_irqs":[],"partitions":[],"affinity":[],"phases":{}})");
}

TEST(CpuctlRenderJson, BatchPhasesAreAnObjectInTheBatchsOrder) {
    BatchReply r = sample_reply();
    r.phases = {{"read", 120}, {"plan", 40}, {"journal", 300}, {"write", 2300}, {"admit", 0}};
    const std::string j = batch_json(r);
    EXPECT_NE(j.find(R"("phases":{"read":120,"plan":40,"journal":300,"write":2300,"admit":0}})"),
              std::string::npos)
        << j;
}

TEST(CpuctlRenderJson, BatchListsEveryPinnedTaskAndIrq) {
    BatchReply r = sample_reply();
    r.cpus.clear();
    r.pinned_tasks = {{812, "sleep", "8-15"}, {900, "a\"b\\x1b", "4"}};
    r.pinned_irqs = {{42, "eth0-rx-3,eth0-tx-3", "6"}, {43, "", "7"}};
    const std::string j = batch_json(r);
    EXPECT_NE(j.find(R"("cpus":[],"pinned_tasks":[{"tid":812,"comm":"sleep","cpus":"8-15"},)"
                     R"({"tid":900,"comm":"a\"b\\x1b","cpus":"4"}],)"
                     R"("pinned_irqs":[{"irq":42,"name":"eth0-rx-3,eth0-tx-3","cpus":"6"},)"
                     R"({"irq":43,"name":"","cpus":"7"}],)"),
              std::string::npos)
        << j;
    // All of them, not the first kMaxPinnedShown as in the table.
    r.pinned_tasks.assign(kMaxPinnedShown + 5, PinnedTask{1, "t", "1"});
    const std::string many = batch_json(r);
    std::size_t tids = 0;
    for (auto at = many.find(R"("tid":)"); at != std::string::npos;
         at = many.find(R"("tid":)", at + 1)) {
        ++tids;
    }
    EXPECT_EQ(tids, kMaxPinnedShown + 5);
}

TEST(CpuctlRenderJson, ProfileHasPinnedArrays) {
    ProfileReply r;
    r.profile = "lean";
    r.outcome = "ok";
    EXPECT_EQ(profile_json(r),
              R"({"profile":"lean","offline":"","online":"","taken":"","active":"",)"
              R"("outcome":"ok","dry_run":false,"duration_us":0,"cpus":[],)"
              R"("pinned_tasks":[],"pinned_irqs":[],"partitions":[],"affinity":[]})");
    r.pinned_tasks = {{812, "sleep", "8-15"}};
    r.pinned_irqs = {{43, "", "7"}};
    EXPECT_NE(profile_json(r).find(R"("pinned_tasks":[{"tid":812,"comm":"sleep","cpus":"8-15"}],)"
                                   R"("pinned_irqs":[{"irq":43,"name":"","cpus":"7"}],)"),
              std::string::npos)
        << profile_json(r);
}

TEST(CpuctlRenderJson, AffinityIsListed) {
    BatchReply r;
    r.affinity = {{"task", 291, "sh", "15", "restored", 0, "CPU 0-15 -> 15"}};
    EXPECT_NE(batch_json(r).find(R"("affinity":[{"kind":"task","id":291,"name":"sh","cpus":"15",)"
                                 R"("status":"restored","errno":0,"message":"CPU 0-15 -> 15"}],)"),
              std::string::npos)
        << batch_json(r);
    std::ostringstream table;
    render_affinity(table, r.affinity);
    EXPECT_EQ(table.str(), "affinity: task 291 (sh) CPU 15: restored: CPU 0-15 -> 15\n");
}

TEST(CpuctlRenderJson, PartitionsAreListed) {
    BatchReply r = sample_reply();
    r.partitions = {{"/rt", "10-15", "10-11"}};
    EXPECT_NE(
        batch_json(r).find(
            R"("partitions":[{"path":"/rt","before":"10-15","after":"10-11"}],"affinity":[],)"),
        std::string::npos)
        << batch_json(r);
}

TEST(CpuctlRenderTable, PartitionsGetALineEach) {
    std::ostringstream out;
    render_partitions(out, {{"/rt", "10-15", "10-11"}, {"/iso\x1b", "12", ""}});
    EXPECT_EQ(out.str(), "partition /rt: CPU 10-15 -> 10-11\npartition /iso\\x1b: CPU 12 -> -\n");
}

TEST(CpuctlRenderJson, StringsAreEscaped) {
    ErrorInfo e{"org.cpuhpd1.Error.InvalidMask", "bad \"mask\"\n\t\\ \x01 caf\xc3\xa9"};
    EXPECT_EQ(
        error_json(e),
        R"({"error":"org.cpuhpd1.Error.InvalidMask","message":"bad \"mask\"\n\t\\ \u0001 café"})");
}

TEST(CpuctlRenderJson, InvalidUtf8IsReplacedNotFatal) {
    ErrorInfo e{"x",
                "a\xff"
                "b"};
    EXPECT_EQ(error_json(e),
              "{\"error\":\"x\",\"message\":\"a\xef\xbf\xbd"
              "b\"}");
}

TEST(CpuctlRenderJson, Status) {
    Status s{"0-15", "", "0-15", "0-15", "0", "on", {"per-cpu", "smt"}, false, "none", "x",
             0,      {}, "",     "",     {},  {}};
    EXPECT_EQ(status_json(s),
              R"({"online":"0-15","offline":"","possible":"0-15","present":"0-15","protected":"0",)"
              R"("smt_control":"on","capabilities":["per-cpu","smt"],"busy":false,)"
              R"("last_recovery":{"outcome":"none","summary":"x","time_us":0},"holds":[],)"
              R"("profile":{"active":"","taken":""},)"
              R"("power_profiles":{"followed":false,"available":false,"profile":""},)"
              R"("batch":null})");
    s.holds = {HoldInfo{3, "4-7", "offline", "lu", "why", ":1.4", 5, true}};
    s.active_profile = "night";
    s.profile_cpus = "8-11";
    s.power_profiles = {true, true, "power-saver"};
    s.batch = {7, "offline", "13-15", 2, 1, 3, 9};
    const std::string j = status_json(s);
    EXPECT_NE(
        j.find(R"("holds":[{"hold_id":3,"cpus":"4-7","state":"offline","who":"lu","why":"why",)"
               R"("holder":":1.4","since_us":5,"restore":true}])"),
        std::string::npos)
        << j;
    EXPECT_NE(j.find(R"("profile":{"active":"night","taken":"8-11"})"), std::string::npos) << j;
    EXPECT_NE(j.find(R"("batch":{"batch_id":7,"action":"offline","cpus":"13-15","requests":2,)"
                     R"("done":1,"total":3,"since_us":9})"),
              std::string::npos)
        << j;
    Status empty;
    EXPECT_NE(status_json(empty).find(R"("capabilities":[])"), std::string::npos);
}

TEST(CpuctlRenderJson, Topology) {
    std::vector<TopologyCpu> cpus{{0, 0, 0, 0, 0, "0-1", true, false},
                                  {5, 1, 0, 2, -1, "5", false, true}};
    EXPECT_EQ(topology_json(cpus),
              R"({"cpus":[{"cpu":0,"package":0,"die":0,"core":0,"node":0,"siblings":"0-1",)"
              R"("online":true,"hotpluggable":false},{"cpu":5,"package":1,"die":0,"core":2,)"
              R"("node":-1,"siblings":"5","online":false,"hotpluggable":true}]})");
    EXPECT_EQ(topology_json({}), R"({"cpus":[]})");
}

HoldInfo sample_hold() {
    // 2026-12-02 08:40:12 UTC.
    return HoldInfo{3, "4-7", "offline", "live-update", "", ":1.42", 1796200812000000, true};
}

TEST(CpuctlRenderJson, HoldsAndRelease) {
    EXPECT_EQ(holds_json({sample_hold()}),
              R"({"holds":[{"hold_id":3,"cpus":"4-7","state":"offline","who":"live-update",)"
              R"("why":"","holder":":1.42","since_us":1796200812000000,"restore":true}]})");
    EXPECT_EQ(holds_json({}), R"({"holds":[]})");
    EXPECT_EQ(release_json(3, {CpuResult{4, "changed", "", 0, "online"}}),
              R"({"hold_id":3,"restored":[{"cpu":4,"result":"changed","error":"",)"
              R"("message":"online"}]})");
}

TEST(CpuctlRenderTable, HoldsAndRelease) {
    std::ostringstream out;
    render_holds_table(out, {sample_hold()});
    EXPECT_EQ(out.str(),
              "HOLD  CPUS  STATE    WHO          WHY  SINCE                    HOLDER  RESTORE\n"
              "3     4-7   offline  live-update  -    2026-12-02 08:40:12 UTC  :1.42   yes\n");
    std::ostringstream none;
    render_holds_table(none, {});
    EXPECT_EQ(none.str(), "no holds\n");
    EXPECT_EQ(release_summary_line(3, {CpuResult{4, "changed", "", 0, "online"},
                                       CpuResult{5, "failed", "EBUSY", 16, "busy"}}),
              "hold 3 released; restored 4; restore failed: 5");
    EXPECT_EQ(release_summary_line(3, {}), "hold 3 released; nothing to restore");
}

TEST(CpuctlRenderTable, BatchTableAndSummary) {
    std::ostringstream out;
    render_batch_table(out, sample_reply());
    EXPECT_EQ(out.str(),
              "CPU  RESULT     ERROR  MESSAGE\n"
              "4    changed    -      offline\n"
              "6    changed    -      offline\n"
              "7    unchanged  -      already offline\n"
              "offline 4,6-7: 2 changed, 1 unchanged in 1.234 s (strategy per-cpu, batch 7)\n");
}

TEST(CpuctlRenderTable, PartialSummaryNamesTheOutcomeAndFailuresNameTheCpu) {
    BatchReply r = sample_reply();
    r.outcome = "partial";
    r.duration_us = 5000;
    r.cpus[2] = {7, "failed", "EBUSY", 16, "Device or resource\nbusy"};
    EXPECT_EQ(batch_summary_line(r),
              "offline 4,6-7: 2 changed, 1 failed in 0.005 s (strategy per-cpu, batch 7, "
              "outcome partial)");
    std::ostringstream out;
    render_batch_table(out, r);
    EXPECT_NE(out.str().find("7    failed   EBUSY  Device or resource busy\n"), std::string::npos)
        << out.str();
    std::ostringstream err;
    render_batch_failures(err, r);
    EXPECT_EQ(err.str(), "cpuctl: CPU 7: offline failed: EBUSY (Device or resource busy)\n");
}

TEST(CpuctlRenderTable, NoFailureLinesWhenAllWent) {
    std::ostringstream err;
    render_batch_failures(err, sample_reply());
    EXPECT_EQ(err.str(), "");
}

TEST(CpuctlRenderTable, DryRunShowsStrategyAndOrder) {
    BatchReply r = sample_reply();
    r.dry_run = true;
    r.batch_id = 0;
    r.cpus.clear();
    std::ostringstream out;
    render_batch_table(out, r);
    EXPECT_EQ(out.str(),
              "strategy: per-cpu\n"
              "order:    7,6,4\n"
              "offline 4,6-7: dry run, 3 to change with strategy per-cpu, order 7,6,4\n");
}

TEST(CpuctlRenderTable, PinnedAfterTheSummary) {
    BatchReply r = sample_reply();
    r.pinned_tasks = {{812, "sleep", "8-15"}};
    r.pinned_irqs = {{42, "eth0-rx-3,eth0-tx-3", "6"}, {43, "", "7"}};
    std::ostringstream out;
    render_batch_table(out, r);
    EXPECT_EQ(out.str(),
              "CPU  RESULT     ERROR  MESSAGE\n"
              "4    changed    -      offline\n"
              "6    changed    -      offline\n"
              "7    unchanged  -      already offline\n"
              "offline 4,6-7: 2 changed, 1 unchanged in 1.234 s (strategy per-cpu, batch 7)\n"
              "pinned: task 812 (sleep) on CPU 8-15\n"
              "pinned: irq 42 (eth0-rx-3,eth0-tx-3) on CPU 6\n"
              "pinned: irq 43 on CPU 7\n");
}

TEST(CpuctlRenderTable, PinnedInADryRun) {
    BatchReply r = sample_reply();
    r.dry_run = true;
    r.cpus.clear();
    r.pinned_tasks = {{812, "sleep", "4"}};
    std::ostringstream out;
    render_batch_table(out, r);
    EXPECT_EQ(out.str(),
              "strategy: per-cpu\n"
              "order:    7,6,4\n"
              "offline 4,6-7: dry run, 3 to change with strategy per-cpu, order 7,6,4\n"
              "pinned: task 812 (sleep) on CPU 4\n");
}

TEST(CpuctlRenderTable, PinnedNamesAreEscaped) {
    std::ostringstream out;
    // A terminal escape, a newline and UTF-8 (a task may name itself anything), and a name
    // the daemon escaped already, which stays as it is.
    render_pinned(out, {{7, "\x1b[31mred\nx", "1"}, {8, "caf\xc3\xa9", "2"}, {9, "a\\x1bb", "3"}},
                  {{5, "bad\tirq", "0"}});
    EXPECT_EQ(out.str(),
              "pinned: task 7 (\\x1b[31mred\\x0ax) on CPU 1\n"
              "pinned: task 8 (caf\\xc3\\xa9) on CPU 2\n"
              "pinned: task 9 (a\\x1bb) on CPU 3\n"
              "pinned: irq 5 (bad\\x09irq) on CPU 0\n");
}

TEST(CpuctlRenderTable, PinnedListsAreCut) {
    std::vector<PinnedTask> tasks;
    for (std::uint32_t tid = 100; tid < 100 + kMaxPinnedShown + 3; ++tid) {
        tasks.push_back({tid, "worker", "8-15"});
    }
    std::vector<PinnedIrq> irqs;
    for (std::uint32_t irq = 1; irq <= kMaxPinnedShown + 1; ++irq) {
        irqs.push_back({irq, "", "9"});
    }
    std::ostringstream out;
    render_pinned(out, tasks, irqs);
    const std::string text = out.str();
    EXPECT_EQ(kMaxPinnedShown, 32u);
    EXPECT_NE(text.find("pinned: task 131 (worker) on CPU 8-15\n"
                        "pinned: ... and 3 more tasks\n"
                        "pinned: irq 1 on CPU 9\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("pinned: task 132 "), std::string::npos) << text;
    EXPECT_TRUE(text.ends_with("pinned: irq 32 on CPU 9\npinned: ... and 1 more irq\n")) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2 * 32 + 2);

    std::ostringstream exact;  // exactly the limit: no "more" line
    tasks.resize(kMaxPinnedShown);
    render_pinned(exact, tasks, {});
    EXPECT_EQ(exact.str().find("more"), std::string::npos);

    std::ostringstream none;
    render_pinned(none, {}, {});
    EXPECT_EQ(none.str(), "");
}

TEST(CpuctlRenderTable, Status) {
    Status s{"0-1",
             "2-3",
             "0-3",
             "0-3",
             "0",
             "",
             {"bulk", "smt", "per-cpu"},
             true,
             "recovered",
             "batch 3 (offline 2-3 via per-cpu) was interrupted",
             0,
             {HoldInfo{3, "2-3", "offline", "lu", "kernel update", ":1.4", 0, true}},
             "night",
             "8-11",
             {true, false, ""},
             {7, "online", "2-3", 1, 1, 2, 0}};
    std::ostringstream out;
    render_status_table(out, s);
    EXPECT_EQ(
        out.str(),
        "online:          0-1\n"
        "offline:         2-3\n"
        "possible:        0-3\n"
        "present:         0-3\n"
        "protected:       0\n"
        "smt control:     -\n"
        "capabilities:    bulk smt per-cpu\n"
        "busy:            yes\n"
        "last recovery:   recovered: batch 3 (offline 2-3 via per-cpu) was interrupted\n"
        "holds:           1\n"
        "hold 3:          offline 2-3, by lu (kernel update), since 1970-01-01 00:00:00 UTC\n"
        "profile:         night (took 8-11)\n"
        "power profiles:  followed; power-profiles-daemon is not on the bus\n"
        "batch:           7: online 2-3, 1 request, 1/2 done, since 1970-01-01 00:00:00 UTC\n");
}

TEST(CpuctlRenderTable, Topology) {
    std::ostringstream out;
    render_topology_table(
        out, {{0, 0, 0, 0, 0, "0-1", true, false}, {13, 1, 0, 6, -1, "", false, true}});
    EXPECT_EQ(out.str(),
              "CPU  NODE  PACKAGE  DIE  CORE  SIBLINGS  ONLINE  HOTPLUG\n"
              "0    0     0        0    0     0-1       yes     no\n"
              "13   -     1        0    6     -         no      yes\n");
}

TEST(CpuctlRenderTable, ErrorMessages) {
    const std::string bus = "the system bus (unix:path=/run/dbus/system_bus_socket)";
    EXPECT_EQ(describe_error({"org.freedesktop.DBus.Error.ServiceUnknown", "x"}, bus),
              "cpuhpd is not running (no owner of org.cpuhpd1 on " + bus + ")");
    EXPECT_EQ(describe_error({"org.freedesktop.DBus.Error.NameHasNoOwner", "x"}, bus),
              "cpuhpd is not running (no owner of org.cpuhpd1 on " + bus + ")");
    EXPECT_EQ(describe_error({"org.freedesktop.DBus.Error.AccessDenied", "uid 1000 may not"}, bus),
              "permission denied: uid 1000 may not (run as root, or have a polkit rule grant the "
              "action)");
    EXPECT_EQ(describe_error({"org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
                              "Offline needs authentication"},
                             bus),
              "authentication required: Offline needs authentication (cpuctl does not ask for a "
              "password: run as root, or have a polkit rule grant the action)");
    EXPECT_EQ(describe_error({"org.freedesktop.DBus.Error.NoServer", "Failed to open bus"}, bus),
              "cannot connect to " + bus + ": Failed to open bus");
    EXPECT_EQ(describe_error({"org.cpuhpd1.Error.ProtectedCpu", "CPU 0 is protected"}, bus),
              "org.cpuhpd1.Error.ProtectedCpu: CPU 0 is protected");
}

}  // namespace
}  // namespace cpuctl
