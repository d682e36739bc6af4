/*
 * valkey_rdma.c - Valkey's RDMA protocol ("Valkey over RDMA",
 * valkey.io/topics/RDMA) as a byte stream: rift.h, "Byte streams".
 *
 * The protocol, as its specification has it:
 *  - an RC queue pair set up by rdma_cm;
 *  - control messages: 32 bytes, big-endian, by SEND into receives the
 *    peer posted, opcode in the first two bytes: GetServerFeature (0: the
 *    client asks, the server answers with the same opcode and its feature
 *    bits at byte 24), SetClientFeature (1: the features the client
 *    chose), Keepalive (2), RegisterXferMemory (3: address at byte 16,
 *    length at 24, rkey at 28 of the sender's receive buffer);
 *  - data: RDMA WRITE WITH IMMEDIATE into the peer's advertised buffer at
 *    the offset written so far, the immediate holding the length; each
 *    one consumes a receive the peer posted, which it posts again;
 *  - once a side has consumed its whole receive buffer it advertises it
 *    again (RegisterXferMemory), and the peer writes from offset 0.
 * Each side advertises its buffer when the connection is established;
 * the server sends Keepalive every few seconds (Valkey's: 3 s).
 *
 * Resources are the stream's own: a CM event channel (an accepted id is
 * migrated onto it, apart from its listener's), a protection domain, a
 * completion channel and CQ, the QP, and three registered buffers: the
 * control slots (RQ_DEPTH receives, CTRL_TX sends), the receive buffer
 * (the only memory the peer may write, by its own key) and the send
 * staging ring (as large as the receive buffer), whose bytes stay put
 * until their WRITE completes.  Every send is signaled and counted
 * against SQ_DEPTH, so the send queue never overflows and a close can
 * wait until what was written has left.
 *
 * Limits are this side's: what the peer advertises is checked (a length
 * of 0 or above PEER_RX_MAX is refused) and written within, never past;
 * a control message of another size, an unknown opcode, a feature not
 * offered, or an immediate that runs past this side's buffer ends the
 * stream with RIFT_EPROTO, logged, the connection disconnected at once.
 * Nothing here calls a user callback from inside an API call: failures
 * are told from a timer of the next round.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <string.h>
#include <unistd.h>

#include "transports/verbs/rdma_int.h"
#include "util/be.h"

#define CMD_LEN 32u
enum vr_opcode {
	OP_GET_SERVER_FEATURE = 0,
	OP_SET_CLIENT_FEATURE = 1,
	OP_KEEPALIVE = 2,
	OP_REGISTER_XFER_MEMORY = 3,
};
/* Byte offsets in a control message. */
#define AT_OPCODE 0
#define AT_SELECT 2    /* features: which set */
#define AT_FEATURES 24 /* features: the bits (8 bytes) */
#define AT_ADDR 16     /* RegisterXferMemory: buffer address (8 bytes) */
#define AT_LENGTH 24   /* ... its length (4 bytes) */
#define AT_KEY 28      /* ... its rkey (4 bytes) */

#define RQ_DEPTH 256u  /* receives posted: control messages and writes */
#define CTRL_TX 16u    /* control messages in flight, at most */
#define SQ_DEPTH (128u + CTRL_TX)
#define CQ_SIZE (SQ_DEPTH + RQ_DEPTH)
#define PEER_RX_MAX (16u << 20) /* the largest buffer a peer may advertise */
#define POLL_BATCH 32
#define RESOLVE_MS 2000
#define BACKLOG 128

/* wr_id: a receive (slot), a control send (slot), a write (its length) */
#define WR_RECV (1ull << 63)
#define WR_CTRL (1ull << 62)
#define WR_WRITE (1ull << 61)

struct vr_listener;

struct vr_stream {
	rift_stream base;            /* first: the handle users hold */
	rift_ctx *ctx;
	bool is_client;
	bool up;                     /* ESTABLISHED */
	bool down;                   /* ended: peer left, broke, failed */
	bool connected;              /* rdma_connect / rdma_accept went */
	bool disconnected;           /* rdma_disconnect called */
	struct vr_listener *lst;     /* accepted, not established yet */
	struct rift__list lnode;     /* lst->pending */
	struct rdma_event_channel *ch;
	rift__io ch_io;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	rift__io cq_io;
	uint8_t *ctrl;               /* RQ_DEPTH receive slots, then CTRL_TX */
	struct ibv_mr *ctrl_mr;
	uint32_t ctrl_free;          /* bit i: send slot i is free */
	uint8_t *rx;                 /* receive buffer, rx_size bytes */
	struct ibv_mr *rx_mr;
	uint32_t rx_off;             /* bytes the peer wrote into it */
	uint32_t rx_pos;             /* of those, consumed */
	uint8_t *tx;                 /* send staging ring, rx_size bytes */
	struct ibv_mr *tx_mr;
	uint64_t tx_head, tx_tail;   /* ring bytes taken, and freed */
	uint64_t peer_addr;          /* the peer's receive buffer */
	uint32_t peer_len, peer_key;
	uint32_t peer_off;           /* bytes written into it */
	bool peer_known;             /* a RegisterXferMemory came */
	uint32_t sq_used;            /* sends posted, not completed */
	bool want_writable;          /* a write came short: WRITABLE due */
	int fail_status;             /* why it went down (fail_t tells) */
	char fail_msg[RIFT_ERRMSG_LEN];
	rift_timer setup_t;          /* setup_ms() for setting up */
	rift_timer keepalive_t;
	rift_timer linger_t;         /* close: writes leave, then free */
	rift_timer fail_t;           /* tells a failure from the loop */
	rift_timer deliver_t;        /* rift_stream_read_start's delivery */
	uint64_t dp_calls[RIFT_VB_DP__COUNT];
};

