// kernel/rcu_expedited around a batch: set for it when configured, always restored.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

class ExpediteAlwaysTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.extra_yaml = "expedite: always\n";
        return c;
    }
};

// Counts writes (close after write) to a file while `body` runs.
template <typename F>
int count_writes(const std::filesystem::path& file, F body) {
    // IN_MODIFY too: inotify merges identical consecutive unread events, so two writes
    // would otherwise show as one IN_CLOSE_WRITE.
    return count_events(file, IN_MODIFY | IN_CLOSE_WRITE, IN_CLOSE_WRITE, "", body);
}

TEST_F(ExpediteAlwaysTest, RcuExpeditedIsSetForTheBatchAndRestored) {
    auto rcu = tree().root() / "kernel/rcu_expedited";
    int writes = count_writes(rcu, [&] {
        CallResult res = client_->call("Offline", "4-7");
        ASSERT_TRUE(res.ok) << res.describe();
        EXPECT_EQ(res.str("outcome"), "ok") << res.describe();
    });
    EXPECT_GE(writes, 2) << "expedite: always must set rcu_expedited and restore it";
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
    EXPECT_EQ(tree().online_files(), expected_files({4, 5, 6, 7}));

    // Order of writes: rcu_expedited before the first CPU, restored after the last.
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    ASSERT_GE(fd, 0);
    std::map<int, std::string> names;
    names[inotify_add_watch(fd, rcu.c_str(), IN_MODIFY)] = "rcu";
    for (unsigned c = 4; c <= 7; ++c) {
        names[inotify_add_watch(fd, tree().online_file(c).c_str(), IN_MODIFY)] =
            "cpu" + std::to_string(c);
    }
    CallResult res = client_->call("Online", "4-7");
    ASSERT_TRUE(res.ok) << res.describe();
    std::vector<std::string> seq;
    drain_inotify(fd, [&](const inotify_event& ev) {
        if (seq.empty() || seq.back() != names[ev.wd]) {
            seq.push_back(names[ev.wd]);
        }
    });
    close(fd);
    std::string text;
    for (const auto& e : seq) {
        text += e + " ";
    }
    ASSERT_GE(seq.size(), 6u) << text;
    EXPECT_EQ(seq.front(), "rcu") << text;
    EXPECT_EQ(seq.back(), "rcu") << text;
    EXPECT_EQ(std::count(seq.begin(), seq.end(), "rcu"), 2) << text;
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

TEST_F(ExpediteAlwaysTest, RcuExpeditedIsRestoredAfterAFailedBatch) {
    if (int rc = tree().make_unwritable(6); rc != 0) {
        GTEST_SKIP() << "cannot make cpu6/online unwritable: " << std::strerror(rc);
    }
    CallResult res = client_->call("Offline", "4-7");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(res.str("outcome"), "failed") << res.describe();
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
    EXPECT_EQ(tree().online_files(), expected_files({}));
}

class ExpeditedAlreadyOnTest : public CpuhpdTest {
protected:
    void prepare_tree(test::FakeSysfs& t) override { t.write("kernel/rcu_expedited", "1"); }
};

TEST_F(ExpeditedAlreadyOnTest, RcuExpeditedStaysOneAfterBatches) {
    CallResult res = client_->call("Offline", "4-7");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(res.str("outcome"), "ok") << res.describe();
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "1");
    res = client_->call("Online", "4-7");
    ASSERT_TRUE(res.ok) << res.describe();
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "1");
    if (tree().make_unwritable(5) == 0) {
        res = client_->call("Offline", "4-6");
        ASSERT_TRUE(res.ok) << res.describe();
        EXPECT_EQ(res.str("outcome"), "failed") << res.describe();
        EXPECT_EQ(tree().read("kernel/rcu_expedited"), "1");
        EXPECT_EQ(tree().online_files(), expected_files({}));
    }
}

}  // namespace
}  // namespace cpuhpd::itest
