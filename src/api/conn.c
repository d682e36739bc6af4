/*
 * conn.c - the public connection calls: rift_connect and its attempts
 * (racing a second one when the first is slow), sending, stopping and
 * restarting reception, closing, and what a connection tells of itself.
 * Nothing here calls a user callback synchronously from an API call:
 * callbacks only run inside progress.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/uio.h>

#include "session/session.h"

static void race_arm(rift_conn *conn);

static void retry_timer_cb(rift_timer *t, void *user)
{
	RIFT_UNUSED(t);
	rift__conn_attempt(user);
}

/* The time an attempt may take for which no attempt at once is due. */
static uint64_t attempt_limit(rift_conn *conn)
{
	rift_ctx *ctx = conn->ctx;
	uint64_t limit = rift__conn_attempt_limit(conn);

	if (conn->state == RIFT_CONN_DETACHED) {
		/* An attempt may not outlive the session's grace time. */
		uint64_t grace_end = conn->detached_us +
				     (uint64_t)conn->cfg.session_grace_ms * 1000u;
		uint64_t left = grace_end > ctx->now_us
					? (grace_end - ctx->now_us) / 1000u
					: 0;

		if (left < limit)
			limit = left ? left : 1;
	}
	return limit;
}

/*
 * Start ops' connect to address i, bounded by limit ms, from its URL
 * address's local address (group.local).  A failure leaves its reason in
 * conn->last_error.
 */
static int attempt_start_via(rift_conn *conn,
			     const struct rift__transport_ops *ops, unsigned i,
			     uint64_t limit, bool force_alt, rift__path **out)
{
	rift_ctx *ctx = conn->ctx;
	rift__path *p = NULL;
	char addr[80];
	int rc, k = rift__conn_local(conn, conn->addr_url[i]);
	const struct sockaddr *src =
		k < 0 ? NULL : (const struct sockaddr *)&conn->locals[k];
	socklen_t src_len = k < 0 ? 0 : conn->local_lens[k];
	const char *way = ops == conn->ops ? rift__conn_alt(conn) : NULL;
	bool alt = way && (force_alt || (conn->alt_addrs >> i & 1u));
	struct sockaddr_storage dev_src;
	char why[RIFT_ERRMSG_LEN];

	rift__sockaddr_str((const struct sockaddr *)&conn->addrs[i], addr,
			   sizeof(addr));
	/* A first connect's attempts are detail (one that fails is told);
	 * a re-attach's are the story of a failover. */
	RIFT_LOG_AT(ctx,
		    conn->state == RIFT_CONN_DETACHED ? RIFT_LOG_INFO
						      : RIFT_LOG_DEBUG,
		    "session %016llx: %s to %s://%s%s%s (bound %llu ms)",
		    (unsigned long long)conn->session_id,
		    conn->state == RIFT_CONN_DETACHED ? "re-attaching"
						      : "connecting",
		    ops->name, addr, alt ? " via " : "", alt ? way : "",
		    (unsigned long long)limit);
	rift__metrics_connect_attempt(conn);
	ctx->errmsg[0] = '\0'; /* what a failing connect says, below */
	/* group.local's device form: that device's address, for this
	 * peer (either transport binds to it). */
	rc = 0;
	if (k >= 0 && conn->local_devs[k].name[0]) {
		rc = rift__transports_device_src(
			&conn->cfg, conn->local_devs[k].name,
			conn->local_devs[k].port,
			(const struct sockaddr *)&conn->addrs[i],
			conn->addr_lens[i], &dev_src, &src_len, why,
			sizeof(why));
		src = (const struct sockaddr *)&dev_src;
	}
	if (rc)
		rift__ctx_fail(ctx, rc, "%s", why);
	else if (rift__fault_hit(RIFT_FAULT_TCP_CONNECT) &&
		 ops->kind == RIFT_TRANSPORT_TCP)
		rc = RIFT_ECONNREFUSED;
	else if (alt)
		rc = ops->connect_alt(ctx, &conn->cfg, src, src_len,
				      (const struct sockaddr *)&conn->addrs[i],
				      conn->addr_lens[i], &p);
	else
		rc = ops->connect(ctx, &conn->cfg, src, src_len,
				  (const struct sockaddr *)&conn->addrs[i],
				  conn->addr_lens[i], &p);
	if (rc) {
		rift__conn_error(
			conn, "%s://%s%s%s%s: connect: %s", ops->name, addr,
			alt ? " (" : "", alt ? way : "", alt ? ")" : "",
			ctx->errmsg[0] ? ctx->errmsg : rift_strerror(rc));
		if (alt)
			conn->alt_addrs &= ~(1u << i);
		if (ops == conn->ops)
			rift__conn_addr_failed(conn, i, rc, "connect: %s",
					       ctx->errmsg[0]
						       ? ctx->errmsg
						       : rift_strerror(rc));
		return rc;
	}
	p->alt = alt;
	if (alt)
		ctx->stats.connect_alts++;
	snprintf(p->peer, sizeof(p->peer), "%s://%s%s%s%s", ops->name, addr,
		 alt ? " (" : "", alt ? way : "", alt ? ")" : "");
	p->conn = conn;
	p->addr_idx = i;
	p->limit_ms = (uint32_t)limit;
	rift_timer_start(&p->timer, limit, 0);
	*out = p;
	return 0;
}

