/*
 * sessions.c - the server sessions of a context, by (listener serial,
 * session id): a chained hash table (session.h).
 *
 * Thousands of clients may re-attach in the same second after a switch
 * reboots, each RESUME a lookup, and each HELLO one more: both stay O(1).
 * The chains run through the sessions themselves (no allocation per
 * entry); the bucket array doubles when there are as many sessions as
 * buckets, so chains stay about one long.  Session ids are chosen by the
 * clients, so the bucket of an id is a keyed hash (SipHash-2-4 under a
 * random key per context): a peer cannot pick ids that share a bucket
 * and make every lookup walk them all.
 */
#include <stdlib.h>
#include <string.h>

#include "session/session.h"
#include "util/secret.h"

#define FIRST_BUCKETS 64u

static uint64_t hash(const struct rift__sess_table *t, uint64_t lst_serial,
		     uint64_t id)
{
	uint64_t in[2] = { lst_serial, id };

	return rift__siphash64(t->hash_key, in, sizeof(in));
}

static size_t bucket(const struct rift__sess_table *t, uint64_t lst_serial,
		     uint64_t id)
{
	return (size_t)hash(t, lst_serial, id) & t->mask;
}

/* Move every session into a bucket array of n entries (a power of two). */
static int rehash(struct rift__sess_table *t, size_t n)
{
	rift_conn **nb = calloc(n, sizeof(*nb));
	size_t old = t->buckets ? t->mask + 1 : 0;

	if (!nb)
		return RIFT_ENOMEM;
	for (size_t i = 0; i < old; i++) {
		rift_conn *c = t->buckets[i];

		while (c) {
			rift_conn *next = c->table_next;
			size_t b = (size_t)hash(t, c->lst_serial,
						c->session_id) & (n - 1);

			c->table_next = nb[b];
			nb[b] = c;
			c = next;
		}
	}
	free(t->buckets);
	t->buckets = nb;
	t->mask = n - 1;
	return 0;
}

int rift__sessions_reserve(rift_ctx *ctx)
{
	struct rift__sess_table *t = &ctx->sessions;

	if (!t->buckets) {
		if (rift__random(t->hash_key, sizeof(t->hash_key)))
			return RIFT_EIO;
		return rehash(t, FIRST_BUCKETS);
	}
	if (t->n + 1 <= t->mask + 1)
		return 0;
	if (t->mask + 1 > SIZE_MAX / 2 / sizeof(rift_conn *))
		return RIFT_ENOMEM;
	return rehash(t, 2 * (t->mask + 1));
}

void rift__sessions_add(rift_conn *conn)
{
	struct rift__sess_table *t = &conn->ctx->sessions;
	size_t b = bucket(t, conn->lst_serial, conn->session_id);

	conn->table_next = t->buckets[b];
	t->buckets[b] = conn;
	conn->in_table = true;
	t->n++;
}

rift_conn *rift__sessions_find(rift_ctx *ctx, uint64_t lst_serial,
			       uint64_t id)
{
	struct rift__sess_table *t = &ctx->sessions;
	rift_conn *c;

	if (!t->n)
		return NULL;
	for (c = t->buckets[bucket(t, lst_serial, id)]; c; c = c->table_next)
		if (c->session_id == id && c->lst_serial == lst_serial)
			return c;
	return NULL;
}

void rift__sessions_del(rift_conn *conn)
{
	struct rift__sess_table *t = &conn->ctx->sessions;
	rift_conn **pp;

	if (!conn->in_table)
		return;
	pp = &t->buckets[bucket(t, conn->lst_serial, conn->session_id)];
	while (*pp != conn)
		pp = &(*pp)->table_next;
	*pp = conn->table_next;
	conn->table_next = NULL;
	conn->in_table = false;
	t->n--;
}

void rift__sessions_free(rift_ctx *ctx)
{
	free(ctx->sessions.buckets);
	memset(&ctx->sessions, 0, sizeof(ctx->sessions));
}

size_t rift__sessions_longest(const rift_ctx *ctx)
{
	const struct rift__sess_table *t = &ctx->sessions;
	size_t longest = 0;

	for (size_t i = 0; t->buckets && i <= t->mask; i++) {
		size_t n = 0;

		for (const rift_conn *c = t->buckets[i]; c; c = c->table_next)
			n++;
		if (n > longest)
			longest = n;
	}
	return longest;
}
