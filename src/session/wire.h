/*
 * wire.h - rift's frame format, shared by every transport.
 *
 * Every frame starts with a 24-byte header in network byte order:
 *
 *   0  u16 magic 0x5246 ("RF")     2  u8 version (2)    3  u8 type
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
 * the type allows and against the configured maximum message size.  A
 * path whose handshake has not completed reads no DATA frame at all: it is
 * refused at its header (session/stream.c), so the only bytes a peer that
 * never sent a HELLO can make us take are a handshake's own.
 *
 * CLOSE (no payload) ends a session in order (session/close.c): it is
 * sent once every message its sender queued is acknowledged, its seq is
 * the sender's last sequence number (0 from peers before it carried one)
 * and its ack the sender's last; the peer answers with its own.  An abort
 * is an ERROR with the code RIFT_ECONNRESET.
 *
 * Version 2 (RIFT_WIRE_VERSION) added the session secret to the
 * handshake payload (below); a version 1 peer is refused at its first
 * header ("unsupported frame version").
 *
 * Later features are capabilities (bits of the handshake's flags, below),
 * not versions: a new version would make every older peer refuse us at
 * the first header.  Frames 10..15 belong to RIFT_CAP_GROUP (port groups,
 * docs/design/port-groups.md section 2).  They are always decodable, so
 * their lengths are checked like any other's, and a session that did not
 * negotiate the capability refuses them.  Built so far: JOIN and JOIN_ACK,
 * and PROBE and PROBE_ACK on a joined standby only (a failback's probe,
 * session/group.c); the rest are refused as not negotiated.
 *
 * ---- Who may attach a path to a session ----
 *
 * A session id says which session a path is for; it is no credential:
 * the client chooses it, every frame of the handshake carries it in the
 * clear, and rift prints it (metrics labels, logs).  So the server gives
 * each new session a secret, the session key: 128 random bits from
 * getrandom(2), sent once, in the HELLO_ACK.  A RESUME (and a JOIN,
 * which adds a path to a live session) must prove it knows the key with
 * a MAC, not by showing the key:
 *
 *   tag = SipHash-2-4-128(key, frame type || payload bytes before the tag)
 *
 * in the payload's last 16 bytes (the tag covers bytes 0..55 of a RESUME,
 * 0..63 of a JOIN), over an attach counter the client raises for every
 * RESUME it sends and the server accepts only above the last one it
 * accepted.  JOINs share the counter; parallel ones may arrive out of
 * order, so they are to be checked against the last 64 counters instead
 * (struct rift__replay_win).  The server finds the session by the
 * listener the path came through and the id, checks the tag (in constant
 * time), the counter and that the session can rewind to what the RESUME
 * says it holds, all before it touches the session, and refuses a RESUME
 * that fails on that path alone: the live path and the session are
 * untouched.  The RESUME_ACK answers with its own tag over the same
 * counter, so a client re-attaches only to the server that holds the key.
 * Handshake frames travel as frames on every transport (over verbs, on
 * the QP), so this holds for both.
 *
 * Why a MAC over a counter rather than the key compared in constant time:
 * the transport is not encrypted, so a key shown in every RESUME would be
 * given to whoever sees any one of them, on any of the networks a session
 * fails over through, and a recorded RESUME could be sent again.  With the
 * MAC the key crosses the wire once, on the first path; a RESUME tells an
 * observer nothing it can use (the tag covers the frame's every field, and
 * its counter is used up); and the counter costs no round trip, where a
 * nonce chosen by the server would add one to every re-attach.
 *
 * What this covers: anyone who learns or guesses a session id but did not
 * see the session's first handshake (a metrics scrape, a log, another
 * tenant, an observer on a failover path or one that arrives later) can
 * neither take a session over nor end it, nor replay a RESUME.  What it
 * does not: an observer of the first path's HELLO_ACK learns the key; an
 * attacker on the path, who can rewrite or inject TCP segments (or race
 * a copy of a RESUME it sees in flight ahead of it), can do anything to
 * the traffic anyway, secret or not.  Against those, run rift over an
 * encrypted and authenticated network (IPsec, WireGuard, MACsec).
 */
