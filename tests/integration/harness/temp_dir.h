// A temporary directory per test.
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

}  // namespace cpuhpd::itest
