/*
 * session.h - the connection object and its session state.
 *
 * A rift_conn is a session: it outlives the paths (TCP connections, QPs)
 * that carry it.  Send side: messages get sequence numbers 1, 2, ... and
 * stay queued (head..tail) until the peer acknowledges them cumulatively;
 * `cursor` is the first message not yet written on the current path.
 * Receive side: `recv_seq` is the highest sequence delivered in order, and
 * the only one acknowledged.  While the application has stopped receiving,
 * paths keep reading (so the peer's acks still arrive and two peers
 * waiting on each other's windows cannot deadlock) and DATA frames are held
 * in the session, up to `held_seq`; the peer's window bounds them because
 * nothing held is acknowledged.  Re-attaching exchanges both seqs and
 * rewinds the cursor to the first message the peer lacks.
 */
#ifndef RIFT_SESSION_SESSION_H
#define RIFT_SESSION_SESSION_H

#include <stdlib.h>

#include "internal.h"

typedef enum rift__conn_state {
	RIFT_CONN_CONNECTING = 1, /* first path not attached yet (client) */
	RIFT_CONN_ESTABLISHED,    /* a path is attached */
	RIFT_CONN_DETACHED,       /* path lost; re-attaching within grace */
	RIFT_CONN_DEAD,           /* ERROR or DISCONNECTED was delivered */
} rift__conn_state;

struct rift_conn {
	rift_ctx *ctx;
	/* ctx->conns; after rift_conn_close ctx->lingering_conns while the
	 * close delivers; then ctx->closing_conns (close_cb due) */
	struct rift__list node;
	rift_conn_callbacks cbs;
	void *user;
	void (*close_cb)(rift_conn *conn);
	rift__conn_state state;
	bool is_client;
	bool closing;           /* rift_conn_close or rift_conn_abort called */
	/* Closing, and the session goes on until the close ends: the queue
	 * is delivered, then CLOSE exchanged (session/close.c). */
	bool lingering;
	/* Lingering for an abort: the queue dropped, until the transport
	 * takes the ERROR that tells the peer (session/close.c). */
	bool aborting;
	bool close_sent;        /* CLOSE encoded for the peer: all acknowledged */
	bool close_rcvd;        /* the peer's CLOSE arrived */
	bool recv_stopped;
	bool want_writable;     /* a send got RIFT_EAGAIN */
	bool auto_scheme;       /* auto://: RDMA may fall back to TCP */
	rift_fallback_reason setup_fb; /* last RDMA setup failure reason */

	/* Client addressing: every resolved address of the URL, in order. */
	const struct rift__transport_ops *ops;
	struct rift__resolve_job *resolving; /* names being resolved */
	struct sockaddr_storage addrs[RIFT_URL_MAX_ADDRS * 2];
	socklen_t addr_lens[RIFT_URL_MAX_ADDRS * 2];
	uint8_t addr_url[RIFT_URL_MAX_ADDRS * 2]; /* URL address of each */
	unsigned n_addrs;
	/* group.local (the URL's local=): the local address of the paths
	 * to each URL address, the one entry for all of them when there
	 * is one; none: routing's choice (conn.c, attempt_start) */
	struct sockaddr_storage locals[RIFT_URL_MAX_ADDRS];
	socklen_t local_lens[RIFT_URL_MAX_ADDRS];
	/* ... or the device and port an entry names (its locals[] entry
	 * AF_UNSPEC): the address is that device's, found per attempt for
	 * its peer (rift__transports_device_src) */
	struct rift__local_dev local_devs[RIFT_URL_MAX_ADDRS];
	unsigned n_locals;
	unsigned addr_idx;      /* address of the current attempt */
	unsigned attempts;      /* failed attempts on addr_idx */
	unsigned total_attempts; /* failed attempts since the last attach */
	uint64_t detached_us;   /* when the path was lost */
	uint64_t attempt_us;    /* when the current attempt began */
	uint64_t setup_srtt_us; /* smoothed time attempts took to attach */
	uint64_t setup_var_us;  /* its mean deviation */
	unsigned timeouts;      /* attempts since the last attach that timed out */
	/* Addresses (bits) whose next attempt uses ops->connect_alt: the
	 * last attempt there by the other way got no answer (failover.c,
	 * boot_learn). */
	uint32_t alt_addrs;
	/* Each address's last failure, for rift_conn_paths: how a client
	 * path to it failed, when, and why; status 0 since one attached or
	 * joined there (failover.c). */
	struct rift__addr_down {
		int status;
		uint8_t reason; /* rift_path_down_reason */
		/* Standby setups through it that timed out since one
		 * joined (rift__group_standby_limit doubles per each). */
		uint8_t standby_timeouts;
		/* Standby setups through it that failed in a row before
		 * joining, and when the next may start (group.c, backoff). */
		uint8_t standby_fails;
		uint64_t standby_next_us;
		uint64_t at_us;
		char why[128];
	} addr_down[RIFT_URL_MAX_ADDRS * 2];
	rift_timer retry_timer; /* client: next attempt; server: grace */
	/* A second attempt racing the current one (conn.c, "racing"). */
	rift__path *racer;
	unsigned racer_idx;     /* its address */
	uint64_t racer_us;      /* when it began */
	rift_timer race_timer;  /* starts it */
	rift_timer ack_timer;   /* explicit ack when idle */
	rift_timer linger_timer; /* closing: linger_ms (session/close.c) */

	uint64_t session_id;
	/* The session key (session/wire.h, "Who may attach a path"): drawn
	 * by the server for a HELLO, learnt by the client from the
	 * HELLO_ACK; zeros before. */
	uint8_t key[RIFT_SESSION_KEY_LEN];
	/* Client: the last attach counter its RESUMEs and JOINs drew (each
	 * path keeps its own, rift__path.attach).  0 until the first. */
	uint64_t attach_seq;
	/* Server: the attach counters of RESUMEs and JOINs accepted (the
	 * highest, and which of the 63 below it). */
	struct rift__replay_win attach_win;
	/* Port groups (session/group.c): capabilities the peer's handshake
	 * offered (RIFT_CAP_*); standby paths, joining or joined, none of
	 * them conn->path; the client's next path id, and the timer that
	 * opens standbys (conn.c). */
	uint32_t peer_caps;
	rift__path *standby[RIFT_GROUP_MAX - 1];
	unsigned n_standby;
	uint8_t next_gid;
	rift_timer group_timer;
	/* Failback (group.c): the timer that checks for it; a RESUME moving
	 * the session back is under way; the last PROBE nonce given. */
	rift_timer failback_timer;
	bool failing_back;
	uint64_t probe_seq;
	/* auto:// back from its fallback (group.c, "returning"): the
	 * transport the scheme prefers, which a session on its fallback
	 * tries again by a standby through it (return_timer, conn.c), the
	 * tries that failed in a row (the wait doubles). */
	const struct rift__transport_ops *pref_ops;
	rift_timer return_timer;
	uint32_t return_fails;
	char return_why[160];   /* the last try's failure */
	uint64_t lst_serial;    /* server: serial of the accepting listener */
	rift_conn *table_next;  /* server: next in its ctx->sessions chain */
	bool in_table;          /* server: in ctx->sessions */
	rift__path *path;       /* attached or attaching path */