struct vr_listener {
	rift_stream_listener *l;     /* its fd's watcher is l->io */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rift__list pending;   /* struct vr_stream, lnode */
};

static struct vr_stream *vs_of(rift_stream *s)
{
	return rift__container_of(s, struct vr_stream, base);
}

/* ---- failure ---- */

static void fail_tell(rift_timer *t, void *user)
{
	struct vr_stream *vs = user;

	RIFT_UNUSED(t);
	rift__bs_emit(&vs->base,
		      vs->base.established ? RIFT_EVENT_DISCONNECTED
					   : RIFT_EVENT_ERROR,
		      vs->fail_status, "%s", vs->fail_msg);
}

/*
 * The stream is over (status 0: the peer disconnected).  Logged when it
 * is a failure; the connection is disconnected at once, so a peer that
 * broke the protocol hears now; the application is told from the loop.
 */
static void vr_fail(struct vr_stream *vs, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void vr_fail(struct vr_stream *vs, int status, const char *fmt, ...)
{
	va_list ap;

	if (vs->down)
		return;
	vs->down = true;
	vs->fail_status = status;
	va_start(ap, fmt);
	vsnprintf(vs->fail_msg, sizeof(vs->fail_msg), fmt, ap);
	va_end(ap);
	rift_timer_stop(&vs->keepalive_t);
	rift_timer_stop(&vs->setup_t);
	if (status && !vs->base.closing)
		RIFT_WARN(vs->ctx, "valkey-rdma %s: %s", vs->base.peer[0] ?
			  vs->base.peer : "(connecting)", vs->fail_msg);
	if (vs->connected && !vs->disconnected) {
		vs->disconnected = true;
		rift__vb_disconnect(vs->id);
	}
	if (!vs->base.closing && !vs->lst)
		rift_timer_start(&vs->fail_t, 0, 0);
}

static int wc_status(enum ibv_wc_status st)
{
	return st == IBV_WC_RETRY_EXC_ERR || st == IBV_WC_RNR_RETRY_EXC_ERR
		       ? RIFT_ETIMEDOUT
		       : RIFT_EIO;
}

/* ---- posting ---- */

static int post_recv(struct vr_stream *vs, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(vs->ctrl + (size_t)slot * CMD_LEN),
		.length = CMD_LEN,
		.lkey = vs->ctrl_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = WR_RECV | slot, .sg_list = &sge, .num_sge = 1,
	};
	rift__vb_err err;
	int rc = rift__vb_post_recv(vs->dp_calls, vs->id->qp, &wr, err);

	if (rc)
		vr_fail(vs, rc, "%s", err);
	return rc;
}

/* Send one control message (cmd, CMD_LEN bytes); 0, or RIFT_EAGAIN when
 * every control slot is taken, or the failure (stream down). */
static int send_ctrl(struct vr_stream *vs, const uint8_t *cmd)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	rift__vb_err err;
	uint8_t *p;
	int slot, rc;

	if (!vs->ctrl_free || vs->sq_used == SQ_DEPTH)
		return RIFT_EAGAIN;
	slot = __builtin_ctz(vs->ctrl_free);
	p = vs->ctrl + (size_t)(RQ_DEPTH + (uint32_t)slot) * CMD_LEN;
	memcpy(p, cmd, CMD_LEN);
	sge = (struct ibv_sge){ .addr = (uintptr_t)p, .length = CMD_LEN,
				.lkey = vs->ctrl_mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_CTRL | (uint32_t)slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	rc = rift__vb_post_send(vs->dp_calls, vs->id->qp, &wr, err);
	if (rc) {
		vr_fail(vs, rc, "%s", err);
		return rc;
	}
	vs->ctrl_free &= ~(1u << slot);
	vs->sq_used++;
	vs->base.st.ctrl_sent++;
	return 0;
}

