#include "temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "files.h"

namespace cpuhpd::itest {

namespace fs = std::filesystem;

TempDir::TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/cpuhpd-itest.XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) {
        throw std::runtime_error("mkdtemp: " + error_text(errno));
    }
    path_ = buf.data();
    // The access-control test connects as nobody: the bus socket must be reachable.
    fs::permissions(path_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
}

TempDir::~TempDir() {
    std::error_code ec;
    if (std::getenv("CPUHPD_ITEST_KEEP")) {
        return;
    }
    fs::remove_all(path_, ec);
}

}  // namespace cpuhpd::itest
