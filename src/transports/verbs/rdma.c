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
 * the session with RIFT_EPROTO.  See "rendezvous" below.
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
 * "shared completion queues" below.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <unistd.h>

#include "session/session.h"
#include "memory/pool.h"
#include "session/stream.h"
#include "transports/verbs/cm_tcp.h"
#include "transports/verbs/verbs.h"

#define HELLO_MAGIC 0x52494654u /* "RIFT" */
#define HELLO_VERSION 1u
#define CTRL_CAP 1024
/*
 * wr_id: flags, the path's tag (a per-context number: completions of a
 * destroyed path whose QP number came back are told apart by it) and the
 * receive buffer or send slot.
 */
#define RECV_FLAG (1ull << 63)
#define READ_FLAG (1ull << 62) /* wr_id of a rendezvous READ */
#define TAG_SHIFT 32
#define TAG_MASK 0x3fffffffu
#define WR_TAG(rp) ((uint64_t)(rp)->tag << TAG_SHIFT)
#define WR_IDX(wr_id) ((uint32_t)(wr_id))
#define WR_TAG_OF(wr_id) ((uint32_t)((wr_id) >> TAG_SHIFT) & TAG_MASK)
#define MAX_POLL 64

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

/* Hello flags. */
#define HELLO_F_RNDV 1u /* serves and issues RDMA READs (rendezvous) */
#define HELLO_F_BARE 2u /* takes bare DATA frames (BARE_IMM) */

/* rdma_cm private data: fits the 56 bytes a connect request may carry. */
struct cm_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t flags;    /* HELLO_F_*; unknown bits are ignored */
	uint32_t rq_depth; /* receive buffers posted = initial credits */
	uint32_t buf_size; /* bytes per receive buffer */
} __attribute__((packed));

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
	bool polling;                /* in cq_poll (no re-entry) */
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

/* Per-context state: one CM event channel for every id of the context. */
struct rift__rdma_ctx {
	rift_ctx *ctx;
	struct rdma_event_channel *ch;
	rift__io io;
	struct rift__pool *pool; /* reference on the process pool */
	struct rift__list paths; /* paths with a CQ share (port events) */
	/* shared completion queues (see there) */
	struct cq_dev *cqdev[RIFT_POOL_MAX_DEVICES];
	int n_cqdev;
	struct rift__list cqs;   /* struct shared_cq */
	uint32_t cq_paths;       /* paths holding a CQ share */
	struct rdma_path **qpt;  /* (device, QP number) -> path, chained */
	uint32_t qpt_mask, qpt_n;
	uint32_t next_tag;
	uint32_t poll_seq;       /* poll batches, marks paths touched */
	int note_fd;             /* eventfd: a CQ error seen elsewhere */
	rift__io note_io;
	struct reaper *reaper;   /* QP teardown off the loop (see there) */
	struct rdma_path *parked; /* dead paths waiting for their port (ditto) */
	struct dev_watch *watch[RIFT_POOL_MAX_DEVICES]; /* async events */
	int n_watch;
	/* cm=tcp: the last device selection, by local address; cleared by
	 * any device event (a GID or port may have changed) */
	struct sockaddr_storage sel_addr;
	void *sel;                   /* struct dev_sel, or NULL */
	rift_fallback_reason probed; /* cached device probe */
	bool probe_done;
	char device[RIFT_DEVICE_NAME_MAX];
};

struct send_slot {
	uint32_t covers; /* slots freed when this signaled send completes */
	uint32_t rd_len; /* a READ: bytes it fetches */
};

/* A large message being fetched by RDMA READ, delivered in order. */
struct rndv_op {
	struct rift__hdr h;   /* the DATA frame it delivers */
	uint8_t *dst;         /* registered destination (pool) */
	uint32_t lkey;
	uint32_t rkey;        /* the peer's buffer */
	uint64_t raddr;
	uint64_t posted, done; /* bytes requested, bytes arrived */
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
	bool draining;         /* in drain_recvs (no re-entry) */

	/* send side */
	uint32_t credits;      /* peer receive buffers we may fill */
	uint32_t peer_buf;     /* peer's buffer size */
	uint32_t slot_next;    /* next slot to fill */
	uint32_t slots_free;
	uint32_t unsignaled;   /* slots posted since the last signaled one */
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

	/* rendezvous (see the rendezvous section) */
	bool rndv_local;       /* our device serves and issues READs */
	bool rndv_serve;       /* ... and binds memory windows: we send
				  descriptors (until one fails to bind) */
	struct rift__list binds; /* struct rndv_bind: windows bound here */
	bool peer_rndv;        /* so does the peer's (its hello says) */
	bool peer_bare;        /* the peer takes bare DATA frames */
	uint32_t rd_max;       /* READs in flight at most (initiator depth) */
	uint32_t rd_inflight;
	uint32_t rd_chunk;     /* bytes per READ */
	struct rndv_op rndv[RNDV_MAX]; /* ring, in arrival order */
	uint32_t rndv_head, rndv_n;
	uint64_t rndv_sent;    /* messages sent as descriptors */
	uint64_t rndv_recvd;   /* messages received by READ */
};

/* (i + 1) % n for a ring index below n, without a division: under QEMU
 * TCG (the lab) a div is a helper call, and rings advance per message. */
static inline uint32_t ring_next(uint32_t i, uint32_t n)
{
	return i + 1 == n ? 0 : i + 1;
}

/* (i + k) % n for i < n and k <= n, without a division. */
static inline uint32_t ring_add(uint32_t i, uint32_t k, uint32_t n)
{
	return i + k >= n ? i + k - n : i + k;
}

static struct rdma_path *rp_of(rift__path *p)
{
	return rift__container_of(p, struct rdma_path, base);
}

static void cm_io_cb(rift__io *io, uint32_t revents);
static void reaper_free(struct rift__rdma_ctx *r);
static void parked_release(struct rift__rdma_ctx *r, struct ibv_device *dev,
			   int port);
static bool port_down(struct ibv_context *verbs, uint8_t port);

/* ---- memory: devices and the block pool ---- */

/*
 * One protection domain per device for the whole process, shared by every
 * path, so the pool registers its regions once per device.  They live as
 * long as any context uses RDMA.
 */
static const struct rift__pool_reg pool_reg = {
	.reg = rift__vb_pool_reg,
	.dereg = rift__vb_pool_dereg,
};
static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;
static int dev_users;
static struct {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct rift__vb_pool_dev pdev; /* what the pool registers with */
	int slot;
	uint8_t rd_atom;      /* RDMA READs served at once (responder) */
	uint8_t init_atom;    /* RDMA READs issued at once (initiator) */
	uint32_t max_msg;     /* largest message (bytes per READ) */
	uint32_t max_cqe;     /* largest CQ (0: unknown) */
} devs[RIFT_POOL_MAX_DEVICES];
static int n_devs;

#define RD_ATOM_MAX 16 /* outstanding RDMA READs per QP, each way */

/* The device's PD and pool slot (made on first use); 0 or RIFT_E*. */
static int dev_pd(struct rift__pool *pool, struct ibv_context *verbs,
		  int *idx, char *err, size_t errlen)
{
	uint32_t init, resp;
	rift__vb_err verr;
	int i, rc = 0;

	pthread_mutex_lock(&dev_mu);
	for (i = 0; i < n_devs; i++)
		if (devs[i].verbs == verbs)
			break;
	if (i == n_devs) {
		if (n_devs == RIFT_POOL_MAX_DEVICES) {
			snprintf(err, errlen, "more than %d RDMA devices",
				 RIFT_POOL_MAX_DEVICES);
			rc = RIFT_ENOSPC;
			goto out;
		}
		rc = rift__vb_pd_alloc(verbs, &devs[i].pd, verr);
		if (rc) {
			snprintf(err, errlen, "%s", verr);
			goto out;
		}
		devs[i].pdev.pd = devs[i].pd;
		devs[i].pdev.mw = rift__vb_mw_type2(verbs);
		rc = rift__pool_add_device(pool, &devs[i].pdev, err, errlen);
		if (rc < 0) {
			rift__vb_pd_free(devs[i].pd);
			goto out;
		}
		devs[i].verbs = verbs;
		devs[i].slot = rc;
		/* Without READ support (depths 0) paths stream everything.
		 * Every port of a device shares its limits; port 1 exists. */
		devs[i].rd_atom = devs[i].init_atom = 0;
		devs[i].max_msg = 0;
		if (rift__vb_read_limits(verbs, 1, &init, &resp,
					 &devs[i].max_msg, verr) == 0) {
			devs[i].rd_atom = (uint8_t)(resp < RD_ATOM_MAX
						    ? resp : RD_ATOM_MAX);
			devs[i].init_atom = (uint8_t)(init < RD_ATOM_MAX
						      ? init : RD_ATOM_MAX);
		}
		if (rift__vb_cq_limit(verbs, &devs[i].max_cqe, verr))
			devs[i].max_cqe = 0;
		n_devs++;
		rc = 0;
	}
	*idx = i;
out:
	pthread_mutex_unlock(&dev_mu);
	return rc;
}

static void dev_users_put(void)
{
	pthread_mutex_lock(&dev_mu);
	if (--dev_users == 0) {
		for (int i = 0; i < n_devs; i++)
			rift__vb_pd_free(devs[i].pd);
		n_devs = 0;
	}
	pthread_mutex_unlock(&dev_mu);
}

/* The device's READ limits (0 until a path or pool set used it). */
static void dev_atoms(struct ibv_context *verbs, uint8_t *rd, uint8_t *init,
		      uint32_t *max_msg, bool *mw)
{
	uint32_t dummy;
	bool dummy_mw;

	if (!max_msg)
		max_msg = &dummy;
	if (!mw)
		mw = &dummy_mw;
	*rd = *init = 0;
	*max_msg = 0;
	*mw = false;
	pthread_mutex_lock(&dev_mu);
	for (int i = 0; i < n_devs; i++)
		if (devs[i].verbs == verbs) {
			*rd = devs[i].rd_atom;
			*init = devs[i].init_atom;
			*max_msg = devs[i].max_msg;
			*mw = devs[i].pdev.mw;
		}
	pthread_mutex_unlock(&dev_mu);
}

/* ---- context state ---- */

static void cq_devs_free(struct rift__rdma_ctx *r);

static struct rift__rdma_ctx *rdma_ctx_new(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	rift__list_init(&r->paths);
	rift__list_init(&r->cqs);
	r->ctx = ctx;
	r->note_fd = -1;
	ctx->rdma = r;
	return r;
}

struct rift__pool *rift__ctx_pool(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;
	char err[RIFT_ERRMSG_LEN];

	if (r && r->pool)
		return r->pool;
	if (!r) {
		r = rdma_ctx_new(ctx);
		if (!r)
			return NULL;
	}
	if (rift__pool_get(&ctx->cfg, &pool_reg, &r->pool, err, sizeof(err))) {
		rift__ctx_fail(ctx, RIFT_ENOMEM, "%s", err);
		return NULL;
	}
	pthread_mutex_lock(&dev_mu);
	dev_users++;
	pthread_mutex_unlock(&dev_mu);
	return r->pool;
}

struct rift__pool *rift__ctx_pool_held(const rift_ctx *ctx)
{
	return ctx->rdma ? ctx->rdma->pool : NULL;
}

static int cq_reserve(rift_ctx *ctx, struct ibv_context *verbs, uint32_t need,
		      struct shared_cq **out, char *err, size_t errlen);

/*
 * Ready every device for a path before one is needed: its protection
 * domain and the block pool's registration (once per process) and this
 * context's shared CQ.  Made on first use, they were most of a re-attach
 * that moved to a device not used before: 200 ms of a 580 ms re-attach
 * in the lab, where registering the pool grows with the pool.  A path
 * that fails over must find its device ready, as a standby link does in
 * SMC-R.  Done once per context, when it first uses RDMA; a device that
 * cannot be readied is left to fail (and say why) when a path needs it.
 */
static void warm_devices(rift_ctx *ctx)
{
	struct ibv_context **list;
	rift__vb_err verr;
	char err[RIFT_ERRMSG_LEN];
	uint64_t t0 = rift__clock_us();
	int n, d;

	if (rift__vb_cm_devices(&list, &n, verr)) {
		RIFT_DEBUG("warm-up: %s", verr);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct shared_cq *s;

		if (dev_pd(ctx->rdma->pool, list[i], &d, err, sizeof(err)) ||
		    cq_reserve(ctx, list[i], 0, &s, err, sizeof(err))) {
			RIFT_DEBUG("warm-up of %s: %s",
				   rift__vb_device_name(list[i]->device), err);
			continue;
		}
		s->holders--; /* kept: a device's first CQ stays */
	}
	RIFT_DEBUG("warm-up: %d devices in %.1f ms", n,
		   (rift__clock_us() - t0) / 1e3);
	rift__vb_cm_devices_free(list);
}

static struct rift__rdma_ctx *rctx(rift_ctx *ctx, rift__vb_err err)
{
	struct rift__rdma_ctx *r = ctx->rdma;

	if (r && r->ch)
		return r;
	if (!r) {
		r = rdma_ctx_new(ctx);
		if (!r) {
			snprintf(err, sizeof(rift__vb_err), "out of memory");
			return NULL;
		}
	}
	if (!rift__ctx_pool(ctx)) {
		snprintf(err, sizeof(rift__vb_err), "%s", ctx->errmsg);
		return NULL;
	}
	if (rift__vb_channel_create(&r->ch, err))
		return NULL;
	if (rift__io_start(ctx, &r->io, r->ch->fd, EPOLLIN, cm_io_cb)) {
		snprintf(err, sizeof(rift__vb_err), "epoll: cannot watch the "
						    "rdma_cm channel");
		rift__vb_channel_destroy(r->ch);
		r->ch = NULL;
		return NULL;
	}
	warm_devices(ctx);
	return r;
}

void rift__rdma_ctx_destroy(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;

	if (!r)
		return;
	/* The context ends: parked paths go now, port or no port. */
	parked_release(r, NULL, 0);
	reaper_free(r);
	if (r->ch) {
		rift__io_stop(ctx, &r->io);
		rift__vb_channel_destroy(r->ch);
	}
	free(r->sel);
	cq_devs_free(r);
	for (int i = 0; i < r->n_watch; i++) {
		rift__io_stop(ctx, &r->watch[i]->io);
		rift__vb_device_close(r->watch[i]->c);
		free(r->watch[i]);
	}
	if (r->pool) {
		/* Last user: the pool deregisters before the PDs go. */
		rift__pool_put(r->pool);
		dev_users_put();
	}
	free(r);
	ctx->rdma = NULL;
}

static rift_fallback_reason rdma_available(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;

	if (!r) {
		r = rdma_ctx_new(ctx);
		if (!r)
			return RIFT_FALLBACK_NO_DEVICE;
	}
	if (!r->probe_done) {
		r->probed = rift__vb_probe(r->device, sizeof(r->device));
		r->probe_done = true;
	}
	return r->probed;
}

