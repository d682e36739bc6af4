/*
 * rdma_int.h - what the files of the verbs transport share: the constants
 * of its wire (wr_id, immediate data; the hello is in rdma_hello.h), the
 * state of a context, a listener, a path and a shared CQ, and the
 * functions one file calls in another (each under the file that defines
 * it).  rdma.c has the design
 * overview; verbs.h wraps every libibverbs and librdmacm call.
 */
#ifndef RIFT_VERBS_RDMA_INT_H
#define RIFT_VERBS_RDMA_INT_H

#include <pthread.h>

#include "session/session.h"
#include "memory/pool.h"
#include "session/stream.h"
#include "transports/verbs/cm_tcp.h"
#include "transports/verbs/rdma.h"
#include "transports/verbs/rdma_hello.h"
#include "transports/verbs/verbs.h"

#define CTRL_CAP 1024
/*
 * wr_id: flags, the path's tag (a per-context number: completions of a
 * destroyed path whose QP number came back are told apart by it) and the
 * receive buffer or send slot.
 */
#define RECV_FLAG (1ull << 63)
#define READ_FLAG (1ull << 62) /* wr_id of a rendezvous READ */
#define RMA_FLAG (1ull << 61)  /* ... of a one-sided READ or WRITE */
#define TAG_SHIFT 32
#define TAG_MASK 0x1fffffffu
#define WR_TAG(rp) ((uint64_t)(rp)->tag << TAG_SHIFT)
#define WR_IDX(wr_id) ((uint32_t)(wr_id))
#define WR_TAG_OF(wr_id) ((uint32_t)((wr_id) >> TAG_SHIFT) & TAG_MASK)
#define MAX_POLL RIFT_POLL_BATCH_MAX

/*
 * A SEND's immediate: credits returned in the low 16 bits (at most
 * rq_depth, 32768), and flags.  RNDV_IMM: a rendezvous descriptor.
 * BARE_IMM: one DATA frame without its header (a bare frame): its seq
 * follows the path's last DATA frame, its ack is that frame's ack plus
 * the 14-bit delta in bits 16..29.  A SEND then carries the message's
 * bytes only: under emulation every byte costs in the kernel's send and
 * receive paths, and a 32-byte message goes as 32 bytes, not 56.
 * In the pending ring, the receive buffer's index sits in the low 16 bits
 * with the same flags and delta.
 */
#define RNDV_IMM (1u << 31)
#define BARE_IMM (1u << 30)
#define BARE_SHIFT 16
#define BARE_DELTA_MAX (1u << 14)
#define CREDIT_MASK 0xffffu
/* Both flags, which no stream SEND has: one ERROR frame, whole, apart
 * from the stream (a path's last word must not wait behind messages the
 * stream cannot deliver yet, e.g. a rendezvous the receiver holds). */
#define OOB_IMM (RNDV_IMM | BARE_IMM)
#define PEND_RNDV RNDV_IMM
#define PEND_BARE BARE_IMM
#define PEND_IDX 0xffffu
#define RNDV_DESC_SIZE (RIFT_HDR_SIZE + 16u)
#define RNDV_MAX 16            /* rendezvous received, not yet delivered */
#define RNDV_CHUNK (1u << 20)  /* bytes per READ, at most */
#define RNDV_DEPTH 16          /* READs in flight per QP, at most */
/*
 * rdma_resolve_addr's timeout, ms.  The kernel looks at an unresolved
 * neighbour again only when ARP reports one (a report can slip past a
 * request being queued) or when the request times out: with the whole
 * connect_timeout_ms, a re-attach over a link not used before waited
 * 1.5 s and more for an ARP answer that had come in milliseconds.  So
 * each resolution asks for this long and is asked again on a timeout,
 * for as long as the attempt may last (the session's bound on it).  With
 * 200 ms steps a re-attach in the fault soak still waited 203 ms for a
 * neighbour that answered at once.  On a veth the answer is in before
 * the request is queued (ARP goes out from rdma_resolve_addr itself), so
 * after every link flap the first resolution misses it: a step is 10 ms.
 * Asking again sends no ARP of its own; the neighbour's timer does.
 */
#define RESOLVE_STEP_MS 10

_Static_assert(sizeof(struct cm_hello) == RIFT_BOOT_HELLO_LEN,
	       "cm=tcp carries the rdma_cm hello as it is");

