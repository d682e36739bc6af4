/*
 * group.c - port groups, active-backup (docs/design/port-groups.md, step
 * 3a): a client connection keeps standby paths through the URL's other
 * addresses, set up and joined to its session ahead of need, so that a
 * failover resumes the session on one of them without setting up a
 * connection (the 30-250 ms a re-attach spends in the lab).
 *
 * A standby joins with a JOIN frame (session/wire.h): the hello's fields,
 * its path id, and a tag under the session key over an attach counter
 * it shares with RESUME, which the server takes once (its last 64 are
 * kept: a JOIN and a RESUME sent on different paths may arrive in either
 * order).  Joined, it carries keepalives only (RIFT_PATH_STANDBY: the
 * transports' data pulls skip it), on both sides.  When the data path
 * fails, the client sends RESUME on a joined standby: the server checks
 * it as it checks any RESUME, abandons the old path and rewinds, as a
 * re-attach does; one round trip, and ack <= what was written on the new
 * path holds as ever (zero-copy buffers stay safe).  A standby that
 * fails goes quietly and is set up again later; the session goes on.
 */
#include <stdio.h>
#include <string.h>

#include "session/session.h"

uint32_t rift__group_caps(const rift_conn *conn)
{
	/* A server takes JOINs for any session; a client asks for them
	 * when it keeps more than one path. */
	/* Both take data out of order on joined paths; a client asks its
	 * server to spread its data over them as it does (active-active:
	 * session/spread.c). */
	if (conn->is_client && conn->cfg.group_max_paths < 2)
		return 0;
	return RIFT_CAP_GROUP | RIFT_CAP_REORDER |
	       (conn->is_client &&
				conn->cfg.group_policy == RIFT_POLICY_ACTIVE_ACTIVE
			? RIFT_CAP_SPREAD
			: 0);
}

bool rift__group_negotiated(const rift_conn *conn)
{
	return (rift__group_caps(conn) & conn->peer_caps & RIFT_CAP_GROUP) != 0;
}

static uint64_t return_delay(const rift_conn *conn);
static void returned(rift_conn *conn);

void rift__group_attached(rift_conn *conn)
{
	if (conn->is_client && conn->n_addrs > 1 &&
	    rift__group_negotiated(conn) && conn->group_timer.cb) {
		rift_timer_start(&conn->group_timer, 0, 0);
		rift_timer_start(&conn->failback_timer, 0, 0);
	}
	if (rift__group_may_return(conn) &&
	    !rift__timer_active(&conn->return_timer))
		rift_timer_start(&conn->return_timer, return_delay(conn), 0);
}

bool rift__group_standby_del(rift_conn *conn, rift__path *p)
{
	if (!conn)
		return false;
	for (unsigned i = 0; i < conn->n_standby; i++)
		if (conn->standby[i] == p) {
			conn->standby[i] = conn->standby[--conn->n_standby];
			conn->standby[conn->n_standby] = NULL;
			return true;
		}
	return false;
}

void rift__group_end(rift_conn *conn)
{
	rift_timer_stop(&conn->group_timer);
	rift_timer_stop(&conn->failback_timer);
	rift_timer_stop(&conn->return_timer);
	conn->failing_back = false;
	while (conn->n_standby) {
		rift__path *p = conn->standby[--conn->n_standby];

		conn->standby[conn->n_standby] = NULL;
		rift__path_release(p);
	}
}

/*
 * Standby setups back off per address.  A dead address (its link down,
 * its host gone, nothing listening) failed every setup, and a new one
 * started every RIFT_STANDBY_RETRY_MS for as long as that went on: a
 * connection attempt (over verbs an rdma_cm exchange, a QP and its
 * buffers) every second, for nothing.  So the wait doubles per setup
 * that fails there before it joined, once RIFT_STANDBY_QUICK_TRIES failed
 * in a row (those wait RIFT_STANDBY_RETRY_MS: an outage of a few seconds,
 * the lab soaks' faults, must not leave the session without a standby
 * for longer), up to RIFT_STANDBY_RETRY_MAX_MS.  A standby
 * that joined and was lost later (its link flapped) is replaced after
 * RIFT_STANDBY_RETRY_MS, the count starting again: at most one setup a
 * second per address, and the failback's own hysteresis
 * (failback_delay_ms) keeps the data off such a link.  A data path lost
 * through an address is no standby's failure: a standby opens there at
 * once, for the failback.
 */
