/*
 * libFuzzer target for the cm=tcp side channel's messages: the first
 * RIFT_BOOT_SIZE bytes of the input are a peer's bootstrap, decoded as
 * the side channel does (src/transports/verbs/cm_tcp.c), checked against
 * both link layers (rift__boot_check) and with the hello it carries
 * decoded (rdma_hello.c), as rdma_boot.c would before touching a QP.
 *
 * Properties beyond "no crash": a decoded bootstrap encodes back to the
 * same bytes (the reserved ones as zeros); one that passes the check
 * names a QP number, PSN, MTU, link layer and LID or GID that can be; an
 * accepted hello's depth and buffer size are in range.
 */
#include <stdlib.h>
#include <string.h>

#include "transports/verbs/cm_tcp.h"
#include "transports/verbs/rdma_hello.h"

static void checked(const struct rift__boot *b, uint8_t ll)
{
	static const uint8_t zero[16];

	if (rift__boot_check(b, ll) != NULL)
		return;
	if (b->link_layer != ll || b->qpn < 2 || b->qpn > 0xffffffu ||
	    b->psn > 0xffffffu || b->mtu < 1 || b->mtu > 5)
		abort();
	if (ll == 2 && (!memcmp(b->gid, zero, 16) || b->gid[0] == 0xff))
		abort();
	if (ll == 1 && (b->lid == 0 || b->lid >= 0xc000))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *in, out[RIFT_BOOT_SIZE];
	struct rift__boot b;
	struct rift__rdma_hello h;

	if (size < RIFT_BOOT_SIZE)
		return 0; /* the side channel decodes whole bootstraps only */
	in = malloc(RIFT_BOOT_SIZE);
	if (!in)
		return 0;
	memcpy(in, data, RIFT_BOOT_SIZE);
	if (rift__boot_decode(in, &b) != NULL) {
		free(in);
		return 0;
	}
	rift__boot_encode(out, &b);
	if (memcmp(out, in, RIFT_BOOT_SIZE - 8) != 0)
		abort();
	for (size_t i = RIFT_BOOT_SIZE - 8; i < RIFT_BOOT_SIZE; i++)
		if (out[i])
			abort();
	if (!rift__rej_str(b.status))
		abort();
	checked(&b, 1);
	checked(&b, 2);
	if (rift__rdma_hello_decode(b.hello, RIFT_BOOT_HELLO_LEN, &h) == NULL &&
	    (h.rq_depth < 2 || h.rq_depth > 65536 || h.buf_size < 64 ||
	     h.buf_size > (64u << 20)))
		abort();
	free(in);
	return 0;
}