/* Reject reasons in rdma_reject's private data: enum rift__rej. */

/* The id context says whether an event is for a path or a listener. */
enum owner_kind { OWNER_PATH = 1, OWNER_LISTENER = 2 };

/*
 * A completion queue shared by paths of one context on one device.  Room
 * is counted in completions: each path (or prepared set) holds need =
 * sq_depth + rq_depth, what its QP can have outstanding at once (READs
 * take send slots, and after an error every posted request completes,
 * signaled or not), so the CQ can never overflow.  A destroyed QP may
 * leave completions behind: its share stays taken (stale) until a poll
 * finds the CQ empty.
 */
struct shared_cq {
	struct rift__list node;      /* rdma ctx's cqs */
	struct rift__list users;     /* struct rdma_path, cq_node */
	struct cq_dev *dev;
	struct ibv_cq *cq;
	uint32_t cap;                /* completions it holds */
	uint32_t used;               /* taken by holders and stale shares */
	uint32_t stale;              /* of used: destroyed QPs' shares */
	uint32_t holders;            /* paths and prepared sets on it */
	bool armed;                  /* its next completion raises an event */
	bool polling;                /* in rift__rdma_cq_poll (no re-entry) */
	bool failed;                 /* overflowed: takes no one any more */
	int overflow;                /* atomic: IBV_EVENT_CQ_ERR seen */
};

/* A context's CQs on one device share one completion channel. */
struct cq_dev {
	struct rift__rdma_ctx *r;
	rift_ctx *ctx;
	struct ibv_context *verbs;   /* librdmacm's context of the device */
	struct ibv_comp_channel *cch;
	rift__io cch_io;
	rift__io async_io;           /* verbs->async_fd: CQ errors */
	bool cch_on, async_on;
	bool gone;                   /* removed: let go once unused (rdma_gone.c) */
	uint32_t max_cqe;            /* the device's largest CQ */
	uint32_t n_cqs;
};

/*
 * What a path needs before it connects, made on demand or ahead of time by
 * a listener's prepared-QP pool: room on a shared CQ, receive
 * buffers and send slots from the block pool and the QP itself in INIT on
 * a port with every receive posted.  With rdmacm the accepting side keeps
 * the QP its own (librdmacm's user-managed QP mode: ibv_create_qp, the
 * transitions from rdma_init_qp_attr, rdma_accept with conn_param.qp_num),
 * so an accept waits on no QP creation in either cm mode; the connecting
 * side lets rdma_create_qp bind one to its id (docs/config.md,
 * rdma.qp_pool_count).
 */
struct qp_res {
	struct rift__list node;      /* listener's pool */
	struct ibv_context *verbs;   /* librdmacm's context of the device */
	uint8_t port;                /* the port the QP is INIT on */
	struct ibv_pd *pd;           /* the device's, shared */
	int dev_slot;                /* the device's slot in the block pool */
	struct shared_cq *scq;       /* room for need completions taken */
	uint32_t need;
	uint32_t tag;                /* wr_id tag of its posted receives */
	struct ibv_qp *qp;           /* NULL: rdma_create_qp makes it */
	uint8_t **rbufs, **sbufs;
	uint32_t *rlkey, *slkey;
	uint32_t buf_size, rq_depth, sq_depth, inline_max;
	bool posted;                 /* every receive is posted */
};

struct rdma_listener {
	enum owner_kind kind;
	rift_listener *l;
	struct rdma_cm_id *id; /* rdmacm: listening; cm=tcp: rejects rdma_cm */
	struct rift__cmtcp_listener *tl; /* cm=tcp side channel */
	bool cm_tcp;            /* rdma.cm = tcp: rdma_cm only to refuse */
	/* prepared-QP pool (rdma.qp_pool_count) */
	struct rift__list prep;      /* struct qp_res, ready */
	uint32_t n_prep;
	struct ibv_context *prep_verbs; /* device prepared for; NULL: unknown */
	uint8_t prep_port;
	rift_timer refill;           /* refills from the loop, never inline */
	uint64_t refill_fails;       /* consecutive failures: back off */
	/* Bound to an address whose device was removed: its id is gone in
	 * the kernel, and the listener listens again once the device is
	 * back (rdma_gone.c), on the same address and port. */
	struct sockaddr_storage sa;
	socklen_t sa_len;
	rift_timer relisten;
	uint32_t relisten_ms;        /* next wait, backing off */
	bool relisten_init;
};

