#include "pinned.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "batch_phases.h"
#include "engine_fixture.h"
#include "fake_proc.h"

namespace cpuhpd::test {
namespace {

std::vector<unsigned> tids(const Pinned& p) {
    std::vector<unsigned> out;
    for (const auto& t : p.tasks) {
        out.push_back(t.tid);
    }
    return out;
}

std::vector<unsigned> irqs(const Pinned& p) {
    std::vector<unsigned> out;
    for (const auto& i : p.irqs) {
        out.push_back(i.irq);
    }
    return out;
}

struct PinnedScan : ::testing::Test {
    FakeMachine m;  // for its temporary directory
    FakeProc& proc = m.proc;
};

TEST_F(PinnedScan, KeepsUserThreadsWhoseAffinityHasNoCpuLeftOnline) {
    proc.add_task(100, 100, "only-leaving", "8-11");
    proc.add_task(100, 101, "worker", "9");
    proc.add_task(200, 200, "one-stays", "7-8");
    proc.add_task(300, 300, "elsewhere", "1-3");
    proc.add_task(400, 400, "kworker/8:1", "8", true);
    const Pinned p = scan_pinned(proc.root(), CpuSet::range(8, 15), CpuSet::range(0, 7));
    EXPECT_EQ(tids(p), (std::vector<unsigned>{100, 101}));
    ASSERT_EQ(p.tasks.size(), 2u);
    EXPECT_EQ(p.tasks[0].comm, "only-leaving");
    EXPECT_EQ(p.tasks[0].cpus, CpuSet::range(8, 11));
}

TEST_F(PinnedScan, AffinityOnCpusAlreadyOfflineCountsAsNoCpu) {
    // CPU 12 is offline already (neither leaving nor staying): a task allowed on 11-12 has
    // nowhere to go once 11 leaves.
    proc.add_task(10, 10, "tail", "11-12");
    const Pinned p = scan_pinned(proc.root(), CpuSet::single(11), CpuSet::range(0, 10));
    EXPECT_EQ(tids(p), (std::vector<unsigned>{10}));
    // Nothing leaving that it may use: not ours to report.
    EXPECT_TRUE(scan_pinned(proc.root(), CpuSet::single(5), CpuSet::range(0, 4)).tasks.empty());
}

TEST_F(PinnedScan, CommWithParenthesesSpacesAndControlBytesIsParsedAndEscaped) {
    proc.add_task(7, 7, "a) (b\x1b", "9");
    const Pinned p = scan_pinned(proc.root(), CpuSet::single(9), CpuSet::range(0, 8));
    ASSERT_EQ(p.tasks.size(), 1u);
    EXPECT_EQ(p.tasks[0].comm, "a) (b\\x1b");
}

TEST_F(PinnedScan, IrqsWithTheirActionNames) {
    proc.add_irq(24, "9", {"virtio0-input.0"});
    proc.add_irq(25, "8-9", {"eth0", "eth0-shared"});
    proc.add_irq(26, "0-15", {"timer"});
    proc.add_irq(27, "10");
    const Pinned p = scan_pinned(proc.root(), CpuSet::range(8, 11), CpuSet::range(0, 7));
    EXPECT_EQ(irqs(p), (std::vector<unsigned>{24, 25, 27}));
    ASSERT_EQ(p.irqs.size(), 3u);
    EXPECT_EQ(p.irqs[0].name, "virtio0-input.0");
    EXPECT_EQ(p.irqs[1].name, "eth0,eth0-shared");
    EXPECT_EQ(p.irqs[2].name, "");
    EXPECT_EQ(p.irqs[1].cpus, CpuSet::range(8, 9));
}

TEST_F(PinnedScan, UnreadableOrMalformedEntriesAreSkippedNotFatal) {
    proc.add_task(1, 1, "good", "9");
    std::filesystem::create_directories(proc.root() / "2" / "task" / "2");  // ended meanwhile
    proc.add_task(3, 3, "bad", "9-x");
    std::filesystem::create_directories(proc.root() / "self");
    proc.add_irq(5, "garbage");
    const Pinned p = scan_pinned(proc.root(), CpuSet::single(9), CpuSet::range(0, 8));
    EXPECT_EQ(tids(p), (std::vector<unsigned>{1}));
    EXPECT_TRUE(p.irqs.empty());
    EXPECT_TRUE(scan_pinned("", CpuSet::single(9), {}).tasks.empty());
    EXPECT_TRUE(scan_pinned(proc.root() / "missing", CpuSet::single(9), {}).tasks.empty());
}

// Most threads allowed everywhere, a few pinned: each pinned one is found, with its own
// affinity and names, however many share an affinity (one verdict per distinct list) and
// however many processes there are.
TEST_F(PinnedScan, PinnedThreadsAmongManyUnpinnedAreEachFound) {
    for (unsigned pid = 1000; pid < 1000 + 2 * 600; pid += 2) {
        proc.add_task(pid, pid, "idle", "0-15");
        proc.add_task(pid, pid + 1, "idle", pid % 3 == 0 ? "0-7,8-15" : "0-15");
    }
    proc.add_task(1000, 5000, "first", "9");       // a thread of the first process
    proc.add_task(1600, 1601 + 4000, "mid", "9");  // same list, another process
    proc.add_task(2198, 2199 + 4000, "last", "8-11");
    proc.add_task(1500, 7000, "kworker/9:0", "9", true);
    proc.add_task(1502, 7001, "one-stays", "7-9");
    const Pinned p =
        scan_pinned(proc.root(), CpuSet::range(8, 11), CpuSet::range(0, 7) | set({12, 13, 14, 15}));
    EXPECT_EQ(tids(p), (std::vector<unsigned>{5000, 5601, 6199}));
    ASSERT_EQ(p.tasks.size(), 3u);
    EXPECT_EQ(p.tasks[0].pid, 1000u);
    EXPECT_EQ(p.tasks[1].pid, 1600u);
    EXPECT_EQ(p.tasks[1].comm, "mid");
    EXPECT_EQ(p.tasks[1].cpus, CpuSet::single(9));
    EXPECT_EQ(p.tasks[2].pid, 2198u);
    EXPECT_EQ(p.tasks[2].cpus, CpuSet::range(8, 11));
}

// A status longer than one read (thousands of supplementary groups come before the
// affinity), one without a newline at its end, and one with no affinity at all.
TEST_F(PinnedScan, TheAffinityIsFoundWhereverItIsInTheStatus) {
    proc.add_task(1, 1, "groups", "9");
    proc.add_task(2, 2, "tail", "9");
    proc.add_task(3, 3, "none", "9");
    const auto status = [&](unsigned pid) {
        return proc.root() / std::to_string(pid) / "task" / std::to_string(pid) / "status";
    };
    std::string groups = "Name:\tgroups\nGroups:\t";
    for (int g = 0; g < 3000; ++g) {
        groups += std::to_string(100000 + g) + " ";
    }
    ASSERT_GT(groups.size(), 3 * 4096u);
    std::ofstream(status(1))
        << groups << "\nCpus_allowed:\t200\nCpus_allowed_list:\t9\nMems_allowed_list:\t0\n";
    std::ofstream(status(2)) << "Name:\ttail\nCpus_allowed_list:\t9";
    std::ofstream(status(3)) << "Name:\tnone\nCpus_allowed:\t200\n";
    const Pinned p = scan_pinned(proc.root(), CpuSet::single(9), CpuSet::range(0, 8));
    EXPECT_EQ(tids(p), (std::vector<unsigned>{1, 2}));
    ASSERT_EQ(p.tasks.size(), 2u);
    EXPECT_EQ(p.tasks[0].cpus, CpuSet::single(9));
}

// The real /proc of this process: the affinity comes from sched_getaffinity(2) there, and a
// pinned thread's record from its status and stat files.
TEST(PinnedRealProc, ThreadsAndProcessesPinnedToALeavingCpuAreFoundAndOneThatMayStayIsNot) {
    cpu_set_t mine;
    ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
    CpuSet allowed;
    for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &mine)) {
            allowed.add(cpu);
        }
    }
    if (allowed.count() < 2) {
        GTEST_SKIP() << "this process may run on one CPU only (" << allowed
                     << "): no second CPU to pin a thread to";
    }
    const unsigned leaving_cpu = allowed.last();
    std::promise<void> done;
    const std::shared_future<void> finished = done.get_future().share();
    struct Probe {
        std::promise<pid_t> tid;
        std::thread thread;
    };
    auto start = [&](Probe& probe, bool pin) {
        std::future<pid_t> tid = probe.tid.get_future();
        probe.thread = std::thread([&probe, pin, leaving_cpu, finished] {
            ::pthread_setname_np(::pthread_self(), pin ? "pinned-probe" : "free-probe");
            if (pin) {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(leaving_cpu, &one);
                if (::pthread_setaffinity_np(::pthread_self(), sizeof one, &one) != 0) {
                    probe.tid.set_value(-1);
                    finished.wait();
                    return;
                }
            }
            probe.tid.set_value(::gettid());
            finished.wait();
        });
        return tid.get();
    };
    Probe pinned_probe, free_probe;
    const pid_t pinned_tid = start(pinned_probe, true);
    const pid_t free_tid = start(free_probe, false);
    // And a process of one thread (found without a listing of its task directory): pinned
    // by itself, it says so through the pipe and waits to be killed.
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(leaving_cpu, &one);
        const char ok = ::sched_setaffinity(0, sizeof one, &one) == 0 ? '1' : '0';
        ::prctl(PR_SET_NAME, "pinned-child");
        [[maybe_unused]] const ssize_t n = ::write(ready[1], &ok, 1);
        ::pause();
        ::_exit(0);
    }
    char child_ok = 0;
    const bool child_ready = ::read(ready[0], &child_ok, 1) == 1 && child_ok == '1';
    const Pinned p =
        scan_pinned("/proc", CpuSet::single(leaving_cpu), allowed - CpuSet::single(leaving_cpu));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ::close(ready[0]);
    ::close(ready[1]);
    done.set_value();
    pinned_probe.thread.join();
    free_probe.thread.join();
    ASSERT_TRUE(child_ready) << "the child could not pin itself to CPU " << leaving_cpu;
    const auto child_found = std::find_if(p.tasks.begin(), p.tasks.end(), [&](const PinnedTask& t) {
        return t.tid == static_cast<unsigned>(child);
    });
    ASSERT_NE(child_found, p.tasks.end())
        << "process " << child << " (one thread) pinned to CPU " << leaving_cpu << " was not found";
    EXPECT_EQ(child_found->comm, "pinned-child");
    EXPECT_EQ(child_found->pid, static_cast<unsigned>(child));
    EXPECT_EQ(child_found->cpus, CpuSet::single(leaving_cpu));
    ASSERT_GT(pinned_tid, 0) << "pthread_setaffinity_np to CPU " << leaving_cpu << " failed";
    const auto found = std::find_if(p.tasks.begin(), p.tasks.end(), [&](const PinnedTask& t) {
        return t.tid == static_cast<unsigned>(pinned_tid);
    });
    ASSERT_NE(found, p.tasks.end())
        << "thread " << pinned_tid << " pinned to CPU " << leaving_cpu << " was not found";
    EXPECT_EQ(found->comm, "pinned-probe");
    EXPECT_EQ(found->cpus, CpuSet::single(leaving_cpu));
    EXPECT_EQ(found->pid, static_cast<unsigned>(::getpid()));
    EXPECT_GT(found->start_time, 0u);
    for (const auto& t : p.tasks) {
        EXPECT_NE(t.tid, static_cast<unsigned>(free_tid)) << "an unpinned thread was reported";
        EXPECT_FALSE(t.cpus.intersects(allowed - CpuSet::single(leaving_cpu)))
            << "task " << t.tid << " (" << t.comm << ") on " << t.cpus << " may stay";
    }
    // The leaving CPU's own kernel threads are pinned to it too, and the kernel moves them
    // itself: its ksoftirqd, which every SMP kernel has, must not be reported.
    const std::string ksoftirqd = "ksoftirqd/" + std::to_string(leaving_cpu);
    std::optional<unsigned> ksoftirqd_pid;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        std::ifstream comm(entry.path() / "comm");
        std::string name;
        if (std::getline(comm, name) && name == ksoftirqd) {
            ksoftirqd_pid = static_cast<unsigned>(std::stoul(entry.path().filename().string()));
            break;
        }
    }
    ASSERT_TRUE(ksoftirqd_pid.has_value()) << "no " << ksoftirqd << " in /proc";
    for (const auto& t : p.tasks) {
        EXPECT_NE(t.tid, *ksoftirqd_pid) << "the kernel thread " << ksoftirqd << " was reported";
    }
}

