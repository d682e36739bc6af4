/*
 * mkseeds.c - write the fuzz targets' seed inputs (tests/fuzz/corpus/NAME/
 * seed-*) and the config target's dictionary from valid inputs made with
 * the library's own encoders (and rift-kv's RESP encoder for the resp
 * target), so that they follow the wire if it changes.
 *
 *   make fuzz-seeds     (runs build/fuzz/mkseeds tests/fuzz)
 *
 * Crashes found by fuzzing are kept beside the seeds under other names
 * (crash-*), never rewritten here.  See tests/fuzz/README.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../examples/rift-kv/resp.h"
#include "api/config_int.h"
#include "fuzz.h"
#include "session/wire.h"
#include "transports/verbs/cm_tcp.h"
#include "transports/verbs/rdma_hello.h"

static const char *top;

static void put(const char *target, const char *name, const void *data,
		size_t n)
{
	char path[512];
	FILE *f;

	/* corpus/ too: make fuzz checks the seeds in a scratch directory. */
	snprintf(path, sizeof(path), "%s/corpus", top);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/corpus/%s", top, target);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/corpus/%s/seed-%s", top, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* ---- session frames ---- */

struct stream {
	uint8_t b[8192];
	size_t n;
};

static void frame(struct stream *s, uint8_t type, uint32_t len, uint64_t seq,
		  uint64_t ack, const void *payload)
{
	struct rift__hdr h = { .type = type, .len = len, .seq = seq, .ack = ack };

	if (RIFT_HDR_SIZE + (payload ? len : 0) > sizeof(s->b) - s->n) {
		fprintf(stderr, "mkseeds: a seed outgrows its %zu bytes\n",
			sizeof(s->b));
		exit(1);
	}
	rift__hdr_encode(s->b + s->n, &h);
	s->n += RIFT_HDR_SIZE;
	if (payload)
		memcpy(s->b + s->n, payload, len);
	s->n += payload ? len : 0;
}

/* A handshake frame of payload m, a RESUME or RESUME_ACK sealed under
 * key unless it is NULL. */
static void handshake(struct stream *s, uint8_t type,
		      const struct rift__hello *m, const uint8_t *key)
{
	uint8_t p[RIFT_HELLO_SIZE];
	size_t n = rift__hello_encode(p, m);

	if (key && (type == RIFT_FRAME_RESUME || type == RIFT_FRAME_RESUME_ACK))
		rift__hello_seal(p, type, RIFT_HELLO_AUTH_AT, key);
	frame(s, type, (uint32_t)n, 0, 0, p);
}

static struct rift__hello hello_of(uint64_t id, uint64_t recv_seq,
				   uint64_t held_seq)
{
	return (struct rift__hello){ .proto = RIFT_WIRE_VERSION,
				     .session_id = id,
				     .recv_seq = recv_seq,
				     .held_seq = held_seq,
				     .max_msg_size = 1u << 20,
				     .window = 1u << 20 };
}

/*
 * A handshake frame as a peer that holds fz_session_key sends it (the key
 * the handshake target's server gives, and the proof of the session a
 * placeholder id names there: fuzz.h): a HELLO_ACK gives the key, a
 * RESUME or RESUME_ACK proves it over the attach counter of a session's
 * first RESUME (1).
 */
static void hello(struct stream *s, uint8_t type, uint64_t id,
		  uint64_t recv_seq, uint64_t held_seq)
{
	struct rift__hello m = hello_of(id, recv_seq, held_seq);

	if (type == RIFT_FRAME_HELLO_ACK)
		memcpy(m.auth, fz_session_key, sizeof(m.auth));
	if (type == RIFT_FRAME_RESUME || type == RIFT_FRAME_RESUME_ACK)
		m.attach = 1;
	handshake(s, type, &m, fz_session_key);
}

/* A JOIN or JOIN_ACK as a peer that holds fz_session_key sends it: a
 * standby path 1, proving the key over the attach counter of a session's
 * first attach after its HELLO (1). */