/*
 * Port and device events.  Every context opened on a device receives them,
 * so each rift context opens its own just to listen: events then arrive on
 * the thread whose paths they concern.
 */
struct dev_watch {
	rift_ctx *ctx;
	struct ibv_device *dev;
	struct ibv_context *c;
	rift__io io;
};

/* Per-context state: one CM event channel for every id of the context.
 * The context's reference on the process pool is ctx->pool (rdma_dev.c
 * takes it, as the transport that registers memory). */
struct rift__rdma_ctx {
	rift_ctx *ctx;
	uint64_t dp_calls[RIFT_VB_DP__COUNT]; /* data-path verbs calls, count */
	struct rdma_event_channel *ch;
	rift__io io;
	struct rift__list paths; /* paths with a CQ share (port events) */
	struct rift__list last_words; /* dead paths whose ERROR is leaving */
	/* shared completion queues (rdma_cq.c) */
	struct cq_dev *cqdev[RIFT_POOL_MAX_DEVICES];
	int n_cqdev;
	struct rift__list cqs;   /* struct shared_cq */
	struct rift__list rma_regs; /* one-sided regions' registrations */
	struct rdma_path **qpt;  /* (device, QP number) -> path, chained */
	uint32_t qpt_mask, qpt_n;
	uint32_t next_tag;
	uint32_t poll_seq;       /* poll batches, marks paths touched */
	int note_fd;             /* eventfd: a CQ error seen elsewhere */
	rift__io note_io;
	struct reaper *reaper;   /* QP teardown off the loop (rdma_reap.c) */
	struct rdma_path *parked; /* dead paths waiting for their port (ditto) */
	struct dev_watch *watch[RIFT_POOL_MAX_DEVICES]; /* async events */
	int n_watch;
	/* Devices removed (rdma_gone.c): the kernel's uevents, and a timer
	 * that lets go of a removed device once nothing uses it. */
	int uev_fd;
	rift__io uev_io;
	rift_timer gone_timer;
	bool gone_timer_on;
	/* cm=tcp: the last device selection, by local address; cleared by
	 * any device event (a GID or port may have changed) */
	struct sockaddr_storage sel_addr;
	void *sel;                   /* struct dev_sel, or NULL */
	rift_fallback_reason probed; /* cached device probe */
	bool probe_done;
	uint64_t probe_us;           /* when it ran (one that failed runs
				      * again a second later: a device may
				      * come, auto:// sessions return) */
	char device[RIFT_DEVICE_NAME_MAX];
};

/* The context's verbs state (in its transport slot), or NULL before the
 * first use (rdma_dev.c makes it). */
static inline struct rift__rdma_ctx *rctx_of(const rift_ctx *ctx)
{
	return ctx->transport_state[RIFT_TRANSPORT_RDMA];
}

struct send_slot {
	uint32_t covers; /* slots freed when this signaled send completes */
	uint32_t rd_len; /* a READ: bytes it fetches */
	bool rma_read;   /* a one-sided READ (RMA_FLAG): takes READ depth */
	uint64_t rma_cookie; /* a one-sided piece: the session's cookie */
};

/*
 * A memory window bound on a path's QP (rdma_rndv.c): over one
 * rendezvous message (b, and its block once the path is dying), or over
 * an export for one-sided access (rdma_rma.c: no buffer).  Deallocated by
 * the reaper before the QP goes, freed with the path.
 */
struct rndv_bind {
	struct rift__hold hold; /* on the buffer (first: container_of) */
	struct rift__list node; /* rp->binds */
	struct rdma_path *rp;
	struct rift__buf *b;    /* NULL once it kept the block */
	struct ibv_mw *mw;
	void *kept;             /* the buffer's block, freed with the window */
	struct rift__pool *kept_pool;
	uint32_t rkey;          /* an export's: its key (LOCAL_INV) */
	bool inv_due;           /* ... to invalidate when a slot is free */
};

