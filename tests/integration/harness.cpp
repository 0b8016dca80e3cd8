#include "harness.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace cpuhpd::itest {

namespace fs = std::filesystem;

#ifndef CPUHPD_BIN
#error "CPUHPD_BIN must be defined"
#endif
#ifndef CPUCTL_BIN
#error "CPUCTL_BIN must be defined"
#endif
#ifndef CPUHPD_SOURCE_DIR
#error "CPUHPD_SOURCE_DIR must be defined"
#endif

namespace {

constexpr const char* kBusName = "org.cpuhpd1";
constexpr const char* kPath = "/org/cpuhpd1";
constexpr const char* kInterface = "org.cpuhpd1.Manager";

std::string slurp(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void spit(const fs::path& file, const std::string& text) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
        throw std::runtime_error("cannot write " + file.string());
    }
}

std::string errstr(int err) {
    return std::string(std::strerror(err));
}

}  // namespace

// ---------------------------------------------------------------- cpulists

std::string to_cpulist(const std::set<unsigned>& cpus) {
    std::string out;
    auto it = cpus.begin();
    while (it != cpus.end()) {
        unsigned first = *it, last = *it;
        auto next = std::next(it);
        while (next != cpus.end() && *next == last + 1) {
            last = *next;
            ++next;
        }
        if (!out.empty()) {
            out += ',';
        }
        out += std::to_string(first);
        if (last != first) {
            out += '-' + std::to_string(last);
        }
        it = next;
    }
    return out;
}

std::set<unsigned> parse_cpulist(const std::string& text) {
    std::set<unsigned> out;
    std::string t = text;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) {
        t.pop_back();
    }
    if (t.empty()) {
        return out;
    }
    std::stringstream ss(t);
    std::string part;
    while (std::getline(ss, part, ',')) {
        auto dash = part.find('-');
        try {
            std::size_t used = 0;
            if (dash == std::string::npos) {
                unsigned v = static_cast<unsigned>(std::stoul(part, &used));
                if (used != part.size()) {
                    throw std::invalid_argument(part);
                }
                out.insert(v);
            } else {
                unsigned a = static_cast<unsigned>(std::stoul(part.substr(0, dash)));
                unsigned b = static_cast<unsigned>(std::stoul(part.substr(dash + 1), &used));
                if (used != part.size() - dash - 1 || b < a) {
                    throw std::invalid_argument(part);
                }
                for (unsigned c = a; c <= b; ++c) {
                    out.insert(c);
                }
            }
        } catch (const std::exception&) {
            throw std::invalid_argument("not a cpulist: '" + text + "'");
        }
    }
    return out;
}

// ---------------------------------------------------------------- TempDir

int set_immutable(const fs::path& file, bool on) {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return errno;
    }
    int flags = 0;
    int rc = 0;
    if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) {
        rc = errno;
    } else {
        flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
        if (::ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0) {
            rc = errno;
        }
    }
    ::close(fd);
    return rc;
}

TempDir::TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/cpuhpd-itest.XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) {
        throw std::runtime_error("mkdtemp: " + errstr(errno));
    }
    path_ = buf.data();
    // The access-control test connects as nobody: the bus socket must be reachable.
    fs::permissions(path_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
}

TempDir::~TempDir() {
    std::error_code ec;
    if (std::getenv("CPUHPD_ITEST_KEEP")) {
        return;
    }
    fs::remove_all(path_, ec);
}

// ---------------------------------------------------------------- FakeTree

