#include "polkit_agent.h"

#include <stdexcept>

#include "files.h"

namespace cpuhpd::itest {

namespace {

constexpr const char* kPolkit = "org.freedesktop.PolicyKit1";
constexpr const char* kAuthorityPath = "/org/freedesktop/PolicyKit1/Authority";
constexpr const char* kAuthority = "org.freedesktop.PolicyKit1.Authority";
constexpr const char* kAgentPath = "/org/cpuhpd1/test/PolkitAgent";

const sd_bus_vtable kAgentVtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("BeginAuthentication", "sssa{ss}sa(sa{sv})", "", PolkitAgent::on_begin_entry,
                  SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("CancelAuthentication", "s", "", PolkitAgent::on_cancel_entry,
                  SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END};

std::string bus_error_text(const sd_bus_error& error, int r) {
    return error.name != nullptr
               ? std::string(error.name) + ": " + (error.message ? error.message : "")
               : error_text(-r);
}

}  // namespace

PolkitAgent::PolkitAgent(const std::string& address, pid_t pid) {
    int r = sd_bus_new(&bus_);
    if (r >= 0) {
        r = sd_bus_set_address(bus_, address.c_str());
    }
    if (r >= 0) {
        r = sd_bus_set_bus_client(bus_, 1);
    }
    if (r >= 0) {
        r = sd_bus_start(bus_);
    }
    if (r >= 0) {
        r = sd_bus_add_object_vtable(bus_, &slot_, kAgentPath,
                                     "org.freedesktop.PolicyKit1.AuthenticationAgent", kAgentVtable,
                                     this);
    }
    if (r < 0) {
        sd_bus_flush_close_unref(bus_);
        throw std::runtime_error("polkit agent: cannot connect: " + error_text(-r));
    }
    // Subject unix-process: start-time 0 lets polkit look it up.
    sd_bus_error error = SD_BUS_ERROR_NULL;
    r = sd_bus_call_method(bus_, kPolkit, kAuthorityPath, kAuthority, "RegisterAuthenticationAgent",
                           &error, nullptr, "(sa{sv})ss", "unix-process", 2, "pid", "u",
                           static_cast<std::uint32_t>(pid), "start-time", "t",
                           static_cast<std::uint64_t>(0), "C", kAgentPath);
    if (r < 0) {
        const std::string why = bus_error_text(error, r);
        sd_bus_error_free(&error);
        sd_bus_slot_unref(slot_);
        sd_bus_flush_close_unref(bus_);
        throw std::runtime_error("polkit agent: RegisterAuthenticationAgent: " + why);
    }
    thread_ = std::thread([this] { run(); });
}

PolkitAgent::~PolkitAgent() {
    stop_ = true;
    thread_.join();
    sd_bus_slot_unref(slot_);
    sd_bus_flush_close_unref(bus_);
}

std::vector<PolkitAgent::Request> PolkitAgent::requests() {
    std::lock_guard lock(mutex_);
    return requests_;
}

void PolkitAgent::run() {
    while (!stop_) {
        const int r = sd_bus_process(bus_, nullptr);
        if (r < 0) {
            return;
        }
        if (r == 0) {
            sd_bus_wait(bus_, 50'000);  // bounded, so that stop_ is seen
        }
    }
}

int PolkitAgent::on_begin_entry(sd_bus_message* m, void* userdata, sd_bus_error* error) {
    auto* self = static_cast<PolkitAgent*>(userdata);
    const char* action_id = nullptr;
    const char* message = nullptr;
    const char* icon = nullptr;
    int r = sd_bus_message_read(m, "sss", &action_id, &message, &icon);
    if (r < 0) {
        return r;
    }
    r = sd_bus_message_skip(m, "a{ss}");
    const char* cookie = nullptr;
    if (r >= 0) {
        r = sd_bus_message_read(m, "s", &cookie);
    }
    if (r < 0) {
        return r;
    }
    {
        std::lock_guard lock(self->mutex_);
        self->requests_.push_back({action_id, message});
    }
    // Root "authenticated": polkit offers uid 0 when no administrator group has members.
    r = sd_bus_call_method(self->bus_, kPolkit, kAuthorityPath, kAuthority,
                           "AuthenticationAgentResponse2", error, nullptr, "us(sa{sv})",
                           static_cast<std::uint32_t>(0), cookie, "unix-user", 1, "uid", "u",
                           static_cast<std::uint32_t>(0));
    if (r < 0) {
        return r;
    }
    return sd_bus_reply_method_return(m, "");
}

int PolkitAgent::on_cancel_entry(sd_bus_message* m, void*, sd_bus_error*) {
    return sd_bus_reply_method_return(m, "");
}

}  // namespace cpuhpd::itest
