// cgroup cpuset partitions around a batch (partitions.h): found below an injected cgroup root,
// shrunk in one write each before CPUs go offline, given back in one write each when they
// return, with a ledger that survives a restart.
#include "partitions.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "engine_fixture.h"

namespace cpuhpd::test {
namespace {

std::vector<std::string> paths_of(const std::vector<Partition>& ps) {
    std::vector<std::string> out;
    for (const auto& p : ps) {
        out.push_back(p.path);
    }
    return out;
}

TEST(Partitions, FindsValidRootsAndIsolatedParentsFirst) {
    FakeMachine m;
    m.add_partition("rt/inner", "isolated", "12-13");
    m.add_partition("rt", "root", "10-15");
    m.add_partition("member", "member", "0-15");
    m.add_partition("broken", "root invalid (Cpu list in cpuset.cpus not exclusive)", "9");
    const auto found = find_partitions(m.cgroup_root());
    EXPECT_EQ(paths_of(found), (std::vector<std::string>{"/rt", "/rt/inner"}));
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(found[1].kind, "isolated");
    EXPECT_EQ(found[1].cpus, set({12, 13}));
    EXPECT_TRUE(find_partitions("").empty());
    EXPECT_TRUE(find_partitions(m.cgroup_root() / "missing").empty());
}

// A cgroup has cpuset files only when its parent enables cpuset in cgroup.subtree_control,
// and can enable it only when it has them: the walk leaves out the subtrees below a
// subtree_control without cpuset, and still finds every partition of a realistic tree.
struct CgroupTree {
    FakeMachine& m;
    void cgroup(const std::string& path, const std::string& subtree_control,
                const std::string& partition = "", const std::string& cpus = "",
                const std::string& exclusive = "") {
        std::filesystem::create_directories(m.cgroup_root() / path);
        const std::string dir = "fake-cgroup/" + (path.empty() ? "" : path + "/");
        m.fs.write(dir + "cgroup.subtree_control", subtree_control);
        if (!partition.empty()) {
            m.fs.write(dir + "cpuset.cpus.partition", partition);
            m.fs.write(dir + "cpuset.cpus", cpus);
            m.fs.write(dir + "cpuset.cpus.exclusive", exclusive);
        }
    }
};

TEST(Partitions, SubtreesWithoutCpusetAreLeftOutAndEveryPartitionIsFound) {
    FakeMachine m;
    CgroupTree t{m};
    t.cgroup("", "cpuset cpu io memory pids");
    t.cgroup("system.slice", "cpu io memory pids", "member", "");
    // What the kernel never shows (no cpuset in system.slice's subtree_control): proof that
    // the walk does not read below it.
    t.cgroup("system.slice/stale.service", "", "root", "3");
    // Remote partitions (kernel 6.7+) below members that hold exclusive CPUs: found.
    t.cgroup("machine.slice", "cpuset cpu memory", "member", "", "8-11,14-15");
    t.cgroup("machine.slice/ctr.scope", "cpuset cpu", "member", "", "8-11");
    t.cgroup("machine.slice/ctr.scope/rt", "cpuset", "root", "8-11");
    t.cgroup("machine.slice/ctr.scope/rt/iso", "", "isolated", "10-11");
    t.cgroup("machine.slice/remote", "", "isolated", "14-15");
    // Below a member without exclusive CPUs that enables cpuset (user.slice, as systemd
    // leaves it) no partition can be valid: the kernel would show "root invalid (...)",
    // this fake shows "root" as proof that the walk does not read below it.
    t.cgroup("user.slice", "cpuset cpu", "member", "");
    t.cgroup("user.slice/user-1000.slice", "cpuset cpu", "member", "");
    t.cgroup("user.slice/user-1000.slice/stale", "", "root", "2");
    t.cgroup("user.slice/stale", "", "root", "1");
    t.cgroup("rt", "cpuset", "root", "4-7");
    for (int i = 0; i < 50; ++i) {
        t.cgroup("machine.slice/ctr.scope/m" + std::to_string(i), "cpu", "member", "");
        t.cgroup("system.slice/s" + std::to_string(i) + ".service", "cpu");
    }
    const auto found = find_partitions(m.cgroup_root());
    EXPECT_EQ(paths_of(found), (std::vector<std::string>{"/rt", "/machine.slice/remote",
                                                         "/machine.slice/ctr.scope/rt",
                                                         "/machine.slice/ctr.scope/rt/iso"}));
    ASSERT_EQ(found.size(), 4u);
    EXPECT_EQ(found[2].cpus, CpuSet::range(8, 11));
    EXPECT_EQ(found[3].kind, "isolated");

    // The root without cpuset in its subtree_control: no cgroup has cpuset files.
    t.cgroup("", "cpu io memory pids");
    EXPECT_TRUE(find_partitions(m.cgroup_root()).empty());
}

TEST(Partitions, ShrinkChildrenFirstAndNeverToNothing) {
    const std::vector<Partition> ps{{"/rt", "root", CpuSet::range(10, 15)},
                                    {"/rt/inner", "isolated", CpuSet::range(12, 13)},
                                    {"/other", "root", CpuSet::range(4, 5)}};
    const CpuSet online = CpuSet::range(0, 15);
    const auto shrinks = plan_shrink(ps, set({13, 14}), online);
    ASSERT_EQ(shrinks.size(), 2u);
    EXPECT_EQ(shrinks[0].path, "/rt/inner");
    EXPECT_EQ(shrinks[0].after, set({12}));
    EXPECT_EQ(shrinks[1].path, "/rt");
    EXPECT_EQ(shrinks[1].after, set({10, 11, 12, 15}));
    // /rt/inner would have nothing left: no shrink for it, it is what emptied_partitions says.
    EXPECT_EQ(plan_shrink(ps, set({12, 13}), online).size(), 1u);
    EXPECT_EQ(paths_of(emptied_partitions(ps, set({12, 13}), online)),
              (std::vector<std::string>{"/rt/inner"}));
    // CPUs offline already do not keep a partition alive.
    EXPECT_EQ(paths_of(emptied_partitions(ps, set({4}), online - set({5}))),
              (std::vector<std::string>{"/other"}));
}

TEST(PartitionBatch, OneWritePerPartitionBeforeTheCpusAndOneAfterTheyReturn) {
    FakeMachine m;
    m.add_partition("rt", "root", "10-15");
    auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(12, 15))});
    ASSERT_FALSE(out.results[0].refusal);
    EXPECT_EQ(m.writer.writes_to("fake-cgroup/rt/cpuset.cpus"),
              (std::vector<std::string>{"10-11"}));
    // Before the first CPU write.
    ASSERT_FALSE(m.writer.log().empty());
    std::size_t first_cpu = 0;
    while (first_cpu < m.writer.log().size() &&
           !m.writer.log()[first_cpu].file.ends_with("/online")) {
        ++first_cpu;
    }
    for (std::size_t i = first_cpu; i < m.writer.log().size(); ++i) {
        EXPECT_FALSE(m.writer.log()[i].file.starts_with("fake-cgroup")) << i;
    }
    ASSERT_EQ(out.results[0].partitions.size(), 1u);
    EXPECT_EQ(out.results[0].partitions[0].before, CpuSet::range(10, 15));
    EXPECT_EQ(out.results[0].partitions[0].after, CpuSet::range(10, 11));
    EXPECT_EQ(m.fs.read("partitions.ledger"), "/rt\t12-15");

    out = m.runner->run(2, {m.request(Action::Online, CpuSet::range(12, 15))});
    EXPECT_EQ(m.writer.writes_to("fake-cgroup/rt/cpuset.cpus"),
              (std::vector<std::string>{"10-11", "10-15"}));
    ASSERT_EQ(out.results[0].partitions.size(), 1u);
    EXPECT_EQ(out.results[0].partitions[0].after, CpuSet::range(10, 15));
    EXPECT_FALSE(std::filesystem::exists(m.fs.root() / "partitions.ledger"));
}

