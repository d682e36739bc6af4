/*
 * rdma_wc.c - completions of the verbs transport: each to its path through
 * the (device, QP number) table, a poll batch at a time, then the paths
 * touched are drained and flushed; completion events, arming and busy
 * polling.
 */
#include <arpa/inet.h>
#include <stdlib.h>

#include "transports/verbs/rdma_int.h"

/* ---- (device, QP number) -> path: completions find their path ---- */

static inline uint32_t qpt_slot(uint32_t qpn, uint32_t mask)
{
	uint32_t h = qpn * 0x9e3779b1u;

	return (h ^ (h >> 15)) & mask;
}

int rift__rdma_qpt_add(struct rift__rdma_ctx *r, struct rdma_path *rp)
{
	uint32_t i;

	if (!r->qpt || r->qpt_n >= r->qpt_mask + 1) {
		uint32_t n = r->qpt ? 2 * (r->qpt_mask + 1) : 64;
		struct rdma_path **t = calloc(n, sizeof(*t));

		if (!t)
			return RIFT_ENOMEM;
		for (uint32_t k = 0; r->qpt && k <= r->qpt_mask; k++)
			while (r->qpt[k]) {
				struct rdma_path *e = r->qpt[k];

				r->qpt[k] = e->hnext;
				i = qpt_slot(e->qpn, n - 1);
				e->hnext = t[i];
				t[i] = e;
			}
		free(r->qpt);
		r->qpt = t;
		r->qpt_mask = n - 1;
	}
	i = qpt_slot(rp->qpn, r->qpt_mask);
	rp->hnext = r->qpt[i];
	r->qpt[i] = rp;
	r->qpt_n++;
	rp->hashed = true;
	return 0;
}

void rift__rdma_qpt_del(struct rift__rdma_ctx *r, struct rdma_path *rp)
{
	struct rdma_path **pp;

	if (!rp->hashed)
		return;
	for (pp = &r->qpt[qpt_slot(rp->qpn, r->qpt_mask)]; *pp;
	     pp = &(*pp)->hnext)
		if (*pp == rp) {
			*pp = rp->hnext;
			r->qpt_n--;
			break;
		}
	rp->hashed = false;
}

/*
 * The live path a completion of a CQ on device d belongs to, or NULL: its
 * QP is gone, or the QP number is another path's now (the tag in wr_id
 * says).  QP numbers are per device: two devices of a context (the pair
 * topology's client and server ends) may both have a QP 17.
 */
static RIFT_HOT_INLINE struct rdma_path *wc_path(struct rift__rdma_ctx *r,
						 const struct cq_dev *d,
						 const struct ibv_wc *w)
{
	struct rdma_path *rp;

	if (!r->qpt)
		return NULL;
	for (rp = r->qpt[qpt_slot(w->qp_num, r->qpt_mask)]; rp; rp = rp->hnext)
		if (rp->qpn == w->qp_num && rp->scq->dev == d)
			return rp->tag == WR_TAG_OF(w->wr_id) ? rp : NULL;
	return NULL;
}

/* ---- completions ---- */

/*
 * One completion of a live path.  Receives queue their buffers for
 * rift__rdma_drain_recvs; signaled sends give their slots back.  An error
 * fails this path only.  Returns whether the path has work to do now (a
 * completion that succeeded).
 */
