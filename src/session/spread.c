/*
 * spread.c - port groups, active-active (docs/design/port-groups.md, 3.2
 * and 4.2): every joined path of the session's transport carries data,
 * and the receiver puts the messages back in order.
 *
 * Negotiated: the client asks with RIFT_CAP_SPREAD (group.policy =
 * active-active), and both sides take DATA out of order
 * (RIFT_CAP_REORDER); a peer without them gets active-backup.  The data
 * path and each joined standby of the session's transport are then
 * carriers, each with a slot (rift__path.slot).
 *
 * Sending.  The queue and its sequence numbers stay the session's; a
 * message is given to one carrier when that carrier pulls it
 * (rift__sess_next: m->slot, busy until written), so a path takes
 * messages as fast as its transport sends them (TCP: its socket takes
 * them; verbs: its credits and send slots).  Each carrier may have at
 * most its share of the window in flight: the window split by the rate
 * the peer acknowledges what each sent (re-measured every
 * RATE_PERIOD_US), never less than a quarter of an even split; an idle
 * carrier may always take one.  The data path is flushed first
 * (rift__conn_enqueue kicks it before the others), so a lone
 * request goes the way it went with one path.
 *
 * Acks stay cumulative, per session, on any path; an ack older than one
 * applied already (it left on a slower path) is stale, not a lie.  The
 * cursor is the first message no live carrier took or is still
 * writing.
 *
 * A carrier that dies (rift__spread_carrier_gone, from rift__path_kill
 * and rift__path_release: every way a path ends) gives back what it was
 * given and not acknowledged, at once: those messages go to the others,
 * with no round trip first (SMC-R rewinds the same way, to what the peer
 * confirmed).  The peer may have had some of them: it drops duplicates
 * by sequence number.  An ack may then cover a message another carrier
 * is still writing (TCP's half-written batch, verbs' message being
 * copied into slots): it stays queued until written (m->busy), then
 * goes (release_due, after the flush).  When the data path dies, the
 * session re-attaches as in active-backup (a client RESUMEs on a
 * standby: one round trip), and the rewind gives everything not being
 * written to the carriers again.
 *
 * Receiving.  DATA on any carrier: the next in order is delivered (from
 * where it lies); one beyond it goes into the reorder buffer (a copy,
 * in a ring indexed by seq), counted with the held messages against our
 * own window (nothing there is acknowledged, so an honest sender cannot
 * exceed it; more, in bytes or in messages ahead, is a protocol error).
 * When its turn comes, the run moves to the held list and is delivered
 * at the end of the round (ctx->drainq).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "session/session.h"

/* Carriers' rates are measured over at least this long, us. */
#define RATE_PERIOD_US 20000u

bool rift__spread_negotiated(const rift_conn *conn)
{
	const uint32_t need = RIFT_CAP_GROUP | RIFT_CAP_REORDER;
	uint32_t own = rift__group_caps(conn), peer = conn->peer_caps;
	uint32_t client = conn->is_client ? own : peer;

	return (own & peer & need) == need && (client & RIFT_CAP_SPREAD);
}

void rift__spread_carrier_add(rift_conn *conn, rift__path *p)
{
	if (!conn->spread || p->slot)
		return;
	for (unsigned i = 0; i < RIFT_GROUP_MAX; i++) {
		if (conn->carrier[i])
			continue;
		conn->carrier[i] = p;
		conn->inflight[i] = conn->acked_by[i] = conn->rate[i] = 0;
		p->slot = (uint8_t)(i + 1);
		if (conn->cursor)
			rift__path_kick(p);
		return;
	}
}