static void join(struct stream *s, uint8_t type, uint64_t id,
		 uint64_t recv_seq, uint64_t held_seq)
{
	struct rift__join m = { .hello = hello_of(id, recv_seq, held_seq),
				.path_id = 1,
				.role_req = RIFT_JOIN_STANDBY };
	uint8_t p[RIFT_JOIN_SIZE];

	m.hello.attach = 1;
	rift__join_encode(p, &m);
	rift__hello_seal(p, type, RIFT_JOIN_AUTH_AT, fz_session_key);
	frame(s, type, sizeof(p), 0, 0, p);
}

/* The other frames of RIFT_CAP_GROUP, one each, as wire.h lays them out:
 * a PROBE and its answer (nonce 7), a PATH_CTL saying path 1 is down, an
 * ADDRS of one address (IPv4 10.0.0.2, port 7788, TCP and RDMA). */
static void group_frames(struct stream *s)
{
	static const uint8_t ctl[RIFT_PATH_CTL_SIZE] = { 1, 1 };
	static const uint8_t addrs[RIFT_ADDRS_HEAD + RIFT_ADDR_SIZE] = {
		1, 0, 0, 0, 2, 3, 0x1e, 0x6c,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2,
	};

	frame(s, RIFT_FRAME_PROBE, 0, 7, 0, NULL);
	frame(s, RIFT_FRAME_PROBE_ACK, 0, 7, 0, NULL);
	frame(s, RIFT_FRAME_PATH_CTL, sizeof(ctl), 0, 0, ctl);
	frame(s, RIFT_FRAME_ADDRS, sizeof(addrs), 0, 0, addrs);
}

static void data(struct stream *s, uint64_t seq, uint64_t ack,
		 const char *text)
{
	frame(s, RIFT_FRAME_DATA, (uint32_t)strlen(text), seq, ack, text);
}

static void error(struct stream *s, int32_t code, const char *text)
{
	uint8_t p[6 + RIFT_ERROR_TEXT_MAX];
	size_t n = rift__error_encode(p, code, text);

	frame(s, RIFT_FRAME_ERROR, (uint32_t)n, 0, 0, p);
}

/* A stream for the handshake target: its first byte picks the part. */
static struct stream *part(uint8_t mode)
{
	static struct stream s;

	s.n = 0;
	s.b[s.n++] = mode;
	return &s;
}

#define NEW_ID 0x1122334455667788ull