FakeTree::FakeTree(fs::path root) : root_(std::move(root)) {
    std::set<unsigned> all;
    for (unsigned c = 0; c < kCpus; ++c) {
        all.insert(c);
    }
    fs::path cpu = cpu_dir();
    fs::create_directories(cpu);
    auto ro = [](const fs::path& p) {
        // As in the kernel: the summary files are read-only (no companion patch here).
        fs::permissions(p, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    };
    for (const char* f : {"possible", "present", "online"}) {
        spit(cpu / f, to_cpulist(all) + "\n");
        ro(cpu / f);
    }
    spit(cpu / "offline", "\n");
    ro(cpu / "offline");
    spit(cpu / "kernel_max", "8191\n");
    ro(cpu / "kernel_max");
    fs::create_directories(cpu / "smt");
    spit(cpu / "smt/control", "on\n");
    spit(cpu / "smt/active", "1\n");
    for (unsigned c = 0; c < kCpus; ++c) {
        fs::path d = cpu / ("cpu" + std::to_string(c));
        fs::create_directories(d / "topology");
        if (c != 0) {
            spit(d / "online", "1\n");
        }
        std::string siblings = to_cpulist({c, sibling_of(c)});
        spit(d / "topology/physical_package_id", std::to_string(package_of(c)) + "\n");
        spit(d / "topology/die_id", "0\n");
        spit(d / "topology/core_id", std::to_string(core_of(c)) + "\n");
        spit(d / "topology/thread_siblings_list", siblings + "\n");
        spit(d / "topology/core_cpus_list", siblings + "\n");
        spit(d / "topology/core_siblings_list", to_cpulist([&] {
                                                    std::set<unsigned> s;
                                                    for (unsigned o = 0; o < kCpus; ++o) {
                                                        if (package_of(o) == package_of(c)) {
                                                            s.insert(o);
                                                        }
                                                    }
                                                    return s;
                                                }()) +
                                                    "\n");
    }
    for (unsigned n = 0; n < 2; ++n) {
        std::set<unsigned> cpus;
        for (unsigned c = 0; c < kCpus; ++c) {
            if (package_of(c) == n) {
                cpus.insert(c);
            }
        }
        fs::path d = root_ / "devices/system/node" / ("node" + std::to_string(n));
        fs::create_directories(d);
        spit(d / "cpulist", to_cpulist(cpus) + "\n");
    }
    spit(root_ / "devices/system/node/online", "0-1\n");
    spit(root_ / "devices/system/node/possible", "0-1\n");
    fs::create_directories(root_ / "kernel");
    spit(root_ / "kernel/rcu_expedited", "0\n");
}

FakeTree::~FakeTree() {
    for (const auto& p : immutable_) {
        set_immutable(p, false);
    }
}

fs::path FakeTree::online_file(unsigned cpu) const {
    return cpu_dir() / ("cpu" + std::to_string(cpu)) / "online";
}

std::string FakeTree::read(const std::string& relative) const {
    fs::path p = root_ / relative;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
        return "<absent>";
    }
    std::string s = slurp(p);
    if (!s.empty() && s.back() == '\n') {
        s.pop_back();
    }
    return s;
}

void FakeTree::write(const std::string& relative, const std::string& value) {
    spit(root_ / relative, value + "\n");
}

std::map<unsigned, std::string> FakeTree::online_files() const {
    std::map<unsigned, std::string> out;
    for (unsigned c = 1; c < kCpus; ++c) {
        out[c] = read("devices/system/cpu/cpu" + std::to_string(c) + "/online");
    }
    return out;
}

int FakeTree::make_unwritable(unsigned cpu) {
    int rc = set_immutable(online_file(cpu), true);
    if (rc == 0) {
        immutable_.push_back(online_file(cpu));
    }
    return rc;
}

// ---------------------------------------------------------------- Child

Child::~Child() {
    if (pid_ > 0 && !exited_) {
        ::kill(pid_, SIGKILL);
        int st = 0;
        ::waitpid(pid_, &st, 0);
    }
}

