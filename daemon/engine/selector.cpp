#include "selector.h"

#include <string>
#include <vector>

namespace cpuhpd {

namespace {

constexpr const char* kExpected = "(expected all, smt, package:N, die:N, node:N, core:N)";

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

struct Argument {
    std::string_view text;
    std::size_t position;
};

std::vector<Argument> split(std::string_view expression) {
    std::vector<Argument> out;
    std::size_t i = 0;
    while (i < expression.size()) {
        while (i < expression.size() && is_space(expression[i])) {
            ++i;
        }
        std::size_t begin = i;
        while (i < expression.size() && !is_space(expression[i])) {
            ++i;
        }
        if (i > begin) {
            out.push_back({expression.substr(begin, i - begin), begin});
        }
    }
    return out;
}

// The N of "package:N": decimal digits only.
unsigned selector_number(const Argument& arg, std::size_t colon) {
    std::string_view digits = arg.text.substr(colon + 1);
    std::string token(arg.text);
    if (digits.empty()) {
        throw MaskError("selector '" + token + "' needs a number after ':'", token, arg.position);
    }
    unsigned long long value = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') {
            throw MaskError("selector '" + token + "' needs a decimal number after ':'", token,
                            arg.position);
        }
        value = value * 10 + static_cast<unsigned>(c - '0');
        if (value > 0x7fffffff) {
            throw MaskError("number in selector '" + token + "' is too large", token, arg.position);
        }
    }
    return static_cast<unsigned>(value);
}

CpuSet by_field(const MachineState& machine, int CpuTopology::*field, unsigned value) {
    CpuSet out;
    for (const auto& [cpu, topo] : machine.topology) {
        if (topo.*field == static_cast<int>(value)) {
            out.add(cpu);
        }
    }
    return out;
}

CpuSet resolve_selector(const Argument& arg, const MachineState& machine) {
    std::string token(arg.text);
    auto colon = arg.text.find(':');
    std::string_view word = arg.text.substr(0, colon);
    CpuSet out;
    if (colon == std::string_view::npos && word == "all") {
        out = machine.present;
    } else if (colon == std::string_view::npos && word == "smt") {
        out = machine.smt_secondaries();
    } else if (colon != std::string_view::npos && word == "package") {
        out = by_field(machine, &CpuTopology::package, selector_number(arg, colon));
    } else if (colon != std::string_view::npos && word == "die") {
        out = by_field(machine, &CpuTopology::die, selector_number(arg, colon));
    } else if (colon != std::string_view::npos && word == "node") {
        out = by_field(machine, &CpuTopology::node, selector_number(arg, colon));
    } else if (colon != std::string_view::npos && word == "core") {
        unsigned cpu = selector_number(arg, colon);
        auto it = machine.topology.find(cpu);
        if (it == machine.topology.end()) {
            throw MaskError("selector '" + token + "': the topology of CPU " + std::to_string(cpu) +
                                " is not known",
                            token, arg.position);
        }
        out = it->second.siblings;
    } else {
        throw MaskError("unknown selector '" + token + "' " + kExpected, token, arg.position);
    }
    if (out.empty()) {
        throw MaskError("selector '" + token + "' matches no CPU", token, arg.position);
    }
    return out;
}

bool is_numeric(const Argument& arg) {
    return !is_letter(arg.text[0]);  // a cpulist or a 0x cpumap
}

CpuSet resolve_argument(const Argument& arg, const MachineState& machine) {
    std::string_view t = arg.text;
    if (t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
        if (t.size() == 2) {
            throw MaskError("no hex digits after '0x'", std::string(t), arg.position);
        }
        return parse_cpumap(t.substr(2), arg.position + 2);
    }
    if (!is_letter(t[0])) {
        return parse_cpulist(t, arg.position);
    }
    std::size_t n = 0;
    while (n < t.size() && is_letter(t[n])) {
        ++n;
    }
    std::string word(t.substr(0, n));
    std::string lower = word;
    for (char& c : lower) {
        c = static_cast<char>(c | 0x20);
    }
    // The kernel's "N" and "all" cpulist forms: the parser explains why they are refused.
    if ((word == "N" || (lower == "all" && t != "all")) &&
        (n == t.size() || t[n] == '-' || t[n] == ',' || t[n] == ':')) {
        return parse_cpulist(t, arg.position);
    }
    return resolve_selector(arg, machine);
}

}  // namespace

MaskSelection select_mask(std::string_view expression, const MachineState& machine) {
    std::vector<Argument> args = split(expression);
    if (args.empty()) {
        throw MaskError("empty CPU mask", std::string(expression), 0);
    }
    MaskSelection out;
    for (const Argument& arg : args) {
        const CpuSet cpus = resolve_argument(arg, machine);
        out.cpus |= cpus;
        if (is_numeric(arg)) {
            out.named |= cpus;
        }
    }
    return out;
}

CpuSet resolve_mask(std::string_view expression, const MachineState& machine) {
    return select_mask(expression, machine).cpus;
}

}  // namespace cpuhpd
