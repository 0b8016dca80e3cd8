// SIGTERM while a batch is in flight.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "fixture.h"

namespace cpuhpd::itest {
namespace {

// kernel/rcu_expedited is a FIFO: the batch (expedite: always) blocks in reading it until the
// test writes a value, which holds a batch in flight for as long as the test needs.
class StopDuringBatchTest : public CpuhpdTest {
protected:
    DaemonConfig config() const override {
        DaemonConfig c;
        c.coalesce_ms = 0;
        c.extra_yaml = "expedite: always\n" + on_stop();
        return c;
    }
    virtual std::string on_stop() const { return "on_stop: finish\n"; }
    void prepare_tree(test::FakeSysfs& t) override {
        const auto fifo = rcu_expedited(t);
        std::filesystem::remove(fifo);
        ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    }
    static std::filesystem::path rcu_expedited(test::FakeSysfs& t) {
        return t.root() / "kernel/rcu_expedited";
    }

    // Calls Offline `mask` on its own connection, and returns once its batch is held in
    // reading kernel/rcu_expedited.
    void start_held_batch(const std::string& mask) {
        hang_ = std::make_unique<HangingRead>(rcu_expedited(tree()));
        ASSERT_TRUE(hang_->holding()) << std::strerror(errno);
        caller_ = std::thread([this, mask] {
            RawClient c(world_->bus_address());
            reply_ = c.call("Offline", mask, {}, 60s);
        });
        ASSERT_TRUE(hang_->wait_for_reader(20s)) << "the batch never read kernel/rcu_expedited";
    }

    // Lets the batch go on (later reads of rcu_expedited find a plain file holding 0), then
    // waits for the daemon to exit 0 and for the reply.
    void release_and_expect_exit() {
        const auto fifo = rcu_expedited(tree());
        const auto plain = tree().root() / "kernel/rcu_expedited.plain";
        std::ofstream(plain) << "0\n";
        std::filesystem::rename(plain, fifo);
        hang_->release("0\n");
        ASSERT_TRUE(world_->daemon().wait_until(Clock::now() + 30s)) << "still running";
        EXPECT_EQ(world_->daemon().exit_code(), 0) << world_->daemon_log();
        caller_.join();
    }

    void TearDown() override {
        CpuhpdTest::TearDown();  // stops the daemon: a caller still waiting gets an error
        if (caller_.joinable()) {
            caller_.join();
        }
    }

    std::unique_ptr<HangingRead> hang_;
    std::thread caller_;
    CallResult reply_;
};

// After SIGTERM the daemon kept org.cpuhpd1 but served nothing until the batch in flight
// ended (up to TimeoutStopSec). It now lets go of the name at once, answers the calls that
// still reach it (reads served, changes refused Busy), finishes the batch and exits.
TEST_F(StopDuringBatchTest, SigtermReleasesTheNameAtOnceAndFinishesTheBatchInFlight) {
    sd_bus_message* owner_reply = nullptr;
    ASSERT_GE(sd_bus_call_method(client_->bus(), "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                 "org.freedesktop.DBus", "GetNameOwner", nullptr, &owner_reply, "s",
                                 "org.cpuhpd1"),
              0);
    const char* owner_c = nullptr;
    ASSERT_GE(sd_bus_message_read(owner_reply, "s", &owner_c), 0);
    const std::string owner = owner_c;
    sd_bus_message_unref(owner_reply);

    // From here on the batch is in flight, waiting for the value.
    start_held_batch("4");

    // NameOwnerChanged wakes the wait below when the name goes.
    ASSERT_GE(sd_bus_match_signal(client_->bus(), nullptr, "org.freedesktop.DBus",
                                  "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                  "NameOwnerChanged", nullptr, nullptr),
              0);
    ASSERT_EQ(::kill(world_->daemon().pid(), SIGTERM), 0);
    EXPECT_TRUE(owner_gone(*client_, "org.cpuhpd1")) << "name kept while the batch runs";
    // A change that still reaches the daemon (by its unique name) is refused at once; a read
    // is served.
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message* reply = nullptr;
    const int r =
        sd_bus_call_method(client_->bus(), owner.c_str(), "/org/cpuhpd1", "org.cpuhpd1.Manager",
                           "Offline", &error, &reply, "sa{sv}", "5", 0);
    EXPECT_LT(r, 0);
    EXPECT_STREQ(error.name, "org.cpuhpd1.Error.Busy") << (error.message ? error.message : "");
    sd_bus_error_free(&error);
    sd_bus_message_unref(reply);
    char* online = nullptr;
    EXPECT_GE(sd_bus_get_property_string(client_->bus(), owner.c_str(), "/org/cpuhpd1",
                                         "org.cpuhpd1.Manager", "Online", nullptr, &online),
              0);
    EXPECT_STREQ(online, "0-15");
    free(online);

    release_and_expect_exit();
    EXPECT_TRUE(reply_.ok) << reply_.describe();
    EXPECT_EQ(tree().online_files(), expected_files({4}));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
}

// The default, on_stop: cancel. The batch is held before its first write (reading
// rcu_expedited) when SIGTERM comes; let go, it writes nothing, its caller hears that every
// CPU was cancelled, and the daemon exits 0.
class CancelAtStopTest : public StopDuringBatchTest {
protected:
    std::string on_stop() const override { return ""; }
};

TEST_F(CancelAtStopTest, SigtermCancelsTheBatchInFlightAndAnswersItsCaller) {
    start_held_batch("4-7");
    ASSERT_EQ(::kill(world_->daemon().pid(), SIGTERM), 0);
    ASSERT_TRUE(log_shows(*world_, "cancelling the batch in flight (on_stop: cancel)"))
        << world_->daemon_log();
    release_and_expect_exit();
    ASSERT_TRUE(reply_.ok) << reply_.describe();
    EXPECT_EQ(reply_.str("outcome"), "failed");
    for (unsigned cpu = 4; cpu <= 7; ++cpu) {
        const auto r = reply_.result_for(cpu);
        ASSERT_TRUE(r.has_value()) << cpu;
        EXPECT_EQ(r->result, "cancelled") << cpu << ": " << r->message;
    }
    EXPECT_EQ(tree().online_files(), expected_files({}));
    EXPECT_EQ(tree().read("kernel/rcu_expedited"), "0");
}

}  // namespace
}  // namespace cpuhpd::itest
