#include "raw_client.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "files.h"

namespace cpuhpd::itest {

namespace {

constexpr const char* kBusName = "org.cpuhpd1";
constexpr const char* kPath = "/org/cpuhpd1";
constexpr const char* kInterface = "org.cpuhpd1.Manager";

using Clock = std::chrono::steady_clock;

}  // namespace

std::string CallResult::str(const std::string& key) const {
    auto it = summary.find(key);
    if (it == summary.end()) {
        return "";
    }
    if (auto* s = std::get_if<std::string>(&it->second)) {
        return *s;
    }
    return "";
}

std::uint64_t CallResult::u64(const std::string& key) const {
    auto it = summary.find(key);
    if (it == summary.end()) {
        return 0;
    }
    if (auto* t = std::get_if<std::uint64_t>(&it->second)) {
        return *t;
    }
    if (auto* u = std::get_if<std::uint32_t>(&it->second)) {
        return *u;
    }
    return 0;
}

std::optional<std::vector<NumberedEntry>> CallResult::entries(const std::string& key) const {
    auto it = summary.find(key);
    if (it == summary.end()) {
        return std::nullopt;
    }
    if (auto* v = std::get_if<std::vector<NumberedEntry>>(&it->second)) {
        return *v;
    }
    return std::nullopt;
}

std::vector<std::uint32_t> CallResult::order() const {
    auto it = summary.find("order");
    if (it == summary.end()) {
        return {};
    }
    if (auto* v = std::get_if<std::vector<std::uint32_t>>(&it->second)) {
        return *v;
    }
    return {};
}

std::optional<CpuResult> CallResult::result_for(unsigned cpu) const {
    for (const auto& r : results) {
        if (r.cpu == cpu) {
            return r;
        }
    }
    return std::nullopt;
}

std::set<unsigned> CallResult::cpus() const {
    std::set<unsigned> out;
    for (const auto& r : results) {
        out.insert(r.cpu);
    }
    return out;
}

static std::string variant_text(const Variant& v) {
    struct V {
        std::string operator()(std::monostate) const { return "<?>"; }
        std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
        std::string operator()(bool b) const { return b ? "true" : "false"; }
        std::string operator()(std::uint64_t t) const { return std::to_string(t); }
        std::string operator()(std::uint32_t u) const { return std::to_string(u); }
        std::string operator()(std::int32_t i) const { return std::to_string(i); }
        std::string operator()(const std::vector<std::uint32_t>& a) const {
            std::string s = "[";
            for (std::size_t i = 0; i < a.size(); ++i) {
                s += (i ? "," : "") + std::to_string(a[i]);
            }
            return s + "]";
        }
        std::string operator()(const std::vector<std::string>& a) const {
            std::string s = "[";
            for (std::size_t i = 0; i < a.size(); ++i) {
                s += (i ? ",\"" : "\"") + a[i] + "\"";
            }
            return s + "]";
        }
        std::string operator()(const std::vector<NumberedEntry>& a) const {
            std::string s = "[";
            for (std::size_t i = 0; i < a.size(); ++i) {
                s += (i ? ",(" : "(") + std::to_string(a[i].number) + ",\"" + a[i].name + "\"," +
                     a[i].cpus + ")";
            }
            return s + "]";
        }
    };
    return std::visit(V{}, v);
}

std::string CallResult::describe() const {
    if (!ok) {
        return "error " + error_name + ": " + error_message;
    }
    std::string s = "results:";
    for (const auto& r : results) {
        s += "\n  cpu " + std::to_string(r.cpu) + " " + r.result + " " + r.error + "(" +
             std::to_string(r.errno_value) + ") " + r.message;
    }
    s += "\nsummary:";
    for (const auto& [k, v] : summary) {
        s += " " + k + "=" + variant_text(v);
    }
    return s;
}

namespace {

struct BusError {
    sd_bus_error e = SD_BUS_ERROR_NULL;
    ~BusError() { sd_bus_error_free(&e); }
};

struct MessageRef {
    sd_bus_message* m = nullptr;
    ~MessageRef() { sd_bus_message_unref(m); }
};

void check(int r, const char* what) {
    if (r < 0) {
        throw std::runtime_error(std::string(what) + ": " + error_text(-r));
    }
}

}  // namespace

RawClient::RawClient(const std::string& address) {
    check(sd_bus_new(&bus_), "sd_bus_new");
    check(sd_bus_set_address(bus_, address.c_str()), "sd_bus_set_address");
    check(sd_bus_set_bus_client(bus_, 1), "sd_bus_set_bus_client");
    check(sd_bus_start(bus_), "sd_bus_start");
}

RawClient::~RawClient() {
    sd_bus_slot_unref(batch_slot_);
    sd_bus_slot_unref(props_slot_);
    sd_bus_slot_unref(progress_slot_);
    sd_bus_slot_unref(violated_slot_);
    sd_bus_flush_close_unref(bus_);
}

bool RawClient::name_has_owner(const std::string& name) {
    BusError err;
    MessageRef reply;
    int r = sd_bus_call_method(bus_, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "NameHasOwner", &err.e, &reply.m, "s",
                               name.c_str());
    check(r, "NameHasOwner");
    int has = 0;
    check(sd_bus_message_read(reply.m, "b", &has), "NameHasOwner reply");
    return has != 0;
}

int read_vardict(sd_bus_message* m, std::map<std::string, Variant>& out) {
    int r = sd_bus_message_enter_container(m, 'a', "{sv}");
    if (r < 0) {
        return r;
    }
    while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
        const char* key = nullptr;
        if ((r = sd_bus_message_read(m, "s", &key)) < 0) {
            return r;
        }
        std::string k = key;
        char type = 0;
        const char* contents = nullptr;
        if ((r = sd_bus_message_peek_type(m, &type, &contents)) < 0) {
            return r;
        }
        std::string sig = contents ? contents : "";
        if ((r = sd_bus_message_enter_container(m, 'v', sig.c_str())) < 0) {
            return r;
        }
        Variant v;
        if (sig == "s") {
            const char* s = nullptr;
            r = sd_bus_message_read(m, "s", &s);
            v = std::string(s ? s : "");
        } else if (sig == "b") {
            int b = 0;
            r = sd_bus_message_read(m, "b", &b);
            v = b != 0;
        } else if (sig == "t") {
            std::uint64_t t = 0;
            r = sd_bus_message_read(m, "t", &t);
            v = t;
        } else if (sig == "u") {
            std::uint32_t u = 0;
            r = sd_bus_message_read(m, "u", &u);
            v = u;
        } else if (sig == "i") {
            std::int32_t i = 0;
            r = sd_bus_message_read(m, "i", &i);
            v = i;
        } else if (sig == "au") {
            std::vector<std::uint32_t> a;
            if ((r = sd_bus_message_enter_container(m, 'a', "u")) < 0) {
                return r;
            }
            std::uint32_t u = 0;
            while ((r = sd_bus_message_read(m, "u", &u)) > 0) {
                a.push_back(u);
            }
            if (r < 0) {
                return r;
            }
            r = sd_bus_message_exit_container(m);
            v = a;
        } else if (sig == "as") {
            char** strv = nullptr;
            r = sd_bus_message_read_strv(m, &strv);
            std::vector<std::string> a;
            for (char** p = strv; p && *p; ++p) {
                a.emplace_back(*p);
                std::free(*p);
            }
            std::free(strv);
            v = a;
        } else if (sig == "a(uss)") {
            std::vector<NumberedEntry> a;
            if ((r = sd_bus_message_enter_container(m, 'a', "(uss)")) < 0) {
                return r;
            }
            std::uint32_t number = 0;
            const char* name = nullptr;
            const char* cpus = nullptr;
            while ((r = sd_bus_message_read(m, "(uss)", &number, &name, &cpus)) > 0) {
                a.push_back({number, name, cpus});
            }
            if (r < 0) {
                return r;
            }
            r = sd_bus_message_exit_container(m);
            v = a;
        } else {
            r = sd_bus_message_skip(m, sig.c_str());
        }
        if (r < 0) {
            return r;
        }
        if ((r = sd_bus_message_exit_container(m)) < 0) {  // v
            return r;
        }
        if ((r = sd_bus_message_exit_container(m)) < 0) {  // e
            return r;
        }
        out[k] = v;
    }
    if (r < 0) {
        return r;
    }
    return sd_bus_message_exit_container(m);
}