static uint8_t *recv_buf(struct rdma_path *rp, uint32_t i)
{
	return rp->rbufs[i];
}

static uint8_t *slot_buf(struct rdma_path *rp, uint32_t i)
{
	return rp->sbufs[i];
}

static int post_recv(struct rdma_path *rp, uint32_t i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)recv_buf(rp, i),
			       .length = rp->buf_size,
			       .lkey = rp->rlkey[i] };
	struct ibv_recv_wr wr = { .wr_id = WR_TAG(rp) | RECV_FLAG | i,
				  .sg_list = &sge, .num_sge = 1 };
	rift__vb_err err;
	int rc = rift__vb_post_recv(rp->qp, &wr, err);

	if (rc)
		rift__path_failed(&rp->base, rc, "%s", err);
	return rc;
}

/*
 * A port went down (or the device died): fail every path of this context
 * on it now, instead of waiting for its retries to run out.  rxe does not
 * move QPs to error on a port event by itself (LAB.md).
 */
static void watch_cb(rift__io *io, uint32_t revents)
{
	struct dev_watch *w = rift__container_of(io, struct dev_watch, io);
	struct rift__rdma_ctx *r = w->ctx->rdma;
	enum ibv_event_type type = IBV_EVENT_DEVICE_FATAL;
	int port = 0; /* set by rift__vb_async_get (LTO cannot tell) */

	RIFT_UNUSED(revents);
	while (rift__vb_async_get(w->c, &type, &port) == 0) {
		struct rift__list *it, *next;
		bool fatal = type == IBV_EVENT_DEVICE_FATAL;

		free(r->sel);
		r->sel = NULL;

		RIFT_DEBUG("%s port %d: %s", rift__vb_device_name(w->dev), port,
			   rift__vb_event_str(type));
		if (type == IBV_EVENT_PORT_ACTIVE || fatal)
			parked_release(r, w->dev, fatal ? 0 : port);
		if (type != IBV_EVENT_PORT_ERR && !fatal)
			continue; /* PORT_ACTIVE: new paths may use it again */
		for (it = r->paths.next; it != &r->paths; it = next) {
			struct rdma_path *rp = rift__list_entry(
				it, struct rdma_path, poll_node);

			next = it->next;
			if (rp->base.state == RIFT_PATH_DEAD || !rp->verbs ||
			    rp->verbs->device != w->dev ||
			    (!fatal && rp->port_num != port))
				continue;
			rift__path_failed(&rp->base,
					  fatal ? RIFT_ENODEV : RIFT_ENETDOWN,
					  "%s port %d: %s",
					  rift__vb_device_name(w->dev), port,
					  rift__vb_event_str(type));
		}
	}
}

/* Listen for the device's events on this context (once per device). */
static void watch_device(rift_ctx *ctx, struct ibv_device *dev)
{
	struct rift__rdma_ctx *r = ctx->rdma;
	struct dev_watch *w;
	rift__vb_err err;

	for (int i = 0; i < r->n_watch; i++)
		if (r->watch[i]->dev == dev)
			return;
	if (r->n_watch == RIFT_POOL_MAX_DEVICES)
		return;
	w = calloc(1, sizeof(*w));
	if (!w)
		return;
	w->ctx = ctx;
	w->dev = dev;
	/* Without events, failures still show through the QP's retries:
	 * a watch that cannot be set up is not fatal. */
	if (rift__vb_device_open(dev, &w->c, err) ||
	    rift__vb_async_setup(w->c, err) ||
	    rift__io_start(ctx, &w->io, w->c->async_fd, EPOLLIN, watch_cb)) {
		RIFT_DEBUG("no port events for %s: %s",
			   rift__vb_device_name(dev), err);
		if (w->c)
			rift__vb_device_close(w->c);
		free(w);
		return;
	}
	r->watch[r->n_watch++] = w;
}

/* ---- shared completion queues ---- */

/*
 * rdma.cq_size is the size of each shared CQ: made with that many entries
 * (at least one path's need, at most the device's max_cqe), and given as
 * many paths as their needs fit in what the device really made (drivers
 * round up).  A CQ whose last holder leaves is destroyed unless it is the
 * device's only one: a context that reconnects reuses it.
 */

/*
 * Which CQs are rift's, process-wide, for IBV_EVENT_CQ_ERR.  It arrives on
 * the async fd of the device context librdmacm opened (the one the CQs
 * and QPs live on), which every rift context with CQs there watches;
 * whichever reads the event flags the CQ and wakes its context through
 * note_fd.  ibv_destroy_cq waits until the event is acknowledged, so the
 * CQ and its context outlive the reader's look.  The lock is taken when a
 * CQ is made or destroyed and on such events, never per completion.
 */
static pthread_mutex_t cqreg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shared_cq **cqreg;
static size_t cqreg_n, cqreg_cap;

static bool cqreg_add(struct shared_cq *s)
{
	bool ok = true;

	pthread_mutex_lock(&cqreg_mu);
	if (cqreg_n == cqreg_cap) {
		size_t cap = cqreg_cap ? 2 * cqreg_cap : 16;
		struct shared_cq **v = realloc(cqreg, cap * sizeof(*v));

		if (v) {
			cqreg = v;
			cqreg_cap = cap;
		}
	}
	if (cqreg_n < cqreg_cap)
		cqreg[cqreg_n++] = s;
	else
		ok = false;
	pthread_mutex_unlock(&cqreg_mu);
	return ok;
}

static void cqreg_del(struct shared_cq *s)
{
	pthread_mutex_lock(&cqreg_mu);
	for (size_t i = 0; i < cqreg_n; i++)
		if (cqreg[i] == s) {
			cqreg[i] = cqreg[--cqreg_n];
			break;
		}
	if (cqreg_n == 0) {
		free(cqreg);
		cqreg = NULL;
		cqreg_cap = 0;
	}
	pthread_mutex_unlock(&cqreg_mu);
}

/*
 * The CQ overflowed (or can no longer be polled): completions are lost,
 * so no path on it can go on.  Every one fails now, with the reason; the
 * sessions re-attach on new paths (on another CQ: this one takes no one
 * any more and goes with its last holder).
 */
static void cq_fail(struct shared_cq *s, const char *why)
{
	struct rift__list *it;

	if (s->failed)
		return;
	s->failed = true;
	RIFT_DEBUG("%s: shared CQ of %u paths failed: %s",
		   rift__vb_device_name(s->dev->verbs->device), s->holders,
		   why);
	for (it = s->users.next; it != &s->users; it = it->next) {
		struct rdma_path *rp = rift__list_entry(it, struct rdma_path,
							cq_node);

		if (rp->base.state != RIFT_PATH_DEAD)
			rift__path_failed(&rp->base, RIFT_EIO,
					  "%s: %s; every connection on that "
					  "completion queue fails",
					  rift__vb_device_name(
						  s->dev->verbs->device),
					  why);
	}
}

/* note_fd: a CQ of this context was flagged (by any context's reader). */
static void note_cb(rift__io *io, uint32_t revents)
{
	struct rift__rdma_ctx *r = rift__container_of(io, struct rift__rdma_ctx,
						      note_io);
	struct rift__list *it;
	uint64_t v;

	RIFT_UNUSED(revents);
	if (read(r->note_fd, &v, sizeof(v)) < 0)
		RIFT_DEBUG("CQ error note: read: %s", strerror(errno));
	for (it = r->cqs.next; it != &r->cqs; it = it->next) {
		struct shared_cq *s = rift__list_entry(it, struct shared_cq,
						       node);

		if (__atomic_load_n(&s->overflow, __ATOMIC_ACQUIRE))
			cq_fail(s, "completion queue overflow "
				   "(IBV_EVENT_CQ_ERR)");
	}
}

/*
 * Async events of librdmacm's device context.  Only CQ errors are acted
 * on here: port events reach every context through its own watch
 * (watch_device), and a QP's failure shows in its completions.  Every
 * event read is acknowledged (ibv_destroy_* wait for that).
 */
static void cq_async_cb(rift__io *io, uint32_t revents)
{
	struct cq_dev *d = rift__container_of(io, struct cq_dev, async_io);
	struct ibv_async_event ev;

	RIFT_UNUSED(revents);
	while (rift__vb_async_next(d->verbs, &ev) == 0) {
		RIFT_DEBUG("%s: async event %s",
			   rift__vb_device_name(d->verbs->device),
			   rift__vb_event_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_CQ_ERR) {
			pthread_mutex_lock(&cqreg_mu);
			for (size_t i = 0; i < cqreg_n; i++) {
				struct shared_cq *s = cqreg[i];
				uint64_t one = 1;

				if (s->cq != ev.element.cq)
					continue;
				__atomic_store_n(&s->overflow, 1,
						 __ATOMIC_RELEASE);
				if (write(s->dev->r->note_fd, &one,
					  sizeof(one)) < 0)
					RIFT_DEBUG("CQ error note: write: %s",
						   strerror(errno));
			}
			pthread_mutex_unlock(&cqreg_mu);
		}
		rift__vb_async_ack(&ev);
	}
}

static void cq_event_cb(rift__io *io, uint32_t revents);

static struct cq_dev *cq_dev_get(struct rift__rdma_ctx *r,
				 struct ibv_context *verbs, char *err,
				 size_t errlen)
{
	rift_ctx *ctx = r->ctx;
	struct cq_dev *d;
	rift__vb_err verr;

	for (int i = 0; i < r->n_cqdev; i++)
		if (r->cqdev[i]->verbs == verbs)
			return r->cqdev[i];
	if (r->n_cqdev == RIFT_POOL_MAX_DEVICES) {
		snprintf(err, errlen, "more than %d RDMA devices",
			 RIFT_POOL_MAX_DEVICES);
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->r = r;
	d->ctx = ctx;
	d->verbs = verbs;
	pthread_mutex_lock(&dev_mu);
	for (int i = 0; i < n_devs; i++)
		if (devs[i].verbs == verbs)
			d->max_cqe = devs[i].max_cqe;
	pthread_mutex_unlock(&dev_mu);
	if (rift__vb_comp_channel_create(verbs, &d->cch, verr)) {
		snprintf(err, errlen, "%s", verr);
		free(d);
		return NULL;
	}
	if (rift__io_start(ctx, &d->cch_io, d->cch->fd, EPOLLIN, cq_event_cb)) {
		snprintf(err, errlen, "epoll: cannot watch the completion "
				      "channel");
		rift__vb_comp_channel_destroy(d->cch);
		free(d);
		return NULL;
	}
	d->cch_on = true;
	/* CQ overflows are reported on the device's async fd.  Watching it
	 * is best effort: the QPs' own errors still show without it. */
	if (r->note_fd < 0) {
		r->note_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (r->note_fd >= 0 &&
		    rift__io_start(ctx, &r->note_io, r->note_fd, EPOLLIN,
				   note_cb)) {
			close(r->note_fd);
			r->note_fd = -1;
		}
	}
	if (r->note_fd >= 0 && !rift__vb_async_setup(verbs, verr) &&
	    !rift__io_start(ctx, &d->async_io, verbs->async_fd, EPOLLIN,
			    cq_async_cb))
		d->async_on = true;
	else
		RIFT_DEBUG("%s: CQ errors not watched",
			   rift__vb_device_name(verbs->device));
	r->cqdev[r->n_cqdev++] = d;
	return d;
}

static void cq_destroy(struct rift__rdma_ctx *r, struct shared_cq *s)
{
	cqreg_del(s);
	rift__vb_cq_destroy(s->cq);
	rift__list_del(&s->node);
	s->dev->n_cqs--;
	r->ctx->stats.cqs--;
	free(s);
}

/*
 * Room for need completions on a shared CQ of the device: one that has it,
 * or a new one.  0, or RIFT_E* with err.
 */
static int cq_reserve(rift_ctx *ctx, struct ibv_context *verbs, uint32_t need,
		      struct shared_cq **out, char *err, size_t errlen)
{
	struct rift__rdma_ctx *r = ctx->rdma;
	struct rift__list *it;
	struct shared_cq *s = NULL;
	struct cq_dev *d = cq_dev_get(r, verbs, err, errlen);
	rift__vb_err verr;
	uint32_t n;

	if (!d)
		return RIFT_ENOMEM;
	for (it = r->cqs.next; it != &r->cqs; it = it->next) {
		struct shared_cq *c = rift__list_entry(it, struct shared_cq,
						       node);

		if (c->dev == d && !c->failed && c->cap - c->used >= need) {
			s = c;
			break;
		}
	}
	if (!s) {
		n = ctx->cfg.cq_size < need ? need : ctx->cfg.cq_size;
		if (d->max_cqe && n > d->max_cqe)
			n = d->max_cqe;
		if (n < need) {
			snprintf(err, errlen,
				 "rdma.sq_depth + rdma.rq_depth (%u completions "
				 "a connection may have outstanding) exceed the "
				 "largest completion queue %s makes (max_cqe "
				 "%u)",
				 need, rift__vb_device_name(verbs->device),
				 d->max_cqe);
			return RIFT_EINVAL;
		}
		s = calloc(1, sizeof(*s));
		if (!s) {
			snprintf(err, errlen, "out of memory");
			return RIFT_ENOMEM;
		}
		rift__list_init(&s->users);
		s->dev = d;
		if (rift__vb_cq_create(verbs, &n, s, d->cch, &s->cq, verr) ||
		    rift__vb_cq_arm(s->cq, verr)) {
			snprintf(err, errlen, "%s", verr);
			rift__vb_cq_destroy(s->cq);
			free(s);
			return RIFT_ENOMEM;
		}
		s->cap = n;
		s->armed = true;
		if (!cqreg_add(s))
			RIFT_DEBUG("shared CQ: overflow events not watched");
		rift__list_add_tail(&r->cqs, &s->node);
		d->n_cqs++;
		ctx->stats.cqs++;
		RIFT_DEBUG("%s: shared CQ %u of %u entries",
			   rift__vb_device_name(verbs->device), d->n_cqs,
			   s->cap);
	}
	s->used += need;
	s->holders++;
	*out = s;
	return 0;
}

/*
 * A holder leaves.  With a QP destroyed just now its completions may still
 * sit in the CQ (a provider that does not clean them out), so its share
 * stays taken until a poll finds the CQ empty.
 */
static void cq_release(struct rift__rdma_ctx *r, struct shared_cq *s,
		       uint32_t need, bool had_qp)
{
	s->holders--;
	if (had_qp)
		s->stale += need;
	else
		s->used -= need;
	/* Destroying a CQ drops whatever it still holds. */
	if (s->holders == 0 && (s->failed || s->dev->n_cqs > 1))
		cq_destroy(r, s);
}

static void cq_devs_free(struct rift__rdma_ctx *r)
{
	while (!rift__list_empty(&r->cqs))
		cq_destroy(r, rift__list_entry(r->cqs.next, struct shared_cq,
					       node));
	for (int i = 0; i < r->n_cqdev; i++) {
		struct cq_dev *d = r->cqdev[i];

		if (d->cch_on)
			rift__io_stop(r->ctx, &d->cch_io);
		if (d->async_on)
			rift__io_stop(r->ctx, &d->async_io);
		rift__vb_comp_channel_destroy(d->cch);
		free(d);
	}
	r->n_cqdev = 0;
	if (r->note_fd >= 0) {
		rift__io_stop(r->ctx, &r->note_io);
		close(r->note_fd);
		r->note_fd = -1;
	}
	free(r->qpt);
	r->qpt = NULL;
}

/* ---- (device, QP number) -> path: completions find their path ---- */

static inline uint32_t qpt_slot(uint32_t qpn, uint32_t mask)
{
	uint32_t h = qpn * 0x9e3779b1u;

	return (h ^ (h >> 15)) & mask;
}

static int qpt_add(struct rift__rdma_ctx *r, struct rdma_path *rp)
{
	uint32_t i;

	if (!r->qpt || r->qpt_n >= r->qpt_mask + 1) {
		uint32_t n = r->qpt ? 2 * (r->qpt_mask + 1) : 64;
		struct rdma_path **t = calloc(n, sizeof(*t));

		if (!t)
			return RIFT_ENOMEM;
		for (uint32_t k = 0; r->qpt && k <= r->qpt_mask; k++)
			while (r->qpt[k]) {
				struct rdma_path *e = r->qpt[k];

				r->qpt[k] = e->hnext;
				i = qpt_slot(e->qpn, n - 1);
				e->hnext = t[i];
				t[i] = e;
			}
		free(r->qpt);
		r->qpt = t;
		r->qpt_mask = n - 1;
	}
	i = qpt_slot(rp->qpn, r->qpt_mask);
	rp->hnext = r->qpt[i];
	r->qpt[i] = rp;
	r->qpt_n++;
	rp->hashed = true;
	return 0;
}

static void qpt_del(struct rift__rdma_ctx *r, struct rdma_path *rp)
{
	struct rdma_path **pp;

	if (!rp->hashed)
		return;
	for (pp = &r->qpt[qpt_slot(rp->qpn, r->qpt_mask)]; *pp;
	     pp = &(*pp)->hnext)
		if (*pp == rp) {
			*pp = rp->hnext;
			r->qpt_n--;
			break;
		}
	rp->hashed = false;
}

/*
 * The live path a completion of a CQ on device d belongs to, or NULL: its
 * QP is gone, or the QP number is another path's now (the tag in wr_id
 * says).  QP numbers are per device: two devices of a context (the pair
 * topology's client and server ends) may both have a QP 17.
 */
static RIFT_HOT_INLINE struct rdma_path *wc_path(struct rift__rdma_ctx *r,
						 const struct cq_dev *d,
						 const struct ibv_wc *w)
{
	struct rdma_path *rp;

	if (!r->qpt)
		return NULL;
	for (rp = r->qpt[qpt_slot(w->qp_num, r->qpt_mask)]; rp; rp = rp->hnext)
		if (rp->qpn == w->qp_num && rp->scq->dev == d)
			return rp->tag == WR_TAG_OF(w->wr_id) ? rp : NULL;
	return NULL;
}

static uint32_t tag_next(struct rift__rdma_ctx *r)
{
	r->next_tag = (r->next_tag + 1) & TAG_MASK;
	if (r->next_tag == 0)
		r->next_tag = 1;
	return r->next_tag;
}

/* ---- path resources: made on demand or prepared ahead ---- */

/* Take n blocks of the pool for one use, with their keys on the device. */
static int take_blocks(struct rift__pool *pool, struct qp_res *r,
		       uint8_t **bufs, uint32_t *lkeys, uint32_t n,
		       enum rift__pool_use use, char *err, size_t errlen)
{
	uint32_t rkey;
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		bufs[i] = rift__pool_alloc(pool, r->buf_size, use, &rc, err,
					   errlen);
		if (!bufs[i])
			return rc;
		if (!rift__pool_keys(pool, bufs[i], r->dev_slot, &lkeys[i],
				     &rkey)) {
			snprintf(err, errlen, "pool block without a key");
			return RIFT_EIO;
		}
	}
	return 0;
}

