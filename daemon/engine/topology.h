// CPU topology as the kernel reports it, and the memory of it: the kernel removes
// cpuN/topology/ while a CPU is offline, so what was seen is kept and persisted.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "cpuset.h"
#include "sysfs.h"

namespace cpuhpd {

struct CpuTopology {
    int package = -1;  // physical_package_id
    int die = -1;      // die_id
    int core = -1;     // core_id (unique only within a package)
    int node = -1;     // NUMA node, from devices/system/node/nodeN/cpulist
    CpuSet siblings;   // thread_siblings_list (includes the CPU itself)
    bool operator==(const CpuTopology&) const = default;
};

using TopologyMap = std::map<unsigned, CpuTopology>;

// Calls fn(cpu, entry) for each member of `cpus` in ascending order, `entry` being the CPU's
// topology in `map` or nullptr. Walks the map alongside the members instead of a find() from
// the root per CPU (8192 of those took about half a millisecond); jumps with lower_bound()
// over long stretches of the map that `cpus` skips.
template <typename Fn>
void for_each_topology(const TopologyMap& map, const CpuSet& cpus, Fn&& fn) {
    if (cpus.empty()) {
        return;
    }
    auto it = map.lower_bound(cpus.first());
    for (const unsigned cpu : cpus.members()) {
        for (int step = 0; it != map.end() && it->first < cpu; ++step) {
            if (step == 8) {
                it = map.lower_bound(cpu);
                break;
            }
            ++it;
        }
        fn(cpu, it != map.end() && it->first == cpu ? &it->second : nullptr);
    }
}

// Reads the topology of every CPU whose topology/ directory exists now.
TopologyMap read_topology(const SysfsPaths& paths, const CpuSet& cpus);

// Keeps the last topology seen for each CPU, persisted to a file in the state directory
// so that it survives a daemon restart while CPUs are offline.
class TopologyMemory {
public:
    // `cache_file` may be empty: then nothing is persisted.
    explicit TopologyMemory(std::filesystem::path cache_file);

    // Loads the cache file if present; a malformed file is ignored (and reported in the
    // returned message) since the live sysfs is the authority. Only a regular file of at
    // most kMaxCacheBytes is read (no symbolic link, FIFO or device).
    std::optional<std::string> load();
    // Merges freshly read entries (they win) and saves if anything changed.
    void update(const TopologyMap& seen);
    const TopologyMap& known() const { return known_; }
    std::optional<CpuTopology> find(unsigned cpu) const;
    // Of `online`, the CPUs whose topology is to be read: those not read while online at the
    // last read and online at every read since (`online` whole when `present` changed).
    CpuSet unread(const CpuSet& online, const CpuSet& present) const;
    // Records that the entries of `current` are fresh (read while online, online since),
    // with the present CPUs of this read.
    void mark_current(const CpuSet& current, const CpuSet& present);
    // Why the last save failed (the state directory is not writable, ...); cleared by the
    // next successful save, which update() retries.
    const std::optional<std::string>& save_error() const { return save_error_; }

private:
    void save() const;
    std::filesystem::path cache_file_;
    TopologyMap known_;
    CpuSet current_;  // not persisted: a restarted daemon reads every online CPU once
    CpuSet present_;
    mutable std::optional<std::string> save_error_;
};

// Serialisation used by the cache file (one CPU a line); exposed for tests.
std::string serialize_topology(const TopologyMap& map);
TopologyMap parse_topology(const std::string& text);  // throws std::runtime_error

}  // namespace cpuhpd
