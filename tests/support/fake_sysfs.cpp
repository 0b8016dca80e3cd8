#include "fake_sysfs.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cpuhpd::test {
namespace fs = std::filesystem;

namespace {

void put(const fs::path& file, const std::string& value) {
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::trunc);
    out << value << "\n";
    if (!out) {
        throw std::runtime_error("cannot write " + file.string());
    }
}

std::string get(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    if (!s.empty() && s.back() == '\n') {
        s.pop_back();
    }
    return s;
}

// Parses a fake-kernel cpulist the simple way: tests only write what format_cpulist
// would produce, so "a" and "a-b" regions suffice here.
CpuSet simple_list(const std::string& text) {
    CpuSet set;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) {
            continue;
        }
        auto dash = item.find('-');
        unsigned a = static_cast<unsigned>(std::stoul(item.substr(0, dash)));
        unsigned b = dash == std::string::npos
                         ? a
                         : static_cast<unsigned>(std::stoul(item.substr(dash + 1)));
        for (unsigned c = a; c <= b; ++c) {
            set.add(c);
        }
    }
    return set;
}

std::string online_file_name(unsigned cpu) {
    return "devices/system/cpu/cpu" + std::to_string(cpu) + "/online";
}

}  // namespace

FakeSysfs::FakeSysfs(const FakeTopology& topo) : topo_(topo), owns_root_(true) {
    std::string templ = (fs::temp_directory_path() / "cpuhpd-fake-sysfs-XXXXXX").string();
    if (!mkdtemp(templ.data())) {
        throw std::runtime_error("mkdtemp failed");
    }
    root_ = templ;
    build();
}

FakeSysfs::FakeSysfs(const FakeTopology& topo, fs::path root)
    : topo_(topo), root_(std::move(root)) {
    fs::create_directories(root_);
    build();
}

void FakeSysfs::build() {
    const FakeTopology& topo = topo_;
    cpus_ = topo.packages * topo.cores_per_package * topo.threads_per_core;
    online_.assign(cpus_, true);
    const fs::path cpu = root_ / "devices/system/cpu";
    put(cpu / "possible", CpuSet::range(0, cpus_ + topo.possible_extra - 1).to_string());
    put(cpu / "present", CpuSet::range(0, cpus_ - 1).to_string());
    put(cpu / "kernel_max", "8191");
    for (const char* name : {"possible", "present", "kernel_max"}) {
        fs::permissions(cpu / name,
                        fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                        fs::perm_options::replace);  // as in the kernel
    }
    for (unsigned c = 0; c < cpus_; ++c) {
        if (c != 0 || topo.cpu0_hotpluggable) {
            put(cpu / ("cpu" + std::to_string(c)) / "online", "1");
        }
        fs::create_directories(cpu / ("cpu" + std::to_string(c)));
        write_topology(c);
    }
    if (!topo.smt_control.empty()) {
        put(cpu / "smt/control", topo.smt_control);
        put(cpu / "smt/active", topo.threads_per_core > 1 ? "1" : "0");
    }
    const unsigned per_node = topo.packages / (topo.nodes ? topo.nodes : 1);
    const unsigned cores = topo.packages * topo.cores_per_package;
    for (unsigned n = 0; n < topo.nodes; ++n) {
        CpuSet members;
        for (unsigned c = 0; c < cpus_; ++c) {
            unsigned package = (c % cores) / topo.cores_per_package;
            if (per_node && package / per_node == n) {
                members.add(c);
            }
        }
        put(root_ / "devices/system/node" / ("node" + std::to_string(n)) / "cpulist",
            members.to_string());
    }
    put(root_ / "kernel/rcu_expedited", "0");
    rewrite_summaries();
    if (topo.bulk) {
        fs::permissions(cpu / "online", fs::perms::owner_write, fs::perm_options::add);
        fs::permissions(cpu / "offline", fs::perms::owner_write, fs::perm_options::add);
    } else {
        fs::permissions(cpu / "online",
                        fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                        fs::perm_options::replace);
        fs::permissions(cpu / "offline",
                        fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                        fs::perm_options::replace);
    }
}

FakeSysfs::~FakeSysfs() {
    for (const auto& file : immutable_) {
        set_immutable(file, false);
    }
    if (owns_root_) {
        std::error_code ec;
        fs::remove_all(root_, ec);
    }
}

fs::path FakeSysfs::online_file(unsigned cpu) const {
    return cpu_dir() / ("cpu" + std::to_string(cpu)) / "online";
}

