/*
 * The server sessions of a context (session/sessions.c): found by
 * listener and id, gone once taken out, and lookups that stay O(1) with
 * tens of thousands of sessions whose ids a hostile client chose to
 * collide under a plain hash.
 */
#include "session/session.h"
#include "../runner.h"

#define N_SESSIONS 20000

TEST(session_table_finds_by_listener_and_id_in_constant_time)
{
	rift_ctx *ctx = NULL;
	rift_conn *c = calloc(N_SESSIONS, sizeof(*c));
	size_t longest;

	CHECK(c != NULL);
	CHECK_EQ(rift_ctx_create(&ctx, NULL), 0);
	CHECK(rift__sessions_find(ctx, 1, 42) == NULL); /* empty, no table */
	for (size_t i = 0; i < N_SESSIONS; i++) {
		c[i].ctx = ctx;
		/* Equal low bits: one bucket for any hash that is the id
		 * modulo a power of two.  Two listeners share the ids. */
		c[i].session_id = ((uint64_t)(i / 2) + 1) << 32;
		c[i].lst_serial = 1 + i % 2;
		CHECK_EQ(rift__sessions_reserve(ctx), 0);
		rift__sessions_add(&c[i]);
	}
	CHECK_EQ(ctx->sessions.n, N_SESSIONS);
	/* Load at most one per bucket: chains of a handful, never the
	 * thousands a predictable hash would give these ids. */
	CHECK(ctx->sessions.mask + 1 >= N_SESSIONS);
	longest = rift__sessions_longest(ctx);
	if (longest > 12)
		FAIL("longest chain %zu for %d sessions", longest, N_SESSIONS);
	for (size_t i = 0; i < N_SESSIONS; i++)
		CHECK(rift__sessions_find(ctx, c[i].lst_serial,
					  c[i].session_id) == &c[i]);
	/* Another listener's sessions are not found through this one. */
	CHECK(rift__sessions_find(ctx, 3, c[0].session_id) == NULL);
	CHECK(rift__sessions_find(ctx, 1, 7) == NULL);

	for (size_t i = 0; i < N_SESSIONS; i += 2)
		rift__sessions_del(&c[i]);
	rift__sessions_del(&c[0]); /* twice: no-op */
	CHECK_EQ(ctx->sessions.n, N_SESSIONS / 2);
	for (size_t i = 0; i < N_SESSIONS; i++)
		CHECK(rift__sessions_find(ctx, c[i].lst_serial,
					  c[i].session_id) ==
		      (i % 2 ? &c[i] : NULL));
	for (size_t i = 1; i < N_SESSIONS; i += 2)
		rift__sessions_del(&c[i]);
	CHECK_EQ(ctx->sessions.n, 0);
	CHECK(rift__sessions_find(ctx, 2, c[1].session_id) == NULL);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
	free(c);
}