CallResult RawClient::call(const std::string& method, const std::string& arg,
                           const std::map<std::string, Option>& options,
                           std::chrono::seconds timeout) {
    return call_with_entries(method, arg, {options.begin(), options.end()}, timeout);
}

namespace {

std::uint64_t usec_of(std::chrono::seconds timeout) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(timeout).count());
}

// Sends `msg` and waits up to `timeout` for `reply`. On an error reply or a failed call,
// fills `out`'s error name and message and returns false; else sets `out.ok`.
bool send_call(sd_bus* bus, sd_bus_message* msg, std::chrono::seconds timeout, CallResult& out,
               MessageRef& reply) {
    BusError err;
    const int r = sd_bus_call(bus, msg, usec_of(timeout), &err.e, &reply.m);
    if (r < 0) {
        out.ok = false;
        out.error_name = err.e.name ? err.e.name : ("errno:" + error_text(-r));
        out.error_message = err.e.message ? err.e.message : "";
        return false;
    }
    out.ok = true;
    return true;
}

void append_options(sd_bus_message* m, const std::vector<std::pair<std::string, Option>>& options) {
    check(sd_bus_message_open_container(m, 'a', "{sv}"), "open a{sv}");
    for (const auto& [key, value] : options) {
        check(sd_bus_message_open_container(m, 'e', "sv"), "open e");
        check(sd_bus_message_append(m, "s", key.c_str()), "append key");
        if (auto* s = std::get_if<std::string>(&value)) {
            check(sd_bus_message_append(m, "v", "s", s->c_str()), "append v");
        } else if (auto* b = std::get_if<bool>(&value)) {
            check(sd_bus_message_append(m, "v", "b", static_cast<int>(*b)), "append v");
        } else if (auto* u = std::get_if<std::uint32_t>(&value)) {
            check(sd_bus_message_append(m, "v", "u", *u), "append v");
        }
        check(sd_bus_message_close_container(m), "close e");
    }
    check(sd_bus_message_close_container(m), "close a");
}