/* An attempt over the session's transport. */
static int attempt_start(rift_conn *conn, unsigned i, uint64_t limit,
			 bool force_alt, rift__path **out)
{
	return attempt_start_via(conn, conn->ops, i, limit, force_alt, out);
}

/*
 * Port groups (session/group.c): standby paths through the URL's other
 * addresses, up to group.max_paths paths in all, each joined to the
 * session once its transport connects.  One that cannot start now is
 * tried again later.
 */
static bool has_standby(const rift_conn *conn, unsigned idx)
{
	for (unsigned i = 0; i < conn->n_standby; i++)
		if (conn->standby[i]->addr_idx == idx)
			return true;
	return false;
}

static void group_timer_cb(rift_timer *t, void *user)
{
	rift_conn *conn = user;
	unsigned cur = conn->addr_idx % conn->n_addrs;
	uint64_t next = UINT64_MAX, w;
	char last[RIFT_ERRMSG_LEN];

	RIFT_UNUSED(t);
	if (conn->state != RIFT_CONN_ESTABLISHED || conn->closing)
		return;
	memcpy(last, conn->last_error, sizeof(last));
	for (unsigned k = 1; k < conn->n_addrs &&
			     conn->n_standby + 1 < conn->cfg.group_max_paths;
	     k++) {
		unsigned j = (cur + k) % conn->n_addrs;
		rift__path *p = NULL;

		if (has_standby(conn, j))
			continue;
		/* Backing off there (session/group.c). */
		w = rift__group_standby_wait(conn, j);
		if (w) {
			next = w < next ? w : next;
			continue;
		}
		if (attempt_start(conn, j, rift__group_standby_limit(conn, j),
				  false, &p)) {
			/* Its own failure (rift_conn_paths): the session's
			 * last error stays what happened to its data. */
			RIFT_DEBUG(conn->ctx, "session %016llx: standby: %s",
				   (unsigned long long)conn->session_id,
				   conn->last_error);
			memcpy(conn->last_error, last, sizeof(last));
			rift__group_standby_failed(conn, j, false);
			w = rift__group_standby_wait(conn, j);
			next = w < next ? w : next;
			continue;
		}
		p->standby = true;
		conn->next_gid = conn->next_gid % RIFT_PATH_ID_MAX + 1;
		p->gid = conn->next_gid;
		conn->standby[conn->n_standby++] = p;
	}
	if (next != UINT64_MAX)
		rift__group_timer_within(conn, next);
}

/*
 * auto:// back from its fallback (session/group.c, "returning"): a client
 * session on TCP tries the transport its scheme prefers again, by a
 * standby through it to one address at a time in turn.  One try at a
 * time; its end (rift__group_return_failed, or the session moving there)
 * decides the next.
 */
