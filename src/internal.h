/*
 * internal.h - types shared by rift's layers; not API.
 *
 * Layers (data flows down on send, up on receive; a file calls only into
 * its own layer or those below it, scripts/check-layers.sh checks it):
 *   api/         public calls: context and loop rounds, listeners,
 *                connections, buffers, metrics, devices, config files
 *   session/     sessions, frames, the paths' generic life cycle, send
 *                buffers and counters
 *   transports/  one ops table per transport (a path is one instance),
 *                listed in the registry (transport.c); transports reach
 *                the session only through the upcalls declared here and
 *                in session/session.h
 *   core/        the loop's primitives: fd watchers, timers
 *   memory/      the registered block pool
 *   util/        errors, logging, clock, fault points, histograms, TOML
 * docs/architecture.md tells the whole story.
 */
#ifndef RIFT_INTERNAL_H
#define RIFT_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "rift.h"
#include "util/hist.h"
#include "util/list.h"
#include "session/wire.h"

#define RIFT_UNUSED(x) ((void)(x))
#define rift__container_of(ptr, type, member)                                \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#define RIFT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* For a static function with one caller on the per-message path, which
 * GCC would otherwise keep apart for its size: under QEMU TCG (the lab) a
 * call and return costs about as much as twenty other instructions. */
#define RIFT_HOT_INLINE inline __attribute__((always_inline))

#define RIFT_ERRMSG_LEN 256
/* rdma.poll_batch at most: the verbs backend takes a batch of completions
 * into an array on the stack (rdma_wc.c); rift_config_check refuses more. */
#define RIFT_POLL_BATCH_MAX 64
#define RIFT_URL_MAX_ADDRS 8
#define RIFT_URL_MAX_OPTS 8
#define RIFT_HOST_LEN 256
/* A URL option's value with its NUL: local= holds group.local's list. */
#define RIFT_URL_VALUE_LEN RIFT_GROUP_LOCAL_MAX

/* ---- time ---- */
uint64_t rift__clock_us(void); /* CLOCK_MONOTONIC, us */

/* ---- errors ---- */
/* Convert an errno value (positive) to a RIFT_E* code. */
int rift__from_errno(int e);

/* ---- addressing ---- */
typedef enum rift__scheme {
	RIFT_SCHEME_TCP = 1,
	RIFT_SCHEME_RDMA = 2,
	RIFT_SCHEME_AUTO = 3,
	/* Valkey's RDMA protocol: byte streams only (rift_stream_*) */
	RIFT_SCHEME_VALKEY_RDMA = 4,
} rift__scheme;

struct rift__hostport {
	char host[RIFT_HOST_LEN]; /* without brackets; "" = any */
	uint16_t port;
};

struct rift__url {
	rift__scheme scheme;
	unsigned n_addrs;
	struct rift__hostport addrs[RIFT_URL_MAX_ADDRS];
	unsigned n_opts;
	struct {
		char key[32];
		char value[RIFT_URL_VALUE_LEN];
	} opts[RIFT_URL_MAX_OPTS];
};

/*
 * Parse url into *out.  Returns 0, or RIFT_EINVAL with a message naming
 * the problem in err (always NUL-terminated).
 */
int rift__url_parse(const char *url, struct rift__url *out, char *err,
		    size_t errlen);
/*
 * rift_connect's and rift_listen's URL, parsed.  With cfg (rift_connect:
 * a copy of the context's settings) its options are applied to *cfg,
 * each checked as the config file's key of that name; without (a
 * listener), an option is refused.  0, or RIFT_EINVAL with ctx's message
 * set and *cfg as it was.
 */
int rift__url_take(rift_ctx *ctx, const char *url, struct rift__url *out,
		   rift_config *cfg);

/*
 * Resolve host:port (host "" = wildcard when passive).  Fills up to max
 * socket addresses of family (AF_UNSPEC: IPv4 and IPv6) as getaddrinfo
 * orders them.  Returns the count, or RIFT_ENAME / RIFT_EINVAL with err
 * filled.  Blocks for host names (getaddrinfo); literals never block.
 */
int rift__resolve(const struct rift__hostport *hp, bool passive, int family,
		  struct sockaddr_storage *out, socklen_t *lens, int max,
		  char *err, size_t errlen);
/*
 * A client connection's addresses (resolve.c): numeric ones at once into
 * conn->addrs; a URL naming a host starts a resolver thread instead
 * (conn->resolving set), whose result reaches the loop later: the first
 * attempt starts then, or the connection ends (ERROR, RIFT_ENAME).  0, or an
 * error with ctx's message set.  Cancel lets go of a job still running.
 */
int rift__resolve_start(rift_conn *conn, const struct rift__url *url);
void rift__resolve_cancel(rift_conn *conn);
/* "127.0.0.1:7788" or "[::1]:7788" */
void rift__sockaddr_str(const struct sockaddr *sa, char *buf, size_t len);
/* The address alone: "127.0.0.1" or "::1". */
void rift__sockaddr_ip(const struct sockaddr *sa, char *buf, size_t len);
/* A group.local entry of the device form, "rxe0:1": the RDMA device and
 * port whose address a path leaves from; name "" for an address entry. */
#define RIFT_LOCAL_DEV_MAX 64
struct rift__local_dev {
	char name[RIFT_LOCAL_DEV_MAX];
	int port;
};
/*
 * A list of local addresses as group.local writes it ("10.0.0.2, fd00::2",
 * "rxe0:1, rxe1:1"): numeric IPv4 or IPv6 addresses, or an RDMA device
 * and port, comma-separated, blanks around each allowed.  Fills up to max
 * socket addresses (port 0) and their lengths, and the devices (an
 * address entry: name ""; a device entry: an address of family
 * AF_UNSPEC); out, lens and devs may be NULL: only checked.  Returns how
 * many, or -1 with the reason in err, naming the entry that is wrong.
 */