#ifndef RIFT_SESSION_WIRE_H
#define RIFT_SESSION_WIRE_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RIFT_WIRE_MAGIC 0x5246u
#define RIFT_WIRE_VERSION 2u
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
	RIFT_FRAME_CLOSE = 8,      /* orderly end: all acknowledged (above) */
	RIFT_FRAME_ERROR = 9,      /* fatal error, with code and text */
	/* RIFT_CAP_GROUP's (docs/design/port-groups.md, 2.2): */
	RIFT_FRAME_JOIN = 10,      /* client: add this path to a live session */
	RIFT_FRAME_JOIN_ACK = 11,  /* server: path added */
	RIFT_FRAME_PROBE = 12,     /* seq: a nonce; ack as on PING */
	RIFT_FRAME_PROBE_ACK = 13, /* seq: the PROBE's nonce */
	RIFT_FRAME_PATH_CTL = 14,  /* a path is down, promoted, draining, back */
	RIFT_FRAME_ADDRS = 15,     /* server: addresses to add paths through */
	/* RIFT_CAP_RMA's: one-sided access served by the peer's library
	 * (below).  Sequenced like DATA: its seq is a message sequence, it
	 * is acknowledged, replayed and ordered with the messages. */
	RIFT_FRAME_RMA = 16,
	RIFT_FRAME__MAX = 16,
};

/* Frames that carry a message sequence number (DATA, RMA). */
static inline bool rift__frame_sequenced(unsigned type)
{
	return type == RIFT_FRAME_DATA || type == RIFT_FRAME_RMA;
}

/* Payloads of RIFT_CAP_GROUP's frames other than JOIN and JOIN_ACK
 * (below); PROBE and PROBE_ACK have none.  PATH_CTL: u8 op, u8 path_id,
 * u16 reason, u32 0.  ADDRS: u8 n, u8[3] 0, then n entries of u8 family,
 * u8 transports, u16 port, u8 addr[16]. */
#define RIFT_PATH_CTL_SIZE 8u
#define RIFT_PATH_CTL_DOWN 1u /* op: the path is dead on the sender's side */
#define RIFT_ADDRS_HEAD 4u /* ADDRS: bytes before the entries */
#define RIFT_ADDR_SIZE 20u /* ADDRS: bytes per entry */
#define RIFT_ADDRS_MAX 8u  /* ADDRS: entries at most */

struct rift__hdr {
	uint8_t type;
	uint32_t len;  /* payload bytes */
	uint64_t seq;
	uint64_t ack;
};

/* HELLO, HELLO_ACK, RESUME and RESUME_ACK share one payload, in this
 * order on the wire (all big-endian): */
#define RIFT_HELLO_SIZE 72u
#define RIFT_HELLO_FB_MASK 0xffu /* flags: the sender's fallback reason */
#define RIFT_HELLO_CAP_MASK 0xffffff00u /* flags: its capabilities, RIFT_CAP_* */
#define RIFT_CAP_GROUP (1u << 8)   /* port groups: frames JOIN .. ADDRS */
#define RIFT_CAP_REORDER (1u << 9) /* takes DATA out of order within the window */
/* client: spreads its data over the joined paths and asks the server to
 * (active-active; both need RIFT_CAP_REORDER) */