void Child::start(const std::vector<std::string>& argv,
                  const std::map<std::string, std::optional<std::string>>& env,
                  const fs::path& out_file, const fs::path& err_file, int pass_fd) {
    out_file_ = out_file;
    err_file_ = err_file;
    std::map<std::string, std::string> envmap;
    for (char** e = environ; e && *e; ++e) {
        std::string kv(*e);
        auto eq = kv.find('=');
        if (eq != std::string::npos) {
            envmap[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
    }
    for (const auto& [k, v] : env) {
        if (v) {
            envmap[k] = *v;
        } else {
            envmap.erase(k);
        }
    }
    std::vector<std::string> envstr;
    for (const auto& [k, v] : envmap) {
        envstr.push_back(k + "=" + v);
    }
    std::vector<char*> envp;
    for (auto& s : envstr) {
        envp.push_back(s.data());
    }
    envp.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> argp;
    for (auto& s : args) {
        argp.push_back(s.data());
    }
    argp.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (pass_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, pass_fd, 3);
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Own process group, default signal dispositions and an empty mask.
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, argp[0], &fa, &attr, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        throw std::runtime_error("posix_spawn " + argv[0] + ": " + errstr(rc));
    }
    pid_ = pid;
    exited_ = false;
}

bool Child::running() {
    if (pid_ <= 0 || exited_) {
        return false;
    }
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
        exited_ = true;
        status_ = st;
        return false;
    }
    return true;
}

bool Child::wait_until(Clock::time_point deadline) {
    auto step = 1ms;
    while (running()) {
        if (Clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(step);
        step = std::min(step * 2, std::chrono::milliseconds(20));
    }
    return true;
}

void Child::stop(std::chrono::milliseconds grace) {
    if (!running()) {
        return;
    }
    ::kill(pid_, SIGTERM);
    if (!wait_until(Clock::now() + grace)) {
        ::kill(pid_, SIGKILL);
        int st = 0;
        ::waitpid(pid_, &st, 0);
        exited_ = true;
        status_ = st;
    }
}

int Child::exit_code() const {
    if (!exited_) {
        return -1;
    }
    if (WIFEXITED(status_)) {
        return WEXITSTATUS(status_);
    }
    if (WIFSIGNALED(status_)) {
        return 128 + WTERMSIG(status_);
    }
    return -1;
}

std::string Child::out() const {
    return slurp(out_file_);
}
std::string Child::err() const {
    return slurp(err_file_);
}

std::string RunResult::describe() const {
    return "exit code " + std::to_string(exit_code) + "\n--- stdout ---\n" + out +
           "\n--- stderr ---\n" + err;
}

// ---------------------------------------------------------------- CallResult

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

// ---------------------------------------------------------------- RawClient

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
        throw std::runtime_error(std::string(what) + ": " + errstr(-r));
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

CallResult RawClient::call_with_entries(const std::string& method, const std::string& arg,
                                        const std::vector<std::pair<std::string, Option>>& options,
                                        std::chrono::seconds timeout) {
    MessageRef msg;
    check(sd_bus_message_new_method_call(bus_, &msg.m, kBusName, kPath, kInterface, method.c_str()),
          "new_method_call");
    check(sd_bus_message_append(msg.m, "s", arg.c_str()), "append mask");
    check(sd_bus_message_open_container(msg.m, 'a', "{sv}"), "open a{sv}");
    for (const auto& [key, value] : options) {
        check(sd_bus_message_open_container(msg.m, 'e', "sv"), "open e");
        check(sd_bus_message_append(msg.m, "s", key.c_str()), "append key");
        if (auto* s = std::get_if<std::string>(&value)) {
            check(sd_bus_message_append(msg.m, "v", "s", s->c_str()), "append v");
        } else if (auto* b = std::get_if<bool>(&value)) {
            check(sd_bus_message_append(msg.m, "v", "b", static_cast<int>(*b)), "append v");
        } else if (auto* u = std::get_if<std::uint32_t>(&value)) {
            check(sd_bus_message_append(msg.m, "v", "u", *u), "append v");
        }
        check(sd_bus_message_close_container(msg.m), "close e");
    }
    check(sd_bus_message_close_container(msg.m), "close a");

    CallResult out;
    BusError err;
    MessageRef reply;
    auto usec = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(timeout).count());
    int r = sd_bus_call(bus_, msg.m, usec, &err.e, &reply.m);
    if (r < 0) {
        out.ok = false;
        out.error_name = err.e.name ? err.e.name : ("errno:" + errstr(-r));
        out.error_message = err.e.message ? err.e.message : "";
        return out;
    }
    out.ok = true;
    check(sd_bus_message_enter_container(reply.m, 'a', "(ussis)"), "reply: results");
    while ((r = sd_bus_message_enter_container(reply.m, 'r', "ussis")) > 0) {
        CpuResult c;
        const char *res = nullptr, *ename = nullptr, *text = nullptr;
        std::uint32_t cpu = 0;
        std::int32_t ev = 0;
        check(sd_bus_message_read(reply.m, "ussis", &cpu, &res, &ename, &ev, &text),
              "reply: result entry");
        c.cpu = cpu;
        c.result = res;
        c.error = ename;
        c.errno_value = ev;
        c.message = text;
        out.results.push_back(c);
        check(sd_bus_message_exit_container(reply.m), "reply: exit entry");
    }
    check(r, "reply: results entries");
    check(sd_bus_message_exit_container(reply.m), "reply: exit results");
    check(read_vardict(reply.m, out.summary), "reply: summary");
    return out;
}

