/*
 * rdma_rndv.c - rendezvous in the verbs transport: a large message goes as
 * a descriptor of the registered memory it lives in, behind a memory
 * window bound over it, and the receiver fetches it by RDMA READ into a
 * registered block of its own, then delivers it in order, in place.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transports/verbs/rdma_int.h"

/* ---- rendezvous: large messages by RDMA READ ---- */

/*
 * Wire format of a descriptor (RNDV_DESC_SIZE bytes, a SEND of its own
 * with RNDV_IMM in its immediate, never mixed with stream bytes):
 *
 *   0  the DATA frame header, as the session encoded it (seq, len, ack)
 *  24  u64 address of the payload in the sender's memory
 *  32  u32 rkey of the registered memory holding it
 *  36  u32 payload length again: it must match the header
 *
 * Why READ rather than WRITE: the receiver chooses where the message
 * lands (a block of its own pool, when it has room) and when (it fetches
 * in order, as it delivers), and needs no extra round trip to advertise
 * a destination first.  The sender's buffer is the registered memory the
 * message already lives in: a pool block (rift_buf_alloc, or the copy
 * rift_conn_send makes anyway) or, above the largest block class, a
 * large registered buffer from the pool's registration cache.
 *
 * What the peer can reach: the rkey covers the whole registered pool
 * region (or large buffer) holding the message, as with UCX's and brpc's
 * registered memory, not just the message; and a QP of ours on that
 * device must grant remote READ (responder resources) for rendezvous to
 * work at all.  The pool registers its regions for remote READ only (no
 * peer can write into them); bounding each advertisement to its message,
 * so a peer cannot read other blocks of the region (a type 2 memory window
 * bound per message and invalidated on ack, as NVMe-oF does with FRWR)
 * is the step that would close this.
 */

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/*
 * Does m go by rendezvous on this path?  Large enough, both devices do
 * READs, and its buffer is registered memory with a key on our device
 * (anything else, e.g. a malloc'd buffer when registered memory ran out,
 * is streamed through the send slots).  *rkey and *mr are its region's
 * key and registration when so.
 */
bool rift__rdma_rndv_wanted(struct rdma_path *rp, struct rift__omsg *m,
			    uint32_t *rkey, void **mr)
{
	uint32_t thr = rp->base.ctx->cfg.rndv_threshold, lkey;
	struct rift__buf *b;

	if (!thr || !rp->rndv_serve || !rp->peer_rndv || m->len < thr ||
	    m->len > UINT32_MAX)
		return false;
	b = rift__container_of(m, struct rift__buf, om);
	return b->pool && rift__pool_reg_of(b->pool, m->data, rp->dev_slot,
					    &lkey, rkey, mr);
}

/*
 * The window a peer READs a rendezvous message through (struct
 * rndv_bind, rdma_int.h): bound over that message alone, on this path's
 * QP, by a BIND_MW work request posted in front of the descriptor's SEND;
 * held on the buffer until it is freed (acknowledged, or the session
 * over) or the path goes, whichever comes first, and deallocated then (no
 * READ goes through it after that).
 */

/* The window leaves its buffer's holds (if it still has a buffer). */
static void hold_unlink(struct rndv_bind *bd)
{
	struct rift__hold **pp;

	for (pp = bd->b ? &bd->b->holds : NULL; pp && *pp; pp = &(*pp)->next)
		if (*pp == &bd->hold) {
			*pp = bd->hold.next;
			break;
		}
	bd->b = NULL;
}

static void bind_free(struct rndv_bind *bd)
{
	if (bd->mw)
		rift__vb_mw_free(bd->mw);
	if (bd->kept)
		rift__pool_free(bd->kept_pool, bd->kept, RIFT_POOL_SEND);
	hold_unlink(bd);
	rift__list_del(&bd->node);
	free(bd);
}

