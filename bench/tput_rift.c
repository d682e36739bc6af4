/*
 * tput_rift.c - streaming throughput of rift over TCP loopback, two
 * processes, using only rift.h.  The sender (forked child) fills its send
 * window with MSG-byte messages through the zero-copy path (rift_buf_alloc
 * + rift_conn_send_buf), and on RIFT_EAGAIN keeps the buffer and waits for
 * RIFT_EVENT_WRITABLE.  The receiver (this process) counts the bytes its
 * on_recv sees and closes the connection when BYTES have arrived; the
 * sender then sees DISCONNECTED and exits.
 *
 * Throughput is measured at the receiver, from its first on_recv to the
 * on_recv that completes BYTES; the first message is not counted, as it
 * arrived before the clock started (the same rule as tput_plain).
 *
 *   tput_rift [-a CPU[,CPU]] [-s MSG] [-b BYTES] [-P event|busy|adaptive]
 *
 * rift runs with its default configuration except the polling mode, on
 * both sides; -a pins the receiver and the sender (see bench.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "rift.h"

const char *bench_prog = "tput_rift";

struct opts {
	size_t msg;           /* bytes per message */
	uint64_t bytes;       /* total to stream, a multiple of msg */
	rift_polling polling; /* both sides */
	const char *mode;
};

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

/* ---- sender ---- */

struct sender {
	const struct opts *o;
	rift_ctx *ctx;
	rift_conn *conn;
	void *held;     /* buffer refused with RIFT_EAGAIN, sent first */
	uint64_t sent;  /* bytes accepted by rift */
	uint64_t seq;
	int failed;
};

/* Send until the window is full or everything is out. */
static void pump(struct sender *s)
{
	while (s->sent < s->o->bytes) {
		uint64_t *buf = s->held;
		int rc;

		if (!buf) {
			buf = rift_buf_alloc(s->ctx, s->o->msg);
			if (!buf)
				bench_die("rift_buf_alloc failed");
			buf[0] = s->seq; /* the one word an app would write */
		}
		rc = rift_conn_send_buf(s->conn, buf, s->o->msg);
		if (rc == RIFT_EAGAIN) {
			s->held = buf; /* still ours: retry on WRITABLE */
			return;
		}
		s->held = NULL;
		if (rc) {
			rift_buf_free(s->ctx, buf);
			fprintf(stderr, "tput_rift sender: send: %s\n",
				rift_strerror(rc));
			s->failed = 1;
			rift_ctx_stop(s->ctx);
			return;
		}
		s->seq++;
		s->sent += s->o->msg;
	}
}

static void snd_closed(rift_conn *conn)
{
	struct sender *s = rift_conn_user(conn);

	rift_ctx_stop(s->ctx);
}

static void snd_on_event(rift_conn *conn, const rift_event *ev)
{
	struct sender *s = rift_conn_user(conn);

	switch (ev->type) {
	case RIFT_EVENT_CONNECTED:
	case RIFT_EVENT_WRITABLE:
		pump(s);
		break;
	case RIFT_EVENT_DISCONNECTED:
		/* The receiver closes once it has everything. */
		if (ev->status || s->sent < s->o->bytes) {
			fprintf(stderr, "tput_rift sender: disconnected after "
				"%llu bytes: %s\n",
				(unsigned long long)s->sent, ev->message);
			s->failed = 1;
		}
		rift_conn_close(conn, snd_closed);
		break;
	case RIFT_EVENT_ERROR:
		fprintf(stderr, "tput_rift sender: %s\n", ev->message);
		s->failed = 1;
		rift_conn_close(conn, snd_closed);
		break;
	default:
		break;
	}
}

static int sender_main(int ctl, void *arg)
{
	static const rift_conn_callbacks cbs = { .on_event = snd_on_event };
	struct sender s = { .o = arg };
	char url[64];
	int rc;

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", bench_ctl_recv_port(ctl));
	s.ctx = new_ctx(s.o);
	rc = rift_connect(s.ctx, url, &cbs, &s, &s.conn);
	if (rc)
		bench_die("rift_connect %s: %s (%s)", url, rift_strerror(rc),
			  rift_ctx_last_error(s.ctx));
	rc = rift_ctx_run(s.ctx, (BENCH_WATCHDOG_S - 5) * 1000);
	if (rc) {
		fprintf(stderr, "tput_rift sender: run: %s\n", rift_strerror(rc));
		return 1;
	}
	if (s.held)
		rift_buf_free(s.ctx, s.held);
	rc = rift_ctx_destroy(s.ctx);
	if (rc)
		bench_die("rift_ctx_destroy: %s", rift_ctx_last_error(s.ctx));
	return s.failed;
}