static RIFT_HOT_INLINE bool wc_take(struct rdma_path *rp, struct ibv_wc *w)
{
	rift__path *p = &rp->base;

	if (__builtin_expect(w->status != IBV_WC_SUCCESS, 0)) {
		rift__metrics_wc_error(p, w->status);
		if (w->status == IBV_WC_WR_FLUSH_ERR)
			return false; /* follows the first error */
		if (w->wr_id & READ_FLAG) {
			rift__rdma_rndv_read_failed(rp, w);
			return false;
		}
		/* A one-sided piece: the frames redo it (a key revoked
		 * meanwhile, a QP the peer tore down); the path goes as for
		 * any failed completion. */
		if (w->wr_id & RMA_FLAG)
			rift__rdma_rma_done(rp, WR_IDX(w->wr_id),
					    w->status == IBV_WC_REM_ACCESS_ERR
						    ? RIFT_EACCES
						    : RIFT_EIO);
		rift__path_failed_why(
			p, RIFT_PATH_DOWN_COMPLETION, RIFT_ECONNRESET,
			"%s completion error: %s (vendor error 0x%x)",
			(w->wr_id & RECV_FLAG) ? "receive" : "send",
			rift__vb_wc_str(w->status), w->vendor_err);
		return false;
	}
	if (w->wr_id & RECV_FLAG) {
		uint32_t i = WR_IDX(w->wr_id);
		uint32_t tail = ring_add(rp->pend_head, rp->pend_n, rp->rq_depth);
		uint32_t imm = (w->wc_flags & IBV_WC_WITH_IMM)
				       ? ntohl(w->imm_data)
				       : 0;

		rp->credits += imm & CREDIT_MASK;
		if (rp->credits > rp->peer_rq) {
			rift__path_failed(p, RIFT_EPROTO,
					  "peer returned more credits than it "
					  "has buffers (%u, it announced %u)",
					  rp->credits, rp->peer_rq);
			return false;
		}
		if (__builtin_expect((imm & OOB_IMM) == OOB_IMM, 0)) {
			rift__rdma_oob_frame(rp, i, w->byte_len);
			return false;
		}
		rp->pend[tail] = i | (imm & ~CREDIT_MASK);
		rp->pend_len[tail] = w->byte_len;
		rp->pend_n++;
		p->last_rx_us = p->ctx->now_us;
	} else {
		uint32_t slot = WR_IDX(w->wr_id);

#ifdef RIFT_FAULT_INJECTION
		/* Test builds: a send queue that never completes again. */
		if (rp->sq_stuck ||
		    (!p->is_client && !p->standby &&
		     p->state == RIFT_PATH_ATTACHED &&
		     rift__fault_hit(RIFT_FAULT_SQ_STUCK))) {
			rp->sq_stuck = true;
			return false;
		}
#endif
		rp->slots_free += rp->slots[slot].covers;
		rp->sig_out--;
		rp->tx_progress_us = p->ctx->now_us;
		if (w->wr_id & READ_FLAG)
			rift__rdma_rndv_read_done(rp, slot);
		else if (w->wr_id & RMA_FLAG)
			rift__rdma_rma_done(rp, slot, 0);
		if (__builtin_expect(rp->inv_due != 0, 0))
			rift__rdma_rma_inv_due(rp);
	}
	return true;
}

/*
 * A path's completions of one poll batch are in: deliver, and flush it
 * now, not after the other paths of the CQ: a reply the application
 * queued from on_recv goes out at once (request/reply latency is the time
 * from a completion to the next SEND), and the receive buffers go back
 * with it.
 */
static RIFT_HOT_INLINE void wc_done(struct rdma_path *rp)
{
	rift__path *p = &rp->base;

	if (p->state == RIFT_PATH_DEAD || rift__rdma_drain_recvs(rp) < 0)
		return;
	rift__path_unqueue(p); /* flushed now, not again this round */
	rift__rdma_flush_now(rp);
	if (p->state != RIFT_PATH_DEAD)
		rift__sess_after_flush(p);
}

/*
 * Take every completion of a shared CQ, poll_batch at a time, each to its
 * path by QP number; after each batch the paths it touched are served.
 * Completions of a path that died are dropped (its flushed requests), and
 * so are those a destroyed QP left behind (its QP number unknown, or
 * another path's now: the tag in wr_id differs).  Returns how many
 * completions were taken.
 */
/*
 * The per-message work of a poll: n completions to their paths, then each
 * path touched is served.  Apart from rift__rdma_cq_poll only so that a
 * profiling build (-DRIFT_PROF_BATCH) can count it on its own.
 */
#ifdef RIFT_PROF_BATCH
__attribute__((noinline))
#else
RIFT_HOT_INLINE
#endif
static void cq_batch(struct rift__rdma_ctx *r, struct shared_cq *s,
		     struct ibv_wc *wc, int n)
{
	rift_ctx *ctx = r->ctx;
	struct rdma_path *touched[MAX_POLL];
	uint32_t seq = ++r->poll_seq;
	int nt = 0;

	if (seq == 0)
		seq = ++r->poll_seq; /* 0 marks a path never touched */
	for (int k = 0; k < n; k++) {
		struct rdma_path *rp = wc_path(r, s->dev, &wc[k]);

		if (!rp) {
			ctx->stats.wc_stale++;
			continue;
		}
		if (rp->base.state == RIFT_PATH_DEAD) {
			if (rp->last_word && !(wc[k].wr_id & RECV_FLAG))
				rift__rdma_last_word_wc(rp, &wc[k]);
			else
				ctx->stats.wc_dropped++;
			continue;
		}
		if (wc_take(rp, &wc[k]) && rp->touched != seq) {
			rp->touched = seq;
			touched[nt++] = rp;
		}
	}
	for (int k = 0; k < nt; k++)
		wc_done(touched[k]);
}

