/*
 * rift-perf's measurement, on the client: one message size as a step,
 * BEGIN .. END/DONE, the traffic of the data connections in it (lat:
 * ping-pong, qd round trips in flight; bw: a one-way stream of zero-copy
 * buffers; --op write and read: rma.c), the client's connection
 * callbacks and the step's statistics.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "perf.h"

static uint64_t cpu_us(void)
{
	struct rusage ru;

	/* Per thread: in loopback mode each side is a thread of its own. */
	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)ru.ru_utime.tv_sec * 1000000u +
	       (uint64_t)ru.ru_utime.tv_usec +
	       (uint64_t)ru.ru_stime.tv_sec * 1000000u +
	       (uint64_t)ru.ru_stime.tv_usec;
}

static const char *conn_name(const struct cconn *c, char *buf, size_t len)
{
	if (c->idx < 0)
		snprintf(buf, len, "control connection");
	else
		snprintf(buf, len, "data connection %d", c->idx);
	return buf;
}

int samples_push(struct samples *s, uint64_t v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		uint64_t *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv)
			return -1;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return 0;
}

/* lat: keep qd round trips in flight on one connection. */
/* Send what the queue depth allows.  now: a stamp just taken (the reply
 * that made room), used for the first send, as perftest stamps each
 * round trip once; 0: take one. */
static inline __attribute__((always_inline)) void lat_pump(struct cconn *c, uint64_t now)
{
	struct client *cl = c->cl;

	while (!c->blocked && c->ts_n < cl->qd && more_to_send(c)) {
		uint64_t t = now ? now : stamp_now();
		int rc = rift_conn_send(c->conn, cl->payload, cl->size);

		if (rc == RIFT_EAGAIN) {
			c->blocked = true;
			return;
		}
		if (rc) {
			cl_fail_rc(cl, rc,
				   "send on data connection %d: %s (%s)",
				   c->idx, rift_strerror(rc),
				   rift_conn_last_error(c->conn));
			return;
		}
		uint32_t i = c->ts_head + c->ts_n; /* no div: a TCG helper */

		c->ts[i >= cl->qd ? i - cl->qd : i] = t;
		c->ts_n++;
		c->sent++;
		now = 0;
	}
}

static void lat_recv(struct cconn *c, rift_msg *msg)
{
	struct client *cl = c->cl;
	uint64_t now = stamp_now(), t;

	if (!cl->in_step || !c->ts_n || rift_msg_len(msg) != cl->size) {
		cl_fail(cl,
			"data connection %d: unexpected message of %zu bytes",
			c->idx, rift_msg_len(msg));
		return;
	}
	t = c->ts[c->ts_head];
	c->ts_head = c->ts_head + 1 == cl->qd ? 0 : c->ts_head + 1;
	c->ts_n--;
	c->recvd++;
	/* The next request first (its SEND may leave from inside the
	 * call), the bookkeeping after, as perftest posts before it
	 * stores. */
	lat_pump(c, now);
	t = now > t ? now - t : 0;
	if (c->recvd > cl->o->warmup && samples_push(&cl->lat, t))
		cl_fail_rc(cl, RIFT_ENOMEM,
			   "out of memory for latency samples");
}

