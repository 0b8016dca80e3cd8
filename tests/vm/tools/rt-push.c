// rt-push: is an RT task pushed off a CPU that a hotplug batch has deactivated but not
// yet taken down ("pending") when a higher one preempts it there, as it is off an
// active CPU?
//
//   rt-push CPU HOGCPU READYFILE
//
// Thread L (SCHED_FIFO 10) starts on CPU, then may run on every CPU but the main
// thread's, and spins. Thread H (SCHED_FIFO 20) is pinned to CPU and sleeps. Thread G
// (SCHED_FIFO 30) spins on HOGCPU (it may also run on the highest other CPU), so that
// the hotplug thread of HOGCPU gets only what RT throttling (6.1) or the fair server
// (6.12) leaves it: 50 ms after 950 ms.
// Then READYFILE is created, and the caller starts a batch of HOGCPU (first)
// and CPU: the batch deactivates both, and its teardown of HOGCPU then waits for its
// hotplug thread, so no CPU runs stop_machine() for a while, and no CPU pulls RT tasks
// after it. The main thread (on the lowest CPU that is neither) waits until CPU is
// inactive: sched_setaffinity() of a sleeping probe thread to {CPU} fails with EINVAL
// once CPU left cpu_active_mask. Then it wakes H, which preempts L on CPU. The switch
// to H pushes L, an RT task that may run elsewhere, to a CPU running something of lower
// priority before H runs a user instruction (push_rt_tasks(), a balance callback of the
// switch): the first thing H does is read L's CPU (/proc, "processor"). An L that is not
// pushed is still queued on CPU behind H. H then spins until L is elsewhere, for
// 500 ms at most, and G stops. Prints one line:
//   rt-push cpu C l_on_cpu_at_wake 0|1 l_cpu_when_h_ran L1 l_pushed_at_preemption 0|1
//           h_spin_us N l_cpu_after L2
// The guest scenario bulk-rtpush runs it.
#define _GNU_SOURCE

#define TOOL_NAME "rt-push"
#include "inactive-probe.h"
#include "monotonic.h"

enum { kLowPrio = 10, kHighPrio = 20, kHogPrio = 30 };
static const long long kHighSpinNs = 500000000LL;

static int target, hog_cpu, home = -1;
static cpu_set_t everywhere, everywhere_but_home;
static int hog_spare = -1;
static int wake_pipe[2];
static atomic_int low_cpu = -1; // the CPU L last ran on
static atomic_int low_ready;	// L spins on the target CPU, everywhere allowed
static atomic_int hog_ready;	// G spins on the hog CPU
static atomic_int high_ready;	// H is pinned to the target CPU and SCHED_FIFO
static atomic_int stop;		// L ends
static atomic_int low_tid;
static atomic_int low_cpu_when_high_ran = -1;
static atomic_int low_cpu_after = -1;
static atomic_llong high_spin_ns;

static void pin_self(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		die("sched_setaffinity");
}

static void set_fifo(int prio)
{
	struct sched_param sp = {.sched_priority = prio};

	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		die("SCHED_FIFO");
}

// The CPU a thread of this process is on (field 39 of /proc/self/task/TID/stat), or -1.
static int task_cpu(int tid)
{
	char path[64], buf[1024], *p;
	int fd, field, cpu = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strrchr(buf, ')'); // the command name may hold spaces
	for (field = 2; p && field < 39; field++)
		p = strchr(p + 1, ' ');
	if (p)
		cpu = atoi(p + 1);
	return cpu;
}

static void *low_main(void *arg)
{
	(void)arg;
	atomic_store(&low_tid, (int)syscall(SYS_gettid));
	pin_self(target);
	set_fifo(kLowPrio);
	while (sched_getcpu() != target)
		sched_yield();
	// Running on the target CPU: widening the mask does not move L. Not on the main
	// thread's CPU: L spinning there would leave it 50 ms a second.
	if (sched_setaffinity(0, sizeof(everywhere_but_home), &everywhere_but_home))
		die("sched_setaffinity (everywhere)");
	atomic_store(&low_ready, 1);
	while (!atomic_load(&stop))
		atomic_store(&low_cpu, sched_getcpu());
	return NULL;
}

