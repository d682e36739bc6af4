/* Wire codec: round trips and every kind of rejection. */
#include "internal.h"
#include "util/secret.h"
#include "../runner.h"

static int decode(const uint8_t *b, size_t n, struct rift__hdr *h,
		  const char **why)
{
	return rift__hdr_decode(b, n, 1u << 20, h, why);
}

TEST(wire_header_round_trip)
{
	struct rift__hdr in = { .type = RIFT_FRAME_DATA, .len = 123456,
				.seq = 0x0102030405060708ull,
				.ack = 0xfffffffffffffffeull }, out;
	uint8_t b[RIFT_HDR_SIZE];
	const char *why = NULL;

	rift__hdr_encode(b, &in);
	CHECK_EQ(b[0], 0x52);
	CHECK_EQ(b[1], 0x46);
	CHECK_EQ(b[3], RIFT_FRAME_DATA);
	CHECK_EQ(decode(b, sizeof(b), &out, &why), 0);
	CHECK_EQ(out.type, in.type);
	CHECK_EQ(out.len, in.len);
	CHECK(out.seq == in.seq);
	CHECK(out.ack == in.ack);
}

TEST(wire_header_short_input_asks_for_more)
{
	uint8_t b[RIFT_HDR_SIZE] = { 0 };
	struct rift__hdr h;
	const char *why = NULL;

	for (size_t n = 0; n < RIFT_HDR_SIZE; n++)
		CHECK_EQ(decode(b, n, &h, &why), RIFT_EAGAIN);
}

static void expect_reject(struct rift__hdr in, int patch_at, uint8_t patch,
			  const char *reason)
{
	uint8_t b[RIFT_HDR_SIZE];
	struct rift__hdr out;
	const char *why = NULL;

	rift__hdr_encode(b, &in);
	if (patch_at >= 0)
		b[patch_at] = patch;
	CHECK_EQ(decode(b, sizeof(b), &out, &why), RIFT_EPROTO);
	CHECK(why != NULL);
	CHECK_CONTAINS(why, reason);
}

TEST(wire_header_rejections)
{
	struct rift__hdr ok = { .type = RIFT_FRAME_PING };
	struct rift__hdr h;

	expect_reject(ok, 0, 0x00, "magic");
	expect_reject(ok, 2, 7, "version");
	expect_reject(ok, 3, 0, "unknown frame type");
	expect_reject(ok, 3, RIFT_FRAME__MAX + 1, "unknown frame type");
	expect_reject(ok, 3, 200, "unknown frame type");
	h = (struct rift__hdr){ .type = RIFT_FRAME_DATA, .len = (1u << 20) + 1,
				.seq = 1 };
	expect_reject(h, -1, 0, "max_msg_size");
	h = (struct rift__hdr){ .type = RIFT_FRAME_DATA, .len = 1, .seq = 0 };
	expect_reject(h, -1, 0, "sequence 0");
	h = (struct rift__hdr){ .type = RIFT_FRAME_HELLO, .len = 39 };
	expect_reject(h, -1, 0, "wrong length");
	h = (struct rift__hdr){ .type = RIFT_FRAME_ACK, .len = 1 };
	expect_reject(h, -1, 0, "payload");
	h = (struct rift__hdr){ .type = RIFT_FRAME_ERROR, .len = 5 };
	expect_reject(h, -1, 0, "impossible length");
	h = (struct rift__hdr){ .type = RIFT_FRAME_ERROR, .len = 4000 };
	expect_reject(h, -1, 0, "impossible length");
}

