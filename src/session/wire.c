/*
 * wire.c - encode and validate rift frames.  See wire.h for the layout.
 */
#include <endian.h>
#include <string.h>

#include "internal.h"
#include "util/secret.h"

/* Big-endian fields through single loads and stores: a frame header is
 * encoded and decoded once per message. */
static void put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

void rift__hdr_encode(uint8_t *out, const struct rift__hdr *h)
{
	put16(out, RIFT_WIRE_MAGIC);
	out[2] = RIFT_WIRE_VERSION;
	out[3] = h->type;
	put32(out + 4, h->len);
	put64(out + 8, h->seq);
	put64(out + 16, h->ack);
}

int rift__hdr_decode(const uint8_t *in, size_t n, uint64_t max_msg,
		     struct rift__hdr *h, const char **why)
{
	if (n < RIFT_HDR_SIZE)
		return RIFT_EAGAIN;
	if (get16(in) != RIFT_WIRE_MAGIC) {
		*why = "bad magic";
		return RIFT_EPROTO;
	}
	if (in[2] != RIFT_WIRE_VERSION) {
		*why = "unsupported frame version";
		return RIFT_EPROTO;
	}
	h->type = in[3];
	h->len = get32(in + 4);
	h->seq = get64(in + 8);
	h->ack = get64(in + 16);

	switch (h->type) {
	case RIFT_FRAME_HELLO:
	case RIFT_FRAME_HELLO_ACK:
	case RIFT_FRAME_RESUME:
	case RIFT_FRAME_RESUME_ACK:
		if (h->len != RIFT_HELLO_SIZE) {
			*why = "handshake frame of wrong length";
			return RIFT_EPROTO;
		}
		break;
	case RIFT_FRAME_DATA:
		if (h->len > max_msg) {
			*why = "message longer than max_msg_size";
			return RIFT_EPROTO;
		}
		if (h->seq == 0) {
			*why = "data frame with sequence 0";
			return RIFT_EPROTO;
		}
		break;
	case RIFT_FRAME_ACK:
	case RIFT_FRAME_PING:
	case RIFT_FRAME_CLOSE:
		if (h->len != 0) {
			*why = "control frame with a payload";
			return RIFT_EPROTO;
		}
		break;
	case RIFT_FRAME_ERROR:
		if (h->len < 6 || h->len > 6 + RIFT_ERROR_TEXT_MAX) {
			*why = "error frame of impossible length";
			return RIFT_EPROTO;
		}
		break;
	default:
		*why = "unknown frame type";
		return RIFT_EPROTO;
	}
	return 0;
}

size_t rift__hello_encode(uint8_t *out, const struct rift__hello *m)
{
	put32(out, m->proto);
	put32(out + 4, m->flags);
	put64(out + 8, m->session_id);
	put64(out + 16, m->recv_seq);
	put64(out + 24, m->max_msg_size);
	put64(out + 32, m->window);
	put64(out + 40, m->held_seq);
	put64(out + 48, m->attach);
	memcpy(out + RIFT_HELLO_AUTH_AT, m->auth, RIFT_SESSION_KEY_LEN);
	return RIFT_HELLO_SIZE;
}

int rift__hello_decode(const uint8_t *in, size_t n, struct rift__hello *m,
		       const char **why)
{
	if (n != RIFT_HELLO_SIZE) {
		*why = "handshake payload of wrong length";
		return RIFT_EPROTO;
	}
	m->proto = get32(in);
	m->flags = get32(in + 4);
	m->session_id = get64(in + 8);
	m->recv_seq = get64(in + 16);
	m->max_msg_size = get64(in + 24);
	m->window = get64(in + 32);
	m->held_seq = get64(in + 40);
	m->attach = get64(in + 48);
	memcpy(m->auth, in + RIFT_HELLO_AUTH_AT, RIFT_SESSION_KEY_LEN);
	if (m->proto != RIFT_WIRE_VERSION) {
		*why = "unsupported protocol version in handshake";
		return RIFT_EPROTO;
	}
	if (m->session_id == 0) {
		*why = "handshake with session id 0";
		return RIFT_EPROTO;
	}
	if ((m->flags & RIFT_HELLO_FB_MASK) >= RIFT_FALLBACK__COUNT) {
		*why = "handshake with an unknown fallback reason";
		return RIFT_EPROTO;
	}
	if (m->max_msg_size == 0 || m->window == 0) {
		*why = "handshake advertises a zero size";
		return RIFT_EPROTO;
	}
	if (m->held_seq < m->recv_seq) {
		*why = "handshake holds fewer messages than it delivered";
		return RIFT_EPROTO;
	}
	return 0;
}

