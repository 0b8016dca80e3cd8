// A temporary directory per test, and the immutable flag that makes a file unwritable for
// root too (for injected write failures).
#pragma once

#include <filesystem>

namespace cpuhpd::itest {

// A temporary directory, removed on destruction unless CPUHPD_ITEST_KEEP is set.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// Sets or clears the immutable inode flag (chattr +i); returns 0 or the errno.
int set_immutable(const std::filesystem::path& file, bool on);

}  // namespace cpuhpd::itest