TEST(wire_hello_round_trip_and_rejections)
{
	struct rift__hello in = { .proto = RIFT_WIRE_VERSION, .flags = 3,
				  .session_id = 42, .recv_seq = 7,
				  .max_msg_size = 1u << 26, .window = 1u << 24,
				  .held_seq = 9, .attach = 5,
				  .auth = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
					    13, 14, 15, 16 } },
			   out;
	uint8_t b[RIFT_HELLO_SIZE];
	const char *why = NULL;

	CHECK_EQ(rift__hello_encode(b, &in), RIFT_HELLO_SIZE);
	CHECK_EQ(rift__hello_decode(b, sizeof(b), &out, &why), 0);
	CHECK(out.session_id == 42 && out.recv_seq == 7 && out.flags == 3);
	CHECK(out.max_msg_size == in.max_msg_size && out.window == in.window);
	CHECK(out.held_seq == 9);
	CHECK(out.attach == 5);
	CHECK(memcmp(out.auth, in.auth, sizeof(in.auth)) == 0);
	CHECK_EQ(rift__hello_decode(b, sizeof(b) - 1, &out, &why), RIFT_EPROTO);
	in.session_id = 0;
	rift__hello_encode(b, &in);
	CHECK_EQ(rift__hello_decode(b, sizeof(b), &out, &why), RIFT_EPROTO);
	CHECK_CONTAINS(why, "session id 0");
	in.session_id = 1;
	in.proto = 99;
	rift__hello_encode(b, &in);
	CHECK_EQ(rift__hello_decode(b, sizeof(b), &out, &why), RIFT_EPROTO);
	in.proto = RIFT_WIRE_VERSION;
	in.window = 0;
	rift__hello_encode(b, &in);
	CHECK_EQ(rift__hello_decode(b, sizeof(b), &out, &why), RIFT_EPROTO);
	in.window = 1;
	in.held_seq = 6; /* holds less than it delivered: impossible */
	rift__hello_encode(b, &in);
	CHECK_EQ(rift__hello_decode(b, sizeof(b), &out, &why), RIFT_EPROTO);
	CHECK_CONTAINS(why, "holds fewer");
	/* The fallback reason (flags' low byte) must be one we know; the
	 * other bits are capabilities, ignored. */
	in.held_seq = 9;
	in.flags = 0xff00u | RIFT_FALLBACK_NO_DEVICE;
	rift__hello_encode(b, &in);
	CHECK_EQ(rift__hello_decode(b, sizeof(b), &out, &why), 0);
	CHECK_EQ(out.flags & RIFT_HELLO_FB_MASK, RIFT_FALLBACK_NO_DEVICE);
	in.flags = RIFT_FALLBACK__COUNT;
	rift__hello_encode(b, &in);
	CHECK_EQ(rift__hello_decode(b, sizeof(b), &out, &why), RIFT_EPROTO);
	CHECK_CONTAINS(why, "unknown fallback reason");
}

/* A version 1 peer (before the session secret) is refused at its first
 * header, and so is a version 1 handshake payload. */
TEST(wire_version_1_is_refused)
{
	struct rift__hdr h = { .type = RIFT_FRAME_HELLO, .len = 48 }, out;
	struct rift__hello m = { .proto = 1, .session_id = 1, .window = 1,
				 .max_msg_size = 1 };
	uint8_t b[RIFT_HELLO_SIZE];
	const char *why = NULL;

	CHECK_EQ(RIFT_WIRE_VERSION, 2);
	CHECK_EQ(RIFT_HELLO_SIZE, 72);
	rift__hdr_encode(b, &h);
	b[2] = 1;
	CHECK_EQ(decode(b, RIFT_HDR_SIZE, &out, &why), RIFT_EPROTO);
	CHECK_CONTAINS(why, "version");
	rift__hello_encode(b, &m);
	CHECK_EQ(rift__hello_decode(b, sizeof(b), &m, &why), RIFT_EPROTO);
}

/* The proof of a hello-sized handshake payload: the tag at byte 56. */
static bool hello_proves(const uint8_t *b, uint8_t type, const uint8_t *key)
{
	return rift__hello_proves(b, type, RIFT_HELLO_AUTH_AT, key);
}

/*
 * The proof of a RESUME (wire.h, "Who may attach a path"): the tag under
 * the session key passes; a change of any byte, of the frame type or of
 * the key fails.
 */
TEST(wire_resume_tag_proves_the_key_and_covers_every_field)
{
	struct rift__hello m = { .proto = RIFT_WIRE_VERSION, .session_id = 77,
				 .recv_seq = 3, .held_seq = 4, .window = 1,
				 .max_msg_size = 1, .attach = 2 };
	uint8_t key[RIFT_SESSION_KEY_LEN], other[RIFT_SESSION_KEY_LEN];
	uint8_t b[RIFT_HELLO_SIZE];

	for (size_t i = 0; i < sizeof(key); i++) {
		key[i] = (uint8_t)(0xa0 + i);
		other[i] = key[i];
	}
	other[15] ^= 1;
	rift__hello_encode(b, &m);
	CHECK(!hello_proves(b, RIFT_FRAME_RESUME, key)); /* zeros */
	rift__hello_seal(b, RIFT_FRAME_RESUME, RIFT_HELLO_AUTH_AT, key);
	CHECK(hello_proves(b, RIFT_FRAME_RESUME, key));
	CHECK(!hello_proves(b, RIFT_FRAME_RESUME_ACK, key));
	CHECK(!hello_proves(b, RIFT_FRAME_RESUME, other));
	for (size_t i = 0; i < sizeof(b); i++) {
		b[i] ^= 0x01;
		if (hello_proves(b, RIFT_FRAME_RESUME, key))
			FAIL("byte %zu changed, tag still passes", i);
		b[i] ^= 0x01;
	}
	CHECK(hello_proves(b, RIFT_FRAME_RESUME, key));
}

