// Helpers shared by the journal file and recovery tests: a state directory of their own,
// whole-file reads and writes, and journal lines sealed the way journal_file.h documents.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cpuhpd::test {

class StateDir {
public:
    StateDir() {
        std::string templ =
            (std::filesystem::temp_directory_path() / "cpuhpd-journal-test-XXXXXX").string();
        if (!::mkdtemp(templ.data())) {
            throw std::runtime_error("mkdtemp");
        }
        path_ = templ;
    }
    ~StateDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    StateDir(const StateDir&) = delete;
    StateDir& operator=(const StateDir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path journal() const { return path_ / "batch.journal"; }
    std::filesystem::path rejected() const { return path_ / "batch.journal.rejected"; }

private:
    std::filesystem::path path_;
};

inline std::string read_text(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void write_text(const std::filesystem::path& file, const std::string& text) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
        throw std::runtime_error("cannot write " + file.string());
    }
}

// A journal line as journal_file.h specifies it, computed here independently of the
// daemon's code: the body, " sum=", FNV-1a 64 of the body in 16 hex digits, a newline.
inline std::string sealed_line(std::string_view body) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const unsigned char c : body) {
        hash ^= c;
        hash *= 0x100000001b3ULL;
    }
    char sum[17];
    std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(hash));
    return std::string(body) + " sum=" + sum + "\n";
}

}  // namespace cpuhpd::test
