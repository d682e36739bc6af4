/*
 * lat_plain.c - baseline for round-trip latency: plain blocking TCP
 * sockets with TCP_NODELAY over loopback, two processes.  The client
 * write()s SIZE bytes and read()s the same SIZE bytes back; the server
 * (forked child) read()s SIZE bytes and write()s them back.
 *
 *   lat_plain [-a CPU[,CPU]] [-s SIZE] [-n ITERS] [-w WARMUP] [-E]
 *
 * -a pins the client and the server (see bench.h); -E waits in epoll_wait
 * before each read (see ev_setup).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "bench.h"

const char *bench_prog = "lat_plain";

struct opts {
	size_t size;  /* message bytes */
	long iters;   /* measured round trips */
	long warmup;  /* unmeasured round trips first */
	int epoll;    /* -E: wait in epoll_wait, then read non-blocking */
};

/*
 * -E: the smallest event loop: one epoll_wait before every read of a
 * non-blocking socket, like any event-driven library has to do.  Not the
 * baseline; a reference row that shows what the extra system call alone
 * costs.
 */
static int ev_setup(int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		bench_die("epoll setup: %s", strerror(errno));
	return ep;
}

/* Read len bytes; with ep >= 0, wait in epoll_wait whenever none is ready. */
static int read_msg(int ep, int fd, void *buf, size_t len)
{
	char *p = buf;
	struct epoll_event ev;

	if (ep < 0)
		return bench_read_full(fd, buf, len);
	while (len) {
		ssize_t n;

		if (epoll_wait(ep, &ev, 1, -1) < 0 && errno != EINTR)
			return -1;
		n = read(fd, p, len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
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

static int server_main(int ctl, void *arg)
{
	const struct opts *o = arg;
	char *buf = malloc(o->size ? o->size : 1);
	int lfd, fd, port, ep = -1;

	if (!buf)
		bench_die("out of memory");
	lfd = bench_tcp_listen(&port);
	bench_ctl_send_port(ctl, port);
	fd = bench_tcp_accept(lfd);
	close(lfd);
	if (o->epoll)
		ep = ev_setup(fd);
	for (;;) {
		if (read_msg(ep, fd, buf, o->size)) {
			if (errno == 0)
				break; /* client done */
			bench_die("server read: %s", strerror(errno));
		}
		if (bench_write_full(fd, buf, o->size))
			bench_die("server write: %s", strerror(errno));
	}
	close(fd);
	if (ep >= 0)
		close(ep);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .size = 32, .iters = 20000, .warmup = 2000 };
	uint64_t *ns;
	char *buf;
	int c, ctl, fd, ep = -1;
	pid_t pid;

	while ((c = getopt(argc, argv, "s:n:w:a:E")) != -1) {
		switch (c) {
		case 's': o.size = bench_parse_size("-s", optarg); break;
		case 'n': o.iters = atol(optarg); break;
		case 'w': o.warmup = atol(optarg); break;
		case 'E': o.epoll = 1; break;
		case 'a': bench_set_cpus(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-a CPU[,CPU]] [-s SIZE] "
				"[-n ITERS] [-w WARMUP] [-E]\n", argv[0]);
			return 2;
		}
	}
	if (o.size == 0 || o.iters <= 0 || o.warmup < 0)
		bench_die("need -s > 0, -n > 0, -w >= 0");
	alarm(BENCH_WATCHDOG_S);
	ns = calloc((size_t)o.iters, sizeof(*ns));
	buf = calloc(1, o.size);
	if (!ns || !buf)
		bench_die("out of memory");

	pid = bench_spawn(server_main, &o, &ctl);
	fd = bench_tcp_connect(bench_ctl_recv_port(ctl));
	if (o.epoll)
		ep = ev_setup(fd);
	for (long i = 0; i < o.warmup + o.iters; i++) {
		uint64_t t0 = bench_now_ns();

		if (bench_write_full(fd, buf, o.size) ||
		    read_msg(ep, fd, buf, o.size))
			bench_die("round trip %ld: %s", i,
				  errno ? strerror(errno) : "server closed");
		if (i >= o.warmup)
			ns[i - o.warmup] = bench_now_ns() - t0;
	}
	close(fd);
	if (ep >= 0)
		close(ep);
	close(ctl);
	if (bench_reap(pid, 5000))
		bench_die("server failed");
	bench_report_lat("plain", o.epoll ? "epoll" : "blocking", ns,
			 (size_t)o.iters, (size_t)(o.warmup + o.iters));
	free(ns);
	free(buf);
	return 0;
}