TEST(wire_error_frame)
{
	uint8_t b[6 + RIFT_ERROR_TEXT_MAX + 50];
	struct rift__error_frame ef;
	const char *why = NULL;
	char long_text[400];
	size_t n;

	n = rift__error_encode(b, RIFT_ESESSION, "no such\nsession");
	CHECK_EQ(rift__error_decode(b, n, &ef, &why), 0);
	CHECK_EQ(ef.code, RIFT_ESESSION);
	CHECK_STR(ef.text, "no such?session"); /* control chars neutralised */

	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	n = rift__error_encode(b, RIFT_EPROTO, long_text);
	CHECK_EQ(n, 6 + RIFT_ERROR_TEXT_MAX);
	CHECK_EQ(rift__error_decode(b, n, &ef, &why), 0);
	CHECK_EQ(strlen(ef.text), RIFT_ERROR_TEXT_MAX);

	n = rift__error_encode(b, RIFT_EPROTO, "abc");
	CHECK_EQ(rift__error_decode(b, n - 1, &ef, &why), RIFT_EPROTO);
	n = rift__error_encode(b, 5, "positive code");
	CHECK_EQ(rift__error_decode(b, n, &ef, &why), RIFT_EPROTO);
}

/* ---- port groups (docs/design/port-groups.md, section 2) ---- */

/* A header of that type and length: accepted when reason is NULL, else
 * refused saying reason. */
static void expect_len(uint8_t type, uint32_t len, const char *reason)
{
	struct rift__hdr in = { .type = type, .len = len }, out;
	uint8_t b[RIFT_HDR_SIZE];
	const char *why = NULL;
	int rc;

	rift__hdr_encode(b, &in);
	rc = decode(b, sizeof(b), &out, &why);
	if (!reason && rc != 0)
		FAIL("%s of %u bytes refused: %s", rift__frame_name(type), len,
		     why ? why : "(no reason)");
	if (!reason) {
		CHECK_EQ(out.type, type);
		CHECK_EQ(out.len, len);
		return;
	}
	if (rc != RIFT_EPROTO)
		FAIL("%s of %u bytes: %d, not refused (\"%s\")",
		     rift__frame_name(type), len, rc, reason);
	CHECK_CONTAINS(why, reason);
}

/* Each frame of RIFT_CAP_GROUP takes exactly the lengths the design's
 * table gives (2.2), and has a name; a type above them is unknown. */
TEST(wire_group_frame_lengths)
{
	static const uint8_t joins[] = { RIFT_FRAME_JOIN, RIFT_FRAME_JOIN_ACK };
	static const uint8_t probes[] = { RIFT_FRAME_PROBE,
					  RIFT_FRAME_PROBE_ACK };
	static const uint32_t bad_addrs[] = {
		0, 3, 5, 23, 25, 4 + 20 * 9, 4 + 20 * 8 + 1,
		4 + 20 * 200000000u, /* a multiple of 20 over 4 GB */
		0xffffffffu,
	};

	for (size_t i = 0; i < 2; i++) {
		expect_len(joins[i], 80, NULL);
		expect_len(joins[i], 0, "join frame of wrong length");
		expect_len(joins[i], RIFT_HELLO_SIZE, "join frame of wrong length");
		expect_len(joins[i], 79, "join frame of wrong length");
		expect_len(joins[i], 81, "join frame of wrong length");
		expect_len(probes[i], 0, NULL);
		expect_len(probes[i], 1, "probe frame with a payload");
		expect_len(probes[i], 80, "probe frame with a payload");
	}
	expect_len(RIFT_FRAME_PATH_CTL, 8, NULL);
	expect_len(RIFT_FRAME_PATH_CTL, 0, "path control frame of wrong length");
	expect_len(RIFT_FRAME_PATH_CTL, 7, "path control frame of wrong length");
	expect_len(RIFT_FRAME_PATH_CTL, 9, "path control frame of wrong length");
	for (uint32_t n = 0; n <= 8; n++)
		expect_len(RIFT_FRAME_ADDRS, 4 + 20 * n, NULL);
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(bad_addrs); i++)
		expect_len(RIFT_FRAME_ADDRS, bad_addrs[i],
			   "address list of impossible length");
	expect_len(RIFT_FRAME__MAX + 1, 0, "unknown frame type");

	CHECK_EQ(RIFT_FRAME__MAX, 16);
	CHECK_STR(rift__frame_name(RIFT_FRAME_JOIN), "JOIN");
	CHECK_STR(rift__frame_name(RIFT_FRAME_JOIN_ACK), "JOIN_ACK");
	CHECK_STR(rift__frame_name(RIFT_FRAME_PROBE), "PROBE");
	CHECK_STR(rift__frame_name(RIFT_FRAME_PROBE_ACK), "PROBE_ACK");
	CHECK_STR(rift__frame_name(RIFT_FRAME_PATH_CTL), "PATH_CTL");
	CHECK_STR(rift__frame_name(RIFT_FRAME_ADDRS), "ADDRS");
	CHECK_STR(rift__frame_name(RIFT_FRAME__MAX + 1), "UNKNOWN");
}

