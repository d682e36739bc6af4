/*
 * rdma_tx.c - the send side of the verbs transport: stream bytes copied
 * into registered send slots, messages sent from where they live (inline,
 * zero copy, bare), rendezvous descriptors in order with the rest, credits
 * and slots, and the flush that drives both sides of a path.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "transports/verbs/rdma_int.h"

/* ---- send side ---- */

static uint8_t *slot_buf(struct rdma_path *rp, uint32_t i)
{
	return rp->sbufs[i];
}

/* Cheap look, for every SEND built: may the next message go by
 * rendezvous at all?  (rift__rdma_rndv_desc decides.) */
static inline bool rndv_maybe(const struct rdma_path *rp)
{
	const rift__path *p = &rp->base;
	uint32_t thr = p->ctx->cfg.rndv_threshold;

	const struct rift__omsg *m;

	if (!thr || !rp->peer_rndv || !p->conn || !p->conn->cursor)
		return false;
	m = rift__sess_peek((rift__path *)p);
	return m && m->len >= thr;
}

/*
 * Sender: may m, the next message, go bare?  The peer takes bare frames,
 * the path's last DATA frame is m's predecessor, and the ack to carry is
 * within BARE_DELTA_MAX of that frame's.  Before rift__sess_next, which
 * makes m the last DATA frame.  *imm is then what the SEND's immediate
 * carries besides credits: BARE_IMM and the ack's delta.
 */
static RIFT_HOT_INLINE bool bare_ok(const struct rdma_path *rp,
				    const struct rift__omsg *m, uint32_t *imm)
{
	const rift__path *p = &rp->base;
	uint64_t d = p->conn->recv_seq - p->tx_data_ack;

	/* A bare frame is always DATA: an RMA frame keeps its header. */
	bool ok = rp->peer_bare && p->tx_data_seq &&
		  m->seq == p->tx_data_seq + 1 && d < BARE_DELTA_MAX &&
		  m->type == RIFT_FRAME_DATA;

	/* Test builds: play a peer that breaks the rules. */
	if (rift__fault_hit(RIFT_FAULT_BARE_EARLY))
		ok = rp->peer_bare;
	if (ok && rift__fault_hit(RIFT_FAULT_BARE_ACK))
		d = BARE_DELTA_MAX - 1;
	*imm = BARE_IMM | (uint32_t)d << BARE_SHIFT;
	return ok;
}

/* Copy stream bytes (owed control frames, then messages) into buf. */
static size_t fill(struct rdma_path *rp, uint8_t *buf, size_t cap)
{
	rift__path *p = &rp->base;
	size_t used = 0;
	uint32_t rkey;
	void *mr;

	while (used < cap) {
		size_t n;

		if (rp->ctrl_off < rp->ctrl_len) {
			n = rp->ctrl_len - rp->ctrl_off;
			if (n > cap - used)
				n = cap - used;
			memcpy(buf + used, rp->ctrl + rp->ctrl_off, n);
			rp->ctrl_off += n;
			used += n;
			continue;
		}
		if (!rp->cur) {
			/* Control frames go between messages, never inside. */
			if (p->pending) {
				rp->ctrl_len = rift__sess_control(p, rp->ctrl,
								  sizeof(rp->ctrl));
				rp->ctrl_off = 0;
				if (rp->ctrl_len)
					continue;
			}
			rp->cur = rift__sess_next(p, NULL);
			rp->cur_off = 0;
			if (!rp->cur)
				break;
			if (rp->cur->len >= p->ctx->cfg.rndv_threshold &&
			    rift__rdma_rndv_wanted(rp, rp->cur, &rkey, &mr)) {
				rp->cur = NULL; /* its descriptor goes next */
				break;
			}
		}
		if (rp->cur_off < RIFT_HDR_SIZE) {
			n = RIFT_HDR_SIZE - rp->cur_off;
			if (n > cap - used)
				n = cap - used;
			memcpy(buf + used, rp->cur->hdr + rp->cur_off, n);
		} else {
			size_t off = rp->cur_off - RIFT_HDR_SIZE;

			n = rp->cur->len - off;
			if (n > cap - used)
				n = cap - used;
			memcpy(buf + used, (uint8_t *)rp->cur->data + off, n);
		}
		rp->cur_off += n;
		used += n;
		data_posted(rp);
		if (rp->cur_off == RIFT_HDR_SIZE + rp->cur->len) {
			rift__sess_written(p, rp->cur);
			rp->cur = NULL;
		}
	}
	return used;
}