int rift__local_parse(const char *list, struct sockaddr_storage *out,
		      socklen_t *lens, struct rift__local_dev *devs, int max,
		      char *err, size_t errlen);
/* Set the port of an AF_INET or AF_INET6 address. */
static inline void rift__sockaddr_set_port(struct sockaddr_storage *ss,
					   int port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
}

/* ---- fault points (compiled in with -DRIFT_FAULT_INJECTION) ---- */
typedef enum rift__fault_point {
	RIFT_FAULT_TCP_WRITE = 0, /* writev fails with ECONNRESET */
	RIFT_FAULT_TCP_READ,      /* read fails with ECONNRESET */
	RIFT_FAULT_TCP_CONNECT,   /* connect fails with ECONNREFUSED */
	RIFT_FAULT_IBV_REG_MR,    /* ibv_reg_mr fails with ENOMEM */
	RIFT_FAULT_RDMA_SEND,     /* a verbs path fails as on a dead link */
	RIFT_FAULT_RNDV_BAD_RKEY, /* a rendezvous descriptor advertises a key
				     the sender does not own (hostile peer) */
	RIFT_FAULT_RNDV_BAD_LEN,  /* ... a length its frame does not have */
	RIFT_FAULT_CQ_SHORT,      /* a shared CQ holds fewer completions than
				     the device said: it overflows */
	RIFT_FAULT_RNDV_REGION_KEY, /* a rendezvous descriptor carries its
				     pool region's own key, not a window's:
				     what rift sent before windows */
	RIFT_FAULT_BARE_EARLY,    /* a DATA frame goes bare before the path
				     carried one (hostile peer) */
	RIFT_FAULT_BARE_ACK,      /* a bare frame's ack covers messages never
				     sent (hostile peer) */
	RIFT_FAULT_EARLY_DATA,    /* a client puts a DATA header declaring
				     max_msg_size bytes before its HELLO
				     (hostile peer) */
	RIFT_FAULT_RNDV_BAD_SEQ,  /* a rendezvous descriptor's sequence
				     number skips one (hostile peer) */
	RIFT_FAULT_WINDOW_IGNORED, /* a sender ignores the window (hostile
				     peer) */
	RIFT_FAULT_CREDITS_EXTRA, /* a SEND returns more credits than the
				     receive buffers it has (hostile peer) */
	RIFT_FAULT_RESOLVE_SLOW,  /* resolving a host name takes 300 ms more
				     (a slow DNS server) */
	RIFT_FAULT_TEARDOWN_SLOW, /* a verbs path's teardown stalls 50 ms
				     after it freed its memory windows: a
				     peer READing then must not see an
				     access error */
	RIFT_FAULT_STANDBY_DEAF,  /* a server's standby path loses the
				     RESUME or PROBE sent on it, as one
				     whose link died (or whose sends wait
				     for a retransmission) since its last
				     keepalive does */
	RIFT_FAULT_JOIN_SLOW,     /* a client's standby sends its JOIN 200 ms
				     after its transport connected, as a
				     verbs setup over a slow link does */
	RIFT_FAULT_SQ_STUCK,      /* a server's verbs data path stops taking
				     its send completions, as rxe 6.1 leaves
				     a READ (and all behind it) waiting
				     after a retransmission on a working
				     link */
	RIFT_FAULT_NO_UEVENTS,    /* a verbs context cannot read the kernel's
				     uevents (a container in a user
				     namespace gets none) */
	RIFT_FAULT_RMA_UNCHECKED, /* a requester posts a one-sided piece
				     without checking its token's range and
				     access (a peer that bypasses rift): what
				     does the device refuse? */
	RIFT_FAULT__COUNT
} rift__fault_point;

#ifdef RIFT_FAULT_INJECTION
/* Make the nth hit (1 = next) of point fail, count times in a row. */
void rift__fault_arm(rift__fault_point p, uint64_t nth, uint64_t count);
void rift__fault_clear(void);
bool rift__fault_hit(rift__fault_point p);
uint64_t rift__fault_fired(rift__fault_point p);
#else
static inline bool rift__fault_hit(rift__fault_point p)
{
	(void)p;
	return false;
}
#endif

/*
 * ---- logging (util/log.c; rift.h, "Logging", says what each level is
 * for) ----
 *
 * RIFT_ERROR / RIFT_WARN / RIFT_INFO / RIFT_DEBUG(ctx, fmt, ...): a line
 * of the context ctx (to its cfg.log_cb, or stderr), when its level is at
 * most ctx->cfg.log_level; the arguments are evaluated only then, so a
 * log point costs one compare below the level.  A line goes to the
 * context it concerns: code with a path (p->ctx), a connection or a
 * listener reaches it, and only on that context's thread.
 * RIFT_PLOG(level, fmt, ...): a line that concerns no context (the
 * process's pool, the verbs wrapper's teardown calls, threads beside the
 * loops), to stderr up to rift__log_level (RIFT_LOG), never to a log_cb.
 */
#define RIFT_LOG_LINE 512 /* bytes of a line with its NUL; longer are cut */
extern const char *const rift__log_names[]; /* by level, NULL-terminated */
extern int rift__log_level; /* no context's lines: RIFT_LOG, atomic */
void rift__log(const rift_ctx *ctx, int level, const char *fmt, ...)
	__attribute__((cold, format(printf, 3, 4)));
/* The level a name stands for ("warn"), or -1. */
int rift__log_parse(const char *name);
/* The level RIFT_LOG names (secure_getenv), RIFT_LOG_WARN when it is
 * unset, -1 when it names none. */
int rift__log_env(void);

#define RIFT_LOG_AT(ctx, level, ...)                                          \
	do {                                                                  \
		const rift_ctx *rift__lctx = (ctx);                           \
		if ((int)(level) <= (int)rift__lctx->cfg.log_level)           \
			rift__log(rift__lctx, (level), __VA_ARGS__);          \
	} while (0)
