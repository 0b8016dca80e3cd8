// Access to the kernel's CPU hotplug files below an injected sysfs root.
// Nothing else in the engine builds a sysfs path.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace cpuhpd {

// Writes one sysfs attribute. The seam where tests inject kernel behaviour and failures.
class AttributeWriter {
public:
    virtual ~AttributeWriter() = default;
    // Returns 0 on success or the errno of the failed open/write.
    virtual int write(const std::filesystem::path& file, const std::string& value) = 0;
};

// The real writer: open(O_WRONLY), one write(2) of the whole value, close.
class FileAttributeWriter final : public AttributeWriter {
public:
    int write(const std::filesystem::path& file, const std::string& value) override;
};

// Paths of the files the service reads and writes, relative to an injected root
// (normally "/sys").
class SysfsPaths {
public:
    explicit SysfsPaths(std::filesystem::path root);

    const std::filesystem::path& root() const { return root_; }
    std::filesystem::path cpu_dir() const;  // devices/system/cpu
    std::filesystem::path cpu(unsigned cpu) const;
    std::filesystem::path cpu_online(unsigned cpu) const;
    std::filesystem::path cpu_topology(unsigned cpu) const;
    std::filesystem::path possible() const;
    std::filesystem::path present() const;
    std::filesystem::path online() const;
    std::filesystem::path offline() const;
    std::filesystem::path smt_control() const;
    std::filesystem::path smt_active() const;
    std::filesystem::path rcu_expedited() const;  // kernel/rcu_expedited
    std::filesystem::path node_dir() const;       // devices/system/node

private:
    std::filesystem::path root_;
};

// Whole-file read with the trailing newline removed; nullopt when absent or unreadable.
std::optional<std::string> read_attribute(const std::filesystem::path& file);

// Name and text for an errno value: "EBUSY", "Device or resource busy".
std::string errno_name(int err);
std::string errno_text(int err);

}  // namespace cpuhpd
