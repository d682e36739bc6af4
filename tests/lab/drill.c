/*
 * drill: the soft-RoCE lab's failure probe (a lab tool, not part of rift).
 *
 * It shows, on real verbs, the failure signals rift's failover relies on,
 * and how long each takes to appear:
 *
 *   drill port-events -d DEV --down CMD --up CMD [--bound-ms MS]
 *       Runs CMD (a shell command that breaks the link under DEV, e.g.
 *       "lab-link down link0") and waits for IBV_EVENT_PORT_ERR on DEV's
 *       async fd, then runs the --up CMD and waits for IBV_EVENT_PORT_ACTIVE.
 *       The port state from ibv_query_port must agree with each event.
 *
 *   drill wc-server -a ADDR [-p PORT] [--ack-timeout T] [--wait-ms MS]
 *       Accepts one rdma_cm connection and lets the client RDMA WRITE into a
 *       buffer (address and rkey go back in the accept's private data), then
 *       waits for the client's disconnect and checks the data arrived.
 *
 *   drill wc-client -a SERVER_ADDR [-b SRC_ADDR] [-p PORT] [-r RETRY]
 *                   [--ack-timeout T] --fault CMD --restore CMD [--bound-ms MS]
 *       Connects with retry_count RETRY (<= 6: rxe treats 7 as infinite) and
 *       RDMA_OPTION_ID_ACK_TIMEOUT T (set after route resolution, before
 *       connect), proves traffic flows, runs the --fault CMD while a window of
 *       RDMA WRITEs is in flight and checks that the first error completion is
 *       IBV_WC_RETRY_EXC_ERR, that every other outstanding WR then completes
 *       with IBV_WC_WR_FLUSH_ERR, and that the port's retry_exceeded_err
 *       counter moved. Then runs --restore CMD and disconnects.
 *
 * Every wait is bounded. Output: human lines plus one "measure NAME=VALUE"
 * line per timing, which the smoke suite collects. Exit status: 0 when every
 * expectation held, 1 when one did not, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define SLOT_SIZE 1024		/* bytes per RDMA WRITE: one packet at MTU 1024 */
#define NSLOTS 64		/* slots in the server's buffer */
#define WINDOW 16		/* WRITEs kept in flight */
#define WARMUP_WRITES 256	/* successful WRITEs before the fault */
#define PATTERN 0x5a		/* byte the client writes */
#define CMD_LIMIT_MS 15000.0	/* a fault command's own time limit */

static const char *prog = "drill";
static int failures;

/* Remote buffer the server hands out in the accept's private data. */
struct remote_buf {
	uint64_t addr;		/* big endian */
	uint32_t rkey;		/* big endian */
	uint32_t len;		/* big endian, bytes */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: ", prog);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

/* An expectation that did not hold: reported, counted, not fatal. */
static void bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: FAIL: ", prog);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	failures++;
}

/* Something that makes going on pointless. */
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: FAIL: ", prog);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: drill port-events -d DEV --down CMD --up CMD [--bound-ms MS]\n"
		"       drill wc-server -a ADDR [-p PORT] [--ack-timeout T] [--wait-ms MS]\n"
		"       drill wc-client -a SERVER_ADDR [-b SRC_ADDR] [-p PORT] [-r RETRY]\n"
		"                       [--ack-timeout T] --fault CMD --restore CMD [--bound-ms MS]\n");
	exit(2);
}

/* ------------------------------------------------------------ commands */

/*
 * lab-link writes the epoch time at which it issued its action to the file
 * named by LAB_LINK_STAMP, so events are timed from the action itself, not
 * from the start of a shell script that takes ~0.1-0.5 s to get there.
 */
static char stamp_path[64];

