/*
 * pool_int.h - what the files of the block pool share: its state (the
 * pool, its regions, large buffers and buckets) and the functions one
 * file calls in the other, each under the file that defines it.  pool.c
 * has the overview; the rest of rift uses pool.h only.
 */
#ifndef RIFT_MEMORY_POOL_INT_H
#define RIFT_MEMORY_POOL_INT_H

#include <pthread.h>

#include "memory/pool.h"

#define MAX_BUCKETS 256
#define LARGE_CACHE_N 4                 /* freed large buffers kept */
#define LARGE_CACHE_BYTES (128u << 20)  /* and at most this much */
#define GROW_AHEAD_MAX 8                /* spare regions kept, at most */
#define GROW_AHEAD_US 1000000u          /* ... as many as carved in this */

struct region {
	uint8_t *base;
	int cls; /* block class, -1 until carved; read with acquire */
	void **slots; /* a pointer per block, from carving on */
	void *mr[RIFT_POOL_MAX_DEVICES];
	uint32_t lkey[RIFT_POOL_MAX_DEVICES];
	uint32_t rkey[RIFT_POOL_MAX_DEVICES];
};

/* A large buffer: one mapping, registered with every device. */
struct large {
	struct large *next;
	uint8_t *base;
	size_t len;      /* mapped bytes */
	bool used;
	void *slot;      /* the user's pointer (see rift__pool_slot) */
	enum rift__pool_use use;
	void *mr[RIFT_POOL_MAX_DEVICES];
	uint32_t lkey[RIFT_POOL_MAX_DEVICES];
	uint32_t rkey[RIFT_POOL_MAX_DEVICES];
};

struct bucket {
	pthread_mutex_t mu;
	void *head[RIFT_BLOCK_CLASSES];
	uint64_t n[RIFT_BLOCK_CLASSES];
} __attribute__((aligned(64)));

/* The [pool] settings a pool was made with (pool_shape.c). */
struct rift__pool_settings {
	uint32_t block[RIFT_BLOCK_CLASSES];
	uint64_t initial, increment, max;
	uint32_t buckets, thread_cache, recv_pct;
	bool huge;
};

struct rift__pool {
	pthread_mutex_t mu; /* growth, devices */
	int refs;            /* under pool.c's global_mu */
	uint64_t gen;
	struct rift__pool_reg ops;
	uint32_t block[RIFT_BLOCK_CLASSES];
	size_t region;       /* bytes per region */
	size_t max_regions;
	size_t n_regions;    /* committed; read with acquire */
	uint64_t limit[2];   /* bytes each use may hold */
	uint64_t in_use[2];  /* bytes held, atomic */
	uint64_t blocks_in_use[RIFT_BLOCK_CLASSES]; /* atomic */
	uint32_t thread_cache;
	uint32_t n_buckets;
	bool huge;
	struct rift__pool_settings made; /* from the cfg that made it */
	uint8_t *base;       /* reserved address space */
	size_t reserved;
	struct region *regions;
	void *devs[RIFT_POOL_MAX_DEVICES];
	int n_devs;          /* read with acquire */
	struct bucket *buckets;
	struct large *large; /* large buffers, used and cached; under mu */
	uintptr_t large_lo, large_hi; /* every large buffer ever mapped lies
					 in [lo, hi); atomic, only widens */
	uint64_t large_bytes[2]; /* mapped by use (cached ones count as
				    the use they were freed from), bytes */
	/* The grower (grow_ahead): a thread that commits regions ahead of
	 * the carving.  Under mu. */
	pthread_t grower;
	pthread_cond_t grow_cv;
	bool grower_started, grow_want, grow_stop;
	size_t large_want;   /* a large buffer to register ahead, bytes */
	/* Sessions re-attaching (rift__pool_quiet): the grower commits no
	 * region meanwhile, for at most QUIET_MAX_US from the first. */
	unsigned quiet_n;
	uint64_t quiet_since_us;
	/* One region at a time is committed, outside mu (commit_region);
	 * who needs it waits on commit_cv (commit_waiters of them).  The
	 * grower's commits (grower_commit) stop between devices while
	 * sessions re-attach, unless someone waits.  Under mu. */
	bool committing, grower_commit;
	unsigned commit_waiters;
	/* Registrations under way outside mu (a region being committed, a
	 * large buffer being made): a device slot changes only when none
	 * is (rift__pool_remove_device, a slot reused). */
	unsigned unlocked_regs;
	uint64_t caller_regs; /* registered by an allocating thread */
	pthread_cond_t commit_cv;
	uint64_t carved_us[GROW_AHEAD_MAX]; /* the last carves, a ring */
	unsigned n_carved;
};

/* ---- pool.c ---- */

int rift__pool_memlock_check(size_t need, char *err, size_t errlen);

/* ---- pool_shape.c: geometry, reservation, settings ---- */

/*
 * Reserve len bytes of address space (PROT_NONE, nothing behind it)
 * starting at a multiple of align (a power of two; the page size at
 * least), or NULL with errno set.  munmap(base, len) gives it back.
 */
void *rift__pool_reserve(size_t len, size_t align);
void rift__pool_settings_of(const rift_config *cfg,
			    struct rift__pool_settings *s);
/* 0 when cfg's [pool] settings are pool's, else RIFT_EINVAL with err
 * naming each key that differs, here and in the pool. */
int rift__pool_settings_check(const struct rift__pool_settings *pool,
			      const rift_config *cfg, char *err, size_t errlen);

/* ---- pool_large.c: large buffers ---- */

void rift__pool_large_unmap(struct rift__pool *pool, struct large *lg);
void rift__pool_large_free(struct rift__pool *pool, void *block,
			   enum rift__pool_use use);
/* On the grower, mu held: register the large buffer asked for by
 * rift__pool_try_alloc_large, into the cache (mu let go meanwhile). */
void rift__pool_large_grow(struct rift__pool *pool);

/* pool_grow.c: register region r with device d (memlock checked first);
 * commit one more region (mu held, let go meanwhile; its index or < 0
 * with err); wake the grower when the pool wants regions ahead (mu
 * held). */
int rift__pool_reg_region(struct rift__pool *pool, struct region *r, int d,
			  char *err, size_t errlen);
int rift__pool_commit_region(struct rift__pool *pool, char *err,
			     size_t errlen);
void rift__pool_grow_ahead(struct rift__pool *pool);
/* Whether the pool is registering memory, or wants to (mu held). */
bool rift__pool_growing(const struct rift__pool *pool);
/* Start the grower if need be and wake it (mu held). */
void rift__pool_grower_kick(struct rift__pool *pool);

#endif
