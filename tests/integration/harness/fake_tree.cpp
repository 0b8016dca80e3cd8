#include "fake_tree.h"

#include <set>

#include "cpuset.h"
#include "files.h"
#include "temp_dir.h"

namespace cpuhpd::itest {

namespace fs = std::filesystem;

namespace {

std::string to_cpulist(const std::set<unsigned>& cpus) {
    return CpuSet::from({cpus.begin(), cpus.end()}).to_string();
}

}  // namespace

FakeTree::FakeTree(fs::path root) : root_(std::move(root)) {
    std::set<unsigned> all;
    for (unsigned c = 0; c < kCpus; ++c) {
        all.insert(c);
    }
    fs::path cpu = cpu_dir();
    fs::create_directories(cpu);
    auto ro = [](const fs::path& p) {
        // As in the kernel: the summary files are read-only (no companion patch here).
        fs::permissions(p, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    };
    for (const char* f : {"possible", "present", "online"}) {
        write_file(cpu / f, to_cpulist(all) + "\n");
        ro(cpu / f);
    }
    write_file(cpu / "offline", "\n");
    ro(cpu / "offline");
    write_file(cpu / "kernel_max", "8191\n");
    ro(cpu / "kernel_max");
    fs::create_directories(cpu / "smt");
    write_file(cpu / "smt/control", "on\n");
    write_file(cpu / "smt/active", "1\n");
    for (unsigned c = 0; c < kCpus; ++c) {
        fs::path d = cpu / ("cpu" + std::to_string(c));
        fs::create_directories(d / "topology");
        if (c != 0) {
            write_file(d / "online", "1\n");
        }
        std::string siblings = to_cpulist({c, sibling_of(c)});
        write_file(d / "topology/physical_package_id", std::to_string(package_of(c)) + "\n");
        write_file(d / "topology/die_id", "0\n");
        write_file(d / "topology/core_id", std::to_string(core_of(c)) + "\n");
        write_file(d / "topology/thread_siblings_list", siblings + "\n");
        write_file(d / "topology/core_cpus_list", siblings + "\n");
        write_file(d / "topology/core_siblings_list", to_cpulist([&] {
                                                          std::set<unsigned> s;
                                                          for (unsigned o = 0; o < kCpus; ++o) {
                                                              if (package_of(o) == package_of(c)) {
                                                                  s.insert(o);
                                                              }
                                                          }
                                                          return s;
                                                      }()) +
                                                          "\n");
    }
    for (unsigned n = 0; n < 2; ++n) {
        std::set<unsigned> cpus;
        for (unsigned c = 0; c < kCpus; ++c) {
            if (package_of(c) == n) {
                cpus.insert(c);
            }
        }
        fs::path d = root_ / "devices/system/node" / ("node" + std::to_string(n));
        fs::create_directories(d);
        write_file(d / "cpulist", to_cpulist(cpus) + "\n");
    }
    write_file(root_ / "devices/system/node/online", "0-1\n");
    write_file(root_ / "devices/system/node/possible", "0-1\n");
    fs::create_directories(root_ / "kernel");
    write_file(root_ / "kernel/rcu_expedited", "0\n");
}

FakeTree::~FakeTree() {
    for (const auto& p : immutable_) {
        set_immutable(p, false);
    }
}

fs::path FakeTree::online_file(unsigned cpu) const {
    return cpu_dir() / ("cpu" + std::to_string(cpu)) / "online";
}

std::string FakeTree::read(const std::string& relative) const {
    fs::path p = root_ / relative;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
        return "<absent>";
    }
    std::string s = read_file(p);
    if (!s.empty() && s.back() == '\n') {
        s.pop_back();
    }
    return s;
}

void FakeTree::write(const std::string& relative, const std::string& value) {
    write_file(root_ / relative, value + "\n");
}

std::map<unsigned, std::string> FakeTree::online_files() const {
    std::map<unsigned, std::string> out;
    for (unsigned c = 1; c < kCpus; ++c) {
        out[c] = read("devices/system/cpu/cpu" + std::to_string(c) + "/online");
    }
    return out;
}

int FakeTree::make_unwritable(unsigned cpu) {
    int rc = set_immutable(online_file(cpu), true);
    if (rc == 0) {
        immutable_.push_back(online_file(cpu));
    }
    return rc;
}

}  // namespace cpuhpd::itest
