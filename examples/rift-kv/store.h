/*
 * store.h - rift-kv's keyspace: a hash table of string keys and values
 * with expiry.
 *
 * The table is Redis's dict in spirit: two bucket arrays, and a resize
 * moves the buckets from the old array to the new one a few at a time, on
 * each lookup, insert and delete and in kv_store_cron(), so growing a
 * table of millions of keys never stops the server for the copy.
 *
 * Expiry is lazy and periodic, as Redis's: a key whose time has passed
 * is deleted when a command looks it up (kv_store_find), and
 * kv_store_cron() samples keys that have a time, deleting the expired
 * ones, and samples again while more than a quarter of a sample had
 * expired, within a time budget.  Times are absolute Unix milliseconds;
 * the store reads "now" from kv_store_set_now(), which the server calls
 * once per loop round (and tests call to move time).  A key is expired
 * once now is past its time (now > when), as in Redis.
 *
 * Every function that allocates returns -ENOMEM and changes nothing when
 * malloc fails.
 */
#ifndef RIFT_KV_STORE_H
#define RIFT_KV_STORE_H

#include <stddef.h>
#include <stdint.h>

#define KV_NO_EXPIRE (-1)  /* kv_store_set: the key has no time */
#define KV_KEEP_TTL  (-2)  /* kv_store_set: keep the key's time */

/* Longest value (and APPEND result), Redis's proto-max-bulk-len. */
#define KV_MAX_VALUE ((size_t)512 << 20)

/* One key.  Fields are read by commands; change them only through the
 * functions below. */
struct kv_entry {
	struct kv_entry *next; /* bucket chain */
	uint64_t hash;         /* of the key, with the store's seed */
	int64_t expire_ms;     /* Unix ms, or KV_NO_EXPIRE */
	size_t vidx;           /* index in the store's volatile array */
	char *val;             /* value bytes (not NUL-terminated) */
	size_t vlen;           /* bytes */
	size_t vcap;           /* bytes allocated at val */
	size_t klen;           /* bytes */
	char key[];            /* klen bytes */
};

struct kv_store;

/* A store hashing with seed (16 bytes; NULL: random, from getrandom).
 * NULL when out of memory. */
struct kv_store *kv_store_new(const uint8_t *seed);
/* Free the store and every entry (NULL is a no-op). */
void kv_store_free(struct kv_store *s);

/* The time expiry compares with, Unix ms. */
void kv_store_set_now(struct kv_store *s, int64_t now_ms);
int64_t kv_store_now(const struct kv_store *s);

/* The live entry of key, or NULL; an expired one is deleted first
 * (counted in expired keys). */
struct kv_entry *kv_store_find(struct kv_store *s, const void *key,
			       size_t klen);

/*
 * Set key to the vlen bytes at val.  expire_ms: an absolute time,
 * KV_NO_EXPIRE (the key has none after this) or KV_KEEP_TTL (a key that
 * existed keeps its time; a new one has none).  *out (may be NULL) gets
 * the entry.  0 or -ENOMEM (nothing changed).
 */
int kv_store_set(struct kv_store *s, const void *key, size_t klen,
		 const void *val, size_t vlen, int64_t expire_ms,
		 struct kv_entry **out);

/* Append n bytes to e's value.  0, -ENOMEM (nothing changed) or -EFBIG
 * (the value would exceed KV_MAX_VALUE). */
int kv_store_append(struct kv_store *s, struct kv_entry *e, const void *data,
		    size_t n);

/* Give e the time when (absolute ms) or none (KV_NO_EXPIRE).  0 or
 * -ENOMEM (nothing changed). */
int kv_store_set_expire(struct kv_store *s, struct kv_entry *e, int64_t when);

/* Delete key: 1 if a live key was deleted, else 0. */
int kv_store_del(struct kv_store *s, const void *key, size_t klen);
/* Delete e (an entry of s). */
void kv_store_del_entry(struct kv_store *s, struct kv_entry *e);

/* Delete every key. */
void kv_store_flush(struct kv_store *s);

/* Call fn for every live entry, in no order, until it returns non-zero
 * (returned then; else 0).  fn must not change the store. */
int kv_store_each(struct kv_store *s,
		  int (*fn)(void *user, const struct kv_entry *e), void *user);

/*
 * The periodic work: rehash steps for up to a millisecond (and start a
 * shrink of a table mostly empty), then the active expiry cycle within
 * budget_us microseconds.  Returns the keys it expired.
 */
size_t kv_store_cron(struct kv_store *s, uint64_t budget_us);

/* The active expiry cycle alone (kv_store_cron runs it). */
size_t kv_store_expire_cycle(struct kv_store *s, uint64_t budget_us);

/* Move up to n buckets of a resize in progress.  1 if more remain. */
int kv_store_rehash(struct kv_store *s, size_t n);

struct kv_store_info {
	size_t keys;        /* live and not yet collected, count */
	size_t volatile_keys; /* keys with a time, count */
	size_t buckets;     /* of both arrays, count */
	int rehashing;      /* a resize in progress (bool) */
	size_t mem;         /* bytes held by entries, values, tables */
	uint64_t expired;   /* keys deleted because their time passed */
	uint64_t changes;   /* calls that changed the keys (set, append,
			       expire, delete, flush), count: a command
			       that moved it wrote */
};
void kv_store_info(const struct kv_store *s, struct kv_store_info *out);
/* kv_store_info's changes alone (per command: replication). */
uint64_t kv_store_changes(const struct kv_store *s);

/* Parse Redis's way (string2ll): 1 and *out, or 0. */
int kv_str2ll(const char *s, size_t n, long long *out);

#endif
