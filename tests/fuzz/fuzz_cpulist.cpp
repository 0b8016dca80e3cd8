// The kernel cpulist and cpumap parsers (parse_cpulist, parse_cpumap): any input either
// parses or throws MaskError with a printable message; what parses formats back to the same
// set.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cpulist.h"
#include "cpumap_text.h"
#include "printable.h"

using cpuhpd::fuzz::check_printable;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const cpuhpd::CpuSet cpus = cpuhpd::parse_cpulist(text, 0, 64);
        if (!(cpuhpd::parse_cpulist(cpuhpd::format_cpulist(cpus)) == cpus)) {
            std::abort();
        }
    } catch (const cpuhpd::MaskError& e) {
        check_printable(e.what());
        check_printable(e.token());
    }
    try {
        const cpuhpd::CpuSet cpus = cpuhpd::parse_cpulist(text);
        (void)cpus;
    } catch (const cpuhpd::MaskError& e) {
        check_printable(e.what());
    }
    try {
        const cpuhpd::CpuSet cpus = cpuhpd::parse_cpumap(text);
        if (!cpus.empty() &&
            !(cpuhpd::parse_cpumap(cpuhpd::format_cpumap(cpus, cpus.last() + 1)) == cpus)) {
            std::abort();
        }
    } catch (const cpuhpd::MaskError& e) {
        check_printable(e.what());
        check_printable(e.token());
    }
    return 0;
}
