/*
 * rdma_cm.c - rdma_cm in the verbs transport: rift's hello, which both cm
 * modes exchange, and the CM events that bring a path up (address and
 * route resolution, connect, accept with our own QP) or down.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "transports/verbs/rdma_int.h"

/* ---- the hello: rdma_cm private data, or in the cm=tcp bootstrap ---- */

void rift__rdma_hello_fill(struct rdma_path *rp, struct cm_hello *h)
{
	struct rift__rdma_hello m = {
		.flags = (rp->rndv_local ? HELLO_F_RNDV : 0) | HELLO_F_BARE |
			 HELLO_F_OOB,
		.rq_depth = rp->rq_depth,
		.buf_size = rp->buf_size,
	};

	rift__rdma_hello_encode(h, &m);
}

/* Check the peer's hello; a peer that advertises nonsense is refused. */
const char *rift__rdma_hello_check(struct rdma_path *rp, const void *data,
				   uint8_t len)
{
	struct rift__rdma_hello h;
	const char *bad = rift__rdma_hello_decode(data, len, &h);

	if (bad)
		return bad;
	rp->credits = rp->peer_rq = h.rq_depth;
	rp->peer_buf = h.buf_size;
	rp->peer_rndv = (h.flags & HELLO_F_RNDV) != 0;
	rp->peer_bare = (h.flags & HELLO_F_BARE) != 0;
	rp->peer_oob = (h.flags & HELLO_F_OOB) != 0;
	return NULL;
}

/* ---- connection management events ---- */

static void fail_setup(struct rdma_path *rp, int err, rift_fallback_reason why,
		       const char *what, int status)
{
	rp->base.fb_reason = why;
	rift__path_failed(&rp->base, err, "%s (status %d)", what, status);
}

/*
 * rdma.gid_index under rdma_cm: the GID follows the address, so an index
 * is accepted only when it names the GID the route uses; otherwise the
 * error says how to get that GID (its address, or rdma.cm = tcp).
 */
const char *rift__rdma_gid_mismatch(rift_ctx *ctx, struct rdma_cm_id *id,
				    char *buf, size_t len)
{
	static const uint8_t zero[16];
	int idx = ctx->cfg.gid_index;
	const uint8_t *sgid = id->route.addr.addr.ibaddr.sgid.raw;
	struct ibv_gid_entry e;
	rift__vb_err err;
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	if (idx < 0 || !id->verbs)
		return NULL;
	if (rift__vb_gid_query(id->verbs, id->port_num, (uint32_t)idx, &e,
			       err)) {
		snprintf(buf, len, "rdma.gid_index %d does not exist on %s port "
				   "%u (%s)",
			 idx, rift__vb_device_name(id->verbs->device),
			 id->port_num, err);
		return buf;
	}
	if (memcmp(sgid, zero, 16) == 0 || memcmp(e.gid.raw, sgid, 16) == 0)
		return NULL;
	inet_ntop(AF_INET6, e.gid.raw, a, sizeof(a));
	inet_ntop(AF_INET6, sgid, b, sizeof(b));
	snprintf(buf, len, "rdma.gid_index %d is GID %s on %s port %u, but "
			   "rdma_cm's route uses GID %s: with rdma.cm = rdmacm "
			   "the GID follows the address (use that GID's address, "
			   "or rdma.cm = tcp to choose the GID by index)",
		 idx, a, rift__vb_device_name(id->verbs->device), id->port_num,
		 b);
	return buf;
}

