// cpuhpd-scan-bench: the daemon's per-batch cost against the number of tasks and cgroups
// (issue 31, item 2), on the host and in-process. A fake sysfs tree with 64 CPUs (the
// tests' FakeSysfs), a fake /proc with N threads (PID/task/TID/{stat,status} shaped as the
// kernel prints them, a few pinned to one CPU, most allowed on all 64; 128 IRQs) and a
// fake cgroup v2 tree with M cgroups (a few cpuset partitions, most plain; cpuset enabled
// in some subtree_control files, not in others, as systemd leaves them) are built once per
// size in a temp dir (/dev/shm when there is one) and reused for every run. One offline
// batch of CPUs 38-41 (which shrinks two partitions and strands the threads pinned there)
// and the online batch that brings them back run through BatchRunner, as the engine runs
// them; the fake sysfs writes are plain file writes, so the whole batch is daemon cost.
// The two scans are also timed alone.
//
//   cpuhpd-scan-bench [--quick] [--runs N] [--dir DIR] [--keep] [--real-threads N]
//                     [--real-processes N] [--out FILE.csv]
//
// Then the host's real /proc, with sleeping threads and processes of the bench's own added
// (10,000 threads of its own process and 2,000 forked processes of one thread by default,
// 1,000 and 200 with --quick; 8 of each pinned to CPU 1): scan_pinned beside the floor of
// reading each thread's status file once and beside the system calls it cannot do without
// (ask_every_thread_ms).
//
// Prints one CSV row per figure (metric,value,unit,goal,met), as cpuhpd-bench does: the
// median of the runs, and its spread (min and max) in rows of their own. Goal (issue 31):
// offline + online batch <= 20 ms at 50,000 tasks and 10,000 cgroups, and within 2x of the
// figure at 100 tasks and 10 cgroups.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attribute_at.h"
#include "batch_runner.h"
#include "bench_figures.h"
#include "fake_sysfs.h"
#include "journal_file.h"
#include "machine.h"
#include "partitions.h"
#include "pinned.h"
#include "topology.h"

namespace {

namespace fs = std::filesystem;
using cpuhpd::bench::Clock;
using cpuhpd::bench::ms_since;
using cpuhpd::bench::Rows;

constexpr unsigned kCpus = 64;
constexpr unsigned kThreadsPerProcess = 4;
constexpr unsigned kIrqs = 128;
const cpuhpd::CpuSet kLeaving = cpuhpd::CpuSet::range(38, 41);

// CPU time of the whole process (every thread), in ms: less hostage to a busy host than
// the wall clock.
double cpu_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// The affinity of one CPU, for the sleepers the bench pins.
cpu_set_t only_cpu(unsigned cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return set;
}

// Processes of one thread, forked from this one, that sleep until killed: `count` of them,
// the first `pinned` pinned to `pin_cpu` (most processes of a host have one thread, and the
// scan reads them without a listing of their task directory).
class SleepingProcesses {
public:
    SleepingProcesses(unsigned count, unsigned pinned, unsigned pin_cpu) {
        for (unsigned i = 0; i < count; ++i) {
            const pid_t child = ::fork();
            if (child < 0) {
                break;  // pid_max or the process limit: as many as the host allows
            }
            if (child == 0) {
                ::pause();
                ::_exit(0);
            }
            children_.push_back(child);
            if (i < pinned) {
                const cpu_set_t set = only_cpu(pin_cpu);
                if (::sched_setaffinity(child, sizeof set, &set) == 0) {
                    ++pinned_;
                }
            }
        }
    }
    ~SleepingProcesses() {
        for (const pid_t child : children_) {
            ::kill(child, SIGKILL);
        }
        for (const pid_t child : children_) {
            ::waitpid(child, nullptr, 0);
        }
    }
    SleepingProcesses(const SleepingProcesses&) = delete;
    SleepingProcesses& operator=(const SleepingProcesses&) = delete;
    std::size_t size() const { return children_.size(); }
    unsigned pinned() const { return pinned_; }

private:
    std::vector<pid_t> children_;
    unsigned pinned_ = 0;
};

// The status file of every thread below `proc` (/proc/self, a link, not twice).
std::vector<std::string> status_files_of(const fs::path& proc) {
    std::vector<std::string> out;
    for (const auto& p : fs::directory_iterator(proc)) {
        const std::string name = p.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        std::error_code ec;
        for (fs::directory_iterator it(p.path() / "task", ec), end; !ec && it != end;
             it.increment(ec)) {
            out.push_back((it->path() / "status").string());
        }
    }
    return out;
}

// open + read + close of each of `status_files`, in ms: the floor of any scan that reads
// each thread's status once (every name known beforehand, no directory listing).
double read_every_status_ms(const std::vector<std::string>& status_files) {
    const auto t0 = Clock::now();
    char buf[4096];
    for (const auto& file : status_files) {
        const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            [[maybe_unused]] const ssize_t n = ::read(fd, buf, sizeof buf);
            ::close(fd);
        }
    }
    return ms_since(t0);
}

