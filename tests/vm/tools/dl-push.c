// dl-push: is a SCHED_DEADLINE task pushed onto a CPU that a hotplug batch has
// deactivated but not yet taken down ("pending")? On the per-CPU path a CPU leaves the
// root domain's cpudl free set (set_rq_offline()) one grace period after it leaves
// cpu_active_mask; a batch that deactivates all of its CPUs first keeps each of them
// in that set until its own teardown.
//
//   dl-push CPU SRCCPU READYFILE
//
// Needs DEADLINE admission off (sched_rt_runtime_us = -1, the caller's job): a deadline
// task may then have any affinity. Thread A (8 ms every 10 ms) spins pinned to SRCCPU.
// Thread B (1 ms every 20 ms, relative deadline 20 ms) may run on SRCCPU and CPU, starts
// on CPU and sleeps 2 ms between wake-ups (clock_nanosleep: a real wake-up). Then
// READYFILE is created, and the caller writes a batch whose last CPU is CPU, then
// removes READYFILE. The main thread waits until CPU is inactive (sched_setaffinity()
// of a sleeping probe thread to {CPU} is refused with EINVAL) and notes the time.
// A wake-up of B after it cannot go to the inactive CPU (is_cpu_allowed()) and lands on
// SRCCPU behind A, whose deadline is earlier: the wake-up then pushes B to a CPU whose
// deadline is later (find_later_rq(), the cpudl free set). An active CPU would be
// right; a pending one is not: B would run there until its teardown moves it again.
// Prints one line:
//   dl-push cpu C src S b_wakes_before N b_on_cpu_before N b_wakes_after N
//           b_on_cpu_after N b_on_src_after N window_ms W
// (after = woken from a sleep that began once CPU was seen inactive, so that the
// wake-up itself came after the deactivation. A wake-up queued on CPU just before it,
// which a loaded TCG host can run more than 2 ms late, is not one: it made CI count
// 1 of 22 and 1 of 32 wake-ups on CPU when the rule was "woken 2 ms after".) The
// guest scenario bulk-dlpush runs it.
#define _GNU_SOURCE
#include <stdint.h>

#define TOOL_NAME "dl-push"
#include "inactive-probe.h"
#include "monotonic.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

// include/uapi/linux/sched/types.h, SCHED_ATTR_SIZE_VER0
struct dl_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

static const long long kBatchTimeoutNs = 60000000000LL;
static const long long kReadyTimeoutNs = 20000000000LL;

static int target, src, home = -1;
static atomic_int stop;
static atomic_int a_ready, b_ready;
static atomic_llong inactive_at; // 0 until the target CPU was seen inactive
static atomic_int b_wakes_before, b_on_target_before;
static atomic_int b_wakes_after, b_on_target_after, b_on_src_after;

static void set_mask(pid_t tid, int cpu1, int cpu2)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu1, &set);
	if (cpu2 >= 0)
		CPU_SET(cpu2, &set);
	if (sched_setaffinity(tid, sizeof(set), &set))
		die("sched_setaffinity");
}

static void set_deadline(long long runtime_ns, long long deadline_ns, long long period_ns)
{
	struct dl_attr attr = {
	    .size = sizeof(attr),
	    .sched_policy = SCHED_DEADLINE,
	    .sched_runtime = runtime_ns,
	    .sched_deadline = deadline_ns,
	    .sched_period = period_ns,
	};

	if (syscall(SYS_sched_setattr, 0, &attr, 0))
		die("sched_setattr (SCHED_DEADLINE; is sched_rt_runtime_us -1?)");
}

static void *a_main(void *arg)
{
	(void)arg;
	set_mask(0, src, -1);
	set_deadline(8000000, 10000000, 10000000);
	atomic_store(&a_ready, 1);
	while (!atomic_load(&stop))
		;
	return NULL;
}

static void *b_main(void *arg)
{
	struct timespec nap = {0, 2000000};
	long long slept, t0;
	int cpu;

	(void)arg;
	set_mask(0, target, -1);
	while (sched_getcpu() != target)
		sched_yield();
	set_deadline(1000000, 20000000, 20000000);
	// On the target CPU: widening the mask does not move B.
	set_mask(0, target, src);
	atomic_store(&b_ready, 1);
	while (!atomic_load(&stop)) {
		slept = now_ns();
		clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL);
		cpu = sched_getcpu();
		t0 = atomic_load(&inactive_at);
		if (!t0) {
			atomic_fetch_add(&b_wakes_before, 1);
			if (cpu == target)
				atomic_fetch_add(&b_on_target_before, 1);
		} else if (slept >= t0) {
			atomic_fetch_add(&b_wakes_after, 1);
			if (cpu == target)
				atomic_fetch_add(&b_on_target_after, 1);
			else if (cpu == src)
				atomic_fetch_add(&b_on_src_after, 1);
		}
	}
	return NULL;
}

static void wait_for(atomic_int *flag, const char *what)
{
	struct timespec ms = {0, 1000000};
	long long deadline = now_ns() + kReadyTimeoutNs;

	while (!atomic_load(flag)) {
		if (now_ns() > deadline) {
			fprintf(stderr, "dl-push: %s not ready within 20 s\n", what);
			exit(3);
		}
		nanosleep(&ms, NULL);
	}
}

int main(int argc, char **argv)
{
	struct timespec ms = {0, 1000000};
	pthread_t a, b;
	cpu_set_t allowed;
	long long seen, done;
	int cpu;

	if (argc != 4) {
		fprintf(stderr, "usage: dl-push CPU SRCCPU READYFILE\n");
		return 2;
	}
	target = atoi(argv[1]);
	src = atoi(argv[2]);
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		die("sched_getaffinity");
	for (cpu = 0; cpu < CPU_SETSIZE && home < 0; cpu++)
		if (cpu != target && cpu != src && CPU_ISSET(cpu, &allowed))
			home = cpu;
	if (home < 0 || target == src || !CPU_ISSET(target, &allowed) ||
	    !CPU_ISSET(src, &allowed)) {
		fprintf(stderr, "dl-push: cpu%d, cpu%d and one more CPU must be allowed\n", target,
			src);
		return 2;
	}
	set_mask(0, home, -1);
	probe_start();
	a = start_thread(a_main);
	wait_for(&a_ready, "A (deadline, on the source CPU)");
	b = start_thread(b_main);
	wait_for(&b_ready, "B (deadline, on the target CPU)");

	if (!ready_then_wait_inactive(argv[3], target, home)) {
		atomic_store(&stop, 1);
		return 3;
	}
	seen = now_ns();
	atomic_store(&inactive_at, seen);
	// until the caller's batch has returned (it removes READYFILE), 60 s at most
	while (access(argv[3], F_OK) == 0 && now_ns() - seen < kBatchTimeoutNs)
		nanosleep(&ms, NULL);
	done = now_ns();
	atomic_store(&stop, 1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	probe_stop();

	printf("dl-push cpu %d src %d b_wakes_before %d b_on_cpu_before %d b_wakes_after %d "
	       "b_on_cpu_after %d b_on_src_after %d window_ms %lld\n",
	       target, src, atomic_load(&b_wakes_before), atomic_load(&b_on_target_before),
	       atomic_load(&b_wakes_after), atomic_load(&b_on_target_after),
	       atomic_load(&b_on_src_after), (done - seen) / 1000000);
	return 0;
}
