#include "selector.h"

#include <string>
#include <vector>

#include "input.h"

namespace cpuhpd {

namespace {

constexpr const char* kExpected = "(expected all, smt, package:N, die:N, node:N, core:N)";

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
        while (i < expression.size() && is_mask_space(expression[i])) {
            ++i;
        }
        std::size_t begin = i;
        while (i < expression.size() && !is_mask_space(expression[i])) {
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
    const std::string token = escape_excerpt(arg.text);
    if (digits.empty()) {
        throw MaskError("selector '" + token + "' needs a number after ':'", arg.text,
                        arg.position);
    }
    unsigned long long value = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') {
            throw MaskError("selector '" + token + "' needs a decimal number after ':'", arg.text,
                            arg.position);
        }
        value = value * 10 + static_cast<unsigned>(c - '0');
        if (value > 0x7fffffff) {
            throw MaskError("number in selector '" + token + "' is too large", arg.text,
                            arg.position);
        }
    }
    return static_cast<unsigned>(value);
}

enum class SelectorKind { All, Smt, Package, Die, Node, Core };

struct Selector {
    SelectorKind kind = SelectorKind::All;
    unsigned number = 0;
};

// The selectors: "all" and "smt" alone, the others with ":N" (kExpected lists them too).
struct SelectorWord {
    std::string_view word;
    SelectorKind kind;
    bool numbered;
};
constexpr SelectorWord kSelectorWords[] = {
    {"all", SelectorKind::All, false},        {"smt", SelectorKind::Smt, false},
    {"package", SelectorKind::Package, true}, {"die", SelectorKind::Die, true},
    {"node", SelectorKind::Node, true},       {"core", SelectorKind::Core, true},
};

}  // namespace

std::vector<std::string> selector_words(bool numbered) {
    std::vector<std::string> out;
    for (const SelectorWord& known : kSelectorWords) {
        if (known.numbered == numbered) {
            out.emplace_back(known.word);
        }
    }
    return out;
}

namespace {

// The selector's syntax alone; what it matches needs the machine.
Selector parse_selector(const Argument& arg) {
    auto colon = arg.text.find(':');
    std::string_view word = arg.text.substr(0, colon);
    const bool numbered = colon != std::string_view::npos;
    for (const SelectorWord& known : kSelectorWords) {
        if (known.word == word && known.numbered == numbered) {
            return {known.kind, numbered ? selector_number(arg, colon) : 0};
        }
    }
    const std::string token = escape_excerpt(arg.text);
    throw MaskError("unknown selector '" + token + "' " + kExpected, arg.text, arg.position);
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
    const Selector selector = parse_selector(arg);
    const std::string token = escape_excerpt(arg.text);
    CpuSet out;
    switch (selector.kind) {
        case SelectorKind::All:
            out = machine.present;
            break;
        case SelectorKind::Smt:
            out = machine.smt_secondaries();
            break;
        case SelectorKind::Package:
            out = by_field(machine, &CpuTopology::package, selector.number);
            break;
        case SelectorKind::Die:
            out = by_field(machine, &CpuTopology::die, selector.number);
            break;
        case SelectorKind::Node:
            out = by_field(machine, &CpuTopology::node, selector.number);
            break;
        case SelectorKind::Core: {
            auto it = machine.topology.find(selector.number);
            if (it == machine.topology.end()) {
                throw MaskError("selector '" + token + "': the topology of CPU " +
                                    std::to_string(selector.number) + " is not known",
                                arg.text, arg.position);
            }
            out = it->second.siblings;
            break;
        }
    }
    if (out.empty()) {
        throw MaskError("selector '" + token + "' matches no CPU", arg.text, arg.position);
    }
    return out;
}

bool is_cpumap(std::string_view t) {
    return t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
}

// The kernel's "N" and "all" cpulist forms ("N", "all-3", "ALL,1"), which the cpulist
// parser refuses with its own explanation.
bool is_kernel_word_form(std::string_view t) {
    std::size_t n = 0;
    while (n < t.size() && is_letter(t[n])) {
        ++n;
    }
    std::string lower(t.substr(0, n));
    for (char& c : lower) {
        c = static_cast<char>(c | 0x20);
    }
    return (t.substr(0, n) == "N" || (lower == "all" && t != "all")) &&
           (n == t.size() || t[n] == '-' || t[n] == ',' || t[n] == ':');
}

// A cpulist or a 0x cpumap, or a kernel word form that the cpulist parser refuses.
bool is_numeric(const Argument& arg) {
    return !is_letter(arg.text[0]) || is_kernel_word_form(arg.text);
}

// A cpulist or cpumap argument, with CPU numbers below `cpu_bound`.
CpuSet parse_numeric(const Argument& arg, unsigned cpu_bound) {
    std::string_view t = arg.text;
    if (is_cpumap(t)) {
        if (t.size() == 2) {
            throw MaskError("no hex digits after '0x'", t, arg.position);
        }
        return parse_cpumap(t.substr(2), arg.position + 2, cpu_bound);
    }
    return parse_cpulist(t, arg.position, cpu_bound);
}

CpuSet resolve_argument(const Argument& arg, const MachineState& machine) {
    // No CPU beyond the last possible one can ever be brought up or down: refused before
    // any range is filled.
    const unsigned bound = machine.possible.empty() ? kMaxCpus : machine.possible.last() + 1;
    if (is_numeric(arg)) {
        return parse_numeric(arg, bound);
    }
    return resolve_selector(arg, machine);
}

// The limits of kMaxMaskBytes and kMaxMaskRegions, checked before anything is parsed.
std::vector<Argument> checked_split(std::string_view expression) {
    if (expression.size() > kMaxMaskBytes) {
        throw MaskError("the mask is " + std::to_string(expression.size()) +
                            " bytes long; the limit is " + std::to_string(kMaxMaskBytes),
                        expression, 0);
    }
    std::size_t regions = 0;
    bool in_region = false;
    for (const char c : expression) {
        const bool separator = is_mask_separator(c);
        regions += (!separator && !in_region) ? 1 : 0;
        in_region = !separator;
    }
    if (regions > kMaxMaskRegions) {
        throw MaskError("the mask has " + std::to_string(regions) + " regions; the limit is " +
                            std::to_string(kMaxMaskRegions),
                        expression, 0);
    }
    std::vector<Argument> args = split(expression);
    if (args.empty()) {
        throw MaskError("empty CPU mask", expression, 0);
    }
    return args;
}

}  // namespace

MaskSelection select_mask(std::string_view expression, const MachineState& machine) {
    const std::vector<Argument> args = checked_split(expression);
    MaskSelection out;
    for (const Argument& arg : args) {
        const CpuSet cpus = resolve_argument(arg, machine);
        out.cpus |= cpus;
        if (is_numeric(arg)) {
            out.named |= cpus;
        }
    }
    out.smt_selector = args.size() == 1 && args.front().text == "smt";
    return out;
}

void check_mask_syntax(std::string_view expression) {
    for (const Argument& arg : checked_split(expression)) {
        if (is_numeric(arg)) {
            parse_numeric(arg, kMaxCpus);
        } else {
            parse_selector(arg);
        }
    }
}

}  // namespace cpuhpd
