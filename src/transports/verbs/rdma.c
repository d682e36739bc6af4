/*
 * rdma.c - the verbs transport: one RC QP per path, set up with rdma_cm.
 *
 * Frames travel as a byte stream cut into SENDs of at most buf_size bytes,
 * so the session layer and the frame parser are the ones TCP uses.  Flow
 * control is by credits: the receiver posts rq_depth buffers and returns
 * one credit per buffer it re-posts, in the immediate data of its own
 * SENDs, so a sender never sends into a missing buffer (no RNR retries in
 * normal operation).  One credit is kept back for credit-only updates, so
 * two busy peers can never both wait for credits.
 *
 * Sends are copied into registered slots (post lists, inline below the
 * device's inline limit, a completion requested only every quarter queue).
 * Received buffers are copied into the stream buffer and re-posted at once;
 * zero-copy delivery and RDMA READ rendezvous for large messages are the
 * next steps (issue 4).
 *
 * Connection setup: the client's rdma_connect carries a small hello in its
 * private data (magic, version, receive depth, buffer size); the server
 * checks it and answers with its own in rdma_accept, or rejects with a
 * reason.  Both set a short ack timeout and a retry count below 7 so a dead
 * peer is noticed (rxe treats 7 as infinite).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <pthread.h>

#include "session/session.h"
#include "memory/pool.h"
#include "session/stream.h"
#include "transports/verbs/verbs.h"

#define HELLO_MAGIC 0x52494654u /* "RIFT" */
#define HELLO_VERSION 1u
#define CTRL_CAP 1024
#define RECV_FLAG (1ull << 63)
#define MAX_POLL 64

/* rdma_cm private data: fits the 56 bytes a connect request may carry. */
struct cm_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved;
	uint32_t rq_depth; /* receive buffers posted = initial credits */
	uint32_t buf_size; /* bytes per receive buffer */
} __attribute__((packed));

/* Reject reasons carried back in rdma_reject's private data. */
enum { REJ_BAD_HELLO = 1, REJ_RESOURCES = 2, REJ_CLOSING = 3 };

/* The id context says whether an event is for a path or a listener. */
enum owner_kind { OWNER_PATH = 1, OWNER_LISTENER = 2 };

struct rdma_listener {
	enum owner_kind kind;
	rift_listener *l;
	struct rdma_cm_id *id;
};

/*
 * Port and device events.  Every context opened on a device receives them,
 * so each rift context opens its own just to listen: events then arrive on
 * the thread whose paths they concern.
 */
struct dev_watch {
	rift_ctx *ctx;
	struct ibv_device *dev;
	struct ibv_context *c;
	rift__io io;
};

/* Per-context state: one CM event channel for every id of the context. */
struct rift__rdma_ctx {
	struct rdma_event_channel *ch;
	rift__io io;
	struct rift__pool *pool; /* reference on the process pool */
	struct rift__list paths; /* paths with a CQ, for busy polling */
	struct dev_watch *watch[RIFT_POOL_MAX_DEVICES]; /* async events */
	int n_watch;
	rift_fallback_reason probed; /* cached device probe */
	bool probe_done;
	char device[RIFT_DEVICE_NAME_MAX];
};

struct send_slot {
	uint32_t covers; /* slots freed when this signaled send completes */
};

struct rdma_path {
	rift__path base;
	enum owner_kind kind;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;     /* the device's, shared: not ours to free */
	int dev_slot;          /* the device's slot in the block pool */
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	rift__io cq_io;
	struct rift__list poll_node; /* rdma ctx's paths */
	bool cq_io_on;
	bool cq_armed;         /* the CQ's next completion wakes cq_io */
	bool established;

	/* receive buffers and send slots: blocks of the registered pool */
	uint8_t **rbufs, **sbufs;
	uint32_t *rlkey, *slkey;
	uint32_t buf_size, rq_depth, sq_depth, inline_max;

	/* receive side */
	uint32_t *pend;        /* completed receives not yet consumed (ring) */
	uint32_t *pend_len;
	uint32_t pend_head, pend_n;
	uint32_t pend_off;     /* bytes of pend[head] already consumed */
	uint32_t to_return;    /* credits re-posted, not yet announced */
	uint32_t *repost;      /* consumed buffers to post again (flush) */
	uint32_t repost_n;
	struct rift__stream rx;
	bool reading;

	/* send side */
	uint32_t credits;      /* peer receive buffers we may fill */
	uint32_t peer_buf;     /* peer's buffer size */
	uint32_t slot_next;    /* next slot to fill */
	uint32_t slots_free;
	uint32_t unsignaled;   /* slots posted since the last signaled one */
	struct send_slot *slots;
	uint64_t zc_sends;     /* messages sent without a copy */
	uint64_t inplace_bytes; /* received bytes delivered without a copy */
	struct rift__omsg *cur; /* message being copied, and how far */
	size_t cur_off;
	uint8_t ctrl[CTRL_CAP];
	size_t ctrl_len, ctrl_off;
};

static struct rdma_path *rp_of(rift__path *p)
{
	return rift__container_of(p, struct rdma_path, base);
}

static void cm_io_cb(rift__io *io, uint32_t revents);

/* ---- memory: devices and the block pool ---- */

/*
 * One protection domain per device for the whole process, shared by every
 * path, so the pool registers its regions once per device.  They live as
 * long as any context uses RDMA.
 */
static const struct rift__pool_reg pool_reg = {
	.reg = rift__vb_pool_reg,
	.dereg = rift__vb_pool_dereg,
};
static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;
static int dev_users;
static struct {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	int slot;
} devs[RIFT_POOL_MAX_DEVICES];
static int n_devs;