// An a(ussis) results array at the current position of `m`.
void read_results(sd_bus_message* m, std::vector<CpuResult>& results) {
    check(sd_bus_message_enter_container(m, 'a', "(ussis)"), "reply: results");
    int r = 0;
    while ((r = sd_bus_message_enter_container(m, 'r', "ussis")) > 0) {
        CpuResult c;
        const char *res = nullptr, *ename = nullptr, *text = nullptr;
        std::uint32_t cpu = 0;
        std::int32_t ev = 0;
        check(sd_bus_message_read(m, "ussis", &cpu, &res, &ename, &ev, &text),
              "reply: result entry");
        c.cpu = cpu;
        c.result = res;
        c.error = ename;
        c.errno_value = ev;
        c.message = text;
        results.push_back(c);
        check(sd_bus_message_exit_container(m), "reply: exit entry");
    }
    check(r, "reply: results entries");
    check(sd_bus_message_exit_container(m), "reply: exit results");
}

}  // namespace

CallResult RawClient::call_with_entries(const std::string& method,
                                        const std::optional<std::string>& arg,
                                        const std::vector<std::pair<std::string, Option>>& options,
                                        std::chrono::seconds timeout) {
    MessageRef msg;
    check(sd_bus_message_new_method_call(bus_, &msg.m, kBusName, kPath, kInterface, method.c_str()),
          "new_method_call");
    if (arg) {
        check(sd_bus_message_append(msg.m, "s", arg->c_str()), "append mask");
    }
    append_options(msg.m, options);

    CallResult out;
    MessageRef reply;
    if (!send_call(bus_, msg.m, timeout, out, reply)) {
        return out;
    }
    read_results(reply.m, out.results);
    check(read_vardict(reply.m, out.summary), "reply: summary");
    return out;
}

RawClient::Held RawClient::hold_cpus(const std::string& mask, const std::string& state,
                                     const std::string& who, const std::string& why,
                                     const std::map<std::string, Option>& options,
                                     std::chrono::seconds timeout) {
    MessageRef msg;
    check(sd_bus_message_new_method_call(bus_, &msg.m, kBusName, kPath, kInterface, "HoldCpus"),
          "new_method_call");
    check(
        sd_bus_message_append(msg.m, "ssss", mask.c_str(), state.c_str(), who.c_str(), why.c_str()),
        "append HoldCpus arguments");
    append_options(msg.m, {options.begin(), options.end()});
    Held out;
    MessageRef reply;
    if (!send_call(bus_, msg.m, timeout, out.call, reply)) {
        return out;
    }
    int fd = -1;
    check(sd_bus_message_read(reply.m, "ht", &fd, &out.hold_id), "HoldCpus reply: fd, id");
    out.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);  // the message's own copy closes with it
    read_results(reply.m, out.call.results);
    check(read_vardict(reply.m, out.call.summary), "HoldCpus reply: summary");
    return out;
}

