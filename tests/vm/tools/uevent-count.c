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
	long n_off = 0, n_on = 0;

	while ((opt = getopt(argc, argv, "t:n:r:v")) != -1) {
		switch (opt) {
		case 't': secs = atof(optarg); break;
		case 'n': limit = atol(optarg); break;
		case 'r': ready = optarg; break;
		case 'v': verbose = 1; break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-n N] [-r READYFILE] [-v]\n", argv[0]);
			return 1;
		}
	}

	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	if (fd < 0) {
		perror("uevent-count: socket");
		return 1;
	}
	int rcvbuf = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_pid = 0, .nl_groups = 1 };
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("uevent-count: bind");
		return 1;
	}
	if (ready) {
		int r = open(ready, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (r >= 0)
			close(r);
	}

	struct sigaction act = { .sa_handler = on_signal }; /* no SA_RESTART */
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
		struct pollfd p = { .fd = fd, .events = POLLIN };
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
		}
	}
	printf("offline=%ld online=%ld\n", n_off, n_on);
	printf("cpus:");
	for (int i = 0; i < MAXCPU; i++)
		if (off[i] || on[i])
			printf(" cpu%d:-%d/+%d", i, off[i], on[i]);
	printf("\n");
	fflush(stdout);
	return 0;
}
