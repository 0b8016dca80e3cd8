// Whole-file reads and writes for the harness.
#pragma once

#include <filesystem>
#include <string>

namespace cpuhpd::itest {

// The file's bytes; "" when it cannot be read.
std::string read_file(const std::filesystem::path& file);
// Replaces the file's content; throws std::runtime_error when it cannot.
void write_file(const std::filesystem::path& file, const std::string& text);
// The project's source tree (the tests read its bus configurations, policy and examples).
std::filesystem::path source_dir();
// strerror(err) as a std::string.
std::string error_text(int err);

}  // namespace cpuhpd::itest