/* Advertise the receive buffer (again): the peer writes from offset 0. */
static int advertise(struct vr_stream *vs)
{
	uint8_t cmd[CMD_LEN] = { 0 };
	int rc;

	rift__put16(cmd + AT_OPCODE, OP_REGISTER_XFER_MEMORY);
	rift__put64(cmd + AT_ADDR, (uintptr_t)vs->rx);
	rift__put32(cmd + AT_LENGTH, vs->base.rx_size);
	rift__put32(cmd + AT_KEY, vs->rx_mr->rkey);
	rc = send_ctrl(vs, cmd);
	if (rc == RIFT_EAGAIN)
		vr_fail(vs, RIFT_EPROTO, "no control slot free to advertise "
			"the receive buffer: the peer floods control "
			"messages");
	if (rc)
		return rc;
	vs->rx_off = vs->rx_pos = 0;
	vs->base.st.rx_advertised++;
	return 0;
}

/* ---- reading ---- */

/* Hand what arrived to on_read, then advertise the buffer again once all
 * of it is consumed. */
static void deliver(struct vr_stream *vs)
{
	rift_stream *s = &vs->base;

	while (!s->closing && !vs->down && !s->read_stopped &&
	       vs->rx_pos < vs->rx_off) {
		const uint8_t *p = vs->rx + vs->rx_pos;
		uint32_t n = vs->rx_off - vs->rx_pos;

		vs->rx_pos = vs->rx_off;
		s->st.bytes_read += n;
		if (s->cbs.on_read)
			s->cbs.on_read(s, p, n);
	}
	if (!s->closing && !vs->down && vs->rx_pos == s->rx_size)
		advertise(vs);
}

static void deliver_due(rift_timer *t, void *user)
{
	RIFT_UNUSED(t);
	deliver(user);
}

/* ---- writing ---- */

/* Can a write take a byte now? */
static bool tx_room(const struct vr_stream *vs)
{
	return vs->peer_known && vs->peer_off < vs->peer_len &&
	       vs->tx_head - vs->tx_tail < vs->base.rx_size &&
	       vs->sq_used < SQ_DEPTH - CTRL_TX;
}

static int vr_write(rift_stream *s, const void *data, size_t len)
{
	struct vr_stream *vs = vs_of(s);
	const uint8_t *src = data;
	size_t taken = 0;

	if (vs->down)
		return RIFT_ENOTCONN;
	while (taken < len && tx_room(vs)) {
		uint32_t size = s->rx_size;
		uint32_t at = (uint32_t)(vs->tx_head % size);
		uint64_t n = len - taken;
		struct ibv_sge sge;
		struct ibv_send_wr wr;
		rift__vb_err err;
		int rc;

		/* Within the peer's buffer, the ring's free bytes, and the
		 * ring's end (a WRITE is one piece of the ring). */
		if (n > vs->peer_len - vs->peer_off)
			n = vs->peer_len - vs->peer_off;
		if (n > size - (vs->tx_head - vs->tx_tail))
			n = size - (vs->tx_head - vs->tx_tail);
		if (n > size - at)
			n = size - at;
		memcpy(vs->tx + at, src + taken, n);
		sge = (struct ibv_sge){ .addr = (uintptr_t)(vs->tx + at),
					.length = (uint32_t)n,
					.lkey = vs->tx_mr->lkey };
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = WR_WRITE | n;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htonl((uint32_t)n);
		wr.wr.rdma.remote_addr = vs->peer_addr + vs->peer_off;
		wr.wr.rdma.rkey = vs->peer_key;
		rc = rift__vb_post_send(vs->dp_calls, vs->id->qp, &wr, err);
		if (rc) {
			vr_fail(vs, rc, "%s", err);
			break;
		}
		vs->tx_head += n;
		vs->peer_off += (uint32_t)n;
		vs->sq_used++;
		s->st.writes_posted++;
		taken += n;
	}
	s->st.bytes_written += taken;
	if (taken < len && !vs->down) {
		vs->want_writable = true;
		s->st.write_stalls++;
	}
	if (taken)
		return (int)taken;
	return vs->down ? RIFT_ENOTCONN : RIFT_EAGAIN;
}

/* ---- completions ---- */

/*
 * A client's stream is CONNECTED once established and told the server's
 * buffer, so that a write right after the event takes bytes (the
 * server advertises on its own ESTABLISHED, which may come later).
 */
static void connected(struct vr_stream *vs)
{
	if (!vs->is_client || !vs->up || !vs->peer_known || vs->down ||
	    vs->base.established)
		return;
	rift_timer_stop(&vs->setup_t);
	rift__bs_emit(&vs->base, RIFT_EVENT_CONNECTED, 0,
		      "valkey-rdma stream to %s established", vs->base.peer);
}

