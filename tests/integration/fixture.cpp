#include "fixture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include "cpulist.h"

namespace cpuhpd::itest {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string line;
    while (std::getline(ss, line)) {
        out.push_back(line);
    }
    return out;
}

}  // namespace

std::map<unsigned, std::string> expected_files(const std::set<unsigned>& offline) {
    std::map<unsigned, std::string> m;
    for (unsigned c = 1; c < kCpus; ++c) {
        m[c] = offline.count(c) ? "0" : "1";
    }
    return m;
}

std::set<unsigned> all_cpus_except(const std::set<unsigned>& out) {
    std::set<unsigned> s;
    for (unsigned c = 0; c < kCpus; ++c) {
        if (!out.count(c)) {
            s.insert(c);
        }
    }
    return s;
}

::testing::AssertionResult parses(const RunResult& r, json& out) {
    try {
        out = json::parse(r.out);
        return ::testing::AssertionSuccess();
    } catch (const std::exception& e) {
        return ::testing::AssertionFailure() << e.what() << "\n" << r.describe();
    }
}

std::map<unsigned, std::string> json_results(const json& j) {
    std::map<unsigned, std::string> m;
    for (const auto& c : j.at("cpus").get<json::array_t>()) {
        m[static_cast<unsigned>(c.at("cpu").get<double>())] = c.at("result").get<std::string>();
    }
    return m;
}

std::map<unsigned, std::string> all_result(const std::set<unsigned>& cpus, const std::string& r) {
    std::map<unsigned, std::string> m;
    for (unsigned c : cpus) {
        m[c] = r;
    }
    return m;
}

std::vector<unsigned> json_order(const json& j) {
    std::vector<unsigned> v;
    for (const auto& c : j.at("order").get<json::array_t>()) {
        v.push_back(static_cast<unsigned>(c.get<double>()));
    }
    return v;
}

std::set<unsigned> cpus_in(const std::string& cpulist) {
    const std::vector<unsigned> members = parse_cpulist(cpulist).members();
    return {members.begin(), members.end()};
}

std::size_t position(const std::vector<unsigned>& order, unsigned cpu) {
    return static_cast<std::size_t>(std::find(order.begin(), order.end(), cpu) - order.begin());
}

bool any_line_matches(const std::string& text, const std::string& pattern) {
    std::regex re(pattern);
    for (const auto& l : lines_of(text)) {
        if (std::regex_search(l, re)) {
            return true;
        }
    }
    return false;
}

bool eventually(const std::function<bool()>& done, std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    auto step = 2ms;
    while (!done()) {
        if (Clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(step);
        step = std::min(step * 2, std::chrono::milliseconds(50));
    }
    return true;
}

bool log_shows(World& world, const std::string& text, std::chrono::seconds timeout) {
    return eventually([&] { return world.daemon_log().find(text) != std::string::npos; }, timeout);
}

bool owner_gone(RawClient& client, const std::string& name, std::chrono::seconds timeout) {
    return eventually([&] { return !client.name_has_owner(name); }, timeout);
}

std::string many_regions(std::size_t regions, std::size_t bytes) {
    std::string mask;
    for (std::size_t i = 0; i < regions; ++i) {
        mask += i == 0 ? "1-13" : ",1-13";
    }
    if (mask.size() < bytes) {
        mask.append(bytes - mask.size(), ' ');
    }
    return mask;
}

std::chrono::microseconds worst_online_latency(RawClient& client, int reads,
                                               const std::string& expected) {
    std::chrono::microseconds worst{0};
    for (int i = 0; i < reads; ++i) {
        const auto start = Clock::now();
        EXPECT_EQ(client.get_string("Online"), expected);
        worst = std::max(
            worst, std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start));
    }
    return worst;
}

Resume::~Resume() {
    ::kill(pid, SIGCONT);
}

void CpuhpdTest::SetUp() {
    world_ = std::make_unique<World>();
    prepare_tree(world_->tree());
    world_->start_bus(project_policy());
    try {
        world_->start_daemon(config());
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    client_ = std::make_unique<RawClient>(world_->bus_address());
}

void CpuhpdTest::TearDown() {
    client_.reset();
    if (world_ && HasFailure()) {
        std::cerr << "---- cpuhpd stderr ----\n" << world_->daemon_log() << "----\n";
    }
    world_.reset();
}

void CpuhpdTest::kill_daemon() {
    client_.reset();
    ASSERT_EQ(::kill(world_->daemon().pid(), SIGKILL), 0);
    ASSERT_TRUE(world_->daemon().wait_until(Clock::now() + 10s));
}

void CpuhpdTest::restart_daemon() {
    ASSERT_NO_THROW(world_->start_daemon(config()));
    client_ = std::make_unique<RawClient>(world_->bus_address());
}

HangingRead::HangingRead(const std::filesystem::path& fifo) {
    writer_ = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    inotify_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (inotify_ >= 0 && inotify_add_watch(inotify_, fifo.c_str(), IN_OPEN) < 0) {
        ::close(inotify_);
        inotify_ = -1;
    }
}

HangingRead::~HangingRead() {
    if (writer_ >= 0) {
        ::close(writer_);
    }
    if (inotify_ >= 0) {
        ::close(inotify_);
    }
}

bool HangingRead::wait_for_reader(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    bool opened = false;
    while (!opened && Clock::now() < deadline) {
        pollfd p{inotify_, POLLIN, 0};
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 1))) <= 0) {
            continue;
        }
        drain_inotify(inotify_,
                      [&](const inotify_event& ev) { opened |= (ev.mask & IN_OPEN) != 0; });
    }
    return opened;
}

void HangingRead::release(const std::string& value) {
    if (writer_ < 0) {
        return;
    }
    if (::write(writer_, value.data(), value.size()) < 0) {
        ADD_FAILURE() << "HangingRead: write: " << std::strerror(errno);
    }
    ::close(writer_);
    writer_ = -1;
}

DaemonConfig PinnedBatchTest::config() const {
    DaemonConfig c;
    c.min_online = 1;  // all 15 APs may go
    c.coalesce_ms = 0;
    c.extra_yaml = extra_yaml();
    c.uevent_socket = true;
    return c;
}

std::vector<unsigned> PinnedBatchTest::planned_order(const std::string& method,
                                                     const std::string& mask) {
    const CallResult r = client_->call(method, mask, {{"dry_run", true}});
    EXPECT_TRUE(r.ok) << r.describe();
    const auto order = r.order();
    return {order.begin(), order.end()};
}

void PinnedBatchTest::block_writes_to(unsigned cpu) {
    const std::filesystem::path file = tree().online_file(cpu);
    std::filesystem::remove(file);
    ASSERT_EQ(::mkfifo(file.c_str(), 0644), 0) << file << ": " << std::strerror(errno);
}

void PinnedBatchTest::unblock(unsigned cpu, const std::string& value) {
    const std::filesystem::path file = tree().online_file(cpu);
    std::filesystem::remove(file);
    std::ofstream(file) << value << "\n";
}

bool PinnedBatchTest::files_show(const std::set<unsigned>& cpus, const std::string& value) {
    return eventually(
        [&] {
            const auto files = tree().online_files();
            return std::all_of(cpus.begin(), cpus.end(), [&](unsigned c) {
                const auto it = files.find(c);
                return it != files.end() && it->second == value;
            });
        },
        10s);
}

int drain_after_write(const std::filesystem::path& fifo) {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    // POLLIN: the value is there (one write(2) of one byte); POLLHUP: the writer closed.
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) {
        ::close(fd);
        return -1;
    }
    char buf[16];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
    return fd;
}

}  // namespace cpuhpd::itest
