/*
 * rdma.c - the verbs transport: one RC QP per path, set up with rdma_cm.
 *
 * Frames travel as a byte stream cut into SENDs of at most buf_size bytes,
 * so the session layer and the frame parser are the ones TCP uses.  Flow
 * control is by credits: the receiver posts rq_depth buffers and returns
 * one credit per buffer it re-posts, in the immediate data of its own
 * SENDs, so a sender never sends into a missing buffer (no RNR retries in
 * normal operation).  One credit is kept back for credit-only updates, so
 * two busy peers can never both wait for credits.
 *
 * Sends are copied into registered slots (post lists, inline below the
 * device's inline limit, a completion requested only every quarter queue),
 * except a message in a registered block that fits the peer's receive
 * buffer: it goes as a two-piece SEND straight from its block.  Whole
 * frames in a receive buffer are delivered from it in place; the rest is
 * copied into the stream buffer, and buffers are re-posted at once.
 *
 * Large messages (rdma.rndv_threshold and up) move by rendezvous, as UCX
 * and SMC-R do: the sender sends only a descriptor (the frame header, the
 * address, length and rkey of the registered buffer holding the payload)
 * as a SEND of its own, flagged in the immediate, in order with the other
 * frames.  The receiver RDMA READs the payload straight into a registered
 * block of its own and delivers it in place; frames behind a descriptor
 * wait until it is delivered.  The sender keeps the buffer until the
 * session's cumulative ack, which the receiver only sends after delivery,
 * so after the READ.  A path that dies mid-READ loses nothing: the session
 * replays the message on the next path (as a descriptor again, or as
 * plain frames over TCP).  A descriptor the peer cannot stand behind
 * (length not its frame's, READ refused with a remote access error) ends
 * the session with RIFT_EPROTO.  See rdma_rndv.c.
 *
 * Connection setup: the client's rdma_connect carries a small hello in its
 * private data (magic, version, flags, receive depth, buffer size) and
 * READ resources (initiator depth, responder resources) for rendezvous;
 * the server checks it and answers with its own in rdma_accept, or rejects
 * with a reason.  Both set a short ack timeout and a retry count below 7 so a dead
 * peer is noticed (rxe treats 7 as infinite).
 *
 * Completions: the paths of a context on one device share completion
 * queues (as UCX, brpc and SMC-R do), so a busy loop polls one CQ per
 * device, not one per connection, and event mode has one completion
 * channel per device in epoll.  A CQ takes paths while the completions
 * they can have outstanding at once fit it; a completion finds its path
 * by QP number, and the path's tag in the upper bits of wr_id tells a
 * live path's completions from those a destroyed QP left behind.  See
 * rdma_cq.c and rdma_wc.c.
 *
 * The files, one concern each, share rdma_int.h: rdma_dev.c (devices,
 * their PDs and the pool's registration, context state), rdma_cq.c
 * (shared completion queues), rdma_wc.c (completions, the QP table,
 * busy polling), rdma_qp.c (path resources, the prepared-QP pool),
 * rdma_rx.c (receive side), rdma_tx.c (send side), rdma_rndv.c
 * (rendezvous), rdma_cm.c (the hello, rdma_cm events), rdma_hello.c
 * (the hello's wire format, no device needed), rdma_boot.c
 * (cm=tcp bring-up), rdma_reap.c (teardown), rdma_devices.c
 * (rift_devices) and this one (connecting, listening, the ops table and
 * its context hooks).  verbs.h wraps every libibverbs and librdmacm
 * call; rdma.h is all the rest of rift sees (the registry, tests).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "transports/verbs/rdma_int.h"

/* ---- ops ---- */

/* The path's source: the one given (group.local), whose device is the
 * path's; else the configured device's (rdma_src.c), or routing's. */
static int path_src(const rift_config *cfg, const struct sockaddr *src,
		    socklen_t src_len, const struct sockaddr *sa,
		    socklen_t len, struct rift__rdma_src *s, char *err,
		    size_t errlen)
{
	if (src)
		return rift__rdma_src_given(cfg, src, src_len, s, err, errlen);
	return rift__rdma_src(cfg, sa, len, s, err, errlen);
}

