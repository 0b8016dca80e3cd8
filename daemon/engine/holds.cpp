#include "holds.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <sstream>

#include "cpulist.h"

namespace cpuhpd {

std::string utc_text(std::chrono::system_clock::time_point when) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
    std::tm parts{};
    gmtime_r(&seconds, &parts);
    char text[32];
    const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
    return std::string(text, n);
}

std::string hold_caller(std::uint64_t id) {
    return "hold " + std::to_string(id);
}

std::string describe(const Hold& hold) {
    std::string text = "hold " + std::to_string(hold.id) + " by " + hold.who;
    if (!hold.why.empty()) {
        text += " (" + hold.why + ")";
    }
    return text + ", " + to_string(hold.state) + " since " + utc_text(hold.since);
}

std::uint64_t HoldTable::take(Hold hold) {
    const std::lock_guard lock(mutex_);
    if (holds_.size() >= kMaxHolds) {
        throw Refusal(RefusalKind::Busy,
                      std::to_string(kMaxHolds) + " holds exist already (the most there may be)");
    }
    std::size_t mine = 0;
    for (const auto& [id, other] : holds_) {
        if (const CpuSet both = other.cpus & hold.cpus; !both.empty()) {
            throw Refusal(RefusalKind::Held,
                          "CPU " + both.to_string() + " already held: " + describe(other), both);
        }
        mine += other.holder == hold.holder ? 1 : 0;
    }
    if (mine >= kMaxHoldsPerHolder) {
        throw Refusal(RefusalKind::Busy, "this caller has " + std::to_string(kMaxHoldsPerHolder) +
                                             " holds already (the most one caller may have)");
    }
    hold.id = next_id_++;
    const std::uint64_t id = hold.id;
    holds_.emplace(id, std::move(hold));
    return id;
}

std::optional<Hold> HoldTable::end(std::uint64_t id) {
    const std::lock_guard lock(mutex_);
    const auto it = holds_.find(id);
    if (it == holds_.end()) {
        return std::nullopt;
    }
    Hold hold = std::move(it->second);
    holds_.erase(it);
    return hold;
}

std::optional<Hold> HoldTable::find(std::uint64_t id) const {
    const std::lock_guard lock(mutex_);
    const auto it = holds_.find(id);
    return it == holds_.end() ? std::nullopt : std::optional<Hold>(it->second);
}

std::vector<Hold> HoldTable::list() const {
    const std::lock_guard lock(mutex_);
    std::vector<Hold> holds;
    holds.reserve(holds_.size());
    for (const auto& [id, hold] : holds_) {
        holds.push_back(hold);
    }
    return holds;
}

void HoldTable::reload(std::vector<Hold> holds, std::uint64_t next_id) {
    const std::lock_guard lock(mutex_);
    holds_.clear();
    next_id_ = std::max<std::uint64_t>(next_id, 1);
    for (auto& hold : holds) {
        next_id_ = std::max(next_id_, hold.id + 1);
        const std::uint64_t id = hold.id;
        holds_.emplace(id, std::move(hold));
    }
}

std::uint64_t HoldTable::next_id() const {
    const std::lock_guard lock(mutex_);
    return next_id_;
}

bool HoldTable::establish(std::uint64_t id) {
    const std::lock_guard lock(mutex_);
    const auto it = holds_.find(id);
    if (it == holds_.end()) {
        return false;
    }
    it->second.established = true;
    return true;
}

std::optional<Hold> HoldTable::attach(std::uint64_t id, const std::string& holder) {
    const std::lock_guard lock(mutex_);
    const auto it = holds_.find(id);
    if (it == holds_.end()) {
        return std::nullopt;
    }
    it->second.holder = holder;
    it->second.attached = true;
    return it->second;
}

std::optional<Hold> HoldTable::count_violation(std::uint64_t id) {
    const std::lock_guard lock(mutex_);
    const auto it = holds_.find(id);
    if (it == holds_.end()) {
        return std::nullopt;
    }
    ++it->second.violations;
    return it->second;
}

void HoldTable::admit(Request& request) const {
    const std::lock_guard lock(mutex_);
    CpuSet left_out;
    const Hold* first_holding = nullptr;
    for (const auto& [id, hold] : holds_) {
        if (!request.caller.empty() && ((hold.attached && hold.holder == request.caller) ||
                                        request.caller == hold_caller(id))) {
            continue;
        }
        const CpuSet held = request.cpus & hold.cpus;
        if (held.empty()) {
            continue;
        }
        const CpuSet named = held - request.selected_only;
        if (!named.empty()) {
            throw Refusal(RefusalKind::Held,
                          "CPU " + named.to_string() + " is held: " + describe(hold) +
                              "; only its holder may change it until the hold ends",
                          named);
        }
        left_out |= held;
        first_holding = first_holding ? first_holding : &hold;
    }
    if (left_out.empty()) {
        return;
    }
    if (left_out == request.cpus) {
        // Nothing left: say why, rather than that the selector names no CPU.
        throw Refusal(RefusalKind::Held,
                      "every CPU of '" + request.mask + "' that could change is held (CPU " +
                          left_out.to_string() + "; " + describe(*first_holding) +
                          (left_out.is_subset_of(first_holding->cpus) ? "" : ", and others") +
                          "); only its holder may change them until the hold ends",
                      left_out);
    }
    request.cpus = request.cpus - left_out;
}

