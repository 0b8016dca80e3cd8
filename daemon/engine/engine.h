// The engine's front door: one object that owns the machine reader (with the topology
// memory), resolution, the hold table, the profiles and the executor, and runs every flow
// that changes CPUs (a change, a hold and its restore, a profile and its revert) as
// read -> resolve -> queue. Three threads: the owner's (every call below, and every answer
// and event, through the Post function it is given), the admission thread (reads and
// resolves, off the owner's loop) and the executor's worker (runs batches).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "admission.h"
#include "batch_runner.h"
#include "engine_events.h"
#include "executor.h"
#include "holds.h"
#include "input.h"
#include "journal_file.h"
#include "machine.h"
#include "profiles.h"
#include "recovery.h"
#include "request.h"
#include "settings.h"
#include "sysfs.h"
#include "task_thread.h"
#include "topology.h"

namespace cpuhpd {

// Where the engine finds the machine and keeps its state, and how it behaves.
struct EngineSetup {
    std::filesystem::path sysfs_root = "/sys";
    std::filesystem::path proc_root;    // pinned tasks and IRQs (pinned.h); empty: none
    std::filesystem::path cgroup_root;  // cpuset partitions (partitions.h); empty: none
    // Gives pinned tasks their affinity back (affinity.h); none: the runner's default.
    AffinitySetter* affinity_setter = nullptr;
    // The batch journal, the topology cache, the partition and affinity ledgers and the
    // profile in force.
    std::filesystem::path state_dir;
    EngineSettings settings;
    std::map<std::string, Profile> profiles;
};

// What a change gets back: its result, or what refused it (MaskError, Refusal, ...).
using ChangeAnswer = std::variant<RequestResult, std::exception_ptr>;

// A hold as asked for: the change (always atomic) and the hold's names.
struct HoldAsk {
    ChangeAsk change;
    std::string who;
    std::string why;
    bool restore = true;
    std::optional<std::uint32_t> uid;  // the caller's, as the bus vouched for it
    // Owner thread, once the change is done and before the hold counts as taken: ties the
    // hold to its holder (the service: a file descriptor). What it throws refuses the hold,
    // which then ends (restored if it asked).
    std::function<void(const Hold&)> bind;
};
// A hold taken: its id and the result of its change.
struct HoldTaken {
    std::uint64_t id = 0;
    RequestResult result;
};
using HoldOutcome = std::variant<HoldTaken, std::exception_ptr>;
// What ending a hold gets back: the results of the restore (one per CPU it wrote).
using ReleaseAnswer = std::variant<std::vector<CpuResult>, std::exception_ptr>;

// Applying (a name) or reverting (none) a profile.
struct ProfileAsk {
    std::string name;  // empty: revert the profile in force
    bool dry_run = false;
    std::optional<StrategyKind> strategy;
    bool refuse_pinned = false;  // for the offline part (Request::refuse_pinned)
    bool force = false;          // for the offline part (Request::force)
    std::string caller;
};
// What applying or reverting a profile did.
struct ProfileDone {
    std::string name;                     // the profile applied, or reverted
    ProfileTransition transition;         // what was asked of the kernel (or would be: dry run)
    std::optional<ActiveProfile> active;  // the profile in force afterwards
    std::vector<CpuResult> cpus;          // the results of both directions, by CPU
    Outcome outcome = Outcome::Ok;
    bool dry_run = false;
    std::chrono::microseconds duration{0};
    Pinned pinned;  // what the offline part leaves without a CPU (or would: dry run)
    std::vector<PartitionChange> partitions;  // shrunk and restored (or would be shrunk)
    std::vector<AffinityRestore> affinity;    // given back (a revert, a rollback)
};
using ProfileAnswer = std::variant<ProfileDone, std::exception_ptr>;

// Putting a hold's CPUs back after an outside change: at most this many times per hold in
// any minute; beyond, violations are reported only (an outside writer that fights the hold
// does not make cpuhpd write in a loop).
inline constexpr std::size_t kMaxReputsPerMinute = 5;

// The batch running now, as the status shows it.
struct BatchInFlight {
    std::uint64_t batch_id = 0;
    Action action = Action::Offline;
    CpuSet cpus;  // the CPUs its requests named, together
    std::size_t requests = 0;
    std::size_t done = 0;  // its last progress step (0 of 0 before the first)
    std::size_t total = 0;
    std::chrono::system_clock::time_point since{};
};

// Changes one caller may have waiting for their answers (admission, queue and batch).
inline constexpr std::size_t kMaxUnansweredPerCaller = 2 * kMaxQueuedPerCaller;

class Engine {
public:
    // Runs a task on the owner's thread, later, in the order posted. Thread-safe.
    using Post = std::function<void(std::function<void()>)>;

