// Pinned tasks and IRQs (issue 15 item 4): what an offline change leaves without a CPU is
// listed in its plan and its result, read from the daemon's --proc-root (a fake /proc);
// refuse_pinned turns pinned tasks into org.cpuhpd1.Error.Pinned with nothing changed.
#include <gtest/gtest.h>
#include <unistd.h>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

inline constexpr const char* kPinned = "org.cpuhpd1.Error.Pinned";

// Package 1 is CPUs 4-7 and their SMT siblings 12-15.
class PinnedReportTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.extra_yaml = "profiles:\n  evacuate:\n    offline: \"package:1\"\n";
        return c;
    }
    void SetUp() override {
        CpuhpdTest::SetUp();
        auto& proc = world_->proc();
        proc.add_task(4242, 4242, "pinned-app", "4-7,12-15");
        proc.add_task(4242, 4250, "pinned-app:w", "12");
        proc.add_task(4300, 4300, "free", "0-15");
        proc.add_task(4400, 4400, "half", "3-4");
        proc.add_task(20, 20, "kworker/5:1", "5", true);
        proc.add_irq(30, "5", {"eth0-rx-5"});
        proc.add_irq(31, "0-15", {"timer"});
    }

    const std::vector<NumberedEntry> want_tasks{{4242, "pinned-app", "4-7,12-15"},
                                                {4250, "pinned-app:w", "12"}};
    const std::vector<NumberedEntry> want_irqs{{30, "eth0-rx-5", "5"}};
};

TEST_F(PinnedReportTest, ThePlanAndTheResultListWhatPackage1Strands) {
    const CallResult plan = client_->call("Offline", "package:1", {{"dry_run", true}});
    ASSERT_TRUE(plan.ok) << plan.describe();
    EXPECT_EQ(plan.entries("pinned_tasks"), want_tasks);
    EXPECT_EQ(plan.entries("pinned_irqs"), want_irqs);

    // Half the package: task 4242 keeps CPUs, only the thread pinned to 12 is stranded.
    const CallResult half = client_->call("Offline", "12-15", {{"dry_run", true}});
    ASSERT_TRUE(half.ok) << half.describe();
    EXPECT_EQ(half.entries("pinned_tasks"),
              (std::vector<NumberedEntry>{{4250, "pinned-app:w", "12"}}));
    EXPECT_EQ(half.entries("pinned_irqs"), std::vector<NumberedEntry>{});

    const CallResult done = client_->call("Offline", "package:1");
    ASSERT_TRUE(done.ok) << done.describe();
    EXPECT_EQ(done.entries("pinned_tasks"), want_tasks);
    EXPECT_EQ(done.entries("pinned_irqs"), want_irqs);
    EXPECT_EQ(tree().online_files(), expected_files({4, 5, 6, 7, 12, 13, 14, 15}));

    // Coming back strands nothing: an online result has no pinned lists.
    const CallResult back = client_->call("Online", "package:1");
    ASSERT_TRUE(back.ok) << back.describe();
    EXPECT_FALSE(back.entries("pinned_tasks"));
    EXPECT_FALSE(back.entries("pinned_irqs"));
}

TEST_F(PinnedReportTest, RefusePinnedRefusesNamingTheTaskAndChangesNothing) {
    for (const char* method : {"Offline"}) {
        const CallResult refused =
            client_->call(method, "package:1", {{"refuse_pinned", true}, {"dry_run", true}});
        EXPECT_EQ(refused.error_name, kPinned) << refused.describe();
        const CallResult real = client_->call(method, "package:1", {{"refuse_pinned", true}});
        EXPECT_EQ(real.error_name, kPinned) << real.describe();
        EXPECT_NE(real.error_message.find("task 4242 (pinned-app) on CPU 4-7,12-15"),
                  std::string::npos)
            << real.error_message;
        EXPECT_NE(real.error_message.find("nothing was changed"), std::string::npos);
    }
    const RawClient::Held held =
        client_->hold_cpus("12", "offline", "test", "pinned", {{"refuse_pinned", true}});
    EXPECT_EQ(held.call.error_name, kPinned) << held.call.describe();
    EXPECT_EQ(held.fd, -1);
    const CallResult profile = client_->call("ApplyProfile", "evacuate", {{"refuse_pinned", true}});
    EXPECT_EQ(profile.error_name, kPinned) << profile.describe();
    EXPECT_EQ(client_->get_string("ActiveProfile"), "");
    EXPECT_EQ(tree().online_files(), expected_files({}));

    // Without the pinned tasks' CPUs, the same option lets the change through.
    const CallResult fine = client_->call("Offline", "13-15", {{"refuse_pinned", true}});
    ASSERT_TRUE(fine.ok) << fine.describe();
    EXPECT_EQ(tree().online_files(), expected_files({13, 14, 15}));
}

TEST_F(PinnedReportTest, AProfileSaysWhatItsOfflinePartStrands) {
    const CallResult plan = client_->call("ApplyProfile", "evacuate", {{"dry_run", true}});
    ASSERT_TRUE(plan.ok) << plan.describe();
    EXPECT_EQ(plan.entries("pinned_tasks"), want_tasks);
    EXPECT_EQ(plan.entries("pinned_irqs"), want_irqs);
    const CallResult applied = client_->call("ApplyProfile", "evacuate");
    ASSERT_TRUE(applied.ok) << applied.describe();
    EXPECT_EQ(applied.entries("pinned_tasks"), want_tasks);
    const CallResult reverted = client_->call_with_entries("RevertProfile", std::nullopt, {});
    ASSERT_TRUE(reverted.ok) << reverted.describe();
    EXPECT_EQ(reverted.entries("pinned_tasks"), std::vector<NumberedEntry>{});
}

TEST_F(PinnedReportTest, CpuctlPrintsThePinnedAndRefusesWithRefusePinned) {
    RunResult r = cpuctl({"plan", "offline", "package:1"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(any_line_matches(r.out, "^pinned: task 4242 \\(pinned-app\\) on CPU 4-7,12-15$"))
        << r.out;
    EXPECT_TRUE(any_line_matches(r.out, "^pinned: irq 30 \\(eth0-rx-5\\) on CPU 5$")) << r.out;
    r = cpuctl({"offline", "--refuse-pinned", "package:1"});
    EXPECT_EQ(r.exit_code, 1) << r.describe();
    EXPECT_NE(r.err.find("task 4242 (pinned-app)"), std::string::npos) << r.err;
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

}  // namespace
}  // namespace cpuhpd::itest
