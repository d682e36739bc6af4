/*
 * session.c - sequence numbers, cumulative acks, the resend queue,
 * keepalives and the HELLO / RESUME handshakes (a path's failure, the
 * re-attach and the fallback: failover.c; the control frames a path
 * owes: control.c).  Transport independent:
 * transports call the rift__path_* upcalls and pull data with
 * rift__sess_next / rift__sess_written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/pool.h"
#include "session/session.h"
#include "util/secret.h"

/* ---- paths: generic life cycle ---- */

static void keepalive_tick(rift_timer *t, void *user);

void rift__path_init(rift__path *p, rift_ctx *ctx,
		     const struct rift__transport_ops *ops, bool is_client)
{
	p->ops = ops;
	p->ctx = ctx;
	p->cfg = &ctx->cfg;
	p->is_client = is_client;
	p->state = is_client ? RIFT_PATH_CONNECTING : RIFT_PATH_HANDSHAKE;
	p->last_rx_us = p->last_tx_us = p->born_us = ctx->now_us;
	rift__list_init(&p->flush_node);
	rift__list_add_tail(&ctx->paths, &p->ctx_node);
	rift__timer_init(ctx, &p->timer, rift__path_handshake_timeout, p);
	p->limit_ms = ctx->cfg.connect_timeout_ms;
	rift_timer_start(&p->timer, p->limit_ms, 0);
}

void rift__path_destroy(rift__path *p)
{
	rift_timer_stop(&p->timer);
	rift__list_del(&p->flush_node);
	rift__list_del(&p->ctx_node);
	p->ops->destroy(p);
}

/* Mark p dead and queue its destruction; no upcall. */
void rift__path_kill(rift__path *p)
{
	if (p->state == RIFT_PATH_DEAD)
		return;
	if (p->slot && p->conn)
		rift__spread_carrier_gone(p->conn, p);
	if (p->conn && p->conn->rma)
		rift__rma_path_gone(p->conn, p);
	if (p->state == RIFT_PATH_ATTACHED)
		p->ctx->stats.paths_active--;
	p->state = RIFT_PATH_DEAD;
	rift_timer_stop(&p->timer);
	rift__path_unqueue(p);
	rift__list_del(&p->ctx_node);
	rift__list_add_tail(&p->ctx->dead_paths, &p->ctx_node);
}

/* p leaves its conn and is destroyed later; no upcall. */
void rift__path_release(rift__path *p)
{
	if (!p)
		return;
	rift__path_kill(p); /* while it still names its conn (a carrier) */
	p->conn = NULL;
}

/* ---- connection helpers ---- */

/* Nothing acknowledged the last messages received by the end of the
 * round after them (rift__sess_after_flush armed this): an ACK frame. */
static void ack_timer_cb(rift_timer *t, void *user)
{
	rift_conn *conn = user;

	RIFT_UNUSED(t);
	if (conn->ack_sent != conn->recv_seq && conn->path &&
	    conn->path->state == RIFT_PATH_ATTACHED) {
		conn->path->pending |= RIFT_PEND_ACK;
		rift__path_kick(conn->path);
	}
}

rift_conn *rift__conn_alloc(rift_ctx *ctx, const rift_conn_callbacks *cbs,
			    void *user, bool is_client)
{
	rift_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->ctx = ctx;
	conn->cfg = ctx->cfg;
	if (cbs)
		conn->cbs = *cbs;
	conn->user = user;
	conn->is_client = is_client;
	conn->stats.size = sizeof(conn->stats); /* calloc zeroed the rest */
	rift__timer_init(ctx, &conn->retry_timer, NULL, conn);
	rift__timer_init(ctx, &conn->race_timer, NULL, conn);
	rift__timer_init(ctx, &conn->group_timer, NULL, conn);
	rift__timer_init(ctx, &conn->return_timer, NULL, conn);
	rift__timer_init(ctx, &conn->failback_timer, rift__group_failback_timer,
			 conn);
	rift__timer_init(ctx, &conn->ack_timer, ack_timer_cb, conn);
	rift__timer_init(ctx, &conn->linger_timer, NULL, conn); /* close.c */
	rift__list_init(&conn->drain_node);
	rift__list_add_tail(&ctx->conns, &conn->node);
	ctx->stats.conns_active++;
	ctx->stats.conns_opened++;
	return conn;
}

rift_conn *rift__conn_new_server(rift_listener *l, uint64_t session_id)
{
	uint8_t key[RIFT_SESSION_KEY_LEN];
	rift_conn *conn;

	/* Both before the conn exists: nothing to undo after it. */
	if (rift__sessions_reserve(l->ctx) || rift__random(key, sizeof(key)))
		return NULL;
	conn = rift__conn_alloc(l->ctx, &l->cbs, l->user, false);
	if (!conn)
		return NULL;
	conn->session_id = session_id;
	conn->ops = l->ops;
	conn->lst_serial = l->serial;
	memcpy(conn->key, key, sizeof(key));
	explicit_bzero(key, sizeof(key));
	rift__sessions_add(conn);
	return conn;
}

void rift__conn_error(rift_conn *conn, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(conn->last_error, sizeof(conn->last_error), fmt, ap);
	va_end(ap);
}

