/*
 * store.c - rift-kv's keyspace: the incrementally resized hash table and
 * expiry.  See store.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "store.h"

#define INITIAL_BUCKETS 4
/* Empty buckets a rehash step may pass over per bucket it was asked to
 * move, so that a step over a sparse table stays short (Redis: 10). */
#define EMPTY_VISITS 10
/* Keys an expiry round samples, and the share of expired ones (out of
 * the sample) that makes it sample again: Redis's 20 and 25%. */
#define EXPIRE_SAMPLE 20
#define EXPIRE_AGAIN  5

struct table {
	struct kv_entry **b; /* buckets */
	size_t size;         /* buckets, a power of two, or 0 */
	size_t used;         /* entries */
};

struct kv_store {
	struct table t[2];    /* t[1] is the target of a resize */
	long rehash;          /* next bucket of t[0] to move; -1: none */
	struct kv_entry **vol; /* entries with a time, for sampling */
	size_t nvol;
	size_t volcap;
	int64_t now_ms;       /* Unix ms */
	uint64_t k0, k1;      /* SipHash key */
	uint64_t rng;         /* xorshift state for sampling */
	uint64_t expired;     /* count */
	uint64_t changes;     /* calls that changed keys, count */
	size_t mem;           /* bytes */
};

/* ---- SipHash-1-3, as Redis hashes its keys (hash flooding) ---- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                              \
	do {                                                                  \
		v0 += v1;                                                     \
		v1 = ROTL(v1, 13);                                            \
		v1 ^= v0;                                                     \
		v0 = ROTL(v0, 32);                                            \
		v2 += v3;                                                     \
		v3 = ROTL(v3, 16);                                            \
		v3 ^= v2;                                                     \
		v0 += v3;                                                     \
		v3 = ROTL(v3, 21);                                            \
		v3 ^= v0;                                                     \
		v2 += v1;                                                     \
		v1 = ROTL(v1, 17);                                            \
		v1 ^= v2;                                                     \
		v2 = ROTL(v2, 32);                                            \
	} while (0)

static uint64_t load64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t siphash(const struct kv_store *s, const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t v0 = 0x736f6d6570736575ULL ^ s->k0;
	uint64_t v1 = 0x646f72616e646f6dULL ^ s->k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ s->k0;
	uint64_t v3 = 0x7465646279746573ULL ^ s->k1;
	uint64_t b = (uint64_t)n << 56;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t m = load64(p + i);

		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t k = 0; i + k < n; k++)
		b |= (uint64_t)p[i + k] << (8 * k);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t next_rand(struct kv_store *s)
{
	uint64_t x = s->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	s->rng = x;
	return x;
}

struct kv_store *kv_store_new(const uint8_t *seed)
{
	struct kv_store *s = calloc(1, sizeof(*s));
	uint8_t rnd[16];

	if (!s)
		return NULL;
	if (!seed) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			/* No entropy (very old kernel): the time is a
			 * weak but working seed. */
			uint64_t t = mono_us();

			memcpy(rnd, &t, 8);
			memcpy(rnd + 8, &t, 8);
		}
		seed = rnd;
	}
	s->k0 = load64(seed);
	s->k1 = load64(seed + 8);
	s->rng = (s->k0 ^ s->k1) | 1;
	s->rehash = -1;
	return s;
}

void kv_store_set_now(struct kv_store *s, int64_t now_ms)
{
	s->now_ms = now_ms;
}

int64_t kv_store_now(const struct kv_store *s)
{
	return s->now_ms;
}

static size_t entry_mem(const struct kv_entry *e)
{
	return sizeof(*e) + e->klen + e->vcap;
}

static void entry_free(struct kv_store *s, struct kv_entry *e)
{
	s->mem -= entry_mem(e);
	free(e->val);
	free(e);
}

/* ---- resizing ---- */

/* Start moving every entry to a table of size buckets.  False if that
 * table cannot be allocated: the store keeps working at a higher load. */
static bool resize_start(struct kv_store *s, size_t size)
{
	struct kv_entry **b;

	if (s->rehash >= 0 || size == s->t[0].size)
		return false;
	b = calloc(size, sizeof(*b));
	if (!b)
		return false;
	s->mem += size * sizeof(*b);
	if (!s->t[0].b) {
		s->t[0] = (struct table){ b, size, 0 };
		return true;
	}
	s->t[1] = (struct table){ b, size, 0 };
	s->rehash = 0;
	return true;
}