/*
 * The buffer is freed (acknowledged, or the session dropped its queue).
 * The window goes with it; but not while its path, dead, waits for its
 * ERROR frame to leave (rdma_reap.c): the QP still answers READs then,
 * and one through a window already gone would fail on the peer as if we
 * had lied about the buffer.  So the window keeps the block until it
 * goes with its path, after the QP stopped.
 */
static void bind_release(struct rift__hold *h)
{
	struct rndv_bind *bd = rift__container_of(h, struct rndv_bind, hold);
	struct rift__buf *b = bd->b;

	if (!bd->rp->last_word || !b->pool || !b->data) {
		bind_free(bd);
		return;
	}
	hold_unlink(bd);
	bd->kept = b->data;
	bd->kept_pool = b->pool;
	b->data = NULL; /* rift__buf_release_slow frees no block */
}

/*
 * A path going away, its QP stopped (ERR): its windows leave their
 * buffers, which the session may free from now on (no READ goes through
 * a window of a QP in the error state); the windows themselves are
 * deallocated by the reaper, before it destroys the QP
 * (rift__rdma_binds_dealloc), and their memory freed when the path is
 * (binds_free).  Not on the loop: rxe (6.1) deallocates a window only
 * once nothing holds it, waiting up to a timeout (200 jiffies, 800 ms
 * here) for a READ response in flight to let go, and a path with windows
 * under READ held its loop, and every other loop of the process, for 26 s
 * in the lab (a session died of it).  Not after the QP either: a window
 * holds its QP, whose destruction then waited out that timeout for each.
 */
void rift__rdma_binds_detach(struct rdma_path *rp)
{
	for (struct rift__list *it = rp->binds.next; it != &rp->binds;
	     it = it->next)
		hold_unlink(rift__list_entry(it, struct rndv_bind, node));
}

/* On the reaper, before the QP is destroyed (nothing else touches the
 * path's windows then). */
void rift__rdma_binds_dealloc(struct rdma_path *rp)
{
	for (struct rift__list *it = rp->binds.next; it != &rp->binds;
	     it = it->next) {
		struct rndv_bind *bd = rift__list_entry(it, struct rndv_bind,
							 node);

		if (bd->mw)
			rift__vb_mw_free(bd->mw);
		bd->mw = NULL;
	}
}

/* The path is freed: its windows (any not deallocated yet too) and the
 * blocks they kept. */
void rift__rdma_binds_free(struct rdma_path *rp)
{
	while (!rift__list_empty(&rp->binds))
		bind_free(rift__list_entry(rp->binds.next, struct rndv_bind,
					   node));
}

struct rndv_bind *rift__rdma_win_new(struct rdma_path *rp, rift__vb_err err)
{
	struct rndv_bind *bd = calloc(1, sizeof(*bd));

	if (!bd) {
		snprintf(err, sizeof(rift__vb_err), "out of memory");
		return NULL;
	}
	if (rift__vb_mw_alloc(rp->pd, &bd->mw, err)) {
		free(bd);
		return NULL;
	}
	bd->rp = rp;
	rift__list_add_tail(&rp->binds, &bd->node);
	return bd;
}

/*
 * Fill *wr with the BIND_MW of a window over m (in registration mr, from
 * rift__rdma_rndv_wanted), and *rkey with the window's key.  False when
 * no window can be had: this path then streams every message (logged and
 * counted once).
 */
static bool rndv_bind(struct rdma_path *rp, struct rift__omsg *m, void *mr,
		      struct ibv_send_wr *wr, uint32_t *rkey)
{
	struct rift__buf *b = rift__container_of(m, struct rift__buf, om);
	struct rndv_bind *bd = calloc(1, sizeof(*bd));
	rift__vb_err err;

