/*
 * pool.c - the registered block pool; see pool.h.
 *
 * Layout: the whole of pool_max is reserved as address space once
 * (PROT_NONE, no memory behind it), and regions of `region` bytes are
 * committed inside it as the pool grows.  So the region of any block is
 * (ptr - base) / region: no lookup table, no search on free.  A region
 * serves one block class, fixed when it is first carved.
 *
 * Free blocks form intrusive singly linked lists (the first word of a free
 * block points at the next).  Allocation tries the thread's cache, then
 * the thread's bucket, then the other buckets, then grows the pool.  A
 * thread's cache goes back to its bucket when the thread exits (a
 * pthread key's destructor), so threads that come and go strand nothing.
 *
 * Lifetime: the pool is the process's, made by the first reference
 * (rift__pool_get: a context's first registered buffer) and freed with
 * the last.  Contexts hold one each, and so does every retained message
 * whose payload stayed in a pool block (rift__pool_hold), which may be
 * released after its context is destroyed.
 *
 * Each block also has a pointer slot in a side table of its region, made
 * when the region is carved (a large buffer has one in its entry), so a
 * user can hang its bookkeeping off a block without taking bytes of it:
 * rift keeps a buffer's header there, and the payload starts at the
 * block's first byte (a 64 KiB message fits a 64 KiB block, not a 2 MiB
 * one).
 *
 * Large buffers (above the largest class) are mappings of their own, in
 * pool_large.c; committing regions and the grower that commits them
 * ahead of need are in pool_grow.c; the pool's state is in pool_int.h.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "memory/pool_int.h"

static pthread_mutex_t global_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rift__pool *global_pool;
static uint64_t global_gen;

/* Per-thread cache: a few free blocks per class, no lock. */
static __thread struct {
	uint64_t gen; /* pool generation these blocks belong to */
	void *head[RIFT_BLOCK_CLASSES];
	uint32_t n[RIFT_BLOCK_CLASSES];
	uint32_t bucket;
	bool bucket_set;
	bool exit_armed; /* tc_exit.key set: tc_return runs at thread exit */
} tc;

/* The key whose destructor gives an exiting thread's cache back. */
static struct {
	pthread_once_t once;
	pthread_key_t key;
	bool made;
} tc_exit = { .once = PTHREAD_ONCE_INIT };

static int class_of(const struct rift__pool *pool, size_t len)
{
	for (int c = 0; c < RIFT_BLOCK_CLASSES; c++)
		if (len <= pool->block[c])
			return c;
	return -1;
}

static struct region *region_of(struct rift__pool *pool, const void *ptr)
{
	const uint8_t *p = ptr;
	size_t i, n = __atomic_load_n(&pool->n_regions, __ATOMIC_ACQUIRE);

	if (p < pool->base || p >= pool->base + pool->reserved)
		return NULL;
	i = (size_t)(p - pool->base) / pool->region;
	return i < n ? &pool->regions[i] : NULL;
}

/* Carve region i into blocks of class c onto bucket b (pool->mu held).
 * 0, or RIFT_ENOMEM (no memory for the slots; the region stays uncarved). */
static int carve(struct rift__pool *pool, size_t i, int c, struct bucket *b)
{
	struct region *r = &pool->regions[i];
	size_t n = pool->region / pool->block[c];
	void *head = NULL;

	r->slots = calloc(n, sizeof(*r->slots));
	if (!r->slots)
		return RIFT_ENOMEM;
	pool->carved_us[pool->n_carved++ % GROW_AHEAD_MAX] = rift__clock_us();
	/* rift__pool_slot reads cls without the lock: slots first. */
	__atomic_store_n(&r->cls, c, __ATOMIC_RELEASE);
	for (size_t k = n; k-- > 0;) {
		void *blk = r->base + k * pool->block[c];

		*(void **)blk = head;
		head = blk;
	}
	pthread_mutex_lock(&b->mu);
	/* Region blocks go in front; the list is rebuilt in order. */
	if (b->head[c]) {
		void *last = head;

		while (*(void **)last)
			last = *(void **)last;
		*(void **)last = b->head[c];
	}
	b->head[c] = head;
	b->n[c] += n;
	pthread_mutex_unlock(&b->mu);
	return 0;
}