static void return_timer_cb(rift_timer *t, void *user)
{
	rift_conn *conn = user;
	const struct rift__transport_ops *ops = conn->pref_ops;
	rift_fallback_reason why;
	char last[RIFT_ERRMSG_LEN];
	unsigned j;
	rift__path *p = NULL;

	RIFT_UNUSED(t);
	if (!rift__group_may_return(conn))
		return;
	for (unsigned i = 0; i < conn->n_standby; i++)
		if (conn->standby[i]->ops == ops)
			return; /* one under way, or joined */
	if (conn->n_standby == RIFT_ARRAY_SIZE(conn->standby)) {
		rift__group_return_failed(conn, "no room for another path");
		return;
	}
	why = ops->available(conn->ctx);
	if (why != RIFT_FALLBACK_NONE) {
		rift__group_return_failed(conn, rift_fallback_reason_str(why));
		return;
	}
	j = conn->return_fails % conn->n_addrs;
	memcpy(last, conn->last_error, sizeof(last));
	if (attempt_start_via(conn, ops, j, rift__group_standby_limit(conn, j),
			      false, &p)) {
		/* Its own failure: the session's last error stays what
		 * happened to its data. */
		snprintf(conn->return_why, sizeof(conn->return_why), "%s",
			 conn->last_error);
		memcpy(conn->last_error, last, sizeof(last));
		rift__group_return_failed(conn, conn->return_why);
		return;
	}
	RIFT_INFO(conn->ctx, "session %016llx: trying %s again: %s",
		  (unsigned long long)conn->session_id, ops->name, p->peer);
	conn->return_why[0] = '\0';
	p->standby = true;
	conn->next_gid = conn->next_gid % RIFT_PATH_ID_MAX + 1;
	p->gid = conn->next_gid;
	conn->standby[conn->n_standby++] = p;
}

void rift__conn_attempt(rift_conn *conn)
{
	unsigned i = conn->addr_idx % conn->n_addrs;
	rift__path *p = NULL;
	int rc;

	rc = attempt_start(conn, i, attempt_limit(conn), false, &p);
	if (rc) {
		/* Report through the same path as an asynchronous failure. */
		conn->path = NULL;
		rift__conn_attempt_failed(conn, rc);
		return;
	}
	conn->path = p;
	conn->attempt_us = conn->ctx->now_us;
	race_arm(conn);
}

/*
 * Racing (as RFC 8305's happy eyeballs): an attempt that has not reached
 * its peer within a few setup times may be on an address that is dead
 * now (its link down, a neighbour that no longer answers) while another
 * works.  Waiting out its bound before trying the next stalled re-attach
 * for a second with a healthy link at hand.  So the next address gets an
 * attempt of its own, and whichever transport connects first carries the
 * handshake; the other is dropped before it sent any frame, so the peer
 * sees one HELLO or RESUME.  A re-attach races the same address the
 * transport's other way (ops->connect_alt) instead when its attempt has
 * reached the peer's network and got no answer (path->reached), or when
 * there is no other address to try (one address, or the next one's link
 * is down).  The delay is twice the
 * session's measured setup time (RACE_MIN_MS..RACE_MAX_MS), RACE_MAX_MS
 * before any attach.
 */
#define RACE_MIN_MS 20u
#define RACE_MAX_MS 250u

/* Racing the other way is for re-attaching, where the delay is this
 * session's own measure: a first connect waits out its attempt (a storm
 * of connects to a busy listener must not double itself). */
static bool race_alt(const rift_conn *conn)
{
	return rift__conn_alt(conn) && conn->state == RIFT_CONN_DETACHED;
}

static void race_arm(rift_conn *conn)
{
	uint64_t delay = RACE_MAX_MS;

	if ((conn->n_addrs < 2 && !race_alt(conn)) || conn->racer ||
	    !conn->path)
		return;
	if (conn->setup_srtt_us) {
		delay = 2 * conn->setup_srtt_us / 1000u;
		if (delay < RACE_MIN_MS)
			delay = RACE_MIN_MS;
		if (delay > RACE_MAX_MS)
			delay = RACE_MAX_MS;
	}
	rift_timer_start(&conn->race_timer, delay, 0);
}