	if (!bd)
		snprintf(err, sizeof(err), "out of memory");
	else if (rift__vb_mw_alloc(rp->pd, &bd->mw, err) == 0)
		err[0] = '\0';
	if (err[0]) {
		RIFT_INFO(rp->base.ctx,
			  "%s: rendezvous off on this path, large messages "
			  "stream: %s",
			  rp->base.peer, err);
		free(bd);
		rp->rndv_serve = false;
		rp->base.ctx->stats.rndv_bind_failures++;
		return false;
	}
	bd->rp = rp;
	bd->b = b;
	bd->hold.release = bind_release;
	bd->hold.next = b->holds;
	b->holds = &bd->hold;
	rift__list_add_tail(&rp->binds, &bd->node);
	*rkey = rift__vb_mw_next_rkey(bd->mw);
	memset(wr, 0, sizeof(*wr));
	wr->opcode = IBV_WR_BIND_MW;
	wr->bind_mw.mw = bd->mw;
	wr->bind_mw.rkey = *rkey;
	wr->bind_mw.bind_info.mr = mr;
	wr->bind_mw.bind_info.addr = (uintptr_t)m->data;
	wr->bind_mw.bind_info.length = m->len;
	wr->bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	return true;
}

/*
 * Sender: at a frame boundary, put the descriptor of the next message
 * into buf when it goes by rendezvous.  The message counts as written:
 * the session keeps it (and its buffer, which the peer READs) until the
 * peer's cumulative ack, which comes only after the peer delivered it.
 */
bool rift__rdma_rndv_desc(struct rdma_path *rp, uint8_t *buf,
			  struct ibv_send_wr *bind)
{
	rift__path *p = &rp->base;
	struct rift__omsg *m;
	uint32_t rkey, region_rkey, len;
	void *mr;

	if (rp->cur || rp->ctrl_off < rp->ctrl_len || p->pending ||
	    !rp->peer_rndv || !p->conn)
		return false;
	/* Look before encoding: small messages pay nothing here. */
	m = rift__sess_peek(p);
	if (!m || !rift__path_carries(p) ||
	    !rift__rdma_rndv_wanted(rp, m, &region_rkey, &mr) ||
	    !rndv_bind(rp, m, mr, bind, &rkey))
		return false;
	rift__sess_next(p, NULL); /* m, its header encoded */
	len = (uint32_t)m->len;
	/* Test builds: play a peer that advertises memory it does not own,
	 * or a length its frame does not have. */
	if (rift__fault_hit(RIFT_FAULT_RNDV_BAD_RKEY))
		rkey ^= 0x00ffff00u;
	if (rift__fault_hit(RIFT_FAULT_RNDV_REGION_KEY))
		rkey = region_rkey;
	if (rift__fault_hit(RIFT_FAULT_RNDV_BAD_LEN))
		len += 4096;
	memcpy(buf, m->hdr, RIFT_HDR_SIZE);
	if (rift__fault_hit(RIFT_FAULT_RNDV_BAD_SEQ)) {
		struct rift__hdr h;
		const char *why;

		if (rift__hdr_decode(buf, RIFT_HDR_SIZE, UINT64_MAX, &h,
				     &why) == 0) {
			h.seq++;
			rift__hdr_encode(buf, &h);
		}
	}
	put_be64(buf + RIFT_HDR_SIZE, (uintptr_t)m->data);
	put_be32(buf + RIFT_HDR_SIZE + 8, rkey);
	put_be32(buf + RIFT_HDR_SIZE + 12, len);
	rift__sess_written(p, m);
	rp->rndv_sent++;
	p->ctx->stats.rndv_sends++;
	return true;
}

/*
 * The peer advertised something it cannot stand behind.  Counted, the
 * reason kept in the connection's last error, and the session ends with
 * RIFT_EPROTO (not just this path): re-attaching would only replay the
 * same descriptor, and a peer whose advertisements cannot be trusted is
 * broken or hostile, like one that lies in its acks.
 */
