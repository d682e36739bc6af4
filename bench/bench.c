/*
 * bench.c - helpers shared by the benchmark programs; see bench.h.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s[%d]: ", bench_prog, (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

uint64_t bench_parse_size(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		bench_die("%s: bad number '%s'", opt, s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		bench_die("%s: bad suffix in '%s'", opt, s);
	return v;
}

static int cpu_parent = -1, cpu_child = -1;
static char cpus_text[32] = "-";

void bench_set_cpus(const char *spec)
{
	char *end;
	long p, c;

	p = strtol(spec, &end, 10);
	c = p;
	if (*end == ',')
		c = strtol(end + 1, &end, 10);
	if (*end || p < 0 || c < 0 || p >= CPU_SETSIZE || c >= CPU_SETSIZE)
		bench_die("-a: expected CPU or CPU,CPU, got '%s'", spec);
	cpu_parent = (int)p;
	cpu_child = (int)c;
	snprintf(cpus_text, sizeof(cpus_text), "%ld,%ld", p, c);
}

const char *bench_cpus(void)
{
	return cpus_text;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		bench_die("sched_setaffinity(%d): %s", cpu, strerror(errno));
}

pid_t bench_spawn(int (*child_main)(int ctl, void *arg), void *arg, int *ctl)
{
	pid_t parent = getpid(), pid;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		bench_die("socketpair: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		bench_die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(sv[0]);
		/* Die with the parent, even if it is SIGKILLed. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		alarm(BENCH_WATCHDOG_S);
		pin(cpu_child);
		_exit(child_main(sv[1], arg));
	}
	close(sv[1]);
	pin(cpu_parent);
	*ctl = sv[0];
	return pid;
}

int bench_reap(pid_t pid, int grace_ms)
{
	int status = 0;

	for (int waited = 0;; waited++) {
		pid_t r = waitpid(pid, &status, waited < grace_ms ? WNOHANG : 0);

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return -1;
		if (waited == grace_ms) {
			fprintf(stderr, "%s: child %d still running after %d ms, "
				"killing it\n", bench_prog, (int)pid, grace_ms);
			kill(pid, SIGKILL);
		} else {
			usleep(1000);
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		fprintf(stderr, "%s: child killed by signal %d\n", bench_prog,
			WTERMSIG(status));
	return -1;
}

void bench_ctl_send_port(int ctl, int port)
{
	uint32_t v = (uint32_t)port;

	if (bench_write_full(ctl, &v, sizeof(v)))
		bench_die("control socket: %s", strerror(errno));
}

int bench_ctl_recv_port(int ctl)
{
	uint32_t v = 0;

	if (bench_read_full(ctl, &v, sizeof(v)) || v == 0 || v > 65535)
		bench_die("peer failed before it was ready");
	return (int)v;
}

int bench_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int bench_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void set_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		bench_die("TCP_NODELAY: %s", strerror(errno));
}

int bench_tcp_listen(int *port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		bench_die("listen 127.0.0.1:0: %s", strerror(errno));
	*port = ntohs(sa.sin_port);
	return fd;
}

int bench_tcp_accept(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		bench_die("accept: %s", strerror(errno));
	set_nodelay(fd);
	return fd;
}

int bench_tcp_connect(int port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		bench_die("connect 127.0.0.1:%d: %s", port, strerror(errno));
	set_nodelay(fd);
	return fd;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with at least pct% at or below it. */
static uint64_t percentile(const uint64_t *sorted, size_t n, unsigned pct)
{
	size_t rank = (n * pct + 99) / 100;

	return sorted[rank ? rank - 1 : 0];
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

double bench_cpu_s(void)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return tv_s(self.ru_utime) + tv_s(self.ru_stime) + tv_s(kids.ru_utime) +
	       tv_s(kids.ru_stime);
}

void bench_report_lat(const char *impl, const char *mode, uint64_t *ns,
		      size_t n, size_t total)
{
	long double sum = 0;

	if (n == 0)
		bench_die("no samples");
	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += ns[i];
	printf("RESULT lat %s %s p50_us=%.3f p99_us=%.3f mean_us=%.3f n=%zu "
	       "cpu_us=%.3f cpus=%s\n", impl, mode,
	       percentile(ns, n, 50) / 1e3, percentile(ns, n, 99) / 1e3,
	       (double)(sum / n) / 1e3, n, bench_cpu_s() * 1e6 / (double)total,
	       cpus_text);
	fflush(stdout);
}

void bench_report_tput(const char *impl, const char *mode, uint64_t bytes,
		       uint64_t ns, uint64_t total)
{
	if (ns == 0)
		bench_die("no time elapsed");
	printf("RESULT tput %s %s gbps=%.3f bytes=%llu secs=%.3f cpu_s_gb=%.3f "
	       "cpus=%s\n", impl, mode, (double)bytes / (double)ns,
	       (unsigned long long)bytes, ns / 1e9,
	       bench_cpu_s() / ((double)total / 1e9), cpus_text);
	fflush(stdout);
}
