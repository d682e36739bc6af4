/*
 * wire.c - encode and validate rift frames.  See wire.h for the layout.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "util/be.h"
#include "util/secret.h"

void rift__hdr_encode(uint8_t *out, const struct rift__hdr *h)
{
	rift__put16(out, RIFT_WIRE_MAGIC);
	out[2] = RIFT_WIRE_VERSION;
	out[3] = h->type;
	rift__put32(out + 4, h->len);
	rift__put64(out + 8, h->seq);
	rift__put64(out + 16, h->ack);
}

int rift__hdr_decode(const uint8_t *in, size_t n, uint64_t max_msg,
		     struct rift__hdr *h, const char **why)
{
	if (n < RIFT_HDR_SIZE)
		return RIFT_EAGAIN;
	if (rift__get16(in) != RIFT_WIRE_MAGIC) {
		*why = "bad magic";
		return RIFT_EPROTO;
	}
	if (in[2] != RIFT_WIRE_VERSION) {
		*why = "unsupported frame version";
		return RIFT_EPROTO;
	}
	h->type = in[3];
	h->len = rift__get32(in + 4);
	h->seq = rift__get64(in + 8);
	h->ack = rift__get64(in + 16);

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
	case RIFT_FRAME_JOIN:
	case RIFT_FRAME_JOIN_ACK:
		if (h->len != RIFT_JOIN_SIZE) {
			*why = "join frame of wrong length (not 80 bytes)";
			return RIFT_EPROTO;
		}
		break;
	case RIFT_FRAME_PROBE:
	case RIFT_FRAME_PROBE_ACK:
		if (h->len != 0) {
			*why = "probe frame with a payload";
			return RIFT_EPROTO;
		}
		break;
	case RIFT_FRAME_PATH_CTL:
		if (h->len != RIFT_PATH_CTL_SIZE) {
			*why = "path control frame of wrong length (not 8 bytes)";
			return RIFT_EPROTO;
		}
		break;
	case RIFT_FRAME_ADDRS:
		/* Whether the count the payload starts with matches is the
		 * payload's decoder's check: no payload is read here. */
		if (h->len < RIFT_ADDRS_HEAD ||
		    (h->len - RIFT_ADDRS_HEAD) % RIFT_ADDR_SIZE != 0 ||
		    (h->len - RIFT_ADDRS_HEAD) / RIFT_ADDR_SIZE > RIFT_ADDRS_MAX) {
			*why = "address list of impossible length (not 4 + 20 n "
			       "bytes with n at most 8)";
			return RIFT_EPROTO;
		}
		break;
	case RIFT_FRAME_RMA:
		/* Its payload's own checks are rift__rma_hdr_decode's. */
		if (h->len < RIFT_RMA_HEAD || h->len > max_msg) {
			*why = "RMA frame shorter than its head or longer than "
			       "max_msg_size";
			return RIFT_EPROTO;
		}
		if (h->seq == 0) {
			*why = "RMA frame with sequence 0";
			return RIFT_EPROTO;
		}
		break;
	default:
		*why = "unknown frame type";
		return RIFT_EPROTO;
	}
	return 0;
}

/* Bytes 0..55 of a handshake payload: a hello's, and a JOIN's. */
static void hello_put(uint8_t *out, const struct rift__hello *m)
{
	rift__put32(out, m->proto);
	rift__put32(out + 4, m->flags);
	rift__put64(out + 8, m->session_id);
	rift__put64(out + 16, m->recv_seq);
	rift__put64(out + 24, m->max_msg_size);
	rift__put64(out + 32, m->window);
	rift__put64(out + 40, m->held_seq);
	rift__put64(out + 48, m->attach);
}

size_t rift__hello_encode(uint8_t *out, const struct rift__hello *m)
{
	hello_put(out, m);
	memcpy(out + RIFT_HELLO_AUTH_AT, m->auth, RIFT_SESSION_KEY_LEN);
	return RIFT_HELLO_SIZE;
}

/* Read bytes 0..55 of a handshake payload into m (all but auth) and judge
 * them. */