/* The capability bits sit above the fallback reason and travel through a
 * hello untouched, as do bits no one defined yet. */
TEST(wire_capability_bits)
{
	struct rift__hello in = { .proto = RIFT_WIRE_VERSION, .session_id = 1,
				  .max_msg_size = 1, .window = 1 },
			   out;
	uint8_t b[RIFT_HELLO_SIZE];
	const char *why = NULL;

	CHECK_EQ(RIFT_CAP_GROUP, 1u << 8);
	CHECK_EQ(RIFT_CAP_REORDER, 1u << 9);
	CHECK_EQ(RIFT_CAP_RMA, 1u << 11);
	CHECK_EQ(RIFT_HELLO_CAP_MASK, ~(uint32_t)RIFT_HELLO_FB_MASK);
	in.flags = RIFT_CAP_GROUP | RIFT_CAP_REORDER | (1u << 31) |
		   RIFT_FALLBACK_NO_DEVICE;
	rift__hello_encode(b, &in);
	CHECK_EQ(rift__hello_decode(b, sizeof(b), &out, &why), 0);
	CHECK_EQ(out.flags & RIFT_HELLO_CAP_MASK,
		 RIFT_CAP_GROUP | RIFT_CAP_REORDER | (1u << 31));
	CHECK_EQ(out.flags & RIFT_HELLO_FB_MASK, RIFT_FALLBACK_NO_DEVICE);
}

static struct rift__join join_of(void)
{
	return (struct rift__join){
		.hello = { .proto = RIFT_WIRE_VERSION,
			   .flags = RIFT_CAP_GROUP | RIFT_FALLBACK_NO_DEVICE,
			   .session_id = 42, .recv_seq = 7,
			   .max_msg_size = 1u << 26, .window = 1u << 24,
			   .held_seq = 9, .attach = 5,
			   .auth = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
				     14, 15, 16 } },
		.path_id = 3,
		.role_req = RIFT_JOIN_ACTIVE,
	};
}

/* A JOIN's bytes 0..55 are a hello's; then path id, role, zeros, tag. */
TEST(wire_join_round_trip)
{
	struct rift__join in = join_of(), out;
	uint8_t b[RIFT_JOIN_SIZE], h[RIFT_HELLO_SIZE];
	const char *why = NULL;

	memset(b, 0xee, sizeof(b)); /* the encoder writes the padding */
	CHECK_EQ(rift__join_encode(b, &in), RIFT_JOIN_SIZE);
	rift__hello_encode(h, &in.hello);
	CHECK(memcmp(b, h, RIFT_HELLO_AUTH_AT) == 0);
	CHECK_EQ(b[56], 3);
	CHECK_EQ(b[57], RIFT_JOIN_ACTIVE);
	for (size_t i = 58; i < RIFT_JOIN_AUTH_AT; i++)
		CHECK_EQ(b[i], 0);
	CHECK(memcmp(b + RIFT_JOIN_AUTH_AT, in.hello.auth, 16) == 0);

	CHECK_EQ(rift__join_decode(b, sizeof(b), &out, &why), 0);
	CHECK(out.hello.proto == in.hello.proto);
	CHECK(out.hello.flags == in.hello.flags);
	CHECK(out.hello.session_id == 42 && out.hello.recv_seq == 7);
	CHECK(out.hello.max_msg_size == in.hello.max_msg_size);
	CHECK(out.hello.window == in.hello.window);
	CHECK(out.hello.held_seq == 9 && out.hello.attach == 5);
	CHECK(memcmp(out.hello.auth, in.hello.auth, 16) == 0);
	CHECK_EQ(out.path_id, 3);
	CHECK_EQ(out.role_req, RIFT_JOIN_ACTIVE);

	/* The ends of the path ids, and a standby. */
	in.path_id = 1;
	in.role_req = RIFT_JOIN_STANDBY;
	rift__join_encode(b, &in);
	CHECK_EQ(rift__join_decode(b, sizeof(b), &out, &why), 0);
	CHECK_EQ(out.path_id, 1);
	CHECK_EQ(out.role_req, RIFT_JOIN_STANDBY);
	in.path_id = RIFT_PATH_ID_MAX;
	rift__join_encode(b, &in);
	CHECK_EQ(rift__join_decode(b, sizeof(b), &out, &why), 0);
	CHECK_EQ(out.path_id, 254);
}