namespace {

constexpr const char* kHoldsMagic = "cpuhpd-holds 1";

std::string cpus_field(const CpuSet& cpus) {
    return cpus.empty() ? "-" : format_cpulist(cpus);
}

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (;;) {
        const std::size_t tab = line.find('\t', start);
        fields.push_back(line.substr(start, tab - start));
        if (tab == std::string::npos) {
            return fields;
        }
        start = tab + 1;
    }
}

std::optional<std::uint64_t> number(std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
        return std::nullopt;
    }
    return value;
}

std::optional<std::uint64_t> keyed_number(const std::string& word, const std::string& key) {
    if (word.rfind(key + "=", 0) != 0) {
        return std::nullopt;
    }
    return number(std::string_view(word).substr(key.size() + 1));
}

std::optional<CpuSet> cpus_of(const std::string& text) {
    if (text == "-") {
        return CpuSet{};
    }
    try {
        return parse_cpulist(text);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

std::string format_holds(const HoldsFile& file) {
    std::string text = std::string(kHoldsMagic) +
                       " boottime_ns=" + std::to_string(file.boottime_ns) +
                       " next_id=" + std::to_string(file.next_id) + "\n";
    for (const Hold& hold : file.holds) {
        const auto since =
            std::chrono::duration_cast<std::chrono::seconds>(hold.since.time_since_epoch()).count();
        text += std::to_string(hold.id) + "\t" +
                (hold.uid ? std::to_string(*hold.uid) : std::string("-")) + "\t" +
                to_string(hold.state) + "\t" + cpus_field(hold.cpus) + "\t" +
                cpus_field(hold.online_before) + "\t" + (hold.restore ? "1" : "0") + "\t" +
                std::to_string(since) + "\t" + std::to_string(hold.violations) + "\t" +
                hold.holder + "\t" + hold.who + "\t" + hold.why + "\n";
    }
    return text;
}

std::variant<HoldsFile, std::string> parse_holds(const std::string& text) {
    using Result = std::variant<HoldsFile, std::string>;
    HoldsFile file;
    std::istringstream lines(text);
    std::string line;
    if (!std::getline(lines, line)) {
        return Result(std::in_place_index<1>, "it is empty");
    }
    {
        std::istringstream words(line);
        std::string magic1, magic2, boot, next;
        words >> magic1 >> magic2 >> boot >> next;
        const auto boottime = keyed_number(boot, "boottime_ns");
        const auto next_id = keyed_number(next, "next_id");
        if (magic1 + " " + magic2 != kHoldsMagic || !boottime || !next_id) {
            return Result(std::in_place_index<1>, "its first line is not a holds header");
        }
        file.boottime_ns = *boottime;
        file.next_id = *next_id;
    }
    std::size_t number_of_line = 1;
    while (std::getline(lines, line)) {
        ++number_of_line;
        const auto bad = [&](const std::string& why) {
            return Result(std::in_place_index<1>,
                          "line " + std::to_string(number_of_line) + ": " + why);
        };
        const auto fields = split_tabs(line);
        if (fields.size() != 11) {
            return bad("expected 11 tab-separated fields");
        }
        Hold hold;
        const auto id = number(fields[0]);
        const auto since = number(fields[6]);
        const auto violations = number(fields[7]);
        const auto state = find_by_name(kActionNames, fields[2]);
        const auto cpus = cpus_of(fields[3]);
        const auto before = cpus_of(fields[4]);
        if (!id || *id == 0 || !since || !violations || !state || !cpus || cpus->empty() ||
            !before || (fields[5] != "0" && fields[5] != "1")) {
            return bad("a field is not valid");
        }
        if (fields[1] != "-") {
            const auto uid = number(fields[1]);
            if (!uid || *uid > 0xffffffffULL) {
                return bad("the uid is not valid");
            }
            hold.uid = static_cast<std::uint32_t>(*uid);
        }
        hold.id = *id;
        hold.state = *state;
        hold.cpus = *cpus;
        hold.online_before = *before & *cpus;
        hold.restore = fields[5] == "1";
        hold.since = std::chrono::system_clock::time_point(std::chrono::seconds(*since));
        hold.violations = *violations;
        hold.holder = fields[8];
        hold.who = fields[9];
        hold.why = fields[10];
        hold.established = true;
        for (const Hold& other : file.holds) {
            if (other.id == hold.id || !(other.cpus & hold.cpus).empty()) {
                return bad("hold " + std::to_string(hold.id) + " repeats an id or a CPU");
            }
        }
        file.holds.push_back(std::move(hold));
    }
    return file;
}

}  // namespace cpuhpd