/* The device's PD and pool slot; fails the path (with a reason) if not. */
static int dev_get(struct rdma_path *rp, struct rift__pool *pool)
{
	rift__path *p = &rp->base;
	struct ibv_context *verbs = rp->id->verbs;
	char err[RIFT_ERRMSG_LEN];
	rift__vb_err verr;
	int i, rc = 0;

	pthread_mutex_lock(&dev_mu);
	for (i = 0; i < n_devs; i++)
		if (devs[i].verbs == verbs)
			break;
	if (i == n_devs) {
		if (n_devs == RIFT_POOL_MAX_DEVICES) {
			snprintf(err, sizeof(err), "more than %d RDMA devices",
				 RIFT_POOL_MAX_DEVICES);
			rc = RIFT_ENOSPC;
			goto out;
		}
		rc = rift__vb_pd_alloc(verbs, &devs[i].pd, verr);
		if (rc) {
			snprintf(err, sizeof(err), "%s", verr);
			goto out;
		}
		rc = rift__pool_add_device(pool, devs[i].pd, err, sizeof(err));
		if (rc < 0) {
			rift__vb_pd_free(devs[i].pd);
			goto out;
		}
		devs[i].verbs = verbs;
		devs[i].slot = rc;
		n_devs++;
		rc = 0;
	}
	rp->pd = devs[i].pd;
	rp->dev_slot = devs[i].slot;
out:
	pthread_mutex_unlock(&dev_mu);
	if (rc) {
		p->fb_reason = RIFT_FALLBACK_REG_MR;
		rift__path_failed(p, rc, "%s", err);
	}
	return rc;
}

static void dev_users_put(void)
{
	pthread_mutex_lock(&dev_mu);
	if (--dev_users == 0) {
		for (int i = 0; i < n_devs; i++)
			rift__vb_pd_free(devs[i].pd);
		n_devs = 0;
	}
	pthread_mutex_unlock(&dev_mu);
}

/* ---- context state ---- */

static struct rift__rdma_ctx *rdma_ctx_new(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	rift__list_init(&r->paths);
	ctx->rdma = r;
	return r;
}

struct rift__pool *rift__ctx_pool(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;
	char err[RIFT_ERRMSG_LEN];

	if (r && r->pool)
		return r->pool;
	if (!r) {
		r = rdma_ctx_new(ctx);
		if (!r)
			return NULL;
	}
	if (rift__pool_get(&ctx->cfg, &pool_reg, &r->pool, err, sizeof(err))) {
		rift__ctx_fail(ctx, RIFT_ENOMEM, "%s", err);
		return NULL;
	}
	pthread_mutex_lock(&dev_mu);
	dev_users++;
	pthread_mutex_unlock(&dev_mu);
	return r->pool;
}

static struct rift__rdma_ctx *rctx(rift_ctx *ctx, rift__vb_err err)
{
	struct rift__rdma_ctx *r = ctx->rdma;

	if (r && r->ch)
		return r;
	if (!r) {
		r = rdma_ctx_new(ctx);
		if (!r) {
			snprintf(err, sizeof(rift__vb_err), "out of memory");
			return NULL;
		}
	}
	if (!rift__ctx_pool(ctx)) {
		snprintf(err, sizeof(rift__vb_err), "%s", ctx->errmsg);
		return NULL;
	}
	if (rift__vb_channel_create(&r->ch, err))
		return NULL;
	if (rift__io_start(ctx, &r->io, r->ch->fd, EPOLLIN, cm_io_cb)) {
		snprintf(err, sizeof(rift__vb_err), "epoll: cannot watch the "
						    "rdma_cm channel");
		rift__vb_channel_destroy(r->ch);
		r->ch = NULL;
		return NULL;
	}
	return r;
}

void rift__rdma_ctx_destroy(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;

	if (!r)
		return;
	if (r->ch) {
		rift__io_stop(ctx, &r->io);
		rift__vb_channel_destroy(r->ch);
	}
	for (int i = 0; i < r->n_watch; i++) {
		rift__io_stop(ctx, &r->watch[i]->io);
		rift__vb_device_close(r->watch[i]->c);
		free(r->watch[i]);
	}
	if (r->pool) {
		/* Last user: the pool deregisters before the PDs go. */
		rift__pool_put(r->pool);
		dev_users_put();
	}
	free(r);
	ctx->rdma = NULL;
}

static rift_fallback_reason rdma_available(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;

	if (!r) {
		r = rdma_ctx_new(ctx);
		if (!r)
			return RIFT_FALLBACK_NO_DEVICE;
	}
	if (!r->probe_done) {
		r->probed = rift__vb_probe(r->device, sizeof(r->device));
		r->probe_done = true;
	}
	return r->probed;
}

static uint8_t *recv_buf(struct rdma_path *rp, uint32_t i)
{
	return rp->rbufs[i];
}

static uint8_t *slot_buf(struct rdma_path *rp, uint32_t i)
{
	return rp->sbufs[i];
}

static int post_recv(struct rdma_path *rp, uint32_t i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)recv_buf(rp, i),
			       .length = rp->buf_size,
			       .lkey = rp->rlkey[i] };
	struct ibv_recv_wr wr = { .wr_id = RECV_FLAG | i, .sg_list = &sge,
				  .num_sge = 1 };
	rift__vb_err err;
	int rc = rift__vb_post_recv(rp->id->qp, &wr, err);

	if (rc)
		rift__path_failed(&rp->base, rc, "%s", err);
	return rc;
}

static void cq_io_cb(rift__io *io, uint32_t revents);

