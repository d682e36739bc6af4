/*
 * rdma_rx.c - the receive side of the verbs transport: completed receive
 * buffers fed to the session in order, whole frames delivered from the
 * buffer itself (and lent to rift_msg_retain), bare DATA frames given
 * back their header.
 */
#include <string.h>

#include "transports/verbs/rdma_int.h"

/* ---- lending registered memory to rift_msg_retain ---- */

/*
 * rift_msg_retain of a message delivered in place, from zero_copy_threshold
 * up: a rendezvous block is handed over as it is; a receive buffer too,
 * with a fresh block of the receive share posted in its place (once per
 * buffer: a second message in it is copied).
 */
bool rift__rdma_lend_take(struct rift__lend *l, size_t len,
			  struct rift__pool **pool, void **block)
{
	struct rdma_lend *rl = rift__container_of(l, struct rdma_lend, base);
	struct rdma_path *rp = rift__container_of(rl, struct rdma_path, lend);
	struct rift__pool *pl = rp->base.ctx->pool;
	char err[RIFT_ERRMSG_LEN];
	uint32_t lkey, rkey;
	uint8_t *fresh;
	int rc;

	if (len < rp->base.ctx->cfg.zero_copy_threshold)
		return false;
	if (rl->op) {
		if (!rl->op->dst)
			return false;
		*pool = pl;
		*block = rl->op->dst;
		rl->op->dst = NULL; /* not freed after the delivery */
		rp->base.ctx->stats.msgs_retained_in_place++;
		return true;
	}
	if (rp->rbufs[rl->i] != rl->block)
		return false;
	/* Without a block at hand (the pool growing), the message is
	 * copied: nothing on the loop waits for a registration. */
	fresh = rift__pool_try_alloc(pl, rp->buf_size, RIFT_POOL_RECV, &rc, err,
				     sizeof(err));
	if (!fresh)
		return false;
	if (!rift__pool_keys(pl, fresh, rp->dev_slot, &lkey, &rkey)) {
		rift__pool_free(pl, fresh, RIFT_POOL_RECV);
		return false;
	}
	rp->rbufs[rl->i] = fresh; /* posted again in its place */
	rp->rlkey[rl->i] = lkey;
	rp->base.ctx->stats.msgs_retained_in_place++;
	*pool = pl;
	*block = rl->block;
	return true;
}

/* ---- bare DATA frames (BARE_IMM) ---- */

static void bare_refuse(struct rdma_path *rp, const char *why)
{
	rift__path_failed(&rp->base, RIFT_EPROTO, "bare DATA frame refused: %s",
			  why);
}

/*
 * Receiver: the header of a bare frame of len bytes (pending entry e),
 * from the path's last DATA frame.  Whatever it says is then judged as a
 * header would be (rift__path_on_data: sequence, ack, window).  False,
 * the path failed, for a frame no rift peer sends.
 */
static RIFT_HOT_INLINE bool bare_frame(struct rdma_path *rp, uint32_t len,
				       uint32_t e, struct rift__hdr *h)
{
	const rift__path *p = &rp->base;

	if (__builtin_expect(p->rx_data_seq == 0 ||
				     !rift__stream_idle(&rp->rx) ||
				     len > p->ctx->cfg.max_msg_size,
			     0)) {
		bare_refuse(rp, p->rx_data_seq == 0
					? "before any DATA frame on the path"
				: len > p->ctx->cfg.max_msg_size
					? "above max_msg_size"
					: "inside another frame");
		return false;
	}
	h->type = RIFT_FRAME_DATA;
	h->len = len;
	h->seq = p->rx_data_seq + 1;
	h->ack = p->rx_data_ack + ((e >> BARE_SHIFT) & (BARE_DELTA_MAX - 1));
	return true;
}

/* ---- receive side ---- */

/*
 * An ERROR frame the peer sent out of band (OOB_IMM), at once: not behind
 * what the stream holds (a rendezvous this side has not fetched, a
 * message the application stopped receiving).  Anything but one whole
 * ERROR frame is refused.  The path ends either way; its buffer is not
 * posted again.
 */
