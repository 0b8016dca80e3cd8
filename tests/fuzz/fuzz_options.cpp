// The options of a change request (decode_options). The input is read as entries, one a
// line: "KEY=s:TEXT" (string), "KEY=b:0|1" (boolean) or "KEY=T:..." (any other type T).
// Any entries decode or throw OptionError with a printable message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "option_dictionary.h"
#include "printable.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<cpuhpd::OptionEntry> entries;
    std::size_t begin = 0;
    while (begin < text.size()) {
        std::size_t end = text.find('\n', begin);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        const std::string_view line = text.substr(begin, end - begin);
        begin = end + 1;
        cpuhpd::OptionEntry entry;
        const std::size_t eq = line.find('=');
        entry.key = std::string(line.substr(0, eq));
        if (eq != std::string_view::npos) {
            const std::string_view rest = line.substr(eq + 1);
            const std::size_t colon = rest.find(':');
            entry.type = std::string(rest.substr(0, colon));
            const std::string_view value =
                colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
            if (entry.type == "s") {
                entry.value = std::string(value);
            } else if (entry.type == "b") {
                entry.value = value == "1";
            }
        }
        entries.push_back(std::move(entry));
    }
    try {
        cpuhpd::decode_options(entries);
    } catch (const cpuhpd::OptionError& e) {
        cpuhpd::fuzz::check_printable(e.what());
    }
    return 0;
}
