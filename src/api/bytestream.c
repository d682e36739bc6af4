/*
 * bytestream.c - the public byte-stream calls (rift.h, "Byte streams"):
 * rift_stream_connect and rift_stream_listen (the URL, its options and
 * address; the transport by scheme from the registry), writes, the flow
 * of reads, close, and the accessors.  The protocol is the transport's
 * (struct rift__bs_ops); the life cycle shared by every byte-stream
 * transport is transports/bytestream.c's.  No user callback runs from
 * inside a call here.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RX_SIZE_DEFAULT (1u << 20)
#define RX_SIZE_MIN 4096u
#define RX_SIZE_MAX (16u << 20)

/* The URL's transport, address (resolved: passive for a listener) and
 * receive buffer size; 0, or RIFT_E* with ctx's message set. */
static int stream_url(rift_ctx *ctx, const char *url, bool passive,
		      const struct rift__bs_ops **ops,
		      struct sockaddr_storage *sa, socklen_t *len,
		      uint32_t *rx_size)
{
	struct rift__url u;
	char err[RIFT_ERRMSG_LEN];
	rift_fallback_reason why;
	int rc = rift__url_parse(url, &u, ctx->errmsg, sizeof(ctx->errmsg));

	if (rc)
		return rc;
	*ops = u.scheme == RIFT_SCHEME_VALKEY_RDMA
		       ? rift__bs_ops_by_scheme("valkey-rdma")
		       : NULL;
	if (!*ops)
		return rift__ctx_fail(ctx, RIFT_ENOTSUP,
				      "url '%s': not a byte-stream scheme "
				      "(valkey-rdma://)", url);
	if (u.n_addrs != 1)
		return rift__ctx_fail(ctx, RIFT_EINVAL,
				      "url '%s': a byte stream has one "
				      "address", url);
	*rx_size = RX_SIZE_DEFAULT;
	for (unsigned i = 0; i < u.n_opts; i++) {
		char *end;
		unsigned long v;

		if (strcmp(u.opts[i].key, "rx_size"))
			return rift__ctx_fail(ctx, RIFT_EINVAL,
					      "url '%s': unknown option '%s' "
					      "(a byte stream takes rx_size)",
					      url, u.opts[i].key);
		v = strtoul(u.opts[i].value, &end, 10);
		if (!u.opts[i].value[0] || *end || v < RX_SIZE_MIN ||
		    v > RX_SIZE_MAX)
			return rift__ctx_fail(ctx, RIFT_EINVAL,
					      "url '%s': rx_size '%s': not a "
					      "size from %u to %u bytes",
					      url, u.opts[i].value, RX_SIZE_MIN,
					      RX_SIZE_MAX);
		*rx_size = (uint32_t)v;
	}
	why = (*ops)->available(ctx);
	if (why != RIFT_FALLBACK_NONE)
		return rift__ctx_fail(ctx, RIFT_ENOTSUP, "%s:// unavailable: %s",
				      (*ops)->scheme,
				      rift_fallback_reason_str(why));
	rc = rift__resolve(&u.addrs[0], passive, AF_UNSPEC, sa, len, 1, err,
			   sizeof(err));
	if (rc < 0)
		return rift__ctx_fail(ctx, rc, "%s", err);
	return 0;
}

int rift_stream_connect(rift_ctx *ctx, const char *url,
			const rift_stream_callbacks *cbs, void *user,
			rift_stream **out)
{
	const struct rift__bs_ops *ops;
	struct sockaddr_storage sa;
	socklen_t len;
	uint32_t rx_size;
	rift_stream *s;
	int rc;

	if (out)
		*out = NULL;
	if (!ctx || !out)
		return RIFT_EINVAL;
	rc = stream_url(ctx, url, false, &ops, &sa, &len, &rx_size);
	if (rc)
		return rc;
	rc = ops->connect(ctx, (struct sockaddr *)&sa, len, rx_size, &s);
	if (rc)
		return rc;
	if (cbs)
		s->cbs = *cbs;
	s->user = user;
	*out = s;
	return 0;
}

