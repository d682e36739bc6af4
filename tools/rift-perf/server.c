/*
 * rift-perf's server side: serves one client after another (one, unless
 * --persistent), whose control connection says what to do and whose data
 * connections join it with the session token; the server echoes (lat) or
 * counts (bw) and answers each step's END with DONE.  With --op write or
 * read it registers a region per data connection and exports it to the
 * client (the token goes in JOIN_OK); its rift serves the client's
 * operations, and in write lat the server answers each write with one
 * of its own: polling the last byte of the slot the client writes into
 * (perftest's write_lat), or told by RIFT_EVENT_WRITTEN (--notify).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "perf.h"

static void rusage_split(uint64_t *user, uint64_t *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	*user = (uint64_t)ru.ru_utime.tv_sec * 1000000u +
		(uint64_t)ru.ru_utime.tv_usec;
	*sys = (uint64_t)ru.ru_stime.tv_sec * 1000000u +
	       (uint64_t)ru.ru_stime.tv_usec;
}

enum sc_kind { SC_NEW, SC_CTL, SC_DATA, SC_DEAD };

/* Polled write lat: a slot of a data connection, where the client's
 * round trips of one slot land and are answered. */
struct sslot {
	struct sconn *sc;
	uint32_t idx;
	uint32_t k;   /* the client's writes seen this step */
	bool busy;    /* this side's answer's callback is due */
	bool pending; /* the k-th seen, its answer waits for that callback */
};