std::string RawClient::get_string(const std::string& property) {
    BusError err;
    char* value = nullptr;
    int r = sd_bus_get_property_string(bus_, kBusName, kPath, kInterface, property.c_str(), &err.e,
                                       &value);
    if (r < 0) {
        throw std::runtime_error("Get " + property + ": " +
                                 (err.e.name ? std::string(err.e.name) : errstr(-r)));
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
                                 (err.e.name ? std::string(err.e.name) : errstr(-r)));
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
                                 (err.e.name ? std::string(err.e.name) : errstr(-r)));
    }
    return value != 0;
}

std::vector<RawClient::TopologyEntry> RawClient::get_topology() {
    BusError err;
    MessageRef reply;
    int r =
        sd_bus_call_method(bus_, kBusName, kPath, kInterface, "GetTopology", &err.e, &reply.m, "");
    if (r < 0) {
        throw std::runtime_error("GetTopology: " +
                                 (err.e.name ? std::string(err.e.name) : errstr(-r)));
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
    const char *action = nullptr, *strategy = nullptr, *changed = nullptr, *failed = nullptr;
    int r = sd_bus_message_read(m, "tssssut", &b.batch_id, &action, &strategy, &changed, &failed,
                                &b.requests, &b.duration_us);
    if (r < 0) {
        b.action = "<unparsable BatchFinished: " + errstr(-r) + ">";
    } else {
        b.action = action;
        b.strategy = strategy;
        b.changed = changed;
        b.failed = failed;
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
    if (!props_slot_) {
        check(sd_bus_match_signal(bus_, &props_slot_, nullptr, kPath,
                                  "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                  &RawClient::on_properties_changed, this),
              "match PropertiesChanged");
    }
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

// ---------------------------------------------------------------- World

World::World() : tree_(tmp_.path() / "sys") {
    fs::create_directories(tmp_.path() / "state");
}

World::~World() {
    daemon_.stop();
    bus_.stop();
}

std::map<std::string, std::optional<std::string>> World::guard_env() const {
    std::string nowhere = "unix:path=" + (tmp_.path() / "no-such-bus").string();
    return {{"DBUS_SYSTEM_BUS_ADDRESS", nowhere},   {"DBUS_SESSION_BUS_ADDRESS", nowhere},
            {"DBUS_STARTER_ADDRESS", std::nullopt}, {"NOTIFY_SOCKET", std::nullopt},
            {"WATCHDOG_USEC", std::nullopt},        {"WATCHDOG_PID", std::nullopt}};
}

void World::start_bus(bool project_policy, const std::string& extra_config) {
    fs::path conf = tmp_.path() / "bus.conf";
    fs::path sock = tmp_.path() / "bus";
    std::string policy;
    if (project_policy) {
        // Like Debian's /usr/share/dbus-1/system.conf: method calls are denied unless a
        // policy allows them; then the project's own file.
        policy =
            "  <policy context=\"default\">\n"
            "    <allow user=\"*\"/>\n"
            "    <deny own=\"*\"/>\n"
            "    <deny send_type=\"method_call\"/>\n"
            "    <allow send_type=\"signal\"/>\n"
            "    <allow send_requested_reply=\"true\" send_type=\"method_return\"/>\n"
            "    <allow send_requested_reply=\"true\" send_type=\"error\"/>\n"
            "    <allow receive_type=\"method_call\"/>\n"
            "    <allow receive_type=\"method_return\"/>\n"
            "    <allow receive_type=\"error\"/>\n"
            "    <allow receive_type=\"signal\"/>\n"
            "    <allow send_destination=\"org.freedesktop.DBus\"\n"
            "           send_interface=\"org.freedesktop.DBus\"/>\n"
            "    <allow send_destination=\"org.freedesktop.DBus\"\n"
            "           send_interface=\"org.freedesktop.DBus.Introspectable\"/>\n"
            "    <allow send_destination=\"org.freedesktop.DBus\"\n"
            "           send_interface=\"org.freedesktop.DBus.Properties\"/>\n"
            "  </policy>\n"
            "  <include>" CPUHPD_SOURCE_DIR "/dbus/org.cpuhpd1.conf</include>\n";
    } else {
        policy =
            "  <policy context=\"default\">\n"
            "    <allow user=\"*\"/>\n"
            "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
            "    <allow eavesdrop=\"true\"/>\n"
            "    <allow own=\"*\"/>\n"
            "  </policy>\n";
    }
    spit(conf,
         "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
         " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
         "<busconfig>\n"
         "  <type>system</type>\n"
         "  <listen>unix:path=" +
             sock.string() +
             "</listen>\n"
             "  <auth>EXTERNAL</auth>\n" +
             policy + extra_config + "</busconfig>\n");
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
        throw std::runtime_error("pipe2: " + errstr(errno));
    }
    // Keep both ends above 3 so that dup2(w, 3) in the child is a real dup.
    int r_end = ::fcntl(p[0], F_DUPFD_CLOEXEC, 10);
    int w_end = ::fcntl(p[1], F_DUPFD_CLOEXEC, 10);
    ::close(p[0]);
    ::close(p[1]);
    try {
        bus_.start({"/usr/bin/dbus-daemon", "--config-file=" + conf.string(), "--nofork",
                    "--print-address=3"},
                   guard_env(), tmp_.path() / "dbus-daemon.out", tmp_.path() / "dbus-daemon.err",
                   w_end);
    } catch (...) {
        ::close(r_end);
        ::close(w_end);
        throw;
    }
    ::close(w_end);
    std::string line;
    auto deadline = Clock::now() + 10s;
    while (line.find('\n') == std::string::npos) {
        auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            ::close(r_end);
            throw std::runtime_error("dbus-daemon printed no address within 10 s: " + bus_.err());
        }
        pollfd pfd{r_end, POLLIN, 0};
        int pr = ::poll(&pfd, 1, static_cast<int>(left));
        if (pr < 0 && errno == EINTR) {
            continue;
        }
        if (pr <= 0) {
            continue;
        }
        char buf[512];
        ssize_t n = ::read(r_end, buf, sizeof buf);
        if (n <= 0) {
            ::close(r_end);
            throw std::runtime_error("dbus-daemon closed its address pipe: " + bus_.err());
        }
        line.append(buf, static_cast<std::size_t>(n));
    }
    ::close(r_end);
    address_ = line.substr(0, line.find('\n'));
}

void World::start_daemon(const DaemonConfig& config) {
    fs::path conf = tmp_.path() / "cpuhpd.yaml";
    spit(conf, "protected_cpus: \"" + config.protected_cpus +
                   "\"\n"
                   "min_online: " +
                   std::to_string(config.min_online) +
                   "\n"
                   "coalesce_ms: " +
                   std::to_string(config.coalesce_ms) + "\n" + config.extra_yaml);
    std::vector<std::string> argv{CPUHPD_BIN,
                                  "--bus",
                                  address_,
                                  "--sysfs-root",
                                  tree_.root(),
                                  "--state-dir",
                                  tmp_.path() / "state",
                                  "--config",
                                  conf.string(),
                                  "--log-level",
                                  config.log_level};
    if (config.uevent_socket) {
        argv.push_back("--uevent-socket");
        argv.push_back(uevent_socket_path());
    }
    daemon_.start(argv, guard_env(), tmp_.path() / "cpuhpd.out", tmp_.path() / "cpuhpd.err");
    RawClient probe(address_);
    auto deadline = Clock::now() + 15s;
    auto step = 2ms;
    for (;;) {
        if (!daemon_.running()) {
            throw std::runtime_error("cpuhpd exited early (code " +
                                     std::to_string(daemon_.exit_code()) + "):\n" + daemon_.err());
        }
        if (probe.name_has_owner(kBusName)) {
            return;
        }
        if (Clock::now() >= deadline) {
            throw std::runtime_error("cpuhpd did not own org.cpuhpd1 within 15 s:\n" +
                                     daemon_.err());
        }
        std::this_thread::sleep_for(step);
        step = std::min(step * 2, std::chrono::milliseconds(50));
    }
}

void World::stop_daemon() {
    daemon_.stop();
}

std::string World::uevent_socket_path() const {
    return (tmp_.path() / "uevents.sock").string();
}

void World::send_uevent(const std::string& action, unsigned cpu) {
    const std::string devpath = "/devices/system/cpu/cpu" + std::to_string(cpu);
    std::string payload = action + "@" + devpath;
    for (const std::string& entry :
         {"ACTION=" + action, "DEVPATH=" + devpath, std::string("SUBSYSTEM=cpu"),
          std::string("SEQNUM=") + std::to_string(++uevents_sent_)}) {
        payload += '\0';
        payload += entry;
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = uevent_socket_path();
    std::memcpy(address.sun_path, path.c_str(),
                std::min(path.size(), sizeof(address.sun_path) - 1));
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    check(fd >= 0 ? 0 : -errno, "socket for a uevent");
    const std::string what = "send a uevent to " + path;
    const ssize_t n = ::sendto(fd, payload.data(), payload.size(), 0,
                               reinterpret_cast<const sockaddr*>(&address), sizeof(address));
    const int error = errno;
    ::close(fd);
    check(n == static_cast<ssize_t>(payload.size()) ? 0 : -error, what.c_str());
}

RunResult World::cpuctl(const std::vector<std::string>& args, bool with_address,
                        const std::map<std::string, std::optional<std::string>>& env,
                        std::chrono::seconds timeout) {
    std::vector<std::string> argv{CPUCTL_BIN};
    if (with_address) {
        argv.push_back("--bus-address");
        argv.push_back(address_);
    }
    argv.insert(argv.end(), args.begin(), args.end());
    auto e = guard_env();
    for (const auto& [k, v] : env) {
        e[k] = v;
    }
    unsigned n = ++runs_;
    Child c;
    c.start(argv, e, tmp_.path() / ("cpuctl." + std::to_string(n) + ".out"),
            tmp_.path() / ("cpuctl." + std::to_string(n) + ".err"));
    RunResult rr;
    if (!c.wait_until(Clock::now() + timeout)) {
        c.stop(100ms);
        rr.exit_code = -1;
    } else {
        rr.exit_code = c.exit_code();
    }
    rr.out = c.out();
    rr.err = c.err();
    return rr;
}

std::unique_ptr<Child> World::spawn_cpuctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{CPUCTL_BIN, "--bus-address", address_};
    argv.insert(argv.end(), args.begin(), args.end());
    unsigned n = ++runs_;
    auto c = std::make_unique<Child>();
    c->start(argv, guard_env(), tmp_.path() / ("cpuctl." + std::to_string(n) + ".out"),
             tmp_.path() / ("cpuctl." + std::to_string(n) + ".err"));
    return c;
}

}  // namespace cpuhpd::itest