/* A large message being fetched by RDMA READ, delivered in order. */
struct rndv_op {
	struct rift__hdr h;   /* the DATA frame it delivers */
	uint8_t *dst;         /* registered destination (pool) */
	uint32_t lkey;
	uint32_t rkey;        /* the peer's buffer */
	uint64_t raddr;
	uint64_t posted, done; /* bytes requested, bytes arrived */
	/* A duplicate descriptor dropped behind it (active-active): the
	 * path's last DATA frame once this one is delivered, its seq and
	 * ack (a bare frame after it counts from it); 0: none. */
	uint64_t then_seq, then_ack;
};

struct rdma_path {
	rift__path base;
	enum owner_kind kind;
	struct rdma_cm_id *id; /* rdmacm only */
	struct ibv_qp *qp;     /* both cm modes */
	/* rdmacm: qp is ours, not librdmacm's (accepted: user-managed QP
	 * mode), so moving it to ERR and destroying it are ours too */
	bool user_qp;
	struct ibv_context *verbs; /* device (librdmacm's context) */
	uint8_t port_num;
	struct ibv_pd *pd;     /* the device's, shared: not ours to free */
	/* cm=tcp: side channel, and what the bootstrap says about us */
	struct rift__cmtcp *tc;
	uint8_t gid[16], link_layer, mtu;
	uint16_t lid;
	uint32_t gid_index, psn;
	int dev_slot;          /* the device's slot in the block pool */
	struct shared_cq *scq; /* its share of a shared CQ */
	uint32_t cq_need;      /* completions of that share */
	uint32_t tag;          /* wr_id tag (per context) */
	uint32_t qpn;          /* in the context's QP table when hashed */
	bool hashed;
	uint32_t touched;      /* poll batch that last had completions */
	struct rdma_path *hnext; /* QP table chain */
	struct rdma_path *reap_next; /* reaper queue */
	bool park;             /* its port was down: torn down later */
	/* Dead, but its ERROR frame still leaving (rdma_reap.c): the
	 * zero-length WRITE in last_slot completes behind it (UINT32_MAX:
	 * posted when a slot comes back) */
	bool last_word;
	uint32_t last_slot;
	rift_timer last_timer;
	uint64_t probe_us;     /* last zero-length WRITE probe (loop time) */
	uint64_t rd_progress_us; /* last READ done, or first posted (loop time) */
	struct rift__list cq_node;   /* scq's users */
	struct rift__list poll_node; /* rdma ctx's paths */
	bool established;

	/* receive buffers and send slots: blocks of the registered pool */
	uint8_t **rbufs, **sbufs;
	uint32_t *rlkey, *slkey;
	uint32_t buf_size, rq_depth, sq_depth, inline_max;

	/* receive side */
	uint32_t *pend;        /* completed receives not yet consumed (ring) */
	uint32_t *pend_len;
	uint32_t pend_head, pend_n;
	uint32_t pend_off;     /* bytes of pend[head] already consumed */
	uint32_t to_return;    /* credits re-posted, not yet announced */
	uint32_t *repost;      /* consumed buffers to post again (flush) */
	uint32_t repost_n;
	uint32_t repost_batch; /* buffers posted again together, at least */
	struct rift__stream rx;
	bool draining;         /* in rift__rdma_drain_recvs (no re-entry) */

	/* send side */
	uint32_t credits;      /* peer receive buffers we may fill */
	uint32_t peer_rq;      /* the peer's receive depth, from its hello:
				  credits never exceed it */
	uint32_t peer_buf;     /* peer's buffer size */
	uint32_t slot_next;    /* next slot to fill */
	uint32_t slots_free;
	uint32_t unsignaled;   /* slots posted since the last signaled one */
	/* Signaled work requests (SENDs, READs, zero WRITEs) not completed,
	 * and when the last one completed or the first was posted (loop
	 * time); when a message's bytes, a READ or a zero WRITE were last
	 * posted (the transport's retransmission timer restarts there):
	 * rdma_tx_stalled_us in rdma.c. */
	uint32_t sig_out;
	uint64_t tx_progress_us;
	uint64_t tx_posted_us;
	bool sq_stuck;         /* test builds: RIFT_FAULT_SQ_STUCK fired */
	struct send_slot *slots;
	/* post_one's work request, filled once: each SEND sets only what
	 * changes (id, piece, immediate, flags) */
	struct ibv_send_wr send_wr;
	struct ibv_sge send_sge;
	/* what a delivery in place lends (rift__lend): receive buffer i,
	 * which held block when the delivery began, or a rendezvous op */
	struct rdma_lend {
		struct rift__lend base;
		uint32_t i;
		uint8_t *block;
		struct rndv_op *op;
	} lend;
	/* a send_now whose post failed: reported when on_recv returns */
	int late_rc;
	rift__vb_err late_err;
	uint64_t zc_sends;     /* messages sent without a copy */
	uint64_t now_sends;    /* replies sent from on_recv (send_now) */
	uint64_t bare_sends;   /* DATA frames sent without their header */
	uint64_t inplace_bytes; /* received bytes delivered without a copy */
	struct rift__omsg *cur; /* message being copied, and how far */
	size_t cur_off;
	uint8_t ctrl[CTRL_CAP];
	size_t ctrl_len, ctrl_off;

