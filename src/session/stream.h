/*
 * stream.h - turn a byte stream into frames for the session layer.
 *
 * Used by every transport that carries rift frames as a stream of bytes:
 * TCP reads into it, the verbs transport copies receive buffers into it.
 * Frames that fit the buffer are delivered in place; a frame larger than
 * the buffer gets a block of its own and its bytes go straight there.
 * Until the path's handshake completed, a DATA header is refused as soon
 * as it is read (the path fails with RIFT_EPROTO): no block is ever given
 * for a length a peer declared before its HELLO.
 */
#ifndef RIFT_SESSION_STREAM_H
#define RIFT_SESSION_STREAM_H

#include "internal.h"

struct rift__stream {
	uint8_t *rbuf;
	size_t rcap, rstart, rend;
	size_t need;              /* bytes of the frame at rstart, header
				     included, when its header is in (or 0) */
	bool hdr_first;           /* the last frame was large: the next
				     read may take a header alone */
	bool was_big;             /* it was received into a block */
	bool filled;              /* the last read filled the space given:
				     more is likely waiting */
	size_t room;              /* the space given last, bytes */
	struct rift__hdr big_hdr; /* frame being received into big */
	uint8_t *big;             /* its payload block, or NULL */
	size_t big_got;
};

int rift__stream_init(struct rift__stream *s, size_t cap);
void rift__stream_free(struct rift__stream *s);
/*
 * Where the next bytes go and how many to read (never 0).  Small frames
 * are read many at a time; a large one (over half the buffer) is read up
 * to its last byte and no further, and after it the next header alone
 * (after one that fit the buffer, only while more is waiting): a stream
 * of large frames is never moved in memory, each lands where it is
 * delivered from (the buffer, or a block of its own).
 */
void rift__stream_space(struct rift__stream *s, uint8_t **dst, size_t *room);
/*
 * n bytes were placed at the space given.  Delivers whole frames to the
 * session.  Returns 0 to go on, -1 when the path died (the transport must
 * stop).
 */
int rift__stream_commit(rift__path *p, struct rift__stream *s, size_t n);
/*
 * Zero-copy receive: while the stream holds nothing, deliver the whole
 * frames at the start of buf straight from buf (the application borrows
 * them until on_recv returns).  *used is set to the bytes consumed; the
 * rest (a partial frame) goes through rift__stream_space/commit as usual.  Returns 0, or -1 when
 * the path died.
 */
int rift__stream_inplace(rift__path *p, struct rift__stream *s,
			 uint8_t *buf, size_t len, size_t *used);
/* True while the stream holds no byte: frames may be delivered from
 * elsewhere (rift__stream_inplace, or a transport's own look). */
static inline bool rift__stream_idle(const struct rift__stream *s)
{
	return !s->big && s->rstart == s->rend;
}

#endif
