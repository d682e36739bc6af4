/*
 * cmd_string.c - rift-kv's string and keyspace commands, with Redis
 * 7.0's replies and error texts (t_string.c, expire.c, db.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glob.h"
#include "server.h"

#define ARGS struct kv_client *c, size_t argc, const struct kv_resp_arg *argv

static struct kv_store *store(struct kv_client *c)
{
	return c->srv->store;
}

/* A lookup by a command that reads: counted in the keyspace stats. */
static struct kv_entry *lookup_read(struct kv_client *c,
				    const struct kv_resp_arg *key)
{
	struct kv_entry *e = kv_store_find(store(c), key->ptr, key->len);

	if (e)
		c->srv->hits++;
	else
		c->srv->misses++;
	return e;
}

static struct kv_entry *lookup_write(struct kv_client *c,
				     const struct kv_resp_arg *key)
{
	return kv_store_find(store(c), key->ptr, key->len);
}

static void reply_oom(struct kv_client *c)
{
	c->oom = 1; /* kv_cmd_exec replaces the reply */
}

static void cmd_get(ARGS)
{
	struct kv_entry *e = lookup_read(c, &argv[1]);

	(void)argc;
	if (e)
		kv_reply_bulk(c, e->val, e->vlen);
	else
		kv_reply_null(c);
}

enum {
	SET_NX = 1,
	SET_XX = 2,
	SET_GET = 4,
	SET_KEEPTTL = 8,
	SET_EX = 16,
	SET_PX = 32,
	SET_EXAT = 64,
	SET_PXAT = 128,
};

/*
 * SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL], parsed
 * as Redis's parseExtendedStringArgumentsOrReply(): an option that
 * conflicts with one before it is a syntax error, the same expiry option
 * twice takes the last value.
 */
static void cmd_set(ARGS)
{
	const unsigned any_time = SET_KEEPTTL | SET_EX | SET_PX | SET_EXAT |
				  SET_PXAT;
	const struct kv_resp_arg *expire = NULL;
	unsigned flags = 0, unit = 0;
	long long when = 0;
	int64_t exp = KV_NO_EXPIRE;
	struct kv_entry *e;

	for (size_t j = 3; j < argc; j++) {
		const struct kv_resp_arg *o = &argv[j];
		int has_next = j + 1 < argc;
		unsigned t = 0;

		if (kv_arg_is(o, "nx") && !(flags & SET_XX))
			flags |= SET_NX;
		else if (kv_arg_is(o, "xx") && !(flags & SET_NX))
			flags |= SET_XX;
		else if (kv_arg_is(o, "get"))
			flags |= SET_GET;
		else if (kv_arg_is(o, "keepttl") &&
			 !(flags & any_time & ~SET_KEEPTTL))
			flags |= SET_KEEPTTL;
		else if (kv_arg_is(o, "ex"))
			t = SET_EX;
		else if (kv_arg_is(o, "px"))
			t = SET_PX;
		else if (kv_arg_is(o, "exat"))
			t = SET_EXAT;
		else if (kv_arg_is(o, "pxat"))
			t = SET_PXAT;
		else {
			kv_reply_syntax(c);
			return;
		}
		if (!t)
			continue;
		if ((flags & any_time & ~t) || !has_next) {
			kv_reply_syntax(c);
			return;
		}
		flags |= t;
		unit = t;
		expire = &argv[++j];
	}
	if (expire) {
		if (!kv_arg_ll(expire, &when)) {
			kv_reply_not_int(c);
			return;
		}
		if (when <= 0 || ((unit & (SET_EX | SET_EXAT)) &&
				  when > LLONG_MAX / 1000)) {
			kv_reply_error(c,
				       "ERR invalid expire time in 'set' "
				       "command");
			return;
		}
		if (unit & (SET_EX | SET_EXAT))
			when *= 1000;
		if (unit & (SET_EX | SET_PX)) {
			if (when > LLONG_MAX - kv_store_now(store(c))) {
				kv_reply_error(c,
					       "ERR invalid expire time in "
					       "'set' command");
				return;
			}
			when += kv_store_now(store(c));
		}
		exp = when;
	} else if (flags & SET_KEEPTTL) {
		exp = KV_KEEP_TTL;
	}
	e = lookup_write(c, &argv[1]);
	if (flags & SET_GET) {
		if (e)
			kv_reply_bulk(c, e->val, e->vlen);
		else
			kv_reply_null(c);
	}
	if (((flags & SET_NX) && e) || ((flags & SET_XX) && !e)) {
		if (!(flags & SET_GET))
			kv_reply_null(c);
		return;
	}
	if (kv_store_set(store(c), argv[1].ptr, argv[1].len, argv[2].ptr,
			 argv[2].len, exp, NULL)) {
		reply_oom(c);
		return;
	}
	if (!(flags & SET_GET))
		kv_reply_ok(c);
}

