// TaskThread: posted tasks run in order on one thread of its own; destruction runs what is
// still queued, then joins.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "task_thread.h"

namespace cpuhpd {
namespace {

// Far longer than any of these waits takes when TaskThread works.
constexpr auto kPatience = std::chrono::seconds(10);

TEST(ServiceTaskThread, RunsTasksInTheOrderPosted) {
    std::vector<int> ran;  // only the task thread writes, until it is joined
    {
        TaskThread thread;
        for (int i = 0; i < 100; ++i) {
            thread.post([&ran, i] { ran.push_back(i); });
        }
    }
    ASSERT_EQ(ran.size(), 100U);
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(ran[static_cast<std::size_t>(i)], i);
    }
}

TEST(ServiceTaskThread, RunsEveryTaskOnTheSameThreadWhichIsNotThePoster) {
    std::set<std::thread::id> threads;
    {
        TaskThread thread;
        for (int i = 0; i < 10; ++i) {
            thread.post([&threads] { threads.insert(std::this_thread::get_id()); });
        }
    }
    ASSERT_EQ(threads.size(), 1U);
    EXPECT_NE(*threads.begin(), std::this_thread::get_id());
}

// A task's captures are destroyed with the queue unlocked: the daemon's tasks hold sdbus-c++
// replies, whose last release takes the bus's lock, which the main thread holds while it
// posts (a deadlock seen in the profiles integration tests).
TEST(ServiceTaskThread, AFinishedTaskIsDestroyedWithoutTheQueueLocked) {
    struct OnDestroy {
        std::function<void()> run;
        ~OnDestroy() { run(); }
    };
    std::promise<void> destroying;
    std::promise<void> posted;
    std::shared_future<void> posted_future = posted.get_future().share();
    bool post_went_through = false;  // written by the task thread, read after the join
    {
        TaskThread thread;
        auto guard = std::make_shared<OnDestroy>();
        guard->run = [&destroying, posted_future, &post_went_through] {
            destroying.set_value();
            post_went_through = posted_future.wait_for(kPatience / 5) == std::future_status::ready;
        };
        thread.post([guard = std::move(guard)] {});  // the task holds the only reference
        ASSERT_EQ(destroying.get_future().wait_for(kPatience), std::future_status::ready);
        thread.post([] {});  // while the finished task's destructor runs
        posted.set_value();
    }
    EXPECT_TRUE(post_went_through) << "post() waited for a finished task's destruction";
}

TEST(ServiceTaskThread, ATaskRunsWhileThePosterGoesOn) {
    TaskThread thread;
    std::promise<void> ran;
    thread.post([&ran] { ran.set_value(); });
    // Not ready in time if tasks only ran at destruction.
    EXPECT_EQ(ran.get_future().wait_for(kPatience), std::future_status::ready);
}

TEST(ServiceTaskThread, DestructionRunsTheQueuedTasksAndWaitsForThem) {
    std::promise<void> gate;
    std::vector<int> ran;
    {
        TaskThread thread;
        // The first task holds the thread, so the others are certainly queued behind it.
        thread.post([&ran, opened = gate.get_future().share()] {
            opened.wait();
            ran.push_back(0);
        });
        for (int i = 1; i <= 20; ++i) {
            thread.post([&ran, i] { ran.push_back(i); });
        }
        gate.set_value();
    }
    ASSERT_EQ(ran.size(), 21U);
    EXPECT_EQ(ran.front(), 0);
    EXPECT_EQ(ran.back(), 20);
}

TEST(ServiceTaskThread, ATaskMayPostAnotherWhichAlsoRuns) {
    std::vector<int> ran;
    {
        TaskThread thread;
        thread.post([&] {
            ran.push_back(1);
            thread.post([&ran] { ran.push_back(2); });
        });
    }
    EXPECT_EQ(ran, (std::vector<int>{1, 2}));
}

TEST(ServiceTaskThread, PostingFromSeveralThreadsRunsEachTaskOnceInEachPostersOrder) {
    constexpr int kPosters = 4;
    constexpr int kTasks = 250;
    std::vector<std::vector<int>> ran(kPosters);  // per poster; only the task thread writes
    {
        TaskThread thread;
        std::vector<std::thread> posters;
        for (int p = 0; p < kPosters; ++p) {
            posters.emplace_back([&thread, &ran, p] {
                for (int i = 0; i < kTasks; ++i) {
                    thread.post([&ran, p, i] { ran[static_cast<std::size_t>(p)].push_back(i); });
                }
            });
        }
        for (auto& poster : posters) {
            poster.join();
        }
    }
    for (int p = 0; p < kPosters; ++p) {
        const auto& got = ran[static_cast<std::size_t>(p)];
        ASSERT_EQ(got.size(), static_cast<std::size_t>(kTasks)) << "poster " << p;
        for (int i = 0; i < kTasks; ++i) {
            EXPECT_EQ(got[static_cast<std::size_t>(i)], i) << "poster " << p;
        }
    }
}

TEST(ServiceTaskThread, AnIdleThreadIsDestroyedAtOnce) {
    auto thread = std::make_shared<TaskThread>();
    std::promise<void> destroyed;
    auto done = destroyed.get_future();
    // Destroyed on a helper thread, so that a destructor sleeping through the stop fails
    // the test instead of hanging it.
    std::thread([thread = std::move(thread), destroyed = std::move(destroyed)]() mutable {
        thread.reset();
        destroyed.set_value();
    }).detach();
    EXPECT_EQ(done.wait_for(kPatience), std::future_status::ready);
}

}  // namespace
}  // namespace cpuhpd
