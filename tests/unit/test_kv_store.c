/* rift-kv's keyspace: the incrementally resized table and expiry. */
#include <errno.h>
#include <limits.h>

#include "../../examples/rift-kv/store.h"
#include "../runner.h"

static const uint8_t seed[16] = "rift-kv-testseed";

static struct kv_entry *find(struct kv_store *s, const char *k)
{
	return kv_store_find(s, k, strlen(k));
}

static void set(struct kv_store *s, const char *k, const char *v,
		int64_t exp)
{
	CHECK_EQ(kv_store_set(s, k, strlen(k), v, strlen(v), exp, NULL), 0);
}

static int count_cb(void *user, const struct kv_entry *e)
{
	(void)e;
	(*(size_t *)user)++;
	return 0;
}

static size_t count(struct kv_store *s)
{
	size_t n = 0;

	kv_store_each(s, count_cb, &n);
	return n;
}

TEST(kv_store_set_get_overwrite_delete)
{
	struct kv_store *s = kv_store_new(seed);
	struct kv_entry *e;

	CHECK(s != NULL);
	CHECK(find(s, "a") == NULL);
	set(s, "a", "1", KV_NO_EXPIRE);
	e = find(s, "a");
	CHECK(e != NULL);
	CHECK_EQ(e->vlen, 1);
	CHECK(memcmp(e->val, "1", 1) == 0);
	set(s, "a", "a much longer value than before", KV_NO_EXPIRE);
	e = find(s, "a");
	CHECK_EQ(e->vlen, 31);
	set(s, "empty", "", KV_NO_EXPIRE);
	CHECK_EQ(find(s, "empty")->vlen, 0);
	CHECK_EQ(kv_store_append(s, find(s, "empty"), "xy", 2), 0);
	CHECK_EQ(kv_store_append(s, find(s, "empty"), "z", 1), 0);
	CHECK(memcmp(find(s, "empty")->val, "xyz", 3) == 0);
	/* binary keys: a NUL inside */
	CHECK_EQ(kv_store_set(s, "k\0a", 3, "x", 1, KV_NO_EXPIRE, NULL), 0);
	CHECK(kv_store_find(s, "k\0b", 3) == NULL);
	CHECK(kv_store_find(s, "k\0a", 3) != NULL);
	CHECK_EQ(kv_store_del(s, "a", 1), 1);
	CHECK_EQ(kv_store_del(s, "a", 1), 0);
	CHECK_EQ(count(s), 2);
	kv_store_flush(s);
	CHECK_EQ(count(s), 0);
	set(s, "after", "flush", KV_NO_EXPIRE);
	CHECK(find(s, "after") != NULL);
	kv_store_free(s);
}

/* Replication logs a command when it moved the count of changes. */
TEST(kv_store_counts_changes_not_lookups)
{
	struct kv_store *s = kv_store_new(seed);
	uint64_t n;

	kv_store_set_now(s, 1000);
	n = kv_store_changes(s);
	set(s, "a", "1", KV_NO_EXPIRE);
	CHECK_EQ(kv_store_changes(s), n + 1);
	CHECK(find(s, "a") != NULL);
	CHECK(find(s, "nosuch") == NULL);
	CHECK_EQ(kv_store_del(s, "nosuch", 6), 0);
	CHECK_EQ(kv_store_changes(s), n + 1); /* lookups, a miss: none */
	CHECK_EQ(kv_store_append(s, find(s, "a"), "2", 1), 0);
	CHECK_EQ(kv_store_set_expire(s, find(s, "a"), 5000), 0);
	CHECK_EQ(kv_store_del(s, "a", 1), 1);
	CHECK_EQ(kv_store_changes(s), n + 4);
	kv_store_flush(s);
	CHECK_EQ(kv_store_changes(s), n + 5);
	kv_store_free(s);
}

TEST(kv_store_lazy_expiry_and_keep_ttl)
{
	struct kv_store *s = kv_store_new(seed);
	struct kv_store_info si;

	kv_store_set_now(s, 1000);
	set(s, "t", "v", 1500);
	kv_store_set_now(s, 1500);
	CHECK(find(s, "t") != NULL); /* expired only once now > when */
	set(s, "t", "w", KV_KEEP_TTL);
	CHECK_EQ(find(s, "t")->expire_ms, 1500);
	kv_store_set_now(s, 1501);
	CHECK_EQ(count(s), 0); /* iteration skips it... */
	kv_store_info(s, &si);
	CHECK_EQ(si.keys, 1); /* ...which is still held until looked up */
	CHECK(find(s, "t") == NULL);
	kv_store_info(s, &si);
	CHECK_EQ(si.keys, 0);
	CHECK_EQ(si.volatile_keys, 0);
	CHECK_EQ(si.expired, 1);
	/* SET without KEEPTTL drops the time; set_expire(-1) too */
	set(s, "p", "v", 5000);
	set(s, "p", "v", KV_NO_EXPIRE);
	CHECK_EQ(find(s, "p")->expire_ms, KV_NO_EXPIRE);
	set(s, "q", "v", 5000);
	CHECK_EQ(kv_store_set_expire(s, find(s, "q"), KV_NO_EXPIRE), 0);
	kv_store_info(s, &si);
	CHECK_EQ(si.volatile_keys, 0);
	kv_store_free(s);
}

