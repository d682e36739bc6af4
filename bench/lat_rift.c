/*
 * lat_rift.c - round-trip latency of rift over TCP loopback, two
 * processes, using only rift.h.  The client (this process) sends a SIZE-byte
 * message with rift_conn_send and sends the next one from on_recv when the
 * echo arrives; the server (forked child) rift_listen()s and echoes every
 * message back from its on_recv.  A sample is the time from the
 * rift_conn_send call to the on_recv of the echo, as an application sees it.
 *
 * -Z sends without a copy on both sides, as lat_plain does: each message
 * is a rift_buf_alloc buffer handed over with rift_conn_send_buf, and the
 * server's reply is a buffer of the same size that carries the request's
 * first word back (the one word an application would write, as in
 * tput_rift) instead of a copy of all of it.  Each side then moves every
 * byte only through the kernel, like the plain echo.  A buffer seen for
 * the first time is written in full, once: the plain echo's buffers hold
 * what was read into them, and a send from fresh memory the program never
 * wrote would read the kernel's zero page instead, cheaper than any real
 * data (rift hands out the same few buffers again and again, so after
 * the warm-up every buffer is one it has seen).
 *
 *   lat_rift [-a CPU[,CPU]] [-s SIZE] [-n ITERS] [-w WARMUP]
 *            [-P event|busy|adaptive] [-Z]
 *
 * The polling mode (rift_config.polling) applies to both processes; -a
 * pins the client and the server (see bench.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "rift.h"

const char *bench_prog = "lat_rift";

struct opts {
	size_t size;          /* message bytes */
	long iters;           /* measured round trips */
	long warmup;          /* unmeasured round trips first */
	rift_polling polling; /* both sides */
	const char *mode;     /* name of the polling mode */
	int zcopy;            /* -Z: rift_buf_alloc + rift_conn_send_buf */
};

/* -Z: whether buf was seen before (the last SEEN buffers are kept). */
#define SEEN 32
static bool seen_before(void *buf)
{
	static void *seen[SEEN];
	static unsigned next;

	for (unsigned i = 0; i < SEEN; i++)
		if (seen[i] == buf)
			return true;
	seen[next++ % SEEN] = buf;
	return false;
}

/*
 * Send len bytes: a copy of data (rift_conn_send), or with -Z a new
 * buffer with data's first word in it (rift_conn_send_buf), written in
 * full the first time it is seen.
 */
static int send_msg(rift_conn *conn, const struct opts *o, const void *data,
		    size_t len)
{
	rift_ctx *ctx = rift_conn_ctx(conn);
	void *buf;
	int rc;

	if (!o->zcopy)
		return rift_conn_send(conn, data, len);
	buf = rift_buf_alloc(ctx, len);
	if (!buf)
		return RIFT_ENOMEM;
	if (!seen_before(buf))
		memset(buf, 0x5a, len);
	memcpy(buf, data, len < 8 ? len : 8);
	rc = rift_conn_send_buf(conn, buf, len);
	if (rc)
		rift_buf_free(ctx, buf);
	return rc;
}

static rift_ctx *new_ctx(const struct opts *o)
{
	rift_config cfg;
	rift_ctx *ctx;
	int rc;

	rift_config_init(&cfg);
	cfg.polling = o->polling;
	rc = rift_ctx_create(&ctx, &cfg);
	if (rc)
		bench_die("rift_ctx_create: %s (%s)", rift_strerror(rc),
			  rift_ctx_last_error(NULL));
	return ctx;
}

/* ---- server: echo ---- */

struct server {
	const struct opts *o;
	rift_ctx *ctx;
	rift_listener *lst;
	rift_conn *conn;
	int open;   /* handles whose close callback has not run */
	int failed; /* an echo could not be sent */
};

static void srv_closed_conn(rift_conn *conn)
{
	struct server *s = rift_conn_user(conn);

	if (--s->open == 0)
		rift_ctx_stop(s->ctx);
}

static void srv_closed_lst(rift_listener *l)
{
	struct server *s = rift_listener_user(l);

	if (--s->open == 0)
		rift_ctx_stop(s->ctx);
}