static void handshake_seeds(void)
{
	struct rift__hello m;
	struct stream *s;

	/* As a client of the listener (fuzz_handshake.c: ids 1..3 are its
	 * sessions A, B and C; each sent 3 messages, 1 acknowledged, and
	 * received 2).  Their RESUMEs re-attach: the target seals them again
	 * under the key of the session they name. */
	s = part(0);
	hello(s, RIFT_FRAME_HELLO, NEW_ID, 0, 0);
	data(s, 1, 0, "one");
	frame(s, RIFT_FRAME_ACK, 0, 0, 0, NULL);
	frame(s, RIFT_FRAME_PING, 0, 0, 0, NULL);
	data(s, 2, 0, "two");
	frame(s, RIFT_FRAME_CLOSE, 0, 0, 0, NULL);
	put("handshake", "hello-new", s->b, s->n);
	s = part(0);
	hello(s, RIFT_FRAME_HELLO, 1, 0, 0);
	put("handshake", "hello-in-use", s->b, s->n);
	s = part(0);
	hello(s, RIFT_FRAME_RESUME, 2, 1, 3);
	data(s, 3, 3, "three");
	put("handshake", "resume-detached", s->b, s->n);
	s = part(0);
	hello(s, RIFT_FRAME_RESUME, 1, 3, 3);
	frame(s, RIFT_FRAME_ACK, 0, 0, 3, NULL);
	put("handshake", "resume-attached", s->b, s->n);
	s = part(0);
	hello(s, RIFT_FRAME_RESUME, 3, 2, 2);
	data(s, 3, 2, "x");
	put("handshake", "resume-holding", s->b, s->n);
	/* Refused with the proof: it claims messages never sent. */
	s = part(0);
	hello(s, RIFT_FRAME_RESUME, 2, 1, 5);
	put("handshake", "resume-lies", s->b, s->n);
	/* Refused before the session is touched: no proof, and a proof
	 * over an attach counter already used (0, its HELLO's). */
	s = part(0);
	m = hello_of(2, 1, 3);
	m.attach = 1;
	handshake(s, RIFT_FRAME_RESUME, &m, NULL);
	put("handshake", "resume-no-proof", s->b, s->n);
	s = part(0);
	m = hello_of(2, 1, 3);
	handshake(s, RIFT_FRAME_RESUME, &m, fz_session_key);
	put("handshake", "resume-replayed", s->b, s->n);
	s = part(0);
	hello(s, RIFT_FRAME_RESUME, NEW_ID, 0, 0);
	put("handshake", "resume-unknown", s->b, s->n);
	s = part(0);
	error(s, RIFT_EPROTO, "no");
	put("handshake", "error-first", s->b, s->n);
	/* Port groups' frames, which no session negotiates yet: a JOIN to
	 * A is refused as a first frame, the others on an attached path. */
	s = part(0);
	join(s, RIFT_FRAME_JOIN, 1, 3, 3);
	put("handshake", "join-unnegotiated", s->b, s->n);
	s = part(0);
	hello(s, RIFT_FRAME_HELLO, NEW_ID, 0, 0);
	data(s, 1, 0, "one");
	group_frames(s);
	put("handshake", "group-after-hello", s->b, s->n);

	/* As the server of a new client (id 1 is the client's). */
	s = part(2);
	hello(s, RIFT_FRAME_HELLO_ACK, 1, 0, 0);
	data(s, 1, 0, "hi");
	frame(s, RIFT_FRAME_PING, 0, 0, 0, NULL);
	frame(s, RIFT_FRAME_CLOSE, 0, 0, 0, NULL);
	put("handshake", "hello-ack", s->b, s->n);
	s = part(2);
	error(s, RIFT_ECONNREFUSED, "listener is closing");
	put("handshake", "refused", s->b, s->n);
	s = part(2);
	hello(s, RIFT_FRAME_HELLO_ACK, NEW_ID, 0, 0);
	put("handshake", "hello-ack-other", s->b, s->n);
	s = part(2);
	join(s, RIFT_FRAME_JOIN_ACK, 1, 0, 0);
	put("handshake", "join-ack-unnegotiated", s->b, s->n);
	s = part(2);
	hello(s, RIFT_FRAME_HELLO_ACK, 1, 0, 0);
	group_frames(s);
	put("handshake", "group-after-hello-ack", s->b, s->n);

	/* As the server a client re-attaches to: it sent 2 messages, none
	 * acknowledged, and received none; it has the key of our HELLO_ACK,
	 * and its RESUME was its first. */
	s = part(3);
	hello(s, RIFT_FRAME_RESUME_ACK, 1, 1, 2);
	data(s, 1, 2, "back");
	put("handshake", "resume-ack", s->b, s->n);
	/* Nothing arrived: the client sends both again.  No ACK of them
	 * here: it would come before they are sent again (the target
	 * writes the input at once), acknowledging what was never sent. */
	s = part(3);
	hello(s, RIFT_FRAME_RESUME_ACK, 1, 0, 0);
	data(s, 1, 0, "again");
	put("handshake", "resume-ack-replay", s->b, s->n);
	s = part(3);
	error(s, RIFT_ESESSION, "RESUME for an unknown session");
	put("handshake", "resume-refused", s->b, s->n);
}

/*
 * fuzz_hostile.c sends the first 2n/3 bytes of an n-byte input on one
 * connection and the rest on a second: here the frames of a, then those
 * of b.  a gets PINGs until b fits in the half of a's length that must
 * follow it; b is padded to that with PINGs, then less than a header
 * (which waits for more).
 */