static void res_free(rift_ctx *ctx, struct qp_res *r)
{
	struct rift__pool *pool = ctx->rdma->pool;

	rift__vb_qp_destroy(r->qp);
	if (r->scq)
		cq_release(ctx->rdma, r->scq, r->need, r->qp != NULL);
	/* The QP is gone, so no DMA touches the blocks any more. */
	for (uint32_t i = 0; r->rbufs && i < r->rq_depth; i++)
		if (r->rbufs[i])
			rift__pool_free(pool, r->rbufs[i], RIFT_POOL_RECV);
	for (uint32_t i = 0; r->sbufs && i < r->sq_depth; i++)
		if (r->sbufs[i])
			rift__pool_free(pool, r->sbufs[i], RIFT_POOL_SEND);
	free(r->rbufs);
	free(r->sbufs);
	free(r->rlkey);
	free(r->slkey);
	memset(r, 0, sizeof(*r));
}

/* The QP (RESET) to INIT on port: receives may be posted from here on. */
static int qp_to_init(struct ibv_qp *qp, uint8_t port, rift__vb_err err)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	return rift__vb_qp_modify(qp, &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				  "INIT", err);
}

static int post_all(struct qp_res *r, char *err, size_t errlen)
{
	rift__vb_err verr;

	for (uint32_t i = 0; i < r->rq_depth; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)r->rbufs[i],
				       .length = r->buf_size,
				       .lkey = r->rlkey[i] };
		struct ibv_recv_wr wr = {
			.wr_id = (uint64_t)r->tag << TAG_SHIFT | RECV_FLAG | i,
			.sg_list = &sge, .num_sge = 1 };
		int rc = rift__vb_post_recv(r->qp, &wr, verr);

		if (rc) {
			snprintf(err, errlen, "%s", verr);
			return rc;
		}
	}
	r->posted = true;
	return 0;
}

/*
 * Everything but the connection: room on a shared CQ, buffers and
 * (with_qp: cm=tcp, or an rdmacm accept) the QP in INIT on port with its
 * receives posted.  0, or RIFT_E* with err and
 * *fb (the fallback reason) set and nothing left behind.
 */
static int res_make(rift_ctx *ctx, struct ibv_context *verbs, uint8_t port,
		    bool with_qp, struct qp_res *r, rift_fallback_reason *fb,
		    char *err, size_t errlen)
{
	rift_config *cfg = &ctx->cfg;
	struct rift__pool *pool = ctx->rdma->pool;
	struct rift__vb_qp_caps caps = {
		.sq_depth = cfg->sq_depth,
		.rq_depth = cfg->rq_depth,
		.max_send_sge = cfg->max_send_sge,
		.max_recv_sge = cfg->max_recv_sge,
		.inline_max = cfg->inline_threshold,
	};
	rift__vb_err verr;
	int rc, d;

	memset(r, 0, sizeof(*r));
	rift__list_init(&r->node);
	r->verbs = verbs;
	r->port = port;
	r->buf_size = cfg->block_size[0];
	r->rq_depth = cfg->rq_depth;
	r->sq_depth = cfg->sq_depth;
	r->inline_max = cfg->inline_threshold;
	*fb = RIFT_FALLBACK_REG_MR;
	rc = dev_pd(pool, verbs, &d, err, errlen);
	if (rc)
		return rc;
	r->pd = devs[d].pd;
	r->dev_slot = devs[d].slot;
	*fb = RIFT_FALLBACK_NONE;
	/* Sends and READs share the send slots: sq_depth + rq_depth is all
	 * a QP can have completing at once. */
	r->need = r->sq_depth + r->rq_depth;
	r->tag = tag_next(ctx->rdma);
	rc = cq_reserve(ctx, verbs, r->need, &r->scq, err, errlen);
	if (rc)
		goto fail;
	if (with_qp) {
		rc = rift__vb_qp_create(r->pd, r->scq->cq, &caps, &r->qp, verr);
		if (!rc) {
			r->inline_max = caps.inline_max;
			rc = qp_to_init(r->qp, port, verr);
		}
	}
	if (rc) {
		snprintf(err, errlen, "%s", verr);
		goto fail;
	}
	r->rbufs = calloc(r->rq_depth, sizeof(*r->rbufs));
	r->rlkey = calloc(r->rq_depth, sizeof(*r->rlkey));
	r->sbufs = calloc(r->sq_depth, sizeof(*r->sbufs));
	r->slkey = calloc(r->sq_depth, sizeof(*r->slkey));
	if (!r->rbufs || !r->rlkey || !r->sbufs || !r->slkey) {
		snprintf(err, errlen, "out of memory for buffers");
		rc = RIFT_ENOMEM;
		goto fail;
	}
	*fb = RIFT_FALLBACK_REG_MR;
	rc = take_blocks(pool, r, r->rbufs, r->rlkey, r->rq_depth,
			 RIFT_POOL_RECV, err, errlen);
	if (!rc)
		rc = take_blocks(pool, r, r->sbufs, r->slkey, r->sq_depth,
				 RIFT_POOL_SEND, err, errlen);
	if (rc)
		goto fail;
	*fb = RIFT_FALLBACK_NONE;
	if (r->qp) {
		rc = post_all(r, err, errlen);
		if (rc)
			goto fail;
	}
	return 0;

fail:
	res_free(ctx, r);
	return rc;
}

static void pool_schedule(struct rdma_listener *rl, uint64_t delay_ms);

/*
 * A prepared resource set for (verbs, port), or NULL.  The pool follows
 * the device and port connections arrive on: a miss on another retargets
 * it (a wildcard listener learns its device from the first accept).  Both
 * cm modes hold QPs in INIT, and INIT binds a QP to its port.
 */
static bool pool_take(struct rdma_listener *rl, struct ibv_context *verbs,
		      uint8_t port, struct qp_res *out)
{
	rift_ctx *ctx = rl->l->ctx;
	struct rift__list *it;

	if (!ctx->cfg.qp_pool_count)
		return false;
	for (it = rl->prep.next; it != &rl->prep;) {
		struct qp_res *r = rift__list_entry(it, struct qp_res, node);

		it = it->next;
		if (r->scq->failed) {
			/* Its CQ overflowed: of no use any more. */
			rift__list_del(&r->node);
			rl->n_prep--;
			res_free(ctx, r);
			free(r);
			continue;
		}
		if (r->verbs == verbs && r->port == port) {
			rift__list_del(&r->node);
			rl->n_prep--;
			*out = *r;
			rift__list_init(&out->node);
			free(r);
			ctx->stats.qp_pool_hits++;
			pool_schedule(rl, 0);
			return true;
		}
	}
	ctx->stats.qp_pool_misses++;
	if (rl->prep_verbs != verbs || rl->prep_port != port) {
		while (!rift__list_empty(&rl->prep)) {
			struct qp_res *r = rift__list_entry(rl->prep.next,
							    struct qp_res, node);

			rift__list_del(&r->node);
			res_free(ctx, r);
			free(r);
		}
		rl->n_prep = 0;
		rl->prep_verbs = verbs;
		rl->prep_port = port;
		rl->refill_fails = 0;
	}
	pool_schedule(rl, 0);
	return false;
}

/*
 * Refill from the loop, a few sets a round so a large pool does not stall
 * it; a failure (pool share used up, device gone) backs off.
 */
#define REFILL_PER_ROUND 4

static void refill_cb(rift_timer *t, void *user)
{
	struct rdma_listener *rl = user;
	rift_ctx *ctx = rl->l->ctx;
	char err[RIFT_ERRMSG_LEN];

	RIFT_UNUSED(t);
	for (int k = 0; k < REFILL_PER_ROUND &&
			rl->n_prep < ctx->cfg.qp_pool_count && rl->prep_verbs;
	     k++) {
		struct qp_res *r = malloc(sizeof(*r));
		rift_fallback_reason fb;

		if (!r || res_make(ctx, rl->prep_verbs, rl->prep_port, true, r,
				   &fb, err, sizeof(err))) {
			RIFT_DEBUG("prepared-QP pool: %s",
				   r ? err : "out of memory");
			free(r);
			rl->refill_fails++;
			pool_schedule(rl, rl->refill_fails < 10
						  ? 100u << rl->refill_fails
						  : 60000);
			return;
		}
		rl->refill_fails = 0;
		rift__list_add_tail(&rl->prep, &r->node);
		rl->n_prep++;
		ctx->stats.qp_pool_prepared++;
	}
	if (rl->n_prep < ctx->cfg.qp_pool_count && rl->prep_verbs)
		pool_schedule(rl, 0);
}

static void pool_schedule(struct rdma_listener *rl, uint64_t delay_ms)
{
	if (rl->l->ctx->cfg.qp_pool_count && rl->prep_verbs &&
	    !rift__timer_active(&rl->refill))
		rift_timer_start(&rl->refill, delay_ms, 0);
}

static void pool_init(struct rdma_listener *rl, struct ibv_context *verbs,
		      uint8_t port)
{
	rift__list_init(&rl->prep);
	rift__timer_init(rl->l->ctx, &rl->refill, refill_cb, rl);
	rl->prep_verbs = verbs;
	rl->prep_port = port;
	pool_schedule(rl, 0);
}

static void pool_free(struct rdma_listener *rl)
{
	rift_timer_stop(&rl->refill);
	while (!rift__list_empty(&rl->prep)) {
		struct qp_res *r = rift__list_entry(rl->prep.next,
						    struct qp_res, node);

		rift__list_del(&r->node);
		res_free(rl->l->ctx, r);
		free(r);
	}
	rl->n_prep = 0;
}

/*
 * QP, CQ, buffers from the registered pool and posted receives: everything
 * a path needs before rdma_connect / rdma_accept, or before its bootstrap
 * (cm=tcp).  rp->verbs and rp->port_num say where.  A listener's prepared
 * set is used when it has one for that device.  Fails the path.
 */
