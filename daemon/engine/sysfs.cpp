#include "sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "attribute_at.h"

namespace cpuhpd {

int FileAttributeWriter::write(const std::filesystem::path& file, const std::string& value) {
    int fd;
    do {
        // O_TRUNC as a shell's `>` has it: sysfs and cgroupfs ignore it, and a plain file
        // (the tests' trees) then holds exactly the value, not the value over a longer one.
        fd = ::open(file.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        return errno;
    }
    int result = 0;
    ssize_t n;
    do {
        n = ::write(fd, value.data(), value.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        result = errno;
    } else if (static_cast<std::size_t>(n) != value.size()) {
        result = EIO;  // sysfs stores take the whole value or fail
    }
    if (::close(fd) != 0 && result == 0 && errno != EINTR) {
        result = errno;
    }
    return result;
}

SysfsPaths::SysfsPaths(std::filesystem::path root) : root_(std::move(root)) {}

std::filesystem::path SysfsPaths::cpu_dir() const {
    return root_ / "devices/system/cpu";
}
std::filesystem::path SysfsPaths::cpu(unsigned cpu) const {
    return cpu_dir() / ("cpu" + std::to_string(cpu));
}
std::filesystem::path SysfsPaths::cpu_online(unsigned cpu) const {
    return this->cpu(cpu) / "online";
}
std::filesystem::path SysfsPaths::cpu_topology(unsigned cpu) const {
    return this->cpu(cpu) / "topology";
}
std::filesystem::path SysfsPaths::possible() const {
    return cpu_dir() / "possible";
}
std::filesystem::path SysfsPaths::present() const {
    return cpu_dir() / "present";
}
std::filesystem::path SysfsPaths::online() const {
    return cpu_dir() / "online";
}
std::filesystem::path SysfsPaths::offline() const {
    return cpu_dir() / "offline";
}
std::filesystem::path SysfsPaths::smt_control() const {
    return cpu_dir() / "smt/control";
}
std::filesystem::path SysfsPaths::smt_active() const {
    return cpu_dir() / "smt/active";
}
std::filesystem::path SysfsPaths::rcu_expedited() const {
    return root_ / "kernel/rcu_expedited";
}
std::filesystem::path SysfsPaths::node_dir() const {
    return root_ / "devices/system/node";
}

std::optional<std::string> read_attribute(const std::filesystem::path& file) {
    return read_attribute_at(AT_FDCWD, file.c_str());
}

int open_at(int dir, const char* name, int flags) {
    int fd;
    do {
        fd = ::openat(dir, name, flags | O_NONBLOCK | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

std::optional<std::string> read_attribute_at(int dir, const char* name) {
    // The open never waits; the reads below wait as sysfs reads do. On sysfs O_NONBLOCK
    // changes nothing either way.
    const OwnedFd fd(open_at(dir, name, O_RDONLY));
    if (fd.get() < 0) {
        return std::nullopt;
    }
    // F_SETFL replaces the status flags only, of which O_NONBLOCK was the one set: one call
    // (this runs for every attribute of every CPU each time the machine is read).
    ::fcntl(fd.get(), F_SETFL, 0);
    std::string out;
    char buf[4096];
    while (true) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return std::nullopt;
        }
        if (n == 0) {
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
        // A short read is the end: sysfs, procfs (seq_file) and regular files fill the
        // buffer while they have more, so this saves the read that would return 0.
        if (static_cast<std::size_t>(n) < sizeof buf) {
            break;
        }
    }
    if (!out.empty() && out.back() == '\n') {
        out.pop_back();
    }
    return out;
}

std::vector<DirEntry> list_directory(int fd) {
    std::vector<DirEntry> out;
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
        ::close(fd);
        return out;
    }
    while (const dirent* e = ::readdir(d)) {
        const std::string_view name(e->d_name);
        if (name != "." && name != "..") {
            out.push_back({std::string(name), e->d_type});
        }
    }
    ::closedir(d);
    return out;
}

std::string errno_name(int err) {
    switch (err) {
        case EPERM:
            return "EPERM";
        case ENOENT:
            return "ENOENT";
        case EINTR:
            return "EINTR";
        case EIO:
            return "EIO";
        case ENXIO:
            return "ENXIO";
        case EBADF:
            return "EBADF";
        case EAGAIN:
            return "EAGAIN";
        case ENOMEM:
            return "ENOMEM";
        case EACCES:
            return "EACCES";
        case EFAULT:
            return "EFAULT";
        case EBUSY:
            return "EBUSY";
        case EEXIST:
            return "EEXIST";
        case ENODEV:
            return "ENODEV";
        case ENOTDIR:
            return "ENOTDIR";
        case EISDIR:
            return "EISDIR";
        case EINVAL:
            return "EINVAL";
        case ENOSPC:
            return "ENOSPC";
        case EROFS:
            return "EROFS";
        case ERANGE:
            return "ERANGE";
        case EDEADLK:
            return "EDEADLK";
        case ENOTSUP:
            return "ENOTSUP";
        case ETIMEDOUT:
            return "ETIMEDOUT";
        case EOVERFLOW:
            return "EOVERFLOW";
        case ECANCELED:
            return "ECANCELED";
        default:
            break;
    }
    if (err > 0) {
        if (const char* name = ::strerrorname_np(err)) {
            return name;
        }
    }
    return "E" + std::to_string(err);
}

std::string errno_text(int err) {
    if (const char* text = ::strerrordesc_np(err)) {
        return text;
    }
    return "Unknown error " + std::to_string(err);
}

}  // namespace cpuhpd