    // Loads the topology cache and reads the machine (throws std::runtime_error when it has
    // no CPUs, or the state directory cannot be made). `writer` and `events` must outlive
    // the engine; tasks posted through `post` use the engine, which must outlive them.
    Engine(EngineSetup setup, AttributeWriter& writer, EngineEvents& events, Post post);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Start-up, in this order, before anything else is asked.
    // Undoes a batch the last engine left unfinished (its journal in the state directory).
    const RecoveryReport& recover();
    // Gives cpuset partitions back the online CPUs the last engine took from them;
    // `problem` says why the ledger was unreadable.
    std::vector<PartitionChange> settle_partitions(std::optional<std::string>& problem);
    // Loads the profile in force (its state file in the state directory).
    void load_active_profile();
    // Before recover(): loads the holds a restarted daemon left (state_dir/holds), none from
    // an earlier boot. They come back unattached: their CPUs stay held, and each ends with
    // its restore unless its holder re-attaches (attach_hold) before expire_unattached().
    // Returns how many came back.
    std::size_t load_holds();
    // The CPUs of the holds loaded (recovery leaves them as the holds have them).
    CpuSet loaded_held_cpus() const;
    // Starts the admission thread and the executor.
    void start();

    // Status.
    const MachineState& state() const { return state_; }  // the last read adopted
    const MachineState& refresh();                        // reads the machine now and adopts it
    // Any thread: reads the machine; the owner adopts it later, in the order of the reads.
    MachineState read();
    // Queues a read on the admission thread (at most one waits); ignored while busy, when
    // the batch's own reads cover what changed.
    void refresh_later();
    bool busy() const { return busy_; }
    // Any thread: the batch running now; none between batches.
    std::optional<BatchInFlight> batch_in_flight() const;
    bool stopping() const { return stopping_; }
    const EngineSettings& settings() const { return setup_.settings; }
    const RecoveryReport& last_recovery() const { return last_recovery_; }
    std::vector<Hold> holds() const { return holds_.list(); }
    const std::map<std::string, Profile>& profiles() const { return setup_.profiles; }
    std::optional<ActiveProfile> active_profile() const { return active_profile_; }

    // Resolves and queues the change off the owner's thread; `done` is called later on the
    // owner's thread, exactly once. Changes made while earlier ones wait for the admission
    // thread are admitted with them, against one read of the machine. Throws Refusal(Busy) at
    // once when stopping or when the caller has kMaxUnansweredPerCaller changes unanswered.
    void change(ChangeAsk ask, std::function<void(ChangeAnswer)> done);
    // Cancels the running batch `batch_id` (0: whichever runs); returns its id. Throws
    // Refusal(NoSuchBatch) when none such runs, Refusal(Busy) when stopping.
    std::uint64_t cancel(std::uint64_t batch_id);

    // Holds (engine_holds.cpp). Takes the hold and its change off the owner's thread;
    // `done` is called later, exactly once. Throws at once as change() does.
    void hold(HoldAsk ask, std::function<void(HoldOutcome)> done);
    // Ends hold `id` for `caller` and restores its CPUs if it asked; `done` gets the
    // restore's results. Throws Refusal(NoSuchHold) at once when there is no such hold,
    // Refusal(Busy) when stopping.
    void release(std::uint64_t id, const std::string& caller,
                 std::function<void(ReleaseAnswer)> done);
    // Ends hold `id` for `reason` (its holder left, ...); `done` may be empty.
    void end_hold(std::uint64_t id, const std::string& reason,
                  std::function<void(ReleaseAnswer)> done = {});
    // Hold `id` is held by `holder` from now on (a re-attach after a restart, or a new fd
    // for the same holder); returns it. Throws Refusal(NoSuchHold), Refusal(Busy) when
    // stopping. Whether the caller may is the service's to decide (the hold's uid).
    Hold attach_hold(std::uint64_t id, const std::string& holder);
    // The holds loaded at start-up whose holder has not re-attached.
    std::vector<std::uint64_t> unattached_holds() const;
    // The grace period is over: ends every hold still unattached, with its restore.
    void expire_unattached();

    // Profiles (engine_profiles.cpp). Applies `ask.name` (switching from the profile in
    // force with the fewest changes) off the owner's thread; `done` is called later,
    // exactly once. Throws Refusal at once: NoSuchProfile (unknown name, or nothing to
    // revert), Busy (stopping, or another profile change is in progress).
    void apply_profile(ProfileAsk ask, std::function<void(ProfileAnswer)> done);
    // The same with no name: brings back what the profile in force took.
    void revert_profile(ProfileAsk ask, std::function<void(ProfileAnswer)> done);

    // Refuses new changes, cancels the batch in flight (or lets it finish) and, once it is
    // over and the queued requests are answered Busy, posts `stopped`.
    void stop(bool cancel_batch, std::function<void()> stopped);
    // Ends the admission thread and the executor (after the batch in flight).
    void shutdown();

private:
    struct Unanswered {
        std::string caller;
        std::function<void(ChangeAnswer)> done;      // a change
        std::function<void(HoldOutcome)> hold_done;  // or a hold
    };
    struct ProfileRun;
    // A change waiting for the admission thread.
    struct WaitingChange {
        std::uint64_t token = 0;
        ChangeAsk ask;
        std::chrono::steady_clock::time_point received{};
        bool announced = false;  // Executor::expect_arrival() was called for it
    };
    using WaitingChanges = std::vector<WaitingChange>;

