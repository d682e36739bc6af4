/*
 * rdma_dev.c - devices and context state of the verbs transport: one
 * protection domain per device for the whole process, the block pool's
 * registration on it and the device's READ limits; a context's rdma_cm
 * channel, device warm-up and port events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <pthread.h>

#include "transports/verbs/rdma_int.h"

/* ---- memory: devices and the block pool ---- */

/*
 * One protection domain per device for the whole process, shared by every
 * path, so the pool registers its regions once per device.  They live as
 * long as the pool: while any context uses RDMA, and after the last one
 * while a retained message keeps a block of it (pools_gone frees them).
 */
static void pools_gone(void);
static const struct rift__pool_reg pool_reg = {
	.reg = rift__vb_pool_reg,
	.dereg = rift__vb_pool_dereg,
	.gone = pools_gone,
};
pthread_mutex_t rift__rdma_dev_mu = PTHREAD_MUTEX_INITIALIZER;
struct rdma_dev rift__rdma_devs[RIFT_POOL_MAX_DEVICES];
int rift__rdma_n_devs;

#define RD_ATOM_MAX 16 /* outstanding RDMA READs per QP, each way */

/* The entry of librdmacm's context verbs (one at most), or NULL; dev_mu
 * held. */
static struct rdma_dev *dev_of(struct ibv_context *verbs)
{
	for (int i = 0; i < rift__rdma_n_devs; i++)
		if (rift__rdma_devs[i].verbs == verbs)
			return &rift__rdma_devs[i];
	return NULL;
}

/* The device's PD and pool slot (made on first use); 0 or RIFT_E*. */
int rift__rdma_dev_pd(struct rift__pool *pool, struct ibv_context *verbs,
		      int *idx, char *err, size_t errlen)
{
	uint32_t init, resp;
	rift__vb_err verr;
	int i, free_i = -1, rc = 0;

	pthread_mutex_lock(&rift__rdma_dev_mu);
	for (i = 0; i < rift__rdma_n_devs; i++) {
		if (rift__rdma_devs[i].verbs == verbs)
			break;
		if (!rift__rdma_devs[i].verbs && free_i < 0)
			free_i = i;
	}
	if (i < rift__rdma_n_devs && rift__rdma_devs[i].gone) {
		snprintf(err, errlen, "%s was removed",
			 rift__vb_device_name(verbs->device));
		rc = RIFT_ENODEV;
		goto out;
	}
	if (i == rift__rdma_n_devs) {
		struct rdma_dev *e;

		if (free_i >= 0) {
			i = free_i;
		} else if (rift__rdma_n_devs == RIFT_POOL_MAX_DEVICES) {
			snprintf(err, errlen, "more than %d RDMA devices",
				 RIFT_POOL_MAX_DEVICES);
			rc = RIFT_ENOSPC;
			goto out;
		}
		e = &rift__rdma_devs[i];
		memset(e, 0, sizeof(*e));
		e->hold = rift__vb_cm_device_hold(verbs);
		if (!e->hold) {
			snprintf(err, errlen, "%s was removed",
				 rift__vb_device_name(verbs->device));
			rc = RIFT_ENODEV;
			goto out;
		}
		rc = rift__vb_pd_alloc(verbs, &e->pd, verr);
		if (rc) {
			snprintf(err, errlen, "%s", verr);
			goto fail_hold;
		}
		e->pdev.pd = e->pd;
		e->pdev.mw = rift__vb_mw_type2(verbs);
		rc = rift__pool_add_device(pool, &e->pdev, err, errlen);
		if (rc < 0) {
			rift__vb_pd_free(e->pd);
			goto fail_hold;
		}
		e->verbs = verbs;
		e->slot = rc;
		/* Without READ support (depths 0) paths stream everything.
		 * Every port of a device shares its limits; port 1 exists. */
		if (rift__vb_read_limits(verbs, 1, &init, &resp, &e->max_msg,
					 verr) == 0) {
			e->rd_atom = (uint8_t)(resp < RD_ATOM_MAX ? resp
								  : RD_ATOM_MAX);
			e->init_atom = (uint8_t)(init < RD_ATOM_MAX
							 ? init
							 : RD_ATOM_MAX);
		} else {
			e->max_msg = 0;
		}
		if (rift__vb_cq_limit(verbs, &e->max_cqe, verr))
			e->max_cqe = 0;
		if (i == rift__rdma_n_devs)
			rift__rdma_n_devs++;
		rc = 0;
	}
	*idx = i;
out:
	pthread_mutex_unlock(&rift__rdma_dev_mu);
	return rc;
fail_hold:
	rift__vb_cm_devices_free(rift__rdma_devs[i].hold);
	memset(&rift__rdma_devs[i], 0, sizeof(rift__rdma_devs[i]));
	goto out;
}