static void two_connections(struct stream *s, struct stream *a,
			    const struct stream *b)
{
	size_t total;

	/* With a tail of t bytes, 2 (a + t) / 3 rounds down to a for t =
	 * a / 2 rounded up. */
	while ((a->n + 1) / 2 < b->n)
		frame(a, RIFT_FRAME_PING, 0, 0, 0, NULL);
	total = a->n + (a->n + 1) / 2;
	if (total > sizeof(s->b)) {
		fprintf(stderr, "mkseeds: a seed outgrows its %zu bytes\n",
			sizeof(s->b));
		exit(1);
	}
	memcpy(s->b, a->b, a->n);
	memcpy(s->b + a->n, b->b, b->n);
	s->n = a->n + b->n;
	while (s->n + RIFT_HDR_SIZE <= total)
		frame(s, RIFT_FRAME_PING, 0, 0, 0, NULL);
	memset(s->b + s->n, 0, total - s->n);
	s->n = total;
	if (2 * s->n / 3 != a->n || s->n - a->n < b->n) {
		fprintf(stderr,
			"mkseeds: a hostile seed of %zu bytes would put %zu on "
			"its first connection, not the %zu of its frames there "
			"(and %zu bytes for the %zu of the second)\n",
			s->n, 2 * s->n / 3, a->n, s->n - 2 * s->n / 3, b->n);
		exit(1);
	}
}

/* An RMA frame (one-sided access, session/wire.h) of seq seq: head m,
 * then m->tok_len bytes of a token (tok, or zeros), then data_len bytes
 * of 'd'. */
static void rma(struct stream *s, uint64_t seq, const struct rift__rma_hdr *m,
		const uint8_t *tok, size_t data_len)
{
	uint8_t p[RIFT_RMA_HEAD + RIFT_TOKEN_MAX + 64];
	size_t n = RIFT_RMA_HEAD + m->tok_len + data_len;

	rift__rma_hdr_encode(p, m);
	memset(p + RIFT_RMA_HEAD, 0, m->tok_len);
	if (tok)
		memcpy(p + RIFT_RMA_HEAD, tok, m->tok_len);
	memset(p + RIFT_RMA_HEAD + m->tok_len, 'd', data_len);
	frame(s, RIFT_FRAME_RMA, (uint32_t)n, seq, 0, p);
}

/* A session offering one-sided access that asks for what it may not
 * have (a token tagged under the key the target gives, for an export
 * that does not exist), revokes, then answers what it never asked. */
static void rma_seed(struct stream *s)
{
	struct rift__hello m = hello_of(NEW_ID, 0, 0);
	struct rift__token t = { .access = RIFT_TOKEN_READ | RIFT_TOKEN_WRITE,
				 .export_id = 1, .session_id = NEW_ID,
				 .len = 4096 };
	uint8_t tok[RIFT_TOKEN_MAX];
	size_t tl = sizeof(tok);
	struct rift__rma_hdr r = { .op = RIFT_RMA_READ_REQ, .id = 1, .len = 8 };

	m.flags = RIFT_CAP_RMA;
	handshake(s, RIFT_FRAME_HELLO, &m, fz_session_key);
	if (rift__token_encode(&t, fz_session_key, tok, &tl)) {
		fprintf(stderr, "mkseeds: token\n");
		exit(1);
	}
	r.tok_len = (uint16_t)tl;
	rma(s, 1, &r, tok, 0);
	r.op = RIFT_RMA_WRITE, r.id = 2, r.len = 16;
	rma(s, 2, &r, tok, 16);
	r.op = RIFT_RMA_NOTIFY, r.id = 3, r.tag = 7;
	rma(s, 3, &r, tok, 0);
	r = (struct rift__rma_hdr){ .op = RIFT_RMA_REVOKED, .off = 1 };
	rma(s, 4, &r, NULL, 0);
	r = (struct rift__rma_hdr){ .op = RIFT_RMA_WRITE_ACK, .id = 9,
				    .len = 4 };
	rma(s, 5, &r, NULL, 0);
	/* A window's key for an export on the path of attach counter 0. */
	r = (struct rift__rma_hdr){ .op = RIFT_RMA_KEYS, .id = 1,
				    .tag = 0x1234 };
	rma(s, 6, &r, NULL, 0);
}