/*
 * Send the next message as a two-piece SEND (header, then payload) from
 * where it lives, when it starts at a frame boundary and fits the peer's
 * receive buffer.  Two kinds:
 *  - small enough to go inline and alone in the queue (request/reply): the
 *    provider copies both pieces into the work request when it is posted,
 *    so they may live anywhere, and the copy into a slot is saved.  Small
 *    messages queued together are packed into one slot by fill instead.
 *  - larger, in a registered block: the NIC reads the payload from there
 *    (zero copy).  The block outlives the send: it is freed only when the
 *    peer acknowledges the message, after the NIC has read it.  The
 *    24-byte frame header is not in registered memory (the buffer's
 *    header lives apart from its block), so it goes from the send slot
 *    this SEND owns anyway (slot, slkey).
 * A message that may go bare (bare_ok) goes as its payload alone: one
 * piece, no header.
 * Returns the SEND's length (0: neither kind), whether it is inline, its
 * SGEs in *nsge (one when the header sits right in front of the payload:
 * a small buffer, the provider then copies one piece; or bare), and the
 * flags its immediate carries in *imm.
 */
static uint32_t direct(struct rdma_path *rp, struct ibv_sge *sge, uint32_t cap,
		       uint8_t *slot, uint32_t slkey, bool *inl, int *nsge,
		       uint32_t *imm)
{
	rift__path *p = &rp->base;
	struct rift__omsg *m;
	struct rift__buf *b;
	uint32_t lkey = 0, rkey, len, bare_imm;
	bool bare;

	if (rp->cur || rp->ctrl_off < rp->ctrl_len || p->pending ||
	    p->ctx->cfg.max_send_sge < 2 || !rift__path_carries(p) ||
	    !p->conn || !(m = rift__sess_peek(p)) ||
	    RIFT_HDR_SIZE + m->len > cap)
		return 0;
	len = (uint32_t)(RIFT_HDR_SIZE + m->len);
	*inl = len <= rp->inline_max;
	if (*inl) {
		/* The provider copies inline data when posting: the
		 * header may stay where it is. */
		if (m->next)
			return 0;
	} else {
		b = rift__container_of(m, struct rift__buf, om);
		if (!b->pool ||
		    !rift__pool_keys(b->pool, m->data, rp->dev_slot, &lkey,
				     &rkey))
			return 0;
	}
	bare = m->len && bare_ok(rp, m, &bare_imm);
	rift__sess_next(p, NULL); /* m, its header encoded */
	rift__sess_written(p, m);
	if (bare) {
		*imm = bare_imm;
		*inl = m->len <= rp->inline_max;
		rp->bare_sends++;
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)m->data,
					   .length = (uint32_t)m->len,
					   .lkey = lkey };
		*nsge = 1;
		return (uint32_t)m->len;
	}
	if (*inl && (uint8_t *)m->data == m->hdr + RIFT_HDR_SIZE) {
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)m->hdr,
					   .length = len };
		*nsge = 1;
		return len;
	}
	if (*inl) {
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)m->hdr,
					   .length = RIFT_HDR_SIZE };
	} else {
		memcpy(slot, m->hdr, RIFT_HDR_SIZE);
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)slot,
					   .length = RIFT_HDR_SIZE,
					   .lkey = slkey };
	}
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)m->data,
				   .length = (uint32_t)m->len,
				   .lkey = lkey };
	*nsge = 2;
	return len;
}

static inline bool has_output(struct rdma_path *rp)
{
	return rp->ctrl_off < rp->ctrl_len || rp->cur ||
	       rift__sess_has_output(&rp->base);
}

