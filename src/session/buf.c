/*
 * buf.c - send buffers: malloc'd ones, small ones from the context's
 * cache, and ones in registered memory (a pool block or a large buffer)
 * that a transport sends without a copy (verbs; the pool is the one the
 * registry's rift__ctx_pool gives).  rift_buf_alloc and rift_buf_free
 * are api/buf.c's.  Nothing here calls a user callback.
 */
#include <malloc.h>
#include <stdlib.h>

#include "memory/pool.h"
#include "session/session.h"

/* ---- spare memory for the next large message (internal.h) ---- */

/*
 * Under ASan nothing is kept: it should see every block's life (one used
 * after it was given back is then reported, not silently reused).
 */
static bool spares_keep(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return false;
#else
	return true;
#endif
}

static void spares_drop(struct rift__spares *k, uint32_t i)
{
	k->n--;
	for (; i < k->n; i++) {
		k->mem[i] = k->mem[i + 1];
		k->cap[i] = k->cap[i + 1];
		k->kept_us[i] = k->kept_us[i + 1];
	}
}

/* The idle timer: free what nobody took for RIFT_SPARE_IDLE_MS, so the
 * memory of a burst of large messages goes back to the system after it. */
static void spares_idle(rift_timer *t, void *user)
{
	rift_ctx *ctx = user;
	struct rift__spares *k = &ctx->spares;
	uint64_t idle_us = RIFT_SPARE_IDLE_MS * 1000ull;

	RIFT_UNUSED(t);
	while (k->n && k->kept_us[k->n - 1] + idle_us <= ctx->now_us) {
		free(k->mem[k->n - 1]);
		k->n--;
	}
	if (k->n)
		rift_timer_start(&k->idle, (k->kept_us[k->n - 1] + idle_us -
					    ctx->now_us + 999) / 1000, 0);
}

void *rift__spare_get(rift_ctx *ctx, size_t len)
{
	struct rift__spares *k = &ctx->spares;
	uint32_t best = k->n;
	void *mem;

	if (len < RIFT_SPARE_MIN)
		return malloc(len ? len : 1);
	/* The smallest that fits, if it is not more than twice too big. */
	for (uint32_t i = 0; i < k->n; i++)
		if (k->cap[i] >= len && k->cap[i] / 2 <= len &&
		    (best == k->n || k->cap[i] < k->cap[best]))
			best = i;
	if (best == k->n)
		return malloc(len);
	mem = k->mem[best];
	spares_drop(k, best);
	return mem;
}

void rift__spare_put(rift_ctx *ctx, void *mem)
{
	struct rift__spares *k = &ctx->spares;
	size_t cap;

	if (!mem)
		return;
	cap = malloc_usable_size(mem);
	if (cap < RIFT_SPARE_MIN || !spares_keep()) {
		free(mem);
		return;
	}
	if (k->n == RIFT_SPARES) { /* the one kept longest goes */
		free(k->mem[k->n - 1]);
		k->n--;
	}
	for (uint32_t i = k->n; i > 0; i--) {
		k->mem[i] = k->mem[i - 1];
		k->cap[i] = k->cap[i - 1];
		k->kept_us[i] = k->kept_us[i - 1];
	}
	k->mem[0] = mem;
	k->cap[0] = cap;
	k->kept_us[0] = ctx->now_us;
	k->n++;
	if (!k->idle.ctx)
		rift__timer_init(ctx, &k->idle, spares_idle, ctx);
	if (!rift__timer_active(&k->idle))
		rift_timer_start(&k->idle, RIFT_SPARE_IDLE_MS, 0);
}

static void spares_free(rift_ctx *ctx)
{
	struct rift__spares *k = &ctx->spares;

	if (k->idle.ctx)
		rift_timer_stop(&k->idle);
	while (k->n)
		free(k->mem[--k->n]);
}

/* ---- send buffers ---- */

struct rift__buf *rift__buf_new(rift_ctx *ctx, size_t len)
{
	struct rift__buf *b = rift__spare_get(ctx, sizeof(*b) + len);

	if (!b)
		return NULL;
	b->magic = RIFT_BUF_MAGIC;
	b->ctx = ctx;
	b->data = b + 1;
	b->cap = len;
	b->pool = NULL;
	b->small = false;
	b->om.user_buf = false;
	return b;
}

/*
 * rift_conn_send copies a small message into a buffer of a per-context
 * cache rather than a fresh malloc'd one: request/reply traffic then
 * allocates and frees nothing per message (a buffer returns when the peer
 * acknowledges its message).  The headers of registered buffers, which
 * live apart from their blocks, are cached the same way.  Not under ASan,
 * which should see every buffer's life.
 */
#define SMALL_BUF RIFT_SMALL_BUF

static bool cache_room(uint32_t n)
{
#if defined(__SANITIZE_ADDRESS__)
	RIFT_UNUSED(n);
	return false;
#else
	return n < RIFT_SMALL_CACHE;
#endif
}

struct rift__buf *rift__buf_new_small(rift_ctx *ctx, size_t len)
{
	struct rift__buf *b = ctx->small_bufs;

	if (b) {
		ctx->small_bufs = b->free_next;
		ctx->n_small_bufs--;
	} else {
		b = malloc(sizeof(*b) + SMALL_BUF);
		if (!b)
			return NULL;
		b->ctx = ctx;
		b->data = b + 1;
		b->pool = NULL;
		b->small = true;
	}
	b->magic = RIFT_BUF_MAGIC;
	b->cap = len;
	b->om.user_buf = false;
	return b;
}