	/* rendezvous (rdma_rndv.c) */
	bool rndv_local;       /* our device serves and issues READs */
	bool rndv_serve;       /* ... and binds memory windows: we send
				  descriptors (until one fails to bind) */
	struct rift__list binds; /* struct rndv_bind: windows bound here */
	bool peer_rndv;        /* so does the peer's (its hello says) */
	uint32_t inv_due;      /* windows to invalidate when slots free up */
	bool peer_bare;        /* the peer takes bare DATA frames */
	bool peer_oob;         /* ... and an ERROR frame out of band */
	uint32_t rd_max;       /* READs in flight at most (initiator depth) */
	uint32_t rd_inflight;
	uint32_t rd_chunk;     /* bytes per READ */
	struct rndv_op rndv[RNDV_MAX]; /* ring, in arrival order */
	uint32_t rndv_head, rndv_n;
	/* The next descriptor's destination is being registered by the
	 * pool's thread (since dst_wait_us, loop time): the descriptor is
	 * taken again on this timer (rndv_dst in rdma_rndv.c). */
	uint64_t dst_wait_us;
	rift_timer dst_timer;
	uint64_t rndv_sent;    /* messages sent as descriptors */
	uint64_t rndv_recvd;   /* messages received by READ */
};

/* (i + 1) % n for a ring index below n, without a division: under QEMU
 * TCG (the lab) a div is a helper call, and rings advance per message. */
static inline uint32_t ring_next(uint32_t i, uint32_t n)
{
	return i + 1 == n ? 0 : i + 1;
}

/* The QP's local ACK timeout (rdma.ack_timeout: 4.096 us * 2^n), us. */
static inline uint64_t ack_timeout_us(const rift_config *c)
{
	return ((uint64_t)4096 << c->rdma_ack_timeout) / 1000u;
}

/* A signaled work request was posted: the first in flight starts the
 * wait rdma_tx_stalled_us (rdma.c) measures. */
static inline void sig_posted(struct rdma_path *rp)
{
	if (!rp->sig_out++)
		rp->tx_progress_us = rp->base.ctx->now_us;
}

/* A message's bytes (or a READ, or a zero WRITE) go out now: the peer's
 * adapter owes an answer ack timeouts from here (rdma_tx_stalled_us). */
static inline void data_posted(struct rdma_path *rp)
{
	rp->tx_posted_us = rp->base.ctx->now_us;
}

/* (i + k) % n for i < n and k <= n, without a division. */
static inline uint32_t ring_add(uint32_t i, uint32_t k, uint32_t n)
{
	return i + k >= n ? i + k - n : i + k;
}

static inline struct rdma_path *rp_of(rift__path *p)
{
	return rift__container_of(p, struct rdma_path, base);
}

static inline uint8_t *recv_buf(struct rdma_path *rp, uint32_t i)
{
	return rp->rbufs[i];
}

/* ---- rdma_dev.c: devices and the block pool, context state ---- */

/*
 * The devices of the process, with their protection domains (rdma_dev.c):
 * what the pool registers with, and the device's limits.
 */
struct rdma_dev {
	struct ibv_context *verbs;   /* NULL: a free entry */
	/* librdmacm's device list taken with the entry: librdmacm closes
	 * a removed device's context when the last user lets go, and the
	 * PD and registrations here must go before (rdma_gone.c) */
	struct ibv_context **hold;
	int refs;                    /* contexts with CQs on it (cq_dev) */
	bool gone;                   /* removed: freed at refs 0 */
	struct ibv_pd *pd;
	struct rift__vb_pool_dev pdev; /* what the pool registers with */
	int slot;
	uint8_t rd_atom;      /* RDMA READs served at once (responder) */
	uint8_t init_atom;    /* RDMA READs issued at once (initiator) */
	uint32_t max_msg;     /* largest message (bytes per READ) */
	uint32_t max_cqe;     /* largest CQ (0: unknown) */
};
extern pthread_mutex_t rift__rdma_dev_mu; /* guards the two below */
extern struct rdma_dev rift__rdma_devs[RIFT_POOL_MAX_DEVICES];
extern int rift__rdma_n_devs;