/* bw: send a batch on one connection, within qd and the send window. */
static void bw_pump(struct cconn *c)
{
	struct client *cl = c->cl;
	uint32_t batch = cl->batch;

	while (batch-- && !c->blocked && more_to_send(c)) {
		void *buf = c->held;
		int rc;

		if (cl->o->qd) {
			rift_conn_stats st;

			rift_conn_stats_init(&st);
			rift_conn_stats_get(c->conn, &st);
			if (st.unacked_msgs >= cl->o->qd)
				return;
		}
		if (!buf) {
			buf = rift_buf_alloc(cl->ctx, cl->size);
			if (!buf) {
				cl_fail_rc(cl, RIFT_ENOMEM,
					   "rift_buf_alloc(%" PRIu64
					   "): out of memory",
					   cl->size);
				return;
			}
			/*
			 * Like perftest, do not count writing the payload:
			 * only a sequence number, unless --fill asks for
			 * every byte (what an application producing the
			 * data pays; also what keeps memcheck quiet, as
			 * rift_buf_alloc memory is uninitialised).
			 */
			if (cl->o->fill)
				memset(buf, 0xa5, cl->size);
			memcpy(buf, &c->sent, cl->size < 8 ? cl->size : 8);
		}
		c->held = NULL;
		rc = rift_conn_send_buf(c->conn, buf, cl->size);
		if (rc == RIFT_EAGAIN) {
			c->held =
				buf; /* still ours: sent again after WRITABLE */
			c->blocked = true;
			return;
		}
		if (rc) {
			rift_buf_free(cl->ctx, buf);
			cl_fail_rc(cl, rc,
				   "send on data connection %d: %s (%s)",
				   c->idx, rift_strerror(rc),
				   rift_conn_last_error(c->conn));
			return;
		}
		c->sent++;
	}
}

static void bw_pump_all(struct client *cl)
{
	for (uint32_t i = 0; i < cl->n_data && !cl->failed; i++)
		bw_pump(&cl->data[i]);
}

void cl_on_recv(rift_conn *conn, rift_msg *msg)
{
	struct cconn *c = rift_conn_user(conn);
	struct client *cl = c->cl;
	struct ctl m;
	char name[64];

	if (c->idx >= 0 && c->joined) {
		if (cl->o->test == TEST_LAT && cl->o->op == OP_SEND)
			lat_recv(c, msg);
		else
			cl_fail(cl,
				"data connection %d: the server sent a message "
				"in a %s %s test",
				c->idx, op_name(cl->o->op),
				cl->o->test == TEST_LAT ? "lat" : "bw");
		return;
	}
	if (ctl_decode(rift_msg_data(msg), rift_msg_len(msg), &m)) {
		cl_fail(cl,
			"%s: the server does not speak rift-perf (a message "
			"of %zu bytes)",
			conn_name(c, name, sizeof(name)), rift_msg_len(msg));
		return;
	}
	if (m.type == CTL_ERR) {
		cl_fail(cl, "the server refused: %s", m.text);
		return;
	}
	if (c->idx >= 0) {
		if (m.type != CTL_JOIN_OK)
			cl_fail(cl, "data connection %d: unexpected answer %u",
				c->idx, m.type);
		else if (cl->o->op != OP_SEND && !m.blob_len)
			cl_fail(cl,
				"data connection %d: the server's JOIN_OK "
				"carries no token for --op %s",
				c->idx, op_name(cl->o->op));
		/* write/read: the server's export, used as it came */
		memcpy(c->rtok, m.blob, m.blob_len);
		c->rtok_len = m.blob_len;
		c->joined = true;
		return;
	}
	cl->reply = m;
	cl->have_reply = true;
}