static int hello_get(const uint8_t *in, struct rift__hello *m,
		     const char **why)
{
	m->proto = rift__get32(in);
	m->flags = rift__get32(in + 4);
	m->session_id = rift__get64(in + 8);
	m->recv_seq = rift__get64(in + 16);
	m->max_msg_size = rift__get64(in + 24);
	m->window = rift__get64(in + 32);
	m->held_seq = rift__get64(in + 40);
	m->attach = rift__get64(in + 48);
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

int rift__hello_decode(const uint8_t *in, size_t n, struct rift__hello *m,
		       const char **why)
{
	if (n != RIFT_HELLO_SIZE) {
		*why = "handshake payload of wrong length";
		return RIFT_EPROTO;
	}
	memcpy(m->auth, in + RIFT_HELLO_AUTH_AT, RIFT_SESSION_KEY_LEN);
	return hello_get(in, m, why);
}

/* A JOIN's fields after the hello's bytes (wire.h).  The padding is
 * zero, so that a later version may give it a meaning. */
#define JOIN_PATH_ID_AT 56u
#define JOIN_ROLE_AT 57u
#define JOIN_PAD_AT 58u

size_t rift__join_encode(uint8_t *out, const struct rift__join *m)
{
	hello_put(out, &m->hello);
	out[JOIN_PATH_ID_AT] = m->path_id;
	out[JOIN_ROLE_AT] = m->role_req;
	memset(out + JOIN_PAD_AT, 0, RIFT_JOIN_AUTH_AT - JOIN_PAD_AT);
	memcpy(out + RIFT_JOIN_AUTH_AT, m->hello.auth, RIFT_SESSION_KEY_LEN);
	return RIFT_JOIN_SIZE;
}

int rift__join_decode(const uint8_t *in, size_t n, struct rift__join *m,
		      const char **why)
{
	static const uint8_t zeros[RIFT_JOIN_AUTH_AT - JOIN_PAD_AT];
	int rc;

	if (n != RIFT_JOIN_SIZE) {
		*why = "join payload of wrong length (not 80 bytes)";
		return RIFT_EPROTO;
	}
	rc = hello_get(in, &m->hello, why);
	if (rc)
		return rc;
	m->path_id = in[JOIN_PATH_ID_AT];
	m->role_req = in[JOIN_ROLE_AT];
	memcpy(m->hello.auth, in + RIFT_JOIN_AUTH_AT, RIFT_SESSION_KEY_LEN);
	if (m->path_id == 0) {
		*why = "join with path id 0 (the session's first path)";
		return RIFT_EPROTO;
	}
	if (m->path_id > RIFT_PATH_ID_MAX) {
		*why = "join with path id 255 (above 254)";
		return RIFT_EPROTO;
	}
	if (m->role_req > RIFT_JOIN_ACTIVE) {
		*why = "join with a role_req above 1 (0 standby, 1 active)";
		return RIFT_EPROTO;
	}
	if (memcmp(in + JOIN_PAD_AT, zeros, sizeof(zeros)) != 0) {
		*why = "join with non-zero padding (bytes 58..63)";
		return RIFT_EPROTO;
	}
	return 0;
}

_Static_assert(RIFT_SESSION_KEY_LEN == RIFT_SIPHASH_KEY_LEN,
	       "a session key keys SipHash");
_Static_assert(RIFT_HELLO_AUTH_AT + RIFT_SESSION_KEY_LEN == RIFT_HELLO_SIZE,
	       "the auth field ends the handshake payload");
_Static_assert(RIFT_JOIN_AUTH_AT + RIFT_SESSION_KEY_LEN == RIFT_JOIN_SIZE,
	       "the tag ends the join payload");
_Static_assert((RIFT_HELLO_CAP_MASK & RIFT_HELLO_FB_MASK) == 0 &&
		       (RIFT_HELLO_CAP_MASK | RIFT_HELLO_FB_MASK) == 0xffffffffu,
	       "a flag is a fallback reason's or a capability's");

/* The tag of a handshake payload, over the bytes before auth_at: the
 * frame type keeps a RESUME's tag from passing as its RESUME_ACK's, or as
 * a JOIN's (or the other way round). */
static void hello_tag(const uint8_t *payload, uint8_t type, size_t auth_at,
		      const uint8_t key[RIFT_SESSION_KEY_LEN],
		      uint8_t tag[RIFT_SESSION_KEY_LEN])
{
	uint8_t in[1 + RIFT_JOIN_AUTH_AT]; /* the larger of the two */

	if (auth_at != RIFT_HELLO_AUTH_AT && auth_at != RIFT_JOIN_AUTH_AT)
		abort(); /* a caller's bug: no other payload carries a tag */
	in[0] = type;
	memcpy(in + 1, payload, auth_at);
	rift__siphash(key, in, 1 + auth_at, tag, RIFT_SESSION_KEY_LEN);
}

void rift__hello_seal(uint8_t *payload, uint8_t type, size_t auth_at,
		      const uint8_t key[RIFT_SESSION_KEY_LEN])
{
	hello_tag(payload, type, auth_at, key, payload + auth_at);
}

bool rift__hello_proves(const uint8_t *payload, uint8_t type, size_t auth_at,
			const uint8_t key[RIFT_SESSION_KEY_LEN])
{
	uint8_t tag[RIFT_SESSION_KEY_LEN];

	hello_tag(payload, type, auth_at, key, tag);
	return rift__ct_equal(tag, payload + auth_at, sizeof(tag));
}

bool rift__replay_check(const struct rift__replay_win *w, uint64_t c)
{
	struct rift__replay_win copy = *w;
	const char *why;

	return rift__replay_check_and_set(&copy, c, &why);
}

bool rift__replay_check_and_set(struct rift__replay_win *w, uint64_t c,
				const char **why)
{
	uint64_t behind;

	if (c == 0) {
		*why = "attach counter 0 (counters start at 1)";
		return false;
	}
	if (c > w->hi) {
		uint64_t ahead = c - w->hi;

		/* A shift by the word's width or more is undefined: such a
		 * jump leaves nothing of the old window anyway. */
		w->bits = ahead < RIFT_REPLAY_WIN ? (w->bits << ahead) | 1 : 1;
		w->hi = c;
		return true;
	}
	behind = w->hi - c;
	if (behind >= RIFT_REPLAY_WIN) {
		*why = "attach counter too old (64 or more below the highest "
		       "accepted)";
		return false;
	}
	if (w->bits & (1ull << behind)) {
		*why = "attach counter already used";
		return false;
	}
	w->bits |= 1ull << behind;
	return true;
}

size_t rift__path_ctl_encode(uint8_t *out, const struct rift__path_ctl *m)
{
	out[0] = m->op;
	out[1] = m->path_id;
	rift__put16(out + 2, m->reason);
	rift__put32(out + 4, 0);
	return RIFT_PATH_CTL_SIZE;
}

void rift__path_ctl_decode(const uint8_t *in, struct rift__path_ctl *m)
{
	m->op = in[0];
	m->path_id = in[1];
	m->reason = rift__get16(in + 2);
}

size_t rift__error_encode(uint8_t *out, int32_t code, const char *text)
{
	size_t tl = strlen(text);

	if (tl > RIFT_ERROR_TEXT_MAX)
		tl = RIFT_ERROR_TEXT_MAX;
	rift__put32(out, (uint32_t)code);
	rift__put16(out + 4, (uint16_t)tl);
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
	tl = rift__get16(in + 4);
	if (tl != n - 6) {
		*why = "error text length does not match the frame";
		return RIFT_EPROTO;
	}
	m->code = (int32_t)rift__get32(in);
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
		[RIFT_FRAME_ERROR] = "ERROR",   [RIFT_FRAME_JOIN] = "JOIN",
		[RIFT_FRAME_JOIN_ACK] = "JOIN_ACK",
		[RIFT_FRAME_PROBE] = "PROBE",   [RIFT_FRAME_PROBE_ACK] = "PROBE_ACK",
		[RIFT_FRAME_PATH_CTL] = "PATH_CTL",
		[RIFT_FRAME_ADDRS] = "ADDRS",   [RIFT_FRAME_RMA] = "RMA",
	};
	_Static_assert(RIFT_ARRAY_SIZE(names) == RIFT_FRAME__MAX + 1,
		       "a name for every frame type");
	if (type == 0 || type > RIFT_FRAME__MAX)
		return "UNKNOWN";
	return names[type];
}

