// A fake machine and an engine bound to it, shared by the planner, batch and executor tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <mutex>

#include "batch_runner.h"
#include "fake_proc.h"
#include "fake_sysfs.h"
#include "journal.h"
#include "machine.h"
#include "topology.h"

namespace cpuhpd::test {

struct FakeMachine {
    explicit FakeMachine(FakeTopology topo = {}, EngineSettings s = {})
        : fs(topo),
          proc(fs.root() / "fake-proc"),
          paths(fs.root()),
          writer(fs),
          memory(fs.root() / "topology.cache"),
          settings(std::move(s)) {
        runner = std::make_unique<BatchRunner>(
            paths, writer, journal, [this] { return state(); }, settings, proc.root(),
            cgroup_root(), fs.root() / "partitions.ledger");
    }
    // Under a lock, as Engine::read(): read_machine() updates `memory`, and tests call
    // this from several threads beside the executor's worker.
    MachineState state() {
        const std::lock_guard lock(read_mutex);
        return read_machine(paths, memory);
    }
    // The runner's cgroup root, inside the fake tree (FakeKernelWriter logs its writes):
    // no partitions until a test adds one.
    std::filesystem::path cgroup_root() const { return fs.root() / "fake-cgroup"; }
    void add_partition(const std::string& path, const std::string& kind, const std::string& cpus) {
        const auto dir = cgroup_root() / path;
        std::filesystem::create_directories(dir);
        fs.write("fake-cgroup/" + path + "/cpuset.cpus.partition", kind);
        fs.write("fake-cgroup/" + path + "/cpuset.cpus", cpus);
    }

    Request request(Action action, const CpuSet& cpus, Mode mode = Mode::Atomic,
                    StrategyKind strategy = StrategyKind::Auto) {
        Request r;
        r.action = action;
        r.cpus = cpus;
        r.mask = cpus.to_string();
        r.mode = mode;
        r.strategy = strategy;
        return r;
    }

    FakeSysfs fs;
    FakeProc proc;  // the runner's proc_root: empty until a test adds tasks or IRQs
    SysfsPaths paths;
    FakeKernelWriter writer;
    std::mutex read_mutex;
    TopologyMemory memory;
    NullJournal journal;
    EngineSettings settings;
    std::unique_ptr<BatchRunner> runner;
};

// The result of `cpu` in `r`; a test failure (and an empty result) when there is none.
inline const CpuResult& result_for(const RequestResult& r, unsigned cpu) {
    for (const auto& c : r.cpus) {
        if (c.cpu == cpu) {
            return c;
        }
    }
    ADD_FAILURE() << "no result for CPU " << cpu;
    static const CpuResult none;
    return none;
}

inline CpuSet set(std::initializer_list<unsigned> cpus) {
    return CpuSet::from(std::vector<unsigned>(cpus));
}

}  // namespace cpuhpd::test