/* The local device and port of p, "rxe0:1", into buf ("" without). */
static const char *path_device(const rift__path *p, char *buf, size_t len)
{
	buf[0] = '\0';
	if (p && p->ops && p->ops->describe)
		p->ops->describe(p, buf, len);
	return buf;
}

void rift__conn_emit(rift_conn *conn, rift_event_type type, int status,
		     const char *message)
{
	char dev[RIFT_DEVICE_NAME_MAX + 8];
	rift_event ev = {
		.type = type,
		.status = status,
		.transport = conn->transport,
		.peer = conn->path ? conn->path->peer : "",
		.message = message ? message : "",
		.local = conn->path ? conn->path->local : "",
		.down_reason = type == RIFT_EVENT_PATH_DOWN
				       ? (rift_path_down_reason)conn->down_why
				       : RIFT_PATH_DOWN_NONE,
	};

	if (conn->closing || !conn->cbs.on_event)
		return;
	ev.device = type == RIFT_EVENT_WRITABLE || type == RIFT_EVENT_ERROR ||
				    type == RIFT_EVENT_DISCONNECTED
			    ? ""
			    : path_device(conn->path, dev, sizeof(dev));
	conn->cbs.on_event(conn, &ev);
}

void rift__conn_emit_standby(rift_conn *conn, rift_event_type type,
			     int status, const char *message,
			     const rift__path *p)
{
	char dev[RIFT_DEVICE_NAME_MAX + 8];
	rift_event ev = {
		.type = type,
		.status = status,
		.transport = p->ops->kind,
		.peer = p->peer,
		.message = message ? message : "",
		.local = p->local,
		.down_reason = type == RIFT_EVENT_PATH_DOWN
				       ? (rift_path_down_reason)p->down_why
				       : RIFT_PATH_DOWN_NONE,
		.standby = 1,
	};

	if (conn->closing || !conn->cbs.on_event)
		return;
	ev.device = path_device(p, dev, sizeof(dev));
	conn->cbs.on_event(conn, &ev);
}

/* The session is over: tell the application once. */
void rift__conn_confirm(rift_conn *conn, struct rift__omsg *list)
{
	while (list) {
		struct rift__omsg *m = list;

		list = m->next;
		if (!conn->closing)
			m->cb(conn, m->cb_user, 0);
		rift__buf_release(rift__container_of(m, struct rift__buf, om));
	}
}

/* The session ends with messages unacknowledged: their delivery
 * callbacks say why, each once, before the event. */
static void unconfirm(rift_conn *conn, int status)
{
	for (struct rift__omsg *m = conn->head; m && !conn->closing;
	     m = m->next) {
		void (*cb)(rift_conn *, void *, int) = m->cb;

		if (!cb)
			continue;
		m->cb = NULL;
		cb(conn, m->cb_user, status ? status : RIFT_ECONNRESET);
	}
}

void rift__conn_die(rift_conn *conn, rift_event_type type, int status)
{
	if (conn->state == RIFT_CONN_DEAD)
		return;
	/* Closed by the application: its close ends with the session, and
	 * nothing is said (close.c). */
	if (conn->closing) {
		rift__conn_close_lost(conn);
		return;
	}
	rift__sessions_del(conn); /* no RESUME can find it now */
	rift__conn_abandon_path(conn);
	rift__group_end(conn);
	rift__conn_quiet(conn, false);
	rift_timer_stop(&conn->retry_timer);
	rift_timer_stop(&conn->ack_timer);
	/* Held messages were never acknowledged: the peer counts them as
	 * lost with the session, as it does everything unacknowledged. */
	rift__conn_drop_held(conn);
	conn->state = RIFT_CONN_DEAD;
	conn->transport = RIFT_TRANSPORT_NONE;
	unconfirm(conn, status);
	rift__rma_conn_end(conn, status);
	if (status == RIFT_ETIMEDOUT && type == RIFT_EVENT_DISCONNECTED)
		conn->ctx->stats.sessions_expired++;
	if (type == RIFT_EVENT_ERROR)
		RIFT_ERROR(conn->ctx,
			   "session %016llx: connection failed: %s: %s",
			   (unsigned long long)conn->session_id,
			   rift_err_name(status), conn->last_error);
	else if (status)
		RIFT_ERROR(conn->ctx, "session %016llx: session lost: %s: %s",
			   (unsigned long long)conn->session_id,
			   rift_err_name(status), conn->last_error);
	else
		RIFT_INFO(conn->ctx, "session %016llx: closed by the peer: %s",
			  (unsigned long long)conn->session_id,
			  conn->last_error);
	rift__conn_emit(conn, type, status, conn->last_error);
}

void rift__conn_drop_queue(rift_conn *conn)
{
	struct rift__omsg *m = conn->head;

	while (m) {
		struct rift__omsg *next = m->next;

		rift__buf_release(rift__container_of(m, struct rift__buf, om));
		m = next;
	}
	conn->head = conn->tail = conn->cursor = NULL;
	conn->unacked_bytes = conn->unacked_msgs = conn->window_used = 0;
}

void rift__conn_drop_held(rift_conn *conn)
{
	struct rift__held *h = conn->held_head;

	while (h) {
		struct rift__held *next = h->next;

		free(h->owned);
		free(h);
		h = next;
	}
	conn->held_head = conn->held_tail = NULL;
	conn->held_bytes = 0;
	rift__spread_drop_ooo(conn);
	rift__list_del(&conn->drain_node);
}

