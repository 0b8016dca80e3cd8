// Small state files under the state directory (topology cache, profile in force), written
// so that a reader (or a daemon restarting after a crash) sees the old text or the new one,
// never half of one.
#pragma once

#include <filesystem>
#include <string>

namespace cpuhpd {

// Writes `text` to a temporary file beside `file` and renames it over `file` (mode 0644).
// Returns 0, or the errno of the step that failed in `failed_step` ("create temporary file",
// "write"); the temporary file is removed then.
int replace_file(const std::filesystem::path& file, const std::string& text,
                 std::string& failed_step);

}  // namespace cpuhpd
