/*
 * pool_grow.c - how the block pool grows: committing a region (mapping
 * and registering it with every device) and the grower, the pool's own
 * thread that commits regions ahead of need, keeps one for paths' rings
 * and holds still while sessions re-attach; see pool.c and pool.h.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "memory/pool_int.h"

int rift__pool_reg_region(struct rift__pool *pool, struct region *r, int d,
			  char *err, size_t errlen)
{
	int rc = rift__pool_memlock_check(pool->region, err, errlen);

	if (rc)
		return rc;
	if (!pool->devs[d]) {
		/* A removed device's slot, free for the next one. */
		r->mr[d] = NULL;
		r->lkey[d] = r->rkey[d] = 0;
		return 0;
	}
	return pool->ops.reg(pool->devs[d], r->base, pool->region, &r->mr[d],
			     &r->lkey[d], &r->rkey[d], err, errlen);
}

/*
 * Commit one more region: map it and register it with every device.
 * Called with pool->mu held and no commit under way; returns with it
 * held, but drops it meanwhile: registering pins every page, milliseconds
 * per device (100-200 ms for 16 MiB on four soft-RoCE devices under
 * emulation), and under mu that held every thread that looked up a large
 * buffer's keys or needed a block, a loop's whole turn.  Those who need
 * the region wait on commit_cv.  Returns its index or < 0.
 */
static bool quiet_wait(struct rift__pool *pool);

int rift__pool_commit_region(struct rift__pool *pool, char *err, size_t errlen)
{
	size_t i = pool->n_regions;
	struct region *r = &pool->regions[i];
	int flags = MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS;
	uint64_t t0 = rift__clock_us();
	int n = pool->n_devs, d, rc = 0;
	void *m;

	if (i == pool->max_regions) {
		snprintf(err, errlen,
			 "pool at its maximum (pool.max = %zu MiB)",
			 pool->max_regions * pool->region >> 20);
		return RIFT_ENOBUFS;
	}
	if (pool->huge)
		flags |= MAP_HUGETLB;
	pool->committing = true;
	pool->unlocked_regs++;
	pthread_mutex_unlock(&pool->mu);
	/* Nobody looks at region i before n_regions says it is there;
	 * devs[0..n) do not change once counted. */
	m = mmap(pool->base + i * pool->region, pool->region,
		 PROT_READ | PROT_WRITE, flags, -1, 0);
	if (m == MAP_FAILED) {
		rc = rift__from_errno(errno);
		snprintf(err, errlen, "pool: mmap of a %zu MiB region%s: %s",
			 pool->region >> 20,
			 pool->huge ? " with huge pages (see /proc/meminfo "
				      "HugePages_Free; set pool.huge_pages = "
				      "false to do without)"
				    : "",
			 rift_strerror(rc));
		pthread_mutex_lock(&pool->mu);
		pool->unlocked_regs--;
		goto out;
	}
	memset(r, 0, sizeof(*r));
	r->base = m;
	r->cls = -1;
	for (d = 0; d < n && !rc; d++) {
		/* The grower's region waits between devices while sessions
		 * re-attach (quiet_wait), unless someone waits for it: QPs
		 * and CQs made meanwhile waited for each registration. */
		if (d && pool->grower_commit) {
			pthread_mutex_lock(&pool->mu);
			while (!pool->commit_waiters && !pool->grow_stop &&
			       quiet_wait(pool))
				;
			pthread_mutex_unlock(&pool->mu);
		}
		rc = rift__pool_reg_region(pool, r, d, err, errlen);
	}
	pthread_mutex_lock(&pool->mu);
	pool->unlocked_regs--;
	/* Devices added meanwhile did not see this region. */
	for (; d < pool->n_devs && !rc; d++)
		rc = rift__pool_reg_region(pool, r, d, err, errlen);
	if (rc) {
		for (int k = 0; k < d; k++)
			if (r->mr[k])
				pool->ops.dereg(r->mr[k]);
		mmap(r->base, pool->region, PROT_NONE,
		     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		     0);
		goto out;
	}
	__atomic_store_n(&pool->n_regions, i + 1, __ATOMIC_RELEASE);
	/* The process's pool, maybe on its grower thread: no context's. */
	if (__atomic_load_n(&rift__log_level, __ATOMIC_RELAXED) >=
	    RIFT_LOG_DEBUG) {
		/* What the pool is spent on: regions per class, blocks held. */
		unsigned per[RIFT_BLOCK_CLASSES] = { 0 };

		for (size_t k = 0; k < i; k++)
			if (pool->regions[k].cls >= 0)
				per[pool->regions[k].cls]++;
		RIFT_PLOG(RIFT_LOG_DEBUG,
			  "pool: region %zu (%zu MiB) registered with %d "
			  "devices in %.1f ms; regions per class "
			  "%u/%u/%u/%u/%u, blocks held "
			  "%llu/%llu/%llu/%llu/%llu, send %llu KiB recv %llu "
			  "KiB",
			  i, pool->region >> 20, pool->n_devs,
			  (rift__clock_us() - t0) / 1e3, per[0], per[1], per[2],
			  per[3], per[4],
			  (unsigned long long)pool->blocks_in_use[0],
			  (unsigned long long)pool->blocks_in_use[1],
			  (unsigned long long)pool->blocks_in_use[2],
			  (unsigned long long)pool->blocks_in_use[3],
			  (unsigned long long)pool->blocks_in_use[4],
			  (unsigned long long)pool->in_use[0] >> 10,
			  (unsigned long long)pool->in_use[1] >> 10);
	}
out:
	pool->committing = false;
	pthread_cond_broadcast(&pool->commit_cv);
	return rc ? rc : (int)i;
}