// One sched_getaffinity(2) per call, into a buffer kept from call to call: the question
// both floors below ask of every thread.
class AffinityAsker {
public:
    void ask(pid_t tid) {
        [[maybe_unused]] const long n =
            ::syscall(SYS_sched_getaffinity, tid, mask_.size(), mask_.data());
    }

private:
    std::vector<char> mask_ = std::vector<char>(cpuhpd::kMaxCpus / 8);
};

// The system calls a scan of the real /proc that asks the kernel cannot do without, and
// nothing else, in ms: list /proc, tell a process of one thread by its task directory's
// link count (list the task directory of the others), ask each thread's affinity. These are
// the calls scan_pinned makes for a thread that is not pinned; what it takes beyond them is
// its own work.
double ask_every_thread_ms() {
    const auto t0 = Clock::now();
    const cpuhpd::OwnedFd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    AffinityAsker asker;
    const auto ask = [&asker](const std::string& tid) { asker.ask(std::stoi(tid)); };
    const auto numbered = [](const std::string& name) {
        return !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
    };
    for (const auto& entry : cpuhpd::list_directory(::dup(proc.get()))) {
        if (!numbered(entry.name)) {
            continue;
        }
        const std::string task_dir = entry.name + "/task";
        struct stat st {};
        if (::fstatat(proc.get(), task_dir.c_str(), &st, 0) != 0) {
            continue;
        }
        if (st.st_nlink == 3) {
            ask(entry.name);
            continue;
        }
        for (const auto& thread : cpuhpd::list_directory(
                 ::openat(proc.get(), task_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC))) {
            if (numbered(thread.name)) {
                ask(thread.name);
            }
        }
    }
    return ms_since(t0);
}

// The tids of `status_files` (PROC/PID/task/TID/status).
std::vector<pid_t> tids_of(const std::vector<std::string>& status_files) {
    std::vector<pid_t> tids;
    tids.reserve(status_files.size());
    for (const auto& file : status_files) {
        tids.push_back(std::stoi(fs::path(file).parent_path().filename().string()));
    }
    return tids;
}

// One sched_getaffinity per thread of `tids`, every tid known beforehand, in ms: what asking
// the kernel costs before any thread is found.
double only_ask_every_thread_ms(const std::vector<pid_t>& tids) {
    AffinityAsker asker;
    const auto t0 = Clock::now();
    for (const pid_t tid : tids) {
        asker.ask(tid);
    }
    return ms_since(t0);
}

// Writes `text` to `file` with plain system calls (tens of thousands of them: no streams).
void put(const fs::path& file, const std::string& text) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        throw std::runtime_error("cannot create " + file.string());
    }
    const bool ok =
        text.empty() || ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok) {
        throw std::runtime_error("cannot write " + file.string());
    }
}