static void hostile_seeds(void)
{
	static struct stream a, b;
	static struct stream s;
	static uint8_t big[6000];

	hello(&s, RIFT_FRAME_HELLO, NEW_ID, 0, 0);
	data(&s, 1, 0, "one");
	data(&s, 2, 0, "two");
	frame(&s, RIFT_FRAME_ACK, 0, 0, 1, NULL);
	frame(&s, RIFT_FRAME_PING, 0, 0, 0, NULL);
	frame(&s, RIFT_FRAME_CLOSE, 0, 0, 0, NULL);
	put("hostile", "session", s.b, s.n);
	s.n = 0;
	/* Larger than the target's read buffer, whole, then cut short. */
	s.n = 0;
	hello(&s, RIFT_FRAME_HELLO, NEW_ID, 0, 0);
	frame(&s, RIFT_FRAME_DATA, sizeof(big), 1, 0, big);
	data(&s, 2, 0, "after");
	put("hostile", "large-message", s.b, s.n);
	s.n = 0;
	hello(&s, RIFT_FRAME_HELLO, NEW_ID, 0, 0);
	frame(&s, RIFT_FRAME_DATA, 100000, 1, 0, NULL);
	s.n += 256;
	put("hostile", "large-message-cut", s.b, s.n);
	/* What the application does with them (fuzz_hostile.c): keep,
	 * stop receiving (held until the second half), close. */
	s.n = 0;
	hello(&s, RIFT_FRAME_HELLO, NEW_ID, 0, 0);
	data(&s, 1, 0, "keep");
	data(&s, 2, 0, "stop");
	data(&s, 3, 0, "held");
	data(&s, 4, 0, "held too");
	data(&s, 5, 0, "close");
	data(&s, 6, 0, "after close");
	put("hostile", "app", s.b, s.n);
	/* A session made on one connection, and a RESUME of it on the
	 * other, which is refused: the input cannot know the key the
	 * server gave the session (on the first connection), and the
	 * session carries on. */
	a.n = b.n = 0;
	hello(&a, RIFT_FRAME_HELLO, NEW_ID, 0, 0);
	data(&a, 1, 0, "one");
	data(&a, 2, 0, "keep");
	data(&a, 3, 0, "stop");
	data(&a, 4, 0, "held");
	data(&a, 5, 0, "echo this");
	hello(&b, RIFT_FRAME_RESUME, NEW_ID, 1, 1);
	data(&b, 6, 1, "six");
	two_connections(&s, &a, &b);
	put("hostile", "resume-own", s.b, s.n);
	s.n = 0;
	data(&s, 1, 0, "before hello");
	put("hostile", "data-first", s.b, s.n);
	/* Whole on the first connection, where they are refused (the
	 * second one gets only PINGs): a frame cut in two there would
	 * never be read. */
	a.n = b.n = 0;
	hello(&a, RIFT_FRAME_RESUME, NEW_ID, 0, 0);
	two_connections(&s, &a, &b);
	put("hostile", "resume", s.b, s.n);
	a.n = 0;
	hello(&a, RIFT_FRAME_HELLO, NEW_ID, 0, 0);
	hello(&a, RIFT_FRAME_HELLO, NEW_ID + 1, 0, 0);
	two_connections(&s, &a, &b);
	put("hostile", "two-hellos", s.b, s.n);
	a.n = 0;
	error(&a, RIFT_EPROTO, "bye");
	two_connections(&s, &a, &b);
	put("hostile", "error", s.b, s.n);
	s.n = 0;
	rma_seed(&s);
	put("hostile", "rma", s.b, s.n);
}

/* ---- the frame decoder ---- */