static void rehash_done(struct kv_store *s)
{
	s->mem -= s->t[0].size * sizeof(*s->t[0].b);
	free(s->t[0].b);
	s->t[0] = s->t[1];
	s->t[1] = (struct table){ 0 };
	s->rehash = -1;
}

int kv_store_rehash(struct kv_store *s, size_t n)
{
	size_t empty = n * EMPTY_VISITS;

	if (s->rehash < 0)
		return 0;
	while (n-- && s->t[0].used) {
		struct kv_entry *e;

		while (!s->t[0].b[s->rehash]) {
			s->rehash++;
			if (!--empty)
				return 1;
		}
		e = s->t[0].b[s->rehash];
		while (e) {
			struct kv_entry *next = e->next;
			size_t i = e->hash & (s->t[1].size - 1);

			e->next = s->t[1].b[i];
			s->t[1].b[i] = e;
			s->t[0].used--;
			s->t[1].used++;
			e = next;
		}
		s->t[0].b[s->rehash++] = NULL;
	}
	if (!s->t[0].used) {
		rehash_done(s);
		return 0;
	}
	return 1;
}

static size_t next_pow2(size_t n)
{
	size_t size = INITIAL_BUCKETS;

	while (size < n && size < ((size_t)1 << (sizeof(size_t) * 8 - 2)))
		size <<= 1;
	return size;
}

/* ---- lookup ---- */

/* The link that points at key's entry (NULL if none), and its table. */
static struct kv_entry **find_link(struct kv_store *s, const void *key,
				   size_t klen, uint64_t h, int *tab)
{
	for (int t = 0; t < 2; t++) {
		struct kv_entry **pp;

		if (!s->t[t].size)
			break;
		pp = &s->t[t].b[h & (s->t[t].size - 1)];
		for (; *pp; pp = &(*pp)->next) {
			struct kv_entry *e = *pp;

			if (e->hash == h && e->klen == klen &&
			    memcmp(e->key, key, klen) == 0) {
				if (tab)
					*tab = t;
				return pp;
			}
		}
		if (s->rehash < 0)
			break;
	}
	return NULL;
}

static void vol_remove(struct kv_store *s, struct kv_entry *e)
{
	struct kv_entry *last = s->vol[--s->nvol];

	s->vol[e->vidx] = last;
	last->vidx = e->vidx;
}