/* The pool is gone, its registrations undone: the PDs can go too. */
static void pools_gone(void)
{
	pthread_mutex_lock(&rift__rdma_dev_mu);
	for (int i = 0; i < rift__rdma_n_devs; i++) {
		if (!rift__rdma_devs[i].verbs)
			continue;
		rift__vb_pd_free(rift__rdma_devs[i].pd);
		rift__vb_cm_devices_free(rift__rdma_devs[i].hold);
		memset(&rift__rdma_devs[i], 0, sizeof(rift__rdma_devs[i]));
	}
	rift__rdma_n_devs = 0;
	pthread_mutex_unlock(&rift__rdma_dev_mu);
}

/*
 * A removed device's entry, unused: its registrations, its PD, then
 * librdmacm's hold on its context.  dev_mu held.  Once librdmacm has
 * seen the device go (any rdma_get_devices after it did) the last hold
 * closes its context, which is what the kernel's removal waits for.
 */
static void dev_release(struct rift__pool *pool, struct rdma_dev *e)
{
	RIFT_PLOG(RIFT_LOG_INFO, "%s: removed; its registrations and "
				 "protection domain are let go",
		  rift__vb_device_name(e->verbs->device));
	if (pool)
		rift__pool_remove_device(pool, &e->pdev);
	rift__vb_pd_free(e->pd);
	rift__vb_cm_devices_free(e->hold);
	memset(e, 0, sizeof(*e));
}

/* librdmacm looks at its devices again: a removed one nobody holds is
 * closed now (rdma_get_devices syncs its list). */
static void cm_devices_sync(void)
{
	struct ibv_context **list;
	rift__vb_err verr;
	int n;

	if (!rift__vb_cm_devices(&list, &n, verr))
		rift__vb_cm_devices_free(list);
}

void rift__rdma_dev_ref(struct ibv_context *verbs)
{
	struct rdma_dev *e;

	pthread_mutex_lock(&rift__rdma_dev_mu);
	e = dev_of(verbs);
	if (e)
		e->refs++;
	pthread_mutex_unlock(&rift__rdma_dev_mu);
}

void rift__rdma_dev_unref(struct rift__pool *pool, struct ibv_context *verbs)
{
	bool released = false;
	struct rdma_dev *e;

	pthread_mutex_lock(&rift__rdma_dev_mu);
	e = dev_of(verbs);
	if (e && e->refs > 0 && --e->refs == 0 && e->gone) {
		dev_release(pool, e);
		released = true;
	}
	pthread_mutex_unlock(&rift__rdma_dev_mu);
	if (released)
		cm_devices_sync();
}

void rift__rdma_dev_mark_gone(struct rift__pool *pool, struct ibv_device *dev)
{
	bool released = false, told = false;

	pthread_mutex_lock(&rift__rdma_dev_mu);
	for (int i = 0; i < rift__rdma_n_devs; i++) {
		struct rdma_dev *e = &rift__rdma_devs[i];

		if (!e->verbs || e->verbs->device != dev || e->gone)
			continue;
		e->gone = true;
		told = true;
		if (e->refs == 0) {
			dev_release(pool, e);
			released = true;
		}
	}
	pthread_mutex_unlock(&rift__rdma_dev_mu);
	if (released)
		cm_devices_sync();
	/* Contexts that were not told (no uevents, no id there) look. */
	if (told)
		rift__rdma_notes_wake();
}

