/*
 * rdma_rma.c - one-sided access on verbs paths (docs/design/one-sided.md,
 * section 11): the application's regions registered on each device at
 * their first use there, an export's window bound on a path's QP, and
 * the requester's RDMA READ and WRITE through the key the exporter sent.
 *
 * The session decides what goes this way (session/rma.c); anything that
 * cannot (no window, no key, a registration that failed) is served by its
 * RMA frames, as over TCP.  So every error here only costs speed: a
 * window that cannot be bound leaves the export to the frames, a piece
 * whose completion fails is done again by them.
 *
 * Registration: local write and window binding, never remote access of
 * its own (verbs.c, rift__vb_reg_mr): the peer reaches an export only
 * through a type 2 window bound on the session's own QP, over the
 * export's range, with the export's access.  rxe (6.1) checks a window's
 * bounds only against the region under it (tests/lab/README.md): there
 * rift's own checks of the token keep a rift peer to its range.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/pool.h"
#include "session/rma.h"
#include "transports/verbs/rdma_int.h"

/* A region's registrations, one per device (librdmacm's context). */
struct rma_reg {
	struct rift__list node; /* r->rma_regs */
	rift_mem *mem;          /* NULL: deregistered, an MR still busy */
	unsigned n;
	struct {
		struct ibv_context *verbs;
		struct ibv_mr *mr;      /* NULL: registering failed */
	} dev[RIFT_POOL_MAX_DEVICES];
};

/* Deregister what of g can go (on verbs only, or every device: NULL);
 * true when nothing is left.  An MR under a window not deallocated yet
 * (a dead path's, the reaper's to free) refuses: tried again later. */
static bool reg_release(struct rma_reg *g, struct ibv_context *verbs)
{
	unsigned k = 0;

	for (unsigned i = 0; i < g->n; i++) {
		if ((!verbs || g->dev[i].verbs == verbs) &&
		    (!g->dev[i].mr || rift__vb_dereg_mr_try(g->dev[i].mr) == 0))
			continue;
		g->dev[k++] = g->dev[i];
	}
	g->n = k;
	return k == 0;
}

static void reg_free(struct rma_reg *g)
{
	rift__list_del(&g->node);
	free(g);
}

/* Deregistered regions whose MRs were busy: try them again. */
static void regs_retry(struct rift__rdma_ctx *r)
{
	for (struct rift__list *l = r->rma_regs.next; l != &r->rma_regs;) {
		struct rma_reg *g = rift__list_entry(l, struct rma_reg, node);

		l = l->next;
		if (!g->mem && reg_release(g, NULL))
			reg_free(g);
	}
}

/*
 * mem's registration on the device verbs (its PD pd): the one made before,
 * or made now; NULL when there is none (err says why, once: a failed
 * registration is remembered as an MR of NULL, its device's operations
 * then go by frames).
 */
static struct ibv_mr *reg_on(struct rift__rdma_ctx *r, rift_mem *mem,
			     struct ibv_context *verbs, struct ibv_pd *pd,
			     char *err, size_t errlen)
{
	struct rma_reg *g = mem->tr;
	rift__vb_err verr;
	uint8_t rd, init;
	uint32_t max_msg;
	unsigned i;
	bool mw;

	err[0] = '\0';
	for (i = 0; g && i < g->n; i++)
		if (g->dev[i].verbs == verbs)
			return g->dev[i].mr;
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		g->mem = mem;
		rift__list_add_tail(&r->rma_regs, &g->node);
		mem->tr = g;
	}
	if (g->n == RIFT_POOL_MAX_DEVICES) {
		snprintf(err, errlen, "more than %d devices",
			 RIFT_POOL_MAX_DEVICES);
		return NULL;
	}
	i = g->n++;
	g->dev[i].verbs = verbs;
	g->dev[i].mr = NULL;
	if (rift__memlock_check(mem->len, err, errlen))
		return NULL;
	rift__rdma_dev_atoms(verbs, &rd, &init, &max_msg, &mw);
	if (rift__vb_reg_mr(pd, mem->addr, mem->len, mw, &g->dev[i].mr,
			    verr) == 0)
		return g->dev[i].mr;
	snprintf(err, errlen, "%s", verr);
	return NULL;
}

/* mem's registration on rp's device, made at its first use there (a
 * device the context took up after rift_mem_reg); NULL when it cannot be
 * (said once per region and device). */
static struct ibv_mr *reg_of(struct rdma_path *rp, rift_mem *mem)
{
	struct rma_reg *g = mem->tr;
	char err[RIFT_ERRMSG_LEN];
	struct ibv_mr *mr;

	for (unsigned i = 0; g && i < g->n; i++)
		if (g->dev[i].verbs == rp->verbs)
			return g->dev[i].mr;
	mr = reg_on(rctx_of(rp->base.ctx), mem, rp->verbs, rp->pd, err,
		    sizeof(err));
	if (!mr)
		RIFT_WARN(rp->base.ctx,
			  "%s: one-sided access to a region of %zu bytes goes "
			  "through the peer's library on this device: %s",
			  rp->base.peer, mem->len, err);
	return mr;
}