static void cmd_del(ARGS)
{
	long long n = 0;

	for (size_t i = 1; i < argc; i++)
		n += kv_store_del(store(c), argv[i].ptr, argv[i].len);
	kv_reply_int(c, n);
}

static void cmd_exists(ARGS)
{
	long long n = 0;

	for (size_t i = 1; i < argc; i++)
		n += lookup_read(c, &argv[i]) != NULL;
	kv_reply_int(c, n);
}

static void incr_by(struct kv_client *c, const struct kv_resp_arg *key,
		    long long incr)
{
	struct kv_entry *e = lookup_write(c, key);
	long long v = 0;
	char buf[32];
	int n;

	if (e && !kv_str2ll(e->val, e->vlen, &v)) {
		kv_reply_not_int(c);
		return;
	}
	if ((incr < 0 && v < 0 && incr < LLONG_MIN - v) ||
	    (incr > 0 && v > 0 && incr > LLONG_MAX - v)) {
		kv_reply_error(c, "ERR increment or decrement would overflow");
		return;
	}
	v += incr;
	n = snprintf(buf, sizeof(buf), "%lld", v);
	if (kv_store_set(store(c), key->ptr, key->len, buf, (size_t)n,
			 KV_KEEP_TTL, NULL)) {
		reply_oom(c);
		return;
	}
	kv_reply_int(c, v);
}

static void cmd_incr(ARGS)
{
	(void)argc;
	incr_by(c, &argv[1], 1);
}

static void cmd_decr(ARGS)
{
	(void)argc;
	incr_by(c, &argv[1], -1);
}

static void cmd_incrby(ARGS)
{
	long long n;

	(void)argc;
	if (!kv_arg_ll(&argv[2], &n)) {
		kv_reply_not_int(c);
		return;
	}
	incr_by(c, &argv[1], n);
}

static void cmd_decrby(ARGS)
{
	long long n;

	(void)argc;
	if (!kv_arg_ll(&argv[2], &n)) {
		kv_reply_not_int(c);
		return;
	}
	if (n == LLONG_MIN) {
		kv_reply_error(c, "ERR decrement would overflow");
		return;
	}
	incr_by(c, &argv[1], -n);
}

static void cmd_mget(ARGS)
{
	kv_reply_array(c, argc - 1);
	for (size_t i = 1; i < argc; i++) {
		struct kv_entry *e = lookup_read(c, &argv[i]);

		if (e)
			kv_reply_bulk(c, e->val, e->vlen);
		else
			kv_reply_null(c);
	}
}

static void cmd_mset(ARGS)
{
	if (argc % 2 == 0) {
		kv_reply_arity(c, "mset");
		return;
	}
	for (size_t i = 1; i < argc; i += 2) {
		if (kv_store_set(store(c), argv[i].ptr, argv[i].len,
				 argv[i + 1].ptr, argv[i + 1].len,
				 KV_NO_EXPIRE, NULL)) {
			reply_oom(c);
			return;
		}
	}
	kv_reply_ok(c);
}

static void cmd_append(ARGS)
{
	struct kv_entry *e = lookup_write(c, &argv[1]);
	int rc;

	(void)argc;
	if (!e) {
		if (kv_store_set(store(c), argv[1].ptr, argv[1].len,
				 argv[2].ptr, argv[2].len, KV_NO_EXPIRE, &e)) {
			reply_oom(c);
			return;
		}
		kv_reply_int(c, (long long)e->vlen);
		return;
	}
	rc = kv_store_append(store(c), e, argv[2].ptr, argv[2].len);
	if (rc == -EFBIG) {
		kv_reply_error(c,
			       "ERR string exceeds maximum allowed size "
			       "(proto-max-bulk-len)");
		return;
	}
	if (rc) {
		reply_oom(c);
		return;
	}
	kv_reply_int(c, (long long)e->vlen);
}

static void cmd_strlen(ARGS)
{
	struct kv_entry *e = lookup_read(c, &argv[1]);

	(void)argc;
	kv_reply_int(c, e ? (long long)e->vlen : 0);
}

enum { EXP_NX = 1, EXP_XX = 2, EXP_GT = 4, EXP_LT = 8 };