/* Take n blocks of the pool for one use, with their keys on our device. */
static int take_blocks(struct rdma_path *rp, uint8_t **bufs, uint32_t *lkeys,
		       uint32_t n, enum rift__pool_use use)
{
	struct rift__pool *pool = rp->base.ctx->rdma->pool;
	char err[RIFT_ERRMSG_LEN];
	uint32_t rkey;
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		bufs[i] = rift__pool_alloc(pool, rp->buf_size, use, &rc, err,
					   sizeof(err));
		if (!bufs[i] ||
		    !rift__pool_keys(pool, bufs[i], rp->dev_slot, &lkeys[i], &rkey)) {
			rp->base.fb_reason = RIFT_FALLBACK_REG_MR;
			rift__path_failed(&rp->base, bufs[i] ? RIFT_EIO : rc,
					  "%s", bufs[i] ? "pool block without "
							  "a key" : err);
			return bufs[i] ? RIFT_EIO : rc;
		}
	}
	return 0;
}

/*
 * A port went down (or the device died): fail every path of this context
 * on it now, instead of waiting for its retries to run out.  rxe does not
 * move QPs to error on a port event by itself (LAB.md).
 */
static void watch_cb(rift__io *io, uint32_t revents)
{
	struct dev_watch *w = rift__container_of(io, struct dev_watch, io);
	struct rift__rdma_ctx *r = w->ctx->rdma;
	enum ibv_event_type type;
	int port;

	RIFT_UNUSED(revents);
	while (rift__vb_async_get(w->c, &type, &port) == 0) {
		struct rift__list *it, *next;
		bool fatal = type == IBV_EVENT_DEVICE_FATAL;

		RIFT_DEBUG("%s port %d: %s", rift__vb_device_name(w->dev), port,
			   rift__vb_event_str(type));
		if (type != IBV_EVENT_PORT_ERR && !fatal)
			continue; /* PORT_ACTIVE: new paths may use it again */
		for (it = r->paths.next; it != &r->paths; it = next) {
			struct rdma_path *rp = rift__list_entry(
				it, struct rdma_path, poll_node);

			next = it->next;
			if (rp->base.state == RIFT_PATH_DEAD || !rp->id ||
			    rp->id->verbs->device != w->dev ||
			    (!fatal && rp->id->port_num != port))
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
static void watch_device(rift_ctx *ctx, struct ibv_device *dev)
{
	struct rift__rdma_ctx *r = ctx->rdma;
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
		RIFT_DEBUG("no port events for %s: %s",
			   rift__vb_device_name(dev), err);
		if (w->c)
			rift__vb_device_close(w->c);
		free(w);
		return;
	}
	r->watch[r->n_watch++] = w;
}

/*
 * QP, CQ, buffers from the registered pool and posted receives: everything
 * a path needs before rdma_connect / rdma_accept.
 */
static int path_resources(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	rift_config *cfg = &p->ctx->cfg;
	struct rift__vb_qp_caps caps = {
		.sq_depth = cfg->sq_depth,
		.rq_depth = cfg->rq_depth,
		.max_send_sge = cfg->max_send_sge,
		.max_recv_sge = cfg->max_recv_sge,
		.inline_max = cfg->inline_threshold,
	};
	rift__vb_err err;
	int rc;

	rp->buf_size = cfg->block_size[0];
	rp->rq_depth = cfg->rq_depth;
	rp->sq_depth = cfg->sq_depth;
	rc = dev_get(rp, p->ctx->rdma->pool);
	if (rc)
		return rc;
	watch_device(p->ctx, rp->id->verbs->device);
	rc = rift__vb_qp_setup(rp->id, rp->pd,
			       cfg->cq_size < rp->rq_depth + rp->sq_depth
				       ? rp->rq_depth + rp->sq_depth
				       : cfg->cq_size,
			       &caps, &rp->cch, &rp->cq, err);
	if (rc) {
		rift__path_failed(p, rc, "%s", err);
		return rc;
	}
	rp->cq_armed = true; /* qp_setup asked for the first event */
	rp->inline_max = caps.inline_max;
	rp->slots = calloc(rp->sq_depth, sizeof(*rp->slots));
	rp->pend = calloc(rp->rq_depth, sizeof(*rp->pend));
	rp->pend_len = calloc(rp->rq_depth, sizeof(*rp->pend_len));
	rp->repost = calloc(rp->rq_depth, sizeof(*rp->repost));
	rp->rbufs = calloc(rp->rq_depth, sizeof(*rp->rbufs));
	rp->rlkey = calloc(rp->rq_depth, sizeof(*rp->rlkey));
	rp->sbufs = calloc(rp->sq_depth, sizeof(*rp->sbufs));
	rp->slkey = calloc(rp->sq_depth, sizeof(*rp->slkey));
	if (!rp->slots || !rp->pend || !rp->pend_len || !rp->repost || !rp->rbufs ||
	    !rp->rlkey || !rp->sbufs || !rp->slkey) {
		rift__path_failed(p, RIFT_ENOMEM, "out of memory for buffers");
		return RIFT_ENOMEM;
	}
	rc = take_blocks(rp, rp->rbufs, rp->rlkey, rp->rq_depth, RIFT_POOL_RECV);
	if (!rc)
		rc = take_blocks(rp, rp->sbufs, rp->slkey, rp->sq_depth,
				 RIFT_POOL_SEND);
	if (rc)
		return rc;
	rp->slots_free = rp->sq_depth;
	for (uint32_t i = 0; i < rp->rq_depth; i++) {
		rc = post_recv(rp, i);
		if (rc)
			return rc;
	}
	rc = rift__io_start(p->ctx, &rp->cq_io, rp->cch->fd, EPOLLIN, cq_io_cb);
	if (rc) {
		rift__path_failed(p, rc, "epoll: cannot watch the CQ channel");
		return rc;
	}
	rp->cq_io_on = true;
	rift__list_add_tail(&p->ctx->rdma->paths, &rp->poll_node);
	return 0;
}

static void hello_fill(struct rdma_path *rp, struct cm_hello *h)
{
	h->magic = htonl(HELLO_MAGIC);
	h->version = htons(HELLO_VERSION);
	h->reserved = 0;
	h->rq_depth = htonl(rp->rq_depth);
	h->buf_size = htonl(rp->buf_size);
}

/* Check the peer's hello; a peer that advertises nonsense is refused. */
static const char *hello_check(struct rdma_path *rp, const void *data,
			       uint8_t len)
{
	struct cm_hello h;

	if (!data || len < sizeof(h))
		return "connection without rift's hello";
	memcpy(&h, data, sizeof(h));
	if (ntohl(h.magic) != HELLO_MAGIC)
		return "hello with a bad magic number";
	if (ntohs(h.version) != HELLO_VERSION)
		return "hello of an unsupported version";
	if (ntohl(h.rq_depth) < 2 || ntohl(h.rq_depth) > 65536)
		return "hello advertises an impossible receive depth";
	if (ntohl(h.buf_size) < 64 || ntohl(h.buf_size) > (64u << 20))
		return "hello advertises an impossible buffer size";
	rp->credits = ntohl(h.rq_depth);
	rp->peer_buf = ntohl(h.buf_size);
	return NULL;
}

static struct rdma_path *path_new(rift_ctx *ctx, bool is_client)
{
	struct rdma_path *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	if (rift__stream_init(&rp->rx, ctx->cfg.tcp_read_buffer)) {
		free(rp);
		return NULL;
	}
	rp->kind = OWNER_PATH;
	rp->reading = true;
	rift__list_init(&rp->poll_node);
	rift__path_init(&rp->base, ctx, &rift__rdma_ops, is_client);
	return rp;
}

/* ---- receive side ---- */

/*
 * Feed completed receive buffers into the stream in order.  A buffer whose
 * bytes are all taken is posted again by the flush that follows (its
 * credit comes back then), after the round's sends: a reply the
 * application made to these messages leaves first.
 */
static int drain_recvs(struct rdma_path *rp)
{
	rift__path *p = &rp->base;

	while (rp->pend_n) {
		uint32_t i = rp->pend[rp->pend_head];
		uint32_t len = rp->pend_len[rp->pend_head];
		uint8_t *dst;
		size_t room, n;
		int rc;

		if (rp->pend_off == 0 && rp->reading) {
			/* Whole frames go to the application from the
			 * receive buffer itself: no copy. */
			if (rift__stream_inplace(p, &rp->rx, recv_buf(rp, i), len,
						 &n) < 0)
				return -1;
			rp->pend_off = (uint32_t)n;
			rp->inplace_bytes += n;
		}
		if (rp->pend_off < len) {
			rift__stream_space(&rp->rx, &dst, &room);
			if (room == 0)
				return 1; /* held */
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
		rp->pend_head = (rp->pend_head + 1) % rp->rq_depth;
		rp->pend_n--;
		rp->pend_off = 0;
		rp->repost[rp->repost_n++] = i;
		if (rp->rx.held)
			return 1;
	}
	return 0;
}

/* ---- send side ---- */

/* Copy stream bytes (owed control frames, then messages) into buf. */
static size_t fill(struct rdma_path *rp, uint8_t *buf, size_t cap)
{
	rift__path *p = &rp->base;
	size_t used = 0;

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
 *  - larger, in a registered block: the NIC reads it from there (zero
 *    copy).  The block outlives the send: it is freed only when the peer
 *    acknowledges the message, after the NIC has read it.
 * Returns the SEND's length (0: neither kind) and whether it is inline.
 */
static uint32_t direct(struct rdma_path *rp, struct ibv_sge *sge, uint32_t cap,
		       bool *inl)
{
	rift__path *p = &rp->base;
	struct rift__omsg *m;
	struct rift__buf *b;
	uint32_t lkey = 0, rkey, len;

	if (rp->cur || rp->ctrl_off < rp->ctrl_len || p->pending ||
	    p->ctx->cfg.max_send_sge < 2)
		return 0;
	m = rift__sess_next(p, NULL);
	if (!m || RIFT_HDR_SIZE + m->len > cap)
		return 0;
	len = (uint32_t)(RIFT_HDR_SIZE + m->len);
	*inl = len <= rp->inline_max;
	if (*inl) {
		if (m->next)
			return 0;
	} else {
		b = rift__container_of(m, struct rift__buf, om);
		if (!b->pool ||
		    !rift__pool_keys(b->pool, b, rp->dev_slot, &lkey, &rkey))
			return 0;
	}
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)m->hdr,
				   .length = RIFT_HDR_SIZE,
				   .lkey = lkey };
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)m->data,
				   .length = (uint32_t)m->len,
				   .lkey = lkey };
	rift__sess_written(p, m);
	return len;
}