int rift__rdma_dev_pd(struct rift__pool *pool, struct ibv_context *verbs,
		      int *idx, char *err, size_t errlen);
void rift__rdma_dev_atoms(struct ibv_context *verbs, uint8_t *rd,
			  uint8_t *init, uint32_t *max_msg, bool *mw);
/*
 * A device's life in the process (rdma_gone.c says why): a context's
 * CQs hold a reference; a removed device is marked gone, and its PD and
 * registrations go with the last reference (pool: the process pool).
 */
/* The device's PD (NULL: not in the process's table); valid while the
 * caller holds a reference (a context's CQs on it). */
struct ibv_pd *rift__rdma_dev_pd_of(struct ibv_context *verbs);
void rift__rdma_dev_ref(struct ibv_context *verbs);
void rift__rdma_dev_unref(struct rift__pool *pool, struct ibv_context *verbs);
void rift__rdma_dev_mark_gone(struct rift__pool *pool, struct ibv_device *dev);
bool rift__rdma_dev_is_gone(struct ibv_context *verbs);
/*
 * rdma.device, rdma.port and rdma.gid_index on a client (rdma_src.c):
 * the local address its paths to dst leave from, of dst's family, which
 * reaches dst through its netdev (ifname, "" when unknown).  0 with
 * out->set false when none of them is set, or on InfiniBand (the route
 * chooses; rift__rdma_device_mismatch checks it); 0 with out->set; or
 * RIFT_ENODEV (no such device or port), RIFT_ENETDOWN (no active port),
 * RIFT_EADDRNOTAVAIL (no address of that family), RIFT_ENETUNREACH (no
 * address that reaches dst), with err saying which addresses were tried.
 */
int rift__rdma_src(const rift_config *cfg, const struct sockaddr *dst,
		   socklen_t dst_len, struct rift__rdma_src *out, char *err,
		   size_t errlen);
/* The ops' device_src (internal.h): as rift__rdma_src chooses for
 * rdma.device and rdma.port set to device and port. */
int rift__rdma_device_src(const rift_config *cfg, const char *device,
			  int port, const struct sockaddr *dst,
			  socklen_t dst_len, struct sockaddr_storage *out,
			  socklen_t *out_len, char *err, size_t errlen);
/*
 * A client path's given local address (group.local) as its source: the
 * device and port that hold it are the path's.  When rdma.device or
 * rdma.port is set, it must be on them: 0; RIFT_EINVAL naming both
 * (the address is on another device or port), RIFT_EADDRNOTAVAIL (on
 * no active RDMA port), with err saying so.
 */
int rift__rdma_src_given(const rift_config *cfg, const struct sockaddr *src,
			 socklen_t src_len, struct rift__rdma_src *out,
			 char *err, size_t errlen);

/* The context's verbs state, made with its rdma_cm channel and its pool
 * on first use: 0, or RIFT_E* with err set (a pool whose [pool]
 * settings are not the context's: RIFT_EINVAL). */
int rift__rdma_rctx(rift_ctx *ctx, struct rift__rdma_ctx **out,
		    rift__vb_err err);
rift_fallback_reason rift__rdma_available(rift_ctx *ctx);
void rift__rdma_watch_device(rift_ctx *ctx, struct ibv_device *dev);
/* Context hooks (rift__transport_ops): the pool and the end of the
 * context's verbs state. */
struct rift__pool *rift__rdma_ctx_pool(rift_ctx *ctx);
void rift__rdma_ctx_destroy(rift_ctx *ctx);

/* ---- rdma_devices.c: rift_devices ---- */

int rift__rdma_devices(rift_device_info *out, int max, char *err,
		       size_t errlen);

/* ---- rdma_cq.c: shared completion queues ---- */

void rift__rdma_cq_fail(struct shared_cq *s, const char *why);
int rift__rdma_cq_reserve(rift_ctx *ctx, struct ibv_context *verbs,
			  uint32_t need, struct shared_cq **out, char *err,
			  size_t errlen);