/*
 * A JOIN with byte at set to v is refused, saying reason.  In bytes
 * 0..55 it is refused for what a hello is, in the same words: the same
 * checks.
 */
static void expect_join_refused(size_t at, uint8_t v, const char *reason)
{
	struct rift__join m = join_of(), out;
	struct rift__hello h;
	uint8_t b[RIFT_JOIN_SIZE], hb[RIFT_HELLO_SIZE];
	const char *why = NULL, *hello_why = NULL;

	rift__join_encode(b, &m);
	b[at] = v;
	if (rift__join_decode(b, sizeof(b), &out, &why) != RIFT_EPROTO)
		FAIL("a join with byte %zu = %u accepted", at, v);
	CHECK_CONTAINS(why, reason);
	if (at >= RIFT_HELLO_AUTH_AT)
		return;
	rift__hello_encode(hb, &m.hello);
	hb[at] = v;
	CHECK_EQ(rift__hello_decode(hb, sizeof(hb), &h, &hello_why),
		 RIFT_EPROTO);
	CHECK_STR(why, hello_why);
}

TEST(wire_join_refusals)
{
	struct rift__join m = join_of(), out;
	uint8_t b[RIFT_JOIN_SIZE + 1] = { 0 };
	const char *why = NULL;

	rift__join_encode(b, &m);
	CHECK_EQ(rift__join_decode(b, RIFT_JOIN_SIZE - 1, &out, &why),
		 RIFT_EPROTO);
	CHECK_CONTAINS(why, "join payload of wrong length");
	CHECK_EQ(rift__join_decode(b, RIFT_JOIN_SIZE + 1, &out, &why),
		 RIFT_EPROTO);
	CHECK_CONTAINS(why, "join payload of wrong length");
	CHECK_EQ(rift__join_decode(b, RIFT_HELLO_SIZE, &out, &why),
		 RIFT_EPROTO);

	expect_join_refused(56, 0, "path id 0");
	expect_join_refused(56, 255, "path id 255");
	expect_join_refused(57, 2, "role_req above 1");
	expect_join_refused(57, 255, "role_req above 1");
	for (size_t at = 58; at < RIFT_JOIN_AUTH_AT; at++)
		expect_join_refused(at, 0x80, "non-zero padding");
	/* The hello's part (big-endian: the low bytes are the last). */
	expect_join_refused(3, 99, "unsupported protocol version");
	expect_join_refused(7, RIFT_FALLBACK__COUNT, "unknown fallback reason");
	expect_join_refused(15, 0, "session id 0");     /* 42 -> 0 */
	expect_join_refused(36, 0, "zero size");        /* window 1 << 24 -> 0 */
	expect_join_refused(47, 6, "holds fewer");      /* held_seq 9 -> 6 */
}

/*
 * The tag of a JOIN covers its frame type and bytes 0..63 (path id, role
 * and padding included), at byte 64: it proves as that type only, not as
 * its answer's or a RESUME's, and not under another key.
 */