// A thread's status as the kernel prints it (fs/proc/array.c, 6.x), about 1.3 kB.
std::string status_text(unsigned pid, unsigned tid, const std::string& comm,
                        const std::string& cpus, bool kthread) {
    std::string s = "Name:\t" + comm + "\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t" +
                    std::to_string(pid) + "\nNgid:\t0\nPid:\t" + std::to_string(tid) +
                    "\nPPid:\t1\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
                    "FDSize:\t64\nGroups:\t \nNStgid:\t" +
                    std::to_string(pid) + "\nNSpid:\t" + std::to_string(tid) +
                    "\nNSpgid:\t1\nNSsid:\t1\nKthread:\t" + (kthread ? "1" : "0") + "\n";
    if (!kthread) {
        s += "VmPeak:\t  123060 kB\nVmSize:\t  123060 kB\nVmLck:\t       0 kB\nVmPin:\t       0 "
             "kB\nVmHWM:\t    9728 kB\nVmRSS:\t    9728 kB\nRssAnon:\t    1112 kB\nRssFile:\t  "
             "  8616 kB\nRssShmem:\t       0 kB\nVmData:\t    4360 kB\nVmStk:\t     132 "
             "kB\nVmExe:\t     120 kB\nVmLib:\t    4528 kB\nVmPTE:\t      80 kB\nVmSwap:\t    "
             "   0 kB\nHugetlbPages:\t       0 kB\nCoreDumping:\t0\nTHP_enabled:\t1\n";
    }
    s += "untag_mask:\t0xffffffffffffffff\nThreads:\t4\nSigQ:\t0/96369\nSigPnd:\t0000000000000000\n"
         "ShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000001000\n"
         "SigCgt:\t0000000180004002\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\n"
         "CapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n"
         "NoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_filters:\t0\nSpeculation_Store_Bypass:\tvulnerable\n"
         "SpeculationIndirectBranch:\talways enabled\nCpus_allowed:\t" +
         std::string(cpus == "0-63" ? "ffffffff,ffffffff" : "00000000,00000100") +
         "\nCpus_allowed_list:\t" + cpus +
         "\nMems_allowed:\t00000000,00000001\nMems_allowed_list:\t0\n"
         "voluntary_ctxt_switches:\t1234\nnonvoluntary_ctxt_switches:\t56\n";
    return s;
}

std::string stat_text(unsigned pid, unsigned tid, const std::string& comm, bool kthread) {
    return std::to_string(tid) + " (" + comm + ") S 1 " + std::to_string(pid) + " " +
           std::to_string(pid) + " 0 -1 " + (kthread ? "2129984" : "4194560") +
           " 100 0 0 0 12 3 0 0 20 0 4 0 4193982 3133440 379 18446744073709551615 "
           "94334167728128 94334167748009 140723029807552 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 "
           "94334167764016 94334167765632 94335235600384 140723029813882 140723029813902 "
           "140723029813902 140723029815275 0\n";
}

// `tasks` threads: 2% user threads pinned to one CPU, 3% kernel threads pinned to one CPU
// (round robin over the 64), the rest allowed on every CPU; 128 IRQs, a quarter of them on
// one CPU.
void build_proc(const fs::path& root, unsigned tasks) {
    fs::create_directories(root);
    unsigned pid = 1000;
    for (unsigned i = 0; i < tasks; pid += kThreadsPerProcess) {
        for (unsigned t = 0; t < kThreadsPerProcess && i < tasks; ++t, ++i) {
            const unsigned tid = pid + t;
            const bool kthread = i % 100 < 3;
            const bool pinned = kthread || i % 100 < 5;
            const std::string cpus = pinned ? std::to_string(i % kCpus) : "0-63";
            const std::string comm = kthread ? "kworker/" + std::to_string(i % kCpus) : "worker";
            const fs::path dir = root / std::to_string(pid) / "task" / std::to_string(tid);
            fs::create_directories(dir);
            put(dir / "stat", stat_text(pid, tid, comm, kthread));
            put(dir / "status", status_text(pid, tid, comm, cpus, kthread));
        }
    }
    for (unsigned irq = 0; irq < kIrqs; ++irq) {
        const fs::path dir = root / "irq" / std::to_string(irq);
        fs::create_directories(dir / ("eth0-" + std::to_string(irq)));
        put(dir / "smp_affinity_list",
            (irq % 4 == 0 ? std::to_string(irq % kCpus) : "0-63") + "\n");
    }
}

