// UeventMonitor::open_socket: the --uevent-socket source of a daemon serving a tree other
// than /sys, fed datagrams as the kernel's uevents.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "uevent_monitor.h"

namespace cpuhpd {
namespace {

using namespace std::string_literals;

const std::string kCpuOffline =
    "offline@/devices/system/cpu/cpu4\0ACTION=offline\0DEVPATH=/devices/system/cpu/cpu4\0"
    "SUBSYSTEM=cpu\0SEQNUM=2394\0"s;
const std::string kMemoryOnline =
    "online@/devices/system/memory/memory8\0ACTION=online\0"
    "DEVPATH=/devices/system/memory/memory8\0SUBSYSTEM=memory\0SEQNUM=2395\0"s;

class UeventSocketTest : public testing::Test {
protected:
    void SetUp() override {
        std::string pattern = (std::filesystem::temp_directory_path() / "cpuhpd-uevent-XXXXXX");
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << std::strerror(errno);
        dir = pattern;
        path = dir / "uevents";
    }
    void TearDown() override { std::filesystem::remove_all(dir); }

    std::unique_ptr<UeventMonitor> open() {
        std::string error;
        auto monitor = UeventMonitor::open_socket(path, error);
        EXPECT_NE(monitor, nullptr) << error;
        return monitor;
    }

    // Sends `payload` as one datagram to the monitor's socket.
    void send(const std::string& payload) const {
        const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ASSERT_GE(fd, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
        const ssize_t n = ::sendto(fd, payload.data(), payload.size(), 0,
                                   reinterpret_cast<const sockaddr*>(&address), sizeof(address));
        const int send_errno = errno;
        ::close(fd);
        ASSERT_EQ(n, static_cast<ssize_t>(payload.size())) << std::strerror(send_errno);
    }

    std::filesystem::path dir;
    std::filesystem::path path;
};

TEST_F(UeventSocketTest, TheSocketIsOnlyForItsOwner) {
    const auto monitor = open();
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 077, 0U);  // no access for group and others
    EXPECT_GE(monitor->fd(), 0);
}

TEST_F(UeventSocketTest, NothingQueuedIsNoChange) {
    const auto monitor = open();
    EXPECT_FALSE(monitor->drain());
}

TEST_F(UeventSocketTest, ACpuUeventIsAChangeAndDrainingEmptiesTheQueue) {
    const auto monitor = open();
    send(kCpuOffline);
    EXPECT_TRUE(monitor->drain());
    EXPECT_FALSE(monitor->drain());
}

TEST_F(UeventSocketTest, OtherUeventsAreNoChange) {
    const auto monitor = open();
    send(kMemoryOnline);
    send("garbage");
    EXPECT_FALSE(monitor->drain());
}

TEST_F(UeventSocketTest, OneCpuUeventAmongOthersIsAChange) {
    const auto monitor = open();
    send(kMemoryOnline);
    send(kCpuOffline);
    send(kMemoryOnline);
    EXPECT_TRUE(monitor->drain());
}

TEST_F(UeventSocketTest, AStaleSocketIsReplacedAndTheSocketRemovedAtTheEnd) {
    auto first = open();
    first.reset();
    EXPECT_FALSE(std::filesystem::exists(path));
    // A socket left by a daemon that was killed.
    const int stale = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(stale, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    ASSERT_EQ(::bind(stale, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    ::close(stale);
    auto second = open();
    ASSERT_NE(second, nullptr);
    send(kCpuOffline);
    EXPECT_TRUE(second->drain());
}

TEST_F(UeventSocketTest, AFileThatIsNoSocketIsLeftAndRefused) {
    { std::ofstream(path) << "mine"; }
    std::string error;
    EXPECT_EQ(UeventMonitor::open_socket(path, error), nullptr);
    EXPECT_NE(error.find("cannot bind the uevent socket"), std::string::npos) << error;
    EXPECT_TRUE(std::filesystem::is_regular_file(path));
}

TEST_F(UeventSocketTest, ATooLongPathIsRefused) {
    std::string error;
    EXPECT_EQ(UeventMonitor::open_socket(dir / std::string(200, 'x'), error), nullptr);
    EXPECT_NE(error.find("is too long"), std::string::npos) << error;
}

}  // namespace
}  // namespace cpuhpd
