/*
 * libFuzzer target for the frame decoder: treat the input as a stream of
 * frames, as a TCP path does, and decode headers and payloads until the
 * data runs out or a frame is refused.  Properties checked beyond "no
 * crash": an accepted header re-encodes to the same bytes, and so does an
 * accepted JOIN payload; an accepted length never exceeds the limit
 * given.
 */
#include <stdlib.h>
#include <string.h>

#include "rift.h"
#include "session/wire.h"

#define MAX_MSG (1u << 20)

static const uint8_t key[RIFT_SESSION_KEY_LEN] = { 0x9e, 0x37, 0x79, 0xb9, 0x7f,
						   0x4a, 0x7c, 0x15, 0xf3, 0x9c,
						   0xc0, 0x60, 0x5c, 0xed, 0xc8,
						   0x34 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size >= RIFT_HDR_SIZE) {
		struct rift__hdr h;
		struct rift__hello hello;
		struct rift__join join;
		uint8_t again_join[RIFT_JOIN_SIZE];
		struct rift__error_frame ef;
		const char *why = NULL;
		uint8_t again[RIFT_HDR_SIZE];

		if (rift__hdr_decode(data, size, MAX_MSG, &h, &why) != 0) {
			if (!why)
				abort(); /* a refusal always has a reason */
			return 0;
		}
		if (h.len > MAX_MSG)
			abort();
		rift__hdr_encode(again, &h);
		if (memcmp(again, data, RIFT_HDR_SIZE) != 0)
			abort();
		data += RIFT_HDR_SIZE;
		size -= RIFT_HDR_SIZE;
		if (h.len > size)
			return 0;
		switch (h.type) {
		case RIFT_FRAME_HELLO:
		case RIFT_FRAME_HELLO_ACK:
		case RIFT_FRAME_RESUME:
		case RIFT_FRAME_RESUME_ACK:
			if (rift__hello_decode(data, h.len, &hello, &why) == 0 &&
			    (hello.session_id == 0 ||
			     hello.held_seq < hello.recv_seq))
				abort();
			/* The proof check reads the payload as the session
			 * does (under the sanitizers: no overread, no UB). */
			if (h.len == RIFT_HELLO_SIZE)
				(void)rift__hello_proves(data, h.type,
							 RIFT_HELLO_AUTH_AT, key);
			break;
		case RIFT_FRAME_JOIN:
		case RIFT_FRAME_JOIN_ACK:
			/* An accepted JOIN has nothing the encoder would not
			 * write again: padding, path id and role checked. */
			if (rift__join_decode(data, h.len, &join, &why) == 0 &&
			    (rift__join_encode(again_join, &join) != h.len ||
			     memcmp(again_join, data, h.len) != 0))
				abort();
			if (h.len == RIFT_JOIN_SIZE)
				(void)rift__hello_proves(data, h.type,
							 RIFT_JOIN_AUTH_AT, key);
			break;
		case RIFT_FRAME_ERROR:
			if (rift__error_decode(data, h.len, &ef, &why) == 0 &&
			    strlen(ef.text) > RIFT_ERROR_TEXT_MAX)
				abort();
			break;
		default:
			break;
		}
		data += h.len;
		size -= h.len;
	}
	return 0;
}