TEST(wire_join_tag_covers_its_type_and_every_byte)
{
	struct rift__join m = join_of();
	uint8_t key[RIFT_SESSION_KEY_LEN], other[RIFT_SESSION_KEY_LEN];
	uint8_t b[RIFT_JOIN_SIZE], in[1 + RIFT_JOIN_AUTH_AT];
	uint8_t tag[RIFT_SESSION_KEY_LEN];

	for (size_t i = 0; i < sizeof(key); i++)
		other[i] = key[i] = (uint8_t)(0x30 + 7 * i);
	other[0] ^= 0x80;
	rift__join_encode(b, &m);
	CHECK(!rift__hello_proves(b, RIFT_FRAME_JOIN, RIFT_JOIN_AUTH_AT, key));
	rift__hello_seal(b, RIFT_FRAME_JOIN, RIFT_JOIN_AUTH_AT, key);
	CHECK(rift__hello_proves(b, RIFT_FRAME_JOIN, RIFT_JOIN_AUTH_AT, key));
	CHECK(!rift__hello_proves(b, RIFT_FRAME_JOIN_ACK, RIFT_JOIN_AUTH_AT,
				  key));
	CHECK(!rift__hello_proves(b, RIFT_FRAME_RESUME, RIFT_JOIN_AUTH_AT,
				  key));
	CHECK(!rift__hello_proves(b, RIFT_FRAME_RESUME_ACK, RIFT_JOIN_AUTH_AT,
				  key));
	CHECK(!rift__hello_proves(b, RIFT_FRAME_JOIN, RIFT_JOIN_AUTH_AT,
				  other));

	/* What wire.h says it is. */
	in[0] = RIFT_FRAME_JOIN;
	memcpy(in + 1, b, RIFT_JOIN_AUTH_AT);
	rift__siphash(key, in, sizeof(in), tag, sizeof(tag));
	CHECK(memcmp(tag, b + RIFT_JOIN_AUTH_AT, sizeof(tag)) == 0);

	for (size_t i = 0; i < sizeof(b); i++) {
		b[i] ^= 0x01;
		if (rift__hello_proves(b, RIFT_FRAME_JOIN, RIFT_JOIN_AUTH_AT,
				       key))
			FAIL("byte %zu changed, the JOIN's tag still passes",
			     i);
		b[i] ^= 0x01;
	}

	/* The answer's own tag proves as the answer only. */
	rift__hello_seal(b, RIFT_FRAME_JOIN_ACK, RIFT_JOIN_AUTH_AT, key);
	CHECK(rift__hello_proves(b, RIFT_FRAME_JOIN_ACK, RIFT_JOIN_AUTH_AT,
				 key));
	CHECK(!rift__hello_proves(b, RIFT_FRAME_JOIN, RIFT_JOIN_AUTH_AT, key));
}

/* With the offset a parameter, a hello's tag is still SipHash over its
 * frame type and bytes 0..55, at byte 56: what peers already send. */
TEST(wire_hello_tag_is_unchanged)
{
	struct rift__hello m = { .proto = RIFT_WIRE_VERSION, .session_id = 9,
				 .recv_seq = 1, .held_seq = 2, .window = 3,
				 .max_msg_size = 4, .attach = 5 };
	uint8_t key[RIFT_SESSION_KEY_LEN], b[RIFT_HELLO_SIZE];
	uint8_t in[1 + RIFT_HELLO_AUTH_AT], tag[RIFT_SESSION_KEY_LEN];
	const uint8_t types[] = { RIFT_FRAME_RESUME, RIFT_FRAME_RESUME_ACK };

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(0xc0 ^ i);
	for (size_t t = 0; t < sizeof(types); t++) {
		rift__hello_encode(b, &m);
		rift__hello_seal(b, types[t], RIFT_HELLO_AUTH_AT, key);
		in[0] = types[t];
		memcpy(in + 1, b, RIFT_HELLO_AUTH_AT);
		rift__siphash(key, in, sizeof(in), tag, sizeof(tag));
		CHECK(memcmp(tag, b + RIFT_HELLO_AUTH_AT, sizeof(tag)) == 0);
		CHECK(hello_proves(b, types[t], key));
	}
}

/* Take counter c: accepted when reason is NULL; else refused saying
 * reason, the window unchanged. */
static void take(struct rift__replay_win *w, uint64_t c, const char *reason)
{
	struct rift__replay_win before = *w;
	const char *why = NULL;
	bool ok = rift__replay_check_and_set(w, c, &why);

	if (!reason && !ok)
		FAIL("counter %llu refused (highest %llu): %s",
		     (unsigned long long)c, (unsigned long long)before.hi, why);
	if (!reason)
		return;
	if (ok)
		FAIL("counter %llu accepted (highest %llu), not refused: %s",
		     (unsigned long long)c, (unsigned long long)before.hi,
		     reason);
	CHECK_CONTAINS(why, reason);
	CHECK(w->hi == before.hi && w->bits == before.bits);
}

/*
 * The JOINs' anti-replay window (port-groups.md 2.3): a counter above the
 * highest, or one of the 63 below it not taken yet, is taken once; 0, a
 * counter taken, and one 64 or more below the highest are refused.
 */