bool rift__rdma_dev_is_gone(struct ibv_context *verbs)
{
	struct rdma_dev *e;
	bool gone;

	pthread_mutex_lock(&rift__rdma_dev_mu);
	e = dev_of(verbs);
	gone = e && e->gone;
	pthread_mutex_unlock(&rift__rdma_dev_mu);
	return gone;
}

/* The device's READ limits (0 until a path or pool set used it). */
struct ibv_pd *rift__rdma_dev_pd_of(struct ibv_context *verbs)
{
	struct rdma_dev *e;
	struct ibv_pd *pd;

	pthread_mutex_lock(&rift__rdma_dev_mu);
	e = dev_of(verbs);
	pd = e && !e->gone ? e->pd : NULL;
	pthread_mutex_unlock(&rift__rdma_dev_mu);
	return pd;
}

void rift__rdma_dev_atoms(struct ibv_context *verbs, uint8_t *rd, uint8_t *init,
			  uint32_t *max_msg, bool *mw)
{
	struct rdma_dev *e;
	uint32_t dummy;
	bool dummy_mw;

	if (!max_msg)
		max_msg = &dummy;
	if (!mw)
		mw = &dummy_mw;
	*rd = *init = 0;
	*max_msg = 0;
	*mw = false;
	pthread_mutex_lock(&rift__rdma_dev_mu);
	e = dev_of(verbs);
	if (e) {
		*rd = e->rd_atom;
		*init = e->init_atom;
		*max_msg = e->max_msg;
		*mw = e->pdev.mw;
	}
	pthread_mutex_unlock(&rift__rdma_dev_mu);
}

/* ---- context state ---- */

static struct rift__rdma_ctx *rdma_ctx_new(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	rift__list_init(&r->paths);
	rift__list_init(&r->last_words);
	rift__list_init(&r->cqs);
	rift__list_init(&r->rma_regs);
	r->ctx = ctx;
	r->note_fd = -1;
	r->uev_fd = -1;
	ctx->transport_state[RIFT_TRANSPORT_RDMA] = r;
	return r;
}

/*
 * The pool hook (rift__ctx_pool): the process pool, registered with the
 * devices' protection domains, and this context's reference on it in
 * ctx->pool, which rift__rdma_ctx_destroy drops.  NULL when it cannot be
 * had (the context's error says why, but for memory for the state).
 */
static int ctx_pool(rift_ctx *ctx)
{
	char err[RIFT_ERRMSG_LEN];
	int rc;

	if (ctx->pool)
		return 0;
	if (!rctx_of(ctx) && !rdma_ctx_new(ctx))
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "out of memory for "
				      "the context's RDMA state");
	rc = rift__pool_get(&ctx->cfg, &pool_reg, &ctx->pool, err,
			    sizeof(err));
	if (rc)
		return rift__ctx_fail(ctx, rc, "%s", err);
	return 0;
}

struct rift__pool *rift__rdma_ctx_pool(rift_ctx *ctx)
{
	return ctx_pool(ctx) ? NULL : ctx->pool;
}

/*
 * Ready every device for a path before one is needed: its protection
 * domain and the block pool's registration (once per process) and this
 * context's shared CQ.  Made on first use, they were most of a re-attach
 * that moved to a device not used before: 200 ms of a 580 ms re-attach
 * in the lab, where registering the pool grows with the pool.  A path
 * that fails over must find its device ready, as a standby link does in
 * SMC-R.  Done once per context, when it first uses RDMA; a device that
 * cannot be readied is left to fail (and say why) when a path needs it.
 */