void rift__spread_carrier_gone(rift_conn *conn, rift__path *p)
{
	unsigned s = p->slot;
	struct rift__omsg *first = NULL;
	uint64_t n = 0;

	p->slot = 0;
	if (!s || conn->carrier[s - 1] != p)
		return;
	conn->carrier[s - 1] = NULL;
	conn->inflight[s - 1] = 0;
	for (struct rift__omsg *m = conn->head; m; m = m->next) {
		if (m->slot != s)
			continue;
		m->slot = 0;
		m->busy = false;
		if (m->seq > conn->acked_seq) {
			if (!first)
				first = m;
			n++;
		}
	}
	if (first && (!conn->cursor || first->seq < conn->cursor->seq))
		conn->cursor = first;
	if (n)
		RIFT_INFO(conn->ctx,
			  "session %016llx: %llu messages %s carried go to "
			  "the other paths",
			  (unsigned long long)conn->session_id,
			  (unsigned long long)n, p->peer);
	/* Acknowledged while it wrote them: theirs to free now. */
	conn->release_due = true;
	rift__spread_kick(conn);
}

/* How many carriers of conn carry now; their rates' sum. */
static unsigned carriers(rift_conn *conn, uint64_t *sum)
{
	unsigned n = 0;

	*sum = 0;
	for (unsigned i = 0; i < RIFT_GROUP_MAX; i++)
		if (conn->carrier[i] && rift__path_carries(conn->carrier[i])) {
			n++;
			*sum += conn->rate[i];
		}
	return n;
}

/* The rates each carrier's acknowledged bytes make, smoothed. */
static void rates_update(rift_conn *conn)
{
	uint64_t now = conn->ctx->now_us, dt = now - conn->rate_us;

	if (dt < RATE_PERIOD_US)
		return;
	conn->rate_us = now;
	for (unsigned i = 0; i < RIFT_GROUP_MAX; i++) {
		uint64_t inst = conn->acked_by[i] * 1000000u / dt;

		conn->rate[i] = conn->rate[i] ? (3 * conn->rate[i] + inst) / 4
					      : inst;
		conn->acked_by[i] = 0;
	}
}

/* Whether carrier p may take m: within its share of the window. */
static bool may_take(rift_conn *conn, const rift__path *p,
		     const struct rift__omsg *m)
{
	unsigned s = p->slot - 1, n;
	uint64_t sum, w = rift__conn_window(conn), share, floor;

	if (!conn->inflight[s])
		return true;
	rates_update(conn);
	n = carriers(conn, &sum);
	if (n <= 1)
		return true;
	floor = w / (4 * n);
	share = sum ? (uint64_t)((unsigned __int128)w * conn->rate[s] / sum)
		    : w / n;
	if (share < floor)
		share = floor;
	return conn->inflight[s] + m->len <= share;
}

/* The message p takes after `after` (NULL: from the cursor): the first
 * no carrier took, or one p took and gave back (verbs: a rendezvous's
 * descriptor goes next); taken when take says so. */
static struct rift__omsg *find(rift__path *p, struct rift__omsg *after,
			       bool take)
{
	rift_conn *conn = p->conn;
	struct rift__omsg *m;

	if (!p->slot || !rift__path_carries(p))
		return NULL;
	for (m = after ? after->next : conn->cursor; m; m = m->next) {
		if (!m->slot || (!after && m->slot == p->slot && m->busy))
			break;
	}
	if (!m || m->slot)
		return m;
	if (!may_take(conn, p, m))
		return NULL;
	if (take) {
		m->slot = p->slot;
		m->busy = true;
		conn->inflight[p->slot - 1] += m->len;
	}
	return m;
}

struct rift__omsg *rift__spread_peek(rift__path *p)
{
	return find(p, NULL, false);
}

struct rift__omsg *rift__spread_next(rift__path *p, struct rift__omsg *after)
{
	struct rift__omsg *m = find(p, after, true);

	return m ? rift__sess_take(p, m) : NULL;
}

