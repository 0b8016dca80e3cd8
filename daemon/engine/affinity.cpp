#include "affinity.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <system_error>

#include "cpulist.h"
#include "input.h"
#include "state_file.h"

namespace cpuhpd {

namespace {

namespace fs = std::filesystem;

constexpr const char* kMagic = "cpuhpd-affinity-ledger 1";

std::string cpus_text(const CpuSet& cpus) {
    return cpus.empty() ? "-" : format_cpulist(cpus);
}

template <typename T>
bool number(const std::string& text, T& value) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc{} && end == text.data() + text.size() && !text.empty();
}

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (true) {
        const auto tab = line.find('\t', start);
        out.push_back(
            line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
        if (tab == std::string::npos) {
            return out;
        }
        start = tab + 1;
    }
}

std::string label(const AffinityEntry& e) {
    return std::string(e.irq ? "irq " : "task ") + std::to_string(e.id) +
           (e.name.empty() ? "" : " (" + e.name + ")");
}

bool same_thread(const AffinityEntry& a, const AffinityEntry& b) {
    return a.irq == b.irq && a.id == b.id && (a.irq || a.start_time == b.start_time);
}

AffinityRestore outcome(const AffinityEntry& entry, AffinityStatus status, CpuSet found, int error,
                        std::string message) {
    return AffinityRestore{entry, status, std::move(found), error, std::move(message)};
}

AffinityRestore restore_task(const AffinityEntry& entry, const fs::path& proc_root,
                             AffinitySetter& setter) {
    const fs::path dir = proc_root / std::to_string(entry.pid) / "task" / std::to_string(entry.id);
    const auto start = read_start_time(dir / "stat");
    if (!start) {
        return outcome(entry, AffinityStatus::Gone, {}, 0, "ended");
    }
    if (*start != entry.start_time) {
        return outcome(
            entry, AffinityStatus::Gone, {}, 0,
            "ended (its tid now names another thread, started at " + std::to_string(*start) + ")");
    }
    const auto current = read_allowed_cpus(dir / "status");
    if (!current) {
        return outcome(entry, AffinityStatus::Gone, {}, 0, "ended");
    }
    if (*current == entry.cpus) {
        return outcome(entry, AffinityStatus::Intact, *current, 0,
                       "still on CPU " + entry.cpus.to_string() + " (the kernel never moved it)");
    }
    // The kernel widens a task it must move (to its cpuset's CPUs, or every possible CPU),
    // so its mask then holds the recorded one. Anything else was set by somebody: kept.
    if (!entry.cpus.is_subset_of(*current)) {
        return outcome(entry, AffinityStatus::Changed, *current, 0,
                       "kept CPU " + current->to_string() +
                           ": its affinity was changed meanwhile, not by the kernel");
    }
    if (const int err = setter.set(entry.pid, entry.id, entry.cpus); err != 0) {
        return outcome(entry, AffinityStatus::Failed, *current, err,
                       "sched_setaffinity to CPU " + entry.cpus.to_string() +
                           " failed: " + errno_name(err) + " (" + errno_text(err) + ")");
    }
    return outcome(entry, AffinityStatus::Restored, *current, 0,
                   "CPU " + current->to_string() + " -> " + entry.cpus.to_string());
}

AffinityRestore restore_irq(const AffinityEntry& entry, const fs::path& proc_root,
                            AttributeWriter& writer) {
    const fs::path file = proc_root / "irq" / std::to_string(entry.id) / "smp_affinity_list";
    const auto current = read_cpulist_file(file);
    if (!current) {
        return outcome(entry, AffinityStatus::Gone, {}, 0, "no longer exists");
    }
    if (*current == entry.cpus) {
        return outcome(entry, AffinityStatus::Intact, *current, 0,
                       "still on CPU " + entry.cpus.to_string());
    }
    if (const int err = writer.write(file, format_cpulist(entry.cpus)); err != 0) {
        return outcome(entry, AffinityStatus::Failed, *current, err,
                       "writing " + entry.cpus.to_string() + " to smp_affinity_list failed: " +
                           errno_name(err) + " (" + errno_text(err) + ")");
    }
    return outcome(entry, AffinityStatus::Restored, *current, 0,
                   "CPU " + current->to_string() + " -> " + entry.cpus.to_string());
}

}  // namespace