static void race_timer_cb(rift_timer *t, void *user)
{
	rift_conn *conn = user;
	unsigned i = (conn->addr_idx + 1) % conn->n_addrs;
	unsigned cur = conn->addr_idx % conn->n_addrs;
	rift__path *p = NULL;
	uint64_t limit;
	bool alt;

	RIFT_UNUSED(t);
	if (conn->racer || !conn->path ||
	    conn->path->state != RIFT_PATH_CONNECTING ||
	    (conn->state != RIFT_CONN_CONNECTING &&
	     conn->state != RIFT_CONN_DETACHED))
		return;
	limit = attempt_limit(conn);
	/* The same address the other way (rdma_connect_alt_op), in case it
	 * is the way of setting up that gets no answer; not when the attempt
	 * went that way already. */
	alt = race_alt(conn) && !conn->path->alt;
	/* The attempt asked its peer and got no answer: its address is
	 * reachable, and it is the way of setting up that gets none (a
	 * connect request or reply lost, rdma_cm fallen silent on the
	 * device), so the other way goes first.  The next address may be no
	 * better: without its link's carrier it keeps its route, and an
	 * attempt there starts and then waits for an ARP answer that never
	 * comes. */
	if (alt && conn->path->reached) {
		if (!attempt_start(conn, cur, limit, true, &p))
			i = cur;
		alt = false; /* tried */
	}
	if (!p && conn->n_addrs >= 2 &&
	    attempt_start(conn, i, limit, false, &p))
		RIFT_DEBUG(conn->ctx, "race: %s", conn->last_error);
	/* No other address to try now (one address, or the next one's link
	 * is down): the other way, unless tried above. */
	if (!p) {
		if (!alt || attempt_start(conn, cur, limit, true, &p)) {
			RIFT_DEBUG(conn->ctx, "race: %s", conn->last_error);
			return;
		}
		i = cur;
	}
	conn->ctx->stats.connect_races++;
	conn->racer = p;
	conn->racer_idx = i;
	conn->racer_us = conn->ctx->now_us;
}

static int conn_setup_client(rift_ctx *ctx, rift_conn *conn,
			     const struct rift__url *url)
{
	const struct rift__transport_ops *ops, *fb;
	rift_fallback_reason why;

	/* The scheme's transport; auto:// the one it prefers, and the next
	 * when that one cannot be used here. */
	ops = rift__transport_by_scheme(url->scheme);
	conn->pref_ops = ops;
	conn->auto_scheme = url->scheme == RIFT_SCHEME_AUTO;
	why = ops->available(ctx);
	if (why != RIFT_FALLBACK_NONE) {
		fb = conn->auto_scheme ? rift__transport_fallback(ops) : NULL;
		if (fb && !conn->cfg.fallback)
			return rift__ctx_fail(ctx, RIFT_ENOTSUP,
					      "%s:// unavailable: %s, and "
					      "connect.fallback is off",
					      ops->name,
					      rift_fallback_reason_str(why));
		if (!fb)
			return rift__ctx_fail(ctx, RIFT_ENOTSUP,
					      "%s:// unavailable: %s", ops->name,
					      rift_fallback_reason_str(why));
		/* Recorded, counted and logged once, never a silent
		 * switch. */
		RIFT_INFO(ctx,
			  "session %016llx: %s; auto://%s%s%s:%u connects over "
			  "%s",
			  (unsigned long long)conn->session_id,
			  rift_fallback_reason_str(why),
			  strchr(url->addrs[0].host, ':') ? "[" : "",
			  url->addrs[0].host,
			  strchr(url->addrs[0].host, ':') ? "]" : "",
			  url->addrs[0].port, fb->name);
		ops = fb;
		conn->fallback = why;
		ctx->stats.fallbacks[why]++;
	}
	conn->ops = ops;
	/* Numeric addresses at once; host names off the loop (resolve.c),
	 * the first attempt when they are known. */
	return rift__resolve_start(conn, url);
}