/* Start "sh -c CMD" in the background; its output goes to ours. */
static pid_t spawn_cmd(const char *cmd)
{
	pid_t pid;

	if (!stamp_path[0]) {
		snprintf(stamp_path, sizeof(stamp_path), "/tmp/drill-stamp.%d", (int)getpid());
		if (setenv("LAB_LINK_STAMP", stamp_path, 1))
			die("setenv: %s", strerror(errno));
	}
	unlink(stamp_path);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(STDOUT_FILENO, STDERR_FILENO);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * When the last command issued its action, on now_ms()'s clock; cmd_start
 * (its own start) when it left no stamp.
 */
static double issued_ms(double cmd_start)
{
	struct timespec mono, real;
	double epoch;
	FILE *f = fopen(stamp_path, "r");
	int n;

	if (!f)
		return cmd_start;
	n = fscanf(f, "%lf", &epoch);
	fclose(f);
	unlink(stamp_path);
	if (n != 1)
		return cmd_start;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	return epoch * 1e3 - (real.tv_sec * 1e3 + real.tv_nsec / 1e6) +
	       (mono.tv_sec * 1e3 + mono.tv_nsec / 1e6);
}

/* Reap CMD if it ended; 1 when it did (with *ok telling success). */
static int cmd_done(pid_t pid, int *ok)
{
	int st;
	pid_t r = waitpid(pid, &st, WNOHANG);

	if (r == 0)
		return 0;
	*ok = r == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	return 1;
}

/* Wait for CMD, at most bound_ms; kill it past that. Returns 1 on success. */
static int cmd_wait(pid_t pid, const char *cmd, double bound_ms)
{
	double end = now_ms() + bound_ms;
	int ok;

	while (!cmd_done(pid, &ok)) {
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			bad("'%s' did not finish within %.0f ms", cmd, bound_ms);
			return 0;
		}
		usleep(5000);
	}
	if (!ok)
		bad("'%s' failed", cmd);
	return ok;
}

static int run_cmd(const char *cmd, double bound_ms)
{
	return cmd_wait(spawn_cmd(cmd), cmd, bound_ms);
}

/* ------------------------------------------------------------ port events */

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
			ctx = ibv_open_device(list[i]);
			if (!ctx)
				die("ibv_open_device(%s): %s", name, strerror(errno));
			break;
		}
	}
	ibv_free_device_list(list);
	if (!ctx)
		die("no RDMA device named %s", name);
	return ctx;
}

static enum ibv_port_state port_state(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr attr;

	if (ibv_query_port(ctx, port, &attr))
		die("ibv_query_port: %s", strerror(errno));
	return attr.state;
}

/*
 * Run CMD and wait for async event WANT on ctx, polling the async fd while
 * CMD runs so the time measured is the event's, not CMD's. Returns the
 * milliseconds from CMD's action (see issued_ms) to the event, or -1.
 */
static double await_port_event(struct ibv_context *ctx, const char *cmd,
			       enum ibv_event_type want, double bound_ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	double t0 = now_ms(), got = -1, cmd_ms = -1, issued = -1;
	pid_t pid = spawn_cmd(cmd);
	int running = 1, ok = 1;

	while (got < 0 || running) {
		double t = now_ms(), wait_ms = 5;

		if (running && cmd_done(pid, &ok)) {
			running = 0;
			cmd_ms = t - t0;
			issued = issued_ms(t0);
		}
		if (running && t - t0 > CMD_LIMIT_MS)
			break;
		if (!running && got < 0 && t - issued > bound_ms)
			break;
		if (got >= 0) {
			usleep(5000);	/* event seen; CMD still finishing */
			continue;
		}
		if (!running)
			wait_ms = issued + bound_ms - t + 1;
		if (poll(&pfd, 1, (int)wait_ms) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		while (ibv_get_async_event(ctx, &ev) == 0) {
			enum ibv_event_type type = ev.event_type;

			ibv_ack_async_event(&ev);
			say("  async event %s at +%.1f ms", ibv_event_type_str(type),
			    now_ms() - t0);
			if (type == want && got < 0)
				got = now_ms();
		}
	}
	if (running) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		bad("'%s' did not finish within %.0f ms", cmd, CMD_LIMIT_MS);
		return -1;
	}
	if (!ok) {
		bad("'%s' failed", cmd);
		return -1;
	}
	say("  '%s' took %.1f ms, issued its action at +%.1f ms", cmd, cmd_ms, issued - t0);
	if (got < 0) {
		bad("no %s within %.0f ms of the action", ibv_event_type_str(want), bound_ms);
		return -1;
	}
	if (got - issued > bound_ms) {
		bad("%s came %.1f ms after the action, bound %.0f ms", ibv_event_type_str(want),
		    got - issued, bound_ms);
		return -1;
	}
	return got - issued;
}

