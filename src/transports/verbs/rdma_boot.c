/*
 * rdma_boot.c - rdma.cm = tcp in the verbs transport: the device, port and
 * GID of the side channel's local address, and the QP brought to RTS from
 * the bootstrap cm_tcp.c carries (what rdma_cm does from its messages).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transports/verbs/rdma_int.h"

/* ---- cm=tcp: QP bring-up over the side channel (cm_tcp.c) ---- */

/* The GID an address has on RoCE: IPv4 mapped into IPv6, or IPv6 as is. */
bool rift__rdma_addr_gid(const struct sockaddr *sa, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		if (in->sin_addr.s_addr == htonl(INADDR_ANY))
			return false;
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &in->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
			return false;
		memcpy(gid, &in6->sin6_addr, 16);
		return true;
	}
	return false;
}

/*
 * The address (cm=tcp) or the route (rdma_cm) chooses the device and port.
 * A configured device or port that it does not use is an error that says
 * so, not a setting silently ignored.  subject starts the message ("the
 * route uses", "the address A is on").
 */
const char *rift__rdma_device_mismatch(const rift_config *cfg,
				       struct ibv_context *verbs, unsigned port,
				       const char *subject, char *buf,
				       size_t len)
{
	const char *dev = rift__vb_device_name(verbs->device);

	if (cfg->device[0] && strcmp(cfg->device, dev) != 0) {
		snprintf(buf, len, "%s device %s, not the configured device %s "
				   "(rdma.device): use an address on %s",
			 subject, dev, cfg->device, cfg->device);
		return buf;
	}
	if (cfg->port && port != cfg->port) {
		snprintf(buf, len, "%s %s port %u, not the configured port %u "
				   "(rdma.port)",
			 subject, dev, port, cfg->port);
		return buf;
	}
	return NULL;
}

/*
 * Find the device, port and GID whose GID is the local address, as rdma_cm
 * would (RoCE v2 before v1); rdma.device and rdma.port must agree with it.
 * Without a match (a wildcard listener, InfiniBand, whose GIDs hold no
 * address) the configured or first active port is used.  rdma.gid_index,
 * when set, picks the GID on that port and must exist.  0 or RIFT_E*
 * with err.
 */
int rift__rdma_dev_select(rift_ctx *ctx, const struct sockaddr *local,
			  struct dev_sel *s, char *err, size_t errlen)
{
	rift_config *cfg = &ctx->cfg;
	struct ibv_context **list = NULL, *first = NULL;
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	uint8_t want[16], first_port = 0, first_ll = 0;
	bool have_addr = rift__rdma_addr_gid(local, want);
	char a[INET6_ADDRSTRLEN];
	rift__vb_err verr;
	int n = 0, rank = 0, rc;

