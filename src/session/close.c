/*
 * close.c - how a session ends when the application closes it.
 *
 * rift_conn_close is orderly.  The session lingers, re-attaching and
 * replaying across broken paths as ever, until the peer has acknowledged
 * every message queued before the call, then it sends CLOSE.  Delivered
 * means acknowledged: the peer acknowledges a message once on_recv ran
 * for it, so a path that breaks during the linger loses nothing (the
 * re-attach replays what was not acknowledged), and the peer, which sees
 * CLOSE behind the last message, says DISCONNECTED with status 0 after it.
 *
 * A CLOSE says: everything I sent is acknowledged and I send no more.  Its
 * seq is the sender's last sequence number (a receiver that lacks some
 * says RIFT_ECONNRESET, not 0; a peer of before this file sends 0) and its
 * ack the sender's last.  A side that has not closed answers a CLOSE with
 * its own and ends its session (DISCONNECTED); a side that is closing too
 * takes it as the peer's half: it goes on until its own queue is
 * acknowledged (the peer still acknowledges what arrives), then sends its
 * CLOSE and ends.  So two ends closing at once both deliver their queues,
 * and a side that sent CLOSE ends when the peer's CLOSE comes, or when the
 * path fails after it: the peer hung up having read it (it ends its path
 * right after answering), or the path broke with everything acknowledged
 * (then the peer learns of the end by its own path's failure).
 *
 * While closing, nothing reaches the application but close_cb: what
 * arrives, and what was held by rift_conn_recv_stop, is acknowledged and
 * discarded, so the peer's queue drains too.
 *
 * linger_ms bounds it all: what is still unacknowledged then is dropped,
 * as by rift_conn_abort, which tells the peer with an ERROR frame of
 * RIFT_ECONNRESET on the attached path.  The frame goes behind what the
 * transport is writing already (TCP: the rest of its batch), so an abort
 * keeps the session, sending nothing new, until the transport took the
 * frame (session.c, rift__sess_control), the path failed, or
 * keepalive_timeout_ms passed; closing the path at once lost the frame
 * whenever the socket was full, and the peer then learnt of the end only
 * from its grace time.  rift_ctx_destroy, which cannot wait, aborts the
 * closes still lingering at once.
 */
#include <stdio.h>
#include <string.h>

#include "session/session.h"

/* The close is over (rift_conn_last_error says how): the session ends
 * without a word to the application, and close_cb is due. */
static void close_end(rift_conn *conn)
{
	rift_ctx *ctx = conn->ctx;
	rift__path *p = conn->path;

	/* A failure of the flush below must not start anything. */
	conn->lingering = false;
	conn->aborting = false;
	conn->cursor = NULL; /* no more messages: only what is owed */
	/* The CLOSE or ERROR owed goes out now, behind what precedes it. */
	if (p && p->state == RIFT_PATH_ATTACHED)
		p->ops->flush(p);
	rift__sessions_del(conn); /* no RESUME can find it now */
	rift__conn_abandon_path(conn);
	rift__group_end(conn);
	rift__conn_quiet(conn, false);
	rift_timer_stop(&conn->retry_timer);
	rift_timer_stop(&conn->ack_timer);
	rift_timer_stop(&conn->linger_timer);
	rift__conn_drop_held(conn);
	conn->state = RIFT_CONN_DEAD;
	conn->transport = RIFT_TRANSPORT_NONE;
	/* Queued messages are freed with the conn, after its path is
	 * destroyed (api/deferred.c): a transport may still point at them. */
	rift__list_del(&conn->node);
	rift__list_add_tail(&ctx->closing_conns, &conn->node);
}

/* Everything acknowledged and CLOSE sent or owed: an orderly end. */
static void close_done(rift_conn *conn)
{
	conn->last_error[0] = '\0';
	close_end(conn);
}

/* A close that did not end in order; last_error says why. */
static void close_failed(rift_conn *conn)
{
	conn->ctx->stats.closes_aborted++;
	close_end(conn);
}

static void linger_expired(rift_timer *t, void *user);

void rift__conn_close_abort(rift_conn *conn, const char *who, bool wait)
{
	rift_ctx *ctx = conn->ctx;
	rift__path *p = conn->path;
	bool attached = p && p->state == RIFT_PATH_ATTACHED;

	/* CLOSE went already, everything acknowledged: nothing to drop, and
	 * the peer reads the CLOSE before any ERROR.  In order. */
	if (conn->close_sent && !conn->aborting) {
		close_done(conn);
		return;
	}
	if (!conn->aborting) {
		if (conn->head)
			rift__conn_error(conn,
					 "%s with %llu messages (%llu bytes) "
					 "unacknowledged",
					 who,
					 (unsigned long long)conn->unacked_msgs,
					 (unsigned long long)conn->unacked_bytes);
		else
			rift__conn_error(conn, "%s before CLOSE was exchanged",
					 who);
		ctx->stats.closes_aborted++;
		/* Nothing more is sent or delivered; the messages stay
		 * allocated until the path is gone (a transport may be
		 * writing one). */
		conn->cursor = NULL;
		conn->recv_stopped = true;
		rift__conn_drop_held(conn);
		if (attached) {
			p->pending &= ~RIFT_PEND_CLOSE;
			p->pending |= RIFT_PEND_ERROR;
			p->error_code = RIFT_ECONNRESET;
			snprintf(p->error_text, sizeof(p->error_text), "%s",
				 conn->last_error);
			rift__path_kick(p);
		}
	}
	if (!wait || !attached) {
		close_end(conn);
		return;
	}
	if (conn->aborting)
		return;
	/* Until the transport takes the ERROR (rift__sess_control starts
	 * the timer at 0 then), bounded. */
	conn->aborting = true;
	if (!conn->lingering) {
		conn->lingering = true;
		rift__list_del(&conn->node);
		rift__list_add_tail(&ctx->lingering_conns, &conn->node);
	}
	conn->linger_timer.cb = linger_expired;
	rift_timer_start(&conn->linger_timer, ctx->cfg.keepalive_timeout_ms, 0);
}

