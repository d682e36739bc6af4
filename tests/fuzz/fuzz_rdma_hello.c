/*
 * libFuzzer target for the hello in rdma_cm's private data
 * (src/transports/verbs/rdma_hello.c, what rdma_cm.c applies to a path):
 * the input is the private data, at most 255 bytes as rdma_cm's length
 * field allows.  No device is needed.
 *
 * Properties beyond "no crash": nothing is accepted without 16 bytes; an
 * accepted hello has a receive depth of 2..65536 and a buffer size of
 * 64 B..64 MiB, and encodes back to the bytes it came from.
 */
#include <stdlib.h>
#include <string.h>

#include "transports/verbs/rdma_hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t len = size > 255 ? 255 : (uint8_t)size;
	uint8_t *pd = malloc(len ? len : 1);
	struct rift__rdma_hello h;
	struct cm_hello again;

	if (!pd)
		return 0;
	memcpy(pd, data, len);
	if (rift__rdma_hello_decode(NULL, len, &h) == NULL)
		abort();
	if (rift__rdma_hello_decode(pd, len, &h) != NULL) {
		free(pd);
		return 0;
	}
	if (len < HELLO_SIZE || h.rq_depth < 2 || h.rq_depth > 65536 ||
	    h.buf_size < 64 || h.buf_size > (64u << 20))
		abort();
	rift__rdma_hello_encode(&again, &h);
	if (memcmp(&again, pd, HELLO_SIZE) != 0)
		abort();
	free(pd);
	return 0;
}
