#include "input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cpuhpd {

std::string escape_excerpt(std::string_view text, std::size_t max_bytes) {
    static const char hex[] = "0123456789abcdef";
    const std::string_view shown = text.substr(0, max_bytes);
    std::string out;
    out.reserve(shown.size() + 16);
    for (const char c : shown) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f) {
            out += c;
        } else {
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        }
    }
    if (shown.size() < text.size()) {
        out += "...(" + std::to_string(text.size()) + " bytes)";
    }
    return out;
}

namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& why) {
    throw FileError(file, why);
}

std::string size_text(std::size_t bytes) {
    return bytes % (1024 * 1024) == 0 ? std::to_string(bytes / (1024 * 1024)) + " MiB"
                                      : std::to_string(bytes) + " bytes";
}

}  // namespace

std::optional<std::string> untrusted_state_file(const struct stat& st, std::size_t max_bytes) {
    if (S_ISLNK(st.st_mode)) {
        return "it is a symbolic link";
    }
    if (!S_ISREG(st.st_mode)) {
        return S_ISDIR(st.st_mode) ? "it is a directory, not a regular file"
                                   : "it is not a regular file (a FIFO, socket or device)";
    }
    if (st.st_uid != ::geteuid()) {
        return "it is owned by uid " + std::to_string(st.st_uid) + ", not by cpuhpd (uid " +
               std::to_string(::geteuid()) + ")";
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        return "others may write it";
    }
    if (static_cast<std::size_t>(st.st_size) > max_bytes) {
        return "it is " + std::to_string(st.st_size) + " bytes; the limit is " +
               size_text(max_bytes);
    }
    return std::nullopt;
}

std::string read_regular_file(const std::filesystem::path& file, std::size_t max_bytes,
                              Symlinks symlinks, Owner owner) {
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    if (symlinks == Symlinks::Refuse) {
        flags |= O_NOFOLLOW;
    }
    int fd;
    do {
        fd = ::open(file.c_str(), flags);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        const int err = errno;
        fail(file, err == ELOOP && symlinks == Symlinks::Refuse
                       ? "is a symbolic link; only a regular file is read"
                       : std::string("cannot open: ") + std::strerror(err));
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        fail(file, std::string("cannot stat: ") + std::strerror(errno));
    }
    if (owner == Owner::Service) {
        if (const auto why = untrusted_state_file(st, max_bytes)) {
            fail(file, *why);
        }
    }
    if (owner == Owner::Administrator) {
        if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
            fail(file, "is owned by uid " + std::to_string(st.st_uid) +
                           "; only a file of root's (or of cpuhpd's uid) is read");
        }
        if ((st.st_mode & S_IWOTH) != 0) {
            fail(file, "may be written by anyone (mode " + std::to_string((st.st_mode >> 6) & 7) +
                           std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) +
                           "); a file everybody may write is never read");
        }
    }
    if (!S_ISREG(st.st_mode)) {
        fail(file, S_ISDIR(st.st_mode) ? "is a directory, not a regular file"
                                       : "is not a regular file (a FIFO, socket or device)");
    }
    if (static_cast<std::size_t>(st.st_size) > max_bytes) {
        fail(file,
             "is " + std::to_string(st.st_size) + " bytes; the limit is " + size_text(max_bytes));
    }
    std::string out;
    char buf[8192];
    while (true) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fail(file, std::string("cannot read: ") + std::strerror(errno));
        }
        if (n == 0) {
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > max_bytes) {  // grew while we read it
            fail(file, "is larger than the limit of " + size_text(max_bytes));
        }
    }
    return out;
}

}  // namespace cpuhpd
