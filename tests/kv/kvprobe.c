/*
 * kvprobe - send bytes to rift-kv and print what comes back, for
 * tests/kv/run.sh: what redis-cli cannot do (malformed requests, one big
 * pipelined write, a reader that stalls, RESP over rift).
 *
 *   kvprobe [-w MS] [-d MS] [-m BYTES] [-c] [-R] ADDR < request-bytes
 *
 * ADDR is tcp:HOST:PORT (a plain socket) or a rift URL (tcp://, rdma://,
 * auto://HOST:PORT): stdin is sent whole (over rift in messages of
 * -m BYTES, default all in one), then the replies are written to stdout
 * until the server closes, or MS ms (-w, 1000) pass without a byte.
 * -d MS waits that long before reading anything (a slow reader).  -c
 * prints only the count of bytes received.  -R (a rift URL) first makes
 * a one-sided read of the server's memory with a token the server never
 * gave (this side's own export, sealed under the session's key as a
 * real one is), which the server's rift refuses and counts
 * (rma_refused), and prints "one-sided read: <status>".  Exit status: 0
 * the server closed the connection, 3 it stayed open (idle time passed),
 * 1 error.
 *
 *   kvprobe -L [-w MS] URL < reply-bytes
 *
 * plays a server (a fake rift-kv primary for a replica): listens on the
 * rift URL (port 0: any, "listening on PORT" on stderr), accepts one
 * connection, and once its first message came sends stdin as one
 * message; prints what arrives, with the same ends and exit status.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rift.h>

static int wait_ms = 1000, delay_ms, count_only, rma_probe, serve;
static size_t msg_max;
static unsigned long long received;
static int closed, got_data, connected, rma_status = 1;

static void out(const void *p, size_t n)
{
	received += n;
	got_data = 1;
	if (!count_only)
		fwrite(p, 1, n, stdout);
}

static char *read_stdin(size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		size_t r;

		if (n == cap) {
			char *p = realloc(buf, cap * 2);

			if (!p)
				break;
			buf = p;
			cap *= 2;
		}
		r = fread(buf + n, 1, cap - n, stdin);
		n += r;
		if (r == 0) {
			*len = n;
			return buf;
		}
	}
	free(buf);
	return NULL;
}

static int run_tcp(const char *addr, const char *req, size_t len)
{
	char host[256], *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char buf[65536];
	size_t off = 0;
	int fd;

	snprintf(host, sizeof(host), "%s", addr);
	port = strrchr(host, ':');
	if (!port)
		return 1;
	*port++ = '\0';
	if (getaddrinfo(host, port, &hints, &ai))
		return 1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		perror("kvprobe: connect");
		return 1;
	}
	freeaddrinfo(ai);
	/* Write and read at once: a large request must not deadlock with
	 * a server whose replies fill the socket (unless -d asks to). */
	if (delay_ms) {
		while (off < len) {
			ssize_t n = send(fd, req + off, len - off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n <= 0)
				break;
			off += (size_t)n;
		}
		usleep((useconds_t)delay_ms * 1000);
	}
	for (;;) {
		struct pollfd p = { fd, POLLIN | (off < len ? POLLOUT : 0), 0 };
		int r = poll(&p, 1, wait_ms);

		if (r == 0)
			return 3;
		if (p.revents & POLLOUT) {
			ssize_t n = send(fd, req + off, len - off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n > 0)
				off += (size_t)n;
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = recv(fd, buf, sizeof(buf), 0);

			if (n <= 0)
				return 0;
			out(buf, (size_t)n);
		}
	}
}

static void on_recv(rift_conn *c, rift_msg *m)
{
	(void)c;
	out(rift_msg_data(m), rift_msg_len(m));
}

static void on_event(rift_conn *c, const rift_event *ev)
{
	(void)c;
	if (ev->type == RIFT_EVENT_CONNECTED)
		connected = 1;
	if (ev->type == RIFT_EVENT_DISCONNECTED ||
	    ev->type == RIFT_EVENT_ERROR) {
		if (ev->type == RIFT_EVENT_ERROR)
			fprintf(stderr, "kvprobe: %s\n", ev->message);
		closed = 1;
	}
}

static void on_rma(rift_conn *c, void *user, int status, size_t bytes)
{
	(void)c;
	(void)user;
	(void)bytes;
	rma_status = status;
}

/* Run the loop until *flag is no longer `unset`, or wait_ms pass. */
static void run_until(rift_ctx *ctx, const int *flag, int unset)
{
	for (int waited = 0; *flag == unset && !closed && waited < wait_ms;
	     waited += 20)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 20);
}

/* -R: read the server's memory by a token it never exported (see the
 * top); the export and the registration end with the connection. */
