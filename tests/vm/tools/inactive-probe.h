// What the guest tools (rt-push, dl-push, wake-spread) share: die(), start_thread(), and a probe
// that tells when a CPU has left cpu_active_mask while a hotplug batch runs.
// The tool defines TOOL_NAME before including this.
#ifndef CPUHPD_VM_TOOLS_INACTIVE_PROBE_H
#define CPUHPD_VM_TOOLS_INACTIVE_PROBE_H
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "monotonic.h"

static inline void die(const char *what)
{
	fprintf(stderr, TOOL_NAME ": %s: %s\n", what, strerror(errno));
	exit(2);
}

static inline pthread_t start_thread(void *(*fn)(void *))
{
	pthread_t t;
	int err = pthread_create(&t, NULL, fn, NULL);

	if (err) {
		errno = err;
		die("pthread_create");
	}
	return t;
}

// The probe: a thread that sleeps until probe_stop(), whose affinity is set to the
// watched CPU to see whether the kernel still takes it.
static int probe_pipe[2];
static atomic_int probe_tid;
static pthread_t probe_thread;

static void *probe_main(void *arg)
{
	char c;

	(void)arg;
	atomic_store(&probe_tid, (int)syscall(SYS_gettid));
	if (read(probe_pipe[0], &c, 1) < 0)
		die("read");
	return NULL;
}

static inline void probe_start(void)
{
	struct timespec ms = {0, 1000000};

	if (pipe(probe_pipe))
		die("pipe");
	probe_thread = start_thread(probe_main);
	while (!atomic_load(&probe_tid))
		nanosleep(&ms, NULL);
}

static inline void probe_stop(void)
{
	if (write(probe_pipe[1], "p", 1) != 1)
		die("write");
	pthread_join(probe_thread, NULL);
}

// 1 once sched_setaffinity() of the probe to {cpu} is refused with EINVAL: cpu left
// cpu_active_mask. The probe goes back to {home} after each success, as setting the
// mask it already has succeeds without a check.
static inline int probe_cpu_inactive(int cpu, int home)
{
	cpu_set_t one;
	pid_t probe = atomic_load(&probe_tid);

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(probe, sizeof(one), &one) == 0) {
		CPU_ZERO(&one);
		CPU_SET(home, &one);
		if (sched_setaffinity(probe, sizeof(one), &one))
			die("sched_setaffinity (probe home)");
		return 0;
	}
	if (errno != EINVAL)
		die("sched_setaffinity (probe)");
	return 1;
}

// Creates READY (the caller then starts its batch) and waits until cpu is inactive:
// 1 then, 0 after 60 s.
static inline int ready_then_wait_inactive(const char *ready, int cpu, int home)
{
	struct timespec ms = {0, 1000000};
	long long deadline = now_ns() + 60000000000LL;
	int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		die(ready);
	close(fd);
	while (!probe_cpu_inactive(cpu, home)) {
		if (now_ns() > deadline) {
			fprintf(stderr, TOOL_NAME ": cpu%d did not become inactive within 60 s\n",
				cpu);
			return 0;
		}
		nanosleep(&ms, NULL);
	}
	return 1;
}
#endif
