#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace cpuctl {

ProgressLine::ProgressLine(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled) {}

ProgressLine::~ProgressLine() {
    clear();
}

bool ProgressLine::stderr_is_terminal() {
    return ::isatty(STDERR_FILENO) == 1;
}

void ProgressLine::update(std::uint32_t done, std::uint32_t total) {
    if (!enabled_) {
        return;
    }
    std::string text = label_ + ": " + std::to_string(done) + "/" + std::to_string(total) + " CPUs";
    std::string line = "\r" + text;
    if (text.size() < drawn_) {
        line.append(drawn_ - text.size(), ' ');
    }
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    drawn_ = text.size();
}

void ProgressLine::clear() {
    if (!enabled_ || drawn_ == 0) {
        return;
    }
    std::string line = "\r" + std::string(drawn_, ' ') + "\r";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    drawn_ = 0;
}

}  // namespace cpuctl
