/*
 * failover.c - what happens when a path fails: the client's next attempt
 * (the next address, the other way of setting up, racing attempts), the
 * server's grace for a RESUME, auto://'s fallback to the next transport,
 * and the session's end when none of that works; and a new path's
 * connection, which starts the HELLO or RESUME handshake (session.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "session/session.h"

/* An attempt racing conn's current one (conn.c, "racing") ends. */
static void drop_racer(rift_conn *conn)
{
	rift__path *p = conn->racer;

	rift_timer_stop(&conn->race_timer);
	conn->racer = NULL;
	rift__path_release(p);
}

/* The racing attempt takes the place of the current one, which ends. */
static void racer_wins(rift_conn *conn)
{
	rift__path *slow = conn->path;

	conn->path = conn->racer;
	conn->addr_idx = conn->racer_idx;
	conn->attempt_us = conn->racer_us;
	conn->racer = NULL;
	rift__path_release(slow);
}

/* The current path or attempt ends, and any attempt racing it. */
void rift__conn_abandon_path(rift_conn *conn)
{
	rift__path *p = conn->path;

	drop_racer(conn);
	conn->path = NULL;
	rift__path_release(p);
}

static void grace_expired(rift_timer *t, void *user)
{
	rift_conn *conn = user;

	RIFT_UNUSED(t);
	char last[RIFT_ERRMSG_LEN];

	memcpy(last, conn->last_error, sizeof(last));
	rift__conn_error(conn,
			 "session not re-attached within session_grace_ms "
			 "(%u ms); last path error: %s",
			 conn->cfg.session_grace_ms, last);
	rift__conn_die(conn, RIFT_EVENT_DISCONNECTED, RIFT_ETIMEDOUT);
}

/* An attempt of a client conn failed: try again, next address, or give up. */
/*
 * auto://: every attempt of the preferred transport (RDMA) failed, so
 * continue over the one after it in the registry (TCP).  An explicit
 * state change with a reason, counted once, never a silent switch.
 */
static bool fall_back(rift_conn *conn, rift_fallback_reason why)
{
	rift_ctx *ctx = conn->ctx;
	const struct rift__transport_ops *fb;

	if (!conn->auto_scheme || !conn->cfg.fallback)
		return false;
	fb = rift__transport_fallback(conn->ops);
	if (!fb)
		return false;
	if (why == RIFT_FALLBACK_PATH_LOST)
		RIFT_WARN(ctx,
			  "session %016llx: every %s address failed (last: "
			  "%s); auto:// re-attaches over %s",
			  (unsigned long long)conn->session_id, conn->ops->name,
			  conn->last_error, fb->name);
	else
		RIFT_WARN(ctx,
			  "session %016llx: %s (%s); auto:// falls back to %s",
			  (unsigned long long)conn->session_id,
			  rift_fallback_reason_str(why), conn->last_error,
			  fb->name);
	conn->ops = fb;
	conn->fallback = why;
	ctx->stats.fallbacks[why]++;
	conn->addr_idx = 0;
	conn->attempts = 0;
	rift_timer_start(&conn->retry_timer, 0, 0);
	return true;
}

void rift__conn_attempt_failed(rift_conn *conn, int err)
{
	rift_ctx *ctx = conn->ctx;
	uint64_t delay = conn->cfg.retry_delay_ms;

	conn->attempts++;
	conn->total_attempts++;
	RIFT_INFO(ctx, "session %016llx: %s attempt %u failed: %s",
		  (unsigned long long)conn->session_id,
		  conn->state == RIFT_CONN_CONNECTING ? "connect" : "re-attach",
		  conn->total_attempts, conn->last_error);
	if (conn->state == RIFT_CONN_CONNECTING) {
		if (conn->attempts > conn->cfg.retries) {
			conn->attempts = 0;
			conn->addr_idx++;
			delay = 0;
		}
		if (conn->addr_idx >= conn->n_addrs &&
		    fall_back(conn, conn->setup_fb != RIFT_FALLBACK_NONE
					    ? conn->setup_fb
					    : RIFT_FALLBACK_TIMEOUT))
			return;
		if (conn->addr_idx >= conn->n_addrs) {
			char msg[RIFT_ERRMSG_LEN];

			snprintf(msg, sizeof(msg), "%s (%u attempts)",
				 conn->last_error, conn->total_attempts);
			memcpy(conn->last_error, msg, sizeof(msg));
			rift__conn_die(conn, RIFT_EVENT_ERROR, err);
			return;
		}
	} else {
		/* Re-attaching: rotate through every address until grace ends. */
		uint64_t elapsed = ctx->now_us - conn->detached_us;

		if (elapsed >= (uint64_t)conn->cfg.session_grace_ms * 1000u) {
			grace_expired(&conn->retry_timer, conn);
			return;
		}
		conn->addr_idx = (conn->addr_idx + 1) % conn->n_addrs;
		/* Every RDMA address failed once: a live auto:// session
		 * moves to TCP rather than wait out its grace on RDMA. */
		if (conn->addr_idx == 0 &&
		    fall_back(conn, RIFT_FALLBACK_PATH_LOST))
			return;
		if (conn->addr_idx != 0)
			delay = 0;
	}
	rift_timer_start(&conn->retry_timer, delay, 0);
}