/* Post what rift__rdma_drain_recvs consumed, up to 32 buffers a call. */
static RIFT_HOT_INLINE int repost_recvs(struct rdma_path *rp)
{
	struct ibv_recv_wr wrs[32];
	struct ibv_sge sges[32];
	uint32_t done = 0;
	rift__vb_err err;
	int rc;

	while (done < rp->repost_n) {
		uint32_t n = rp->repost_n - done;

		if (n > 32)
			n = 32;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t i = rp->repost[done + k];

			sges[k] = (struct ibv_sge){ .addr = (uintptr_t)recv_buf(rp, i),
						    .length = rp->buf_size,
						    .lkey = rp->rlkey[i] };
			wrs[k] = (struct ibv_recv_wr){
				.wr_id = WR_TAG(rp) | RECV_FLAG | i,
				.next = k + 1 < n ? &wrs[k + 1] : NULL,
				.sg_list = &sges[k],
				.num_sge = 1 };
		}
		rc = rift__vb_post_recv(rctx_of(rp->base.ctx)->dp_calls, rp->qp,
					wrs, err);
		if (rc) {
			rift__path_failed(&rp->base, rc, "%s", err);
			return rc;
		}
		done += n;
	}
	rp->to_return += rp->repost_n;
	rp->repost_n = 0;
	return 0;
}

static RIFT_HOT_INLINE void post_sends(struct rdma_path *rp);
static bool post_error_oob(struct rdma_path *rp);

/*
 * A READ that makes no progress: rxe (6.1) can leave one waiting for
 * ever after it retransmitted (loss, or a link that came back), without
 * an error, and everything behind it waits too: the stream, the receive
 * buffers, the credits the peer needs even for a PING.  The path then
 * went silent until keepalive_timeout_ms.  A READ has its retry budget
 * to complete or fail (retry_count + 1 ack timeouts without a response);
 * one that has shown nothing for that budget and a keepalive interval
 * more (at least twice the keepalive interval) fails the
 * path, and the session re-attaches.  Checked when the path is flushed,
 * which the keepalive does at least every half interval.
 */
static bool read_stalled(struct rdma_path *rp)
{
	const rift_config *c = rp->base.cfg;
	uint64_t budget_us = ack_timeout_us(c) *
			     (c->rdma_retry_count + 1u) +
			     (uint64_t)c->keepalive_interval_ms * 1000u;
	uint64_t bound_us = (uint64_t)c->keepalive_interval_ms * 2000u;

	if (!rp->rd_inflight)
		return false;
	if (bound_us < budget_us)
		bound_us = budget_us;
	if (rp->base.ctx->now_us - rp->rd_progress_us < bound_us)
		return false;
	rift__path_failed_why(&rp->base, RIFT_PATH_DOWN_STALL, RIFT_ETIMEDOUT,
			      "RDMA READ made no progress for %llu ms (%u in "
			      "flight)",
			      (unsigned long long)((rp->base.ctx->now_us -
						    rp->rd_progress_us) /
						   1000u),
			      rp->rd_inflight);
	return true;
}

void rift__rdma_flush_now(struct rdma_path *rp)
{
	rift__path *p = &rp->base;

	if (p->state == RIFT_PATH_DEAD)
		return;
	if (!rp->established) {
		/* A server's path takes the client's first frames before
		 * rdma_cm tells it the connection is established (its QP
		 * sends since the accept): a refusal's ERROR frame goes at
		 * once, out of band, or it was lost with the path. */
		if ((p->pending & RIFT_PEND_ERROR) && rp->qp && !p->is_client)
			post_error_oob(rp);
		return;
	}
	if (__builtin_expect(rp->rd_inflight != 0, 0) && read_stalled(rp))
		return;
	if ((rp->pend_n || rp->rndv_n) && rift__rdma_drain_recvs(rp) < 0)
		return;
	if (rift__fault_hit(RIFT_FAULT_RDMA_SEND)) {
		rift__path_failed(p, RIFT_ECONNRESET,
				  "send: link dropped (fault point)");
		return;
	}
	post_sends(rp);
	if (rp->repost_n < rp->repost_batch || p->state == RIFT_PATH_DEAD ||
	    repost_recvs(rp))
		return;
	/* Enough credits for an update of their own: the next flush (still
	 * this round) sends it if nothing else carries them. */
	if (rp->to_return >= rp->rq_depth / 4)
		rift__path_kick(p);
}

void rift__rdma_flush(rift__path *p)
{
	rift__rdma_flush_now(rp_of(p));
}

/*
 * A SEND in slot takes a credit and the slot, and carries the credits
 * owed back (with flags, e.g. RNDV_IMM) in its immediate.  It asks for a
 * completion every quarter queue, or when slots run low, so slots come
 * back without a completion per send (the completion covers them all).
 */
static RIFT_HOT_INLINE void slot_taken(struct rdma_path *rp,
				       struct ibv_send_wr *wr, uint32_t slot);