/* A control message received (CMD_LEN bytes at p). */
static void on_ctrl(struct vr_stream *vs, const uint8_t *p)
{
	rift_stream *s = &vs->base;
	uint16_t op = rift__get16(p + AT_OPCODE);
	uint8_t reply[CMD_LEN] = { 0 };
	uint64_t features;

	s->st.ctrl_recv++;
	switch (op) {
	case OP_GET_SERVER_FEATURE:
		/* A client asks; a server answers with the same opcode (the
		 * answer a client gets is taken as it is: no feature is
		 * defined yet, so there is nothing to choose). */
		if (vs->is_client)
			return;
		rift__put16(reply + AT_OPCODE, OP_GET_SERVER_FEATURE);
		memcpy(reply + AT_SELECT, p + AT_SELECT, 2);
		rift__put64(reply + AT_FEATURES, 0);
		if (send_ctrl(vs, reply) == RIFT_EAGAIN)
			vr_fail(vs, RIFT_EPROTO, "GetServerFeature faster than "
				"it can be answered (%u in flight)", CTRL_TX);
		return;
	case OP_SET_CLIENT_FEATURE:
		features = rift__get64(p + AT_FEATURES);
		if (vs->is_client)
			vr_fail(vs, RIFT_EPROTO, "SetClientFeature from the "
				"server (a client's message)");
		else if (features)
			vr_fail(vs, RIFT_EPROTO, "SetClientFeature asks for "
				"features 0x%llx; this side offers none",
				(unsigned long long)features);
		return;
	case OP_KEEPALIVE:
		s->st.keepalives_recv++;
		return;
	case OP_REGISTER_XFER_MEMORY: {
		uint32_t len = rift__get32(p + AT_LENGTH);

		if (len == 0 || len > PEER_RX_MAX) {
			vr_fail(vs, RIFT_EPROTO, "RegisterXferMemory advertises "
				"a receive buffer of %u bytes (this side takes "
				"1 to %u)", len, PEER_RX_MAX);
			return;
		}
		vs->peer_addr = rift__get64(p + AT_ADDR);
		vs->peer_len = len;
		vs->peer_key = rift__get32(p + AT_KEY);
		vs->peer_off = 0;
		vs->peer_known = true;
		s->st.tx_windows++;
		connected(vs);
		return;
	}
	default:
		vr_fail(vs, RIFT_EPROTO, "control message with unknown opcode "
			"%u", op);
		return;
	}
}

static void on_wc(struct vr_stream *vs, const struct ibv_wc *wc)
{
	bool ok = wc->status == IBV_WC_SUCCESS;

	if (wc->wr_id & WR_CTRL) {
		vs->ctrl_free |= 1u << (uint32_t)(wc->wr_id & 31);
		vs->sq_used--;
	} else if (wc->wr_id & WR_WRITE) {
		vs->tx_tail += (uint32_t)wc->wr_id;
		vs->sq_used--;
	}
	if (!ok) {
		/* After the first error every request flushes: one reason. */
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			vr_fail(vs, wc_status(wc->status), "%s completed with "
				"%s", wc->wr_id & WR_RECV ? "a receive"
				: wc->wr_id & WR_CTRL ? "a control message"
						     : "a write",
				rift__vb_wc_str(wc->status));
		else
			vr_fail(vs, RIFT_EIO, "work requests flushed: the "
				"queue pair went to the error state");
		return;
	}
	if (!(wc->wr_id & WR_RECV) || vs->down || vs->base.closing)
		return;
	if (wc->opcode == IBV_WC_RECV) {
		uint32_t slot = (uint32_t)wc->wr_id;

		if (wc->byte_len != CMD_LEN) {
			vr_fail(vs, RIFT_EPROTO, "control message of %u bytes "
				"(the protocol's are %u)", wc->byte_len,
				CMD_LEN);
			return;
		}
		on_ctrl(vs, vs->ctrl + (size_t)slot * CMD_LEN);
		if (!vs->down)
			post_recv(vs, slot);
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		uint32_t n = ntohl(wc->imm_data);

		if (n > vs->base.rx_size - vs->rx_off) {
			vr_fail(vs, RIFT_EPROTO, "the peer wrote %u bytes at "
				"offset %u, past the %u-byte receive buffer "
				"advertised", n, vs->rx_off,
				vs->base.rx_size);
			return;
		}
		vs->rx_off += n;
		post_recv(vs, (uint32_t)wc->wr_id);
	} else {
		vr_fail(vs, RIFT_EPROTO, "unexpected completion opcode %d",
			(int)wc->opcode);
	}
}

static void linger_done(rift_timer *t, void *user);

/* Take every completion there is. */
static void take_completions(struct vr_stream *vs)
{
	struct ibv_wc wc[POLL_BATCH];
	int n;

	do {
		n = rift__vb_poll(vs->dp_calls, vs->cq, POLL_BATCH, wc);
		for (int i = 0; i < n; i++)
			on_wc(vs, &wc[i]);
	} while (n == POLL_BATCH);
	if (n < 0)
		vr_fail(vs, RIFT_EIO, "ibv_poll_cq failed");
}

