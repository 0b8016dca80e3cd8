// The fake sysfs tree of the integration tests.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace cpuhpd::itest {

// 16 CPUs, 2 packages x 4 cores x 2 threads, siblings N and N+8 (x86 numbering),
// one NUMA node per package. cpu0 has no online file. Plain files only.
class FakeTree {
public:
    static constexpr unsigned kCpus = 16;
    static constexpr unsigned kCoresPerPackage = 4;
    static constexpr unsigned kCores = 8;

    explicit FakeTree(std::filesystem::path root);
    ~FakeTree();  // clears immutable flags set through make_unwritable

    const std::filesystem::path& root() const { return root_; }
    std::filesystem::path cpu_dir() const { return root_ / "devices/system/cpu"; }
    std::filesystem::path online_file(unsigned cpu) const;

    static unsigned package_of(unsigned cpu) { return (cpu % kCores) / kCoresPerPackage; }
    static unsigned core_of(unsigned cpu) { return cpu % kCoresPerPackage; }
    static unsigned sibling_of(unsigned cpu) { return (cpu + kCores) % kCpus; }

    // File content without the trailing newline; "<absent>" when missing or unreadable.
    std::string read(const std::string& relative) const;
    void write(const std::string& relative, const std::string& value);  // adds '\n'
    // cpuN/online contents for every hotpluggable CPU (1..15).
    std::map<unsigned, std::string> online_files() const;
    // Makes writes to cpuN/online fail for root too (EPERM through chattr +i).
    // Returns 0 or the errno of the ioctl (the filesystem may not support it).
    int make_unwritable(unsigned cpu);

private:
    std::filesystem::path root_;
    std::vector<std::filesystem::path> immutable_;
};

}  // namespace cpuhpd::itest