void rift__rdma_cq_release(struct rift__rdma_ctx *r, struct shared_cq *s,
			   uint32_t need, bool had_qp);
void rift__rdma_cq_devs_free(struct rift__rdma_ctx *r);

/* ---- rdma_wc.c: the QP table and completions ---- */

int rift__rdma_qpt_add(struct rift__rdma_ctx *r, struct rdma_path *rp);
void rift__rdma_qpt_del(struct rift__rdma_ctx *r, struct rdma_path *rp);
int rift__rdma_cq_poll(struct rift__rdma_ctx *r, struct shared_cq *s);
void rift__rdma_cq_event_cb(rift__io *io, uint32_t revents);
/* Context hooks (rift__transport_ops): busy and adaptive polling. */
int rift__rdma_poll(rift_ctx *ctx);
int rift__rdma_arm(rift_ctx *ctx);

/* ---- rdma_qp.c: path resources and the prepared-QP pool ---- */

void rift__rdma_pool_init(struct rdma_listener *rl, struct ibv_context *verbs,
			  uint8_t port);
void rift__rdma_pool_free(struct rdma_listener *rl);
int rift__rdma_path_resources(struct rdma_path *rp, struct rdma_listener *rl);
struct rdma_path *rift__rdma_path_new(rift_ctx *ctx, bool is_client);

/* ---- rdma_rndv.c: rendezvous ---- */

bool rift__rdma_rndv_wanted(struct rdma_path *rp, struct rift__omsg *m,
			    uint32_t *rkey, void **mr);
void rift__rdma_binds_detach(struct rdma_path *rp);
void rift__rdma_binds_dealloc(struct rdma_path *rp);
void rift__rdma_binds_free(struct rdma_path *rp);
bool rift__rdma_rndv_desc(struct rdma_path *rp, uint8_t *buf,
			  struct ibv_send_wr *bind);
void rift__rdma_rndv_dst_free(struct rdma_path *rp, struct rndv_op *op);
void rift__rdma_rndv_read_done(struct rdma_path *rp, uint32_t slot);
int rift__rdma_rndv_start(struct rdma_path *rp, uint32_t i, uint32_t len);
void rift__rdma_rndv_dst_timer_cb(rift_timer *t, void *user);
int rift__rdma_rndv_deliver(struct rdma_path *rp);
void rift__rdma_rndv_read_failed(struct rdma_path *rp, struct ibv_wc *w);
/* A window of its own (one-sided access), in rp->binds; NULL with err. */
struct rndv_bind *rift__rdma_win_new(struct rdma_path *rp, rift__vb_err err);

/* ---- rdma_rma.c: one-sided access (the ops' rma_*, mem_drop) ---- */

int rift__rdma_rma_expose(rift__path *p, rift_mem *mem, uint64_t addr,
			  uint64_t len, unsigned access, uint32_t *rkey,
			  void **win);
void rift__rdma_rma_unexpose(rift__path *p, void *win);
int rift__rdma_rma_post(rift__path *p, bool read, rift_mem *local,
			uint64_t local_off, uint64_t raddr, uint32_t rkey,
			uint32_t len, uint64_t cookie);
uint32_t rift__rdma_rma_max(rift__path *p);
int rift__rdma_mem_reg(rift_ctx *ctx, rift_mem *mem, char *err,
		       size_t errlen);
void rift__rdma_mem_drop(rift_ctx *ctx, rift_mem *mem);
/* A one-sided piece in slot completed (status 0) or failed. */
void rift__rdma_rma_done(struct rdma_path *rp, uint32_t slot, int status);
/* Slots came back: the invalidations that waited for one. */
void rift__rdma_rma_inv_due(struct rdma_path *rp);
/* The context lets go of a device: its registrations go (before its PD),
 * or every one at the context's end. */
void rift__rdma_rma_dev_drop(struct rift__rdma_ctx *r,
			     struct ibv_context *verbs);
void rift__rdma_rma_ctx_end(struct rift__rdma_ctx *r);

/* ---- rdma_rx.c: the receive side ---- */

bool rift__rdma_lend_take(struct rift__lend *l, size_t len,
			  struct rift__pool **pool, void **block);
