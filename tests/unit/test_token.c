/* One-sided access tokens (session/wire.h): round trips, the tag, and
 * every kind of refusal.  Tokens come from a peer: nothing in one may be
 * trusted before it parses, and nothing of it before its tag, where the
 * exporter checks. */
#include "internal.h"
#include "util/secret.h"
#include "../runner.h"

static const uint8_t key[RIFT_SESSION_KEY_LEN] = { 1, 2,  3,  4,  5,  6,
						   7, 8,  9,  10, 11, 12,
						   13, 14, 15, 16 };

static struct rift__token sample(unsigned n)
{
	struct rift__token t = { .access = RIFT_TOKEN_READ | RIFT_TOKEN_WRITE,
				 .n = (uint16_t)n,
				 .export_id = 0xa1b2c3d4u,
				 .session_id = 0x0102030405060708ull,
				 .base = 0x7f0000001000ull,
				 .len = 1u << 20 };

	for (unsigned i = 0; i < n; i++)
		t.e[i] = (struct rift__token_entry){
			.scope = 0x1000u + i, .key = 0xfeed0000u + i, .kind = i };
	return t;
}

TEST(token_round_trips_with_its_entries)
{
	for (unsigned n = 0; n <= RIFT_TOKEN_ENTRIES_MAX; n++) {
		struct rift__token in = sample(n), out;
		uint8_t buf[RIFT_TOKEN_MAX];
		size_t len = sizeof(buf);
		const char *why = NULL;

		CHECK_EQ(rift__token_encode(&in, key, buf, &len), 0);
		CHECK_EQ(len, rift__token_size(n));
		CHECK_EQ(rift__token_decode(buf, len, &out, &why), 0);
		CHECK_EQ(out.access, in.access);
		CHECK_EQ(out.n, n);
		CHECK_EQ(out.export_id, in.export_id);
		CHECK_EQ(out.session_id, in.session_id);
		CHECK_EQ(out.base, in.base);
		CHECK_EQ(out.len, in.len);
		for (unsigned i = 0; i < n; i++) {
			CHECK_EQ(out.e[i].scope, in.e[i].scope);
			CHECK_EQ(out.e[i].key, in.e[i].key);
			CHECK_EQ(out.e[i].kind, in.e[i].kind);
		}
		CHECK(rift__token_tag_ok(buf, len, key));
	}
}

TEST(token_encode_says_the_room_it_needs_and_writes_nothing_short)
{
	struct rift__token t = sample(3);
	uint8_t buf[RIFT_TOKEN_MAX];
	size_t len = rift__token_size(3) - 1;

	memset(buf, 0xee, sizeof(buf));
	CHECK_EQ(rift__token_encode(&t, key, buf, &len), RIFT_ENOSPC);
	CHECK_EQ(len, rift__token_size(3));
	for (size_t i = 0; i < sizeof(buf); i++)
		CHECK_EQ(buf[i], 0xee);
}

TEST(token_of_another_size_than_its_entries_is_refused)
{
	struct rift__token t = sample(2), out;
	uint8_t buf[RIFT_TOKEN_MAX + 1];
	size_t len = sizeof(buf);
	const char *why = NULL;

	CHECK_EQ(rift__token_encode(&t, key, buf, &len), 0);
	for (size_t n = 0; n < len; n++) {
		why = NULL;
		CHECK_EQ(rift__token_decode(buf, n, &out, &why), RIFT_EINVAL);
		CHECK(why != NULL);
		CHECK(!rift__token_tag_ok(buf, n, key));
	}
	buf[len] = 0;
	CHECK_EQ(rift__token_decode(buf, len + 1, &out, &why), RIFT_EINVAL);
	CHECK_CONTAINS(why, "size");
}