static int path_resources(struct rdma_path *rp, struct rdma_listener *rl)
{
	rift__path *p = &rp->base;
	rift_config *cfg = &p->ctx->cfg;
	/* Ours (cm=tcp, or accepting), or rdma_create_qp's (connecting). */
	bool own = rp->tc != NULL || rl != NULL;
	struct qp_res r;
	rift_fallback_reason fb = RIFT_FALLBACK_NONE;
	char err[RIFT_ERRMSG_LEN];
	rift__vb_err verr;
	int rc = 0;

	if (!rl || !pool_take(rl, rp->verbs, rp->port_num, &r))
		rc = res_make(p->ctx, rp->verbs, rp->port_num, own, &r, &fb,
			      err, sizeof(err));
	if (rc) {
		p->fb_reason = fb;
		rift__path_failed(p, rc, "%s", err);
		return rc;
	}
	/* From here the path owns the set: its destruction frees it. */
	rp->pd = r.pd;
	rp->dev_slot = r.dev_slot;
	rp->scq = r.scq;
	rp->cq_need = r.need;
	rp->tag = r.tag;
	rift__list_add_tail(&r.scq->users, &rp->cq_node);
	p->ctx->rdma->cq_paths++;
	rift__list_add_tail(&p->ctx->rdma->paths, &rp->poll_node);
	rp->qp = r.qp;
	rp->user_qp = rp->id && r.qp;
	rp->rbufs = r.rbufs;
	rp->rlkey = r.rlkey;
	rp->sbufs = r.sbufs;
	rp->slkey = r.slkey;
	rp->buf_size = r.buf_size;
	rp->rq_depth = r.rq_depth;
	rp->sq_depth = r.sq_depth;
	rp->inline_max = r.inline_max;
	{
		uint8_t rd, init;
		uint32_t max_msg;
		bool mw;

		/* One depth both ways: READs we issue, READs we serve. */
		dev_atoms(rp->verbs, &rd, &init, &max_msg, &mw);
		rp->rd_max = init < RNDV_DEPTH ? init : RNDV_DEPTH;
		if (rd < rp->rd_max)
			rp->rd_max = rd;
		rp->rd_chunk = max_msg < RNDV_CHUNK ? max_msg : RNDV_CHUNK;
		rp->rndv_local = rp->rd_max > 0 && rp->rd_chunk >= 4096;
		/* Serving READs takes a memory window per message. */
		rp->rndv_serve = rp->rndv_local && mw;
	}
	watch_device(p->ctx, rp->verbs->device);
	rp->slots = calloc(rp->sq_depth, sizeof(*rp->slots));
	rp->pend = calloc(rp->rq_depth, sizeof(*rp->pend));
	rp->pend_len = calloc(rp->rq_depth, sizeof(*rp->pend_len));
	rp->repost = calloc(rp->rq_depth, sizeof(*rp->repost));
	if (!rp->slots || !rp->pend || !rp->pend_len || !rp->repost) {
		rift__path_failed(p, RIFT_ENOMEM, "out of memory for buffers");
		return RIFT_ENOMEM;
	}
	/* Consumed buffers go back in lists of a sixteenth of the queue (at
	 * most 32, the most one post takes): one ibv_post_recv per list,
	 * not per message.  The peer then has at most that many credits
	 * fewer than buffers we could post: it still has fifteen
	 * sixteenths of the queue to send into. */
	rp->repost_batch = rp->rq_depth / 16;
	if (rp->repost_batch > 32)
		rp->repost_batch = 32;
	if (rp->repost_batch == 0)
		rp->repost_batch = 1;
	rp->send_wr = (struct ibv_send_wr){ .sg_list = &rp->send_sge,
					    .num_sge = 1,
					    .opcode = IBV_WR_SEND_WITH_IMM };
	if (!rp->qp) {
		struct rift__vb_qp_caps caps = {
			.sq_depth = cfg->sq_depth,
			.rq_depth = cfg->rq_depth,
			.max_send_sge = cfg->max_send_sge,
			.max_recv_sge = cfg->max_recv_sge,
			.inline_max = cfg->inline_threshold,
		};

		rc = rift__vb_qp_create_cm(rp->id, rp->pd, rp->scq->cq, &caps,
					   verr);
		if (rc) {
			rift__path_failed(p, rc, "%s", verr);
			return rc;
		}
		rp->qp = rp->id->qp;
		rp->inline_max = caps.inline_max;
	}
	rp->qpn = rp->qp->qp_num;
	if (qpt_add(p->ctx->rdma, rp)) {
		rift__path_failed(p, RIFT_ENOMEM, "out of memory for the QP "
				  "table");
		return RIFT_ENOMEM;
	}
	rp->slots_free = rp->sq_depth;
	if (!r.posted)
		for (uint32_t i = 0; i < rp->rq_depth; i++) {
			rc = post_recv(rp, i);
			if (rc)
				return rc;
		}
	return 0;
}

static void hello_fill(struct rdma_path *rp, struct cm_hello *h)
{
	h->magic = htonl(HELLO_MAGIC);
	h->version = htons(HELLO_VERSION);
	h->flags = htons((rp->rndv_local ? HELLO_F_RNDV : 0) | HELLO_F_BARE);
	h->rq_depth = htonl(rp->rq_depth);
	h->buf_size = htonl(rp->buf_size);
}

/* Check the peer's hello; a peer that advertises nonsense is refused. */
static const char *hello_check(struct rdma_path *rp, const void *data,
			       uint8_t len)
{
	struct cm_hello h;

	if (!data || len < sizeof(h))
		return "connection without rift's hello";
	memcpy(&h, data, sizeof(h));
	if (ntohl(h.magic) != HELLO_MAGIC)
		return "hello with a bad magic number";
	if (ntohs(h.version) != HELLO_VERSION)
		return "hello of an unsupported version";
	if (ntohl(h.rq_depth) < 2 || ntohl(h.rq_depth) > 65536)
		return "hello advertises an impossible receive depth";
	if (ntohl(h.buf_size) < 64 || ntohl(h.buf_size) > (64u << 20))
		return "hello advertises an impossible buffer size";
	rp->credits = ntohl(h.rq_depth);
	rp->peer_buf = ntohl(h.buf_size);
	rp->peer_rndv = (ntohs(h.flags) & HELLO_F_RNDV) != 0;
	rp->peer_bare = (ntohs(h.flags) & HELLO_F_BARE) != 0;
	return NULL;
}

