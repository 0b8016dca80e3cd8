// to_dbus_error / error_name: what a client sees when the engine or a handler throws.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <exception>
#include <stdexcept>
#include <string>

#include "cpulist.h"
#include "dbus_error.h"
#include "option_dictionary.h"
#include "request.h"

namespace cpuhpd {
namespace {

template <typename Exception>
sdbus::Error mapped(const Exception& thrown) {
    return to_dbus_error("Offline", std::make_exception_ptr(thrown));
}

TEST(ServiceDbusError, EachRefusalKindHasItsDocumentedName) {
    EXPECT_EQ(error_name(RefusalKind::InvalidMask), "org.cpuhpd1.Error.InvalidMask");
    EXPECT_EQ(error_name(RefusalKind::ProtectedCpu), "org.cpuhpd1.Error.ProtectedCpu");
    EXPECT_EQ(error_name(RefusalKind::NotHotpluggable), "org.cpuhpd1.Error.NotHotpluggable");
    EXPECT_EQ(error_name(RefusalKind::TooFewOnline), "org.cpuhpd1.Error.TooFewOnline");
    EXPECT_EQ(error_name(RefusalKind::NotSupported), "org.cpuhpd1.Error.NotSupported");
    EXPECT_EQ(error_name(RefusalKind::Busy), "org.cpuhpd1.Error.Busy");
    EXPECT_EQ(error_name(RefusalKind::KernelError), "org.cpuhpd1.Error.KernelError");
}

TEST(ServiceDbusError, ARefusalKeepsItsKindAndMessage) {
    const sdbus::Error error = mapped(Refusal(RefusalKind::ProtectedCpu, "cpu 0 is protected"));
    EXPECT_EQ(error.getName(), "org.cpuhpd1.Error.ProtectedCpu");
    EXPECT_EQ(error.getMessage(), "cpu 0 is protected");
}

TEST(ServiceDbusError, AMaskErrorPointsAtTheTokenAndItsPosition) {
    const sdbus::Error error = mapped(MaskError("not a number", "4-x", 3));
    EXPECT_EQ(error.getName(), "org.cpuhpd1.Error.InvalidMask");
    EXPECT_EQ(error.getMessage(), "invalid mask '4-x' at position 3: not a number");
}

TEST(ServiceDbusError, AnOptionErrorIsInvalidArgs) {
    const sdbus::Error error = mapped(OptionError("unknown option 'x'"));
    EXPECT_EQ(error.getName(), "org.freedesktop.DBus.Error.InvalidArgs");
    EXPECT_EQ(error.getMessage(), "unknown option 'x'");
}

TEST(ServiceDbusError, AnSdbusErrorKeepsItsNameWithItsMessageMadeSendable) {
    const sdbus::Error error =
        mapped(sdbus::Error("org.freedesktop.DBus.Error.AccessDenied", "caf\xc3\xa9\x1b"));
    EXPECT_EQ(error.getName(), "org.freedesktop.DBus.Error.AccessDenied");
    EXPECT_EQ(error.getMessage(), "caf\\xc3\\xa9\\x1b");
}

TEST(ServiceDbusError, AnUnexpectedExceptionIsFailedAndLogged) {
    testing::internal::CaptureStderr();
    const sdbus::Error error = mapped(std::runtime_error("disk on fire"));
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(error.getName(), "org.freedesktop.DBus.Error.Failed");
    EXPECT_EQ(error.getMessage(), "disk on fire");
    EXPECT_THAT(log, testing::HasSubstr("Offline failed: disk on fire"));
}

TEST(ServiceDbusError, SomethingThatIsNoExceptionIsAnInternalError) {
    testing::internal::CaptureStderr();
    const sdbus::Error error = to_dbus_error("SetSmt", std::make_exception_ptr(42));
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(error.getName(), "org.freedesktop.DBus.Error.Failed");
    EXPECT_EQ(error.getMessage(), "internal error");
    EXPECT_THAT(log, testing::HasSubstr("SetSmt failed with an unknown exception"));
}

TEST(ServiceDbusError, LongMessagesAreCutAndMarked) {
    const std::string message(5000, 'm');
    const sdbus::Error error = mapped(Refusal(RefusalKind::KernelError, message));
    EXPECT_EQ(error.getMessage(), std::string(4096, 'm') + "...(5000 bytes)");
}

}  // namespace
}  // namespace cpuhpd