    void adopt(MachineState state);
    void notice(Notice::Level level, std::string text,
                std::vector<std::pair<std::string, std::string>> fields = {});
    // Counts a change of `caller` as unanswered (throws Refusal(Busy) beyond its share, or
    // when stopping) and returns its token; take_unanswered() ends that.
    std::uint64_t count_unanswered(const std::string& caller);
    std::optional<Unanswered> take_unanswered(std::uint64_t token);
    // Every task for the admission thread but change()'s goes through here: it closes the
    // open list of waiting changes, so that a change made after `task` is admitted after it.
    void post_admission(std::function<void()> task);
    // Admission thread: takes `changes` (no change joins them from now on), reads the machine
    // once and resolves and queues each change against that read, in the order they came.
    void admit_changes(const std::shared_ptr<WaitingChanges>& changes);
    void complete(std::uint64_t token, ChangeAnswer answer);
    // Queues `request` against `state`; `done` gets its result on the owner's thread. What
    // the executor refuses at once is thrown.
    void queue(Request request, const MachineState& state, std::function<void(RequestResult)> done);

    // Holds (engine_holds.cpp).
    void admit_hold(std::uint64_t token, const HoldAsk& ask,
                    std::chrono::steady_clock::time_point received);
    void finish_hold(std::uint64_t token, std::uint64_t id,
                     const std::function<void(const Hold&)>& bind, ChangeAnswer answer);
    // `putting_back`: the state the hold's queued put-backs (defend_holds) will have left
    // its CPUs in when the restore's batch runs (they are queued before it), by CPU.
    void restore_hold(const Hold& hold, const CpuSet& putting_online, const CpuSet& putting_offline,
                      std::function<void(ReleaseAnswer)> done);
    // Writes the holds in force to state_dir/holds (fsynced, renamed over the old file).
    void save_holds();
    // Owner thread, after a read was adopted: finds held CPUs that changed without cpuhpd,
    // reports them and (config enforce_holds) puts them back.
    void defend_holds();
    // The holder's own change of its held CPUs: what the hold defends follows it.
    void follow_holder_change(const std::string& caller, const RequestResult& result);

    // Profiles (engine_profiles.cpp).
    std::optional<Profile> profile_to_apply(const ProfileAsk& ask) const;
    void run_profile(const ProfileAsk& ask, const std::optional<Profile>& profile,
                     const std::optional<ActiveProfile>& active,
                     const std::function<void(ProfileAnswer)>& done);
    std::vector<Request> plan_profile_run(const ProfileAsk& ask,
                                          const std::optional<Profile>& profile,
                                          const std::optional<ActiveProfile>& active,
                                          const MachineState& state, ProfileDone& result);
    void finish_profile_run(ProfileRun& run, const RequestResult* result);
    void save_active_profile();

    EngineSetup setup_;
    SysfsPaths paths_;
    AttributeWriter& writer_;
    EngineEvents& events_;
    Post post_;
    FileJournal journal_;
    std::mutex read_mutex_;  // read() updates memory_, from any thread
    TopologyMemory memory_;
    std::optional<std::string> reported_save_error_;  // under read_mutex_
    BatchRunner runner_;

    // Owner thread only.
    MachineState state_;
    RecoveryReport last_recovery_;
    bool busy_ = false;
    bool stopping_ = false;
    bool stop_cancels_ = true;
    std::uint64_t next_token_ = 1;
    std::map<std::uint64_t, Unanswered> unanswered_;
    std::map<std::string, std::size_t> unanswered_by_caller_;
    std::optional<ActiveProfile> active_profile_;
    bool profile_changing_ = false;  // an apply or revert is queued or running

    // What defending one hold keeps (defend_holds), owner thread only.
    struct HoldGuard {
        // Of the hold's CPUs, the ones it keeps online (the hold's state, as its holder's own
        // changes left it); unset: as the hold's state says.
        std::optional<CpuSet> online;
        CpuSet known_wrong;  // found changed and reported already (until right once more)
        CpuSet reputting;    // being put back now
        std::vector<std::chrono::steady_clock::time_point> reputs;  // put back lately
    };
    std::map<std::uint64_t, HoldGuard> guards_;
    // The CPUs of `hold` that are to be online now.
    CpuSet expected_online(const Hold& hold) const;
    CpuSet loaded_held_;

    std::atomic<bool> refresh_queued_{false};  // a re-read waits to be started
    mutable std::mutex in_flight_mutex_;
    std::optional<BatchInFlight> in_flight_;  // under in_flight_mutex_; set by the worker
    HoldTable holds_;                         // any thread
    std::mutex waiting_mutex_;
    // The changes a change made now joins (under waiting_mutex_): their admit_changes() task
    // has neither started nor had another task posted behind it. None: the next change posts
    // a task of its own.
    std::shared_ptr<WaitingChanges> open_changes_;
    // Used on the admission thread only, once start() has made it; its worker calls into
    // everything above.
    std::unique_ptr<Executor> executor_;
    // Last: its tasks use everything above.
    std::unique_ptr<TaskThread> admission_;
};

}  // namespace cpuhpd