void cl_on_event(rift_conn *conn, const rift_event *ev)
{
	struct cconn *c = rift_conn_user(conn);
	struct client *cl = c->cl;
	char name[64];

	switch (ev->type) {
	case RIFT_EVENT_CONNECTED:
		c->connected = true;
		break;
	case RIFT_EVENT_ERROR: {
		rift_fallback_reason fb = rift_conn_fallback_reason(conn);
		size_t n = strlen(cl->url);
		bool has_url = !strncmp(ev->message, cl->url, n) &&
			       ev->message[n] == ':';

		/* rift's message names the URL it tried; do not say it twice */
		cl_fail_rc(cl, ev->status, "cannot connect to %s%s%s%s%s%s",
			   has_url ? "" : cl->url, has_url ? "" : ": ",
			   ev->message,
			   fb != RIFT_FALLBACK_NONE
				   ? " (auto:// had fallen back to TCP: "
				   : "",
			   fb != RIFT_FALLBACK_NONE
				   ? rift_fallback_reason_str(fb)
				   : "",
			   fb != RIFT_FALLBACK_NONE ? ")" : "");
		break;
	}
	case RIFT_EVENT_DISCONNECTED:
		if (ev->status)
			cl_fail_rc(cl, ev->status, "%s: session lost: %s",
				   conn_name(c, name, sizeof(name)),
				   ev->message);
		else
			cl_fail(cl, "%s: the server closed the session",
				conn_name(c, name, sizeof(name)));
		break;
	case RIFT_EVENT_WRITABLE:
		c->blocked = false;
		if (c->idx >= 0 && cl->in_step && cl->o->test == TEST_LAT)
			lat_pump(c, 0);
		break;
	case RIFT_EVENT_PATH_DOWN:
		/* A standby's loss moves nothing: rift sets up another. */
		fprintf(stderr, PROG ": %s: %spath down (%s: %s), %s\n",
			conn_name(c, name, sizeof(name)),
			ev->standby ? "standby " : "",
			rift_path_down_reason_str(ev->down_reason),
			ev->message,
			ev->standby ? "the data path carries on"
				    : "re-attaching");
		break;
	case RIFT_EVENT_WRITTEN:
		/* --notify only: a polled write lat's server writes plainly */
		if (c->idx >= 0 && cl->in_step && cl->o->op == OP_WRITE &&
		    cl->o->test == TEST_LAT && cl->o->notify)
			rma_on_written(c, ev);
		else
			cl_fail(cl, "%s: the server wrote here unasked",
				conn_name(c, name, sizeof(name)));
		break;
	case RIFT_EVENT_PATH_CHANGED:
		cl->path_changes++;
		fprintf(stderr, PROG ": %s: path changed, now %s via %s\n",
			conn_name(c, name, sizeof(name)),
			rift_transport_name(ev->transport), ev->peer);
		break;
	default:
		break;
	}
}

static bool step_done(struct client *cl)
{
	for (uint32_t i = 0; i < cl->n_data; i++) {
		const struct cconn *c = &cl->data[i];

		/* more_to_send last: with -D it reads the clock, and a
		 * polled write lat looks here after every round */
		if (c->ts_n || c->inflight || more_to_send(c))
			return false;
	}
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples, in us. */
static double pct(const uint64_t *v, size_t n, double p)
{
	size_t k = (size_t)ceil(p * (double)n);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)v[k - 1] / 1e3;
}

/* The step's samples from stamps to ns, at the rate the step saw. */
static void samples_to_ns(struct client *cl, uint64_t s0, uint64_t s1,
			  uint64_t t1)
{
	double ns_per_tick = 1.0;

#if defined(__x86_64__)
	if (s1 > s0 && t1 > cl->t0)
		ns_per_tick = (double)(t1 - cl->t0) / (double)(s1 - s0);
#else
	(void)s0;
	(void)s1;
	(void)t1;
#endif
	for (size_t i = 0; i < cl->lat.n; i++)
		cl->lat.v[i] = (uint64_t)((double)cl->lat.v[i] * ns_per_tick + 0.5);
}

static void lat_stats(struct samples *s, struct latstats *st)
{
	double sum = 0, sq = 0, mean;

	memset(st, 0, sizeof(*st));
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	for (size_t i = 0; i < s->n; i++)
		sum += (double)s->v[i] / 1e3;
	mean = sum / (double)s->n;
	for (size_t i = 0; i < s->n; i++) {
		double d = (double)s->v[i] / 1e3 - mean;

		sq += d * d;
	}
	st->min = (double)s->v[0] / 1e3;
	st->p50 = pct(s->v, s->n, 0.50);
	st->p90 = pct(s->v, s->n, 0.90);
	st->p99 = pct(s->v, s->n, 0.99);
	st->p999 = pct(s->v, s->n, 0.999);
	st->max = (double)s->v[s->n - 1] / 1e3;
	st->mean = mean;
	st->stdev = s->n > 1 ? sqrt(sq / (double)(s->n - 1)) : 0;
}

static bool settled(struct client *cl)
{
	return now_ns() >= cl->settle_until;
}