static void cq_ready(rift__io *io, uint32_t revents)
{
	struct vr_stream *vs = rift__container_of(io, struct vr_stream, cq_io);
	struct ibv_cq *cq;
	rift__vb_err err;

	RIFT_UNUSED(revents);
	while (rift__vb_cq_next_event(vs->dp_calls, vs->cch, &cq, err) == 0)
		;
	if (rift__vb_cq_arm(vs->dp_calls, vs->cq, err))
		vr_fail(vs, RIFT_EIO, "%s", err);
	take_completions(vs);
	if (vs->base.closing) {
		if (!vs->sq_used)
			rift_timer_start(&vs->linger_t, 0, 0);
		return;
	}
	deliver(vs);
	if (vs->want_writable && !vs->down && tx_room(vs)) {
		vs->want_writable = false;
		rift__bs_emit(&vs->base, RIFT_EVENT_WRITABLE, 0, "writable");
	}
}

/* ---- set up and tear down ---- */

static int resources(struct vr_stream *vs)
{
	struct rift__vb_qp_caps caps = { .sq_depth = SQ_DEPTH,
					 .rq_depth = RQ_DEPTH,
					 .max_send_sge = 1,
					 .max_recv_sge = 1 };
	size_t ctrl_len = (size_t)(RQ_DEPTH + CTRL_TX) * CMD_LEN;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t size = vs->base.rx_size;
	rift__vb_err err;
	int rc;

	rc = rift__vb_pd_alloc(vs->id->verbs, &vs->pd, err);
	if (!rc)
		rc = rift__vb_qp_setup(vs->id, vs->pd, CQ_SIZE, &caps, &vs->cch,
				       &vs->cq, err);
	if (rc)
		goto fail;
	/* Page-aligned, as Valkey's: a registration pins whole pages. */
	if (posix_memalign((void **)&vs->ctrl, page, ctrl_len) ||
	    posix_memalign((void **)&vs->rx, page, size) ||
	    posix_memalign((void **)&vs->tx, page, size)) {
		rc = RIFT_ENOMEM;
		snprintf(err, sizeof(rift__vb_err), "out of memory for the "
			 "stream's buffers (2 x %u bytes)", size);
		goto fail;
	}
	memset(vs->ctrl, 0, ctrl_len);
	rc = rift__vb_reg_stream_mr(vs->pd, vs->ctrl, ctrl_len, false,
				    &vs->ctrl_mr, err);
	if (!rc)
		rc = rift__vb_reg_stream_mr(vs->pd, vs->rx, size, true,
					    &vs->rx_mr, err);
	if (!rc)
		rc = rift__vb_reg_stream_mr(vs->pd, vs->tx, size, false,
					    &vs->tx_mr, err);
	if (rc)
		goto fail;
	vs->ctrl_free = (uint32_t)((1ull << CTRL_TX) - 1);
	for (uint32_t i = 0; i < RQ_DEPTH; i++)
		if (post_recv(vs, i))
			return RIFT_EIO;
	rc = rift__io_start(vs->ctx, &vs->cq_io, vs->cch->fd, EPOLLIN,
			    cq_ready);
	if (rc) {
		snprintf(err, sizeof(rift__vb_err), "epoll: %s",
			 rift_strerror(rc));
		goto fail;
	}
	return 0;

fail:
	vr_fail(vs, rc, "%s", err);
	return rc;
}

/* Let go of everything but the handle. */
static void teardown(struct vr_stream *vs)
{
	rift_timer_stop(&vs->setup_t);
	rift_timer_stop(&vs->keepalive_t);
	rift_timer_stop(&vs->linger_t);
	rift_timer_stop(&vs->fail_t);
	rift_timer_stop(&vs->deliver_t);
	if (vs->lst) {
		rift__list_del(&vs->lnode);
		vs->lst = NULL;
	}
	if (vs->connected && !vs->disconnected) {
		vs->disconnected = true;
		rift__vb_disconnect(vs->id);
	}
	rift__io_stop(vs->ctx, &vs->cq_io);
	rift__io_stop(vs->ctx, &vs->ch_io);
	vs->cq_io.fd = vs->ch_io.fd = -1;
	rift__vb_qp_teardown(vs->id, vs->cch, vs->cq);
	vs->cch = NULL;
	vs->cq = NULL;
	if (vs->ctrl_mr)
		rift__vb_dereg_mr(vs->ctrl_mr);
	if (vs->rx_mr)
		rift__vb_dereg_mr(vs->rx_mr);
	if (vs->tx_mr)
		rift__vb_dereg_mr(vs->tx_mr);
	vs->ctrl_mr = vs->rx_mr = vs->tx_mr = NULL;
	free(vs->ctrl);
	free(vs->rx);
	free(vs->tx);
	vs->ctrl = vs->rx = vs->tx = NULL;
	if (vs->pd)
		rift__vb_pd_free(vs->pd);
	vs->pd = NULL;
	rift__vb_id_destroy(vs->id);
	vs->id = NULL;
	rift__vb_channel_destroy(vs->ch);
	vs->ch = NULL;
}

static void linger_done(rift_timer *t, void *user)
{
	struct vr_stream *vs = user;

	RIFT_UNUSED(t);
	teardown(vs);
	rift__bs_closed(&vs->base);
}

