// Authorization through a real polkitd on the test's private bus: the daemon asks polkit
// (CheckAuthorization) about every caller that is not root, with the project's actions
// (dbus/org.cpuhpd1.policy) and a rules file that grants one group.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "fixture.h"
#include "harness/in_child.h"
#include "harness/polkit_agent.h"
#include "harness/polkitd.h"

namespace cpuhpd::itest {
namespace {

constexpr const char* kInteractiveAuthorizationRequired =
    "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired";

// Members of group "daemon" (uid 1) may do every cpuhpd action. nobody would have to
// authenticate for CPU 5 (the rule reads the "mask" detail the daemon passes). Everyone else
// gets the actions' defaults, which refuse a caller outside an active local session.
constexpr const char* kRules = R"(polkit.addRule(function(action, subject) {
    if (action.id.indexOf("org.cpuhpd1.") != 0)
        return polkit.Result.NOT_HANDLED;
    if (subject.isInGroup("daemon"))
        return polkit.Result.YES;
    if (subject.user == "nobody" && action.lookup("mask") == "5")
        return polkit.Result.AUTH_ADMIN;
    return polkit.Result.NOT_HANDLED;
});
)";

std::string outcome(const CallResult& r) {
    return r.ok ? std::string("ok") : r.error_name;
}

class PolkitTest : public CpuhpdTest {
protected:
    void SetUp() override {
        CpuhpdTest::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        if (const std::string why = Polkitd::unavailable_reason(); !why.empty()) {
            GTEST_SKIP() << why;
        }
        try {
            polkitd_.start(world_->dir(), world_->bus_address(), kRules);
        } catch (const std::exception& e) {
            FAIL() << e.what();
        }
    }
    void TearDown() override {
        if (HasFailure()) {
            std::cerr << "---- polkitd ----\n" << polkitd_.log() << "----\n";
        }
        polkitd_.stop();
        CpuhpdTest::TearDown();
    }

    Polkitd polkitd_;
};

TEST_F(PolkitTest, AGroupTheRulesGrantChangesCpusAndAnotherUserIsRefused) {
    const std::string address = world_->bus_address();
    const std::string member = as_user(kDaemonUser, kDaemonUser, [&](const auto&) {
        RawClient c(address);
        std::string s = "Offline 4: " + outcome(c.call("Offline", "4")) + "\n";
        const auto held = c.hold_cpus("6", "offline", "polkit-test", "authorized");
        s += "HoldCpus 6: " + outcome(held.call) + "\n";
        s += "ReleaseHold (own): " + outcome(c.release_hold(held.hold_id)) + "\n";
        if (held.fd >= 0) {
            ::close(held.fd);
        }
        const auto cancelled = c.cancel(0);  // authorized: the daemon itself answers
        s += "Cancel 0: " + cancelled.error_name + "\n";
        return s;
    });
    std::cout << "uid 1 (daemon, in group daemon):\n" << member;
    EXPECT_EQ(member,
              "Offline 4: ok\nHoldCpus 6: ok\nReleaseHold (own): ok\n"
              "Cancel 0: org.cpuhpd1.Error.NoSuchBatch\n");

    const std::string other = as_user(kNobody, kNobody, [&](const auto&) {
        RawClient c(address);
        std::string s = "Offline 7: " + outcome(c.call("Offline", "7")) + "\n";
        s += "Online 4: " + outcome(c.call("Online", "4")) + "\n";
        s += "SetSmt off: " + outcome(c.call("SetSmt", "off")) + "\n";
        s += "HoldCpus 7: " + outcome(c.hold_cpus("7", "offline", "nobody", "").call) + "\n";
        s += "ReleaseHold 1: " + outcome(c.release_hold(1)) + "\n";
        s += "Cancel 0: " + c.cancel(0).error_name + "\n";
        s += "Offline 7, dry run: " + outcome(c.call("Offline", "7", {{"dry_run", true}})) + "\n";
        return s;
    });
    std::cout << "uid 65534 (nobody):\n" << other;
    const std::string denied = std::string(kAccessDenied) + "\n";
    EXPECT_EQ(other, "Offline 7: " + denied + "Online 4: " + denied + "SetSmt off: " + denied +
                         "HoldCpus 7: " + denied + "ReleaseHold 1: " + denied +
                         "Cancel 0: " + denied + "Offline 7, dry run: ok\n");

    const RunResult allowed = world_->cpuctl_as(kDaemonUser, kDaemonUser, {"offline", "8"});
    std::cout << "uid 1: cpuctl offline 8 -> exit " << allowed.exit_code << "\n" << allowed.out;
    EXPECT_EQ(allowed.exit_code, 0) << allowed.describe();
    const RunResult refused = world_->cpuctl_as(kNobody, kNobody, {"offline", "9"});
    std::cout << "uid 65534: cpuctl offline 9 -> exit " << refused.exit_code << "\n" << refused.err;
    EXPECT_NE(refused.exit_code, 0) << refused.describe();
    EXPECT_NE(refused.err.find("org.cpuhpd1.change-cpus"), std::string::npos) << refused.describe();

    // Only what the group member asked for changed; the hold's CPU is back.
    EXPECT_EQ(tree().online_files(), expected_files({4, 8}));
    EXPECT_EQ(tree().read("devices/system/cpu/smt/control"), "on");
    EXPECT_TRUE(client_->get_holds().empty());
    EXPECT_NE(world_->daemon_log().find("polkit refused Offline to"), std::string::npos)
        << world_->daemon_log();
}

