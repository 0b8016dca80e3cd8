#include "topology.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "cpulist.h"
#include "input.h"
#include "state_file.h"

namespace cpuhpd {

namespace {

constexpr const char* kCacheHeader = "cpuhpd-topology 1";

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
        s.remove_prefix(1);
    }
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.remove_suffix(1);
    }
    return s;
}

std::optional<long long> parse_integer(std::string_view text) {
    text = trim(text);
    long long value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
        return std::nullopt;
    }
    return value;
}

std::optional<int> read_int(const std::filesystem::path& file) {
    auto text = read_attribute(file);
    if (!text) {
        return std::nullopt;
    }
    auto v = parse_integer(*text);
    if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
        return std::nullopt;
    }
    return static_cast<int>(*v);
}

// "node12" -> 12
std::optional<unsigned> numbered_entry(const std::string& name, std::string_view prefix) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) {
        return std::nullopt;
    }
    auto v = parse_integer(std::string_view(name).substr(prefix.size()));
    if (!v || *v < 0 || *v >= static_cast<long long>(kMaxCpus) ||
        !std::isdigit(static_cast<unsigned char>(name[prefix.size()]))) {
        return std::nullopt;
    }
    return static_cast<unsigned>(*v);
}

// CPU -> node from devices/system/node/nodeN/cpulist.
std::map<unsigned, int> read_node_map(const SysfsPaths& paths) {
    std::map<unsigned, int> out;
    std::error_code ec;
    std::filesystem::directory_iterator it(paths.node_dir(), ec);
    if (ec) {
        return out;
    }
    for (const auto& entry : it) {
        auto node = numbered_entry(entry.path().filename().string(), "node");
        if (!node) {
            continue;
        }
        auto list = read_attribute(entry.path() / "cpulist");
        if (!list) {
            continue;
        }
        try {
            for (unsigned cpu : parse_cpulist(*list).members()) {
                out[cpu] = static_cast<int>(*node);
            }
        } catch (const MaskError&) {
            // An unreadable node list leaves its CPUs to the cpuN/nodeM links.
        }
    }
    return out;
}

// The cpuN/nodeM link, when the node directory did not name the CPU.
int node_from_link(const SysfsPaths& paths, unsigned cpu) {
    std::error_code ec;
    std::filesystem::directory_iterator it(paths.cpu(cpu), ec);
    if (ec) {
        return -1;
    }
    for (const auto& entry : it) {
        if (auto node = numbered_entry(entry.path().filename().string(), "node")) {
            return static_cast<int>(*node);
        }
    }
    return -1;
}

}  // namespace

TopologyMap read_topology(const SysfsPaths& paths, const CpuSet& cpus) {
    TopologyMap out;
    if (cpus.empty()) {
        return out;
    }
    std::map<unsigned, int> nodes = read_node_map(paths);
    for (unsigned cpu : cpus.members()) {
        std::filesystem::path dir = paths.cpu_topology(cpu);
        auto package = read_int(dir / "physical_package_id");
        auto core = read_int(dir / "core_id");
        auto siblings_text = read_attribute(dir / "thread_siblings_list");
        if (!package || !core || !siblings_text) {
            continue;  // no topology/ now (offline, or went offline while we read)
        }
        CpuTopology t;
        t.package = *package;
        t.core = *core;
        t.die = read_int(dir / "die_id").value_or(-1);
        try {
            t.siblings = parse_cpulist(*siblings_text);
        } catch (const MaskError&) {
            continue;
        }
        if (t.siblings.empty()) {
            t.siblings = CpuSet::single(cpu);
        }
        auto n = nodes.find(cpu);
        t.node = n != nodes.end() ? n->second : node_from_link(paths, cpu);
        out.emplace(cpu, std::move(t));
    }
    return out;
}

TopologyMemory::TopologyMemory(std::filesystem::path cache_file)
    : cache_file_(std::move(cache_file)) {}

std::optional<std::string> TopologyMemory::load() {
    if (cache_file_.empty()) {
        return std::nullopt;
    }
    TopologyMap loaded;
    try {
        // Our own file: a regular file of ours, never a link (to /dev/zero, say), bounded.
        std::string problem;
        const auto text = read_state_file(cache_file_, kMaxCacheBytes, problem);
        if (!text) {
            return problem.empty() ? std::nullopt : std::optional<std::string>(problem);
        }
        loaded = parse_topology(*text + "\n");
    } catch (const std::exception& e) {
        return cache_file_.string() + ": " + e.what();
    }
    for (auto& [cpu, topo] : loaded) {
        known_.emplace(cpu, std::move(topo));  // what was read live already wins
    }
    return std::nullopt;
}