	/* send side */
	struct rift__omsg *head, *tail, *cursor;
	uint64_t next_seq;      /* last sequence assigned */
	uint64_t acked_seq;     /* peer's cumulative ack */
	uint64_t written_seq;   /* highest seq fully written on this path */
	uint64_t max_written;   /* highest seq ever written */
	uint64_t unacked_bytes; /* payload bytes queued, bytes */
	uint64_t unacked_msgs;
	uint64_t window_used;   /* frame bytes queued (payload + headers) */

	/* receive side */
	uint64_t recv_seq;      /* highest seq delivered in order */
	uint64_t data_seq;      /* DATA messages delivered (rift_msg_seq:
				 * rift's own frames take no number) */
	uint64_t held_seq;      /* highest seq received in order (>= recv_seq) */
	struct rift__held *held_head, *held_tail; /* received, not delivered */
	/* active-active: received ahead of held_seq + 1 (session/spread.c,
	 * the reorder buffer): a ring of ooo_size slots, below */
	uint64_t ooo_n;         /* messages waiting there */
	struct rift__held **ooo_ring;
	uint64_t held_bytes;    /* their frame bytes (payload + headers) */
	uint64_t ooo_bytes;     /* the reorder buffer's, the same way */
	struct rift__list drain_node; /* ctx->drainq: held to deliver */
	uint64_t ack_sent;      /* last ack value put on the wire */
	uint64_t rx_unacked;    /* bytes received since ack_sent */
	uint64_t peer_window;   /* peer's send window, bytes; 0 before */
	uint64_t peer_max_msg;  /* peer's max_msg_size, bytes; 0 before */
	/* One-sided access (session/rma.c): its state, made on first use;
	 * something of it waits for room in the send window. */
	struct rift__rma_conn *rma;
	bool rma_wait;
	/* ... and this side's operations have pieces not issued yet:
	 * messages wait behind them (rift_conn_send: RIFT_EAGAIN), so both
	 * leave in the order called. */
	bool rma_queued;

	rift_transport transport;
	bool quiet;             /* holds the pool quiet (rift__conn_quiet) */
	rift_fallback_reason fallback;      /* why our side is not on RDMA */
	rift_fallback_reason peer_fallback; /* the peer's, from its handshake */
	char last_error[RIFT_ERRMSG_LEN];
	rift_conn_stats stats;
	struct rift__hist ack_hist;      /* enqueue to cumulative ack, us */
	struct rift__hist reattach_hist; /* PATH_DOWN to PATH_CHANGED, us */
	uint64_t down_us;       /* loop time of PATH_DOWN (0: none pending) */
	uint8_t down_why;       /* rift_path_down_reason of the data path's
				 * last failure (PATH_DOWN's) */
	bool credit_stalled;    /* rdma: last flush stopped for credits */
	/* active-active (session/spread.c): negotiated; the paths carrying
	 * data by slot (rift__path.slot - 1), what each has in flight (given,
	 * not acknowledged, bytes), what the peer acknowledged of each
	 * since rate_us and the rate that makes (bytes/s, smoothed); an ack
	 * covered messages a path was still writing (freed once written) */
	bool spread;
	bool release_due;
	rift__path *carrier[RIFT_GROUP_MAX];
	uint64_t inflight[RIFT_GROUP_MAX];
	uint64_t acked_by[RIFT_GROUP_MAX];
	uint64_t rate[RIFT_GROUP_MAX];
	uint64_t rate_us;
	/* The reorder buffer's ring (ooo_ring, above): slot (ooo_first + i)
	 * % ooo_size holds message ooo_base + i or NULL; while anything
	 * waits, ooo_base <= held_seq + 1 (spread.c says why not equal) */
	uint64_t ooo_size;      /* slots, at most window / RIFT_HDR_SIZE */
	uint64_t ooo_first;     /* slot of ooo_base */
	uint64_t ooo_base;      /* seq of slot ooo_first */
	/* Its settings: the context's, and a client's URL options over
	 * them (rift_connect); its paths point here (rift__path.cfg).  Last:
	 * the fields the data path reads stay together above. */
	rift_config cfg;
};

/* The entry of conn->locals that the paths to URL address i leave from
 * (one entry serves every address), or -1: routing's choice. */
static inline int rift__conn_local(const rift_conn *conn, unsigned i)
{
	if (!conn->n_locals)
		return -1;
	return conn->n_locals == 1 ? 0 : (int)i;
}

/* ---- one-sided access (session/rma.c, session/rma.h) ---- */
/* Whether both sides of the session offered RIFT_CAP_RMA. */
static inline bool rift__rma_negotiated(const rift_conn *conn)
{
	return (conn->peer_caps & RIFT_CAP_RMA) != 0;
}
/* An RMA frame delivered in order (its payload of len bytes, borrowed). */
void rift__rma_frame(rift_conn *conn, const uint8_t *payload, uint32_t len);
/* Room in the send window again: issue what waited for it. */
void rift__rma_kick(rift_conn *conn);
/* The session ended (status: why): operations fail with it (no callback
 * once the application closed the connection), exports are revoked. */
void rift__rma_conn_end(rift_conn *conn, int status);
/* The connection's handle is freed: whatever of it is left goes. */
void rift__rma_conn_free(rift_conn *conn);
/* Deferred work (api/deferred.c): callbacks due and pieces to issue of
 * the connections in ctx->rmaq; returns how many callbacks ran. */
int rift__rma_run(rift_ctx *ctx);
/* p dies (rift__path_kill): what was posted or exposed on it is let go
 * (its one-sided pieces are done again by frames). */