unsigned FakeSysfs::package_of(unsigned cpu) const {
    return (cpu % cores()) / topo_.cores_per_package;
}

unsigned FakeSysfs::core_of(unsigned cpu) const {
    return cpu % cores() % topo_.cores_per_package;
}

unsigned FakeSysfs::sibling_of(unsigned cpu) const {
    return (cpu + cores()) % cpus_;
}

void FakeSysfs::write_topology(unsigned c) {
    const unsigned cores = topo_.packages * topo_.cores_per_package;
    const unsigned core_index = c % cores;  // x86 numbering: thread t of core i is i + t * cores
    const fs::path dir = root_ / "devices/system/cpu" / ("cpu" + std::to_string(c)) / "topology";
    // Like x86 Linux, the sibling lists name only the threads that are online.
    CpuSet siblings;
    for (unsigned t = 0; t < topo_.threads_per_core; ++t) {
        if (online_[core_index + t * cores]) {
            siblings.add(core_index + t * cores);
        }
    }
    put(dir / "physical_package_id", std::to_string(core_index / topo_.cores_per_package));
    put(dir / "die_id", "0");
    put(dir / "core_id", std::to_string(core_index % topo_.cores_per_package));
    put(dir / "thread_siblings_list", siblings.to_string());
    put(dir / "core_cpus_list", siblings.to_string());
}

CpuSet FakeSysfs::online() const {
    CpuSet set;
    for (unsigned c = 0; c < cpus_; ++c) {
        const bool on = topo_.plain_files ? read(online_file_name(c)) != "0" : online_[c];
        if (on) {
            set.add(c);
        }
    }
    return set;
}

void FakeSysfs::set_online(unsigned c, bool on) {
    online_.at(c) = on;
    const fs::path dir = root_ / "devices/system/cpu" / ("cpu" + std::to_string(c));
    if (fs::exists(dir / "online")) {
        put(dir / "online", on ? "1" : "0");
    }
    // The kernel removes topology/ while a CPU is offline and rewrites its siblings' lists.
    if (!on) {
        fs::remove_all(dir / "topology");
    }
    const unsigned cores = topo_.packages * topo_.cores_per_package;
    for (unsigned t = 0; t < topo_.threads_per_core; ++t) {
        const unsigned sibling = c % cores + t * cores;
        if (online_[sibling]) {
            write_topology(sibling);
        }
    }
    rewrite_summaries();
}

void FakeSysfs::rewrite_summaries() {
    const fs::path cpu = root_ / "devices/system/cpu";
    const CpuSet on = online();
    const CpuSet all = CpuSet::range(0, cpus_ + topo_.possible_extra - 1);
    // Write through temporary permissions: the files may be read-only like the kernel's.
    for (const auto& [name, value] : {std::pair{"online", on}, std::pair{"offline", all - on}}) {
        const fs::path file = cpu / name;
        std::error_code ec;
        const auto old = fs::status(file, ec).permissions();
        if (!ec) {
            fs::permissions(file, fs::perms::owner_write, fs::perm_options::add);
        }
        put(file, value.to_string());
        if (!ec) {
            fs::permissions(file, old, fs::perm_options::replace);
        }
    }
}

std::string FakeSysfs::read(const std::string& relative) const {
    std::error_code ec;
    if (!fs::is_regular_file(root_ / relative, ec)) {
        return "<absent>";  // never blocks in a FIFO a test put there
    }
    return get(root_ / relative);
}

std::map<unsigned, std::string> FakeSysfs::online_files() const {
    std::map<unsigned, std::string> files;
    for (unsigned c = 0; c < cpus_; ++c) {
        if (fs::exists(online_file(c))) {
            files[c] = read(online_file_name(c));
        }
    }
    return files;
}

int FakeSysfs::make_unwritable(unsigned cpu) {
    const int rc = set_immutable(online_file(cpu), true);
    if (rc == 0) {
        immutable_.push_back(online_file(cpu));
    }
    return rc;
}

int set_immutable(const fs::path& file, bool on) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return errno;
    }
    int flags = 0;
    int rc = 0;
    if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) {
        rc = errno;
    } else {
        flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
        if (::ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0) {
            rc = errno;
        }
    }
    ::close(fd);
    return rc;
}

void FakeSysfs::write(const std::string& relative, const std::string& value) {
    put(root_ / relative, value);
}

