/*
 * transport.c - the default ops table every backend starts from.
 *
 * Each slot of the default table answers "not supported", so the session
 * layer calls through any table without testing for NULL.
 */
#include <string.h>

#include "internal.h"

static rift_fallback_reason nosup_available(rift_ctx *ctx)
{
	RIFT_UNUSED(ctx);
	return RIFT_FALLBACK_NOT_BUILT;
}

static int nosup_connect(rift_ctx *ctx, const struct sockaddr *sa,
			 socklen_t len, rift__path **out)
{
	RIFT_UNUSED(sa);
	RIFT_UNUSED(len);
	RIFT_UNUSED(out);
	return rift__ctx_fail(ctx, RIFT_ENOTSUP, "transport not supported");
}

static int nosup_listen(rift_listener *l, const struct sockaddr *sa,
			socklen_t len)
{
	RIFT_UNUSED(sa);
	RIFT_UNUSED(len);
	return rift__ctx_fail(l->ctx, RIFT_ENOTSUP, "transport not supported");
}

static void nosup_listen_close(rift_listener *l)
{
	RIFT_UNUSED(l);
}

static void nosup_flush(rift__path *p)
{
	RIFT_UNUSED(p);
}

static void nosup_set_reading(rift__path *p, bool on)
{
	RIFT_UNUSED(p);
	RIFT_UNUSED(on);
}

static void nosup_destroy(rift__path *p)
{
	RIFT_UNUSED(p);
}

static void nosup_cut(rift__path *p)
{
	RIFT_UNUSED(p);
}

#define RIFT_TRANSPORT_DEFAULTS                                               \
	.name = "none", .kind = RIFT_TRANSPORT_NONE,                          \
	.available = nosup_available, .connect = nosup_connect,               \
	.listen = nosup_listen, .listen_close = nosup_listen_close,           \
	.flush = nosup_flush, .set_reading = nosup_set_reading,               \
	.destroy = nosup_destroy, .cut = nosup_cut

const struct rift__transport_ops rift__transport_default = {
	RIFT_TRANSPORT_DEFAULTS,
};
