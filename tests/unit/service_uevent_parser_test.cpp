// is_cpu_change_uevent: which netlink payloads make the daemon re-read the machine.
#include <gtest/gtest.h>

#include <string>

#include "uevent_monitor.h"

namespace cpuhpd {
namespace {

using namespace std::string_literals;

bool is_cpu_change(const std::string& payload) {
    return is_cpu_change_uevent(reinterpret_cast<const unsigned char*>(payload.data()),
                                payload.size());
}

// As the kernel sends it (lib/kobject_uevent.c): "ACTION@DEVPATH", then KEY=VALUE entries,
// each ended by NUL.
std::string kernel_uevent(const std::string& action, const std::string& devpath,
                          const std::string& subsystem) {
    return action + "@" + devpath + "\0ACTION="s + action + "\0DEVPATH="s + devpath +
           "\0SUBSYSTEM="s + subsystem + "\0SEQNUM=4711\0"s;
}

TEST(ServiceUeventParser, CpuOnlineOfflineAddAndRemoveAreChanges) {
    for (const std::string action : {"online", "offline", "add", "remove"}) {
        EXPECT_TRUE(is_cpu_change(kernel_uevent(action, "/devices/system/cpu/cpu4", "cpu")))
            << action;
    }
}

TEST(ServiceUeventParser, TheRealKernelPayloadOfAnOfflineCpuIsAChange) {
    const std::string payload =
        "offline@/devices/system/cpu/cpu4\0ACTION=offline\0DEVPATH=/devices/system/cpu/cpu4\0"
        "SUBSYSTEM=cpu\0SEQNUM=2394\0"s;
    EXPECT_TRUE(is_cpu_change(payload));
    // Without the final NUL (the length given by the receive) it is the same uevent.
    EXPECT_TRUE(is_cpu_change(payload.substr(0, payload.size() - 1)));
}

TEST(ServiceUeventParser, OtherActionsOfCpusAreNoChange) {
    EXPECT_FALSE(is_cpu_change(kernel_uevent("change", "/devices/system/cpu/cpu4", "cpu")));
    EXPECT_FALSE(is_cpu_change(kernel_uevent("bind", "/devices/system/cpu/cpu4", "cpu")));
}

TEST(ServiceUeventParser, OtherSubsystemsAreNoChange) {
    EXPECT_FALSE(
        is_cpu_change(kernel_uevent("online", "/devices/system/memory/memory8", "memory")));
    EXPECT_FALSE(
        is_cpu_change(kernel_uevent("add", "/devices/system/cpu/cpufreq/policy4", "cpufreq")));
    // The SUBSYSTEM entry decides, not the device path.
    EXPECT_FALSE(is_cpu_change(kernel_uevent("online", "/devices/system/cpu/cpu4", "")));
}

TEST(ServiceUeventParser, EntriesMustMatchWhole) {
    EXPECT_FALSE(
        is_cpu_change("online@/devices/system/cpu/cpu4\0ACTION=online\0XSUBSYSTEM=cpu\0"s));
    EXPECT_FALSE(
        is_cpu_change("online@/devices/system/cpu/cpu4\0ACTION=onlinex\0SUBSYSTEM=cpu\0"s));
    EXPECT_FALSE(
        is_cpu_change("online@/devices/system/cpu/cpu4\0ACTION=online\0SUBSYSTEM=cpux\0"s));
}

TEST(ServiceUeventParser, TheHeaderIsNoEntry) {
    // "ACTION=online" before the first NUL is the header, whatever it says.
    EXPECT_FALSE(is_cpu_change("ACTION=online@x\0SUBSYSTEM=cpu\0"s));
    EXPECT_FALSE(is_cpu_change("SUBSYSTEM=cpu@x\0ACTION=online\0"s));
}

TEST(ServiceUeventParser, LibudevMessagesAreIgnored) {
    // udev's re-sent events: "libudev\0", a binary header, then the same entries.
    const std::string payload =
        "libudev\0\xfe\xed\xca\xfe\x28\0\0\0"s
        "ACTION=online\0DEVPATH=/devices/system/cpu/cpu4\0SUBSYSTEM=cpu\0"s;
    EXPECT_FALSE(is_cpu_change(payload));
}

TEST(ServiceUeventParser, TruncatedPayloadsAreNoChange) {
    const std::string full = kernel_uevent("online", "/devices/system/cpu/cpu4", "cpu");
    EXPECT_FALSE(is_cpu_change(full.substr(0, full.find("SUBSYSTEM="))));
    EXPECT_FALSE(is_cpu_change(full.substr(0, full.find("SUBSYSTEM=") + 12)));  // "SUBSYSTEM=c"
    EXPECT_FALSE(is_cpu_change("online@/devices/system/cpu/cpu4"));             // the header alone
    EXPECT_FALSE(is_cpu_change(""));
}

TEST(ServiceUeventParser, MalformedPayloadsAreNoChange) {
    EXPECT_FALSE(is_cpu_change("\0ACTION=online\0SUBSYSTEM=cpu\0"s));         // no header
    EXPECT_FALSE(is_cpu_change("garbage\0ACTION=online\0SUBSYSTEM=cpu\0"s));  // no '@'
    EXPECT_FALSE(is_cpu_change("\0\0\0\0"s));
    EXPECT_FALSE(is_cpu_change("@\0"s));
}

TEST(ServiceUeventParser, OnlyTheGivenBytesAreRead) {
    const std::string payload = kernel_uevent("online", "/devices/system/cpu/cpu4", "cpu");
    const std::size_t cut = payload.find("SUBSYSTEM=");
    EXPECT_FALSE(is_cpu_change_uevent(reinterpret_cast<const unsigned char*>(payload.data()), cut));
}

}  // namespace
}  // namespace cpuhpd