/*
 * How long a stream may take to be established: what rift_connect gives
 * its attempts together.  A stream makes one attempt, within which
 * rdma_cm retransmits by itself; in a fresh lab guest the first
 * exchange waits for ARP in both directions and took over 2 s.
 */
static uint64_t setup_ms(const rift_ctx *ctx)
{
	return (uint64_t)ctx->cfg.connect_timeout_ms * (ctx->cfg.retries + 1u);
}

static void setup_expired(rift_timer *t, void *user)
{
	struct vr_stream *vs = user;

	RIFT_UNUSED(t);
	if (vs->lst) {
		/* Accepted, never established: nobody saw it. */
		teardown(vs);
		rift__bs_drop(&vs->base);
		return;
	}
	vr_fail(vs, RIFT_ETIMEDOUT, "not established within %llu ms "
		"(connect_timeout_ms x (retries + 1))",
		(unsigned long long)setup_ms(vs->ctx));
}

static void keepalive(rift_timer *t, void *user)
{
	struct vr_stream *vs = user;
	uint8_t cmd[CMD_LEN] = { 0 };

	RIFT_UNUSED(t);
	rift__put16(cmd + AT_OPCODE, OP_KEEPALIVE);
	/* With every slot in flight the peer is hearing from us anyway. */
	if (send_ctrl(vs, cmd) == 0)
		vs->base.st.keepalives_sent++;
}

static void cm_ready(rift__io *io, uint32_t revents);

static struct vr_stream *vr_new(rift_ctx *ctx, uint32_t rx_size)
{
	struct vr_stream *vs = calloc(1, sizeof(*vs));
	rift__vb_err err;

	if (!vs)
		return NULL;
	vs->ctx = ctx;
	vs->cq_io.fd = vs->ch_io.fd = -1;
	rift__list_init(&vs->lnode);
	rift__timer_init(ctx, &vs->setup_t, setup_expired, vs);
	rift__timer_init(ctx, &vs->keepalive_t, keepalive, vs);
	rift__timer_init(ctx, &vs->linger_t, linger_done, vs);
	rift__timer_init(ctx, &vs->fail_t, fail_tell, vs);
	rift__timer_init(ctx, &vs->deliver_t, deliver_due, vs);
	if (rift__vb_channel_create(&vs->ch, err)) {
		rift__ctx_fail(ctx, RIFT_EIO, "valkey-rdma: %s", err);
		free(vs);
		return NULL;
	}
	if (rift__io_start(ctx, &vs->ch_io, vs->ch->fd, EPOLLIN, cm_ready)) {
		rift__ctx_fail(ctx, RIFT_ENOMEM, "valkey-rdma: epoll failed");
		rift__vb_channel_destroy(vs->ch);
		free(vs);
		return NULL;
	}
	rift__bs_init(ctx, &vs->base, &rift__valkey_rdma_ops, rx_size);
	return vs;
}

/* ESTABLISHED: advertise, keep alive, and tell.  Returns true when the
 * stream is gone (accepted, failed before anyone saw it). */
static bool established(struct vr_stream *vs)
{
	struct vr_listener *vl = vs->lst;

	if (!vs->is_client)
		rift_timer_stop(&vs->setup_t);
	vs->up = true;
	if (advertise(vs)) {
		if (vl) {
			teardown(vs);
			rift__bs_drop(&vs->base);
			return true;
		}
		return false;
	}
	if (vs->ctx->cfg.keepalive_interval_ms)
		rift_timer_start(&vs->keepalive_t,
				 vs->ctx->cfg.keepalive_interval_ms,
				 vs->ctx->cfg.keepalive_interval_ms);
	if (vs->is_client) {
		connected(vs);
		return false;
	}
	rift__list_del(&vs->lnode);
	vs->lst = NULL;
	vs->base.established = true;
	vl->l->on_accept(vl->l, &vs->base);
	return false;
}

static void conn_param(struct rdma_conn_param *p, const rift_config *cfg)
{
	memset(p, 0, sizeof(*p));
	p->initiator_depth = 1;
	p->responder_resources = 1;
	p->retry_count = (uint8_t)cfg->rdma_retry_count;
	/* The peer re-posts a receive per completion it takes; a writer
	 * ahead of it waits (7: retry as long as it takes). */
	p->rnr_retry_count = 7;
}