#define RIFT_ERROR(ctx, ...) RIFT_LOG_AT(ctx, RIFT_LOG_ERROR, __VA_ARGS__)
#define RIFT_WARN(ctx, ...) RIFT_LOG_AT(ctx, RIFT_LOG_WARN, __VA_ARGS__)
#define RIFT_INFO(ctx, ...) RIFT_LOG_AT(ctx, RIFT_LOG_INFO, __VA_ARGS__)
#define RIFT_DEBUG(ctx, ...) RIFT_LOG_AT(ctx, RIFT_LOG_DEBUG, __VA_ARGS__)
#define RIFT_PLOG(level, ...)                                                 \
	do {                                                                  \
		if ((int)(level) <=                                           \
		    __atomic_load_n(&rift__log_level, __ATOMIC_RELAXED))      \
			rift__log(NULL, (level), __VA_ARGS__);                \
	} while (0)

/* ---- loop ---- */
typedef struct rift__io rift__io;
typedef void (*rift__io_cb)(rift__io *io, uint32_t revents);
struct rift__io {
	int fd;
	uint32_t events; /* EPOLLIN / EPOLLOUT currently registered */
	rift__io_cb cb;
};

int rift__io_start(rift_ctx *ctx, rift__io *io, int fd, uint32_t events,
		   rift__io_cb cb);
int rift__io_modify(rift_ctx *ctx, rift__io *io, uint32_t events);
void rift__io_stop(rift_ctx *ctx, rift__io *io);

struct rift_timer {
	rift_ctx *ctx;
	rift_timer_cb cb;
	void *user;
	uint64_t due_us;    /* absolute, CLOCK_MONOTONIC */
	uint64_t repeat_us; /* 0 = one shot */
	size_t heap_idx;    /* SIZE_MAX when not in the heap */
	bool is_public;     /* created by rift_timer_create */
};

/* Internal timers are embedded in other objects and not counted. */
void rift__timer_init(rift_ctx *ctx, rift_timer *t, rift_timer_cb cb,
		      void *user);
/* Run the timers that are due at ctx->now_us; returns how many ran. */
int rift__timers_run(rift_ctx *ctx);
/* Program the timerfd for the earliest timer (core/loop.c): before the
 * loop sleeps; event polling does it whenever a timer starts. */
void rift__timers_arm(rift_ctx *ctx);
static inline bool rift__timer_active(const rift_timer *t)
{
	return t->heap_idx != SIZE_MAX;
}

/* printf into a caller's error buffer (err may be NULL or errlen 0). */
void rift__set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Set the context's last error message (printf-like; ctx NULL: the one of
 * rift_ctx_create and rift_config_check, per thread); returns err. */