static bool has_output(struct rdma_path *rp)
{
	return rp->ctrl_off < rp->ctrl_len || rp->cur ||
	       rift__sess_has_output(&rp->base);
}

/* Post what drain_recvs consumed, up to 32 buffers a call. */
static int repost_recvs(struct rdma_path *rp)
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
				.wr_id = RECV_FLAG | i,
				.next = k + 1 < n ? &wrs[k + 1] : NULL,
				.sg_list = &sges[k],
				.num_sge = 1 };
		}
		rc = rift__vb_post_recv(rp->id->qp, wrs, err);
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

static void post_sends(struct rdma_path *rp);

static void rdma_flush(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	if (!rp->established || p->state == RIFT_PATH_DEAD)
		return;
	if (rp->rx.held == false && rp->pend_n) {
		if (drain_recvs(rp) < 0)
			return;
	}
	if (rift__fault_hit(RIFT_FAULT_RDMA_SEND)) {
		rift__path_failed(p, RIFT_ECONNRESET,
				  "send: link dropped (fault point)");
		return;
	}
	post_sends(rp);
	if (!rp->repost_n || p->state == RIFT_PATH_DEAD ||
	    repost_recvs(rp))
		return;
	/* Enough credits for an update of their own: the next flush (still
	 * this round) sends it if nothing else carries them. */
	if (rp->to_return >= rp->rq_depth / 4)
		rift__path_kick(p);
}

