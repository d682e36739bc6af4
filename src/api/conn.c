/*
 * conn.c - the public connection, listener, buffer and message calls, and
 * the deferred work of a loop round (flushes, close callbacks, path
 * destruction).  Nothing here calls a user callback synchronously from an
 * API call: callbacks only run inside progress.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>

#include "memory/pool.h"
#include "session/session.h"

/* ---- buffers ---- */

struct rift__buf *rift__buf_new(rift_ctx *ctx, size_t len)
{
	struct rift__buf *b = malloc(sizeof(*b) + (len ? len : 1));

	if (!b)
		return NULL;
	b->magic = RIFT_BUF_MAGIC;
	b->ctx = ctx;
	b->data = b + 1;
	b->cap = len;
	b->pool = NULL;
	b->small = false;
	b->om.user_buf = false;
	return b;
}

/*
 * rift_conn_send copies a small message into a buffer of a per-context
 * cache rather than a fresh malloc'd one: request/reply traffic then
 * allocates and frees nothing per message (a buffer returns when the peer
 * acknowledges its message).  The headers of registered buffers, which
 * live apart from their blocks, are cached the same way.  Not under ASan,
 * which should see every buffer's life.
 */
#define SMALL_BUF RIFT_SMALL_BUF

static void race_timer_cb(rift_timer *t, void *user);
static void race_arm(rift_conn *conn);

