#include "files.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef CPUHPD_SOURCE_DIR
#error "CPUHPD_SOURCE_DIR must be defined"
#endif

namespace cpuhpd::itest {

std::filesystem::path source_dir() {
    return CPUHPD_SOURCE_DIR;
}

std::string read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::filesystem::path& file, const std::string& text) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
        throw std::runtime_error("cannot write " + file.string());
    }
}

std::string error_text(int err) {
    return std::string(std::strerror(err));
}

}  // namespace cpuhpd::itest