	memset(s, 0, sizeof(*s));
	rift__sockaddr_str(local, a, sizeof(a));
	rc = rift__vb_cm_devices(&list, &n, verr);
	if (rc) {
		snprintf(err, errlen, "%s", verr);
		return rc;
	}
	for (int i = 0; i < n; i++) {
		struct ibv_device_attr da;
		struct ibv_gid_entry *ents;
		size_t cap = 0;
		bool cfg_dev = !cfg->device[0] ||
			       strcmp(cfg->device,
				      rift__vb_device_name(list[i]->device)) == 0;
		int m;

		if (rift__vb_device_query(list[i], &da, verr))
			continue;
		for (uint8_t port = 1; port <= da.phys_port_cnt; port++) {
			if (rift__vb_port_query(list[i], port, &pa, verr))
				continue;
			cap += pa.gid_tbl_len;
			if (!first && cfg_dev && pa.state == IBV_PORT_ACTIVE &&
			    (!cfg->port || port == cfg->port)) {
				first = list[i];
				first_port = port;
				first_ll = pa.link_layer;
			}
		}
		if (!have_addr || !cap)
			continue;
		ents = calloc(cap, sizeof(*ents));
		m = ents ? rift__vb_gid_table(list[i], ents, cap, verr) : -1;
		for (int k = 0; k < m; k++) {
			int r = ents[k].gid_type == IBV_GID_TYPE_ROCE_V2 ? 2 : 1;

			if (r <= rank || memcmp(ents[k].gid.raw, want, 16) != 0)
				continue;
			rank = r;
			s->verbs = list[i];
			s->port = (uint8_t)ents[k].port_num;
			s->gid_index = ents[k].gid_index;
		}
		free(ents);
	}
	rc = RIFT_EINVAL;
	if (s->verbs) {
		char subject[96];

		snprintf(subject, sizeof(subject), "the address %s is on", a);
		if (rift__rdma_device_mismatch(cfg, s->verbs, s->port, subject,
					       err, errlen))
			goto out;
	} else if (!first) {
		rc = RIFT_ENODEV;
		snprintf(err, errlen, "no active RDMA port%s%s",
			 cfg->device[0] ? " on the configured device " : "",
			 cfg->device);
		goto out;
	} else if (have_addr && first_ll != IBV_LINK_LAYER_INFINIBAND &&
		   cfg->gid_index < 0) {
		rc = RIFT_ENODEV;
		snprintf(err, errlen, "no RDMA device has a GID for %s (the side "
				      "channel's local address): use an address "
				      "on an RDMA netdev, or set rdma.gid_index",
			 a);
		goto out;
	} else {
		s->verbs = first;
		s->port = first_port;
		s->gid_index = 0;
	}
	if (cfg->gid_index >= 0)
		s->gid_index = (uint32_t)cfg->gid_index;
	rc = rift__vb_port_query(s->verbs, s->port, &pa, verr);
	if (rc) {
		snprintf(err, errlen, "%s", verr);
		goto out;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		rc = RIFT_ENETDOWN;
		snprintf(err, errlen, "%s port %u is not active",
			 rift__vb_device_name(s->verbs->device), s->port);
		goto out;
	}
	rc = rift__vb_gid_query(s->verbs, s->port, s->gid_index, &e, verr);
	if (rc) {
		if (rc == RIFT_ENOENT)
			rc = RIFT_EINVAL;
		snprintf(err, errlen, "rdma.gid_index %u does not exist on %s "
				      "port %u (its table has %d entries; "
				      "rift-info lists the valid ones)",
			 s->gid_index, rift__vb_device_name(s->verbs->device),
			 s->port, pa.gid_tbl_len);
		goto out;
	}
	memcpy(s->gid, e.gid.raw, 16);
	s->link_layer = pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? 1 : 2;
	s->lid = pa.lid;
	s->mtu = (uint8_t)pa.active_mtu;
	rc = 0;
out:
	rift__vb_cm_devices_free(list);
	return rc;
}

/* The device of the side channel's local address; fails the path. */
static int tcp_select(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	struct sockaddr_storage ss;
	struct dev_sel s;
	char err[RIFT_ERRMSG_LEN];
	struct rift__rdma_ctx *r = rctx_of(p->ctx);
	int rc;

	memset(&ss, 0, sizeof(ss));
	rc = rift__cmtcp_local(rp->tc, &ss);
	if (!rc)
		rift__sockaddr_ip((struct sockaddr *)&ss, p->local,
				  sizeof(p->local));
	/* The key is the address: a client's port changes every time. */
	if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	else
		((struct sockaddr_in *)&ss)->sin_port = 0;
	if (rc) {
		snprintf(err, sizeof(err), "getsockname: %s", rift_strerror(rc));
	} else if (r->sel && memcmp(&ss, &r->sel_addr, sizeof(ss)) == 0) {
		/* Connections from one address share the lookup (a dozen
		 * verbs queries): accepts stay cheap. */
		s = *(struct dev_sel *)r->sel;
	} else {
		rc = rift__rdma_dev_select(p->ctx, (struct sockaddr *)&ss, &s,
					   err, sizeof(err));
		if (!rc && (r->sel || (r->sel = malloc(sizeof(s))))) {
			*(struct dev_sel *)r->sel = s;
			r->sel_addr = ss;
		}
	}
	if (rc) {
		p->fb_reason = rc == RIFT_ENODEV ? RIFT_FALLBACK_NO_DEVICE
						 : RIFT_FALLBACK_ADDR_RESOLVE;
		if (!p->is_client)
			rift__cmtcp_refuse(rp->tc, RIFT_REJ_NO_RDMA);
		rift__path_failed(p, rc, "cm=tcp: %s", err);
		return rc;
	}
	rp->verbs = s.verbs;
	rp->port_num = s.port;
	rp->link_layer = s.link_layer;
	rp->mtu = s.mtu;
	rp->lid = s.lid;
	rp->gid_index = s.gid_index;
	memcpy(rp->gid, s.gid, 16);
	rp->psn = (uint32_t)((rift__clock_us() ^ ((uintptr_t)rp >> 4)) *
			     2654435761u) & 0xffffffu;
	return 0;
}

