/*
 * bytestream.c - the life cycle every byte-stream transport shares
 * (rift.h, "Byte streams"; internal.h, struct rift__bs_ops): counting
 * streams and their listeners in the context, delivering their events,
 * and running close callbacks from a later round, then freeing.  The
 * protocols themselves live with their transports (verbs/valkey_rdma.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void node_add(rift_ctx *ctx, struct rift__bs_node *bn)
{
	bn->ctx = ctx;
	rift__list_add_tail(&ctx->bstreams, &bn->node);
}

static void stream_done(rift_timer *t, void *user)
{
	rift_stream *s = user;

	RIFT_UNUSED(t);
	rift__list_del(&s->bn.node);
	if (s->close_cb)
		s->close_cb(s);
	s->ops->free(s);
}

static void listener_done(rift_timer *t, void *user)
{
	rift_stream_listener *l = user;

	RIFT_UNUSED(t);
	rift__list_del(&l->bn.node);
	if (l->close_cb)
		l->close_cb(l);
	free(l);
}

void rift__bs_init(rift_ctx *ctx, rift_stream *s,
		   const struct rift__bs_ops *ops, uint32_t rx_size)
{
	s->ops = ops;
	s->rx_size = rx_size;
	s->st.size = sizeof(s->st);
	rift__timer_init(ctx, &s->done, stream_done, s);
	node_add(ctx, &s->bn);
}

void rift__bs_listener_init(rift_ctx *ctx, rift_stream_listener *l,
			    const struct rift__bs_ops *ops, uint32_t rx_size)
{
	l->ops = ops;
	l->rx_size = rx_size;
	rift__timer_init(ctx, &l->done, listener_done, l);
	node_add(ctx, &l->bn);
}

void rift__bs_emit(rift_stream *s, rift_event_type type, int status,
		   const char *fmt, ...)
{
	char msg[RIFT_ERRMSG_LEN];
	rift_event ev;
	va_list ap;

	if (s->ended)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (type == RIFT_EVENT_ERROR || type == RIFT_EVENT_DISCONNECTED) {
		s->ended = true;
		if (status)
			snprintf(s->errmsg, sizeof(s->errmsg), "%s", msg);
	}
	if (type == RIFT_EVENT_CONNECTED)
		s->established = true;
	if (s->closing || !s->cbs.on_event)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.status = status;
	ev.transport = RIFT_TRANSPORT_RDMA;
	ev.peer = s->peer;
	ev.message = msg;
	ev.local = "";
	ev.device = "";
	s->cbs.on_event(s, &ev);
}

void rift__bs_closed(rift_stream *s)
{
	/* A zero timer: the next round at the earliest, never from inside
	 * rift_stream_close.  With no memory for the timer heap the handle
	 * would leak: it is closed now instead, said in the log. */
	if (rift_timer_start(&s->done, 0, 0)) {
		RIFT_ERROR(s->bn.ctx, "stream %s: out of memory for its close "
			   "timer: close_cb runs now", s->peer);
		stream_done(&s->done, s);
	}
}

void rift__bs_drop(rift_stream *s)
{
	s->close_cb = NULL;
	rift__bs_closed(s);
}

void rift__bs_listener_closed(rift_stream_listener *l)
{
	if (rift_timer_start(&l->done, 0, 0)) {
		RIFT_ERROR(l->bn.ctx, "stream listener on port %d: out of "
			   "memory for its close timer: close_cb runs now",
			   l->port);
		listener_done(&l->done, l);
	}
}