/*
 * Whether conn_rewind can start from what a peer says it holds: 0, or
 * RIFT_EPROTO with *why set.  Changes nothing, so a server checks a
 * RESUME in full before it touches the session.
 */
static int rewind_check(const rift_conn *conn, const struct rift__hello *peer,
			const char **why)
{
	if (peer->held_seq > conn->max_written) {
		*why = "peer claims messages that were never sent";
		return RIFT_EPROTO;
	}
	if (peer->recv_seq < conn->acked_seq) {
		*why = "peer forgot messages it had acknowledged";
		return RIFT_EPROTO;
	}
	return 0;
}

/*
 * Start sending on a freshly attached path from what the peer lacks: after
 * what it holds (delivered or held), while only what it delivered counts as
 * acknowledged.  After rewind_check passed: acked_seq <= recv_seq <=
 * held_seq (rift__hello_decode) = written_seq, an ack rift__conn_ack_check
 * takes.
 */
static void conn_rewind(rift_conn *conn, const struct rift__hello *peer)
{
	conn->written_seq = peer->held_seq;
	rift__conn_ack_apply(conn, peer->recv_seq);
	conn->cursor = conn->head;
	while (conn->cursor && conn->cursor->seq <= peer->held_seq)
		conn->cursor = conn->cursor->next;
	if (conn->spread)
		rift__spread_rewound(conn);
}

/*
 * A client attempt attached after sample_us: the setup time re-attach
 * attempts are bounded by follows it, as TCP's retransmission timeout
 * follows the round trip (RFC 6298: smoothed mean, and mean deviation).
 */
static void setup_sample(rift_conn *conn, uint64_t sample_us)
{
	uint64_t d;

	if (!conn->setup_srtt_us) {
		/* One sample says little: a re-attach competes with the
		 * teardown of the path it replaces, so the first bound is
		 * five times what the first connect took. */
		conn->setup_srtt_us = sample_us ? sample_us : 1;
		conn->setup_var_us = sample_us;
		return;
	}
	d = sample_us > conn->setup_srtt_us ? sample_us - conn->setup_srtt_us
					    : conn->setup_srtt_us - sample_us;
	conn->setup_var_us = (3 * conn->setup_var_us + d) / 4;
	conn->setup_srtt_us = (7 * conn->setup_srtt_us + sample_us) / 8;
}

void rift__conn_quiet(rift_conn *conn, bool on)
{
	struct rift__pool *pool = rift__ctx_pool_held(conn->ctx);

	if (conn->quiet == on || !pool)
		return;
	conn->quiet = on;
	rift__pool_quiet(pool, on);
}

/* Keepalive from now: check silence and idleness twice per interval. */
void rift__path_keepalive_start(rift__path *p)
{
	p->last_rx_us = p->last_tx_us = p->ctx->now_us;
	p->timer.cb = keepalive_tick;
	rift__path_keepalive_retick(p);
}

void rift__path_keepalive_retick(rift__path *p)
{
	rift_conn *conn = p->conn;
	uint64_t tick = p->cfg->keepalive_interval_ms / 2;

	/* A data path that may have standbys (a client's of several
	 * addresses, a server's that has one): its sends' progress too,
	 * more often (rift__group_stall_check). */
	if (conn && (conn->path == p || p->slot) &&
	    rift__group_negotiated(conn) &&
	    (conn->is_client ? conn->n_addrs > 1 : conn->n_standby > 0) &&
	    tick > RIFT_STALL_TICK_MS)
		tick = RIFT_STALL_TICK_MS;
	rift_timer_start(&p->timer, tick ? tick : 1, tick ? tick : 1);
}

static void attach(rift_conn *conn, rift__path *p)
{
	rift_ctx *ctx = conn->ctx;

	if (conn->is_client && conn->attempt_us)
		setup_sample(conn, ctx->now_us - conn->attempt_us);
	conn->timeouts = 0;

	rift__conn_quiet(conn, false);
	conn->path = p;
	p->conn = conn;
	p->state = RIFT_PATH_ATTACHED;
	conn->spread = rift__spread_negotiated(conn);
	rift__spread_carrier_add(conn, p);
	p->up_us = p->ctx->now_us;
	if (conn->is_client && p->addr_idx < conn->n_addrs)
		conn->addr_down[p->addr_idx].status = 0;
	ctx->stats.paths_active++;
	conn->state = RIFT_CONN_ESTABLISHED;
	conn->transport = p->ops->kind;
	/* A server's session goes where its client attaches it (an auto://
	 * session back from TCP to RDMA: group.c, returning). */
	if (!conn->is_client)
		conn->ops = p->ops;
	conn->attempts = conn->total_attempts = 0;
	rift_timer_stop(&conn->retry_timer);
	rift__path_keepalive_start(p);
	rift__path_kick(p);
	rift__group_attached(conn);
	/* A closing session re-attached: CLOSE may be due now (the rewind
	 * may have acknowledged the rest). */
	if (conn->lingering)
		rift__conn_linger_check(conn);
}

/* The session is attached to p now: "connected to", "accepted from" or
 * "re-attached on" p's peer; when it was detached (since detached_us),
 * for how long. */