/*
 * A client attempt to address idx failed before the transport connected.
 * No answer at all (its bound ran out) may mean the way it was set up
 * is what is broken, not the address (rdma_connect_alt_op): the next
 * attempt there goes the other way, and back again after a silence that
 * way.  The other way failing for any other reason (a peer that does not
 * take it) ends its use there.  (One that connects keeps it:
 * rift__path_connected.)
 */
static void boot_learn(rift_conn *conn, const rift__path *p, unsigned idx,
		       int err)
{
	uint32_t bit = 1u << idx;

	if (!rift__conn_alt(conn) || p->state != RIFT_PATH_CONNECTING)
		return;
	if (err == RIFT_ETIMEDOUT && !p->alt)
		conn->alt_addrs |= bit;
	else if (p->alt)
		conn->alt_addrs &= ~bit;
}

static void path_lost(rift_conn *conn, rift__path *p, int err)
{
	rift_ctx *ctx = conn->ctx;

	if (p->standby && !p->promoted) {
		/* What its setup learnt counts for the address: a standby
		 * whose rdma_cm got no answer goes the other way next. */
		boot_learn(conn, p, p->addr_idx, err);
		rift__group_standby_lost(conn, p, err);
		return;
	}
	if (conn->is_client && (p == conn->racer || p == conn->path))
		boot_learn(conn, p, p == conn->racer ? conn->racer_idx
						     : conn->addr_idx, err);

	if (p == conn->racer) {
		/* The racing attempt failed: the other one goes on. */
		RIFT_DEBUG(ctx, "%s: racing attempt failed", p->peer);
		drop_racer(conn);
		return;
	}
	/* The session is ending already (a close ending, the peer's CLOSE
	 * being answered: close.c): only the path goes. */
	if ((conn->closing && !conn->lingering) ||
	    (conn->close_rcvd && !conn->closing)) {
		rift__conn_abandon_path(conn);
		return;
	}
	/* Our CLOSE left on it with everything acknowledged: the peer hung
	 * up after reading it, or nothing is left to re-attach for; or an
	 * abort waited for it (close.c). */
	if (conn->lingering && (conn->close_sent || conn->aborting) &&
	    p->state == RIFT_PATH_ATTACHED) {
		rift__conn_close_hangup(conn);
		return;
	}
	if (p->state != RIFT_PATH_ATTACHED || conn->state != RIFT_CONN_ESTABLISHED) {
		/* A client attempt (connecting or handshaking) failed. */
		if (conn->racer && err != RIFT_EPROTO && err != RIFT_ESESSION) {
			/* The attempt racing it goes on in its place. */
			racer_wins(conn);
			return;
		}
		rift__conn_abandon_path(conn);
		/* A failback's RESUME failed: the session is detached now,
		 * as after a failover. */
		if (p->promoted && rift__group_failback_failed(conn, err) &&
		    conn->state != RIFT_CONN_DETACHED)
			return; /* closed from the callback */
		if (err == RIFT_EPROTO || err == RIFT_ESESSION) {
			rift__conn_die(conn, conn->state == RIFT_CONN_CONNECTING
					       ? RIFT_EVENT_ERROR
					       : RIFT_EVENT_DISCONNECTED,
				 err);
			return;
		}
		rift__conn_attempt_failed(conn, err);
		return;
	}
	rift__conn_abandon_path(conn);
	if (err == RIFT_EPROTO || err == RIFT_EOF || err == RIFT_ESESSION) {
		/* The peer broke the protocol or ended the session. */
		rift__conn_die(conn, RIFT_EVENT_DISCONNECTED, err == RIFT_EOF ? 0 : err);
		return;
	}
	RIFT_WARN(ctx, "session %016llx: path down: %s: %s; %s %u ms",
		  (unsigned long long)conn->session_id, rift_err_name(err),
		  conn->last_error,
		  conn->is_client ? "re-attaching, grace"
				  : "waiting for the client to re-attach,",
		  ctx->cfg.session_grace_ms);
	conn->state = RIFT_CONN_DETACHED;
	conn->transport = RIFT_TRANSPORT_NONE;
	conn->detached_us = ctx->now_us;
	rift__conn_quiet(conn, true);
	rift__metrics_path_down(conn);
	rift__conn_emit(conn, RIFT_EVENT_PATH_DOWN, err, conn->last_error);
	if (conn->state != RIFT_CONN_DETACHED)
		return; /* closed from the callback */
	if (conn->is_client) {
		/* A joined standby first: no connection to set up. */
		if (rift__group_promote(conn))
			return;
		/* Start with the next address: the one whose path just broke
		 * is the least likely to work now (another port, another
		 * link), and the rotation comes back to it. */
		conn->attempts = 0;
		conn->addr_idx = (conn->addr_idx + 1) % conn->n_addrs;
		rift_timer_start(&conn->retry_timer, 0, 0);
	} else {
		conn->retry_timer.cb = grace_expired;
		rift_timer_start(&conn->retry_timer, conn->cfg.session_grace_ms, 0);
	}
}