/* The address family of a URL's numeric host, or AF_UNSPEC (a name). */
static int host_family(const char *host)
{
	struct in6_addr a;

	if (inet_pton(AF_INET, host, &a) == 1)
		return AF_INET;
	return inet_pton(AF_INET6, host, &a) == 1 ? AF_INET6 : AF_UNSPEC;
}

/*
 * group.local, or the URL's local=, as conn's local addresses: one for
 * all of url's addresses, or one for each (more are left unused), each
 * of its address's family (a name resolves to that family only:
 * resolve.c).  0, or RIFT_EINVAL with ctx's message set.  The text
 * parses: it was checked with the rest of the settings (group_local_check
 * in ctx.c, for the context's and for the URL's options).
 */
static int conn_locals(rift_ctx *ctx, rift_conn *conn, const char *text,
		       const struct rift__url *u)
{
	char why[RIFT_ERRMSG_LEN], a[INET6_ADDRSTRLEN];
	int n = rift__local_parse(conn->cfg.group_local, conn->locals,
				  conn->local_lens, conn->local_devs,
				  RIFT_URL_MAX_ADDRS, why, sizeof(why));

	conn->n_locals = (unsigned)n;
	if (n > 1 && (unsigned)n < u->n_addrs)
		return rift__ctx_fail(ctx, RIFT_EINVAL,
				      "url '%s': local= has %d entries for %u "
				      "addresses (give one for all of them, or "
				      "one per address)",
				      text, n, u->n_addrs);
	for (unsigned i = 0; n && i < u->n_addrs; i++) {
		const struct sockaddr_storage *l =
			&conn->locals[rift__conn_local(conn, i)];
		int f = host_family(u->addrs[i].host);

		if (f == AF_UNSPEC || f == l->ss_family ||
		    l->ss_family == AF_UNSPEC) /* a device's: per attempt */
			continue;
		rift__sockaddr_ip((const struct sockaddr *)l, a, sizeof(a));
		return rift__ctx_fail(ctx, RIFT_EINVAL,
				      "url '%s': local address %s is %s, and "
				      "address %u (%s) is %s",
				      text, a,
				      l->ss_family == AF_INET ? "IPv4" : "IPv6",
				      i + 1, u->addrs[i].host,
				      f == AF_INET ? "IPv4" : "IPv6");
	}
	return 0;
}

int rift_connect(rift_ctx *ctx, const char *url, const rift_conn_callbacks *cbs,
		 void *user, rift_conn **out)
{
	struct rift__url u;
	rift_config cfg;
	rift_conn *conn;
	int rc;

	if (out)
		*out = NULL;
	if (!ctx || !out)
		return RIFT_EINVAL;
	cfg = ctx->cfg;
	rc = rift__url_take(ctx, url, &u, &cfg);
	if (rc)
		return rc;
	conn = rift__conn_alloc(ctx, cbs, user, true);
	if (!conn)
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "rift_connect: out of memory");
	conn->cfg = cfg;
	/* The id first: what the setup logs names the session. */
	do {
		if (getrandom(&conn->session_id, sizeof(conn->session_id), 0) !=
		    sizeof(conn->session_id)) {
			rc = rift__ctx_fail(ctx, RIFT_EIO, "getrandom failed");
			goto fail_conn;
		}
	} while (conn->session_id == 0);
	rc = conn_locals(ctx, conn, url, &u);
	if (rc)
		goto fail_conn;
	rc = conn_setup_client(ctx, conn, &u);
	if (rc)
		goto fail_conn;
	conn->state = RIFT_CONN_CONNECTING;
	conn->retry_timer.cb = retry_timer_cb;
	conn->race_timer.cb = race_timer_cb;
	conn->group_timer.cb = group_timer_cb;
	conn->return_timer.cb = return_timer_cb;
	/* First attempt from the loop, so failures arrive as events (once
	 * the names are resolved, if the URL has any). */
	rc = conn->resolving ? 0 : rift_timer_start(&conn->retry_timer, 0, 0);
	if (rc)
		goto fail_conn;
	*out = conn;
	return 0;