/* One CM event; returns true when the stream is gone (freed). */
static bool cm_event(struct vr_stream *vs, enum rdma_cm_event_type type,
		     int status)
{
	struct rdma_conn_param param;
	rift__vb_err err;
	int rc;

	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		rc = rift__vb_resolve_route(vs->id, RESOLVE_MS, err);
		if (rc)
			vr_fail(vs, rc, "%s", err);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rc = rift__vb_set_ack_timeout(
			vs->id, (uint8_t)vs->ctx->cfg.rdma_ack_timeout, err);
		if (rc) {
			vr_fail(vs, rc, "%s", err);
			break;
		}
		if (resources(vs))
			break;
		conn_param(&param, &vs->ctx->cfg);
		rc = rift__vb_connect(vs->id, &param, err);
		if (rc)
			vr_fail(vs, rc, "%s", err);
		else
			vs->connected = true;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (!vs->down)
			return established(vs);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
		/* No ARP answer yet: ask again, in steps (RESOLVE_STEP_MS,
		 * rdma_int.h), until setup_t ends the attempt. */
		if (status == -ETIMEDOUT &&
		    !rift__vb_resolve_addr(
			    vs->id, NULL,
			    (struct sockaddr *)&vs->id->route.addr.dst_addr,
			    RESOLVE_STEP_MS, err))
			break;
		/* fall through */
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_REJECTED:
		vr_fail(vs, type == RDMA_CM_EVENT_REJECTED ? RIFT_ECONNREFUSED
			: type == RDMA_CM_EVENT_UNREACHABLE ? RIFT_EHOSTUNREACH
							    : RIFT_ENETUNREACH,
			"%s (status %d)", rift__vb_cm_event_str(type), status);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* What the peer wrote before it disconnected is delivered
		 * first: its completions may wait on the CQ's fd still. */
		if (vs->cq && !vs->down) {
			take_completions(vs);
			deliver(vs);
		}
		vs->disconnected = true;
		vr_fail(vs, 0, "the peer disconnected");
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		vr_fail(vs, RIFT_ENODEV, "the RDMA device was removed");
		break;
	default:
		break;
	}
	return false;
}

static void cm_ready(rift__io *io, uint32_t revents)
{
	struct vr_stream *vs = rift__container_of(io, struct vr_stream, ch_io);
	struct rdma_cm_event *ev;

	RIFT_UNUSED(revents);
	while (vs->ch && rift__vb_cm_get(vs->ch, &ev) == 0) {
		enum rdma_cm_event_type type = ev->event;
		int status = ev->status;

		rift__vb_cm_ack(ev);
		if (vs->lst && type != RDMA_CM_EVENT_ESTABLISHED) {
			/* Accepted, gone before it was established. */
			teardown(vs);
			rift__bs_drop(&vs->base);
			return;
		}
		if (cm_event(vs, type, status))
			return;
	}
}

static int vr_connect(rift_ctx *ctx, const struct sockaddr *sa, socklen_t len,
		      uint32_t rx_size, rift_stream **out)
{
	struct vr_stream *vs = vr_new(ctx, rx_size);
	rift__vb_err err;
	int rc;

	RIFT_UNUSED(len);
	if (!vs)
		return RIFT_ENOMEM;
	vs->is_client = true;
	rift__sockaddr_str(sa, vs->base.peer, sizeof(vs->base.peer));
	rc = rift__vb_id_create(vs->ch, vs, &vs->id, err);
	if (!rc)
		rc = rift__vb_resolve_addr(vs->id, NULL, sa, RESOLVE_STEP_MS,
					   err);
	if (rc) {
		rift__ctx_fail(ctx, rc, "valkey-rdma %s: %s", vs->base.peer,
			       err);
		teardown(vs);
		rift__bs_drop(&vs->base);
		return rc;
	}
	rift_timer_start(&vs->setup_t, setup_ms(ctx), 0);
	*out = &vs->base;
	return 0;
}

/* ---- listening ---- */

/* A connect request on vl: a stream of its own, accepted. */
static void accept_one(struct vr_listener *vl, struct rdma_cm_id *id)
{
	rift_stream_listener *l = vl->l;
	rift_ctx *ctx = l->bn.ctx;
	struct vr_stream *vs = vr_new(ctx, l->rx_size);
	struct rdma_conn_param param;
	rift__vb_err err;
	int rc;

	if (!vs) {
		RIFT_WARN(ctx, "valkey-rdma listener on port %d: refused a "
			  "connection: %s", l->port, ctx->errmsg);
		rift__vb_reject(id, NULL, 0);
		rift__vb_id_destroy(id);
		return;
	}
	vs->lst = vl;
	rift__list_add_tail(&vl->pending, &vs->lnode);
	vs->base.cbs = l->cbs;
	vs->base.user = l->user;
	rift__sockaddr_str((struct sockaddr *)&id->route.addr.dst_addr,
			   vs->base.peer, sizeof(vs->base.peer));
	rc = rift__vb_migrate_id(id, vs->ch, err);
	if (rc) {
		rift__vb_reject(id, NULL, 0);
		rift__vb_id_destroy(id);
		goto drop;
	}
	vs->id = id;
	id->context = vs;
	rc = rift__vb_set_ack_timeout(id, (uint8_t)ctx->cfg.rdma_ack_timeout,
				      err);
	if (rc || (rc = resources(vs)) != 0) {
		rift__vb_reject(id, NULL, 0);
		goto drop;
	}
	conn_param(&param, &ctx->cfg);
	rc = rift__vb_accept(id, &param, err);
	if (rc)
		goto drop;
	vs->connected = true;
	rift_timer_start(&vs->setup_t, setup_ms(ctx), 0);
	return;

drop:
	RIFT_WARN(ctx, "valkey-rdma listener on port %d: %s refused: %s",
		  l->port, vs->base.peer, vs->down ? vs->fail_msg : err);
	teardown(vs);
	rift__bs_drop(&vs->base);
}