int rift__pool_get(const rift_config *cfg, const struct rift__pool_reg *ops,
		   struct rift__pool **out, char *err, size_t errlen)
{
	struct rift__pool *pool;
	struct rift__pool_geometry geo;
	int rc = 0;

	pthread_mutex_lock(&global_mu);
	if (global_pool) {
		rc = rift__pool_settings_check(&global_pool->made, cfg, err,
					       errlen);
		if (!rc) {
			global_pool->refs++;
			*out = global_pool;
		}
		pthread_mutex_unlock(&global_mu);
		return rc;
	}
	pool = calloc(1, sizeof(*pool));
	if (!pool) {
		rc = RIFT_ENOMEM;
		snprintf(err, errlen, "pool: out of memory");
		goto out;
	}
	pthread_mutex_init(&pool->mu, NULL);
	pthread_cond_init(&pool->grow_cv, NULL);
	pthread_cond_init(&pool->commit_cv, NULL);
	pool->refs = 1;
	pool->gen = ++global_gen;
	pool->ops = *ops;
	memcpy(pool->block, cfg->block_size, sizeof(pool->block));
	rift__pool_geometry(cfg, &geo);
	pool->region = geo.region;
	pool->max_regions = geo.max_regions;
	pool->reserved = pool->max_regions * pool->region;
	pool->limit[RIFT_POOL_RECV] = pool->reserved * cfg->recv_reserve_pct / 100;
	pool->limit[RIFT_POOL_SEND] = pool->reserved - pool->limit[RIFT_POOL_RECV];
	pool->thread_cache = cfg->pool_thread_cache;
	pool->n_buckets = cfg->pool_buckets ? cfg->pool_buckets : 1;
	if (pool->n_buckets > MAX_BUCKETS)
		pool->n_buckets = MAX_BUCKETS;
	pool->huge = cfg->huge_pages != 0;
	rift__pool_settings_of(cfg, &pool->made);
	pool->regions = calloc(pool->max_regions, sizeof(*pool->regions));
	pool->buckets = aligned_alloc(64, sizeof(*pool->buckets) * pool->n_buckets);
	if (!pool->regions || !pool->buckets) {
		rc = RIFT_ENOMEM;
		snprintf(err, errlen, "pool: out of memory for %zu regions",
			 pool->max_regions);
		goto fail;
	}
	memset(pool->buckets, 0, sizeof(*pool->buckets) * pool->n_buckets);
	for (uint32_t b = 0; b < pool->n_buckets; b++)
		pthread_mutex_init(&pool->buckets[b].mu, NULL);
	/* Regions are mapped at their place in it: with huge pages each
	 * must start on a huge page, so the reservation does. */
	pool->base = rift__pool_reserve(pool->reserved, geo.align);
	if (!pool->base) {
		rc = rift__from_errno(errno);
		snprintf(err, errlen, "pool: cannot reserve %zu MiB of address "
				      "space (pool.max): %s",
			 pool->reserved >> 20, rift_strerror(rc));
		pool->base = NULL;
		goto fail;
	}
	pthread_mutex_lock(&pool->mu);
	for (size_t i = 0; i < geo.initial_regions && rc >= 0; i++)
		rc = rift__pool_commit_region(pool, err, errlen);
	pthread_mutex_unlock(&pool->mu);
	if (rc < 0)
		goto fail;
	rc = 0;
	global_pool = pool;
	*out = pool;
	goto out;

fail:
	if (pool->base)
		munmap(pool->base, pool->reserved);
	pthread_cond_destroy(&pool->grow_cv);
	pthread_cond_destroy(&pool->commit_cv);
	free(pool->buckets);
	free(pool->regions);
	free(pool);
out:
	pthread_mutex_unlock(&global_mu);
	return rc;
}