struct sconn {
	struct server *s;
	rift_conn *conn;
	enum sc_kind kind;
	bool closing;
	rift_msg **q; /* lat: echoes refused with RIFT_EAGAIN, in order */
	size_t q_head, q_n, q_cap;
	bool recv_stopped; /* while q is not empty */
	/* write/read: the region the client reads and writes (exported to
	 * it, the export ending with the session), and in write lat the
	 * client's export, written back into */
	uint8_t *buf;
	rift_mem *mem;
	uint8_t peer_tok[RIFT_TOKEN_MAX_LEN];
	size_t peer_tok_len;
	struct sslot *slots; /* polled write lat: s->qd of them */
	struct sconn *next;
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

/* A failure that ends server_run: said, kept for the report, recorded. */
__attribute__((format(printf, 3, 4))) static void
srv_fatal(struct server *s, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	s->err_rc = rc;
	serr(s, "%s", s->err);
	fail_record(rc, "%s%s", s->loopback ? "server: " : "", s->err);
}

static void srv_closed(rift_conn *conn)
{
	struct sconn *sc = rift_conn_user(conn);
	struct server *s = sc->s;
	int rc;

	for (struct sconn **pp = &s->conns; *pp; pp = &(*pp)->next) {
		if (*pp == sc) {
			*pp = sc->next;
			break;
		}
	}
	/* The session is over: its export with it, and no operation of
	 * this side runs any more, so the region may go.  One rift will
	 * not let go of stays registered (rift_ctx_destroy says so). */
	if (sc->mem && (rc = rift_mem_dereg(sc->mem)))
		serr(s, "rift_mem_dereg: %s", rift_strerror(rc));
	else
		free(sc->buf);
	free(sc->slots);
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

	/* write lat: DONE once this side's writes back completed too, so
	 * that none is under way when the client closes */
	if (!s->end_pending || s->rmsgs < s->want_msgs || s->rma_inflight)
		return;
	s->end_pending = false;
	s->spin = false; /* polled write lat: nothing lands until BEGIN */
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

/*
 * write/read: a data connection's region, registered and exported to the
 * client, the token into tok (room *tok_len; its size on return); write
 * lat: the client's token for this connection from its JOIN.  0, or -1
 * with why in why.
 */
static int sc_rma_setup(struct sconn *sc, const struct ctl *join, void *tok,
			size_t *tok_len, char *why, size_t wlen)
{
	struct server *s = sc->s;
	void *buf;
	int rc;

	if (s->op == OP_WRITE && s->test == TEST_LAT) {
		if (!join->blob_len) {
			snprintf(why, wlen,
				 "write lat: the JOIN carries no token");
			return -1;
		}
		memcpy(sc->peer_tok, join->blob, join->blob_len);
		sc->peer_tok_len = join->blob_len;
	}
	if (write_lat_polled(s->op, s->test, s->notify)) {
		sc->slots = calloc(s->qd, sizeof(*sc->slots));
		if (!sc->slots) {
			snprintf(why, wlen, "out of memory for %u slots",
				 s->qd);
			return -1;
		}
		for (uint32_t i = 0; i < s->qd; i++) {
			sc->slots[i].sc = sc;
			sc->slots[i].idx = i;
		}
	}
	if (posix_memalign(&buf, 4096, s->rma_len)) {
		snprintf(why, wlen, "out of memory for %" PRIu64 " bytes",
			 s->rma_len);
		return -1;
	}
	sc->buf = buf;
	memset(sc->buf, 0x5a, s->rma_len); /* bytes for the client to read */
	rc = rift_mem_reg(s->ctx, sc->buf, s->rma_len,
			  RIFT_MEM_READ | RIFT_MEM_WRITE, &sc->mem);
	if (rc) {
		snprintf(why, wlen, "rift_mem_reg of %" PRIu64 " bytes: %s",
			 s->rma_len, rift_ctx_last_error(s->ctx));
		return -1;
	}
	rc = rift_mem_export(sc->mem, sc->conn, 0, s->rma_len,
			     RIFT_MEM_READ | RIFT_MEM_WRITE, tok, tok_len);
	if (rc) {
		snprintf(why, wlen, "rift_mem_export: %s (%s)",
			 rift_strerror(rc), rift_conn_last_error(sc->conn));
		return -1;
	}
	return 0;
}

static void srv_rma_done(rift_conn *conn, void *user, int status, size_t bytes)
{
	struct sconn *sc = user;
	struct server *s = sc->s;

	(void)bytes;
	s->rma_inflight--;
	if (status)
		srv_session_fail(s, "write back: %s (%s)",
				 rift_strerror(status),
				 rift_conn_last_error(conn));
	srv_check_done(s);
}

static void srv_slot_done(rift_conn *conn, void *user, int status,
			  size_t bytes);

/* Polled write lat: answer the slot's k-th write with this side's k-th,
 * its last byte the same mark, from this half into the client's other
 * one.  The slot's previous answer has called back. */
static void srv_answer(struct sslot *sl)
{
	struct sconn *sc = sl->sc;
	struct server *s = sc->s;
	size_t off = (size_t)sl->idx * s->size;
	int rc;

	sc->buf[off + s->size - 1] = rma_mark(sl->k);
	rc = rift_conn_write(sc->conn, sc->mem, off, sc->peer_tok,
			     sc->peer_tok_len, s->rma_len / 2 + off, s->size,
			     srv_slot_done, sl);
	if (rc) {
		srv_session_fail(s, "rift_conn_write: %s (%s)",
				 rift_strerror(rc),
				 rift_conn_last_error(sc->conn));
		return;
	}
	sl->busy = true;
	s->rma_inflight++;
}

static void srv_slot_done(rift_conn *conn, void *user, int status, size_t bytes)
{
	struct sslot *sl = user;

	/* the answer first: DONE (srv_rma_done) waits for it too */
	sl->busy = false;
	if (sl->pending && !status) {
		sl->pending = false;
		srv_answer(sl);
	}
	srv_rma_done(conn, sl->sc, status, bytes);
}

/*
 * Polled write lat, after every round of the loop while a step runs:
 * the last byte of each slot the client writes into, read with an
 * acquire load (over frames this side's rift copied the write in
 * during the round; by RDMA it landed on its own, waking nothing).  A
 * write seen is answered at once, or once the slot's previous answer
 * called back.
 */
static bool srv_look(struct server *s)
{
	bool seen = false;

	for (struct sconn *sc = s->conns; sc; sc = sc->next) {
		const uint8_t *in;

		if (sc->kind != SC_DATA || !sc->slots || sc->closing)
			continue;
		in = sc->buf + s->rma_len / 2 + s->size - 1;
		for (uint32_t i = 0; i < s->qd; i++, in += s->size) {
			struct sslot *sl = &sc->slots[i];

			if (sl->pending ||
			    __atomic_load_n(in, __ATOMIC_ACQUIRE) !=
				    rma_mark(sl->k + 1))
				continue;
			sl->k++;
			s->rmsgs++;
			s->rbytes += s->size;
			seen = true;
			if (sl->busy)
				sl->pending = true;
			else
				srv_answer(sl);
		}
	}
	return seen;
}

/* Up to RMA_SPINS looks between two rounds of the loop, as perftest
 * spins on its byte; a write seen ends the spin. */
static void srv_poll(struct server *s)
{
	for (int n = 0; n < RMA_SPINS && !srv_look(s); n++)
		;
}

/* Polled write lat, at BEGIN: the step's size; every data connection's
 * slots zeroed and their counts too.  No write is under way: the last
 * step's DONE waited for this side's callbacks and the client's. */
static int srv_poll_begin(struct server *s, uint64_t size)
{
	if (!write_lat_polled(s->op, s->test, s->notify))
		return 0;
	if (!size || size > s->max_size)
		return -1;
	s->size = size;
	for (struct sconn *sc = s->conns; sc; sc = sc->next) {
		if (sc->kind != SC_DATA || !sc->slots)
			continue;
		memset(sc->buf + s->rma_len / 2, 0, s->rma_len / 2);
		for (uint32_t i = 0; i < s->qd; i++)
			sc->slots[i].k = 0;
	}
	s->spin = true;
	return 0;
}

/*
 * write lat --notify: the client's write is in place; write the same
 * bytes back into its region at the same offset, with its tag (the
 * client's slot), told by RIFT_EVENT_WRITTEN in turn.
 */
static void srv_write_back(struct sconn *sc, const rift_event *ev)
{
	struct server *s = sc->s;
	int rc;

	if (sc->kind != SC_DATA || s->op != OP_WRITE || s->test != TEST_LAT ||
	    !s->notify || ev->mem != sc->mem) {
		srv_session_fail(
			s,
			"a write_notify the test does not make (%" PRIu64
			" bytes at %" PRIu64 ")",
			ev->length, ev->offset);
		return;
	}
	s->rmsgs++;
	s->rbytes += ev->length;
	rc = rift_conn_write_notify(sc->conn, sc->mem, ev->offset, sc->peer_tok,
				    sc->peer_tok_len, ev->offset, ev->length,
				    ev->tag, srv_rma_done, sc);
	if (rc) {
		srv_session_fail(s, "rift_conn_write_notify: %s (%s)",
				 rift_strerror(rc),
				 rift_conn_last_error(sc->conn));
		return;
	}
	s->rma_inflight++;
}

/* A new connection's first message says what it is. */
static void srv_first(struct sconn *sc, rift_msg *msg)
{
	struct server *s = sc->s;
	struct ctl m;
	uint64_t v[1];
	char why[CTL_TEXT];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tok_len = 0;
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
		else if (m.v[5] > OP_READ)
			snprintf(why, sizeof(why), "unknown operation %" PRIu64,
				 m.v[5]);
		else if (m.v[5] == OP_SEND && m.v[4] > s->o->cfg.max_msg_size)
			snprintf(why, sizeof(why),
				 "message size %" PRIu64 " exceeds the "
				 "server's max_msg_size %" PRIu64,
				 m.v[4], (uint64_t)s->o->cfg.max_msg_size);
		else if (m.v[5] != OP_SEND &&
			 (m.v[3] < 1 || m.v[3] > MAX_QD || !m.v[4] ||
			  m.v[6] < m.v[4] || m.v[6] > RMA_MEM_MAX / m.v[2] ||
			  (write_lat_polled((enum op)m.v[5], (enum test)m.v[1],
					    m.v[7]) &&
			   m.v[6] / 2 / m.v[3] < m.v[4])))
			snprintf(why, sizeof(why),
				 "%s: regions of %" PRIu64 " bytes for %" PRIu64
				 " connection(s), operations of %" PRIu64
				 " bytes, %" PRIu64 " outstanding: the server "
				 "registers %llu bytes at most",
				 op_name((enum op)m.v[5]), m.v[6], m.v[2],
				 m.v[4], m.v[3], RMA_MEM_MAX);
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
		s->op = (enum op)m.v[5];
		s->rma_len = m.v[6];
		s->rma_inflight = 0;
		s->notify = s->op == OP_WRITE && s->test == TEST_LAT && m.v[7];
		s->qd = (uint32_t)m.v[3];
		s->max_size = m.v[4];
		s->spin = false;
		s->want_conns = (uint32_t)m.v[2];
		s->joined = 0;
		s->token = now_ns() ^ ((uint64_t)getpid() << 32) ^
			   (uint64_t)(uintptr_t)sc;
		s->end_pending = false;
		s->rmsgs = s->rbytes = 0;
		slog(s, "client: %s%s test, %u connection(s), transport %s",
		     s->op == OP_SEND	 ? ""
		     : s->notify	 ? "write_notify "
		     : s->op == OP_WRITE ? "write "
					 : "read ",
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
		else if (s->op != OP_SEND) {
			tok_len = sizeof(tok);
			sc_rma_setup(sc, &m, tok, &tok_len, why, sizeof(why));
		}
		if (why[0]) {
			serr(s, "refusing a data connection: %s", why);
			sc->kind = SC_DEAD;
			rc = ctl_send(sc->conn, CTL_ERR, NULL, 0, why);
			(void)rc;
			return;
		}
		sc->kind = SC_DATA;
		s->joined++;
		rc = ctl_send_blob(sc->conn, CTL_JOIN_OK, NULL, 0, tok,
				   tok_len);
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
	case CTL_BEGIN: {
		rift_ctx_stats st;
		uint64_t v[1];

		s->rmsgs = s->rbytes = 0;
		s->end_pending = false;
		if (srv_poll_begin(s, m.v[1])) {
			srv_session_fail(s,
					 "BEGIN of %" PRIu64 " bytes: "
					 "write lat takes 1..%" PRIu64,
					 m.v[1], s->max_size);
			break;
		}
		s->t_begin = now_ns();
		rusage_split(&s->u_begin, &s->s_begin);
		/* Whether this side's pool still registers memory ahead
		 * (measure.c, cl_begin: the client waits for it). */
		rift_ctx_stats_init(&st);
		rift_ctx_stats_get(s->ctx, &st);
		v[0] = st.pool_growing;
		rc = ctl_send(sc->conn, CTL_BEGIN_OK, v, 1, NULL);
		if (rc)
			srv_session_fail(s, "send BEGIN_OK: %s",
					 rift_strerror(rc));
		break;
	}
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
	case RIFT_EVENT_WRITTEN:
		srv_write_back(sc, ev);
		break;
	case RIFT_EVENT_PATH_DOWN:
		slog(s, "%spath down (%s): %s", ev->standby ? "standby " : "",
		     rift_path_down_reason_str(ev->down_reason), ev->message);
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
		s->served_failed += s->session_failed;
		slog(s, "client %s", s->session_failed ? "failed" : "done");
	}
	s->ctl = NULL;
	s->session_end = false;
	s->session_failed = false;
	s->end_pending = false;
	s->joined = 0;
	s->rma_inflight = 0; /* closing: no callback of theirs runs */
	s->spin = false;
}

static void srv_lst_closed(rift_listener *l)
{
	struct server *s = rift_listener_user(l);

	s->open--;
}

/* Listen and serve clients one after another; 0, or EXIT_* on failure. */
int server_run(struct server *s)
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
		srv_fatal(s, rc, "rift_ctx_create: %s",
			  rift_ctx_last_error(NULL));
		__atomic_store_n(&s->ready, -1, __ATOMIC_RELEASE);
		return EXIT_FAIL;
	}
	loop_init(&s->lp, s->ctx, &o->cfg, s->msrc);
	url_build(s->url, sizeof(s->url), o->transport, o->host, o->port);
	rc = rift_listen(s->ctx, s->url, &cbs, s, srv_on_accept, &s->lst);
	if (rc) {
		srv_fatal(s, rc, "listen %s: %s", s->url,
			  rift_ctx_last_error(s->ctx));
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
		/* polled write lat: a write landing by RDMA wakes nothing,
		 * so a step's rounds never sleep and look at memory */
		rc = loop_once(&s->lp, s->spin ? 0 : TICK_MS);
		if (rc < 0) {
			srv_fatal(s, rc, "rift_ctx_progress: %s",
				  rift_strerror(rc));
			ret = EXIT_FAIL;
			break;
		}
		if (s->spin)
			srv_poll(s);
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
		/* the first failure is the one to report */
		if (ret)
			serr(s, "rift_ctx_destroy: %s",
			     rift_ctx_last_error(s->ctx));
		else
			srv_fatal(s, rc, "rift_ctx_destroy: %s",
				  rift_ctx_last_error(s->ctx));
		ret = EXIT_FAIL;
	}
	return ret;
}

void *server_thread(void *arg)
{
	struct server *s = arg;

	s->failed = server_run(s);
	return NULL;
}