static RIFT_HOT_INLINE int cq_poll_inline(struct rift__rdma_ctx *r,
					  struct shared_cq *s)
{
	rift_ctx *ctx = r->ctx;
	struct ibv_wc wc[MAX_POLL];
	uint32_t batch = ctx->cfg.poll_batch;
	bool empty = false;
	int n, total = 0;

	/* A path torn down from a callback of this poll (cm=tcp side
	 * channel) must not poll again under it. */
	if (s->polling || s->failed)
		return 0;
	s->polling = true;
	while ((n = rift__vb_poll(r->dp_calls, s->cq, (int)batch, wc)) > 0) {
		cq_batch(r, s, wc, n);
		total += n;
		/* A short batch emptied the CQ: the next round polls again. */
		if (n < (int)batch) {
			empty = true;
			break;
		}
	}
	s->polling = false;
	if (n == 0)
		empty = true;
	if (n < 0) {
		rift__rdma_cq_fail(s, "ibv_poll_cq failed");
		return total;
	}
	/* Whatever destroyed QPs left in it is gone now. */
	if (empty && s->stale) {
		s->used -= s->stale;
		s->stale = 0;
	}
	return total;
}

/* cq_poll_inline, for the callers off the busy loop's path. */
int rift__rdma_cq_poll(struct rift__rdma_ctx *r, struct shared_cq *s)
{
	return cq_poll_inline(r, s);
}

/* The completion channel of a device: the event names the CQ. */
void rift__rdma_cq_event_cb(rift__io *io, uint32_t revents)
{
	struct cq_dev *d = rift__container_of(io, struct cq_dev, cch_io);
	struct rift__rdma_ctx *r = d->r;
	/* Busy and adaptive polling take completions without events; they
	 * arm the CQs again only before sleeping (rift__rdma_arm). */
	bool rearm = r->ctx->cfg.polling == RIFT_POLL_EVENT;
	struct ibv_cq *cq;
	rift__vb_err err;
	int rc;

	RIFT_UNUSED(revents);
	while ((rc = rift__vb_cq_next_event(r->dp_calls, d->cch, &cq, err)) ==
	       0) {
		struct shared_cq *s = cq->cq_context;

		s->armed = false;
		if (rearm && !s->failed) {
			if (rift__vb_cq_arm(r->dp_calls, s->cq, err)) {
				rift__rdma_cq_fail(s, err);
				continue;
			}
			s->armed = true;
		}
		/* Re-armed before this poll, so nothing that completes from
		 * now on is missed. */
		rift__rdma_cq_poll(r, s);
	}
	if (rc != RIFT_EAGAIN)
		RIFT_DEBUG(r->ctx, "%s", err);
}

/*
 * Before a busy or adaptive loop sleeps: ask every CQ for an event on its
 * next completion.  Returns how many CQs were armed just now; if any, the
 * caller must poll once more before sleeping, for what completed before
 * the request (it would raise no event).
 */
int rift__rdma_arm(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = rctx_of(ctx);
	struct rift__list *it;
	rift__vb_err err;
	int n = 0;

	if (!r)
		return 0;
	for (it = r->cqs.next; it != &r->cqs; it = it->next) {
		struct shared_cq *s = rift__list_entry(it, struct shared_cq,
						       node);

		if (!s->holders || s->armed || s->failed)
			continue;
		if (rift__vb_cq_arm(r->dp_calls, s->cq, err)) {
			rift__rdma_cq_fail(s, err);
			continue;
		}
		s->armed = true;
		n++;
	}
	return n;
}

/*
 * Busy and adaptive polling: take completions straight from the context's
 * shared CQs each round, without waiting for the channel's wake-up (which
 * costs a trip through the kernel and, on some hosts, milliseconds).  The
 * loop spins on them while ctx->n_polled_paths (paths holding a CQ share)
 * is not 0.
 */
int rift__rdma_poll(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = rctx_of(ctx);
	struct rift__list *it;
	int total = 0;

	if (!r)
		return 0;
	for (it = r->cqs.next; it != &r->cqs; it = it->next) {
		struct shared_cq *s = rift__list_entry(it, struct shared_cq,
						       node);

		if (s->holders || s->stale)
			total += cq_poll_inline(r, s);
	}
	return total;
}