fail_conn:
	rift__resolve_cancel(conn);
	rift__list_del(&conn->node);
	ctx->stats.conns_active--;
	ctx->stats.conns_opened--;
	free(conn);
	return rc;
}

/*
 * Copy a small message without a call into libc: under QEMU TCG (the lab)
 * the call through the PLT and the return cost more than the copy.
 * Word moves, the last one overlapping; no loop GCC could turn back into
 * a memcpy call.
 */
static inline void copy_small(uint8_t *d, const uint8_t *s, size_t n)
{
	uint64_t w, x;

	if (n >= 8) {
		size_t i = 0;

		for (; i + 8 < n; i += 8) {
			__builtin_memcpy(&w, s + i, 8);
			__builtin_memcpy(d + i, &w, 8);
			__asm__("" ::: "memory"); /* keep it a loop of moves */
		}
		__builtin_memcpy(&x, s + n - 8, 8);
		__builtin_memcpy(d + n - 8, &x, 8);
		return;
	}
	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

/* Whether the transport carrying conn's messages wants large ones in
 * registered memory: the attached path's, else the one its attempts use
 * (a detached session's next path). */
static inline bool send_registered(const rift_conn *conn)
{
	if (conn->transport != RIFT_TRANSPORT_NONE && conn->path)
		return conn->path->ops->registered_sends;
	return conn->ops->registered_sends;
}

static inline int send_check(rift_conn *conn, size_t len)
{
	rift_ctx *ctx = conn->ctx;

	if (conn->closing)
		return RIFT_ECLOSED;
	/* A connection accepts sends from the start, as UCX endpoints do:
	 * queued within the window, they go out once the session attaches
	 * (the peer's limits are checked then, see client_handshake). */
	if (conn->state == RIFT_CONN_DEAD)
		return RIFT_ENOTCONN;
	if (len > ctx->cfg.max_msg_size)
		return RIFT_EMSGSIZE;
	/* One-sided operations called before wait for room: they go
	 * first (session/rma.c). */
	if (__builtin_expect(conn->rma_queued, 0)) {
		conn->want_writable = true;
		conn->stats.send_eagain++;
		return RIFT_EAGAIN;
	}
	/* The peer's limit, from the handshake: its decoder would end the
	 * session over a longer message. */
	if (conn->peer_max_msg && len > conn->peer_max_msg) {
		rift__conn_error(conn,
				 "message of %zu bytes exceeds the peer's "
				 "max_msg_size (%llu bytes)",
				 len, (unsigned long long)conn->peer_max_msg);
		return RIFT_EMSGSIZE;
	}
	/* One message may exceed the window alone; otherwise the window
	 * (the smaller of both sides' send_window) bounds what is held for
	 * replay, and what a stopped receiver holds.
	 * Headers count: zero-length messages are not free. */
	if (conn->window_used &&
	    conn->window_used + len + RIFT_HDR_SIZE > rift__conn_window(conn) &&
	    !rift__fault_hit(RIFT_FAULT_WINDOW_IGNORED)) {
		conn->want_writable = true;
		conn->stats.send_eagain++;
		return RIFT_EAGAIN;
	}
	return 0;
}

/* The buffer a copied message of len bytes goes in.  The copy is made
 * anyway: over a transport whose peer READs large messages (rendezvous),
 * one that will go that way is copied into registered memory when a
 * block or a large buffer is ready (the pool never registers on this
 * thread for it: the message is streamed meanwhile, and counted); small
 * ones come from the context's cache, the rest from malloc. */
static inline struct rift__buf *send_buf(rift_conn *conn, size_t len)
{
	if (conn->ctx->cfg.rndv_threshold &&
	    len >= conn->ctx->cfg.rndv_threshold && send_registered(conn)) {
		struct rift__buf *b =
			rift__buf_new_registered(conn->ctx, len, false);

		if (b && !b->pool)
			conn->ctx->stats.rndv_streamed++;
		return b;
	}
	if (len <= RIFT_SMALL_BUF)
		return rift__buf_new_small(conn->ctx, len);
	return rift__buf_new(conn->ctx, len);
}

/* A copied send of len bytes may go: its buffer in *b, or the error. */
static inline int send_begin(rift_conn *conn, size_t len,
			     struct rift__buf **b)
{
	int rc = send_check(conn, len);

	if (rc)
		return rc;
	*b = send_buf(conn, len);
	return *b ? 0 : RIFT_ENOMEM;
}

/* The message queued last (the tail, until its ack, which never comes
 * within the call that queued it) is confirmed through cb, if any. */
static inline void confirm_through(rift_conn *conn, rift_send_cb cb,
				   void *user)
{
	if (cb) {
		conn->tail->cb = cb;
		conn->tail->cb_user = user;
	}
}

int rift_conn_send(rift_conn *conn, const void *data, size_t len)
{
	struct rift__buf *b;
	int rc;

	if (!conn || (!data && len))
		return RIFT_EINVAL;
	rc = send_begin(conn, len, &b);
	if (rc)
		return rc;
	if (len <= RIFT_SMALL_BUF)
		copy_small(b->data, data, len);
	else
		memcpy(b->data, data, len);
	rift__conn_enqueue(conn, b, len);
	return 0;
}

int rift_conn_send_cb(rift_conn *conn, const void *data, size_t len,
		      rift_send_cb cb, void *user)
{
	int rc = rift_conn_send(conn, data, len);

	if (!rc)
		confirm_through(conn, cb, user);
	return rc;
}

#define SENDV_MAX 64 /* pieces of a gather send */

int rift_conn_sendv(rift_conn *conn, const struct iovec *iov, int iovcnt,
		    rift_send_cb cb, void *user)
{
	struct rift__buf *b;
	size_t len = 0, off = 0;
	int rc;

	if (!conn || iovcnt < 0 || iovcnt > SENDV_MAX || (iovcnt && !iov))
		return RIFT_EINVAL;
	for (int i = 0; i < iovcnt; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return RIFT_EINVAL;
		if (iov[i].iov_len > SIZE_MAX - len)
			return RIFT_EMSGSIZE;
		len += iov[i].iov_len;
	}
	rc = send_begin(conn, len, &b);
	if (rc)
		return rc;
	for (int i = 0; i < iovcnt; i++) {
		if (!iov[i].iov_len)
			continue; /* its base may be NULL */
		memcpy((uint8_t *)b->data + off, iov[i].iov_base,
		       iov[i].iov_len);
		off += iov[i].iov_len;
	}
	rift__conn_enqueue(conn, b, len);
	confirm_through(conn, cb, user);
	return 0;
}

int rift_conn_send_buf(rift_conn *conn, void *buf, size_t len)
{
	struct rift__buf *b;
	int rc;

	if (!conn)
		return RIFT_EINVAL;
	b = rift__buf_from_user(conn->ctx, buf);
	if (!b || !b->om.user_buf || b->ctx != conn->ctx) {
		rift__conn_error(conn, "rift_conn_send_buf: %p is %s", buf,
				 !b ? "not the start of a rift_buf_alloc buffer"
				 : !b->om.user_buf ? "a buffer rift owns already"
						   : "from another context");
		return RIFT_EINVAL;
	}
	if (len > b->cap)
		return RIFT_EMSGSIZE;
	rc = send_check(conn, len);
	if (rc)
		return rc;
	b->om.user_buf = false; /* now rift's */
	rift__conn_enqueue(conn, b, len);
	return 0;
}

int rift_conn_recv_stop(rift_conn *conn)
{
	if (!conn)
		return RIFT_EINVAL;
	if (conn->closing)
		return RIFT_ECLOSED;
	conn->recv_stopped = true;
	return 0;
}

int rift_conn_recv_start(rift_conn *conn)
{
	if (!conn)
		return RIFT_EINVAL;
	if (conn->closing)
		return RIFT_ECLOSED;
	conn->recv_stopped = false;
	if (conn->held_head && rift__list_empty(&conn->drain_node))
		rift__list_add_tail(&conn->ctx->drainq, &conn->drain_node);
	return 0;
}

/* Both closes: the session goes on, or ends, in session/close.c. */
void rift_conn_close(rift_conn *conn, void (*close_cb)(rift_conn *conn))
{
	if (!conn || conn->closing)
		return;
	RIFT_DEBUG(conn->ctx, "session %016llx: closed by the application",
		   (unsigned long long)conn->session_id);
	conn->closing = true;
	conn->close_cb = close_cb;
	conn->ctx->stats.conns_active--;
	rift__resolve_cancel(conn);
	/* linger_ms counts from this call, not from the loop's last round
	 * (timers follow loop time; the application may have worked for a
	 * while since: 40 ms of a 300 ms linger in the lab). */
	conn->ctx->now_us = rift__clock_us();
	rift__conn_close(conn, false);
}

void rift_conn_abort(rift_conn *conn, void (*close_cb)(rift_conn *conn))
{
	/* Once: a close that ended, or an abort under way, is left be. */
	if (!conn || (conn->closing && (!conn->lingering || conn->aborting)))
		return;
	if (!conn->closing) {
		conn->closing = true;
		conn->ctx->stats.conns_active--;
	}
	conn->close_cb = close_cb;
	rift__resolve_cancel(conn);
	rift__conn_close(conn, true);
}

int rift__conn_cut(rift_conn *conn)
{
	if (!conn->path || conn->path->state != RIFT_PATH_ATTACHED)
		return RIFT_ENOTCONN;
	conn->path->ops->cut(conn->path);
	return 0;
}

int rift__conn_fail(rift_conn *conn)
{
	if (!conn->path || conn->path->state != RIFT_PATH_ATTACHED)
		return RIFT_ENOTCONN;
	rift__path_failed_why(conn->path, RIFT_PATH_DOWN_LOCAL, RIFT_ECONNRESET,
			      "failed by a test");
	return 0;
}

void *rift_conn_user(const rift_conn *conn)
{
	return conn ? conn->user : NULL;
}

void rift_conn_set_user(rift_conn *conn, void *user)
{
	if (conn)
		conn->user = user;
}

void rift_conn_set_callbacks(rift_conn *conn, const rift_conn_callbacks *cbs)
{
	static const rift_conn_callbacks none;

	if (conn)
		conn->cbs = cbs ? *cbs : none;
}

rift_ctx *rift_conn_ctx(const rift_conn *conn)
{
	return conn ? conn->ctx : NULL;
}

rift_transport rift_conn_transport(const rift_conn *conn)
{
	return conn ? conn->transport : RIFT_TRANSPORT_NONE;
}

rift_fallback_reason rift_conn_fallback_reason(const rift_conn *conn)
{
	return conn ? rift__conn_fallback(conn) : RIFT_FALLBACK_NONE;
}

const char *rift_conn_last_error(const rift_conn *conn)
{
	return conn ? conn->last_error : "";
}

void rift__conn_stats_init(rift_conn_stats *st, size_t size)
{
	if (!st)
		return;
	memset(st, 0, size);
	st->size = (uint32_t)(size < sizeof(*st) ? size : sizeof(*st));
}

int rift_conn_stats_get(const rift_conn *conn, rift_conn_stats *st)
{
	rift_conn_stats now;
	uint32_t size;

	if (!conn || !st)
		return RIFT_EINVAL;
	now = conn->stats;
	size = st->size;
	if (size < sizeof(uint32_t) || size > sizeof(*st))
		return RIFT_EINVAL;
	now.unacked_msgs = conn->unacked_msgs;
	now.unacked_bytes = conn->unacked_bytes;
	now.held_bytes = conn->held_bytes;
	memcpy(st, &now, size);
	st->size = size;
	return 0;
}