TEST(PartitionBatch, ALedgerThatCannotBeSavedIsReportedWithItsErrno) {
    FakeMachine m;
    m.add_partition("rt", "root", "10-15");
    // A directory where the ledger file goes: replacing it fails.
    std::filesystem::create_directories(m.fs.root() / "partitions.ledger" / "in-the-way");
    auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(12, 15))});
    ASSERT_FALSE(out.results[0].refusal);
    ASSERT_EQ(out.report.partitions.size(), 1u);
    EXPECT_NE(out.report.partitions[0].ledger_error, 0);
    EXPECT_EQ(out.report.partitions[0].error, 0);  // the shrink itself went through
    ASSERT_EQ(out.results[0].partitions.size(), 1u);
    EXPECT_EQ(out.results[0].partitions[0].ledger_error, out.report.partitions[0].ledger_error);

    out = m.runner->run(2, {m.request(Action::Online, CpuSet::range(12, 15))});
    ASSERT_EQ(out.report.partitions.size(), 1u);
    EXPECT_NE(out.report.partitions[0].ledger_error, 0);

    // Saved: no error.
    std::filesystem::remove_all(m.fs.root() / "partitions.ledger");
    out = m.runner->run(3, {m.request(Action::Offline, CpuSet::range(12, 15))});
    ASSERT_EQ(out.report.partitions.size(), 1u);
    EXPECT_EQ(out.report.partitions[0].ledger_error, 0);
}