static struct rdma_path *path_new(rift_ctx *ctx, bool is_client)
{
	struct rdma_path *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	if (rift__stream_init(&rp->rx, ctx->cfg.tcp_read_buffer)) {
		free(rp);
		return NULL;
	}
	rp->kind = OWNER_PATH;
	rift__list_init(&rp->poll_node);
	rift__list_init(&rp->binds);
	rift__list_init(&rp->cq_node);
	rift__path_init(&rp->base, ctx, &rift__rdma_ops, is_client);
	return rp;
}

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
static bool rndv_wanted(struct rdma_path *rp, struct rift__omsg *m,
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
 * The window a peer READs a rendezvous message through: bound over that
 * message alone, on this path's QP, by a BIND_MW work request posted in
 * front of the descriptor's SEND; held on the buffer until it is freed
 * (acknowledged, or the session over) or the path goes, whichever comes
 * first, and deallocated then (no READ goes through it after that).
 */
struct rndv_bind {
	struct rift__hold hold; /* on the buffer (first: container_of) */
	struct rift__list node; /* rp->binds */
	struct rift__buf *b;
	struct ibv_mw *mw;
};

static void bind_free(struct rndv_bind *bd)
{
	struct rift__hold **pp;

	rift__vb_mw_free(bd->mw);
	for (pp = &bd->b->holds; *pp; pp = &(*pp)->next)
		if (*pp == &bd->hold) {
			*pp = bd->hold.next;
			break;
		}
	rift__list_del(&bd->node);
	free(bd);
}

static void bind_release(struct rift__hold *h)
{
	bind_free(rift__container_of(h, struct rndv_bind, hold));
}

/* Free every window bound on this path (it is going away). */
static void binds_free(struct rdma_path *rp)
{
	while (!rift__list_empty(&rp->binds))
		bind_free(rift__list_entry(rp->binds.next, struct rndv_bind,
					   node));
}

/*
 * Fill *wr with the BIND_MW of a window over m (in registration mr, from
 * rndv_wanted), and *rkey with the window's key.  False when no window
 * can be had: this path then streams every message (logged and counted
 * once).
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
		RIFT_DEBUG("%s: rendezvous off on this path, large messages "
			   "stream: %s", rp->base.peer, err);
		free(bd);
		rp->rndv_serve = false;
		rp->base.ctx->stats.rndv_bind_failures++;
		return false;
	}
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
static bool rndv_desc(struct rdma_path *rp, uint8_t *buf,
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
	m = p->conn->cursor;
	if (!m || p->state != RIFT_PATH_ATTACHED || p->conn->closing ||
	    !rndv_wanted(rp, m, &region_rkey, &mr) ||
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
	put_be64(buf + RIFT_HDR_SIZE, (uintptr_t)m->data);
	put_be32(buf + RIFT_HDR_SIZE + 8, rkey);
	put_be32(buf + RIFT_HDR_SIZE + 12, len);
	rift__sess_written(p, m);
	rp->rndv_sent++;
	p->ctx->stats.rndv_sends++;
	return true;
}

/* Cheap look, for every SEND built: may the next message go by
 * rendezvous at all?  (rndv_desc decides.) */
static inline bool rndv_maybe(const struct rdma_path *rp)
{
	const rift__path *p = &rp->base;
	uint32_t thr = p->ctx->cfg.rndv_threshold;

	return thr && rp->peer_rndv && p->conn && p->conn->cursor &&
	       p->conn->cursor->len >= thr;
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

static void rndv_dst_free(struct rdma_path *rp, struct rndv_op *op)
{
	if (op->dst)
		rift__pool_free(rp->base.ctx->rdma->pool, op->dst,
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
	rc = rift__vb_post_send(rp->qp, wrs, err);
	if (rc) {
		rift__path_failed(&rp->base, rc, "%s", err);
		return -1;
	}
	return 0;
}

/* A READ completed (in order: the oldest request not yet done). */
static void rndv_read_done(struct rdma_path *rp, uint32_t slot)
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
 * Receiver: descriptor in receive buffer i (len bytes).  Checks it all
 * before any READ, takes a registered destination and starts fetching.
 * Returns 0 (taken: the buffer may be re-posted), 1 (too many in flight:
 * try again after a delivery) or -1 (the path died).
 */
static int rndv_start(struct rdma_path *rp, uint32_t i, uint32_t len)
{
	rift__path *p = &rp->base;
	rift_ctx *ctx = p->ctx;
	struct rift__pool *pool = ctx->rdma->pool;
	const uint8_t *d = recv_buf(rp, i);
	struct rndv_op *op;
	struct rift__hdr h;
	const char *why = NULL;
	char err[RIFT_ERRMSG_LEN];
	uint64_t raddr;
	uint32_t rkey, dlen, rk;
	int rc;

	if (rp->rndv_n == RNDV_MAX)
		return 1;
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
	if (h.type != RIFT_FRAME_DATA || h.len == 0 || dlen != h.len ||
	    raddr + dlen < raddr) {
		rndv_refuse(rp, "peer advertised a buffer it does not own "
				"(%u bytes at 0x%llx for a %s frame of %u "
				"bytes)",
			    dlen, (unsigned long long)raddr,
			    rift__frame_name(h.type), h.len);
		return -1;
	}
	op = &rp->rndv[(rp->rndv_head + rp->rndv_n) % RNDV_MAX];
	memset(op, 0, sizeof(*op));
	/* A block of the receive share when it fits one; else (or when that
	 * share is used up) a large registered buffer. */
	op->dst = NULL;
	if (h.len <= ctx->cfg.block_size[RIFT_BLOCK_CLASSES - 1])
		op->dst = rift__pool_alloc(pool, h.len, RIFT_POOL_RECV, &rc, err,
					   sizeof(err));
	if (!op->dst)
		op->dst = rift__pool_alloc_large(pool, h.len, RIFT_POOL_RECV, &rc,
						 err, sizeof(err));
	if (!op->dst || !rift__pool_keys(pool, op->dst, rp->dev_slot,
					 &op->lkey, &rk)) {
		if (op->dst)
			rndv_dst_free(rp, op);
		rift__path_failed(p, op->dst ? RIFT_EIO : rc,
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

/* ---- lending registered memory to rift_msg_retain ---- */

/*
 * rift_msg_retain of a message delivered in place, from zero_copy_threshold
 * up: a rendezvous block is handed over as it is; a receive buffer too,
 * with a fresh block of the receive share posted in its place (once per
 * buffer: a second message in it is copied).
 */
static bool lend_take(struct rift__lend *l, size_t len,
		      struct rift__pool **pool, void **block)
{
	struct rdma_lend *rl = rift__container_of(l, struct rdma_lend, base);
	struct rdma_path *rp = rift__container_of(rl, struct rdma_path, lend);
	struct rift__pool *pl = rp->base.ctx->rdma->pool;
	char err[RIFT_ERRMSG_LEN];
	uint32_t lkey, rkey;
	uint8_t *fresh;
	int rc;

	if (len < rp->base.ctx->cfg.zero_copy_threshold)
		return false;
	if (rl->op) {
		if (!rl->op->dst)
			return false;
		*pool = pl;
		*block = rl->op->dst;
		rl->op->dst = NULL; /* not freed after the delivery */
		rp->base.ctx->stats.msgs_retained_in_place++;
		return true;
	}
	if (rp->rbufs[rl->i] != rl->block)
		return false;
	fresh = rift__pool_alloc(pl, rp->buf_size, RIFT_POOL_RECV, &rc, err,
				 sizeof(err));
	if (!fresh)
		return false;
	if (!rift__pool_keys(pl, fresh, rp->dev_slot, &lkey, &rkey)) {
		rift__pool_free(pl, fresh, RIFT_POOL_RECV);
		return false;
	}
	rp->rbufs[rl->i] = fresh; /* posted again in its place */
	rp->rlkey[rl->i] = lkey;
	rp->base.ctx->stats.msgs_retained_in_place++;
	*pool = pl;
	*block = rl->block;
	return true;
}

/* Deliveries from receive buffer i (op NULL) or a rendezvous block. */
static inline void lend_begin(struct rdma_path *rp, uint32_t i,
			      struct rndv_op *op)
{
	rp->lend.base.take = lend_take;
	rp->lend.i = i;
	rp->lend.block = op ? NULL : rp->rbufs[i];
	rp->lend.op = op;
	rp->base.lend = &rp->lend.base;
}

static inline void lend_end(struct rdma_path *rp)
{
	rp->base.lend = NULL;
}

/*
 * Deliver the fetched messages at the head of the ring, in order, in
 * place: the application borrows the destination block until on_recv
 * returns (rift_msg_retain copies it, as for any in-place delivery; so
 * does the session when it holds the message while receiving is stopped).
 * Returns 0, or -1 when the path died.
 */
static int rndv_deliver(struct rdma_path *rp)
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
		rp->rndv_recvd++;
		p->ctx->stats.rndv_recvs++;
		rndv_dst_free(rp, op);
		rp->rndv_head = (rp->rndv_head + 1) % RNDV_MAX;
		rp->rndv_n--;
		if (rc < 0 || p->state == RIFT_PATH_DEAD)
			return -1;
	}
	return rndv_post_reads(rp);
}

/* A READ failed.  A remote access error means the peer's buffer was not
 * what it said: refused.  Anything else is the path failing. */
static void rndv_read_failed(struct rdma_path *rp, struct ibv_wc *w)
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
	rift__path_failed(&rp->base, RIFT_ECONNRESET,
			  "RDMA READ completion error: %s (vendor error 0x%x)",
			  rift__vb_wc_str(w->status), w->vendor_err);
}

/* ---- bare DATA frames (BARE_IMM) ---- */

static void bare_refuse(struct rdma_path *rp, const char *why)
{
	rift__path_failed(&rp->base, RIFT_EPROTO, "bare DATA frame refused: %s",
			  why);
}

/*
 * Receiver: the header of a bare frame of len bytes (pending entry e),
 * from the path's last DATA frame.  Whatever it says is then judged as a
 * header would be (rift__path_on_data: sequence, ack, window).  False,
 * the path failed, for a frame no rift peer sends.
 */
static RIFT_HOT_INLINE bool bare_frame(struct rdma_path *rp, uint32_t len,
				       uint32_t e, struct rift__hdr *h)
{
	const rift__path *p = &rp->base;

	if (__builtin_expect(p->rx_data_seq == 0 ||
				     !rift__stream_idle(&rp->rx) ||
				     len > p->ctx->cfg.max_msg_size,
			     0)) {
		bare_refuse(rp, p->rx_data_seq == 0
					? "before any DATA frame on the path"
				: len > p->ctx->cfg.max_msg_size
					? "above max_msg_size"
					: "inside another frame");
		return false;
	}
	h->type = RIFT_FRAME_DATA;
	h->len = len;
	h->seq = p->rx_data_seq + 1;
	h->ack = p->rx_data_ack + ((e >> BARE_SHIFT) & (BARE_DELTA_MAX - 1));
	return true;
}

/*
 * Sender: may m, the next message, go bare?  The peer takes bare frames,
 * the path's last DATA frame is m's predecessor, and the ack to carry is
 * within BARE_DELTA_MAX of that frame's.  Before rift__sess_next, which
 * makes m the last DATA frame.  *imm is then what the SEND's immediate
 * carries besides credits: BARE_IMM and the ack's delta.
 */
static RIFT_HOT_INLINE bool bare_ok(const struct rdma_path *rp,
				    const struct rift__omsg *m, uint32_t *imm)
{
	const rift__path *p = &rp->base;
	uint64_t d = p->conn->recv_seq - p->tx_data_ack;

	bool ok = rp->peer_bare && p->tx_data_seq &&
		  m->seq == p->tx_data_seq + 1 && d < BARE_DELTA_MAX;

	/* Test builds: play a peer that breaks the rules. */
	if (rift__fault_hit(RIFT_FAULT_BARE_EARLY))
		ok = rp->peer_bare;
	if (ok && rift__fault_hit(RIFT_FAULT_BARE_ACK))
		d = BARE_DELTA_MAX - 1;
	*imm = BARE_IMM | (uint32_t)d << BARE_SHIFT;
	return ok;
}

/* ---- receive side ---- */

/*
 * Feed completed receive buffers into the stream in order.  A buffer whose
 * bytes are all taken is posted again by the flush that follows (its
 * credit comes back then), after the round's sends: a reply the
 * application made to these messages leaves first.
 */
static RIFT_HOT_INLINE int drain_once(struct rdma_path *rp);

static RIFT_HOT_INLINE int drain_recvs(struct rdma_path *rp)
{
	int rc;

	/* A refused frame makes the session flush an ERROR frame from
	 * inside this drain; that flush must not drain again (it would
	 * offer the same frame again, and again). */
	if (rp->draining)
		return 0;
	rp->draining = true;
	rc = drain_once(rp);
	rp->draining = false;
	return rc;
}

static RIFT_HOT_INLINE int drain_once(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	int rc = rp->rndv_n ? rndv_deliver(rp) : 0;

	if (rc)
		return rc;
	while (rp->pend_n) {
		uint32_t e = rp->pend[rp->pend_head];
		uint32_t i = e & PEND_IDX;
		uint32_t len = rp->pend_len[rp->pend_head];
		uint8_t *dst;
		size_t room, n;

		if (e & PEND_RNDV) {
			if (e & PEND_BARE) {
				bare_refuse(rp, "with a rendezvous descriptor");
				return -1;
			}
			/* A descriptor: fetching starts now, so the next ones
			 * can overlap; what follows is delivered after it. */
			rc = rndv_start(rp, i, len);
			if (rc)
				return rc < 0 ? -1 : 0;
			goto next;
		}
		if (rp->rndv_n)
			return 0; /* stream bytes wait for the rendezvous */

		if (rp->pend_off == 0) {
			uint8_t *b = recv_buf(rp, i), *payload = b;
			struct rift__hdr h;

			/* Whole frames go to the application from the
			 * receive buffer itself: no copy.  Most often the
			 * buffer holds one DATA frame, exactly, bare or
			 * with its header. */
			if (e & PEND_BARE) {
				if (!bare_frame(rp, len, e, &h))
					return -1;
			} else if (rift__stream_idle(&rp->rx) &&
				   rift__hdr_data_exact(b, len,
							p->ctx->cfg.max_msg_size,
							&h)) {
				payload = b + RIFT_HDR_SIZE;
			} else {
				payload = NULL;
			}
			if (payload) {
				/* The last one waiting: its reply may go at
				 * once (rdma_send_now). */
				p->send_now = rp->pend_n == 1;
				lend_begin(rp, i, NULL);
				rc = rift__path_on_data(p, &h, payload);
				lend_end(rp);
				p->send_now = false;
				if (__builtin_expect(rp->late_rc != 0, 0)) {
					rift__path_failed(p, rp->late_rc, "%s",
							  rp->late_err);
					rp->late_rc = 0;
					return -1;
				}
				if (rc < 0 || p->state == RIFT_PATH_DEAD)
					return -1;
				n = len;
			} else {
				lend_begin(rp, i, NULL);
				rc = rift__stream_inplace(p, &rp->rx, b, len, &n);
				lend_end(rp);
				if (rc < 0)
					return -1;
			}
			rp->pend_off = (uint32_t)n;
			rp->inplace_bytes += n;
		}
		if (rp->pend_off < len) {
			rift__stream_space(&rp->rx, &dst, &room);
			n = len - rp->pend_off;
			if (n > room)
				n = room;
			memcpy(dst, recv_buf(rp, i) + rp->pend_off, n);
			rp->pend_off += (uint32_t)n;
			rc = rift__stream_commit(p, &rp->rx, n);
			if (rc < 0)
				return -1;
			if (rp->pend_off < len)
				continue; /* the stream took part; more room now */
		}
next:
		rp->pend_head = ring_next(rp->pend_head, rp->rq_depth);
		rp->pend_n--;
		rp->pend_off = 0;
		/* Re-posted by the flush, after the reply's SEND, in one
		 * list; its credit rides on the next SEND. */
		rp->repost[rp->repost_n++] = i;
	}
	return 0;
}

/* ---- send side ---- */

/* Copy stream bytes (owed control frames, then messages) into buf. */
static size_t fill(struct rdma_path *rp, uint8_t *buf, size_t cap)
{
	rift__path *p = &rp->base;
	size_t used = 0;
	uint32_t rkey;
	void *mr;

	while (used < cap) {
		size_t n;

		if (rp->ctrl_off < rp->ctrl_len) {
			n = rp->ctrl_len - rp->ctrl_off;
			if (n > cap - used)
				n = cap - used;
			memcpy(buf + used, rp->ctrl + rp->ctrl_off, n);
			rp->ctrl_off += n;
			used += n;
			continue;
		}
		if (!rp->cur) {
			/* Control frames go between messages, never inside. */
			if (p->pending) {
				rp->ctrl_len = rift__sess_control(p, rp->ctrl,
								  sizeof(rp->ctrl));
				rp->ctrl_off = 0;
				if (rp->ctrl_len)
					continue;
			}
			rp->cur = rift__sess_next(p, NULL);
			rp->cur_off = 0;
			if (!rp->cur)
				break;
			if (rp->cur->len >= p->ctx->cfg.rndv_threshold &&
			    rndv_wanted(rp, rp->cur, &rkey, &mr)) {
				rp->cur = NULL; /* its descriptor goes next */
				break;
			}
		}
		if (rp->cur_off < RIFT_HDR_SIZE) {
			n = RIFT_HDR_SIZE - rp->cur_off;
			if (n > cap - used)
				n = cap - used;
			memcpy(buf + used, rp->cur->hdr + rp->cur_off, n);
		} else {
			size_t off = rp->cur_off - RIFT_HDR_SIZE;

			n = rp->cur->len - off;
			if (n > cap - used)
				n = cap - used;
			memcpy(buf + used, (uint8_t *)rp->cur->data + off, n);
		}
		rp->cur_off += n;
		used += n;
		if (rp->cur_off == RIFT_HDR_SIZE + rp->cur->len) {
			rift__sess_written(p, rp->cur);
			rp->cur = NULL;
		}
	}
	return used;
}

/*
 * Send the next message as a two-piece SEND (header, then payload) from
 * where it lives, when it starts at a frame boundary and fits the peer's
 * receive buffer.  Two kinds:
 *  - small enough to go inline and alone in the queue (request/reply): the
 *    provider copies both pieces into the work request when it is posted,
 *    so they may live anywhere, and the copy into a slot is saved.  Small
 *    messages queued together are packed into one slot by fill instead.
 *  - larger, in a registered block: the NIC reads the payload from there
 *    (zero copy).  The block outlives the send: it is freed only when the
 *    peer acknowledges the message, after the NIC has read it.  The
 *    24-byte frame header is not in registered memory (the buffer's
 *    header lives apart from its block), so it goes from the send slot
 *    this SEND owns anyway (slot, slkey).
 * A message that may go bare (bare_ok) goes as its payload alone: one
 * piece, no header.
 * Returns the SEND's length (0: neither kind), whether it is inline, its
 * SGEs in *nsge (one when the header sits right in front of the payload:
 * a small buffer, the provider then copies one piece; or bare), and the
 * flags its immediate carries in *imm.
 */
static uint32_t direct(struct rdma_path *rp, struct ibv_sge *sge, uint32_t cap,
		       uint8_t *slot, uint32_t slkey, bool *inl, int *nsge,
		       uint32_t *imm)
{
	rift__path *p = &rp->base;
	struct rift__omsg *m;
	struct rift__buf *b;
	uint32_t lkey = 0, rkey, len, bare_imm;
	bool bare;

	if (rp->cur || rp->ctrl_off < rp->ctrl_len || p->pending ||
	    p->ctx->cfg.max_send_sge < 2 || p->state != RIFT_PATH_ATTACHED ||
	    !p->conn || p->conn->closing || !(m = p->conn->cursor) ||
	    RIFT_HDR_SIZE + m->len > cap)
		return 0;
	len = (uint32_t)(RIFT_HDR_SIZE + m->len);
	*inl = len <= rp->inline_max;
	if (*inl) {
		/* The provider copies inline data when posting: the
		 * header may stay where it is. */
		if (m->next)
			return 0;
	} else {
		b = rift__container_of(m, struct rift__buf, om);
		if (!b->pool ||
		    !rift__pool_keys(b->pool, m->data, rp->dev_slot, &lkey,
				     &rkey))
			return 0;
	}
	bare = m->len && bare_ok(rp, m, &bare_imm);
	rift__sess_next(p, NULL); /* m, its header encoded */
	rift__sess_written(p, m);
	if (bare) {
		*imm = bare_imm;
		*inl = m->len <= rp->inline_max;
		rp->bare_sends++;
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)m->data,
					   .length = (uint32_t)m->len,
					   .lkey = lkey };
		*nsge = 1;
		return (uint32_t)m->len;
	}
	if (*inl && (uint8_t *)m->data == m->hdr + RIFT_HDR_SIZE) {
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)m->hdr,
					   .length = len };
		*nsge = 1;
		return len;
	}
	if (*inl) {
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)m->hdr,
					   .length = RIFT_HDR_SIZE };
	} else {
		memcpy(slot, m->hdr, RIFT_HDR_SIZE);
		sge[0] = (struct ibv_sge){ .addr = (uintptr_t)slot,
					   .length = RIFT_HDR_SIZE,
					   .lkey = slkey };
	}
	sge[1] = (struct ibv_sge){ .addr = (uintptr_t)m->data,
				   .length = (uint32_t)m->len,
				   .lkey = lkey };
	*nsge = 2;
	return len;
}

static inline bool has_output(struct rdma_path *rp)
{
	return rp->ctrl_off < rp->ctrl_len || rp->cur ||
	       rift__sess_has_output(&rp->base);
}

/* Post what drain_recvs consumed, up to 32 buffers a call. */
static RIFT_HOT_INLINE int repost_recvs(struct rdma_path *rp)
{
	struct ibv_recv_wr wrs[32];
	struct ibv_sge sges[32];
	uint32_t done = 0;
	rift__vb_err err;
	int rc;

	while (done < rp->repost_n) {
		uint32_t n = rp->repost_n - done;

		if (n > 32)
			n = 32;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t i = rp->repost[done + k];

			sges[k] = (struct ibv_sge){ .addr = (uintptr_t)recv_buf(rp, i),
						    .length = rp->buf_size,
						    .lkey = rp->rlkey[i] };
			wrs[k] = (struct ibv_recv_wr){
				.wr_id = WR_TAG(rp) | RECV_FLAG | i,
				.next = k + 1 < n ? &wrs[k + 1] : NULL,
				.sg_list = &sges[k],
				.num_sge = 1 };
		}
		rc = rift__vb_post_recv(rp->qp, wrs, err);
		if (rc) {
			rift__path_failed(&rp->base, rc, "%s", err);
			return rc;
		}
		done += n;
	}
	rp->to_return += rp->repost_n;
	rp->repost_n = 0;
	return 0;
}

static RIFT_HOT_INLINE void post_sends(struct rdma_path *rp);

/*
 * A READ that makes no progress: rxe (6.1) can leave one waiting for
 * ever after it retransmitted (loss, or a link that came back), without
 * an error, and everything behind it waits too: the stream, the receive
 * buffers, the credits the peer needs even for a PING.  The path then
 * went silent until keepalive_timeout_ms.  A READ has its retry budget
 * to complete or fail (retry_count + 1 ack timeouts without a response);
 * one that has shown nothing for that budget and a keepalive interval
 * more (at least twice the keepalive interval) fails the
 * path, and the session re-attaches.  Checked when the path is flushed,
 * which the keepalive does at least every half interval.
 */
static bool read_stalled(struct rdma_path *rp)
{
	const rift_config *c = &rp->base.ctx->cfg;
	uint64_t budget_us = ((uint64_t)4096 << c->rdma_ack_timeout) / 1000u *
			     (c->rdma_retry_count + 1u) +
			     (uint64_t)c->keepalive_interval_ms * 1000u;
	uint64_t bound_us = (uint64_t)c->keepalive_interval_ms * 2000u;

	if (!rp->rd_inflight)
		return false;
	if (bound_us < budget_us)
		bound_us = budget_us;
	if (rp->base.ctx->now_us - rp->rd_progress_us < bound_us)
		return false;
	rift__path_failed(&rp->base, RIFT_ETIMEDOUT,
			  "RDMA READ made no progress for %llu ms (%u in "
			  "flight)",
			  (unsigned long long)((rp->base.ctx->now_us -
						rp->rd_progress_us) / 1000u),
			  rp->rd_inflight);
	return true;
}

