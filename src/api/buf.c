/*
 * buf.c - rift_buf_alloc and rift_buf_free: send buffers the application
 * fills itself, in registered memory when the context has a pool (see
 * session/buf.c).
 */
#include "session/session.h"

void *rift_buf_alloc(rift_ctx *ctx, size_t len)
{
	struct rift__buf *b;

	if (!ctx || len > ctx->cfg.max_msg_size)
		return NULL;
	b = rift__buf_new_registered(ctx, len, true);
	if (!b)
		return NULL;
	b->om.user_buf = true;
	return b->data;
}

void rift_buf_free(rift_ctx *ctx, void *buf)
{
	struct rift__buf *b;

	if (!ctx)
		return;
	b = rift__buf_from_user(ctx, buf);
	if (b)
		rift__buf_release(b);
}