_Static_assert(RIFT_SESSION_KEY_LEN == RIFT_SIPHASH_KEY_LEN,
	       "a session key keys SipHash");
_Static_assert(RIFT_HELLO_AUTH_AT + RIFT_SESSION_KEY_LEN == RIFT_HELLO_SIZE,
	       "the auth field ends the handshake payload");

/* The tag of a handshake payload: the frame type keeps a RESUME's tag
 * from passing as its RESUME_ACK's (or the other way round). */
static void hello_tag(const uint8_t *payload, uint8_t type,
		      const uint8_t key[RIFT_SESSION_KEY_LEN],
		      uint8_t tag[RIFT_SESSION_KEY_LEN])
{
	uint8_t in[1 + RIFT_HELLO_AUTH_AT];

	in[0] = type;
	memcpy(in + 1, payload, RIFT_HELLO_AUTH_AT);
	rift__siphash(key, in, sizeof(in), tag, RIFT_SESSION_KEY_LEN);
}

void rift__hello_seal(uint8_t *payload, uint8_t type,
		      const uint8_t key[RIFT_SESSION_KEY_LEN])
{
	hello_tag(payload, type, key, payload + RIFT_HELLO_AUTH_AT);
}

bool rift__hello_proves(const uint8_t *payload, uint8_t type,
			const uint8_t key[RIFT_SESSION_KEY_LEN])
{
	uint8_t tag[RIFT_SESSION_KEY_LEN];

	hello_tag(payload, type, key, tag);
	return rift__ct_equal(tag, payload + RIFT_HELLO_AUTH_AT, sizeof(tag));
}

size_t rift__error_encode(uint8_t *out, int32_t code, const char *text)
{
	size_t tl = strlen(text);

	if (tl > RIFT_ERROR_TEXT_MAX)
		tl = RIFT_ERROR_TEXT_MAX;
	put32(out, (uint32_t)code);
	put16(out + 4, (uint16_t)tl);
	memcpy(out + 6, text, tl);
	return 6 + tl;
}

int rift__error_decode(const uint8_t *in, size_t n,
		       struct rift__error_frame *m, const char **why)
{
	size_t tl;

	if (n < 6 || n > 6 + RIFT_ERROR_TEXT_MAX) {
		*why = "error payload of impossible length";
		return RIFT_EPROTO;
	}
	tl = get16(in + 4);
	if (tl != n - 6) {
		*why = "error text length does not match the frame";
		return RIFT_EPROTO;
	}
	m->code = (int32_t)get32(in);
	if (m->code >= 0) {
		*why = "error frame with a non-negative code";
		return RIFT_EPROTO;
	}
	memcpy(m->text, in + 6, tl);
	m->text[tl] = '\0';
	/* The text reaches logs and events: keep it printable. */
	for (size_t i = 0; i < tl; i++)
		if ((unsigned char)m->text[i] < 0x20 ||
		    (unsigned char)m->text[i] > 0x7e)
			m->text[i] = '?';
	return 0;
}

const char *rift__frame_name(unsigned type)
{
	static const char *const names[] = {
		[RIFT_FRAME_HELLO] = "HELLO",   [RIFT_FRAME_HELLO_ACK] = "HELLO_ACK",
		[RIFT_FRAME_RESUME] = "RESUME", [RIFT_FRAME_RESUME_ACK] = "RESUME_ACK",
		[RIFT_FRAME_DATA] = "DATA",     [RIFT_FRAME_ACK] = "ACK",
		[RIFT_FRAME_PING] = "PING",     [RIFT_FRAME_CLOSE] = "CLOSE",
		[RIFT_FRAME_ERROR] = "ERROR",
	};
	if (type == 0 || type > RIFT_FRAME__MAX)
		return "UNKNOWN";
	return names[type];
}