static void post_sends(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	struct ibv_send_wr wrs[32], *first = NULL, *last = NULL;
	struct ibv_sge sges[32][2];
	uint32_t cap, credit_only = rp->rq_depth / 4;
	rift__vb_err err;
	int nwr = 0, rc;

	cap = rp->buf_size < rp->peer_buf ? rp->buf_size : rp->peer_buf;
	for (;;) {
		bool data = rp->credits >= 2 && has_output(rp);
		/* The last credit only carries credits back. */
		bool update = !data && rp->credits >= 1 &&
			      rp->to_return >= (credit_only ? credit_only : 1);
		struct ibv_send_wr *wr;
		uint32_t slot, len = 0;
		bool inl = false;

		if ((!data && !update) || rp->slots_free == 0 || nwr == 32)
			break;
		slot = rp->slot_next;
		wr = &wrs[nwr];
		memset(wr, 0, sizeof(*wr));
		if (data && (len = direct(rp, sges[nwr], cap, &inl)) > 0) {
			/* Header and payload from where they are: the slot
			 * only holds the queue entry. */
			wr->sg_list = sges[nwr];
			wr->num_sge = 2;
			if (!inl)
				rp->zc_sends++;
		} else {
			if (data)
				len = (uint32_t)fill(rp, slot_buf(rp, slot), cap);
			if (data && len == 0)
				break;
			sges[nwr][0] = (struct ibv_sge){
				.addr = (uintptr_t)slot_buf(rp, slot),
				.length = len,
				.lkey = rp->slkey[slot] };
			wr->sg_list = len ? sges[nwr] : NULL;
			wr->num_sge = len ? 1 : 0;
		}
		wr->wr_id = slot;
		wr->opcode = IBV_WR_SEND_WITH_IMM;
		wr->imm_data = htonl(rp->to_return);
		if (len <= rp->inline_max)
			wr->send_flags |= IBV_SEND_INLINE;
		rp->to_return = 0;
		rp->credits--;
		rp->slots_free--;
		rp->slot_next = (slot + 1) % rp->sq_depth;
		rp->unsignaled++;
		/* Ask for a completion every quarter queue, or when slots run
		 * low, so slots come back without a completion per send. */
		if (rp->unsignaled >= rp->sq_depth / 4 || rp->slots_free < 2) {
			wr->send_flags |= IBV_SEND_SIGNALED;
			rp->slots[slot].covers = rp->unsignaled;
			rp->unsignaled = 0;
		}
		if (last)
			last->next = wr;
		else
			first = wr;
		last = wr;
		nwr++;
		if (update)
			break;
	}
	rift__metrics_credit_stall(p, rp->credits < 2 && has_output(rp));
	if (!first)
		return;
	/* A batch may end unsignaled: its slots come back with the next
	 * signaled send, at the latest when slots run low (above).  Nothing
	 * waits for them before that, and request/reply traffic then costs
	 * one completion per message (the receive), not two. */
	RIFT_DEBUG("%s: post %d sends, credits left %u", p->peer, nwr,
		   rp->credits);
	rc = rift__vb_post_send(rp->id->qp, first, err);
	if (rc) {
		rift__path_failed(p, rc, "%s", err);
		return;
	}
	p->last_tx_us = p->ctx->now_us;
	if (has_output(rp) && rp->credits >= 2 && rp->slots_free)
		rift__path_kick(p); /* batch limit reached: go on next round */
}

/* ---- completions ---- */

/*
 * Take every completion there is.  Returns how many, or -1 when the path
 * died.  Receives queue their buffers for drain_recvs; signaled sends give
 * their slots back.
 */