void rift__group_standby_failed(rift_conn *conn, unsigned idx, bool joined)
{
	struct rift__addr_down *d;
	uint64_t wait;

	if (idx >= conn->n_addrs)
		return;
	d = &conn->addr_down[idx];
	if (joined)
		d->standby_fails = 0;
	if (d->standby_fails < 16)
		d->standby_fails++;
	wait = d->standby_fails <= RIFT_STANDBY_QUICK_TRIES
		       ? RIFT_STANDBY_RETRY_MS
		       : (uint64_t)RIFT_STANDBY_RETRY_MS
				 << (d->standby_fails - RIFT_STANDBY_QUICK_TRIES);
	if (wait > RIFT_STANDBY_RETRY_MAX_MS)
		wait = RIFT_STANDBY_RETRY_MAX_MS;
	d->standby_next_us = conn->ctx->now_us + wait * 1000u;
}

uint64_t rift__group_standby_wait(const rift_conn *conn, unsigned idx)
{
	uint64_t next, now = conn->ctx->now_us;

	if (idx >= conn->n_addrs)
		return 0;
	next = conn->addr_down[idx].standby_next_us;
	return next > now ? (next - now + 999u) / 1000u : 0;
}

void rift__group_standby_lost(rift_conn *conn, rift__path *p, int err)
{
	char why[RIFT_ERRMSG_LEN];
	uint64_t wait;

	rift__group_standby_del(conn, p);
	if (rift__path_returning(p)) {
		snprintf(why, sizeof(why), "%s: %s", p->peer,
			 conn->return_why[0] ? conn->return_why
					     : rift_err_name(err));
		if (p->up_us && conn->state != RIFT_CONN_DEAD)
			rift__conn_emit_standby(conn, RIFT_EVENT_PATH_DOWN,
						err, why, p);
		rift__path_release(p);
		rift__group_return_failed(conn, why);
		return;
	}
	if (p->slot)
		rift__spread_tell_down(conn, p);
	rift__group_standby_failed(conn, p->addr_idx, p->up_us != 0);
	wait = rift__group_standby_wait(conn, p->addr_idx);
	RIFT_INFO(conn->ctx,
		  "session %016llx: standby path %s lost: %s: %s; another in "
		  "%llu ms",
		  (unsigned long long)conn->session_id, p->peer,
		  rift_err_name(err),
		  p->addr_idx < conn->n_addrs ? conn->addr_down[p->addr_idx].why
					      : "",
		  (unsigned long long)wait);
	/* One that had joined was up for the application (PATH_UP). */
	if (p->up_us && conn->state != RIFT_CONN_DEAD) {
		snprintf(why, sizeof(why), "standby path lost: %s",
			 p->addr_idx < conn->n_addrs
				 ? conn->addr_down[p->addr_idx].why
				 : rift_err_name(err));
		rift__conn_emit_standby(conn, RIFT_EVENT_PATH_DOWN, err, why,
					p);
	}
	rift__path_release(p);
	if (conn->state == RIFT_CONN_ESTABLISHED && conn->group_timer.cb)
		rift__group_timer_within(conn, wait);
}

/*
 * A link came back: a setup through an address that backed off meanwhile
 * (the wait doubles up to RIFT_STANDBY_RETRY_MAX_MS, 30 s, for a link
 * down that long) goes within after_ms, and its count of failures goes
 * back to the quick tries, so that one failing while the link settles
 * (neighbour, GID) waits seconds, not the old backoff.  For every address
 * of every client session: which addresses the link reaches is the
 * route's business, and a setup that cannot work fails at once.  A
 * flapping port costs one setup per up event at most; the failback's
 * hysteresis keeps the data off it.  (SMC-R adds a link on a port's
 * return, smcr_port_add; NCCL re-probes a recovered port.)
 */
