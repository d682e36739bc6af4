/* Wire codec: round trips and every kind of rejection. */
#include "internal.h"
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
	CHECK(!rift__hello_proves(b, RIFT_FRAME_RESUME, key)); /* zeros */
	rift__hello_seal(b, RIFT_FRAME_RESUME, key);
	CHECK(rift__hello_proves(b, RIFT_FRAME_RESUME, key));
	CHECK(!rift__hello_proves(b, RIFT_FRAME_RESUME_ACK, key));
	CHECK(!rift__hello_proves(b, RIFT_FRAME_RESUME, other));
	for (size_t i = 0; i < sizeof(b); i++) {
		b[i] ^= 0x01;
		if (rift__hello_proves(b, RIFT_FRAME_RESUME, key))
			FAIL("byte %zu changed, tag still passes", i);
		b[i] ^= 0x01;
	}
	CHECK(rift__hello_proves(b, RIFT_FRAME_RESUME, key));
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