static RIFT_HOT_INLINE void flush_now(struct rdma_path *rp)
{
	rift__path *p = &rp->base;

	if (!rp->established || p->state == RIFT_PATH_DEAD)
		return;
	if (__builtin_expect(rp->rd_inflight != 0, 0) && read_stalled(rp))
		return;
	if ((rp->pend_n || rp->rndv_n) && drain_recvs(rp) < 0)
		return;
	if (rift__fault_hit(RIFT_FAULT_RDMA_SEND)) {
		rift__path_failed(p, RIFT_ECONNRESET,
				  "send: link dropped (fault point)");
		return;
	}
	post_sends(rp);
	if (rp->repost_n < rp->repost_batch || p->state == RIFT_PATH_DEAD ||
	    repost_recvs(rp))
		return;
	/* Enough credits for an update of their own: the next flush (still
	 * this round) sends it if nothing else carries them. */
	if (rp->to_return >= rp->rq_depth / 4)
		rift__path_kick(p);
}

static void rdma_flush(rift__path *p)
{
	flush_now(rp_of(p));
}

/*
 * A SEND in slot takes a credit and the slot, and carries the credits
 * owed back (with flags, e.g. RNDV_IMM) in its immediate.  It asks for a
 * completion every quarter queue, or when slots run low, so slots come
 * back without a completion per send (the completion covers them all).
 */
static RIFT_HOT_INLINE void slot_taken(struct rdma_path *rp,
				       struct ibv_send_wr *wr, uint32_t slot);

static RIFT_HOT_INLINE void send_taken(struct rdma_path *rp,
				       struct ibv_send_wr *wr, uint32_t slot,
				       uint32_t imm)
{
	wr->imm_data = htonl(rp->to_return | imm);
	rp->to_return = 0;
	rp->credits--;
	slot_taken(rp, wr, slot);
}

/* Any work request takes its slot the same way (a BIND_MW too). */
static RIFT_HOT_INLINE void slot_taken(struct rdma_path *rp,
				       struct ibv_send_wr *wr, uint32_t slot)
{
	rp->slots_free--;
	rp->slot_next = ring_next(slot, rp->sq_depth);
	if (++rp->unsignaled >= rp->sq_depth / 4 || rp->slots_free < 2) {
		wr->send_flags |= IBV_SEND_SIGNALED;
		rp->slots[slot].covers = rp->unsignaled;
		rp->unsignaled = 0;
	}
}

/*
 * Request/reply's case, without post_sends' general loop: one small
 * message queued alone, nothing else owed, credits and slots to spare.
 * It goes as one inline SEND of its header and payload (a small buffer
 * keeps them in one piece).  Returns false, having done nothing, when the
 * case does not apply.
 */
static RIFT_HOT_INLINE bool post_one(struct rdma_path *rp, bool late)
{
	rift__path *p = &rp->base;
	rift_conn *conn = p->conn;
	struct rift__omsg *m;
	struct ibv_send_wr *wr = &rp->send_wr;
	rift__vb_err err;
	uint32_t slot, len, bare_imm;
	bool bare;
	int rc;

	if (rp->cur || rp->ctrl_off < rp->ctrl_len || p->pending ||
	    rp->credits < 2 || rp->slots_free < 2 || !conn ||
	    !(m = conn->cursor) || m->next ||
	    (uint8_t *)m->data != m->hdr + RIFT_HDR_SIZE)
		return false;
	len = (uint32_t)(RIFT_HDR_SIZE + m->len);
	if (len > rp->inline_max || len > rp->buf_size || len > rp->peer_buf ||
	    rndv_maybe(rp))
		return false;
	bare = bare_ok(rp, m, &bare_imm);
	if (rift__sess_next(p, NULL) != m)
		return false;
	slot = rp->slot_next;
	/* inline: no lkey */
	if (bare) {
		rp->send_sge.addr = (uintptr_t)m->data;
		rp->send_sge.length = (uint32_t)m->len;
		wr->num_sge = m->len ? 1 : 0;
		rp->bare_sends++;
	} else {
		rp->send_sge.addr = (uintptr_t)m->hdr;
		rp->send_sge.length = len;
		wr->num_sge = 1;
	}
	wr->wr_id = WR_TAG(rp) | slot;
	wr->send_flags = IBV_SEND_INLINE;
	send_taken(rp, wr, slot, bare ? bare_imm : 0);
	rift__sess_written(p, m);
	rc = rift__vb_post_send(rp->qp, wr, err);
	if (rc) {
		if (late) {
			rp->late_rc = rc;
			memcpy(rp->late_err, err, sizeof(rp->late_err));
		} else {
			rift__path_failed(p, rc, "%s", err);
		}
		return true;
	}
	if (conn->credit_stalled)
		rift__metrics_credit_stall(p, false);
	p->last_tx_us = p->ctx->now_us;
	return true;
}

/* From on_recv of a lone message (drain_once): the reply alone, at once.
 * Credits, owed control frames and re-posting follow in the flush after
 * the delivery. */
static bool rdma_send_now(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	if (!rp->established)
		return false;
	if (rift__fault_hit(RIFT_FAULT_RDMA_SEND)) {
		/* As flush_now's, reported when on_recv returns; the
		 * message waits in the session for the next path. */
		rp->late_rc = RIFT_ECONNRESET;
		snprintf(rp->late_err, sizeof(rp->late_err),
			 "send: link dropped (fault point)");
		return true;
	}
	if (!post_one(rp, true))
		return false;
	rp->now_sends++;
	return true;
}

/*
 * A keepalive PING is due but the peer has returned no credit for it: a
 * link that died while our window was closed would then show only when
 * keepalive_timeout_ms ran out (seen: a 6 s stall after 100% loss on a
 * link, the side that was only receiving).  A zero-length RDMA WRITE needs
 * no credit, no receive buffer and no key (C9-88), but it is acknowledged
 * by the peer's QP like any request: on a dead link it fails with retry
 * exceeded within the QP's retry budget, and the path with it.  Once per
 * keepalive interval at most.
 */
static void probe(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	struct ibv_send_wr wr;
	rift__vb_err err;
	uint32_t slot;
	int rc;

	if (!rp->slots_free || p->state != RIFT_PATH_ATTACHED ||
	    p->ctx->now_us - rp->probe_us <
		    (uint64_t)p->ctx->cfg.keepalive_interval_ms * 1000u)
		return;
	rp->probe_us = p->ctx->now_us;
	slot = rp->slot_next;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_TAG(rp) | slot;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	rp->unsignaled++;
	rp->slots[slot].covers = rp->unsignaled;
	rp->slots[slot].rd_len = 0;
	rp->unsignaled = 0;
	rp->slots_free--;
	rp->slot_next = ring_next(slot, rp->sq_depth);
	rc = rift__vb_post_send(rp->qp, &wr, err);
	if (rc)
		rift__path_failed(p, rc, "%s", err);
}

static RIFT_HOT_INLINE void post_sends(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	struct ibv_send_wr wrs[32], *first = NULL, *last = NULL;
	struct ibv_sge sges[32][2];
	uint32_t cap, credit_only = rp->rq_depth / 4;
	rift__vb_err err;
	bool desc_retry = false;
	int nwr = 0, rc;

	if (post_one(rp, false))
		return;
	cap = rp->buf_size < rp->peer_buf ? rp->buf_size : rp->peer_buf;
	for (;;) {
		bool data = rp->credits >= 2 && has_output(rp);
		/* The last credit only carries credits back. */
		bool update = !data && rp->credits >= 1 &&
			      rp->to_return >= (credit_only ? credit_only : 1);
		struct ibv_send_wr *wr;
		uint32_t slot, len = 0, imm = 0;
		bool inl = false;
		int nsge = 0;

		if ((!data && !update) || rp->slots_free == 0 || nwr == 32)
			break;
		slot = rp->slot_next;
		wr = &wrs[nwr];
		memset(wr, 0, sizeof(*wr));
		/* A large message at a frame boundary: only its descriptor
		 * goes, from the slot (fill stops in front of one), behind
		 * the BIND_MW of the window the peer READs it through (a
		 * work request and a slot of its own). */
		if (data && rndv_maybe(rp) && nwr + 2 <= 32 &&
		    rp->slots_free >= 3 &&
		    rndv_desc(rp, slot_buf(rp, ring_next(slot, rp->sq_depth)),
			      wr)) {
			wr->wr_id = WR_TAG(rp) | slot;
			slot_taken(rp, wr, slot);
			if (last)
				last->next = wr;
			else
				first = wr;
			last = wr;
			nwr++;
			slot = rp->slot_next;
			wr = &wrs[nwr];
			memset(wr, 0, sizeof(*wr));
			len = RNDV_DESC_SIZE;
			imm = RNDV_IMM;
			sges[nwr][0] = (struct ibv_sge){
				.addr = (uintptr_t)slot_buf(rp, slot),
				.length = len,
				.lkey = rp->slkey[slot] };
			wr->sg_list = sges[nwr];
			wr->num_sge = 1;
		} else if (data && (len = direct(rp, sges[nwr], cap,
						 slot_buf(rp, slot),
						 rp->slkey[slot], &inl, &nsge,
						 &imm)) > 0) {
			/* The payload from where it is: the slot holds at
			 * most the frame header. */
			wr->sg_list = sges[nwr];
			wr->num_sge = nsge;
			if (!inl)
				rp->zc_sends++;
		} else {
			if (data)
				len = (uint32_t)fill(rp, slot_buf(rp, slot), cap);
			/* Nothing but owed control bits that encoded to nothing
			 * in front of a rendezvous message: its descriptor,
			 * from the top (once). */
			if (data && len == 0 && rndv_maybe(rp) && !desc_retry) {
				desc_retry = true;
				continue;
			}
			if (data && len == 0)
				break;
			sges[nwr][0] = (struct ibv_sge){
				.addr = (uintptr_t)slot_buf(rp, slot),
				.length = len,
				.lkey = rp->slkey[slot] };
			wr->sg_list = len ? sges[nwr] : NULL;
			wr->num_sge = len ? 1 : 0;
		}
		wr->wr_id = WR_TAG(rp) | slot;
		wr->opcode = IBV_WR_SEND_WITH_IMM;
		if (len <= rp->inline_max)
			wr->send_flags |= IBV_SEND_INLINE;
		send_taken(rp, wr, slot, imm);
		if (last)
			last->next = wr;
		else
			first = wr;
		last = wr;
		nwr++;
		if (update)
			break;
	}
	if (!first) {
		rift__metrics_credit_stall(p, rp->credits < 2 && has_output(rp));
		if ((p->pending & RIFT_PEND_PING) && rp->credits < 2)
			probe(rp);
		return;
	}
	/* A batch may end unsignaled: its slots come back with the next
	 * signaled send, at the latest when slots run low (above).  Nothing
	 * waits for them before that, and request/reply traffic then costs
	 * one completion per message (the receive), not two. */
	rc = rift__vb_post_send(rp->qp, first, err);
	if (rc) {
		rift__path_failed(p, rc, "%s", err);
		return;
	}
	/* Bookkeeping after the doorbell, off the request/reply path. */
	RIFT_DEBUG("%s: posted %d sends, credits left %u", p->peer, nwr,
		   rp->credits);
	rift__metrics_credit_stall(p, rp->credits < 2 && has_output(rp));
	p->last_tx_us = p->ctx->now_us;
	if (has_output(rp) && rp->credits >= 2 && rp->slots_free)
		rift__path_kick(p); /* batch limit reached: go on next round */
}

/* ---- completions ---- */

/*
 * One completion of a live path.  Receives queue their buffers for
 * drain_recvs; signaled sends give their slots back.  An error fails this
 * path only.  Returns whether the path has work to do now (a completion
 * that succeeded).
 */
static RIFT_HOT_INLINE bool wc_take(struct rdma_path *rp, struct ibv_wc *w)
{
	rift__path *p = &rp->base;

	if (__builtin_expect(w->status != IBV_WC_SUCCESS, 0)) {
		rift__metrics_wc_error(p, w->status);
		if (w->status == IBV_WC_WR_FLUSH_ERR)
			return false; /* follows the first error */
		if (w->wr_id & READ_FLAG) {
			rndv_read_failed(rp, w);
			return false;
		}
		rift__path_failed(p, RIFT_ECONNRESET,
				  "%s completion error: %s (vendor error 0x%x)",
				  (w->wr_id & RECV_FLAG) ? "receive" : "send",
				  rift__vb_wc_str(w->status), w->vendor_err);
		return false;
	}
	if (w->wr_id & RECV_FLAG) {
		uint32_t i = WR_IDX(w->wr_id);
		uint32_t tail = ring_add(rp->pend_head, rp->pend_n, rp->rq_depth);
		uint32_t imm = (w->wc_flags & IBV_WC_WITH_IMM)
				       ? ntohl(w->imm_data)
				       : 0;

		rp->credits += imm & CREDIT_MASK;
		if (rp->credits > 65536) {
			rift__path_failed(p, RIFT_EPROTO,
					  "peer returned more credits than it "
					  "has buffers");
			return false;
		}
		rp->pend[tail] = i | (imm & ~CREDIT_MASK);
		rp->pend_len[tail] = w->byte_len;
		rp->pend_n++;
		p->last_rx_us = p->ctx->now_us;
	} else {
		uint32_t slot = WR_IDX(w->wr_id);

		rp->slots_free += rp->slots[slot].covers;
		if (w->wr_id & READ_FLAG)
			rndv_read_done(rp, slot);
	}
	return true;
}

/*
 * A path's completions of one poll batch are in: deliver, and flush it
 * now, not after the other paths of the CQ: a reply the application
 * queued from on_recv goes out at once (request/reply latency is the time
 * from a completion to the next SEND), and the receive buffers go back
 * with it.
 */
static RIFT_HOT_INLINE void wc_done(struct rdma_path *rp)
{
	rift__path *p = &rp->base;

	if (p->state == RIFT_PATH_DEAD || drain_recvs(rp) < 0)
		return;
	rift__path_unqueue(p); /* flushed now, not again this round */
	flush_now(rp);
	if (p->state != RIFT_PATH_DEAD)
		rift__sess_after_flush(p);
}

/*
 * Take every completion of a shared CQ, poll_batch at a time, each to its
 * path by QP number; after each batch the paths it touched are served.
 * Completions of a path that died are dropped (its flushed requests), and
 * so are those a destroyed QP left behind (its QP number unknown, or
 * another path's now: the tag in wr_id differs).  Returns how many
 * completions were taken.
 */