static int cmd_port_events(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "port", required_argument, NULL, 'i' },
		{ "down", required_argument, NULL, 'D' },
		{ "up", required_argument, NULL, 'U' },
		{ "bound-ms", required_argument, NULL, 'B' },
		{ "label", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dev = NULL, *down = NULL, *up = NULL, *label = "port";
	double bound = 5000, ms;
	uint8_t port = 1;
	struct ibv_context *ctx;
	struct ibv_async_event ev;
	int c, flags;

	while ((c = getopt_long(argc, argv, "d:i:", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'i': port = (uint8_t)atoi(optarg); break;
		case 'D': down = optarg; break;
		case 'U': up = optarg; break;
		case 'B': bound = atof(optarg); break;
		case 'L': label = optarg; break;
		default: usage();
		}
	}
	if (!dev || !down || !up || bound <= 0)
		usage();

	ctx = open_device(dev);
	if (port_state(ctx, port) != IBV_PORT_ACTIVE)
		die("%s port %u is not ACTIVE before the drill", dev, port);
	flags = fcntl(ctx->async_fd, F_GETFL);
	if (fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)
		die("fcntl: %s", strerror(errno));
	while (ibv_get_async_event(ctx, &ev) == 0)	/* stale events */
		ibv_ack_async_event(&ev);

	say("%s: break with '%s', expect IBV_EVENT_PORT_ERR within %.0f ms", dev, down, bound);
	ms = await_port_event(ctx, down, IBV_EVENT_PORT_ERR, bound);
	if (ms >= 0) {
		say("  PORT_ERR %.1f ms after the action", ms);
		printf("measure %s_port_err_ms=%.1f\n", label, ms);
		if (port_state(ctx, port) == IBV_PORT_ACTIVE)
			bad("port still ACTIVE after PORT_ERR");
	}

	say("%s: restore with '%s', expect IBV_EVENT_PORT_ACTIVE within %.0f ms", dev, up, bound);
	ms = await_port_event(ctx, up, IBV_EVENT_PORT_ACTIVE, bound);
	if (ms >= 0) {
		say("  PORT_ACTIVE %.1f ms after the action", ms);
		printf("measure %s_port_active_ms=%.1f\n", label, ms);
		if (port_state(ctx, port) != IBV_PORT_ACTIVE)
			bad("port not ACTIVE after PORT_ACTIVE");
	}
	ibv_close_device(ctx);
	say("%s", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------ rdma_cm */

/* Wait for the next CM event, which must be WANT, at most ms. */
static struct rdma_cm_event *await_cm(struct rdma_event_channel *ec,
				      enum rdma_cm_event_type want, int ms)
{
	struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int r;

	do
		r = poll(&pfd, 1, ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		die("poll: %s", strerror(errno));
	if (r == 0)
		return NULL;
	if (rdma_get_cm_event(ec, &ev))
		die("rdma_get_cm_event: %s", strerror(errno));
	if (ev->event != want) {
		bad("expected %s, got %s (status %d)", rdma_event_str(want),
		    rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static void set_ack_timeout(struct rdma_cm_id *id, uint8_t t)
{
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		die("rdma_set_option(ACK_TIMEOUT=%u): %s", t, strerror(errno));
}

static struct sockaddr_storage parse_addr(const char *host, const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct sockaddr_storage ss;

	if (rdma_getaddrinfo(host, port, &hints, &res))
		die("rdma_getaddrinfo(%s): %s", host, strerror(errno));
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, res->ai_dst_addr, res->ai_dst_len);
	rdma_freeaddrinfo(res);
	return ss;
}

/* Resources of one side of a connection. */
struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
	size_t len;
};

static void conn_setup(struct conn *c, struct rdma_cm_id *id, size_t len, int access)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = WINDOW * 2, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};

	c->id = id;
	c->len = len;
	c->pd = ibv_alloc_pd(id->verbs);
	if (!c->pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	c->cc = ibv_create_comp_channel(id->verbs);
	if (!c->cc)
		die("ibv_create_comp_channel: %s", strerror(errno));
	c->cq = ibv_create_cq(id->verbs, WINDOW * 4, NULL, c->cc, 0);
	if (!c->cq)
		die("ibv_create_cq: %s", strerror(errno));
	c->buf = calloc(1, len);
	if (!c->buf)
		die("out of memory");
	c->mr = ibv_reg_mr(c->pd, c->buf, len, IBV_ACCESS_LOCAL_WRITE | access);
	if (!c->mr)
		die("ibv_reg_mr: %s", strerror(errno));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	if (rdma_create_qp(id, c->pd, &qa))
		die("rdma_create_qp: %s", strerror(errno));
}

/* Tear down in reverse order of conn_setup. */
static void conn_destroy(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cc)
		ibv_destroy_comp_channel(c->cc);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	free(c->buf);
	if (c->id)
		rdma_destroy_id(c->id);
	memset(c, 0, sizeof(*c));
}

/* Print the QP's effective timeout and retry count; check them. */
static void check_qp_attrs(struct conn *c, int want_timeout, int want_retry)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(c->id->qp, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &ia))
		die("ibv_query_qp: %s", strerror(errno));
	say("QP %u: timeout %u (%.1f ms), retry_cnt %u", c->id->qp->qp_num, a.timeout,
	    4.096e-3 * (double)(1ull << a.timeout), a.retry_cnt);
	if (a.timeout != want_timeout)
		bad("QP timeout is %u, wanted %d", a.timeout, want_timeout);
	if (want_retry >= 0 && a.retry_cnt != want_retry)
		bad("QP retry_cnt is %u, wanted %d", a.retry_cnt, want_retry);
}

/* Read a port counter of the connection's device (-1 when absent). */
static long long hw_counter(struct conn *c, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/hw_counters/%s",
		 ibv_get_device_name(c->id->verbs->device), c->id->port_num, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int cmd_wc_server(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "ack-timeout", required_argument, NULL, 'T' },
		{ "wait-ms", required_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 },
	};
	const char *addr = NULL, *port = "18600";
	int ack_timeout = 14, wait_ms = 60000, c;
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_event *ev;
	struct sockaddr_storage sa;
	struct conn conn = { 0 };
	struct remote_buf rb;
	struct rdma_conn_param cp = { 0 };
	size_t i;

	while ((c = getopt_long(argc, argv, "a:p:", opts, NULL)) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'T': ack_timeout = atoi(optarg); break;
		case 'W': wait_ms = atoi(optarg); break;
		default: usage();
		}
	}
	if (!addr || ack_timeout < 0 || ack_timeout > 31 || wait_ms <= 0)
		usage();

	ec = rdma_create_event_channel();
	if (!ec)
		die("rdma_create_event_channel: %s", strerror(errno));
	if (rdma_create_id(ec, &listen_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	sa = parse_addr(addr, port);
	if (rdma_bind_addr(listen_id, (struct sockaddr *)&sa))
		die("rdma_bind_addr(%s:%s): %s", addr, port, strerror(errno));
	if (rdma_listen(listen_id, 1))
		die("rdma_listen: %s", strerror(errno));
	say("listening on %s:%s", addr, port);

	ev = await_cm(ec, RDMA_CM_EVENT_CONNECT_REQUEST, wait_ms);
	if (!ev)
		die("no connection within %d ms", wait_ms);
	/* Before accept, so the responder's QP gets it too. */
	set_ack_timeout(ev->id, (uint8_t)ack_timeout);
	conn_setup(&conn, ev->id, NSLOTS * SLOT_SIZE, IBV_ACCESS_REMOTE_WRITE);
	rdma_ack_cm_event(ev);

	rb.addr = htobe64((uintptr_t)conn.buf);
	rb.rkey = htobe32(conn.mr->rkey);
	rb.len = htobe32((uint32_t)conn.len);
	cp.private_data = &rb;
	cp.private_data_len = sizeof(rb);
	if (rdma_accept(conn.id, &cp))
		die("rdma_accept: %s", strerror(errno));
	ev = await_cm(ec, RDMA_CM_EVENT_ESTABLISHED, 10000);
	if (!ev)
		die("connection not established within 10 s");
	rdma_ack_cm_event(ev);
	say("connected on %s", ibv_get_device_name(conn.id->verbs->device));
	check_qp_attrs(&conn, ack_timeout, -1);

	ev = await_cm(ec, RDMA_CM_EVENT_DISCONNECTED, wait_ms);
	if (!ev)
		bad("no disconnect from the client within %d ms", wait_ms);
	else
		rdma_ack_cm_event(ev);
	for (i = 0; i < conn.len; i++)
		if ((unsigned char)conn.buf[i] != PATTERN)
			break;
	if (i != conn.len)
		bad("the client's writes did not all land (byte %zu is 0x%02x)", i,
		    (unsigned char)conn.buf[i]);
	else
		say("all %zu bytes written by the client arrived", conn.len);

	conn_destroy(&conn);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ec);
	say("%s", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

/* Client-side state of the WRITE stream. */
struct stream {
	struct conn *c;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t posted, completed;	/* WRs */
};

static void post_write(struct stream *s)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->c->buf,
		.length = SLOT_SIZE,
		.lkey = s->c->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = s->posted,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	}, *badwr;
	int err;

	wr.wr.rdma.remote_addr = s->raddr + (s->posted % NSLOTS) * SLOT_SIZE;
	wr.wr.rdma.rkey = s->rkey;
	err = ibv_post_send(s->c->id->qp, &wr, &badwr);
	if (err)
		die("ibv_post_send: %s", strerror(err));
	s->posted++;
}

