/*
 * rdma_hello.h - rift's hello in the verbs transport: what each side of a
 * path tells the other before its first SEND (receive depth, which is the
 * peer's initial credits; receive buffer size; rendezvous and bare
 * frames).  It travels in rdma_cm's private data, or inside the cm=tcp
 * bootstrap (cm_tcp.h).  Encoding and checking need no device, so the
 * decoder is fuzzed on its own (tests/fuzz/fuzz_rdma_hello.c); rdma_cm.c
 * fills a path's hello and applies the peer's.
 */
#ifndef RIFT_VERBS_RDMA_HELLO_H
#define RIFT_VERBS_RDMA_HELLO_H

#include <stddef.h>
#include <stdint.h>

#define HELLO_MAGIC 0x52494654u /* "RIFT" */
#define HELLO_VERSION 1u
#define HELLO_SIZE 16u

/* Hello flags. */
#define HELLO_F_RNDV 1u /* serves and issues RDMA READs (rendezvous) */
#define HELLO_F_BARE 2u /* takes bare DATA frames (BARE_IMM) */
#define HELLO_F_OOB 4u  /* takes an ERROR frame out of band (OOB_IMM) */

/* On the wire, big-endian: fits the 56 bytes a connect request may
 * carry. */
struct cm_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t flags;    /* HELLO_F_*; unknown bits are ignored */
	uint32_t rq_depth; /* receive buffers posted = initial credits */
	uint32_t buf_size; /* bytes per receive buffer */
} __attribute__((packed));

_Static_assert(sizeof(struct cm_hello) == HELLO_SIZE, "hello size");

/* A hello, host byte order. */
struct rift__rdma_hello {
	uint16_t flags;    /* HELLO_F_*, unknown bits kept */
	uint32_t rq_depth; /* receive buffers posted, count */
	uint32_t buf_size; /* bytes per receive buffer */
};

void rift__rdma_hello_encode(struct cm_hello *out,
			     const struct rift__rdma_hello *h);

/*
 * Decode and check the len bytes at data (private data may carry more
 * than the hello: the rest is ignored).  Returns NULL with *out filled,
 * or a static reason: none, a bad magic or version, a depth or buffer
 * size that cannot be.
 */
const char *rift__rdma_hello_decode(const void *data, size_t len,
				    struct rift__rdma_hello *out);

#endif