void rift__spread_written(rift__path *p, struct rift__omsg *m)
{
	rift_conn *conn = p->conn;

	/* Given back when p died (or the session rewound): not p's now. */
	if (!m->busy || m->slot != p->slot || !p->slot)
		return;
	m->busy = false;
	if (m->seq <= conn->max_written)
		conn->stats.msgs_replayed++;
	else
		conn->max_written = m->seq;
	if (m->seq > conn->written_seq)
		conn->written_seq = m->seq;
	p->last_tx_us = p->ctx->now_us;
	while (conn->cursor && conn->cursor->slot && !conn->cursor->busy)
		conn->cursor = conn->cursor->next;
	/* Acknowledged while p wrote it: freed after the flush (the
	 * transport may still read it until it returns). */
	if (m->seq <= conn->acked_seq) {
		conn->release_due = true;
		rift__path_kick(p);
	}
}

void rift__spread_kick(rift_conn *conn)
{
	if (!conn->cursor)
		return;
	for (unsigned i = 0; i < RIFT_GROUP_MAX; i++) {
		rift__path *p = conn->carrier[i];

		if (p && rift__path_carries(p))
			rift__path_kick(p);
	}
}

void rift__spread_acked(rift_conn *conn, const struct rift__omsg *m)
{
	unsigned s = m->slot - 1;

	conn->inflight[s] -= m->len < conn->inflight[s] ? m->len
							 : conn->inflight[s];
	conn->acked_by[s] += m->len;
	if (conn->carrier[s])
		conn->carrier[s]->peer_acked_us = conn->ctx->now_us;
}

void rift__spread_release(rift_conn *conn)
{
	conn->release_due = false;
	rift__conn_ack_release(conn, conn->acked_seq);
	if (conn->lingering && !conn->head)
		rift__conn_linger_check(conn);
}

void rift__spread_rewound(rift_conn *conn)
{
	/* The peer may acknowledge what carriers wrote before the rewind
	 * and it gets after: written_seq stays the highest ever written
	 * (m->busy keeps what a path still writes from being freed). */
	conn->written_seq = conn->max_written;
	for (unsigned i = 0; i < RIFT_GROUP_MAX; i++)
		conn->inflight[i] = 0;
	for (struct rift__omsg *m = conn->head; m; m = m->next) {
		if (m->busy && m->slot && conn->carrier[m->slot - 1])
			conn->inflight[m->slot - 1] += m->len;
		else
			m->slot = 0, m->busy = false;
	}
	conn->release_due = true;
	rift__spread_kick(conn);
}

/* ---- the reorder buffer ----
 *
 * A ring indexed by seq: slot i (counted from ooo_first, wrapping) holds
 * message ooo_base + i or NULL, so keeping, finding and taking a message
 * cost the same however far ahead it is.  A sorted list cost a walk for
 * each message kept out of turn and for each lookup (every rendezvous
 * descriptor), quadratic in the window for a peer choosing the order.
 * The ring starts at OOO_SLOTS_MIN slots and doubles as far ahead as a
 * message lies, never beyond window / RIFT_HDR_SIZE, as far as an honest
 * peer can be ahead (rift__spread_hold_ahead refuses more): its size is
 * set by our window, not by a seq the peer claims.  It stays until the
 * session ends (rift__spread_drop_ooo).
 *
 * held_seq also moves without the ring (in-order delivery, session.c:
 * data_frame, hold, discard), so ooo_base may lag behind it; while
 * anything waits, ooo_base <= held_seq + 1, and what waits in the slots
 * before held_seq + 1 came again meanwhile, in its turn, on another path.
 * ooo_rebase catches up before the ring is changed; a lookup needs no
 * catching up, since every message keeps its slot.
 */

/* Slots of a new ring. */
#define OOO_SLOTS_MIN 16u

/* The slot of message ooo_base + i (i < ooo_size). */
static inline uint64_t ooo_slot(const rift_conn *conn, uint64_t i)
{
	uint64_t s = conn->ooo_first + i;

	return s < conn->ooo_size ? s : s - conn->ooo_size;
}

/* The first slot's message (or NULL), taken; the ring moves on by one. */
static struct rift__held *ooo_pop(rift_conn *conn)
{
	struct rift__held *m = conn->ooo_ring[conn->ooo_first];

