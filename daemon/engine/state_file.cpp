#include "state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "input.h"

namespace cpuhpd {

int replace_file(const std::filesystem::path& file, const std::string& text,
                 std::string& failed_step) {
    const std::string tmpl = file.string() + ".XXXXXX";
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back('\0');
    const int fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0) {
        failed_step = "create temporary file";
        return errno;
    }
    const char* p = text.data();
    std::size_t left = text.size();
    int err = 0;
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            err = errno;
            break;
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    const char* step = "write";
    if (err == 0 && ::fchmod(fd, 0644) != 0) {
        err = errno;
        step = "chmod";
    }
    // On disk before the rename: after a crash the name holds the old text or the new one.
    if (err == 0 && ::fsync(fd) != 0) {
        err = errno;
        step = "fsync";
    }
    if (::close(fd) != 0 && err == 0 && errno != EINTR) {
        err = errno;
        step = "close";
    }
    if (err == 0 && ::rename(name.data(), file.c_str()) != 0) {
        err = errno;
        step = "rename";
    }
    if (err != 0) {
        ::unlink(name.data());
        failed_step = step;
    }
    return err;
}

std::optional<std::string> read_state_file(const std::filesystem::path& file, std::size_t max_bytes,
                                           std::string& problem) {
    problem.clear();
    std::error_code ec;
    if (std::filesystem::symlink_status(file, ec).type() == std::filesystem::file_type::not_found) {
        return std::nullopt;
    }
    try {
        return read_regular_file(file, max_bytes, Symlinks::Refuse, Owner::Service);
    } catch (const FileError& error) {
        const std::string aside = file.string() + ".rejected";
        if (::rename(file.c_str(), aside.c_str()) == 0) {
            problem = file.string() + " was not used (" + error.reason() + "); moved to " + aside;
        } else {
            problem = file.string() + " was not used (" + error.reason() +
                      ") and cannot be moved aside (" + std::strerror(errno) + ")";
        }
        return std::nullopt;
    }
}

std::optional<std::string> load_ledger_file(
    const std::filesystem::path& file,
    const std::function<std::optional<std::string>(const std::string& text)>& parse) {
    if (file.empty()) {
        return std::nullopt;
    }
    std::string problem;
    const auto text = read_state_file(file, kMaxStateBytes, problem);
    if (!text) {
        return problem.empty() ? std::nullopt : std::optional<std::string>(problem);
    }
    if (auto wrong = parse(*text)) {
        return file.string() + ": " + *wrong;
    }
    return std::nullopt;
}

int save_ledger_file(const std::filesystem::path& file, const std::optional<std::string>& text) {
    if (file.empty()) {
        return 0;
    }
    if (!text) {
        std::error_code ec;
        std::filesystem::remove(file, ec);
        return ec ? ec.value() : 0;
    }
    std::string step;
    return replace_file(file, *text, step);
}

}  // namespace cpuhpd