void rift__rdma_oob_frame(struct rdma_path *rp, uint32_t i, uint32_t len)
{
	rift__path *p = &rp->base;
	const uint8_t *b = recv_buf(rp, i);
	const char *why = "not an ERROR frame";
	struct rift__hdr h;

	if (len > rp->buf_size ||
	    rift__hdr_decode(b, len, p->ctx->cfg.max_msg_size, &h, &why) ||
	    h.type != RIFT_FRAME_ERROR || RIFT_HDR_SIZE + (size_t)h.len != len) {
		rift__path_failed(p, RIFT_EPROTO, "out-of-band frame: %s", why);
		return;
	}
	rift__path_on_frame(p, &h, (void *)(b + RIFT_HDR_SIZE), NULL);
	if (p->state != RIFT_PATH_DEAD)
		rift__path_failed(p, RIFT_ECONNRESET, "peer sent an ERROR frame");
}

/*
 * Feed completed receive buffers into the stream in order.  A buffer whose
 * bytes are all taken is posted again by the flush that follows (its
 * credit comes back then), after the round's sends: a reply the
 * application made to these messages leaves first.
 */
static RIFT_HOT_INLINE int drain_once(struct rdma_path *rp);

int rift__rdma_drain_recvs(struct rdma_path *rp)
{
	int rc;

	/* A refused frame makes the session flush an ERROR frame from
	 * inside this drain; that flush must not drain again (it would
	 * offer the same frame again, and again). */
	if (rp->draining)
		return 0;
	rp->draining = true;
	rc = drain_once(rp);
	rp->draining = false;
	return rc;
}

static RIFT_HOT_INLINE int drain_once(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	int rc = rp->rndv_n ? rift__rdma_rndv_deliver(rp) : 0;

	if (rc)
		return rc;
	while (rp->pend_n) {
		uint32_t e = rp->pend[rp->pend_head];
		uint32_t i = e & PEND_IDX;
		uint32_t len = rp->pend_len[rp->pend_head];
		uint8_t *dst;
		size_t room, n;

		if (e & PEND_RNDV) {
			if (e & PEND_BARE) {
				bare_refuse(rp, "with a rendezvous descriptor");
				return -1;
			}
			/* A descriptor: fetching starts now, so the next ones
			 * can overlap; what follows is delivered after it. */
			rc = rift__rdma_rndv_start(rp, i, len);
			if (rc)
				return rc < 0 ? -1 : 0;
			goto next;
		}
		if (rp->rndv_n)
			return 0; /* stream bytes wait for the rendezvous */

		if (rp->pend_off == 0) {
			uint8_t *b = recv_buf(rp, i), *payload = b;
			struct rift__hdr h;

			/* Whole frames go to the application from the
			 * receive buffer itself: no copy.  Most often the
			 * buffer holds one DATA frame, exactly, bare or
			 * with its header. */
			if (e & PEND_BARE) {
				if (!bare_frame(rp, len, e, &h))
					return -1;
			} else if (rift__stream_idle(&rp->rx) &&
				   rift__hdr_data_exact(b, len,
							p->ctx->cfg.max_msg_size,
							&h)) {
				payload = b + RIFT_HDR_SIZE;
			} else {
				payload = NULL;
			}
			if (payload) {
				/* The last one waiting: its reply may go at
				 * once (rift__rdma_send_now). */
				p->send_now = rp->pend_n == 1;
				lend_begin(rp, i, NULL);
				rc = rift__path_on_data(p, &h, payload);
				lend_end(rp);
				p->send_now = false;
				if (__builtin_expect(rp->late_rc != 0, 0)) {
					rift__path_failed(p, rp->late_rc, "%s",
							  rp->late_err);
					rp->late_rc = 0;
					return -1;
				}
				if (rc < 0 || p->state == RIFT_PATH_DEAD)
					return -1;
				n = len;
			} else {
				lend_begin(rp, i, NULL);
				rc = rift__stream_inplace(p, &rp->rx, b, len, &n);
				lend_end(rp);
				if (rc < 0)
					return -1;
			}
			rp->pend_off = (uint32_t)n;
			rp->inplace_bytes += n;
		}
		if (rp->pend_off < len) {
			rift__stream_space(&rp->rx, &dst, &room);
			n = len - rp->pend_off;
			if (n > room)
				n = room;
			memcpy(dst, recv_buf(rp, i) + rp->pend_off, n);
			rp->pend_off += (uint32_t)n;
			rc = rift__stream_commit(p, &rp->rx, n);
			if (rc < 0)
				return -1;
			if (rp->pend_off < len)
				continue; /* the stream took part; more room now */
		}
next:
		rp->pend_head = ring_next(rp->pend_head, rp->rq_depth);
		rp->pend_n--;
		rp->pend_off = 0;
		/* Re-posted by the flush, after the reply's SEND, in one
		 * list; its credit rides on the next SEND. */
		rp->repost[rp->repost_n++] = i;
	}
	return 0;
}
