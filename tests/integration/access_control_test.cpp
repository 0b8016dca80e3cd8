// Who may do what: unprivileged callers read; root changes CPUs, judged by the uid the bus
// verified, and anyone else only with polkit's word (polkit_test.cpp has a real polkitd; here
// there is none on the bus, so every other caller is refused).
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "fixture.h"
#include "harness/in_child.h"

namespace cpuhpd::itest {
namespace {

// `fn` in a forked child as nobody.
std::string as_nobody(const ChildBody& fn, const std::function<void()>& on_ready = {}) {
    return as_user(kNobody, kNobody, fn, on_ready);
}

TEST_F(CpuhpdTest, UnprivilegedCallersMayReadButNotChange) {
    if (geteuid() != 0) {
        GTEST_SKIP() << "needs root to switch to uid 65534 in a child";
    }
    std::string address = world_->bus_address();
    // The world's temp dir is 0755, so nobody can reach the bus socket.
    std::string out = as_nobody([&](const std::function<void()>&) {
        RawClient c(address);
        std::string s = "online=" + c.get_string("Online") + ";";
        CallResult r = c.call("Offline", "4");
        s += "offline=" + (r.ok ? std::string("ok") : r.error_name) + ";";
        r = c.call("Online", "4");
        s += "online4=" + (r.ok ? std::string("ok") : r.error_name) + ";";
        r = c.call("SetSmt", "off");
        s += "smt=" + (r.ok ? std::string("ok") : r.error_name) + ";";
        const auto held = c.hold_cpus("4", "offline", "nobody", "");
        s += "hold=" + (held.call.ok ? std::string("ok") : held.call.error_name) + ";";
        r = c.release_hold(1);
        s += "release=" + (r.ok ? std::string("ok") : r.error_name) + ";";
        s += "holds=" + std::to_string(c.get_holds().size()) + ";";
        return s;
    });
    EXPECT_EQ(out, std::string("online=0-15;offline=") + kAccessDenied +
                       ";online4=" + kAccessDenied + ";smt=" + kAccessDenied +
                       ";hold=" + kAccessDenied + ";release=" + kAccessDenied + ";holds=0;");
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(tree().read("devices/system/cpu/smt/control"), "on");
}

// With the project's bus policy (dbus/org.cpuhpd1.conf) on a bus that denies method calls by
// default, as the system bus does: root owns the name and changes CPUs; everyone may call
// every method, so nobody's dry run is answered, and its change is refused by the daemon.
class ProjectPolicyTest : public CpuhpdTest {
protected:
    bool project_policy() const override { return true; }
};

TEST_F(ProjectPolicyTest, RootChangesCpusAndNobodyReadsAndReceivesSignals) {
    if (geteuid() != 0) {
        GTEST_SKIP() << "needs root to switch to uid 65534 in a child";
    }
    std::string address = world_->bus_address();
    std::string out = as_nobody(
        [&](const std::function<void()>& ready) {
            RawClient c(address);
            std::string s = "online=" + c.get_string("Online") + ";";
            s += "topology=" + std::to_string(c.get_topology().size()) + ";";
            CallResult r = c.call("Offline", "4", {{"dry_run", true}});
            s += "dryrun=" + (r.ok ? std::string("ok") : r.error_name) + ";";
            r = c.call("Offline", "4");
            s += "offline=" + (r.ok ? std::string("ok") : r.error_name) + ";";
            c.subscribe();
            ready();
            bool got = c.wait_for([&] { return !c.batches().empty(); }, 15s);
            s += "signal=" + (got ? c.batches().front().changed : std::string("none")) + ";";
            return s;
        },
        [&] {
            RunResult r = cpuctl({"--json", "offline", "6"});
            EXPECT_EQ(r.exit_code, 0) << r.describe();
        });
    EXPECT_EQ(out, std::string("online=0-15;topology=16;dryrun=ok;offline=") + kAccessDenied +
                       ";signal=6;");
    EXPECT_EQ(tree().online_files(), expected_files({6}));
}

// The caller's uid came from /proc/PID (GetConnectionUnixProcessID): a reused PID, or a
// process whose uid changed since it connected, was judged by what the PID is now. The
// daemon now asks the bus for the uid it verified when the caller connected (as the bus
// policy does): a connection made as root stays root's.
TEST_F(CpuhpdTest, CallerIsJudgedByTheUidTheBusVerifiedNotByItsPid) {
    if (geteuid() != 0) {
        GTEST_SKIP() << "needs root to connect as root and then become nobody";
    }
    const std::string address = world_->bus_address();
    const std::string out = in_child([&](const std::function<void()>&) {
        RawClient c(address);  // connects as root
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) {
            return std::string("<setresuid failed>");
        }
        const CallResult r = c.call("Offline", "4");
        return r.ok ? std::string("ok") : r.error_name + ": " + r.error_message;
    });
    EXPECT_EQ(out, "ok");
    EXPECT_EQ(tree().online_files(), expected_files({4}));
}

// A caller the bus can no longer vouch for (it disconnected before its call was handled) is
// refused with a clear log line, not "logged and gone on".
TEST_F(CpuhpdTest, ChangeFromACallerWithoutVerifiableCredentialsIsRefused) {
    const pid_t pid = world_->daemon().pid();
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
    Resume resume{pid};
    std::string unique;
    {
        RawClient gone(world_->bus_address());
        const char* name = nullptr;
        ASSERT_GE(sd_bus_get_unique_name(gone.bus(), &name), 0);
        unique = name;
        sd_bus_message* m = nullptr;
        ASSERT_GE(sd_bus_message_new_method_call(gone.bus(), &m, "org.cpuhpd1", "/org/cpuhpd1",
                                                 "org.cpuhpd1.Manager", "Offline"),
                  0);
        ASSERT_GE(sd_bus_message_append(m, "sa{sv}", "4", 0), 0);
        ASSERT_GE(sd_bus_send(gone.bus(), m, nullptr), 0);
        sd_bus_message_unref(m);
        ASSERT_GE(sd_bus_flush(gone.bus()), 0);
    }  // disconnects
    ASSERT_TRUE(owner_gone(*client_, unique));
    ::kill(pid, SIGCONT);
    EXPECT_TRUE(log_shows(*world_, "cannot verify the caller's identity")) << world_->daemon_log();
    EXPECT_EQ(client_->get_string("Online"), "0-15");  // answered after the refusal
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

}  // namespace
}  // namespace cpuhpd::itest
