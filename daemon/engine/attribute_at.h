// read_attribute (sysfs.h) relative to an open directory: the walks of /proc (pinned.h)
// and of the cgroup tree (partitions.h) read thousands of files, and openat spares each
// open the walk of the whole path.
#pragma once

#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

namespace cpuhpd {

// An owned file descriptor (-1: none), closed when the holder goes.
class OwnedFd {
public:
    explicit OwnedFd(int fd) : fd_(fd) {}
    ~OwnedFd() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

// openat(dir, name, flags | O_NONBLOCK | O_CLOEXEC), again when a signal interrupts it: the
// open never waits (for a FIFO in place of a file, a broken tree or the crash tests' blocked
// writes, it would wait for a writer). The descriptor, or -1 with errno set.
int open_at(int dir, const char* name, int flags);

// Whole-file read of `name` below the open directory `dir`, with the trailing newline
// removed; nullopt when absent or unreadable. AT_FDCWD: relative to the working directory.
std::optional<std::string> read_attribute_at(int dir, const char* name);

struct DirEntry {
    std::string name;
    unsigned char
        type;  // d_type: DT_DIR, DT_REG, ... (DT_UNKNOWN when the filesystem does not say)
};

// The entries of the open directory `fd`, which this takes (and closes), in directory
// order, without "." and ".."; none when it cannot be read. One getdents pass, no stat.
std::vector<DirEntry> list_directory(int fd);

}  // namespace cpuhpd