TEST(kv_store_active_expiry_samples_until_few_expire)
{
	struct kv_store *s = kv_store_new(seed);
	struct kv_store_info si;
	char k[32];
	size_t got;

	kv_store_set_now(s, 0);
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "vol:%d", i);
		set(s, k, "v", 100);
	}
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "keep:%d", i);
		set(s, k, "v", i < 50 ? KV_NO_EXPIRE : 1000000);
	}
	kv_store_set_now(s, 101);
	/* nobody looks them up: the cycle finds them */
	got = kv_store_expire_cycle(s, 1000000);
	kv_store_info(s, &si);
	CHECK(got >= 4000); /* it went on while a quarter of a sample expired */
	for (int i = 0; i < 50 && si.keys > 100; i++) {
		got += kv_store_expire_cycle(s, 1000000);
		kv_store_info(s, &si);
	}
	CHECK_EQ(si.keys, 100);
	CHECK_EQ(si.volatile_keys, 50);
	CHECK_EQ(got, 5000);
	CHECK_EQ(si.expired, 5000);
	kv_store_free(s);
}

TEST(kv_store_grows_incrementally)
{
	struct kv_store *s = kv_store_new(seed);
	struct kv_store_info si;
	char k[32];
	int saw_rehash = 0, max_streak = 0, streak = 0;
	const int n = 100000;

	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "key:%d", i);
		set(s, k, "v", KV_NO_EXPIRE);
		kv_store_info(s, &si);
		if (si.rehashing) {
			saw_rehash = 1;
			streak++;
			if (streak > max_streak)
				max_streak = streak;
			/* every key stays findable in mid-move */
			if (i % 97 == 0) {
				snprintf(k, sizeof(k), "key:%d", i / 2);
				CHECK(find(s, k) != NULL);
			}
		} else {
			streak = 0;
		}
	}
	/* A resize took many operations: no single one moved the table. */
	CHECK(saw_rehash);
	CHECK(max_streak > 1000);
	while (kv_store_rehash(s, 1000))
		;
	kv_store_info(s, &si);
	CHECK_EQ(si.keys, (size_t)n);
	CHECK_EQ(si.rehashing, 0);
	CHECK(si.buckets >= (size_t)n);
	CHECK_EQ(count(s), (size_t)n);
	/* deleting most of them lets the cron shrink the table, in steps */
	for (int i = 0; i < n - 100; i++) {
		snprintf(k, sizeof(k), "key:%d", i);
		CHECK_EQ(kv_store_del(s, k, strlen(k)), 1);
	}
	for (int i = 0; i < 100; i++)
		kv_store_cron(s, 1000);
	kv_store_info(s, &si);
	CHECK_EQ(si.rehashing, 0);
	CHECK(si.buckets <= 256);
	for (int i = n - 100; i < n; i++) {
		snprintf(k, sizeof(k), "key:%d", i);
		CHECK(find(s, k) != NULL);
	}
	kv_store_free(s);
}

TEST(kv_store_str2ll_is_redis_string2ll)
{
	long long v;

	CHECK_EQ(kv_str2ll("0", 1, &v), 1);
	CHECK_EQ(v, 0);
	CHECK_EQ(kv_str2ll("-42", 3, &v), 1);
	CHECK_EQ(v, -42);
	CHECK_EQ(kv_str2ll("9223372036854775807", 19, &v), 1);
	CHECK(v == LLONG_MAX);
	CHECK_EQ(kv_str2ll("-9223372036854775808", 20, &v), 1);
	CHECK(v == LLONG_MIN);
	CHECK_EQ(kv_str2ll("9223372036854775808", 19, &v), 0);
	CHECK_EQ(kv_str2ll("01", 2, &v), 0);
	CHECK_EQ(kv_str2ll("-0", 2, &v), 0);
	CHECK_EQ(kv_str2ll("+1", 2, &v), 0);
	CHECK_EQ(kv_str2ll(" 1", 2, &v), 0);
	CHECK_EQ(kv_str2ll("", 0, &v), 0);
	CHECK_EQ(kv_str2ll("-", 1, &v), 0);
	CHECK_EQ(kv_str2ll("1.5", 3, &v), 0);
}