static bool cache_room(uint32_t n)
{
#if defined(__SANITIZE_ADDRESS__)
	RIFT_UNUSED(n);
	return false;
#else
	return n < RIFT_SMALL_CACHE;
#endif
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

static struct rift__buf *buf_new_small(rift_ctx *ctx, size_t len)
{
	struct rift__buf *b = ctx->small_bufs;

	if (b) {
		ctx->small_bufs = b->free_next;
		ctx->n_small_bufs--;
	} else {
		b = malloc(sizeof(*b) + SMALL_BUF);
		if (!b)
			return NULL;
		b->ctx = ctx;
		b->data = b + 1;
		b->pool = NULL;
		b->small = true;
	}
	b->magic = RIFT_BUF_MAGIC;
	b->cap = len;
	b->om.user_buf = false;
	return b;
}

void rift__ctx_free_small_bufs(rift_ctx *ctx)
{
	while (ctx->small_bufs) {
		struct rift__buf *b = ctx->small_bufs;

		ctx->small_bufs = b->free_next;
		free(b);
	}
	ctx->n_small_bufs = 0;
	while (ctx->buf_hdrs) {
		struct rift__buf *b = ctx->buf_hdrs;

		ctx->buf_hdrs = b->free_next;
		free(b);
	}
	ctx->n_buf_hdrs = 0;
}

/*
 * A buffer in registered memory, so the verbs transport can send it
 * without a copy: a pool block when it fits one, else a large registered
 * buffer when it is big enough to go by rendezvous (RDMA READ from it);
 * malloc'd otherwise, or when registered memory runs out (such a message
 * is streamed through the send slots instead).  The payload fills the
 * block from its first byte, so len bytes need a block of len bytes, not
 * one class up; the header sits in the block's pool slot.
 */
static struct rift__buf *buf_new_registered(rift_ctx *ctx, size_t len)
{
	struct rift__pool *pool = rift__ctx_pool(ctx);
	size_t big = ctx->cfg.block_size[RIFT_BLOCK_CLASSES - 1];
	struct rift__buf *b;
	char err[RIFT_ERRMSG_LEN];
	void *blk, **slot;
	int rc;

	if (!pool)
		return rift__buf_new(ctx, len);
	if (len <= big)
		blk = rift__pool_alloc(pool, len, RIFT_POOL_SEND, &rc, err,
				       sizeof(err));
	else if (ctx->cfg.rndv_threshold && len >= ctx->cfg.rndv_threshold)
		blk = rift__pool_alloc_large(pool, len, RIFT_POOL_SEND, &rc, err,
					     sizeof(err));
	else
		return rift__buf_new(ctx, len);
	if (!blk)
		return rift__buf_new(ctx, len); /* pool share used up */
	b = ctx->buf_hdrs;
	if (b) {
		ctx->buf_hdrs = b->free_next;
		ctx->n_buf_hdrs--;
	} else {
		b = malloc(sizeof(*b));
		if (!b) {
			rift__pool_free(pool, blk, RIFT_POOL_SEND);
			return NULL;
		}
	}
	slot = rift__pool_slot(pool, blk, NULL);
	if (!slot)
		abort(); /* the pool handed out something not a block */
	*slot = b;
	b->magic = RIFT_BUF_MAGIC;
	b->ctx = ctx;
	b->data = blk;
	b->cap = len;
	b->pool = pool;
	b->holds = NULL;
	b->small = false;
	b->om.user_buf = false;
	return b;
}

struct rift__buf *rift__buf_from_user(rift_ctx *ctx, void *data)
{
	struct rift__pool *pool = rift__ctx_pool_held(ctx);
	struct rift__buf *b;
	bool inside;

	if (!data)
		return NULL;
	if (pool) {
		void **slot = rift__pool_slot(pool, data, &inside);

		if (slot) {
			b = *slot;
			return b && b->magic == RIFT_BUF_MAGIC && b->data == data
				       ? b
				       : NULL;
		}
		if (inside)
			return NULL; /* not a block start: nothing to read */
	} else if (rift__pool_global_owns(data)) {
		/* Another context's block (this one holds no pool, so none
		 * of its buffers is registered): reading in front of it
		 * could touch an unmapped page. */
		return NULL;
	}
	b = (struct rift__buf *)data - 1;
	return b->magic == RIFT_BUF_MAGIC && b->data == data && !b->pool ? b
									  : NULL;
}

/* The part of rift__buf_release (session.h) that is not a small buffer
 * going back to the cache. */
void rift__buf_release_slow(struct rift__buf *b)
{
	rift_ctx *ctx = b->ctx;

	b->magic = 0;
	if (b->pool) {
		/* No peer may read it once it is free (each release unlinks
		 * its hold). */
		while (b->holds)
			b->holds->release(b->holds);
		/* Clears the slot: a stale pointer to the block finds no
		 * header any more. */
		rift__pool_free(b->pool, b->data, RIFT_POOL_SEND);
		if (cache_room(ctx->n_buf_hdrs)) {
			b->free_next = ctx->buf_hdrs;
			ctx->buf_hdrs = b;
			ctx->n_buf_hdrs++;
		} else {
			free(b);
		}
	} else {
		free(b); /* small ones only when the cache is full */
	}
}

void *rift_buf_alloc(rift_ctx *ctx, size_t len)
{
	struct rift__buf *b;

	if (!ctx || len > ctx->cfg.max_msg_size)
		return NULL;
	b = buf_new_registered(ctx, len);
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

/* ---- received messages ---- */

const void *rift_msg_data(const rift_msg *msg)
{
	return msg->data;
}

size_t rift_msg_len(const rift_msg *msg)
{
	return msg->len;
}

uint64_t rift_msg_seq(const rift_msg *msg)
{
	return msg->seq;
}

rift_msg *rift_msg_retain(rift_msg *msg)
{
	rift_msg *r;

	if (msg->retained)
		return msg;
	if (msg->owned || msg->lend) {
		r = malloc(sizeof(*r));
		if (!r)
			return NULL;
		*r = *msg;
		r->lend = NULL;
		r->retained = true;
		if (msg->owned) {
			/* The payload already has its own block: hand it
			 * over. */
			msg->owned = NULL;
			return r;
		}
		/* Registered memory the transport lends: kept where it is
		 * when the transport can give it up for good. */
		if (msg->lend->take(msg->lend, msg->len, &r->pool, &r->block))
			return r;
		free(r);
	}
	/* The payload sits in memory the transport keeps (a read buffer):
	 * a copy. */
	r = malloc(sizeof(*r) + msg->len);
	if (!r)
		return NULL;
	*r = *msg;
	r->data = r + 1;
	r->owned = NULL;
	r->lend = NULL;
	r->pool = NULL;
	r->block = NULL;
	memcpy(r->data, msg->data, msg->len);
	r->retained = true;
	return r;
}

void rift_msg_release(rift_msg *msg)
{
	if (!msg || !msg->retained)
		return;
	free(msg->owned);
	if (msg->block)
		rift__pool_free(msg->pool, msg->block, RIFT_POOL_RECV);
	free(msg);
}

/* ---- connections ---- */

static rift_conn *conn_alloc(rift_ctx *ctx, const rift_conn_callbacks *cbs,
			     void *user, bool is_client)
{
	rift_conn *conn = calloc(1, sizeof(*conn));

	if (!conn)
		return NULL;
	conn->ctx = ctx;
	if (cbs)
		conn->cbs = *cbs;
	conn->user = user;
	conn->is_client = is_client;
	rift_conn_stats_init(&conn->stats);
	rift__timer_init(ctx, &conn->retry_timer, NULL, conn);
	rift__timer_init(ctx, &conn->race_timer, race_timer_cb, conn);
	rift__timer_init(ctx, &conn->ack_timer, NULL, conn);
	rift__list_init(&conn->drain_node);
	rift__list_add_tail(&ctx->conns, &conn->node);
	ctx->stats.conns_active++;
	ctx->stats.conns_opened++;
	return conn;
}

static void ack_timer_cb(rift_timer *t, void *user)
{
	rift_conn *conn = user;

	RIFT_UNUSED(t);
	if (conn->ack_sent != conn->recv_seq && conn->path &&
	    conn->path->state == RIFT_PATH_ATTACHED) {
		conn->path->pending |= RIFT_PEND_ACK;
		rift__path_kick(conn->path);
	}
}

rift_conn *rift__conn_new_server(rift_listener *l, uint64_t session_id)
{
	rift_conn *conn = conn_alloc(l->ctx, &l->cbs, l->user, false);

	if (!conn)
		return NULL;
	conn->session_id = session_id;
	conn->ops = l->ops;
	conn->ack_timer.cb = ack_timer_cb;
	return conn;
}

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
				     (uint64_t)ctx->cfg.session_grace_ms * 1000u;
		uint64_t left = grace_end > ctx->now_us
					? (grace_end - ctx->now_us) / 1000u
					: 0;

		if (left < limit)
			limit = left ? left : 1;
	}
	return limit;
}