/*
 * The per-message work of a poll: n completions to their paths, then each
 * path touched is served.  Apart from cq_poll only so that a profiling
 * build (-DRIFT_PROF_BATCH) can count it on its own.
 */
#ifdef RIFT_PROF_BATCH
__attribute__((noinline))
#else
RIFT_HOT_INLINE
#endif
static void cq_batch(struct rift__rdma_ctx *r, struct shared_cq *s,
		     struct ibv_wc *wc, int n)
{
	rift_ctx *ctx = r->ctx;
	struct rdma_path *touched[MAX_POLL];
	uint32_t seq = ++r->poll_seq;
	int nt = 0;

	if (seq == 0)
		seq = ++r->poll_seq; /* 0 marks a path never touched */
	for (int k = 0; k < n; k++) {
		struct rdma_path *rp = wc_path(r, s->dev, &wc[k]);

		if (!rp) {
			ctx->stats.wc_stale++;
			continue;
		}
		if (rp->base.state == RIFT_PATH_DEAD) {
			ctx->stats.wc_dropped++;
			continue;
		}
		if (wc_take(rp, &wc[k]) && rp->touched != seq) {
			rp->touched = seq;
			touched[nt++] = rp;
		}
	}
	for (int k = 0; k < nt; k++)
		wc_done(touched[k]);
}

static RIFT_HOT_INLINE int cq_poll_inline(struct rift__rdma_ctx *r,
					  struct shared_cq *s)
{
	rift_ctx *ctx = r->ctx;
	struct ibv_wc wc[MAX_POLL];
	uint32_t batch = ctx->cfg.poll_batch;
	bool empty = false;
	int n, total = 0;

	/* A path torn down from a callback of this poll (cm=tcp side
	 * channel) must not poll again under it. */
	if (s->polling || s->failed)
		return 0;
	s->polling = true;
	if (batch > MAX_POLL)
		batch = MAX_POLL;
	while ((n = rift__vb_poll(s->cq, (int)batch, wc)) > 0) {
		cq_batch(r, s, wc, n);
		total += n;
		/* A short batch emptied the CQ: the next round polls again. */
		if (n < (int)batch) {
			empty = true;
			break;
		}
	}
	s->polling = false;
	if (n == 0)
		empty = true;
	if (n < 0) {
		cq_fail(s, "ibv_poll_cq failed");
		return total;
	}
	/* Whatever destroyed QPs left in it is gone now. */
	if (empty && s->stale) {
		s->used -= s->stale;
		s->stale = 0;
	}
	return total;
}

/* cq_poll_inline, for the callers off the busy loop's path. */
static int cq_poll(struct rift__rdma_ctx *r, struct shared_cq *s)
{
	return cq_poll_inline(r, s);
}

/* The completion channel of a device: the event names the CQ. */
static void cq_event_cb(rift__io *io, uint32_t revents)
{
	struct cq_dev *d = rift__container_of(io, struct cq_dev, cch_io);
	struct rift__rdma_ctx *r = d->r;
	/* Busy and adaptive polling take completions without events; they
	 * arm the CQs again only before sleeping (rift__rdma_arm). */
	bool rearm = r->ctx->cfg.polling == RIFT_POLL_EVENT;
	struct ibv_cq *cq;
	rift__vb_err err;
	int rc;

	RIFT_UNUSED(revents);
	while ((rc = rift__vb_cq_next_event(d->cch, &cq, err)) == 0) {
		struct shared_cq *s = cq->cq_context;

		s->armed = false;
		if (rearm && !s->failed) {
			if (rift__vb_cq_arm(s->cq, err)) {
				cq_fail(s, err);
				continue;
			}
			s->armed = true;
		}
		/* Re-armed before this poll, so nothing that completes from
		 * now on is missed. */
		cq_poll(r, s);
	}
	if (rc != RIFT_EAGAIN)
		RIFT_DEBUG("%s", err);
}

/*
 * Before a busy or adaptive loop sleeps: ask every CQ for an event on its
 * next completion.  Returns how many CQs were armed just now; if any, the
 * caller must poll once more before sleeping, for what completed before
 * the request (it would raise no event).
 */
int rift__rdma_arm(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;
	struct rift__list *it;
	rift__vb_err err;
	int n = 0;

	if (!r)
		return 0;
	for (it = r->cqs.next; it != &r->cqs; it = it->next) {
		struct shared_cq *s = rift__list_entry(it, struct shared_cq,
						       node);

		if (!s->holders || s->armed || s->failed)
			continue;
		if (rift__vb_cq_arm(s->cq, err)) {
			cq_fail(s, err);
			continue;
		}
		s->armed = true;
		n++;
	}
	return n;
}

/*
 * Busy and adaptive polling: take completions straight from the context's
 * shared CQs each round, without waiting for the channel's wake-up (which
 * costs a trip through the kernel and, on some hosts, milliseconds).
 */
bool rift__rdma_polled(const rift_ctx *ctx)
{
	return ctx->rdma && ctx->rdma->cq_paths > 0;
}

int rift__rdma_poll(rift_ctx *ctx)
{
	struct rift__rdma_ctx *r = ctx->rdma;
	struct rift__list *it;
	int total = 0;

	if (!r)
		return 0;
	for (it = r->cqs.next; it != &r->cqs; it = it->next) {
		struct shared_cq *s = rift__list_entry(it, struct shared_cq,
						       node);

		if (s->holders || s->stale)
			total += cq_poll_inline(r, s);
	}
	return total;
}

/* ---- cm=tcp: QP bring-up over the side channel (cm_tcp.c) ---- */

/* Where a cm=tcp path lives: device, port and GID of its local address. */
struct dev_sel {
	struct ibv_context *verbs;
	uint8_t port, link_layer, mtu;
	uint16_t lid;
	uint32_t gid_index;
	uint8_t gid[16];
};

/* The GID an address has on RoCE: IPv4 mapped into IPv6, or IPv6 as is. */
static bool addr_gid(const struct sockaddr *sa, uint8_t gid[16])
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
static const char *device_mismatch(const rift_config *cfg,
				   struct ibv_context *verbs, unsigned port,
				   const char *subject, char *buf, size_t len)
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
static int dev_select(rift_ctx *ctx, const struct sockaddr *local,
		      struct dev_sel *s, char *err, size_t errlen)
{
	rift_config *cfg = &ctx->cfg;
	struct ibv_context **list = NULL, *first = NULL;
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	uint8_t want[16], first_port = 0, first_ll = 0;
	bool have_addr = addr_gid(local, want);
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
		if (device_mismatch(cfg, s->verbs, s->port, subject, err, errlen))
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
	struct rift__rdma_ctx *r = p->ctx->rdma;
	int rc;

	memset(&ss, 0, sizeof(ss));
	rc = rift__cmtcp_local(rp->tc, &ss);
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
		rc = dev_select(p->ctx, (struct sockaddr *)&ss, &s, err,
				sizeof(err));
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
	dev_atoms(rp->verbs, &b->rd_atom, &init, NULL, NULL);
	hello_fill(rp, &h);
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

	dev_atoms(rp->verbs, &rd, &init, NULL, NULL);
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
	struct rdma_path *rp = path_new(l->ctx, false);

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

	if (tcp_select(rp) || path_resources(rp, NULL))
		return;
	boot_fill(rp, &b);
	rift__cmtcp_send(rp->tc, &b);
}

uint64_t rift__rdma_accepts, rift__rdma_accept_us;
uint32_t rift__rdma_accept_samples[RIFT_ACCEPT_SAMPLES];