void rift__group_links_changed(rift_ctx *ctx, uint64_t after_ms)
{
	uint64_t at = ctx->now_us + after_ms * 1000u;

	for (struct rift__list *it = ctx->conns.next; it != &ctx->conns;
	     it = it->next) {
		rift_conn *conn = rift__list_entry(it, rift_conn, node);
		bool any = false;

		if (!conn->is_client || conn->state != RIFT_CONN_ESTABLISHED)
			continue;
		for (unsigned i = 0; i < conn->n_addrs; i++) {
			struct rift__addr_down *d = &conn->addr_down[i];

			if (d->standby_next_us <= at)
				continue;
			d->standby_next_us = at;
			if (d->standby_fails > RIFT_STANDBY_QUICK_TRIES)
				d->standby_fails = RIFT_STANDBY_QUICK_TRIES;
			any = true;
		}
		if (any && conn->group_timer.cb)
			rift__group_timer_within(conn, after_ms);
		if (rift__group_may_return(conn) &&
		    rift__timer_active(&conn->return_timer) &&
		    conn->return_timer.due_us > at)
			rift_timer_start(&conn->return_timer, after_ms, 0);
	}
}

void rift__group_timer_within(rift_conn *conn, uint64_t ms)
{
	rift_timer *t = &conn->group_timer;

	if (!rift__timer_active(t) ||
	    t->due_us > conn->ctx->now_us + ms * 1000u)
		rift_timer_start(t, ms, 0);
}

/* Refuse a JOIN: an ERROR on its path alone, the session untouched;
 * counted as a refused RESUME is. */
static int join_refuse(rift__path *p, const char *why)
{
	p->ctx->stats.resumes_refused++;
	p->ctx->stats.protocol_errors++;
	rift__path_reject(p, RIFT_ESESSION, why);
	return RIFT_EPROTO;
}

int rift__group_join(rift__path *p, const struct rift__hdr *h,
		     const uint8_t *payload)
{
	struct rift__join j;
	const char *why = NULL;
	rift_conn *conn;

	if (rift__join_decode(payload, h->len, &j, &why))
		return rift__path_reject(p, RIFT_EPROTO, why);
	conn = rift__sessions_find(p->ctx, p->lst ? p->lst->serial : 0,
				   j.hello.session_id);
	/* Everything is checked before the session is touched. */
	if (!conn)
		return join_refuse(p, "JOIN for an unknown session");
	if (!rift__hello_proves(payload, RIFT_FRAME_JOIN, RIFT_JOIN_AUTH_AT,
				conn->key))
		return join_refuse(p, "JOIN without the session's proof");
	if (!rift__group_negotiated(conn))
		return join_refuse(p, "JOIN for a session without port groups");
	if (!rift__replay_check(&conn->attach_win, j.hello.attach))
		return join_refuse(p, "JOIN replayed (attach counter already "
				      "used)");
	if (conn->state == RIFT_CONN_DEAD || conn->closing ||
	    conn->n_standby == RIFT_ARRAY_SIZE(conn->standby))
		return join_refuse(p, "JOIN for a session that takes no more "
				      "paths");
	rift__replay_check_and_set(&conn->attach_win, j.hello.attach, &why);
	p->conn = conn;
	p->standby = true;
	p->gid = j.path_id;
	p->attach = j.hello.attach;
	p->state = RIFT_PATH_STANDBY;
	p->up_us = p->ctx->now_us;
	conn->standby[conn->n_standby++] = p;
	if (p->ops == conn->ops)
		rift__spread_carrier_add(conn, p);
	rift__path_keepalive_start(p);
	rift__rma_path_joined(conn, p);
	/* The data path now has somewhere to go: it watches its sends. */
	if (conn->path && conn->path->state == RIFT_PATH_ATTACHED)
		rift__path_keepalive_retick(conn->path);
	p->pending |= RIFT_PEND_JOIN_ACK;
	rift__path_kick(p);
	RIFT_INFO(p->ctx, "session %016llx: standby path %u joined from %s",
		  (unsigned long long)conn->session_id, j.path_id, p->peer);
	rift__conn_emit_standby(conn, RIFT_EVENT_PATH_UP, 0,
				"standby path joined", p);
	return p->state == RIFT_PATH_DEAD ? RIFT_ECLOSED : 0;
}