static void warm_devices(rift_ctx *ctx)
{
	struct ibv_context **list;
	rift__vb_err verr;
	char err[RIFT_ERRMSG_LEN];
	uint64_t t0 = rift__clock_us();
	int n, d;

	if (rift__vb_cm_devices(&list, &n, verr)) {
		RIFT_DEBUG(ctx, "warm-up: %s", verr);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct shared_cq *s;

		if (rift__rdma_dev_pd(ctx->pool, list[i], &d, err,
				      sizeof(err)) ||
		    rift__rdma_cq_reserve(ctx, list[i], 0, &s, err,
					  sizeof(err))) {
			RIFT_DEBUG(ctx, "warm-up of %s: %s",
				   rift__vb_device_name(list[i]->device), err);
			continue;
		}
		s->holders--; /* kept: a device's first CQ stays */
	}
	RIFT_DEBUG(ctx, "warm-up: %d devices in %.1f ms", n,
		   (rift__clock_us() - t0) / 1e3);
	rift__vb_cm_devices_free(list);
}

int rift__rdma_rctx(rift_ctx *ctx, struct rift__rdma_ctx **out,
		    rift__vb_err err)
{
	struct rift__rdma_ctx *r = rctx_of(ctx);
	int rc;

	*out = NULL;
	if (r && r->ch) {
		*out = r;
		return 0;
	}
	if (!r) {
		r = rdma_ctx_new(ctx);
		if (!r) {
			snprintf(err, sizeof(rift__vb_err), "out of memory");
			return RIFT_ENOMEM;
		}
	}
	rc = ctx_pool(ctx);
	if (rc) {
		snprintf(err, sizeof(rift__vb_err), "%s", ctx->errmsg);
		return rc;
	}
	rc = rift__vb_channel_create(&r->ch, err);
	if (rc)
		return rc;
	if (rift__io_start(ctx, &r->io, r->ch->fd, EPOLLIN,
			   rift__rdma_cm_io_cb)) {
		snprintf(err, sizeof(rift__vb_err), "epoll: cannot watch the "
						    "rdma_cm channel");
		rift__vb_channel_destroy(r->ch);
		r->ch = NULL;
		return RIFT_ENOMEM;
	}
	rift__rdma_gone_start(r);
	warm_devices(ctx);
	*out = r;
	return 0;
}

void rift__rdma_ctx_destroy(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = rctx_of(ctx);

	if (!r)
		return;
	/* The context ends: parked paths go now, port or no port, and
	 * ERROR frames still leaving go with their paths. */
	rift__rdma_last_words_end(r);
	rift__rdma_parked_release(r, NULL, 0);
	rift__rdma_reaper_free(r);
	rift__rdma_gone_stop(r);
	if (r->ch) {
		rift__io_stop(ctx, &r->io);
		rift__vb_channel_destroy(r->ch);
	}
	free(r->sel);
	rift__rdma_cq_devs_free(r);
	rift__rdma_rma_ctx_end(r);
	for (int i = 0; i < r->n_watch; i++) {
		rift__io_stop(ctx, &r->watch[i]->io);
		rift__vb_device_close(r->watch[i]->c);
		free(r->watch[i]);
	}
	if (ctx->pool) {
		/* The last reference deregisters the pool, then frees the
		 * PDs (pools_gone); a retained message may hold it longer. */
		rift__pool_put(ctx->pool);
		ctx->pool = NULL;
	}
	free(r);
	ctx->transport_state[RIFT_TRANSPORT_RDMA] = NULL;
}

rift_fallback_reason rift__rdma_available(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = rctx_of(ctx);

	if (!r) {
		r = rdma_ctx_new(ctx);
		if (!r)
			return RIFT_FALLBACK_NO_DEVICE;
	}
	if (!r->probe_done || (r->probed != RIFT_FALLBACK_NONE &&
			       rift__clock_us() - r->probe_us >= 1000000u)) {
		r->probed = rift__vb_probe(r->device, sizeof(r->device));
		r->probe_done = true;
		r->probe_us = rift__clock_us();
	}
	return r->probed;
}

