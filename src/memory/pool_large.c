/*
 * pool_large.c - the block pool's large buffers; see pool.h.
 *
 * Large buffers (above the largest class, for messages that move by RDMA
 * READ rendezvous) are mappings of their own, registered with every
 * device like a region.  Registering tens of MiB costs milliseconds (the
 * kernel pins every page), so freed ones are kept registered in a small
 * cache and handed out again for a message of about the same size: a
 * registration cache that can never go stale, because rift owns these
 * mappings and only unmaps them after deregistering.  (Registering the
 * caller's own memory on demand would need an rcache that watches munmap,
 * as UCX does; every message rift moves is already copied into, or
 * allocated from, rift's memory, so that is not needed.)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "memory/pool_int.h"

/* ---- large buffers ---- */

/* Count len bytes against use's share of the pool; false (err says why)
 * if the share has no room. */
static bool share_take(struct rift__pool *pool, enum rift__pool_use use,
		       size_t len, char *err, size_t errlen)
{
	uint64_t held = __atomic_add_fetch(&pool->in_use[use], len,
					   __ATOMIC_RELAXED);

	if (held <= pool->limit[use])
		return true;
	__atomic_sub_fetch(&pool->in_use[use], len, __ATOMIC_RELAXED);
	snprintf(err, errlen, "%s share of the pool is in use (%llu MiB, "
			      "large buffers included; pool.max and "
			      "pool.recv_reserve_pct): no room for %zu MiB",
		 use == RIFT_POOL_RECV ? "receive" : "send",
		 (unsigned long long)pool->limit[use] >> 20, len >> 20);
	return false;
}

/* Deregister and unmap (the entry is already off the list). */
void rift__pool_large_unmap(struct rift__pool *pool, struct large *lg)
{
	for (int d = 0; d < pool->n_devs; d++)
		if (lg->mr[d])
			pool->ops.dereg(lg->mr[d]);
	munmap(lg->base, lg->len);
	free(lg);
}

/* Register lg with device slot d (nothing in a removed device's slot). */
static int large_reg(struct rift__pool *pool, struct large *lg, int d,
		     char *err, size_t errlen)
{
	if (!pool->devs[d])
		return 0;
	return pool->ops.reg(pool->devs[d], lg->base, lg->len, &lg->mr[d],
			     &lg->lkey[d], &lg->rkey[d], err, errlen);
}

/*
 * Map and register a large buffer of need bytes, on the list, not in use
 * (the caller marks it).  mu held, and let go while the pages are pinned
 * (tens to hundreds of ms), as commit_region does: devs[0..n) do not
 * change once counted, and devices added meanwhile are registered after.
 * NULL with *rc and err set.
 */
static struct large *large_make(struct rift__pool *pool, size_t need,
				int *rc, char *err, size_t errlen)
{
	int n = pool->n_devs, d;
	struct large *lg;
	void *m;

	*rc = rift__pool_memlock_check(need * (size_t)(n ? n : 1), err,
				       errlen);
	if (*rc)
		return NULL;
	lg = calloc(1, sizeof(*lg));
	if (!lg) {
		*rc = RIFT_ENOMEM;
		snprintf(err, errlen, "no memory for a large buffer");
		return NULL;
	}
	pool->unlocked_regs++;
	pthread_mutex_unlock(&pool->mu);
	m = mmap(NULL, need, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		pthread_mutex_lock(&pool->mu);
		pool->unlocked_regs--;
		*rc = RIFT_ENOMEM;
		snprintf(err, errlen, "no memory for a %zu MiB buffer",
			 need >> 20);
		free(lg);
		return NULL;
	}
	lg->base = m;
	lg->len = need;
	for (d = 0; d < n && !*rc; d++)
		*rc = large_reg(pool, lg, d, err, errlen);
	pthread_mutex_lock(&pool->mu);
	pool->unlocked_regs--;
	for (; d < pool->n_devs && !*rc; d++)
		*rc = large_reg(pool, lg, d, err, errlen);
	if (*rc) {
		rift__pool_large_unmap(pool, lg);
		return NULL;
	}
	if (!pool->large_lo || (uintptr_t)lg->base < pool->large_lo)
		__atomic_store_n(&pool->large_lo, (uintptr_t)lg->base,
				 __ATOMIC_RELAXED);
	if ((uintptr_t)lg->base + lg->len > pool->large_hi)
		__atomic_store_n(&pool->large_hi, (uintptr_t)lg->base + lg->len,
				 __ATOMIC_RELAXED);
	lg->next = pool->large;
	pool->large = lg;
	return lg;
}

/* The cached one that fits need without wasting more than half of it
 * (mu held), or NULL. */
static struct large *large_cached(struct rift__pool *pool, size_t need)
{
	struct large *lg, *best = NULL;

	for (lg = pool->large; lg; lg = lg->next)
		if (!lg->used && lg->len >= need && lg->len / 2 <= need &&
		    (!best || lg->len < best->len))
			best = lg;
	return best;
}

/* A cached buffer goes to use (mu held): counted as that use's now. */
static void large_take(struct rift__pool *pool, struct large *lg,
		       enum rift__pool_use use)
{
	lg->used = true;
	pool->large_bytes[lg->use] -= lg->len;
	lg->use = use;
	pool->large_bytes[use] += lg->len;
}

