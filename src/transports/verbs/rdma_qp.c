/*
 * rdma_qp.c - what a verbs path needs before it connects: room on a shared
 * CQ, receive buffers and send slots from the registered pool, and the QP
 * in INIT with its receives posted; made on demand, or ahead of time by a
 * listener's prepared-QP pool (rdma.qp_pool_count).  And a new path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transports/verbs/rdma_int.h"

/* ---- path resources: made on demand or prepared ahead ---- */

static int post_recv(struct rdma_path *rp, uint32_t i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)recv_buf(rp, i),
			       .length = rp->buf_size,
			       .lkey = rp->rlkey[i] };
	struct ibv_recv_wr wr = { .wr_id = WR_TAG(rp) | RECV_FLAG | i,
				  .sg_list = &sge, .num_sge = 1 };
	rift__vb_err err;
	int rc = rift__vb_post_recv(rctx_of(rp->base.ctx)->dp_calls, rp->qp,
				    &wr, err);

	if (rc)
		rift__path_failed(&rp->base, rc, "%s", err);
	return rc;
}

static uint32_t tag_next(struct rift__rdma_ctx *r)
{
	r->next_tag = (r->next_tag + 1) & TAG_MASK;
	if (r->next_tag == 0)
		r->next_tag = 1;
	return r->next_tag;
}

/* Take n blocks of the pool for one use, with their keys on the device. */
static int take_blocks(struct rift__pool *pool, struct qp_res *r,
		       uint8_t **bufs, uint32_t *lkeys, uint32_t n,
		       enum rift__pool_use use, char *err, size_t errlen)
{
	uint32_t rkey;
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		bufs[i] = rift__pool_alloc_reserve(pool, r->buf_size, use, &rc,
						   err, errlen);
		if (!bufs[i])
			return rc;
		if (!rift__pool_keys(pool, bufs[i], r->dev_slot, &lkeys[i],
				     &rkey)) {
			snprintf(err, errlen, "pool block without a key");
			return RIFT_EIO;
		}
	}
	return 0;
}

static void res_free(rift_ctx *ctx, struct qp_res *r)
{
	struct rift__pool *pool = ctx->pool;

	rift__vb_qp_destroy(r->qp);
	if (r->scq)
		rift__rdma_cq_release(rctx_of(ctx), r->scq, r->need,
				      r->qp != NULL);
	/* The QP is gone, so no DMA touches the blocks any more. */
	for (uint32_t i = 0; r->rbufs && i < r->rq_depth; i++)
		if (r->rbufs[i])
			rift__pool_free(pool, r->rbufs[i], RIFT_POOL_RECV);
	for (uint32_t i = 0; r->sbufs && i < r->sq_depth; i++)
		if (r->sbufs[i])
			rift__pool_free(pool, r->sbufs[i], RIFT_POOL_SEND);
	free(r->rbufs);
	free(r->sbufs);
	free(r->rlkey);
	free(r->slkey);
	memset(r, 0, sizeof(*r));
}

/* The QP (RESET) to INIT on port: receives may be posted from here on. */
static int qp_to_init(struct ibv_qp *qp, uint8_t port, rift__vb_err err)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	return rift__vb_qp_modify(qp, &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				  "INIT", err);
}

static int post_all(rift_ctx *ctx, struct qp_res *r, char *err,
		    size_t errlen)
{
	rift__vb_err verr;

	for (uint32_t i = 0; i < r->rq_depth; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)r->rbufs[i],
				       .length = r->buf_size,
				       .lkey = r->rlkey[i] };
		struct ibv_recv_wr wr = {
			.wr_id = (uint64_t)r->tag << TAG_SHIFT | RECV_FLAG | i,
			.sg_list = &sge, .num_sge = 1 };
		int rc = rift__vb_post_recv(rctx_of(ctx)->dp_calls, r->qp,
					    &wr, verr);

		if (rc) {
			snprintf(err, errlen, "%s", verr);
			return rc;
		}
	}
	r->posted = true;
	return 0;
}

/*
 * Everything but the connection: room on a shared CQ, buffers and
 * (with_qp: cm=tcp, or an rdmacm accept) the QP in INIT on port with its
 * receives posted.  0, or RIFT_E* with err and
 * *fb (the fallback reason) set and nothing left behind.
 */