size_t rift__group_join_encode(rift__path *p, uint8_t type, uint8_t *out)
{
	rift_conn *conn = p->conn;
	struct rift__join j;

	memset(&j, 0, sizeof(j));
	rift__hello_fill(p, type, &j.hello);
	j.path_id = p->gid;
	j.role_req = RIFT_JOIN_STANDBY;
	rift__join_encode(out, &j);
	rift__hello_seal(out, type, RIFT_JOIN_AUTH_AT, conn->key);
	return RIFT_JOIN_SIZE;
}

int rift__group_handshake(rift__path *p, const struct rift__hdr *h,
			  const uint8_t *payload)
{
	rift_conn *conn = p->conn;
	struct rift__error_frame ef;
	struct rift__join j;
	const char *why = NULL;

	if (h->type == RIFT_FRAME_ERROR) {
		if (rift__error_decode(payload, h->len, &ef, &why))
			return rift__path_reject(p, RIFT_EPROTO, why);
		rift__path_failed(p, RIFT_ECONNREFUSED, "peer refused: %s",
				  ef.text);
		return RIFT_ECLOSED;
	}
	if (h->type != RIFT_FRAME_JOIN_ACK)
		return rift__path_reject(p, RIFT_EPROTO, "expected JOIN_ACK");
	if (rift__join_decode(payload, h->len, &j, &why))
		return rift__path_reject(p, RIFT_EPROTO, why);
	/* Only the server that holds the key answers, for this JOIN. */
	if (j.hello.session_id != conn->session_id ||
	    !rift__hello_proves(payload, RIFT_FRAME_JOIN_ACK,
				RIFT_JOIN_AUTH_AT, conn->key) ||
	    j.hello.attach != p->attach || j.path_id != p->gid)
		return rift__path_reject(p, RIFT_EACCES,
					 "JOIN_ACK without the session's proof");
	p->state = RIFT_PATH_STANDBY;
	p->up_us = p->ctx->now_us;
	if (p->ops == conn->ops)
		rift__spread_carrier_add(conn, p);
	if (p->addr_idx < conn->n_addrs) {
		conn->addr_down[p->addr_idx].status = 0;
		conn->addr_down[p->addr_idx].standby_timeouts = 0;
	}
	rift__path_keepalive_start(p);
	rift__rma_path_joined(conn, p);
	RIFT_INFO(p->ctx, "session %016llx: standby path %u to %s joined",
		  (unsigned long long)conn->session_id, p->gid, p->peer);
	/* Through an address the client prefers: failback is due later. */
	rift_timer_start(&conn->failback_timer, 0, 0);
	rift__conn_emit_standby(conn, RIFT_EVENT_PATH_UP, 0,
				"standby path joined", p);
	return p->state == RIFT_PATH_DEAD ? RIFT_ECLOSED : 0;
}

int rift__group_standby_frame(rift__path *p, const struct rift__hdr *h,
			      const uint8_t *payload)
{
	struct rift__error_frame ef;
	const char *why = NULL;
	char msg[96];

	switch (h->type) {
	case RIFT_FRAME_PING:
		return 0; /* alive; its ack is the data path's business */
	case RIFT_FRAME_PROBE:
		/* Answered on the same path: the round trip is the proof. */
		p->probe_echo = h->seq;
		p->pending |= RIFT_PEND_PROBE_ACK;
		rift__path_kick(p);
		return 0;
	case RIFT_FRAME_PROBE_ACK:
		/* An answer to an older probe proves nothing now. */
		if (p->probe_nonce && h->seq == p->probe_nonce &&
		    !p->probe_ok_us) {
			p->probe_ok_us = p->ctx->now_us;
			if (p->conn && p->conn->is_client)
				rift_timer_start(&p->conn->failback_timer, 0,
						 0);
		}
		return 0;
	case RIFT_FRAME_ERROR:
		if (rift__error_decode(payload, h->len, &ef, &why))
			return rift__path_reject(p, RIFT_EPROTO, why);
		rift__path_failed(p, RIFT_ECONNRESET, "peer refused: %s",
				  ef.text);
		return RIFT_ECLOSED;
	default:
		snprintf(msg, sizeof(msg), "%s on a standby path",
			 rift__frame_name(h->type));
		return rift__path_reject(p, RIFT_EPROTO, msg);
	}
}