static void *hog_main(void *arg)
{
	cpu_set_t two;

	(void)arg;
	pin_self(hog_cpu);
	set_fifo(kHogPrio);
	while (sched_getcpu() != hog_cpu)
		sched_yield();
	// Not pinned to the hog CPU alone: if the hotplug thread gets there before G
	// stops (6.12's fair server), G moves to a spare CPU (neither the target nor the
	// main thread's) without having its affinity broken.
	CPU_ZERO(&two);
	CPU_SET(hog_cpu, &two);
	CPU_SET(hog_spare, &two);
	if (sched_setaffinity(0, sizeof(two), &two))
		die("sched_setaffinity (hog)");
	atomic_store(&hog_ready, 1);
	while (!atomic_load(&stop))
		;
	return NULL;
}

static void *high_main(void *arg)
{
	long long start;
	int tid, cpu;
	char c;

	(void)arg;
	pin_self(target);
	set_fifo(kHighPrio);
	atomic_store(&high_ready, 1);
	if (read(wake_pipe[0], &c, 1) != 1)
		die("read");
	tid = atomic_load(&low_tid);
	// First thing once H runs: where is L?
	atomic_store(&low_cpu_when_high_ran, task_cpu(tid));
	start = now_ns();
	do
		cpu = task_cpu(tid);
	while (cpu == target && now_ns() - start < kHighSpinNs);
	atomic_store(&high_spin_ns, now_ns() - start);
	atomic_store(&low_cpu_after, cpu);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec ms = {0, 1000000};
	pthread_t low, high, hog;
	int on_target, cpu, first;

	if (argc != 4) {
		fprintf(stderr, "usage: rt-push CPU HOGCPU READYFILE\n");
		return 2;
	}
	target = atoi(argv[1]);
	hog_cpu = atoi(argv[2]);
	if (sched_getaffinity(0, sizeof(everywhere), &everywhere))
		die("sched_getaffinity");
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (cpu == target || cpu == hog_cpu || !CPU_ISSET(cpu, &everywhere))
			continue;
		if (home < 0)
			home = cpu;
		else
			hog_spare = cpu;
	}
	if (hog_spare < 0 || target == hog_cpu || !CPU_ISSET(target, &everywhere) ||
	    !CPU_ISSET(hog_cpu, &everywhere)) {
		fprintf(stderr, "rt-push: cpu%d, cpu%d and two more CPUs must be allowed\n", target,
			hog_cpu);
		return 2;
	}
	everywhere_but_home = everywhere;
	CPU_CLR(home, &everywhere_but_home);
	pin_self(home);
	if (pipe(wake_pipe))
		die("pipe");
	probe_start();
	// H first, and L only once H is pinned and SCHED_FIFO: an H still in SCHED_OTHER
	// on the target behind a spinning L would get the CPU only when RT throttling
	// (6.1, no fair server) stops L, after the batch has deactivated the target.
	high = start_thread(high_main);
	while (!atomic_load(&high_ready))
		nanosleep(&ms, NULL);
	low = start_thread(low_main);
	while (!atomic_load(&low_ready) || !atomic_load(&low_tid))
		nanosleep(&ms, NULL);
	hog = start_thread(hog_main);
	while (!atomic_load(&hog_ready))
		nanosleep(&ms, NULL);

	if (!ready_then_wait_inactive(argv[3], target, home)) {
		atomic_store(&stop, 1);
		return 3;
	}
	on_target = atomic_load(&low_cpu) == target;
	if (write(wake_pipe[1], "w", 1) != 1)
		die("write");
	pthread_join(high, NULL);
	atomic_store(&stop, 1);
	pthread_join(low, NULL);
	pthread_join(hog, NULL);
	probe_stop();

	first = atomic_load(&low_cpu_when_high_ran);
	printf("rt-push cpu %d l_on_cpu_at_wake %d l_cpu_when_h_ran %d l_pushed_at_preemption %d "
	       "h_spin_us %lld l_cpu_after %d\n",
	       target, on_target, first, first >= 0 && first != target,
	       atomic_load(&high_spin_ns) / 1000, atomic_load(&low_cpu_after));
	return 0;
}
