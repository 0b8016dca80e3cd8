// A batch interrupted by SIGKILL at each of its steps, and the restarted daemon's recovery
// from the batch journal: every CPU back where it was before the batch (or kept, for
// best-effort requests), rcu_expedited back, and LastRecovery telling what was found and
// done. A step is pinned by turning the next CPU's online file into a FIFO: the daemon's
// write blocks in open() until the test kills it, so each kill lands at a known step.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>

#include "cpuset.h"
#include "fixture.h"

namespace cpuhpd::itest {
namespace {

namespace fs = std::filesystem;

// The batch every test interrupts: every CPU with an online file (cpu0 has none).
constexpr const char* kAllAps = "1-15";

std::string text(const std::map<std::string, Variant>& dict, const std::string& key) {
    const auto it = dict.find(key);
    const auto* s = it == dict.end() ? nullptr : std::get_if<std::string>(&it->second);
    return s ? *s : "<" + key + " absent or not a string>";
}

bool flag(const std::map<std::string, Variant>& dict, const std::string& key) {
    const auto it = dict.find(key);
    const auto* b = it == dict.end() ? nullptr : std::get_if<bool>(&it->second);
    return b && *b;
}

std::set<unsigned> first(const std::vector<unsigned>& order, std::size_t n) {
    return {order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n)};
}

class CrashRecoveryTest : public PinnedBatchTest {
protected:
    fs::path journal() const { return world_->dir() / "state" / "batch.journal"; }

