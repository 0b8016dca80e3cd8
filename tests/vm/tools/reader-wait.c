// reader-wait: how long a cpus_read_lock() reader waits while CPU hotplug runs.
//
//   reader-wait STOPFILE
//
// Calls membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) in a loop until STOPFILE exists; the
// kernel takes cpus_read_lock() in it (membarrier_global_expedited()), so a call that
// meets a hotplug writer waits for cpu_hotplug_lock. Prints one line:
//   calls N max_us M p99_us P
// The guest scenario bulk-reader starts it around a batch and around a per-CPU loop.
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "monotonic.h"

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	enum { kMaxSamples = 1 << 20 };
	static long long waits[kMaxSamples];
	long long n = 0, max = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: reader-wait STOPFILE\n");
		return 2;
	}
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) != 0) {
		perror("reader-wait: membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)");
		return 1;
	}
	while (access(argv[1], F_OK) != 0) {
		long long t0 = now_ns();

		syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
		long long w = now_ns() - t0;

		if (w > max)
			max = w;
		if (n < kMaxSamples)
			waits[n] = w;
		n++;
	}
	long long kept = n < kMaxSamples ? n : kMaxSamples;

	qsort(waits, (size_t)kept, sizeof(waits[0]), cmp);
	printf("calls %lld max_us %lld p99_us %lld\n", n, max / 1000,
	       kept ? waits[kept * 99 / 100] / 1000 : 0);
	return 0;
}