static void boot_fill(struct rdma_path *rp, struct rift__boot *b)
{
	struct cm_hello h;
	uint8_t init;

	memset(b, 0, sizeof(*b));
	b->link_layer = rp->link_layer;
	b->lid = rp->lid;
	memcpy(b->gid, rp->gid, 16);
	b->qpn = rp->qp->qp_num;
	b->psn = rp->psn;
	b->mtu = rp->mtu;
	rift__rdma_dev_atoms(rp->verbs, &b->rd_atom, &init, NULL, NULL);
	rift__rdma_hello_fill(rp, &h);
	memcpy(b->hello, &h, sizeof(h));
}

/*
 * INIT -> RTR -> RTS toward the peer's QP: what rdma_cm does from its CM
 * messages, from the bootstrap.  The ack timeout and retry count are the
 * configured ones (retry 7 never fails on rxe: LAB.md).
 */
static int qp_up(struct rdma_path *rp, const struct rift__boot *peer,
		 rift__vb_err err)
{
	rift_config *cfg = &rp->base.ctx->cfg;
	struct ibv_qp_attr a;
	uint8_t rd, init;
	int rc;

	rift__rdma_dev_atoms(rp->verbs, &rd, &init, NULL, NULL);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)(rp->mtu < peer->mtu ? rp->mtu : peer->mtu);
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = rd;
	a.min_rnr_timer = 12; /* 0.64 ms, rdma_cm's default */
	a.ah_attr.port_num = rp->port_num;
	if (rp->link_layer == 2) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)rp->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	} else {
		a.ah_attr.dlid = peer->lid;
	}
	rc = rift__vb_qp_modify(rp->qp, &a,
				IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					IBV_QP_MAX_DEST_RD_ATOMIC |
					IBV_QP_MIN_RNR_TIMER,
				"RTR", err);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)cfg->rdma_ack_timeout;
	a.retry_cnt = (uint8_t)cfg->rdma_retry_count;
	a.rnr_retry = 3; /* as with rdma_cm: credits make RNR an accident */
	a.sq_psn = rp->psn;
	a.max_rd_atomic = init < peer->rd_atom ? init : peer->rd_atom;
	return rift__vb_qp_modify(rp->qp, &a,
				  IBV_QP_STATE | IBV_QP_TIMEOUT |
					  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
				  "RTS", err);
}

rift__path *rift__rdma_boot_path(rift_listener *l, struct rift__cmtcp *tc,
				 const char *peer)
{
	struct rdma_path *rp = rift__rdma_path_new(l->ctx, false);

	if (!rp)
		return NULL;
	rp->tc = tc;
	snprintf(rp->base.peer, sizeof(rp->base.peer), "rdma://%s", peer);
	rift__listener_path(l, &rp->base);
	return &rp->base;
}

void rift__rdma_boot_connected(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);
	struct rift__boot b;

	if (tcp_select(rp) || rift__rdma_path_resources(rp, NULL))
		return;
	boot_fill(rp, &b);
	rift__cmtcp_send(rp->tc, &b);
}

uint64_t rift__rdma_accepts, rift__rdma_accept_us;
uint32_t rift__rdma_accept_samples[RIFT_ACCEPT_SAMPLES];