int rift__rdma_drain_recvs(struct rdma_path *rp);
void rift__rdma_oob_frame(struct rdma_path *rp, uint32_t i, uint32_t len);

/* Deliveries from receive buffer i (op NULL) or a rendezvous block. */
static inline void lend_begin(struct rdma_path *rp, uint32_t i,
			      struct rndv_op *op)
{
	rp->lend.base.take = rift__rdma_lend_take;
	rp->lend.i = i;
	rp->lend.block = op ? NULL : rp->rbufs[i];
	rp->lend.op = op;
	rp->base.lend = &rp->lend.base;
}

static inline void lend_end(struct rdma_path *rp)
{
	rp->base.lend = NULL;
}

/* ---- rdma_tx.c: the send side ---- */

void rift__rdma_flush_now(struct rdma_path *rp);
int rift__rdma_post_zero_write(struct rdma_path *rp, uint32_t *slot,
			       rift__vb_err err);
void rift__rdma_flush(rift__path *p);
bool rift__rdma_send_now(rift__path *p);

/* ---- rdma_boot.c: cm=tcp bring-up ---- */

/* Where a cm=tcp path lives: device, port and GID of its local address. */
struct dev_sel {
	struct ibv_context *verbs;
	uint8_t port, link_layer, mtu;
	uint16_t lid;
	uint32_t gid_index;
	uint8_t gid[16];
};

bool rift__rdma_addr_gid(const struct sockaddr *sa, uint8_t gid[16]);
const char *rift__rdma_device_mismatch(const rift_config *cfg,
				       struct ibv_context *verbs, unsigned port,
				       const char *subject, char *buf,
				       size_t len);
int rift__rdma_dev_select(rift_ctx *ctx, const struct sockaddr *local,
			  struct dev_sel *s, char *err, size_t errlen);
void rift__rdma_accept_done(uint64_t t0);

/* ---- rdma_gone.c: removed devices ---- */

void rift__rdma_gone_start(struct rift__rdma_ctx *r);
void rift__rdma_gone_stop(struct rift__rdma_ctx *r);
/* The device was removed (a uevent, rdma_cm's DEVICE_REMOVAL): every
 * path on it fails, and what the context holds on it goes as soon as
 * nothing uses it (the kernel waits for that). */
void rift__rdma_device_gone(struct rift__rdma_ctx *r, struct ibv_device *dev,
			    const char *how);
/* A listener's id on a removed device: destroyed and made again once
 * the device is back (rdma.c). */
void rift__rdma_relisten(struct rdma_listener *rl);
/* A CQ of a removed device lost a holder: look again from the loop. */
void rift__rdma_gone_settle_later(struct rift__rdma_ctx *r);
/* ---- rdma_cq.c, for rdma_gone.c ---- */
bool rift__rdma_cq_dev_unused(struct rift__rdma_ctx *r, struct cq_dev *d);
/* Every context looks at its devices again: one was removed. */
void rift__rdma_notes_wake(void);
void rift__rdma_cq_dev_free(struct rift__rdma_ctx *r, struct cq_dev *d);
/* ---- rdma_qp.c, for rdma_gone.c: a listener's prepared QPs on verbs go */
void rift__rdma_pool_drop(struct rdma_listener *rl, struct ibv_context *verbs);

/* ---- rdma_cm.c: the hello and connection management events ---- */

void rift__rdma_hello_fill(struct rdma_path *rp, struct cm_hello *h);
const char *rift__rdma_hello_check(struct rdma_path *rp, const void *data,
				   uint8_t len);
const char *rift__rdma_gid_mismatch(rift_ctx *ctx, struct rdma_cm_id *id,
				    char *buf, size_t len);
void rift__rdma_cm_io_cb(rift__io *io, uint32_t revents);

/* ---- rdma_reap.c: teardown ---- */

void rift__rdma_qp_err(struct rdma_path *rp);
void rift__rdma_reaper_free(struct rift__rdma_ctx *r);
void rift__rdma_parked_release(struct rift__rdma_ctx *r,
			       struct ibv_device *dev, int port);
bool rift__rdma_port_down(struct ibv_context *verbs, uint8_t port);
void rift__rdma_destroy(rift__path *p);
void rift__rdma_last_word_wc(struct rdma_path *rp, const struct ibv_wc *w);
void rift__rdma_last_words_end(struct rift__rdma_ctx *r);

#endif
