#include "partitions.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "attribute_at.h"
#include "cpulist.h"
#include "input.h"
#include "state_file.h"

namespace cpuhpd {

namespace {

namespace fs = std::filesystem;

// Paths the ledger's line format can hold (and a log can quote): printable, no tab.
bool plain_path(const std::string& path) {
    return std::none_of(path.begin(), path.end(),
                        [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

std::size_t depth(const std::string& path) {
    return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

// Whether the children of the open cgroup directory `dir` can have cpuset files: its
// cgroup.subtree_control enables cpuset, or there is no such file to say.
bool may_hold_cpusets(int dir) {
    const auto controllers = read_attribute_at(dir, "cgroup.subtree_control");
    if (!controllers) {
        return true;
    }
    std::istringstream words(*controllers);
    for (std::string word; words >> word;) {
        if (word == "cpuset") {
            return true;
        }
    }
    return false;
}

// Whether the open cgroup directory `dir` has CPUs in cpuset.cpus.exclusive (6.7 on): what
// a cgroup that is not a valid partition root needs for a partition below it to be valid (a
// remote partition, cgroup-v2.rst "cpuset.cpus.partition": its ancestors but the root need
// exclusive CPUs, as its cpuset.cpus.exclusive.effective is within theirs).
bool has_exclusive_cpus(int dir) {
    const auto exclusive = read_attribute_at(dir, "cpuset.cpus.exclusive");
    return exclusive && exclusive->find_first_not_of(" \t\n") != std::string::npos;
}

// The subdirectories of the open directory `fd`; symlinks left out.
std::vector<std::string> subdirectories(int fd) {
    std::vector<std::string> out;
    for (auto& entry : list_directory(::dup(fd))) {
        bool dir = entry.type == DT_DIR;
        if (entry.type == DT_UNKNOWN) {  // a filesystem that does not say: ask
            struct stat st {};
            dir = ::fstatat(fd, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  S_ISDIR(st.st_mode);
        }
        if (dir) {
            out.push_back(std::move(entry.name));
        }
    }
    return out;
}

std::optional<CpuSet> cpulist_at(int dir, const char* name) {
    const auto text = read_attribute_at(dir, name);
    if (!text) {
        return std::nullopt;
    }
    try {
        return parse_cpulist(*text);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

std::vector<Partition> find_partitions(const fs::path& cgroup_root) {
    std::vector<Partition> out;
    if (cgroup_root.empty()) {
        return out;
    }
    const OwnedFd root(::open(cgroup_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0) {
        return out;
    }
    // Depth first, from the root, each directory opened once and its files read relative
    // to it. A cgroup has cpuset.* files only when its parent enables cpuset in
    // cgroup.subtree_control, and can enable it only when it has them: below a cgroup whose
    // subtree_control lacks cpuset there is no partition, and its subtree is not read. (A
    // tree without subtree_control files, like the tests' fakes, is walked whole.) Nor is
    // the subtree of a cgroup that is neither a valid partition root nor holds exclusive
    // CPUs: a partition below it could be neither local (its parent a partition root) nor
    // remote (exclusive CPUs on every ancestor but the root). So on a systemd host, whose
    // slices are members, only the root's children are read. Each cgroup visited costs a
    // read of cpuset.cpus.partition (and of cpuset.cpus for a partition, of
    // cpuset.cpus.exclusive for another), one of cgroup.subtree_control and, when that
    // enables cpuset, a listing.
    std::vector<std::string> pending{""};  // below the root, "" the root itself
    while (!pending.empty()) {
        const std::string rel = std::move(pending.back());
        pending.pop_back();
        const OwnedFd dir(::openat(root.get(), rel.empty() ? "." : rel.c_str(),
                                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (dir.get() < 0) {
            continue;  // removed meanwhile
        }
        const auto kind =
            rel.empty() ? std::nullopt : read_attribute_at(dir.get(), "cpuset.cpus.partition");
        // A member, an invalid partition ("root invalid (...)"), or no cpuset.
        const bool partition = kind && (*kind == "root" || *kind == "isolated");
        if (partition) {
            const auto cpus = cpulist_at(dir.get(), "cpuset.cpus");
            const std::string path = "/" + rel;
            if (cpus && plain_path(path)) {
                out.push_back({path, *kind, *cpus});
            }
        }
        if (kind && !partition && !has_exclusive_cpus(dir.get())) {
            continue;
        }
        if (!may_hold_cpusets(dir.get())) {
            continue;
        }
        for (auto& name : subdirectories(dir.get())) {
            pending.push_back(rel.empty() ? std::move(name) : rel + "/" + name);
        }
    }
    std::sort(out.begin(), out.end(), [](const Partition& a, const Partition& b) {
        return std::make_pair(depth(a.path), a.path) < std::make_pair(depth(b.path), b.path);
    });
    return out;
}

std::vector<Partition> emptied_partitions(const std::vector<Partition>& partitions,
                                          const CpuSet& leaving, const CpuSet& online) {
    std::vector<Partition> out;
    for (const auto& p : partitions) {
        const CpuSet live = p.cpus & online;
        if (live.intersects(leaving) && live.is_subset_of(leaving)) {
            out.push_back(p);
        }
    }
    return out;
}

std::vector<PartitionChange> plan_shrink(const std::vector<Partition>& partitions,
                                         const CpuSet& leaving, const CpuSet& online) {
    std::vector<PartitionChange> out;
    for (auto it = partitions.rbegin(); it != partitions.rend(); ++it) {
        const CpuSet after = it->cpus - leaving;
        if (it->cpus.intersects(leaving) && (after & online).count() > 0) {
            out.push_back({it->path, it->kind, it->cpus, after, 0});
        }
    }
    return out;
}

PartitionLedger::PartitionLedger(fs::path file) : file_(std::move(file)) {}

std::optional<std::string> PartitionLedger::load() {
    owed_.clear();
    return load_ledger_file(file_, [this](const std::string& text) -> std::optional<std::string> {
        std::istringstream in(text);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty()) {
                continue;
            }
            const auto tab = line.find('\t');
            if (tab == std::string::npos || line.empty() || line[0] != '/') {
                owed_.clear();
                return "not a partition ledger (line '" + line.substr(0, 64) + "')";
            }
            try {
                owed_[line.substr(0, tab)] |= parse_cpulist(line.substr(tab + 1));
            } catch (const std::exception& e) {
                owed_.clear();
                return std::string(e.what());
            }
        }
        return std::nullopt;
    });
}

int PartitionLedger::save() const {
    if (owed_.empty()) {
        return save_ledger_file(file_, std::nullopt);
    }
    std::string text;
    for (const auto& [path, cpus] : owed_) {
        text += path + "\t" + cpus.to_string() + "\n";
    }
    return save_ledger_file(file_, text);
}

int PartitionLedger::take(const PartitionChange& change) {
    owed_[change.path] |= change.before - change.after;
    return save();
}

std::vector<PartitionChange> PartitionLedger::plan_restore(const fs::path& cgroup_root,
                                                           const CpuSet& online) {
    std::vector<PartitionChange> out;
    for (auto it = owed_.begin(); it != owed_.end();) {
        const CpuSet back = it->second & online;
        const auto dir = cgroup_root / it->first.substr(1);
        const auto current = read_cpulist_file(dir / "cpuset.cpus");
        if (!current) {  // the cgroup is gone: nothing to give back to
            it = owed_.erase(it);
            continue;
        }
        if (!back.empty()) {
            const auto kind = read_attribute(dir / "cpuset.cpus.partition");
            out.push_back({it->first, kind.value_or(""), *current, *current | back, 0});
            it->second = it->second - back;
        }
        it = it->second.empty() ? owed_.erase(it) : std::next(it);
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const PartitionChange& a, const PartitionChange& b) {
                         return depth(a.path) < depth(b.path);
                     });
    return out;
}

void apply_partition_changes(std::vector<PartitionChange>& changes, const fs::path& cgroup_root,
                             AttributeWriter& writer) {
    for (auto& change : changes) {
        change.error = writer.write(cgroup_root / change.path.substr(1) / "cpuset.cpus",
                                    change.after.empty() ? "" : change.after.to_string());
    }
}

}  // namespace cpuhpd
