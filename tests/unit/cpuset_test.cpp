#include "cpuset.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <stdexcept>
#include <vector>

namespace cpuhpd {
namespace {

CpuSet of(std::vector<unsigned> cpus) {
    return CpuSet::from(cpus);
}

std::vector<unsigned> members_of(const std::set<unsigned>& s) {
    return {s.begin(), s.end()};
}

TEST(CpuSet, BasicOperations) {
    CpuSet s;
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(s.count(), 0u);
    s.add(3);
    s.add(7);
    s.add(3);
    EXPECT_EQ(s.count(), 2u);
    EXPECT_TRUE(s.contains(3));
    EXPECT_FALSE(s.contains(4));
    EXPECT_FALSE(s.contains(100000));
    EXPECT_EQ(s.first(), 3u);
    EXPECT_EQ(s.last(), 7u);
    EXPECT_EQ(s.members(), (std::vector<unsigned>{3, 7}));
    s.remove(7);
    EXPECT_EQ(s.last(), 3u);
    s.remove(3);
    s.remove(9000);
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(s, CpuSet());  // equality ignores how the set got there
}

TEST(CpuSet, SetAlgebra) {
    CpuSet a = CpuSet::range(0, 7);
    CpuSet b = of({6, 7, 8, 9});
    EXPECT_EQ(a | b, CpuSet::range(0, 9));
    EXPECT_EQ(a & b, of({6, 7}));
    EXPECT_EQ(a - b, CpuSet::range(0, 5));
    EXPECT_EQ(b - a, of({8, 9}));
    EXPECT_EQ(b - CpuSet::range(8, 100), of({6, 7}));
    EXPECT_TRUE(a.intersects(b));
    EXPECT_FALSE(a.intersects(of({20})));
    EXPECT_TRUE(of({1, 2}).is_subset_of(a));
    EXPECT_FALSE(b.is_subset_of(a));
    EXPECT_TRUE(CpuSet().is_subset_of(CpuSet()));
    CpuSet c = of({100});
    c |= a;
    EXPECT_EQ(c.count(), 9u);
    EXPECT_EQ(c & of({100}), of({100}));
    EXPECT_TRUE((a & of({100})).empty());
}

TEST(CpuSet, Bounds) {
    EXPECT_TRUE(CpuSet::range(5, 4).empty());
    EXPECT_EQ(CpuSet::range(kMaxCpus - 1, kMaxCpus - 1).first(), kMaxCpus - 1);
    EXPECT_THROW(CpuSet::single(kMaxCpus), std::out_of_range);
    EXPECT_THROW(CpuSet().add(kMaxCpus), std::out_of_range);
    EXPECT_THROW(CpuSet().first(), std::logic_error);
    EXPECT_THROW(CpuSet().last(), std::logic_error);
}

TEST(CpuSet, WordEdgesAndTheLargestCpu) {
    for (unsigned cpu : {0u, 63u, 64u, 65u, 127u, 128u, kMaxCpus - 1}) {
        const CpuSet s = CpuSet::single(cpu);
        EXPECT_TRUE(s.contains(cpu)) << cpu;
        EXPECT_FALSE(s.contains(cpu + 1)) << cpu;
        EXPECT_EQ(s.count(), 1u) << cpu;
        EXPECT_EQ(s.first(), cpu);
        EXPECT_EQ(s.last(), cpu);
        EXPECT_EQ(s.members(), std::vector<unsigned>{cpu});
    }
    EXPECT_THROW(CpuSet::single(kMaxCpus), std::out_of_range);
    EXPECT_THROW(CpuSet::range(0, kMaxCpus), std::out_of_range);
}

TEST(CpuSet, RangesWithinAndAcrossWords) {
    EXPECT_EQ(CpuSet::range(3, 5).members(), (std::vector<unsigned>{3, 4, 5}));
    const CpuSet across = CpuSet::range(60, 130);
    EXPECT_EQ(across.count(), 71u);
    EXPECT_EQ(across.first(), 60u);
    EXPECT_EQ(across.last(), 130u);
    EXPECT_FALSE(across.contains(59));
    EXPECT_FALSE(across.contains(131));
    EXPECT_EQ(CpuSet::range(0, 63).count(), 64u);
    EXPECT_EQ(CpuSet::range(64, 127).first(), 64u);
    EXPECT_EQ(CpuSet::range(0, kMaxCpus - 1).count(), kMaxCpus);
    EXPECT_TRUE(CpuSet::range(5, 4).empty());
    CpuSet s = CpuSet::single(200);
    s.add_range(10, 12);
    EXPECT_EQ(s.members(), (std::vector<unsigned>{10, 11, 12, 200}));
}

TEST(CpuSet, EqualSetsCompareEqualHoweverTheyWereBuilt) {
    CpuSet a = CpuSet::range(0, 300);
    for (unsigned cpu = 3; cpu <= 300; ++cpu) {
        a.remove(cpu);
    }
    EXPECT_EQ(a, CpuSet::range(0, 2));
    EXPECT_EQ(a.last(), 2u);
    EXPECT_EQ(CpuSet::range(0, 200) - CpuSet::range(0, 200), CpuSet());
    EXPECT_EQ(CpuSet::range(0, 200) & CpuSet::range(100, 300), CpuSet::range(100, 200));
    EXPECT_EQ(CpuSet::single(500) & CpuSet::single(7), CpuSet());
    EXPECT_TRUE((CpuSet::single(500) & CpuSet::single(7)).empty());
    EXPECT_THROW(CpuSet().first(), std::logic_error);
    EXPECT_THROW(CpuSet().last(), std::logic_error);
}

// Every operation against std::set<unsigned>, on random sets that straddle word edges.
TEST(CpuSet, AgreesWithStdSet) {
    std::mt19937 rng(20261201);
    std::uniform_int_distribution<unsigned> cpu_of(0, 700);
    auto random_pair = [&](CpuSet& c, std::set<unsigned>& s) {
        const int n = static_cast<int>(rng() % 40);
        for (int i = 0; i < n; ++i) {
            const unsigned a = cpu_of(rng);
            if (rng() % 4 == 0) {
                const unsigned b = a + static_cast<unsigned>(rng() % 150);
                c.add_range(a, b);
                for (unsigned x = a; x <= b; ++x) {
                    s.insert(x);
                }
            } else if (rng() % 3 == 0) {
                c.remove(a);
                s.erase(a);
            } else {
                c.add(a);
                s.insert(a);
            }
        }
    };
    for (int round = 0; round < 500; ++round) {
        CpuSet a, b;
        std::set<unsigned> sa, sb;
        random_pair(a, sa);
        random_pair(b, sb);
        ASSERT_EQ(a.members(), members_of(sa));
        ASSERT_EQ(a.count(), sa.size());
        ASSERT_EQ(a.empty(), sa.empty());
        if (!sa.empty()) {
            ASSERT_EQ(a.first(), *sa.begin());
            ASSERT_EQ(a.last(), *sa.rbegin());
        }
        std::set<unsigned> u = sa, i, d;
        u.insert(sb.begin(), sb.end());
        for (unsigned x : sa) {
            (sb.count(x) ? i : d).insert(x);
        }
        ASSERT_EQ((a | b).members(), members_of(u));
        ASSERT_EQ((a & b).members(), members_of(i));
        ASSERT_EQ((a - b).members(), members_of(d));
        ASSERT_EQ(a | b, CpuSet::from(members_of(u)));
        ASSERT_EQ(a & b, CpuSet::from(members_of(i)));
        ASSERT_EQ(a - b, CpuSet::from(members_of(d)));
        ASSERT_EQ(a.intersects(b), !i.empty());
        ASSERT_EQ(a.is_subset_of(b), d.empty());
        ASSERT_EQ(a == b, sa == sb);
        for (unsigned x = 0; x < 900; x += 7) {
            ASSERT_EQ(a.contains(x), sa.count(x) == 1) << x;
        }
    }
}

}  // namespace
}  // namespace cpuhpd
