/*
 * rift-perf - rift's benchmark, speaking perftest's language.  Uses only
 * rift.h, like any application.
 *
 *   rift-perf [options]              server: serve one client, then exit
 *   rift-perf -S [options] [ADDR]    server listening on ADDR only
 *   rift-perf [options] HOST         client of the server on HOST
 *   rift-perf --loopback [options] [ADDR]
 *                                    server and client in one process, two
 *                                    threads with a context each, both on
 *                                    ADDR (default 127.0.0.1)
 *
 * Tests: lat (ping-pong: the server echoes, each sample is one round trip
 * as the application sees it) and bw (one-way streaming with zero-copy
 * buffers; the server counts).  docs/rift-perf.md has every option, the
 * output columns and the JSON schema.
 *
 * The client drives everything over a control connection: HELLO carries the
 * test, the server answers with a session token that the data connections
 * present in a JOIN, and each message size is one BEGIN .. END/DONE step,
 * DONE carrying what the server received and its CPU time.  Data
 * connections carry nothing but the benchmark's messages after the JOIN, so
 * any size, even 2 bytes, is measured as it is.
 *
 * The loop is an external one (poll on rift_ctx_fd, then
 * rift_ctx_progress), following the polling mode of the configuration, so
 * the bandwidth test can send again as soon as acknowledgements arrive.
 *
 * With --metrics-port, GET /metrics and /info are served over HTTP
 * (metrics_http.h): libmicrohttpd's thread asks, each context's loop
 * renders its own context after a progress round.
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "rift.h"

#include "metrics_http.h"

#define PROG		  "rift-perf"
#define DEFAULT_PORT	  18515	      /* perftest's */
#define PROTO_MAGIC	  0x46525052u /* "RPRF" */
#define PROTO_VERSION	  1u
#define CTL_VALUES	  8
#define CTL_HDR		  8u /* magic, type */
#define CTL_SIZE	  (CTL_HDR + 8u * CTL_VALUES)
#define CTL_TEXT	  256	/* ERR text, bytes */
#define REPLY_TIMEOUT_MS  60000 /* control answers, ms */
#define CLOSE_TIMEOUT_MS  5000	/* waiting for close callbacks, ms */
#define TICK_MS		  100	/* longest sleep between flag checks, ms */
#define MAX_CONNS	  1024
#define MAX_QD		  65536
#define MAX_SIZES	  40
#define SWEEP_MIN	  2
#define SWEEP_MAX_DEFAULT (1ull << 23)
#define LAT_ITERS_DEFAULT 1000 /* perftest's lat default */
#define BW_ITERS_DEFAULT  5000 /* perftest's bw default */
#define LAT_SIZE_DEFAULT  2
#define BW_SIZE_DEFAULT	  65536
#define PLOT_POINTS	  2000 /* CDF points drawn at most */

#define EXIT_FAIL  1
#define EXIT_USAGE 2
#define EXIT_INTR  130

enum mode { MODE_CLIENT, MODE_SERVER, MODE_LOOPBACK };
enum test { TEST_LAT = 1, TEST_BW = 2 };

enum ctl_type {
	CTL_HELLO = 1, /* v: version, test, conns, qd, largest size */
	CTL_HELLO_OK,  /* v: token */
	CTL_JOIN,      /* v: token, index (first message of a data conn) */
	CTL_JOIN_OK,
	CTL_BEGIN, /* v: step, size */
	CTL_BEGIN_OK,
	CTL_END,  /* v: messages sent in the step, bytes */
	CTL_DONE, /* v: messages, bytes, user us, sys us, wall us */
	CTL_ERR,  /* text */
};

struct ctl {
	uint32_t type;
	uint64_t v[CTL_VALUES];
	char text[CTL_TEXT];
};

struct opts {
	enum mode mode;
	enum test test;
	const char *transport; /* "tcp", "rdma" or "auto" */
	const char *host; /* client: server; server: bind; loopback: both */
	int port;	  /* listen / connect port, 0 = any (loopback) */
	uint64_t sizes[MAX_SIZES]; /* message sizes to run, bytes */
	int n_sizes;
	uint64_t iters;	 /* per connection and size; 0 with -D */
	double duration; /* seconds per size; 0 = iterations */
	uint64_t warmup; /* lat: unmeasured round trips per connection */
	uint32_t qd;	 /* messages in flight per connection, 0 = window */
	uint32_t conns;	 /* data connections */
	bool json, persistent;
	bool fill;		  /* bw: write every byte of every message */
	const char *plot;	  /* SVG path or NULL */
	const char *config;	  /* config file or NULL */
	int metrics_port;	  /* --metrics-port, -1 = no endpoint */
	const char *metrics_addr; /* --metrics-addr */
	rift_config cfg;	  /* defaults < file < env < options */
};

static volatile sig_atomic_t interrupted;
static int stop_all; /* loopback: the client is done (atomic) */

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Latency timestamps.  perftest stamps with the TSC (get_cycles), and so
 * does rift-perf on x86-64, converted to ns at a rate measured against
 * CLOCK_MONOTONIC over each step.  clock_gettime costs a system call where
 * the kernel cannot read the TSC itself (a QEMU TCG guest reads the HPET:
 * about 3 us), and one such call would sit inside every sample, a cost
 * perftest's samples do not carry.  Like perftest, a sample whose ends ran
 * on two CPUs is kept as it is (rare with busy polling; TSCs of one host
 * agree), only never negative.
 */
static uint64_t stamp_now(void)
{
#if defined(__x86_64__)
	unsigned int cpu;

	return __rdtscp(&cpu);
#else
	return now_ns();
#endif
}

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

static void rusage_split(uint64_t *user, uint64_t *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	*user = (uint64_t)ru.ru_utime.tv_sec * 1000000u +
		(uint64_t)ru.ru_utime.tv_usec;
	*sys = (uint64_t)ru.ru_stime.tv_sec * 1000000u +
	       (uint64_t)ru.ru_stime.tv_usec;
}