static void path_cm_event(struct rdma_path *rp, struct rdma_cm_event *ev)
{
	rift__path *p = &rp->base;
	rift_config *cfg = &p->ctx->cfg;
	struct rdma_conn_param param;
	struct cm_hello hello;
	rift__vb_err err;
	const char *bad;
	char mismatch[320];
	int rc;

	RIFT_DEBUG(p->ctx, "rdma path %p: %s (status %d)", (void *)p,
		   rift__vb_cm_event_str(ev->event), ev->status);
	if (p->state == RIFT_PATH_DEAD)
		return;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		rp->verbs = rp->id->verbs;
		rp->port_num = rp->id->port_num;
		rift__sockaddr_ip(&rp->id->route.addr.src_addr, p->local,
				  sizeof(p->local));
		/* A connection request through a port that is down is lost,
		 * and on rxe it breaks the port's CM until the device goes
		 * (see path_park): the next address, at once. */
		if (rift__rdma_port_down(rp->verbs, rp->port_num)) {
			snprintf(mismatch, sizeof(mismatch),
				 "%s port %u is down: no connection request "
				 "through it",
				 rift__vb_device_name(rp->verbs->device),
				 rp->port_num);
			p->fb_reason = RIFT_FALLBACK_ADDR_RESOLVE;
			rift__path_failed(p, RIFT_ENETDOWN, "%s", mismatch);
			break;
		}
		bad = rift__rdma_device_mismatch(
			&p->ctx->cfg, rp->id->verbs, rp->id->port_num,
			"the route uses", mismatch, sizeof(mismatch));
		if (!bad)
			bad = rift__rdma_gid_mismatch(p->ctx, rp->id, mismatch,
						      sizeof(mismatch));
		if (bad) {
			fail_setup(rp, RIFT_EINVAL, RIFT_FALLBACK_ADDR_RESOLVE,
				   bad, 0);
			break;
		}
		rc = rift__vb_resolve_route(rp->id, (int)cfg->connect_timeout_ms,
					    err);
		RIFT_DEBUG(p->ctx, "rdma path %p: route asked", (void *)p);
		if (rc) {
			p->fb_reason = RIFT_FALLBACK_ROUTE_RESOLVE;
			rift__path_failed(p, rc, "%s", err);
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		/* After route resolution, before connect: see LAB.md. */
		rc = rift__vb_set_ack_timeout(rp->id, (uint8_t)cfg->rdma_ack_timeout,
					      err);
		if (rc) {
			rift__path_failed(p, rc, "%s", err);
			break;
		}
		if (rift__rdma_path_resources(rp, NULL))
			break;
		rift__rdma_hello_fill(rp, &hello);
		memset(&param, 0, sizeof(param));
		param.private_data = &hello;
		param.private_data_len = sizeof(hello);
		param.retry_count = (uint8_t)cfg->rdma_retry_count;
		param.rnr_retry_count = 3;
		/* READ resources for rendezvous, both ways: the QP's
		 * max_rd_atomic / max_dest_rd_atomic come from these. */
		if (rp->rndv_local) {
			param.initiator_depth = (uint8_t)rp->rd_max;
			param.responder_resources = (uint8_t)rp->rd_max;
		}
		rc = rift__vb_connect(rp->id, &param, err);
		if (rc)
			rift__path_failed(p, rc, "%s", err);
		else
			p->reached = true; /* the request is on its way */
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (p->is_client) {
			bad = rift__rdma_hello_check(
				rp, ev->param.conn.private_data,
				ev->param.conn.private_data_len);
			if (bad) {
				fail_setup(rp, RIFT_EPROTO,
					   RIFT_FALLBACK_PEER_NO_RDMA, bad, 0);
				break;
			}
		}
		RIFT_DEBUG(p->ctx,
			   "%s: established from %s on %s port %u, rendezvous "
			   "%s/%s, READ depth %u (cm: initiator %u responder "
			   "%u)",
			   p->peer, p->local,
			   rift__vb_device_name(rp->verbs->device), rp->port_num,
			   rp->rndv_local ? "on" : "off",
			   rp->peer_rndv ? "on" : "off", rp->rd_max,
			   ev->param.conn.initiator_depth,
			   ev->param.conn.responder_resources);
		rp->established = true;
		if (p->is_client)
			rift__path_connected(p);
		rift__path_kick(p);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
		/* No ARP answer yet: ask again (see RESOLVE_STEP_MS); the
		 * session's bound on the attempt ends it if none comes.  The
		 * id keeps the source it is bound to (rdma.c, resolve_from). */
		if (ev->status == -ETIMEDOUT &&
		    !rift__vb_resolve_addr(rp->id, NULL,
					   (struct sockaddr *)&rp->id->route.addr.dst_addr,
					   RESOLVE_STEP_MS, err))
			break;
		fail_setup(rp, RIFT_EHOSTUNREACH, RIFT_FALLBACK_ADDR_RESOLVE,
			   "rdma_cm: address resolution failed", ev->status);
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		fail_setup(rp, RIFT_EHOSTUNREACH, RIFT_FALLBACK_ROUTE_RESOLVE,
			   "rdma_cm: route resolution failed", ev->status);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		fail_setup(rp, RIFT_ETIMEDOUT, RIFT_FALLBACK_TIMEOUT,
			   ev->event == RDMA_CM_EVENT_UNREACHABLE
				   ? "rdma_cm: peer unreachable"
				   : "rdma_cm: connection error",
			   ev->status);
		break;
	case RDMA_CM_EVENT_REJECTED: {
		uint8_t why = 0;

		if (ev->param.conn.private_data && ev->param.conn.private_data_len)
			why = *(const uint8_t *)ev->param.conn.private_data;
		if (why >= 1 && why <= RIFT_REJ__MAX) {
			snprintf(mismatch, sizeof(mismatch), "rejected: %s",
				 rift__rej_str(why));
			fail_setup(rp, RIFT_ECONNREFUSED, RIFT_FALLBACK_REJECTED,
				   mismatch, ev->status);
			break;
		}
		fail_setup(rp, RIFT_ECONNREFUSED, RIFT_FALLBACK_REJECTED,
			   "connection refused (no rift listener on that port)",
			   ev->status);
		break;
	}
	case RDMA_CM_EVENT_DISCONNECTED:
		/* What the QP already holds (the peer's last messages, its
		 * CLOSE) goes first: this event comes on another fd and can
		 * overtake it. */
		if (rp->established && rp->scq)
			rift__rdma_cq_poll(rctx_of(p->ctx), rp->scq);
		rift__path_failed(p, RIFT_ECONNRESET, "peer disconnected");
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* The kernel waits for us to free everything on the device:
		 * this path and every other of the context on it fail. */
		if (ev->id->verbs)
			rift__rdma_device_gone(rctx_of(p->ctx),
					       ev->id->verbs->device,
					       "rdma_cm DEVICE_REMOVAL");
		if (p->state != RIFT_PATH_DEAD)
			rift__path_failed(p, RIFT_ENODEV, "RDMA device removed");
		break;
	default:
		break; /* TIMEWAIT_EXIT and friends need nothing */
	}
}