std::string describe(const AffinityRestore& r) {
    return label(r.entry) + " CPU " + r.entry.cpus.to_string() + ": " + to_string(r.status) +
           (r.message.empty() ? "" : ": " + r.message);
}

int SchedAffinitySetter::set(unsigned /*pid*/, unsigned tid, const CpuSet& cpus) {
    const auto members = cpus.members();
    const unsigned count = members.empty() ? 1 : members.back() + 1;
    std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> set(CPU_ALLOC(count),
                                                         [](cpu_set_t* s) { CPU_FREE(s); });
    if (!set) {
        return ENOMEM;
    }
    const std::size_t size = CPU_ALLOC_SIZE(count);
    CPU_ZERO_S(size, set.get());
    for (const unsigned cpu : members) {
        CPU_SET_S(cpu, size, set.get());
    }
    return ::sched_setaffinity(static_cast<pid_t>(tid), size, set.get()) == 0 ? 0 : errno;
}

ProcTreeAffinitySetter::ProcTreeAffinitySetter(fs::path proc_root)
    : proc_root_(std::move(proc_root)) {}

int ProcTreeAffinitySetter::set(unsigned pid, unsigned tid, const CpuSet& cpus) {
    const fs::path file =
        proc_root_ / std::to_string(pid) / "task" / std::to_string(tid) / "status";
    std::ifstream in(file);
    if (!in) {
        return ESRCH;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = "Cpus_allowed_list:";
    const auto at = text.find(key);
    if (at == std::string::npos) {
        return EINVAL;
    }
    const auto end = text.find('\n', at);
    text.replace(at + key.size(),
                 end == std::string::npos ? std::string::npos : end - at - key.size(),
                 "\t" + format_cpulist(cpus));
    std::ofstream out(file, std::ios::trunc);
    out << text;
    return out ? 0 : EIO;
}

AffinityRestore restore_affinity(const AffinityEntry& entry, const fs::path& proc_root,
                                 AffinitySetter& setter, AttributeWriter& writer) {
    return entry.irq ? restore_irq(entry, proc_root, writer)
                     : restore_task(entry, proc_root, setter);
}

std::string serialize_affinity_ledger(const std::vector<AffinityEntry>& entries) {
    std::string out = std::string(kMagic) + "\n";
    for (const auto& e : entries) {
        // The name last: escaped (printable ASCII), it holds no tab or newline.
        if (e.irq) {
            out += "irq\t" + std::to_string(e.id) + "\t" + std::to_string(e.batch_id) + "\t" +
                   cpus_text(e.cpus) + "\t" + cpus_text(e.leaving) + "\t" + e.name + "\n";
        } else {
            out += "task\t" + std::to_string(e.pid) + "\t" + std::to_string(e.id) + "\t" +
                   std::to_string(e.start_time) + "\t" + std::to_string(e.batch_id) + "\t" +
                   cpus_text(e.cpus) + "\t" + cpus_text(e.leaving) + "\t" + e.name + "\n";
        }
    }
    return out;
}

std::optional<std::vector<AffinityEntry>> parse_affinity_ledger(const std::string& text,
                                                                std::string& problem) {
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line != kMagic) {
        problem = "not an affinity ledger (the first line is not '" + std::string(kMagic) + "')";
        return std::nullopt;
    }
    std::vector<AffinityEntry> entries;
    std::size_t tasks = 0;
    std::size_t irqs = 0;
    for (std::size_t n = 2; std::getline(in, line); ++n) {
        const auto f = split_tabs(line);
        AffinityEntry e;
        bool ok = false;
        try {
            auto cpus = [](const std::string& t) { return t == "-" ? CpuSet{} : parse_cpulist(t); };
            if (f.size() == 6 && f[0] == "irq") {
                e.irq = true;
                ok = number(f[1], e.id) && number(f[2], e.batch_id);
                e.cpus = cpus(f[3]);
                e.leaving = cpus(f[4]);
                e.name = escape_excerpt(f[5], 128);
                ok = ok && ++irqs <= kMaxAffinityIrqs;
            } else if (f.size() == 8 && f[0] == "task") {
                ok = number(f[1], e.pid) && number(f[2], e.id) && number(f[3], e.start_time) &&
                     number(f[4], e.batch_id);
                e.cpus = cpus(f[5]);
                e.leaving = cpus(f[6]);
                e.name = escape_excerpt(f[7], 128);
                ok = ok && ++tasks <= kMaxAffinityTasks;
            }
        } catch (const std::exception&) {
            ok = false;
        }
        if (!ok || e.cpus.empty()) {
            problem = "line " + std::to_string(n) + " is not an entry ('" +
                      escape_excerpt(line, 64) + "')";
            return std::nullopt;
        }
        entries.push_back(std::move(e));
    }
    return entries;
}