/* rdma_cm: bind the id to the path's source, if it has one, then
 * resolve the address from there.  0, or RIFT_E* with ctx's message. */
static int resolve_from(rift_ctx *ctx, struct rdma_path *rp,
			const struct rift__rdma_src *s,
			const struct sockaddr *sa)
{
	char ip[INET6_ADDRSTRLEN];
	rift__vb_err err;
	int rc;

	/* Bound, the id keeps its source through every resolution (also
	 * the ones asked again, rdma_cm.c), and its device with it. */
	if (s->set) {
		rc = rift__vb_bind(rp->id, (const struct sockaddr *)&s->addr,
				   err);
		if (rc) {
			rift__sockaddr_ip((const struct sockaddr *)&s->addr, ip,
					  sizeof(ip));
			return rift__ctx_fail(ctx, rc,
					      "bind to local address %s: %s",
					      ip, err);
		}
	}
	rc = rift__vb_resolve_addr(rp->id, NULL, sa, RESOLVE_STEP_MS, err);
	/* The kernel's route lookup said no at once: no route to the
	 * address, most often because the link to it is down (its routes
	 * went with it). */
	if (rc == RIFT_EINVAL || rc == RIFT_ENETUNREACH || rc == RIFT_ENETDOWN)
		return rift__ctx_fail(ctx, RIFT_ENETUNREACH,
				      "%s: no route to the address (is the "
				      "link to it down?)",
				      err);
	return rc ? rift__ctx_fail(ctx, rc, "%s", err) : 0;
}

static int connect_cm(rift_ctx *ctx, const rift_config *cfg,
		      const struct sockaddr *src, socklen_t src_len,
		      const struct sockaddr *sa, socklen_t len, rift_cm cm,
		      rift__path **out)
{
	struct rift__rdma_ctx *r;
	struct rdma_path *rp;
	struct rift__rdma_src s;
	char serr[RIFT_ERRMSG_LEN];
	rift__vb_err err;
	int rc;

	rc = rift__rdma_rctx(ctx, &r, err);
	if (rc)
		return rift__ctx_fail(ctx, rc, "%s", err);
	rc = path_src(cfg, src, src_len, sa, len, &s, serr, sizeof(serr));
	if (rc)
		return rift__ctx_fail(ctx, rc, "%s", serr);
	rp = rift__rdma_path_new(ctx, true);
	if (!rp)
		return RIFT_ENOMEM;
	rp->base.cfg = cfg;
	if (cm == RIFT_CM_TCP) {
		/* The side channel goes to the same address and port. */
		rc = rift__cmtcp_connect(&rp->base, sa, len, &s, &rp->tc, serr,
					 sizeof(serr));
		if (rc) {
			rift__path_destroy(&rp->base);
			return rift__ctx_fail(ctx, rc, "cm=tcp side channel: %s",
					      serr);
		}
		*out = &rp->base;
		return 0;
	}
	rc = rift__vb_id_create(r->ch, &rp->kind, &rp->id, err);
	if (rc)
		rift__ctx_fail(ctx, rc, "%s", err);
	else
		rc = resolve_from(ctx, rp, &s, sa);
	if (rc) {
		rift__path_destroy(&rp->base);
		return rc;
	}
	*out = &rp->base;
	return 0;
}

static int rdma_connect_op(rift_ctx *ctx, const rift_config *cfg,
			   const struct sockaddr *src, socklen_t src_len,
			   const struct sockaddr *sa, socklen_t len,
			   rift__path **out)
{
	return connect_cm(ctx, cfg, src, src_len, sa, len, cfg->cm, out);
}

/*
 * rdma_cm got no answer from an address: rift listeners also take the
 * cm=tcp bootstrap on their port (rdma_listen_op), which needs no CM
 * packet at all.  rxe (Linux 6.1) can stop receiving CM packets on a
 * device for good: a CM message sent while the device's link is down
 * fails its route lookup, the GSI QP goes to the error state, and the
 * MAD layer's recovery (SQE -> RTS) brings back its send side only, so
 * every later CM reply to that device is dropped.  Its RC QPs work.
 */