/*
 * A standby's setup may begin on a link that drops what it is given (it
 * replaces one lost a moment ago).  One that waited connect_timeout_ms
 * (3 s) for a lost connection request left the session without a live
 * standby that long, and a data path that stalled meanwhile had nowhere
 * to go (a lab soak: 2.3 s).  So it is bounded as a re-attach attempt
 * is.
 */
uint64_t rift__group_standby_limit(const rift_conn *conn, unsigned idx)
{
	return rift__conn_setup_bound(conn, RIFT_REATTACH_MIN_MS,
				      idx < RIFT_ARRAY_SIZE(conn->addr_down)
					      ? conn->addr_down[idx]
							.standby_timeouts
					      : 0);
}

/*
 * How long a RESUME on a joined standby may go unanswered.  The standby's
 * link may have died since its last keepalive (both links fail at
 * random, keepalive_timeout_ms is seconds): a RESUME there must not hold
 * the session for connect_timeout_ms while a new connection through a
 * live address would attach.  One round trip on a path set up already
 * takes less than setting up a path does, so the bound is the session's
 * measured setup time (its mean plus four deviations, as a re-attach
 * attempt's, without that bound's one-second floor), at least
 * RIFT_PROMOTE_MIN_MS, at most connect_timeout_ms.  Then the session
 * re-attaches as it would without a standby.
 */
uint64_t rift__group_resume_limit(const rift_conn *conn)
{
	return rift__conn_setup_bound(conn, RIFT_PROMOTE_MIN_MS, 0);
}

/* p answered within two keepalive intervals. */
static bool answering(const rift_conn *conn, const rift__path *p)
{
	return conn->ctx->now_us - p->last_rx_us <=
	       (uint64_t)conn->cfg.keepalive_interval_ms * 2000u;
}

/* A joined standby that answers. */
static bool standby_alive(const rift_conn *conn, const rift__path *p)
{
	return p->state == RIFT_PATH_STANDBY && answering(conn, p);
}

/* The client resumes its session on the joined standby p: a RESUME, one
 * round trip, bounded by rift__group_resume_limit. */
static void promote(rift_conn *conn, rift__path *p)
{
	rift__group_standby_del(conn, p);
	p->promoted = true;
	p->state = RIFT_PATH_HANDSHAKE;
	p->limit_ms = (uint32_t)rift__group_resume_limit(conn);
	p->timer.cb = rift__path_handshake_timeout;
	rift_timer_start(&p->timer, p->limit_ms, 0);
	conn->path = p;
	conn->addr_idx = p->addr_idx;
	conn->attempt_us = conn->ctx->now_us;
	p->pending |= RIFT_PEND_RESUME;
	rift__path_kick(p);
}

bool rift__group_promote(rift_conn *conn)
{
	rift__path *p = NULL;

	for (unsigned i = 0; i < conn->n_standby && !p; i++)
		if (conn->standby[i]->state == RIFT_PATH_STANDBY)
			p = conn->standby[i];
	if (!p)
		return false;
	RIFT_INFO(conn->ctx, "session %016llx: resuming on standby path %s",
		  (unsigned long long)conn->session_id, p->peer);
	promote(conn, p);
	return true;
}

/*
 * ---- failback ----
 * Active-backup prefers the URL's earlier addresses, as connecting does.
 * After a failover the data path goes through a later one, and a new
 * standby opens through the address that was lost.  Once that standby
 * has stayed joined group.failback_delay_ms, answering its keepalives
 * (a port that flaps loses it, and the count starts again with the next
 * one: link-up comes before a working datapath, NCCL and Mooncake probe
 * for that reason), it is probed: a PROBE, which the peer answers on the
 * same path.  Its keepalives show only the peer's direction working; a
 * link that dropped frames a moment ago may still hold ours back for
 * the transport's retransmission (rxe waits its ack timeout, and can
 * leave a queue stuck after one), and a RESUME sent there went
 * unanswered, the old path gone, the session re-attaching by a new
 * connection (the lab's soaks: 100-520 ms on the server's side, one
 * failback in three after a loss).  Unanswered within the bound of a
 * RESUME (rift__group_resume_limit), the failback waits: the standby's
 * time up starts again (failbacks_deferred).  Answered, the
 * session moves back to it at once: the client stops writing on its data path,
 * sends RESUME on the standby, and the server takes it as any RESUME
 * (it abandons the old path and rewinds to what each side holds).  The
 * old path goes at once, as in a failover: a path kept to the answer
 * would still complete sends whose buffers the rewind and the acks that
 * follow free (zero-copy buffers are safe because ack <= what the one
 * live path wrote).  What it still held the rewind sends again.  The
 * server sees the old path end before or after the RESUME (PATH_DOWN
 * then PATH_CHANGED, or PATH_CHANGED alone); nothing is lost, doubled or
 * reordered, and the client's application sees FAILBACK alone.  A
 * RESUME that fails there ends it in a PATH_DOWN and a re-attach, as a
 * failover.
 */