/* ---- receiver ---- */

struct receiver {
	const struct opts *o;
	rift_ctx *ctx;
	rift_listener *lst;
	rift_conn *conn;
	uint64_t got, first;   /* bytes; bytes of the first message */
	uint64_t t_first, t_last; /* ns */
	int open;              /* handles whose close callback is due */
	int failed;
};

static void rcv_closed_conn(rift_conn *conn)
{
	struct receiver *r = rift_conn_user(conn);

	if (--r->open == 0)
		rift_ctx_stop(r->ctx);
}

static void rcv_closed_lst(rift_listener *l)
{
	struct receiver *r = rift_listener_user(l);

	if (--r->open == 0)
		rift_ctx_stop(r->ctx);
}

static void rcv_shutdown(struct receiver *r)
{
	if (r->conn) {
		rift_conn_close(r->conn, rcv_closed_conn);
		r->conn = NULL;
	}
	if (r->lst) {
		rift_listener_close(r->lst, rcv_closed_lst);
		r->lst = NULL;
	}
}

static void rcv_on_recv(rift_conn *conn, rift_msg *msg)
{
	struct receiver *r = rift_conn_user(conn);
	size_t len = rift_msg_len(msg);

	if (r->got == 0) {
		r->t_first = bench_now_ns();
		r->first = len;
	}
	r->got += len;
	if (r->got >= r->o->bytes) {
		r->t_last = bench_now_ns();
		rcv_shutdown(r);
	}
}

static void rcv_on_event(rift_conn *conn, const rift_event *ev)
{
	struct receiver *r = rift_conn_user(conn);

	if (ev->type == RIFT_EVENT_DISCONNECTED || ev->type == RIFT_EVENT_ERROR) {
		fprintf(stderr, "tput_rift receiver: %s after %llu bytes: %s\n",
			rift_event_name(ev->type), (unsigned long long)r->got,
			ev->message);
		r->failed = 1;
		rcv_shutdown(r);
	}
}

static void rcv_on_accept(rift_listener *l, rift_conn *conn)
{
	struct receiver *r = rift_listener_user(l);

	if (r->conn) {
		rift_conn_close(conn, NULL); /* one sender only */
		return;
	}
	r->conn = conn;
	r->open++;
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
		.on_event = rcv_on_event,
		.on_recv = rcv_on_recv,
	};
	struct opts o = { .msg = 64 << 10, .bytes = 2ull << 30,
			  .polling = RIFT_POLL_EVENT, .mode = "event" };
	struct receiver r = { .o = &o };
	int ch, ctl, rc;
	pid_t pid;

	while ((ch = getopt(argc, argv, "s:b:P:a:")) != -1) {
		switch (ch) {
		case 's': o.msg = bench_parse_size("-s", optarg); break;
		case 'b': o.bytes = bench_parse_size("-b", optarg); break;
		case 'P':
			if (parse_mode(optarg, &o.polling))
				bench_die("-P: event, busy or adaptive");
			o.mode = optarg;
			break;
		case 'a': bench_set_cpus(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-a CPU[,CPU]] [-s MSG] "
				"[-b BYTES] [-P event|busy|adaptive]\n", argv[0]);
			return 2;
		}
	}
	if (o.msg < 8 || o.bytes < 2 * o.msg)
		bench_die("need -s >= 8, -b >= 2 * MSG");
	o.bytes -= o.bytes % o.msg;
	alarm(BENCH_WATCHDOG_S);

	/* Fork first, so the sender inherits none of the receiver's fds. */
	pid = bench_spawn(sender_main, &o, &ctl);
	r.ctx = new_ctx(&o);
	rc = rift_listen(r.ctx, "tcp://127.0.0.1:0", &cbs, &r, rcv_on_accept,
			 &r.lst);
	if (rc)
		bench_die("rift_listen: %s (%s)", rift_strerror(rc),
			  rift_ctx_last_error(r.ctx));
	r.open = 1;
	bench_ctl_send_port(ctl, rift_listener_port(r.lst));
	rc = rift_ctx_run(r.ctx, (BENCH_WATCHDOG_S - 10) * 1000);
	if (rc)
		bench_die("run: %s after %llu bytes", rift_strerror(rc),
			  (unsigned long long)r.got);
	rc = rift_ctx_destroy(r.ctx);
	if (rc)
		bench_die("rift_ctx_destroy: %s", rift_ctx_last_error(r.ctx));
	close(ctl);
	if (bench_reap(pid, 5000) || r.failed)
		bench_die("failed after %llu bytes", (unsigned long long)r.got);
	bench_report_tput("rift", o.mode, r.got - r.first,
			  r.t_last - r.t_first, o.bytes);
	return 0;
}