static int res_make(rift_ctx *ctx, struct ibv_context *verbs, uint8_t port,
		    bool with_qp, struct qp_res *r, rift_fallback_reason *fb,
		    char *err, size_t errlen)
{
	rift_config *cfg = &ctx->cfg;
	struct rift__pool *pool = ctx->pool;
	struct rift__vb_qp_caps caps = {
		.sq_depth = cfg->sq_depth,
		.rq_depth = cfg->rq_depth,
		.max_send_sge = cfg->max_send_sge,
		.max_recv_sge = 1, /* a receive is one buffer */
		.inline_max = cfg->inline_threshold,
	};
	rift__vb_err verr;
	int rc, d;

	memset(r, 0, sizeof(*r));
	rift__list_init(&r->node);
	r->verbs = verbs;
	r->port = port;
	r->buf_size = cfg->block_size[0];
	r->rq_depth = cfg->rq_depth;
	r->sq_depth = cfg->sq_depth;
	r->inline_max = cfg->inline_threshold;
	*fb = RIFT_FALLBACK_REG_MR;
	rc = rift__rdma_dev_pd(pool, verbs, &d, err, errlen);
	if (rc)
		return rc;
	r->pd = rift__rdma_devs[d].pd;
	r->dev_slot = rift__rdma_devs[d].slot;
	*fb = RIFT_FALLBACK_NONE;
	/* Sends and READs share the send slots: sq_depth + rq_depth is all
	 * a QP can have completing at once. */
	r->need = r->sq_depth + r->rq_depth;
	r->tag = tag_next(rctx_of(ctx));
	rc = rift__rdma_cq_reserve(ctx, verbs, r->need, &r->scq, err, errlen);
	if (rc)
		goto fail;
	if (with_qp) {
		rc = rift__vb_qp_create(r->pd, r->scq->cq, &caps, &r->qp, verr);
		if (!rc) {
			r->inline_max = caps.inline_max;
			rc = qp_to_init(r->qp, port, verr);
		}
	}
	if (rc) {
		snprintf(err, errlen, "%s", verr);
		goto fail;
	}
	r->rbufs = calloc(r->rq_depth, sizeof(*r->rbufs));
	r->rlkey = calloc(r->rq_depth, sizeof(*r->rlkey));
	r->sbufs = calloc(r->sq_depth, sizeof(*r->sbufs));
	r->slkey = calloc(r->sq_depth, sizeof(*r->slkey));
	if (!r->rbufs || !r->rlkey || !r->sbufs || !r->slkey) {
		snprintf(err, errlen, "out of memory for buffers");
		rc = RIFT_ENOMEM;
		goto fail;
	}
	*fb = RIFT_FALLBACK_REG_MR;
	rc = take_blocks(pool, r, r->rbufs, r->rlkey, r->rq_depth,
			 RIFT_POOL_RECV, err, errlen);
	if (!rc)
		rc = take_blocks(pool, r, r->sbufs, r->slkey, r->sq_depth,
				 RIFT_POOL_SEND, err, errlen);
	if (rc)
		goto fail;
	*fb = RIFT_FALLBACK_NONE;
	if (r->qp) {
		rc = post_all(ctx, r, err, errlen);
		if (rc)
			goto fail;
	}
	return 0;

fail:
	res_free(ctx, r);
	return rc;
}

static void pool_schedule(struct rdma_listener *rl, uint64_t delay_ms);

/*
 * A prepared resource set for (verbs, port), or NULL.  The pool follows
 * the device and port connections arrive on: a miss on another retargets
 * it (a wildcard listener learns its device from the first accept).  Both
 * cm modes hold QPs in INIT, and INIT binds a QP to its port.
 */
static bool pool_take(struct rdma_listener *rl, struct ibv_context *verbs,
		      uint8_t port, struct qp_res *out)
{
	rift_ctx *ctx = rl->l->ctx;
	struct rift__list *it;

	if (!ctx->cfg.qp_pool_count)
		return false;
	for (it = rl->prep.next; it != &rl->prep;) {
		struct qp_res *r = rift__list_entry(it, struct qp_res, node);

		it = it->next;
		if (r->scq->failed) {
			/* Its CQ overflowed: of no use any more. */
			rift__list_del(&r->node);
			rl->n_prep--;
			res_free(ctx, r);
			free(r);
			continue;
		}
		if (r->verbs == verbs && r->port == port) {
			rift__list_del(&r->node);
			rl->n_prep--;
			*out = *r;
			rift__list_init(&out->node);
			free(r);
			ctx->stats.qp_pool_hits++;
			pool_schedule(rl, 0);
			return true;
		}
	}
	ctx->stats.qp_pool_misses++;
	if (rl->prep_verbs != verbs || rl->prep_port != port) {
		while (!rift__list_empty(&rl->prep)) {
			struct qp_res *r = rift__list_entry(rl->prep.next,
							    struct qp_res, node);

			rift__list_del(&r->node);
			res_free(ctx, r);
			free(r);
		}
		rl->n_prep = 0;
		rl->prep_verbs = verbs;
		rl->prep_port = port;
		rl->refill_fails = 0;
	}
	pool_schedule(rl, 0);
	return false;
}

