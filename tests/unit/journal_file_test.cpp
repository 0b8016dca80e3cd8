#include "journal_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "engine_fixture.h"
#include "journal_test_support.h"

namespace cpuhpd::test {
namespace {

namespace fs = std::filesystem;

// A caller name that needs every escape: spaces, '=', '%', a newline and UTF-8.
const std::string kAwkwardCaller = "a b=c %d\nnaïve";

JournalRecord per_cpu_record() {
    JournalRecord r;
    r.batch_id = 7;
    r.action = Action::Offline;
    r.strategy = StrategyKind::PerCpu;
    r.order = {7, 6, 5};
    r.online_before = CpuSet::range(0, 7);
    r.rcu_expedited = "0";
    r.boottime_ns = 123456789012345ULL;
    r.requests = {{Mode::Atomic, CpuSet::range(5, 7), ":1.42"},
                  {Mode::BestEffort, set({5}), kAwkwardCaller}};
    return r;
}

JournalRecord parsed(const std::string& text) {
    auto result = parse_journal(text);
    if (const auto* error = std::get_if<std::string>(&result)) {
        ADD_FAILURE() << "parse error: " << *error;
        return {};
    }
    return std::get<JournalRecord>(result);
}

std::string parse_error(const std::string& text) {
    auto result = parse_journal(text);
    if (std::holds_alternative<JournalRecord>(result)) {
        ADD_FAILURE() << "parsed, but an error was expected";
        return {};
    }
    return std::get<std::string>(result);
}

void expect_same_header(const JournalRecord& got, const JournalRecord& want) {
    EXPECT_EQ(got.batch_id, want.batch_id);
    EXPECT_EQ(got.action, want.action);
    EXPECT_EQ(got.strategy, want.strategy);
    EXPECT_EQ(got.order, want.order);
    EXPECT_EQ(got.online_before, want.online_before);
    EXPECT_EQ(got.rcu_expedited, want.rcu_expedited);
    EXPECT_EQ(got.smt_control, want.smt_control);
    EXPECT_EQ(got.boottime_ns, want.boottime_ns);
    ASSERT_EQ(got.requests.size(), want.requests.size());
    for (std::size_t i = 0; i < want.requests.size(); ++i) {
        EXPECT_EQ(got.requests[i].mode, want.requests[i].mode) << i;
        EXPECT_EQ(got.requests[i].cpus, want.requests[i].cpus) << i;
        EXPECT_EQ(got.requests[i].caller, want.requests[i].caller) << i;
    }
}

// The journal of a batch that wrote CPUs 7 and 6, as FileJournal leaves it mid-batch.
std::string journal_with_two_writes(const StateDir& dir) {
    FileJournal journal(dir.path(), {});
    journal.begin(per_cpu_record());
    journal.cpu_written(7, 0);
    journal.cpu_written(6, 0);
    return read_text(dir.journal());
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(JournalFile, RoundTripsHeaderAndAppendedRecords) {
    StateDir dir;
    const JournalRecord want = per_cpu_record();
    FileJournal journal(dir.path(), {});
    journal.begin(want);
    journal.cpu_written(7, 0);
    journal.cpu_written(6, EBUSY);
    journal.rollback_started();
    journal.cpu_restored(7, EPERM);

    const std::string text = read_text(dir.journal());
    EXPECT_TRUE(text.starts_with(serialize_journal_header(want)));
    // Escaped values keep every record on one line of space-separated fields.
    EXPECT_EQ(text.find("a b"), std::string::npos);
    const JournalRecord got = parsed(text);
    expect_same_header(got, want);
    EXPECT_EQ(got.written, (std::map<unsigned, int>{{7, 0}, {6, EBUSY}}));
    EXPECT_TRUE(got.rolling_back);
    EXPECT_EQ(got.restored, (std::map<unsigned, int>{{7, EPERM}}));
    EXPECT_FALSE(got.one_shot_error.has_value());
    EXPECT_FALSE(got.ended);
}

TEST(JournalFile, RoundTripsEmptyOrderAbsentRcuAndSmtControl) {
    StateDir dir;
    JournalRecord want;
    want.batch_id = 1;
    want.action = Action::Online;
    want.strategy = StrategyKind::Smt;
    want.smt_control = "off";
    want.requests = {{Mode::Atomic, {}, ""}};
    const std::string header = serialize_journal_header(want);
    EXPECT_NE(header.find(" order=- "), std::string::npos) << header;
    EXPECT_NE(header.find(" rcu_expedited=- "), std::string::npos) << header;

    FileJournal journal(dir.path(), {});
    journal.begin(want);
    journal.one_shot_written(EBUSY);
    const JournalRecord got = parsed(read_text(dir.journal()));
    expect_same_header(got, want);
    EXPECT_TRUE(got.order.empty());
    EXPECT_FALSE(got.rcu_expedited.has_value());
    EXPECT_EQ(got.smt_control, std::optional<std::string>("off"));
    EXPECT_EQ(got.one_shot_error, std::optional<int>(EBUSY));
    EXPECT_TRUE(got.written.empty());
}

TEST(JournalFile, EndRecordsTheEndThenRemovesTheFile) {
    StateDir dir;
    FileJournal journal(dir.path(), {});
    journal.begin(per_cpu_record());
    // A second name for the file keeps its last content readable after end() unlinks it.
    const fs::path copy = dir.path() / "copy";
    ASSERT_EQ(::link(dir.journal().c_str(), copy.c_str()), 0);
    journal.cpu_written(7, 0);
    journal.end();
    EXPECT_FALSE(fs::exists(fs::symlink_status(dir.journal())));
    EXPECT_TRUE(parsed(read_text(copy)).ended);
}

TEST(JournalFile, UnwritableDirectoryWarnsAndTheBatchGoesOn) {
    StateDir dir;
    const fs::path missing = dir.path() / "missing";  // unwritable for root as well
    std::vector<std::string> warnings;
    FileJournal journal(missing, [&](const std::string& w) { warnings.push_back(w); });
    EXPECT_NO_THROW({
        journal.begin(per_cpu_record());
        journal.cpu_written(7, 0);
        journal.one_shot_written(0);
        journal.rollback_started();
        journal.cpu_restored(7, 0);
        journal.end();
    });
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("batch.journal"), std::string::npos) << warnings[0];
    EXPECT_FALSE(fs::exists(missing));
}

// An append beyond RLIMIT_FSIZE fails with EFBIG (SIGXFSZ ignored), as a full /run would.
TEST(JournalFile, AFailedAppendLeavesNoJournalBehind) {
    StateDir dir;
    std::vector<std::string> warnings;
    FileJournal journal(dir.path(), [&](const std::string& w) { warnings.push_back(w); });
    journal.begin(per_cpu_record());
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    rlimit capped = old;
    capped.rlim_cur = fs::file_size(dir.journal());
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &capped), 0);
    journal.cpu_written(7, 0);
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    journal.end();
    ASSERT_EQ(warnings.size(), 1u);
    // Left in place without its end, the header would make the next start roll back this
    // batch, which went on and may well have finished.
    EXPECT_FALSE(fs::exists(fs::symlink_status(dir.journal())));
}