static void log_attached(const rift_conn *conn, const rift__path *p,
			 const char *what, bool detached)
{
	const rift_ctx *ctx = conn->ctx;

	if (detached)
		RIFT_INFO(ctx, "session %016llx: %s %s after %llu ms detached",
			  (unsigned long long)conn->session_id, what, p->peer,
			  (unsigned long long)(ctx->now_us -
					       conn->detached_us) / 1000u);
	else
		RIFT_INFO(ctx, "session %016llx: %s %s",
			  (unsigned long long)conn->session_id, what, p->peer);
}

/* Fill the handshake payload of a frame of that type describing our
 * side (a RESUME's or RESUME_ACK's tag is sealed once it is encoded). */
void rift__hello_fill(rift__path *p, uint8_t type, struct rift__hello *h)
{
	rift_conn *conn = p->conn;

	memset(h, 0, sizeof(*h));
	h->proto = RIFT_WIRE_VERSION;
	h->session_id = conn->session_id;
	h->recv_seq = conn->recv_seq;
	h->held_seq = conn->held_seq;
	h->max_msg_size = conn->ctx->cfg.max_msg_size;
	h->window = conn->ctx->cfg.send_window;
	/* A client's try of the transport auto:// prefers is off its
	 * fallback already (group.c, returning). */
	h->flags = ((uint32_t)(rift__path_returning(p) ? RIFT_FALLBACK_NONE
						       : conn->fallback) &
		    RIFT_HELLO_FB_MASK) |
		   rift__group_caps(conn) | RIFT_CAP_RMA;
	if (type == RIFT_FRAME_HELLO_ACK)
		memcpy(h->auth, conn->key, sizeof(h->auth));
	else if (type == RIFT_FRAME_RESUME || type == RIFT_FRAME_JOIN) {
		uint64_t was = p->attach;

		h->attach = p->attach = ++conn->attach_seq; /* never used */
		/* A joined standby resuming the session keeps its QP, and
		 * the one-sided keys of it (the server does the same). */
		if (type == RIFT_FRAME_RESUME && p->promoted && conn->rma)
			rift__rma_path_reattach(conn, p, was);
	}
	else if (type == RIFT_FRAME_RESUME_ACK || type == RIFT_FRAME_JOIN_ACK)
		h->attach = p->attach; /* the RESUME's or JOIN's */
}

/* Refuse a frame: tell the peer why (best effort), then fail the path. */
void rift__path_say_error(rift__path *p, int err, const char *why)
{
	p->pending |= RIFT_PEND_ERROR;
	p->error_code = err;
	snprintf(p->error_text, sizeof(p->error_text), "%s", why);
	p->ops->flush(p);
}

int rift__path_reject(rift__path *p, int err, const char *why)
{
	rift__path_say_error(p, err, why);
	rift__path_failed(p, err, "%s", why);
	return err;
}

static void keepalive_tick(rift_timer *t, void *user)
{
	rift__path *p = user;
	rift_ctx *ctx = p->ctx;
	uint64_t silent = ctx->now_us - p->last_rx_us;

	RIFT_UNUSED(t);
	if (silent >= (uint64_t)p->cfg->keepalive_timeout_ms * 1000u) {
		rift__metrics_keepalive_timeout(p);
		rift__path_failed_why(p, RIFT_PATH_DOWN_KEEPALIVE,
				      RIFT_ETIMEDOUT,
				      "no frame from peer for %llu ms "
				      "(keepalive_timeout_ms %u)",
				      (unsigned long long)(silent / 1000u),
				      p->cfg->keepalive_timeout_ms);
		return;
	}
	if (rift__group_stall_check(p))
		return;
	if (ctx->now_us - p->last_tx_us >=
	    (uint64_t)p->cfg->keepalive_interval_ms * 1000u) {
		p->pending |= RIFT_PEND_PING;
		rift__path_kick(p);
	}
}

/* ---- frames ---- */

/*
 * Refuse a RESUME: an ERROR to its path alone, which fails; the session
 * it names, if any, is not touched.  RIFT_ESESSION, so the peer does not
 * try again; counted (resumes_refused, and as a protocol error).
 */
static int resume_refuse(rift__path *p, const char *why)
{
	p->ctx->stats.resumes_refused++;
	p->ctx->stats.protocol_errors++;
	rift__path_reject(p, RIFT_ESESSION, why);
	return RIFT_EPROTO;
}

/*
 * A RESUME moves the session it names to this path, if it proves it may
 * (session/wire.h, "Who may attach a path"): the session of that id on
 * the listener the path came through, the tag under the session's key,
 * a fresh attach counter, a state the session can rewind to.  All of it
 * is checked before the session or its live path are touched.
 */