/* Contexts on several threads accept at once: atomic, as cm_tcp.h says. */
void rift__rdma_accept_done(uint64_t t0)
{
	uint64_t us = rift__clock_us() - t0;
	uint64_t k = __atomic_fetch_add(&rift__rdma_accepts, 1,
					__ATOMIC_RELAXED);

	__atomic_store_n(&rift__rdma_accept_samples[k % RIFT_ACCEPT_SAMPLES],
			 (uint32_t)us, __ATOMIC_RELAXED);
	__atomic_fetch_add(&rift__rdma_accept_us, us, __ATOMIC_RELAXED);
}

void rift__rdma_boot_received(rift__path *p, const struct rift__boot *b)
{
	uint64_t t0 = rift__clock_us();
	struct rdma_path *rp = rp_of(p);
	struct rdma_listener *rl = !p->is_client && p->lst &&
						   p->lst->ops == &rift__rdma_ops
					   ? p->lst->transport_state
					   : NULL;
	struct rift__boot mine;
	rift__vb_err err;
	const char *bad;
	int rc;

	if (b->status) {
		if (!p->is_client) {
			rift__path_failed(p, RIFT_EPROTO, "cm=tcp: a client's "
					  "bootstrap with a refusal status");
			return;
		}
		p->fb_reason = b->status == RIFT_REJ_NO_RDMA
				       ? RIFT_FALLBACK_PEER_NO_RDMA
				       : RIFT_FALLBACK_REJECTED;
		rift__path_failed(p, RIFT_ECONNREFUSED, "cm=tcp: rejected: %s",
				  rift__rej_str(b->status));
		return;
	}
	if (!p->is_client && tcp_select(rp))
		return;
	/* A peer that names a QP, GID or buffers that cannot be is refused
	 * (and counted as a protocol error), never trusted. */
	bad = rift__boot_check(b, rp->link_layer);
	if (!bad)
		bad = rift__rdma_hello_check(rp, b->hello, RIFT_BOOT_HELLO_LEN);
	if (bad) {
		if (!p->is_client)
			rift__cmtcp_refuse(rp->tc, RIFT_REJ_BAD_HELLO);
		else
			p->fb_reason = RIFT_FALLBACK_PEER_NO_RDMA;
		rift__path_failed(p, RIFT_EPROTO, "cm=tcp: %s", bad);
		return;
	}
	if (!p->is_client && rift__rdma_path_resources(rp, rl)) {
		rift__cmtcp_refuse(rp->tc, RIFT_REJ_RESOURCES);
		return;
	}
	rc = qp_up(rp, b, err);
	if (rc) {
		if (!p->is_client)
			rift__cmtcp_refuse(rp->tc, RIFT_REJ_RESOURCES);
		rift__path_failed(p, rc, "cm=tcp: %s", err);
		return;
	}
	if (!p->is_client) {
		/* Our QP is ready to receive before the client hears of it,
		 * so its first SEND never races our RTR. */
		boot_fill(rp, &mine);
		if (rift__cmtcp_send(rp->tc, &mine))
			return;
		rift__rdma_accept_done(t0);
	}
	RIFT_DEBUG(p->ctx,
		   "%s: cm=tcp: bootstrap taken, QP up in %.1f ms, from %s on "
		   "%s port %u",
		   p->peer, (rift__clock_us() - t0) / 1e3, p->local,
		   rift__vb_device_name(rp->verbs->device), rp->port_num);
	rp->established = true;
	rift__cmtcp_live(rp->tc);
	if (p->is_client)
		rift__path_connected(p);
	rift__path_kick(p);
}

void rift__rdma_boot_closed(rift__path *p, int err, const char *why)
{
	struct rdma_path *rp = rp_of(p);

	/* What the QP already holds (the peer's last messages, its CLOSE)
	 * goes first: the socket closing can overtake it. */
	if (rp->established && rp->scq)
		rift__rdma_cq_poll(rctx_of(p->ctx), rp->scq);
	if (p->state != RIFT_PATH_DEAD)
		rift__path_failed(p, err, "%s", why);
}