void rift__pool_hold(struct rift__pool *pool)
{
	pthread_mutex_lock(&global_mu);
	pool->refs++;
	pthread_mutex_unlock(&global_mu);
}

/*
 * The last reference frees the pool under global_mu: a pool made
 * meanwhile would find the devices of this one still there (ops.gone
 * frees them last), and an exiting thread would give its cache back to a
 * pool on its way out (tc_return).
 */
void rift__pool_put(struct rift__pool *pool)
{
	if (!pool)
		return;
	pthread_mutex_lock(&global_mu);
	if (--pool->refs > 0) {
		pthread_mutex_unlock(&global_mu);
		return;
	}
	global_pool = NULL;
	pthread_mutex_lock(&pool->mu);
	pool->grow_stop = true;
	pthread_cond_signal(&pool->grow_cv);
	pthread_mutex_unlock(&pool->mu);
	if (pool->grower_started)
		pthread_join(pool->grower, NULL);
	pthread_cond_destroy(&pool->grow_cv);
	pthread_cond_destroy(&pool->commit_cv);
	for (size_t i = 0; i < pool->n_regions; i++) {
		for (int d = 0; d < pool->n_devs; d++)
			if (pool->regions[i].mr[d])
				pool->ops.dereg(pool->regions[i].mr[d]);
		free(pool->regions[i].slots);
	}
	munmap(pool->base, pool->reserved);
	while (pool->large) {
		struct large *lg = pool->large;

		pool->large = lg->next;
		rift__pool_large_unmap(pool, lg);
	}
	for (uint32_t b = 0; b < pool->n_buckets; b++)
		pthread_mutex_destroy(&pool->buckets[b].mu);
	pthread_mutex_destroy(&pool->mu);
	if (pool->ops.gone)
		pool->ops.gone();
	free(pool->buckets);
	free(pool->regions);
	free(pool);
	pthread_mutex_unlock(&global_mu);
}

/* Wait until no registration runs outside mu (mu held; it is let go
 * meanwhile).  Devices come and go seldom; a commit takes milliseconds. */
static void regs_settle(struct rift__pool *pool)
{
	while (pool->unlocked_regs) {
		pthread_mutex_unlock(&pool->mu);
		usleep(1000);
		pthread_mutex_lock(&pool->mu);
	}
}

int rift__pool_add_device(struct rift__pool *pool, void *dev, char *err,
			  size_t errlen)
{
	int d, free_d = -1, rc = 0;

	pthread_mutex_lock(&pool->mu);
	for (d = 0; d < pool->n_devs; d++) {
		if (pool->devs[d] == dev)
			goto out;
		if (!pool->devs[d] && free_d < 0)
			free_d = d;
	}
	if (free_d >= 0) {
		/* A removed device's slot: a region committed outside mu
		 * meanwhile would skip it or not, so none may be. */
		regs_settle(pool);
		d = free_d;
	} else if (d == RIFT_POOL_MAX_DEVICES) {
		snprintf(err, errlen, "pool: more than %d devices",
			 RIFT_POOL_MAX_DEVICES);
		rc = RIFT_ENOSPC;
		goto out;
	}
	pool->devs[d] = dev;
	for (size_t i = 0; i < pool->n_regions; i++) {
		rc = rift__pool_reg_region(pool, &pool->regions[i], d, err, errlen);
		if (rc) {
			while (i-- > 0)
				pool->ops.dereg(pool->regions[i].mr[d]);
			pool->devs[d] = NULL;
			goto out;
		}
	}
	for (struct large *lg = pool->large; lg; lg = lg->next) {
		rc = pool->ops.reg(dev, lg->base, lg->len, &lg->mr[d],
				   &lg->lkey[d], &lg->rkey[d], err, errlen);
		if (rc) {
			for (struct large *u = pool->large; u != lg; u = u->next)
				pool->ops.dereg(u->mr[d]);
			for (size_t i = 0; i < pool->n_regions; i++)
				pool->ops.dereg(pool->regions[i].mr[d]);
			pool->devs[d] = NULL;
			goto out;
		}
	}
	if (d == pool->n_devs)
		__atomic_store_n(&pool->n_devs, d + 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&pool->mu);
	return rc ? rc : d;
}