static int server_resume(rift__path *p, const uint8_t *payload,
			 const struct rift__hello *hello)
{
	rift_conn *conn = rift__sessions_find(p->ctx, p->lst ? p->lst->serial : 0,
					      hello->session_id);
	const char *why = NULL;
	bool detached;

	/* The peer asked for a session this listener never had, or that
	 * already ended or expired. */
	if (!conn)
		return resume_refuse(p, "RESUME for an unknown session");
	if (!rift__hello_proves(payload, RIFT_FRAME_RESUME, RIFT_HELLO_AUTH_AT,
				conn->key))
		return resume_refuse(p, "RESUME without the session's proof");
	/* Above every counter accepted, or one of the last 64 not used:
	 * a JOIN sent after this RESUME may have come first. */
	if (!rift__replay_check(&conn->attach_win, hello->attach))
		return resume_refuse(p, "RESUME replayed (attach counter "
					"already used)");
	if (rewind_check(conn, hello, &why))
		return resume_refuse(p, why);

	rift__replay_check_and_set(&conn->attach_win, hello->attach, &why);
	p->attach = hello->attach;
	detached = conn->state == RIFT_CONN_DETACHED;
	/* The old path may not have noticed its death yet: replace it.  It
	 * never writes again, so rewinding cannot pull data from under it. */
	rift__conn_abandon_path(conn);
	conn_rewind(conn, hello);
	conn->peer_max_msg = hello->max_msg_size;
	conn->peer_fallback = hello->flags & RIFT_HELLO_FB_MASK;
	p->pending |= RIFT_PEND_RESUME_ACK;
	attach(conn, p);
	conn->stats.path_changes++;
	rift__metrics_path_changed(conn);
	p->ctx->stats.sessions_resumed++;
	log_attached(conn, p, "re-attached on", detached);
	rift__conn_emit(conn, RIFT_EVENT_PATH_CHANGED, 0, "session re-attached");
	return p->state == RIFT_PATH_DEAD ? RIFT_ECLOSED : 0;
}

/* First frame on a server path: HELLO (new session) or RESUME. */
static int server_handshake(rift__path *p, const struct rift__hdr *h,
			    const uint8_t *payload)
{
	struct rift__hello hello;
	const char *why = NULL;
	rift_conn *conn;

	if (h->type == RIFT_FRAME_JOIN)
		return rift__group_join(p, h, payload);
	if (h->type != RIFT_FRAME_HELLO && h->type != RIFT_FRAME_RESUME)
		return rift__path_reject(p, RIFT_EPROTO,
				   "expected HELLO or RESUME as first frame");
	if (rift__hello_decode(payload, h->len, &hello, &why))
		return rift__path_reject(p, RIFT_EPROTO, why);
	if (h->type == RIFT_FRAME_RESUME)
		return server_resume(p, payload, &hello);

	if (!p->lst || p->lst->closing)
		return rift__path_reject(p, RIFT_ECONNREFUSED, "listener is closing");
	if (rift__sessions_find(p->ctx, p->lst->serial, hello.session_id))
		return rift__path_reject(p, RIFT_EPROTO,
				   "HELLO for a session id in use");
	if (hello.held_seq != 0 || hello.attach != 0)
		return rift__path_reject(p, RIFT_EPROTO,
				   "HELLO of a new session with data");
	conn = rift__conn_new_server(p->lst, hello.session_id);
	if (!conn)
		return rift__path_reject(p, RIFT_ENOMEM,
				   "out of memory for a new session");
	conn->peer_window = hello.window;
	conn->peer_max_msg = hello.max_msg_size;
	conn->peer_fallback = hello.flags & RIFT_HELLO_FB_MASK;
	conn->peer_caps = hello.flags & RIFT_HELLO_CAP_MASK;
	p->pending |= RIFT_PEND_HELLO_ACK;
	attach(conn, p);
	log_attached(conn, p, "accepted from", false);
	p->lst->on_accept(p->lst, conn);
	return p->state == RIFT_PATH_DEAD ? RIFT_ECLOSED : 0;
}