int rift_stream_listen(rift_ctx *ctx, const char *url,
		       const rift_stream_callbacks *cbs, void *user,
		       rift_stream_accept_cb on_accept,
		       rift_stream_listener **out)
{
	const struct rift__bs_ops *ops;
	struct sockaddr_storage sa;
	socklen_t len;
	uint32_t rx_size;
	rift_stream_listener *l;
	int rc;

	if (out)
		*out = NULL;
	if (!ctx || !out || !on_accept)
		return RIFT_EINVAL;
	rc = stream_url(ctx, url, true, &ops, &sa, &len, &rx_size);
	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return rift__ctx_fail(ctx, RIFT_ENOMEM,
				      "rift_stream_listen: out of memory");
	if (cbs)
		l->cbs = *cbs;
	l->user = user;
	l->on_accept = on_accept;
	rift__bs_listener_init(ctx, l, ops, rx_size);
	rc = ops->listen(l, (struct sockaddr *)&sa, len);
	if (rc) {
		rift__list_del(&l->bn.node);
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

int rift_stream_listener_port(const rift_stream_listener *l)
{
	return l ? l->port : RIFT_EINVAL;
}

void *rift_stream_listener_user(const rift_stream_listener *l)
{
	return l ? l->user : NULL;
}

void rift_stream_listener_close(rift_stream_listener *l,
				void (*close_cb)(rift_stream_listener *l))
{
	if (!l || l->closing)
		return;
	l->closing = true;
	l->close_cb = close_cb;
	l->ops->listen_close(l);
	rift__bs_listener_closed(l);
}

int rift_stream_write(rift_stream *s, const void *data, size_t len)
{
	if (!s || !data || !len || len > INT_MAX)
		return RIFT_EINVAL;
	if (s->closing)
		return RIFT_ECLOSED;
	if (!s->established || s->ended)
		return RIFT_ENOTCONN;
	return s->ops->write(s, data, len);
}

int rift_stream_read_stop(rift_stream *s)
{
	if (!s)
		return RIFT_EINVAL;
	if (s->closing)
		return RIFT_ECLOSED;
	s->read_stopped = true;
	return 0;
}

int rift_stream_read_start(rift_stream *s)
{
	if (!s)
		return RIFT_EINVAL;
	if (s->closing)
		return RIFT_ECLOSED;
	if (s->read_stopped) {
		s->read_stopped = false;
		s->ops->deliver(s);
	}
	return 0;
}

void rift_stream_close(rift_stream *s, void (*close_cb)(rift_stream *s))
{
	if (!s || s->closing)
		return;
	s->closing = true;
	s->close_cb = close_cb;
	s->ops->close(s);
}

void *rift_stream_user(const rift_stream *s)
{
	return s ? s->user : NULL;
}

void rift_stream_set_user(rift_stream *s, void *user)
{
	if (s)
		s->user = user;
}

void rift_stream_set_callbacks(rift_stream *s,
			       const rift_stream_callbacks *cbs)
{
	if (!s)
		return;
	if (cbs)
		s->cbs = *cbs;
	else
		memset(&s->cbs, 0, sizeof(s->cbs));
}

rift_ctx *rift_stream_ctx(const rift_stream *s)
{
	return s ? s->bn.ctx : NULL;
}

const char *rift_stream_peer(const rift_stream *s)
{
	return s ? s->peer : "";
}

const char *rift_stream_last_error(const rift_stream *s)
{
	return s ? s->errmsg : "";
}

void rift__stream_stats_init(rift_stream_stats *st, size_t size)
{
	if (!st || size < sizeof(st->size))
		return;
	memset(st, 0, size);
	st->size = (uint32_t)size;
}

int rift_stream_stats_get(const rift_stream *s, rift_stream_stats *st)
{
	size_t n;

	if (!s || !st || st->size < sizeof(st->size))
		return RIFT_EINVAL;
	n = st->size < sizeof(*st) ? st->size : sizeof(*st);
	memcpy((char *)st + sizeof(st->size),
	       (const char *)&s->st + sizeof(st->size), n - sizeof(st->size));
	return 0;
}