static RIFT_HOT_INLINE void send_taken(struct rdma_path *rp,
				       struct ibv_send_wr *wr, uint32_t slot,
				       uint32_t imm)
{
	/* Test builds: play a peer that returns credits it does not have. */
	if (__builtin_expect(rift__fault_hit(RIFT_FAULT_CREDITS_EXTRA), 0))
		rp->to_return = rp->to_return + rp->rq_depth < CREDIT_MASK
					? rp->to_return + rp->rq_depth
					: CREDIT_MASK;
	wr->imm_data = htonl(rp->to_return | imm);
	rp->to_return = 0;
	rp->credits--;
	slot_taken(rp, wr, slot);
}

/* Any work request takes its slot the same way (a BIND_MW too). */
static RIFT_HOT_INLINE void slot_taken(struct rdma_path *rp,
				       struct ibv_send_wr *wr, uint32_t slot)
{
	rp->slots_free--;
	rp->slot_next = ring_next(slot, rp->sq_depth);
	if (++rp->unsignaled >= rp->sq_depth / 4 || rp->slots_free < 2) {
		wr->send_flags |= IBV_SEND_SIGNALED;
		rp->slots[slot].covers = rp->unsignaled;
		rp->unsignaled = 0;
		sig_posted(rp);
	}
}

/*
 * Request/reply's case, without post_sends' general loop: one small
 * message queued alone, nothing else owed, credits and slots to spare.
 * It goes as one inline SEND of its header and payload (a small buffer
 * keeps them in one piece).  Returns false, having done nothing, when the
 * case does not apply.
 */
static RIFT_HOT_INLINE bool post_one(struct rdma_path *rp, bool late)
{
	rift__path *p = &rp->base;
	rift_conn *conn = p->conn;
	struct rift__omsg *m;
	struct ibv_send_wr *wr = &rp->send_wr;
	rift__vb_err err;
	uint32_t slot, len, bare_imm;
	bool bare;
	int rc;

	if (rp->cur || rp->ctrl_off < rp->ctrl_len || p->pending ||
	    rp->credits < 2 || rp->slots_free < 2 || !conn ||
	    !(m = rift__sess_peek(p)) || m->next ||
	    (uint8_t *)m->data != m->hdr + RIFT_HDR_SIZE)
		return false;
	len = (uint32_t)(RIFT_HDR_SIZE + m->len);
	if (len > rp->inline_max || len > rp->buf_size || len > rp->peer_buf ||
	    rndv_maybe(rp))
		return false;
	bare = bare_ok(rp, m, &bare_imm);
	if (rift__sess_next(p, NULL) != m)
		return false;
	slot = rp->slot_next;
	/* inline: no lkey */
	if (bare) {
		rp->send_sge.addr = (uintptr_t)m->data;
		rp->send_sge.length = (uint32_t)m->len;
		wr->num_sge = m->len ? 1 : 0;
		rp->bare_sends++;
	} else {
		rp->send_sge.addr = (uintptr_t)m->hdr;
		rp->send_sge.length = len;
		wr->num_sge = 1;
	}
	wr->wr_id = WR_TAG(rp) | slot;
	wr->send_flags = IBV_SEND_INLINE;
	send_taken(rp, wr, slot, bare ? bare_imm : 0);
	data_posted(rp);
	rift__sess_written(p, m);
	rc = rift__vb_post_send(rctx_of(p->ctx)->dp_calls, rp->qp, wr, err);
	if (rc) {
		if (late) {
			rp->late_rc = rc;
			memcpy(rp->late_err, err, sizeof(rp->late_err));
		} else {
			rift__path_failed(p, rc, "%s", err);
		}
		return true;
	}
	if (conn->credit_stalled)
		rift__metrics_credit_stall(p, false);
	p->last_tx_us = p->ctx->now_us;
	return true;
}

/* From on_recv of a lone message (drain_once): the reply alone, at once.
 * Credits, owed control frames and re-posting follow in the flush after
 * the delivery. */
bool rift__rdma_send_now(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	if (!rp->established)
		return false;
	if (rift__fault_hit(RIFT_FAULT_RDMA_SEND)) {
		/* As rift__rdma_flush_now's, reported when on_recv returns; the
		 * message waits in the session for the next path. */
		rp->late_rc = RIFT_ECONNRESET;
		snprintf(rp->late_err, sizeof(rp->late_err),
			 "send: link dropped (fault point)");
		return true;
	}
	if (!post_one(rp, true))
		return false;
	rp->now_sends++;
	return true;
}