/* EXPIRE, PEXPIRE (and the AT forms): expire.c's expireGenericCommand. */
static void expire_generic(struct kv_client *c, size_t argc,
			   const struct kv_resp_arg *argv, long long base,
			   int seconds, const char *name)
{
	unsigned flags = 0;
	long long when;
	struct kv_entry *e;

	for (size_t j = 3; j < argc; j++) {
		if (kv_arg_is(&argv[j], "nx"))
			flags |= EXP_NX;
		else if (kv_arg_is(&argv[j], "xx"))
			flags |= EXP_XX;
		else if (kv_arg_is(&argv[j], "gt"))
			flags |= EXP_GT;
		else if (kv_arg_is(&argv[j], "lt"))
			flags |= EXP_LT;
		else {
			size_t n = strnlen(argv[j].ptr, argv[j].len);

			kv_reply_errorf(c, "ERR Unsupported option %.*s",
					(int)(n < 500 ? n : 500), argv[j].ptr);
			return;
		}
	}
	if ((flags & EXP_NX) && (flags & (EXP_XX | EXP_GT | EXP_LT))) {
		kv_reply_error(c,
			       "ERR NX and XX, GT or LT options at the same "
			       "time are not compatible");
		return;
	}
	if ((flags & EXP_GT) && (flags & EXP_LT)) {
		kv_reply_error(c,
			       "ERR GT and LT options at the same time are "
			       "not compatible");
		return;
	}
	if (!kv_arg_ll(&argv[2], &when)) {
		kv_reply_not_int(c);
		return;
	}
	if (seconds) {
		if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)
			goto invalid;
		when *= 1000;
	}
	if (when > LLONG_MAX - base)
		goto invalid;
	when += base;
	e = lookup_write(c, &argv[1]);
	if (!e) {
		kv_reply_int(c, 0);
		return;
	}
	if (((flags & EXP_NX) && e->expire_ms != KV_NO_EXPIRE) ||
	    ((flags & EXP_XX) && e->expire_ms == KV_NO_EXPIRE) ||
	    ((flags & EXP_GT) &&
	     (e->expire_ms == KV_NO_EXPIRE || when <= e->expire_ms)) ||
	    ((flags & EXP_LT) && e->expire_ms != KV_NO_EXPIRE &&
	     when >= e->expire_ms)) {
		kv_reply_int(c, 0);
		return;
	}
	if (when <= kv_store_now(store(c))) {
		kv_store_del_entry(store(c), e);
		kv_reply_int(c, 1);
		return;
	}
	if (kv_store_set_expire(store(c), e, when)) {
		reply_oom(c);
		return;
	}
	kv_reply_int(c, 1);
	return;
invalid:
	kv_reply_errorf(c, "ERR invalid expire time in '%s' command", name);
}

static void cmd_expire(ARGS)
{
	expire_generic(c, argc, argv, kv_store_now(store(c)), 1, "expire");
}

static void cmd_pexpire(ARGS)
{
	expire_generic(c, argc, argv, kv_store_now(store(c)), 0, "pexpire");
}

static void cmd_expireat(ARGS)
{
	expire_generic(c, argc, argv, 0, 1, "expireat");
}

static void cmd_pexpireat(ARGS)
{
	expire_generic(c, argc, argv, 0, 0, "pexpireat");
}

static void ttl_generic(struct kv_client *c, const struct kv_resp_arg *key,
			int ms)
{
	struct kv_entry *e = lookup_read(c, key);
	long long ttl;

	if (!e) {
		kv_reply_int(c, -2);
		return;
	}
	if (e->expire_ms == KV_NO_EXPIRE) {
		kv_reply_int(c, -1);
		return;
	}
	ttl = e->expire_ms - kv_store_now(store(c));
	if (ttl < 0)
		ttl = 0;
	kv_reply_int(c, ms ? ttl : (ttl + 500) / 1000);
}

static void cmd_ttl(ARGS)
{
	(void)argc;
	ttl_generic(c, &argv[1], 0);
}

static void cmd_pttl(ARGS)
{
	(void)argc;
	ttl_generic(c, &argv[1], 1);
}

static void cmd_persist(ARGS)
{
	struct kv_entry *e = lookup_write(c, &argv[1]);

	(void)argc;
	if (!e || e->expire_ms == KV_NO_EXPIRE) {
		kv_reply_int(c, 0);
		return;
	}
	kv_store_set_expire(store(c), e, KV_NO_EXPIRE);
	kv_reply_int(c, 1);
}

/* KEYS: the matching entries, gathered first (the reply starts with
 * their count). */
struct keys {
	const struct kv_resp_arg *pat;
	const struct kv_entry **v;
	size_t n, cap;
};

static int keys_add(void *user, const struct kv_entry *e)
{
	struct keys *k = user;

	if (!kv_glob_match(k->pat->ptr, k->pat->len, e->key, e->klen, 0))
		return 0;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 64;
		const struct kv_entry **v = realloc(k->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n++] = e;
	return 0;
}