void rift__pool_remove_device(struct rift__pool *pool, void *dev)
{
	pthread_mutex_lock(&pool->mu);
	regs_settle(pool);
	for (int d = 0; d < pool->n_devs; d++) {
		if (pool->devs[d] != dev)
			continue;
		for (size_t i = 0; i < pool->n_regions; i++) {
			if (pool->regions[i].mr[d])
				pool->ops.dereg(pool->regions[i].mr[d]);
			pool->regions[i].mr[d] = NULL;
		}
		for (struct large *lg = pool->large; lg; lg = lg->next) {
			if (lg->mr[d])
				pool->ops.dereg(lg->mr[d]);
			lg->mr[d] = NULL;
		}
		pool->devs[d] = NULL;
	}
	pthread_mutex_unlock(&pool->mu);
}

static struct bucket *my_bucket(struct rift__pool *pool)
{
	if (!tc.bucket_set) {
		tc.bucket = (uint32_t)gettid();
		tc.bucket_set = true;
	}
	return &pool->buckets[tc.bucket % pool->n_buckets];
}

/* Move the first n blocks of class c of the thread's cache to bucket b. */
static void tc_give(struct bucket *b, int c, uint32_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&b->mu);
	while (n--) {
		void *blk = tc.head[c];

		tc.head[c] = *(void **)blk;
		tc.n[c]--;
		*(void **)blk = b->head[c];
		b->head[c] = blk;
		b->n[c]++;
	}
	pthread_mutex_unlock(&b->mu);
}

/*
 * A thread exits: the blocks in its cache go to its bucket, if the pool
 * they came from is still there (under global_mu it cannot go).
 */
static void tc_return(void *arg)
{
	struct rift__pool *pool;

	RIFT_UNUSED(arg);
	tc.exit_armed = false;
	pthread_mutex_lock(&global_mu);
	pool = global_pool;
	if (pool && pool->gen == tc.gen)
		for (int c = 0; c < RIFT_BLOCK_CLASSES; c++)
			tc_give(my_bucket(pool), c, tc.n[c]);
	pthread_mutex_unlock(&global_mu);
	memset(tc.head, 0, sizeof(tc.head));
	memset(tc.n, 0, sizeof(tc.n));
}

static void tc_exit_make(void)
{
	tc_exit.made = pthread_key_create(&tc_exit.key, tc_return) == 0;
}

/*
 * The thread's first use of this pool: blocks cached for an earlier pool
 * are gone with it, and the cache is given back when the thread exits
 * (unless no pthread key could be made: then it stays stranded).
 */
static void tc_adopt(struct rift__pool *pool)
{
	memset(tc.head, 0, sizeof(tc.head));
	memset(tc.n, 0, sizeof(tc.n));
	tc.gen = pool->gen;
	if (tc.exit_armed)
		return;
	pthread_once(&tc_exit.once, tc_exit_make);
	tc.exit_armed = tc_exit.made &&
			pthread_setspecific(tc_exit.key, &tc) == 0;
}

/* Move up to want blocks of class c from b into the thread cache. */
static uint32_t refill(struct bucket *b, int c, uint32_t want)
{
	uint32_t got = 0;

	pthread_mutex_lock(&b->mu);
	while (got < want && b->head[c]) {
		void *blk = b->head[c];

		b->head[c] = *(void **)blk;
		b->n[c]--;
		*(void **)blk = tc.head[c];
		tc.head[c] = blk;
		tc.n[c]++;
		got++;
	}
	pthread_mutex_unlock(&b->mu);
	return got;
}

/*
 * How an allocation may get a block when none is free: TRY never waits
 * for a region; WAIT waits for one (or commits it); RESERVE waits too and
 * may take the last spare region, which the others leave: a path's rings
 * (rdma_qp.c) take it, so that a re-attach in a session's first seconds,
 * when traffic takes every region the grower commits, does not wait for a
 * registration (160 ms twice in a row for one re-attach in the lab).
 */