/* How much the client prefers a path: its transport first (auto://'s
 * preferred one before its fallback), then the earlier URL address. */
static unsigned rank(const rift_conn *conn, const rift__path *p)
{
	return (p->ops == conn->pref_ops ? 0u : 1u) << 8 | p->addr_idx;
}

/* The joined standby the client prefers most, if it prefers it to the
 * data path and may move there (a failback to an earlier address with
 * failback_delay_ms, a return to the preferred transport with
 * fallback_return_ms), or NULL. */
static rift__path *preferred_standby(const rift_conn *conn)
{
	rift__path *best = NULL;

	if (!conn->path || conn->path->state != RIFT_PATH_ATTACHED)
		return NULL;
	for (unsigned i = 0; i < conn->n_standby; i++) {
		rift__path *p = conn->standby[i];
		bool returning = p->ops != conn->path->ops;

		/* active-active: a standby of the session's transport
		 * carries data already (session/spread.c). */
		if (p->state != RIFT_PATH_STANDBY ||
		    (conn->spread && !returning) ||
		    rank(conn, p) >= rank(conn, conn->path) ||
		    !(returning ? conn->cfg.fallback_return_ms
				: conn->cfg.group_failback_delay_ms))
			continue;
		if (!best || rank(conn, p) < rank(conn, best))
			best = p;
	}
	return best;
}

/* Whether the standby p answered a PROBE lately; if not, one is sent
 * (the timer comes back with the answer or at the bound), or the one
 * out went unanswered and the failback waits. */
static bool probed(rift_conn *conn, rift__path *p)
{
	uint64_t limit_us = rift__group_resume_limit(conn) * 1000u;
	uint64_t now = conn->ctx->now_us, waited = now - p->probe_sent_us;

	if (p->probe_nonce && p->probe_ok_us &&
	    now - p->probe_ok_us <= limit_us)
		return true;
	if (p->probe_nonce && !p->probe_ok_us && waited < limit_us) {
		rift_timer_start(&conn->failback_timer,
				 (limit_us - waited + 999u) / 1000u, 0);
		return false;
	}
	if (p->probe_nonce && !p->probe_ok_us) {
		RIFT_INFO(conn->ctx,
			  "session %016llx: standby path %s did not "
			  "answer a probe within %llu ms: failback "
			  "waits %u ms more",
			  (unsigned long long)conn->session_id, p->peer,
			  (unsigned long long)(waited / 1000u),
			  conn->cfg.group_failback_delay_ms);
		conn->ctx->stats.failbacks_deferred++;
		p->probe_nonce = 0;
		p->up_us = now;
		rift_timer_start(&conn->failback_timer,
				 conn->cfg.group_failback_delay_ms, 0);
		return false;
	}
	p->probe_nonce = ++conn->probe_seq;
	p->probe_sent_us = now;
	p->probe_ok_us = 0;
	p->pending |= RIFT_PEND_PROBE;
	rift__path_kick(p);
	rift_timer_start(&conn->failback_timer, limit_us / 1000u, 0);
	return false;
}

static void failback(rift_conn *conn, rift__path *p, uint64_t up_ms)
{
	rift__path *old = conn->path;
	rift_ctx *ctx = conn->ctx;

	RIFT_INFO(ctx, "session %016llx: failing back from %s to %s (its "
		       "standby stayed up %llu ms)",
		  (unsigned long long)conn->session_id, old->peer, p->peer,
		  (unsigned long long)up_ms);
	rift__conn_abandon_path(conn);
	conn->failing_back = true;
	conn->state = RIFT_CONN_DETACHED;
	conn->transport = RIFT_TRANSPORT_NONE;
	conn->detached_us = ctx->now_us;
	rift__conn_quiet(conn, true);
	promote(conn, p);
}