static int client_handshake(rift__path *p, const struct rift__hdr *h,
			    const uint8_t *payload)
{
	static const uint8_t no_key[RIFT_SESSION_KEY_LEN];
	rift_conn *conn = p->conn;
	struct rift__hello hello;
	struct rift__error_frame ef;
	const char *why = NULL;
	bool resume = conn->state != RIFT_CONN_CONNECTING;
	const struct rift__transport_ops *from;

	if (h->type == RIFT_FRAME_ERROR) {
		if (rift__error_decode(payload, h->len, &ef, &why))
			return rift__path_reject(p, RIFT_EPROTO, why);
		rift__path_failed(p, ef.code == RIFT_ESESSION ? RIFT_ESESSION
							      : RIFT_ECONNREFUSED,
				  "peer refused: %s", ef.text);
		return RIFT_ECLOSED;
	}
	if (h->type != (resume ? RIFT_FRAME_RESUME_ACK : RIFT_FRAME_HELLO_ACK))
		return rift__path_reject(p, RIFT_EPROTO,
				   resume ? "expected RESUME_ACK"
					  : "expected HELLO_ACK");
	if (rift__hello_decode(payload, h->len, &hello, &why))
		return rift__path_reject(p, RIFT_EPROTO, why);
	if (hello.session_id != conn->session_id)
		return rift__path_reject(p, RIFT_EPROTO,
				   "handshake answer for another session");
	if (!resume && (hello.held_seq != 0 || hello.attach != 0))
		return rift__path_reject(p, RIFT_EPROTO,
				   "new session answered with data received");
	/* Whoever answers a RESUME must hold the session's key: an impostor
	 * at the server's address fails this attempt, not the session. */
	if (resume && (!rift__hello_proves(payload, RIFT_FRAME_RESUME_ACK,
					   RIFT_HELLO_AUTH_AT, conn->key) ||
		       hello.attach != p->attach))
		return rift__path_reject(p, RIFT_EACCES,
				   "RESUME_ACK without the session's proof");
	if (!resume && !memcmp(hello.auth, no_key, sizeof(no_key)))
		return rift__path_reject(p, RIFT_EPROTO,
				   "HELLO_ACK without a session key");
	if (rewind_check(conn, &hello, &why))
		return rift__path_reject(p, RIFT_EPROTO, why);
	if (!resume)
		memcpy(conn->key, hello.auth, sizeof(conn->key));
	/* Messages queued before the peer told its limit: one longer than
	 * it accepts would end the session later with RIFT_EPROTO on its
	 * side; the connection fails now, saying why. */
	for (struct rift__omsg *m = conn->head; !resume && m; m = m->next)
		if (m->len > hello.max_msg_size) {
			char big[160];

			snprintf(big, sizeof(big),
				 "a message of %llu bytes sent before CONNECTED "
				 "exceeds the peer's max_msg_size (%llu bytes)",
				 (unsigned long long)m->len,
				 (unsigned long long)hello.max_msg_size);
			rift__path_reject(p, RIFT_EMSGSIZE, big);
			rift__conn_error(conn, "%s", big);
			rift__conn_die(conn, RIFT_EVENT_ERROR, RIFT_EMSGSIZE);
			return RIFT_ECLOSED;
		}
	conn_rewind(conn, &hello);
	conn->peer_window = hello.window;
	conn->peer_max_msg = hello.max_msg_size;
	conn->peer_fallback = hello.flags & RIFT_HELLO_FB_MASK;
	conn->peer_caps = hello.flags & RIFT_HELLO_CAP_MASK;
	from = conn->ops;
	attach(conn, p);
	log_attached(conn, p, resume ? "re-attached on" : "connected to",
		     resume);
	if (resume && rift__group_failback_done(conn)) {
		char msg[RIFT_ERRMSG_LEN];

		if (from != conn->ops)
			snprintf(msg, sizeof(msg),
				 "failed back to %s: auto:// is on %s again, "
				 "off %s",
				 p->peer, conn->ops->name, from->name);
		else
			snprintf(msg, sizeof(msg),
				 "failed back to %s, an address preferred to "
				 "the one left",
				 p->peer);
		conn->stats.path_changes++;
		rift__conn_emit(conn, RIFT_EVENT_FAILBACK, 0, msg);
	} else if (resume) {
		conn->stats.path_changes++;
		rift__metrics_path_changed(conn);
		rift__conn_emit(conn, RIFT_EVENT_PATH_CHANGED, 0,
				"session re-attached");
	} else {
		rift_fallback_reason fb = rift__conn_fallback(conn);
		char msg[160];

		snprintf(msg, sizeof(msg), "connected over %s%s%s%s",
			 rift_transport_name(conn->transport),
			 fb != RIFT_FALLBACK_NONE ? " (fell back: " : "",
			 fb != RIFT_FALLBACK_NONE ? rift_fallback_reason_str(fb)
						  : "",
			 fb != RIFT_FALLBACK_NONE ? ")" : "");
		rift__conn_emit(conn, RIFT_EVENT_CONNECTED, 0, msg);
	}
	return p->state == RIFT_PATH_DEAD ? RIFT_ECLOSED : 0;
}

/*
 * Keep a DATA frame for later delivery (receiving is stopped, or earlier
 * frames still wait).  Nothing held is acknowledged, so an honest peer
 * cannot have sent more than the connection's window beyond what was
 * delivered (one message alone may exceed it): more is a protocol error,
 * and this bounds the memory a stopped receiver spends by our own
 * send_window, whatever the peer advertised (the reorder buffer's
 * messages count too: none of them is acknowledged either).
 * rift__held_new makes the copy (0, or the path failed); hold() keeps
 * it in order.
 */
int rift__held_new(rift__path *p, const struct rift__hdr *h, void *payload,
		   void *owned, struct rift__held **out)
{
	rift_conn *conn = p->conn;
	uint64_t cost = (uint64_t)h->len + RIFT_HDR_SIZE;
	uint64_t undelivered = conn->held_bytes + conn->ooo_bytes;
	struct rift__held *m;

	if (undelivered && undelivered + cost > rift__conn_window(conn)) {
		char why[128];

		free(owned);
		snprintf(why, sizeof(why),
			 "peer sent beyond the window (%llu bytes: the "
			 "smaller of both sides' send_window)",
			 (unsigned long long)rift__conn_window(conn));
		return rift__path_reject(p, RIFT_EPROTO, why);
	}
	m = malloc(sizeof(*m));
	if (m && !owned && h->len) {
		owned = rift__spare_get(conn->ctx, h->len);
		if (owned) {
			memcpy(owned, payload, h->len);
			conn->stats.rx_copied_bytes += h->len;
		} else {
			free(m), m = NULL;
		}
	}
	if (!m) {
		free(owned);
		rift__path_failed(p, RIFT_ENOMEM,
				  "no memory to hold a %u-byte message",
				  h->len);
		return RIFT_ENOMEM;
	}
	m->next = NULL;
	m->seq = h->seq;
	m->len = h->len;
	m->type = h->type;
	m->owned = owned;
	*out = m;
	return 0;
}

static int hold(rift__path *p, const struct rift__hdr *h, void *payload,
		void *owned)
{
	rift_conn *conn = p->conn;
	struct rift__held *m;
	int rc = rift__held_new(p, h, payload, owned, &m);

	if (rc)
		return rc;
	if (conn->held_tail)
		conn->held_tail->next = m;
	else
		conn->held_head = m;
	conn->held_tail = m;
	conn->held_bytes += (uint64_t)h->len + RIFT_HDR_SIZE;
	conn->held_seq = h->seq;
	conn->stats.msgs_held++;
	return 0;
}

