/*
 * uevent-count: counts CPU hotplug uevents in the guest (built -static).
 *
 *   uevent-count [-t SECONDS] [-n N] [-r READYFILE] [-v]
 *
 * Listens on NETLINK_KOBJECT_UEVENT, multicast group 1 (the kernel's own
 * messages, not udev's), and counts messages with SUBSYSTEM=cpu and
 * ACTION=offline or ACTION=online. Stops after SECONDS (default 10) or as
 * soon as N matching messages have been seen (default: no limit). When the
 * socket is bound it creates READYFILE (so a script can start the change
 * only once nothing can be missed). SIGTERM or SIGINT end it too, after
 * draining what is already queued on the socket (the kernel queues a CPU's
 * uevent before the sysfs write that changed it returns, so "write; kill"
 * misses nothing). -v prints "ACTION DEVPATH" for each matching message on
 * stderr.
 * Prints one line: "offline=A online=B" and, per CPU, "cpuN:-A/+B" entries
 * on a second line ("cpus: cpu8:-1/+0 ..."). Exit 0, or 1 on a setup error.
 *
 * -c CGROUP (a cgroup v2 directory with the cpuset controller): act as a
 * udev rule or an orchestrator would, at once on each ACTION=online for cpuN:
 * read the root cgroup's cpuset.cpus.effective (the parent directory of
 * CGROUP must be the root) and check that N is in it, then write N to
 * CGROUP/cpuset.cpus and check that CGROUP/cpuset.cpus.effective is then N.
 * Prints a third line "cpuset: cpuN:eff=1/write=ok/child=1 ..." (eff=0 if N
 * was missing from the root; write=E<errno> if the write failed; child=0 if
 * the child's effective CPUs were not N) and a fourth, "cpuset-bad=K", the
 * number of CPUs for which any of the three failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXCPU 1024

/* Whether cpulist TEXT ("0-3,8,10-11\n") contains CPU. */
static int cpulist_has(const char *text, int cpu)
{
	const char *p = text;

	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return 0;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (cpu >= a && cpu <= b)
			return 1;
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

/* The text of DIR/FILE (empty if unreadable), in BUF of LEN bytes. */
static char *read_cg(const char *dir, const char *file, char *buf, size_t len)
{
	char path[512];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

/* Reads the root's cpuset.cpus.effective, then moves the child to CPU. */
static void cpuset_probe(const char *root, const char *child, int cpu, char *eff, int *werr,
			 char *in_child)
{
	char path[512], text[4096], val[16];
	int fd;

	*eff = (char)cpulist_has(read_cg(root, "cpuset.cpus.effective", text, sizeof(text)), cpu);
	snprintf(path, sizeof(path), "%s/cpuset.cpus", child);
	snprintf(val, sizeof(val), "%d\n", cpu);
	*werr = 0;
	errno = 0;
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, val, strlen(val)) < 0)
		*werr = errno ? errno : EIO;
	if (fd >= 0)
		close(fd);
	read_cg(child, "cpuset.cpus.effective", text, sizeof(text));
	*in_child = (char)(cpulist_has(text, cpu) && !strchr(text, ',') && !strchr(text, '-'));
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int main(int argc, char **argv)
{
	double secs = 10;
	long limit = -1;
	const char *ready = NULL;
	int verbose = 0, opt;
	static int off[MAXCPU], on[MAXCPU];
	static char probed[MAXCPU], eff[MAXCPU], in_child[MAXCPU];
	static int werr[MAXCPU];
	const char *cgroup = NULL;
	char cgroot[512] = "";
	long n_off = 0, n_on = 0;

	while ((opt = getopt(argc, argv, "t:n:r:vc:")) != -1) {
		switch (opt) {
		case 'c':
			cgroup = optarg;
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'n':
			limit = atol(optarg);
			break;
		case 'r':
			ready = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-t SECONDS] [-n N] [-r READYFILE] [-v] [-c CGROUP]\n",
				argv[0]);
			return 1;
		}
	}
	if (cgroup) {
		const char *slash = strrchr(cgroup, '/');

		if (!slash || slash == cgroup || (size_t)(slash - cgroup) >= sizeof(cgroot)) {
			fprintf(stderr, "uevent-count: -c needs a path like /sys/fs/cgroup/NAME\n");
			return 1;
		}
		memcpy(cgroot, cgroup, (size_t)(slash - cgroup));
	}

	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	if (fd < 0) {
		perror("uevent-count: socket");
		return 1;
	}
	int rcvbuf = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_pid = 0, .nl_groups = 1};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("uevent-count: bind");
		return 1;
	}
	if (ready) {
		int r = open(ready, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (r >= 0)
			close(r);
	}

	struct sigaction act = {.sa_handler = on_signal}; /* no SA_RESTART */
	sigemptyset(&act.sa_mask);
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);

	long deadline = now_ms() + (long)(secs * 1000);
	int draining = 0;
	static char buf[16384];
	while (limit < 0 || n_off + n_on < limit) {
		if (stop && !draining) {
			draining = 1;
			deadline = now_ms() + 200;
		}
		long left = deadline - now_ms();
		if (left <= 0)
			break;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int pr = poll(&p, 1, draining ? 0 : (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			break;
		ssize_t len = recv(fd, buf, sizeof(buf) - 1, 0);
		if (len <= 0) {
			if (len < 0 && errno == ENOBUFS)
				fprintf(stderr, "uevent-count: ENOBUFS (messages lost)\n");
			continue;
		}
		buf[len] = 0;
		const char *action = NULL, *subsystem = NULL, *devpath = NULL;
		for (char *s = buf; s < buf + len; s += strlen(s) + 1) {
			if (!strncmp(s, "ACTION=", 7))
				action = s + 7;
			else if (!strncmp(s, "SUBSYSTEM=", 10))
				subsystem = s + 10;
			else if (!strncmp(s, "DEVPATH=", 8))
				devpath = s + 8;
		}
		if (!action || !subsystem || strcmp(subsystem, "cpu"))
			continue;
		int is_off = !strcmp(action, "offline"), is_on = !strcmp(action, "online");
		if (!is_off && !is_on)
			continue;
		int cpu = -1;
		const char *c = devpath ? strrchr(devpath, '/') : NULL;
		if (c && !strncmp(c, "/cpu", 4))
			cpu = atoi(c + 4);
		if (verbose)
			fprintf(stderr, "uevent %s %s\n", action, devpath ? devpath : "?");
		if (is_off)
			n_off++;
		else
			n_on++;
		if (cpu >= 0 && cpu < MAXCPU) {
			if (is_off)
				off[cpu]++;
			else
				on[cpu]++;
			if (is_on && cgroup) {
				cpuset_probe(cgroot, cgroup, cpu, &eff[cpu], &werr[cpu],
					     &in_child[cpu]);
				probed[cpu] = 1;
			}
		}
	}
	printf("offline=%ld online=%ld\n", n_off, n_on);
	printf("cpus:");
	for (int i = 0; i < MAXCPU; i++)
		if (off[i] || on[i])
			printf(" cpu%d:-%d/+%d", i, off[i], on[i]);
	printf("\n");
	if (cgroup) {
		int bad = 0;

		printf("cpuset:");
		for (int i = 0; i < MAXCPU; i++) {
			if (!probed[i])
				continue;
			if (werr[i])
				printf(" cpu%d:eff=%d/write=E%d/child=%d", i, eff[i], werr[i],
				       in_child[i]);
			else
				printf(" cpu%d:eff=%d/write=ok/child=%d", i, eff[i], in_child[i]);
			bad += !eff[i] || werr[i] || !in_child[i];
		}
		printf("\ncpuset-bad=%d\n", bad);
	}
	fflush(stdout);
	return 0;
}