static void linger_expired(rift_timer *t, void *user)
{
	rift_conn *conn = user;
	rift__path *p = conn->path;
	char who[64];

	RIFT_UNUSED(t);
	/* An abort: the ERROR was taken by the transport, or the wait for
	 * it is over. */
	if (conn->aborting) {
		close_end(conn);
		return;
	}
	/* Everything acknowledged, CLOSE sent or owed on the attached path
	 * (linger_ms 0 comes here before the peer could answer). */
	if (conn->close_sent ||
	    (!conn->head && p && p->state == RIFT_PATH_ATTACHED)) {
		if (!conn->close_sent)
			p->pending |= RIFT_PEND_CLOSE;
		close_done(conn);
		return;
	}
	snprintf(who, sizeof(who), "close: linger_ms (%u ms) passed",
		 conn->ctx->cfg.linger_ms);
	if (!conn->head) {
		rift__conn_error(conn,
				 "%s with no path attached to send CLOSE on "
				 "(nothing was unacknowledged)",
				 who);
		close_failed(conn);
		return;
	}
	rift__conn_close_abort(conn, who, true);
}

void rift__conn_linger_check(rift_conn *conn)
{
	rift__path *p = conn->path;

	if (!conn->lingering || conn->aborting || conn->head || !p ||
	    p->state != RIFT_PATH_ATTACHED)
		return;
	if (!conn->close_sent) {
		p->pending |= RIFT_PEND_CLOSE;
		rift__path_kick(p);
	}
	/* The peer closed first and waited for our queue: both halves are
	 * done (close_end sends our CLOSE). */
	if (conn->close_rcvd)
		close_done(conn);
}

void rift__conn_close(rift_conn *conn, bool abortive)
{
	rift_ctx *ctx = conn->ctx;
	rift__path *p = conn->path;

	if (conn->state == RIFT_CONN_CONNECTING ||
	    conn->state == RIFT_CONN_DEAD) {
		/* No session to deliver to or to end: its last error stays. */
		close_end(conn);
		return;
	}
	if (abortive) {
		rift__conn_close_abort(conn, "rift_conn_abort", true);
		return;
	}
	/* Nothing is delivered any more: what was held is acknowledged
	 * (a peer closing too waits for it) and dropped, and what arrives
	 * goes the same way (session.c, discard). */
	conn->recv_stopped = true;
	if (conn->recv_seq < conn->held_seq)
		conn->recv_seq = conn->held_seq;
	rift__conn_drop_held(conn);
	conn->lingering = true;
	rift__list_del(&conn->node);
	rift__list_add_tail(&ctx->lingering_conns, &conn->node);
	conn->linger_timer.cb = linger_expired;
	rift_timer_start(&conn->linger_timer, ctx->cfg.linger_ms, 0);
	if (p && p->state == RIFT_PATH_ATTACHED &&
	    conn->ack_sent != conn->recv_seq) {
		p->pending |= RIFT_PEND_ACK;
		rift__path_kick(p);
	}
	rift__conn_linger_check(conn);
}

void rift__conn_peer_close(rift__path *p, const struct rift__hdr *h)
{
	rift_conn *conn = p->conn;
	int status = 0;

	conn->close_rcvd = true;
	if (conn->aborting) { /* the peer is done: no ERROR needed */
		close_end(conn);
		return;
	}
	if (conn->closing) {
		/* Closing too: our CLOSE crossed it, or our queue is empty
		 * and CLOSE answers now; else ours goes when the queue is
		 * acknowledged (rift__conn_linger_check). */
		if (conn->lingering && !conn->head) {
			if (!conn->close_sent)
				p->pending |= RIFT_PEND_CLOSE;
			close_done(conn);
		}
		return;
	}
	/* The answer, before the path goes: the peer waits for it (or for
	 * the path to close).  A write failing here fails the path without
	 * a re-attach (failover.c: close_rcvd). */
	p->pending |= RIFT_PEND_CLOSE;
	p->ops->flush(p);
	if (h->seq > conn->recv_seq) {
		status = RIFT_ECONNRESET;
		rift__conn_error(conn,
				 "%s: peer closed the session without %llu of "
				 "its messages delivered",
				 p->peer,
				 (unsigned long long)(h->seq - conn->recv_seq));
	} else {
		rift__conn_error(conn, "%s: peer closed the session", p->peer);
	}
	rift__conn_die(conn, RIFT_EVENT_DISCONNECTED, status);
}

void rift__conn_close_lost(rift_conn *conn)
{
	if (conn->aborting)
		close_end(conn); /* counted when the abort began */
	else if (conn->lingering)
		close_failed(conn);
}

void rift__conn_close_hangup(rift_conn *conn)
{
	if (conn->aborting)
		close_end(conn);
	else if (conn->lingering)
		close_done(conn);
}