void rift__rma_path_gone(rift_conn *conn, rift__path *p);
/* p joined as a standby: exports in use get a window there too, their
 * keys told to the peer, so a failover onto it keeps one-sided RDMA. */
void rift__rma_path_joined(rift_conn *conn, rift__path *p);
/* p, a joined standby, resumed the session under a new attach counter
 * (was: its JOIN's): both sides move its keys to the new one. */
void rift__rma_path_reattach(rift_conn *conn, rift__path *p, uint64_t was);

/* ---- metrics hooks (session/stats.c) ----
 *
 * One call per event, each one line at its call site.  Counters are kept
 * always (they back rift_ctx_stats and rift_conn_stats); histograms only
 * when cfg.metrics is set.
 */
/* rift__conn_enqueue: m->len is set; stamps m with the loop time. */
void rift__metrics_enqueue(rift_conn *conn, struct rift__omsg *m);
/* conn_ack, once per message the cumulative ack releases. */
void rift__metrics_acked(rift_conn *conn, const struct rift__omsg *m);
/* A message of len bytes was delivered to on_recv. */
void rift__metrics_recv(rift_conn *conn, uint64_t len);
/* A client connect attempt (first or retry) is about to start. */
void rift__metrics_connect_attempt(rift_conn *conn);
/* PATH_DOWN is about to be delivered. */
void rift__metrics_path_down(rift_conn *conn);
/* The session re-attached (PATH_CHANGED); counts a failover. */
void rift__metrics_path_changed(rift_conn *conn);
/* A path is failing because its peer went silent. */
void rift__metrics_keepalive_timeout(rift__path *p);
/*
 * verbs: a work completion that failed (status is its numeric status, the
 * index of rift_ctx_stats.wc_errors; anything outside 0..31 counts as
 * "other").
 */
void rift__metrics_wc_error(rift__path *p, int status);
/*
 * verbs: after each flush, whether it stopped with data waiting for peer
 * credits.  Counts the transitions into that state (stall episodes).
 */
void rift__metrics_credit_stall(rift__path *p, bool stalled);

/* A DATA frame received while receiving was stopped, or ahead of its
 * turn (active-active). */
struct rift__held {
	struct rift__held *next; /* the held list's */
	uint64_t seq;
	uint32_t len;
	uint8_t type; /* RIFT_FRAME_DATA or _RMA */
	void *owned; /* malloc'd payload (NULL when len is 0) */
};

/*
 * Every outgoing message has one of these.  A malloc'd buffer (and a
 * small one) has its payload right after the header.  A registered one
 * (pool block or large buffer) has its payload at the block's first byte,
 * so a message fills a block of its own size, and the header apart
 * (malloc'd or from the context's cache), found through the block's pool
 * slot (rift__pool_slot).
 */
/*
 * A transport exposing a buffer's payload to a peer (verbs: a memory
 * window bound over it for a rendezvous READ) holds it: before the buffer
 * is freed, release() takes the exposure away for good (and unlinks h),
 * or keeps the block until it can (sets the buffer's data to NULL and
 * frees the block itself).
 */
struct rift__hold {
	struct rift__hold *next; /* the buffer's other holds */
	void (*release)(struct rift__hold *h);
};

struct rift__buf {
	uint64_t magic;         /* RIFT_BUF_MAGIC while owned by someone */
	rift_ctx *ctx;
	void *data;             /* payload: b + 1, or the pool block */
	size_t cap;             /* usable payload bytes */
	struct rift__pool *pool; /* data is a registered block, or NULL */
	struct rift__hold *holds; /* registered blocks: exposures to end */
	bool small;             /* RIFT_SMALL_BUF bytes, back to ctx's cache */
	struct rift__buf *free_next; /* in a cache */
	struct rift__omsg om;   /* last, and hdr last in it: see below */
};
/* A malloc'd buffer's frame header ends where its payload (b + 1) begins,
 * so a transport can send header and payload as one piece. */
_Static_assert(offsetof(struct rift__buf, om) + offsetof(struct rift__omsg, hdr) +
		       RIFT_HDR_SIZE == sizeof(struct rift__buf),
	       "rift__omsg.hdr must end where the payload of b + 1 starts");
#define RIFT_BUF_MAGIC 0x7269667462756621ull

/* Small send buffers (rift_conn_send of up to RIFT_SMALL_BUF bytes) and
 * registered buffers' headers cached per context, at most this many
 * each: request/reply traffic then allocates and frees nothing. */
#define RIFT_SMALL_BUF 256
#define RIFT_SMALL_CACHE 64

/*
 * Spare memory (internal.h, struct rift__spares): rift__spare_get returns
 * a block of at least len bytes, one the context kept when one fits (not
 * over twice len), else malloc'd; NULL when out of memory.
 * rift__spare_put takes any malloc'd block back (NULL allowed): kept for
 * the next large message, or freed.  free() may take such a block too.
 */
void *rift__spare_get(rift_ctx *ctx, size_t len);
void rift__spare_put(rift_ctx *ctx, void *mem);

struct rift__buf *rift__buf_new(rift_ctx *ctx, size_t len);
/* A buffer for up to RIFT_SMALL_BUF bytes: from the context's cache, or
 * malloc'd when the cache is empty (buf.c). */
struct rift__buf *rift__buf_new_small(rift_ctx *ctx, size_t len);
/* A buffer in registered memory (a pool block, or a large buffer for a
 * rendezvous), or a malloc'd one when none fits or is left (buf.c). */
/* wait: whether a pool block may be waited for while the pool registers
 * a region (rift_buf_alloc, whose caller asked for registered memory),
 * which it never is while a session of the pool re-attaches; without, a
 * malloc'd buffer meanwhile (rift_conn_send's copy). */
struct rift__buf *rift__buf_new_registered(rift_ctx *ctx, size_t len,
					   bool wait);
/*
 * The buffer whose payload is data (a rift_buf_alloc pointer), or NULL:
 * data inside registered memory but not at a block start, a block that is
 * no rift buffer, or a header that does not check out.  ctx is the
 * caller's context; only pointers outside registered memory are read
 * before (where a malloc'd buffer's header is).
 */
struct rift__buf *rift__buf_from_user(rift_ctx *ctx, void *data);
/* Free b and its payload (a pool block goes back to the pool; the
 * header to the context's cache): rift__buf_release, inline, below. */
