/*
 * Lifetimes across contexts and threads (issue 14, item 4): a retained
 * message keeps the process pool its payload lives in; a thread's cache
 * of pool blocks goes back to the pool when the thread exits; a failed
 * rift_ctx_create leaves no stale handle behind.  On the host there is
 * no device, so the pool registers nothing; the lab runs the same
 * delivery over real verbs (test_messaging.c, retained_messages_outlive_
 * their_context).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memory/pool.h"
#include "../runner.h"

/*
 * What the verbs transport lends while on_recv runs (rdma_rx.c): the pool
 * block the message arrived in, which rift_msg_retain takes for good.
 */
struct fake_lend {
	struct rift__lend base;
	struct rift__pool *pool;
	void *block;
};

static bool fake_take(struct rift__lend *l, size_t len,
		      struct rift__pool **pool, void **block)
{
	struct fake_lend *fl = rift__container_of(l, struct fake_lend, base);

	(void)len;
	if (!fl->block)
		return false;
	*pool = fl->pool;
	*block = fl->block;
	fl->block = NULL;
	return true;
}

TEST(retained_message_keeps_its_pool_past_rift_ctx_destroy)
{
	rift_ctx *ctx = NULL;
	struct rift__pool *pool;
	struct fake_lend fl = { .base.take = fake_take };
	rift_msg msg = { 0 }, *kept;
	size_t len = 40000;
	char err[256];
	uint8_t *blk;
	int rc;

	CHECK_EQ(rift_ctx_create(&ctx, NULL), 0);
	pool = rift__ctx_pool(ctx);
	if (!pool)
		SKIP("this build makes no registered pool");
	blk = rift__pool_alloc(pool, len, RIFT_POOL_RECV, &rc, err, sizeof(err));
	CHECK(blk != NULL);
	for (size_t i = 0; i < len; i++)
		blk[i] = (uint8_t)(i * 7);
	fl.pool = pool;
	fl.block = blk;
	/* As a transport delivers in place: on_recv retains the message. */
	msg = (rift_msg){ .seq = 1, .len = len, .data = blk, .lend = &fl.base };
	kept = rift_msg_retain(&msg);
	CHECK(kept != NULL);
	CHECK(rift_msg_data(kept) == blk); /* kept in place, no copy */

	/* The context goes; the message outlives it, and so does its pool. */
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
	CHECK(rift__pool_global_owns(blk));
	CHECK_EQ(rift_msg_len(kept), len);
	for (size_t i = 0; i < len; i++)
		if (((const uint8_t *)rift_msg_data(kept))[i] != (uint8_t)(i * 7))
			FAIL("byte %zu of the retained message changed", i);
	/* The last holder gives it back: the pool goes with it. */
	rift_msg_release(kept);
	CHECK(!rift__pool_global_owns(blk));
}

/*
 * A thread keeps a few freed blocks per class for itself (pool.c, the
 * thread cache).  When it exits they go back to the pool's shared lists:
 * a program that starts and joins many threads must not strand a cache
 * with each one, which would grow the pool to its maximum and then fail
 * allocations with almost nothing in use.
 */
#define CACHED 32 /* blocks each thread allocates, then frees into its cache */

struct cache_user {
	struct rift__pool *pool;
	int failures;
	char err[256];
};

static void *use_and_exit(void *arg)
{
	struct cache_user *cu = arg;
	void *blk[CACHED];
	int rc;

	for (int i = 0; i < CACHED; i++) {
		blk[i] = rift__pool_alloc(cu->pool, 8192, RIFT_POOL_SEND, &rc,
					  cu->err, sizeof(cu->err));
		if (!blk[i])
			cu->failures++;
	}
	for (int i = 0; i < CACHED; i++)
		if (blk[i])
			rift__pool_free(cu->pool, blk[i], RIFT_POOL_SEND);
	return NULL;
}

static int no_reg(void *dev, void *addr, size_t len, void **handle,
		  uint32_t *lkey, uint32_t *rkey, char *err, size_t errlen)
{
	(void)dev, (void)addr, (void)len, (void)handle, (void)lkey, (void)rkey;
	snprintf(err, errlen, "no device in host tests");
	return RIFT_ENODEV;
}

static void no_dereg(void *handle)
{
	(void)handle;
}

TEST(pool_thread_caches_return_when_their_threads_exit)
{
	static const struct rift__pool_reg ops = { .reg = no_reg,
						   .dereg = no_dereg };
	/* Two regions of 2 MiB at most, 256 blocks of 8 KiB each; the send
	 * share is one region.  Each thread's cache holds CACHED blocks,
	 * so without their return 16 threads would take both regions. */
	struct cache_user cu = { 0 };
	struct rift__pool_usage u;
	rift_config cfg;
	void *all[256];
	int rc;

	rift_config_init(&cfg);
	cfg.pool_initial = 0;
	cfg.pool_increment = 2u << 20;
	cfg.pool_max = 4u << 20;
	cfg.pool_thread_cache = CACHED;
	CHECK_EQ(rift__pool_get(&cfg, &ops, &cu.pool, cu.err, sizeof(cu.err)), 0);
	for (int t = 0; t < 100; t++) {
		pthread_t th;

		CHECK_EQ(pthread_create(&th, NULL, use_and_exit, &cu), 0);
		CHECK_EQ(pthread_join(th, NULL), 0);
		if (cu.failures)
			FAIL("thread %d of 100 got no block: %s", t, cu.err);
	}
	rift__pool_usage(cu.pool, &u);
	CHECK_EQ(u.blocks_in_use[0], 0);
	CHECK_EQ(u.regions, 1); /* every thread found the blocks of the last */
	/* ... in the shared lists, where this thread finds them too */
	CHECK_EQ(u.blocks_free[0], (2u << 20) / 8192);
	/* The whole send share is there for this thread to take. */
	for (int i = 0; i < 256; i++) {
		all[i] = rift__pool_alloc(cu.pool, 8192, RIFT_POOL_SEND, &rc,
					  cu.err, sizeof(cu.err));
		if (!all[i])
			FAIL("block %d of 256: %s", i, cu.err);
	}
	for (int i = 0; i < 256; i++)
		rift__pool_free(cu.pool, all[i], RIFT_POOL_SEND);
	rift__pool_put(cu.pool);
}

/* A failed rift_ctx_create leaves *out NULL, not what it held before: a
 * caller that destroys "whatever it got" must not free a stale pointer. */
TEST(ctx_create_sets_out_to_null_on_failure)
{
	rift_ctx *ctx = (rift_ctx *)&ctx; /* anything but NULL */
	rift_config cfg;

	rift_config_init(&cfg);
	cfg.sq_depth = 0; /* out of range */
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), RIFT_EINVAL);
	CHECK(ctx == NULL);
	CHECK_CONTAINS(rift_ctx_last_error(NULL), "sq_depth");
	ctx = (rift_ctx *)&ctx;
	cfg.size = 3; /* not from rift_config_init */
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), RIFT_EINVAL);
	CHECK(ctx == NULL);
}