/*
 * Accepting: READ resources are what both sides can do, each way (our
 * responder resources cannot exceed the client's initiator depth, nor
 * our initiator depth its responder resources).  A client that offers
 * none gets no rendezvous, and our hello says so.
 */
static void rndv_accept_depths(struct rdma_path *rp, struct rdma_cm_event *ev,
			       struct rdma_conn_param *param)
{
	uint32_t init = ev->param.conn.responder_resources;
	uint32_t resp = ev->param.conn.initiator_depth;

	if (!rp->rndv_local)
		return;
	if (init > rp->rd_max)
		init = rp->rd_max;
	if (resp > rp->rd_max)
		resp = rp->rd_max;
	if (!init || !resp) {
		rp->rndv_local = false;
		return;
	}
	param->initiator_depth = (uint8_t)init;
	param->responder_resources = (uint8_t)resp;
	rp->rd_max = init;
}

/*
 * Accepting with our own QP (INIT, receives posted): INIT (again, with
 * rdma_cm's port, P_Key and access flags), RTR and RTS with what
 * rdma_init_qp_attr gives for id, as rdma_accept does for a QP of its own
 * (librdmacm's ucma_modify_qp_rtr/rts).  The RTS attributes carry the ack
 * timeout set on id and the client's retry count.  Our READ depths replace
 * rdma_cm's, as conn_param's do in rdma_accept.
 */