static void listener_ready(rift__io *io, uint32_t revents)
{
	rift_stream_listener *l =
		rift__container_of(io, rift_stream_listener, io);
	struct vr_listener *vl = l->transport_state;
	struct rdma_cm_event *ev;

	RIFT_UNUSED(revents);
	while (rift__vb_cm_get(vl->ch, &ev) == 0) {
		enum rdma_cm_event_type type = ev->event;
		struct rdma_cm_id *id = ev->id;

		/* Acknowledged first: migrating the new id needs it. */
		rift__vb_cm_ack(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST)
			accept_one(vl, id);
		else
			RIFT_WARN(vl->l->bn.ctx, "valkey-rdma listener on port "
				  "%d: %s", vl->l->port,
				  rift__vb_cm_event_str(type));
	}
}

static void listener_free(struct vr_listener *vl)
{
	rift__io_stop(vl->l->bn.ctx, &vl->l->io);
	vl->l->io.fd = -1;
	rift__vb_id_destroy(vl->id);
	rift__vb_channel_destroy(vl->ch);
	free(vl);
}

static int vr_listen(rift_stream_listener *l, const struct sockaddr *sa,
		     socklen_t len)
{
	rift_ctx *ctx = l->bn.ctx;
	struct vr_listener *vl = calloc(1, sizeof(*vl));
	char addr[RIFT_HOST_LEN + 8];
	rift__vb_err err;
	int rc;

	RIFT_UNUSED(len);
	if (!vl)
		return rift__ctx_fail(ctx, RIFT_ENOMEM,
				      "valkey-rdma listen: out of memory");
	vl->l = l;
	l->io.fd = -1;
	rift__list_init(&vl->pending);
	l->transport_state = vl;
	rift__sockaddr_str(sa, addr, sizeof(addr));
	rc = rift__vb_channel_create(&vl->ch, err);
	if (!rc)
		rc = rift__vb_id_create(vl->ch, vl, &vl->id, err);
	if (!rc)
		rc = rift__vb_bind(vl->id, sa, err);
	if (!rc)
		rc = rift__vb_listen(vl->id, BACKLOG, err);
	if (rc) {
		listener_free(vl);
		l->transport_state = NULL;
		return rift__ctx_fail(ctx, rc, "valkey-rdma listen %s: %s",
				      addr, err);
	}
	rc = rift__io_start(ctx, &l->io, vl->ch->fd, EPOLLIN, listener_ready);
	if (rc) {
		listener_free(vl);
		l->transport_state = NULL;
		return rift__ctx_fail(ctx, rc, "valkey-rdma listen %s: epoll",
				      addr);
	}
	l->port = ntohs(((struct sockaddr_in *)&vl->id->route.addr.src_addr)
				->sin_port);
	return 0;
}

static void vr_listen_close(rift_stream_listener *l)
{
	struct vr_listener *vl = l->transport_state;

	while (!rift__list_empty(&vl->pending)) {
		struct vr_stream *vs = rift__list_entry(
			vl->pending.next, struct vr_stream, lnode);

		teardown(vs);
		rift__bs_drop(&vs->base);
	}
	listener_free(vl);
	l->transport_state = NULL;
}

/* ---- the rest of the ops ---- */

static void vr_deliver(rift_stream *s)
{
	rift_timer_start(&vs_of(s)->deliver_t, 0, 0);
}

static void vr_close(rift_stream *s)
{
	struct vr_stream *vs = vs_of(s);

	rift_timer_stop(&vs->keepalive_t);
	rift_timer_stop(&vs->fail_t);
	rift_timer_stop(&vs->deliver_t);
	rift_timer_stop(&vs->setup_t);
	/* Writes taken leave first; a dead QP flushes them at once. */
	rift_timer_start(&vs->linger_t,
			 vs->sq_used && !vs->down
				 ? vs->ctx->cfg.keepalive_timeout_ms
				 : 0,
			 0);
}

static void vr_free(rift_stream *s)
{
	free(vs_of(s));
}

static rift_fallback_reason vr_available(rift_ctx *ctx)
{
	return rift__rdma_available(ctx);
}

const struct rift__bs_ops rift__valkey_rdma_ops = {
	.scheme = "valkey-rdma",
	.available = vr_available,
	.connect = vr_connect,
	.listen = vr_listen,
	.listen_close = vr_listen_close,
	.write = vr_write,
	.deliver = vr_deliver,
	.close = vr_close,
	.free = vr_free,
};