    std::string journal_text() const {
        std::ifstream in(journal());
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }
};

// ------------------------------------------------------------ killed after k CPUs

class KilledAfterCpus : public CrashRecoveryTest, public ::testing::WithParamInterface<int> {};

TEST_P(KilledAfterCpus, RecoveryPutsEveryCpuAndRcuExpeditedBack) {
    const std::size_t k = static_cast<std::size_t>(GetParam());
    const std::vector<unsigned> order = planned_order("Offline", kAllAps);
    ASSERT_EQ(order.size(), 15u);
    block_writes_to(order[k]);
    const auto caller = world_->spawn_cpuctl({"offline", kAllAps});
    const std::set<unsigned> done = first(order, k);
    ASSERT_TRUE(files_show(done, "0")) << "the daemon did not write the first " << k << " CPUs";
    // The header is on disk before the first write; the expedite window is open.
    ASSERT_TRUE(eventually([&] { return fs::exists(journal()); }, 10s));
    ASSERT_TRUE(eventually([&] { return tree().read("kernel/rcu_expedited") == "1"; }, 10s));

    kill_daemon();
    unblock(order[k], "1");  // its write never happened
    ASSERT_EQ(tree().online_files(), expected_files(done)) << "the state the crash left";
    ASSERT_EQ(tree().read("kernel/rcu_expedited"), "1");

    restart_daemon();
    const auto after = tree().online_files();
    EXPECT_EQ(after, expected_files({}));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
    EXPECT_FALSE(fs::exists(journal()));
    const auto rec = client_->get_vardict("LastRecovery");
    std::cout << "[ crash ] killed after " << k << " CPUs: found offline {"
              << CpuSet::from({done.begin(), done.end()}).to_string()
              << "}, rcu_expedited 1; after recovery: "
              << "offline {"
              << CpuSet::from([&] {
                     std::vector<unsigned> off;
                     for (const auto& [cpu, value] : after) {
                         if (value == "0") {
                             off.push_back(cpu);
                         }
                     }
                     return off;
                 }())
                     .to_string()
              << "}, rcu_expedited " << tree().read("kernel/rcu_expedited") << "; "
              << text(rec, "summary") << std::endl;
    EXPECT_EQ(text(rec, "outcome"), "recovered") << text(rec, "summary");
    EXPECT_EQ(text(rec, "action"), "offline");
    EXPECT_EQ(cpus_in(text(rec, "planned")), cpus_in(kAllAps));
    EXPECT_EQ(cpus_in(text(rec, "found")), done) << text(rec, "summary");
    EXPECT_EQ(cpus_in(text(rec, "restored")), done) << text(rec, "summary");
    EXPECT_EQ(text(rec, "kept"), "");
    EXPECT_EQ(text(rec, "failed"), "");
    EXPECT_TRUE(flag(rec, "rcu_expedited_restored"));
    EXPECT_TRUE(log_shows(*world_, "recovery: batch 1 (offline 1-15 via per-cpu) was interrupted"))
        << world_->daemon_log();
    // And the restarted daemon serves changes as before.
    EXPECT_EQ(cpuctl({"offline", "3"}).exit_code, 0);
    EXPECT_EQ(tree().online_files(), expected_files({3}));
}

// Before the first write (0), then after each CPU but the last.
INSTANTIATE_TEST_SUITE_P(EveryStep, KilledAfterCpus, ::testing::Range(0, 15));

// ------------------------------------------------------------ killed during rollback

// The rollback of a failed atomic batch, pinned with FIFOs:
// - cpu13: the test holds a read end, so the forward write goes through; the test lets go
//   of it before the rollback, whose write of cpu13 then blocks (no reader).
// - cpu11 blocks the forward pass; once the daemon has written it, the test empties the
//   pipe and lets go, so the daemon's later reads find nothing there and the summary list
//   says "online": the CPU did not go, and the atomic request fails.
// - cpu10 holds the daemon until cpu11's pipe is emptied; its reader stays open, so its
//   rollback write goes through too.
// Reads of the FIFOs that find no value fall back to the summary list (0-9,11-12).
TEST_F(CrashRecoveryTest, KilledDuringRollbackRecoversTheRest) {
    const std::vector<unsigned> order = planned_order("Offline", kAllAps);
    // The second threads go first, highest first: 15 14 13 12 11 10 9 8, then 7..1.
    ASSERT_EQ(order, (std::vector<unsigned>{15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}));
    block_writes_to(13);
    const int cpu13_reader =
        ::open(tree().online_file(13).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    ASSERT_GE(cpu13_reader, 0) << std::strerror(errno);
    block_writes_to(11);
    block_writes_to(10);
    const auto caller = world_->spawn_cpuctl({"offline", kAllAps});
    ASSERT_TRUE(files_show({12, 14, 15}, "0"));  // and so 13: the daemon waits on cpu11

    ::close(cpu13_reader);
    tree().write("devices/system/cpu/online", "0-9,11-12");
    const int cpu11 = drain_after_write(tree().online_file(11));
    ASSERT_GE(cpu11, 0) << "the daemon never wrote cpu11";
    ::close(cpu11);
    const int cpu10 = drain_after_write(tree().online_file(10));
    ASSERT_GE(cpu10, 0) << "the daemon never wrote cpu10";
    struct Close {
        int fd;
        ~Close() { ::close(fd); }
    } close_cpu10{cpu10};
    // The daemon writes 9..1, finds cpu11 online and rolls back in the reverse order:
    // 1..9, 10, 12, then 13, where it blocks.
    ASSERT_TRUE(
        eventually([&] { return journal_text().find("\nrollback ") != std::string::npos; }, 10s))
        << journal_text();
    ASSERT_TRUE(files_show({1, 2, 3, 4, 5, 6, 7, 8, 9, 12}, "1"))
        << "the rollback did not reach cpu13";

    kill_daemon();
    unblock(13, "0");
    unblock(11, "1");
    unblock(10, "1");  // its rollback write went through
    tree().write("devices/system/cpu/online", "0-12");
    ASSERT_EQ(tree().online_files(), expected_files({13, 14, 15}));

    restart_daemon();
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
    const auto rec = client_->get_vardict("LastRecovery");
    EXPECT_EQ(text(rec, "outcome"), "recovered") << text(rec, "summary");
    EXPECT_EQ(cpus_in(text(rec, "found")), (std::set<unsigned>{13, 14, 15}));
    EXPECT_EQ(cpus_in(text(rec, "restored")), (std::set<unsigned>{13, 14, 15}));
    EXPECT_FALSE(fs::exists(journal()));
}

// ------------------------------------------------------------ best-effort and policies

TEST_F(CrashRecoveryTest, ABestEffortBatchKeepsWhatItDid) {
    const std::vector<unsigned> order = planned_order("Offline", kAllAps);
    ASSERT_EQ(order.size(), 15u);
    block_writes_to(order[5]);
    const auto caller = world_->spawn_cpuctl({"offline", "--best-effort", kAllAps});
    const std::set<unsigned> done = first(order, 5);
    ASSERT_TRUE(files_show(done, "0"));
    ASSERT_TRUE(eventually([&] { return tree().read("kernel/rcu_expedited") == "1"; }, 10s));
    kill_daemon();
    unblock(order[5], "1");

    restart_daemon();
    EXPECT_EQ(tree().online_files(), expected_files(done));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
    const auto rec = client_->get_vardict("LastRecovery");
    EXPECT_EQ(text(rec, "outcome"), "recovered");
    EXPECT_EQ(cpus_in(text(rec, "kept")), done) << text(rec, "summary");
    EXPECT_EQ(text(rec, "restored"), "");
    // cpuctl status tells the admin.
    const RunResult status = cpuctl({"status"});
    EXPECT_NE(status.out.find("last recovery:   recovered at "), std::string::npos)
        << status.describe();
    EXPECT_NE(status.out.find(" UTC: batch 1 (offline 1-15 via per-cpu) was interrupted"),
              std::string::npos)
        << status.describe();
}

class RecoveryRollbackPolicyTest : public CrashRecoveryTest {
protected:
    std::string extra_yaml() const override { return "recovery: rollback\n"; }
};

TEST_F(RecoveryRollbackPolicyTest, PutsBackTheCpusOfABestEffortBatchToo) {
    const std::vector<unsigned> order = planned_order("Offline", kAllAps);
    block_writes_to(order[4]);
    const auto caller = world_->spawn_cpuctl({"offline", "--best-effort", kAllAps});
    ASSERT_TRUE(files_show(first(order, 4), "0"));
    kill_daemon();
    unblock(order[4], "1");
    restart_daemon();
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(cpus_in(text(client_->get_vardict("LastRecovery"), "restored")), first(order, 4));
}

// ------------------------------------------------------------ journals not to be trusted

class UntrustedJournalTest : public CrashRecoveryTest {
protected:
    // Stops the daemon, lets `make` put something at the journal's path, starts it again.
    template <typename F>
    void restart_with(F make) {
        client_.reset();
        world_->stop_daemon();
        make(journal());
        restart_daemon();
    }
    void expect_rejected_and_nothing_changed(const std::string& why) {
        const auto rec = client_->get_vardict("LastRecovery");
        EXPECT_EQ(text(rec, "outcome"), "rejected") << text(rec, "summary");
        EXPECT_NE(text(rec, "summary").find(why), std::string::npos) << text(rec, "summary");
        EXPECT_EQ(text(rec, "moved_to"), journal().string() + ".rejected");
        EXPECT_TRUE(fs::exists(fs::symlink_status(journal().string() + ".rejected")));
        EXPECT_FALSE(fs::exists(fs::symlink_status(journal())));
        EXPECT_EQ(tree().online_files(), expected_files({}));
        EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
        EXPECT_TRUE(log_shows(*world_, "recovery: the batch journal")) << world_->daemon_log();
        EXPECT_EQ(cpuctl({"offline", "2"}).exit_code, 0) << "the daemon serves";
    }
};

TEST_F(UntrustedJournalTest, GarbageIsMovedAside) {
    restart_with([](const fs::path& j) {
        std::ofstream(j) << "\x7f"
                            "ELF garbage\n";
    });
    expect_rejected_and_nothing_changed("not a cpuhpd batch journal");
}

TEST_F(UntrustedJournalTest, ASymlinkIsNeverFollowed) {
    const fs::path target = world_->dir() / "precious";
    std::ofstream(target) << "keep me\n";
    restart_with([&](const fs::path& j) { fs::create_symlink(target, j); });
    expect_rejected_and_nothing_changed("symbolic link");
    std::ifstream in(target);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "keep me");
}

TEST_F(UntrustedJournalTest, AFifoDoesNotHangTheStart) {
    restart_with([](const fs::path& j) { ASSERT_EQ(::mkfifo(j.c_str(), 0600), 0); });
    expect_rejected_and_nothing_changed("not a regular file");
}

TEST_F(UntrustedJournalTest, AForeignOwnedJournalIsRefused) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root to give the journal another owner";
    }
    restart_with([](const fs::path& j) {
        std::ofstream(j) << "cpuhpd-batch-journal 1\n";
        ASSERT_EQ(::chown(j.c_str(), 65534, 65534), 0) << std::strerror(errno);
    });
    expect_rejected_and_nothing_changed("owned by uid 65534");
}