/* Next completion, waiting on the completion channel at most ms. */
static int next_wc(struct stream *s, struct ibv_wc *wc, int ms)
{
	struct pollfd pfd = { .fd = s->c->cc->fd, .events = POLLIN };
	double end = now_ms() + ms;
	struct ibv_cq *cq;
	void *ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(s->c->cq, 1, wc);
		if (n < 0)
			die("ibv_poll_cq failed");
		if (n == 1) {
			s->completed++;
			return 1;
		}
		if (ibv_req_notify_cq(s->c->cq, 0))
			die("ibv_req_notify_cq failed");
		n = ibv_poll_cq(s->c->cq, 1, wc);	/* close the race */
		if (n == 1) {
			s->completed++;
			return 1;
		}
		if (now_ms() >= end)
			return 0;
		if (poll(&pfd, 1, (int)(end - now_ms()) + 1) > 0) {
			if (ibv_get_cq_event(s->c->cc, &cq, &ctx) == 0)
				ibv_ack_cq_events(cq, 1);
		}
	}
}

static int cmd_wc_client(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'p' },
		{ "retry", required_argument, NULL, 'r' },
		{ "ack-timeout", required_argument, NULL, 'T' },
		{ "fault", required_argument, NULL, 'F' },
		{ "restore", required_argument, NULL, 'R' },
		{ "bound-ms", required_argument, NULL, 'B' },
		{ "label", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const char *addr = NULL, *src = NULL, *port = "18600", *fault = NULL;
	const char *restore = NULL, *label = "wc";
	int retry = 3, ack_timeout = 14, c, ok, running;
	double bound = 5000, t_fault, t_issue = -1, t_err = -1, cmd_ms = -1;
	enum ibv_wc_status err_status = IBV_WC_SUCCESS;
	struct rdma_event_channel *ec;
	struct rdma_cm_event *ev;
	struct sockaddr_storage dst, srcss;
	struct rdma_cm_id *id;
	struct conn conn = { 0 };
	struct stream s = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct remote_buf rb;
	struct ibv_wc wc;
	long long retry_err0, retry_err1;
	uint64_t flushed = 0, outstanding;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "a:b:p:r:", opts, NULL)) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'b': src = optarg; break;
		case 'p': port = optarg; break;
		case 'r': retry = atoi(optarg); break;
		case 'T': ack_timeout = atoi(optarg); break;
		case 'F': fault = optarg; break;
		case 'R': restore = optarg; break;
		case 'B': bound = atof(optarg); break;
		case 'L': label = optarg; break;
		default: usage();
		}
	}
	if (!addr || !fault || !restore || bound <= 0 || ack_timeout < 1 || ack_timeout > 31)
		usage();
	if (retry < 0 || retry > 6) {
		fprintf(stderr, "drill: retry must be 0..6 (rxe treats 7 as infinite)\n");
		return 2;
	}

	ec = rdma_create_event_channel();
	if (!ec)
		die("rdma_create_event_channel: %s", strerror(errno));
	if (rdma_create_id(ec, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	dst = parse_addr(addr, port);
	if (src)
		srcss = parse_addr(src, "0");
	if (rdma_resolve_addr(id, src ? (struct sockaddr *)&srcss : NULL,
			      (struct sockaddr *)&dst, 2000))
		die("rdma_resolve_addr(%s): %s", addr, strerror(errno));
	ev = await_cm(ec, RDMA_CM_EVENT_ADDR_RESOLVED, 5000);
	if (!ev)
		die("address %s not resolved within 5 s", addr);
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route: %s", strerror(errno));
	ev = await_cm(ec, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000);
	if (!ev)
		die("route to %s not resolved within 5 s", addr);
	rdma_ack_cm_event(ev);
	/* After route resolution, before connect: rdma_cm applies it to the QP. */
	set_ack_timeout(id, (uint8_t)ack_timeout);
	conn_setup(&conn, id, SLOT_SIZE, 0);
	memset(conn.buf, PATTERN, SLOT_SIZE);

	cp.retry_count = (uint8_t)retry;
	cp.rnr_retry_count = (uint8_t)retry;
	if (rdma_connect(id, &cp))
		die("rdma_connect: %s", strerror(errno));
	ev = await_cm(ec, RDMA_CM_EVENT_ESTABLISHED, 10000);
	if (!ev)
		die("connection to %s:%s not established within 10 s", addr, port);
	if (ev->param.conn.private_data_len < sizeof(rb))
		die("no buffer description from the server");
	memcpy(&rb, ev->param.conn.private_data, sizeof(rb));
	rdma_ack_cm_event(ev);
	if (be32toh(rb.len) < NSLOTS * SLOT_SIZE)
		die("server buffer too small");
	s.c = &conn;
	s.raddr = be64toh(rb.addr);
	s.rkey = be32toh(rb.rkey);
	say("connected %s -> %s:%s on %s", src ? src : "(routed)", addr, port,
	    ibv_get_device_name(id->verbs->device));
	check_qp_attrs(&conn, ack_timeout, retry);

	/* Traffic must flow before the fault, or the drill proves nothing. */
	while (s.completed < WARMUP_WRITES) {
		while (s.posted - s.completed < WINDOW && s.posted < WARMUP_WRITES)
			post_write(&s);
		if (!next_wc(&s, &wc, 5000))
			die("warm-up stalled after %" PRIu64 " writes", s.completed);
		if (wc.status != IBV_WC_SUCCESS)
			die("warm-up write failed: %s", ibv_wc_status_str(wc.status));
	}
	say("%d RDMA WRITEs completed before the fault", WARMUP_WRITES);
	retry_err0 = hw_counter(&conn, "retry_exceeded_err");

	/* Fault while a full window is in flight. */
	while (s.posted - s.completed < WINDOW)
		post_write(&s);
	say("fault: '%s', expect IBV_WC_RETRY_EXC_ERR within %.0f ms", fault, bound);
	t_fault = now_ms();
	pid = spawn_cmd(fault);
	running = 1;
	ok = 1;
	for (;;) {
		if (running && cmd_done(pid, &ok)) {
			running = 0;
			cmd_ms = now_ms() - t_fault;
			t_issue = issued_ms(t_fault);
		}
		if (t_err >= 0 && !running)
			break;
		if (running && now_ms() - t_fault > CMD_LIMIT_MS)
			break;
		if (!running && t_err < 0 && now_ms() - t_issue > bound)
			break;
		if (t_err >= 0) {
			usleep(5000);	/* error seen; the command still finishing */
			continue;
		}
		if (!next_wc(&s, &wc, 5))
			continue;
		if (wc.status == IBV_WC_SUCCESS) {
			/* Still draining what was acked before the fault bit. */
			if (s.posted - s.completed < WINDOW)
				post_write(&s);
			continue;
		}
		t_err = now_ms();
		err_status = wc.status;
		say("  first error completion: %s (wr %" PRIu64 ")",
		    ibv_wc_status_str(wc.status), (uint64_t)wc.wr_id);
	}
	if (running) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		die("fault command '%s' did not finish within %.0f ms", fault, CMD_LIMIT_MS);
	} else if (!ok) {
		die("fault command '%s' failed", fault);
	}
	if (cmd_ms >= 0)
		say("  '%s' took %.1f ms, issued its action at +%.1f ms", fault, cmd_ms,
		    t_issue - t_fault);
	if (t_err >= 0) {
		t_err -= t_issue;
		say("  the error came %.1f ms after the action", t_err);
		if (err_status != IBV_WC_RETRY_EXC_ERR)
			bad("first error is %s, expected %s", ibv_wc_status_str(err_status),
			    ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
		else if (t_err > bound)
			bad("IBV_WC_RETRY_EXC_ERR came %.1f ms after the action, bound %.0f ms",
			    t_err, bound);
		else
			printf("measure %s_retry_exc_ms=%.1f\n", label, t_err);
	}
	if (t_err < 0) {
		bad("no error completion within %.0f ms of the action", bound);
	} else {
		/* The QP is in error now: the rest must flush, promptly. */
		outstanding = s.posted - s.completed;
		while (s.completed < s.posted) {
			if (!next_wc(&s, &wc, 2000)) {
				bad("%" PRIu64 " WRs never completed after the error",
				    s.posted - s.completed);
				break;
			}
			if (wc.status == IBV_WC_WR_FLUSH_ERR)
				flushed++;
			else
				bad("after the error: %s, expected %s", ibv_wc_status_str(wc.status),
				    ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR));
		}
		say("  %" PRIu64 " of %" PRIu64 " outstanding WRs flushed (IBV_WC_WR_FLUSH_ERR)",
		    flushed, outstanding);
		if (outstanding == 0 || flushed != outstanding)
			bad("expected all %" PRIu64 " outstanding WRs to flush", outstanding);
		retry_err1 = hw_counter(&conn, "retry_exceeded_err");
		say("  retry_exceeded_err %lld -> %lld", retry_err0, retry_err1);
		if (retry_err0 < 0 || retry_err1 <= retry_err0)
			bad("retry_exceeded_err did not move");
	}

	say("restore: '%s'", restore);
	if (!run_cmd(restore, CMD_LIMIT_MS))
		die("restore command failed");
	if (rdma_disconnect(id))
		say("rdma_disconnect: %s", strerror(errno));
	ev = await_cm(ec, RDMA_CM_EVENT_DISCONNECTED, 5000);
	if (ev)
		rdma_ack_cm_event(ev);
	conn_destroy(&conn);
	rdma_destroy_event_channel(ec);
	say("%s", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(argv[1], "port-events") == 0)
		return cmd_port_events(argc - 1, argv + 1);
	if (strcmp(argv[1], "wc-server") == 0)
		return cmd_wc_server(argc - 1, argv + 1);
	if (strcmp(argv[1], "wc-client") == 0)
		return cmd_wc_client(argc - 1, argv + 1);
	usage();
	return 2;
}