RawClient::Held RawClient::attach_hold(std::uint64_t hold_id, std::chrono::seconds timeout) {
    MessageRef msg;
    check(sd_bus_message_new_method_call(bus_, &msg.m, kBusName, kPath, kInterface, "AttachHold"),
          "new_method_call");
    check(sd_bus_message_append(msg.m, "t", hold_id), "append hold_id");
    Held out;
    MessageRef reply;
    if (!send_call(bus_, msg.m, timeout, out.call, reply)) {
        return out;
    }
    int fd = -1;
    check(sd_bus_message_read(reply.m, "h", &fd), "AttachHold reply: fd");
    out.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    out.hold_id = hold_id;
    return out;
}

CallResult RawClient::release_hold(std::uint64_t hold_id, std::chrono::seconds timeout) {
    MessageRef msg;
    check(sd_bus_message_new_method_call(bus_, &msg.m, kBusName, kPath, kInterface, "ReleaseHold"),
          "new_method_call");
    check(sd_bus_message_append(msg.m, "t", hold_id), "append hold_id");
    CallResult out;
    MessageRef reply;
    if (!send_call(bus_, msg.m, timeout, out, reply)) {
        return out;
    }
    read_results(reply.m, out.results);
    return out;
}

std::vector<RawClient::HoldEntry> RawClient::get_holds() {
    BusError err;
    MessageRef reply;
    int r = sd_bus_get_property(bus_, kBusName, kPath, kInterface, "Holds", &err.e, &reply.m,
                                "a(tssssstb)");
    if (r < 0) {
        throw std::runtime_error("Get Holds: " +
                                 (err.e.name ? std::string(err.e.name) : error_text(-r)));
    }
    std::vector<HoldEntry> out;
    check(sd_bus_message_enter_container(reply.m, 'a', "(tssssstb)"), "Holds");
    while ((r = sd_bus_message_enter_container(reply.m, 'r', "tssssstb")) > 0) {
        HoldEntry h;
        const char *cpus = nullptr, *state = nullptr, *who = nullptr, *why = nullptr,
                   *holder = nullptr;
        int restore = 0;
        check(sd_bus_message_read(reply.m, "tssssstb", &h.id, &cpus, &state, &who, &why, &holder,
                                  &h.since_us, &restore),
              "Holds entry");
        h.cpus = cpus;
        h.state = state;
        h.who = who;
        h.why = why;
        h.holder = holder;
        h.restore = restore != 0;
        out.push_back(h);
        check(sd_bus_message_exit_container(reply.m), "Holds: exit entry");
    }
    check(r, "Holds entries");
    return out;
}

std::string RawClient::unique_name() {
    const char* name = nullptr;
    check(sd_bus_get_unique_name(bus_, &name), "unique name");
    return name;
}

std::string RawClient::name_owner(const std::string& name) {
    BusError err;
    sd_bus_message* reply = nullptr;
    if (sd_bus_call_method(bus_, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                           "org.freedesktop.DBus", "GetNameOwner", &err.e, &reply, "s",
                           name.c_str()) < 0) {
        return {};
    }
    const char* owner = nullptr;
    std::string out;
    if (sd_bus_message_read(reply, "s", &owner) >= 0 && owner != nullptr) {
        out = owner;
    }
    sd_bus_message_unref(reply);
    return out;
}

std::string RawClient::send_signal(const std::string& destination, const std::string& path,
                                   const std::string& interface, const std::string& member,
                                   const std::function<int(sd_bus_message*)>& append) {
    sd_bus_message* m = nullptr;
    int r = sd_bus_message_new_signal(bus_, &m, path.c_str(), interface.c_str(), member.c_str());
    if (r >= 0 && !destination.empty()) {
        r = sd_bus_message_set_destination(m, destination.c_str());
    }
    if (r >= 0) {
        r = append(m);
    }
    if (r >= 0) {
        r = sd_bus_send(bus_, m, nullptr);
    }
    if (r >= 0) {
        r = sd_bus_flush(bus_);
    }
    sd_bus_message_unref(m);
    return r < 0 ? std::string("sending ") + member + ": " + std::strerror(-r) : std::string();
}