static void rndv_refuse(struct rdma_path *rp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rndv_refuse(struct rdma_path *rp, const char *fmt, ...)
{
	char msg[RIFT_ERRMSG_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rp->base.ctx->stats.rndv_refused++;
	rift__path_failed(&rp->base, RIFT_EPROTO, "rendezvous refused: %s", msg);
}

void rift__rdma_rndv_dst_free(struct rdma_path *rp, struct rndv_op *op)
{
	if (op->dst)
		rift__pool_free(rp->base.ctx->pool, op->dst,
				RIFT_POOL_RECV);
	op->dst = NULL;
}

/* Post READs for what is not requested yet, within the READ depth and
 * leaving send slots for credits and acks.  0, or -1 if the path died. */
static int rndv_post_reads(struct rdma_path *rp)
{
	struct ibv_send_wr wrs[RNDV_DEPTH], *last = NULL;
	struct ibv_sge sges[RNDV_DEPTH];
	rift__vb_err err;
	int n = 0, rc;

	for (uint32_t k = 0; k < rp->rndv_n; k++) {
		struct rndv_op *op = &rp->rndv[(rp->rndv_head + k) % RNDV_MAX];

		while (op->posted < op->h.len && rp->rd_inflight < rp->rd_max &&
		       rp->slots_free > 2 && n < RNDV_DEPTH) {
			uint32_t slot = rp->slot_next;
			uint64_t chunk = op->h.len - op->posted;
			struct ibv_send_wr *wr = &wrs[n];

			if (chunk > rp->rd_chunk)
				chunk = rp->rd_chunk;
			sges[n] = (struct ibv_sge){
				.addr = (uintptr_t)(op->dst + op->posted),
				.length = (uint32_t)chunk,
				.lkey = op->lkey };
			memset(wr, 0, sizeof(*wr));
			wr->wr_id = WR_TAG(rp) | READ_FLAG | slot;
			wr->opcode = IBV_WR_RDMA_READ;
			wr->sg_list = &sges[n];
			wr->num_sge = 1;
			/* Every READ is signaled: its completion is what lets
			 * the message go up. */
			wr->send_flags = IBV_SEND_SIGNALED;
			wr->wr.rdma.remote_addr = op->raddr + op->posted;
			wr->wr.rdma.rkey = op->rkey;
			rp->unsignaled++;
			rp->slots[slot].covers = rp->unsignaled;
			rp->slots[slot].rd_len = (uint32_t)chunk;
			rp->unsignaled = 0;
			rp->slots_free--;
			rp->slot_next = ring_next(slot, rp->sq_depth);
			if (!rp->rd_inflight)
				rp->rd_progress_us = rp->base.ctx->now_us;
			sig_posted(rp);
			data_posted(rp);
			rp->rd_inflight++;
			op->posted += chunk;
			if (last)
				last->next = wr;
			last = wr;
			n++;
		}
	}
	if (!n)
		return 0;
	rc = rift__vb_post_send(rctx_of(rp->base.ctx)->dp_calls, rp->qp, wrs,
				err);
	if (rc) {
		rift__path_failed(&rp->base, rc, "%s", err);
		return -1;
	}
	return 0;
}

/* A READ completed (in order: the oldest request not yet done). */
void rift__rdma_rndv_read_done(struct rdma_path *rp, uint32_t slot)
{
	uint32_t n = rp->slots[slot].rd_len;

	rp->rd_inflight--;
	rp->rd_progress_us = rp->base.ctx->now_us;
	for (uint32_t k = 0; k < rp->rndv_n; k++) {
		struct rndv_op *op = &rp->rndv[(rp->rndv_head + k) % RNDV_MAX];

		if (op->done < op->posted) {
			op->done += n;
			break;
		}
	}
	rp->base.ctx->stats.rndv_read_bytes += n;
}

/*
 * The registered memory a message of len bytes is READ into: a block of
 * the receive share when it fits one; else (or when that share is used
 * up) a large registered buffer.  Never registered on the loop thread
 * while the pool's thread can do it: registering pins every page (a
 * 64 MiB buffer: about a second on the lab's emulated devices), and the
 * loop's other paths and sessions would stand still meanwhile.  So when
 * the memory is being registered (RIFT_EAGAIN) the descriptor waits, its
 * receive buffer held (stream bytes behind it wait anyway), and is taken
 * again every DST_WAIT_MS; after DST_WAIT_MAX_MS the loop registers it
 * itself, or meets what stops the pool's thread (memlock, memory) and
 * says so.
 */
#define DST_WAIT_MS 2u
#define DST_WAIT_MAX_MS 2000u

static void *rndv_dst(struct rdma_path *rp, uint32_t len, int *rc,
		      char *err, size_t errlen)
{
	rift_ctx *ctx = rp->base.ctx;
	struct rift__pool *pool = ctx->pool;
	bool wait = rp->dst_wait_us &&
		    ctx->now_us - rp->dst_wait_us >= DST_WAIT_MAX_MS * 1000u;
	void *dst = NULL;

	*rc = 0;
	if (len <= ctx->cfg.block_size[RIFT_BLOCK_CLASSES - 1])
		dst = (wait ? rift__pool_alloc : rift__pool_try_alloc)(
			pool, len, RIFT_POOL_RECV, rc, err, errlen);
	if (!dst && *rc != RIFT_EAGAIN)
		dst = (wait ? rift__pool_alloc_large
			    : rift__pool_try_alloc_large)(
			pool, len, RIFT_POOL_RECV, rc, err, errlen);
	if (dst || *rc != RIFT_EAGAIN) {
		rp->dst_wait_us = 0;
		return dst;
	}
	if (!rp->dst_wait_us)
		rp->dst_wait_us = ctx->now_us ? ctx->now_us : 1;
	if (!rift__timer_active(&rp->dst_timer))
		rift_timer_start(&rp->dst_timer, DST_WAIT_MS, 0);
	return NULL;
}

void rift__rdma_rndv_dst_timer_cb(rift_timer *t, void *user)
{
	RIFT_UNUSED(t);
	rift__rdma_flush_now(user);
}

/*
 * A descriptor the session has already (a duplicate, as the session drops
 * them) is dropped without a READ.  It was a DATA frame on the path all
 * the same, and a bare frame after it counts its seq from it
 * (rdma_rx.c, bare_frame): the path's last DATA frame is this one, from
 * now when nothing is being fetched, else once the fetches before it are
 * delivered (stream bytes wait for them; their delivery sets the last
 * DATA frame too).  Forgetting that gave a bare frame after it the seq of
 * the duplicate, which the session took for a message it lacked, with
 * the wrong payload (an active-active soak: one message in 30 000).
 */
static void rndv_dup(struct rdma_path *rp, const struct rift__hdr *h)
{
	rift__path *p = &rp->base;

	p->conn->stats.dups_dropped++;
	if (rp->rndv_n) {
		struct rndv_op *last =
			&rp->rndv[(rp->rndv_head + rp->rndv_n - 1) % RNDV_MAX];

		last->then_seq = h->seq;
		last->then_ack = h->ack;
	} else {
		p->rx_data_seq = h->seq;
		p->rx_data_ack = h->ack;
	}
}

/* Whether the descriptor of message seq is being fetched on rp. */
static bool rndv_queued(const struct rdma_path *rp, uint64_t seq)
{
	for (uint32_t k = 0; k < rp->rndv_n; k++)
		if (rp->rndv[(rp->rndv_head + k) % RNDV_MAX].h.seq == seq)
			return true;
	return false;
}

/*
 * Receiver: descriptor in receive buffer i (len bytes).  Checks it all
 * before any READ, takes a registered destination and starts fetching.
 * Returns 0 (taken: the buffer may be re-posted), 1 (too many in flight:
 * try again after a delivery) or -1 (the path died).
 */
int rift__rdma_rndv_start(struct rdma_path *rp, uint32_t i, uint32_t len)
{
	rift__path *p = &rp->base;
	rift_ctx *ctx = p->ctx;
	struct rift__pool *pool = ctx->pool;
	const uint8_t *d = recv_buf(rp, i);
	struct rndv_op *op;
	struct rift__hdr h;
	const char *why = NULL;
	char err[RIFT_ERRMSG_LEN];
	uint64_t raddr, expect, undelivered;
	uint32_t rkey, dlen, rk;
	int rc;

	if (rp->rndv_n == RNDV_MAX)
		return 1;
	/* Before the handshake, a path reads handshake frames only
	 * (session/stream.c): no block is given for a peer's length. */
	if (!rift__path_takes_data(p)) {
		rndv_refuse(rp, "descriptor before the handshake");
		return -1;
	}
	if (!rp->rndv_local) {
		rndv_refuse(rp, "descriptor from a peer we never offered "
				"rendezvous");
		return -1;
	}
	if (len != RNDV_DESC_SIZE) {
		rndv_refuse(rp, "descriptor of %u bytes, not %u", len,
			    RNDV_DESC_SIZE);
		return -1;
	}
	if (rp->rx.big || rp->rx.rstart != rp->rx.rend) {
		rndv_refuse(rp, "descriptor in the middle of a frame");
		return -1;
	}
	if (rift__hdr_decode(d, RIFT_HDR_SIZE, ctx->cfg.max_msg_size, &h, &why)) {
		rndv_refuse(rp, "descriptor with a bad frame header: %s", why);
		return -1;
	}
	raddr = get_be64(d + RIFT_HDR_SIZE);
	rkey = get_be32(d + RIFT_HDR_SIZE + 8);
	dlen = get_be32(d + RIFT_HDR_SIZE + 12);
	if (!rift__frame_sequenced(h.type) || h.len == 0 || dlen != h.len ||
	    raddr + dlen < raddr) {
		rndv_refuse(rp, "peer advertised a buffer it does not own "
				"(%u bytes at 0x%llx for a %s frame of %u "
				"bytes)",
			    dlen, (unsigned long long)raddr,
			    rift__frame_name(h.type), h.len);
		return -1;
	}
	/* Sequence and window before any memory: the message must be the
	 * next one (after those being fetched), and what we fetch and hold
	 * undelivered stays within the window, as it does for an honest
	 * sender (nothing undelivered is acknowledged; one message alone may
	 * exceed the window).  A duplicate (as the session drops them) is
	 * dropped without a READ. */
	expect = (rp->rndv_n ? rp->rndv[(rp->rndv_head + rp->rndv_n - 1) %
					RNDV_MAX].h.seq
			     : p->conn->held_seq) + 1;
	/* active-active: any message the session lacks, once (a path
	 * carries messages out of order: another path's, given again when
	 * it died, come after its own later ones). */
	if (p->conn->spread &&
	    (h.seq <= p->conn->held_seq || rndv_queued(rp, h.seq) ||
	     rift__spread_ooo_has(p->conn, h.seq))) {
		rndv_dup(rp, &h);
		return 0;
	}
	if (!p->conn->spread && h.seq < expect) {
		rndv_dup(rp, &h);
		return 0;
	}
	if (!p->conn->spread && h.seq != expect) {
		rndv_refuse(rp, "descriptor of message %llu where %llu was due",
			    (unsigned long long)h.seq,
			    (unsigned long long)expect);
		return -1;
	}
	undelivered = p->conn->held_bytes + p->conn->ooo_bytes;
	for (uint32_t k = 0; k < rp->rndv_n; k++)
		undelivered += (uint64_t)rp->rndv[(rp->rndv_head + k) %
						  RNDV_MAX].h.len + RIFT_HDR_SIZE;
	if (undelivered &&
	    undelivered + h.len + RIFT_HDR_SIZE > rift__conn_window(p->conn)) {
		rndv_refuse(rp, "descriptor beyond the window (%llu bytes "
				"undelivered, %u more, window %llu)",
			    (unsigned long long)undelivered, h.len,
			    (unsigned long long)rift__conn_window(p->conn));
		return -1;
	}
	op = &rp->rndv[(rp->rndv_head + rp->rndv_n) % RNDV_MAX];
	memset(op, 0, sizeof(*op));
	op->dst = rndv_dst(rp, h.len, &rc, err, sizeof(err));
	/* Being registered: taken again on the timer. */
	if (!op->dst && rc == RIFT_EAGAIN)
		return 1;
	/* The receive share is in use (by messages of other connections
	 * too): those being fetched here free their part once delivered;
	 * this descriptor waits for that. */
	if (!op->dst && rc == RIFT_ENOBUFS && rp->rndv_n)
		return 1;
	if (!op->dst || !rift__pool_keys(pool, op->dst, rp->dev_slot,
					 &op->lkey, &rk)) {
		if (op->dst)
			rift__rdma_rndv_dst_free(rp, op);
		rift__path_failed_why(
			p, RIFT_PATH_DOWN_LOCAL, op->dst ? RIFT_EIO : rc,
			"no registered memory to READ a %u-byte "
			"message into: %s",
			h.len, op->dst ? "block without a key" : err);
		return -1;
	}
	op->h = h;
	op->raddr = raddr;
	op->rkey = rkey;
	rp->rndv_n++;
	return rndv_post_reads(rp);
}

/*
 * Deliver the fetched messages at the head of the ring, in order, in
 * place: the application borrows the destination block until on_recv
 * returns (rift_msg_retain copies it, as for any in-place delivery; so
 * does the session when it holds the message while receiving is stopped).
 * Returns 0, or -1 when the path died.
 */
int rift__rdma_rndv_deliver(struct rdma_path *rp)
{
	rift__path *p = &rp->base;

	while (rp->rndv_n) {
		struct rndv_op *op = &rp->rndv[rp->rndv_head];
		int rc;

		if (op->done < op->h.len)
			break;
		lend_begin(rp, 0, op);
		rc = rift__path_on_frame(p, &op->h, op->dst, NULL);
		lend_end(rp);
		if (op->then_seq && p->state != RIFT_PATH_DEAD) {
			p->rx_data_seq = op->then_seq;
			p->rx_data_ack = op->then_ack;
		}
		rp->rndv_recvd++;
		p->ctx->stats.rndv_recvs++;
		rift__rdma_rndv_dst_free(rp, op);
		rp->rndv_head = (rp->rndv_head + 1) % RNDV_MAX;
		rp->rndv_n--;
		if (rc < 0 || p->state == RIFT_PATH_DEAD)
			return -1;
	}
	return rndv_post_reads(rp);
}

/* A READ failed.  A remote access error means the peer's buffer was not
 * what it said: refused.  Anything else is the path failing. */
void rift__rdma_rndv_read_failed(struct rdma_path *rp, struct ibv_wc *w)
{
	struct rndv_op *op = NULL;

	for (uint32_t k = 0; k < rp->rndv_n && !op; k++)
		if (rp->rndv[(rp->rndv_head + k) % RNDV_MAX].done <
		    rp->rndv[(rp->rndv_head + k) % RNDV_MAX].posted)
			op = &rp->rndv[(rp->rndv_head + k) % RNDV_MAX];
	if ((w->status == IBV_WC_REM_ACCESS_ERR ||
	     w->status == IBV_WC_REM_INV_REQ_ERR) && op) {
		rndv_refuse(rp, "peer advertised a buffer it does not own "
				"(RDMA READ of %u bytes at 0x%llx, rkey 0x%x: %s)",
			    op->h.len, (unsigned long long)op->raddr, op->rkey,
			    rift__vb_wc_str(w->status));
		return;
	}
	rift__path_failed_why(
		&rp->base, RIFT_PATH_DOWN_COMPLETION, RIFT_ECONNRESET,
		"RDMA READ completion error: %s (vendor error 0x%x)",
		rift__vb_wc_str(w->status), w->vendor_err);
}
