// What the real BatchRunner tells its journal, on the fake machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include "batch_runner.h"
#include "engine_fixture.h"
#include "journal.h"
#include "journal_file.h"

namespace cpuhpd::test {
namespace {

// Records each call as a line; begin and end also note rcu_expedited at that instant, to
// show where they sit relative to the expedite window.
class RecordingJournal final : public BatchJournal {
public:
    explicit RecordingJournal(FakeSysfs& fs) : fs_(fs) {}

    void begin(const JournalRecord& record) override {
        begun = record;
        events.push_back("begin rcu=" + fs_.read("kernel/rcu_expedited"));
    }
    void cpu_written(unsigned cpu, int err) override {
        events.push_back("written " + std::to_string(cpu) + " " + std::to_string(err));
    }
    void one_shot_written(int err) override { events.push_back("one-shot " + std::to_string(err)); }
    void rollback_started() override { events.push_back("rollback"); }
    void cpu_restored(unsigned cpu, int err) override {
        events.push_back("restored " + std::to_string(cpu) + " " + std::to_string(err));
    }
    void end() override { events.push_back("end rcu=" + fs_.read("kernel/rcu_expedited")); }

    std::vector<std::string> events;
    std::optional<JournalRecord> begun;

private:
    FakeSysfs& fs_;
};

// The fixture's machine with a runner that journals into a RecordingJournal.
struct JournaledMachine {
    explicit JournaledMachine(FakeTopology topo = {}) : m(topo) {}

    BatchOutput run(std::vector<Request> requests) { return runner.run(3, requests); }

    FakeMachine m;
    RecordingJournal journal{m.fs};
    BatchRunner runner{m.paths, m.writer, journal, [this] { return m.state(); }, m.settings};
};

TEST(JournalRunner, PerCpuOfflineJournalsBeginEachCpuThenEnd) {
    JournaledMachine j;
    const std::uint64_t before = boottime_ns();
    j.run({j.m.request(Action::Offline, CpuSet::range(4, 7))});
    EXPECT_EQ(j.journal.events,
              (std::vector<std::string>{"begin rcu=0", "written 7 0", "written 6 0", "written 5 0",
                                        "written 4 0", "end rcu=0"}));
    ASSERT_TRUE(j.journal.begun.has_value());
    const JournalRecord& r = *j.journal.begun;
    EXPECT_EQ(r.batch_id, 3u);
    EXPECT_EQ(r.action, Action::Offline);
    EXPECT_EQ(r.strategy, StrategyKind::PerCpu);
    EXPECT_EQ(r.order, (std::vector<unsigned>{7, 6, 5, 4}));
    EXPECT_EQ(r.online_before, CpuSet::range(0, 15));
    EXPECT_FALSE(r.smt_control.has_value());
    EXPECT_GE(r.boottime_ns, before);
    EXPECT_LE(r.boottime_ns, boottime_ns());
    ASSERT_EQ(r.requests.size(), 1u);
    EXPECT_EQ(r.requests[0].cpus, CpuSet::range(4, 7));
    EXPECT_EQ(r.requests[0].mode, Mode::Atomic);
}

// The window writes 1 during the batch; the journal must keep what to put back.
TEST(JournalRunner, RcuExpeditedIsTheValueFromBeforeTheWindow) {
    JournaledMachine j;
    j.run({j.m.request(Action::Offline, CpuSet::range(4, 7))});
    ASSERT_EQ(j.m.writer.writes_to("kernel/rcu_expedited"), (std::vector<std::string>{"1", "0"}));
    ASSERT_TRUE(j.journal.begun.has_value());
    EXPECT_EQ(j.journal.begun->rcu_expedited, std::optional<std::string>("0"));
}

// Offline order 7, 6, 5, 4: CPU 5 fails after 7 and 6 went down, and they come back.
TEST(JournalRunner, FailingAtomicBatchJournalsItsRollback) {
    JournaledMachine j;
    j.m.writer.fail_cpu(5, EBUSY);
    j.run({j.m.request(Action::Offline, CpuSet::range(4, 7))});
    const std::vector<std::string>& events = j.journal.events;
    const std::vector<std::string> forward{"begin rcu=0", "written 7 0", "written 6 0",
                                           "written 5 " + std::to_string(EBUSY), "rollback"};
    ASSERT_EQ(events.size(), forward.size() + 3) << ::testing::PrintToString(events);
    EXPECT_TRUE(std::equal(forward.begin(), forward.end(), events.begin()));
    std::vector<std::string> restored(events.begin() + 5, events.begin() + 7);
    std::sort(restored.begin(), restored.end());
    EXPECT_EQ(restored, (std::vector<std::string>{"restored 6 0", "restored 7 0"}));
    EXPECT_EQ(events.back(), "end rcu=0");
}

TEST(JournalRunner, BulkBatchJournalsOneShot) {
    FakeTopology bulk;
    bulk.bulk = true;
    JournaledMachine j(bulk);
    j.run({j.m.request(Action::Offline, CpuSet::range(4, 11))});
    EXPECT_EQ(j.journal.events,
              (std::vector<std::string>{"begin rcu=0", "one-shot 0", "end rcu=0"}));
    ASSERT_TRUE(j.journal.begun.has_value());
    EXPECT_EQ(j.journal.begun->strategy, StrategyKind::Bulk);
    EXPECT_FALSE(j.journal.begun->rcu_expedited.has_value());  // no window for bulk
}

TEST(JournalRunner, SmtBatchJournalsSmtControlAndOneShot) {
    JournaledMachine j;
    j.run({j.m.request(Action::Offline, CpuSet::range(8, 15), Mode::Atomic, StrategyKind::Smt)});
    EXPECT_EQ(j.journal.events,
              (std::vector<std::string>{"begin rcu=0", "one-shot 0", "end rcu=0"}));
    ASSERT_TRUE(j.journal.begun.has_value());
    EXPECT_EQ(j.journal.begun->smt_control, std::optional<std::string>("on"));
}

TEST(JournalRunner, NoOpBatchJournalsNothing) {
    JournaledMachine j;
    j.m.fs.set_online(5, false);
    j.run({j.m.request(Action::Offline, set({5}))});
    EXPECT_TRUE(j.journal.events.empty()) << ::testing::PrintToString(j.journal.events);
    EXPECT_FALSE(j.journal.begun.has_value());
}

}  // namespace
}  // namespace cpuhpd::test