void rift__buf_release_slow(struct rift__buf *b);

/* Set conn->last_error (printf-like). */
void rift__conn_error(rift_conn *conn, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Deliver an event unless the conn is closing. */
void rift__conn_emit(rift_conn *conn, rift_event_type type, int status,
		     const char *message);
/* The same for an event about standby path p (PATH_UP, PATH_DOWN). */
void rift__conn_emit_standby(rift_conn *conn, rift_event_type type,
			     int status, const char *message,
			     const rift__path *p);
/* Start (or retry) the next connection attempt of a client conn. */
void rift__conn_attempt(rift_conn *conn);
/* Run the delivery callbacks of acknowledged messages (a list, released
 * here); none once the connection is closing. */
void rift__conn_confirm(rift_conn *conn, struct rift__omsg *list);
/* While the session re-attaches (on), the process's pool registers no
 * region (rift__pool_quiet); off when it attached again or ended. */
void rift__conn_quiet(rift_conn *conn, bool on);
/* A client attempt failed with err: retry, rotate addresses or give up. */
void rift__conn_attempt_failed(rift_conn *conn, int err);
/*
 * How long the next client attempt may take to connect and hand-shake,
 * ms.  connect_timeout_ms, except while re-attaching a session that has
 * attached before: then what its attempts measured, as TCP bounds a
 * retransmission by the round trip (smoothed setup time plus four mean
 * deviations, at least RIFT_REATTACH_MIN_MS), doubled per attempt that
 * timed out since, never more than connect_timeout_ms.  A lost
 * connection request (rdma_cm retransmits one only after about 4 s) or a
 * dead address then costs a fraction of a second, not connect_timeout_ms.
 */
#define RIFT_REATTACH_MIN_MS 1000u
uint64_t rift__conn_attempt_limit(const rift_conn *conn);
/* The session's measured setup time (its mean plus four deviations),
 * at least floor_ms, doubled doublings times (16 at most), at most
 * connect_timeout_ms; connect_timeout_ms before anything was measured.
 * Re-attach attempts, standby setups and RESUMEs on a standby are bounded
 * by it (failover.c). */
uint64_t rift__conn_setup_bound(const rift_conn *conn, uint64_t floor_ms,
				unsigned doublings);
/* A standby's setup through the URL's address idx: bounded as a
 * re-attach attempt is (the measured setup time, at least
 * RIFT_REATTACH_MIN_MS), doubled per standby setup through idx that timed
 * out since one joined there, at most connect_timeout_ms (group.c). */
uint64_t rift__group_standby_limit(const rift_conn *conn, unsigned idx);
/*
 * Why the connection is not on RDMA: our side's reason, else the one the
 * peer gave in its handshake (an auto:// client without a device falls
 * back; its server learns why from the HELLO).
 */
static inline rift_fallback_reason rift__conn_fallback(const rift_conn *conn)
{
	return conn->fallback != RIFT_FALLBACK_NONE ? conn->fallback
						    : conn->peer_fallback;
}

/*
 * The connection's window: the smaller of both sides' send_window, as
 * each side computes it from its own configuration and the handshake.
 * A sender keeps at most this much unacknowledged (one message may
 * exceed it alone), and a receiver that stopped receiving holds at most
 * this much: our own limit, whatever window the peer claims.
 */
static inline uint64_t rift__conn_window(const rift_conn *conn)
{
	uint64_t own = conn->ctx->cfg.send_window;

	return conn->peer_window && conn->peer_window < own ? conn->peer_window
							    : own;
}

/* The name of the transport's other way of setting up paths (ops->alt),
 * or NULL when this conn's has none. */
static inline const char *rift__conn_alt(const rift_conn *conn)
{
	return conn->ops->alt ? conn->ops->alt(&conn->cfg) : NULL;
}
/* A client path or attempt to address idx failed with status: what
 * rift_conn_paths says of the address until one attaches or joins
 * there (failover.c); its entry (the reason drawn from status), or NULL
 * (a server's, or no such address). */
struct rift__addr_down *rift__conn_addr_failed(rift_conn *conn, unsigned idx,
					       int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Free every queued message (conn is going away). */
void rift__conn_drop_queue(rift_conn *conn);
/* Detach conn from its path without any upcall; path is destroyed later. */
void rift__conn_abandon_path(rift_conn *conn);
/* Mark p dead and queue its destruction; no upcall (session.c). */
void rift__path_kill(rift__path *p);
/* p leaves its conn and is destroyed later; no upcall (session.c). */
void rift__path_release(rift__path *p);
/* The session is over: tell the application once (session.c). */
void rift__conn_die(rift_conn *conn, rift_event_type type, int status);
/* Tell the peer why p fails: an ERROR frame, best effort (session.c). */
void rift__path_say_error(rift__path *p, int err, const char *why);
/* Refuse a frame: tell the peer why (best effort), then fail the path;
 * returns err (session.c). */
int rift__path_reject(rift__path *p, int err, const char *why);
/* Keepalive on p from now (session.c); a handshake's bound ran out
 * (failover.c). */
void rift__path_keepalive_start(rift__path *p);
/* Its tick again, at the period it should have now (a server's data
 * path checks its sends' progress often once a standby joined). */
void rift__path_keepalive_retick(rift__path *p);
void rift__path_handshake_timeout(rift_timer *t, void *user);
/* The handshake payload describing our side, for a frame of that type
 * on p (session.c). */
void rift__hello_fill(rift__path *p, uint8_t type, struct rift__hello *h);

/*
 * ---- port groups (session/group.c) ----
 * A client with group.max_paths above 1, whose server offers RIFT_CAP_GROUP,
 * keeps standby paths through the URL's other addresses: set up and
 * joined ahead (JOIN, JOIN_ACK under the session key), carrying
 * keepalives only.  When the data path fails, the client resumes the
 * session on a standby (RESUME, as a re-attach does, without setting up
 * a connection) and opens a new standby in the background.
 */
/* A standby that failed, or could not start, is set up again after this
 * long; after RIFT_STANDBY_QUICK_TRIES setups failed in a row before
 * joining, twice as long each time, up to RIFT_STANDBY_RETRY_MAX_MS (a dead
 * address is no storm of setups); the first ones at once (conn.c, group
 * timer). */
#define RIFT_STANDBY_RETRY_MS 1000u
#define RIFT_STANDBY_QUICK_TRIES 4u
#define RIFT_STANDBY_RETRY_MAX_MS 30000u
/* The wait before the next standby setup through address idx, ms (0:
 * now); a standby's failure there (joined: it had joined), counted
 * (group.c). */
uint64_t rift__group_standby_wait(const rift_conn *conn, unsigned idx);
/* The group timer runs within ms (sooner if it was due sooner). */
void rift__group_timer_within(rift_conn *conn, uint64_t ms);
void rift__group_standby_failed(rift_conn *conn, unsigned idx, bool joined);
/*
 * A transport's word that a local link came up (a port ACTIVE again, a
 * device added): standby setups that backed off while it was down are
 * tried again within after_ms, and so is an auto:// session's return to
 * RDMA (group.c).
 */
void rift__group_links_changed(rift_ctx *ctx, uint64_t after_ms);
/* The capabilities our handshake offers; whether both sides offered
 * port groups. */
uint32_t rift__group_caps(const rift_conn *conn);
bool rift__group_negotiated(const rift_conn *conn);
/* How long a RESUME on a standby may go unanswered, ms (group.c), at
 * least this long. */
#define RIFT_PROMOTE_MIN_MS 100u
/* How often a data path with standbys looks at its sends' progress
 * (rift__group_stall_check), ms. */
#define RIFT_STALL_TICK_MS 100u
/* That data path, silent this long after DATA arrived, sends a PING
 * (once per silence): something whose progress the check can see on a
 * side that only receives. */
#define RIFT_PROBE_SILENCE_MS 200u
uint64_t rift__group_resume_limit(const rift_conn *conn);
/* Failback: the timer's callback; a client RESUME answered (true: it
 * moved the session back, FAILBACK is due); a failback's RESUME failed
 * (true: PATH_DOWN told, the session detached). */
void rift__group_failback_timer(rift_timer *t, void *user);
bool rift__group_failback_done(rift_conn *conn);
bool rift__group_failback_failed(rift_conn *conn, int err);
/* conn attached a data path: the client's standbys are due. */
void rift__group_attached(rift_conn *conn);
/* Server: a JOIN as a path's first frame. */
int rift__group_join(rift__path *p, const struct rift__hdr *h,
		     const uint8_t *payload);
/* Client: a frame on a standby path before it joined. */
int rift__group_handshake(rift__path *p, const struct rift__hdr *h,
			  const uint8_t *payload);
/* A frame on a joined standby path. */
int rift__group_standby_frame(rift__path *p, const struct rift__hdr *h,
			      const uint8_t *payload);
/* The JOIN or JOIN_ACK payload for p; its length. */
size_t rift__group_join_encode(rift__path *p, uint8_t type, uint8_t *out);
/* p leaves conn's standbys, if it is one; whether it was. */
bool rift__group_standby_del(rift_conn *conn, rift__path *p);
/* A standby path failed (path_lost): it goes, and another is due. */
void rift__group_standby_lost(rift_conn *conn, rift__path *p, int err);
/* Client, its data path lost: resume on a joined standby; whether one
 * took it. */
bool rift__group_promote(rift_conn *conn);
/* The keepalive's tick on p: a data path whose sends stalled while a
 * standby answers fails (true: p failed). */
bool rift__group_stall_check(rift__path *p);
/* The session ends: its standbys go. */
void rift__group_end(rift_conn *conn);
/*
 * auto:// back from its fallback (group.c, "returning"): whether conn,
 * a client session on its fallback transport, may try the one its scheme
 * prefers again (a standby through it: conn.c, return_timer); a try that
 * failed, what it says in why (the next waits twice as long).  A path of
 * a client that is not over the session's transport is such a try.
 */
bool rift__group_may_return(const rift_conn *conn);
void rift__group_return_failed(rift_conn *conn, const char *why);
static inline bool rift__path_returning(const rift__path *p)
{
	return p->conn && p->conn->is_client && p->ops != p->conn->ops;
}
/*
 * ---- closing (session/close.c) ----
 * rift_conn_close and rift_conn_abort on a connection marked closing (and
 * no longer counted active): abortive false lingers until the queue is
 * acknowledged and CLOSE exchanged, true drops it and tells the peer.  A
 * connection not established yet, or ended already, closes at once.
 */
void rift__conn_close(rift_conn *conn, bool abortive);
/*
 * Drop the queue and tell the peer (ERROR, RIFT_ECONNRESET) on the
 * attached path; who names the cause in the messages ("rift_conn_abort").
 * wait: the close ends once the transport took the ERROR (or the path
 * failed, or keepalive_timeout_ms passed); without (rift_ctx_destroy), at
 * once, the ERROR written if the path takes it now.
 */
void rift__conn_close_abort(rift_conn *conn, const char *who, bool wait);
/* A lingering conn's queue may have emptied (an ack) or a path attached:
 * send CLOSE if it is time, and end the close if the peer's came first. */
void rift__conn_linger_check(rift_conn *conn);
/* The peer's CLOSE arrived on p (its ack applied): answer it and end the
 * session, or, closing too, wait for our own queue.  p may be dead after. */
void rift__conn_peer_close(rift__path *p, const struct rift__hdr *h);
/* A lingering conn's session is over for a reason of its own (grace time,
 * the peer's ERROR, RESUME refused), last_error set: the close ends, not
 * in order. */
void rift__conn_close_lost(rift_conn *conn);
/* p of a lingering conn failed after its CLOSE left: the peer hung up
 * after reading it (or the path broke with everything acknowledged): the
 * close ends in order.  Or during an abort: it ends as it began. */
void rift__conn_close_hangup(rift_conn *conn);

/* A copy of a DATA frame to keep undelivered, within the window (0; or
 * the path failed, owned freed): session.c, hold. */
int rift__held_new(rift__path *p, const struct rift__hdr *h, void *payload,
		   void *owned, struct rift__held **out);
/* Deliver held messages (receiving restarted); from deferred work. */
void rift__conn_drain(rift_conn *conn);
/* Free the held messages (the session is over). */
void rift__conn_drop_held(rift_conn *conn);

/* A new connection object on ctx, counted open, with its timers ready
 * (the caller sets the client's retry and race callbacks); NULL when out
 * of memory.  Freed by deferred work after rift_conn_close. */
rift_conn *rift__conn_alloc(rift_ctx *ctx, const rift_conn_callbacks *cbs,
			    void *user, bool is_client);
/* A server session for a HELLO that reached l; NULL when out of memory. */
rift_conn *rift__conn_new_server(rift_listener *l, uint64_t session_id);
/*
 * ---- the server sessions of a context (session/sessions.c) ----
 * A HELLO or RESUME finds its session by the listener it arrived on and
 * its id; a session is in the table from its HELLO until it ends
 * (rift__conn_die, rift_conn_close).
 */
/* Room for one more session, so that rift__sessions_add cannot fail:
 * 0, RIFT_ENOMEM, or RIFT_EIO (no random bytes for the hash key). */
int rift__sessions_reserve(rift_ctx *ctx);
/* Add a server session (session_id and lst_serial set) after a
 * successful rift__sessions_reserve. */
void rift__sessions_add(rift_conn *conn);
/* The session id on the listener of serial lst_serial, or NULL. */
rift_conn *rift__sessions_find(rift_ctx *ctx, uint64_t lst_serial,
			       uint64_t id);
/* Take conn out of the table (its session ended); no-op if not in. */
void rift__sessions_del(rift_conn *conn);
/* Free the table of a context that ends (no session is left in it). */
void rift__sessions_free(rift_ctx *ctx);
/* Tests: the length of the longest chain. */
size_t rift__sessions_longest(const rift_ctx *ctx);

/*
 * ---- active-active (session/spread.c) ----
 * With group.policy = active-active on the client and a peer that takes
 * data out of order (RIFT_CAP_REORDER), every joined path of the
 * session's transport carries data: each is a carrier with a slot.  The
 * data pull below goes out of line for such a session.
 */
/* Whether conn runs active-active (set at attach); p carries data now. */
bool rift__spread_negotiated(const rift_conn *conn);
static inline bool rift__path_carries(const rift__path *p)
{
	return p->state == RIFT_PATH_ATTACHED ||
	       (p->state == RIFT_PATH_STANDBY && p->slot && p->conn &&
		p->conn->state == RIFT_CONN_ESTABLISHED);
}
/* Whether DATA may arrive on p: its session's data path, a carrier, or
 * a carrier the client resumes on (the server's DATA sent before the
 * RESUME reached it: dropped, session.c). */
static inline bool rift__path_takes_data(const rift__path *p)
{
	return p->state == RIFT_PATH_ATTACHED ||
	       (p->state == RIFT_PATH_STANDBY && p->slot) ||
	       (p->state == RIFT_PATH_HANDSHAKE && p->promoted && p->conn &&
		p->conn->spread);
}
/* p carries data from now (a slot; no-op with one, or without spread). */
void rift__spread_carrier_add(rift_conn *conn, rift__path *p);
/* p carries no more (failed, released, resumed on): what it was given
 * and had not seen acknowledged goes to the others. */
void rift__spread_carrier_gone(rift_conn *conn, rift__path *p);
struct rift__omsg *rift__spread_next(rift__path *p, struct rift__omsg *after);
struct rift__omsg *rift__spread_peek(rift__path *p);
void rift__spread_written(rift__path *p, struct rift__omsg *m);
/* Flush every carrier of conn with something to take. */
void rift__spread_kick(rift_conn *conn);
/* The ack freed m, given to carrier m->slot. */
void rift__spread_acked(rift_conn *conn, const struct rift__omsg *m);
/* Acknowledged messages a path was still writing: freed now. */
void rift__spread_release(rift_conn *conn);
/* A RESUME rewound the session: what dead paths held is given again. */
void rift__spread_rewound(rift_conn *conn);
/* The reorder buffer: a DATA frame beyond held_seq + 1 (kept, or a
 * duplicate dropped; 0, or the path failed: further ahead than the
 * window allows, beyond its bytes, out of memory); the run that follows
 * held_seq moved to the held list (delivery: ctx->drainq).  All O(1)
 * per message. */
int rift__spread_hold_ahead(rift__path *p, const struct rift__hdr *h,
			    void *payload, void *owned);
void rift__spread_ooo_advance(rift_conn *conn);
/* Whether seq waits in the reorder buffer already. */
bool rift__spread_ooo_has(const rift_conn *conn, uint64_t seq);
/* Free what waits there, and the ring (the session is over). */
void rift__spread_drop_ooo(rift_conn *conn);
/* The carrier standby p failed here: the peer is told (PATH_CTL DOWN on
 * the data path), so its end fails now, not at its own detection. */
void rift__spread_tell_down(rift_conn *conn, const rift__path *p);
/* PATH_CTL on p (0, or p failed). */
int rift__spread_path_ctl(rift__path *p, const struct rift__hdr *h,
			  const uint8_t *payload);

/* True when the path owes control frames or has unsent data (asked for
 * every SEND a transport builds: inline). */
static inline bool rift__sess_has_output(const rift__path *p)
{
	return p->pending ||
	       (p->conn && p->conn->cursor && rift__path_carries(p));
}

/* The message rift__sess_next(p, NULL) would return, not taken. */
static inline struct rift__omsg *rift__sess_peek(rift__path *p)
{
	rift_conn *conn = p->conn;

	if (!conn)
		return NULL;
	if (__builtin_expect(conn->spread, 0))
		return rift__spread_peek(p);
	return p->state == RIFT_PATH_ATTACHED ? conn->cursor : NULL;
}

/*
 * Data pull for transports (see internal.h): rift__sess_next returns the
 * message after `after` (NULL: the first unsent one) with its header
 * freshly encoded, the current ack piggybacked; rift__sess_written says
 * messages up to and including m are written.  Once per message on every
 * transport: inline.
 */
/* m goes on p now: its header encoded with the current ack, counted. */
static RIFT_HOT_INLINE struct rift__omsg *rift__sess_take(rift__path *p,
							  struct rift__omsg *m)
{
	rift_conn *conn = p->conn;
	struct rift__hdr h = { .type = m->type };

	h.len = (uint32_t)m->len;
	h.seq = m->seq;
	h.ack = conn->recv_seq;
	conn->ack_sent = conn->recv_seq;
	conn->rx_unacked = 0;
	p->tx_data_seq = m->seq;
	p->tx_data_ack = h.ack;
	p->tx_msgs++;
	p->tx_bytes += m->len;
	rift__hdr_encode(m->hdr, &h);
	return m;
}

static RIFT_HOT_INLINE struct rift__omsg *rift__sess_next(rift__path *p,
							  struct rift__omsg *after)
{
	rift_conn *conn = p->conn;
	struct rift__omsg *m;

	/* A closing conn still sends (it lingers); an abort clears the
	 * cursor first. */
	if (!conn)
		return NULL;
	if (__builtin_expect(conn->spread, 0))
		return rift__spread_next(p, after);
	if (p->state != RIFT_PATH_ATTACHED)
		return NULL;
	m = after ? after->next : conn->cursor;
	if (!m)
		return NULL;
	return rift__sess_take(p, m);
}

static RIFT_HOT_INLINE void rift__sess_written(rift__path *p,
					       struct rift__omsg *m)
{
	rift_conn *conn = p->conn;

	if (conn && __builtin_expect(conn->spread, 0)) {
		rift__spread_written(p, m);
		return;
	}
	if (!conn || p->state != RIFT_PATH_ATTACHED)
		return;
	if (m->seq <= conn->max_written)
		conn->stats.msgs_replayed += m->seq - conn->written_seq;
	else if (conn->written_seq < conn->max_written)
		conn->stats.msgs_replayed += conn->max_written - conn->written_seq;
	conn->written_seq = m->seq;
	if (m->seq > conn->max_written)
		conn->max_written = m->seq;
	conn->cursor = m->next;
	p->last_tx_us = p->ctx->now_us;
}

/*
 * The per-message half of the session layer, inline: every transport
 * runs it once per message sent or received, and under QEMU TCG (the lab)
 * a call and return costs about as much as twenty other instructions.
 */

/* Free b and its payload: a small buffer goes back to the context's
 * cache here, everything else through rift__buf_release_slow.  Not under
 * ASan, which should see every buffer's life. */
static inline void rift__buf_release(struct rift__buf *b)
{
#if !defined(__SANITIZE_ADDRESS__)
	rift_ctx *ctx = b->ctx;

	if (b->small && ctx->n_small_bufs < RIFT_SMALL_CACHE) {
		b->magic = 0;
		b->free_next = ctx->small_bufs;
		ctx->small_bufs = b;
		ctx->n_small_bufs++;
		return;
	}
#endif
	rift__buf_release_slow(b);
}

/* Put a new message of frame type `type` (RIFT_FRAME_DATA: the
 * application's; RIFT_FRAME_RMA: one-sided access, session/rma.c) at the
 * tail and schedule a flush. */
static RIFT_HOT_INLINE void rift__conn_enqueue_type(rift_conn *conn,
						    struct rift__buf *b,
						    size_t len, uint8_t type)
{
	struct rift__omsg *m = &b->om;

	m->next = NULL;
	m->seq = ++conn->next_seq;
	m->len = len;
	m->data = b->data;
	m->cb = NULL;
	m->slot = 0;
	m->busy = false;
	m->type = type;
	if (conn->tail)
		conn->tail->next = m;
	else
		conn->head = m;
	conn->tail = m;
	if (!conn->cursor)
		conn->cursor = m;
	conn->unacked_bytes += len;
	conn->unacked_msgs++;
	conn->window_used += len + RIFT_HDR_SIZE;
	rift__metrics_enqueue(conn, m);
	if (type == RIFT_FRAME_DATA) {
		conn->stats.msgs_sent++;
		conn->stats.bytes_sent += len;
	}
	if (conn->path && conn->path->state == RIFT_PATH_ATTACHED) {
		rift__path *p = conn->path;

		/* A reply from on_recv of a lone message: at once, if the
		 * transport can (once per callback: more go together). */
		if (p->send_now) {
			p->send_now = false;
			if (p->ops->send_now(p))
				return;
		}
		rift__path_kick(p);
	}
	if (__builtin_expect(conn->spread, 0))
		rift__spread_kick(conn);
}

/* An application message (rift_conn_send and its kin). */
static RIFT_HOT_INLINE void rift__conn_enqueue(rift_conn *conn,
					       struct rift__buf *b, size_t len)
{
	rift__conn_enqueue_type(conn, b, len, RIFT_FRAME_DATA);
}

/*
 * Whether the peer may acknowledge up to ack: only what this path has
 * written in full, never less than before.  Anything else is a lie (or
 * corruption) and would free memory a transport may still be writing
 * from.  Returns 0, or RIFT_EPROTO with *why set.
 */
static RIFT_HOT_INLINE int rift__conn_ack_check(const rift_conn *conn,
						uint64_t ack, const char **why)
{
	if (ack < conn->acked_seq) {
		/* active-active: a frame that left before the last one
		 * applied, on a slower path; nothing to take from it. */
		if (conn->spread)
			return 0;
		*why = "cumulative ack went backwards";
		return RIFT_EPROTO;
	}
	if (ack > conn->written_seq) {
		*why = "ack for a message that was never sent";
		return RIFT_EPROTO;
	}
	return 0;
}

/* Drop the messages up to ack, which is checked and not below acked_seq
 * (may emit WRITABLE).  A message a path is still writing stops it
 * (active-active: the peer had it from a path that died), and what
 * follows waits with it until rift__spread_written frees them. */
static RIFT_HOT_INLINE void rift__conn_ack_release(rift_conn *conn,
						  uint64_t ack)
{
	struct rift__omsg *confirmed = NULL, **conf_tail = &confirmed;
	bool data_path = false;

	while (conn->head && conn->head->seq <= ack) {
		struct rift__omsg *m = conn->head;

		if (__builtin_expect(m->busy, 0))
			break;
		if (__builtin_expect(m->slot != 0, 0))
			rift__spread_acked(conn, m);
		else
			data_path = true;
		conn->head = m->next;
		if (conn->cursor == m)
			conn->cursor = m->next;
		conn->unacked_bytes -= m->len;
		conn->unacked_msgs--;
		conn->window_used -= m->len + RIFT_HDR_SIZE;
		rift__metrics_acked(conn, m);
		if (__builtin_expect(m->cb != NULL, 0)) {
			/* Confirmed after the queue is consistent again:
			 * the callback may send, close or abort. */
			m->next = NULL;
			*conf_tail = m;
			conf_tail = &m->next;
			continue;
		}
		rift__buf_release(rift__container_of(m, struct rift__buf, om));
	}
	if (!conn->head)
		conn->tail = NULL;
	conn->acked_seq = ack;
	if (data_path && conn->path)
		conn->path->peer_acked_us = conn->ctx->now_us;
	if (__builtin_expect(confirmed != NULL, 0))
		rift__conn_confirm(conn, confirmed);
	/* Room for the carriers again (their shares of the window). */
	if (__builtin_expect(conn->spread, 0) && conn->cursor)
		rift__spread_kick(conn);
	/* One-sided operations waiting for room in the window: before the
	 * application's sends take it again. */
	if (__builtin_expect(conn->rma_wait, 0))
		rift__rma_kick(conn);
	if (conn->want_writable && conn->window_used < rift__conn_window(conn) &&
	    !conn->rma_queued) {
		conn->want_writable = false;
		rift__conn_emit(conn, RIFT_EVENT_WRITABLE, 0, "send window open");
	}
}

/* Drop the messages a checked ack covers (may emit WRITABLE). */
static RIFT_HOT_INLINE void rift__conn_ack_apply(rift_conn *conn, uint64_t ack)
{
	if (ack <= conn->acked_seq)
		return;
	rift__conn_ack_release(conn, ack);
}

/* Check and apply an ack: 0, or RIFT_EPROTO with *why set and nothing
 * changed. */
static RIFT_HOT_INLINE int rift__conn_ack(rift_conn *conn, uint64_t ack,
					  const char **why)
{
	int rc = rift__conn_ack_check(conn, ack, why);

	if (!rc)
		rift__conn_ack_apply(conn, ack);
	return rc;
}

/* Hand the next DATA frame in order to the application, from where path
 * from placed it (NULL: a held copy). */
static inline void rift__conn_deliver(rift_conn *conn, const rift__path *from,
				      const struct rift__hdr *h, void *payload,
				      void *owned)
{
	rift_msg msg = {
		.len = h->len,
		.data = payload,
		.owned = owned,
		/* Set by the transport only while it delivers from memory it
		 * can lend (never for held messages, which are copies). */
		.lend = from ? from->lend : NULL,
	};
	uint64_t threshold;

	conn->recv_seq = h->seq;
	if (conn->held_seq < h->seq)
		conn->held_seq = h->seq;
	if (__builtin_expect(h->type != RIFT_FRAME_DATA, 0)) {
		/* rift's own (one-sided access, session/rma.c): served
		 * here, never shown to the application. */
		conn->rx_unacked += h->len + RIFT_HDR_SIZE;
		rift__rma_frame(conn, payload, h->len);
		if (owned)
			rift__spare_put(conn->ctx, owned);
		goto ack;
	}
	/* The application's numbering: its messages only, 1, 2, 3... */
	msg.seq = ++conn->data_seq;
	conn->stats.msgs_recv++;
	conn->stats.bytes_recv += h->len;
	rift__metrics_recv(conn, h->len);
	/* Counted before the callback: a reply sent from it carries the
	 * ack (rift__sess_next) and clears the count. */
	conn->rx_unacked += h->len + RIFT_HDR_SIZE;
	if (conn->cbs.on_recv)
		conn->cbs.on_recv(conn, &msg);
	if (msg.owned) /* NULL if retained or read in place */
		rift__spare_put(conn->ctx, msg.owned);
ack:

	/* Ack soon enough that the peer's window never closes for want of
	 * one: at a quarter of it at once.  Otherwise the ack rides on what
	 * the application sends back this round; only if nothing carried it
	 * by the end of the round does rift__sess_after_flush arm the
	 * ack_delay_ms timer (no timer work per message in request/reply). */
	threshold = rift__conn_window(conn) / 4;
	if (conn->path && conn->path->state == RIFT_PATH_ATTACHED) {
		if (conn->rx_unacked >= threshold)
			conn->path->pending |= RIFT_PEND_ACK;
		rift__path_kick(conn->path);
	}
}

/*
 * A frame a transport found, where it most often is a DATA frame on an
 * attached path that the application is receiving: acknowledge, deliver,
 * all inline.  Anything else (another frame, a gap, a duplicate, held
 * messages, an ack to refuse) goes to rift__path_on_frame, which judges
 * it; an ack applied here is applied again there as a no-op.  Returns as
 * rift__path_on_frame does; payload stays the transport's.
 */
static RIFT_HOT_INLINE int rift__path_on_data(rift__path *p,
					      const struct rift__hdr *h,
					      void *payload)
{
	rift_conn *conn = p->conn;
	const char *why;
	bool ack_late;

	if (h->type != RIFT_FRAME_DATA || p->state != RIFT_PATH_ATTACHED ||
	    !conn || h->seq != conn->held_seq + 1 || conn->recv_stopped ||
	    conn->held_head || conn->ooo_n ||
	    rift__conn_ack_check(conn, h->ack, &why))
		return rift__path_on_frame(p, h, payload, NULL);
	p->rx_data_seq = h->seq;
	p->rx_data_ack = h->ack;
	p->rx_msgs++;
	p->rx_bytes += h->len;
	/*
	 * The ack (checked above) frees what it acknowledges.  While the
	 * window is roomy that waits until on_recv has returned: a reply
	 * sent from it goes out first (p->send_now), and request/reply
	 * latency is the time from a completion to the reply's doorbell.
	 * Otherwise it comes first, so the callback finds the window open.
	 */
	ack_late = h->ack != conn->acked_seq && !conn->want_writable &&
		   conn->window_used <= conn->ctx->cfg.send_window / 2;
	if (!ack_late) {
		rift__conn_ack_apply(conn, h->ack);
		/* WRITABLE ran a callback: it may have changed all that. */
		if (p->state != RIFT_PATH_ATTACHED || p->conn != conn ||
		    conn->recv_stopped)
			return rift__path_on_frame(p, h, payload, NULL);
	}
	rift__conn_deliver(conn, p, h, payload, NULL);
	if (ack_late)
		rift__conn_ack_apply(conn, h->ack);
	return p->state == RIFT_PATH_DEAD ? RIFT_ECLOSED : 0;
}

/* After a flush: arm the delayed-ack timer if no frame carried the ack. */
static inline void rift__sess_after_flush(rift__path *p)
{
	rift_conn *conn = p->conn;

	if (conn && __builtin_expect(conn->release_due, 0))
		rift__spread_release(conn);
	if (conn && p->state == RIFT_PATH_ATTACHED &&
	    conn->ack_sent != conn->recv_seq &&
	    !rift__timer_active(&conn->ack_timer))
		rift_timer_start(&conn->ack_timer, conn->ctx->cfg.ack_delay_ms, 0);
}

#endif