/*
 * BEGIN a phase of one message size: counters at zero on both sides.  A
 * timed one waits, first, until neither side's registered pool is still
 * registering memory ahead of need (rift_ctx_stats.pool_growing; the
 * server says its own in BEGIN_OK): that runs on a thread of the pool's
 * own, and in the first second of a process (two 16 MiB regions each
 * side, pinned and zeroed) it took the CPU from the spinning loops: a
 * 2000-round-trip latency run measured then had its mean at 1.4x its
 * median.  perftest registers all its memory before it times too.  The
 * wait is bounded (SETTLE_MS): a pool that keeps growing is measured
 * growing.
 */
#define SETTLE_MS 10000
#define SETTLE_STEP_MS 20

static int cl_begin(struct client *cl, uint64_t size, bool timed)
{
	uint64_t v[2] = { (uint64_t)cl->step_no, size };
	uint64_t end = now_ns() + (uint64_t)SETTLE_MS * 1000000u;
	rift_ctx_stats st;
	int rc;

	rift_ctx_stats_init(&st);
	for (;;) {
		rc = cl_ask(cl, CTL_BEGIN, v, 2, CTL_BEGIN_OK, "BEGIN");
		if (rc)
			return rc;
		rift_ctx_stats_get(cl->ctx, &st);
		if (!timed || now_ns() >= end ||
		    (!cl->reply.v[0] && !st.pool_growing))
			break;
		cl->settle_until = now_ns() + SETTLE_STEP_MS * 1000000u;
		rc = cl_wait(cl, settled, NULL, "settle", 0);
		if (rc)
			return rc;
	}
	for (uint32_t i = 0; i < cl->n_data; i++) {
		struct cconn *c = &cl->data[i];

		c->sent = c->recvd = 0;
		c->ts_head = c->ts_n = 0;
		rma_begin(c);
	}
	cl->size = size;
	cl->lat.n = 0;
	/* bw: enough per round to fill a writev, few enough to flush often */
	cl->batch = size >= (1u << 20)
			    ? 1
			    : (uint32_t)((1u << 20) / (size ? size : 1));
	if (cl->batch > 1024)
		cl->batch = 1024;
	return 0;
}

/*
 * What the server's application sees of sent messages or operations:
 * the messages; with --op write --test lat the writes whose last byte
 * it saw land (--notify: that it is told of, RIFT_EVENT_WRITTEN, each
 * before its writer's callback); nothing of the other one-sided tests,
 * whose operations its rift serves without a word to it (as perftest's
 * server sits idle in ib_write_bw).
 */
static uint64_t srv_sees(const struct client *cl, uint64_t sent)
{
	const struct opts *o = cl->o;

	if (o->op == OP_SEND || (o->op == OP_WRITE && o->test == TEST_LAT))
		return sent;
	return 0;
}

/* END a phase: wait until the server has every message sent (DONE). */
static int cl_end(struct client *cl, uint64_t sent)
{
	uint64_t n = srv_sees(cl, sent);
	uint64_t v[2] = {n, n * cl->size};
	int rc;

	rc = cl_ask(cl, CTL_END, v, 2, CTL_DONE, "END");
	if (rc)
		return rc;
	if (cl->reply.v[0] != n || cl->reply.v[1] != n * cl->size) {
		cl_fail(cl,
			"the server received %" PRIu64 " %s (%" PRIu64
			" bytes) of %" PRIu64 " (%" PRIu64 " bytes)",
			cl->reply.v[0],
			cl->o->op == OP_SEND ? "messages" : "writes",
			cl->reply.v[1], n, n * cl->size);
		return -1;
	}
	return 0;
}

/* Free what a phase left held (refused when its time was up); returns
 * the messages sent. */
static uint64_t cl_unhold(struct client *cl)
{
	uint64_t sent = 0;

	for (uint32_t i = 0; i < cl->n_data; i++) {
		struct cconn *c = &cl->data[i];

		if (c->held) {
			rift_buf_free(cl->ctx, c->held);
			c->held = NULL;
		}
		sent += c->sent;
	}
	return sent;
}