/* ---- one-sided access tokens (wire.h) ---- */

static int token_check(const struct rift__token *t, const char **why)
{
	if (!t->access || (t->access & ~(RIFT_TOKEN_READ | RIFT_TOKEN_WRITE))) {
		*why = "access is neither READ nor WRITE";
		return RIFT_EINVAL;
	}
	if (t->n > RIFT_TOKEN_ENTRIES_MAX) {
		*why = "more entries than a token holds";
		return RIFT_EINVAL;
	}
	if (t->base + t->len < t->base) {
		*why = "range wraps around the address space";
		return RIFT_EINVAL;
	}
	return 0;
}

static void token_tag(const uint8_t *in, size_t body,
		      const uint8_t key[RIFT_SESSION_KEY_LEN],
		      uint8_t tag[RIFT_TOKEN_TAG])
{
	rift__siphash(key, in, body, tag, RIFT_TOKEN_TAG);
}

int rift__token_encode(const struct rift__token *t,
		       const uint8_t key[RIFT_SESSION_KEY_LEN], void *out,
		       size_t *len)
{
	size_t need = rift__token_size(t->n), body = need - RIFT_TOKEN_TAG;
	uint8_t *p = out;
	const char *why;

	if (token_check(t, &why))
		return RIFT_EINVAL;
	if (*len < need) {
		*len = need;
		return RIFT_ENOSPC;
	}
	p[0] = RIFT_TOKEN_VERSION;
	p[1] = t->access;
	rift__put16(p + 2, t->n);
	rift__put32(p + 4, t->export_id);
	rift__put64(p + 8, t->session_id);
	rift__put64(p + 16, t->base);
	rift__put64(p + 24, t->len);
	for (unsigned i = 0; i < t->n; i++) {
		uint8_t *e = p + RIFT_TOKEN_FIXED + RIFT_TOKEN_ENTRY * i;

		rift__put64(e, t->e[i].scope);
		rift__put32(e + 8, t->e[i].key);
		rift__put32(e + 12, t->e[i].kind);
	}
	token_tag(p, body, key, p + body);
	*len = need;
	return 0;
}