static int accept_qp_up(struct rdma_path *rp, const struct rdma_conn_param *cp,
			rift__vb_err err)
{
	struct ibv_qp_attr a;
	int mask, rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	rc = rift__vb_init_qp_attr(rp->id, &a, &mask, err);
	if (!rc)
		rc = rift__vb_qp_modify(rp->qp, &a, mask, "INIT", err);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	rc = rift__vb_init_qp_attr(rp->id, &a, &mask, err);
	if (rc)
		return rc;
	/* librdmacm's workaround for an old rdma_ucm bug: bits 21-23 (RoCE
	 * only, unknown to libibverbs) must not reach an InfiniBand QP. */
	if (mask & 0xe00000) {
		struct ibv_port_attr pa;

		if (!rift__vb_port_query(rp->verbs, rp->port_num, &pa, err) &&
		    pa.link_layer == IBV_LINK_LAYER_INFINIBAND)
			mask &= ~0xe00000;
	}
	if (cp->responder_resources != RDMA_MAX_RESP_RES)
		a.max_dest_rd_atomic = cp->responder_resources;
	rc = rift__vb_qp_modify(rp->qp, &a, mask, "RTR", err);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	rc = rift__vb_init_qp_attr(rp->id, &a, &mask, err);
	if (rc)
		return rc;
	if (cp->initiator_depth != RDMA_MAX_INIT_DEPTH)
		a.max_rd_atomic = cp->initiator_depth;
	rc = rift__vb_qp_modify(rp->qp, &a, mask, "RTS", err);
	if (!rc)
		RIFT_DEBUG(rp->base.ctx,
			   "%s: own QP %u RTS: ack timeout %u, retry %u, rnr "
			   "retry %u, READ depth %u/%u",
			   rp->base.peer, rp->qp->qp_num, a.timeout,
			   a.retry_cnt, a.rnr_retry, a.max_rd_atomic,
			   cp->responder_resources);
	return rc;
}

