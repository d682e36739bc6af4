/*
 * listener.c - the public listener calls: rift_listen (an auto:// RDMA
 * listener has a TCP twin at the same port), its port and user pointer,
 * and rift_listener_close.  (rift__listener_path, internal.h, gives a
 * path a transport accepted to the listener the user holds.)  Nothing
 * here calls a user callback synchronously from an API call: callbacks
 * only run inside progress.
 */
#include <stdlib.h>

#include "internal.h"

/* The listener of the transport auto:// falls back to (TCP), beside l
 * (RDMA) at the same port, so that clients that fell back find it. */
static int listen_twin(rift_listener *l, const struct rift__transport_ops *ops,
		       struct sockaddr_storage *sa, socklen_t len)
{
	rift_listener *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return rift__ctx_fail(l->ctx, RIFT_ENOMEM, "listen: out of memory");
	*t = *l;
	t->fd = -1;
	t->transport_state = NULL;
	t->ops = ops;
	t->main = l;
	rift__list_init(&t->node);
	rift__sockaddr_set_port(sa, l->port);
	rc = t->ops->listen(t, (struct sockaddr *)sa, len);
	if (rc) {
		free(t);
		return rc;
	}
	l->twin = t;
	return 0;
}

int rift_listen(rift_ctx *ctx, const char *url, const rift_conn_callbacks *cbs,
		void *user, rift_accept_cb on_accept, rift_listener **out)
{
	struct rift__url u;
	struct sockaddr_storage sa;
	socklen_t len;
	char err[RIFT_ERRMSG_LEN];
	rift_listener *l;
	const struct rift__transport_ops *ops, *fb;
	rift_fallback_reason why;
	int rc;

	if (out)
		*out = NULL;
	if (!ctx || !out || !on_accept)
		return RIFT_EINVAL;
	rc = rift__url_take(ctx, url, &u, NULL);
	if (rc)
		return rc;
	rc = rift__resolve(&u.addrs[0], true, AF_UNSPEC, &sa, &len, 1, err,
			   sizeof(err));
	if (rc < 0)
		return rift__ctx_fail(ctx, rc, "%s", err);
	l = calloc(1, sizeof(*l));
	if (!l)
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "rift_listen: out of memory");
	l->ctx = ctx;
	l->serial = ++ctx->listener_serials;
	if (cbs)
		l->cbs = *cbs;
	l->user = user;
	l->on_accept = on_accept;
	l->fd = -1;
	/* rdma:// listens on RDMA only, tcp:// on TCP only; auto:// on both,
	 * at the same port number, so clients that fell back find it (on
	 * TCP only when RDMA cannot be used here). */
	ops = rift__transport_by_scheme(u.scheme);
	l->auto_scheme = u.scheme == RIFT_SCHEME_AUTO;
	why = ops->available(ctx);
	if (why != RIFT_FALLBACK_NONE) {
		fb = l->auto_scheme ? rift__transport_fallback(ops) : NULL;
		if (!fb) {
			free(l);
			return rift__ctx_fail(ctx, RIFT_ENOTSUP,
					      "%s:// unavailable: %s", ops->name,
					      rift_fallback_reason_str(why));
		}
		ops = fb;
	}
	l->ops = ops;
	rc = l->ops->listen(l, (struct sockaddr *)&sa, len);
	if (rc) {
		free(l);
		return rc; /* the transport set ctx->errmsg */
	}
	/* With rdma.cm = tcp the side channel's socket already serves TCP
	 * sessions on that port (it tells them apart by their first bytes):
	 * a twin could not bind it. */
	fb = l->auto_scheme ? rift__transport_fallback(l->ops) : NULL;
	if (fb && !l->tcp_shared) {
		rc = listen_twin(l, fb, &sa, len);
		if (rc) {
			l->ops->listen_close(l);
			free(l);
			return rc;
		}
	}
	rift__list_add_tail(&ctx->listeners, &l->node);
	ctx->stats.listeners_active++;
	if (why != RIFT_FALLBACK_NONE)
		RIFT_INFO(ctx, "auto:// listener on port %d: %s; it serves %s "
			  "only", l->port, rift_fallback_reason_str(why),
			  l->ops->name);
	*out = l;
	return 0;
}

int rift_listener_port(const rift_listener *l)
{
	return l ? l->port : RIFT_EINVAL;
}

void *rift_listener_user(const rift_listener *l)
{
	return l ? l->user : NULL;
}

void rift_listener_close(rift_listener *l, void (*close_cb)(rift_listener *l))
{
	rift_ctx *ctx;
	struct rift__list *it, *next;

	if (!l || l->closing)
		return;
	ctx = l->ctx;
	l->closing = true;
	l->close_cb = close_cb;
	l->ops->listen_close(l);
	if (l->twin) {
		l->twin->ops->listen_close(l->twin);
		free(l->twin);
		l->twin = NULL;
	}
	/* Handshakes in progress on this listener have nobody to go to. */
	for (it = ctx->paths.next; it != &ctx->paths; it = next) {
		rift__path *p = rift__list_entry(it, rift__path, ctx_node);

		next = it->next;
		if (p->lst == l && !p->conn)
			rift__path_failed(p, RIFT_ECANCELED, "listener closed");
		else if (p->lst == l)
			p->lst = NULL;
	}
	rift__list_del(&l->node);
	rift__list_add_tail(&ctx->closing_listeners, &l->node);
	ctx->stats.listeners_active--;
}