int rift__rdma_mem_reg(rift_ctx *ctx, rift_mem *mem, char *err,
		       size_t errlen)
{
	struct rift__rdma_ctx *r = rctx_of(ctx);

	/* The devices the context holds CQs on: its paths' (one it never
	 * used registers at its first use). */
	for (int k = 0; r && k < r->n_cqdev; k++) {
		struct cq_dev *d = r->cqdev[k];
		struct ibv_pd *pd = d->gone ? NULL : rift__rdma_dev_pd_of(d->verbs);
		char why[RIFT_ERRMSG_LEN];

		if (!pd || reg_on(r, mem, d->verbs, pd, why, sizeof(why)))
			continue;
		snprintf(err, errlen, "on %s: %s",
			 rift__vb_device_name(d->verbs->device), why);
		return strstr(why, "RLIMIT_MEMLOCK") ? RIFT_EMEMLOCK
						     : RIFT_ENOMEM;
	}
	return 0;
}

void rift__rdma_mem_drop(rift_ctx *ctx, rift_mem *mem)
{
	struct rift__rdma_ctx *r = rctx_of(ctx);
	struct rma_reg *g = mem->tr;

	mem->tr = NULL;
	if (!r)
		return;
	if (g) {
		g->mem = NULL;
		if (reg_release(g, NULL))
			reg_free(g);
		else
			RIFT_DEBUG(ctx, "one-sided region deregistered; a "
					"window over it still going");
	}
	regs_retry(r);
}

void rift__rdma_rma_dev_drop(struct rift__rdma_ctx *r,
			     struct ibv_context *verbs)
{
	for (struct rift__list *l = r->rma_regs.next; l != &r->rma_regs;) {
		struct rma_reg *g = rift__list_entry(l, struct rma_reg, node);

		l = l->next;
		/* Before the device's PD goes: the reaper freed the windows
		 * of its paths already (rdma_gone.c's order). */
		if (reg_release(g, verbs) && !g->mem)
			reg_free(g);
	}
}

void rift__rdma_rma_ctx_end(struct rift__rdma_ctx *r)
{
	while (!rift__list_empty(&r->rma_regs)) {
		struct rma_reg *g = rift__list_entry(r->rma_regs.next,
						     struct rma_reg, node);

		if (!reg_release(g, NULL))
			RIFT_WARN(r->ctx, "a one-sided region's registration "
					  "would not go: left to the process");
		if (g->mem)
			g->mem->tr = NULL;
		reg_free(g);
	}
}

/* A signaled work request of its own in the next send slot (one must be
 * free, and one left for credits), as rift__rdma_post_zero_write takes
 * one: it also covers the unsignaled sends before it. */
static uint32_t slot_take(struct rdma_path *rp, struct ibv_send_wr *wr)
{
	uint32_t s = rp->slot_next;

	wr->send_flags |= IBV_SEND_SIGNALED;
	rp->slots[s].covers = rp->unsignaled + 1;
	rp->slots[s].rd_len = 0;
	rp->slots[s].rma_cookie = 0;
	rp->slots[s].rma_read = false;
	rp->unsignaled = 0;
	sig_posted(rp);
	rp->slots_free--;
	rp->slot_next = ring_next(s, rp->sq_depth);
	return s;
}

/* ---- exporter: windows ---- */

int rift__rdma_rma_expose(rift__path *p, rift_mem *mem, uint64_t addr,
			  uint64_t len, unsigned access, uint32_t *rkey,
			  void **win)
{
	struct rdma_path *rp = rp_of(p);
	struct ibv_send_wr wr;
	struct rndv_bind *bd;
	struct ibv_mr *mr;
	rift__vb_err err;
	int rc;

	if (!rp->qp || !rp->rndv_serve || rp->slots_free < 3)
		return RIFT_EAGAIN;
	mr = reg_of(rp, mem);
	if (!mr)
		return RIFT_ENOMEM;
	bd = rift__rdma_win_new(rp, err);
	if (!bd) {
		RIFT_INFO(p->ctx, "%s: one-sided access by frames: %s", p->peer,
			  err);
		return RIFT_ENOMEM;
	}
	bd->rkey = rift__vb_mw_next_rkey(bd->mw);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = bd->mw;
	wr.bind_mw.rkey = bd->rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags =
		((access & RIFT_MEM_READ) ? IBV_ACCESS_REMOTE_READ : 0) |
		((access & RIFT_MEM_WRITE) ? IBV_ACCESS_REMOTE_WRITE : 0);
	wr.wr_id = WR_TAG(rp) | slot_take(rp, &wr);
	/* A post that fails says the QP is broken, which its completions
	 * and next flush report: never a path failure from inside the
	 * session's own call (here, nor below). */
	rc = rift__vb_post_send(rctx_of(p->ctx)->dp_calls, rp->qp, &wr, err);
	if (rc) {
		RIFT_DEBUG(p->ctx, "%s: %s", p->peer, err);
		return rc;
	}
	*rkey = bd->rkey;
	*win = bd;
	return 0;
}