std::string RawClient::get_string(const std::string& property) {
    BusError err;
    char* value = nullptr;
    int r = sd_bus_get_property_string(bus_, kBusName, kPath, kInterface, property.c_str(), &err.e,
                                       &value);
    if (r < 0) {
        throw std::runtime_error("Get " + property + ": " +
                                 (err.e.name ? std::string(err.e.name) : error_text(-r)));
    }
    std::string s = value;
    std::free(value);
    return s;
}

std::vector<std::string> RawClient::get_strv(const std::string& property) {
    BusError err;
    char** value = nullptr;
    int r = sd_bus_get_property_strv(bus_, kBusName, kPath, kInterface, property.c_str(), &err.e,
                                     &value);
    if (r < 0) {
        throw std::runtime_error("Get " + property + ": " +
                                 (err.e.name ? std::string(err.e.name) : error_text(-r)));
    }
    std::vector<std::string> out;
    for (char** p = value; p && *p; ++p) {
        out.emplace_back(*p);
        std::free(*p);
    }
    std::free(value);
    return out;
}

bool RawClient::get_bool(const std::string& property) {
    BusError err;
    int value = 0;
    int r = sd_bus_get_property_trivial(bus_, kBusName, kPath, kInterface, property.c_str(), &err.e,
                                        'b', &value);
    if (r < 0) {
        throw std::runtime_error("Get " + property + ": " +
                                 (err.e.name ? std::string(err.e.name) : error_text(-r)));
    }
    return value != 0;
}

std::map<std::string, Variant> RawClient::get_vardict(const std::string& property) {
    BusError err;
    MessageRef reply;
    int r = sd_bus_get_property(bus_, kBusName, kPath, kInterface, property.c_str(), &err.e,
                                &reply.m, "a{sv}");
    if (r < 0) {
        throw std::runtime_error("Get " + property + ": " +
                                 (err.e.name ? std::string(err.e.name) : error_text(-r)));
    }
    std::map<std::string, Variant> out;
    // sd_bus_get_property() has entered the variant already.
    check(read_vardict(reply.m, out), "Get a{sv} property");
    return out;
}

RawClient::Cancelled RawClient::cancel(std::uint64_t batch_id) {
    BusError err;
    MessageRef reply;
    Cancelled out;
    const int r = sd_bus_call_method(bus_, kBusName, kPath, kInterface, "Cancel", &err.e, &reply.m,
                                     "t", batch_id);
    if (r < 0) {
        out.error_name = err.e.name ? err.e.name : error_text(-r);
        out.error_message = err.e.message ? err.e.message : "";
        return out;
    }
    check(sd_bus_message_read(reply.m, "t", &out.batch_id), "Cancel reply");
    return out;
}

std::vector<RawClient::TopologyEntry> RawClient::get_topology() {
    BusError err;
    MessageRef reply;
    int r =
        sd_bus_call_method(bus_, kBusName, kPath, kInterface, "GetTopology", &err.e, &reply.m, "");
    if (r < 0) {
        throw std::runtime_error("GetTopology: " +
                                 (err.e.name ? std::string(err.e.name) : error_text(-r)));
    }
    std::vector<TopologyEntry> out;
    check(sd_bus_message_enter_container(reply.m, 'a', "(uiiiisbb)"), "GetTopology reply");
    while ((r = sd_bus_message_enter_container(reply.m, 'r', "uiiiisbb")) > 0) {
        TopologyEntry e;
        const char* sib = nullptr;
        int online = 0, hp = 0;
        std::uint32_t cpu = 0;
        check(sd_bus_message_read(reply.m, "uiiiisbb", &cpu, &e.package, &e.die, &e.core, &e.node,
                                  &sib, &online, &hp),
              "GetTopology entry");
        e.cpu = cpu;
        e.siblings = sib;
        e.online = online != 0;
        e.hotpluggable = hp != 0;
        out.push_back(e);
        check(sd_bus_message_exit_container(reply.m), "GetTopology exit entry");
    }
    check(r, "GetTopology entries");
    return out;
}