void *rift__pool_alloc_large(struct rift__pool *pool, size_t len,
			     enum rift__pool_use use, int *rc, char *err,
			     size_t errlen)
{
	size_t step = pool->block[RIFT_BLOCK_CLASSES - 1];
	size_t need = (len + step - 1) / step * step;
	struct large *lg, *best = NULL;

	if (len == 0 || need < len) {
		*rc = RIFT_EINVAL;
		snprintf(err, errlen, "large buffer of %zu bytes", len);
		return NULL;
	}
	pthread_mutex_lock(&pool->mu);
	best = large_cached(pool, need);
	/* Large buffers in use count against their share of pool.max like
	 * blocks: a peer's rendezvous descriptors cannot pin more than the
	 * receive share, nor large sends more than the send share.  (Cached
	 * ones, unused, are bounded by LARGE_CACHE_BYTES.) */
	if (!share_take(pool, use, best ? best->len : need, err, errlen)) {
		*rc = RIFT_ENOBUFS;
		goto fail;
	}
	if (best) {
		large_take(pool, best, use);
		pthread_mutex_unlock(&pool->mu);
		*rc = 0;
		return best->base;
	}
	lg = large_make(pool, need, rc, err, errlen);
	if (!lg)
		goto fail_share;
	if (pool->n_devs)
		pool->caller_regs++;
	lg->used = true;
	lg->use = use;
	pool->large_bytes[use] += need;
	pthread_mutex_unlock(&pool->mu);
	return lg->base;

fail_share:
	__atomic_sub_fetch(&pool->in_use[use], need, __ATOMIC_RELAXED);
fail:
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

void *rift__pool_try_alloc_large(struct rift__pool *pool, size_t len,
				 enum rift__pool_use use, int *rc, char *err,
				 size_t errlen)
{
	size_t step = pool->block[RIFT_BLOCK_CLASSES - 1];
	size_t need = (len + step - 1) / step * step;
	struct large *best;

	pthread_mutex_lock(&pool->mu);
	best = len && need >= len ? large_cached(pool, need) : NULL;
	if (!best && (!pool->n_devs || !len || need < len)) {
		/* Nothing to register (a mapping is quick), or nonsense:
		 * the waiting call does it, or says what is wrong. */
		pthread_mutex_unlock(&pool->mu);
		return rift__pool_alloc_large(pool, len, use, rc, err, errlen);
	}
	if (!best) {
		/* The grower registers one of this size (one at a time);
		 * the caller goes its other way meanwhile. */
		if (!pool->large_want)
			pool->large_want = need;
		rift__pool_grower_kick(pool);
		pthread_mutex_unlock(&pool->mu);
		*rc = RIFT_EAGAIN;
		snprintf(err, errlen, "pool: a %zu MiB buffer is being "
				      "registered", need >> 20);
		return NULL;
	}
	if (!share_take(pool, use, best->len, err, errlen)) {
		pthread_mutex_unlock(&pool->mu);
		*rc = RIFT_ENOBUFS;
		return NULL;
	}
	large_take(pool, best, use);
	pthread_mutex_unlock(&pool->mu);
	*rc = 0;
	return best->base;
}

void rift__pool_large_grow(struct rift__pool *pool)
{
	size_t need = pool->large_want;
	struct large *lg;
	char err[160];
	int rc;

	if (!need || large_cached(pool, need)) {
		pool->large_want = 0;
		return;
	}
	lg = large_make(pool, need, &rc, err, sizeof(err));
	pool->large_want = 0;
	if (!lg) {
		/* Quiet: the waiting call meets the same and reports it. */
		RIFT_PLOG(RIFT_LOG_DEBUG, "pool: a %zu MiB buffer ahead of "
			  "need: %s", need >> 20, err);
		return;
	}
	lg->used = false;
	lg->use = RIFT_POOL_SEND;
	pool->large_bytes[RIFT_POOL_SEND] += need;
}

/* Back to the cache; the cache keeps the newest LARGE_CACHE_N buffers
 * within LARGE_CACHE_BYTES and unmaps the rest. */
void rift__pool_large_free(struct rift__pool *pool, void *block,
			   enum rift__pool_use use)
{
	struct large **pp, *lg, *drop = NULL;
	size_t kept = 0, kept_bytes = 0;

	pthread_mutex_lock(&pool->mu);
	for (pp = &pool->large; *pp; pp = &(*pp)->next)
		if ((*pp)->base == block && (*pp)->used)
			break;
	lg = *pp;
	if (!lg)
		abort(); /* not ours: a caller bug that must not go unnoticed */
	RIFT_UNUSED(use);
	__atomic_sub_fetch(&pool->in_use[lg->use], lg->len, __ATOMIC_RELAXED);
	lg->used = false;
	lg->slot = NULL;
	/* Most recently freed first: the next large message likely has
	 * the same size as the last one. */
	*pp = lg->next;
	lg->next = pool->large;
	pool->large = lg;
	for (pp = &pool->large; *pp;) {
		struct large *e = *pp;

		if (e->used) {
			pp = &e->next;
			continue;
		}
		if (kept < LARGE_CACHE_N && kept_bytes + e->len <= LARGE_CACHE_BYTES) {
			kept++;
			kept_bytes += e->len;
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		pool->large_bytes[e->use] -= e->len;
		e->next = drop;
		drop = e;
	}
	pthread_mutex_unlock(&pool->mu);
	while (drop) {
		lg = drop;
		drop = lg->next;
		rift__pool_large_unmap(pool, lg);
	}
}