static const char *rdma_alt(const rift_config *cfg)
{
	return cfg->cm == RIFT_CM_RDMACM ? "cm=tcp" : NULL;
}

static int rdma_connect_alt_op(rift_ctx *ctx, const rift_config *cfg,
			       const struct sockaddr *src, socklen_t src_len,
			       const struct sockaddr *sa, socklen_t len,
			       rift__path **out)
{
	return connect_cm(ctx, cfg, src, src_len, sa, len, RIFT_CM_TCP, out);
}

static bool wildcard(const struct sockaddr *sa)
{
	uint8_t g[16];

	return !rift__rdma_addr_gid(sa, g);
}

/*
 * cm=tcp: the side channel listens on the URL's TCP port; an rdma_cm id
 * on the same port answers rdma_cm clients with RIFT_REJ_CM_TCP, so a
 * mismatched peer gets a clear error instead of a timeout (best effort).
 */
static int listen_tcp(struct rdma_listener *rl, const struct sockaddr *sa,
		      socklen_t len)
{
	rift_listener *l = rl->l;
	rift_ctx *ctx = l->ctx;
	struct sockaddr_storage ss;
	struct dev_sel sel;
	char err[RIFT_ERRMSG_LEN];
	rift__vb_err verr;
	int rc;

	if (!wildcard(sa) || ctx->cfg.gid_index >= 0) {
		/* Checked now so a bad rdma.device / gid_index fails the
		 * listen, not every accept. */
		rc = rift__rdma_dev_select(ctx, sa, &sel, err, sizeof(err));
		if (rc)
			return rift__ctx_fail(ctx, rc, "listen (cm=tcp): %s", err);
		if (!wildcard(sa))
			rl->prep_verbs = sel.verbs, rl->prep_port = sel.port;
	}
	rc = rift__cmtcp_listen(l, sa, len, l->auto_scheme, &rl->tl);
	if (rc)
		return rc;
	rl->cm_tcp = true;
	l->tcp_shared = l->auto_scheme;
	memcpy(&ss, sa, len);
	rift__sockaddr_set_port(&ss, l->port);
	if (rift__vb_id_create(rctx_of(ctx)->ch, &rl->kind, &rl->id, verr) ||
	    rift__vb_bind(rl->id, (struct sockaddr *)&ss, verr) ||
	    rift__vb_listen(rl->id, (int)ctx->cfg.listen_backlog, verr)) {
		RIFT_INFO(ctx, "cm=tcp listener on port %d: no rdma_cm id to "
			       "refuse rdma_cm clients with: %s",
			  l->port, verr);
		rift__vb_id_destroy(rl->id);
		rl->id = NULL;
	}
	return 0;
}

/*
 * An rdma_cm listener takes the cm=tcp bootstrap too, on the same port
 * over TCP: a client whose rdma_cm gets no answer attaches through it
 * (rdma_connect_alt_op says why rdma_cm can fall silent), and a cm=tcp
 * client needs no matching configuration.  auto://: that socket serves
 * the TCP fallback as well (no twin listener), as with cm=tcp.  Without
 * auto:// the side channel is best effort: when something else holds
 * the TCP port, the listener takes rdma_cm only.
 */
static int side_channel(struct rdma_listener *rl, const struct sockaddr *sa,
			socklen_t len)
{
	rift_listener *l = rl->l;
	struct sockaddr_storage ss;
	int port = l->port, rc;

	memcpy(&ss, sa, len);
	rift__sockaddr_set_port(&ss, port);
	rc = rift__cmtcp_listen(l, (struct sockaddr *)&ss, len, l->auto_scheme,
				&rl->tl);
	l->port = port;
	if (rc && !l->auto_scheme) {
		RIFT_INFO(l->ctx,
			  "rdma listener on port %d: no cm=tcp side channel: "
			  "%s",
			  port, l->ctx->errmsg);
		l->ctx->errmsg[0] = '\0';
		rl->tl = NULL;
		return 0;
	}
	if (rc)
		return rc;
	l->tcp_shared = l->auto_scheme;
	return 0;
}