	conn->ooo_ring[conn->ooo_first] = NULL;
	conn->ooo_first = ooo_slot(conn, 1);
	conn->ooo_base++;
	if (m) {
		conn->ooo_n--;
		conn->ooo_bytes -= (uint64_t)m->len + RIFT_HDR_SIZE;
	}
	return m;
}

/* ooo_base caught up with held_seq + 1: what waits before it is a
 * duplicate.  At most one turn of the ring while anything waits; none
 * when nothing does. */
static void ooo_rebase(rift_conn *conn)
{
	while (conn->ooo_n && conn->ooo_base <= conn->held_seq) {
		struct rift__held *m = ooo_pop(conn);

		if (m) {
			conn->stats.dups_dropped++;
			rift__spare_put(conn->ctx, m->owned);
			free(m);
		}
	}
	if (!conn->ooo_n) {
		conn->ooo_base = conn->held_seq + 1;
		conn->ooo_first = 0;
	}
}

/* Room for message ooo_base + i, i < most: the ring doubled until it
 * has, but never to more than most slots.  0 or RIFT_ENOMEM. */
static int ooo_grow(rift_conn *conn, uint64_t i, uint64_t most)
{
	uint64_t size = conn->ooo_size ? conn->ooo_size : OOO_SLOTS_MIN;
	struct rift__held **ring;

	if (i < conn->ooo_size)
		return 0;
	while (size <= i)
		size *= 2;
	if (size > most)
		size = most;
	if (size > SIZE_MAX / sizeof(*ring))
		return RIFT_ENOMEM;
	ring = calloc((size_t)size, sizeof(*ring));
	if (!ring)
		return RIFT_ENOMEM;
	/* Unwrapped: message ooo_base + j goes to slot j. */
	for (uint64_t j = 0; j < conn->ooo_size; j++)
		ring[j] = conn->ooo_ring[ooo_slot(conn, j)];
	free(conn->ooo_ring);
	conn->ooo_ring = ring;
	conn->ooo_size = size;
	conn->ooo_first = 0;
	return 0;
}

bool rift__spread_ooo_has(const rift_conn *conn, uint64_t seq)
{
	if (!conn->ooo_n || seq < conn->ooo_base ||
	    seq - conn->ooo_base >= conn->ooo_size)
		return false;
	return conn->ooo_ring[ooo_slot(conn, seq - conn->ooo_base)] != NULL;
}

int rift__spread_hold_ahead(rift__path *p, const struct rift__hdr *h,
			    void *payload, void *owned)
{
	rift_conn *conn = p->conn;
	uint64_t most = rift__conn_window(conn) / RIFT_HDR_SIZE, i;
	struct rift__held *m;
	int rc;

	ooo_rebase(conn);
	if (rift__spread_ooo_has(conn, h->seq)) {
		conn->stats.dups_dropped++;
		free(owned);
		return 0;
	}
	/* Message held_seq + k follows k - 1 that an honest peer sent and
	 * we have not acknowledged, each at least a header against the
	 * window: the window bounds how far ahead a message can be, as it
	 * bounds the bytes, and the ring is never sized by the seq a peer
	 * claims. */
	if (h->seq - conn->held_seq > most) {
		char why[160];

		free(owned);
		snprintf(why, sizeof(why),
			 "peer sent message %llu, %llu ahead of the last in "
			 "order: beyond the window (%llu bytes hold at most "
			 "%llu messages)",
			 (unsigned long long)h->seq,
			 (unsigned long long)(h->seq - conn->held_seq),
			 (unsigned long long)rift__conn_window(conn),
			 (unsigned long long)most);
		return rift__path_reject(p, RIFT_EPROTO, why);
	}
	/* Rebased: ooo_base is held_seq + 1, so i < most. */
	i = h->seq - conn->ooo_base;
	if (ooo_grow(conn, i, most)) {
		free(owned);
		rift__path_failed(p, RIFT_ENOMEM,
				  "no memory for a reorder buffer of %llu "
				  "messages",
				  (unsigned long long)(i + 1));
		return RIFT_ENOMEM;
	}
	rc = rift__held_new(p, h, payload, owned, &m);
	if (rc)
		return rc;
	conn->ooo_ring[ooo_slot(conn, i)] = m;
	conn->ooo_n++;
	conn->ooo_bytes += (uint64_t)m->len + RIFT_HDR_SIZE;
	conn->stats.msgs_reordered++;
	return 0;
}