static int cq_poll(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	struct ibv_wc wc[MAX_POLL];
	uint32_t batch = p->ctx->cfg.poll_batch;
	int n, total = 0;

	if (batch > MAX_POLL)
		batch = MAX_POLL;
	while ((n = rift__vb_poll(rp->cq, (int)batch, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			struct ibv_wc *w = &wc[k];

			if (w->status != IBV_WC_SUCCESS) {
				rift__metrics_wc_error(p, w->status);
				if (w->status == IBV_WC_WR_FLUSH_ERR)
					continue; /* follows the first error */
				rift__path_failed(
					p, RIFT_ECONNRESET,
					"%s completion error: %s (vendor error "
					"0x%x)",
					(w->wr_id & RECV_FLAG) ? "receive" : "send",
					rift__vb_wc_str(w->status), w->vendor_err);
				return -1;
			}
			total++;
			if (w->wr_id & RECV_FLAG) {
				uint32_t i = (uint32_t)(w->wr_id & ~RECV_FLAG);
				uint32_t tail = (rp->pend_head + rp->pend_n) %
						rp->rq_depth;

				if (w->wc_flags & IBV_WC_WITH_IMM)
					rp->credits += ntohl(w->imm_data);
				if (rp->credits > 65536) {
					rift__path_failed(p, RIFT_EPROTO,
							  "peer returned more "
							  "credits than it has "
							  "buffers");
					return -1;
				}
				rp->pend[tail] = i;
				rp->pend_len[tail] = w->byte_len;
				rp->pend_n++;
				p->last_rx_us = p->ctx->now_us;
			} else {
				rp->slots_free += rp->slots[w->wr_id].covers;
			}
		}
		/* A short batch emptied the CQ: deliver now rather than
		 * spend another poll first (the next round polls again). */
		if (n < (int)batch)
			break;
	}
	if (n < 0) {
		rift__path_failed(p, n, "ibv_poll_cq failed");
		return -1;
	}
	if (total == 0)
		return 0;
	if (!rp->rx.held && drain_recvs(rp) < 0)
		return -1;
	rift__path_kick(p);
	return total;
}

static void cq_io_cb(rift__io *io, uint32_t revents)
{
	struct rdma_path *rp = rift__container_of(io, struct rdma_path, cq_io);
	rift__path *p = &rp->base;
	rift__vb_err err;
	bool rearm;
	int rc;

	RIFT_UNUSED(revents);
	if (p->state == RIFT_PATH_DEAD)
		return;
	/* Busy and adaptive polling take completions without events; they
	 * arm the CQ again only before sleeping (rift__rdma_arm). */
	rearm = p->ctx->cfg.polling == RIFT_POLL_EVENT;
	rc = rift__vb_cq_event(rp->cch, rp->cq, rearm, err);
	if (rc && rc != RIFT_EAGAIN) {
		rift__path_failed(p, rc, "%s", err);
		return;
	}
	if (rc == 0)
		rp->cq_armed = rearm;
	/* Event mode re-armed the CQ before this poll, so nothing that
	 * completes from now on is missed. */
	cq_poll(rp);
}

/*
 * Before a busy or adaptive loop sleeps: ask every CQ for an event on its
 * next completion.  Returns how many CQs were armed just now; if any, the
 * caller must poll once more before sleeping, for what completed before
 * the request (it would raise no event).
 */
int rift__rdma_arm(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;
	struct rift__list *it, *next;
	rift__vb_err err;
	int n = 0, rc;

	if (!r)
		return 0;
	for (it = r->paths.next; it != &r->paths; it = next) {
		struct rdma_path *rp = rift__list_entry(it, struct rdma_path,
							poll_node);

		next = it->next;
		if (rp->base.state == RIFT_PATH_DEAD || !rp->cq || rp->cq_armed)
			continue;
		rc = rift__vb_cq_arm(rp->cq, err);
		if (rc) {
			rift__path_failed(&rp->base, rc, "%s", err);
			continue;
		}
		rp->cq_armed = true;
		n++;
	}
	return n;
}

/*
 * Busy and adaptive polling: take completions straight from every CQ of
 * the context each round, without waiting for the channel's wake-up (which
 * costs a trip through the kernel and, on some hosts, milliseconds).
 */
bool rift__rdma_polled(const rift_ctx *ctx)
{
	return ctx->rdma && !rift__list_empty(&ctx->rdma->paths);
}

int rift__rdma_poll(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;
	struct rift__list *it, *next;
	int total = 0;

	if (!r)
		return 0;
	for (it = r->paths.next; it != &r->paths; it = next) {
		struct rdma_path *rp = rift__list_entry(it, struct rdma_path,
							poll_node);
		int n;

		next = it->next;
		if (rp->base.state == RIFT_PATH_DEAD || !rp->cq)
			continue;
		n = cq_poll(rp);
		if (n > 0)
			total += n;
	}
	return total;
}

/* ---- connection management events ---- */

static void fail_setup(struct rdma_path *rp, int err, rift_fallback_reason why,
		       const char *what, int status)
{
	rp->base.fb_reason = why;
	rift__path_failed(&rp->base, err, "%s (status %d)", what, status);
}

/*
 * With rdma_cm the route to the address chooses the device and port.  A
 * configured device or port that the route does not use is an error that
 * says so, not a setting silently ignored.
 */
static const char *device_mismatch(struct rdma_path *rp, char *buf, size_t len)
{
	rift_config *cfg = &rp->base.ctx->cfg;
	const char *dev = rift__vb_device_name(rp->id->verbs->device);

	if (cfg->device[0] && strcmp(cfg->device, dev) != 0) {
		snprintf(buf, len, "the route uses device %s, not the configured "
				   "device %s (rdma.device): use an address on %s",
			 dev, cfg->device, cfg->device);
		return buf;
	}
	if (cfg->port && rp->id->port_num != cfg->port) {
		snprintf(buf, len, "the route uses %s port %u, not the configured "
				   "port %u (rdma.port)",
			 dev, rp->id->port_num, cfg->port);
		return buf;
	}
	return NULL;
}

static void path_cm_event(struct rdma_path *rp, struct rdma_cm_event *ev)
{
	rift__path *p = &rp->base;
	rift_config *cfg = &p->ctx->cfg;
	struct rdma_conn_param param;
	struct cm_hello hello;
	rift__vb_err err;
	const char *bad;
	char mismatch[200];
	int rc;

	RIFT_DEBUG("rdma path %p: %s (status %d)", (void *)p,
		   rift__vb_cm_event_str(ev->event), ev->status);
	if (p->state == RIFT_PATH_DEAD)
		return;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		bad = device_mismatch(rp, mismatch, sizeof(mismatch));
		if (bad) {
			fail_setup(rp, RIFT_EINVAL, RIFT_FALLBACK_ADDR_RESOLVE,
				   bad, 0);
			break;
		}
		rc = rift__vb_resolve_route(rp->id, (int)cfg->connect_timeout_ms,
					    err);
		if (rc) {
			p->fb_reason = RIFT_FALLBACK_ROUTE_RESOLVE;
			rift__path_failed(p, rc, "%s", err);
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		/* After route resolution, before connect: see LAB.md. */
		rc = rift__vb_set_ack_timeout(rp->id, (uint8_t)cfg->rdma_ack_timeout,
					      err);
		if (rc) {
			rift__path_failed(p, rc, "%s", err);
			break;
		}
		if (path_resources(rp))
			break;
		hello_fill(rp, &hello);
		memset(&param, 0, sizeof(param));
		param.private_data = &hello;
		param.private_data_len = sizeof(hello);
		param.retry_count = (uint8_t)cfg->rdma_retry_count;
		param.rnr_retry_count = 3;
		rc = rift__vb_connect(rp->id, &param, err);
		if (rc)
			rift__path_failed(p, rc, "%s", err);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (p->is_client) {
			bad = hello_check(rp, ev->param.conn.private_data,
					  ev->param.conn.private_data_len);
			if (bad) {
				fail_setup(rp, RIFT_EPROTO,
					   RIFT_FALLBACK_PEER_NO_RDMA, bad, 0);
				break;
			}
		}
		rp->established = true;
		if (p->is_client)
			rift__path_connected(p);
		rift__path_kick(p);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
		fail_setup(rp, RIFT_EHOSTUNREACH, RIFT_FALLBACK_ADDR_RESOLVE,
			   "rdma_cm: address resolution failed", ev->status);
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		fail_setup(rp, RIFT_EHOSTUNREACH, RIFT_FALLBACK_ROUTE_RESOLVE,
			   "rdma_cm: route resolution failed", ev->status);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		fail_setup(rp, RIFT_ETIMEDOUT, RIFT_FALLBACK_TIMEOUT,
			   ev->event == RDMA_CM_EVENT_UNREACHABLE
				   ? "rdma_cm: peer unreachable"
				   : "rdma_cm: connection error",
			   ev->status);
		break;
	case RDMA_CM_EVENT_REJECTED: {
		uint8_t why = 0;

		if (ev->param.conn.private_data && ev->param.conn.private_data_len)
			why = *(const uint8_t *)ev->param.conn.private_data;
		fail_setup(rp, RIFT_ECONNREFUSED, RIFT_FALLBACK_REJECTED,
			   why == REJ_BAD_HELLO   ? "rejected: peer refused our hello"
			   : why == REJ_RESOURCES ? "rejected: peer out of resources"
			   : why == REJ_CLOSING   ? "rejected: listener closing"
						  : "connection refused (no rift listener on that port)",
			   ev->status);
		break;
	}
	case RDMA_CM_EVENT_DISCONNECTED:
		rift__path_failed(p, RIFT_ECONNRESET, "peer disconnected");
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* The kernel waits for us to free everything on the device. */
		rift__path_failed(p, RIFT_ENODEV, "RDMA device removed");
		break;
	default:
		break; /* TIMEWAIT_EXIT and friends need nothing */
	}
}

static void listener_cm_event(struct rdma_listener *rl, struct rdma_cm_event *ev)
{
	rift_listener *l = rl->l;
	rift_ctx *ctx = l->ctx;
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param param;
	struct cm_hello hello;
	struct rdma_path *rp;
	rift__vb_err err;
	const char *bad;
	uint8_t rej;
	char addr[64];

	RIFT_DEBUG("rdma listener %p: %s", (void *)l,
		   rift__vb_cm_event_str(ev->event));
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return;
	if (l->closing) {
		rej = REJ_CLOSING;
		goto reject;
	}
	rp = path_new(ctx, false);
	if (!rp) {
		rej = REJ_RESOURCES;
		goto reject;
	}
	rp->id = id;
	id->context = &rp->kind; /* ids point at an owner kind */
	rift__sockaddr_str(&id->route.addr.dst_addr, addr, sizeof(addr));
	snprintf(rp->base.peer, sizeof(rp->base.peer), "rdma://%s", addr);
	rift__listener_path(l, &rp->base);
	bad = hello_check(rp, ev->param.conn.private_data,
			  ev->param.conn.private_data_len);
	if (bad) {
		/* Refused, and counted as a protocol error by path_failed:
		 * never trusted with a session. */
		rp->id = NULL; /* destroyed below, after the reject */
		rift__path_failed(&rp->base, RIFT_EPROTO, "%s", bad);
		rej = REJ_BAD_HELLO;
		goto reject;
	}
	if (path_resources(rp)) {
		/* Tell the client now instead of letting it time out; the
		 * path's destruction frees the id. */
		rej = REJ_RESOURCES;
		rift__vb_reject(id, &rej, sizeof(rej));
		return;
	}
	hello_fill(rp, &hello);
	memset(&param, 0, sizeof(param));
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	param.rnr_retry_count = 3;
	if (rift__vb_set_ack_timeout(id, (uint8_t)ctx->cfg.rdma_ack_timeout, err) ||
	    rift__vb_accept(id, &param, err))
		rift__path_failed(&rp->base, RIFT_ECONNABORTED, "%s", err);
	return;

reject:
	rift__vb_reject(id, &rej, sizeof(rej));
	/* The request's id is ours to destroy, but only after its event is
	 * acknowledged: the caller does that, then destroys it. */
	id->context = NULL;
}

static void cm_io_cb(rift__io *io, uint32_t revents)
{
	struct rift__rdma_ctx *r = rift__container_of(io, struct rift__rdma_ctx, io);
	struct rdma_cm_event *ev;

	RIFT_UNUSED(revents);
	while (rift__vb_cm_get(r->ch, &ev) == 0) {
		struct rdma_cm_id *orphan = NULL;
		void *owner = ev->id ? ev->id->context : NULL;

		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_listener *rl = rift__container_of(
				ev->listen_id->context, struct rdma_listener, kind);

			listener_cm_event(rl, ev);
			if (ev->id->context == NULL)
				orphan = ev->id;
		} else if (owner &&
			   *(enum owner_kind *)owner == OWNER_PATH) {
			path_cm_event(rift__container_of(owner, struct rdma_path,
							 kind),
				      ev);
		}
		rift__vb_cm_ack(ev);
		if (orphan)
			rift__vb_id_destroy(orphan);
	}
}