TEST(token_altered_anywhere_or_under_another_key_fails_its_tag)
{
	struct rift__token t = sample(4);
	uint8_t buf[RIFT_TOKEN_MAX], other[RIFT_SESSION_KEY_LEN];
	size_t len = sizeof(buf);

	CHECK_EQ(rift__token_encode(&t, key, buf, &len), 0);
	for (size_t i = 0; i < len; i++)
		for (unsigned bit = 0; bit < 8; bit++) {
			buf[i] ^= (uint8_t)(1u << bit);
			if (rift__token_tag_ok(buf, len, key))
				FAIL("byte %zu bit %u flipped: tag still ok", i,
				     bit);
			buf[i] ^= (uint8_t)(1u << bit);
		}
	CHECK(rift__token_tag_ok(buf, len, key));
	memcpy(other, key, sizeof(other));
	other[15] ^= 1;
	CHECK(!rift__token_tag_ok(buf, len, other));
}

TEST(token_bad_layouts_are_refused_with_a_reason)
{
	struct rift__token t = sample(1), out;
	uint8_t buf[RIFT_TOKEN_MAX];
	size_t len = sizeof(buf);
	const char *why = NULL;

	CHECK_EQ(rift__token_encode(&t, key, buf, &len), 0);
	buf[0] = RIFT_TOKEN_VERSION + 1;
	CHECK_EQ(rift__token_decode(buf, len, &out, &why), RIFT_EINVAL);
	CHECK_CONTAINS(why, "version");
	buf[0] = RIFT_TOKEN_VERSION;
	buf[1] = 0;
	CHECK_EQ(rift__token_decode(buf, len, &out, &why), RIFT_EINVAL);
	CHECK_CONTAINS(why, "access");
	buf[1] = 4;
	CHECK_EQ(rift__token_decode(buf, len, &out, &why), RIFT_EINVAL);
	CHECK_CONTAINS(why, "access");
	buf[1] = RIFT_TOKEN_READ;
	/* 17 entries claimed: more than any token holds, whatever its size */
	buf[2] = 0;
	buf[3] = RIFT_TOKEN_ENTRIES_MAX + 1;
	CHECK_EQ(rift__token_decode(buf, len, &out, &why), RIFT_EINVAL);
	CHECK_CONTAINS(why, "entries");
	/* A range that wraps: encode refuses to make one, decode to take one */
	t = sample(0);
	t.base = UINT64_MAX - 10;
	t.len = 11;
	len = sizeof(buf);
	CHECK_EQ(rift__token_encode(&t, key, buf, &len), RIFT_EINVAL);
	t.len = 10;
	CHECK_EQ(rift__token_encode(&t, key, buf, &len), 0);
	buf[31] += 1; /* length 11 */
	CHECK_EQ(rift__token_decode(buf, len, &out, &why), RIFT_EINVAL);
	CHECK_CONTAINS(why, "wraps");
	t = sample(RIFT_TOKEN_ENTRIES_MAX);
	t.n = RIFT_TOKEN_ENTRIES_MAX + 1;
	len = sizeof(buf);
	CHECK_EQ(rift__token_encode(&t, key, buf, &len), RIFT_EINVAL);
}

TEST(token_allows_its_range_and_access_only)
{
	struct rift__token t = sample(0);
	const char *why = NULL;

	t.access = RIFT_TOKEN_READ;
	t.len = 4096;
	CHECK_EQ(rift__token_allows(&t, 0, 4096, RIFT_TOKEN_READ, &why), 0);
	CHECK_EQ(rift__token_allows(&t, 4095, 1, RIFT_TOKEN_READ, &why), 0);
	CHECK_EQ(rift__token_allows(&t, 4096, 0, RIFT_TOKEN_READ, &why), 0);
	CHECK_EQ(rift__token_allows(&t, 4095, 2, RIFT_TOKEN_READ, &why),
		 RIFT_EACCES);
	CHECK_CONTAINS(why, "range");
	CHECK_EQ(rift__token_allows(&t, 4097, 0, RIFT_TOKEN_READ, &why),
		 RIFT_EACCES);
	/* off + len would wrap to something small */
	CHECK_EQ(rift__token_allows(&t, 1, UINT64_MAX, RIFT_TOKEN_READ, &why),
		 RIFT_EACCES);
	CHECK_EQ(rift__token_allows(&t, 0, 1, RIFT_TOKEN_WRITE, &why),
		 RIFT_EACCES);
	CHECK_CONTAINS(why, "access");
	CHECK_EQ(rift__token_allows(&t, 0, 1, 0, &why), RIFT_EACCES);
}