/*
 * Growing ahead: committing a region costs milliseconds per device (see
 * commit_region), which an allocation on a loop thread would otherwise
 * wait out in the middle of a send, an accept or a re-attach.  So a
 * thread of the pool's own keeps committed regions spare, ahead of the
 * carving (within pool.max, and only once a device is registered): as
 * many as were carved in the last GROW_AHEAD_US, at least one, at most
 * GROW_AHEAD_MAX.  One ahead was not enough: while a session's window
 * fills, its traffic carves a region every few milliseconds, and the
 * loops of the lab's fault soak waited 80-340 ms for a block again and
 * again in their first seconds, the first re-attach among them (0.85 to
 * 2.3 s instead of 30 ms).  An allocation that outruns the grower still
 * waits for the region under way, or commits one itself.  A failure
 * here is quiet: the allocation that needs the region meets and reports
 * it.
 */
static size_t spare_regions(const struct rift__pool *pool)
{
	size_t n = 0;

	for (size_t k = 0; k < pool->n_regions; k++)
		if (pool->regions[k].cls < 0)
			n++;
	return n;
}

static size_t spare_wanted(const struct rift__pool *pool)
{
	uint64_t now = rift__clock_us();
	size_t n = 0;

	for (unsigned k = 0; k < GROW_AHEAD_MAX && k < pool->n_carved; k++)
		if (now - pool->carved_us[k] < GROW_AHEAD_US)
			n++;
	/* and the one kept for paths' rings (spare_for) */
	return (n ? n : 1) + (pool->n_carved ? 1 : 0);
}

static bool grow_needed(const struct rift__pool *pool)
{
	return pool->n_devs && !pool->committing &&
	       pool->n_regions < pool->max_regions &&
	       spare_regions(pool) < spare_wanted(pool);
}

bool rift__pool_growing(const struct rift__pool *pool)
{
	return pool->committing || pool->large_want || grow_needed(pool);
}

/*
 * Quiet while sessions re-attach.  Registering a region pins 16 MiB on
 * every device, and while the grower did so (100-300 ms a region under
 * emulation, regions back to back in a session's first seconds) the lab's
 * re-attaches stood still with everything else in the process: the
 * aimed soak's first re-attach took 190-790 ms with the pool growing and
 * 90-145 ms with the same pool registered at start.  So the grower waits
 * while a session is re-attaching, at most QUIET_MAX_US from the first
 * one (a re-attach to dead addresses can take seconds, and growth must
 * not stop for that long); allocations that need a region meanwhile wait
 * or go their other way as ever.  Returns whether it waited (mu held).
 */
#define QUIET_MAX_US 300000

static bool quiet_wait(struct rift__pool *pool)
{
	uint64_t now = rift__clock_us(), end;
	struct timespec ts;

	if (!pool->quiet_n || now - pool->quiet_since_us >= QUIET_MAX_US)
		return false;
	end = pool->quiet_since_us + QUIET_MAX_US;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)((end - now) / 1000000u);
	ts.tv_nsec += (long)((end - now) % 1000000u) * 1000;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&pool->grow_cv, &pool->mu, &ts);
	return true;
}

void rift__pool_quiet(struct rift__pool *pool, bool on)
{
	pthread_mutex_lock(&pool->mu);
	if (on) {
		if (!pool->quiet_n++)
			pool->quiet_since_us = rift__clock_us();
	} else if (pool->quiet_n && !--pool->quiet_n) {
		pthread_cond_signal(&pool->grow_cv);
	}
	pthread_mutex_unlock(&pool->mu);
}

bool rift__pool_reattaching(const struct rift__pool *pool)
{
	return __atomic_load_n(&pool->quiet_n, __ATOMIC_RELAXED) != 0;
}

static void *grower_main(void *arg)
{
	struct rift__pool *pool = arg;
	char err[160];
	int rc;

	/* Named for top -H and perf: whose CPU a registration takes. */
	pthread_setname_np(pthread_self(), "rift-pool");
	pthread_mutex_lock(&pool->mu);
	for (;;) {
		while (!pool->grow_want && !pool->grow_stop)
			pthread_cond_wait(&pool->grow_cv, &pool->mu);
		if (pool->grow_stop)
			break;
		pool->grow_want = false;
		while (!pool->grow_stop && grow_needed(pool)) {
			if (quiet_wait(pool))
				continue;
			pool->grower_commit = true;
			rc = rift__pool_commit_region(pool, err, sizeof(err));
			pool->grower_commit = false;
			if (rc < 0)
				break;
		}
		/* A large buffer asked for ahead (rift__pool_try_alloc_large),
		 * also not while sessions re-attach. */
		while (!pool->grow_stop && pool->large_want && quiet_wait(pool))
			;
		if (!pool->grow_stop && pool->large_want)
			rift__pool_large_grow(pool);
	}
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

/* pool->mu held. */
void rift__pool_grow_ahead(struct rift__pool *pool)
{
	if (grow_needed(pool))
		rift__pool_grower_kick(pool);
}

/* pool->mu held. */
void rift__pool_grower_kick(struct rift__pool *pool)
{
	if (!pool->grower_started) {
		sigset_t all, old;

		/* The thread takes no signal of the application's. */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pool->grower_started =
			pthread_create(&pool->grower, NULL, grower_main, pool) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!pool->grower_started)
			return;
	}
	pool->grow_want = true;
	pthread_cond_signal(&pool->grow_cv);
}