__attribute__((format(printf, 1, 2))) static void errf(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------------------ */
/* Control messages                                                         */
/* ------------------------------------------------------------------------ */

static size_t ctl_encode(const struct ctl *m, uint8_t *buf)
{
	uint32_t w;
	size_t n = CTL_SIZE;

	w = htole32(PROTO_MAGIC);
	memcpy(buf, &w, 4);
	w = htole32(m->type);
	memcpy(buf + 4, &w, 4);
	for (int i = 0; i < CTL_VALUES; i++) {
		uint64_t v = htole64(m->v[i]);

		memcpy(buf + CTL_HDR + 8 * i, &v, 8);
	}
	if (m->type == CTL_ERR) {
		size_t len = strnlen(m->text, CTL_TEXT - 1);

		memcpy(buf + n, m->text, len);
		n += len;
	}
	return n;
}

static int ctl_decode(const void *data, size_t len, struct ctl *m)
{
	const uint8_t *p = data;
	uint32_t w;

	if (len < CTL_SIZE)
		return -1;
	memcpy(&w, p, 4);
	if (le32toh(w) != PROTO_MAGIC)
		return -1;
	memcpy(&w, p + 4, 4);
	m->type = le32toh(w);
	for (int i = 0; i < CTL_VALUES; i++) {
		uint64_t v;

		memcpy(&v, p + CTL_HDR + 8 * i, 8);
		m->v[i] = le64toh(v);
	}
	len -= CTL_SIZE;
	if (len >= CTL_TEXT)
		len = CTL_TEXT - 1;
	memcpy(m->text, p + CTL_SIZE, len);
	m->text[len] = '\0';
	return 0;
}

static int ctl_send(rift_conn *conn, uint32_t type, const uint64_t *v, int nv,
		    const char *text)
{
	uint8_t buf[CTL_SIZE + CTL_TEXT];
	struct ctl m = {.type = type};

	for (int i = 0; i < nv && i < CTL_VALUES; i++)
		m.v[i] = v[i];
	if (text)
		snprintf(m.text, sizeof(m.text), "%s", text);
	return rift_conn_send(conn, buf, ctl_encode(&m, buf));
}

/* ------------------------------------------------------------------------ */
/* The loop                                                                 */
/* ------------------------------------------------------------------------ */

struct loop {
	rift_ctx *ctx;
	rift_polling polling;
	uint64_t busy_ns;	  /* adaptive: spin this long after work, ns */
	uint64_t last_work;	  /* ns */
	struct metrics_src *msrc; /* /metrics of ctx, or NULL */
};

/*
 * One round: sleep on rift_ctx_fd as the polling mode allows (never longer
 * than max_ms, so flags are seen), then do what is ready.
 */
static int loop_once(struct loop *lp, int max_ms)
{
	/* Busy polling reads no clock here: a round must cost little more
	 * than rift_ctx_progress, as perftest's costs one ibv_poll_cq. */
	uint64_t now = lp->polling == RIFT_POLL_ADAPTIVE ? now_ns() : 0;
	int wait = 0, t, rc;

	if (lp->polling == RIFT_POLL_EVENT ||
	    (lp->polling == RIFT_POLL_ADAPTIVE &&
	     now - lp->last_work >= lp->busy_ns)) {
		t = rift_ctx_timeout(lp->ctx);
		wait = t < 0 || t > max_ms ? max_ms : t;
	}
	if (wait > 0) {
		struct pollfd pfd = {.fd = rift_ctx_fd(lp->ctx),
				     .events = POLLIN};

		poll(&pfd, 1, wait); /* EINTR: the caller looks at the flags */
	}
	rc = rift_ctx_progress(lp->ctx);
	if (rc > 0 && lp->polling == RIFT_POLL_ADAPTIVE)
		lp->last_work = now_ns();
	/* a scrape woke us (rift_ctx_wake): render on this, ctx's thread */
	metrics_src_poll(lp->msrc);
	return rc;
}

/* msrc (may be NULL): where ctx's metrics are served; attached here. */
static void loop_init(struct loop *lp, rift_ctx *ctx, const rift_config *cfg,
		      struct metrics_src *msrc)
{
	lp->ctx = ctx;
	lp->polling = cfg->polling;
	lp->busy_ns = (uint64_t)cfg->busy_poll_us * 1000u;
	lp->last_work = now_ns();
	lp->msrc = msrc;
	metrics_src_attach(msrc, ctx);
}

/* Stop serving the loop's context over HTTP; before rift_ctx_destroy. */
static void loop_fini(struct loop *lp)
{
	metrics_src_detach(lp->msrc);
	lp->msrc = NULL;
}

static void url_build(char *buf, size_t len, const char *scheme,
		      const char *host, int port)
{
	bool v6 = strchr(host, ':') && host[0] != '[';

	snprintf(buf, len, "%s://%s%s%s:%d", scheme, v6 ? "[" : "", host,
		 v6 ? "]" : "", port);
}

/* ------------------------------------------------------------------------ */
/* Server                                                                   */
/* ------------------------------------------------------------------------ */

enum sc_kind { SC_NEW, SC_CTL, SC_DATA, SC_DEAD };

struct server;

struct sconn {
	struct server *s;
	rift_conn *conn;
	enum sc_kind kind;
	bool closing;
	rift_msg **q; /* lat: echoes refused with RIFT_EAGAIN, in order */
	size_t q_head, q_n, q_cap;
	bool recv_stopped; /* while q is not empty */
	struct sconn *next;
};

struct server {
	const struct opts *o;
	const char *who;	  /* log prefix */
	bool loopback;		  /* a thread beside the client: logs errors
				     only, ends when the client is done */
	struct metrics_src *msrc; /* --metrics-port: this side, or NULL */
	rift_ctx *ctx;
	struct loop lp;
	rift_listener *lst;
	char url[300];
	int port; /* bound port */
	struct sconn *conns;
	int open; /* handles whose close callback is due */
	int failed;
	/* the client being served */
	struct sconn *ctl;
	uint64_t token;
	enum test test;
	uint32_t want_conns, joined;
	bool session_end; /* the main loop ends the session */
	bool session_failed;
	int served; /* sessions that said HELLO */
	/* the current step */
	uint64_t rmsgs, rbytes;
	uint64_t want_msgs;
	bool end_pending; /* END seen, DONE due once want_msgs arrived */
	uint64_t t_begin, u_begin, s_begin;
	/* loopback: 1 listening, -1 failed (atomic) */
	int ready;
};

__attribute__((format(printf, 2, 3))) static void slog(struct server *s,
						       const char *fmt, ...)
{
	va_list ap;

	if (s->loopback)
		return;
	fprintf(stderr, "%s: ", s->who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

__attribute__((format(printf, 2, 3))) static void serr(struct server *s,
						       const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", s->who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void srv_closed(rift_conn *conn)
{
	struct sconn *sc = rift_conn_user(conn);
	struct server *s = sc->s;

	for (struct sconn **pp = &s->conns; *pp; pp = &(*pp)->next) {
		if (*pp == sc) {
			*pp = sc->next;
			break;
		}
	}
	free(sc->q);
	free(sc);
	s->open--;
}

static void sc_close(struct sconn *sc)
{
	if (sc->closing)
		return;
	sc->closing = true;
	while (sc->q_n) {
		rift_msg_release(sc->q[sc->q_head]);
		sc->q_head = (sc->q_head + 1) % sc->q_cap;
		sc->q_n--;
	}
	rift_conn_close(sc->conn, srv_closed);
}

static void srv_session_fail(struct server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void srv_session_fail(struct server *s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	serr(s, "client session: %s", msg);
	s->session_failed = true;
	s->session_end = true;
}

static void srv_check_done(struct server *s)
{
	uint64_t v[5], u, sy;
	int rc;

	if (!s->end_pending || s->rmsgs < s->want_msgs)
		return;
	s->end_pending = false;
	rusage_split(&u, &sy);
	v[0] = s->rmsgs;
	v[1] = s->rbytes;
	v[2] = u - s->u_begin;
	v[3] = sy - s->s_begin;
	v[4] = (now_ns() - s->t_begin) / 1000u;
	rc = ctl_send(s->ctl->conn, CTL_DONE, v, 5, NULL);
	if (rc)
		srv_session_fail(s, "send DONE: %s", rift_strerror(rc));
}

/* A new connection's first message says what it is. */
static void srv_first(struct sconn *sc, rift_msg *msg)
{
	struct server *s = sc->s;
	struct ctl m;
	uint64_t v[1];
	char why[CTL_TEXT];
	int rc;

	if (ctl_decode(rift_msg_data(msg), rift_msg_len(msg), &m)) {
		serr(s,
		     "a connection spoke no rift-perf (%zu bytes); ignoring it",
		     rift_msg_len(msg));
		sc->kind = SC_DEAD;
		return;
	}
	why[0] = '\0';
	if (m.type == CTL_HELLO) {
		if (s->ctl)
			snprintf(why, sizeof(why),
				 "server busy with another client");
		else if (m.v[0] != PROTO_VERSION)
			snprintf(why, sizeof(why),
				 "protocol version %" PRIu64
				 " (server speaks %u): use the same rift-perf "
				 "on both sides",
				 m.v[0], PROTO_VERSION);
		else if (m.v[1] != TEST_LAT && m.v[1] != TEST_BW)
			snprintf(why, sizeof(why), "unknown test %" PRIu64,
				 m.v[1]);
		else if (m.v[2] < 1 || m.v[2] > MAX_CONNS)
			snprintf(why, sizeof(why),
				 "%" PRIu64 " connections: the server "
				 "takes 1..%d",
				 m.v[2], MAX_CONNS);
		else if (m.v[4] > s->o->cfg.max_msg_size)
			snprintf(why, sizeof(why),
				 "message size %" PRIu64 " exceeds the "
				 "server's max_msg_size %" PRIu64,
				 m.v[4], (uint64_t)s->o->cfg.max_msg_size);
		if (why[0]) {
			serr(s, "refusing a client: %s", why);
			sc->kind = SC_DEAD;
			rc = ctl_send(sc->conn, CTL_ERR, NULL, 0, why);
			(void)rc; /* the client closes once it reads it */
			return;
		}
		sc->kind = SC_CTL;
		s->ctl = sc;
		s->test = (enum test)m.v[1];
		s->want_conns = (uint32_t)m.v[2];
		s->joined = 0;
		s->token = now_ns() ^ ((uint64_t)getpid() << 32) ^
			   (uint64_t)(uintptr_t)sc;
		s->end_pending = false;
		s->rmsgs = s->rbytes = 0;
		slog(s, "client: %s test, %u connection(s), transport %s",
		     s->test == TEST_LAT ? "lat" : "bw", s->want_conns,
		     rift_transport_name(rift_conn_transport(sc->conn)));
		v[0] = s->token;
		rc = ctl_send(sc->conn, CTL_HELLO_OK, v, 1, NULL);
		if (rc)
			srv_session_fail(s, "send HELLO_OK: %s",
					 rift_strerror(rc));
		return;
	}
	if (m.type == CTL_JOIN) {
		if (!s->ctl || m.v[0] != s->token)
			snprintf(why, sizeof(why),
				 "no session with that token");
		else if (s->joined >= s->want_conns)
			snprintf(why, sizeof(why),
				 "more connections than announced");
		if (why[0]) {
			serr(s, "refusing a data connection: %s", why);
			sc->kind = SC_DEAD;
			rc = ctl_send(sc->conn, CTL_ERR, NULL, 0, why);
			(void)rc;
			return;
		}
		sc->kind = SC_DATA;
		s->joined++;
		rc = ctl_send(sc->conn, CTL_JOIN_OK, NULL, 0, NULL);
		if (rc)
			srv_session_fail(s, "send JOIN_OK: %s",
					 rift_strerror(rc));
		return;
	}
	serr(s, "a connection began with message type %u; ignoring it", m.type);
	sc->kind = SC_DEAD;
}

static void srv_ctl(struct sconn *sc, rift_msg *msg)
{
	struct server *s = sc->s;
	struct ctl m;
	int rc;

	if (ctl_decode(rift_msg_data(msg), rift_msg_len(msg), &m)) {
		srv_session_fail(s, "bad control message (%zu bytes)",
				 rift_msg_len(msg));
		return;
	}
	switch (m.type) {
	case CTL_BEGIN:
		s->rmsgs = s->rbytes = 0;
		s->end_pending = false;
		s->t_begin = now_ns();
		rusage_split(&s->u_begin, &s->s_begin);
		rc = ctl_send(sc->conn, CTL_BEGIN_OK, NULL, 0, NULL);
		if (rc)
			srv_session_fail(s, "send BEGIN_OK: %s",
					 rift_strerror(rc));
		break;
	case CTL_END:
		s->want_msgs = m.v[0];
		s->end_pending = true;
		srv_check_done(s);
		break;
	default:
		srv_session_fail(s, "unexpected control message type %u",
				 m.type);
		break;
	}
}

static int q_push(struct sconn *sc, rift_msg *msg)
{
	if (sc->q_n == sc->q_cap) {
		size_t cap = sc->q_cap ? sc->q_cap * 2 : 16;
		rift_msg **q = malloc(cap * sizeof(*q));

		if (!q)
			return -1;
		for (size_t i = 0; i < sc->q_n; i++)
			q[i] = sc->q[(sc->q_head + i) % sc->q_cap];
		free(sc->q);
		sc->q = q;
		sc->q_head = 0;
		sc->q_cap = cap;
	}
	sc->q[(sc->q_head + sc->q_n) % sc->q_cap] = rift_msg_retain(msg);
	sc->q_n++;
	return 0;
}

/* Echo what waited for the window; receive again once all of it went. */
static void srv_drain(struct sconn *sc)
{
	while (sc->q_n) {
		rift_msg *m = sc->q[sc->q_head];
		int rc = rift_conn_send(sc->conn, rift_msg_data(m),
					rift_msg_len(m));

		if (rc == RIFT_EAGAIN)
			return;
		if (rc) {
			srv_session_fail(sc->s, "echo: %s", rift_strerror(rc));
			return;
		}
		rift_msg_release(m);
		sc->q_head = (sc->q_head + 1) % sc->q_cap;
		sc->q_n--;
	}
	if (sc->recv_stopped) {
		sc->recv_stopped = false;
		rift_conn_recv_start(sc->conn);
	}
}

static void srv_echo(struct sconn *sc, rift_msg *msg)
{
	int rc = RIFT_EAGAIN;

	if (!sc->q_n)
		rc = rift_conn_send(sc->conn, rift_msg_data(msg),
				    rift_msg_len(msg));
	if (rc == 0)
		return;
	if (rc != RIFT_EAGAIN) {
		srv_session_fail(sc->s, "echo: %s", rift_strerror(rc));
		return;
	}
	/* Window full: keep the message and stop reading (backpressure). */
	if (q_push(sc, msg)) {
		srv_session_fail(sc->s, "echo: out of memory");
		return;
	}
	if (!sc->recv_stopped) {
		sc->recv_stopped = true;
		rift_conn_recv_stop(sc->conn);
	}
}

static void srv_on_recv(rift_conn *conn, rift_msg *msg)
{
	struct sconn *sc = rift_conn_user(conn);
	struct server *s = sc->s;

	switch (sc->kind) {
	case SC_NEW:
		srv_first(sc, msg);
		break;
	case SC_CTL:
		srv_ctl(sc, msg);
		break;
	case SC_DATA:
		s->rmsgs++;
		s->rbytes += rift_msg_len(msg);
		if (s->test == TEST_LAT)
			srv_echo(sc, msg);
		srv_check_done(s);
		break;
	case SC_DEAD:
		break;
	}
}

static void srv_on_event(rift_conn *conn, const rift_event *ev)
{
	struct sconn *sc = rift_conn_user(conn);
	struct server *s = sc->s;

	switch (ev->type) {
	case RIFT_EVENT_DISCONNECTED:
	case RIFT_EVENT_ERROR:
		if (sc->kind == SC_CTL || sc->kind == SC_DATA) {
			if (ev->status)
				srv_session_fail(s, "%s: %s",
						 rift_event_name(ev->type),
						 ev->message);
			s->session_end = true;
		} else {
			sc_close(sc);
		}
		break;
	case RIFT_EVENT_WRITABLE:
		if (sc->kind == SC_DATA)
			srv_drain(sc);
		break;
	case RIFT_EVENT_PATH_DOWN:
		slog(s, "path down: %s", ev->message);
		break;
	case RIFT_EVENT_PATH_CHANGED:
		slog(s, "path changed: now %s via %s",
		     rift_transport_name(ev->transport), ev->peer);
		break;
	default:
		break;
	}
}

static void srv_on_accept(rift_listener *l, rift_conn *conn)
{
	struct server *s = rift_listener_user(l);
	struct sconn *sc = calloc(1, sizeof(*sc));

	if (!sc) {
		serr(s, "accept: out of memory");
		rift_conn_close(conn, NULL);
		return;
	}
	sc->s = s;
	sc->conn = conn;
	sc->kind = SC_NEW;
	sc->next = s->conns;
	s->conns = sc;
	s->open++;
	rift_conn_set_user(conn, sc);
}

static void srv_end_session(struct server *s)
{
	for (struct sconn *sc = s->conns; sc; sc = sc->next)
		if (sc->kind == SC_CTL || sc->kind == SC_DATA)
			sc_close(sc);
	if (s->ctl) {
		s->served++;
		slog(s, "client %s", s->session_failed ? "failed" : "done");
	}
	s->ctl = NULL;
	s->session_end = false;
	s->session_failed = false;
	s->end_pending = false;
	s->joined = 0;
}

static void srv_lst_closed(rift_listener *l)
{
	struct server *s = rift_listener_user(l);

	s->open--;
}

/* Listen and serve clients one after another; 0, or EXIT_* on failure. */
static int server_run(struct server *s)
{
	static const rift_conn_callbacks cbs = {
		.on_event = srv_on_event,
		.on_recv = srv_on_recv,
	};
	const struct opts *o = s->o;
	uint64_t end;
	int rc, ret = 0;

	rc = rift_ctx_create(&s->ctx, &o->cfg);
	if (rc) {
		serr(s, "rift_ctx_create: %s", rift_ctx_last_error(NULL));
		__atomic_store_n(&s->ready, -1, __ATOMIC_RELEASE);
		return EXIT_FAIL;
	}
	loop_init(&s->lp, s->ctx, &o->cfg, s->msrc);
	url_build(s->url, sizeof(s->url), o->transport, o->host, o->port);
	rc = rift_listen(s->ctx, s->url, &cbs, s, srv_on_accept, &s->lst);
	if (rc) {
		serr(s, "listen %s: %s", s->url, rift_ctx_last_error(s->ctx));
		__atomic_store_n(&s->ready, -1, __ATOMIC_RELEASE);
		ret = EXIT_FAIL;
		goto destroy_ctx;
	}
	s->open++;
	s->port = rift_listener_port(s->lst);
	url_build(s->url, sizeof(s->url), o->transport, o->host, s->port);
	slog(s, "listening on %s%s", s->url,
	     o->persistent ? " (persistent)" : ", serving one client");
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);

	/* In loopback the client thread takes the signal and ends the run;
	 * closing here first would show it a lost session, not a stop. */
	while (!(interrupted && !s->loopback) &&
	       !__atomic_load_n(&stop_all, __ATOMIC_ACQUIRE)) {
		if (s->session_end) {
			srv_end_session(s);
			if (!o->persistent && s->served)
				break;
		}
		rc = loop_once(&s->lp, TICK_MS);
		if (rc < 0) {
			serr(s, "rift_ctx_progress: %s", rift_strerror(rc));
			ret = EXIT_FAIL;
			break;
		}
	}
	if (interrupted && !s->loopback)
		ret = EXIT_INTR;

	/* Orderly end: close everything, wait for the close callbacks. */
	for (struct sconn *sc = s->conns; sc; sc = sc->next)
		sc_close(sc);
	rift_listener_close(s->lst, srv_lst_closed);
	end = now_ns() + (uint64_t)CLOSE_TIMEOUT_MS * 1000000u;
	while (s->open > 0 && now_ns() < end)
		if (loop_once(&s->lp, 10) < 0)
			break;
destroy_ctx:
	loop_fini(&s->lp);
	rc = rift_ctx_destroy(s->ctx);
	if (rc) {
		serr(s, "rift_ctx_destroy: %s", rift_ctx_last_error(s->ctx));
		ret = EXIT_FAIL;
	}
	return ret;
}

static void *server_thread(void *arg)
{
	struct server *s = arg;

	s->failed = server_run(s);
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Client                                                                   */
/* ------------------------------------------------------------------------ */

struct samples {
	uint64_t *v; /* round trips, ns */
	size_t n, cap;
};

struct latstats {
	double min, p50, p90, p99, p999, max, mean, stdev; /* us */
};

struct result {
	uint64_t size;		     /* bytes per message */
	uint64_t iters;		     /* measured messages per connection */
	uint64_t msgs;		     /* measured messages, all connections */
	uint64_t bytes;		     /* bw: bytes streamed */
	double secs;		     /* step wall time, s */
	struct latstats lat;	     /* lat */
	double gbytes, gbits, mmsgs; /* bw: GB/s, Gb/s, Mmsg/s */
	double cpu_cli, cpu_srv;     /* % of wall, per side */
};

struct client;

struct cconn {
	struct client *cl;
	rift_conn *conn;
	int idx; /* -1: control, else data index */
	bool connected, joined, closing;
	bool blocked; /* a send got RIFT_EAGAIN; wait for WRITABLE */
	void *held;   /* bw: the buffer that was refused */
	uint64_t *ts; /* lat: send stamps in flight, ring of qd */
	uint32_t ts_head, ts_n;
	uint64_t sent, recvd; /* messages this step */
};

struct client {
	const struct opts *o;
	rift_ctx *ctx;
	struct loop lp;
	char url[300];
	struct cconn ctl;
	struct cconn *data;
	uint32_t n_data; /* data conns opened */
	int open;	 /* connections whose close callback is due */
	bool failed;
	char err[700];
	/* control answers */
	struct ctl reply;
	bool have_reply;
	uint64_t token;
	rift_transport transport;
	rift_fallback_reason fallback;
	uint64_t path_changes;
	/* the step */
	bool in_step;
	bool warming; /* bw: the unmeasured phase in front of a step */
	uint64_t size;
	uint32_t qd;	   /* lat: ring size */
	uint64_t total;	   /* messages per connection, iterations mode */
	uint64_t deadline; /* duration mode, ns */
	uint32_t batch;	   /* bw: sends per loop round */
	uint8_t *payload;  /* lat: message contents */
	struct samples lat; /* stamp ticks during a step, ns after it */
	uint64_t t0;
	/* progress line */
	bool tty, progress_shown;
	uint64_t next_progress, run_start;
	int step_no;
	/* results */
	struct result res[MAX_SIZES];
	int n_res;
};

__attribute__((format(printf, 2, 3))) static void cl_fail(struct client *cl,
							  const char *fmt, ...)
{
	va_list ap;

	if (cl->failed)
		return; /* the first failure is the one to report */
	va_start(ap, fmt);
	vsnprintf(cl->err, sizeof(cl->err), fmt, ap);
	va_end(ap);
	cl->failed = true;
}

static const char *conn_name(const struct cconn *c, char *buf, size_t len)
{
	if (c->idx < 0)
		snprintf(buf, len, "control connection");
	else
		snprintf(buf, len, "data connection %d", c->idx);
	return buf;
}

static inline __attribute__((always_inline)) bool more_to_send(const struct cconn *c)
{
	const struct client *cl = c->cl;

	if (cl->warming)
		return c->sent < cl->total;
	if (cl->o->duration > 0)
		return c->sent < cl->o->warmup * (cl->o->test == TEST_LAT) ||
		       now_ns() < cl->deadline;
	return c->sent < cl->total;
}

static int samples_push(struct samples *s, uint64_t v)
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
			cl_fail(cl, "send on data connection %d: %s (%s)",
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
		cl_fail(cl, "out of memory for latency samples");
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
				cl_fail(cl,
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
			cl_fail(cl, "send on data connection %d: %s (%s)",
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

static void cl_on_recv(rift_conn *conn, rift_msg *msg)
{
	struct cconn *c = rift_conn_user(conn);
	struct client *cl = c->cl;
	struct ctl m;
	char name[64];

	if (c->idx >= 0 && c->joined) {
		if (cl->o->test == TEST_LAT)
			lat_recv(c, msg);
		else
			cl_fail(cl,
				"data connection %d: the server sent data in a "
				"bw test",
				c->idx);
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
		c->joined = true;
		return;
	}
	cl->reply = m;
	cl->have_reply = true;
}

static void cl_on_event(rift_conn *conn, const rift_event *ev)
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
		cl_fail(cl, "cannot connect to %s%s%s%s%s%s",
			has_url ? "" : cl->url, has_url ? "" : ": ",
			ev->message,
			fb != RIFT_FALLBACK_NONE
				? " (auto:// had fallen back to TCP: "
				: "",
			fb != RIFT_FALLBACK_NONE ? rift_fallback_reason_str(fb)
						 : "",
			fb != RIFT_FALLBACK_NONE ? ")" : "");
		break;
	}
	case RIFT_EVENT_DISCONNECTED:
		if (ev->status)
			cl_fail(cl, "%s: session lost: %s",
				conn_name(c, name, sizeof(name)), ev->message);
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
		fprintf(stderr, PROG ": %s: path down (%s), re-attaching\n",
			conn_name(c, name, sizeof(name)), ev->message);
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

static void cl_closed(rift_conn *conn)
{
	struct cconn *c = rift_conn_user(conn);

	c->cl->open--;
}

static void progress_clear(struct client *cl)
{
	if (cl->progress_shown) {
		fputs("\r\033[K", stderr);
		cl->progress_shown = false;
	}
}

/* A progress line on a terminal, for runs longer than a second. */
static void progress_tick(struct client *cl)
{
	uint64_t now, done = 0;
	const struct opts *o = cl->o;

	if (!cl->tty || !cl->in_step)
		return;
	now = now_ns();
	if (now < cl->next_progress)
		return;
	cl->next_progress = now + 250000000u;
	if (now - cl->run_start < 1000000000u)
		return;
	for (uint32_t i = 0; i < cl->n_data; i++)
		done += o->test == TEST_LAT ? cl->data[i].recvd
					    : cl->data[i].sent;
	fprintf(stderr, "\r\033[K" PROG ": %s %" PRIu64 " B",
		o->test == TEST_LAT ? "lat" : "bw", cl->size);
	if (o->n_sizes > 1)
		fprintf(stderr, " (size %d of %d)", cl->step_no + 1,
			o->n_sizes);
	if (o->duration > 0)
		fprintf(stderr, ": %.1f of %.1f s, %" PRIu64 " messages",
			(double)(now - cl->t0) / 1e9, o->duration, done);
	else
		fprintf(stderr, ": %" PRIu64 " of %" PRIu64 " messages", done,
			cl->total * cl->n_data);
	cl->progress_shown = true;
}

/*
 * Run the loop until done(cl), calling work(cl) before each round.
 * Returns 0, -1 on failure (cl->err says why), -2 when interrupted.
 */
static int cl_wait(struct client *cl, bool (*done)(struct client *),
		   void (*work)(struct client *), const char *what,
		   int timeout_ms)
{
	uint64_t end = timeout_ms > 0
			       ? now_ns() + (uint64_t)timeout_ms * 1000000u
			       : UINT64_MAX;
	uint32_t idle = 0;
	bool look = true;
	int rc;

	for (;;) {
		if (interrupted)
			return -2;
		if (cl->failed)
			return -1;
		/* What done() looks at changes only in callbacks, that is in
		 * a round that did work: a busy round that found nothing
		 * costs little more than rift_ctx_progress, as perftest's
		 * costs one ibv_poll_cq. */
		if (look) {
			if (done(cl))
				return 0;
			if (end != UINT64_MAX && now_ns() > end) {
				cl_fail(cl, "%s: no answer from the server within %d s",
					what, timeout_ms / 1000);
				return -1;
			}
			progress_tick(cl);
		}
		if (work)
			work(cl);
		rc = loop_once(&cl->lp, TICK_MS);
		if (rc < 0) {
			cl_fail(cl, "rift_ctx_progress: %s", rift_strerror(rc));
			return -1;
		}
		look = rc > 0 || work || end != UINT64_MAX || ++idle % 4096 == 0;
	}
}

static bool got_reply(struct client *cl)
{
	return cl->have_reply;
}

static bool ctl_connected(struct client *cl)
{
	return cl->ctl.connected;
}

static bool all_connected(struct client *cl)
{
	for (uint32_t i = 0; i < cl->n_data; i++)
		if (!cl->data[i].connected)
			return false;
	return true;
}

static bool all_joined(struct client *cl)
{
	for (uint32_t i = 0; i < cl->n_data; i++)
		if (!cl->data[i].joined)
			return false;
	return true;
}

static bool step_done(struct client *cl)
{
	for (uint32_t i = 0; i < cl->n_data; i++) {
		const struct cconn *c = &cl->data[i];

		if (more_to_send(c) || c->ts_n)
			return false;
	}
	return true;
}

/* Send a control message and wait for the answer of type want. */
static int cl_ask(struct client *cl, uint32_t type, const uint64_t *v, int nv,
		  uint32_t want, const char *what)
{
	int rc;

	cl->have_reply = false;
	rc = ctl_send(cl->ctl.conn, type, v, nv, NULL);
	if (rc) {
		cl_fail(cl, "%s: %s (%s)", what, rift_strerror(rc),
			rift_conn_last_error(cl->ctl.conn));
		return -1;
	}
	rc = cl_wait(cl, got_reply, NULL, what, REPLY_TIMEOUT_MS);
	if (rc)
		return rc;
	if (cl->reply.type != want) {
		cl_fail(cl, "%s: unexpected answer type %u", what,
			cl->reply.type);
		return -1;
	}
	return 0;
}

static int cl_connect(struct client *cl, struct cconn *c)
{
	static const rift_conn_callbacks cbs = {
		.on_event = cl_on_event,
		.on_recv = cl_on_recv,
	};
	int rc;

	c->cl = cl;
	rc = rift_connect(cl->ctx, cl->url, &cbs, c, &c->conn);
	if (rc) {
		cl_fail(cl, "cannot connect to %s: %s", cl->url,
			*rift_ctx_last_error(cl->ctx)
				? rift_ctx_last_error(cl->ctx)
				: rift_strerror(rc));
		c->conn = NULL;
		return -1;
	}
	cl->open++;
	return 0;
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

/* BEGIN a phase of one message size: counters at zero on both sides. */
static int cl_begin(struct client *cl, uint64_t size)
{
	uint64_t v[2] = { (uint64_t)cl->step_no, size };
	int rc;

	rc = cl_ask(cl, CTL_BEGIN, v, 2, CTL_BEGIN_OK, "BEGIN");
	if (rc)
		return rc;
	for (uint32_t i = 0; i < cl->n_data; i++) {
		struct cconn *c = &cl->data[i];

		c->sent = c->recvd = 0;
		c->ts_head = c->ts_n = 0;
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

/* END a phase: wait until the server has every message sent (DONE). */
static int cl_end(struct client *cl, uint64_t sent)
{
	uint64_t v[2] = { sent, sent * cl->size };
	int rc;

	rc = cl_ask(cl, CTL_END, v, 2, CTL_DONE, "END");
	if (rc)
		return rc;
	if (cl->reply.v[0] != sent || cl->reply.v[1] != sent * cl->size) {
		cl_fail(cl,
			"the server received %" PRIu64 " messages (%" PRIu64
			" bytes) of %" PRIu64 " (%" PRIu64 " bytes)",
			cl->reply.v[0], cl->reply.v[1], sent, sent * cl->size);
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

	rc = cl_begin(cl, size);
	if (rc)
		return rc;
	cl->total = cl->o->warmup;
	cl->warming = true;
	rc = cl_wait(cl, step_done, bw_pump_all, "warm-up", 0);
	cl->warming = false;
	if (rc)
		return rc;
	return cl_end(cl, cl_unhold(cl));
}

/* One message size: BEGIN, the measurement, END/DONE.  0, -1 or -2. */
static int cl_step(struct client *cl, uint64_t size, struct result *r)
{
	const struct opts *o = cl->o;
	uint64_t c0, c1, t1, sent, srv_cpu, srv_wall;
	uint64_t s0, s1;
	int rc;

	if (o->test == TEST_BW && o->warmup) {
		rc = cl_warm(cl, size);
		if (rc)
			return rc;
	}
	rc = cl_begin(cl, size);
	if (rc)
		return rc;
	cl->total = o->iters + (o->test == TEST_LAT ? o->warmup : 0);
	c0 = cpu_us();
	cl->t0 = now_ns();
	s0 = stamp_now();
	cl->deadline = cl->t0 + (uint64_t)(o->duration * 1e9);
	cl->in_step = true;
	if (o->test == TEST_LAT)
		for (uint32_t i = 0; i < cl->n_data && !cl->failed; i++)
			lat_pump(&cl->data[i], 0);
	rc = cl_wait(cl, step_done, o->test == TEST_BW ? bw_pump_all : NULL,
		     "step", 0);
	s1 = stamp_now();
	t1 = now_ns();
	cl->in_step = false;
	samples_to_ns(cl, s0, s1, t1);
	sent = cl_unhold(cl);
	progress_clear(cl);
	if (rc)
		return rc;
	rc = cl_end(cl, sent);
	if (rc)
		return rc;
	t1 = now_ns();
	c1 = cpu_us();
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

/* ---- output ---- */

#define RULE                                                                   \
	"------------------------------------------------------------"         \
	"------------------------------------------------------------"
#define LAT_WIDTH 119 /* of the lat table */
#define BW_WIDTH  79  /* of the bw table */

static const char *fallback_code(rift_fallback_reason r)
{
	static const char *const names[] = {
#define XX(name, msg) #name,
		RIFT_FALLBACK_MAP(XX)
#undef XX
	};

	return (unsigned)r < RIFT_FALLBACK__COUNT ? names[r] : "UNKNOWN";
}

static const char *polling_name(rift_polling p)
{
	return p == RIFT_POLL_BUSY	 ? "busy"
	       : p == RIFT_POLL_ADAPTIVE ? "adaptive"
					 : "event";
}

static void transport_why(const struct client *cl, char *buf, size_t len)
{
	const char *req = cl->o->transport;

	if (cl->fallback != RIFT_FALLBACK_NONE)
		snprintf(buf, len, "%s (auto:// fell back: %s)",
			 rift_transport_name(cl->transport),
			 rift_fallback_reason_str(cl->fallback));
	else if (!strcmp(req, "auto"))
		snprintf(buf, len, "%s (auto:// chose it: RDMA %s)",
			 rift_transport_name(cl->transport),
			 cl->transport == RIFT_TRANSPORT_RDMA ? "available"
							      : "not used");
	else
		snprintf(buf, len, "%s (as requested)",
			 rift_transport_name(cl->transport));
}

static void print_header(const struct client *cl)
{
	const struct opts *o = cl->o;
	char why[200];

	transport_why(cl, why, sizeof(why));
	printf("%.*s\n", o->test == TEST_LAT ? LAT_WIDTH : BW_WIDTH, RULE);
	printf("                    rift-perf: send %s test\n",
	       o->test == TEST_LAT ? "latency" : "bandwidth");
	printf(" Mode            : %s\n",
	       o->mode == MODE_LOOPBACK
		       ? "loopback (server and client in one process)"
		       : "client");
	printf(" URL             : %s\n", cl->url);
	printf(" Transport       : %s\n", why);
	if (o->test == TEST_LAT)
		printf(" Connections     : %u          In flight  : %u per "
		       "connection\n",
		       o->conns, o->qd);
	else if (o->qd)
		printf(" Connections     : %u          In flight  : at most %u "
		       "unacknowledged"
		       " per connection\n",
		       o->conns, o->qd);
	else
		printf(" Connections     : %u          In flight  : send "
		       "window (%" PRIu64 " bytes) per connection\n",
		       o->conns, (uint64_t)o->cfg.send_window);
	if (o->duration > 0)
		printf(" Duration        : %.1f s per size", o->duration);
	else
		printf(" Iterations      : %" PRIu64 " per connection and size",
		       o->iters);
	printf(", warm-up %" PRIu64, o->warmup);
	printf("\n Polling         : %s\n", polling_name(o->cfg.polling));
	printf(" rift            : %s\n", rift_version_string());
	printf("%.*s\n", o->test == TEST_LAT ? LAT_WIDTH : BW_WIDTH, RULE);
	if (o->test == TEST_LAT)
		printf(" %-8s %-11s %9s %9s %9s %9s %9s %9s %9s %9s %8s %8s\n",
		       "#bytes", "#iterations", "min[us]", "p50[us]", "p90[us]",
		       "p99[us]", "p99.9[us]", "max[us]", "avg[us]",
		       "stdev[us]", "CPU_cli%", "CPU_srv%");
	else
		printf(" %-8s %-11s %10s %10s %15s %8s %8s\n", "#bytes",
		       "#iterations", "BW[GB/s]", "BW[Gb/s]", "MsgRate[Mmsg/s]",
		       "CPU_cli%", "CPU_srv%");
	fflush(stdout);
}

static void print_row(const struct client *cl, const struct result *r)
{
	if (cl->o->test == TEST_LAT)
		printf(" %-8" PRIu64 " %-11" PRIu64
		       " %9.2f %9.2f %9.2f %9.2f %9.2f"
		       " %9.2f %9.2f %9.2f %8.1f %8.1f\n",
		       r->size, r->iters, r->lat.min, r->lat.p50, r->lat.p90,
		       r->lat.p99, r->lat.p999, r->lat.max, r->lat.mean,
		       r->lat.stdev, r->cpu_cli, r->cpu_srv);
	else
		printf(" %-8" PRIu64 " %-11" PRIu64
		       " %10.3f %10.3f %15.4f %8.1f %8.1f\n",
		       r->size, r->iters, r->gbytes, r->gbits, r->mmsgs,
		       r->cpu_cli, r->cpu_srv);
	fflush(stdout);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static double num_or_0(double d)
{
	return isfinite(d) ? d : 0;
}

static void print_json(const struct client *cl, bool was_interrupted)
{
	const struct opts *o = cl->o;
	FILE *f = stdout;

	fprintf(f, "{\n  \"tool\": \"rift-perf\",\n  \"rift_version\": ");
	json_str(f, rift_version_string());
	fprintf(f,
		",\n  \"test\": \"%s\",\n  \"op\": \"send\",\n  \"mode\": "
		"\"%s\",\n",
		o->test == TEST_LAT ? "lat" : "bw",
		o->mode == MODE_LOOPBACK ? "loopback" : "client");
	fprintf(f, "  \"url\": ");
	json_str(f, cl->url);
	fprintf(f,
		",\n  \"transport_requested\": \"%s\",\n  \"transport\": "
		"\"%s\",\n",
		o->transport, rift_transport_name(cl->transport));
	if (cl->fallback == RIFT_FALLBACK_NONE)
		fprintf(f, "  \"fallback\": null,\n");
	else
		fprintf(f,
			"  \"fallback\": { \"code\": \"%s\", \"reason\": "
			"\"%s\" },\n",
			fallback_code(cl->fallback),
			rift_fallback_reason_str(cl->fallback));
	fprintf(f,
		"  \"params\": {\n    \"conns\": %u,\n    \"qd\": %u,\n"
		"    \"iters\": %" PRIu64 ",\n    \"duration_s\": %g,\n"
		"    \"warmup\": %" PRIu64 ",\n    \"sizes\": [",
		o->conns, o->qd, o->iters, o->duration, o->warmup);
	for (int i = 0; i < o->n_sizes; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", o->sizes[i]);
	fprintf(f,
		"],\n    \"fill\": %s,\n    \"polling\": \"%s\",\n"
		"    \"send_window\": %" PRIu64 ",\n    \"device\": ",
		o->fill ? "true" : "false", polling_name(o->cfg.polling),
		(uint64_t)o->cfg.send_window);
	json_str(f, o->cfg.device);
	fprintf(f,
		",\n    \"ib_port\": %u,\n    \"gid_index\": %d,\n    "
		"\"config_file\": ",
		o->cfg.port, o->cfg.gid_index);
	if (o->config)
		json_str(f, o->config);
	else
		fputs("null", f);
	fprintf(f, "\n  },\n  \"results\": [");
	for (int i = 0; i < cl->n_res; i++) {
		const struct result *r = &cl->res[i];

		fprintf(f,
			"%s\n    { \"size\": %" PRIu64
			", \"iterations\": %" PRIu64 ", \"messages\": %" PRIu64
			", \"seconds\": %.6f,\n      ",
			i ? "," : "", r->size, r->iters, r->msgs,
			num_or_0(r->secs));
		if (o->test == TEST_LAT)
			fprintf(f,
				"\"lat_us\": { \"min\": %.3f, \"p50\": %.3f, "
				"\"p90\": %.3f,"
				" \"p99\": %.3f, \"p99_9\": %.3f, \"max\": "
				"%.3f, \"mean\": %.3f,"
				" \"stdev\": %.3f },\n      ",
				r->lat.min, r->lat.p50, r->lat.p90, r->lat.p99,
				r->lat.p999, r->lat.max, num_or_0(r->lat.mean),
				num_or_0(r->lat.stdev));
		else
			fprintf(f,
				"\"bytes\": %" PRIu64
				", \"bw\": { \"gbytes_per_s\": %.6f,"
				" \"gbits_per_s\": %.6f, \"mmsg_per_s\": %.6f "
				"},\n      ",
				r->bytes, num_or_0(r->gbytes),
				num_or_0(r->gbits), num_or_0(r->mmsgs));
		fprintf(f,
			"\"cpu_pct\": { \"client\": %.1f, \"server\": %.1f } }",
			num_or_0(r->cpu_cli), num_or_0(r->cpu_srv));
	}
	fprintf(f,
		"%s],\n  \"path_changes\": %" PRIu64
		",\n  \"interrupted\": %s,\n"
		"  \"error\": ",
		cl->n_res ? "\n  " : "", cl->path_changes,
		was_interrupted ? "true" : "false");
	if (cl->failed)
		json_str(f, cl->err);
	else
		fputs("null", f);
	fputs("\n}\n", f);
	fflush(f);
}

/* ---- plot ---- */

static bool gnuplot_found(void)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/gnuplot", (int)n,
			 n ? path : ".");
		if (access(buf, X_OK) == 0)
			return true;
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

/* "64", "2K", "8M": a size in powers of 1024, as the options take it. */
static const char *size_label(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v >= 1024 && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, v);
	else
		snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
	return buf;
}

/* A gnuplot single-quoted string: '' stands for one quote. */
static void gp_str(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static int plot_svg(const struct client *cl)
{
	const struct opts *o = cl->o;
	char why[200], title[400];
	FILE *gp;
	int status;

	transport_why(cl, why, sizeof(why));
	gp = popen("gnuplot", "w");
	if (!gp) {
		errf("--plot: cannot run gnuplot: %s", strerror(errno));
		return -1;
	}
	fprintf(gp,
		"set terminal svg size 960,600 dynamic enhanced font 'sans,12' "
		"background rgb 'white'\nset output ");
	gp_str(gp, o->plot);
	snprintf(title, sizeof(title), "rift-perf %s, %u connection(s), %s",
		 o->test == TEST_LAT ? "round-trip latency"
				     : "one-way bandwidth",
		 o->conns, why);
	fprintf(gp, "\nset title ");
	gp_str(gp, title);
	fprintf(gp, " noenhanced\nset grid\nset key below\n");
	if (o->n_sizes > 1) {
		fprintf(gp, "$d << EOD\n");
		for (int i = 0; i < cl->n_res; i++) {
			const struct result *r = &cl->res[i];

			if (o->test == TEST_LAT)
				fprintf(gp, "%" PRIu64 " %.3f %.3f %.3f %.3f\n",
					r->size, r->lat.p50, r->lat.p90,
					r->lat.p99, r->lat.p999);
			else
				fprintf(gp, "%" PRIu64 " %.6f %.6f\n", r->size,
					r->gbits, r->mmsgs);
		}
		/* tics at the sizes (every other one in a long sweep), in
		 * the units of -s rather than gnuplot's powers of 1000 */
		fprintf(gp, "EOD\nset logscale x 2\nset xtics (");
		for (int i = 0, every = cl->n_res > 12 ? 2 : 1; i < cl->n_res;
		     i += every) {
			char lbl[32];

			fprintf(gp, "%s'%s' %" PRIu64, i ? ", " : "",
				size_label(cl->res[i].size, lbl, sizeof(lbl)),
				cl->res[i].size);
		}
		fprintf(gp, ")\nset xlabel 'message size [bytes]'\n");
		if (o->test == TEST_LAT)
			fprintf(gp,
				"set logscale y\nset format y '%%g'\n"
				"set ylabel 'round trip [us]'\n"
				"plot $d using 1:2 with linespoints title "
				"'p50', "
				"$d using 1:3 with linespoints title 'p90', "
				"$d using 1:4 with linespoints title 'p99', "
				"$d using 1:5 with linespoints title "
				"'p99.9'\n");
		else
			fprintf(gp,
				"set ylabel 'bandwidth [Gb/s]'\nset y2label "
				"'message rate [Mmsg/s]'\nset ytics "
				"nomirror\nset y2tics\n"
				"set yrange [0:*]\nset y2range [0:*]\n"
				"plot $d using 1:2 axes x1y1 with linespoints "
				"title 'Gb/s', "
				"$d using 1:3 axes x1y2 with linespoints title "
				"'Mmsg/s'\n");
	} else {
		/*
		 * One size: the round trip at each percentile, the x axis
		 * stretched as 1/(1 - p) so that the tail (99%, 99.9%,
		 * 99.99%) gets as much room as the median, the way
		 * HdrHistogram draws latency.  Points are spaced evenly on
		 * that axis, so the tail is drawn sample by sample.
		 */
		const struct samples *s = &cl->lat;
		const struct result *r = &cl->res[0];
		size_t last = SIZE_MAX;
		double n = (double)s->n;

		fprintf(gp, "$d << EOD\n");
		for (int j = 0; j <= PLOT_POINTS && s->n; j++) {
			double x = pow(n, (double)j / PLOT_POINTS);
			size_t i = (size_t)(n - n / x);

			if (i >= s->n)
				i = s->n - 1;
			if (i == last)
				continue;
			last = i;
			fprintf(gp, "%.6g %.3f\n", 1.0 / (1.0 - (double)i / n),
				(double)s->v[i] / 1e3);
		}
		fprintf(gp,
			"EOD\nset logscale xy\nset format y '%%g'\n"
			/* tic labels are formats to gnuplot: %%%% is one % */
			"set xtics ('0%%%%' 1, '50%%%%' 2, '90%%%%' 10, "
			"'99%%%%' 100, "
			"'99.9%%%%' 1000, '99.99%%%%' 10000, '99.999%%%%' "
			"100000)\n"
			"set xrange [1:%g]\nset xlabel 'percentile'\n"
			"set ylabel 'round trip [us], %" PRIu64 " B messages'\n"
			"set label 1 'p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f "
			"us' "
			"at graph 0.02, graph 0.95\n"
			"plot $d using 1:2 with lines lw 2 title '%zu round "
			"trips'\n",
			n > 1 ? n : 2, r->size, r->lat.p50, r->lat.p99,
			r->lat.p999, r->lat.max, s->n);
	}
	status = pclose(gp);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		errf("--plot: gnuplot failed (status %d) writing %s", status,
		     o->plot);
		return -1;
	}
	return 0;
}

/* ---- the client run ---- */

static int client_run(const struct opts *o, int port, struct metrics_src *msrc)
{
	struct client *cl = calloc(1, sizeof(*cl));
	uint64_t max_size = 0, v[5], end;
	int rc, ret = 0, step_rc = 0;
	char why[200];

	if (!cl) {
		errf("out of memory");
		return EXIT_FAIL;
	}
	cl->o = o;
	cl->ctl.idx = -1;
	cl->tty = isatty(STDERR_FILENO);
	cl->qd = o->qd ? o->qd : 1;
	for (int i = 0; i < o->n_sizes; i++)
		if (o->sizes[i] > max_size)
			max_size = o->sizes[i];
	cl->data = calloc(o->conns, sizeof(*cl->data));
	cl->payload = calloc(1, o->test == TEST_LAT && max_size ? max_size : 1);
	if (!cl->data || !cl->payload) {
		errf("out of memory");
		ret = EXIT_FAIL;
		goto free_client;
	}
	for (uint32_t i = 0; i < o->conns; i++) {
		cl->data[i].idx = (int)i;
		cl->data[i].cl = cl;
		if (o->test == TEST_LAT) {
			cl->data[i].ts = calloc(cl->qd, sizeof(uint64_t));
			if (!cl->data[i].ts) {
				errf("out of memory");
				ret = EXIT_FAIL;
				goto free_client;
			}
		}
	}
	if (o->test == TEST_LAT && o->duration <= 0 &&
	    !(cl->lat.v = malloc(o->iters * o->conns * sizeof(uint64_t)))) {
		errf("out of memory for %" PRIu64 " samples",
		     o->iters * o->conns);
		ret = EXIT_FAIL;
		goto free_client;
	}
	cl->lat.cap = o->duration <= 0 && o->test == TEST_LAT
			      ? o->iters * o->conns
			      : 0;

	rc = rift_ctx_create(&cl->ctx, &o->cfg);
	if (rc) {
		errf("rift_ctx_create: %s", rift_ctx_last_error(NULL));
		ret = EXIT_FAIL;
		goto free_client;
	}
	loop_init(&cl->lp, cl->ctx, &o->cfg, msrc);
	url_build(cl->url, sizeof(cl->url), o->transport, o->host, port);

	/* Control connection, then HELLO: the server learns the test. */
	if (cl_connect(cl, &cl->ctl))
		goto close;
	rc = cl_wait(cl, ctl_connected, NULL, "connect", 0);
	if (rc)
		goto close;
	v[0] = PROTO_VERSION;
	v[1] = (uint64_t)o->test;
	v[2] = o->conns;
	v[3] = o->qd;
	v[4] = max_size;
	if (cl_ask(cl, CTL_HELLO, v, 5, CTL_HELLO_OK, "HELLO"))
		goto close;
	cl->token = cl->reply.v[0];

	/* Data connections, each presenting the session token. */
	for (uint32_t i = 0; i < o->conns; i++) {
		if (cl_connect(cl, &cl->data[i]))
			goto close;
		cl->n_data++;
	}
	if (cl_wait(cl, all_connected, NULL, "connect", 0))
		goto close;
	for (uint32_t i = 0; i < cl->n_data; i++) {
		v[0] = cl->token;
		v[1] = i;
		rc = ctl_send(cl->data[i].conn, CTL_JOIN, v, 2, NULL);
		if (rc) {
			cl_fail(cl, "JOIN: %s", rift_strerror(rc));
			goto close;
		}
	}
	if (cl_wait(cl, all_joined, NULL, "JOIN", REPLY_TIMEOUT_MS))
		goto close;
	cl->transport = rift_conn_transport(cl->data[0].conn);
	cl->fallback = rift_conn_fallback_reason(cl->data[0].conn);
	for (uint32_t i = 1; i < cl->n_data; i++)
		if (rift_conn_transport(cl->data[i].conn) != cl->transport)
			errf("note: data connection %u runs over %s, "
			     "connection 0 over %s",
			     i,
			     rift_transport_name(
				     rift_conn_transport(cl->data[i].conn)),
			     rift_transport_name(cl->transport));
	if (o->json) {
		transport_why(cl, why, sizeof(why));
		fprintf(stderr, PROG ": transport %s\n", why);
	} else {
		print_header(cl);
	}

	cl->run_start = now_ns();
	for (cl->step_no = 0; cl->step_no < o->n_sizes; cl->step_no++) {
		step_rc =
			cl_step(cl, o->sizes[cl->step_no], &cl->res[cl->n_res]);
		if (step_rc)
			break;
		if (!o->json)
			print_row(cl, &cl->res[cl->n_res]);
		cl->n_res++;
	}
	if (!o->json && !step_rc)
		printf("%.*s\n", o->test == TEST_LAT ? LAT_WIDTH : BW_WIDTH,
		       RULE);
	if (o->json)
		print_json(cl, step_rc == -2);
	if (!step_rc && o->plot) {
		if (plot_svg(cl))
			ret = EXIT_FAIL;
		else if (!o->json)
			printf(" plot: %s\n", o->plot);
	}

close:
	progress_clear(cl);
	if (interrupted) {
		errf("interrupted after %d of %d size(s)", cl->n_res,
		     o->n_sizes);
		ret = EXIT_INTR;
	} else if (cl->failed) {
		errf("%s", cl->err);
		ret = EXIT_FAIL;
	}
	/* Orderly end: the server sees DISCONNECTED and finishes the session.
	 */
	for (uint32_t i = 0; i < cl->n_data; i++)
		if (cl->data[i].conn)
			rift_conn_close(cl->data[i].conn, cl_closed);
	if (cl->ctl.conn)
		rift_conn_close(cl->ctl.conn, cl_closed);
	end = now_ns() + (uint64_t)CLOSE_TIMEOUT_MS * 1000000u;
	while (cl->open > 0 && now_ns() < end)
		if (loop_once(&cl->lp, 10) < 0)
			break;
	loop_fini(&cl->lp);
	rc = rift_ctx_destroy(cl->ctx);
	if (rc) {
		errf("rift_ctx_destroy: %s", rift_ctx_last_error(cl->ctx));
		ret = EXIT_FAIL;
	}
free_client:
	if (cl->data)
		for (uint32_t i = 0; i < o->conns; i++)
			free(cl->data[i].ts);
	free(cl->data);
	free(cl->payload);
	free(cl->lat.v);
	free(cl);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

enum {
	OPT_LOOPBACK = 256,
	OPT_TRANSPORT,
	OPT_TEST,
	OPT_OP,
	OPT_JSON,
	OPT_PLOT,
	OPT_CONFIG,
	OPT_PERSISTENT,
	OPT_MAX_SIZE,
	OPT_WARMUP,
	OPT_POLL,
	OPT_FILL,
	OPT_METRICS_PORT,
	OPT_METRICS_ADDR,
};

static const struct option long_opts[] = {
	{"server", no_argument, NULL, 'S'},
	{"loopback", no_argument, NULL, OPT_LOOPBACK},
	{"transport", required_argument, NULL, OPT_TRANSPORT},
	{"port", required_argument, NULL, 'p'},
	{"ib-dev", required_argument, NULL, 'd'},
	{"ib-port", required_argument, NULL, 'i'},
	{"gid-index", required_argument, NULL, 'x'},
	{"size", required_argument, NULL, 's'},
	{"iters", required_argument, NULL, 'n'},
	{"all", no_argument, NULL, 'a'},
	{"max-size", required_argument, NULL, OPT_MAX_SIZE},
	{"duration", required_argument, NULL, 'D'},
	{"qd", required_argument, NULL, 't'},
	{"tx-depth", required_argument, NULL, 't'},
	{"conns", required_argument, NULL, 'q'},
	{"qp", required_argument, NULL, 'q'},
	{"test", required_argument, NULL, OPT_TEST},
	{"op", required_argument, NULL, OPT_OP},
	{"json", no_argument, NULL, OPT_JSON},
	{"plot", required_argument, NULL, OPT_PLOT},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"persistent", no_argument, NULL, OPT_PERSISTENT},
	{"warmup", required_argument, NULL, OPT_WARMUP},
	{"poll", required_argument, NULL, OPT_POLL},
	{"fill", no_argument, NULL, OPT_FILL},
	{"metrics-port", required_argument, NULL, OPT_METRICS_PORT},
	{"metrics-addr", required_argument, NULL, OPT_METRICS_ADDR},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* "-s/--size" for an option code, as error messages name it. */
static const char *opt_name(int code)
{
	static char buf[64];
	const char *lname = NULL;

	for (const struct option *lo = long_opts; lo->name; lo++) {
		if (lo->val == code) {
			lname = lo->name;
			break;
		}
	}
	if (code < 256)
		snprintf(buf, sizeof(buf), "-%c/--%s", code,
			 lname ? lname : "?");
	else
		snprintf(buf, sizeof(buf), "--%s", lname ? lname : "?");
	return buf;
}

/* The usage text as it prints. */
/* clang-format off */
static void usage(FILE *f)
{
	fprintf(f,
"usage: rift-perf [options]                 server (one client, then exit)\n"
"       rift-perf -S [options] [ADDR]       server listening on ADDR\n"
"       rift-perf [options] HOST            client of the server on HOST\n"
"       rift-perf --loopback [options] [ADDR]  both ends in one process\n"
"\n"
"  -S, --server            server mode (also: no HOST given)\n"
"      --loopback          server and client in one process (two threads), on\n"
"                          ADDR (default 127.0.0.1), any free port unless -p\n"
"      --persistent        server: serve clients one after another, forever\n"
"      --transport T       rdma, tcp or auto (default auto: RDMA, else TCP with\n"
"                          the reason printed)\n"
"  -p, --port PORT         port to listen on / connect to (default %d)\n"
"  -d, --ib-dev DEV        RDMA device (default: the first active one)\n"
"  -i, --ib-port N         device port (default: the first active one)\n"
"  -x, --gid-index N       GID index (default: the one matching the address)\n"
"      --test lat|bw       round-trip latency (default) or one-way bandwidth\n"
"      --op send           operation; write and read are not supported yet\n"
"  -s, --size SIZE         message size, bytes; K, M, G suffixes are powers of\n"
"                          1024 (default 2 for lat, 65536 for bw)\n"
"  -a, --all               sweep sizes 2, 4, 8, ... up to --max-size\n"
"      --max-size SIZE     largest size of the sweep (default 8M)\n"
"  -n, --iters N           messages per connection and size (default 1000 for\n"
"                          lat, 5000 for bw)\n"
"  -D, --duration SEC      run each size for SEC seconds instead of -n\n"
"      --warmup N          unmeasured round trips (lat) or messages (bw) per\n"
"                          connection first\n"
"                          (default: a tenth of -n, at most 1000; 100 with -D)\n"
"  -t, --qd N              messages in flight per connection (lat default 1;\n"
"                          bw default 0: as many as the send window allows)\n"
"  -q, --conns N           connections (default 1)\n"
"      --fill              bw: write every byte of every message, not just a\n"
"                          sequence number (what an application pays)\n"
"      --poll MODE         event, busy or adaptive (rift_config.polling)\n"
"      --config FILE       rift config file (TOML, docs/config.md); RIFT_*\n"
"                          environment variables override it, options both\n"
"      --json              one JSON object on stdout instead of the table\n"
"      --plot FILE.svg     draw the sweep (-a) or the latency distribution\n"
"                          with gnuplot\n"
"      --metrics-port PORT serve rift's metrics over HTTP while running:\n"
"                          GET /metrics (Prometheus), GET /info; 0 = any\n"
"                          free port (printed on stderr)\n"
"      --metrics-addr ADDR address for --metrics-port (default 127.0.0.1)\n"
"  -h, --help, -V, --version\n"
"\n"
"Exit status: 0 done, 1 failed (connection, server, gnuplot, metrics port),\n"
"2 bad usage, 130 interrupted.\n", DEFAULT_PORT);
}
/* clang-format on */

__attribute__((format(printf, 2, 3))) static int bad(int code, const char *fmt,
						     ...)
{
	va_list ap;

	fprintf(stderr, PROG ": %s: ", opt_name(code));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n" PROG ": try '" PROG " --help'\n");
	return EXIT_USAGE;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

/* Bytes with an optional K/M/G (KB, KiB, ...) suffix, powers of 1024. */
static int parse_size(const char *s, uint64_t *out)
{
	static const char *const units = "KMGT";
	char *end;
	uint64_t v;
	const char *u;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end) {
		int c = toupper((unsigned char)*end);

		u = c ? strchr(units, c) : NULL;
		if (!u)
			return -1;
		end++;
		if (!strcmp(end, "") || !strcasecmp(end, "B") ||
		    !strcasecmp(end, "iB")) {
			int shift = 10 * (int)(u - units + 1);

			if (v > (UINT64_MAX >> shift))
				return -1;
			v <<= shift;
		} else {
			return -1;
		}
	}
	*out = v;
	return 0;
}

static int parse_range(int code, const char *arg, uint64_t lo, uint64_t hi,
		       uint64_t *out)
{
	if (parse_u64(arg, out))
		return bad(code, "'%s' is not a whole number", arg);
	if (*out < lo || *out > hi)
		return bad(code, "%s is out of range %" PRIu64 "..%" PRIu64,
			   arg, lo, hi);
	return 0;
}

/* Parse argv into *o, build the configuration; 0 or an exit status. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	const char *dev = NULL, *op = "send";
	uint64_t v, size = 0, max_size = SWEEP_MAX_DEFAULT;
	bool server = false, loopback = false, sweep = false;
	bool size_set = false, max_set = false, iters_set = false,
	     qd_set = false;
	bool warm_set = false, port_set = false, maddr_set = false;
	int64_t ib_port = -1, gid = -2;
	int polling = -1, ch, rc;
	char err[RIFT_CONFIG_ERRLEN];

	memset(o, 0, sizeof(*o));
	o->test = TEST_LAT;
	o->transport = "auto";
	o->port = DEFAULT_PORT;
	o->conns = 1;
	o->metrics_port = -1;
	o->metrics_addr = "127.0.0.1";
	while ((ch = getopt_long(argc, argv, "Sp:d:i:x:s:n:aD:t:q:hV",
				 long_opts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			server = true;
			break;
		case OPT_LOOPBACK:
			loopback = true;
			break;
		case OPT_PERSISTENT:
			o->persistent = true;
			break;
		case OPT_TRANSPORT:
			if (strcmp(optarg, "rdma") && strcmp(optarg, "tcp") &&
			    strcmp(optarg, "auto"))
				return bad(ch, "'%s': use rdma, tcp or auto",
					   optarg);
			o->transport = optarg;
			break;
		case 'p':
			if ((rc = parse_range(ch, optarg, 1, 65535, &v)))
				return rc;
			o->port = (int)v;
			port_set = true;
			break;
		case 'd':
			if (!*optarg || strlen(optarg) >= RIFT_DEVICE_NAME_MAX)
				return bad(ch,
					   "'%s': a device name of 1..%d "
					   "characters",
					   optarg, RIFT_DEVICE_NAME_MAX - 1);
			dev = optarg;
			break;
		case 'i':
			if ((rc = parse_range(ch, optarg, 1, 255, &v)))
				return rc;
			ib_port = (int64_t)v;
			break;
		case 'x':
			if ((rc = parse_range(ch, optarg, 0, 65535, &v)))
				return rc;
			gid = (int64_t)v;
			break;
		case 's':
			if (parse_size(optarg, &size))
				return bad(ch,
					   "'%s' is not a size (bytes, or a "
					   "number with "
					   "K, M or G)",
					   optarg);
			size_set = true;
			break;
		case OPT_MAX_SIZE:
			if (parse_size(optarg, &max_size))
				return bad(ch,
					   "'%s' is not a size (bytes, or a "
					   "number with "
					   "K, M or G)",
					   optarg);
			if (max_size < SWEEP_MIN)
				return bad(ch,
					   "%s: the sweep starts at %d bytes",
					   optarg, SWEEP_MIN);
			max_set = true;
			break;
		case 'a':
			sweep = true;
			break;
		case 'n':
			if ((rc = parse_range(ch, optarg, 1, 1000000000,
					      &o->iters)))
				return rc;
			iters_set = true;
			break;
		case 'D': {
			char *end;

			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || *end || end == optarg ||
			    !(o->duration > 0) || o->duration > 86400)
				return bad(ch,
					   "'%s': seconds, more than 0 and at "
					   "most 86400",
					   optarg);
			break;
		}
		case 't':
			if ((rc = parse_range(ch, optarg, 0, MAX_QD, &v)))
				return rc;
			o->qd = (uint32_t)v;
			qd_set = true;
			break;
		case 'q':
			if ((rc = parse_range(ch, optarg, 1, MAX_CONNS, &v)))
				return rc;
			o->conns = (uint32_t)v;
			break;
		case OPT_TEST:
			if (!strcmp(optarg, "lat"))
				o->test = TEST_LAT;
			else if (!strcmp(optarg, "bw"))
				o->test = TEST_BW;
			else
				return bad(ch, "'%s': use lat or bw", optarg);
			break;
		case OPT_OP:
			op = optarg;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_FILL:
			o->fill = true;
			break;
		case OPT_PLOT:
			o->plot = optarg;
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case OPT_METRICS_PORT:
			if ((rc = parse_range(ch, optarg, 0, 65535, &v)))
				return rc;
			o->metrics_port = (int)v;
			break;
		case OPT_METRICS_ADDR:
			if (!*optarg)
				return bad(ch, "give an address, e.g. "
					       "127.0.0.1, 0.0.0.0 or ::1");
			o->metrics_addr = optarg;
			maddr_set = true;
			break;
		case OPT_WARMUP:
			if ((rc = parse_range(ch, optarg, 0, 1000000000,
					      &o->warmup)))
				return rc;
			warm_set = true;
			break;
		case OPT_POLL:
			if (!strcmp(optarg, "event"))
				polling = RIFT_POLL_EVENT;
			else if (!strcmp(optarg, "busy"))
				polling = RIFT_POLL_BUSY;
			else if (!strcmp(optarg, "adaptive"))
				polling = RIFT_POLL_ADAPTIVE;
			else
				return bad(ch,
					   "'%s': use event, busy or adaptive",
					   optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " (rift %s)\n", rift_version_string());
			exit(0);
		default:
			fprintf(stderr, PROG ": try '" PROG " --help'\n");
			return EXIT_USAGE;
		}
	}

	/* What the operation and the mode are. */
	if (!strcmp(op, "write") || !strcmp(op, "read"))
		return bad(OPT_OP,
			   "%s is not yet supported: one-sided RDMA %s comes "
			   "with one-sided access; use --op send",
			   op, !strcmp(op, "write") ? "WRITE" : "READ");
	if (strcmp(op, "send"))
		return bad(OPT_OP, "'%s': use send (write and read come later)",
			   op);
	if (argc - optind > 1) {
		errf("one HOST at most, got '%s' and '%s'; try '" PROG
		     " --help'",
		     argv[optind], argv[optind + 1]);
		return EXIT_USAGE;
	}
	if (server && loopback) {
		errf("-S/--server and --loopback exclude each other");
		return EXIT_USAGE;
	}
	if (loopback) {
		o->mode = MODE_LOOPBACK;
		o->host = optind < argc ? argv[optind] : "127.0.0.1";
		if (!port_set)
			o->port = 0; /* any free port: two runs never collide */
	} else if (server || optind == argc) {
		o->mode = MODE_SERVER;
		o->host = optind < argc ? argv[optind] : "0.0.0.0";
	} else {
		o->mode = MODE_CLIENT;
		o->host = argv[optind];
	}
	if (o->persistent && o->mode != MODE_SERVER) {
		errf("--persistent: only for the server");
		return EXIT_USAGE;
	}
	if (maddr_set && o->metrics_port < 0)
		return bad(OPT_METRICS_ADDR, "only with --metrics-port");

	/* Sizes, counts, depth. */
	if (iters_set && o->duration > 0) {
		errf("-n/--iters and -D/--duration exclude each other");
		return EXIT_USAGE;
	}
	if (sweep && size_set)
		return bad('s',
			   "with -a/--all the sweep sets the sizes; bound it "
			   "with --max-size");
	if (max_set && !sweep)
		return bad(OPT_MAX_SIZE, "only with -a/--all");
	if (!iters_set && o->duration <= 0)
		o->iters = o->test == TEST_LAT ? LAT_ITERS_DEFAULT
					       : BW_ITERS_DEFAULT;
	if (!warm_set)
		o->warmup = o->duration > 0	   ? 100
			    : o->iters / 10 > 1000 ? 1000
						   : o->iters / 10;
	if (o->fill && o->test != TEST_BW)
		return bad(OPT_FILL, "only for --test bw (lat messages are "
				     "copied from one filled buffer)");
	if (!qd_set)
		o->qd = o->test == TEST_LAT ? 1 : 0;
	else if (o->test == TEST_LAT && o->qd == 0)
		return bad(
			't',
			"0: a latency test needs at least 1 message in flight");
	if (sweep) {
		for (uint64_t s = SWEEP_MIN;
		     s <= max_size && o->n_sizes < MAX_SIZES; s *= 2)
			o->sizes[o->n_sizes++] = s;
	} else {
		o->sizes[o->n_sizes++] = size_set ? size
					 : o->test == TEST_LAT
						 ? LAT_SIZE_DEFAULT
						 : BW_SIZE_DEFAULT;
	}
	if (o->plot) {
		size_t n = strlen(o->plot);

		if (n < 5 || strcasecmp(o->plot + n - 4, ".svg"))
			return bad(OPT_PLOT,
				   "'%s': give a file name ending in .svg",
				   o->plot);
		if (o->test == TEST_BW && !sweep)
			return bad(OPT_PLOT,
				   "the bandwidth test draws a size sweep: "
				   "add -a/--all");
		if (o->mode == MODE_SERVER)
			return bad(OPT_PLOT,
				   "the client draws; the server has no "
				   "results");
		if (!gnuplot_found()) {
			errf("--plot: gnuplot is not installed (Debian package "
			     "gnuplot-nox; scripts/setup.sh installs it)");
			return EXIT_FAIL;
		}
	}

	/* Configuration: defaults < file < environment < options. */
	rift_config_init(&o->cfg);
	if (o->config &&
	    rift_config_load(&o->cfg, o->config, err, sizeof(err))) {
		errf("--config: %s", err);
		return EXIT_USAGE;
	}
	if (rift_config_env(&o->cfg, err, sizeof(err))) {
		errf("%s", err);
		return EXIT_USAGE;
	}
	if (dev)
		snprintf(o->cfg.device, sizeof(o->cfg.device), "%s", dev);
	if (ib_port >= 0)
		o->cfg.port = (uint32_t)ib_port;
	if (gid >= -1)
		o->cfg.gid_index = (int32_t)gid;
	if (polling >= 0)
		o->cfg.polling = (rift_polling)polling;
	if (rift_config_check(&o->cfg)) {
		errf("options -d/-i/-x/--poll: %s", rift_ctx_last_error(NULL));
		return EXIT_USAGE;
	}
	for (int i = 0; i < o->n_sizes; i++)
		if (o->sizes[i] > o->cfg.max_msg_size)
			return bad(
				sweep ? OPT_MAX_SIZE : 's',
				"%" PRIu64 " bytes exceeds "
				"max_msg_size %" PRIu64 " (config [session] "
				"max_msg_size, env RIFT_SESSION_MAX_MSG_SIZE)",
				o->sizes[i], (uint64_t)o->cfg.max_msg_size);
	return 0;
}

/* --metrics-port: serve the sides this mode runs; 0 or EXIT_FAIL. */
static int metrics_start(const struct opts *o, struct metrics_http *mh)
{
	static const char *const sides[2] = {"server", "client"};
	char err[512];
	bool v6 = strchr(o->metrics_addr, ':') && o->metrics_addr[0] != '[';

	if (metrics_http_start(mh, PROG, o->metrics_addr, o->metrics_port,
			       o->mode == MODE_CLIENT ? sides + 1 : sides,
			       o->mode == MODE_LOOPBACK ? 2 : 1, err,
			       sizeof(err))) {
		errf("--metrics-port %d: %s", o->metrics_port, err);
		return EXIT_FAIL;
	}
	fprintf(stderr,
		PROG ": metrics on http://%s%s%s:%d/metrics and /info\n",
		v6 ? "[" : "", o->metrics_addr, v6 ? "]" : "", mh->port);
	return 0;
}

static int run(const struct opts *o, struct metrics_http *mh)
{
	struct server srv;
	sigset_t stop, old;
	pthread_t th;
	int rc;

	if (o->mode == MODE_CLIENT)
		return client_run(o, o->port, metrics_http_src(mh, 0));

	memset(&srv, 0, sizeof(srv));
	srv.o = o;
	srv.msrc = metrics_http_src(mh, 0);
	if (o->mode == MODE_SERVER) {
		srv.who = PROG;
		return server_run(&srv);
	}

	/* Loopback: the server on a thread of its own, the client here. */
	srv.who = PROG " server";
	srv.loopback = true;
	/* The server thread is born with SIGINT and SIGTERM blocked, so they
	 * reach the client thread and wake its poll. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	rc = pthread_create(&th, NULL, server_thread, &srv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		errf("pthread_create: %s", strerror(rc));
		return EXIT_FAIL;
	}
	while (!__atomic_load_n(&srv.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (__atomic_load_n(&srv.ready, __ATOMIC_ACQUIRE) < 0) {
		pthread_join(th, NULL);
		return EXIT_FAIL;
	}
	rc = client_run(o, srv.port, metrics_http_src(mh, 1));
	__atomic_store_n(&stop_all, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (!rc && srv.failed)
		rc = srv.failed;
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct metrics_http mh;
	struct sigaction sa;
	int rc;

	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&mh, 0, sizeof(mh));
	if (o.metrics_port >= 0 && (rc = metrics_start(&o, &mh)))
		return rc;
	rc = run(&o, &mh);
	metrics_http_stop(&mh);
	return rc;
}