static void srv_shutdown(struct server *s)
{
	if (s->conn) {
		rift_conn_close(s->conn, srv_closed_conn);
		s->conn = NULL;
	}
	if (s->lst) {
		rift_listener_close(s->lst, srv_closed_lst);
		s->lst = NULL;
	}
}

static void srv_on_event(rift_conn *conn, const rift_event *ev)
{
	struct server *s = rift_conn_user(conn);

	if (ev->type == RIFT_EVENT_DISCONNECTED || ev->type == RIFT_EVENT_ERROR) {
		if (ev->status)
			fprintf(stderr, "lat_rift server: %s: %s\n",
				rift_event_name(ev->type), ev->message);
		srv_shutdown(s);
	}
}

static void srv_on_recv(rift_conn *conn, rift_msg *msg)
{
	struct server *s = rift_conn_user(conn);
	int rc = send_msg(conn, s->o, rift_msg_data(msg), rift_msg_len(msg));

	if (rc) {
		fprintf(stderr, "lat_rift server: echo: %s\n", rift_strerror(rc));
		s->failed = 1;
		srv_shutdown(s);
	}
}

static void srv_on_accept(rift_listener *l, rift_conn *conn)
{
	struct server *s = rift_listener_user(l);

	if (s->conn) {
		rift_conn_close(conn, NULL); /* one client only */
		return;
	}
	s->conn = conn;
	s->open++;
}

static int server_main(int ctl, void *arg)
{
	static const rift_conn_callbacks cbs = {
		.on_event = srv_on_event,
		.on_recv = srv_on_recv,
	};
	const struct opts *o = arg;
	struct server s = { .o = o };
	int rc;

	s.ctx = new_ctx(o);
	rc = rift_listen(s.ctx, "tcp://127.0.0.1:0", &cbs, &s, srv_on_accept,
			 &s.lst);
	if (rc)
		bench_die("rift_listen: %s (%s)", rift_strerror(rc),
			  rift_ctx_last_error(s.ctx));
	s.open = 1;
	bench_ctl_send_port(ctl, rift_listener_port(s.lst));
	rc = rift_ctx_run(s.ctx, (BENCH_WATCHDOG_S - 5) * 1000);
	if (rc) {
		fprintf(stderr, "lat_rift server: run: %s\n", rift_strerror(rc));
		return 1;
	}
	rc = rift_ctx_destroy(s.ctx);
	if (rc)
		bench_die("rift_ctx_destroy: %s", rift_ctx_last_error(s.ctx));
	return s.failed;
}

/* ---- client: measure ---- */

struct client {
	const struct opts *o;
	rift_ctx *ctx;
	rift_conn *conn;
	uint8_t *msg;
	uint64_t *ns;
	uint64_t t0;  /* when the message in flight was sent, ns */
	long done;    /* round trips completed */
	int failed;
};

static void cli_send(struct client *c)
{
	int rc;

	c->t0 = bench_now_ns();
	rc = send_msg(c->conn, c->o, c->msg, c->o->size);
	if (rc) {
		fprintf(stderr, "lat_rift: send: %s\n", rift_strerror(rc));
		c->failed = 1;
		rift_ctx_stop(c->ctx);
	}
}

static void cli_on_event(rift_conn *conn, const rift_event *ev)
{
	struct client *c = rift_conn_user(conn);

	switch (ev->type) {
	case RIFT_EVENT_CONNECTED:
		cli_send(c);
		break;
	case RIFT_EVENT_ERROR:
	case RIFT_EVENT_DISCONNECTED:
		fprintf(stderr, "lat_rift: %s: %s\n", rift_event_name(ev->type),
			ev->message);
		c->failed = 1;
		rift_ctx_stop(c->ctx);
		break;
	default:
		break;
	}
}