#define RIFT_CAP_SPREAD (1u << 10)
/* one-sided access (docs/design/one-sided.md): RMA frames */
#define RIFT_CAP_RMA (1u << 11)
#define RIFT_HELLO_AUTH_AT 56u   /* the auth field: the tag covers what is before */
#define RIFT_SESSION_KEY_LEN 16u /* the session key, and a tag, bytes */
struct rift__hello {
	uint32_t proto;        /* protocol version spoken */
	/* Bits 0-7: the sender's fallback reason (rift_fallback_reason:
	 * why its side of the session is not on the transport it preferred;
	 * 0 none).  Bits 8-31 (RIFT_HELLO_CAP_MASK): its capabilities,
	 * RIFT_CAP_* (GROUP, REORDER, SPREAD); the other bits are sent as 0,
	 * ignored when received. */
	uint32_t flags;
	uint64_t session_id;   /* chosen by the client, never 0 */
	uint64_t recv_seq;     /* sender's highest seq delivered in order */
	uint64_t max_msg_size; /* largest message the sender accepts */
	uint64_t window;       /* sender's send window, bytes */
	/* Highest seq received in order, delivered or held while receiving
	 * is stopped (>= recv_seq).  Held messages need no resend, but they
	 * stay unacknowledged: they still count in the peer's window. */
	uint64_t held_seq;
	/* The attach counter: 0 in HELLO and HELLO_ACK; the client's count of
	 * RESUMEs (and JOINs) sent in RESUME (and JOIN), and the same value
	 * in the answer. */
	uint64_t attach;
	/* HELLO: zeros.  HELLO_ACK: the session key.  RESUME, RESUME_ACK,
	 * JOIN, JOIN_ACK: the tag (rift__hello_seal). */
	uint8_t auth[RIFT_SESSION_KEY_LEN];
};

/*
 * JOIN and JOIN_ACK share one payload: a handshake payload's bytes 0..55
 * (checked as a hello's are), then
 *
 *  56  u8 path_id (1..254; 0 is the session's first path)
 *  57  u8 role_req (RIFT_JOIN_STANDBY or RIFT_JOIN_ACTIVE)
 *  58  u16 0, u32 0
 *  64  u8 tag[16] (rift__hello_seal at RIFT_JOIN_AUTH_AT)
 */
#define RIFT_JOIN_SIZE 80u
#define RIFT_JOIN_AUTH_AT 64u /* the tag: it covers what is before */
#define RIFT_PATH_ID_MAX 254u
#define RIFT_JOIN_STANDBY 0u
#define RIFT_JOIN_ACTIVE 1u
struct rift__join {
	struct rift__hello hello; /* auth: the tag */
	uint8_t path_id;          /* 1..RIFT_PATH_ID_MAX */
	uint8_t role_req;         /* RIFT_JOIN_STANDBY or RIFT_JOIN_ACTIVE */
};

/*
 * The attach counters a server accepted for one session: the highest,
 * and which of the 63 below it it also accepted.  A client's parallel
 * JOINs may arrive out of order, so a counter below the highest is taken
 * once while it is within the window (port-groups.md, 2.3).  All zeros:
 * nothing accepted yet.
 */