// An authentication agent registered for the caller's process stands in for the user who
// would type a password: polkit reaches it only when the call allows interaction.
TEST_F(PolkitTest, AuthenticationIsAskedForOnlyWhenTheCallerAllowsInteraction) {
    const std::string address = world_->bus_address();
    int pid_pipe[2];
    int go_pipe[2];
    ASSERT_EQ(::pipe2(pid_pipe, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(go_pipe, O_CLOEXEC), 0);
    std::unique_ptr<PolkitAgent> agent;
    std::string agent_error;
    const std::string out = as_user(
        kNobody, kNobody,
        [&](const std::function<void()>& ready) {
            const pid_t self = ::getpid();
            if (::write(pid_pipe[1], &self, sizeof self) != sizeof self) {
                return std::string("<cannot send the pid>");
            }
            ready();
            char go = 0;
            if (::read(go_pipe[0], &go, 1) != 1 || go != '1') {
                return std::string("<no agent>");
            }
            RawClient c(address);
            std::string s = "Offline 5: " + outcome(c.call("Offline", "5")) + "\n";
            sd_bus_set_allow_interactive_authorization(c.bus(), 1);
            s += "Offline 7, interactive: " + outcome(c.call("Offline", "7")) + "\n";
            s += "Offline 5, interactive: " + outcome(c.call("Offline", "5")) + "\n";
            return s;
        },
        [&] {
            pid_t child = 0;
            char go = '0';
            if (::read(pid_pipe[0], &child, sizeof child) == sizeof child) {
                try {
                    agent = std::make_unique<PolkitAgent>(address, child);
                    go = '1';
                } catch (const std::exception& e) {
                    agent_error = e.what();
                }
            }
            EXPECT_EQ(::write(go_pipe[1], &go, 1), 1);
        });
    for (int fd : {pid_pipe[0], pid_pipe[1], go_pipe[0], go_pipe[1]}) {
        ::close(fd);
    }
    ASSERT_TRUE(agent) << agent_error;
    std::cout << out;
    // Without the header flag polkit does not interact: the caller learns that it could
    // authenticate. With it, polkit asks the agent, which says root authenticated. CPU 7:
    // no rule, the action's default for a caller outside a session: no, and nobody asked.
    EXPECT_EQ(out, std::string("Offline 5: ") + kInteractiveAuthorizationRequired +
                       "\nOffline 7, interactive: " + kAccessDenied +
                       "\nOffline 5, interactive: ok\n");
    const auto asked = agent->requests();
    ASSERT_EQ(asked.size(), 1U);
    std::cout << "agent asked: " << asked[0].action_id << ": " << asked[0].message << "\n";
    EXPECT_EQ(asked[0].action_id, "org.cpuhpd1.change-cpus");
    EXPECT_EQ(asked[0].message, "Authentication is required to take CPUs 5 offline.");
    EXPECT_EQ(tree().online_files(), expected_files({5}));
}

}  // namespace
}  // namespace cpuhpd::itest