/*
 * Start the transport's connect to address i, bounded by limit ms.  A
 * failure leaves its reason in conn->last_error.
 */
static int attempt_start(rift_conn *conn, unsigned i, uint64_t limit,
			 bool force_alt, rift__path **out)
{
	rift_ctx *ctx = conn->ctx;
	rift__path *p = NULL;
	char addr[80];
	int rc;
	const char *way = rift__conn_alt(conn);
	bool alt = way && (force_alt || (conn->alt_addrs >> i & 1u));

	rift__sockaddr_str((const struct sockaddr *)&conn->addrs[i], addr,
			   sizeof(addr));
	RIFT_DEBUG("%s://%s%s%s: attempt (bound %llu ms)", conn->ops->name,
		   addr, alt ? " via " : "", alt ? way : "",
		   (unsigned long long)limit);
	rift__metrics_connect_attempt(conn);
	ctx->errmsg[0] = '\0'; /* what a failing connect says, below */
	if (rift__fault_hit(RIFT_FAULT_TCP_CONNECT) && conn->ops->kind == RIFT_TRANSPORT_TCP)
		rc = RIFT_ECONNREFUSED;
	else if (alt)
		rc = conn->ops->connect_alt(ctx, (const struct sockaddr *)&conn->addrs[i],
					    conn->addr_lens[i], &p);
	else
		rc = conn->ops->connect(ctx, (const struct sockaddr *)&conn->addrs[i],
					conn->addr_lens[i], &p);
	if (rc) {
		rift__conn_error(conn, "%s://%s%s%s%s: connect: %s",
				 conn->ops->name, addr, alt ? " (" : "",
				 alt ? way : "", alt ? ")" : "",
				 ctx->errmsg[0] ? ctx->errmsg : rift_strerror(rc));
		if (alt)
			conn->alt_addrs &= ~(1u << i);
		return rc;
	}
	p->alt = alt;
	if (alt)
		ctx->stats.connect_alts++;
	snprintf(p->peer, sizeof(p->peer), "%s://%s%s%s%s", conn->ops->name,
		 addr, alt ? " (" : "", alt ? way : "",
		 alt ? ")" : "");
	p->conn = conn;
	p->limit_ms = (uint32_t)limit;
	rift_timer_start(&p->timer, limit, 0);
	*out = p;
	return 0;
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
 * sees one HELLO or RESUME.  With no other address to try (one address,
 * or the next one's link is down) a re-attach races the same address the
 * transport's other way (ops->connect_alt).  The delay is twice the
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
	rift__path *p = NULL;

	RIFT_UNUSED(t);
	if (conn->racer || !conn->path || conn->closing ||
	    conn->path->state != RIFT_PATH_CONNECTING ||
	    (conn->state != RIFT_CONN_CONNECTING &&
	     conn->state != RIFT_CONN_DETACHED))
		return;
	if (conn->n_addrs < 2 ||
	    attempt_start(conn, i, attempt_limit(conn), false, &p)) {
		if (conn->n_addrs >= 2)
			RIFT_DEBUG("race: %s", conn->last_error);
		/* No other address to try now (one address, or the next
		 * one's link is down): the same address the other way,
		 * in case it is the way of setting up that gets no answer
		 * (rdma_connect_alt_op). */
		i = conn->addr_idx % conn->n_addrs;
		if (!race_alt(conn) || conn->path->alt ||
		    attempt_start(conn, i, attempt_limit(conn), true, &p)) {
			RIFT_DEBUG("race: %s", conn->last_error);
			return;
		}
	}
	conn->ctx->stats.connect_races++;
	conn->racer = p;
	conn->racer_idx = i;
	conn->racer_us = conn->ctx->now_us;
}

static int conn_setup_client(rift_ctx *ctx, rift_conn *conn,
			     const struct rift__url *url)
{
	char err[RIFT_ERRMSG_LEN];
	rift_fallback_reason why;

	switch (url->scheme) {
	case RIFT_SCHEME_TCP:
		conn->ops = &rift__tcp_ops;
		break;
	case RIFT_SCHEME_RDMA:
		why = rift__rdma_ops.available(ctx);
		if (why != RIFT_FALLBACK_NONE)
			return rift__ctx_fail(ctx, RIFT_ENOTSUP,
					      "rdma:// unavailable: %s",
					      rift_fallback_reason_str(why));
		conn->ops = &rift__rdma_ops;
		break;
	case RIFT_SCHEME_AUTO:
		conn->auto_scheme = true;
		why = rift__rdma_ops.available(ctx);
		if (why == RIFT_FALLBACK_NONE) {
			conn->ops = &rift__rdma_ops;
		} else {
			/* Recorded and counted once, never a silent switch. */
			conn->ops = &rift__tcp_ops;
			conn->fallback = why;
			ctx->stats.fallbacks[why]++;
		}
		break;
	}
	for (unsigned i = 0; i < url->n_addrs; i++) {
		int n, room = (int)RIFT_ARRAY_SIZE(conn->addrs) - (int)conn->n_addrs;

		if (url->addrs[i].host[0] == '\0')
			return rift__ctx_fail(ctx, RIFT_EINVAL,
					      "url: address %u has no host", i + 1);
		if (room <= 0)
			break;
		n = rift__resolve(&url->addrs[i], false, &conn->addrs[conn->n_addrs],
				  &conn->addr_lens[conn->n_addrs], room, err,
				  sizeof(err));
		if (n < 0)
			return rift__ctx_fail(ctx, n, "%s", err);
		conn->n_addrs += (unsigned)n;
	}
	return 0;
}

int rift_connect(rift_ctx *ctx, const char *url, const rift_conn_callbacks *cbs,
		 void *user, rift_conn **out)
{
	struct rift__url u;
	rift_conn *conn;
	int rc;

	if (!ctx || !out)
		return RIFT_EINVAL;
	rc = rift__url_parse(url, &u, ctx->errmsg, sizeof(ctx->errmsg));
	if (rc)
		return rc;
	if (u.n_opts)
		return rift__ctx_fail(ctx, RIFT_EINVAL,
				      "url '%s': unknown option '%s'", url,
				      u.opts[0].key);
	conn = conn_alloc(ctx, cbs, user, true);
	if (!conn)
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "rift_connect: out of memory");
	rc = conn_setup_client(ctx, conn, &u);
	if (rc)
		goto fail_conn;
	do {
		if (getrandom(&conn->session_id, sizeof(conn->session_id), 0) !=
		    sizeof(conn->session_id)) {
			rc = rift__ctx_fail(ctx, RIFT_EIO, "getrandom failed");
			goto fail_conn;
		}
	} while (conn->session_id == 0);
	conn->state = RIFT_CONN_CONNECTING;
	conn->retry_timer.cb = retry_timer_cb;
	conn->ack_timer.cb = ack_timer_cb;
	/* First attempt from the loop, so failures arrive as events. */
	rc = rift_timer_start(&conn->retry_timer, 0, 0);
	if (rc)
		goto fail_conn;
	*out = conn;
	return 0;

fail_conn:
	rift__list_del(&conn->node);
	ctx->stats.conns_active--;
	ctx->stats.conns_opened--;
	free(conn);
	return rc;
}