int rift__ctx_fail(rift_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The context's statistics as rift_ctx_stats_get gives them: its counters
 * and the figures of the pool it uses (api/ctx.c). */
void rift__ctx_stats_now(rift_ctx *ctx, rift_ctx_stats *st);

/* ---- transports ---- */
typedef struct rift__path rift__path;

struct rift__pool;

/* rift_transport values (none, tcp, rdma): ctx->transport_state slots. */
#define RIFT__TRANSPORT_KINDS 3

/*
 * One ops table per transport (tcp.c, verbs/rdma.c), listed in the
 * registry (transports/transport.c): the layers above find a transport
 * there, by URL scheme, and never by name.  Every path slot is filled, so
 * callers never test for NULL (alt excepted, as it says).
 */
struct rift__transport_ops {
	const char *name;	/* "tcp": URL scheme and peer names */
	rift_transport kind;	/* also its slot in ctx->transport_state */
	rift__scheme scheme;	/* the URL scheme naming it */
	/* rift_conn_send copies messages of rndv_threshold bytes and more
	 * into registered memory for it: its peer READs them from there. */
	bool registered_sends;
	/* Is the transport usable on this machine?  0 or a fallback reason. */
	rift_fallback_reason (*available)(rift_ctx *ctx);
	/* Start connecting a new path to sa under cfg (the connection's
	 * settings: the context's, with its URL's options), which outlives
	 * the path, from the local address src (port 0; NULL: routing's
	 * choice); conn_path_connected/failed follow.  0, or RIFT_E* with
	 * the context's error saying why (a bind to src that failed names
	 * it). */
	int (*connect)(rift_ctx *ctx, const rift_config *cfg,
		       const struct sockaddr *src, socklen_t src_len,
		       const struct sockaddr *sa, socklen_t len,
		       rift__path **out);
	/* The transport's other way of setting a path up under cfg, by
	 * name ("cm=tcp": the side channel when rdma.cm is rdmacm), or
	 * NULL when it has none (NULL: never one). */
	const char *(*alt)(const rift_config *cfg);
	/* connect through that way, for an address where the first way
	 * got no answer; only when alt says there is one. */
	int (*connect_alt)(rift_ctx *ctx, const rift_config *cfg,
			   const struct sockaddr *src, socklen_t src_len,
			   const struct sockaddr *sa, socklen_t len,
			   rift__path **out);
	int (*listen)(rift_listener *l, const struct sockaddr *sa,
		      socklen_t len);
	void (*listen_close)(rift_listener *l);
	/* Write what is pending (control frames, then session data). */
	void (*flush)(rift__path *p);
	/*
	 * Send the session's one unsent message now, from inside on_recv of
	 * a lone message (the transport set p->send_now around it): the
	 * reply's doorbell comes before the rest of the delivery's work.
	 * Returns false, having done nothing, when it cannot (the caller
	 * kicks the path as usual).  Runs no upcall: a failure is reported
	 * after the callback returns.
	 */
	bool (*send_now)(rift__path *p);
	/* Free the path and its resources; no upcall follows. */
	void (*destroy)(rift__path *p);
	/* Break the path for real, as a failing link would (tests):
	 * TCP shuts the socket down, verbs disconnects the QP. */
	void (*cut)(rift__path *p);

	/*
	 * Context hooks, called through the registry only (the rift__transports_*
	 * calls below); NULL when the transport has none.  State a transport
	 * keeps per context hangs in ctx->transport_state[kind].
	 */
	/* Busy and adaptive polling: take completions; returns how many.
	 * The transport counts the paths it polls for in
	 * ctx->n_polled_paths: while there are any, most rounds of a busy
	 * loop only poll (api/ctx.c, fast_round). */
	int (*poll)(rift_ctx *ctx);
	/* Before a busy or adaptive loop sleeps: arm what would wake it;
	 * returns how many were armed just now (poll once more if any). */
	int (*arm)(rift_ctx *ctx);
	/* The context ends: free the transport's state of it (its paths are
	 * gone), and the pool reference its pool hook took. */
	void (*ctx_destroy)(rift_ctx *ctx);
	/* Make the context's registered block pool (sets ctx->pool, takes a
	 * reference ctx_destroy drops); NULL with the context's error set. */
	struct rift__pool *(*pool)(rift_ctx *ctx);
	/* rift_devices: describe up to max devices in out; returns how many
	 * the machine has, or RIFT_E* with err filled (rift.h). */
	int (*devices)(rift_device_info *out, int max, char *err,
		       size_t errlen);
	/* Optional: the local device and port a path uses, "rxe0:1", into
	 * buf (rift_conn_paths); left "" without it. */
	void (*describe)(const rift__path *p, char *buf, size_t len);
	/* Optional: how long the path's sends have waited for the peer's
	 * side to acknowledge them, once that is longer than the transport
	 * itself waits before it sends again (verbs: the QP's ack timeout;
	 * TCP: its retransmission timeout, with no ACK since);
	 * 0 before, or when nothing waits.  Port groups fail a client's
	 * data path over on it (session/group.c), asking every 100 ms: a
	 * transport that does not track some of its sends may post a probe
	 * it tracks then (it may fail the path doing so). */
	uint64_t (*tx_stalled_us)(rift__path *p);
	/* Optional: group.local's device form, the address of device and
	 * port from which dst can be reached (rift__transports_device_src):
	 * 0 with *out set, or RIFT_E* with err filled. */
	int (*device_src)(const rift_config *cfg, const char *device,
			  int port, const struct sockaddr *dst,
			  socklen_t dst_len, struct sockaddr_storage *out,
			  socklen_t *out_len, char *err, size_t errlen);

	/*
	 * One-sided access by the path's own work requests (optional: NULL,
	 * and every operation is served by RMA frames through the session;
	 * docs/design/one-sided.md, section 11).
	 *
	 * rma_expose, exporter: let the peer reach [addr, addr + len) of mem
	 * with access (RIFT_MEM_*) through p alone (verbs: a type 2 window
	 * bound on its QP, ahead of anything posted after); *rkey is its key,
	 * *win the handle rma_unexpose takes.  0, or RIFT_E* (the export is
	 * then served by frames on this path).  The window goes with p
	 * unless unexposed first; never after p is dead.
	 */
	int (*rma_expose)(rift__path *p, rift_mem *mem, uint64_t addr,
			  uint64_t len, unsigned access, uint32_t *rkey,
			  void **win);
	/* The export is revoked: the window is invalidated on p, ahead of
	 * anything posted after (p alive). */
	void (*rma_unexpose)(rift__path *p, void *win);
	/*
	 * rma_post, requester: READ (read) or WRITE len bytes between
	 * local's local_off and the peer's raddr through rkey.  p reports
	 * it once through rift__rma_wr_done(p, cookie, status) unless p dies
	 * first (then never: the session counts it lost).  0, RIFT_EAGAIN
	 * (no room now: try after a completion), or RIFT_E* (this path
	 * cannot: the frames serve it).
	 */
	int (*rma_post)(rift__path *p, bool read, rift_mem *local,
			uint64_t local_off, uint64_t raddr, uint32_t rkey,
			uint32_t len, uint64_t cookie);
	/* The largest piece one rma_post takes on p (0: none). */
	uint32_t (*rma_max)(rift__path *p);
	/* Context hooks: mem is registered: register it on the devices the
	 * context uses now (others at their first use), 0 or RIFT_E* with
	 * err filled (nothing of it left); mem is deregistered: drop what
	 * the transport made of it. */
	int (*mem_reg)(rift_ctx *ctx, rift_mem *mem, char *err, size_t errlen);
	void (*mem_drop)(rift_ctx *ctx, rift_mem *mem);
};

/* ---- the registry of transports (transports/transport.c) ---- */

/* The transport a URL scheme names; auto://: the one it tries first. */
const struct rift__transport_ops *rift__transport_by_scheme(rift__scheme s);
/* auto://: the transport to fall back to when ops cannot be used (not
 * available, or every attempt failed), or NULL when there is none. */
const struct rift__transport_ops *
rift__transport_fallback(const struct rift__transport_ops *ops);
/* Each registered transport's context hook, in turn (see above). */
int rift__transports_mem_reg(rift_ctx *ctx, rift_mem *mem, char *err,
			     size_t errlen);
void rift__transports_mem_drop(rift_ctx *ctx, rift_mem *mem);
int rift__transports_poll(rift_ctx *ctx);
int rift__transports_arm(rift_ctx *ctx);
void rift__transports_ctx_destroy(rift_ctx *ctx);
/* rift_devices through the transport that lists devices (0 and an
 * explanation in err when none does). */
int rift__transports_devices(rift_device_info *out, int max, char *err,
			     size_t errlen);
/* group.local's device form through the transport that knows devices
 * (RIFT_ENOTSUP, said in err, when none does). */
int rift__transports_device_src(const rift_config *cfg, const char *device,
				int port, const struct sockaddr *dst,
				socklen_t dst_len, struct sockaddr_storage *out,
				socklen_t *out_len, char *err, size_t errlen);
/* The context's registered pool, made on first use by the transport that
 * registers memory (rift__ctx_pool, below), or NULL. */
struct rift__pool *rift__ctx_pool_make(rift_ctx *ctx);

/* Tests: cut the connection's current path; 0 or RIFT_ENOTCONN. */
int rift__conn_cut(rift_conn *conn);
/* Tests: the connection's path fails by this side's own decision (as on
 * keepalive silence or a completion error), torn down here before the
 * peer knows. */
int rift__conn_fail(rift_conn *conn);

/* Control frames a path owes its peer; sent before more data. */
enum rift__path_pending {
	RIFT_PEND_HELLO = 1u << 0,
	RIFT_PEND_HELLO_ACK = 1u << 1,
	RIFT_PEND_RESUME = 1u << 2,
	RIFT_PEND_RESUME_ACK = 1u << 3,
	RIFT_PEND_ACK = 1u << 4,
	RIFT_PEND_PING = 1u << 5,
	RIFT_PEND_CLOSE = 1u << 6,
	RIFT_PEND_ERROR = 1u << 7,
	RIFT_PEND_JOIN = 1u << 8,
	RIFT_PEND_JOIN_ACK = 1u << 9,
	RIFT_PEND_PROBE = 1u << 10,
	RIFT_PEND_PROBE_ACK = 1u << 11,
	RIFT_PEND_PATH_CTL = 1u << 12, /* PATH_CTL DOWN: ctl_gid, ctl_why */
};

/* Paths a connection keeps at most (cfg.group_max_paths): path ids and
 * slots fit a byte. */
#define RIFT_GROUP_MAX 8

typedef enum rift__path_state {
	RIFT_PATH_CONNECTING = 1, /* transport connecting (client) */
	RIFT_PATH_HANDSHAKE,      /* HELLO/RESUME sent or awaited */
	RIFT_PATH_ATTACHED,       /* carrying a session */
	/* Joined to a session (JOIN), carrying no data: keepalives only,
	 * until the client resumes the session on it (session/group.c) */
	RIFT_PATH_STANDBY,
	RIFT_PATH_DEAD,           /* failed; waiting to be destroyed */
} rift__path_state;

/* Generic part of a path; backends embed it first. */
struct rift__path {
	const struct rift__transport_ops *ops;
	rift_ctx *ctx;
	/* Its settings: a client's are its connection's (the context's
	 * with the URL's options, docs: rift_connect), a server's the
	 * context's.  rift__path_init sets the context's, a transport's
	 * connect the one it was given. */
	const rift_config *cfg;
	rift_conn *conn;        /* session carried, or NULL (server handshake) */
	rift_listener *lst;     /* server side: accepting listener */
	rift__path_state state;
	bool is_client;
	bool flush_queued;      /* on ctx->flushq */
	bool send_now;          /* delivering a lone message: ops->send_now */
	struct rift__lend *lend; /* delivering from lent memory (rift__lend) */
	uint32_t pending;       /* rift__path_pending bits */
	int error_code;         /* ERROR frame to send */
	char error_text[96];    /* ERROR frame text */
	/* An ERROR frame was encoded for it: its backend lets it leave
	 * before the path goes, where leaving takes time (verbs) */
	bool said_error;
	rift_fallback_reason fb_reason; /* why setup failed, for auto:// */
	uint32_t limit_ms;      /* bound of its connect and handshake, ms */
	bool alt;               /* client: set up by ops->connect_alt */
	/* Client: the attempt reached its peer's network and asked to
	 * connect (verbs: address and route resolved, connect request
	 * sent), so no answer now points at the way of setting up, not at
	 * the address (conn.c, racing). */
	bool reached;
	/* Port groups (session/group.c): a standby path, joining or joined
	 * (gid its path id);
	 * promoted: a client's standby resuming the session, which may
	 * still see keepalives first.  addr_idx: the client's address it
	 * goes to. */
	bool standby, promoted;
	uint8_t gid;
	/* active-active (session/spread.c): its carrier slot in its
	 * session, 1..RIFT_GROUP_MAX (it carries data); 0: none.  Why it
	 * failed (rift_path_down_reason, failover.c); the PATH_CTL DOWN it
	 * owes the peer for another path of its session: that path's id
	 * and why. */
	uint8_t slot;
	uint8_t down_why;
	uint8_t ctl_gid, ctl_why;
	bool peer_down; /* failed by the peer's PATH_CTL: not echoed */
	unsigned addr_idx;
	/* The attach counter of the JOIN or RESUME it carries (client: the
	 * one it sent; server: the one it took), which the answer on this
	 * path must bear: a JOIN sent on another path meanwhile takes the
	 * session's next counter, and must not void this one. */
	uint64_t attach;
	/* Keepalive ticks in a row that found its sends stalled (group.c,
	 * rift__group_stall_check). */
	uint8_t stall_ticks;
	/* rx_msgs when the stall check last pinged a silence (group.c) */
	uint64_t probed_rx_msgs;
	/* A standby's PROBE (group.c, failback): the nonce out (0: none),
	 * when it left and when its PROBE_ACK came (0: not yet); the
	 * peer's nonce this side owes a PROBE_ACK for. */
	uint64_t probe_nonce, probe_sent_us, probe_ok_us;
	uint64_t probe_echo;
	/* rift_conn_paths (api/paths.c): when it began and when it was set
	 * up (attached or joined; 0 before), and the DATA frames it carried
	 * each way, count and payload bytes. */
	uint64_t born_us, up_us;
	uint64_t tx_msgs, tx_bytes, rx_msgs, rx_bytes;
	uint64_t last_rx_us;    /* last byte received */
	uint64_t last_tx_us;    /* last byte sent */
	/* When the peer last acknowledged a message this path carried (loop
	 * time): progress a transport's completions may not show yet (a
	 * transport's tx_stalled_us). */
	uint64_t peer_acked_us;
	/* The last DATA frame encoded for this path (sender: wire order is
	 * cursor order) and the last one received on it: seq and the ack it
	 * carried.  A transport may leave both out of a frame that follows
	 * (verbs: bare DATA frames); 0 before the first. */
	uint64_t tx_data_seq, tx_data_ack;
	uint64_t rx_data_seq, rx_data_ack;
	char peer[80];          /* "tcp://127.0.0.1:7788" */
	/* Its local address once the transport knows it (TCP: connected
	 * or accepted; verbs: the address resolved, the side channel up),
	 * "127.0.0.2" or "::1"; "" before */
	char local[64];
	rift_timer timer;       /* handshake timeout, then keepalive */
	struct rift__list flush_node;  /* ctx->flushq */
	struct rift__list ctx_node;    /* ctx->paths */
};

/* Unlink and free a path through its backend. */
void rift__path_destroy(rift__path *p);
void rift__path_init(rift__path *p, rift_ctx *ctx,
		     const struct rift__transport_ops *ops, bool is_client);
/* Ask for a flush at the end of this progress round (batched writes):
 * rift__path_kick, inline, below the context. */
/* Take p off the context's flush queue (it is flushed now, or dead). */
static inline void rift__path_unqueue(rift__path *p)
{
	rift__list_del(&p->flush_node);
	p->flush_queued = false;
}

/*
 * Upcalls from transports into the session layer.  All run inside
 * progress.  After path_failed the transport must not touch p again except
 * through ops->destroy, which the session layer calls later.
 */
void rift__path_connected(rift__path *p);
void rift__path_failed(rift__path *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* rift__path_failed with why it failed, where err does not say it (a
 * completion error, keepalive silence, stalled sends); rift__path_failed
 * draws the reason from err. */
void rift__path_failed_why(rift__path *p, rift_path_down_reason why, int err,
			   const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * A complete frame arrived.  For DATA, payload/len are the message bytes;
 * if owned is non-NULL the payload sits in that malloc'd block, which the
 * session takes over (otherwise it copies what it must keep: the frame
 * may be held while the application has stopped receiving).  Returns 0 to
 * continue, or a negative code after which the path has failed and the
 * transport must return without touching p.
 */
int rift__path_on_frame(rift__path *p, const struct rift__hdr *h,
			void *payload, void *owned);
/* A one-sided work request of ops->rma_post is over: status 0 (its bytes
 * are placed) or RIFT_E* (they may not be: the frames redo it). */
void rift__rma_wr_done(rift__path *p, uint64_t cookie, int status);

/* Outgoing message, kept until acknowledged. */
struct rift__omsg {
	struct rift__omsg *next;
	uint64_t seq;
	uint64_t len;
	void *data;        /* payload */
	bool user_buf;     /* data came from rift_buf_alloc (freed apart) */
	/* active-active (session/spread.c): the carrier slot of the path
	 * it was given to (0: none yet, or that path died), and whether
	 * that path took it and has not written all of it yet */
	uint8_t slot;
	bool busy;
	uint8_t type;      /* frame type: RIFT_FRAME_DATA, or _RMA (rift's own) */
	void (*cb)(rift_conn *conn, void *user, int status); /* or NULL */
	void *cb_user;
	uint64_t enq_us;   /* loop time when enqueued (ack latency), us */
	uint8_t hdr[RIFT_HDR_SIZE]; /* encoded when handed to a path */
};

/*
 * Data pull: the transport asks the session for the next messages to put
 * on the wire (rift__sess_next, rift__sess_written: inline, in
 * session/session.h).
 */
/* Encode the owed control frames into buf (returns bytes used). */
size_t rift__sess_control(rift__path *p, uint8_t *buf, size_t cap);
/* The owed ERROR frame alone (RIFT_PEND_ERROR set), for a transport that
 * sends it apart from the stream (verbs: out of band, before messages
 * still in the stream): encoded into buf, which holds
 * RIFT_ERROR_FRAME_MAX bytes; returns its length. */
#define RIFT_ERROR_FRAME_MAX (RIFT_HDR_SIZE + 6 + RIFT_ERROR_TEXT_MAX)
size_t rift__sess_error_frame(rift__path *p, uint8_t *buf);
/* After a flush: arm the delayed-ack timer if no frame carried the ack
 * (rift__sess_after_flush, inline, in session/session.h). */
/* rift__sess_has_output (session.h): the path owes control frames or
 * has unsent data. */

/* ---- received messages ---- */
/*
 * Registered memory a transport lends for a delivery in place (a receive
 * buffer, a rendezvous block): while on_recv runs, rift_msg_retain asks
 * take() to give the block holding the message up for good, instead of
 * copying it.  take() returns true with the block and its pool (freed
 * there on rift_msg_release), or false (too small to be worth it, no
 * replacement, given away already): the message is then copied.
 */
struct rift__pool;
struct rift__lend {
	bool (*take)(struct rift__lend *l, size_t len,
		     struct rift__pool **pool, void **block);
};

struct rift_msg {
	uint64_t seq;
	size_t len;
	void *data;
	void *owned;   /* malloc'd block holding data, freed on release */
	struct rift__lend *lend;  /* in on_recv: memory lent in place, or NULL */
	struct rift__pool *pool;  /* retained: the pool block holding data, */
	void *block;              /* freed there on release (or NULL) */
	bool retained; /* handle given out by rift_msg_retain */
};

/*
 * The server sessions of a context, by listener and session id
 * (session/sessions.c): chains through rift_conn.table_next, in a bucket
 * array that doubles as it fills, so a lookup stays O(1) however many
 * sessions there are and however many re-attach at once.
 */
struct rift__sess_table {
	rift_conn **buckets; /* chain heads; NULL until the first session */
	size_t mask;         /* buckets - 1 (a power of two, minus one) */
	size_t n;            /* sessions in the table */
	/* SipHash key of the bucket hash, random per context: session ids
	 * are the clients' choice, their buckets must not be. */
	uint8_t hash_key[16];
};

/*
 * Spare memory: large malloc'd blocks (rift_conn_send's copies and the
 * blocks large messages are received into, from RIFT_SPARE_MIN bytes) a
 * context keeps after use, so that the next large message finds memory
 * already mapped (session/buf.c).  malloc gives blocks that large back to
 * the system when they are freed (munmap, or a trim of the heap's top),
 * and each message then page-faults all its pages in again, zero-filled:
 * with 16 MiB messages that was most of a round trip.  At most
 * RIFT_SPARES blocks, each freed after RIFT_SPARE_IDLE_MS unused.
 */
#define RIFT_SPARE_MIN (128u << 10)
#define RIFT_SPARES 8
#define RIFT_SPARE_IDLE_MS 1000u
struct rift__spares {
	void *mem[RIFT_SPARES];       /* the one kept last first */
	size_t cap[RIFT_SPARES];      /* usable bytes of each */
	uint64_t kept_us[RIFT_SPARES]; /* loop time each was kept, us */
	uint32_t n;
	rift_timer idle;              /* frees the ones left unused */
};

/* ---- context ---- */
struct rift_ctx {
	rift_config cfg;
	int epfd;
	int evfd;  /* eventfd: wake-ups */
	int tfd;   /* timerfd: earliest timer */
	rift__io ev_io;
	rift__io t_io;
	uint64_t now_us;       /* loop time, refreshed each round */
	uint64_t tfd_armed_us; /* timerfd deadline (0 = disarmed) */
	uint64_t coarse_ns;    /* busy polling: coarse clock at the last full round */
	uint32_t fast_rounds;  /* busy polling: CQ-only rounds since then */
	uint32_t n_sock_paths; /* paths carrying data over a socket (TCP) */
	uint32_t n_polled_paths; /* paths whose completions a transport's
				    poll hook takes (verbs: on a shared CQ) */
	struct rift__buf *small_bufs; /* cache of small send buffers */
	uint32_t n_small_bufs;
	struct rift__buf *buf_hdrs; /* cache of registered buffers' headers */
	uint32_t n_buf_hdrs;
	struct rift__spares spares; /* large blocks kept for the next message */
	rift_timer **heap;
	size_t heap_len, heap_cap;
	int stop;              /* atomic: rift_ctx_stop */
	uint64_t n_timers;     /* public timers alive */
	struct rift__list conns;
	struct rift__list listeners;
	struct rift__list bstreams; /* byte streams and their listeners
				       (struct rift__bs_node), until freed */
	struct rift__list paths;   /* every path, attached or not */
	struct rift__list flushq;  /* paths to flush this round */
	struct rift__list lingering_conns;   /* closed, still delivering */
	struct rift__list closing_conns;     /* awaiting close callback */
	struct rift__list closing_listeners; /* awaiting close callback */
	struct rift__list dead_paths; /* failed paths to destroy */
	/* connections whose one-sided operations have callbacks due or
	 * room to issue more (session/rma.c: rift__rma_run) */
	struct rift__list rmaq;
	struct rift__list drainq;  /* conns with held messages to deliver */
	struct rift__sess_table sessions; /* server sessions, for RESUME */
	uint64_t listener_serials; /* last rift_listener.serial given */
	rift_ctx_stats stats;
	struct rift__hist ack_hist;      /* enqueue to cumulative ack, us */
	struct rift__hist reattach_hist; /* PATH_DOWN to PATH_CHANGED, us */
	/* Each transport's state of this context, by its kind (opaque here;
	 * made by the transport on first use, freed by its ctx_destroy). */
	void *transport_state[RIFT__TRANSPORT_KINDS];
	/* The process's registered block pool: a reference a transport's
	 * pool hook took (rift__ctx_pool), dropped by its ctx_destroy. */
	struct rift__pool *pool;
	/* One-sided access: regions and exports (session/rma.h), made on
	 * first use. */
	struct rift__rma_ctx *rma;
	char errmsg[RIFT_ERRMSG_LEN];
};

/* The process's registered block pool for this context (a reference is
 * taken on first use and dropped with the context), or NULL. */
static inline struct rift__pool *rift__ctx_pool(rift_ctx *ctx)
{
	return ctx->pool ? ctx->pool : rift__ctx_pool_make(ctx);
}
/* The pool this context holds a reference on already, or NULL (never
 * makes one). */
static inline struct rift__pool *rift__ctx_pool_held(const rift_ctx *ctx)
{
	return ctx->pool;
}

/* Ask for a flush of p at the end of this progress round (batched
 * writes).  Once per message sent or received: inline. */
static inline void rift__path_kick(rift__path *p)
{
	if (p->flush_queued || p->state == RIFT_PATH_DEAD)
		return;
	p->flush_queued = true;
	rift__list_add_tail(&p->ctx->flushq, &p->flush_node);
}

/* Run deferred work: flushes, close callbacks, dead paths.  Returns how
 * many connections had held messages delivered plus how many close
 * callbacks were due: the work a round of RIFT_RUN_ONCE returns for
 * (flushes are not: they answer the caller's own sends). */
int rift__ctx_deferred_run(rift_ctx *ctx);
/* The same, but only a look at the queues when there is nothing to do
 * (most rounds of a busy loop): inline. */
static inline int rift__ctx_deferred(rift_ctx *ctx)
{
	if (!rift__list_empty(&ctx->flushq) || !rift__list_empty(&ctx->drainq) ||
	    !rift__list_empty(&ctx->dead_paths) ||
	    !rift__list_empty(&ctx->closing_conns) ||
	    !rift__list_empty(&ctx->closing_listeners) ||
	    !rift__list_empty(&ctx->rmaq))
		return rift__ctx_deferred_run(ctx);
	return 0;
}
/* Free the context's caches of small send buffers, of buffer headers
 * and of spare memory (session/buf.c). */
void rift__ctx_free_small_bufs(rift_ctx *ctx);

/* ---- byte streams (api/bytestream.c, transports/bytestream.c) ---- */
/*
 * A byte stream of a foreign protocol (rift.h, "Byte streams"): its
 * transport is a struct rift__bs_ops, found by URL scheme in the
 * registry; the backend embeds the generic struct first.  The generic
 * life cycle (events, the close callback from a later round, the count
 * the context's destruction checks) is transports/bytestream.c's.
 */
struct rift__bs_ops {
	const char *scheme;	/* "valkey-rdma" */
	/* Is it usable on this machine?  0 or a fallback reason. */
	rift_fallback_reason (*available)(rift_ctx *ctx);
	/* A new stream connecting to sa with an rx_size receive buffer:
	 * the backend allocates it (rift__bs_init) and starts; 0 or RIFT_E*
	 * with ctx's message set and nothing left behind. */
	int (*connect)(rift_ctx *ctx, const struct sockaddr *sa,
		       socklen_t len, uint32_t rx_size, rift_stream **out);
	/* Listen on sa (l->port set); 0 or RIFT_E* with ctx's message. */
	int (*listen)(rift_stream_listener *l, const struct sockaddr *sa,
		      socklen_t len);
	/* Stop listening: streams not yet accepted go, silently. */
	void (*listen_close)(rift_stream_listener *l);
	/* rift_stream_write on an established stream, not closing. */
	int (*write)(rift_stream *s, const void *data, size_t len);
	/* Deliver the bytes waiting (reading started again). */
	void (*deliver)(rift_stream *s);
	/* Close: write what was taken, then free every resource but the
	 * handle and call rift__bs_closed. */
	void (*close)(rift_stream *s);
	/* Free the handle (after its close callback ran). */
	void (*free)(rift_stream *s);
};

/* The registry's byte-stream transport for scheme ("valkey-rdma"), or NULL. */
const struct rift__bs_ops *rift__bs_ops_by_scheme(const char *scheme);

/* On ctx->bstreams, so the context cannot be destroyed under one. */
struct rift__bs_node {
	struct rift__list node;
	rift_ctx *ctx;
};

struct rift_stream {
	struct rift__bs_node bn;
	const struct rift__bs_ops *ops;
	rift_stream_callbacks cbs;
	void *user;
	void (*close_cb)(rift_stream *s);
	rift_timer done;          /* runs close_cb, from a later round */
	bool established;         /* CONNECTED, or accepted */
	bool ended;               /* ERROR or DISCONNECTED delivered */
	bool closing;             /* rift_stream_close called */
	bool read_stopped;        /* rift_stream_read_stop in force */
	uint32_t rx_size;         /* this side's receive buffer, bytes */
	rift_stream_stats st;
	char peer[64];            /* "10.77.0.2:40123" */
	char errmsg[RIFT_ERRMSG_LEN];
};

struct rift_stream_listener {
	struct rift__bs_node bn;
	const struct rift__bs_ops *ops;
	rift_stream_callbacks cbs;
	void *user;
	rift_stream_accept_cb on_accept;
	void (*close_cb)(rift_stream_listener *l);
	rift_timer done;          /* runs close_cb, from a later round */
	bool closing;
	int port;
	uint32_t rx_size;         /* its streams' receive buffers, bytes */
	rift__io io;              /* the backend's fd: here, so that it
				     stays valid until the handle is freed */
	void *transport_state;    /* the backend's */
};

/* Fill the generic part of a new stream (the backend's allocation,
 * zeroed) and count it in ctx. */
void rift__bs_init(rift_ctx *ctx, rift_stream *s,
		   const struct rift__bs_ops *ops, uint32_t rx_size);
/* Listeners: the same. */
void rift__bs_listener_init(rift_ctx *ctx, rift_stream_listener *l,
			    const struct rift__bs_ops *ops, uint32_t rx_size);
/* Deliver an event (CONNECTED, ERROR, DISCONNECTED, WRITABLE), unless
 * the stream is closing; ERROR and DISCONNECTED also end it, once, with
 * the message (printf-like) kept as its last error. */
void rift__bs_emit(rift_stream *s, rift_event_type type, int status,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The backend has let go of everything but the handle after
 * ops->close: close_cb runs from a later round, then ops->free. */
void rift__bs_closed(rift_stream *s);
/* Free a stream the application never saw (not accepted yet), from a
 * later round, as every handle (its fds may be in this round's batch). */
void rift__bs_drop(rift_stream *s);
/* The listener's close: close_cb from a later round, then free. */
void rift__bs_listener_closed(rift_stream_listener *l);

/* ---- listener ---- */
struct rift_listener {
	rift_ctx *ctx;
	const struct rift__transport_ops *ops;
	rift_conn_callbacks cbs;
	void *user;
	rift_accept_cb on_accept;
	void (*close_cb)(rift_listener *l);
	bool closing;
	bool auto_scheme;        /* auto://: TCP sessions are served too */
	bool tcp_shared;        /* rdma cm=tcp: its socket serves them, no twin */
	/* Its number in the context, from 1, never reused: its sessions'
	 * key in ctx->sessions (a pointer could be reused by a later one). */
	uint64_t serial;
	int port;
	int fd;
	rift__io io;
	rift_timer accept_pause; /* tcp: accepting paused after EMFILE & co */
	void *transport_state;  /* backend's listening state */
	rift_listener *twin;    /* auto://: the TCP listener beside RDMA */
	rift_listener *main;    /* set on a twin: the listener users hold */
	struct rift__list node; /* ctx->listeners, then closing_listeners */
};

/* A transport accepted a new path for l: the listener the user holds
 * (an auto:// twin's main one) is the one its session goes to. */
static inline void rift__listener_path(rift_listener *l, rift__path *p)
{
	p->lst = l->main ? l->main : l;
}

#endif /* RIFT_INTERNAL_H */