#define RIFT_REPLAY_WIN 64u
struct rift__replay_win {
	uint64_t hi;   /* highest counter accepted, 0 for none */
	uint64_t bits; /* bit i: hi - i was accepted */
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
/* Returns 0 or RIFT_EPROTO (wrong size, session id 0, bad proto, an
 * unknown fallback reason, a zero size, held_seq below recv_seq). */
int rift__hello_decode(const uint8_t *in, size_t n, struct rift__hello *m,
		       const char **why);
/* Encodes m (RIFT_JOIN_SIZE bytes, returned), its tag from
 * m->hello.auth. */
size_t rift__join_encode(uint8_t *out, const struct rift__join *m);
/* Returns 0 or RIFT_EPROTO: wrong size, what rift__hello_decode refuses
 * in bytes 0..55, a path id of 0 or 255, a role_req above 1, padding
 * that is not zero. */
int rift__join_decode(const uint8_t *in, size_t n, struct rift__join *m,
		      const char **why);
/* Write the tag of an encoded handshake payload of the given frame type
 * into its auth field at auth_at (RIFT_HELLO_AUTH_AT; RIFT_JOIN_AUTH_AT
 * for JOIN and JOIN_ACK), under the session key. */
void rift__hello_seal(uint8_t *payload, uint8_t type, size_t auth_at,
		      const uint8_t key[RIFT_SESSION_KEY_LEN]);
/* Whether the auth field at auth_at (as for rift__hello_seal) of a
 * received handshake payload, decoded already, is the tag of the bytes
 * before it under key; compared in constant time. */
bool rift__hello_proves(const uint8_t *payload, uint8_t type, size_t auth_at,
			const uint8_t key[RIFT_SESSION_KEY_LEN]);

/* Take attach counter c at most once: true, c recorded, for c above
 * w->hi, or within the window below it and not taken before; false, w
 * unchanged and *why a static reason, for 0, a counter taken already, or
 * one RIFT_REPLAY_WIN or more below w->hi. */
/* Whether rift__replay_check_and_set would take c, w untouched. */
bool rift__replay_check(const struct rift__replay_win *w, uint64_t c);
bool rift__replay_check_and_set(struct rift__replay_win *w, uint64_t c,
				const char **why);

/* PATH_CTL's payload (RIFT_PATH_CTL_SIZE bytes; rift__hdr_decode checks
 * the length). */
struct rift__path_ctl {
	uint8_t op;       /* RIFT_PATH_CTL_DOWN; other values: a later peer's */
	uint8_t path_id;  /* the path it is about */
	uint16_t reason;  /* rift_path_down_reason, as the sender knows it */
};
size_t rift__path_ctl_encode(uint8_t *out, const struct rift__path_ctl *m);
void rift__path_ctl_decode(const uint8_t *in, struct rift__path_ctl *m);

/* Encodes code and text (cut at RIFT_ERROR_TEXT_MAX); returns bytes. */
size_t rift__error_encode(uint8_t *out, int32_t code, const char *text);
int rift__error_decode(const uint8_t *in, size_t n,
		       struct rift__error_frame *m, const char **why);

const char *rift__frame_name(unsigned type);

/*
 * A one-sided access token (docs/design/one-sided.md, section 3): what an
 * exporter hands its peer so that the peer may READ or WRITE a range of
 * its memory, opaque to the application.  Big-endian, version 1:
 *
 *   0  u8  version            1  u8  access (RIFT_TOKEN_READ | _WRITE)
 *   2  u16 entries            4  u32 export id (the exporter's)
 *   8  u64 session id        16  u64 base (exporter's address of offset 0)
 *  24  u64 length            32  entries x { u64 scope, u32 key, u32 kind }
 *  32 + 16 x entries: a 16-byte tag, SipHash-2-4-128 of all before it
 *     under the session's key
 *
 * An entry is how to reach the range over one way in (kind): a remote key
 * of a memory window or registration, for the path or device its scope
 * names.  A token without entries is served by the exporter's library
 * over the session (TCP).  The tag lets the exporter take a token back
 * (its library serves operations by token, revokes by token) without a
 * table of the tokens it gave: a forged or altered one fails it.
 */
#define RIFT_TOKEN_VERSION 1u
#define RIFT_TOKEN_FIXED 32u
#define RIFT_TOKEN_ENTRY 16u
#define RIFT_TOKEN_TAG 16u
#define RIFT_TOKEN_ENTRIES_MAX 16u
#define RIFT_TOKEN_MAX \
	(RIFT_TOKEN_FIXED + RIFT_TOKEN_ENTRY * RIFT_TOKEN_ENTRIES_MAX + \
	 RIFT_TOKEN_TAG)
#define RIFT_TOKEN_READ 1u
#define RIFT_TOKEN_WRITE 2u

struct rift__token_entry {
	uint64_t scope;
	uint32_t key;
	uint32_t kind;
};

struct rift__token {
	uint8_t access;
	uint16_t n;
	uint32_t export_id;
	uint64_t session_id;
	uint64_t base;
	uint64_t len;
	struct rift__token_entry e[RIFT_TOKEN_ENTRIES_MAX];
};

/* The encoded size of a token of n entries. */
static inline size_t rift__token_size(unsigned n)
{
	return RIFT_TOKEN_FIXED + RIFT_TOKEN_ENTRY * (size_t)n + RIFT_TOKEN_TAG;
}

/* Encodes t, tagged under key, into out (room: *len bytes); *len is the
 * token's size on return.  0, RIFT_ENOSPC (room too small: nothing
 * written) or RIFT_EINVAL (t itself invalid: see rift__token_decode). */
int rift__token_encode(const struct rift__token *t,
		       const uint8_t key[RIFT_SESSION_KEY_LEN], void *out,
		       size_t *len);
/* Parses n bytes into t, checking the layout only (the requester has no
 * key): the version, the size against the entry count, an access of
 * READ and/or WRITE, a range that does not wrap.  0, or RIFT_EINVAL with
 * a static reason in *why. */
int rift__token_decode(const void *in, size_t n, struct rift__token *t,
		       const char **why);
/* Whether a token of n bytes bears its tag under key (in a time that does
 * not depend on where a forged tag differs).  The exporter's check. */
bool rift__token_tag_ok(const void *in, size_t n,
			const uint8_t key[RIFT_SESSION_KEY_LEN]);
/* Whether [off, off + len) lies in t's range and access covers what is
 * asked: 0, or RIFT_EACCES with a static reason in *why. */
int rift__token_allows(const struct rift__token *t, uint64_t off,
		       uint64_t len, unsigned access, const char **why);

/*
 * RMA frame payload (RIFT_CAP_RMA; docs/design/one-sided.md, section 4):
 * a 40-byte head, then tok_len bytes of a token, then the data.
 *
 *   0  u8  op                 1  u8  0
 *   2  u16 tok_len            4  i32 status (0 or RIFT_E*)
 *   8  u64 id (the requester's operation)
 *  16  u64 off (in the token's range)   24  u64 len   32  u64 tag
 *
 *   READ_REQ   token; len bytes at off asked; no data
 *   READ_RESP  no token; status 0: the len bytes at off as data, else none
 *   WRITE      token; len bytes of data for off
 *   WRITE_ACK  no token, no data: the WRITE of len bytes at off landed
 *              (status 0) or why not
 *   NOTIFY     token; no data: the writes of [off, off + len) before it
 *              are the writer's, tag its word (RIFT_EVENT_WRITTEN)
 *   REVOKED    no token, no data: off is an export id the sender revoked
 *   KEYS       no token, no data: the sender's export id (id) is reachable
 *              by one-sided RDMA through the path of attach counter off
 *              with the key in tag (docs/design/one-sided.md, 11)
 */
#define RIFT_RMA_HEAD 40u
enum rift__rma_op {
	RIFT_RMA_READ_REQ = 1,
	RIFT_RMA_READ_RESP = 2,
	RIFT_RMA_WRITE = 3,
	RIFT_RMA_WRITE_ACK = 4,
	RIFT_RMA_NOTIFY = 5,
	RIFT_RMA_REVOKED = 6,
	RIFT_RMA_KEYS = 7,
};
struct rift__rma_hdr {
	uint8_t op;
	uint16_t tok_len;
	int32_t status;
	uint64_t id, off, len, tag;
	const uint8_t *tok;  /* decode: in the payload (tok_len bytes) */
	const uint8_t *data; /* decode: in the payload */
	size_t data_len;     /* decode */
};
/* Encodes the head of m into out (RIFT_RMA_HEAD bytes; the token and data
 * are the caller's to place after it). */
void rift__rma_hdr_encode(uint8_t *out, const struct rift__rma_hdr *m);
/* Parses an RMA payload of n bytes: 0, or RIFT_EPROTO with *why set for
 * a head too short, an unknown op, a token where the op has none (or
 * none where it needs one, or one over RIFT_TOKEN_MAX), data that does
 * not match len, a range that wraps. */
int rift__rma_hdr_decode(const uint8_t *in, size_t n, struct rift__rma_hdr *m,
			 const char **why);

#endif
