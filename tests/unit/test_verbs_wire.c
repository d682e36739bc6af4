/*
 * The verbs transport's setup messages, without a device: the hello in
 * rdma_cm's private data (rdma_hello.c) and the cm=tcp bootstrap
 * (cm_tcp.c), round trips and every rejection.  tests/fuzz fuzzes both.
 */
#include <arpa/inet.h>

#include "internal.h"
#include "transports/verbs/cm_tcp.h"
#include "transports/verbs/rdma_hello.h"
#include "../runner.h"

TEST(rdma_hello_round_trip_and_rejections)
{
	struct rift__rdma_hello in = { .flags = HELLO_F_RNDV | HELLO_F_BARE | 0x100,
				       .rq_depth = 512,
				       .buf_size = 65536 },
				out;
	uint8_t pd[56] = { 0 };
	struct cm_hello h, bad;

	rift__rdma_hello_encode(&h, &in);
	CHECK_EQ(sizeof(h), HELLO_SIZE);
	memcpy(pd, &h, sizeof(h));
	/* Private data may be longer than the hello: the rest is ignored. */
	CHECK(rift__rdma_hello_decode(pd, sizeof(pd), &out) == NULL);
	CHECK_EQ(out.flags, in.flags); /* unknown bits kept, ignored */
	CHECK_EQ(out.rq_depth, 512);
	CHECK_EQ(out.buf_size, 65536);

	CHECK_STR(rift__rdma_hello_decode(NULL, 16, &out),
		  "connection without rift's hello");
	CHECK_STR(rift__rdma_hello_decode(pd, HELLO_SIZE - 1, &out),
		  "connection without rift's hello");
	bad = h;
	bad.magic ^= htonl(1);
	CHECK_STR(rift__rdma_hello_decode(&bad, sizeof(bad), &out),
		  "hello with a bad magic number");
	bad = h;
	bad.version = htons(2);
	CHECK_STR(rift__rdma_hello_decode(&bad, sizeof(bad), &out),
		  "hello of an unsupported version");
	for (uint32_t d = 0; d < 3; d++) {
		uint32_t depths[] = { 1, 65537, 0 };

		bad = h;
		bad.rq_depth = htonl(depths[d]);
		CHECK_STR(rift__rdma_hello_decode(&bad, sizeof(bad), &out),
			  "hello advertises an impossible receive depth");
	}
	bad = h;
	bad.buf_size = htonl(63);
	CHECK_STR(rift__rdma_hello_decode(&bad, sizeof(bad), &out),
		  "hello advertises an impossible buffer size");
	bad.buf_size = htonl((64u << 20) + 1);
	CHECK_STR(rift__rdma_hello_decode(&bad, sizeof(bad), &out),
		  "hello advertises an impossible buffer size");
}

TEST(cm_tcp_bootstrap_round_trip_and_checks)
{
	struct rift__boot in = { .link_layer = 2, .qpn = 0x123456,
				 .psn = 0xabcdef, .mtu = 5, .rd_atom = 16,
				 .caps = 0x80000001 },
			  out;
	uint8_t w[RIFT_BOOT_SIZE], w2[RIFT_BOOT_SIZE];

	memcpy(in.gid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\0\0\x01", 16);
	memset(in.hello, 0xa5, sizeof(in.hello));
	rift__boot_encode(w, &in);
	CHECK(rift__boot_decode(w, &out) == NULL);
	CHECK_EQ(out.status, 0);
	CHECK_EQ(out.link_layer, 2);
	CHECK(memcmp(out.gid, in.gid, 16) == 0);
	CHECK_EQ(out.qpn, in.qpn);
	CHECK_EQ(out.psn, in.psn);
	CHECK_EQ(out.mtu, 5);
	CHECK_EQ(out.rd_atom, 16);
	CHECK_EQ(out.caps, in.caps);
	CHECK(memcmp(out.hello, in.hello, sizeof(in.hello)) == 0);
	/* Reserved bytes go out as zeros and are ignored coming in. */
	for (size_t i = RIFT_BOOT_SIZE - 8; i < RIFT_BOOT_SIZE; i++)
		CHECK_EQ(w[i], 0);
	memset(w + RIFT_BOOT_SIZE - 8, 0xff, 8);
	CHECK(rift__boot_decode(w, &out) == NULL);
	rift__boot_encode(w2, &out);
	CHECK(memcmp(w, w2, RIFT_BOOT_SIZE - 8) == 0);

	CHECK(rift__boot_check(&in, 2) == NULL);
	CHECK_STR(rift__boot_check(&in, 1),
		  "peer is on Ethernet, we are on InfiniBand");
	out = in;
	out.qpn = 1;
	CHECK_STR(rift__boot_check(&out, 2),
		  "bootstrap names an impossible QP number");
	out = in;
	out.gid[0] = 0xff;
	CHECK_STR(rift__boot_check(&out, 2), "bootstrap names a multicast GID");
	out = in;
	out.link_layer = 1;
	out.lid = 0xc000;
	CHECK_STR(rift__boot_check(&out, 1), "bootstrap names an impossible LID");

	w[0] ^= 1;
	CHECK_STR(rift__boot_decode(w, &out),
		  "side channel: bad magic (not a rift verbs bootstrap)");
	w[0] ^= 1;
	w[5] = 2;
	CHECK_STR(rift__boot_decode(w, &out),
		  "side channel: unsupported bootstrap version");
}