void rift__spread_ooo_advance(rift_conn *conn)
{
	ooo_rebase(conn);
	/* Rebased: the first slot is held_seq + 1's. */
	while (conn->ooo_n && conn->ooo_ring[conn->ooo_first]) {
		struct rift__held *m = ooo_pop(conn);

		if (conn->held_tail)
			conn->held_tail->next = m;
		else
			conn->held_head = m;
		conn->held_tail = m;
		conn->held_bytes += (uint64_t)m->len + RIFT_HDR_SIZE;
		conn->held_seq = m->seq;
	}
	if (conn->held_head && !conn->recv_stopped &&
	    rift__list_empty(&conn->drain_node))
		rift__list_add_tail(&conn->ctx->drainq, &conn->drain_node);
}

void rift__spread_drop_ooo(rift_conn *conn)
{
	for (uint64_t i = 0; conn->ooo_n && i < conn->ooo_size; i++) {
		struct rift__held *m = conn->ooo_ring[i];

		if (m) {
			free(m->owned);
			free(m);
			conn->ooo_n--;
		}
	}
	free(conn->ooo_ring);
	conn->ooo_ring = NULL;
	conn->ooo_size = conn->ooo_first = conn->ooo_base = 0;
	conn->ooo_bytes = 0;
}

/* ---- a carrier's death, told ---- */

/*
 * A carrier's two ends may learn of its death far apart: a port lost on
 * one side only, a device removed there, tell that side at once, while
 * the other waits for its own detection (its stall check, the
 * transport's retries), and what it sends there meanwhile goes nowhere:
 * the receiver's reorder buffer waits for it.  So the side that knows
 * says so on the data path (PATH_CTL DOWN with the path's id: SMC-R's
 * DELETE_LINK), and the other fails its end at once.  One owed at a
 * time per data path; a second death while one is owed is left to the
 * peer's own detection.
 */
void rift__spread_tell_down(rift_conn *conn, const rift__path *p)
{
	rift__path *d = conn->path;

	if (!conn->spread || !p->gid || p->peer_down || !p->up_us || !d ||
	    d->state != RIFT_PATH_ATTACHED || (d->pending & RIFT_PEND_PATH_CTL))
		return;
	d->ctl_gid = p->gid;
	d->ctl_why = p->down_why;
	d->pending |= RIFT_PEND_PATH_CTL;
	rift__path_kick(d);
}

int rift__spread_path_ctl(rift__path *p, const struct rift__hdr *h,
			  const uint8_t *payload)
{
	rift_conn *conn = p->conn;
	struct rift__path_ctl pc;

	RIFT_UNUSED(h);
	rift__path_ctl_decode(payload, &pc);
	/* Other operations (docs/design/port-groups.md) are not sent by
	 * this version: a later peer's, ignored. */
	if (pc.op != RIFT_PATH_CTL_DOWN)
		return 0;
	for (unsigned i = 0; i < conn->n_standby; i++) {
		rift__path *sb = conn->standby[i];

		if (sb == p || sb->gid != pc.path_id ||
		    sb->state == RIFT_PATH_DEAD)
			continue;
		sb->peer_down = true;
		conn->ctx->stats.peer_path_downs++;
		rift__path_failed_why(sb, RIFT_PATH_DOWN_PEER, RIFT_ECONNRESET,
				      "the peer's end of it failed (%s)",
				      rift_path_down_reason_str(
					      pc.reason < RIFT_PATH_DOWN__COUNT
						      ? (rift_path_down_reason)pc.reason
						      : RIFT_PATH_DOWN_NONE));
		break;
	}
	return p->state == RIFT_PATH_DEAD ? RIFT_ECLOSED : 0;
}
