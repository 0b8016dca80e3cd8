// The topology cache reader (parse_topology): any text gives a map or a runtime_error; a
// map that was read is written back as text that reads as the same map.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "topology.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const cpuhpd::TopologyMap map = cpuhpd::parse_topology(text);
        if (!(cpuhpd::parse_topology(cpuhpd::serialize_topology(map)) == map)) {
            std::abort();
        }
    } catch (const std::runtime_error&) {
    }
    return 0;
}