int rift__token_decode(const void *in, size_t n, struct rift__token *t,
		       const char **why)
{
	const uint8_t *p = in;

	if (n < rift__token_size(0)) {
		*why = "shorter than any token";
		return RIFT_EINVAL;
	}
	if (p[0] != RIFT_TOKEN_VERSION) {
		*why = "unknown token version";
		return RIFT_EINVAL;
	}
	memset(t, 0, sizeof(*t));
	t->access = p[1];
	t->n = rift__get16(p + 2);
	t->export_id = rift__get32(p + 4);
	t->session_id = rift__get64(p + 8);
	t->base = rift__get64(p + 16);
	t->len = rift__get64(p + 24);
	if (t->n > RIFT_TOKEN_ENTRIES_MAX) {
		*why = "more entries than a token holds";
		return RIFT_EINVAL;
	}
	if (n != rift__token_size(t->n)) {
		*why = "size does not match its entry count";
		return RIFT_EINVAL;
	}
	for (unsigned i = 0; i < t->n; i++) {
		const uint8_t *e = p + RIFT_TOKEN_FIXED + RIFT_TOKEN_ENTRY * i;

		t->e[i].scope = rift__get64(e);
		t->e[i].key = rift__get32(e + 8);
		t->e[i].kind = rift__get32(e + 12);
	}
	return token_check(t, why);
}

