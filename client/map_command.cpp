#include "map_command.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string_view>

#include "exit_codes.h"
#include "render_map.h"
#include "render_table.h"

namespace cpuctl {

bool map_in_colour(bool no_color) {
    if (no_color || ::isatty(STDOUT_FILENO) != 1) {
        return false;
    }
    const char* no_color_env = std::getenv("NO_COLOR");
    if (no_color_env != nullptr && *no_color_env != '\0') {
        return false;
    }
    const char* term = std::getenv("TERM");
    return term == nullptr || std::string_view(term) != "dumb";
}

std::size_t map_width() {
    winsize size{};
    if (::isatty(STDOUT_FILENO) == 1 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
        size.ws_col > 0) {
        return size.ws_col;
    }
    return 80;
}

int run_map_command(DaemonClient& client, bool with_status, bool no_color) {
    const auto status = client.status();
    const auto cpus = client.topology();
    const auto holds = client.holds();
    if (with_status) {
        render_status_table(std::cout, status);
        std::cout << '\n';
    }
    std::cout << render_map(cpus, status.protected_cpus, holds,
                            {map_in_colour(no_color), map_width()})
              << std::flush;
    return kExitOk;
}

}  // namespace cpuctl