static int vol_reserve(struct kv_store *s)
{
	struct kv_entry **v;
	size_t cap;

	if (s->nvol < s->volcap)
		return 0;
	cap = s->volcap ? s->volcap * 2 : 64;
	v = realloc(s->vol, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->mem += (cap - s->volcap) * sizeof(*v);
	s->vol = v;
	s->volcap = cap;
	return 0;
}

static void unlink_free(struct kv_store *s, struct kv_entry **pp, int tab)
{
	struct kv_entry *e = *pp;

	*pp = e->next;
	s->t[tab].used--;
	if (e->expire_ms != KV_NO_EXPIRE)
		vol_remove(s, e);
	entry_free(s, e);
}

static bool expired(const struct kv_store *s, const struct kv_entry *e)
{
	return e->expire_ms != KV_NO_EXPIRE && s->now_ms > e->expire_ms;
}

struct kv_entry *kv_store_find(struct kv_store *s, const void *key,
			       size_t klen)
{
	struct kv_entry **pp;
	int tab;

	kv_store_rehash(s, 1);
	pp = find_link(s, key, klen, siphash(s, key, klen), &tab);
	if (!pp)
		return NULL;
	if (expired(s, *pp)) {
		unlink_free(s, pp, tab);
		s->expired++;
		return NULL;
	}
	return *pp;
}

/* ---- changing ---- */

static int set_expire(struct kv_store *s, struct kv_entry *e, int64_t when);

/* A value buffer for n bytes (at least 1, so that an empty value has a
 * buffer too). */
static char *value_alloc(size_t n, size_t *cap)
{
	*cap = n ? n : 1;
	return malloc(*cap);
}

int kv_store_set(struct kv_store *s, const void *key, size_t klen,
		 const void *val, size_t vlen, int64_t expire_ms,
		 struct kv_entry **out)
{
	struct kv_entry *e = kv_store_find(s, key, klen);
	size_t cap;
	char *v;
	bool vol_needed = expire_ms >= 0 &&
			  (!e || e->expire_ms == KV_NO_EXPIRE);

	/* Everything that can fail first, so that a failure changes
	 * nothing. */
	if (vol_needed && vol_reserve(s))
		return -ENOMEM;
	if (e && e->vcap >= vlen && e->vcap / 2 <= vlen + 64) {
		v = e->val; /* fits and is not much too big: reuse it */
		cap = e->vcap;
	} else {
		v = value_alloc(vlen, &cap);
		if (!v)
			return -ENOMEM;
	}
	if (!e) {
		uint64_t h = siphash(s, key, klen);
		struct table *t;
		size_t i;

		e = malloc(sizeof(*e) + klen);
		if (!e) {
			free(v);
			return -ENOMEM;
		}
		memcpy(e->key, key, klen);
		e->klen = klen;
		e->hash = h;
		e->expire_ms = KV_NO_EXPIRE;
		e->val = NULL;
		e->vcap = 0;
		e->vlen = 0;
		if (!s->t[0].size)
			resize_start(s, INITIAL_BUCKETS);
		else if (s->t[0].used >= s->t[0].size)
			resize_start(s, next_pow2(s->t[0].used * 2));
		if (!s->t[0].size) {
			free(e);
			free(v);
			return -ENOMEM;
		}
		t = &s->t[s->rehash >= 0 ? 1 : 0];
		i = h & (t->size - 1);
		e->next = t->b[i];
		t->b[i] = e;
		t->used++;
		s->mem += sizeof(*e) + klen;
	}
	if (v != e->val) {
		s->mem -= e->vcap;
		free(e->val);
		e->val = v;
		e->vcap = cap;
		s->mem += cap;
	}
	if (vlen)
		memcpy(e->val, val, vlen);
	e->vlen = vlen;
	if (expire_ms != KV_KEEP_TTL)
		set_expire(s, e, expire_ms); /* reserved: no fail */
	s->changes++;
	if (out)
		*out = e;
	return 0;
}

int kv_store_append(struct kv_store *s, struct kv_entry *e, const void *data,
		    size_t n)
{
	if (n > KV_MAX_VALUE - e->vlen)
		return -EFBIG;
	if (e->vlen + n > e->vcap) {
		size_t cap = e->vlen + n;
		char *v;

		/* Doubling makes a series of APPENDs linear, as sds's
		 * greedy growth does (up to 1 MiB more at a time). */
		cap += cap < ((size_t)1 << 20) ? cap : (size_t)1 << 20;
		v = realloc(e->val, cap);
		if (!v)
			return -ENOMEM;
		s->mem += cap - e->vcap;
		e->val = v;
		e->vcap = cap;
	}
	memcpy(e->val + e->vlen, data, n);
	e->vlen += n;
	s->changes++;
	return 0;
}

static int set_expire(struct kv_store *s, struct kv_entry *e, int64_t when)
{
	if (when < 0) {
		if (e->expire_ms != KV_NO_EXPIRE)
			vol_remove(s, e);
		e->expire_ms = KV_NO_EXPIRE;
		return 0;
	}
	if (e->expire_ms == KV_NO_EXPIRE) {
		if (vol_reserve(s))
			return -ENOMEM;
		e->vidx = s->nvol;
		s->vol[s->nvol++] = e;
	}
	e->expire_ms = when;
	return 0;
}

int kv_store_set_expire(struct kv_store *s, struct kv_entry *e, int64_t when)
{
	int rc = set_expire(s, e, when);

	s->changes += rc == 0;
	return rc;
}

int kv_store_del(struct kv_store *s, const void *key, size_t klen)
{
	struct kv_entry **pp;
	int tab, live;

	kv_store_rehash(s, 1);
	pp = find_link(s, key, klen, siphash(s, key, klen), &tab);
	if (!pp)
		return 0;
	live = !expired(s, *pp);
	if (!live)
		s->expired++;
	unlink_free(s, pp, tab);
	s->changes += live;
	return live;
}

void kv_store_del_entry(struct kv_store *s, struct kv_entry *e)
{
	int tab;
	struct kv_entry **pp = find_link(s, e->key, e->klen, e->hash, &tab);

	if (pp)
		unlink_free(s, pp, tab);
	s->changes++;
}

static void table_free(struct kv_store *s, struct table *t)
{
	for (size_t i = 0; i < t->size; i++) {
		struct kv_entry *e = t->b[i];

		while (e) {
			struct kv_entry *next = e->next;

			entry_free(s, e);
			e = next;
		}
	}
	s->mem -= t->size * sizeof(*t->b);
	free(t->b);
	*t = (struct table){ 0 };
}

void kv_store_flush(struct kv_store *s)
{
	s->changes++;
	table_free(s, &s->t[0]);
	table_free(s, &s->t[1]);
	s->rehash = -1;
	s->mem -= s->volcap * sizeof(*s->vol);
	free(s->vol);
	s->vol = NULL;
	s->nvol = s->volcap = 0;
}

void kv_store_free(struct kv_store *s)
{
	if (!s)
		return;
	kv_store_flush(s);
	free(s);
}

int kv_store_each(struct kv_store *s,
		  int (*fn)(void *user, const struct kv_entry *e), void *user)
{
	for (int t = 0; t < 2; t++) {
		for (size_t i = 0; i < s->t[t].size; i++) {
			for (struct kv_entry *e = s->t[t].b[i]; e;
			     e = e->next) {
				int rc;

				if (expired(s, e))
					continue;
				rc = fn(user, e);
				if (rc)
					return rc;
			}
		}
	}
	return 0;
}

/* ---- periodic work ---- */

size_t kv_store_expire_cycle(struct kv_store *s, uint64_t budget_us)
{
	uint64_t start = mono_us();
	size_t total = 0;

	for (;;) {
		size_t n = 0;

		for (int i = 0; i < EXPIRE_SAMPLE && s->nvol; i++) {
			struct kv_entry *e = s->vol[next_rand(s) % s->nvol];

			if (expired(s, e)) {
				kv_store_del_entry(s, e);
				s->expired++;
				n++;
			}
		}
		total += n;
		if (n <= EXPIRE_AGAIN || !s->nvol ||
		    mono_us() - start >= budget_us)
			break;
	}
	return total;
}

size_t kv_store_cron(struct kv_store *s, uint64_t budget_us)
{
	uint64_t start = mono_us();

	/* A table with few keys left shrinks (Redis: below 10% used);
	 * never below the first size. */
	if (s->rehash < 0 && s->t[0].size > INITIAL_BUCKETS &&
	    s->t[0].used * 10 < s->t[0].size)
		resize_start(s, next_pow2(s->t[0].used));
	while (kv_store_rehash(s, 100) && mono_us() - start < 1000)
		;
	return kv_store_expire_cycle(s, budget_us);
}

void kv_store_info(const struct kv_store *s, struct kv_store_info *out)
{
	out->keys = s->t[0].used + s->t[1].used;
	out->volatile_keys = s->nvol;
	out->buckets = s->t[0].size + s->t[1].size;
	out->rehashing = s->rehash >= 0;
	out->mem = s->mem;
	out->expired = s->expired;
	out->changes = s->changes;
}

uint64_t kv_store_changes(const struct kv_store *s)
{
	return s->changes;
}

int kv_str2ll(const char *s, size_t n, long long *out)
{
	unsigned long long v = 0;
	size_t i = 0;
	bool neg = false;

	if (n == 0 || n > 20)
		return 0;
	if (n == 1 && s[0] == '0') {
		*out = 0;
		return 1;
	}
	if (s[0] == '-') {
		neg = true;
		i = 1;
		if (n == 1)
			return 0;
	}
	if (s[i] < '1' || s[i] > '9')
		return 0;
	for (; i < n; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return 0;
		d = (unsigned)(s[i] - '0');
		if (v > (ULLONG_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	if (neg) {
		if (v > (unsigned long long)LLONG_MAX + 1)
			return 0;
		*out = v == (unsigned long long)LLONG_MAX + 1
			       ? LLONG_MIN
			       : -(long long)v;
	} else {
		if (v > LLONG_MAX)
			return 0;
		*out = (long long)v;
	}
	return 1;
}