bool rift__token_tag_ok(const void *in, size_t n,
			const uint8_t key[RIFT_SESSION_KEY_LEN])
{
	uint8_t tag[RIFT_TOKEN_TAG];

	if (n < rift__token_size(0))
		return false;
	token_tag(in, n - RIFT_TOKEN_TAG, key, tag);
	return rift__ct_equal(tag, (const uint8_t *)in + n - RIFT_TOKEN_TAG,
			      RIFT_TOKEN_TAG);
}

int rift__token_allows(const struct rift__token *t, uint64_t off,
		       uint64_t len, unsigned access, const char **why)
{
	if (!access || (access & ~(unsigned)t->access)) {
		*why = "access not granted by the token";
		return RIFT_EACCES;
	}
	if (off > t->len || len > t->len - off) {
		*why = "range beyond the exported one";
		return RIFT_EACCES;
	}
	return 0;
}

/* ---- RMA frames (wire.h) ---- */

void rift__rma_hdr_encode(uint8_t *out, const struct rift__rma_hdr *m)
{
	out[0] = m->op;
	out[1] = 0;
	rift__put16(out + 2, m->tok_len);
	rift__put32(out + 4, (uint32_t)m->status);
	rift__put64(out + 8, m->id);
	rift__put64(out + 16, m->off);
	rift__put64(out + 24, m->len);
	rift__put64(out + 32, m->tag);
}

int rift__rma_hdr_decode(const uint8_t *in, size_t n, struct rift__rma_hdr *m,
			 const char **why)
{
	bool tok, data;

	if (n < RIFT_RMA_HEAD) {
		*why = "RMA frame shorter than its head";
		return RIFT_EPROTO;
	}
	m->op = in[0];
	m->tok_len = rift__get16(in + 2);
	m->status = (int32_t)rift__get32(in + 4);
	m->id = rift__get64(in + 8);
	m->off = rift__get64(in + 16);
	m->len = rift__get64(in + 24);
	m->tag = rift__get64(in + 32);
	if (in[1] != 0) {
		*why = "RMA frame with reserved bits set";
		return RIFT_EPROTO;
	}
	if (m->tok_len > RIFT_TOKEN_MAX || RIFT_RMA_HEAD + m->tok_len > n) {
		*why = "RMA frame's token longer than a token or its frame";
		return RIFT_EPROTO;
	}
	m->tok = in + RIFT_RMA_HEAD;
	m->data = m->tok + m->tok_len;
	m->data_len = n - RIFT_RMA_HEAD - m->tok_len;
	switch (m->op) {
	case RIFT_RMA_READ_REQ:
	case RIFT_RMA_NOTIFY:
		tok = true, data = false;
		break;
	case RIFT_RMA_WRITE:
		tok = true, data = true;
		break;
	case RIFT_RMA_READ_RESP:
		tok = false, data = m->status == 0;
		break;
	case RIFT_RMA_WRITE_ACK:
	case RIFT_RMA_REVOKED:
	case RIFT_RMA_KEYS:
		tok = false, data = false;
		break;
	default:
		*why = "RMA frame of an unknown op";
		return RIFT_EPROTO;
	}
	if (tok != (m->tok_len != 0)) {
		*why = tok ? "RMA request without a token"
			   : "RMA answer with a token";
		return RIFT_EPROTO;
	}
	if (data ? m->data_len != m->len : m->data_len != 0) {
		*why = "RMA frame whose data is not the length it says";
		return RIFT_EPROTO;
	}
	if (m->status > 0 || (m->status && m->op != RIFT_RMA_READ_RESP &&
			      m->op != RIFT_RMA_WRITE_ACK)) {
		*why = "RMA frame with a status it cannot carry";
		return RIFT_EPROTO;
	}
	if (m->off + m->len < m->off) {
		*why = "RMA range wraps";
		return RIFT_EPROTO;
	}
	if (m->op == RIFT_RMA_KEYS &&
	    (m->id > UINT32_MAX || m->tag > UINT32_MAX || m->len)) {
		*why = "RMA keys with an export id or key over 32 bits, or a "
		       "length";
		return RIFT_EPROTO;
	}
	return 0;
}