enum alloc_mode { ALLOC_TRY, ALLOC_WAIT, ALLOC_RESERVE };

/* The index of a committed, uncarved region this mode may take, or -1
 * (mu held). */
static int spare_for(const struct rift__pool *pool, enum alloc_mode mode)
{
	size_t n = 0;
	int first = -1;

	for (size_t k = 0; k < pool->n_regions; k++)
		if (pool->regions[k].cls < 0 && n++ == 0)
			first = (int)k;
	if (n == 1 && mode != ALLOC_RESERVE && pool->n_devs && pool->n_carved &&
	    pool->n_regions < pool->max_regions)
		return -1; /* the reserve */
	return first;
}

static void *pool_alloc(struct rift__pool *pool, size_t len,
			enum rift__pool_use use, enum alloc_mode mode, int *rc,
			char *err, size_t errlen)
{
	bool wait = mode != ALLOC_TRY;
	int c = class_of(pool, len);
	uint32_t batch;
	uint64_t held;
	void *blk;

	if (c < 0) {
		*rc = RIFT_EMSGSIZE;
		snprintf(err, errlen, "%zu bytes exceed the largest block class "
				      "(%u bytes)",
			 len, pool->block[RIFT_BLOCK_CLASSES - 1]);
		return NULL;
	}
	held = __atomic_add_fetch(&pool->in_use[use], pool->block[c],
				  __ATOMIC_RELAXED);
	if (held > pool->limit[use]) {
		__atomic_sub_fetch(&pool->in_use[use], pool->block[c],
				   __ATOMIC_RELAXED);
		*rc = RIFT_ENOBUFS;
		snprintf(err, errlen, "%s share of the pool is in use (%llu "
				      "MiB; pool.max and pool.recv_reserve_pct)",
			 use == RIFT_POOL_RECV ? "receive" : "send",
			 (unsigned long long)pool->limit[use] >> 20);
		return NULL;
	}
	if (tc.gen != pool->gen)
		tc_adopt(pool);
	batch = pool->thread_cache / 2 ? pool->thread_cache / 2 : 1;
	/* Each turn either finds blocks or grows the pool by a region, so
	 * this ends: with a block, or with the pool at its maximum.  (Other
	 * threads may take what was just carved before we refill.) */
	while (!tc.head[c]) {
		struct bucket *mine = my_bucket(pool);
		uint64_t t_wait = 0;
		int i = -1;

		if (refill(mine, c, batch))
			break;
		for (uint32_t b = 0; b < pool->n_buckets && !tc.head[c]; b++)
			refill(&pool->buckets[b], c, batch);
		if (tc.head[c])
			break;
		pthread_mutex_lock(&pool->mu);
		for (;;) {
			/* Committed but not yet carved (the initial size, or
			 * grown ahead) first; else the one under way. */
			i = spare_for(pool, mode);
			if (i >= 0 || !pool->committing || !wait)
				break;
			if (!t_wait)
				t_wait = rift__clock_us();
			/* A commit held for a re-attach goes on for us. */
			pool->commit_waiters++;
			pthread_cond_signal(&pool->grow_cv);
			pthread_cond_wait(&pool->commit_cv, &pool->mu);
			pool->commit_waiters--;
		}
		if (i < 0 && !wait && pool->n_devs &&
		    pool->n_regions < pool->max_regions) {
			/* Registering a region takes milliseconds to
			 * hundreds of them: the grower does it, and the
			 * caller goes its other way meanwhile.  (Without a
			 * device there is nothing to register, and at the
			 * maximum commit_region below says so at once.) */
			rift__pool_grow_ahead(pool);
			pthread_mutex_unlock(&pool->mu);
			__atomic_sub_fetch(&pool->in_use[use], pool->block[c],
					   __ATOMIC_RELAXED);
			*rc = RIFT_EAGAIN;
			snprintf(err, errlen, "pool growing: a region for "
					      "%u-byte blocks is being "
					      "registered",
				 pool->block[c]);
			return NULL;
		}
		if (i < 0) {
			if (!t_wait)
				t_wait = rift__clock_us();
			i = rift__pool_commit_region(pool, err, errlen);
			if (i >= 0)
				pool->caller_regs++;
		}
		if (t_wait)
			RIFT_PLOG(RIFT_LOG_DEBUG,
				  "pool: a %u-byte block waited %.1f ms for a "
				  "region",
				  pool->block[c],
				  (rift__clock_us() - t_wait) / 1e3);
		if (i >= 0 && carve(pool, (size_t)i, c, mine)) {
			snprintf(err, errlen, "pool: out of memory for the "
					      "block table of a region");
			i = RIFT_ENOMEM;
		}
		if (i >= 0)
			rift__pool_grow_ahead(pool);
		pthread_mutex_unlock(&pool->mu);
		if (i < 0) {
			__atomic_sub_fetch(&pool->in_use[use], pool->block[c],
					   __ATOMIC_RELAXED);
			*rc = i;
			return NULL;
		}
	}
	blk = tc.head[c];
	tc.head[c] = *(void **)blk;
	tc.n[c]--;
	__atomic_add_fetch(&pool->blocks_in_use[c], 1, __ATOMIC_RELAXED);
	*rc = 0;
	return blk;
}