void rift__group_failback_timer(rift_timer *t, void *user)
{
	rift_conn *conn = user;
	uint64_t delay_us = (uint64_t)conn->cfg.group_failback_delay_ms * 1000u;
	uint64_t now = conn->ctx->now_us, up;
	rift__path *p;

	RIFT_UNUSED(t);
	if (!conn->is_client || conn->closing ||
	    conn->state != RIFT_CONN_ESTABLISHED)
		return;
	p = preferred_standby(conn);
	if (!p)
		return; /* looked at again when a standby joins */
	up = now - p->up_us;
	if (up < delay_us) {
		rift_timer_start(&conn->failback_timer,
				 (delay_us - up + 999u) / 1000u, 0);
		return;
	}
	/* Still answering: a frame within two keepalive intervals. */
	if (!standby_alive(conn, p)) {
		rift_timer_start(&conn->failback_timer,
				 conn->cfg.keepalive_interval_ms, 0);
		return;
	}
	if (!probed(conn, p))
		return;
	failback(conn, p, up / 1000u);
}

/*
 * A data path whose sends the peer's side has stopped acknowledging (the
 * transport's tx_stalled_us: past its own retransmission time), while a
 * joined standby still answers: the link under the data path drops what
 * it is given (loss, no port event), or the transport's queue stopped
 * (rxe 6.1 can leave a READ, and every request behind it, waiting after
 * a retransmission), and waiting out the transport's retries (1 s over
 * verbs by default) or a READ's bound (2 s) holds the session still.
 * Two keepalive ticks in a row (100 ms apart:
 * rift__path_keepalive_retick), so completions the loop had not taken
 * yet, in a busy guest, do not count; then the data path fails.  A
 * client resumes on the standby at once; a server's failure reaches the
 * client as its path's end (a disconnect), and the client resumes.
 * Without a live standby the transport's own bounds decide, as before.
 */
bool rift__group_stall_check(rift__path *p)
{
	rift_conn *conn = p->conn;
	rift__path *sb = NULL;
	uint64_t stalled;

	/* The data path; with active-active, any carrier (what it holds
	 * holds up the delivery of everything after it). */
	if (!conn || !p->ops->tx_stalled_us ||
	    !(conn->path == p ? p->state == RIFT_PATH_ATTACHED
			      : p->slot && rift__path_carries(p)))
		return false;
	/* A side that only receives has nothing in flight when its link
	 * goes quiet: once per silence after DATA, a PING for the
	 * transport to track (its acks are all it sent). */
	if (p->rx_msgs != p->probed_rx_msgs &&
	    conn->ctx->now_us - p->last_rx_us >=
		    RIFT_PROBE_SILENCE_MS * 1000u) {
		p->probed_rx_msgs = p->rx_msgs;
		p->pending |= RIFT_PEND_PING;
		rift__path_kick(p);
	}
	stalled = p->ops->tx_stalled_us(p);
	if (p->state == RIFT_PATH_DEAD)
		return true;
	if (!stalled) {
		p->stall_ticks = 0;
		return false;
	}
	for (unsigned i = 0; i < conn->n_standby && !sb; i++)
		if (conn->standby[i] != p && standby_alive(conn, conn->standby[i]))
			sb = conn->standby[i];
	if (!sb && conn->path && conn->path != p &&
	    conn->path->state == RIFT_PATH_ATTACHED &&
	    answering(conn, conn->path))
		sb = conn->path;
	if (!sb || ++p->stall_ticks < 2)
		return false;
	rift__path_failed_why(p, RIFT_PATH_DOWN_STALL, RIFT_ETIMEDOUT,
			      "sends unacknowledged for %llu ms, past the "
			      "transport's retransmission time, while %s "
			      "path %s answers: failing over%s",
			      (unsigned long long)(stalled / 1000u),
			      sb == conn->path ? "data" : "standby", sb->peer,
			      conn->path == p && !conn->is_client
				      ? " (the client resumes there)"
				      : "");
	return true;
}