// The files of a cgroup v2 directory that the scans never need (empty here).
const char* const kCgroupFiles[] = {"cgroup.controllers",
                                    "cgroup.events",
                                    "cgroup.freeze",
                                    "cgroup.kill",
                                    "cgroup.max.depth",
                                    "cgroup.procs",
                                    "cgroup.max.descendants",
                                    "cgroup.stat",
                                    "cgroup.threads",
                                    "cgroup.type",
                                    "cpu.max",
                                    "cpu.stat",
                                    "cpu.weight",
                                    "io.max",
                                    "io.stat",
                                    "memory.current",
                                    "memory.events",
                                    "memory.high",
                                    "memory.low",
                                    "memory.max",
                                    "memory.min",
                                    "memory.stat",
                                    "memory.swap.max",
                                    "pids.current",
                                    "pids.max"};

struct CgroupTree {
    fs::path root;
    unsigned made = 0;
    // A cgroup below `parent`; `cpuset_files` when the parent enables cpuset (only then
    // does the kernel give it cpuset.* files); `enable_cpuset` for its own subtree_control.
    fs::path add(const fs::path& dir, bool cpuset_files, bool enable_cpuset,
                 const std::string& partition = "member", const std::string& cpus = "") {
        fs::create_directories(dir);
        for (const char* f : kCgroupFiles) {
            put(dir / f, "");
        }
        put(dir / "cgroup.subtree_control",
            enable_cpuset ? "cpuset cpu io memory pids\n" : "cpu io memory pids\n");
        if (cpuset_files) {
            put(dir / "cpuset.cpus", cpus.empty() ? "" : cpus + "\n");
            put(dir / "cpuset.cpus.effective", cpus.empty() ? "0-63\n" : cpus + "\n");
            put(dir / "cpuset.cpus.exclusive", "");
            put(dir / "cpuset.cpus.partition", partition + "\n");
            put(dir / "cpuset.mems", "");
            put(dir / "cpuset.mems.effective", "0\n");
        }
        ++made;
        return dir;
    }
};

