/*
 * pool.h - the registered block pool.
 *
 * One pool per process, shared by every context: memory is pinned and
 * registered once, not per connection.  It hands out blocks of three
 * classes (8 KiB, 64 KiB, 2 MiB by default) carved from regions that are
 * added a growth step at a time up to a maximum.  Each region is
 * registered with every device the process uses (a key per device), so a
 * block stays usable when a session moves to another device.
 *
 * Contention: free blocks sit in per-thread caches first, then in one of
 * `buckets` locked free lists per class.  Receive blocks are reserved apart
 * from send blocks (recv_reserve_pct of the maximum), so a sender cannot
 * starve receives of buffers, or the other way round.
 */
#ifndef RIFT_MEMORY_POOL_H
#define RIFT_MEMORY_POOL_H

#include "internal.h"

enum rift__pool_use { RIFT_POOL_SEND = 0, RIFT_POOL_RECV = 1 };

#define RIFT_POOL_MAX_DEVICES 8

/*
 * How the pool registers memory: the verbs transport fills this in.  reg
 * returns 0 and the handle/keys, or a RIFT_E* code with err filled.
 * gone (may be NULL) runs once the last reference is dropped and every
 * registration is undone, under the pool's global lock (no new pool is
 * made meanwhile): the devices' protection domains may go then, not
 * earlier, since a retained message can keep the pool past the last
 * context (rift__pool_hold).
 */
struct rift__pool_reg {
	int (*reg)(void *dev, void *addr, size_t len, void **handle,
		   uint32_t *lkey, uint32_t *rkey, char *err, size_t errlen);
	void (*dereg)(void *handle);
	void (*gone)(void);
};

struct rift__pool;

/*
 * The pool's shape for a configuration (pool_shape.c): bytes per region
 * (whole blocks of the largest class, and with huge pages whole huge
 * pages, at least pool_increment), regions at most (pool_max) and
 * regions committed at start (pool_initial).  Each region is registered
 * as one piece, so region * regions is what the kernel pins.
 */
struct rift__pool_geometry {
	size_t region;
	size_t max_regions;
	size_t initial_regions;
	size_t align;  /* of the reservation: the huge page size, or 0 */
};
void rift__pool_geometry(const rift_config *cfg, struct rift__pool_geometry *g);
/* The kernel's default huge page size (what MAP_HUGETLB maps), bytes, or
 * 0 when it has none (/proc/meminfo Hugepagesize). */
size_t rift__huge_page_size(void);
/* Whether need more bytes can be locked (registered) under RLIMIT_MEMLOCK:
 * 0, or RIFT_EMEMLOCK with err saying the limit and how to raise it. */
int rift__memlock_check(size_t need, char *err, size_t errlen);

/*
 * Take a reference on the process pool, creating it from cfg on first use.
 * Later users share it, and their [pool] settings must be the ones it was
 * made with: otherwise RIFT_EINVAL, err naming every key that differs
 * with both values.  Fails with RIFT_EMEMLOCK and an actionable message
 * when the initial size cannot be locked under RLIMIT_MEMLOCK,
 * RIFT_ENOMEM.
 */
int rift__pool_get(const rift_config *cfg, const struct rift__pool_reg *ops,
		   struct rift__pool **out, char *err, size_t errlen);
/*
 * One more reference on a pool the caller holds one on already: what
 * outlives the context that had the pool (a retained message's block,
 * freed on rift_msg_release, maybe after rift_ctx_destroy) holds its own.
 */
void rift__pool_hold(struct rift__pool *pool);
/* Drop a reference; the last one frees the pool (any thread). */
void rift__pool_put(struct rift__pool *pool);

/*
 * Register every region with dev (a protection domain) and remember it, so
 * later regions are registered with it too.  Returns the device slot
 * (>= 0) for key lookups, or a RIFT_E* code.  Idempotent per dev.
 */
int rift__pool_add_device(struct rift__pool *pool, void *dev, char *err,
			  size_t errlen);
/*
 * The device was removed: its registrations are undone and its slot is
 * free for the next device added.  Nothing may use the slot's keys any
 * more (every QP on the device is gone).
 */
void rift__pool_remove_device(struct rift__pool *pool, void *dev);

/*
 * A block of at least len bytes (the smallest class that fits), or NULL
 * with *rc set: RIFT_EMSGSIZE (larger than the largest class), RIFT_ENOBUFS
 * (this use's share of pool_max is exhausted), RIFT_EMEMLOCK / RIFT_ENOMEM
 * (growing failed; err says why).
 */
void *rift__pool_alloc(struct rift__pool *pool, size_t len,
		       enum rift__pool_use use, int *rc, char *err,
		       size_t errlen);