static int rdma_listen_op(rift_listener *l, const struct sockaddr *sa,
			  socklen_t len)
{
	rift_ctx *ctx = l->ctx;
	struct rift__rdma_ctx *r;
	struct rdma_listener *rl;
	rift__vb_err err;
	const struct sockaddr *bound;
	char msg[320];
	const char *bad;
	int rc;

	rc = rift__rdma_rctx(ctx, &r, err);
	if (rc)
		return rift__ctx_fail(ctx, rc, "listen: %s", err);
	rl = calloc(1, sizeof(*rl));
	if (!rl)
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "listen: out of memory");
	rl->kind = OWNER_LISTENER;
	rl->l = l;
	memcpy(&rl->sa, sa, len);
	rl->sa_len = len;
	if (ctx->cfg.cm == RIFT_CM_TCP) {
		rc = listen_tcp(rl, sa, len);
		if (rc) {
			free(rl);
			return rc;
		}
		rift__rdma_pool_init(rl, rl->prep_verbs, rl->prep_port);
		l->transport_state = rl;
		return 0;
	}
	rc = rift__vb_id_create(r->ch, &rl->kind, &rl->id, err);
	if (!rc)
		rc = rift__vb_bind(rl->id, sa, err);
	if (!rc)
		rc = rift__vb_listen(rl->id, (int)ctx->cfg.listen_backlog, err);
	if (rc) {
		rift__vb_id_destroy(rl->id);
		free(rl);
		return rift__ctx_fail(ctx, rc, "listen: %s", err);
	}
	/* Bound to an address: the device is known now. */
	bad = rift__rdma_gid_mismatch(ctx, rl->id, msg, sizeof(msg));
	if (bad) {
		rift__vb_id_destroy(rl->id);
		free(rl);
		return rift__ctx_fail(ctx, RIFT_EINVAL, "listen: %s", bad);
	}
	bound = &rl->id->route.addr.src_addr;
	l->port = bound->sa_family == AF_INET6
			  ? ntohs(((const struct sockaddr_in6 *)bound)->sin6_port)
			  : ntohs(((const struct sockaddr_in *)bound)->sin_port);
	rc = side_channel(rl, sa, len);
	if (rc) {
		rift__vb_id_destroy(rl->id);
		free(rl);
		return rc;
	}
	rift__rdma_pool_init(rl, rl->id->verbs, rl->id->port_num);
	l->transport_state = rl;
	return 0;
}

/*
 * The listener's rdma_cm id again, on its address and port, once the
 * device there is back (rdma_bind_addr fails meanwhile): from a timer,
 * since the removal is learnt in the middle of CM events, maybe the
 * listener's own, and destroying an id waits for its events' acks.
 */
#define RELISTEN_FIRST_MS 50
#define RELISTEN_MAX_MS 2000

static void relisten_cb(rift_timer *t, void *user)
{
	struct rdma_listener *rl = user;
	rift_listener *l = rl->l;
	rift_ctx *ctx = l->ctx;
	struct sockaddr_storage ss;
	struct rdma_cm_id *id = NULL;
	rift__vb_err err;

	RIFT_UNUSED(t);
	if (rl->id) {
		rift__vb_id_destroy(rl->id);
		rl->id = NULL;
	}
	memcpy(&ss, &rl->sa, rl->sa_len);
	rift__sockaddr_set_port(&ss, l->port);
	if (rift__vb_id_create(rctx_of(ctx)->ch, &rl->kind, &id, err) ||
	    rift__vb_bind(id, (struct sockaddr *)&ss, err) ||
	    rift__vb_listen(id, (int)ctx->cfg.listen_backlog, err)) {
		rift__vb_id_destroy(id);
		rl->relisten_ms = rl->relisten_ms
					  ? (rl->relisten_ms * 2 > RELISTEN_MAX_MS
						     ? RELISTEN_MAX_MS
						     : rl->relisten_ms * 2)
					  : RELISTEN_FIRST_MS;
		RIFT_DEBUG(ctx, "listener on port %d: not listening over "
				"rdma_cm yet: %s; again in %u ms",
			   l->port, err, rl->relisten_ms);
		rift_timer_start(&rl->relisten, rl->relisten_ms, 0);
		return;
	}
	rl->id = id;
	rl->relisten_ms = 0;
	RIFT_INFO(ctx, "listener on port %d listens over rdma_cm again (%s)",
		  l->port,
		  id->verbs ? rift__vb_device_name(id->verbs->device) : "?");
}