/* ---- ops ---- */

static int rdma_connect_op(rift_ctx *ctx, const struct sockaddr *sa,
			   socklen_t len, rift__path **out)
{
	struct rift__rdma_ctx *r;
	struct rdma_path *rp;
	rift__vb_err err;
	int rc;

	RIFT_UNUSED(len);
	r = rctx(ctx, err);
	if (!r)
		return rift__ctx_fail(ctx, RIFT_ENODEV, "%s", err);
	rp = path_new(ctx, true);
	if (!rp)
		return RIFT_ENOMEM;
	rc = rift__vb_id_create(r->ch, &rp->kind, &rp->id, err);
	if (!rc)
		rc = rift__vb_resolve_addr(rp->id, sa,
					   (int)ctx->cfg.connect_timeout_ms, err);
	if (rc) {
		rift__path_destroy(&rp->base);
		return rift__ctx_fail(ctx, rc, "%s", err);
	}
	*out = &rp->base;
	return 0;
}

static int rdma_listen_op(rift_listener *l, const struct sockaddr *sa,
			  socklen_t len)
{
	rift_ctx *ctx = l->ctx;
	struct rift__rdma_ctx *r;
	struct rdma_listener *rl;
	rift__vb_err err;
	const struct sockaddr *bound;
	int rc;

	RIFT_UNUSED(len);
	r = rctx(ctx, err);
	if (!r)
		return rift__ctx_fail(ctx, RIFT_ENODEV, "listen: %s", err);
	rl = calloc(1, sizeof(*rl));
	if (!rl)
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "listen: out of memory");
	rl->kind = OWNER_LISTENER;
	rl->l = l;
	rc = rift__vb_id_create(r->ch, &rl->kind, &rl->id, err);
	if (!rc)
		rc = rift__vb_bind(rl->id, sa, err);
	if (!rc)
		rc = rift__vb_listen(rl->id, (int)ctx->cfg.listen_backlog, err);
	if (rc) {
		rift__vb_id_destroy(rl->id);
		free(rl);
		return rift__ctx_fail(ctx, rc, "listen: %s", err);
	}
	bound = &rl->id->route.addr.src_addr;
	l->port = bound->sa_family == AF_INET6
			  ? ntohs(((const struct sockaddr_in6 *)bound)->sin6_port)
			  : ntohs(((const struct sockaddr_in *)bound)->sin_port);
	l->transport_state = rl;
	return 0;
}