static void cli_on_recv(rift_conn *conn, rift_msg *msg)
{
	struct client *c = rift_conn_user(conn);
	uint64_t t = bench_now_ns() - c->t0;

	if (rift_msg_len(msg) != c->o->size) {
		fprintf(stderr, "lat_rift: echo of %zu bytes, sent %zu\n",
			rift_msg_len(msg), c->o->size);
		c->failed = 1;
		rift_ctx_stop(c->ctx);
		return;
	}
	if (c->done >= c->o->warmup)
		c->ns[c->done - c->o->warmup] = t;
	if (++c->done == c->o->warmup + c->o->iters)
		rift_ctx_stop(c->ctx);
	else
		cli_send(c);
}

static void cli_closed(rift_conn *conn)
{
	struct client *c = rift_conn_user(conn);

	rift_ctx_stop(c->ctx);
}

static int parse_mode(const char *s, rift_polling *p)
{
	if (!strcmp(s, "event"))
		*p = RIFT_POLL_EVENT;
	else if (!strcmp(s, "busy"))
		*p = RIFT_POLL_BUSY;
	else if (!strcmp(s, "adaptive"))
		*p = RIFT_POLL_ADAPTIVE;
	else
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const rift_conn_callbacks cbs = {
		.on_event = cli_on_event,
		.on_recv = cli_on_recv,
	};
	struct opts o = { .size = 32, .iters = 20000, .warmup = 2000,
			  .polling = RIFT_POLL_EVENT, .mode = "event" };
	struct client c = { .o = &o };
	char url[64], mode[32];
	int ch, ctl, rc;
	pid_t pid;

	while ((ch = getopt(argc, argv, "s:n:w:P:a:Z")) != -1) {
		switch (ch) {
		case 's': o.size = bench_parse_size("-s", optarg); break;
		case 'n': o.iters = atol(optarg); break;
		case 'w': o.warmup = atol(optarg); break;
		case 'P':
			if (parse_mode(optarg, &o.polling))
				bench_die("-P: event, busy or adaptive");
			o.mode = optarg;
			break;
		case 'a': bench_set_cpus(optarg); break;
		case 'Z': o.zcopy = 1; break;
		default:
			fprintf(stderr, "usage: %s [-a CPU[,CPU]] [-s SIZE] "
				"[-n ITERS] [-w WARMUP] [-P event|busy|adaptive] "
				"[-Z]\n", argv[0]);
			return 2;
		}
	}
	if (o.iters <= 0 || o.warmup < 0)
		bench_die("need -n > 0, -w >= 0");
	alarm(BENCH_WATCHDOG_S);
	c.ns = calloc((size_t)o.iters, sizeof(*c.ns));
	c.msg = calloc(1, o.size ? o.size : 1);
	if (!c.ns || !c.msg)
		bench_die("out of memory");

	pid = bench_spawn(server_main, &o, &ctl);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", bench_ctl_recv_port(ctl));
	c.ctx = new_ctx(&o);
	rc = rift_connect(c.ctx, url, &cbs, &c, &c.conn);
	if (rc)
		bench_die("rift_connect %s: %s (%s)", url, rift_strerror(rc),
			  rift_ctx_last_error(c.ctx));
	rc = rift_ctx_run(c.ctx, (BENCH_WATCHDOG_S - 10) * 1000);
	if (rc)
		bench_die("run: %s after %ld round trips", rift_strerror(rc),
			  c.done);
	if (c.failed)
		bench_die("failed after %ld round trips", c.done);

	/* Orderly end: the server sees DISCONNECTED and exits. */
	rift_conn_close(c.conn, cli_closed);
	rift_ctx_run(c.ctx, 5000);
	rc = rift_ctx_destroy(c.ctx);
	if (rc)
		bench_die("rift_ctx_destroy: %s", rift_ctx_last_error(c.ctx));
	close(ctl);
	if (bench_reap(pid, 5000))
		bench_die("server failed");
	snprintf(mode, sizeof(mode), "%s%s", o.mode, o.zcopy ? "-zcopy" : "");
	bench_report_lat("rift", mode, c.ns, (size_t)o.iters,
			 (size_t)(o.warmup + o.iters));
	free(c.ns);
	free(c.msg);
	return 0;
}
