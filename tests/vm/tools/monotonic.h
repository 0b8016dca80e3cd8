// now_ns(): CLOCK_MONOTONIC in nanoseconds, for the guest tools' timings.
#ifndef CPUHPD_VM_TOOLS_MONOTONIC_H
#define CPUHPD_VM_TOOLS_MONOTONIC_H
#include <time.h>

static inline long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
#endif