/*
 * Refill from the loop, a few sets a round so a large pool does not stall
 * it; a failure (pool share used up, device gone) backs off.
 */
#define REFILL_PER_ROUND 4

static void refill_cb(rift_timer *t, void *user)
{
	struct rdma_listener *rl = user;
	rift_ctx *ctx = rl->l->ctx;
	char err[RIFT_ERRMSG_LEN];

	RIFT_UNUSED(t);
	for (int k = 0; k < REFILL_PER_ROUND &&
			rl->n_prep < ctx->cfg.qp_pool_count && rl->prep_verbs;
	     k++) {
		struct qp_res *r = malloc(sizeof(*r));
		rift_fallback_reason fb;

		if (!r || res_make(ctx, rl->prep_verbs, rl->prep_port, true, r,
				   &fb, err, sizeof(err))) {
			RIFT_DEBUG(ctx, "prepared-QP pool: %s",
				   r ? err : "out of memory");
			free(r);
			rl->refill_fails++;
			pool_schedule(rl, rl->refill_fails < 10
						  ? 100u << rl->refill_fails
						  : 60000);
			return;
		}
		rl->refill_fails = 0;
		rift__list_add_tail(&rl->prep, &r->node);
		rl->n_prep++;
		ctx->stats.qp_pool_prepared++;
	}
	if (rl->n_prep < ctx->cfg.qp_pool_count && rl->prep_verbs)
		pool_schedule(rl, 0);
}

static void pool_schedule(struct rdma_listener *rl, uint64_t delay_ms)
{
	if (rl->l->ctx->cfg.qp_pool_count && rl->prep_verbs &&
	    !rift__timer_active(&rl->refill))
		rift_timer_start(&rl->refill, delay_ms, 0);
}

void rift__rdma_pool_init(struct rdma_listener *rl, struct ibv_context *verbs,
			  uint8_t port)
{
	rift__list_init(&rl->prep);
	rift__timer_init(rl->l->ctx, &rl->refill, refill_cb, rl);
	rl->prep_verbs = verbs;
	rl->prep_port = port;
	pool_schedule(rl, 0);
}

void rift__rdma_pool_drop(struct rdma_listener *rl, struct ibv_context *verbs)
{
	if (rl->prep_verbs != verbs)
		return;
	/* What it prepared there goes; the next accept on another device
	 * prepares for that one (rift__rdma_pool_take). */
	rift__rdma_pool_free(rl);
	rl->prep_verbs = NULL;
}

void rift__rdma_pool_free(struct rdma_listener *rl)
{
	rift_timer_stop(&rl->refill);
	while (!rift__list_empty(&rl->prep)) {
		struct qp_res *r = rift__list_entry(rl->prep.next,
						    struct qp_res, node);

		rift__list_del(&r->node);
		res_free(rl->l->ctx, r);
		free(r);
	}
	rl->n_prep = 0;
}

/*
 * QP, CQ, buffers from the registered pool and posted receives: everything
 * a path needs before rdma_connect / rdma_accept, or before its bootstrap
 * (cm=tcp).  rp->verbs and rp->port_num say where.  A listener's prepared
 * set is used when it has one for that device.  Fails the path.
 */