void FakeKernelWriter::fail_cpu(unsigned cpu, int err, int times) {
    cpu_failures_[cpu] = {err, times};
}

void FakeKernelWriter::fail_file(const std::string& relative, int err) {
    file_failures_[relative] = err;
}

std::vector<std::string> FakeKernelWriter::writes_to(const std::string& relative) const {
    std::vector<std::string> values;
    for (const auto& w : log_) {
        if (w.file == relative) {
            values.push_back(w.value);
        }
    }
    return values;
}

int FakeKernelWriter::change_cpu(unsigned cpu, bool online) {
    auto it = cpu_failures_.find(cpu);
    if (it != cpu_failures_.end() && it->second.second > 0) {
        --it->second.second;
        return it->second.first;
    }
    if (online && !fs_.topo_.smt_control.empty() &&
        fs_.read("devices/system/cpu/smt/control") == "off") {
        const unsigned cores = fs_.topo_.packages * fs_.topo_.cores_per_package;
        if (cpu >= cores) {
            return EPERM;  // a secondary thread while SMT is disabled
        }
    }
    fs_.set_online(cpu, online);
    return 0;
}

int FakeKernelWriter::write(const fs::path& file, const std::string& value) {
    const std::string rel = fs::relative(file, fs_.root()).string();
    int result = 0;
    if (auto f = file_failures_.find(rel); f != file_failures_.end()) {
        result = f->second;
    } else if (rel.starts_with("devices/system/cpu/cpu") && rel.ends_with("/online")) {
        const std::string num = rel.substr(std::string("devices/system/cpu/cpu").size());
        const unsigned cpu = static_cast<unsigned>(std::stoul(num));
        expedited_seen_.push_back(fs_.read("kernel/rcu_expedited"));
        if (!fs::exists(file)) {
            result = ENOENT;
        } else if (value != "0" && value != "1") {
            result = EINVAL;
        } else if ((value == "1") == fs_.online_.at(cpu)) {
            result = 0;  // the kernel accepts writes of the current state
        } else {
            result = change_cpu(cpu, value == "1");
        }
    } else if (rel == "devices/system/cpu/smt/control") {
        const unsigned cores = fs_.topo_.packages * fs_.topo_.cores_per_package;
        const std::string current = fs_.read(rel);
        if (value != "on" && value != "off") {
            result = EINVAL;
        } else if (current == "notsupported" || current == "forceoff") {
            result = EPERM;
        } else {
            fs_.write(rel, value);  // the kernel switches the control first, then the CPUs
            for (unsigned c = cores; c < fs_.cpus_ && result == 0; ++c) {
                if (fs_.online_[c] != (value == "on")) {
                    result = change_cpu(c, value == "on");
                }
            }
            fs_.write("devices/system/cpu/smt/active", value == "on" ? "1" : "0");
        }
    } else if (rel == "devices/system/cpu/offline" || rel == "devices/system/cpu/online") {
        if (!fs_.topo_.bulk) {
            result = EACCES;
        } else {
            const bool online = rel.ends_with("/online");
            CpuSet cpus;
            try {
                cpus = simple_list(value);
            } catch (const std::exception&) {
                result = EINVAL;
            }
            // Cheap refusals first, as the companion patch does them: nothing changes.
            for (unsigned c : cpus.members()) {
                if (result == 0 && c >= fs_.cpus_) {
                    result = EINVAL;
                }
            }
            if (result == 0 && !online && cpus.contains(0) && !fs_.topo_.cpu0_hotpluggable) {
                result = EPERM;
            }
            if (result == 0 && !online && fs_.online().is_subset_of(cpus)) {
                result = EBUSY;
            }
            if (result == 0) {
                const unsigned cores = fs_.topo_.packages * fs_.topo_.cores_per_package;
                std::vector<unsigned> order = cpus.members();
                // Siblings before primaries going down, primaries first coming up.
                std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
                    return online ? (a < cores) > (b < cores) : (a >= cores) > (b >= cores);
                });
                for (unsigned c : order) {
                    if (fs_.online_[c] == online) {
                        continue;
                    }
                    result = change_cpu(c, online);
                    if (result != 0) {
                        break;  // stop, keep what is done
                    }
                }
            }
        }
    } else {
        if (!fs::exists(file)) {
            result = ENOENT;
        } else {
            fs_.write(rel, value);
        }
    }
    log_.push_back({rel, value, result});
    return result;
}

}  // namespace cpuhpd::test
