// A fake sysfs tree shaped like the kernel's, for both test suites: the unit tests write it
// through FakeKernelWriter, which acts as the kernel; the integration tests let the real
// daemon write its plain files (FakeTopology::plain_files).
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
    // The program under test writes the files itself, as it would write /sys, and no
    // FakeKernelWriter keeps the summaries and topology/ in step: online() reads the
    // cpuN/online files.
    bool plain_files = false;
};

class FakeSysfs {
public:
    // In a temporary directory of its own, removed with the tree.
    explicit FakeSysfs(const FakeTopology& topo = {});
    // In `root`, which the caller owns and removes.
    FakeSysfs(const FakeTopology& topo, std::filesystem::path root);
    ~FakeSysfs();  // clears the immutable flags make_unwritable() set
    FakeSysfs(const FakeSysfs&) = delete;
    FakeSysfs& operator=(const FakeSysfs&) = delete;

    const std::filesystem::path& root() const { return root_; }
    SysfsPaths paths() const { return SysfsPaths(root_); }
    std::filesystem::path cpu_dir() const { return root_ / "devices/system/cpu"; }
    std::filesystem::path online_file(unsigned cpu) const;
    unsigned cpu_count() const { return cpus_; }
    // Where `cpu` sits, with x86 numbering (see FakeTopology).
    unsigned package_of(unsigned cpu) const;
    unsigned core_of(unsigned cpu) const;     // within its package
    unsigned sibling_of(unsigned cpu) const;  // the next thread of the same core

    // The state the fake kernel keeps; with plain_files, what the cpuN/online files say.
    CpuSet online() const;
    void set_online(unsigned cpu, bool online);  // as the kernel would: files and topology/
    // File content without the trailing newline; "<absent>" when it is not a regular file.
    std::string read(const std::string& relative) const;  // e.g. "kernel/rcu_expedited"
    void write(const std::string& relative, const std::string& value);  // plain file write
    // The content of every cpuN/online file there is (cpu0 has none on x86).
    std::map<unsigned, std::string> online_files() const;
    // Makes writes to cpuN/online fail for root too (EPERM through chattr +i). Returns 0 or
    // the errno of the ioctl (the filesystem may not support it).
    int make_unwritable(unsigned cpu);

    const FakeTopology& topology() const { return topo_; }

private:
    friend class FakeKernelWriter;
    void rewrite_summaries();
    void build();
    void write_topology(unsigned cpu);
    unsigned cores() const { return topo_.packages * topo_.cores_per_package; }
    FakeTopology topo_;
    unsigned cpus_ = 0;
    std::filesystem::path root_;
    bool owns_root_ = false;
    std::vector<bool> online_;
    std::vector<std::filesystem::path> immutable_;
};

// Sets or clears the immutable inode flag (chattr +i); returns 0 or the errno.
int set_immutable(const std::filesystem::path& file, bool on);

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