/*
 * The same, but never waiting for a region to be registered (100-300 ms
 * for 16 MiB on four soft-RoCE devices under emulation): where the next
 * block needs a region that is not there yet, the grower is asked for one
 * and this returns NULL with RIFT_EAGAIN.  For loop threads that have
 * another way meanwhile (a malloc'd buffer, a copy).
 */
void *rift__pool_try_alloc(struct rift__pool *pool, size_t len,
			   enum rift__pool_use use, int *rc, char *err,
			   size_t errlen);
/*
 * rift__pool_alloc that may take the pool's last spare region, which the
 * other calls leave for this one: for the rings of a new path, so that a
 * re-attach does not wait for a registration while traffic takes every
 * region the grower commits.
 */
void *rift__pool_alloc_reserve(struct rift__pool *pool, size_t len,
			       enum rift__pool_use use, int *rc, char *err,
			       size_t errlen);
/*
 * A buffer of at least len bytes beyond the largest class: a mapping of
 * its own, registered with every device (a freed one of about the same
 * size is reused from a small cache, registration and all).  Same errors
 * as rift__pool_alloc; RIFT_EMEMLOCK says how to raise the limit.  Free
 * it with rift__pool_free like a block; rift__pool_keys and
 * rift__pool_block_size know it too (they take a lock for it).
 */
void *rift__pool_alloc_large(struct rift__pool *pool, size_t len,
			     enum rift__pool_use use, int *rc, char *err,
			     size_t errlen);
/*
 * The same, but never registering on the caller's thread: a cached buffer
 * that fits, else the grower is asked to register one of that size into
 * the cache and this returns NULL with RIFT_EAGAIN (rift_conn_send then
 * streams the message; the next one of about that size finds it).
 */
void *rift__pool_try_alloc_large(struct rift__pool *pool, size_t len,
				 enum rift__pool_use use, int *rc, char *err,
				 size_t errlen);
/*
 * A session of this pool is re-attaching (on: true), or done (false):
 * while any is, the grower commits no region, for at most QUIET_MAX_US
 * (pool.c says why).  Calls pair up; any thread.
 */
void rift__pool_quiet(struct rift__pool *pool, bool on);
/* Whether a session of this pool is re-attaching now (any thread). */
bool rift__pool_reattaching(const struct rift__pool *pool);
/* Give a block back; use must be the one it was allocated for. */
void rift__pool_free(struct rift__pool *pool, void *block,
		     enum rift__pool_use use);

/*
 * The pointer slot of the block that starts at ptr (a block of a region,
 * free or handed out, or a large buffer in use), or NULL when ptr is not
 * exactly such a start.  The slot belongs to whoever holds the block: rift
 * keeps there the header of a buffer whose payload fills the block from
 * its first byte.  It is NULL when a block is handed out, and
 * rift__pool_free sets it back to NULL.  inside (may be NULL) says whether
 * ptr lies in pool memory at all: the reserved address space of the
 * regions (committed or not) or a large buffer's mapping (in use or
 * cached), where nothing but a block start means anything.  Lock-free for
 * pointers in regions and for those nowhere near a large buffer; the
 * others take the pool's lock.
 */
void **rift__pool_slot(struct rift__pool *pool, const void *ptr, bool *inside);
/*
 * rift__pool_slot's inside for the process pool, if there is one, for a
 * caller that holds no reference on it: under the global lock, so not for
 * a fast path.
 */
bool rift__pool_global_owns(const void *ptr);

/* Usable size of the block holding ptr (0 if ptr is not in the pool). */
size_t rift__pool_block_size(struct rift__pool *pool, const void *ptr);
/* Keys of the region holding ptr for device slot dev; false if unknown. */
bool rift__pool_keys(struct rift__pool *pool, const void *ptr, int dev,
		     uint32_t *lkey, uint32_t *rkey);
/* The same, and the registration's handle (what ops.reg gave). */
bool rift__pool_reg_of(struct rift__pool *pool, const void *ptr, int dev,
		       uint32_t *lkey, uint32_t *rkey, void **handle);

struct rift__pool_usage {
	uint64_t registered;            /* bytes in regions */
	uint64_t in_use[2];             /* bytes handed out, by use */
	uint64_t blocks_in_use[RIFT_BLOCK_CLASSES];
	/* free in the shared lists, by class: not the blocks living threads
	 * keep in their caches (those of exited threads are back here) */
	uint64_t blocks_free[RIFT_BLOCK_CLASSES];
	uint64_t regions;
	uint64_t large_bytes;           /* large buffers mapped, cached too */
	bool growing;                   /* registering memory ahead of need,
					   or about to */
	uint64_t caller_regs;           /* regions and large buffers an
					   allocating thread registered itself
					   (the rest the grower did) */
};
void rift__pool_usage(struct rift__pool *pool, struct rift__pool_usage *u);

/* Memory this process has locked or pinned (VmLck + VmPin), bytes. */
uint64_t rift__locked_bytes(void);

#endif
