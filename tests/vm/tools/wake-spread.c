// wake-spread: where do the tasks of CPUs that go offline wake up while they go, and
// where are they right after? Do they herd onto one CPU?
//
//   wake-spread CPULIST PER_CPU READYFILE
//
// Starts PER_CPU threads on each CPU of CPULIST (comma-separated numbers); each runs
// there first, then gets the process's whole affinity (widening the mask does not move
// it) and sleeps 1 ms between wake-ups (clock_nanosleep: real wake-ups), noting its CPU
// after each. Then READYFILE is created; the caller takes the CPUs down (a batch, or
// one cpuN/online write at a time) and removes READYFILE. Every wake-up in between on a
// CPU outside CPULIST (a thread that has left) is counted per CPU; then where the
// threads are is sampled 0, 10, 100 and 1000 ms after. Prints:
//   wake-spread during left_wakes W cpus_used U top_cpu C top_wakes T
//   wake-spread after_ms MS threads N max_on_one M cpu C cpus_used U on_listed L
// (on_listed: threads last seen on a CPU of CPULIST, which should be offline by then.)
// The guest scenario bulk-spread runs it for both paths.
#define _GNU_SOURCE
#include <stdint.h>

#define TOOL_NAME "wake-spread"
#include "inactive-probe.h"
#include "monotonic.h"

enum { kMaxCpus = 1024, kMaxThreads = 512 };

static int nthreads;
static int home_cpu[kMaxThreads];
static atomic_int last_cpu[kMaxThreads];
static atomic_int started, counting, stop;
static atomic_int wakes_on[kMaxCpus];
static cpu_set_t process_mask;
static int listed[kMaxCpus];

static void *sleeper(void *arg)
{
	int i = (int)(intptr_t)arg;
	struct timespec nap = {0, 1000000};
	cpu_set_t one;
	int cpu;

	CPU_ZERO(&one);
	CPU_SET(home_cpu[i], &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		die("sched_setaffinity (home)");
	while (sched_getcpu() != home_cpu[i])
		sched_yield();
	if (sched_setaffinity(0, sizeof(process_mask), &process_mask))
		die("sched_setaffinity (widen)");
	atomic_store(&last_cpu[i], home_cpu[i]);
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&stop)) {
		clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL);
		cpu = sched_getcpu();
		atomic_store(&last_cpu[i], cpu);
		if (atomic_load(&counting) && cpu >= 0 && cpu < kMaxCpus && !listed[cpu])
			atomic_fetch_add(&wakes_on[cpu], 1);
	}
	return NULL;
}

static void sample(long long after_ms)
{
	int on[kMaxCpus] = {0};
	int i, cpu, used = 0, max = 0, max_cpu = -1, on_listed = 0;

	for (i = 0; i < nthreads; i++) {
		cpu = atomic_load(&last_cpu[i]);
		if (cpu < 0 || cpu >= kMaxCpus)
			continue;
		if (!on[cpu]++)
			used++;
		if (on[cpu] > max) {
			max = on[cpu];
			max_cpu = cpu;
		}
		if (listed[cpu])
			on_listed++;
	}
	printf(
	    "wake-spread after_ms %lld threads %d max_on_one %d cpu %d cpus_used %d on_listed %d\n",
	    after_ms, nthreads, max, max_cpu, used, on_listed);
}

static void sleep_ms(long long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	static const long long kAt[] = {0, 10, 100, 1000};
	pthread_t threads[kMaxThreads];
	long long t0, deadline;
	int per_cpu, i, k, fd, cpu, total = 0, used = 0, top = -1;
	char *list, *tok;

	if (argc != 4) {
		fprintf(stderr, "usage: wake-spread CPULIST PER_CPU READYFILE\n");
		return 2;
	}
	per_cpu = atoi(argv[2]);
	if (sched_getaffinity(0, sizeof(process_mask), &process_mask))
		die("sched_getaffinity");
	list = strdup(argv[1]);
	for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		cpu = atoi(tok);
		if (cpu < 0 || cpu >= kMaxCpus || !CPU_ISSET(cpu, &process_mask)) {
			fprintf(stderr, "wake-spread: cpu%d is not allowed\n", cpu);
			return 2;
		}
		listed[cpu] = 1;
		for (k = 0; k < per_cpu && nthreads < kMaxThreads; k++)
			home_cpu[nthreads++] = cpu;
	}
	for (i = 0; i < nthreads; i++) {
		atomic_store(&last_cpu[i], -1);
		if (pthread_create(&threads[i], NULL, sleeper, (void *)(intptr_t)i))
			die("pthread_create");
	}
	deadline = now_ns() + 20000000000LL;
	while (atomic_load(&started) < nthreads) {
		if (now_ns() > deadline) {
			fprintf(stderr, "wake-spread: threads not on their CPUs within 20 s\n");
			return 3;
		}
		sleep_ms(1);
	}
	atomic_store(&counting, 1);
	fd = open(argv[3], O_CREAT | O_WRONLY, 0644);
	if (fd < 0)
		die("create READYFILE");
	close(fd);
	deadline = now_ns() + 120000000000LL;
	while (access(argv[3], F_OK) == 0 && now_ns() < deadline)
		sleep_ms(1);
	atomic_store(&counting, 0);
	t0 = now_ns();
	for (i = 0; i < kMaxCpus; i++) {
		k = atomic_load(&wakes_on[i]);
		total += k;
		if (k)
			used++;
		if (k && (top < 0 || k > atomic_load(&wakes_on[top])))
			top = i;
	}
	printf("wake-spread during left_wakes %d cpus_used %d top_cpu %d top_wakes %d\n", total,
	       used, top, top < 0 ? 0 : atomic_load(&wakes_on[top]));
	for (k = 0; k < (int)(sizeof(kAt) / sizeof(kAt[0])); k++) {
		long long wait = t0 + kAt[k] * 1000000 - now_ns();

		if (wait > 0)
			sleep_ms(wait / 1000000);
		sample(kAt[k]);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