static inline int send_check(rift_conn *conn, size_t len)
{
	rift_ctx *ctx = conn->ctx;

	if (conn->closing)
		return RIFT_ECLOSED;
	if (conn->state == RIFT_CONN_CONNECTING || conn->state == RIFT_CONN_DEAD)
		return RIFT_ENOTCONN;
	if (len > ctx->cfg.max_msg_size)
		return RIFT_EMSGSIZE;
	/* One message may exceed the window alone; otherwise the window
	 * bounds what is held for replay, and what a stopped receiver holds.
	 * Headers count: zero-length messages are not free. */
	if (conn->window_used &&
	    conn->window_used + len + RIFT_HDR_SIZE > ctx->cfg.send_window) {
		conn->want_writable = true;
		conn->stats.send_eagain++;
		return RIFT_EAGAIN;
	}
	return 0;
}

int rift_conn_send(rift_conn *conn, const void *data, size_t len)
{
	struct rift__buf *b;
	int rc = send_check(conn, len);

	if (rc)
		return rc;
	/* The copy is made anyway: over RDMA, a message that will go by
	 * rendezvous is copied into registered memory, so the peer can READ
	 * it from there; small ones come from the context's cache, the rest
	 * (TCP) from malloc. */
	if ((conn->transport == RIFT_TRANSPORT_RDMA ||
	     (conn->transport == RIFT_TRANSPORT_NONE &&
	      conn->ops == &rift__rdma_ops)) &&
	    conn->ctx->cfg.rndv_threshold && len >= conn->ctx->cfg.rndv_threshold)
		b = buf_new_registered(conn->ctx, len);
	else if (len <= SMALL_BUF)
		b = buf_new_small(conn->ctx, len);
	else
		b = rift__buf_new(conn->ctx, len);
	if (!b)
		return RIFT_ENOMEM;
	if (len <= SMALL_BUF)
		copy_small(b->data, data, len);
	else
		memcpy(b->data, data, len);
	rift__conn_enqueue(conn, b, len);
	return 0;
}