int RawClient::on_batch_finished(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* self = static_cast<RawClient*>(userdata);
    BatchFinished b;
    const char *action = nullptr, *strategy = nullptr, *changed = nullptr, *failed = nullptr,
               *cancelled = nullptr;
    int r = sd_bus_message_read(m, "tssssuts", &b.batch_id, &action, &strategy, &changed, &failed,
                                &b.requests, &b.duration_us, &cancelled);
    if (r < 0) {
        b.action = "<unparsable BatchFinished: " + error_text(-r) + ">";
    } else {
        b.action = action;
        b.strategy = strategy;
        b.changed = changed;
        b.failed = failed;
        b.cancelled = cancelled;
    }
    self->batches_.push_back(b);
    return 0;
}

int RawClient::on_batch_progress(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* self = static_cast<RawClient*>(userdata);
    BatchProgress p;
    if (sd_bus_message_read(m, "tuu", &p.batch_id, &p.done, &p.total) >= 0) {
        self->progress_.push_back(p);
    }
    return 0;
}

int RawClient::on_properties_changed(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* self = static_cast<RawClient*>(userdata);
    PropertiesChanged pc;
    const char* iface = nullptr;
    if (sd_bus_message_read(m, "s", &iface) < 0) {
        return 0;
    }
    pc.interface = iface;
    if (read_vardict(m, pc.changed) < 0) {
        pc.interface += " <unparsable>";
    }
    char** inv = nullptr;
    if (sd_bus_message_read_strv(m, &inv) >= 0) {
        for (char** p = inv; p && *p; ++p) {
            pc.invalidated.emplace_back(*p);
            std::free(*p);
        }
        std::free(inv);
    }
    self->property_changes_.push_back(pc);
    return 0;
}

void RawClient::subscribe() {
    if (!batch_slot_) {
        check(sd_bus_match_signal(bus_, &batch_slot_, nullptr, kPath, kInterface, "BatchFinished",
                                  &RawClient::on_batch_finished, this),
              "match BatchFinished");
    }
    if (!progress_slot_) {
        check(sd_bus_match_signal(bus_, &progress_slot_, nullptr, kPath, kInterface,
                                  "BatchProgress", &RawClient::on_batch_progress, this),
              "match BatchProgress");
    }
    if (!violated_slot_) {
        check(sd_bus_match_signal(bus_, &violated_slot_, nullptr, kPath, kInterface, "HoldViolated",
                                  &RawClient::on_hold_violated, this),
              "match HoldViolated");
    }
    if (!props_slot_) {
        check(sd_bus_match_signal(bus_, &props_slot_, nullptr, kPath,
                                  "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                  &RawClient::on_properties_changed, this),
              "match PropertiesChanged");
    }
}

int RawClient::on_hold_violated(sd_bus_message* m, void* userdata, sd_bus_error*) {
    auto* self = static_cast<RawClient*>(userdata);
    HoldViolated v;
    const char *who = nullptr, *holder = nullptr, *cpus = nullptr, *online = nullptr,
               *action = nullptr;
    if (sd_bus_message_read(m,
                            "tsssss"
                            "t",
                            &v.hold_id, &who, &holder, &cpus, &online, &action,
                            &v.violations) < 0) {
        return 0;
    }
    v.who = who;
    v.holder = holder;
    v.cpus = cpus;
    v.online = online;
    v.action = action;
    self->violations_.push_back(v);
    return 0;
}

bool RawClient::wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
        int r;
        while ((r = sd_bus_process(bus_, nullptr)) > 0) {
        }
        check(r, "sd_bus_process");
        if (done()) {
            return true;
        }
        auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            return false;
        }
        r = sd_bus_wait(bus_, static_cast<std::uint64_t>(left.count()));
        if (r < 0 && r != -EINTR) {
            check(r, "sd_bus_wait");
        }
    }
}

void wait_for_owner(const std::string& address, const std::string& name, Child& owner,
                    std::chrono::seconds timeout) {
    RawClient probe(address);
    const auto deadline = Clock::now() + timeout;
    auto step = 2ms;
    for (;;) {
        if (!owner.running()) {
            throw std::runtime_error("the owner of " + name + " exited early (code " +
                                     std::to_string(owner.exit_code()) + "):\n" + owner.out() +
                                     owner.err());
        }
        if (probe.name_has_owner(name)) {
            return;
        }
        if (Clock::now() >= deadline) {
            throw std::runtime_error(name + " had no owner within " +
                                     std::to_string(timeout.count()) + " s:\n" + owner.out() +
                                     owner.err());
        }
        std::this_thread::sleep_for(step);
        step = std::min(step * 2, std::chrono::milliseconds(50));
    }
}

}  // namespace cpuhpd::itest
