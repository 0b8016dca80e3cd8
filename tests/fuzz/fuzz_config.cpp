// The YAML config loader (parse_config): any text gives a Config or a ConfigError, never
// another exception, a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const cpuhpd::Config config = cpuhpd::parse_config(text, "fuzz.yaml");
        (void)config;
    } catch (const cpuhpd::ConfigError&) {
    }
    return 0;
}