int rift_conn_send_buf(rift_conn *conn, void *buf, size_t len)
{
	struct rift__buf *b = rift__buf_from_user(conn->ctx, buf);
	int rc;

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
	if (conn->closing)
		return RIFT_ECLOSED;
	conn->recv_stopped = true;
	return 0;
}

int rift_conn_recv_start(rift_conn *conn)
{
	if (conn->closing)
		return RIFT_ECLOSED;
	conn->recv_stopped = false;
	if (conn->held_head && rift__list_empty(&conn->drain_node))
		rift__list_add_tail(&conn->ctx->drainq, &conn->drain_node);
	return 0;
}

void rift_conn_close(rift_conn *conn, void (*close_cb)(rift_conn *conn))
{
	rift_ctx *ctx;
	rift__path *p;

	if (!conn || conn->closing)
		return;
	ctx = conn->ctx;
	p = conn->path;
	conn->closing = true;
	conn->close_cb = close_cb;
	if (p && p->state == RIFT_PATH_ATTACHED) {
		/* Best effort: finish the frame in progress and say goodbye
		 * in the same write, without waiting. */
		conn->cursor = NULL;
		p->pending |= RIFT_PEND_CLOSE;
		p->ops->flush(p);
	}
	rift__conn_abandon_path(conn);
	rift_timer_stop(&conn->retry_timer);
	rift_timer_stop(&conn->ack_timer);
	rift__conn_drop_held(conn);
	rift__list_del(&conn->node);
	rift__list_add_tail(&ctx->closing_conns, &conn->node);
	ctx->stats.conns_active--;
}