void TopologyMemory::update(const TopologyMap& seen) {
    bool changed = false;
    for (const auto& [cpu, topo] : seen) {
        auto it = known_.find(cpu);
        if (it == known_.end()) {
            known_.emplace(cpu, topo);
            changed = true;
        } else if (!(it->second == topo)) {
            it->second = topo;
            changed = true;
        }
    }
    if (changed || save_error_) {
        save();
    }
}

CpuSet TopologyMemory::unread(const CpuSet& online, const CpuSet& present) const {
    return present == present_ ? online - current_ : online;
}

void TopologyMemory::mark_current(const CpuSet& current, const CpuSet& present) {
    current_ = current;
    present_ = present;
}

std::optional<CpuTopology> TopologyMemory::find(unsigned cpu) const {
    auto it = known_.find(cpu);
    if (it == known_.end()) {
        return std::nullopt;
    }
    return it->second;
}

void TopologyMemory::save() const {
    if (cache_file_.empty()) {
        return;
    }
    auto failed = [this](const std::string& what, int err) {
        save_error_ = "cannot save topology cache " + cache_file_.string() + ": " + what + ": " +
                      std::strerror(err);
    };
    std::error_code ec;
    std::filesystem::path dir = cache_file_.parent_path();
    if (!dir.empty()) {
        std::filesystem::create_directories(dir, ec);
    }
    std::string step;
    if (const int err = replace_file(cache_file_, serialize_topology(known_), step); err != 0) {
        failed(step, err);
        return;
    }
    save_error_.reset();
}

std::string serialize_topology(const TopologyMap& map) {
    std::string out = kCacheHeader;
    out += "\n# cpu package die core node siblings\n";
    for (const auto& [cpu, t] : map) {
        std::string siblings = t.siblings.empty() ? "-" : format_cpulist(t.siblings);
        out += std::to_string(cpu) + ' ' + std::to_string(t.package) + ' ' + std::to_string(t.die) +
               ' ' + std::to_string(t.core) + ' ' + std::to_string(t.node) + ' ' + siblings + '\n';
    }
    out += "end " + std::to_string(map.size()) + "\n";
    return out;
}

TopologyMap parse_topology(const std::string& text) {
    TopologyMap out;
    std::istringstream in(text);
    std::string line;
    std::size_t number = 0;
    bool header = false;
    bool ended = false;
    auto fail = [&](const std::string& why) -> std::runtime_error {
        return std::runtime_error("line " + std::to_string(number) + ": " + why);
    };
    while (std::getline(in, line)) {
        ++number;
        std::string_view l = trim(line);
        if (!header) {
            if (l != kCacheHeader) {
                throw fail("expected the header '" + std::string(kCacheHeader) + "'");
            }
            header = true;
            continue;
        }
        if (l.empty() || l.front() == '#') {
            continue;
        }
        if (ended) {
            throw fail("text after the end line");
        }
        std::istringstream fields{std::string(l)};
        std::vector<std::string> f;
        for (std::string w; fields >> w;) {
            f.push_back(w);
        }
        if (f.size() == 2 && f[0] == "end") {
            auto count = parse_integer(f[1]);
            if (!count || *count != static_cast<long long>(out.size())) {
                throw fail("end line counts " + f[1] + " CPUs, the file has " +
                           std::to_string(out.size()));
            }
            ended = true;
            continue;
        }
        if (f.size() != 6) {
            throw fail("expected 6 fields (cpu package die core node siblings), found " +
                       std::to_string(f.size()));
        }
        auto cpu = parse_integer(f[0]);
        if (!cpu || *cpu < 0 || *cpu >= static_cast<long long>(kMaxCpus)) {
            throw fail("bad CPU number '" + f[0] + "'");
        }
        CpuTopology t;
        int* ints[] = {&t.package, &t.die, &t.core, &t.node};
        for (std::size_t i = 0; i < 4; ++i) {
            auto v = parse_integer(f[i + 1]);
            if (!v || *v < -1 || *v > std::numeric_limits<int>::max()) {
                throw fail("bad number '" + f[i + 1] + "'");
            }
            *ints[i] = static_cast<int>(*v);
        }
        if (f[5] != "-") {
            try {
                t.siblings = parse_cpulist(f[5]);
            } catch (const MaskError& e) {
                throw fail(std::string("bad siblings: ") + e.what());
            }
        }
        if (!out.emplace(static_cast<unsigned>(*cpu), std::move(t)).second) {
            throw fail("CPU " + f[0] + " listed twice");
        }
    }
    if (!header) {
        throw std::runtime_error("empty file");
    }
    if (!ended) {
        throw std::runtime_error("truncated (no end line)");
    }
    return out;
}

}  // namespace cpuhpd