uint64_t rift__conn_setup_bound(const rift_conn *conn, uint64_t floor_ms,
				unsigned doublings)
{
	uint64_t limit = conn->cfg.connect_timeout_ms, rto;

	if (!conn->setup_srtt_us)
		return limit;
	rto = (conn->setup_srtt_us + 4 * conn->setup_var_us) / 1000u;
	if (rto < floor_ms)
		rto = floor_ms;
	rto <<= doublings < 16 ? doublings : 16;
	return rto < limit ? rto : limit;
}

uint64_t rift__conn_attempt_limit(const rift_conn *conn)
{
	if (conn->state != RIFT_CONN_DETACHED)
		return conn->cfg.connect_timeout_ms;
	return rift__conn_setup_bound(conn, RIFT_REATTACH_MIN_MS,
				      conn->timeouts);
}

void rift__path_handshake_timeout(rift_timer *t, void *user)
{
	rift__path *p = user;

	RIFT_UNUSED(t);
	/* A re-attach's bound doubles per attempt that timed out; a
	 * standby's setup is no attempt of the session's: its own bound
	 * doubles per timeout through its address. */
	if (p->conn && p->conn->is_client && !p->standby)
		p->conn->timeouts++;
	else if (p->conn && p->standby && !p->promoted &&
		 p->addr_idx < RIFT_ARRAY_SIZE(p->conn->addr_down) &&
		 p->conn->addr_down[p->addr_idx].standby_timeouts < UINT8_MAX)
		p->conn->addr_down[p->addr_idx].standby_timeouts++;
	if (p->promoted)
		rift__path_failed(p, RIFT_ETIMEDOUT,
				  "standby path did not answer the RESUME "
				  "within %u ms (this session's measured setup "
				  "time, at least %u ms): re-attaching by a new "
				  "connection",
				  p->limit_ms, RIFT_PROMOTE_MIN_MS);
	else if (p->limit_ms < p->cfg->connect_timeout_ms)
		rift__path_failed(p, RIFT_ETIMEDOUT,
				  "handshake not completed within %u ms (%s "
				  "bound: this session's measured setup time, "
				  "doubled per attempt that timed out, at most "
				  "connect_timeout_ms %u ms)",
				  p->limit_ms,
				  p->standby ? "a standby setup's"
					     : "a re-attach attempt's",
				  p->cfg->connect_timeout_ms);
	else
		rift__path_failed(p, RIFT_ETIMEDOUT,
				  "handshake not completed within "
				  "connect_timeout_ms (%u ms)",
				  p->limit_ms);
}

/* A path's down reason from its error code, where nothing said more. */
static rift_path_down_reason down_reason_of(int err)
{
	switch (err) {
	case RIFT_ENETDOWN:
		return RIFT_PATH_DOWN_PORT;
	case RIFT_ENODEV:
	case RIFT_EIO:
		return RIFT_PATH_DOWN_DEVICE;
	case RIFT_ETIMEDOUT:
		return RIFT_PATH_DOWN_TIMEOUT;
	case RIFT_ECONNRESET:
	case RIFT_ECONNREFUSED:
	case RIFT_ECONNABORTED:
	case RIFT_EPIPE:
	case RIFT_EOF:
	case RIFT_ESESSION:
	case RIFT_EPROTO:
		return RIFT_PATH_DOWN_PEER;
	case RIFT_ENOMEM:
	case RIFT_ECANCELED:
	case RIFT_EINVAL:
	case RIFT_ECLOSED:
		return RIFT_PATH_DOWN_LOCAL;
	default:
		return RIFT_PATH_DOWN_NETWORK;
	}
}