bool rift__group_failback_done(rift_conn *conn)
{
	bool back = conn->failing_back;

	if (conn->path && conn->path->promoted)
		conn->ctx->stats.standby_promotions += !back;
	conn->ctx->stats.failbacks += back;
	conn->failing_back = false;
	/* A failback, or a failover that found only the try joined. */
	if (conn->path && conn->path->ops != conn->ops)
		returned(conn);
	return back;
}

/*
 * ---- returning: auto:// back from its fallback ----
 * An auto:// session runs over TCP when RDMA was not there at connect
 * (no device, its port down, memlock too low, the peer not answering
 * over RDMA) or when every RDMA path of the live session died (the
 * address's re-attach over RDMA failed: failover.c, fall_back).  It does
 * not stay there: the client tries RDMA again connect.fallback_return_ms
 * after it attached over TCP, then twice as long after each try that
 * fails, up to 64 times as long.  A try is a standby path through RDMA
 * to the URL's addresses in turn (conn.c, return_timer), joined to the
 * session as any standby (the server's RDMA listener finds a session its
 * auto:// TCP twin accepted: their sessions share the listener's serial).
 * Joined, it is preferred to the data path (rank: transport first, then
 * address), and the failback above moves the session there: it waits
 * group.failback_delay_ms, answering keepalives, and answers a probe;
 * then a RESUME over RDMA, one round trip, nothing lost, doubled or
 * reordered.  The session's transport is RDMA again, conn->fallback
 * cleared (the RESUME's handshake said so to the server already), and
 * its TCP standbys go: TCP stays the last resort as it was at first, by
 * re-attaching there when every RDMA address fails again.  A RESUME that
 * fails there ends in a PATH_DOWN and a re-attach over TCP, as a
 * failback's does, and the tries go on.  The application sees FAILBACK,
 * whose message says so; fallback_returns counts them.
 */
static void returned(rift_conn *conn)
{
	rift_ctx *ctx = conn->ctx;

	RIFT_WARN(ctx, "session %016llx: auto:// back on %s (it had fallen "
		       "back to %s: %s)",
		  (unsigned long long)conn->session_id, conn->path->ops->name,
		  conn->ops->name, rift_fallback_reason_str(conn->fallback));
	conn->ops = conn->path->ops;
	conn->fallback = RIFT_FALLBACK_NONE;
	conn->return_fails = 0;
	conn->return_why[0] = '\0';
	ctx->stats.fallback_returns++;
	rift_timer_stop(&conn->return_timer);
	for (unsigned i = conn->n_standby; i-- > 0;) {
		rift__path *p = conn->standby[i];

		if (p->ops == conn->ops)
			continue;
		rift__group_standby_del(conn, p);
		rift__path_release(p);
	}
}

bool rift__group_may_return(const rift_conn *conn)
{
	return conn->is_client && conn->auto_scheme && conn->pref_ops &&
	       conn->ops != conn->pref_ops && conn->cfg.fallback_return_ms &&
	       conn->state == RIFT_CONN_ESTABLISHED && !conn->closing &&
	       rift__group_negotiated(conn) && conn->return_timer.cb;
}

/* The wait before the next try: fallback_return_ms, doubled per try
 * that failed in a row, up to 64 times. */
static uint64_t return_delay(const rift_conn *conn)
{
	unsigned k = conn->return_fails < 6 ? conn->return_fails : 6;
	uint64_t d = (uint64_t)conn->cfg.fallback_return_ms << k;

	return d < 3600000u ? d : 3600000u;
}

void rift__group_return_failed(rift_conn *conn, const char *why)
{
	conn->return_fails++;
	if (!rift__group_may_return(conn))
		return;
	RIFT_INFO(conn->ctx,
		  "session %016llx: %s is not back yet: %s; next try in %llu "
		  "ms",
		  (unsigned long long)conn->session_id, conn->pref_ops->name,
		  why, (unsigned long long)return_delay(conn));
	rift_timer_start(&conn->return_timer, return_delay(conn), 0);
}

bool rift__group_failback_failed(rift_conn *conn, int err)
{
	if (!conn->failing_back)
		return false;
	conn->failing_back = false;
	conn->transport = RIFT_TRANSPORT_NONE;
	rift__metrics_path_down(conn);
	rift__conn_emit(conn, RIFT_EVENT_PATH_DOWN, err, conn->last_error);
	return true;
}
