/*
 * mkseeds.c - write the fuzz targets' seed inputs (tests/fuzz/corpus/NAME/
 * seed-*) and the config target's dictionary from valid inputs made with
 * the library's own encoders, so that they follow the wire if it changes.
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

#include "api/config_int.h"
#include "session/wire.h"
#include "transports/verbs/cm_tcp.h"
#include "transports/verbs/rdma_hello.h"

static const char *top;

static void put(const char *target, const char *name, const void *data,
		size_t n)
{
	char path[512];
	FILE *f;

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

	rift__hdr_encode(s->b + s->n, &h);
	s->n += RIFT_HDR_SIZE;
	if (payload)
		memcpy(s->b + s->n, payload, len);
	s->n += payload ? len : 0;
}

static void hello(struct stream *s, uint8_t type, uint64_t id,
		  uint64_t recv_seq, uint64_t held_seq)
{
	struct rift__hello m = { .proto = RIFT_WIRE_VERSION,
				 .session_id = id,
				 .recv_seq = recv_seq,
				 .held_seq = held_seq,
				 .max_msg_size = 1u << 20,
				 .window = 1u << 20 };
	uint8_t p[RIFT_HELLO_SIZE];

	rift__hello_encode(p, &m);
	frame(s, type, RIFT_HELLO_SIZE, 0, 0, p);
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
	struct stream *s;

	/* As a client of the listener (fuzz_handshake.c: ids 1..3 are its
	 * sessions A, B and C; each sent 3 messages, 1 acknowledged, and
	 * received 2). */
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
	s = part(0);
	hello(s, RIFT_FRAME_RESUME, 2, 0, 5);
	put("handshake", "resume-lies", s->b, s->n);
	s = part(0);
	hello(s, RIFT_FRAME_RESUME, NEW_ID, 0, 0);
	put("handshake", "resume-unknown", s->b, s->n);
	s = part(0);
	error(s, RIFT_EPROTO, "no");
	put("handshake", "error-first", s->b, s->n);

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

	/* As the server a client re-attaches to: it sent 2 messages, none
	 * acknowledged, and received none. */
	s = part(3);
	hello(s, RIFT_FRAME_RESUME_ACK, 1, 1, 2);
	data(s, 1, 2, "back");
	put("handshake", "resume-ack", s->b, s->n);
	s = part(3);
	hello(s, RIFT_FRAME_RESUME_ACK, 1, 0, 0);
	frame(s, RIFT_FRAME_ACK, 0, 0, 2, NULL);
	put("handshake", "resume-ack-replay", s->b, s->n);
	s = part(3);
	error(s, RIFT_ESESSION, "RESUME for an unknown session");
	put("handshake", "resume-refused", s->b, s->n);
}

/*
 * fuzz_hostile.c sends an input's first two thirds on one connection and
 * the rest on a second: a then b, with b padded (PINGs, then less than a
 * header, which waits for more) to start at two thirds.  a's length must
 * be even and b no longer than half of it.
 */
static void two_connections(struct stream *s, const struct stream *a,
			    const struct stream *b)
{
	size_t want = a->n / 2;

	if (a->n % 2 || b->n > want) {
		fprintf(stderr, "mkseeds: connections of %zu and %zu bytes\n",
			a->n, b->n);
		exit(1);
	}
	s->n = 0;
	memcpy(s->b, a->b, a->n);
	memcpy(s->b + a->n, b->b, b->n);
	s->n = a->n + b->n;
	while (s->n + RIFT_HDR_SIZE <= a->n + want)
		frame(s, RIFT_FRAME_PING, 0, 0, 0, NULL);
	memset(s->b + s->n, 0, a->n + want - s->n);
	s->n = a->n + want;
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
	/* A session made on one connection resumed on the other. */
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
	s.n = 0;
	hello(&s, RIFT_FRAME_RESUME, NEW_ID, 0, 0);
	put("hostile", "resume", s.b, s.n);
	s.n = 0;
	hello(&s, RIFT_FRAME_HELLO, NEW_ID, 0, 0);
	hello(&s, RIFT_FRAME_HELLO, NEW_ID + 1, 0, 0);
	put("hostile", "two-hellos", s.b, s.n);
	s.n = 0;
	error(&s, RIFT_EPROTO, "bye");
	put("hostile", "error", s.b, s.n);
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

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds TESTS_FUZZ_DIR\n");
		return 2;
	}
	top = argv[1];
	handshake_seeds();
	hostile_seeds();
	verbs_seeds();
	url_seeds();
	config_seeds();
	return 0;
}