TEST(wire_replay_window)
{
	struct rift__replay_win w = { 0 };

	take(&w, 0, "counter 0");
	take(&w, 1, NULL); /* in order */
	take(&w, 2, NULL);
	take(&w, 2, "already used");
	take(&w, 1, "already used");
	take(&w, 5, NULL); /* 3 and 4 late: out of order, once each */
	take(&w, 4, NULL);
	take(&w, 3, NULL);
	take(&w, 3, "already used");
	take(&w, 4, "already used");
	take(&w, 0, "counter 0");

	take(&w, 100, NULL);
	take(&w, 37, NULL); /* 100 - 63: the oldest the window holds */
	take(&w, 36, "too old");
	take(&w, 5, "too old");
	take(&w, 37, "already used");
	take(&w, 99, NULL);
	take(&w, 100, "already used");
	/* A step of less than the window keeps what it held ... */
	take(&w, 110, NULL);
	take(&w, 99, "already used");
	take(&w, 100, "already used");
	take(&w, 98, NULL);
	take(&w, 47, NULL); /* 110 - 63 */
	take(&w, 46, "too old");
	/* ... a step of the window or more forgets it all. */
	take(&w, 110 + 64, NULL);
	take(&w, 111, NULL);
	take(&w, 110, "too old");
	take(&w, 1000, NULL);
	take(&w, 999, NULL);
	take(&w, 174, "too old");

	take(&w, UINT64_MAX, NULL);
	take(&w, UINT64_MAX, "already used");
	take(&w, UINT64_MAX - 63, NULL);
	take(&w, UINT64_MAX - 64, "too old");
	CHECK(w.hi == UINT64_MAX);
}

/* PATH_CTL (active-active): op, path id, the reason big-endian in two
 * bytes, four bytes of zeros; what is encoded decodes the same. */
TEST(wire_path_ctl_round_trip)
{
	struct rift__path_ctl m = { .op = RIFT_PATH_CTL_DOWN, .path_id = 7,
				    .reason = 0x0102 }, back;
	uint8_t b[RIFT_PATH_CTL_SIZE + 1];
	const uint8_t want[RIFT_PATH_CTL_SIZE] = { 1, 7, 1, 2, 0, 0, 0, 0 };

	memset(b, 0xee, sizeof(b));
	CHECK_EQ(rift__path_ctl_encode(b, &m), RIFT_PATH_CTL_SIZE);
	CHECK(memcmp(b, want, sizeof(want)) == 0);
	CHECK_EQ(b[RIFT_PATH_CTL_SIZE], 0xee);
	rift__path_ctl_decode(b, &back);
	CHECK_EQ(back.op, m.op);
	CHECK_EQ(back.path_id, m.path_id);
	CHECK_EQ(back.reason, m.reason);
}

/* RMA frames (RIFT_CAP_RMA): the header's length rules, then the
 * payload's codec, each rule refused. */
TEST(wire_rma_frame_header_rules)
{
	struct rift__hdr h;

	h = (struct rift__hdr){ .type = RIFT_FRAME_RMA, .len = RIFT_RMA_HEAD - 1,
				.seq = 1 };
	expect_reject(h, -1, 0, "shorter than its head");
	h = (struct rift__hdr){ .type = RIFT_FRAME_RMA, .len = (1u << 20) + 1,
				.seq = 1 };
	expect_reject(h, -1, 0, "max_msg_size");
	h = (struct rift__hdr){ .type = RIFT_FRAME_RMA, .len = RIFT_RMA_HEAD };
	expect_reject(h, -1, 0, "sequence 0");
	CHECK(rift__frame_sequenced(RIFT_FRAME_RMA));
	CHECK(rift__frame_sequenced(RIFT_FRAME_DATA));
	CHECK(!rift__frame_sequenced(RIFT_FRAME_ACK));
	CHECK(strcmp(rift__frame_name(RIFT_FRAME_RMA), "RMA") == 0);
}

static size_t rma_build(uint8_t *b, const struct rift__rma_hdr *m,
			size_t data_len)
{
	rift__rma_hdr_encode(b, m);
	memset(b + RIFT_RMA_HEAD, 0x5a, m->tok_len + data_len);
	return RIFT_RMA_HEAD + m->tok_len + data_len;
}

static void rma_reject(const struct rift__rma_hdr *m, size_t data_len,
		       int patch_at, uint8_t patch, const char *reason)
{
	static uint8_t b[RIFT_RMA_HEAD + RIFT_TOKEN_MAX + 4096];
	struct rift__rma_hdr out;
	const char *why = NULL;
	size_t n = rma_build(b, m, data_len);

	if (patch_at >= 0)
		b[patch_at] = patch;
	CHECK_EQ(rift__rma_hdr_decode(b, n, &out, &why), RIFT_EPROTO);
	CHECK(why != NULL);
	CHECK_CONTAINS(why, reason);
}