/*
 * A DATA frame for a connection the application closed: nobody is left
 * to deliver it to, and a peer closing at the same time waits for its
 * queue to be acknowledged.  Acknowledged as if delivered, and dropped.
 */
static int discard(rift__path *p, const struct rift__hdr *h, void *owned)
{
	rift_conn *conn = p->conn;

	rift__spare_put(conn->ctx, owned);
	conn->recv_seq = conn->held_seq = h->seq;
	conn->rx_unacked += (uint64_t)h->len + RIFT_HDR_SIZE;
	if (conn->rx_unacked >= conn->peer_window / 4)
		p->pending |= RIFT_PEND_ACK;
	rift__path_kick(p); /* the ack timer follows the flush */
	return 0;
}

void rift__conn_drain(rift_conn *conn)
{
	static uint8_t empty;

	while (conn->held_head && !conn->recv_stopped && !conn->closing &&
	       conn->state != RIFT_CONN_DEAD) {
		struct rift__held *m = conn->held_head;
		struct rift__hdr h = { .type = m->type,
				       .seq = m->seq,
				       .len = m->len };

		conn->held_head = m->next;
		if (!conn->held_head)
			conn->held_tail = NULL;
		conn->held_bytes -= (uint64_t)m->len + RIFT_HDR_SIZE;
		/* An empty message still gets a valid pointer. */
		rift__conn_deliver(conn, NULL, &h,
				   m->owned ? m->owned : (void *)&empty, m->owned);
		free(m);
	}
}

/*
 * DATA, ACK or PING on a path that takes data (the data path; with
 * active-active, a carrier too): the ack it carries, then the message in
 * order: delivered, held (receiving stopped, or earlier ones wait), kept
 * ahead of its turn (active-active: it came on another path than the
 * ones before it), or dropped as a duplicate.
 */
static int data_frame(rift__path *p, const struct rift__hdr *h, void *payload,
		      void *owned)
{
	rift_conn *conn = p->conn;
	const char *why = NULL;
	int rc;

	if (rift__frame_sequenced(h->type)) {
		p->rx_data_seq = h->seq;
		p->rx_data_ack = h->ack;
		p->rx_msgs++;
		p->rx_bytes += h->len;
	}
	if (rift__conn_ack(conn, h->ack, &why)) {
		free(owned);
		return rift__path_reject(p, RIFT_EPROTO, why);
	}
	/* Closing: the last acknowledgement may make CLOSE due (or
	 * end the close); no callback runs, so this is the one
	 * place (the inline delivery is off: recv_stopped). */
	if (conn->lingering && !conn->head)
		rift__conn_linger_check(conn);
	if (p->state == RIFT_PATH_DEAD) {
		free(owned);
		return RIFT_ECLOSED; /* closed from WRITABLE, or ended */
	}
	if (!rift__frame_sequenced(h->type))
		return 0;
	if (h->seq <= conn->held_seq) {
		conn->stats.dups_dropped++;
		free(owned);
		return 0;
	}
	if (h->seq != conn->held_seq + 1) {
		if (conn->spread)
			return rift__spread_hold_ahead(p, h, payload, owned);
		free(owned);
		return rift__path_reject(p, RIFT_EPROTO,
					 "gap in message sequence");
	}
	if (conn->closing)
		rc = discard(p, h, owned);
	else if (conn->recv_stopped || conn->held_head)
		rc = hold(p, h, payload, owned);
	else {
		rift__conn_deliver(conn, p, h, payload, owned);
		rc = p->state == RIFT_PATH_DEAD ? RIFT_ECLOSED : 0;
	}
	/* What waited for it follows (delivered by deferred work). */
	if (!rc && conn->ooo_n && conn->state != RIFT_CONN_DEAD)
		rift__spread_ooo_advance(conn);
	return rc;
}

/* A frame of RIFT_CAP_GROUP's (session/wire.h) on the data path: of a
 * capability the session did not negotiate, or one that belongs to a
 * standby's setup (session/group.c), never here. */
static int not_negotiated(rift__path *p, const struct rift__hdr *h)
{
	const rift_conn *conn = p->conn;
	char why[96];

	snprintf(why, sizeof(why), "%s: %s", rift__frame_name(h->type),
		 h->type != RIFT_FRAME_RMA && rift__group_negotiated(conn)
			 ? "not a frame of the data path"
			 : "frame of a capability not negotiated");
	return rift__path_reject(p, RIFT_EPROTO, why);
}

