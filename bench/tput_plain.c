/*
 * tput_plain.c - baseline for streaming throughput: plain blocking TCP
 * over loopback, two processes.  The sender (forked child) write()s
 * MSG-byte buffers until BYTES are sent, then closes; the reader (this
 * process) read()s into a RBUF-byte buffer and counts.  With -m the
 * reader takes messages whole instead, as a message library has to: each
 * MSG-byte message is read into one MSG-byte buffer, read after read,
 * before the next one starts at the buffer's beginning again.
 *
 * Throughput is measured at the reader, from the return of its first read
 * to the return of the read that completes BYTES; the bytes of the first
 * read are not counted, as they arrived before the clock started.
 *
 *   tput_plain [-a CPU[,CPU]] [-s MSG] [-b BYTES] [-r RBUF | -m]
 *
 * -a pins the reader and the sender (see bench.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

const char *bench_prog = "tput_plain";

struct opts {
	size_t msg;      /* bytes per write */
	uint64_t bytes;  /* total to stream, a multiple of msg */
	size_t rbuf;     /* bytes per read */
	int whole;       /* -m: read each message whole into one buffer */
};

static int sender_main(int ctl, void *arg)
{
	const struct opts *o = arg;
	uint64_t *buf = calloc(1, o->msg);
	int fd;

	if (!buf)
		bench_die("out of memory");
	fd = bench_tcp_connect(bench_ctl_recv_port(ctl));
	for (uint64_t sent = 0, i = 0; sent < o->bytes; sent += o->msg) {
		buf[0] = i++; /* like the rift sender: a header word per buffer */
		if (bench_write_full(fd, buf, o->msg))
			bench_die("sender write: %s", strerror(errno));
	}
	close(fd);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .msg = 64 << 10, .bytes = 2ull << 30,
			  .rbuf = 256 << 10 };
	uint64_t got = 0, first = 0, t_first = 0, t_last = 0;
	size_t off = 0; /* -m: bytes of the current message read */
	char *buf;
	int c, ctl, lfd, fd, port;
	pid_t pid;

	while ((c = getopt(argc, argv, "s:b:r:a:m")) != -1) {
		switch (c) {
		case 's': o.msg = bench_parse_size("-s", optarg); break;
		case 'b': o.bytes = bench_parse_size("-b", optarg); break;
		case 'r': o.rbuf = bench_parse_size("-r", optarg); break;
		case 'm': o.whole = 1; break;
		case 'a': bench_set_cpus(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-a CPU[,CPU]] [-s MSG] "
				"[-b BYTES] [-r RBUF | -m]\n", argv[0]);
			return 2;
		}
	}
	if (o.whole)
		o.rbuf = o.msg;
	if (o.msg == 0 || o.rbuf == 0 || o.bytes < 2 * o.msg)
		bench_die("need -s > 0, -r > 0, -b >= 2 * MSG");
	o.bytes -= o.bytes % o.msg;
	alarm(BENCH_WATCHDOG_S);
	buf = malloc(o.rbuf);
	if (!buf)
		bench_die("out of memory");
	memset(buf, 0, o.rbuf);

	/* Fork first, so the sender inherits none of the reader's fds. */
	pid = bench_spawn(sender_main, &o, &ctl);
	lfd = bench_tcp_listen(&port);
	bench_ctl_send_port(ctl, port);
	fd = bench_tcp_accept(lfd);
	close(lfd);
	while (got < o.bytes) {
		ssize_t n = read(fd, buf + off, o.rbuf - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			bench_die("read after %llu bytes: %s",
				  (unsigned long long)got,
				  n ? strerror(errno) : "sender closed");
		if (got == 0) {
			t_first = bench_now_ns();
			first = (uint64_t)n;
		}
		got += (uint64_t)n;
		if (o.whole)
			off = (off + (size_t)n) % o.msg;
		t_last = bench_now_ns();
	}
	close(fd);
	close(ctl);
	if (bench_reap(pid, 5000))
		bench_die("sender failed");
	bench_report_tput("plain", o.whole ? "whole" : "blocking", got - first,
			  t_last - t_first, o.bytes);
	free(buf);
	return 0;
}