void *rift__pool_alloc(struct rift__pool *pool, size_t len,
		       enum rift__pool_use use, int *rc, char *err,
		       size_t errlen)
{
	return pool_alloc(pool, len, use, ALLOC_WAIT, rc, err, errlen);
}

void *rift__pool_try_alloc(struct rift__pool *pool, size_t len,
			   enum rift__pool_use use, int *rc, char *err,
			   size_t errlen)
{
	return pool_alloc(pool, len, use, ALLOC_TRY, rc, err, errlen);
}

void *rift__pool_alloc_reserve(struct rift__pool *pool, size_t len,
			       enum rift__pool_use use, int *rc, char *err,
			       size_t errlen)
{
	return pool_alloc(pool, len, use, ALLOC_RESERVE, rc, err, errlen);
}

void rift__pool_free(struct rift__pool *pool, void *block,
		     enum rift__pool_use use)
{
	struct region *r = region_of(pool, block);
	int c;

	if (!r) {
		rift__pool_large_free(pool, block, use);
		return;
	}
	if (r->cls < 0)
		abort(); /* not ours: a caller bug that must not go unnoticed */
	c = r->cls;
	r->slots[(size_t)((uint8_t *)block - r->base) / pool->block[c]] = NULL;
	__atomic_sub_fetch(&pool->in_use[use], pool->block[c], __ATOMIC_RELAXED);
	__atomic_sub_fetch(&pool->blocks_in_use[c], 1, __ATOMIC_RELAXED);
	if (tc.gen != pool->gen)
		tc_adopt(pool);
	*(void **)block = tc.head[c];
	tc.head[c] = block;
	tc.n[c]++;
	/* Give half back so other threads can use it. */
	if (tc.n[c] > pool->thread_cache)
		tc_give(my_bucket(pool), c, tc.n[c] - pool->thread_cache / 2);
}

void **rift__pool_slot(struct rift__pool *pool, const void *ptr, bool *inside)
{
	const uint8_t *p = ptr;
	uintptr_t a = (uintptr_t)ptr;
	void **slot = NULL;
	bool in = false;

	if (p >= pool->base && p < pool->base + pool->reserved) {
		/* Reserved space, committed or not: never read as anything
		 * but a block. */
		struct region *r = region_of(pool, ptr);
		int c = r ? __atomic_load_n(&r->cls, __ATOMIC_ACQUIRE) : -1;

		in = true;
		if (c >= 0 && (size_t)(p - r->base) % pool->block[c] == 0)
			slot = &r->slots[(size_t)(p - r->base) / pool->block[c]];
	} else if (a >= __atomic_load_n(&pool->large_lo, __ATOMIC_RELAXED) &&
		   a < __atomic_load_n(&pool->large_hi, __ATOMIC_RELAXED)) {
		/* Only pointers near large buffers pay for the lock. */
		pthread_mutex_lock(&pool->mu);
		for (struct large *lg = pool->large; lg && !in; lg = lg->next)
			if (p >= lg->base && p < lg->base + lg->len) {
				in = true;
				if (p == lg->base && lg->used)
					slot = &lg->slot;
			}
		pthread_mutex_unlock(&pool->mu);
	}
	if (inside)
		*inside = in;
	return slot;
}

