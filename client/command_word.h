// The word of a cpuctl command line that names its command, found before CLI11 parses it:
// main.cpp builds only that command's options (CLI11 builds every option of every command
// as an object of its own, most of cpuctl's start beside loading its libraries).
#pragma once

#include <string_view>
#include <vector>

namespace cpuctl {

// The first word of args[1..] that is neither an option nor a global option's value
// (--timeout S, --bus-address ADDRESS); "" when there is none, or when help or the version
// is asked for anywhere (those need every command). args is argv up to any "--".
std::string_view command_word(const std::vector<char*>& args);

}  // namespace cpuctl
