// `cpuctl topology --map` and `cpuctl status --map`: what the daemon says of the machine
// (topology, protected CPUs, holds), drawn by render_map.
#pragma once

#include <cstddef>

#include "daemon_client.h"

namespace cpuctl {

// Colour when stdout is a terminal, unless `no_color`, NO_COLOR is set (no-color.org) or
// TERM is "dumb". The width is the terminal's, else 80. With `with_status` the status table
// comes first. Throws DaemonError as the client does.
int run_map_command(DaemonClient& client, bool with_status, bool no_color);

// Whether the map on stdout gets colour, and how wide it may be.
bool map_in_colour(bool no_color);
std::size_t map_width();

}  // namespace cpuctl