/*
 * bw: --warmup messages per connection in a phase of their own, BEGIN to
 * DONE, before the step's clock starts.  perftest registers all its
 * memory and posts its receives before it times; here the pool grows
 * to what the stream needs (registering memory costs milliseconds under
 * emulation) and the queues fill, untimed, as ucx_perftest warms up.
 */
static int cl_warm(struct client *cl, uint64_t size)
{
	int rc;

	rc = cl_begin(cl, size, false);
	if (rc)
		return rc;
	cl->total = cl->o->warmup;
	cl->warming = true;
	if (cl->o->op != OP_SEND)
		rma_start(cl);
	rc = cl_wait(cl, step_done, cl->o->op == OP_SEND ? bw_pump_all : NULL,
		     "warm-up", 0);
	cl->warming = false;
	if (rc)
		return rc;
	return cl_end(cl, cl_unhold(cl));
}

/*
 * One message size: BEGIN, the measurement, END/DONE.  0, -1 or -2.
 * A send step's time runs to DONE (the server has the last byte); a
 * write or read step's to the last operation's callback (its bytes are
 * in place), as perftest's bw times from the first post to the last
 * completion.
 */
int cl_step(struct client *cl, uint64_t size, struct result *r)
{
	const struct opts *o = cl->o;
	uint64_t c0, c1, t1, sent, srv_cpu, srv_wall;
	uint64_t s0, s1;
	bool rma = o->op != OP_SEND;
	bool polled = write_lat_polled(o->op, o->test, o->notify);
	void (*work)(struct client *) = NULL;
	int rc;

	if (o->test == TEST_BW && o->warmup) {
		rc = cl_warm(cl, size);
		if (rc)
			return rc;
	}
	rc = cl_begin(cl, size, true);
	if (rc)
		return rc;
	cl->total = o->iters + (o->test == TEST_LAT ? o->warmup : 0);
	c0 = cpu_us();
	cl->t0 = now_ns();
	s0 = stamp_now();
	cl->deadline = cl->t0 + (uint64_t)(o->duration * 1e9);
	cl->in_step = true;
	if (rma)
		rma_start(cl);
	else if (o->test == TEST_LAT)
		for (uint32_t i = 0; i < cl->n_data && !cl->failed; i++)
			lat_pump(&cl->data[i], 0);
	/* A polled write lat looks at memory after every round, and no
	 * round sleeps: a write landing by RDMA wakes nothing. */
	if (polled)
		work = rma_poll;
	else if (o->test == TEST_BW && !rma)
		work = bw_pump_all;
	cl->spin = polled;
	rc = cl_wait(cl, step_done, work, "step", 0);
	cl->spin = false;
	s1 = stamp_now();
	t1 = now_ns();
	c1 = cpu_us();
	cl->in_step = false;
	samples_to_ns(cl, s0, s1, t1);
	sent = cl_unhold(cl);
	progress_clear(cl);
	if (rc)
		return rc;
	rc = cl_end(cl, sent);
	if (rc)
		return rc;
	if (!rma) {
		t1 = now_ns();
		c1 = cpu_us();
	}
	memset(r, 0, sizeof(*r));
	r->size = size;
	r->secs = (double)(t1 - cl->t0) / 1e9;
	r->cpu_cli = 100.0 * (double)(c1 - c0) / ((double)(t1 - cl->t0) / 1e3);
	srv_cpu = cl->reply.v[2] + cl->reply.v[3];
	srv_wall = cl->reply.v[4];
	r->cpu_srv = srv_wall ? 100.0 * (double)srv_cpu / (double)srv_wall : 0;
	if (o->test == TEST_LAT) {
		r->msgs = cl->lat.n;
		r->iters = cl->lat.n / cl->n_data;
		lat_stats(&cl->lat, &r->lat);
	} else {
		r->msgs = sent;
		r->iters = sent / cl->n_data;
		r->bytes = sent * size;
		r->gbytes = (double)r->bytes / 1e9 / r->secs;
		r->gbits = r->gbytes * 8;
		r->mmsgs = (double)sent / 1e6 / r->secs;
	}
	return 0;
}