TEST(PinnedNarrow, KeepsWhatTheSmallerChangeStillStrands) {
    Pinned all;
    all.tasks = {{1, "a", CpuSet::range(8, 9)}, {2, "b", CpuSet::single(12)}};
    all.irqs = {{30, "x", CpuSet::single(12)}};
    // Only 8-9 leave; 12 stays online.
    const Pinned p = narrow_pinned(all, CpuSet::range(8, 9), CpuSet::range(0, 7) | set({12}));
    EXPECT_EQ(tids(p), (std::vector<unsigned>{1}));
    EXPECT_TRUE(p.irqs.empty());
}

TEST(PinnedDescribe, NamesTheFirstFourThenCounts) {
    std::vector<PinnedTask> tasks;
    for (unsigned i = 1; i <= 6; ++i) {
        tasks.push_back({i, "t" + std::to_string(i), CpuSet::single(9)});
    }
    EXPECT_EQ(describe_pinned_tasks(tasks),
              "task 1 (t1) on CPU 9, task 2 (t2) on CPU 9, task 3 (t3) on CPU 9, task 4 (t4) on "
              "CPU 9 and 2 more");
}

// --- through the runner: the report of a real batch and of a dry run, refuse_pinned ---

TEST(PinnedBatch, AnOfflineResultListsWhatItsCpusStrand) {
    FakeMachine m;
    m.proc.add_task(500, 500, "pinned", "12-13");
    m.proc.add_task(501, 501, "free", "0-15");
    m.proc.add_irq(40, "13", {"nic"});
    auto a = m.request(Action::Offline, set({12}));
    auto b = m.request(Action::Offline, set({13}));
    const auto out = m.runner->run(1, {a, b});
    ASSERT_EQ(out.results.size(), 2u);
    // Both requests of the batch take a CPU of task 500 away: each says so.
    EXPECT_EQ(tids(out.results[0].pinned), (std::vector<unsigned>{500}));
    EXPECT_EQ(tids(out.results[1].pinned), (std::vector<unsigned>{500}));
    EXPECT_TRUE(out.results[0].pinned.irqs.empty());
    EXPECT_EQ(irqs(out.results[1].pinned), (std::vector<unsigned>{40}));
    EXPECT_FALSE(m.fs.online().contains(12));
    EXPECT_FALSE(m.fs.online().contains(13));
}