// `cgroups` cgroups: the root enables cpuset; system.slice and user.slice do not (their
// services have no cpuset files), machine.slice does (its containers have them, their own
// children not); rt is a partition root on CPUs 32-63 with two isolated partitions below.
// With `cpuset_everywhere`, every cgroup enables cpuset (the scans' worst case).
void build_cgroups(const fs::path& root, unsigned cgroups, bool cpuset_everywhere) {
    CgroupTree t{root};
    const bool all = cpuset_everywhere;
    fs::create_directories(root);
    put(root / "cgroup.subtree_control", "cpuset cpu io memory pids\n");
    put(root / "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    const fs::path rt = t.add(root / "rt", true, true, "root", "32-63");
    t.add(rt / "iso0", true, all, "isolated", "40-43");
    t.add(rt / "iso1", true, all, "isolated", "44-47");
    t.add(rt / "member", true, all);
    t.add(root / "init.scope", true, all);
    const fs::path system = t.add(root / "system.slice", true, all);
    const fs::path user = t.add(root / "user.slice", true, all);
    const fs::path machine = t.add(root / "machine.slice", true, true);
    // The rest: 60% services (a tenth of them with two children), 30% containers with
    // three children each, 10% user sessions.
    for (unsigned i = 0; t.made < cgroups; ++i) {
        const unsigned kind = i % 10;
        if (kind < 6) {
            const fs::path s = t.add(system / ("svc" + std::to_string(i) + ".service"), all, all);
            if (i % 10 == 0 && t.made + 2 <= cgroups) {
                t.add(s / "a", all, all);
                t.add(s / "b", all, all);
            }
        } else if (kind < 9) {
            const fs::path c = t.add(machine / ("ctr" + std::to_string(i) + ".scope"), true, all);
            for (unsigned k = 0; k < 3 && t.made < cgroups; ++k) {
                t.add(c / ("c" + std::to_string(k)), all, all);
            }
        } else {
            t.add(user / ("session-" + std::to_string(i) + ".scope"), all, all);
        }
    }
}

// A tree made once: `dir`/.complete marks it whole, so a later run (--keep) reuses it.
template <typename Build>
void once(const fs::path& dir, Build build) {
    if (fs::exists(dir / ".complete")) {
        return;
    }
    fs::remove_all(dir);
    const auto t0 = Clock::now();
    build();
    put(dir / ".complete", "");
    std::cerr << "cpuhpd-scan-bench: built " << dir.string() << " in " << ms_since(t0) << " ms\n";
}

cpuhpd::Request request(cpuhpd::Action action) {
    cpuhpd::Request r;
    r.action = action;
    r.cpus = kLeaving;
    r.mask = kLeaving.to_string();
    r.caller = "cpuhpd-scan-bench";
    return r;
}

struct Point {
    unsigned tasks;
    unsigned cgroups;
    bool cpuset_everywhere = false;
};

std::string tag(const Point& p) {
    return std::to_string(p.tasks) + " tasks x " + std::to_string(p.cgroups) + " cgroups" +
           (p.cpuset_everywhere ? " (cpuset in every subtree_control)" : "");
}

// The medians of one point: offline + online batch.
double measure(Rows& rows, const fs::path& base, const Point& p, int runs) {
    const fs::path proc = base / ("proc-" + std::to_string(p.tasks));
    const fs::path cgroup =
        base / ("cgroup-" + std::to_string(p.cgroups) + (p.cpuset_everywhere ? "-all" : ""));
    once(proc, [&] { build_proc(proc, p.tasks); });
    once(cgroup, [&] { build_cgroups(cgroup, p.cgroups, p.cpuset_everywhere); });

    cpuhpd::test::FakeTopology topo;
    topo.packages = 2;
    topo.cores_per_package = kCpus / 4;
    topo.threads_per_core = 2;
    const fs::path run_dir = base / "run";
    fs::remove_all(run_dir);
    cpuhpd::test::FakeSysfs sysfs(topo, run_dir / "sysfs");
    cpuhpd::test::FakeKernelWriter writer(sysfs);
    const cpuhpd::SysfsPaths paths(sysfs.root());
    cpuhpd::TopologyMemory memory(run_dir / "topology.cache");
    fs::create_directories(run_dir / "journal");
    cpuhpd::FileJournal journal(run_dir / "journal", [](const std::string& w) {
        std::cerr << "cpuhpd-scan-bench: journal: " << w << '\n';
    });
    const cpuhpd::EngineSettings settings;
    cpuhpd::BatchRunner runner(
        paths, writer, journal, [&] { return cpuhpd::read_machine(paths, memory); }, settings, proc,
        cgroup, run_dir / "partitions.ledger", run_dir / "affinity.ledger");

    std::vector<double> off_ms, on_ms, both_ms, pinned_ms, partitions_ms, machine_ms, both_cpu,
        pinned_cpu, partitions_cpu, floor_ms;
    const std::vector<std::string> status_files = status_files_of(proc);
    std::size_t pinned_found = 0, partitions_found = 0, shrunk = 0;
    std::uint64_t batch = 1;
    const cpuhpd::CpuSet staying = cpuhpd::CpuSet::range(0, kCpus - 1) - kLeaving;
    for (int i = 0; i < runs + 1; ++i) {  // the first run warms the caches; not counted
        double c0 = cpu_ms();
        auto t0 = Clock::now();
        const auto off = runner.run(batch++, {request(cpuhpd::Action::Offline)});
        const double off_t = ms_since(t0);
        t0 = Clock::now();
        const auto on = runner.run(batch++, {request(cpuhpd::Action::Online)});
        const double on_t = ms_since(t0);
        const double both_c = cpu_ms() - c0;
        if (off.results.at(0).outcome != cpuhpd::Outcome::Ok ||
            on.results.at(0).outcome != cpuhpd::Outcome::Ok || sysfs.online().count() != kCpus) {
            throw std::runtime_error(tag(p) + ": the offline/online batch did not go through");
        }
        c0 = cpu_ms();
        t0 = Clock::now();
        const cpuhpd::Pinned pinned = cpuhpd::scan_pinned(proc, kLeaving, staying);
        const double pinned_t = ms_since(t0);
        const double pinned_c = cpu_ms() - c0;
        c0 = cpu_ms();
        t0 = Clock::now();
        const auto partitions = cpuhpd::find_partitions(cgroup);
        const double partitions_t = ms_since(t0);
        const double partitions_c = cpu_ms() - c0;
        const double floor_t = read_every_status_ms(status_files);
        t0 = Clock::now();
        cpuhpd::read_machine(paths, memory);
        const double machine_t = ms_since(t0);
        if (i == 0) {
            continue;
        }
        off_ms.push_back(off_t);
        on_ms.push_back(on_t);
        both_ms.push_back(off_t + on_t);
        pinned_ms.push_back(pinned_t);
        partitions_ms.push_back(partitions_t);
        machine_ms.push_back(machine_t);
        both_cpu.push_back(both_c);
        pinned_cpu.push_back(pinned_c);
        partitions_cpu.push_back(partitions_c);
        floor_ms.push_back(floor_t);
        pinned_found = pinned.tasks.size() + pinned.irqs.size();
        partitions_found = partitions.size();
        shrunk = off.report.partitions.size();
    }
    const std::string t = tag(p);
    const double both = rows.add_spread("offline+online batch of CPUs 38-41, " + t, both_ms);
    rows.add_spread("  offline+online batch, CPU time of every thread, " + t, both_cpu);
    rows.add_spread("  offline batch, " + t, off_ms);
    rows.add_spread("  online batch, " + t, on_ms);
    rows.add_spread("  scan_pinned alone, " + t, pinned_ms);
    rows.add_spread("  scan_pinned alone, CPU time, " + t, pinned_cpu);
    rows.add_spread("  find_partitions alone, " + t, partitions_ms);
    rows.add_spread("  find_partitions alone, CPU time, " + t, partitions_cpu);
    rows.add_spread("  floor: open+read+close of every status file, names known, " + t, floor_ms);
    // Not a scan: a batch reads the machine (64 CPUs' sysfs files) before and after.
    rows.add_spread("  read_machine alone (64 CPUs), " + t, machine_ms);
    std::cerr << "cpuhpd-scan-bench:   (" << t << ": " << pinned_found
              << " pinned threads and IRQs, " << partitions_found << " partitions, " << shrunk
              << " shrunk)\n";
    return both;
}

// Threads of this process that sleep until destroyed: `count` of them, the first `pinned`
// pinned to `pin_cpu`, so that the host's real /proc has as many threads as a large server
// (up to pid_max) without touching anything outside the process.
class SleepingThreads {
public:
    SleepingThreads(unsigned count, unsigned pinned, unsigned pin_cpu) {
        pthread_attr_t attr;
        ::pthread_attr_init(&attr);
        ::pthread_attr_setstacksize(&attr, 64 * 1024);
        for (unsigned i = 0; i < count; ++i) {
            pthread_t thread{};
            if (::pthread_create(&thread, &attr, &SleepingThreads::sleep_until_told, this) != 0) {
                break;  // pid_max or threads-max: as many as the host allows
            }
            threads_.push_back(thread);
            if (i < pinned) {
                const cpu_set_t set = only_cpu(pin_cpu);
                if (::pthread_setaffinity_np(thread, sizeof set, &set) == 0) {
                    ++pinned_;
                }
            }
        }
        ::pthread_attr_destroy(&attr);
    }
    ~SleepingThreads() {
        {
            const std::lock_guard lock(mutex_);
            done_ = true;
        }
        wake_.notify_all();
        for (const pthread_t thread : threads_) {
            ::pthread_join(thread, nullptr);
        }
    }
    SleepingThreads(const SleepingThreads&) = delete;
    SleepingThreads& operator=(const SleepingThreads&) = delete;
    std::size_t size() const { return threads_.size(); }
    unsigned pinned() const { return pinned_; }

private:
    static void* sleep_until_told(void* self) {
        auto* threads = static_cast<SleepingThreads*>(self);
        std::unique_lock lock(threads->mutex_);
        threads->wake_.wait(lock, [threads] { return threads->done_; });
        return nullptr;
    }
    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    std::vector<pthread_t> threads_;
    unsigned pinned_ = 0;
};

// The real /proc of this host, with `extra` sleeping threads of this process added (8 of
// them pinned to CPU 1): what a thread costs a scan when the kernel is asked, beside the
// floor of reading each thread's status once (the status files are what a test tree has).
void real_proc(Rows& rows, int runs, unsigned extra, unsigned extra_processes) {
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 2) {
        std::cerr << "cpuhpd-scan-bench: real /proc skipped: one CPU online, none to pin to\n";
        return;
    }
    // Forked before any thread is made: a child of a multithreaded process may only exec.
    const SleepingProcesses processes(extra_processes, 8, 1);
    const SleepingThreads sleepers(extra, 8, 1);
    const auto status_files = status_files_of("/proc");
    const auto tids = tids_of(status_files);
    const std::size_t threads = status_files.size();
    const cpuhpd::CpuSet leaving = cpuhpd::CpuSet::single(1);
    const cpuhpd::CpuSet staying =
        cpuhpd::CpuSet::range(0, static_cast<unsigned>(cpus) - 1) - leaving;
    std::vector<double> scan_ms, floor_ms, syscalls_ms, ask_ms;
    std::size_t found = 0;
    for (int i = 0; i < runs + 1; ++i) {  // the first run warms the caches; not counted
        auto t0 = Clock::now();
        const auto pinned = cpuhpd::scan_pinned("/proc", leaving, staying);
        const double scan_t = ms_since(t0);
        const double floor_t = read_every_status_ms(status_files);
        const double syscalls_t = ask_every_thread_ms();
        const double ask_t = only_ask_every_thread_ms(tids);
        found = pinned.tasks.size();
        if (i > 0) {
            scan_ms.push_back(scan_t);
            floor_ms.push_back(floor_t);
            syscalls_ms.push_back(syscalls_t);
            ask_ms.push_back(ask_t);
        }
    }
    if (found < sleepers.pinned() + processes.pinned()) {
        throw std::runtime_error("scan_pinned of the real /proc found " + std::to_string(found) +
                                 " threads pinned to CPU 1, fewer than the " +
                                 std::to_string(sleepers.pinned() + processes.pinned()) +
                                 " this bench pinned there");
    }
    const std::string t = "this host's real /proc (" + std::to_string(threads) + " threads; " +
                          std::to_string(sleepers.size()) + " threads of one process and " +
                          std::to_string(processes.size()) +
                          " processes of one thread are this bench's)";
    const double scan = rows.add_spread("scan_pinned of " + t, scan_ms);
    const double floor =
        rows.add_spread("  floor: open+read+close of every status file, " + t, floor_ms);
    const double syscalls = rows.add_spread(
        "  floor: the system calls alone (list /proc, a link count per process, a listing per "
        "multithreaded one, sched_getaffinity per thread), " +
            t,
        syscalls_ms);
    const double ask = rows.add_spread(
        "  floor: sched_getaffinity per thread alone, every tid known, " + t, ask_ms);
    const double n = threads ? static_cast<double>(threads) : 1.0;
    rows.add("  scan_pinned per thread, real /proc (median)", scan * 1000.0 / n, "us");
    rows.add("  status file per thread, real /proc (median)", floor * 1000.0 / n, "us");
    rows.add("  system calls alone per thread, real /proc (median)", syscalls * 1000.0 / n, "us");
    rows.add("  sched_getaffinity alone per thread, real /proc (median)", ask * 1000.0 / n, "us");
    rows.add("  scan_pinned / status floor, real /proc", floor > 0 ? scan / floor : 0, "x");
    rows.add("  scan_pinned / system-call floor, real /proc", syscalls > 0 ? scan / syscalls : 0,
             "x");
    rows.add("  scan_pinned projected to 50000 threads at this per-thread cost", scan * 50000.0 / n,
             "ms", "<= 20 ms", scan * 50000.0 / n <= 20.0 ? "yes" : "no");
    rows.add("  sched_getaffinity alone projected to 50000 threads", ask * 50000.0 / n, "ms");
    std::cerr << "cpuhpd-scan-bench:   (real /proc: " << found << " threads pinned to CPU 1)\n";
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    bool keep = false;
    int runs = 7;
    std::optional<unsigned> real_threads, real_processes;  // defaults below, after --quick
    std::string out_file;
    fs::path base;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--quick") {
            quick = true;
        } else if (a == "--keep") {
            keep = true;
        } else if (a == "--runs" && i + 1 < argc) {
            runs = std::max(1, std::stoi(argv[++i]));
        } else if (a == "--dir" && i + 1 < argc) {
            base = argv[++i];
        } else if (a == "--real-threads" && i + 1 < argc) {
            real_threads = static_cast<unsigned>(std::max(0, std::stoi(argv[++i])));
        } else if (a == "--real-processes" && i + 1 < argc) {
            real_processes = static_cast<unsigned>(std::max(0, std::stoi(argv[++i])));
        } else if (a == "--out" && i + 1 < argc) {
            out_file = argv[++i];
        } else {
            std::cerr << "usage: cpuhpd-scan-bench [--quick] [--runs N] [--dir DIR] [--keep] "
                         "[--real-threads N] [--real-processes N] [--out FILE.csv]\n";
            return 2;
        }
    }
    if (base.empty()) {
        base = (fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path()) /
               ("cpuhpd-scan-bench-" + std::to_string(::getuid()));
    }
    std::vector<Point> points = {{100, 10}, {1000, 100}, {10000, 1000}, {50000, 10000}};
    if (quick) {
        points = {{100, 10}, {1000, 100}};
        real_threads = real_threads.value_or(1000);
        real_processes = real_processes.value_or(200);
    } else {
        points.push_back({50000, 10000, true});
    }
    Rows rows("cpuhpd-scan-bench");
    try {
        std::vector<double> both;
        for (const auto& p : points) {
            both.push_back(measure(rows, base, p, runs));
        }
        const double small = both.front();
        const double large = both.size() > 3 ? both[3] : both.back();
        const std::string large_tag = tag(points[std::min<std::size_t>(3, points.size() - 1)]);
        rows.add("offline+online batch, " + large_tag + " (median)", large, "ms", "<= 20 ms",
                 large <= 20.0 ? "yes" : "no");
        rows.add("offline+online batch, " + large_tag + " / " + tag(points.front()), large / small,
                 "x", "<= 2x", large / small <= 2.0 ? "yes" : "no");
        real_proc(rows, runs, real_threads.value_or(10000), real_processes.value_or(2000));
    } catch (const std::exception& e) {
        std::cerr << "cpuhpd-scan-bench: error: " << e.what() << '\n';
        return 1;
    }
    if (!keep) {
        std::error_code ec;
        fs::remove_all(base, ec);
    }
    rows.write(out_file);
    return 0;
}