int rift__rdma_path_resources(struct rdma_path *rp, struct rdma_listener *rl)
{
	rift__path *p = &rp->base;
	rift_config *cfg = &p->ctx->cfg;
	/* Ours (cm=tcp, or accepting), or rdma_create_qp's (connecting). */
	bool own = rp->tc != NULL || rl != NULL;
	struct qp_res r;
	rift_fallback_reason fb = RIFT_FALLBACK_NONE;
	char err[RIFT_ERRMSG_LEN];
	rift__vb_err verr;
	int rc = 0;

	if (!rl || !pool_take(rl, rp->verbs, rp->port_num, &r))
		rc = res_make(p->ctx, rp->verbs, rp->port_num, own, &r, &fb,
			      err, sizeof(err));
	if (rc) {
		p->fb_reason = fb;
		rift__path_failed(p, rc, "%s", err);
		return rc;
	}
	/* From here the path owns the set: its destruction frees it. */
	rp->pd = r.pd;
	rp->dev_slot = r.dev_slot;
	rp->scq = r.scq;
	rp->cq_need = r.need;
	rp->tag = r.tag;
	rift__list_add_tail(&r.scq->users, &rp->cq_node);
	p->ctx->n_polled_paths++; /* busy polling takes its completions */
	rift__list_add_tail(&rctx_of(p->ctx)->paths, &rp->poll_node);
	rp->qp = r.qp;
	rp->user_qp = rp->id && r.qp;
	rp->rbufs = r.rbufs;
	rp->rlkey = r.rlkey;
	rp->sbufs = r.sbufs;
	rp->slkey = r.slkey;
	rp->buf_size = r.buf_size;
	rp->rq_depth = r.rq_depth;
	rp->sq_depth = r.sq_depth;
	rp->inline_max = r.inline_max;
	{
		uint8_t rd, init;
		uint32_t max_msg;
		bool mw;

		/* One depth both ways: READs we issue, READs we serve. */
		rift__rdma_dev_atoms(rp->verbs, &rd, &init, &max_msg, &mw);
		rp->rd_max = init < RNDV_DEPTH ? init : RNDV_DEPTH;
		if (rd < rp->rd_max)
			rp->rd_max = rd;
		rp->rd_chunk = max_msg < RNDV_CHUNK ? max_msg : RNDV_CHUNK;
		rp->rndv_local = rp->rd_max > 0 && rp->rd_chunk >= 4096;
		/* Serving READs takes a memory window per message. */
		rp->rndv_serve = rp->rndv_local && mw;
	}
	rift__rdma_watch_device(p->ctx, rp->verbs->device);
	rp->slots = calloc(rp->sq_depth, sizeof(*rp->slots));
	rp->pend = calloc(rp->rq_depth, sizeof(*rp->pend));
	rp->pend_len = calloc(rp->rq_depth, sizeof(*rp->pend_len));
	rp->repost = calloc(rp->rq_depth, sizeof(*rp->repost));
	if (!rp->slots || !rp->pend || !rp->pend_len || !rp->repost) {
		rift__path_failed(p, RIFT_ENOMEM, "out of memory for buffers");
		return RIFT_ENOMEM;
	}
	/* Consumed buffers go back in lists of a sixteenth of the queue (at
	 * most 32, the most one post takes): one ibv_post_recv per list,
	 * not per message.  The peer then has at most that many credits
	 * fewer than buffers we could post: it still has fifteen
	 * sixteenths of the queue to send into. */
	rp->repost_batch = rp->rq_depth / 16;
	if (rp->repost_batch > 32)
		rp->repost_batch = 32;
	if (rp->repost_batch == 0)
		rp->repost_batch = 1;
	rp->send_wr = (struct ibv_send_wr){ .sg_list = &rp->send_sge,
					    .num_sge = 1,
					    .opcode = IBV_WR_SEND_WITH_IMM };
	if (!rp->qp) {
		struct rift__vb_qp_caps caps = {
			.sq_depth = cfg->sq_depth,
			.rq_depth = cfg->rq_depth,
			.max_send_sge = cfg->max_send_sge,
			.max_recv_sge = 1, /* a receive is one buffer */
			.inline_max = cfg->inline_threshold,
		};

		rc = rift__vb_qp_create_cm(rp->id, rp->pd, rp->scq->cq, &caps,
					   verr);
		if (rc) {
			rift__path_failed(p, rc, "%s", verr);
			return rc;
		}
		rp->qp = rp->id->qp;
		rp->inline_max = caps.inline_max;
	}
	rp->qpn = rp->qp->qp_num;
	if (rift__rdma_qpt_add(rctx_of(p->ctx), rp)) {
		rift__path_failed(p, RIFT_ENOMEM, "out of memory for the QP "
				  "table");
		return RIFT_ENOMEM;
	}
	rp->slots_free = rp->sq_depth;
	if (!r.posted)
		for (uint32_t i = 0; i < rp->rq_depth; i++) {
			rc = post_recv(rp, i);
			if (rc)
				return rc;
		}
	return 0;
}

struct rdma_path *rift__rdma_path_new(rift_ctx *ctx, bool is_client)
{
	struct rdma_path *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	if (rift__stream_init(&rp->rx, ctx->cfg.tcp_read_buffer)) {
		free(rp);
		return NULL;
	}
	rp->kind = OWNER_PATH;
	rift__list_init(&rp->poll_node);
	rift__list_init(&rp->binds);
	rift__list_init(&rp->cq_node);
	rift__path_init(&rp->base, ctx, &rift__rdma_ops, is_client);
	rift__timer_init(ctx, &rp->dst_timer, rift__rdma_rndv_dst_timer_cb, rp);
	return rp;
}