TEST(PinnedBatch, RefusePinnedRefusesOnlyTheRequestThatStrandsATaskAndTouchesNothingOfIt) {
    FakeMachine m;
    m.proc.add_task(500, 500, "pinned", "12-13");
    auto other = m.request(Action::Offline, set({4}));
    auto strict = m.request(Action::Offline, set({12, 13}));
    strict.refuse_pinned = true;
    const auto out = m.runner->run(1, {other, strict});
    ASSERT_TRUE(out.results[1].refusal);
    EXPECT_EQ(out.results[1].refusal->kind(), RefusalKind::Pinned);
    EXPECT_NE(std::string(out.results[1].refusal->what()).find("task 500 (pinned) on CPU 12-13"),
              std::string::npos)
        << out.results[1].refusal->what();
    EXPECT_EQ(result_for(out.results[1], 12).outcome, CpuOutcome::Refused);
    EXPECT_TRUE(m.fs.online().contains(12));
    EXPECT_TRUE(m.fs.online().contains(13));
    EXPECT_FALSE(m.fs.online().contains(4));
    EXPECT_FALSE(out.results[0].refusal);
}

TEST(PinnedBatch, RefusePinnedLetsThroughAChangeThatLeavesEachTaskACpu) {
    FakeMachine m;
    m.proc.add_task(500, 500, "pinned", "12-13");
    auto half = m.request(Action::Offline, set({12}));
    half.refuse_pinned = true;
    const auto out = m.runner->run(1, {half});
    EXPECT_FALSE(out.results[0].refusal);
    EXPECT_TRUE(out.results[0].pinned.tasks.empty());
    EXPECT_FALSE(m.fs.online().contains(12));
}