TEST(JournalFile, BeginDoesNotWriteThroughALeftoverSymlink) {
    StateDir dir;
    const fs::path victim = dir.path() / "victim";
    write_text(victim, "precious\n");
    fs::create_symlink(victim, dir.path() / "batch.journal.new");
    std::vector<std::string> warnings;
    FileJournal journal(dir.path(), [&](const std::string& w) { warnings.push_back(w); });
    journal.begin(per_cpu_record());
    EXPECT_EQ(read_text(victim), "precious\n");
    EXPECT_TRUE(warnings.empty());
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(dir.journal())));
    EXPECT_EQ(parsed(read_text(dir.journal())).batch_id, 7u);
}

TEST(JournalParse, DropsALastLineWithoutNewline) {
    StateDir dir;
    std::string text = journal_with_two_writes(dir);
    text.pop_back();
    const JournalRecord got = parsed(text);
    EXPECT_EQ(got.written, (std::map<unsigned, int>{{7, 0}}));
}

TEST(JournalParse, DropsALastLineWithAWrongSum) {
    StateDir dir;
    const std::string text =
        replace_once(journal_with_two_writes(dir), "written cpu=6 ", "written cpu=4 ");
    const JournalRecord got = parsed(text);
    EXPECT_EQ(got.written, (std::map<unsigned, int>{{7, 0}}));
}

TEST(JournalParse, AWrongSumBeforeTheLastLineIsAnError) {
    StateDir dir;
    const std::string text =
        replace_once(journal_with_two_writes(dir), "written cpu=7 ", "written cpu=4 ");
    EXPECT_NE(parse_error(text).find("checksum"), std::string::npos);
}

TEST(JournalParse, ARecordAfterEndIsAnError) {
    const std::string header = serialize_journal_header(per_cpu_record());
    EXPECT_TRUE(parsed(header + sealed_line("end")).ended);
    const std::string error =
        parse_error(header + sealed_line("end") + sealed_line("written cpu=7 errno=0"));
    EXPECT_NE(error.find("after 'end'"), std::string::npos) << error;
}

TEST(JournalParse, WrongMagicIsAnError) {
    std::string text = serialize_journal_header(per_cpu_record());
    ASSERT_TRUE(text.starts_with("cpuhpd-batch-journal 1\n"));
    text.replace(0, 22, "cpuhpd-batch-journal 2");
    EXPECT_NE(parse_error(text).find("not a cpuhpd batch journal"), std::string::npos);
    EXPECT_FALSE(parse_error("").empty());
}

TEST(JournalParse, FewerRequestLinesThanAnnouncedIsAnError) {
    const std::string header = serialize_journal_header(per_cpu_record());  // requests=2
    const std::size_t last_request = header.rfind("request ");
    ASSERT_NE(last_request, std::string::npos);
    const std::string one_request = header.substr(0, last_request);
    EXPECT_NE(parse_error(one_request).find("incomplete"), std::string::npos);
    // Nor is a torn request line dropped like a torn append.
    std::string torn = header;
    torn.pop_back();
    EXPECT_FALSE(parse_error(torn).empty());
}

}  // namespace
}  // namespace cpuhpd::test
