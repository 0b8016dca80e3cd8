#include "command_word.h"

namespace cpuctl {

std::string_view command_word(const std::vector<char*>& args) {
    std::string_view word;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        if (arg == "-h" || arg == "--help" || arg == "--help-all" || arg == "--version") {
            return {};
        }
        if (arg == "--timeout" || arg == "--bus-address") {
            ++i;  // its value, whatever it looks like
        } else if (word.empty() && !arg.starts_with("-")) {
            word = arg;
        }
    }
    return word;
}

}  // namespace cpuctl