TEST(wire_rma_payload_round_trip_and_rejections)
{
	static uint8_t b[RIFT_RMA_HEAD + RIFT_TOKEN_MAX + 4096];
	struct rift__rma_hdr m = { .op = RIFT_RMA_WRITE, .tok_len = 48,
				   .id = 0x0102030405060708ull, .off = 100,
				   .len = 1000, .tag = 0xfeedull },
			     out;
	const char *why = NULL;
	size_t n = rma_build(b, &m, 1000);

	CHECK_EQ(rift__rma_hdr_decode(b, n, &out, &why), 0);
	CHECK_EQ(out.op, RIFT_RMA_WRITE);
	CHECK_EQ(out.tok_len, 48);
	CHECK(out.id == m.id && out.off == 100 && out.len == 1000 &&
	      out.tag == 0xfeed);
	CHECK(out.tok == b + RIFT_RMA_HEAD);
	CHECK(out.data == b + RIFT_RMA_HEAD + 48);
	CHECK_EQ(out.data_len, 1000);
	/* A refused read answers with its status and no data. */
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_READ_RESP,
				    .status = RIFT_EACCES, .len = 64 };
	n = rma_build(b, &m, 0);
	CHECK_EQ(rift__rma_hdr_decode(b, n, &out, &why), 0);
	CHECK_EQ(out.status, RIFT_EACCES);
	CHECK_EQ(out.data_len, 0);

	CHECK_EQ(rift__rma_hdr_decode(b, RIFT_RMA_HEAD - 1, &out, &why),
		 RIFT_EPROTO);
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_WRITE, .tok_len = 48,
				    .len = 10 };
	rma_reject(&m, 10, 0, 0, "unknown op");
	rma_reject(&m, 10, 0, 8, "unknown op");
	rma_reject(&m, 10, 1, 1, "reserved");
	rma_reject(&m, 9, -1, 0, "not the length it says");
	rma_reject(&m, 11, -1, 0, "not the length it says");
	m.tok_len = 0;
	rma_reject(&m, 10, -1, 0, "without a token");
	m.tok_len = RIFT_TOKEN_MAX + 1;
	rma_reject(&m, 10, -1, 0, "longer than a token");
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_READ_REQ, .tok_len = 48,
				    .len = 10 };
	rma_reject(&m, 10, -1, 0, "not the length"); /* a request has none */
	m.off = UINT64_MAX - 5;
	rma_reject(&m, 0, -1, 0, "wraps");
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_WRITE_ACK, .tok_len = 48 };
	rma_reject(&m, 0, -1, 0, "with a token");
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_READ_RESP, .len = 4 };
	rma_reject(&m, 3, -1, 0, "not the length");
	m.status = 5;
	rma_reject(&m, 0, -1, 0, "status");
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_REVOKED,
				    .status = RIFT_EACCES };
	rma_reject(&m, 0, -1, 0, "status");
	/* KEYS: a 32-bit export id and key, no length, no status. */
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_KEYS, .id = 7, .off = 3,
				    .tag = 0xabcdef01u };
	n = rma_build(b, &m, 0);
	CHECK_EQ(rift__rma_hdr_decode(b, n, &out, &why), 0);
	CHECK_EQ(out.id, 7);
	CHECK_EQ(out.off, 3);
	CHECK_EQ(out.tag, 0xabcdef01u);
	m.tag = 1ull << 32;
	rma_reject(&m, 0, -1, 0, "over 32 bits");
	m.tag = 1;
	m.id = 1ull << 32;
	rma_reject(&m, 0, -1, 0, "over 32 bits");
	m.id = 1;
	m.len = 4;
	rma_reject(&m, 0, -1, 0, "or a length");
	m.len = 0;
	m.status = RIFT_EACCES;
	rma_reject(&m, 0, -1, 0, "status");
	m.status = 0;
	m.tok_len = 48;
	rma_reject(&m, 0, -1, 0, "with a token");
	/* The head claims a token longer than the frame. */
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_NOTIFY, .tok_len = 200 };
	rift__rma_hdr_encode(b, &m);
	CHECK_EQ(rift__rma_hdr_decode(b, RIFT_RMA_HEAD + 100, &out, &why),
		 RIFT_EPROTO);
	CHECK_CONTAINS(why, "longer than a token or its frame");
}