/* A port ACTIVE again: setups through it wait this long first (the
 * kernel's neighbour and GID entries follow the port event). */
#define PORT_BACK_MS 200

/*
 * A port went down (or the device died): fail every path of this context
 * on it now, instead of waiting for its retries to run out.  rxe does not
 * move QPs to error on a port event by itself (LAB.md).
 */
static void watch_cb(rift__io *io, uint32_t revents)
{
	struct dev_watch *w = rift__container_of(io, struct dev_watch, io);
	struct rift__rdma_ctx *r = rctx_of(w->ctx);
	enum ibv_event_type type = IBV_EVENT_DEVICE_FATAL;
	int port = 0; /* set by rift__vb_async_get (LTO cannot tell) */

	RIFT_UNUSED(revents);
	while (rift__vb_async_get(w->c, &type, &port) == 0) {
		struct rift__list *it, *next;
		bool fatal = type == IBV_EVENT_DEVICE_FATAL;

		free(r->sel);
		r->sel = NULL;

		/* Port state changes decide which paths live. */
		RIFT_LOG_AT(w->ctx,
			    fatal ? RIFT_LOG_WARN
			    : type == IBV_EVENT_PORT_ERR ||
					    type == IBV_EVENT_PORT_ACTIVE
				    ? RIFT_LOG_INFO
				    : RIFT_LOG_DEBUG,
			    "%s port %d: %s", rift__vb_device_name(w->dev),
			    port, rift__vb_event_str(type));
		if (type == IBV_EVENT_PORT_ACTIVE || fatal)
			rift__rdma_parked_release(r, w->dev, fatal ? 0 : port);
		/* Standby setups that backed off while it was down go now
		 * (after the link settles a little). */
		if (type == IBV_EVENT_PORT_ACTIVE)
			rift__group_links_changed(w->ctx, PORT_BACK_MS);
		if (type != IBV_EVENT_PORT_ERR && !fatal)
			continue; /* PORT_ACTIVE: new paths may use it again */
		for (it = r->paths.next; it != &r->paths; it = next) {
			struct rdma_path *rp = rift__list_entry(
				it, struct rdma_path, poll_node);

			next = it->next;
			if (rp->base.state == RIFT_PATH_DEAD || !rp->verbs ||
			    rp->verbs->device != w->dev ||
			    (!fatal && rp->port_num != port))
				continue;
			rift__path_failed(&rp->base,
					  fatal ? RIFT_ENODEV : RIFT_ENETDOWN,
					  "%s port %d: %s",
					  rift__vb_device_name(w->dev), port,
					  rift__vb_event_str(type));
		}
	}
}

/* Listen for the device's events on this context (once per device). */
void rift__rdma_watch_device(rift_ctx *ctx, struct ibv_device *dev)
{
	struct rift__rdma_ctx *r = rctx_of(ctx);
	struct dev_watch *w;
	rift__vb_err err;

	for (int i = 0; i < r->n_watch; i++)
		if (r->watch[i]->dev == dev)
			return;
	if (r->n_watch == RIFT_POOL_MAX_DEVICES)
		return;
	w = calloc(1, sizeof(*w));
	if (!w)
		return;
	w->ctx = ctx;
	w->dev = dev;
	/* Without events, failures still show through the QP's retries:
	 * a watch that cannot be set up is not fatal. */
	if (rift__vb_device_open(dev, &w->c, err) ||
	    rift__vb_async_setup(w->c, err) ||
	    rift__io_start(ctx, &w->io, w->c->async_fd, EPOLLIN, watch_cb)) {
		RIFT_DEBUG(ctx, "no port events for %s: %s",
			   rift__vb_device_name(dev), err);
		if (w->c)
			rift__vb_device_close(w->c);
		free(w);
		return;
	}
	r->watch[r->n_watch++] = w;
}
