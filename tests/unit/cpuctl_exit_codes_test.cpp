#include <gtest/gtest.h>

#include "exit_codes.h"

namespace cpuctl {
namespace {

TEST(CpuctlExitCodes, FromOutcome) {
    EXPECT_EQ(exit_code_for_outcome("ok"), 0);
    EXPECT_EQ(exit_code_for_outcome("partial"), 64);
    EXPECT_EQ(exit_code_for_outcome("failed"), 1);
    EXPECT_EQ(exit_code_for_outcome(""), 1);
    EXPECT_EQ(exit_code_for_outcome("something-new"), 1);
}

TEST(CpuctlExitCodes, RefusalsOfTheInputAreUsageErrors) {
    for (const char* name : {"org.cpuhpd1.Error.InvalidMask", "org.cpuhpd1.Error.ProtectedCpu",
                             "org.cpuhpd1.Error.NotHotpluggable", "org.cpuhpd1.Error.TooFewOnline",
                             "org.cpuhpd1.Error.NotSupported", "org.cpuhpd1.Error.NoSuchBatch",
                             "org.cpuhpd1.Error.NoSuchHold", "org.cpuhpd1.Error.NoSuchProfile",
                             "org.freedesktop.DBus.Error.InvalidArgs", "cpuctl.Error.Usage"}) {
        EXPECT_EQ(exit_code_for_error(name), 2) << name;
    }
}

TEST(CpuctlExitCodes, OtherErrorsAreFailures) {
    // Busy, Held and Pinned (refuse_pinned, a task would lose every CPU): the machine's
    // state, not the input, refused the request.
    for (const char* name :
         {"org.cpuhpd1.Error.Busy", "org.cpuhpd1.Error.Held", "org.cpuhpd1.Error.Pinned",
          "org.cpuhpd1.Error.KernelError", "org.freedesktop.DBus.Error.AccessDenied",
          "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NoReply",
          "org.freedesktop.DBus.Error.NoServer", ""}) {
        EXPECT_EQ(exit_code_for_error(name), 1) << name;
    }
}

}  // namespace
}  // namespace cpuctl
