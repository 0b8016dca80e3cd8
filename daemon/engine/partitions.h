// cgroup v2 cpuset partitions (cpuset.cpus.partition "root" or "isolated") around a batch:
// before CPUs go offline, each partition holding some is shrunk to the rest of its CPUs in
// one write, so the kernel does not rework it CPU by CPU and it stays valid; once the CPUs
// are back, each partition gets them back in one write. A ledger in the state directory
// records what was taken (written before the shrink), so a restarted daemon still gives
// the CPUs back. The cgroup root is injected (normally /sys/fs/cgroup).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cpuset.h"
#include "sysfs.h"

namespace cpuhpd {

struct Partition {
    std::string path;  // below the cgroup root, "/" separated, leading "/": "/rt/a"
    std::string kind;  // root or isolated
    CpuSet cpus;       // cpuset.cpus
};

// The valid partitions below `cgroup_root`, parents before children. An empty root, or one
// without the cpuset controller, has none.
std::vector<Partition> find_partitions(const std::filesystem::path& cgroup_root);

// One write of a partition's cpuset.cpus.
struct PartitionChange {
    std::string path;
    std::string kind;
    CpuSet before;
    CpuSet after;
    int error = 0;  // errno of the write; 0 when it went through (or for a plan)
    // errno of saving the partition ledger for it (before a shrink, after a give-back); 0 when
    // saved. A shrink the ledger lacks is not given back by a restarted daemon.
    int ledger_error = 0;
    bool operator==(const PartitionChange&) const = default;
};

// The partitions that would lose every CPU they have online when `leaving` goes: the
// kernel would invalidate them.
std::vector<Partition> emptied_partitions(const std::vector<Partition>& partitions,
                                          const CpuSet& leaving, const CpuSet& online);

// The shrinks taking `leaving` offline needs: each partition meeting `leaving` (and left
// some CPU online) loses those CPUs; children first, as a child's CPUs must stay within
// its parent's.
std::vector<PartitionChange> plan_shrink(const std::vector<Partition>& partitions,
                                         const CpuSet& leaving, const CpuSet& online);

// What the daemon took from partitions and owes them back, by path; kept in a state file.
class PartitionLedger {
public:
    // `file` empty: nothing is persisted (tests of other parts, recovery's runner).
    explicit PartitionLedger(std::filesystem::path file = {});

    // Reads the file; a problem (missing file is none) comes back as text, and the ledger
    // starts empty.
    std::optional<std::string> load();
    // Records `change` (before it is written: a crash in between only makes the restore
    // write what is there already). Returns the errno of the save, 0 when saved.
    int take(const PartitionChange& change);
    // The writes that give back the CPUs of `online` now (parents first), and forgets them.
    std::vector<PartitionChange> plan_restore(const std::filesystem::path& cgroup_root,
                                              const CpuSet& online);
    int save() const;
    bool empty() const { return owed_.empty(); }
    const std::map<std::string, CpuSet>& owed() const { return owed_; }

private:
    std::filesystem::path file_;
    std::map<std::string, CpuSet> owed_;
};

// Writes each change's cpuset.cpus (`after`) below `cgroup_root` and fills in its error.
void apply_partition_changes(std::vector<PartitionChange>& changes,
                             const std::filesystem::path& cgroup_root, AttributeWriter& writer);

}  // namespace cpuhpd