/* Invalidate bd's window on its QP (a slot is free). */
static void inv_post(struct rdma_path *rp, struct rndv_bind *bd)
{
	struct ibv_send_wr wr;
	rift__vb_err err;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = bd->rkey;
	wr.wr_id = WR_TAG(rp) | slot_take(rp, &wr);
	bd->inv_due = false;
	rc = rift__vb_post_send(rctx_of(rp->base.ctx)->dp_calls, rp->qp, &wr,
				err);
	if (rc) /* a broken QP: no remote access goes through it either */
		RIFT_DEBUG(rp->base.ctx, "%s: %s", rp->base.peer, err);
}

void rift__rdma_rma_unexpose(rift__path *p, void *win)
{
	struct rdma_path *rp = rp_of(p);
	struct rndv_bind *bd = win;

	if (p->state == RIFT_PATH_DEAD)
		return; /* the window goes with the QP */
	if (rp->slots_free >= 2) {
		inv_post(rp, bd);
		return;
	}
	/* No slot now: at the next completion, before anything else this
	 * path posts after it (rift__rdma_rma_inv_due). */
	bd->inv_due = true;
	rp->inv_due++;
}

void rift__rdma_rma_inv_due(struct rdma_path *rp)
{
	for (struct rift__list *l = rp->binds.next;
	     l != &rp->binds && rp->inv_due && rp->slots_free >= 2 &&
	     rp->base.state != RIFT_PATH_DEAD;
	     l = l->next) {
		struct rndv_bind *bd = rift__list_entry(l, struct rndv_bind,
							 node);

		if (bd->inv_due) {
			rp->inv_due--;
			inv_post(rp, bd);
		}
	}
}

/* ---- requester: READ and WRITE ---- */

uint32_t rift__rdma_rma_max(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	/* A READ's bytes per work request, as rendezvous READs; a WRITE
	 * the same, so that pieces of both kinds share the send queue
	 * fairly with messages. */
	return rp->qp ? rp->rd_chunk : 0;
}

int rift__rdma_rma_post(rift__path *p, bool read, rift_mem *local,
			uint64_t local_off, uint64_t raddr, uint32_t rkey,
			uint32_t len, uint64_t cookie)
{
	struct rdma_path *rp = rp_of(p);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	rift__vb_err err;
	uint32_t slot;
	int rc;

	if (!rp->qp || p->state != RIFT_PATH_ATTACHED ||
	    (read && !rp->rndv_local))
		return RIFT_ENOTSUP;
	/* Two slots left for credits and acks, as rendezvous READs leave. */
	if (rp->slots_free <= 2 || rp->inv_due ||
	    (read && rp->rd_inflight >= rp->rd_max))
		return RIFT_EAGAIN;
	mr = reg_of(rp, local);
	if (!mr)
		return RIFT_ENOMEM;
	sge = (struct ibv_sge){ .addr = (uintptr_t)(local->addr + local_off),
				.length = len,
				.lkey = mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	/* A small WRITE's bytes go in the work request, as a message's do:
	 * the device need not fetch them through the region (perftest's
	 * write tools inline theirs too). */
	if (!read && len <= rp->inline_max)
		wr.send_flags = IBV_SEND_INLINE;
	slot = slot_take(rp, &wr);
	rp->slots[slot].rma_cookie = cookie;
	rp->slots[slot].rma_read = read;
	wr.wr_id = WR_TAG(rp) | RMA_FLAG | slot;
	if (read) {
		if (!rp->rd_inflight)
			rp->rd_progress_us = p->ctx->now_us;
		rp->rd_inflight++;
	}
	data_posted(rp);
	rc = rift__vb_post_send(rctx_of(p->ctx)->dp_calls, rp->qp, &wr, err);
	if (rc) {
		/* Never posted: nothing will report it (the frames serve the
		 * piece), and the slot is back. */
		if (read)
			rp->rd_inflight--;
		rp->slots[slot].rma_cookie = 0;
		rp->sig_out--;
		rp->slots_free++;
		rp->slot_next = slot;
		rp->unsignaled = rp->slots[slot].covers - 1;
		RIFT_DEBUG(p->ctx, "%s: %s", p->peer, err);
		return rc;
	}
	return 0;
}

/* A one-sided piece's completion (status 0), or its failure (the path
 * fails after: a QP that met an error is in the error state). */
void rift__rdma_rma_done(struct rdma_path *rp, uint32_t slot, int status)
{
	struct send_slot *s = &rp->slots[slot];
	uint64_t cookie = s->rma_cookie;

	if (s->rma_read) {
		rp->rd_inflight--;
		rp->rd_progress_us = rp->base.ctx->now_us;
	}
	s->rma_cookie = 0;
	s->rma_read = false;
	rift__rma_wr_done(&rp->base, cookie, status);
}