// A real journal, cut short: inside its header it cannot be trusted; inside its last
// appended record, that record is dropped and the rest recovered.
TEST_F(UntrustedJournalTest, ATruncatedJournalIsRecoveredOrRefusedByWhereItWasCut) {
    const std::vector<unsigned> order = planned_order("Offline", kAllAps);
    block_writes_to(order[3]);
    const auto caller = world_->spawn_cpuctl({"offline", kAllAps});
    ASSERT_TRUE(files_show(first(order, 3), "0"));
    ASSERT_TRUE(eventually(
        [&] { return journal_text().find("cpu=" + std::to_string(order[2])) != std::string::npos; },
        10s));
    kill_daemon();
    unblock(order[3], "1");
    const std::string whole = journal_text();
    const std::size_t header_end = whole.find("\nwritten ");
    ASSERT_NE(header_end, std::string::npos) << whole;

    // Torn inside the last record: recovered.
    fs::resize_file(journal(), whole.size() - 5);
    restart_daemon();
    auto rec = client_->get_vardict("LastRecovery");
    EXPECT_EQ(text(rec, "outcome"), "recovered") << text(rec, "summary");
    EXPECT_EQ(tree().online_files(), expected_files({}));

    // Cut inside the header: refused.
    restart_with([&](const fs::path& j) { std::ofstream(j) << whole.substr(0, header_end / 2); });
    expect_rejected_and_nothing_changed("not used");
}

}  // namespace
}  // namespace cpuhpd::itest