void rift__rdma_relisten(struct rdma_listener *rl)
{
	if (!rl->relisten_init) {
		rift__timer_init(rl->l->ctx, &rl->relisten, relisten_cb, rl);
		rl->relisten_init = true;
	}
	if (rift__timer_active(&rl->relisten))
		return;
	RIFT_WARN(rl->l->ctx, "listener on port %d: the RDMA device of its "
			      "address was removed; it listens over rdma_cm "
			      "again once the device is back",
		  rl->l->port);
	rl->relisten_ms = 0;
	rift_timer_start(&rl->relisten, 0, 0);
}

static void rdma_listen_close(rift_listener *l)
{
	struct rdma_listener *rl = l->transport_state;

	if (!rl)
		return;
	if (rl->relisten_init)
		rift_timer_stop(&rl->relisten);
	rift__rdma_pool_free(rl);
	rift__cmtcp_listen_close(rl->tl);
	rift__vb_id_destroy(rl->id);
	free(rl);
	l->transport_state = NULL;
}

uint64_t rift__conn_rdma_figure(const rift_conn *conn,
				enum rift__rdma_figure f)
{
	rift__path *p = conn->path;
	const struct rdma_path *rp;

	if (!p || p->ops != &rift__rdma_ops)
		return 0;
	rp = rp_of(p);
	switch (f) {
	case RIFT__RDMA_ZC_SENDS:
		return rp->zc_sends;
	case RIFT__RDMA_NOW_SENDS:
		return rp->now_sends;
	case RIFT__RDMA_BARE_SENDS:
		return rp->bare_sends;
	case RIFT__RDMA_INPLACE_BYTES:
		return rp->inplace_bytes;
	case RIFT__RDMA_RNDV_INFLIGHT:
		return rp->rndv_n;
	}
	return 0;
}

const char *rift__conn_rdma_device(const rift_conn *conn, unsigned *port)
{
	const struct rdma_path *rp;

	if (!conn->path || conn->path->ops != &rift__rdma_ops)
		return NULL;
	rp = rp_of(conn->path);
	if (!rp->verbs)
		return NULL;
	*port = rp->port_num;
	return rift__vb_device_name(rp->verbs->device);
}

static void rdma_describe(const rift__path *p, char *buf, size_t len)
{
	const struct rdma_path *rp = (const struct rdma_path *)p;

	if (rp->verbs)
		snprintf(buf, len, "%s:%u",
			 rift__vb_device_name(rp->verbs->device), rp->port_num);
}

/*
 * No progress for four of the QP's ack timeouts (and 100 ms of slack for
 * the loop) while a signaled work request is out: no completion, no
 * message of this path acknowledged by the peer's session, and no
 * message's bytes (or a READ) posted meanwhile.  The peer's adapter has
 * not answered even after three retransmissions.  A link that drops
 * everything (no port event: loss, a switch, the peer's NIC) shows here
 * before the QP's retry budget runs out (retry_count + 1 ack timeouts):
 * posts stop once credits or send slots run out, and only completions
 * give those back.
 * A link that loses a few per cent of its packets but works must not:
 *  - the transport retransmits an ack timeout after its last
 *    transmission, so a request lost at the end of a burst completes an
 *    ack timeout after the last post, one more for each lost
 *    retransmission (rxe NAKs a gap once, so every retransmission lost
 *    waits for the timer too);
 *  - rxe goes back to the oldest unacknowledged packet on each loss, and
 *    with a queue of unsignaled sends (one in sq_depth / 4 asks for a
 *    completion) the next completion can be 0.7 s away while the peer
 *    gets message after message: its session's acks show that.
 * Counting from the last completion alone failed such a link over every
 * few seconds at 2 % loss (the two-hosts lab's at 4 %: every second),
 * replaying the window each time.  Control frames (acks, pings) do not
 * count as posts: a PING a quiet side sends would put the detection off
 * by its 200 ms.  Only signaled requests tell: the sends after the last
 * one (an ack, a ping: all a receiving side sends) are not tracked.  So
 * while nothing signaled is out, such a tail gets a signaled zero-length
 * WRITE behind it (no receive credit; the peer's adapter answers it),
 * whose wait the next stall tick (100 ms) measures as any send's.
 */