static void cmd_keys(ARGS)
{
	struct keys k = { .pat = &argv[1] };

	(void)argc;
	if (kv_store_each(store(c), keys_add, &k)) {
		free(k.v);
		reply_oom(c);
		return;
	}
	kv_reply_array(c, k.n);
	for (size_t i = 0; i < k.n; i++)
		kv_reply_bulk(c, k.v[i]->key, k.v[i]->klen);
	free(k.v);
}

#define W "write denyoom"
#define R "readonly fast"
const struct kv_cmd kv_string_cmds[] = {
	{ "get", 2, cmd_get, R, 1, 1, 1, "@read @string @fast", "string",
	  "1.0.0", "Get the value of a key", NULL },
	{ "set", -3, cmd_set, W, 1, 1, 1, "@write @string @slow", "string",
	  "1.0.0", "Set the string value of a key", NULL },
	{ "del", -2, cmd_del, "write", 1, -1, 1, "@keyspace @write @slow",
	  "generic", "1.0.0", "Delete a key", NULL },
	{ "unlink", -2, cmd_del, "write fast", 1, -1, 1,
	  "@keyspace @write @fast", "generic", "4.0.0",
	  "Delete a key (as DEL: rift-kv frees at once)", NULL },
	{ "exists", -2, cmd_exists, R, 1, -1, 1, "@keyspace @read @fast",
	  "generic", "1.0.0", "Determine if a key exists", NULL },
	{ "incr", 2, cmd_incr, W " fast", 1, 1, 1, "@write @string @fast",
	  "string", "1.0.0", "Increment the integer value of a key by one",
	  NULL },
	{ "decr", 2, cmd_decr, W " fast", 1, 1, 1, "@write @string @fast",
	  "string", "1.0.0", "Decrement the integer value of a key by one",
	  NULL },
	{ "incrby", 3, cmd_incrby, W " fast", 1, 1, 1,
	  "@write @string @fast", "string", "1.0.0",
	  "Increment the integer value of a key by the given amount", NULL },
	{ "decrby", 3, cmd_decrby, W " fast", 1, 1, 1,
	  "@write @string @fast", "string", "1.0.0",
	  "Decrement the integer value of a key by the given number", NULL },
	{ "mget", -2, cmd_mget, R, 1, -1, 1, "@read @string @fast", "string",
	  "1.0.0", "Get the values of all the given keys", NULL },
	{ "mset", -3, cmd_mset, W, 1, -1, 2, "@write @string @slow",
	  "string", "1.0.1", "Set multiple keys to multiple values", NULL },
	{ "append", 3, cmd_append, W " fast", 1, 1, 1,
	  "@write @string @fast", "string", "2.0.0",
	  "Append a value to a key", NULL },
	{ "strlen", 2, cmd_strlen, R, 1, 1, 1, "@read @string @fast",
	  "string", "2.2.0", "Get the length of the value stored in a key",
	  NULL },
	{ "expire", -3, cmd_expire, "write fast", 1, 1, 1,
	  "@keyspace @write @fast", "generic", "1.0.0",
	  "Set a key's time to live in seconds", NULL },
	{ "pexpire", -3, cmd_pexpire, "write fast", 1, 1, 1,
	  "@keyspace @write @fast", "generic", "2.6.0",
	  "Set a key's time to live in milliseconds", NULL },
	{ "expireat", -3, cmd_expireat, "write fast", 1, 1, 1,
	  "@keyspace @write @fast", "generic", "1.2.0",
	  "Set the expiration for a key as a UNIX timestamp", NULL },
	{ "pexpireat", -3, cmd_pexpireat, "write fast", 1, 1, 1,
	  "@keyspace @write @fast", "generic", "2.6.0",
	  "Set the expiration for a key as a UNIX timestamp specified in "
	  "milliseconds",
	  NULL },
	{ "ttl", 2, cmd_ttl, R, 1, 1, 1, "@keyspace @read @fast", "generic",
	  "1.0.0", "Get the time to live for a key in seconds", NULL },
	{ "pttl", 2, cmd_pttl, R, 1, 1, 1, "@keyspace @read @fast",
	  "generic", "2.6.0", "Get the time to live for a key in milliseconds",
	  NULL },
	{ "persist", 2, cmd_persist, "write fast", 1, 1, 1,
	  "@keyspace @write @fast", "generic", "2.2.0",
	  "Remove the expiration from a key", NULL },
	{ "keys", 2, cmd_keys, "readonly", 0, 0, 0,
	  "@keyspace @read @slow @dangerous", "generic", "1.0.0",
	  "Find all keys matching the given pattern", NULL },
	{ NULL, 0, NULL, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, NULL },
};