int rift__conn_cut(rift_conn *conn)
{
	if (!conn->path || conn->path->state != RIFT_PATH_ATTACHED)
		return RIFT_ENOTCONN;
	conn->path->ops->cut(conn->path);
	return 0;
}

void *rift_conn_user(const rift_conn *conn)
{
	return conn->user;
}

void rift_conn_set_user(rift_conn *conn, void *user)
{
	conn->user = user;
}

void rift_conn_set_callbacks(rift_conn *conn, const rift_conn_callbacks *cbs)
{
	conn->cbs = *cbs;
}

rift_ctx *rift_conn_ctx(const rift_conn *conn)
{
	return conn->ctx;
}

rift_transport rift_conn_transport(const rift_conn *conn)
{
	return conn->transport;
}

rift_fallback_reason rift_conn_fallback_reason(const rift_conn *conn)
{
	return conn->fallback;
}

const char *rift_conn_last_error(const rift_conn *conn)
{
	return conn->last_error;
}

void rift__conn_stats_init(rift_conn_stats *st, size_t size)
{
	memset(st, 0, size);
	st->size = (uint32_t)(size < sizeof(*st) ? size : sizeof(*st));
}

int rift_conn_stats_get(const rift_conn *conn, rift_conn_stats *st)
{
	rift_conn_stats now = conn->stats;
	uint32_t size = st->size;

	if (size < sizeof(uint32_t) || size > sizeof(*st))
		return RIFT_EINVAL;
	now.unacked_msgs = conn->unacked_msgs;
	now.unacked_bytes = conn->unacked_bytes;
	now.held_bytes = conn->held_bytes;
	memcpy(st, &now, size);
	st->size = size;
	return 0;
}

/* ---- listeners ---- */

