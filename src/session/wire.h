/*
 * wire.h - rift's frame format, shared by every transport.
 *
 * Every frame starts with a 24-byte header in network byte order:
 *
 *   0  u16 magic 0x5246 ("RF")     2  u8 version (1)    3  u8 type
 *   4  u32 payload length          8  u64 seq (DATA: message sequence)
 *  16  u64 ack (cumulative: highest sequence received in order)
 *
 * Over verbs a DATA frame may go bare, without this header, when the
 * QP's previous DATA frame says what it would (transports/verbs/rdma_int.h,
 * BARE_IMM).
 *
 * Control payloads have fixed sizes (ERROR has a bounded one), so a decoder
 * can reject any frame whose length does not fit its type before reading
 * the payload.  Decoders never trust a length: they check it against what
 * the type allows and against the configured maximum message size.
 */
#ifndef RIFT_SESSION_WIRE_H
#define RIFT_SESSION_WIRE_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RIFT_WIRE_MAGIC 0x5246u
#define RIFT_WIRE_VERSION 1u
#define RIFT_HDR_SIZE 24u
#define RIFT_ERROR_TEXT_MAX 200u

enum rift__frame_type {
	RIFT_FRAME_HELLO = 1,      /* client: new session */
	RIFT_FRAME_HELLO_ACK = 2,  /* server: session accepted */
	RIFT_FRAME_RESUME = 3,     /* client: re-attach session on this path */
	RIFT_FRAME_RESUME_ACK = 4, /* server: re-attached */
	RIFT_FRAME_DATA = 5,       /* one message */
	RIFT_FRAME_ACK = 6,        /* explicit cumulative ack */
	RIFT_FRAME_PING = 7,       /* keepalive */
	RIFT_FRAME_CLOSE = 8,      /* orderly end of the session */
	RIFT_FRAME_ERROR = 9,      /* fatal error, with code and text */
	RIFT_FRAME__MAX = 9,
};

struct rift__hdr {
	uint8_t type;
	uint32_t len;  /* payload bytes */
	uint64_t seq;
	uint64_t ack;
};

/* HELLO, HELLO_ACK, RESUME and RESUME_ACK share one payload. */
#define RIFT_HELLO_SIZE 48u
struct rift__hello {
	uint32_t proto;        /* protocol version spoken */
	uint32_t flags;        /* capabilities (none defined yet) */
	uint64_t session_id;   /* chosen by the client, never 0 */
	uint64_t recv_seq;     /* sender's highest seq delivered in order */
	uint64_t max_msg_size; /* largest message the sender accepts */
	uint64_t window;       /* sender's send window, bytes */
	/* Highest seq received in order, delivered or held while receiving
	 * is stopped (>= recv_seq).  Held messages need no resend, but they
	 * stay unacknowledged: they still count in the peer's window. */
	uint64_t held_seq;
};

struct rift__error_frame {
	int32_t code;                        /* RIFT_E* */
	char text[RIFT_ERROR_TEXT_MAX + 1];  /* NUL-terminated */
};

void rift__hdr_encode(uint8_t *out, const struct rift__hdr *h);

/*
 * Decode and validate a header from n bytes.  Returns 0, RIFT_EAGAIN when
 * n < RIFT_HDR_SIZE, or RIFT_EPROTO with *why set to a static reason (bad
 * magic, version, unknown type, a length the type does not allow or above
 * max_msg).
 */
int rift__hdr_decode(const uint8_t *in, size_t n, uint64_t max_msg,
		     struct rift__hdr *h, const char **why);

/*
 * The per-message case of rift__hdr_decode, inline: a DATA frame whose
 * payload fills exactly the n bytes given, and that rift__hdr_decode would
 * accept.  True with *h filled; false for anything else, which the caller
 * then hands to rift__hdr_decode to judge.
 */
static inline bool rift__hdr_data_exact(const uint8_t *in, size_t n,
					uint64_t max_msg, struct rift__hdr *h)
{
	/* magic, version and type in their wire order, big-endian */
	static const uint8_t lead[4] = { RIFT_WIRE_MAGIC >> 8,
					 RIFT_WIRE_MAGIC & 0xff,
					 RIFT_WIRE_VERSION, RIFT_FRAME_DATA };
	uint32_t w, want, len;
	uint64_t seq, ack;

	if (n < RIFT_HDR_SIZE)
		return false;
	memcpy(&w, in, 4);
	memcpy(&want, lead, 4);
	memcpy(&len, in + 4, 4);
	memcpy(&seq, in + 8, 8);
	memcpy(&ack, in + 16, 8);
	len = be32toh(len);
	seq = be64toh(seq);
	if (w != want || len != n - RIFT_HDR_SIZE || len > max_msg || seq == 0)
		return false;
	h->type = RIFT_FRAME_DATA;
	h->len = len;
	h->seq = seq;
	h->ack = be64toh(ack);
	return true;
}

size_t rift__hello_encode(uint8_t *out, const struct rift__hello *m);
/* Returns 0 or RIFT_EPROTO (wrong size, session id 0, bad proto,
 * held_seq below recv_seq). */
int rift__hello_decode(const uint8_t *in, size_t n, struct rift__hello *m,
		       const char **why);

/* Encodes code and text (cut at RIFT_ERROR_TEXT_MAX); returns bytes. */
size_t rift__error_encode(uint8_t *out, int32_t code, const char *text);
int rift__error_decode(const uint8_t *in, size_t n,
		       struct rift__error_frame *m, const char **why);

const char *rift__frame_name(unsigned type);

#endif
