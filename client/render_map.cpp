#include "render_map.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "cpulist.h"
#include "input.h"

namespace cpuctl {
namespace {

// SGR parameters of the colours.
constexpr const char* kSgrOnline = "32";       // green
constexpr const char* kSgrOffline = "31";      // red
constexpr const char* kSgrHeld = "1;33";       // bold yellow
constexpr const char* kSgrProtected = "1;36";  // bold cyan
constexpr const char* kSgrFixed = "1;35";      // bold magenta: not hotpluggable
constexpr const char* kSgrHeader = "1";        // bold

constexpr std::size_t kIndent = 2;  // per level shown
constexpr std::size_t kGap = 2;     // between two cores on a line

// The marks after a CPU's + or -.
constexpr char kMarkFixed = '#';
constexpr char kMarkProtected = 'P';
constexpr char kMarkNone = ' ';
// A hold's letter; the holds after these share '*'. No 'P': that is protected.
constexpr std::string_view kHoldLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOQRSTUVWXYZ";
constexpr char kMarkOtherHold = '*';

// Lines of text whose visible width is counted apart from the escapes in it. Everything put
// is printable ASCII (names go through escape_excerpt), so one byte is one column.
class Lines {
public:
    explicit Lines(bool color) : color_(color) {}

    void put(std::string_view text, const char* sgr = nullptr) {
        if (color_ && sgr != nullptr && !text.empty()) {
            line_ += "\x1b[";
            line_ += sgr;
            line_ += 'm';
            line_ += text;
            line_ += "\x1b[0m";
        } else {
            line_ += text;
        }
        width_ += text.size();
    }
    void spaces(std::size_t n) { put(std::string(n, ' ')); }
    std::size_t width() const { return width_; }
    void end_line() {
        while (!line_.empty() && line_.back() == ' ') {
            line_.pop_back();
        }
        out_ += line_;
        out_ += '\n';
        line_.clear();
        width_ = 0;
    }
    std::string take() {
        if (width_ > 0) {
            end_line();
        }
        return std::move(out_);
    }

private:
    bool color_;
    std::string line_;
    std::size_t width_ = 0;
    std::string out_;
};

// Puts `items` on lines of at most `width` columns, `separator` between two on a line; a line
// that wraps goes on at `indent`. An item wider than a line gets a line of its own.
struct Item {
    std::string text;
    const char* sgr = nullptr;  // of the first `colored` bytes of `text`
    std::size_t colored = 0;
};
void put_items(Lines& lines, const std::vector<Item>& items, std::string_view separator,
               std::size_t indent, std::size_t width) {
    for (std::size_t i = 0; i < items.size(); ++i) {
        const auto& item = items[i];
        if (i > 0) {
            if (lines.width() + separator.size() + item.text.size() > width) {
                lines.end_line();
                lines.spaces(indent);
            } else {
                lines.put(separator);
            }
        }
        lines.put(std::string_view(item.text).substr(0, item.colored), item.sgr);
        lines.put(std::string_view(item.text).substr(item.colored));
    }
    lines.end_line();
}

// "1 package", "2 packages".
std::string count_of(std::size_t n, const char* noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

cpuhpd::CpuSet parse_or_empty(const std::string& cpulist) {
    try {
        return cpuhpd::parse_cpulist(cpulist);
    } catch (const std::exception&) {
        return {};
    }
}

// The levels above cores, in the order of the labels in a header.
enum class Level { Package, Die, Node };

const char* name_of(Level level) {
    switch (level) {
        case Level::Package:
            return "package";
        case Level::Die:
            return "die";
        case Level::Node:
            return "node";
    }
    return "";
}

int value_of(const TopologyCpu& cpu, Level level) {
    switch (level) {
        case Level::Package:
            return cpu.package;
        case Level::Die:
            return cpu.die;
        case Level::Node:
            return cpu.node;
    }
    return -1;
}

std::string label_of(Level level, int value) {
    return std::string(name_of(level)) + " " + (value < 0 ? "?" : std::to_string(value));
}

// Unknown (-1) after every known value.
std::pair<bool, int> rank_of(int value) {
    return {value < 0, value};
}

// What identifies a group of a level in the whole machine: a die's id is only unique within
// its package.
std::pair<int, int> group_key(const TopologyCpu& cpu, Level level) {
    return level == Level::Die ? std::pair{cpu.package, cpu.die}
                               : std::pair{value_of(cpu, level), 0};
}

// Whether every group of `inner` lies within one group of `outer`.
bool nests(const std::vector<TopologyCpu>& cpus, Level inner, Level outer) {
    std::map<std::pair<int, int>, std::pair<int, int>> outer_of;
    for (const auto& cpu : cpus) {
        const auto [it, added] = outer_of.emplace(group_key(cpu, inner), group_key(cpu, outer));
        if (!added && it->second != group_key(cpu, outer)) {
            return false;
        }
    }
    return true;
}

// Outer to inner. A package is always above its dies; nodes go where they nest.
std::vector<Level> nesting_order(const std::vector<TopologyCpu>& cpus) {
    if (nests(cpus, Level::Package, Level::Node)) {
        return {Level::Node, Level::Package, Level::Die};  // a node holds whole packages
    }
    if (nests(cpus, Level::Node, Level::Die) || !nests(cpus, Level::Node, Level::Package)) {
        return {Level::Package, Level::Die, Level::Node};  // a die holds whole nodes
    }
    return {Level::Package, Level::Node, Level::Die};  // a package holds nodes, dies span them
}

// How a level appears.
enum class Mode {
    Drop,  // one value in the whole machine: nothing to tell
    Fold,  // one value within each group above it: named in the header of that group
    Show,  // splits the groups above it: a header of its own for each group
};

struct Thread {
    const TopologyCpu* cpu = nullptr;
    char mark = kMarkNone;
    const char* mark_sgr = nullptr;
};

using Group = std::vector<const Thread*>;

class MapRenderer {
public:
    MapRenderer(const std::vector<TopologyCpu>& cpus, const std::string& protected_cpus,
                const std::vector<HoldInfo>& holds, const MapOptions& options)
        : cpus_(cpus),
          holds_(holds),
          width_(std::max(options.width, kMinMapWidth)),
          lines_(options.color) {
        // threads_ points into cpus_: the renderer is neither copied nor moved.
        std::sort(holds_.begin(), holds_.end(),
                  [](const HoldInfo& a, const HoldInfo& b) { return a.id < b.id; });
        held_by_.assign(holds_.size(), 0);
        std::map<unsigned, std::size_t> hold_of;
        for (std::size_t h = 0; h < holds_.size(); ++h) {
            for (const unsigned cpu : parse_or_empty(holds_[h].cpus).members()) {
                hold_of.emplace(cpu, h);
            }
        }
        const auto protected_set = parse_or_empty(protected_cpus);
        std::sort(cpus_.begin(), cpus_.end(),
                  [](const TopologyCpu& a, const TopologyCpu& b) { return a.cpu < b.cpu; });
        threads_.reserve(cpus_.size());
        for (const auto& cpu : cpus_) {
            Thread t{&cpu, kMarkNone, nullptr};
            if (auto h = hold_of.find(cpu.cpu); h != hold_of.end()) {
                t.mark = hold_letter(h->second);
                t.mark_sgr = kSgrHeld;
                ++held_by_[h->second];
            } else if (!cpu.hotpluggable) {
                t.mark = kMarkFixed;
                t.mark_sgr = kSgrFixed;
            } else if (protected_set.contains(cpu.cpu)) {
                t.mark = kMarkProtected;
                t.mark_sgr = kSgrProtected;
            }
            threads_.push_back(t);
            digits_ = std::max(digits_, std::to_string(cpu.cpu).size());
        }
        order_ = nesting_order(cpus_);
        for (std::size_t i = 0; i < order_.size(); ++i) {
            modes_.push_back(mode_of(i));
        }
    }

    MapRenderer(const MapRenderer&) = delete;
    MapRenderer& operator=(const MapRenderer&) = delete;

    std::string render() {
        if (threads_.empty()) {
            lines_.put("machine: no CPUs", kSgrHeader);
            lines_.end_line();
            return lines_.take();
        }
        put_summary();
        Group all;
        for (const auto& t : threads_) {
            all.push_back(&t);
        }
        put_level(all, 0, 1);
        lines_.end_line();
        put_legend();
        return lines_.take();
    }

private:
    static char hold_letter(std::size_t index) {
        return index < kHoldLetters.size() ? kHoldLetters[index] : kMarkOtherHold;
    }

    Mode mode_of(std::size_t i) const {
        std::set<int> values;
        std::map<std::vector<int>, std::set<int>> within;  // values under each group above
        for (const auto& cpu : cpus_) {
            const int value = value_of(cpu, order_[i]);
            // An unknown die or node tells nothing; an unknown package is a group of its own.
            if (value < 0 && order_[i] != Level::Package) {
                continue;
            }
            values.insert(value);
            std::vector<int> above;  // the groups of the levels shown above this one
            for (std::size_t j = 0; j < i; ++j) {
                if (modes_[j] == Mode::Show) {
                    above.push_back(value_of(cpu, order_[j]));
                }
            }
            within[above].insert(value);
        }
        if (values.size() <= 1) {
            return Mode::Drop;
        }
        const bool one_each = std::all_of(within.begin(), within.end(), [](const auto& entry) {
            return entry.second.size() == 1;
        });
        return one_each ? Mode::Fold : Mode::Show;
    }

    // "machine: 16 CPUs, 2 packages, 8 cores, 2 nodes".
    void put_summary() {
        std::set<int> packages;
        std::set<std::pair<int, int>> dies;
        std::set<std::tuple<int, int, int>> cores;
        std::set<int> nodes;
        for (const auto& cpu : cpus_) {
            if (cpu.package >= 0) {
                packages.insert(cpu.package);
                dies.emplace(cpu.package, cpu.die);
                if (cpu.core >= 0) {
                    cores.emplace(cpu.package, cpu.die, cpu.core);
                }
            }
            if (cpu.node >= 0) {
                nodes.insert(cpu.node);
            }
        }
        std::vector<Item> items{{"machine: " + count_of(cpus_.size(), "CPU"), kSgrHeader, 8}};
        if (!packages.empty()) {
            items.push_back({count_of(packages.size(), "package")});
        }
        if (mode_of_level(Level::Die) != Mode::Drop) {
            items.push_back({count_of(dies.size(), "die")});
        }
        if (!cores.empty()) {
            items.push_back({count_of(cores.size(), "core")});
        }
        if (!nodes.empty()) {
            items.push_back({count_of(nodes.size(), "node")});
        }
        put_items(lines_, items, ", ", kIndent, width_);
    }

    Mode mode_of_level(Level level) const {
        const auto it = std::find(order_.begin(), order_.end(), level);
        return modes_[static_cast<std::size_t>(it - order_.begin())];
    }

    // The groups of level `i` (and the levels below it) of `group`, at `depth`.
    void put_level(const Group& group, std::size_t i, std::size_t depth) {
        if (i == order_.size()) {
            put_cores(group, depth);
            return;
        }
        if (modes_[i] != Mode::Show) {
            put_level(group, i + 1, depth);
            return;
        }
        std::map<std::pair<bool, int>, Group> parts;
        for (const Thread* t : group) {
            parts[rank_of(value_of(*t->cpu, order_[i]))].push_back(t);
        }
        for (const auto& [rank, part] : parts) {
            put_header(part, i, depth);
            put_level(part, i + 1, depth + 1);
        }
    }

    // "package 0, node 0: 8 of 8 online": the level's label and those of the levels folded
    // into it, in the order package, die, node.
    void put_header(const Group& part, std::size_t i, std::size_t depth) {
        std::vector<Level> levels{order_[i]};
        for (std::size_t j = i + 1; j < order_.size() && modes_[j] != Mode::Show; ++j) {
            if (modes_[j] == Mode::Fold) {
                levels.push_back(order_[j]);
            }
        }
        std::sort(levels.begin(), levels.end());
        std::string label;
        for (const Level level : levels) {
            const int value = value_of(*part.front()->cpu, level);
            if (value >= 0 || level == order_[i]) {
                label += (label.empty() ? "" : ", ") + label_of(level, value);
            }
        }
        const auto online =
            std::count_if(part.begin(), part.end(), [](const Thread* t) { return t->cpu->online; });
        lines_.spaces(depth * kIndent);
        lines_.put(label, kSgrHeader);
        lines_.put(": " + std::to_string(online) + " of " + std::to_string(part.size()) +
                   " online");
        lines_.end_line();
    }

    // The cores of `group` in CPU order, as many on a line as fit.
    void put_cores(const Group& group, std::size_t depth) {
        // A core is (package, die, core); a CPU without a known core is one of its own.
        std::map<std::tuple<bool, int, int, int>, Group> by_core;
        for (const Thread* t : group) {
            const auto& c = *t->cpu;
            const bool known = c.package >= 0 && c.core >= 0;
            by_core[known ? std::tuple{false, c.package, c.die, c.core}
                          : std::tuple{true, static_cast<int>(c.cpu), 0, 0}]
                .push_back(t);
        }
        std::vector<Group> cores;
        for (auto& [key, threads] : by_core) {
            cores.push_back(std::move(threads));  // threads in CPU order: group is
        }
        std::sort(cores.begin(), cores.end(), [](const Group& a, const Group& b) {
            return a.front()->cpu->cpu < b.front()->cpu->cpu;
        });
        const std::size_t indent = depth * kIndent;
        const std::size_t cell = digits_ + 2;
        for (const auto& core : cores) {
            const std::size_t box = 2 + core.size() * cell + (core.size() - 1);
            if (lines_.width() > 0 && lines_.width() + kGap + box > width_) {
                lines_.end_line();
            }
            if (indent + box > width_) {
                put_split_core(core, indent);
                continue;
            }
            lines_.spaces(lines_.width() == 0 ? indent : kGap);
            lines_.put("[");
            for (std::size_t k = 0; k < core.size(); ++k) {
                put_cell(*core[k], k > 0);
            }
            lines_.put("]");
        }
        if (lines_.width() > 0) {
            lines_.end_line();
        }
    }

    // A core wider than a line (many threads, a narrow terminal): its threads over several
    // lines, the bracket open until the last.
    void put_split_core(const Group& core, std::size_t indent) {
        if (lines_.width() > 0) {
            lines_.end_line();
        }
        const std::size_t room = width_ > indent + 1 ? width_ - indent - 1 : 0;
        const std::size_t per_line = std::max<std::size_t>(1, room / (digits_ + 3));
        for (std::size_t k = 0; k < core.size(); ++k) {
            if (k % per_line == 0) {
                if (k > 0) {
                    lines_.end_line();
                }
                lines_.spaces(indent);
                lines_.put(k == 0 ? "[" : " ");
            }
            put_cell(*core[k], k % per_line > 0);
        }
        lines_.put("]");
        lines_.end_line();
    }

    // " 12-a": the CPU right-aligned, + or -, the mark.
    void put_cell(const Thread& t, bool space_before) {
        const std::string number = std::to_string(t.cpu->cpu);
        lines_.spaces((space_before ? 1 : 0) + digits_ - number.size());
        lines_.put(number + (t.cpu->online ? "+" : "-"), t.cpu->online ? kSgrOnline : kSgrOffline);
        lines_.put(std::string(1, t.mark), t.mark == kMarkNone ? nullptr : t.mark_sgr);
    }

    void put_legend() {
        const auto online = static_cast<std::size_t>(std::count_if(
            cpus_.begin(), cpus_.end(), [](const TopologyCpu& c) { return c.online; }));
        put_items(lines_,
                  {{"+ online (" + std::to_string(online) + ")", kSgrOnline, 1},
                   {"- offline (" + std::to_string(cpus_.size() - online) + ")", kSgrOffline, 1},
                   {"P protected", kSgrProtected, 1},
                   {"# not hotpluggable", kSgrFixed, 1}},
                  "  ", 0, width_);
        for (std::size_t h = 0; h < holds_.size() && h < kHoldLetters.size(); ++h) {
            const auto& hold = holds_[h];
            put_hold_line(hold_letter(h), "hold " + std::to_string(hold.id) + ": " +
                                              count_of(held_by_[h], "CPU") + " held " +
                                              cpuhpd::escape_excerpt(hold.state, 16) + " by " +
                                              cpuhpd::escape_excerpt(hold.who, 1024));
        }
        if (holds_.size() > kHoldLetters.size()) {
            put_hold_line(
                kMarkOtherHold,
                count_of(holds_.size() - kHoldLetters.size(), "more hold") + " (cpuctl holds)");
        }
        if (std::any_of(cpus_.begin(), cpus_.end(),
                        [](const TopologyCpu& c) { return c.package < 0; })) {
            put_items(lines_,
                      {{"package ?: offline since before cpuhpd first saw them (topology "
                        "unknown)"}},
                      "", 0, width_);
        }
    }

    // "a  hold 3: held offline by live-update", cut to the width.
    void put_hold_line(char letter, std::string text) {
        if (3 + text.size() > width_) {
            text = text.substr(0, width_ - 6) + "...";
        }
        lines_.put(std::string(1, letter), kSgrHeld);
        lines_.put("  " + text);
        lines_.end_line();
    }

    std::vector<TopologyCpu> cpus_;
    std::vector<HoldInfo> holds_;
    std::size_t width_;
    Lines lines_;
    std::vector<Thread> threads_;
    std::size_t digits_ = 1;
    std::vector<std::size_t> held_by_;  // CPUs of the map in each hold
    std::vector<Level> order_;
    std::vector<Mode> modes_;
};

}  // namespace

std::string render_map(const std::vector<TopologyCpu>& cpus, const std::string& protected_cpus,
                       const std::vector<HoldInfo>& holds, const MapOptions& options) {
    return MapRenderer(cpus, protected_cpus, holds, options).render();
}

}  // namespace cpuctl