static void listener_cm_event(struct rdma_listener *rl, struct rdma_cm_event *ev)
{
	uint64_t t0 = rift__clock_us();
	rift_listener *l = rl->l;
	rift_ctx *ctx = l->ctx;
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param param;
	struct cm_hello hello;
	struct rdma_path *rp;
	rift__vb_err err;
	const char *bad;
	uint8_t rej;
	char addr[64], msg[320];

	RIFT_DEBUG(l->ctx, "rdma listener %p: %s", (void *)l,
		   rift__vb_cm_event_str(ev->event));
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return;
	if (rl->cm_tcp) {
		/* cm=tcp listens for rdma_cm only to say so. */
		RIFT_INFO(l->ctx, "rdma listener on port %d: rdma_cm request "
				  "refused: the listener takes cm=tcp only",
			  l->port);
		rej = RIFT_REJ_CM_TCP;
		goto reject;
	}
	if (l->closing) {
		rej = RIFT_REJ_CLOSING;
		goto reject;
	}
	rp = rift__rdma_path_new(ctx, false);
	if (!rp) {
		rej = RIFT_REJ_RESOURCES;
		goto reject;
	}
	rp->id = id;
	rp->verbs = id->verbs;
	rp->port_num = id->port_num;
	id->context = &rp->kind; /* ids point at an owner kind */
	rift__sockaddr_str(&id->route.addr.dst_addr, addr, sizeof(addr));
	snprintf(rp->base.peer, sizeof(rp->base.peer), "rdma://%s", addr);
	rift__sockaddr_ip(&id->route.addr.src_addr, rp->base.local,
			  sizeof(rp->base.local));
	rift__listener_path(l, &rp->base);
	bad = rift__rdma_hello_check(rp, ev->param.conn.private_data,
				     ev->param.conn.private_data_len);
	if (bad) {
		/* Refused, and counted as a protocol error by path_failed:
		 * never trusted with a session. */
		rp->id = NULL; /* destroyed below, after the reject */
		rift__path_failed(&rp->base, RIFT_EPROTO, "%s", bad);
		rej = RIFT_REJ_BAD_HELLO;
		goto reject;
	}
	bad = rift__rdma_gid_mismatch(ctx, id, msg, sizeof(msg));
	if (bad) {
		rp->id = NULL;
		rift__path_failed(&rp->base, RIFT_EINVAL, "%s", bad);
		rej = RIFT_REJ_RESOURCES;
		goto reject;
	}
	if (rift__rdma_path_resources(rp, rl)) {
		/* Tell the client now instead of letting it time out; the
		 * path's destruction frees the id. */
		rej = RIFT_REJ_RESOURCES;
		rift__vb_reject(id, &rej, sizeof(rej));
		return;
	}
	RIFT_DEBUG(ctx, "%s: QP and rings ready in %.1f ms", rp->base.peer,
		   (rift__clock_us() - t0) / 1e3);
	memset(&param, 0, sizeof(param));
	rndv_accept_depths(rp, ev, &param);
	rift__rdma_hello_fill(rp, &hello);
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	param.rnr_retry_count = 3;
	/* The ack timeout first: the QP's RTS attributes read it. */
	if (rift__vb_set_ack_timeout(id, (uint8_t)ctx->cfg.rdma_ack_timeout, err) ||
	    (rp->user_qp && accept_qp_up(rp, &param, err))) {
		rift__path_failed(&rp->base, RIFT_ECONNABORTED, "%s", err);
		/* The client hears now, not at its connect timeout. */
		rej = RIFT_REJ_RESOURCES;
		rift__vb_reject(id, &rej, sizeof(rej));
		return;
	}
	if (rp->user_qp)
		param.qp_num = rp->qp->qp_num;
	if (rift__vb_accept(id, &param, err)) {
		rift__path_failed(&rp->base, RIFT_ECONNABORTED, "%s", err);
		return;
	}
	RIFT_DEBUG(ctx, "%s: accepted in %.1f ms", rp->base.peer,
		   (rift__clock_us() - t0) / 1e3);
	rift__rdma_accept_done(t0);
	return;

reject:
	rift__vb_reject(id, &rej, sizeof(rej));
	/* The request's id is ours to destroy, but only after its event is
	 * acknowledged: the caller does that, then destroys it. */
	id->context = NULL;
}

void rift__rdma_cm_io_cb(rift__io *io, uint32_t revents)
{
	struct rift__rdma_ctx *r = rift__container_of(io, struct rift__rdma_ctx, io);
	struct rdma_cm_event *ev;

	RIFT_UNUSED(revents);
	while (rift__vb_cm_get(r->ch, &ev) == 0) {
		struct rdma_cm_id *orphan = NULL;
		void *owner = ev->id ? ev->id->context : NULL;

		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_listener *rl = rift__container_of(
				ev->listen_id->context, struct rdma_listener, kind);

			listener_cm_event(rl, ev);
			if (ev->id->context == NULL)
				orphan = ev->id;
		} else if (owner &&
			   *(enum owner_kind *)owner == OWNER_PATH) {
			path_cm_event(rift__container_of(owner, struct rdma_path,
							 kind),
				      ev);
		} else if (owner && ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL &&
			   ev->id->verbs) {
			/* A listener bound to an address of the device: it
			 * listens again later (rift__rdma_relisten), every
			 * other use of the device goes. */
			rift__rdma_device_gone(r, ev->id->verbs->device,
					       "rdma_cm DEVICE_REMOVAL");
		}
		rift__vb_cm_ack(ev);
		if (orphan)
			rift__vb_id_destroy(orphan);
	}
}