void rift__ctx_free_small_bufs(rift_ctx *ctx)
{
	while (ctx->small_bufs) {
		struct rift__buf *b = ctx->small_bufs;

		ctx->small_bufs = b->free_next;
		free(b);
	}
	ctx->n_small_bufs = 0;
	while (ctx->buf_hdrs) {
		struct rift__buf *b = ctx->buf_hdrs;

		ctx->buf_hdrs = b->free_next;
		free(b);
	}
	ctx->n_buf_hdrs = 0;
	spares_free(ctx);
}

/*
 * A buffer in registered memory, so the verbs transport can send it
 * without a copy: a pool block when it fits one, else a large registered
 * buffer when it is big enough to go by rendezvous (RDMA READ from it);
 * malloc'd otherwise, or when registered memory runs out or is still
 * being registered (such a message is streamed through the send slots
 * instead).  The payload fills the
 * block from its first byte, so len bytes need a block of len bytes, not
 * one class up; the header sits in the block's pool slot.
 */
struct rift__buf *rift__buf_new_registered(rift_ctx *ctx, size_t len,
					   bool wait)
{
	struct rift__pool *pool = rift__ctx_pool(ctx);
	size_t big = ctx->cfg.block_size[RIFT_BLOCK_CLASSES - 1];
	struct rift__buf *b;
	char err[RIFT_ERRMSG_LEN];
	void *blk, **slot;
	int rc;

	if (!pool)
		return rift__buf_new(ctx, len);
	if (len <= big)
		/* Not for the pool to grow when the caller cannot wait (the
		 * loop's paths would wait with it), nor while a session
		 * re-attaches (its re-attach would): the message is malloc'd
		 * meanwhile, below, and goes by copy. */
		blk = (wait && !rift__pool_reattaching(pool)
			       ? rift__pool_alloc
			       : rift__pool_try_alloc)(pool, len, RIFT_POOL_SEND,
						       &rc, err, sizeof(err));
	else if (ctx->cfg.rndv_threshold && len >= ctx->cfg.rndv_threshold)
		/* The same: registering tens of MiB takes the loop's time;
		 * without wait the grower does it for the next message. */
		blk = (wait ? rift__pool_alloc_large : rift__pool_try_alloc_large)(
			pool, len, RIFT_POOL_SEND, &rc, err, sizeof(err));
	else
		return rift__buf_new(ctx, len);
	if (!blk)
		return rift__buf_new(ctx, len); /* pool share used up */
	b = ctx->buf_hdrs;
	if (b) {
		ctx->buf_hdrs = b->free_next;
		ctx->n_buf_hdrs--;
	} else {
		b = malloc(sizeof(*b));
		if (!b) {
			rift__pool_free(pool, blk, RIFT_POOL_SEND);
			return NULL;
		}
	}
	slot = rift__pool_slot(pool, blk, NULL);
	if (!slot)
		abort(); /* the pool handed out something not a block */
	*slot = b;
	b->magic = RIFT_BUF_MAGIC;
	b->ctx = ctx;
	b->data = blk;
	b->cap = len;
	b->pool = pool;
	b->holds = NULL;
	b->small = false;
	b->om.user_buf = false;
	return b;
}

struct rift__buf *rift__buf_from_user(rift_ctx *ctx, void *data)
{
	struct rift__pool *pool = rift__ctx_pool_held(ctx);
	struct rift__buf *b;
	bool inside;

	if (!data)
		return NULL;
	if (pool) {
		void **slot = rift__pool_slot(pool, data, &inside);

		if (slot) {
			b = *slot;
			return b && b->magic == RIFT_BUF_MAGIC && b->data == data
				       ? b
				       : NULL;
		}
		if (inside)
			return NULL; /* not a block start: nothing to read */
	} else if (rift__pool_global_owns(data)) {
		/* Another context's block (this one holds no pool, so none
		 * of its buffers is registered): reading in front of it
		 * could touch an unmapped page. */
		return NULL;
	}
	b = (struct rift__buf *)data - 1;
	return b->magic == RIFT_BUF_MAGIC && b->data == data && !b->pool ? b
									  : NULL;
}

/* The part of rift__buf_release (session.h) that is not a small buffer
 * going back to the cache. */
void rift__buf_release_slow(struct rift__buf *b)
{
	rift_ctx *ctx = b->ctx;

	b->magic = 0;
	if (b->pool) {
		/* No peer may read it once it is free (each release unlinks
		 * its hold). */
		while (b->holds)
			b->holds->release(b->holds);
		/* Clears the slot: a stale pointer to the block finds no
		 * header any more.  (A hold may have kept the block: it frees
		 * it itself, later.) */
		if (b->data)
			rift__pool_free(b->pool, b->data, RIFT_POOL_SEND);
		if (cache_room(ctx->n_buf_hdrs)) {
			b->free_next = ctx->buf_hdrs;
			ctx->buf_hdrs = b;
			ctx->n_buf_hdrs++;
		} else {
			free(b);
		}
	} else if (b->small) {
		free(b); /* only when the cache is full */
	} else {
		rift__spare_put(ctx, b);
	}
}