/* Every frame of RIFT_CAP_GROUP (the hand-written seeds have the rest). */
static void frame_seeds(void)
{
	static struct stream s;

	join(&s, RIFT_FRAME_JOIN, NEW_ID, 0, 0);
	join(&s, RIFT_FRAME_JOIN_ACK, NEW_ID, 0, 0);
	group_frames(&s);
	put("frame", "group", s.b, s.n);
}

/* ---- the verbs transport's setup messages ---- */

static void rdma_hello(struct cm_hello *h, uint16_t flags, uint32_t depth,
		       uint32_t buf)
{
	struct rift__rdma_hello m = { .flags = flags, .rq_depth = depth,
				      .buf_size = buf };

	rift__rdma_hello_encode(h, &m);
}

static void verbs_seeds(void)
{
	struct rift__boot b = { .link_layer = 2, .qpn = 0x11, .psn = 0xabcdef,
				.mtu = 3, .rd_atom = 16 };
	uint8_t wire[RIFT_BOOT_SIZE], pd[56] = { 0 };
	struct cm_hello h;

	/* RoCE: the GID is an IPv4-mapped address. */
	memcpy(b.gid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\0\0\x01", 16);
	rdma_hello(&h, HELLO_F_RNDV | HELLO_F_BARE, 256, 8192);
	memcpy(b.hello, &h, sizeof(h));
	rift__boot_encode(wire, &b);
	put("cm_tcp", "roce", wire, sizeof(wire));
	memset(b.gid, 0, 16);
	b.link_layer = 1;
	b.lid = 5;
	b.mtu = 5;
	rdma_hello(&h, HELLO_F_BARE, 2, 64);
	memcpy(b.hello, &h, sizeof(h));
	rift__boot_encode(wire, &b);
	put("cm_tcp", "infiniband", wire, sizeof(wire));
	memset(&b, 0, sizeof(b));
	b.status = RIFT_REJ_CLOSING;
	rift__boot_encode(wire, &b);
	put("cm_tcp", "refusal", wire, sizeof(wire));

	rdma_hello(&h, HELLO_F_RNDV | HELLO_F_BARE, 512, 65536);
	put("rdma_hello", "rndv", &h, sizeof(h));
	rdma_hello(&h, 0, 65536, 64u << 20);
	memcpy(pd, &h, sizeof(h));
	put("rdma_hello", "private-data", pd, sizeof(pd));
}

/* ---- text ---- */

static void url_seeds(void)
{
	static const char *const urls[] = {
		"tcp://127.0.0.1:7788",
		"rdma://[fe80::1]:4791,10.0.0.2:4791",
		"auto://host-a:1,host_b.example.org:65535?key=value&k2=",
		"tcp://:0",
	};

	for (size_t i = 0; i < RIFT_ARRAY_SIZE(urls); i++) {
		char name[16];

		snprintf(name, sizeof(name), "%zu", i);
		put("url", name, urls[i], strlen(urls[i]));
	}
}

static void config_seeds(void)
{
	static const char every[] =
		"# sections, sizes with units, an array over two lines\n"
		"[progress]\npolling = \"adaptive\"\nbusy_poll_us = 7\n"
		"[connect]\nconnection_timeout_ms = 1500\nretries = 0x5\n"
		"[session]\ngrace_ms = 30_000\nsend_window = \"64MiB\"\n"
		"[tcp]\nread_buffer = '1M'\n"
		"[rdma]\ndevice = \"mlx5_\\u0031\"\ngid_index = -1\n"
		"cm = \"tcp\"\nsq_depth = 0o1000\n"
		"[pool]\nblock_sizes = [\"4KiB\", 16384, 131072, \"1MiB\",\r\n"
		"               \"4 MiB\", ]\nhuge_pages = true\n"
		"[metrics]\nenabled = false\n";
	static char dump[16384];
	rift_config cfg;
	char path[512];
	FILE *f;
	int n;

	/* rift_config_init takes log.level from RIFT_LOG: the seed is the
	 * defaults whatever the environment says. */
	unsetenv("RIFT_LOG");
	rift_config_init(&cfg);
	n = rift_config_dump(&cfg, dump, sizeof(dump));
	if (n <= 0 || (size_t)n >= sizeof(dump))
		exit(1);
	put("config", "defaults", dump, (size_t)n);
	put("config", "every-kind", every, sizeof(every) - 1);

	/* The dictionary: sections, keys and the words of values. */
	snprintf(path, sizeof(path), "%s/config.dict", top);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "# made by tests/fuzz/mkseeds.c from the key table\n");
	for (size_t i = 0; i < N_SECTIONS; i++)
		fprintf(f, "\"[%s]\"\n", rift__cfg_sections[i]);
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &rift__cfg_keys[i];

		fprintf(f, "\"%s = \"\n", k->name);
		if (k->alias)
			fprintf(f, "\"%s = \"\n", k->alias);
		for (size_t j = 0; k->names && k->names[j]; j++)
			fprintf(f, "\"\\\"%s\\\"\"\n", k->names[j]);
	}
	fprintf(f, "\"true\"\n\"false\"\n\"KiB\"\n\"MiB\"\n\"GiB\"\n\"0x\"\n"
		   "\"\\\\u\"\n\"'''\"\n\"[[\"\n\"inf\"\n\"nan\"\n");
	if (fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* ---- rift-kv's RESP requests ---- */

/* A request as a client frames it: "*<n>" and n bulks. */
static void resp_cmd(struct kv_resp_out *o, size_t argc,
		     const char *const *argv, const size_t *lens)
{
	int rc = kv_resp_add_array(o, argc);

	for (size_t i = 0; i < argc && !rc; i++)
		rc = kv_resp_add_bulk(o, argv[i], lens ? lens[i]
						       : strlen(argv[i]));
	if (rc)
		exit(1);
}

/* Seeds of fuzz_resp.c: its two leading bytes (the limits, the size of
 * the pieces), then requests. */
static void resp_seed(const char *name, uint8_t limits, uint8_t piece,
		      const struct kv_resp_out *o, const char *tail)
{
	static char b[4096];
	size_t n = strlen(tail);

	if (2 + o->len + n > sizeof(b))
		exit(1);
	b[0] = (char)limits;
	b[1] = (char)piece;
	memcpy(b + 2, o->buf, o->len);
	memcpy(b + 2 + o->len, tail, n);
	put("resp", name, b, 2 + o->len + n);
}

static void resp_seeds(void)
{
	static const char *const set[] = { "SET", "key", "value", "EX", "10" };
	static const char *const get[] = { "GET", "key" };
	static const char *const mset[] = { "MSET", "a", "1\r\n2", "b", "" };
	static const size_t mset_lens[] = { 4, 1, 4, 1, 0 };
	static char big[280];
	const char *const big_set[] = { "SET", "k", big };
	struct kv_resp_out o = { 0 };

	/* defaults: both forms pipelined, no-command requests between */
	resp_cmd(&o, 5, set, NULL);
	resp_cmd(&o, 2, get, NULL);
	resp_seed("pipeline", 0x00, 7, &o,
		  "*0\r\nPING\r\n\r\n*-1\r\nECHO \"a b\\x41\" 'c\\'d'\n");
	o.len = 0;
	resp_cmd(&o, 5, mset, mset_lens);
	resp_seed("binary", 0x00, 1, &o, "");
	/* small limits (64 arguments, 1000-byte bulks, 200-byte lines, 300
	 * bytes a command): a command near them, then one over */
	memset(big, 'v', sizeof(big));
	o.len = 0;
	resp_cmd(&o, 3, big_set, (const size_t[]){ 3, 1, 200 }); /* 228 */
	resp_cmd(&o, 3, big_set, (const size_t[]){ 3, 1, 280 }); /* 308 */
	resp_seed("limits", 0xff, 13, &o, "");
	kv_resp_out_free(&o);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds TESTS_FUZZ_DIR\n");
		return 2;
	}
	top = argv[1];
	handshake_seeds();
	hostile_seeds();
	frame_seeds();
	verbs_seeds();
	url_seeds();
	config_seeds();
	resp_seeds();
	return 0;
}