static void accept_done(uint64_t t0)
{
	uint64_t us = rift__clock_us() - t0;

	rift__rdma_accept_samples[rift__rdma_accepts % RIFT_ACCEPT_SAMPLES] =
		(uint32_t)us;
	rift__rdma_accepts++;
	rift__rdma_accept_us += us;
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
		bad = hello_check(rp, b->hello, RIFT_BOOT_HELLO_LEN);
	if (bad) {
		if (!p->is_client)
			rift__cmtcp_refuse(rp->tc, RIFT_REJ_BAD_HELLO);
		else
			p->fb_reason = RIFT_FALLBACK_PEER_NO_RDMA;
		rift__path_failed(p, RIFT_EPROTO, "cm=tcp: %s", bad);
		return;
	}
	if (!p->is_client && path_resources(rp, rl)) {
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
		accept_done(t0);
	}
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
		cq_poll(p->ctx->rdma, rp->scq);
	if (p->state != RIFT_PATH_DEAD)
		rift__path_failed(p, err, "%s", why);
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
static const char *gid_mismatch(rift_ctx *ctx, struct rdma_cm_id *id,
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

	RIFT_DEBUG("rdma path %p: %s (status %d)", (void *)p,
		   rift__vb_cm_event_str(ev->event), ev->status);
	if (p->state == RIFT_PATH_DEAD)
		return;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		rp->verbs = rp->id->verbs;
		rp->port_num = rp->id->port_num;
		/* A connection request through a port that is down is lost,
		 * and on rxe it breaks the port's CM until the device goes
		 * (see path_park): the next address, at once. */
		if (port_down(rp->verbs, rp->port_num)) {
			snprintf(mismatch, sizeof(mismatch),
				 "%s port %u is down: no connection request "
				 "through it",
				 rift__vb_device_name(rp->verbs->device),
				 rp->port_num);
			p->fb_reason = RIFT_FALLBACK_ADDR_RESOLVE;
			rift__path_failed(p, RIFT_ENETDOWN, "%s", mismatch);
			break;
		}
		bad = device_mismatch(&p->ctx->cfg, rp->id->verbs,
				      rp->id->port_num, "the route uses",
				      mismatch, sizeof(mismatch));
		if (!bad)
			bad = gid_mismatch(p->ctx, rp->id, mismatch,
					   sizeof(mismatch));
		if (bad) {
			fail_setup(rp, RIFT_EINVAL, RIFT_FALLBACK_ADDR_RESOLVE,
				   bad, 0);
			break;
		}
		rc = rift__vb_resolve_route(rp->id, (int)cfg->connect_timeout_ms,
					    err);
		RIFT_DEBUG("rdma path %p: route asked", (void *)p);
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
		if (path_resources(rp, NULL))
			break;
		hello_fill(rp, &hello);
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
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (p->is_client) {
			bad = hello_check(rp, ev->param.conn.private_data,
					  ev->param.conn.private_data_len);
			if (bad) {
				fail_setup(rp, RIFT_EPROTO,
					   RIFT_FALLBACK_PEER_NO_RDMA, bad, 0);
				break;
			}
		}
		RIFT_DEBUG("%s: established, rendezvous %s/%s, READ depth %u "
			   "(cm: initiator %u responder %u)",
			   p->peer, rp->rndv_local ? "on" : "off",
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
		 * session's bound on the attempt ends it if none comes. */
		if (ev->status == -ETIMEDOUT &&
		    !rift__vb_resolve_addr(rp->id, (struct sockaddr *)&rp->id->route.addr.dst_addr,
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
			cq_poll(p->ctx->rdma, rp->scq);
		rift__path_failed(p, RIFT_ECONNRESET, "peer disconnected");
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* The kernel waits for us to free everything on the device. */
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
		RIFT_DEBUG("%s: own QP %u RTS: ack timeout %u, retry %u, rnr "
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

	RIFT_DEBUG("rdma listener %p: %s", (void *)l,
		   rift__vb_cm_event_str(ev->event));
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return;
	if (rl->cm_tcp) {
		/* cm=tcp listens for rdma_cm only to say so. */
		RIFT_DEBUG("rdma_cm request at a cm=tcp listener: rejected");
		rej = RIFT_REJ_CM_TCP;
		goto reject;
	}
	if (l->closing) {
		rej = RIFT_REJ_CLOSING;
		goto reject;
	}
	rp = path_new(ctx, false);
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
	rift__listener_path(l, &rp->base);
	bad = hello_check(rp, ev->param.conn.private_data,
			  ev->param.conn.private_data_len);
	if (bad) {
		/* Refused, and counted as a protocol error by path_failed:
		 * never trusted with a session. */
		rp->id = NULL; /* destroyed below, after the reject */
		rift__path_failed(&rp->base, RIFT_EPROTO, "%s", bad);
		rej = RIFT_REJ_BAD_HELLO;
		goto reject;
	}
	bad = gid_mismatch(ctx, id, msg, sizeof(msg));
	if (bad) {
		rp->id = NULL;
		rift__path_failed(&rp->base, RIFT_EINVAL, "%s", bad);
		rej = RIFT_REJ_RESOURCES;
		goto reject;
	}
	if (path_resources(rp, rl)) {
		/* Tell the client now instead of letting it time out; the
		 * path's destruction frees the id. */
		rej = RIFT_REJ_RESOURCES;
		rift__vb_reject(id, &rej, sizeof(rej));
		return;
	}
	memset(&param, 0, sizeof(param));
	rndv_accept_depths(rp, ev, &param);
	hello_fill(rp, &hello);
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
	accept_done(t0);
	return;

reject:
	rift__vb_reject(id, &rej, sizeof(rej));
	/* The request's id is ours to destroy, but only after its event is
	 * acknowledged: the caller does that, then destroys it. */
	id->context = NULL;
}

static void cm_io_cb(rift__io *io, uint32_t revents)
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
		}
		rift__vb_cm_ack(ev);
		if (orphan)
			rift__vb_id_destroy(orphan);
	}
}

/* ---- ops ---- */

static int connect_cm(rift_ctx *ctx, const struct sockaddr *sa,
		      socklen_t len, rift_cm cm, rift__path **out)
{
	struct rift__rdma_ctx *r;
	struct rdma_path *rp;
	rift__vb_err err;
	int rc;

	r = rctx(ctx, err);
	if (!r)
		return rift__ctx_fail(ctx, RIFT_ENODEV, "%s", err);
	rp = path_new(ctx, true);
	if (!rp)
		return RIFT_ENOMEM;
	if (cm == RIFT_CM_TCP) {
		/* The side channel goes to the same address and port. */
		rc = rift__cmtcp_connect(&rp->base, sa, len, &rp->tc);
		if (rc == RIFT_EINVAL || rc == RIFT_ENETUNREACH) {
			/* As rdma_resolve_addr's refusal below. */
			rift__path_destroy(&rp->base);
			return rift__ctx_fail(ctx, RIFT_ENETUNREACH,
					      "cm=tcp side channel: connect: no "
					      "route to the address (is the "
					      "link to it down?)");
		}
		if (rc) {
			rift__path_destroy(&rp->base);
			return rift__ctx_fail(ctx, rc, "cm=tcp side channel: "
					      "connect: %s", rift_strerror(rc));
		}
		*out = &rp->base;
		return 0;
	}
	rc = rift__vb_id_create(r->ch, &rp->kind, &rp->id, err);
	if (!rc) {
		rc = rift__vb_resolve_addr(rp->id, sa, RESOLVE_STEP_MS, err);
		/* The kernel's route lookup said no at once: no route to
		 * the address, most often because the link to it is down
		 * (its routes went with it). */
		if (rc == RIFT_EINVAL || rc == RIFT_ENETUNREACH ||
		    rc == RIFT_ENETDOWN) {
			rift__path_destroy(&rp->base);
			return rift__ctx_fail(ctx, RIFT_ENETUNREACH,
					      "%s: no route to the address (is "
					      "the link to it down?)",
					      err);
		}
	}
	if (rc) {
		rift__path_destroy(&rp->base);
		return rift__ctx_fail(ctx, rc, "%s", err);
	}
	*out = &rp->base;
	return 0;
}

static int rdma_connect_op(rift_ctx *ctx, const struct sockaddr *sa,
			   socklen_t len, rift__path **out)
{
	return connect_cm(ctx, sa, len, ctx->cfg.cm, out);
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
static const char *rdma_alt(const rift_ctx *ctx)
{
	return ctx->cfg.cm == RIFT_CM_RDMACM ? "cm=tcp" : NULL;
}

static int rdma_connect_alt_op(rift_ctx *ctx, const struct sockaddr *sa,
			       socklen_t len, rift__path **out)
{
	return connect_cm(ctx, sa, len, RIFT_CM_TCP, out);
}

static bool wildcard(const struct sockaddr *sa)
{
	uint8_t g[16];

	return !addr_gid(sa, g);
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
		rc = dev_select(ctx, sa, &sel, err, sizeof(err));
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
	if (rift__vb_id_create(ctx->rdma->ch, &rl->kind, &rl->id, verr) ||
	    rift__vb_bind(rl->id, (struct sockaddr *)&ss, verr) ||
	    rift__vb_listen(rl->id, (int)ctx->cfg.listen_backlog, verr)) {
		RIFT_DEBUG("cm=tcp listener: no rdma_cm id to refuse rdma_cm "
			   "clients with: %s", verr);
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
		RIFT_DEBUG("rdma listener on port %d: no cm=tcp side channel: "
			   "%s", port, l->ctx->errmsg);
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

	r = rctx(ctx, err);
	if (!r)
		return rift__ctx_fail(ctx, RIFT_ENODEV, "listen: %s", err);
	rl = calloc(1, sizeof(*rl));
	if (!rl)
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "listen: out of memory");
	rl->kind = OWNER_LISTENER;
	rl->l = l;
	if (ctx->cfg.cm == RIFT_CM_TCP) {
		rc = listen_tcp(rl, sa, len);
		if (rc) {
			free(rl);
			return rc;
		}
		pool_init(rl, rl->prep_verbs, rl->prep_port);
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
	bad = gid_mismatch(ctx, rl->id, msg, sizeof(msg));
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
	pool_init(rl, rl->id->verbs, rl->id->port_num);
	l->transport_state = rl;
	return 0;
}

static void rdma_listen_close(rift_listener *l)
{
	struct rdma_listener *rl = l->transport_state;

	if (!rl)
		return;
	pool_free(rl);
	rift__cmtcp_listen_close(rl->tl);
	rift__vb_id_destroy(rl->id);
	free(rl);
	l->transport_state = NULL;
}

/*
 * A QP of ours (an rdma_cm connection's user-managed QP, or cm=tcp's) to
 * ERR, as rdma_disconnect does for the ones librdmacm owns
 * (ucma_shutdown): posted work is flushed and nothing more goes out
 * before the id is disconnected or the QP destroyed.  What it flushes
 * into the shared CQ is dropped there (its path is gone by then).
 */
static void qp_err(struct rdma_path *rp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	rift__vb_err err;

	if ((rp->user_qp || rp->tc || rp->park) && rp->qp &&
	    rift__vb_qp_modify(rp->qp, &a, IBV_QP_STATE, "ERR", err))
		RIFT_DEBUG("%s: %s", rp->base.peer, err);
}

/*
 * The reaper: destroying a QP can block.  rxe's destroy waits until the
 * kernel lets go of every packet the QP sent, and packets queued for a
 * neighbour that no longer answers (a dead link) are let go only when ARP
 * gives up, seconds later: measured 2.0 s in rdma_destroy_qp after a
 * carrier loss.  On the loop thread that stalled every other path and
 * every timer of the context, so a re-attach over a healthy link missed
 * its own deadline.  So a path's QP and cm_id are destroyed by a thread of
 * the context's own; the loop finishes the path (CQ share, registered
 * blocks, memory) when it is told, through an eventfd, that the QP is
 * gone (DMA may touch the blocks until then).
 */
struct reaper {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rdma_path *todo, **todo_tail; /* for the thread */
	struct rdma_path *done;              /* for the loop */
	unsigned pending;                    /* queued or being destroyed */
	bool stop;
	int efd;
	rift__io io;
};

static void reap_finish(struct rdma_path *rp);

/* rp's QP (ours, or librdmacm's on its id), then its cm_id.  Either
 * thread; nothing else touches them any more. */
static void qp_id_destroy(struct rdma_path *rp)
{
	if (rp->id) {
		if (rp->user_qp)
			rift__vb_qp_destroy(rp->qp);
		else
			rift__vb_qp_teardown(rp->id, NULL, NULL);
		rift__vb_id_destroy(rp->id);
	} else {
		rift__vb_qp_destroy(rp->qp);
	}
}

static void *reaper_main(void *arg)
{
	struct reaper *rr = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&rr->mu);
	for (;;) {
		struct rdma_path *rp = rr->todo;

		if (!rp) {
			if (rr->stop)
				break;
			pthread_cond_wait(&rr->cv, &rr->mu);
			continue;
		}
		rr->todo = rp->reap_next;
		if (!rr->todo)
			rr->todo_tail = &rr->todo;
		pthread_mutex_unlock(&rr->mu);
		qp_id_destroy(rp);
		pthread_mutex_lock(&rr->mu);
		rp->reap_next = rr->done;
		rr->done = rp;
		if (write(rr->efd, &one, sizeof(one)) < 0)
			RIFT_DEBUG("reaper: eventfd: %s", strerror(errno));
	}
	pthread_mutex_unlock(&rr->mu);
	return NULL;
}

/* Finish the paths whose QPs are gone; returns how many. */
static unsigned reaper_collect(struct reaper *rr)
{
	struct rdma_path *rp, *next;
	unsigned n = 0;
	uint64_t v;

	if (read(rr->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RIFT_DEBUG("reaper: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&rr->mu);
	rp = rr->done;
	rr->done = NULL;
	pthread_mutex_unlock(&rr->mu);
	for (; rp; rp = next, n++) {
		next = rp->reap_next;
		reap_finish(rp);
	}
	pthread_mutex_lock(&rr->mu);
	rr->pending -= n;
	pthread_mutex_unlock(&rr->mu);
	return n;
}

static void reaper_cb(rift__io *io, uint32_t revents)
{
	RIFT_UNUSED(revents);
	reaper_collect(rift__container_of(io, struct reaper, io));
}

static struct reaper *reaper_get(struct rift__rdma_ctx *r)
{
	struct reaper *rr = r->reaper;

	if (rr)
		return rr;
	rr = calloc(1, sizeof(*rr));
	if (!rr)
		return NULL;
	rr->todo_tail = &rr->todo;
	rr->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (rr->efd < 0)
		goto fail_efd;
	if (rift__io_start(r->ctx, &rr->io, rr->efd, EPOLLIN, reaper_cb))
		goto fail_io;
	pthread_mutex_init(&rr->mu, NULL);
	pthread_cond_init(&rr->cv, NULL);
	if (pthread_create(&rr->thread, NULL, reaper_main, rr))
		goto fail_thread;
	r->reaper = rr;
	return rr;
fail_thread:
	pthread_cond_destroy(&rr->cv);
	pthread_mutex_destroy(&rr->mu);
	rift__io_stop(r->ctx, &rr->io);
fail_io:
	close(rr->efd);
fail_efd:
	free(rr);
	return NULL;
}

/*
 * Context teardown: wait until every queued QP is gone, answering CM
 * events meanwhile (rdma_destroy_id waits until the events it reported
 * are acknowledged), then end the thread.
 */
static void reaper_free(struct rift__rdma_ctx *r)
{
	struct reaper *rr = r->reaper;
	unsigned pending;

	if (!rr)
		return;
	for (;;) {
		pthread_mutex_lock(&rr->mu);
		pending = rr->pending;
		pthread_mutex_unlock(&rr->mu);
		if (!pending)
			break;
		if (r->ch)
			cm_io_cb(&r->io, EPOLLIN);
		if (!reaper_collect(rr))
			usleep(1000);
	}
	pthread_mutex_lock(&rr->mu);
	rr->stop = true;
	pthread_cond_signal(&rr->cv);
	pthread_mutex_unlock(&rr->mu);
	pthread_join(rr->thread, NULL);
	pthread_cond_destroy(&rr->cv);
	pthread_mutex_destroy(&rr->mu);
	rift__io_stop(r->ctx, &rr->io);
	close(rr->efd);
	free(rr);
	r->reaper = NULL;
}

/*
 * A path whose port is down is not torn down until the port is ACTIVE
 * again (or its device goes, or the context ends); its QP is in the
 * error state meanwhile, so nothing moves on it.  Two reasons, both
 * rxe's (6.1), both seen in the lab:
 *  - destroying its cm_id, or rdma_disconnect, sends a MAD (DREQ, or
 *    REJ for a request in flight) through the port that cannot carry
 *    it, and that leaves the port's CM unusable: after a link flap,
 *    connection requests over it never reached the listener, or the
 *    REP never came back, for the rest of the boot;
 *  - destroying its QP waits until the kernel lets go of the packets
 *    the QP queued for a neighbour that no longer answers, 2-3 s, which
 *    even on the reaper's thread slowed the re-attach over the other
 *    link by as much (a 2-vCPU guest).
 * The blocks it holds come back with it.
 */
static void path_park(struct rift__rdma_ctx *r, struct rdma_path *rp)
{
	rp->reap_next = r->parked;
	r->parked = rp;
	RIFT_DEBUG("%s: torn down when port %u is active again", rp->base.peer,
		   rp->port_num);
}

static void reaper_push(struct rift__rdma_ctx *r, struct rdma_path *rp);

/* Tear down the parked paths of (dev, port): port 0 every port of dev,
 * dev NULL every device. */
static void parked_release(struct rift__rdma_ctx *r, struct ibv_device *dev,
			   int port)
{
	struct rdma_path **pp = &r->parked, *rp;

	while ((rp = *pp)) {
		if (dev && (!rp->verbs || rp->verbs->device != dev ||
			    (port && rp->port_num != port))) {
			pp = &rp->reap_next;
			continue;
		}
		*pp = rp->reap_next;
		rp->park = false;
		reaper_push(r, rp);
	}
}

/* Is the port of this path's device down (not ACTIVE)? */
static bool port_down(struct ibv_context *verbs, uint8_t port)
{
	struct ibv_port_attr pa;
	rift__vb_err err;

	return verbs && port &&
	       (rift__vb_port_query(verbs, port, &pa, err) ||
		pa.state != IBV_PORT_ACTIVE);
}

static void rdma_destroy(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	/* From here its completions still in the CQ find no path. */
	qpt_del(p->ctx->rdma, rp);
	rift__list_del(&rp->poll_node);
	/* The peer READs nothing more here (the messages stay queued in
	 * the session, and a new path binds new windows over them). */
	binds_free(rp);
	/* Nothing more goes out: rdma_disconnect moves librdmacm's QP to
	 * ERR, ours we move (posted work is flushed, dropped in the CQ). */
	rp->park = (rp->qp || rp->id) && port_down(rp->verbs, rp->port_num);
	qp_err(rp);
	if (rp->id && rp->established && !rp->park)
		rift__vb_disconnect(rp->id);
	/* cm=tcp: closing the side channel tells the peer at once. */
	rift__cmtcp_close(rp->tc);
	rp->tc = NULL;
	if (rp->id)
		rp->id->context = NULL; /* its last events find no path */
	if (rp->park) {
		path_park(p->ctx->rdma, rp);
		return;
	}
	reaper_push(p->ctx->rdma, rp);
}

/* Destroy rp's QP and cm_id on the reaper's thread, or here if there is
 * none; reap_finish follows. */
static void reaper_push(struct rift__rdma_ctx *r, struct rdma_path *rp)
{
	struct reaper *rr = (rp->qp || rp->id) ? reaper_get(r) : NULL;

	if (!rr) {
		/* Nothing to destroy, or no thread to do it: here. */
		qp_id_destroy(rp);
		reap_finish(rp);
		return;
	}
	pthread_mutex_lock(&rr->mu);
	rp->reap_next = NULL;
	*rr->todo_tail = rp;
	rr->todo_tail = &rp->reap_next;
	rr->pending++;
	pthread_cond_signal(&rr->cv);
	pthread_mutex_unlock(&rr->mu);
}

/* The QP is gone: no DMA touches the blocks any more (nor do READs
 * still in flight: their destinations go too). */
static void reap_finish(struct rdma_path *rp)
{
	rift__path *p = &rp->base;

	/* After the QP: the CQ may go with its last holder. */
	if (rp->scq) {
		rift__list_del(&rp->cq_node);
		p->ctx->rdma->cq_paths--;
		cq_release(p->ctx->rdma, rp->scq, rp->cq_need, rp->qp != NULL);
	}
	for (uint32_t k = 0; k < rp->rndv_n; k++)
		rndv_dst_free(rp, &rp->rndv[(rp->rndv_head + k) % RNDV_MAX]);
	for (uint32_t i = 0; rp->rbufs && i < rp->rq_depth; i++)
		if (rp->rbufs[i])
			rift__pool_free(p->ctx->rdma->pool, rp->rbufs[i],
					RIFT_POOL_RECV);
	for (uint32_t i = 0; rp->sbufs && i < rp->sq_depth; i++)
		if (rp->sbufs[i])
			rift__pool_free(p->ctx->rdma->pool, rp->sbufs[i],
					RIFT_POOL_SEND);
	free(rp->rbufs);
	free(rp->sbufs);
	free(rp->rlkey);
	free(rp->slkey);
	rift__stream_free(&rp->rx);
	free(rp->slots);
	free(rp->pend);
	free(rp->pend_len);
	free(rp->repost);
	free(rp);
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

static void rdma_cut(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	if (rp->tc) {
		rift__cmtcp_shutdown(rp->tc);
	} else if (rp->id && rp->established) {
		qp_err(rp);
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

const struct rift__transport_ops rift__rdma_ops = {
	.name = "rdma",
	.kind = RIFT_TRANSPORT_RDMA,
	.available = rdma_available,
	.connect = rdma_connect_op,
	.alt = rdma_alt,
	.connect_alt = rdma_connect_alt_op,
	.listen = rdma_listen_op,
	.listen_close = rdma_listen_close,
	.flush = rdma_flush,
	.send_now = rdma_send_now,
	.destroy = rdma_destroy,
	.cut = rdma_cut,
};
