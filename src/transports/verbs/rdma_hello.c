/*
 * rdma_hello.c - rift's hello in the verbs transport, to and from the
 * wire; see rdma_hello.h.  No verbs here: a peer that advertises nonsense
 * is refused before any resource is sized from what it said.
 */
#include <arpa/inet.h>
#include <string.h>

#include "transports/verbs/rdma_hello.h"

void rift__rdma_hello_encode(struct cm_hello *out,
			     const struct rift__rdma_hello *h)
{
	out->magic = htonl(HELLO_MAGIC);
	out->version = htons(HELLO_VERSION);
	out->flags = htons(h->flags);
	out->rq_depth = htonl(h->rq_depth);
	out->buf_size = htonl(h->buf_size);
}

const char *rift__rdma_hello_decode(const void *data, size_t len,
				    struct rift__rdma_hello *out)
{
	struct cm_hello h;

	if (!data || len < sizeof(h))
		return "connection without rift's hello";
	memcpy(&h, data, sizeof(h));
	if (ntohl(h.magic) != HELLO_MAGIC)
		return "hello with a bad magic number";
	if (ntohs(h.version) != HELLO_VERSION)
		return "hello of an unsupported version";
	if (ntohl(h.rq_depth) < 2 || ntohl(h.rq_depth) > 65536)
		return "hello advertises an impossible receive depth";
	if (ntohl(h.buf_size) < 64 || ntohl(h.buf_size) > (64u << 20))
		return "hello advertises an impossible buffer size";
	out->flags = ntohs(h.flags);
	out->rq_depth = ntohl(h.rq_depth);
	out->buf_size = ntohl(h.buf_size);
	return NULL;
}
