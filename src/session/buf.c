/*
 * buf.c - send buffers: malloc'd ones, small ones from the context's
 * cache, and ones in registered memory (a pool block or a large buffer)
 * that a transport sends without a copy (verbs; the pool is the one the
 * registry's rift__ctx_pool gives).  rift_buf_alloc and rift_buf_free
 * are api/buf.c's.  Nothing here calls a user callback.
 */
#include <stdlib.h>

#include "memory/pool.h"
#include "session/session.h"

struct rift__buf *rift__buf_new(rift_ctx *ctx, size_t len)
{
	struct rift__buf *b = malloc(sizeof(*b) + (len ? len : 1));

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
	if (len <= big && !wait)
		/* Not waiting for the pool to grow: this runs on the loop,
		 * whose other paths (a re-attach perhaps) would wait with
		 * it; meanwhile the message is malloc'd, below. */
		blk = rift__pool_try_alloc(pool, len, RIFT_POOL_SEND, &rc, err,
					   sizeof(err));
	else if (len <= big)
		blk = rift__pool_alloc(pool, len, RIFT_POOL_SEND, &rc, err,
				       sizeof(err));
	else if (ctx->cfg.rndv_threshold && len >= ctx->cfg.rndv_threshold)
		blk = rift__pool_alloc_large(pool, len, RIFT_POOL_SEND, &rc, err,
					     sizeof(err));
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
		 * header any more. */
		rift__pool_free(b->pool, b->data, RIFT_POOL_SEND);
		if (cache_room(ctx->n_buf_hdrs)) {
			b->free_next = ctx->buf_hdrs;
			ctx->buf_hdrs = b;
			ctx->n_buf_hdrs++;
		} else {
			free(b);
		}
	} else {
		free(b); /* small ones only when the cache is full */
	}
}