AffinityLedger::AffinityLedger(fs::path file) : file_(std::move(file)) {}

std::optional<std::string> AffinityLedger::load() {
    entries_.clear();
    return load_ledger_file(file_, [this](const std::string& text) {
        std::string problem;
        auto parsed = parse_affinity_ledger(text, problem);
        if (!parsed) {
            return std::optional<std::string>(problem);
        }
        entries_ = std::move(*parsed);
        return std::optional<std::string>();
    });
}

int AffinityLedger::save() const {
    return save_ledger_file(
        file_, entries_.empty() ? std::nullopt
                                : std::optional<std::string>(serialize_affinity_ledger(entries_)));
}

std::vector<AffinityRestore> AffinityLedger::record(const Pinned& pinned, const CpuSet& leaving,
                                                    std::uint64_t batch_id, int& save_error) {
    save_error = 0;
    std::vector<AffinityRestore> unrecorded;
    std::size_t tasks = 0;
    std::size_t irqs = 0;
    for (const auto& e : entries_) {
        ++(e.irq ? irqs : tasks);
    }
    bool added = false;
    auto add = [&](AffinityEntry e, std::size_t& count, std::size_t max) {
        for (const auto& known : entries_) {
            if (same_thread(known, e)) {
                return;  // recorded by an earlier batch: its mask is the original
            }
        }
        if (count >= max) {
            unrecorded.push_back(outcome(e, AffinityStatus::NotRecorded, {}, 0,
                                         "not recorded: the affinity ledger is full (" +
                                             std::to_string(max) + " entries of its kind)"));
            return;
        }
        ++count;
        entries_.push_back(std::move(e));
        added = true;
    };
    for (const auto& t : pinned.tasks) {
        add(AffinityEntry{false, t.tid, t.pid, t.start_time, t.comm, t.cpus, t.cpus & leaving,
                          batch_id},
            tasks, kMaxAffinityTasks);
    }
    for (const auto& i : pinned.irqs) {
        add(AffinityEntry{true, i.irq, 0, 0, i.name, i.cpus, i.cpus & leaving, batch_id}, irqs,
            kMaxAffinityIrqs);
    }
    if (added) {
        save_error = save();
    }
    return unrecorded;
}

std::vector<AffinityRestore> AffinityLedger::settle(const CpuSet& online, const CpuSet& restore_for,
                                                    const fs::path& proc_root,
                                                    AffinitySetter& setter, AttributeWriter& writer,
                                                    int& save_error) {
    save_error = 0;
    std::vector<AffinityRestore> out;
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (!it->leaving.is_subset_of(online)) {
            ++it;
            continue;
        }
        if (it->leaving.intersects(restore_for)) {
            out.push_back(restore_affinity(*it, proc_root, setter, writer));
        } else {
            out.push_back(outcome(
                *it, AffinityStatus::Dropped, {}, 0,
                "CPU " + it->leaving.to_string() + " came back without an affinity restore asked"));
        }
        it = entries_.erase(it);
    }
    if (!out.empty()) {
        save_error = save();
    }
    return out;
}

}  // namespace cpuhpd
