#include "holds.h"

#include <algorithm>
#include <ctime>

namespace cpuhpd {

std::string utc_text(std::chrono::system_clock::time_point when) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
    std::tm parts{};
    gmtime_r(&seconds, &parts);
    char text[32];
    const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
    return std::string(text, n);
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

void HoldTable::admit(Request& request) const {
    const std::lock_guard lock(mutex_);
    CpuSet left_out;
    const Hold* first_holding = nullptr;
    for (const auto& [id, hold] : holds_) {
        if (!request.caller.empty() && hold.holder == request.caller) {
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

}  // namespace cpuhpd
