// A fake sysfs tree in a temporary directory, shaped like the kernel's, and a writer that
// acts as the kernel on it: for unit tests of the engine's own logic only.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cpuset.h"
#include "sysfs.h"

namespace cpuhpd::test {

inline CpuSet of(std::vector<unsigned> cpus) {
    return CpuSet::from(cpus);
}

struct FakeTopology {
    unsigned packages = 2;
    unsigned cores_per_package = 4;
    unsigned threads_per_core = 2;
    unsigned nodes = 1;  // packages are spread evenly over nodes
    // SMT threads are numbered like x86 Linux: first threads of all cores, then the
    // second threads (cpu N and N + cores are siblings).
    bool cpu0_hotpluggable = false;  // x86 default: cpu0 has no online file
    std::string smt_control = "on";  // "" for no smt/control file
    bool bulk = false;               // writable cpu/offline and cpu/online (companion patch)
    unsigned possible_extra = 0;     // possible but not present CPUs after the present ones
};

class FakeSysfs {
public:
    explicit FakeSysfs(const FakeTopology& topo = {});
    ~FakeSysfs();  // removes the tree
    FakeSysfs(const FakeSysfs&) = delete;
    FakeSysfs& operator=(const FakeSysfs&) = delete;

    const std::filesystem::path& root() const { return root_; }
    SysfsPaths paths() const { return SysfsPaths(root_); }
    unsigned cpu_count() const { return cpus_; }
    CpuSet online() const;                       // from the per-CPU state the fake kernel keeps
    void set_online(unsigned cpu, bool online);  // as the kernel would: files and topology/
    std::string read(const std::string& relative) const;  // e.g. "kernel/rcu_expedited"
    void write(const std::string& relative, const std::string& value);  // plain file write

    const FakeTopology& topology() const { return topo_; }

private:
    friend class FakeKernelWriter;
    void rewrite_summaries();
    void write_topology(unsigned cpu);
    FakeTopology topo_;
    unsigned cpus_ = 0;
    std::filesystem::path root_;
    std::vector<bool> online_;
};

// Acts as the kernel for writes below a FakeSysfs: cpuN/online, smt/control, the bulk
// cpu/offline and cpu/online files, rcu_expedited. Failures can be injected per CPU.
class FakeKernelWriter final : public AttributeWriter {
public:
    explicit FakeKernelWriter(FakeSysfs& fs) : fs_(fs) {}
    int write(const std::filesystem::path& file, const std::string& value) override;

    // The next change of `cpu` (either direction) fails with `err`; `times` attempts.
    void fail_cpu(unsigned cpu, int err, int times = 1);
    // Every write to `relative` (e.g. "kernel/rcu_expedited") fails with err.
    void fail_file(const std::string& relative, int err);

    struct Write {
        std::string file;  // relative to the root
        std::string value;
        int result;
    };
    const std::vector<Write>& log() const { return log_; }
    std::vector<std::string> writes_to(const std::string& relative) const;  // values, in order
    // rcu_expedited's value at the time of each per-CPU online write
    const std::vector<std::string>& expedited_during_cpu_writes() const { return expedited_seen_; }

private:
    int change_cpu(unsigned cpu, bool online);
    FakeSysfs& fs_;
    std::map<unsigned, std::pair<int, int>> cpu_failures_;  // cpu -> (errno, remaining)
    std::map<std::string, int> file_failures_;
    std::vector<Write> log_;
    std::vector<std::string> expedited_seen_;
};

}  // namespace cpuhpd::test
