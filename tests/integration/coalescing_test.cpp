// Concurrent callers coalesced into shared batches, each getting only its own results.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <latch>
#include <thread>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

class CoalescingTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.coalesce_ms = 300;
        return c;
    }
};

TEST_F(CoalescingTest, EightConcurrentRawCallersShareBatchesAndGetOnlyTheirOwnResults) {
    constexpr unsigned kCallers = 8;
    client_->subscribe();
    std::vector<std::unique_ptr<RawClient>> clients;
    for (unsigned i = 0; i < kCallers; ++i) {
        clients.push_back(std::make_unique<RawClient>(world_->bus_address()));
    }
    std::vector<CallResult> results(kCallers);
    std::vector<std::string> errors(kCallers);
    std::vector<Clock::duration> took(kCallers);
    std::latch go(kCallers);
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < kCallers; ++i) {
        threads.emplace_back([&, i] {
            go.arrive_and_wait();
            const auto start = Clock::now();
            try {
                results[i] = clients[i]->call("Offline", std::to_string(i + 1));
                took[i] = Clock::now() - start;
            } catch (const std::exception& e) {
                errors[i] = e.what();
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    std::set<std::uint64_t> batches;
    for (unsigned i = 0; i < kCallers; ++i) {
        SCOPED_TRACE("caller " + std::to_string(i) + " offlining cpu " + std::to_string(i + 1));
        ASSERT_EQ(errors[i], "");
        ASSERT_TRUE(results[i].ok) << results[i].describe();
        EXPECT_EQ(results[i].cpus(), (std::set<unsigned>{i + 1})) << results[i].describe();
        EXPECT_EQ(results[i].result_for(i + 1)->result, "changed") << results[i].describe();
        EXPECT_EQ(results[i].order(), (std::vector<std::uint32_t>{i + 1})) << results[i].describe();
        EXPECT_EQ(results[i].str("outcome"), "ok");
        batches.insert(results[i].u64("batch_id"));
        // queued_us: from the daemon's receipt to the batch's start, inside the call.
        EXPECT_LE(std::chrono::microseconds(results[i].u64("queued_us")), took[i])
            << results[i].describe();
    }
    EXPECT_LT(batches.size(), kCallers) << "8 concurrent callers were not coalesced";
    // The first batch found the daemon idle: its first request waited the whole window.
    std::uint64_t first_batch_queued = 0;
    for (const auto& r : results) {
        if (r.u64("batch_id") == *batches.begin()) {
            first_batch_queued = std::max(first_batch_queued, r.u64("queued_us"));
        }
    }
    EXPECT_GE(first_batch_queued, 300000u) << "the coalescing window is 300 ms";
    EXPECT_EQ(tree().online_files(), expected_files({1, 2, 3, 4, 5, 6, 7, 8}));

    // BatchFinished: one per batch, their `requests` sum to the callers.
    client_->wait_for([&] { return client_->batches().size() >= batches.size(); }, 10s);
    std::uint32_t served = 0;
    std::set<unsigned> changed;
    for (const auto& b : client_->batches()) {
        EXPECT_TRUE(batches.count(b.batch_id)) << "unknown batch " << b.batch_id;
        served += b.requests;
        for (unsigned c : cpus_in(b.changed)) {
            changed.insert(c);
        }
    }
    EXPECT_EQ(client_->batches().size(), batches.size());
    EXPECT_EQ(served, kCallers);
    EXPECT_EQ(changed, (std::set<unsigned>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST_F(CoalescingTest, EightConcurrentCpuctlProcessesShareBatches) {
    constexpr unsigned kCallers = 8;
    std::vector<std::unique_ptr<Child>> children;
    for (unsigned i = 0; i < kCallers; ++i) {
        // CPUs 4-11: the union is not "every secondary thread", so per-cpu applies (the fake
        // tree cannot act on smt/control).
        children.push_back(world_->spawn_cpuctl({"--json", "offline", std::to_string(i + 4)}));
    }
    std::set<double> batches;
    auto deadline = Clock::now() + 60s;
    for (unsigned i = 0; i < kCallers; ++i) {
        unsigned cpu = i + 4;
        SCOPED_TRACE("cpuctl offline " + std::to_string(cpu));
        ASSERT_TRUE(children[i]->wait_until(deadline)) << "cpuctl did not finish in time";
        RunResult r{children[i]->exit_code(), children[i]->out(), children[i]->err()};
        ASSERT_EQ(r.exit_code, 0) << r.describe();
        json j;
        ASSERT_TRUE(parses(r, j));
        EXPECT_EQ(json_results(j), all_result({cpu}, "changed")) << r.out;
        batches.insert(j.at("batch_id").get<double>());
    }
    EXPECT_LT(batches.size(), kCallers) << "8 concurrent cpuctl processes were not coalesced";
    EXPECT_EQ(tree().online_files(), expected_files({4, 5, 6, 7, 8, 9, 10, 11}));
}

}  // namespace
}  // namespace cpuhpd::itest
