// The one-line "\r" progress on stderr while a batch runs ("offline: 12/31 CPUs").
#pragma once

#include <cstdint>
#include <string>

namespace cpuctl {

class ProgressLine {
public:
    // Shows nothing unless `enabled` (the caller decides: stderr is a terminal and no --json).
    ProgressLine(std::string label, bool enabled);
    ~ProgressLine();  // clears the line if one was drawn
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    bool enabled() const { return enabled_; }
    void update(std::uint32_t done, std::uint32_t total);
    void clear();

    // True when stderr is a terminal.
    static bool stderr_is_terminal();

private:
    std::string label_;
    bool enabled_;
    std::size_t drawn_ = 0;  // width of the text on the line, 0 when none
};

}  // namespace cpuctl
