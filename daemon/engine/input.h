// Limits on what callers and files may hand the service, and helpers for reading untrusted
// input: every limit is enforced before any work is done on the input.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace cpuhpd {

// A mask expression (D-Bus Offline/Online argument, profile mask) is at most this long.
inline constexpr std::size_t kMaxMaskBytes = 64 * 1024;
// ... and has at most this many regions (cpulist regions, cpumap groups, selectors).
inline constexpr std::size_t kMaxMaskRegions = 8192;
// Entries of the options dictionary (a{sv}) of a method call.
inline constexpr std::size_t kMaxOptions = 16;
// Change requests one caller (bus connection) may have queued at once, so that one caller
// cannot fill the whole queue (max_queued_requests) and lock everybody else out.
inline constexpr std::size_t kMaxQueuedPerCaller = 16;
// Size of the config file and of the topology cache.
inline constexpr std::size_t kMaxConfigBytes = 1024 * 1024;
inline constexpr std::size_t kMaxCacheBytes = 4 * 1024 * 1024;
// Size of the small state files (the profile in force, the partition ledger).
inline constexpr std::size_t kMaxStateBytes = 1024 * 1024;
// Bytes of caller input quoted in an error message, everywhere.
inline constexpr std::size_t kMaxExcerptBytes = 256;

// `text` made safe to quote in a message: printable ASCII is kept, every other byte
// (control bytes such as ESC, bytes of UTF-8 characters) becomes \xNN, so the result is
// always valid UTF-8. Longer input is cut after `max_bytes` bytes of it and marked
// "...(N bytes)".
std::string escape_excerpt(std::string_view text, std::size_t max_bytes = 48);

// A file that cannot be read as a state or config file; what() names the file and why.
class FileError : public std::runtime_error {
public:
    FileError(const std::filesystem::path& file, std::string reason)
        : std::runtime_error(file.string() + ": " + reason), reason_(std::move(reason)) {}
    const std::string& reason() const { return reason_; }  // without the file name

private:
    std::string reason_;
};

enum class Symlinks { Follow, Refuse };
// Whose file is read: anybody's; an administrator's (owned by root or by the service's uid,
// not writable by everybody: the config); or only one the service itself could have written
// (owned by its uid, writable by nobody else: the state files and caches).
enum class Owner { Anyone, Administrator, Service };

// Reads a whole regular file of at most `max_bytes` bytes without ever blocking on it: the
// file is opened O_NONBLOCK (and O_NOFOLLOW with Symlinks::Refuse) and checked with fstat,
// so FIFOs, devices (/dev/zero) and directories are refused before a byte is read.
// With Owner::Service the file must also be owned by the service's uid and writable by
// nobody else. Throws FileError; a missing file throws too (check with
// std::filesystem::exists first).
std::string read_regular_file(const std::filesystem::path& file, std::size_t max_bytes,
                              Symlinks symlinks, Owner owner = Owner::Anyone);

// Why `st` (an fstat of an open file) is not a file the service could have written, at most
// `max_bytes` long; nullopt when it is one.
std::optional<std::string> untrusted_state_file(const struct stat& st, std::size_t max_bytes);

}  // namespace cpuhpd
