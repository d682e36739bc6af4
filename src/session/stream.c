/*
 * stream.c - frames out of a byte stream; see stream.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session.h"
#include "session/stream.h"

int rift__stream_init(struct rift__stream *s, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->rbuf = malloc(cap);
	if (!s->rbuf)
		return RIFT_ENOMEM;
	s->rcap = cap;
	return 0;
}

void rift__stream_free(struct rift__stream *s)
{
	free(s->big);
	free(s->rbuf);
	s->big = NULL;
	s->rbuf = NULL;
}

/*
 * A frame of need bytes (header included) is large: read on its own.
 * Reading a header alone costs a system call, moving a partial frame a
 * copy of the part read; from half the buffer up the copy costs more.
 */
static inline bool large(const struct rift__stream *s, size_t need)
{
	return need > s->rcap / 2;
}

void rift__stream_space(struct rift__stream *s, uint8_t **dst, size_t *room)
{
	if (s->big) {
		*dst = s->big + s->big_got;
		*room = s->room = s->big_hdr.len - s->big_got;
		return;
	}
	*dst = s->rbuf + s->rend;
	/* After a large frame, the next header alone, so that the frame
	 * after it lands where it belongs as well: always after one too big
	 * for the buffer (if the next is too, its start read into the buffer
	 * would be copied out again, up to a whole buffer of it), and after
	 * one that fit only while more is waiting (a frame that came alone,
	 * a request or a reply, is best read whole in one call). */
	if (s->rstart == s->rend && s->hdr_first && (s->filled || s->was_big)) {
		*room = RIFT_HDR_SIZE; /* at 0: process() rewinds when empty */
	} else if (s->need && large(s, s->need)) {
		/* Up to the frame's end: what follows it would have to be
		 * moved to the front once it is delivered. */
		*room = s->rstart + s->need - s->rend;
	} else {
		*room = s->rcap - s->rend;
	}
	s->room = *room;
}

/* Bytes moved within or out of the read buffer: a cost the transport's
 * own reads do not show. */
static void count_copy(rift__path *p, size_t n)
{
	if (p->conn)
		p->conn->stats.rx_copied_bytes += n;
}

/*
 * rift__hdr_decode, and before the path's handshake completed no DATA
 * frame at all: until then only handshake and control frames, whose
 * lengths are their own and small, are read.  A length a peer that never
 * sent a HELLO declares (up to max_msg_size) is refused at the header,
 * before a byte of its payload is taken or a block given for it.
 */
static int decode(const rift__path *p, const uint8_t *in, size_t n,
		  struct rift__hdr *h, const char **why)
{
	int rc = rift__hdr_decode(in, n, p->ctx->cfg.max_msg_size, h, why);

	if (!rc && rift__frame_sequenced(h->type) &&
	    !rift__path_takes_data(p)) {
		*why = "data before the handshake";
		return RIFT_EPROTO;
	}
	return rc;
}

/* Deliver complete frames from the buffer; returns as commit does. */
static int process(rift__path *p, struct rift__stream *s)
{
	size_t need = RIFT_HDR_SIZE; /* bytes the frame at rstart needs */

	while (s->rend - s->rstart >= RIFT_HDR_SIZE) {
		struct rift__hdr h;
		const char *why = NULL;
		int rc;

		rc = decode(p, s->rbuf + s->rstart, s->rend - s->rstart, &h,
			    &why);
		if (rc) {
			rift__path_say_error(p, RIFT_EPROTO, why);
			rift__path_failed(p, RIFT_EPROTO, "bad frame: %s", why);
			return -1;
		}
		need = RIFT_HDR_SIZE + (size_t)h.len;
		s->hdr_first = large(s, need);
		s->was_big = need > s->rcap;
		if (s->was_big) {
			/* Too big for the buffer: give it a block of its own,
			 * move what we have there, take the rest directly. */
			size_t have = s->rend - s->rstart - RIFT_HDR_SIZE;

			s->big = rift__spare_get(p->ctx, h.len);
			if (!s->big) {
				rift__path_failed(p, RIFT_ENOMEM,
						  "no memory for a %u-byte message",
						  h.len);
				return -1;
			}
			s->big_hdr = h;
			memcpy(s->big, s->rbuf + s->rstart + RIFT_HDR_SIZE, have);
			count_copy(p, have);
			s->big_got = have;
			s->rstart = s->rend = 0;
			s->need = 0;
			return 0;
		}
		if (s->rend - s->rstart < need)
			break;
		rc = rift__path_on_data(p, &h, s->rbuf + s->rstart +
						       RIFT_HDR_SIZE);
		if (rc < 0 || p->state == RIFT_PATH_DEAD)
			return -1;
		s->rstart += need;
		need = RIFT_HDR_SIZE;
	}
	/* need is the partial frame's size once its header is in. */
	s->need = s->rend - s->rstart >= RIFT_HDR_SIZE ? need : 0;
	if (s->rstart == s->rend) {
		s->rstart = s->rend = 0;
	} else if (s->rstart + need > s->rcap) {
		/* The partial frame cannot complete where it is. */
		memmove(s->rbuf, s->rbuf + s->rstart, s->rend - s->rstart);
		count_copy(p, s->rend - s->rstart);
		s->rend -= s->rstart;
		s->rstart = 0;
	}
	return 0;
}

/* A large frame finished arriving in its own block. */
static int big_done(rift__path *p, struct rift__stream *s)
{
	int rc = rift__path_on_frame(p, &s->big_hdr, s->big, s->big);

	s->big = NULL; /* the session owns (or freed) it now */
	return rc < 0 || p->state == RIFT_PATH_DEAD ? -1 : 0;
}

int rift__stream_commit(rift__path *p, struct rift__stream *s, size_t n)
{
	s->filled = n == s->room;
	if (s->big) {
		s->big_got += n;
		return s->big_got == s->big_hdr.len ? big_done(p, s) : 0;
	}
	s->rend += n;
	return process(p, s);
}

int rift__stream_inplace(rift__path *p, struct rift__stream *s,
			 uint8_t *buf, size_t len, size_t *used)
{
	size_t off = 0;

	*used = 0;
	if (!rift__stream_idle(s))
		return 0;
	while (len - off >= RIFT_HDR_SIZE) {
		struct rift__hdr h;
		const char *why = NULL;
		int rc;

		if (decode(p, buf + off, len - off, &h, &why))
			break; /* the copying path reports it */
		if (len - off < RIFT_HDR_SIZE + (size_t)h.len)
			break;
		rc = rift__path_on_data(p, &h, buf + off + RIFT_HDR_SIZE);
		if (rc < 0 || p->state == RIFT_PATH_DEAD)
			return -1;
		off += RIFT_HDR_SIZE + (size_t)h.len;
		*used = off;
	}
	return 0;
}
