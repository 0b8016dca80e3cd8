// read_topology, the topology cache format and TopologyMemory persistence.
#include "topology.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <vector>

#include "fake_sysfs.h"
#include "input.h"

namespace cpuhpd {
namespace {

namespace fs = std::filesystem;
using test::FakeSysfs;
using test::FakeTopology;
using test::of;

class TempDir {
public:
    TempDir() {
        std::string templ = (fs::temp_directory_path() / "cpuhpd-topology-test-XXXXXX").string();
        if (!::mkdtemp(templ.data())) {
            throw std::runtime_error("mkdtemp");
        }
        path_ = templ;
    }
    ~TempDir() {
        std::error_code ec;
        fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

void write_file(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
}

TopologyMap sample() {
    TopologyMap map;
    map[0] = CpuTopology{0, 0, 0, 0, of({0, 8})};
    map[8] = CpuTopology{0, 0, 0, 0, of({0, 8})};
    map[5] = CpuTopology{1, 0, 1, 1, of({5, 13})};
    map[4095] = CpuTopology{7, 3, 1023, -1, of({4094, 4095})};
    map[9] = CpuTopology{-1, -1, -1, -1, CpuSet()};
    return map;
}

// for_each_topology() gives each member of the set, ascending, with the entry find() gives
// (nullptr where the map has none), also where it jumps over long stretches of the map.
TEST(TopologyWalk, GivesEachMemberTheEntryFindGives) {
    TopologyMap map = sample();
    for (unsigned cpu = 100; cpu < 140; ++cpu) {
        map[cpu] = CpuTopology{0, 0, static_cast<int>(cpu), 0, of({cpu})};
    }
    const std::vector<CpuSet> sets = {
        CpuSet(),
        of({9}),
        of({1, 5, 8, 9, 10}),
        of({0, 8, 139, 4095}),                           // 8 to 139 passes 40 entries: a jump
        CpuSet::range(0, 200) | of({4094, 4095, 8191}),  // every step, then a jump past the end
        of({8191}),
    };
    for (const CpuSet& cpus : sets) {
        std::vector<unsigned> seen;
        for_each_topology(map, cpus, [&](unsigned cpu, const CpuTopology* entry) {
            seen.push_back(cpu);
            const auto it = map.find(cpu);
            if (it == map.end()) {
                EXPECT_EQ(entry, nullptr) << "CPU " << cpu << " of " << cpus;
            } else {
                EXPECT_EQ(entry, &it->second) << "CPU " << cpu << " of " << cpus;
            }
        });
        EXPECT_EQ(seen, cpus.members()) << cpus;
    }
    int calls = 0;
    for_each_topology(TopologyMap(), of({0, 3}), [&](unsigned, const CpuTopology* entry) {
        EXPECT_EQ(entry, nullptr);
        ++calls;
    });
    EXPECT_EQ(calls, 2);
}

TEST(TopologyCache, RoundTrips) {
    TopologyMap map = sample();
    std::string text = serialize_topology(map);
    EXPECT_EQ(parse_topology(text), map);
    EXPECT_EQ(text.rfind("cpuhpd-topology 1\n", 0), 0u) << text;
    EXPECT_EQ(parse_topology(serialize_topology({})), TopologyMap{});
}

TEST(TopologyCache, OneCpuALine) {
    TopologyMap map;
    map[3] = CpuTopology{1, 0, 2, 0, of({3, 11})};
    std::string text = serialize_topology(map);
    EXPECT_NE(text.find("\n3 1 0 2 0 3,11\n"), std::string::npos) << text;
}

TEST(TopologyCache, RejectsCorruptText) {
    const std::string good = serialize_topology(sample());
    const std::vector<std::string> bad = {
        "",
        "garbage\n",
        "cpuhpd-topology 2\nend 0\n",                            // unknown version
        "cpuhpd-topology 1\n",                                   // no end line
        "cpuhpd-topology 1\n3 1 0 2 0 3,11\n",                   // truncated
        "cpuhpd-topology 1\n3 1 0 2 0 3,11\nend 2\n",            // count mismatch
        "cpuhpd-topology 1\n3 1 0 2 3,11\nend 1\n",              // missing field
        "cpuhpd-topology 1\n3 1 0 2 0 3,11 x\nend 1\n",          // extra field
        "cpuhpd-topology 1\nx 1 0 2 0 3\nend 1\n",               // bad cpu
        "cpuhpd-topology 1\n9000 1 0 2 0 3\nend 1\n",            // cpu out of range
        "cpuhpd-topology 1\n3 one 0 2 0 3\nend 1\n",             // bad number
        "cpuhpd-topology 1\n3 -2 0 2 0 3\nend 1\n",              // below -1
        "cpuhpd-topology 1\n3 1 0 2 0 3-1\nend 1\n",             // bad siblings
        "cpuhpd-topology 1\n3 1 0 2 0 3\n3 1 0 2 0 3\nend 2\n",  // duplicate
        "cpuhpd-topology 1\nend 0\n3 1 0 2 0 3\n",               // after the end
        good.substr(0, good.size() / 2),
    };
    for (const std::string& text : bad) {
        EXPECT_THROW(parse_topology(text), std::runtime_error) << text;
    }
}

TEST(TopologyMemory, PersistsAcrossInstances) {
    TempDir dir;
    const fs::path cache = dir.path() / "run" / "cpuhpd" / "topology.cache";
    {
        TopologyMemory memory(cache);
        EXPECT_EQ(memory.load(), std::nullopt);  // no file yet: nothing to say
        memory.update(sample());
        EXPECT_EQ(memory.known(), sample());
        EXPECT_EQ(memory.save_error(), std::nullopt);
    }
    ASSERT_TRUE(fs::exists(cache));
    EXPECT_EQ(fs::status(cache).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                  fs::perms::others_read);
    TopologyMemory memory(cache);
    EXPECT_EQ(memory.load(), std::nullopt);
    EXPECT_EQ(memory.known(), sample());
    EXPECT_EQ(memory.find(5)->siblings, of({5, 13}));
    EXPECT_EQ(memory.find(6), std::nullopt);
    // Writes go through a temporary file and a rename: nothing else is left behind.
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache.parent_path())) {
        ++entries;
    }
    EXPECT_EQ(entries, 1u);
}

TEST(TopologyMemory, FreshEntriesWinAndOthersAreKept) {
    TempDir dir;
    const fs::path cache = dir.path() / "topology.cache";
    TopologyMemory memory(cache);
    memory.update(sample());
    TopologyMap fresh;
    fresh[5] = CpuTopology{2, 0, 1, 1, of({5, 13})};  // moved (e.g. physical replacement)
    fresh[6] = CpuTopology{1, 0, 2, 1, of({6, 14})};
    memory.update(fresh);
    EXPECT_EQ(memory.find(5)->package, 2);
    EXPECT_EQ(memory.find(6)->core, 2);
    EXPECT_EQ(memory.find(0)->siblings, of({0, 8}));  // not seen now, still remembered
    EXPECT_EQ(memory.known().size(), sample().size() + 1);

    TopologyMemory again(cache);
    again.load();
    EXPECT_EQ(again.known(), memory.known());
}

TEST(TopologyMemory, SavesOnlyWhenSomethingChanged) {
    TempDir dir;
    const fs::path cache = dir.path() / "topology.cache";
    TopologyMemory memory(cache);
    memory.update(sample());
    fs::remove(cache);
    memory.update(sample());
    EXPECT_FALSE(fs::exists(cache));
    TopologyMap changed;
    changed[1] = CpuTopology{0, 0, 1, 0, of({1, 9})};
    memory.update(changed);
    EXPECT_TRUE(fs::exists(cache));
}

TEST(TopologyMemory, LiveReadsWinOverTheCacheOnLoad) {
    TempDir dir;
    const fs::path cache = dir.path() / "topology.cache";
    TopologyMemory memory(cache);
    TopologyMap live;
    live[5] = CpuTopology{3, 0, 1, 1, of({5})};
    memory.update(live);
    write_file(cache, serialize_topology(sample()));  // as a previous instance left it
    EXPECT_EQ(memory.load(), std::nullopt);
    EXPECT_EQ(memory.find(5)->package, 3);
    EXPECT_EQ(memory.find(8)->siblings, of({0, 8}));
}

TEST(TopologyMemory, CorruptCacheIsIgnoredWithAMessage) {
    TempDir dir;
    const fs::path cache = dir.path() / "topology.cache";
    for (const std::string& text :
         {std::string("\x01\x02garbage"), std::string("cpuhpd-topology 1\n3 1 0 2 0 3,11\n"),
          std::string("cpuhpd-topology 99\nend 0\n"), std::string("")}) {
        write_file(cache, text);
        TopologyMemory memory(cache);
        std::optional<std::string> message;
        ASSERT_NO_THROW(message = memory.load());
        ASSERT_TRUE(message.has_value()) << text;
        EXPECT_NE(message->find(cache.string()), std::string::npos) << *message;
        EXPECT_TRUE(memory.known().empty());
        // The next update replaces the bad file.
        memory.update(sample());
        TopologyMemory again(cache);
        EXPECT_EQ(again.load(), std::nullopt);
        EXPECT_EQ(again.known(), sample());
    }
}

// Issue 9: a cache that is a link to /dev/zero was read without bound (std::bad_alloc), a
// FIFO hung the start-up. Only a regular file of at most kMaxCacheBytes is read.
TEST(TopologyMemory, CacheThatIsNoRegularFileOrTooLargeIsIgnoredWithAMessage) {
    TempDir dir;
    const fs::path cache = dir.path() / "topology.cache";
    auto message_for = [&](const std::function<void()>& make) {
        std::error_code ec;
        fs::remove(cache, ec);
        make();
        TopologyMemory memory(cache);
        std::optional<std::string> message;
        EXPECT_NO_THROW(message = memory.load());
        EXPECT_TRUE(memory.known().empty());
        return message.value_or("no message");
    };
    EXPECT_NE(
        message_for([&] { fs::create_symlink("/dev/zero", cache); }).find("is a symbolic link"),
        std::string::npos);
    EXPECT_NE(message_for([&] {
                  ASSERT_EQ(::mkfifo(cache.c_str(), 0600), 0);
              }).find("is not a regular file"),
              std::string::npos);
    EXPECT_NE(message_for([&] { fs::create_directory(cache); }).find("is a directory"),
              std::string::npos);
    // A real cache with a very long comment: refused above the limit, before parsing.
    EXPECT_NE(message_for([&] {
                  write_file(cache, serialize_topology(sample()) + "# " +
                                        std::string(kMaxCacheBytes, 'x') + "\n");
              }).find("the limit is 4 MiB"),
              std::string::npos);
    const std::string fits = serialize_topology(sample());
    write_file(cache, fits);
    TopologyMemory memory(cache);
    EXPECT_EQ(memory.load(), std::nullopt);
    EXPECT_EQ(memory.known(), sample());
}

TEST(TopologyMemory, WithoutACacheFileNothingIsPersisted) {
    TopologyMemory memory("");
    EXPECT_EQ(memory.load(), std::nullopt);
    memory.update(sample());
    EXPECT_EQ(memory.known(), sample());
    EXPECT_EQ(memory.save_error(), std::nullopt);
}

TEST(TopologyMemory, UnwritableStateDirIsReportedNotThrown) {
    TempDir dir;
    write_file(dir.path() / "not-a-dir", "x");
    const fs::path cache = dir.path() / "not-a-dir" / "topology.cache";
    TopologyMemory memory(cache);
    ASSERT_NO_THROW(memory.update(sample()));
    ASSERT_TRUE(memory.save_error().has_value());
    EXPECT_NE(memory.save_error()->find(cache.string()), std::string::npos);
    EXPECT_EQ(memory.known(), sample());
}

TEST(ReadTopology, ReadsOnlineCpusOfTheFakeKernel) {
    FakeTopology topo;
    topo.nodes = 2;
    FakeSysfs fs(topo);
    fs.set_online(7, false);
    TopologyMap map = read_topology(fs.paths(), CpuSet::range(0, 15));
    EXPECT_EQ(map.size(), 15u);
    EXPECT_EQ(map.count(7), 0u);
    // Like the kernel, the fake drops the offline thread from its sibling's list.
    EXPECT_EQ(map.at(15), (CpuTopology{1, 0, 3, 1, of({15})}));
    EXPECT_EQ(map.at(0), (CpuTopology{0, 0, 0, 0, of({0, 8})}));
    // Only the CPUs asked for.
    EXPECT_EQ(read_topology(fs.paths(), of({2, 3})).size(), 2u);
    EXPECT_TRUE(read_topology(fs.paths(), CpuSet()).empty());
}

TEST(ReadTopology, HandWrittenTree) {
    TempDir dir;
    SysfsPaths paths(dir.path());
    const fs::path t0 = paths.cpu_topology(0);
    write_file(t0 / "physical_package_id", "0\n");
    write_file(t0 / "core_id", "0\n");
    write_file(t0 / "thread_siblings_list", "0-1\n");
    // No die_id (older kernels): -1. No node directory: the cpuN/nodeM link names it.
    fs::create_directories(paths.cpu(0) / "node3");
    const fs::path t1 = paths.cpu_topology(1);
    write_file(t1 / "physical_package_id", "0\n");
    write_file(t1 / "core_id", "0\n");
    write_file(t1 / "die_id", "2\n");
    write_file(t1 / "thread_siblings_list", "\n");  // empty: the CPU alone
    // Half a topology directory (the CPU went offline while we read): skipped.
    write_file(paths.cpu_topology(2) / "physical_package_id", "0\n");
    TopologyMap map = read_topology(paths, CpuSet::range(0, 2));
    ASSERT_EQ(map.size(), 2u);
    EXPECT_EQ(map.at(0), (CpuTopology{0, -1, 0, 3, of({0, 1})}));
    EXPECT_EQ(map.at(1), (CpuTopology{0, 2, 0, -1, of({1})}));
}

}  // namespace
}  // namespace cpuhpd