/*
 * A keepalive PING is due but the peer has returned no credit for it: a
 * link that died while our window was closed would then show only when
 * keepalive_timeout_ms ran out (seen: a 6 s stall after 100% loss on a
 * link, the side that was only receiving).  A zero-length RDMA WRITE needs
 * no credit, no receive buffer and no key (C9-88), but it is acknowledged
 * by the peer's QP like any request: on a dead link it fails with retry
 * exceeded within the QP's retry budget, and the path with it.  Once per
 * keepalive interval at most.
 */
static void probe(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	rift__vb_err err;
	int rc;

	if (!rp->slots_free || p->state != RIFT_PATH_ATTACHED ||
	    p->ctx->now_us - rp->probe_us <
		    (uint64_t)p->cfg->keepalive_interval_ms * 1000u)
		return;
	rp->probe_us = p->ctx->now_us;
	rc = rift__rdma_post_zero_write(rp, NULL, err);
	if (rc)
		rift__path_failed(p, rc, "%s", err);
}

/* A signaled zero-length RDMA WRITE in the next send slot (one must be
 * free), which also covers the unsignaled sends before it; its slot in
 * *slot when asked.  0 or the error, in err. */
int rift__rdma_post_zero_write(struct rdma_path *rp, uint32_t *slot,
			       rift__vb_err err)
{
	struct ibv_send_wr wr;
	uint32_t s = rp->slot_next;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_TAG(rp) | s;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	rp->slots[s].covers = rp->unsignaled + 1;
	rp->slots[s].rd_len = 0;
	rp->unsignaled = 0;
	sig_posted(rp);
	rp->slots_free--;
	rp->slot_next = ring_next(s, rp->sq_depth);
	if (slot)
		*slot = s;
	return rift__vb_post_send(rctx_of(rp->base.ctx)->dp_calls, rp->qp, &wr,
				  err);
}

/*
 * The path's ERROR frame, out of band (OOB_IMM), to a peer that takes it
 * so: in a SEND of its own, not after what the stream still holds (the
 * rest of a message being copied, rendezvous the peer has not fetched),
 * on the last credit if need be.  It goes before anything else of this
 * flush; nothing follows on a path that said it.  False if it cannot go
 * (no peer support, no credit or slot: then it goes in the stream).
 */
static bool post_error_oob(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	rift__vb_err err;
	uint32_t slot = rp->slot_next, len;
	int rc;

	if (!rp->peer_oob || rp->credits < 1 || !rp->slots_free ||
	    rp->buf_size < RIFT_ERROR_FRAME_MAX ||
	    rp->peer_buf < RIFT_ERROR_FRAME_MAX)
		return false;
	len = (uint32_t)rift__sess_error_frame(p, slot_buf(rp, slot));
	sge = (struct ibv_sge){ .addr = (uintptr_t)slot_buf(rp, slot),
				.length = len,
				.lkey = rp->slkey[slot] };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_TAG(rp) | slot;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (len <= rp->inline_max)
		wr.send_flags |= IBV_SEND_INLINE;
	send_taken(rp, &wr, slot, OOB_IMM);
	rc = rift__vb_post_send(rctx_of(p->ctx)->dp_calls, rp->qp, &wr, err);
	if (rc)
		rift__path_failed(p, rc, "%s", err);
	return true;
}