static void rdma_listen_close(rift_listener *l)
{
	struct rdma_listener *rl = l->transport_state;

	if (!rl)
		return;
	rift__vb_id_destroy(rl->id);
	free(rl);
	l->transport_state = NULL;
}

static void rdma_set_reading(rift__path *p, bool on)
{
	struct rdma_path *rp = rp_of(p);

	rp->reading = on;
	if (on && (rp->rx.held || rp->pend_n)) {
		/* Deliver from the loop, not from inside recv_start. */
		rp->rx.held = false;
		rift__path_kick(p);
	}
}

static void rdma_destroy(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	if (rp->cq_io_on)
		rift__io_stop(p->ctx, &rp->cq_io);
	rift__list_del(&rp->poll_node);
	if (rp->id) {
		if (rp->established)
			rift__vb_disconnect(rp->id);
		rift__vb_qp_teardown(rp->id, NULL, NULL);
	}
	rift__vb_qp_teardown(NULL, rp->cch, rp->cq);
	if (rp->id) {
		rp->id->context = NULL;
		rift__vb_id_destroy(rp->id);
	}
	/* The QP is gone, so no DMA touches the blocks any more. */
	for (uint32_t i = 0; rp->rbufs && i < rp->rq_depth; i++)
		if (rp->rbufs[i])
			rift__pool_free(p->ctx->rdma->pool, rp->rbufs[i],
					RIFT_POOL_RECV);
	for (uint32_t i = 0; rp->sbufs && i < rp->sq_depth; i++)
		if (rp->sbufs[i])
			rift__pool_free(p->ctx->rdma->pool, rp->sbufs[i],
					RIFT_POOL_SEND);
	free(rp->rbufs);
	free(rp->sbufs);
	free(rp->rlkey);
	free(rp->slkey);
	rift__stream_free(&rp->rx);
	free(rp->slots);
	free(rp->pend);
	free(rp->pend_len);
	free(rp->repost);
	free(rp);
}

uint64_t rift__conn_zero_copy_sends(const rift_conn *conn)
{
	rift__path *p = conn->path;

	if (!p || p->ops != &rift__rdma_ops)
		return 0;
	return rp_of(p)->zc_sends;
}

uint64_t rift__conn_inplace_recv_bytes(const rift_conn *conn)
{
	rift__path *p = conn->path;

	if (!p || p->ops != &rift__rdma_ops)
		return 0;
	return rp_of(p)->inplace_bytes;
}

static void rdma_cut(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	if (rp->id && rp->established)
		rift__vb_disconnect(rp->id);
}

const struct rift__transport_ops rift__rdma_ops = {
	.name = "rdma",
	.kind = RIFT_TRANSPORT_RDMA,
	.available = rdma_available,
	.connect = rdma_connect_op,
	.listen = rdma_listen_op,
	.listen_close = rdma_listen_close,
	.flush = rdma_flush,
	.set_reading = rdma_set_reading,
	.destroy = rdma_destroy,
	.cut = rdma_cut,
};