TEST(PinnedBatch, OnlineRequestsAreNotScanned) {
    FakeMachine m;
    m.fs.set_online(12, false);
    m.proc.add_task(500, 500, "pinned", "12");
    auto up = m.request(Action::Online, set({12}));
    up.refuse_pinned = true;
    const auto out = m.runner->run(1, {up});
    EXPECT_FALSE(out.results[0].refusal);
    EXPECT_TRUE(out.results[0].pinned.tasks.empty());
}

TEST(PinnedBatch, ADryRunListsAndRefusesAsTheBatchWould) {
    FakeMachine m;
    m.proc.add_task(500, 500, "pinned", "8-15");
    auto plan = m.request(Action::Offline, CpuSet::range(8, 15));
    plan.dry_run = true;
    const RequestResult r = m.runner->dry_run(plan, m.state());
    EXPECT_EQ(tids(r.pinned), (std::vector<unsigned>{500}));
    plan.refuse_pinned = true;
    try {
        m.runner->dry_run(plan, m.state());
        ADD_FAILURE() << "no refusal";
    } catch (const Refusal& refusal) {
        EXPECT_EQ(refusal.kind(), RefusalKind::Pinned);
    }
    EXPECT_EQ(m.fs.online(), CpuSet::range(0, 15));
}

}  // namespace
}  // namespace cpuhpd::test