/* The TCP listener that stands beside an auto:// RDMA listener. */
static int listen_twin(rift_listener *l, struct sockaddr_storage *sa,
		       socklen_t len)
{
	rift_listener *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return rift__ctx_fail(l->ctx, RIFT_ENOMEM, "listen: out of memory");
	*t = *l;
	t->fd = -1;
	t->transport_state = NULL;
	t->ops = &rift__tcp_ops;
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
	int rc;

	if (!ctx || !out || !on_accept)
		return RIFT_EINVAL;
	rc = rift__url_parse(url, &u, ctx->errmsg, sizeof(ctx->errmsg));
	if (rc)
		return rc;
	if (u.n_opts)
		return rift__ctx_fail(ctx, RIFT_EINVAL,
				      "url '%s': unknown option '%s'", url,
				      u.opts[0].key);
	rc = rift__resolve(&u.addrs[0], true, &sa, &len, 1, err, sizeof(err));
	if (rc < 0)
		return rift__ctx_fail(ctx, rc, "%s", err);
	l = calloc(1, sizeof(*l));
	if (!l)
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "rift_listen: out of memory");
	l->ctx = ctx;
	if (cbs)
		l->cbs = *cbs;
	l->user = user;
	l->on_accept = on_accept;
	l->fd = -1;
	/* rdma:// listens on RDMA only, tcp:// on TCP only; auto:// on both,
	 * at the same port number, so clients that fell back find it. */
	l->ops = &rift__tcp_ops;
	l->auto_scheme = u.scheme == RIFT_SCHEME_AUTO;
	if (u.scheme != RIFT_SCHEME_TCP) {
		rift_fallback_reason why = rift__rdma_ops.available(ctx);

		if (why == RIFT_FALLBACK_NONE)
			l->ops = &rift__rdma_ops;
		else if (u.scheme == RIFT_SCHEME_RDMA) {
			free(l);
			return rift__ctx_fail(ctx, RIFT_ENOTSUP,
					      "rdma:// unavailable: %s",
					      rift_fallback_reason_str(why));
		}
	}
	rc = l->ops->listen(l, (struct sockaddr *)&sa, len);
	if (rc) {
		free(l);
		return rc; /* the transport set ctx->errmsg */
	}
	/* With rdma.cm = tcp the side channel's socket already serves TCP
	 * sessions on that port (it tells them apart by their first bytes):
	 * a twin could not bind it. */
	if (u.scheme == RIFT_SCHEME_AUTO && l->ops == &rift__rdma_ops &&
	    !l->tcp_shared) {
		rc = listen_twin(l, &sa, len);
		if (rc) {
			l->ops->listen_close(l);
			free(l);
			return rc;
		}
	}
	rift__list_add_tail(&ctx->listeners, &l->node);
	ctx->stats.listeners_active++;
	*out = l;
	return 0;
}

int rift_listener_port(const rift_listener *l)
{
	return l->port;
}

void *rift_listener_user(const rift_listener *l)
{
	return l->user;
}

void rift__listener_path(rift_listener *l, rift__path *p)
{
	p->lst = l->main ? l->main : l;
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

/* ---- deferred work ---- */

void rift__ctx_deferred_run(rift_ctx *ctx)
{
	/* Delivering held messages queues acks, and flushing may fail
	 * paths and queue more work: loop until quiet. */
	while (!rift__list_empty(&ctx->drainq) ||
	       !rift__list_empty(&ctx->flushq)) {
		if (!rift__list_empty(&ctx->drainq)) {
			rift_conn *conn = rift__list_entry(ctx->drainq.next,
							   rift_conn, drain_node);

			rift__list_del(&conn->drain_node);
			rift__conn_drain(conn);
			continue;
		}
		rift__path *p = rift__list_entry(ctx->flushq.next, rift__path,
						 flush_node);

		rift__path_unqueue(p);
		if (p->state != RIFT_PATH_DEAD)
			p->ops->flush(p);
		if (p->state != RIFT_PATH_DEAD)
			rift__sess_after_flush(p);
	}
	while (!rift__list_empty(&ctx->dead_paths)) {
		rift__path *p = rift__list_entry(ctx->dead_paths.next,
						 rift__path, ctx_node);

		rift__list_del(&p->ctx_node);
		p->ops->destroy(p);
	}
	while (!rift__list_empty(&ctx->closing_conns)) {
		rift_conn *conn = rift__list_entry(ctx->closing_conns.next,
						   rift_conn, node);

		rift__list_del(&conn->node);
		rift__conn_drop_queue(conn);
		if (conn->close_cb)
			conn->close_cb(conn);
		free(conn);
	}
	while (!rift__list_empty(&ctx->closing_listeners)) {
		rift_listener *l = rift__list_entry(ctx->closing_listeners.next,
						    rift_listener, node);

		rift__list_del(&l->node);
		if (l->close_cb)
			l->close_cb(l);
		free(l);
	}
}
