#include "machine.h"

#include <sys/stat.h>

#include <cctype>
#include <stdexcept>
#include <system_error>

#include "cpulist.h"
#include "strategy.h"

namespace cpuhpd {

std::vector<StrategyKind> MachineState::capabilities() const {
    std::vector<StrategyKind> out;
    // kStrategyNames lists them in preference order, after Auto.
    for (const auto& entry : kStrategyNames) {
        if (entry.value != StrategyKind::Auto && rules_of(entry.value).available(*this)) {
            out.push_back(entry.value);
        }
    }
    return out;
}

CpuSet MachineState::smt_secondaries() const {
    CpuSet out;
    for_each_topology(topology, present, [&](unsigned cpu, const CpuTopology* entry) {
        if (entry != nullptr && !entry->siblings.empty() && entry->siblings.first() < cpu) {
            out.add(cpu);
        }
    });
    return out;
}

namespace {

std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.pop_back();
    }
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) {
        ++i;
    }
    return s.substr(i);
}

CpuSet read_list(const std::filesystem::path& file) {
    auto text = read_attribute(file);
    if (!text) {
        throw std::runtime_error("cannot read " + file.string());
    }
    try {
        return parse_cpulist(*text);
    } catch (const MaskError& e) {
        throw std::runtime_error("cannot parse " + file.string() + ": " + e.what());
    }
}

bool write_permitted(const std::filesystem::path& file) {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 && (st.st_mode & 0222) != 0;
}

// CPUs that have a cpuN directory.
CpuSet cpu_directories(const SysfsPaths& paths) {
    CpuSet out;
    std::error_code ec;
    std::filesystem::directory_iterator it(paths.cpu_dir(), ec);
    if (ec) {
        return out;
    }
    for (const auto& entry : it) {
        std::string name = entry.path().filename().string();
        if (name.size() < 4 || name.size() > 8 || name.compare(0, 3, "cpu") != 0) {
            continue;
        }
        unsigned long cpu = 0;
        bool digits = true;
        for (std::size_t i = 3; i < name.size() && digits; ++i) {
            digits = std::isdigit(static_cast<unsigned char>(name[i])) != 0;
            cpu = cpu * 10 + static_cast<unsigned long>(name[i] - '0');
        }
        if (digits && cpu < kMaxCpus) {
            out.add(static_cast<unsigned>(cpu));
        }
    }
    return out;
}

// x86 drops an offline CPU from its siblings' thread_siblings_list (remove_siblinginfo),
// so a live read of CPU 1 says "1" while its sibling 9 is offline. Put back the offline
// CPUs that the remembered topology places in the same core.
void restore_offline_siblings(TopologyMap& live, const TopologyMap& known, const CpuSet& online) {
    for (const auto& [cpu, remembered] : known) {
        if (online.contains(cpu)) {
            continue;
        }
        for (unsigned sibling : remembered.siblings.members()) {
            auto it = live.find(sibling);
            if (sibling != cpu && it != live.end() && it->second.package == remembered.package &&
                it->second.die == remembered.die && it->second.core == remembered.core) {
                it->second.siblings.add(cpu);
            }
        }
    }
}

// A CPU read now for the first time (it came online, or was never seen) names its siblings;
// those that stayed online were not read again and may not have it in their lists yet: add
// it to the entries (copied into `live`, so that the memory saves them) of those in the same
// core.
void add_new_siblings(TopologyMap& live, const TopologyMap& known) {
    TopologyMap grown;
    for (const auto& [cpu, fresh] : live) {
        for (unsigned sibling : fresh.siblings.members()) {
            if (sibling == cpu || live.count(sibling) != 0) {
                continue;
            }
            const auto it = known.find(sibling);
            if (it == known.end() || it->second.package != fresh.package ||
                it->second.die != fresh.die || it->second.core != fresh.core ||
                it->second.siblings.contains(cpu)) {
                continue;
            }
            auto [entry, added] = grown.try_emplace(sibling, it->second);
            entry->second.siblings.add(cpu);
        }
    }
    live.merge(grown);
}

}  // namespace

MachineState read_machine(const SysfsPaths& paths, TopologyMemory& memory) {
    MachineState m;
    m.present = read_list(paths.present());
    CpuSet online_list = read_list(paths.online());
    m.possible = read_attribute(paths.possible()) ? read_list(paths.possible()) : m.present;

    for (unsigned cpu : (cpu_directories(paths) | m.present | online_list).members()) {
        std::error_code ec;
        auto state = read_attribute(paths.cpu_online(cpu));
        if (state) {
            m.hotpluggable.add(cpu);
            std::string s = trim(*state);
            if (s == "1") {
                m.online.add(cpu);
            } else if (s != "0" && online_list.contains(cpu)) {
                m.online.add(cpu);  // unexpected content: trust the summary list
            }
        } else if (std::filesystem::exists(paths.cpu_online(cpu), ec)) {
            m.hotpluggable.add(cpu);  // exists but unreadable: trust the summary list
            if (online_list.contains(cpu)) {
                m.online.add(cpu);
            }
        } else if (online_list.contains(cpu)) {
            m.online.add(cpu);
        }
    }

    if (auto smt = read_attribute(paths.smt_control())) {
        // A word the kernel does not write (none known) cannot be switched either.
        m.smt_control =
            find_by_name(kSmtControlNames, trim(*smt)).value_or(SmtControl::NotSupported);
    }
    m.bulk_writable = write_permitted(paths.offline()) && write_permitted(paths.online());

    // The kernel sets a CPU's topology as it comes up, and it stays so while the CPU is
    // online (but for a sibling going offline that leaves its thread_siblings_list, made up
    // for by restore_offline_siblings): only the CPUs that came online since the last read,
    // or were never read, are read, so that a batch's reads cost one file per CPU, not six.
    const CpuSet to_read = memory.unread(m.online, m.present);
    TopologyMap live = read_topology(paths, to_read);
    restore_offline_siblings(live, memory.known(), m.online);
    add_new_siblings(live, memory.known());
    CpuSet read_now;
    for (const auto& [cpu, topo] : live) {
        read_now.add(cpu);
    }
    memory.update(live);
    // A CPU of `to_read` whose topology/ was gone (it went offline meanwhile) is read again
    // next time.
    memory.mark_current((m.online - to_read) | (to_read & read_now), m.present);
    m.topology = memory.known();
    return m;
}

}  // namespace cpuhpd
