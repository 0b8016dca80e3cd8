#include "bus_signals.h"

#include <systemd/sd-bus.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <utility>

#include "enums.h"
#include "input.h"
#include "log.h"

namespace cpuhpd {

namespace {

// At most this many lines per kind of signal and window; the rest are counted and told once the
// window is over, so a flood of forged signals cannot flood the journal.
constexpr int kLinesPerWindow = 5;
constexpr auto kWindow = std::chrono::seconds(10);

struct Budget {
    std::chrono::steady_clock::time_point start{};
    int lines = 0;
    int suppressed = 0;
};

// The signals of a kind together, for the count of those not logged one by one.
constexpr EnumNames<SignalKind, 3> kSignalKindNames{{
    {SignalKind::HolderNameOwnerChanged, "NameOwnerChanged for holders"},
    {SignalKind::PowerProfilesNameOwnerChanged, "NameOwnerChanged for power-profiles-daemon"},
    {SignalKind::PowerProfilesChanged, "PropertiesChanged of power-profiles-daemon"},
}};

// Main thread only, as every signal handler. One budget per kind: the map has at most as
// many entries as SignalKind has values.
void log_dropped(SignalKind kind, const std::string& what, const std::string& why) {
    static std::map<SignalKind, Budget> budgets;
    Budget& budget = budgets[kind];
    const auto now = std::chrono::steady_clock::now();
    if (now - budget.start >= kWindow) {
        if (budget.suppressed > 0) {
            log::warning(std::string(name_of(kSignalKindNames, kind)) + ": " +
                         std::to_string(budget.suppressed) +
                         " more signals dropped in the last 10 s (not logged one by one)");
        }
        budget = Budget{now, 0, 0};
    }
    if (budget.lines >= kLinesPerWindow) {
        ++budget.suppressed;
        return;
    }
    ++budget.lines;
    log::warning(what + ": signal dropped: " + why, {{"SIGNAL", what}});
}

// sdbus-c++ 1.2's Message::getSender() builds a std::string from what sd-bus returns, a
// null pointer for a message without a sender (a plain message, a peer-to-peer connection):
// the sender is read from sd-bus itself. A pointer to the protected member, named through a
// derived class, is the legal way to reach the sd_bus_message.
struct MessageAccess : sdbus::Message {
    static sd_bus_message* raw(const sdbus::Message& message) {
        return static_cast<sd_bus_message*>(message.*(&MessageAccess::msg_));
    }
};

std::string sender_of(const sdbus::Message& message) {
    const char* sender = sd_bus_message_get_sender(MessageAccess::raw(message));
    return sender != nullptr ? std::string(sender) : std::string();
}

}  // namespace

std::optional<NameOwnerChange> decode_name_owner_changed(sdbus::Message& message) {
    NameOwnerChange change;
    try {
        message >> change.name >> change.old_owner >> change.new_owner;
    } catch (const sdbus::Error&) {
        return std::nullopt;
    }
    if (!message) {
        return std::nullopt;  // fewer than three strings
    }
    return change;
}

std::optional<StringPropertyChange> decode_string_property_change(sdbus::Message& message,
                                                                  const std::string& interface,
                                                                  const std::string& property) {
    std::string changed_interface;
    std::map<std::string, sdbus::Variant> changed;
    std::vector<std::string> invalidated;
    StringPropertyChange change;
    try {
        message >> changed_interface >> changed >> invalidated;
        if (!message || changed_interface != interface) {
            return std::nullopt;
        }
        if (const auto it = changed.find(property); it != changed.end()) {
            if (!it->second.containsValueOfType<std::string>()) {
                return std::nullopt;
            }
            change.value = it->second.get<std::string>();
        }
    } catch (const sdbus::Error&) {
        return std::nullopt;
    }
    change.invalidated =
        std::find(invalidated.begin(), invalidated.end(), property) != invalidated.end();
    return change;
}

std::string refuse_sender(const std::string& sender, const std::string& expected) {
    if (expected.empty()) {
        return "nobody is expected to send it now (sender " + escape_excerpt(sender, 256) + ")";
    }
    if (sender != expected) {
        return "sent by " +
               (sender.empty() ? std::string("no sender") : escape_excerpt(sender, 256)) +
               ", not by " + expected;
    }
    return {};
}

sdbus::message_handler guarded_handler(SignalKind kind, std::string what,
                                       std::function<std::string()> expected_sender,
                                       std::function<void(sdbus::Message&)> body) {
    return [kind, what = std::move(what), expected_sender = std::move(expected_sender),
            body = std::move(body)](sdbus::Message& message) {
        try {
            if (const std::string why = refuse_sender(sender_of(message), expected_sender());
                !why.empty()) {
                log_dropped(kind, what, why);
                return;
            }
            body(message);
        } catch (const sdbus::Error& error) {
            log_dropped(kind, what,
                        escape_excerpt(error.getName() + ": " + error.getMessage(), 256));
        } catch (const std::exception& error) {
            log_dropped(kind, what, escape_excerpt(error.what(), 256));
        } catch (...) {
            log_dropped(kind, what, "unknown exception");
        }
    };
}

}  // namespace cpuhpd