static uint64_t rdma_tx_stalled_us(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);
	uint64_t bound_us = 4u * ack_timeout_us(p->cfg) + 100000u;
	uint64_t now = p->ctx->now_us, since;
	rift__vb_err err;
	int rc;

	if (!rp->established)
		return 0;
	if (!rp->sig_out && rp->unsignaled && rp->slots_free) {
		rc = rift__rdma_post_zero_write(rp, NULL, err);
		if (rc)
			rift__path_failed(p, rc, "%s", err);
		return 0;
	}
	if (!rp->sig_out || now - rp->tx_posted_us < bound_us)
		return 0;
	since = rp->tx_progress_us > p->peer_acked_us ? rp->tx_progress_us
						      : p->peer_acked_us;
	return now - since >= bound_us ? now - since : 0;
}

static void rdma_cut(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	if (rp->tc) {
		rift__cmtcp_shutdown(rp->tc);
	} else if (rp->id && rp->established) {
		rift__rdma_qp_err(rp);
		rift__vb_disconnect(rp->id);
	}
}

int rift__conn_qp_attrs(const rift_conn *conn, uint8_t *timeout,
			uint8_t *retry, uint8_t *rnr_retry, bool *user_qp)
{
	struct ibv_qp_attr a;
	struct rdma_path *rp;
	rift__vb_err err;
	int rc;

	if (!conn->path || conn->path->ops != &rift__rdma_ops ||
	    !rp_of(conn->path)->qp)
		return RIFT_EINVAL;
	rp = rp_of(conn->path);
	memset(&a, 0, sizeof(a));
	rc = rift__vb_qp_query(rp->qp, &a,
			       IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY,
			       err);
	if (rc)
		return rc;
	*timeout = a.timeout;
	*retry = a.retry_cnt;
	*rnr_retry = a.rnr_retry;
	*user_qp = rp->user_qp || rp->tc;
	return a.qp_state == IBV_QPS_RTS ? 0 : RIFT_EIO;
}

/*
 * Context hooks: unlike sockets, completion queues are not in the loop's
 * epoll when busy or adaptive polling spins on them (rift__rdma_poll,
 * rdma_wc.c), and must be armed before the loop sleeps; registered memory
 * (the pool) and rdma_cm's channel are context state to free at its end.
 */
const struct rift__transport_ops rift__rdma_ops = {
	.name = "rdma",
	.kind = RIFT_TRANSPORT_RDMA,
	.scheme = RIFT_SCHEME_RDMA,
	.registered_sends = true,
	.available = rift__rdma_available,
	.connect = rdma_connect_op,
	.alt = rdma_alt,
	.connect_alt = rdma_connect_alt_op,
	.listen = rdma_listen_op,
	.listen_close = rdma_listen_close,
	.flush = rift__rdma_flush,
	.send_now = rift__rdma_send_now,
	.destroy = rift__rdma_destroy,
	.cut = rdma_cut,
	.poll = rift__rdma_poll,
	.arm = rift__rdma_arm,
	.ctx_destroy = rift__rdma_ctx_destroy,
	.pool = rift__rdma_ctx_pool,
	.devices = rift__rdma_devices,
	.describe = rdma_describe,
	.tx_stalled_us = rdma_tx_stalled_us,
	.device_src = rift__rdma_device_src,
	.rma_expose = rift__rdma_rma_expose,
	.rma_unexpose = rift__rdma_rma_unexpose,
	.rma_post = rift__rdma_rma_post,
	.rma_max = rift__rdma_rma_max,
	.mem_reg = rift__rdma_mem_reg,
	.mem_drop = rift__rdma_mem_drop,
};