static RIFT_HOT_INLINE void post_sends(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	struct ibv_send_wr wrs[32], *first = NULL, *last = NULL;
	struct ibv_sge sges[32][2];
	uint32_t cap, credit_only = rp->rq_depth / 4;
	rift__vb_err err;
	bool desc_retry = false;
	int nwr = 0, rc;

	if (__builtin_expect(p->pending & RIFT_PEND_ERROR, 0) &&
	    post_error_oob(rp))
		return;
	if (post_one(rp, false))
		return;
	cap = rp->buf_size < rp->peer_buf ? rp->buf_size : rp->peer_buf;
	for (;;) {
		/* The last credit is kept for credit updates, so that both
		 * ends can always tell each other of room; or for an ERROR
		 * frame between messages, the path's last word. */
		bool data = (rp->credits >= 2 ||
			     (rp->credits == 1 && !rp->cur &&
			      rp->ctrl_off >= rp->ctrl_len &&
			      (p->pending & RIFT_PEND_ERROR))) &&
			    has_output(rp);
		/* The last credit only carries credits back. */
		bool update = !data && rp->credits >= 1 &&
			      rp->to_return >= (credit_only ? credit_only : 1);
		struct ibv_send_wr *wr;
		uint32_t slot, len = 0, imm = 0;
		bool inl = false;
		int nsge = 0;

		if ((!data && !update) || rp->slots_free == 0 || nwr == 32)
			break;
		slot = rp->slot_next;
		wr = &wrs[nwr];
		memset(wr, 0, sizeof(*wr));
		/* A large message at a frame boundary: only its descriptor
		 * goes, from the slot (fill stops in front of one), behind
		 * the BIND_MW of the window the peer READs it through (a
		 * work request and a slot of its own). */
		if (data && rndv_maybe(rp) && nwr + 2 <= 32 &&
		    rp->slots_free >= 3 &&
		    rift__rdma_rndv_desc(
			    rp, slot_buf(rp, ring_next(slot, rp->sq_depth)),
			    wr)) {
			wr->wr_id = WR_TAG(rp) | slot;
			slot_taken(rp, wr, slot);
			data_posted(rp);
			if (last)
				last->next = wr;
			else
				first = wr;
			last = wr;
			nwr++;
			slot = rp->slot_next;
			wr = &wrs[nwr];
			memset(wr, 0, sizeof(*wr));
			len = RNDV_DESC_SIZE;
			imm = RNDV_IMM;
			sges[nwr][0] = (struct ibv_sge){
				.addr = (uintptr_t)slot_buf(rp, slot),
				.length = len,
				.lkey = rp->slkey[slot] };
			wr->sg_list = sges[nwr];
			wr->num_sge = 1;
		} else if (data && (len = direct(rp, sges[nwr], cap,
						 slot_buf(rp, slot),
						 rp->slkey[slot], &inl, &nsge,
						 &imm)) > 0) {
			/* The payload from where it is: the slot holds at
			 * most the frame header. */
			wr->sg_list = sges[nwr];
			wr->num_sge = nsge;
			if (!inl)
				rp->zc_sends++;
			data_posted(rp);
		} else {
			if (data)
				len = (uint32_t)fill(rp, slot_buf(rp, slot), cap);
			/* Nothing but owed control bits that encoded to nothing
			 * in front of a rendezvous message: its descriptor,
			 * from the top (once). */
			if (data && len == 0 && rndv_maybe(rp) && !desc_retry) {
				desc_retry = true;
				continue;
			}
			if (data && len == 0)
				break;
			sges[nwr][0] = (struct ibv_sge){
				.addr = (uintptr_t)slot_buf(rp, slot),
				.length = len,
				.lkey = rp->slkey[slot] };
			wr->sg_list = len ? sges[nwr] : NULL;
			wr->num_sge = len ? 1 : 0;
		}
		wr->wr_id = WR_TAG(rp) | slot;
		wr->opcode = IBV_WR_SEND_WITH_IMM;
		if (len <= rp->inline_max)
			wr->send_flags |= IBV_SEND_INLINE;
		send_taken(rp, wr, slot, imm);
		if (last)
			last->next = wr;
		else
			first = wr;
		last = wr;
		nwr++;
		if (update)
			break;
	}
	if (!first) {
		rift__metrics_credit_stall(p, rp->credits < 2 && has_output(rp));
		if ((p->pending & RIFT_PEND_PING) && rp->credits < 2)
			probe(rp);
		return;
	}
	/* A batch may end unsignaled: its slots come back with the next
	 * signaled send, at the latest when slots run low (above).  Nothing
	 * waits for them before that, and request/reply traffic then costs
	 * one completion per message (the receive), not two. */
	rc = rift__vb_post_send(rctx_of(p->ctx)->dp_calls, rp->qp, first, err);
	if (rc) {
		rift__path_failed(p, rc, "%s", err);
		return;
	}
	/* Bookkeeping after the doorbell, off the request/reply path. */
	RIFT_DEBUG(p->ctx, "%s: posted %d sends, credits left %u", p->peer,
		   nwr, rp->credits);
	rift__metrics_credit_stall(p, rp->credits < 2 && has_output(rp));
	p->last_tx_us = p->ctx->now_us;
	if (has_output(rp) && rp->credits >= 2 && rp->slots_free)
		rift__path_kick(p); /* batch limit reached: go on next round */
}