static int refused_read(rift_ctx *ctx, rift_conn *conn, rift_mem **mem)
{
	static char area[128];
	unsigned char token[RIFT_TOKEN_MAX_LEN];
	size_t tlen = sizeof(token);
	int rc;

	run_until(ctx, &connected, 0);
	rc = rift_mem_reg(ctx, area, sizeof(area),
			  RIFT_MEM_READ | RIFT_MEM_WRITE, mem);
	if (!rc)
		rc = rift_mem_export(*mem, conn, 0, 64, RIFT_MEM_READ, token,
				     &tlen);
	if (!rc)
		rc = rift_conn_read(conn, *mem, 64, token, tlen, 0, 16, on_rma,
				    NULL);
	if (!rc) {
		run_until(ctx, &rma_status, 1);
		rc = rma_status;
	}
	printf("one-sided read: %s\n", rc == 1 ? "no answer" : rift_err_name(rc));
	return rc;
}

/* Run ctx until the peer closed or wait_ms passed without a byte: 0
 * closed, 3 idle. */
static int drain(rift_ctx *ctx)
{
	struct timespec last;

	clock_gettime(CLOCK_MONOTONIC, &last);
	while (!closed) {
		struct timespec now;

		got_data = 0;
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 100);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (got_data)
			last = now;
		else if ((now.tv_sec - last.tv_sec) * 1000 +
				 (now.tv_nsec - last.tv_nsec) / 1000000 >=
			 wait_ms)
			break;
	}
	return closed ? 0 : 3;
}

static rift_conn *accepted;

static void on_accept(rift_listener *l, rift_conn *conn)
{
	(void)l;
	if (accepted) {
		rift_conn_abort(conn, NULL);
		return;
	}
	accepted = conn;
}

/* -L: one connection; the reply (stdin) after its first message. */
static int run_listen(const char *url, const char *req, size_t len)
{
	rift_conn_callbacks cbs = { .on_event = on_event, .on_recv = on_recv };
	rift_listener *l;
	rift_ctx *ctx;
	int rc;

	if (rift_ctx_create(&ctx, NULL) ||
	    rift_listen(ctx, url, &cbs, NULL, on_accept, &l)) {
		fprintf(stderr, "kvprobe: %s\n", rift_ctx_last_error(NULL));
		return 1;
	}
	fprintf(stderr, "listening on %d\n", rift_listener_port(l));
	fflush(stderr);
	for (int waited = 0; !got_data && waited < 10 * wait_ms; waited += 20)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 20);
	if (!accepted || !got_data) {
		fprintf(stderr, "kvprobe: nothing came\n");
		return 1;
	}
	if (rift_conn_send(accepted, req, len)) {
		fprintf(stderr, "kvprobe: send failed\n");
		return 1;
	}
	rc = drain(ctx);
	rift_conn_abort(accepted, NULL);
	rift_listener_close(l, NULL);
	for (int i = 0; i < 50 && rift_ctx_destroy(ctx) == RIFT_EBUSY; i++)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 20);
	return rc;
}

static int run_rift(const char *url, const char *req, size_t len)
{
	rift_mem *mem = NULL;
	rift_conn_callbacks cbs = { .on_event = on_event, .on_recv = on_recv };
	rift_ctx *ctx;
	rift_conn *conn;
	size_t off = 0;
	int rc;

	if (rift_ctx_create(&ctx, NULL) ||
	    rift_connect(ctx, url, &cbs, NULL, &conn)) {
		fprintf(stderr, "kvprobe: %s\n", rift_ctx_last_error(NULL));
		return 1;
	}
	if (rma_probe)
		refused_read(ctx, conn, &mem);
	while (off < len) {
		size_t n = msg_max && len - off > msg_max ? msg_max : len - off;

		if (rift_conn_send(conn, req + off, n)) {
			fprintf(stderr, "kvprobe: send failed\n");
			return 1;
		}
		off += n;
	}
	rc = drain(ctx);
	rift_conn_abort(conn, NULL);
	for (int i = 0; i < 50 && mem && rift_mem_dereg(mem) == RIFT_EBUSY; i++)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 20);
	for (int i = 0; i < 50 && rift_ctx_destroy(ctx) == RIFT_EBUSY; i++)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 20);
	return rc;
}

int main(int argc, char **argv)
{
	size_t len = 0;
	char *req;
	int opt, rc;

	while ((opt = getopt(argc, argv, "w:d:m:cRL")) != -1) {
		switch (opt) {
		case 'w': wait_ms = atoi(optarg); break;
		case 'd': delay_ms = atoi(optarg); break;
		case 'm': msg_max = (size_t)atol(optarg); break;
		case 'c': count_only = 1; break;
		case 'R': rma_probe = 1; break;
		case 'L': serve = 1; break;
		default: return 1;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: kvprobe [-w MS] [-d MS] [-m BYTES] "
				"[-c] [-R] tcp:HOST:PORT|URL < bytes\n"
				"       kvprobe -L [-w MS] URL < bytes\n");
		return 1;
	}
	req = read_stdin(&len);
	if (!req)
		return 1;
	if (serve)
		rc = run_listen(argv[optind], req, len);
	else if (strncmp(argv[optind], "tcp:", 4) == 0 &&
	    strncmp(argv[optind], "tcp://", 6) != 0)
		rc = run_tcp(argv[optind] + 4, req, len);
	else
		rc = run_rift(argv[optind], req, len);
	if (count_only)
		printf("%llu\n", received);
	fflush(stdout);
	free(req);
	return rc;
}