TEST(PartitionBatch, PartOfTheCpusBackGivesBackThatPart) {
    FakeMachine m;
    m.add_partition("rt", "root", "10-15");
    m.runner->run(1, {m.request(Action::Offline, CpuSet::range(12, 15))});
    m.runner->run(2, {m.request(Action::Online, set({12, 13}))});
    EXPECT_EQ(m.fs.read("fake-cgroup/rt/cpuset.cpus"), "10-13");
    EXPECT_EQ(m.fs.read("partitions.ledger"), "/rt\t14-15");
}

TEST(PartitionBatch, EmptyingAPartitionIsRefusedUnlessForced) {
    FakeMachine m;
    m.add_partition("rt", "root", "12-15");
    auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(12, 15))});
    ASSERT_TRUE(out.results[0].refusal);
    EXPECT_EQ(out.results[0].refusal->kind(), RefusalKind::EmptyPartition);
    EXPECT_NE(std::string(out.results[0].refusal->what()).find("partition /rt (root, CPU 12-15)"),
              std::string::npos)
        << out.results[0].refusal->what();
    EXPECT_TRUE(m.writer.log().empty());

    auto forced = m.request(Action::Offline, CpuSet::range(12, 15));
    forced.force = true;
    out = m.runner->run(2, {forced});
    EXPECT_FALSE(out.results[0].refusal);
    EXPECT_TRUE(m.writer.writes_to("fake-cgroup/rt/cpuset.cpus").empty())
        << "left to the kernel, which invalidates it";
    EXPECT_FALSE(m.fs.online().contains(12));
}

TEST(PartitionBatch, AnAtomicRollbackGivesTheCpusBack) {
    FakeMachine m;
    m.add_partition("rt", "root", "10-15");
    m.writer.fail_cpu(12, EBUSY);
    auto out = m.runner->run(1, {m.request(Action::Offline, CpuSet::range(12, 15))});
    EXPECT_EQ(out.results[0].outcome, Outcome::Failed);
    EXPECT_EQ(m.writer.writes_to("fake-cgroup/rt/cpuset.cpus"),
              (std::vector<std::string>{"10-11", "10-15"}));
    EXPECT_FALSE(std::filesystem::exists(m.fs.root() / "partitions.ledger"));
}

TEST(PartitionBatch, ADryRunListsTheShrinksAndRefusesAsTheBatchWould) {
    FakeMachine m;
    m.add_partition("rt", "root", "10-15");
    auto plan = m.request(Action::Offline, CpuSet::range(12, 15));
    plan.dry_run = true;
    const auto r = m.runner->dry_run(plan, m.state());
    ASSERT_EQ(r.partitions.size(), 1u);
    EXPECT_EQ(r.partitions[0].after, CpuSet::range(10, 11));
    auto all = m.request(Action::Offline, CpuSet::range(10, 15));
    all.dry_run = true;
    EXPECT_THROW(m.runner->dry_run(all, m.state()), Refusal);
    EXPECT_TRUE(m.writer.log().empty());
}

// A daemon that stopped with CPUs taken gives them back at start if they are online again
// (as a recovery rollback leaves them), and keeps owing the rest.
TEST(PartitionBatch, SettleGivesBackWhatALastRunTookOnceTheCpusAreOnline) {
    FakeMachine m;
    m.add_partition("rt", "root", "10-11");
    m.fs.write("partitions.ledger", "/rt\t12-13\n/gone\t4\n");
    m.fs.set_online(13, false);
    std::optional<std::string> problem;
    const auto changes = m.runner->settle_partitions(problem);
    EXPECT_FALSE(problem) << *problem;
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(m.fs.read("fake-cgroup/rt/cpuset.cpus"), "10-12");
    EXPECT_EQ(m.fs.read("partitions.ledger"), "/rt\t13");
    m.fs.write("partitions.ledger", "garbage");
    m.runner->settle_partitions(problem);
    ASSERT_TRUE(problem);
    EXPECT_NE(problem->find("not a partition ledger"), std::string::npos) << *problem;
}

}  // namespace
}  // namespace cpuhpd::test