bool rift__pool_global_owns(const void *ptr)
{
	bool in = false;

	pthread_mutex_lock(&global_mu);
	if (global_pool)
		rift__pool_slot(global_pool, ptr, &in);
	pthread_mutex_unlock(&global_mu);
	return in;
}

size_t rift__pool_block_size(struct rift__pool *pool, const void *ptr)
{
	struct region *r = region_of(pool, ptr);
	size_t len = 0;

	if (r)
		return r->cls >= 0 ? pool->block[r->cls] : 0;
	pthread_mutex_lock(&pool->mu);
	for (struct large *lg = pool->large; lg; lg = lg->next)
		if (lg->used && (const uint8_t *)ptr >= lg->base &&
		    (const uint8_t *)ptr < lg->base + lg->len)
			len = lg->len;
	pthread_mutex_unlock(&pool->mu);
	return len;
}

bool rift__pool_reg_of(struct rift__pool *pool, const void *ptr, int dev,
		       uint32_t *lkey, uint32_t *rkey, void **handle)
{
	struct region *r = region_of(pool, ptr);
	bool found = false;

	if (dev < 0 || dev >= __atomic_load_n(&pool->n_devs, __ATOMIC_ACQUIRE))
		return false;
	if (r) {
		*lkey = r->lkey[dev];
		*rkey = r->rkey[dev];
		*handle = r->mr[dev];
		return true;
	}
	pthread_mutex_lock(&pool->mu);
	for (struct large *lg = pool->large; lg && !found; lg = lg->next)
		if (lg->used && (const uint8_t *)ptr >= lg->base &&
		    (const uint8_t *)ptr < lg->base + lg->len) {
			*lkey = lg->lkey[dev];
			*rkey = lg->rkey[dev];
			*handle = lg->mr[dev];
			found = true;
		}
	pthread_mutex_unlock(&pool->mu);
	return found;
}

bool rift__pool_keys(struct rift__pool *pool, const void *ptr, int dev,
		     uint32_t *lkey, uint32_t *rkey)
{
	void *handle;

	return rift__pool_reg_of(pool, ptr, dev, lkey, rkey, &handle);
}

void rift__pool_usage(struct rift__pool *pool, struct rift__pool_usage *u)
{
	pthread_mutex_lock(&pool->mu);
	u->large_bytes = pool->large_bytes[0] + pool->large_bytes[1];
	u->caller_regs = pool->caller_regs;
	u->growing = rift__pool_growing(pool);
	pthread_mutex_unlock(&pool->mu);
	u->regions = __atomic_load_n(&pool->n_regions, __ATOMIC_ACQUIRE);
	u->registered = u->regions * pool->region;
	for (int i = 0; i < 2; i++)
		u->in_use[i] = __atomic_load_n(&pool->in_use[i], __ATOMIC_RELAXED);
	for (int c = 0; c < RIFT_BLOCK_CLASSES; c++) {
		u->blocks_in_use[c] = __atomic_load_n(&pool->blocks_in_use[c],
						      __ATOMIC_RELAXED);
		u->blocks_free[c] = 0;
	}
	for (uint32_t b = 0; b < pool->n_buckets; b++) {
		pthread_mutex_lock(&pool->buckets[b].mu);
		for (int c = 0; c < RIFT_BLOCK_CLASSES; c++)
			u->blocks_free[c] += pool->buckets[b].n[c];
		pthread_mutex_unlock(&pool->buckets[b].mu);
	}
}
