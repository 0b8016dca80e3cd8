// Small state files under the state directory (topology cache, profile in force), written
// so that a reader (or a daemon restarting after a crash) sees the old text or the new one,
// never half of one.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace cpuhpd {

// Writes `text` to a temporary file beside `file` (FILE.XXXXXX), fsyncs it and renames it
// over `file` (mode 0644). Returns 0, or the errno of the step that failed in `failed_step`
// ("create temporary file", "write", "chmod", "fsync", "close", "rename"); the temporary file
// is removed then.
int replace_file(const std::filesystem::path& file, const std::string& text,
                 std::string& failed_step);

// Reads the state file `file`, which cpuhpd wrote itself: without following a link or
// blocking on a FIFO, only a regular file owned by the service's uid, writable by nobody
// else and at most `max_bytes` long (read_regular_file with Owner::Service). nullopt when
// there is no file. Anything else is moved aside to FILE.rejected (rename() moves a link
// itself, never what it points to), `problem` says what and where, and nullopt is returned.
std::optional<std::string> read_state_file(const std::filesystem::path& file, std::size_t max_bytes,
                                           std::string& problem);

// The file of a ledger (partitions.h, affinity.h): nothing to do for an empty `file` (no
// state directory). Load: the text of `file` (read_state_file, at most kMaxStateBytes)
// handed to `parse`, which says what is wrong with it, or nullopt; `parse` is not called
// when there is no file. Returns the problem, naming the file, or nullopt.
std::optional<std::string> load_ledger_file(
    const std::filesystem::path& file,
    const std::function<std::optional<std::string>(const std::string& text)>& parse);
// Save: `text` written over `file` (replace_file), or for nullopt (nothing owed) the file
// removed. 0, or the errno.
int save_ledger_file(const std::filesystem::path& file, const std::optional<std::string>& text);

}  // namespace cpuhpd