int rift__path_on_frame(rift__path *p, const struct rift__hdr *h,
			void *payload, void *owned)
{
	rift_conn *conn = p->conn;
	struct rift__error_frame ef;
	const char *why = NULL;

	if (p->state == RIFT_PATH_DEAD) {
		free(owned);
		return RIFT_ECLOSED;
	}
	if (h->type != RIFT_FRAME_DATA)
		RIFT_DEBUG(p->ctx, "%s: frame %s len %u ack %llu", p->peer,
			   rift__frame_name(h->type), h->len,
			   (unsigned long long)h->ack);
	if (p->state == RIFT_PATH_HANDSHAKE) {
		int rc;

		/* active-active: DATA the server sent on this carrier
		 * before our RESUME reached it.  Dropped: the RESUME says
		 * what we hold, and the server sends the rest again.  A
		 * bare frame after it still counts from it (verbs). */
		if (rift__frame_sequenced(h->type) &&
		    rift__path_takes_data(p)) {
			p->rx_data_seq = h->seq;
			p->rx_data_ack = h->ack;
			free(owned);
			return 0;
		}
		if (rift__frame_sequenced(h->type)) {
			free(owned);
			return rift__path_reject(p, RIFT_EPROTO,
					   "data before the handshake");
		}
		/* A standby being joined; one being resumed on may still
		 * see the keepalives (and a PROBE's answer) of its standby
		 * days first. */
		if (p->standby && p->is_client && !p->promoted)
			return rift__group_handshake(p, h, payload);
		if (p->promoted && (h->type == RIFT_FRAME_PING ||
				    h->type == RIFT_FRAME_PROBE_ACK))
			return 0;
		rc = p->is_client ? client_handshake(p, h, payload)
				  : server_handshake(p, h, payload);
		return rc;
	}
	if (p->state == RIFT_PATH_STANDBY) {
		int rc;

		if ((h->type == RIFT_FRAME_RESUME ||
		     h->type == RIFT_FRAME_PROBE) &&
		    !p->is_client && rift__fault_hit(RIFT_FAULT_STANDBY_DEAF)) {
			free(owned);
			return 0;
		}
		if (p->slot && conn &&
		    (rift__frame_sequenced(h->type) ||
		     h->type == RIFT_FRAME_ACK || h->type == RIFT_FRAME_PING))
			return data_frame(p, h, payload, owned);
		if (p->slot && conn && conn->spread &&
		    h->type == RIFT_FRAME_PATH_CTL) {
			rc = rift__spread_path_ctl(p, h, payload);
			free(owned);
			return rc;
		}
		if (h->type == RIFT_FRAME_RESUME && !p->is_client) {
			/* The client resumes its session on this standby:
			 * checked as a RESUME on a new path is.  A standby
			 * no more: if it fails from now on, it fails as the
			 * data path (failover.c, path_lost). */
			uint64_t was = p->attach;

			rift__group_standby_del(conn, p);
			if (p->slot)
				rift__spread_carrier_gone(conn, p);
			p->conn = NULL;
			p->standby = false;
			p->state = RIFT_PATH_HANDSHAKE;
			rc = server_handshake(p, h, payload);
			/* One-sided access: the same QP under a new attach
			 * counter keeps its windows and keys; a path the
			 * RESUME did not attach loses them here (it is no
			 * longer the session's to report its death). */
			if (conn->rma) {
				if (p->conn == conn &&
				    p->state == RIFT_PATH_ATTACHED)
					rift__rma_path_reattach(conn, p, was);
				else
					rift__rma_path_gone(conn, p);
			}
		} else {
			rc = rift__group_standby_frame(p, h, payload);
		}
		free(owned);
		return rc;
	}
	if (p->state != RIFT_PATH_ATTACHED || !conn) {
		free(owned);
		return RIFT_ECLOSED;
	}
	switch (h->type) {
	case RIFT_FRAME_DATA:
	case RIFT_FRAME_ACK:
	case RIFT_FRAME_PING:
		return data_frame(p, h, payload, owned);
	case RIFT_FRAME_RMA:
		if (rift__rma_negotiated(conn))
			return data_frame(p, h, payload, owned);
		free(owned);
		return not_negotiated(p, h);
	case RIFT_FRAME_CLOSE:
		/* Its ack is the peer's last word on ours (close.c). */
		if (rift__conn_ack(conn, h->ack, &why))
			return rift__path_reject(p, RIFT_EPROTO, why);
		if (p->state == RIFT_PATH_DEAD)
			return RIFT_ECLOSED;
		rift__conn_peer_close(p, h);
		return p->state == RIFT_PATH_DEAD ? RIFT_ECLOSED : 0;
	case RIFT_FRAME_ERROR:
		if (rift__error_decode(payload, h->len, &ef, &why))
			return rift__path_reject(p, RIFT_EPROTO, why);
		rift__conn_error(conn, "%s: peer reported %s: %s", p->peer,
				 rift_err_name(ef.code), ef.text);
		/* The peer forgot the session, or aborted it (close.c);
		 * anything else it reports is a protocol error. */
		rift__conn_die(conn, RIFT_EVENT_DISCONNECTED,
			       ef.code == RIFT_ESESSION ||
					       ef.code == RIFT_ECONNRESET
				       ? ef.code
				       : RIFT_EPROTO);
		return RIFT_ECLOSED;
	case RIFT_FRAME_PATH_CTL:
		if (conn->spread) {
			int rc = rift__spread_path_ctl(p, h, payload);

			free(owned);
			return rc;
		}
		free(owned);
		return not_negotiated(p, h);
	case RIFT_FRAME_JOIN:
	case RIFT_FRAME_JOIN_ACK:
	case RIFT_FRAME_PROBE:
	case RIFT_FRAME_PROBE_ACK:
	case RIFT_FRAME_ADDRS:
		free(owned);
		return not_negotiated(p, h);
	default:
		return rift__path_reject(p, RIFT_EPROTO,
				   "handshake frame on an attached path");
	}
}
