// Whether a command was given: cpuctl builds only the command its command line names
// (main.cpp), so a command that was not built is not given either.
#pragma once

#include <CLI/CLI.hpp>

namespace cpuctl {

inline bool parsed(const CLI::App* command) {
    return command != nullptr && command->parsed();
}

}  // namespace cpuctl