struct rift__addr_down *rift__conn_addr_failed(rift_conn *conn, unsigned idx,
					       int status, const char *fmt, ...)
{
	struct rift__addr_down *d;
	va_list ap;

	if (!conn->is_client || idx >= conn->n_addrs)
		return NULL;
	d = &conn->addr_down[idx];
	d->status = status;
	d->reason = (uint8_t)down_reason_of(status);
	d->at_us = conn->ctx->now_us;
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
	return d;
}

static void path_failed_v(rift__path *p, rift_path_down_reason why, int err,
			  const char *fmt, va_list ap)
{
	rift_conn *conn = p->conn;
	struct rift__addr_down *d;
	char msg[RIFT_ERRMSG_LEN];

	if (p->state == RIFT_PATH_DEAD)
		return;
	if (why == RIFT_PATH_DOWN_NONE)
		why = down_reason_of(err);
	p->down_why = (uint8_t)why;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	RIFT_DEBUG(p->ctx, "%s: path failed: %s: %s", p->peer,
		   rift_err_name(err), msg);
	if (err == RIFT_EPROTO)
		p->ctx->stats.protocol_errors++;
	if (!conn) {
		/* A server's handshake path: nobody else to tell.  A peer
		 * refused is worth a warning, one that never finished its
		 * handshake a note; one that went before it (a racing
		 * attempt that lost, a probe) is detail. */
		if (err == RIFT_EPROTO || err == RIFT_ESESSION ||
		    err == RIFT_ECONNREFUSED || err == RIFT_ENOMEM)
			RIFT_WARN(p->ctx, "%s: handshake refused: %s: %s",
				  p->peer, rift_err_name(err), msg);
		else if (err == RIFT_ETIMEDOUT)
			RIFT_INFO(p->ctx, "%s: handshake failed: %s: %s",
				  p->peer, rift_err_name(err), msg);
		rift__path_kill(p);
		return;
	}
	/* A standby's failure is its own (rift_conn_paths, the log): the
	 * session's last error stays what happened to its data. */
	if (!p->standby || p->promoted) {
		snprintf(conn->last_error, sizeof(conn->last_error), "%s: %s",
			 p->peer, msg);
		conn->down_why = (uint8_t)why;
	}
	/* A try of auto://'s preferred transport failing says nothing of
	 * the address the session runs through. */
	d = rift__path_returning(p)
		    ? NULL
		    : rift__conn_addr_failed(conn, p->addr_idx, err, "%s", msg);
	if (d)
		d->reason = (uint8_t)why;
	else if (rift__path_returning(p))
		snprintf(conn->return_why, sizeof(conn->return_why), "%s", msg);
	if (p->fb_reason != RIFT_FALLBACK_NONE)
		conn->setup_fb = p->fb_reason;
	path_lost(conn, p, err);
}

void rift__path_failed(rift__path *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	path_failed_v(p, RIFT_PATH_DOWN_NONE, err, fmt, ap);
	va_end(ap);
}

void rift__path_failed_why(rift__path *p, rift_path_down_reason why, int err,
			   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	path_failed_v(p, why, err, fmt, ap);
	va_end(ap);
}

#ifdef RIFT_FAULT_INJECTION
/* RIFT_FAULT_JOIN_SLOW: the held JOIN goes now, bounded as it was. */
static void join_late(rift_timer *t, void *user)
{
	rift__path *p = user;

	RIFT_UNUSED(t);
	p->timer.cb = rift__path_handshake_timeout;
	rift_timer_start(&p->timer, p->limit_ms, 0);
	p->pending |= RIFT_PEND_JOIN;
	rift__path_kick(p);
}
#endif

void rift__path_connected(rift__path *p)
{
	rift_conn *conn = p->conn;

	if (p->standby) {
		p->state = RIFT_PATH_HANDSHAKE;
#ifdef RIFT_FAULT_INJECTION
		if (rift__fault_hit(RIFT_FAULT_JOIN_SLOW)) {
			p->timer.cb = join_late;
			rift_timer_start(&p->timer, 200, 0);
			return;
		}
#endif
		p->pending |= RIFT_PEND_JOIN;
		rift__path_kick(p);
		return;
	}

	/* The other way reached an address: keep to it there. */
	if (p->alt)
		conn->alt_addrs |= 1u << (p == conn->racer ? conn->racer_idx
							   : conn->addr_idx);
	/* Racing attempts: the first to connect carries the handshake. */
	if (p == conn->racer) {
		RIFT_DEBUG(p->ctx, "%s: connected first; %s dropped", p->peer,
			   conn->path ? conn->path->peer : "-");
		racer_wins(conn);
	}
	drop_racer(conn);

	p->state = RIFT_PATH_HANDSHAKE;
	p->pending |= conn->state == RIFT_CONN_CONNECTING ? RIFT_PEND_HELLO
							  : RIFT_PEND_RESUME;
	rift__path_kick(p);
}

