/*
 * rift.h - the one public header of librift.
 *
 * rift gives storage, RPC and key-value systems a reliable, ordered message
 * connection over RDMA or TCP, chosen by the URL scheme, and keeps that
 * connection alive across broken paths: every message carries a sequence
 * number, the receiver acknowledges cumulatively, and the sender keeps what
 * was not acknowledged.  When a path breaks, the connection re-attaches over a
 * new path and replays exactly what the peer has not received.  The
 * application sees PATH_DOWN / PATH_CHANGED events, never a lost, doubled or
 * reordered message.
 *
 * This header is the reference manual.  General rules:
 *
 *  - Every function that can fail returns 0 (or a non-negative count) on
 *    success and a negative RIFT_E* code on failure.  A call that returns an
 *    error never runs a callback for that call.  A call that makes a handle
 *    (rift_ctx_create, rift_connect, rift_listen, rift_timer_create) sets
 *    *out to NULL when it fails.
 *  - A NULL handle is never dereferenced: a call that returns an error code
 *    returns RIFT_EINVAL for it, a call that returns nothing does nothing,
 *    and the other calls return NULL, 0, "" or the NONE value of their
 *    enum (said with each where it is not plain).
 *  - Handles are opaque.  Structs that users fill (rift_config) or read
 *    (rift_conn_stats, rift_ctx_stats) start with a size field set by their
 *    init macro, so they can grow in later versions without breaking callers.
 *  - One rift_ctx per thread.  Nothing is thread-safe except rift_ctx_wake()
 *    and rift_ctx_stop().  All callbacks run inside rift_ctx_progress(),
 *    rift_ctx_run() or rift_ctx_run_mode() on the thread that called it.
 *    Contexts on different threads share no counter: each keeps its own
 *    statistics.  Threads may come and go: what rift keeps per thread (free
 *    blocks of the registered memory pool, cached for the thread) goes back
 *    to the process when the thread exits.
 *  - Closing a handle cancels what is pending on it and then runs its close
 *    callback exactly once, from a later progress call (never from inside
 *    the close call itself).  A connection is the exception that delivers
 *    first: rift_conn_close sends what was queued before it (bounded by
 *    linger_ms), rift_conn_abort drops it.
 *  - Destroying a context that still owns connections, listeners or timers
 *    fails with RIFT_EBUSY: every object must be closed first.  Retained
 *    messages (rift_msg_retain) are not owned by the context: they may be
 *    released after rift_ctx_destroy.
 */
#ifndef RIFT_H
#define RIFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RIFT_VERSION_MAJOR 0
#define RIFT_VERSION_MINOR 1
#define RIFT_VERSION_PATCH 0

/* (major << 16) | (minor << 8) | patch of the library actually linked. */
unsigned rift_version(void);
/* "0.1.0"; static storage. */
const char *rift_version_string(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * XX(name, value, message).  Values that have an errno equivalent are the
 * negated errno, so a system error converts without a table; rift's own
 * conditions live above 4000.
 */
#define RIFT_ERRNO_MAP(XX)                                                    \
	XX(EPERM, -1, "operation not permitted")                              \
	XX(ENOENT, -2, "no such file or directory")                           \
	XX(EINTR, -4, "interrupted system call")                              \
	XX(EIO, -5, "i/o error")                                              \
	XX(EBADF, -9, "bad file descriptor")                                  \
	XX(EAGAIN, -11, "resource temporarily unavailable")                   \
	XX(ENOMEM, -12, "not enough memory")                                  \
	XX(EACCES, -13, "permission denied")                                  \
	XX(EBUSY, -16, "resource busy or locked")                             \
	XX(EEXIST, -17, "already exists")                                     \
	XX(ENODEV, -19, "no such device")                                     \
	XX(EINVAL, -22, "invalid argument")                                   \
	XX(EMFILE, -24, "too many open files")                                \
	XX(ENOSPC, -28, "no space left")                                      \
	XX(EPIPE, -32, "broken pipe")                                         \
	XX(ERANGE, -34, "value out of range")                                 \
	XX(ENOSYS, -38, "function not implemented")                           \
	XX(EPROTO, -71, "protocol error")                                     \
	XX(EMSGSIZE, -90, "message too long")                                 \
	XX(ENOTSUP, -95, "operation not supported")                           \
	XX(EAFNOSUPPORT, -97, "address family not supported")                 \
	XX(EADDRINUSE, -98, "address already in use")                         \
	XX(EADDRNOTAVAIL, -99, "address not available")                       \
	XX(ENETDOWN, -100, "network is down")                                 \
	XX(ENETUNREACH, -101, "network is unreachable")                       \
	XX(ECONNABORTED, -103, "connection aborted")                          \
	XX(ECONNRESET, -104, "connection reset by peer")                      \
	XX(ENOBUFS, -105, "no buffer space available")                        \
	XX(ENOTCONN, -107, "not connected")                                   \
	XX(ETIMEDOUT, -110, "timed out")                                      \
	XX(ECONNREFUSED, -111, "connection refused")                          \
	XX(EHOSTUNREACH, -113, "host is unreachable")                         \
	XX(EALREADY, -114, "operation already in progress")                   \
	XX(ECANCELED, -125, "operation canceled")                             \
	XX(EOF, -4001, "end of file: peer closed the connection")             \
	XX(ENAME, -4002, "host name lookup failed")                           \
	XX(ESESSION, -4003, "unknown or expired session")                     \
	XX(EMEMLOCK, -4004, "locked memory limit too low")                    \
	XX(ECLOSED, -4005, "handle is closing or closed")                     \
	XX(EUNKNOWN, -4999, "unknown error")

typedef enum rift_errno {
#define RIFT__ERR_ENUM(name, value, msg) RIFT_##name = (value),
	RIFT_ERRNO_MAP(RIFT__ERR_ENUM)
#undef RIFT__ERR_ENUM
} rift_errno;

/* Human message for a RIFT_E* code; static storage; never NULL. */
const char *rift_strerror(int err);
/* "RIFT_EINVAL" for RIFT_EINVAL; "RIFT_EUNKNOWN" for unknown codes. */
const char *rift_err_name(int err);

/* ------------------------------------------------------------------------ */
/* Handles and enums                                                        */
/* ------------------------------------------------------------------------ */

typedef struct rift_ctx rift_ctx;
typedef struct rift_listener rift_listener;
typedef struct rift_conn rift_conn;
typedef struct rift_msg rift_msg;
typedef struct rift_timer rift_timer;
typedef struct rift_mem rift_mem;

typedef enum rift_transport {
	RIFT_TRANSPORT_NONE = 0, /* not attached to any path */
	RIFT_TRANSPORT_TCP = 1,
	RIFT_TRANSPORT_RDMA = 2,
} rift_transport;

/* Name of a transport ("tcp", "rdma", "none"); static storage. */
const char *rift_transport_name(rift_transport t);

typedef enum rift_polling {
	RIFT_POLL_EVENT = 0,    /* rift_ctx_run sleeps in the kernel */
	RIFT_POLL_BUSY = 1,     /* rift_ctx_run never sleeps */
	RIFT_POLL_ADAPTIVE = 2, /* spin busy_poll_us, then sleep */
} rift_polling;

/*
 * Why an auto:// connection ended up on TCP instead of RDMA.  Stored on the
 * connection (rift_conn_fallback_reason) and counted per reason in the
 * context statistics.
 */
#define RIFT_FALLBACK_MAP(XX)                                                 \
	XX(NONE, "no fallback")                                               \
	XX(NO_DEVICE, "no RDMA device")                                       \
	XX(ADDR_RESOLVE, "RDMA address resolution failed")                    \
	XX(ROUTE_RESOLVE, "RDMA route resolution failed")                     \
	XX(REJECTED, "RDMA connection rejected by peer")                      \
	XX(TIMEOUT, "RDMA connection setup timed out")                        \
	XX(REG_MR, "memory registration failed")                              \
	XX(PEER_NO_RDMA, "peer has no RDMA")                                  \
	XX(PATH_LOST, "every RDMA path of the session failed")

typedef enum rift_fallback_reason {
#define RIFT__FB_ENUM(name, msg) RIFT_FALLBACK_##name,
	RIFT_FALLBACK_MAP(RIFT__FB_ENUM)
#undef RIFT__FB_ENUM
	RIFT_FALLBACK__COUNT
} rift_fallback_reason;

/* Human text for a fallback reason; static storage. */
const char *rift_fallback_reason_str(rift_fallback_reason r);

/*
 * Why a path of an established session went down (RIFT_EVENT_PATH_DOWN's
 * down_reason, rift_path_info, counted per reason in rift_ctx_stats and
 * the rift_path_downs_total series).  The event's status and message say
 * the rest.
 */
#define RIFT_PATH_DOWN_MAP(XX)                                                \
	XX(NONE, "not down")                                                  \
	XX(PORT, "its port or link went down")                                \
	XX(DEVICE, "its RDMA device was removed or failed")                   \
	XX(COMPLETION, "a work request completed in error")                   \
	XX(STALL, "its sends went unacknowledged past the retransmission "   \
		  "time")                                                     \
	XX(KEEPALIVE, "nothing from the peer for keepalive_timeout_ms")       \
	XX(TIMEOUT, "a handshake on it was not answered in time")             \
	XX(PEER, "the peer closed, reset or refused it")                      \
	XX(NETWORK, "a network error")                                        \
	XX(LOCAL, "this side ended it")

typedef enum rift_path_down_reason {
#define RIFT__PD_ENUM(name, msg) RIFT_PATH_DOWN_##name,
	RIFT_PATH_DOWN_MAP(RIFT__PD_ENUM)
#undef RIFT__PD_ENUM
	RIFT_PATH_DOWN__COUNT
} rift_path_down_reason;

/* Human text for a path-down reason; static storage. */
const char *rift_path_down_reason_str(rift_path_down_reason r);

/* ------------------------------------------------------------------------ */
/* Logging                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Each context logs what happens to its connections, up to the level of
 * its configuration (rift_config.log_level; the file's log.level; the
 * environment's RIFT_LOG).  A line is logged when its level is at most
 * the context's: DEBUG logs everything, OFF nothing.  Below the level a
 * log point costs one integer compare, so DEBUG lines may sit on the
 * data path.
 *
 *   ERROR  rift gave up on something: a connection that could not be
 *          established, a session that ended abnormally (no re-attach
 *          within session_grace_ms, the peer broke the protocol or
 *          reported an error)
 *   WARN   something broke and rift handles it: a path down (the session
 *          re-attaching), auto:// moving to TCP because RDMA setup failed
 *          or every RDMA path of a live session died, a peer's handshake
 *          or RESUME refused, a listener pausing accepts, a shared RDMA
 *          completion queue or an RDMA device failing
 *   INFO   the life of connections: connected, accepted, re-attached (on
 *          which path), each re-attach attempt and why it failed, every
 *          failed attempt of a first connect, auto:// using TCP where RDMA
 *          is not available, a session closed by its peer, an incoming
 *          connection whose handshake timed out, RDMA port state
 *          changes
 *   DEBUG  detail for developers: control frames (ACK, PING, ...), queue
 *          pairs, completion queues, the attempts of a first connect
 */
typedef enum rift_log_level {
	RIFT_LOG_OFF = 0,
	RIFT_LOG_ERROR = 1,
	RIFT_LOG_WARN = 2,  /* the default (unless RIFT_LOG says otherwise) */
	RIFT_LOG_INFO = 3,
	RIFT_LOG_DEBUG = 4,
} rift_log_level;

/* "off", "error", "warn", "info" or "debug", as RIFT_LOG and log.level
 * take them; "unknown" for other values.  Static storage. */
const char *rift_log_level_name(rift_log_level level);

/*
 * Where a context's lines go: to rift_config.log_cb when it is set, else
 * to stderr, one line each, "rift[PID] SECONDS LEVEL: MESSAGE" (SECONDS
 * of CLOCK_MONOTONIC), e.g.
 *   rift[4242] 8121.044203 warn: session 7b0241ceda3fdc18: path down: ...
 *
 * The callback gets rift_config.log_user, the line's level and the
 * message alone (no PID, time, level or newline; at most 511 bytes, cut
 * beyond), valid only during the call.  It is called on the thread running
 * the context's loop (rift_ctx_progress, rift_ctx_run, rift_ctx_run_mode)
 * and on the thread calling a function of the context that logs
 * (rift_connect, rift_listen, ...): with one context per thread, that
 * thread.  Contexts of several threads that share a callback call it from
 * each of them, concurrently: it must be thread-safe then.  It must not
 * call a rift function that takes a handle (rift_strerror,
 * rift_log_level_name and the like are fine), and it runs inside the
 * loop: it should return quickly.
 *
 * Lines that concern no context go to stderr, never to a callback, at the
 * level RIFT_LOG names (WARN when unset) as rift_config_init last read it:
 * the registered memory pool is the process's, shared by every context
 * and grown by a thread of its own, and threads rift runs beside the loops
 * (that one, the RDMA teardown thread) cannot call a context's callback on
 * its thread.
 */
typedef void (*rift_log_cb)(void *user, rift_log_level level,
			    const char *msg);

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

/*
 * Context configuration.  Always initialise with rift_config_init(&cfg),
 * which sets every field to its default, then change what you need.  Zero
 * is never "use default" after init: it means zero where zero is allowed,
 * and rift_ctx_create rejects it (RIFT_EINVAL, naming the field in
 * rift_ctx_last_error(NULL)) where it is not.  One default comes from the
 * environment: log_level is the level RIFT_LOG names (RIFT_LOG=debug),
 * RIFT_LOG_WARN when it is unset (or names no level: rift_ctx_create and
 * rift_config_env refuse that).  So RIFT_LOG reaches every context whose
 * program does not set log_level itself, even one that never calls
 * rift_config_env.
 */
typedef enum rift_cm {
	RIFT_CM_RDMACM = 0, /* rdma_cm: the standard, interoperable way */
	RIFT_CM_TCP = 1,    /* TCP side channel that shares fate with the QP */
} rift_cm;

/* How a port group uses its joined paths (group_policy). */
typedef enum rift_group_policy {
	/* One path carries the data; the others stand by, warm, and take
	 * over when it fails (the default). */
	RIFT_POLICY_ACTIVE_BACKUP = 0,
	/* Every joined path carries data: messages go to the path with room
	 * (each gets a share of the window by the rate the peer acknowledges
	 * what it sent), the receiver restores their order.  Needs a peer
	 * that takes data out of order (this version does); otherwise the
	 * connection runs active-backup. */
	RIFT_POLICY_ACTIVE_ACTIVE = 1,
} rift_group_policy;

#define RIFT_DEVICE_NAME_MAX 64
#define RIFT_BLOCK_CLASSES 5
/* group_local with its NUL: eight IPv6 addresses and their commas fit */
#define RIFT_GROUP_LOCAL_MAX 384

typedef struct rift_config {
	uint32_t size;                 /* set by rift_config_init */
	/* progress */
	rift_polling polling;          /* default RIFT_POLL_EVENT */
	uint32_t busy_poll_us;         /* adaptive: spin before sleeping, us */
	/* connection setup */
	uint32_t connect_timeout_ms;   /* one connect attempt, ms */
	uint32_t retries;              /* extra attempts per address, count */
	uint32_t retry_delay_ms;       /* between attempts, ms */
	/* session */
	uint32_t keepalive_interval_ms; /* idle time before a ping, ms */
	uint32_t keepalive_timeout_ms; /* silence that kills a path, ms */
	uint32_t session_grace_ms;     /* time to re-attach a broken session, ms */
	uint32_t ack_delay_ms;         /* longest wait before an explicit ack, ms */
	uint64_t send_window;          /* unacknowledged bytes per connection;
					  a connection uses the smaller of
					  both sides' (and a receiver that
					  stopped holds at most that) */
	uint64_t max_msg_size;         /* largest message accepted, bytes */
	/* tcp */
	uint32_t tcp_read_buffer;      /* per-path receive buffer, bytes */
	uint32_t listen_backlog;       /* listen(2) backlog, count */
	/* rdma: device and connection management */
	/* The device, port and GID of a client's RDMA paths: set, they
	 * bind each path to an address of that GID, device and port that
	 * reaches the peer (or fail saying none does); unset, the route
	 * chooses (docs/config.md, rdma.device) */
	char device[RIFT_DEVICE_NAME_MAX]; /* "" = the route's device */
	uint32_t port;                 /* device port; 0 = any active */
	int32_t gid_index;             /* -1 = the GID matching the address */
	rift_cm cm;                    /* default RIFT_CM_RDMACM */
	int fallback;                  /* auto:// may fall back to TCP (bool) */
	uint32_t rdma_retry_count;     /* QP retry_cnt, 0..6 (7 never fails) */
	uint32_t rdma_ack_timeout;     /* QP timeout: 4.096 us * 2^n, 1..31 */
	/* rdma: queues */
	uint32_t sq_depth;             /* send queue entries */
	uint32_t rq_depth;             /* receive queue entries */
	uint32_t max_send_sge;         /* scatter/gather entries per send */
	uint32_t inline_threshold;     /* sends up to this many bytes inline */
	/* entries of each completion queue the paths of a context share on
	 * a device: a CQ takes paths while their sq_depth + rq_depth add up
	 * to what it holds; made with at least one path's worth, at most
	 * the device's max_cqe (docs/config.md) */
	uint32_t cq_size;              /* entries per shared CQ */
	uint32_t poll_batch;           /* completions taken per poll, 1..64 */
	uint32_t qp_pool_count;        /* prepared QPs kept ready, count */
	uint32_t zero_copy_threshold;  /* receive in place from this size, bytes */
	/* messages from this size move by RDMA READ rendezvous, not a
	 * stream of copies; 0 = never */
	uint32_t rndv_threshold;       /* bytes */
	/* rdma: registered block pool.  One pool serves the process: the
	 * first context that needs it makes it, and a later context whose
	 * pool settings differ is refused where it needs it (RDMA paths
	 * fail, RIFT_EINVAL; rift_buf_alloc gives unregistered memory),
	 * the error naming each key that differs (docs/config.md). */
	uint32_t block_size[RIFT_BLOCK_CLASSES]; /* block classes, bytes */
	uint64_t pool_initial;         /* registered at start, bytes */
	uint64_t pool_increment;       /* registered per growth step, bytes */
	uint64_t pool_max;             /* registered at most, bytes */
	uint32_t pool_buckets;         /* free lists per class (contention) */
	uint32_t pool_thread_cache;    /* blocks cached per thread and class */
	uint32_t recv_reserve_pct;     /* pool share kept for receives, % */
	int huge_pages;                /* back the pool with huge pages (bool) */
	/* observability */
	int metrics;                   /* keep counters and histograms (bool) */
	/* logging (appended), see "Logging" above: lines up to log_level go
	 * to log_cb(log_user, ...), or to stderr when log_cb is NULL */
	rift_log_level log_level;      /* default RIFT_LOG_WARN, or RIFT_LOG */
	rift_log_cb log_cb;            /* NULL: stderr */
	void *log_user;                /* log_cb's first argument */
	/* rift_conn_close: longest wait for the peer to acknowledge what was
	 * queued and to answer CLOSE, after which the close is abortive;
	 * 0 = no wait (appended) */
	uint32_t linger_ms;            /* ms */
	/* Port groups (appended): paths a client connection keeps at most,
	 * the one carrying data and warm standbys through the URL's other
	 * addresses, which a failover resumes on without setting up a
	 * connection; 1 = one path, re-attaching by a new connection.  A URL
	 * of one address keeps one path. */
	uint32_t group_max_paths;      /* 1..8, default 2 */
	/* The local addresses a client's paths are bound to, numeric and
	 * comma-separated ("10.0.0.2,fd00::2"): entry i for the URL's
	 * address i, one entry for all of them; "" = routing's choice
	 * (docs/config.md, group.local; the URL option local= sets it per
	 * connection) (appended) */
	char group_local[RIFT_GROUP_LOCAL_MAX];
	/* Failback (port groups, active-backup): a client whose data path
	 * goes through a later address of its URL than one of its standbys
	 * moves its session back to that standby (the earlier address, the
	 * one it prefers) once the standby has stayed joined and answering
	 * this long, ms: a port that flaps is not used until stable.  An
	 * RIFT_EVENT_FAILBACK tells it.  0 = stay on the path that works
	 * (appended) */
	uint32_t group_failback_delay_ms; /* 0..3600000, default 2000 */
	/* auto:// back to RDMA: a client session that fell back to TCP
	 * (RDMA was not there at connect, or every RDMA path died) tries
	 * RDMA again after this long, ms: a standby path through RDMA,
	 * joined to the session, which takes it back as a failback does
	 * (stayed up group_failback_delay_ms, answered a probe); the wait
	 * doubles after each try that fails, up to 64 times this.  TCP
	 * stays its fallback.  Needs group_max_paths >= 2 on the client (the
	 * JOIN).  0 = stay on TCP (appended) */
	uint32_t fallback_return_ms;      /* 0..3600000, default 1000 */
	/* Port groups: whether a client's joined standbys carry data too
	 * (RIFT_POLICY_ACTIVE_ACTIVE) or only take over (the default); the
	 * client's choice is the connection's (appended) */
	rift_group_policy group_policy;
} rift_config;

void rift__config_init(rift_config *cfg, size_t size);
#define rift_config_init(cfg) rift__config_init((cfg), sizeof(*(cfg)))

/*
 * Check a configuration without creating anything.  Returns 0 or
 * RIFT_EINVAL with a message naming the field and its allowed range in
 * rift_ctx_last_error(NULL).
 */
int rift_config_check(const rift_config *cfg);

/*
 * Config files and environment overrides (docs/config.md lists every key).
 *
 * A config file is strict TOML: a [section] per layer ([progress],
 * [connect], [session], [tcp], [rdma], [pool], [metrics], [log],
 * [group]), the keys RDMA operators know (sq_depth, cq_size, gid_index,
 * ...), sizes as integers or as strings with a unit, all powers of 1024
 * ("64KiB", "64KB", "64k" are 65536; "1GB" is 2^30).  Unknown keys, wrong types
 * and out-of-range values are errors with the file, line and column.
 *
 * Later calls win, so the intended order gives file < environment < code:
 *
 *	rift_config_init(&cfg);                          defaults
 *	rc = rift_config_load(&cfg, path, err, sizeof(err));   the file
 *	rc = rift_config_env(&cfg, err, sizeof(err));    RIFT_<SECTION>_<KEY>
 *	cfg.sq_depth = 1024;                             code overrides both
 *
 * Load and env are all-or-nothing: on error *cfg is unchanged.  Both
 * remember, per struct, where each value they set came from, so that
 * rift_config_dump can say so.  They may run on different threads for
 * different structs.
 */
#define RIFT_CONFIG_ERRLEN 512 /* holds any message of load/env */

/*
 * Apply the config file at path on top of *cfg (initialised with
 * rift_config_init; keys absent from the file keep their value).  The
 * result must also pass rift_config_check.  Returns 0, or:
 *   RIFT_EINVAL  err = "path:line:col: message", e.g.
 *                "rift.toml:12:9: expected '=' after key 'sq_depth'" or
 *                "rift.toml:4:1: unknown key 'sq_dept' in [rdma]; did you
 *                mean 'sq_depth'?"  (a cross-field rule points at the key
 *                of this file it names, or is "path: message")
 *   RIFT_ENOENT, RIFT_EACCES, ...  the file could not be read;
 *                err = "path: cannot open: <reason>"
 *   RIFT_ENOMEM
 * err (errlen bytes; may be NULL) is always NUL-terminated and is "" on
 * success.  The file is read and closed before the call returns.
 */
int rift_config_load(rift_config *cfg, const char *path, char *err,
		     size_t errlen);

/*
 * Apply environment variables RIFT_<SECTION>_<KEY>, upper case, e.g.
 * RIFT_RDMA_SQ_DEPTH=512, RIFT_PROGRESS_POLLING=busy,
 * RIFT_POOL_BLOCK_SIZES=8KiB,64KiB,2MiB, RIFT_METRICS_ENABLED=false.
 * Values are written as in a file without quotes; booleans also take
 * 1/0, yes/no, on/off.  An unknown variable under a known section prefix
 * (RIFT_RDMA_SQ_DEPT) is an error, so typos are not silently ignored.
 * log.level has a short name besides RIFT_LOG_LEVEL: RIFT_LOG=info
 * (setting both is an error).  Returns 0, or RIFT_EINVAL with
 * err = "env RIFT_RDMA_SQ_DEPTH: message" naming the variable.  In a
 * set-user-ID program (secure execution, see secure_getenv(3)) the
 * environment is ignored and 0 is returned (rift_config_init then ignores
 * RIFT_LOG too).
 */
int rift_config_env(rift_config *cfg, char *err, size_t errlen);

/*
 * Print the effective configuration as TOML that rift_config_load accepts,
 * every key with a trailing comment saying where its value came from:
 *   # default            as set by rift_config_init
 *   # rift.toml:12       rift_config_load of that file, line 12
 *   # env RIFT_X_Y       rift_config_env (log.level: also rift_config_init,
 *                        from RIFT_LOG)
 *   # set in code        anything else (assigned after init/load/env)
 * Origins are remembered for the struct that load/env changed; a copy of
 * it keeps them while all its values equal the loaded ones, and a value
 * changed since reads "set in code".
 * Writes at most len bytes including the NUL (buf may be NULL if len is
 * 0).  Returns the length of the whole dump, as snprintf does (the output
 * was cut if that is >= len; about 3 KiB is enough, 3.5 KiB with a
 * device name of control characters, each written as a 6-byte escape),
 * or RIFT_EINVAL.  The dump loads back to the same values for every
 * configuration rift_config_check accepts (a device name must be UTF-8
 * text: TOML has no way to write a stray byte).
 */
int rift_config_dump(const rift_config *cfg, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Devices and locked memory                                                */
/* ------------------------------------------------------------------------ */

/*
 * What the machine's RDMA devices look like, as rdma-core's ibv_devinfo and
 * iproute2's `rdma link` show them: for tools (rift-info) and for programs
 * that pick a device, port or GID index before configuring rift.  No
 * context is needed.  The structs have a fixed size; the limits below bound
 * what one call reports, and the counts say how many there really are.
 */
#define RIFT_DEVICE_MAX_PORTS 4 /* ports reported per device */
#define RIFT_PORT_MAX_GIDS 32   /* non-empty GID entries reported per port */
#define RIFT_GID_STR_LEN 46     /* longest IPv6 text + NUL */
#define RIFT_NETDEV_NAME_LEN 16 /* longest interface name + NUL (IFNAMSIZ) */
#define RIFT_DEVICE_ERR_LEN 160 /* rift_device_info.error */

typedef enum rift_gid_type {
	RIFT_GID_IB = 0,      /* InfiniBand (and iWARP) */
	RIFT_GID_ROCE_V1 = 1, /* RoCE v1: Ethernet frames, one L2 segment */
	RIFT_GID_ROCE_V2 = 2, /* RoCE v2: UDP/IP, routable */
} rift_gid_type;

/* "IB", "RoCE v1", "RoCE v2" ("unknown" otherwise); static storage. */
const char *rift_gid_type_name(rift_gid_type t);

/*
 * One non-empty entry of a port's GID table; gid is its 16 bytes as IPv6
 * text.  On RoCE a GID is an IP address: ip is that address as `ip addr`
 * shows it ("10.0.0.1" for the IPv4-mapped GID ::ffff:10.0.0.1, the IPv6
 * text otherwise) and netdev the interface that holds it.  Both are "" on
 * InfiniBand.
 */
typedef struct rift_gid_info {
	uint32_t index;                    /* index in the table: gid_index */
	rift_gid_type type;                /* IB, RoCE v1 or RoCE v2 */
	char gid[RIFT_GID_STR_LEN];        /* "fe80::5054:ff:fe12:3456" */
	char ip[RIFT_GID_STR_LEN];         /* RoCE: "10.0.0.1"; IB: "" */
	char netdev[RIFT_NETDEV_NAME_LEN]; /* RoCE: "eth0"; IB: "" */
} rift_gid_info;

/*
 * One port.  state and phys_state are the numbers verbs reports, with the
 * names `rdma link` prints: state 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE,
 * 5 ACTIVE_DEFER; phys_state 1 SLEEP, 2 POLLING, 3 DISABLED, 4 TRAINING,
 * 5 LINK_UP, 6 LINK_ERROR_RECOVERY, 7 PHY_TEST (0 UNKNOWN).  The speed is
 * the active width times the per-lane rate of active_speed (2.5 Gb/s SDR
 * ... 100 Gb/s NDR); 0 when the device reports a value rift does not know.
 * gids[] holds the first min(gid_count, RIFT_PORT_MAX_GIDS) non-empty
 * entries in index order; the rest of the table is empty.
 */
typedef struct rift_port_info {
	uint32_t number;             /* 1-based, as ibv_devinfo -i takes it */
	int state;                   /* logical state, see above */
	char state_name[16];         /* "ACTIVE" */
	int phys_state;              /* physical state, see above */
	char phys_state_name[24];    /* "LINK_UP" */
	char link_layer[16];         /* "InfiniBand" or "Ethernet" */
	char netdev[RIFT_NETDEV_NAME_LEN]; /* interface of the first RoCE GID */
	uint32_t max_mtu;            /* largest path MTU, bytes */
	uint32_t active_mtu;         /* path MTU in use, bytes */
	uint32_t width;              /* lanes: 1, 2, 4, 8, 12; 0 unknown */
	uint32_t lane_mbps;          /* rate per lane, Mb/s; 0 unknown */
	uint64_t speed_mbps;         /* width * lane_mbps, Mb/s; 0 unknown */
	uint32_t lid;                /* InfiniBand LID; 0 on Ethernet */
	uint32_t sm_lid;             /* subnet manager LID; 0 on Ethernet */
	uint32_t lmc;                /* LID mask control, bits */
	uint32_t max_msg_size;       /* largest message, bytes */
	uint32_t port_cap_flags;     /* IBV_PORT_* capability bits */
	uint32_t gid_table_len;      /* table entries, empty ones included */
	uint32_t gid_count;          /* non-empty entries, count */
	rift_gid_info gids[RIFT_PORT_MAX_GIDS]; /* see above */
} rift_port_info;

/* Device limits, as ibv_devinfo -v prints them. */
typedef struct rift_device_limits {
	uint64_t max_mr_size;         /* largest registration, bytes */
	uint64_t page_size_cap;       /* supported page sizes, bit mask */
	uint32_t max_qp;              /* queue pairs */
	uint32_t max_qp_wr;           /* work requests per queue */
	uint32_t max_sge;             /* scatter/gather entries per WR */
	uint32_t max_sge_rd;          /* ... per RDMA READ */
	uint32_t max_cq;              /* completion queues */
	uint32_t max_cqe;             /* entries per completion queue */
	uint32_t max_mr;              /* memory registrations */
	uint32_t max_pd;              /* protection domains */
	uint32_t max_mw;              /* memory windows */
	uint32_t max_ah;              /* address handles */
	uint32_t max_srq;             /* shared receive queues */
	uint32_t max_srq_wr;          /* work requests per SRQ */
	uint32_t max_srq_sge;         /* scatter/gather entries per SRQ WR */
	uint32_t max_qp_rd_atom;      /* READs/atomics in flight, as target */
	uint32_t max_qp_init_rd_atom; /* ... as initiator */
	uint32_t atomic_cap;          /* 0 none, 1 within the HCA, 2 global */
	uint32_t local_ca_ack_delay;  /* 4.096 us * 2^n */
	uint32_t mw_type2;            /* 1: binds type 2 memory windows, which
					 rift's rendezvous needs (a peer READs
					 a large message through a window over
					 it alone); 0: large messages stream */
} rift_device_limits;

/*
 * One device.  When status is not 0 the device could not be opened or
 * queried (RIFT_EACCES: no permission on /dev/infiniband/uverbsN, ...):
 * error says which call failed, name is set, and so is whatever was read
 * before the failure; the rest is zero.
 */
typedef struct rift_device_info {
	char name[RIFT_DEVICE_NAME_MAX]; /* "mlx5_0", "rxe0": rdma.device */
	int status;                      /* 0 or RIFT_E*, see above */
	char error[RIFT_DEVICE_ERR_LEN]; /* why status is not 0, or "" */
	char transport[16];              /* "InfiniBand" (also RoCE), "iWARP" */
	uint64_t node_guid;              /* host byte order */
	char node_guid_str[20];          /* "5054:00ff:fe12:3456" */
	uint64_t sys_image_guid;         /* host byte order */
	char fw_ver[64];                 /* firmware version, "" if none */
	uint32_t vendor_id;              /* IEEE OUI */
	uint32_t vendor_part_id;         /* vendor's part number */
	uint32_t hw_ver;                 /* hardware revision */
	uint32_t port_count;             /* physical ports, count */
	rift_port_info ports[RIFT_DEVICE_MAX_PORTS]; /* the first ports */
	rift_device_limits limits;       /* see rift_device_limits */
} rift_device_info;

/*
 * List the RDMA devices libibverbs sees and fill out[0 .. max-1] (out may
 * be NULL when max is 0, to count them).  Returns the number of devices,
 * which may be larger than max (only max are filled, like snprintf), or:
 *   0            no device.  That is not an error: err then says why when
 *                the library can tell, e.g. "the kernel has no RDMA
 *                support loaded (ibv_get_device_list: function not
 *                implemented)", else it is "".
 *   RIFT_EINVAL  max < 0, or out NULL with max > 0
 *   RIFT_ENOMEM, RIFT_EACCES, ...  listing failed; err names the call
 * A device that cannot be opened or queried is listed with status and
 * error set; it does not fail the call.  err (errlen bytes; may be NULL if
 * errlen is 0) is always NUL-terminated.  The caller owns out; nothing is
 * kept: each device is opened briefly and closed again.  Needs no context;
 * any thread may call it.  A rift_device_info is about 16 KiB, so put
 * arrays of them on the heap.
 */
int rift_devices(rift_device_info *out, int max, char *err, size_t errlen);

/*
 * Locked memory (RLIMIT_MEMLOCK) the registered block pool configured in
 * cfg pins, in bytes, counted the way the pool registers it: it grows in
 * regions of pool_increment bytes rounded up to whole blocks of the
 * largest class (one such block at least), and holds as many whole
 * regions as fit in pool_max (one at least).
 *   returns      what is locked once the pool is registered with a device
 *                (by the first RDMA path of the process): pool_initial
 *                rounded up to whole regions, at most the maximum; 0 if
 *                pool_initial is 0
 *   *max_bytes   (if max_bytes is not NULL) what is locked once the pool
 *                has grown to pool_max
 * The pool is registered with every device the process uses and the
 * kernel charges each registration, so multiply by the number of devices
 * in use.  cfg NULL means the defaults.  A cfg that fails
 * rift_config_check gives UINT64_MAX for both (no limit satisfies it;
 * rift_ctx_last_error(NULL) says why).
 */
uint64_t rift_config_memlock_need(const rift_config *cfg, uint64_t *max_bytes);

/* ------------------------------------------------------------------------ */
/* Context: the event loop                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Create a context.  cfg may be NULL for defaults; it is copied (log_cb
 * and log_user too: the callback is called until rift_ctx_destroy
 * returns).  Returns 0 and *out, or RIFT_EINVAL (bad config, RIFT_LOG set
 * to no level's name, or out NULL; see rift_ctx_last_error(NULL)),
 * RIFT_ENOMEM, RIFT_EMFILE, with *out set to NULL.
 */
int rift_ctx_create(rift_ctx **out, const rift_config *cfg);

/*
 * Destroy a context.  Fails with RIFT_EBUSY, changing nothing, while it
 * still owns connections, listeners or timers (including ones whose close
 * callback has not run yet), connections still lingering after
 * rift_conn_close aside: those are aborted, as rift_conn_abort would (their
 * peers see RIFT_ECONNRESET), and their close callbacks run from inside
 * this call.  Messages retained from its connections stay valid, with the
 * memory they lie in, until each is released.
 */
int rift_ctx_destroy(rift_ctx *ctx);

/*
 * The one fd that becomes readable when the context has work: socket
 * events, timers, wake-ups.  Put it in your own epoll/poll loop and call
 * rift_ctx_progress() when it is readable.  Owned by the context.
 * RIFT_EINVAL for a NULL ctx.
 */
int rift_ctx_fd(const rift_ctx *ctx);

/*
 * Do all work that is ready without blocking: I/O, expired timers, deferred
 * callbacks, batched sends.  Returns the number of events handled (0 when
 * idle) or a negative RIFT_E* code for a context-level failure.
 */
int rift_ctx_progress(rift_ctx *ctx);

/*
 * Run the loop until rift_ctx_stop() is called or timeout_ms passes
 * (timeout_ms < 0: no timeout), even when there was work long before:
 * rift_ctx_run_mode(ctx, RIFT_RUN_DEFAULT, timeout_ms).  Waits according to
 * the polling mode.  Returns 0 when stopped, RIFT_ETIMEDOUT when the
 * timeout passed.  To wait until something happened, use RIFT_RUN_ONCE.
 */
int rift_ctx_run(rift_ctx *ctx, int timeout_ms);

/* How rift_ctx_run_mode runs the loop: the modes of libuv's uv_run(). */
typedef enum rift_run_mode {
	RIFT_RUN_DEFAULT = 0, /* until rift_ctx_stop or the timeout */
	RIFT_RUN_ONCE = 1,    /* until a round did work, stop or the timeout */
	RIFT_RUN_NOWAIT = 2,  /* one round that never waits */
} rift_run_mode;

/*
 * Run the loop in one of the modes above.  Rounds wait according to the
 * polling mode (event: asleep in the kernel; busy: spinning; adaptive:
 * spinning busy_poll_us after the last work, then asleep); timeout_ms < 0
 * means no timeout.
 *
 *  RIFT_RUN_DEFAULT  as rift_ctx_run: rounds until rift_ctx_stop() or
 *                    timeout_ms.  Returns 0 when stopped, RIFT_ETIMEDOUT.
 *  RIFT_RUN_ONCE     rounds until one did work, and returns right after it
 *                    with the number of events handled (> 0), however long
 *                    timeout_ms is.  Work is whatever a round dispatches:
 *                    I/O, RDMA completions, timers (rift's own too, such as
 *                    keepalives), a rift_ctx_wake(), held messages
 *                    delivered, close callbacks.  So a callback of yours
 *                    may not have run: test your own condition and call
 *                    again, the fast way to wait for something:
 *                        int rc = 0;
 *                        while (!done && rc >= 0)   (rc < 0: 5 s idle)
 *                                rc = rift_ctx_run_mode(ctx, RIFT_RUN_ONCE,
 *                                                       5000);
 *                    Returns 0 when rift_ctx_stop() came before any work,
 *                    RIFT_ETIMEDOUT when timeout_ms passed with none.  At
 *                    least one round runs, also with timeout_ms 0.
 *  RIFT_RUN_NOWAIT   one round that never waits, whatever the polling mode;
 *                    timeout_ms is ignored.  The same as rift_ctx_progress():
 *                    returns the number of events handled, 0 when nothing
 *                    was ready.
 *
 * A rift_ctx_stop(), from another thread or from a callback, makes a
 * DEFAULT or ONCE call return, the one running or else the next; that call
 * uses it up (a RIFT_RUN_ONCE call whose round did work returns its count,
 * and the stop is used up all the same).  NOWAIT leaves a stop pending.
 * Returns RIFT_EINVAL for an unknown mode, or a negative RIFT_E* code for a
 * context-level failure, as rift_ctx_progress.  Call it on ctx's thread,
 * not from inside one of ctx's callbacks.
 */
int rift_ctx_run_mode(rift_ctx *ctx, rift_run_mode mode, int timeout_ms);

/* Make rift_ctx_run, or rift_ctx_run_mode in DEFAULT or ONCE mode, return.
 * Thread-safe. */
void rift_ctx_stop(rift_ctx *ctx);

/* Make rift_ctx_fd readable and a waiting rift_ctx_run or
 * rift_ctx_run_mode wake up (RIFT_RUN_ONCE then returns).  Thread-safe. */
int rift_ctx_wake(rift_ctx *ctx);

/*
 * Milliseconds until the next timer (0 if work is pending, -1 if none,
 * RIFT_EINVAL for a NULL ctx).
 * For external loops that want to sleep exactly as long as rift allows.
 * Under busy and adaptive polling, RDMA completions make rift_ctx_fd()
 * readable only after this call (they are polled without events while
 * the loop spins): call it before sleeping on the fd, and if it returns
 * 0, call rift_ctx_progress() before sleeping.
 */
int rift_ctx_timeout(rift_ctx *ctx);

/*
 * Human message for the last failed call on this context (or, with NULL,
 * the last failed rift_ctx_create on this thread), e.g.
 * "url 'tcp://host': missing port".  Valid until the next failing call.
 */
const char *rift_ctx_last_error(const rift_ctx *ctx);

typedef struct rift_ctx_stats {
	uint32_t size;                 /* set by rift_ctx_stats_init */
	uint64_t conns_active;         /* open connections, count */
	uint64_t conns_opened;         /* connect + accept, count */
	uint64_t listeners_active;     /* open listeners, count */
	uint64_t paths_active;         /* attached paths, count */
	uint64_t protocol_errors;      /* paths closed with RIFT_EPROTO */
	uint64_t sessions_resumed;     /* successful re-attaches */
	uint64_t sessions_expired;     /* sessions that ran out of grace */
	uint64_t fallbacks[RIFT_FALLBACK__COUNT]; /* by reason, count */
	uint64_t progress_calls;       /* rift_ctx_progress calls, count */
	/* Metrics (docs/metrics.md); all connections, closed ones too. */
	uint64_t msgs_sent;            /* accepted by rift_conn_send*, count */
	uint64_t bytes_sent;           /* payload bytes of msgs_sent */
	uint64_t msgs_recv;            /* delivered to on_recv, count */
	uint64_t bytes_recv;           /* payload bytes of msgs_recv */
	uint64_t wc_errors[33];        /* failed completions by ibv_wc_status
					  0..31, [RIFT_WC_STATUS_OTHER] other */
	uint64_t connect_attempts;     /* client transport connects, count */
	uint64_t connect_retries;      /* attempts after a failed one, count */
	uint64_t credit_stalls;        /* rdma: sender out of peer credits
					  with data waiting, episodes */
	uint64_t failovers;            /* re-attaches, both roles, count */
	uint64_t path_downs;           /* PATH_DOWN events, count */
	uint64_t keepalive_timeouts;   /* paths failed for silence, count */
	/* The registered block pool this context uses, shared by every
	 * context of the process (0 while the context has not needed it:
	 * an RDMA path or rift_buf_alloc makes it), read with the stats: */
	uint64_t pool_registered_bytes; /* its regions and large buffers,
					  bytes */
	uint64_t pool_blocks_in_use[RIFT_BLOCK_CLASSES]; /* handed out, by
					  block class, count */
	uint64_t accept_pauses;        /* listeners paused for lack of fds or
					  memory (EMFILE & co), count */
	/* RDMA rendezvous: large messages the peer READs from the sender */
	uint64_t rndv_sends;           /* sent as a descriptor, count */
	uint64_t rndv_recvs;           /* received by RDMA READ, count */
	uint64_t rndv_read_bytes;      /* bytes those READs moved */
	uint64_t rndv_refused;         /* descriptors refused: a buffer the
					  peer does not own, count */
	uint64_t qp_pool_prepared;     /* rdma: QP sets made ahead, count */
	uint64_t qp_pool_hits;         /* accepts served by a prepared set */
	uint64_t qp_pool_misses;       /* accepts that made their own */
	/* RDMA completion queues: the paths of a context on a device share
	 * them (rdma.cq_size) */
	uint64_t cqs;                  /* shared CQs open now, count */
	uint64_t wc_stale;             /* completions dropped because their
					  path was already destroyed (its QP
					  gone, or its number reused), count */
	uint64_t wc_dropped;           /* completions dropped because their
					  path had failed (flushed requests,
					  sends it no longer waits for), count */
	uint64_t msgs_retained_in_place; /* rift_msg_retain kept the
					  registered memory a message arrived
					  in instead of copying it, count */
	uint64_t rndv_bind_failures;   /* paths that could not bind a memory
					  window for a rendezvous (device
					  limit, memory): they stream large
					  messages from then on, count */
	uint64_t connect_races;        /* attempts started beside a slow one
					  to the next address (racing), count */
	uint64_t connect_alts;         /* RDMA attempts through the
					  listener's cm=tcp side channel
					  because rdma_cm got no answer there
					  (docs/config.md, rdma.cm), count */
	uint64_t resumes_refused;      /* RESUMEs (and JOINs of standby
					  paths) refused, the session they
					  named untouched (rift_listen); in
					  protocol_errors too, count */
	uint64_t closes_aborted;       /* established connections whose
					  close did not end in order:
					  rift_conn_abort, linger_ms passed,
					  the session ended first
					  (rift_conn_close), count */
	uint64_t rndv_streamed;        /* rdma: copied sends of rendezvous
					  size streamed through the send
					  slots because no registered buffer
					  was ready (rift_conn_send does not
					  wait for one to be registered; the
					  pool registers it for the next),
					  count */
	uint64_t failbacks;            /* client sessions moved back to a
					  path through an address they
					  prefer (RIFT_EVENT_FAILBACK),
					  count */
	uint64_t standby_promotions;   /* client failovers that resumed on
					  a standby path, no connection set
					  up (port groups), count */
	uint64_t path_downs_by[RIFT_PATH_DOWN__COUNT]; /* path_downs by
					  reason, count */
	uint64_t failbacks_deferred;   /* failbacks put off because the
					  standby did not answer a probe
					  in time (port groups), count */
	uint64_t fallback_returns;     /* auto:// client sessions moved
					  back from TCP to RDMA
					  (fallback_return_ms), count */
	uint32_t pool_growing;         /* 1 while the registered pool
					  registers memory ahead of need
					  (a thread of its own: it competes
					  for the CPU), or is about to; 0
					  when settled (gauge) */
	uint64_t peer_path_downs;      /* active-active: paths failed at
					  once because the peer said its
					  end had failed, count (appended) */
	/* One-sided access (rift_conn_read / rift_conn_write), this side
	 * asking: operations that completed with status 0, and their
	 * bytes; and for the peer: pieces served, and operations refused
	 * (range, access, revoked, forged, another session's token: on
	 * either side), count (appended) */
	uint64_t rma_reads;
	uint64_t rma_read_bytes;
	uint64_t rma_writes;
	uint64_t rma_write_bytes;
	uint64_t rma_served;
	uint64_t rma_refused;
	/* ... of this side's operations: pieces moved by the adapter alone
	 * (one-sided RDMA READ or WRITE through the peer's window), and
	 * operations done again through the peer's library after a piece
	 * failed (its path died, or its key no longer served), count
	 * (appended) */
	uint64_t rma_direct;
	uint64_t rma_redone;
} rift_ctx_stats;

void rift__ctx_stats_init(rift_ctx_stats *st, size_t size);
#define rift_ctx_stats_init(st) rift__ctx_stats_init((st), sizeof(*(st)))
/* Fill *st (initialised with rift_ctx_stats_init). */
int rift_ctx_stats_get(rift_ctx *ctx, rift_ctx_stats *st);

/* ------------------------------------------------------------------------ */
/* Timers                                                                   */
/* ------------------------------------------------------------------------ */

typedef void (*rift_timer_cb)(rift_timer *t, void *user);

/* Create a stopped timer owned by ctx. */
int rift_timer_create(rift_ctx *ctx, rift_timer_cb cb, void *user,
		      rift_timer **out);
/*
 * (Re)start: cb runs after timeout_ms, then every repeat_ms if repeat_ms > 0.
 * Restarting a running timer moves it.
 */
int rift_timer_start(rift_timer *t, uint64_t timeout_ms, uint64_t repeat_ms);
/* Stop; cb will not run until started again.  Idempotent. */
void rift_timer_stop(rift_timer *t);
/* Stop and free the timer immediately.  It may be called from its own cb. */
void rift_timer_destroy(rift_timer *t);

/* ------------------------------------------------------------------------ */
/* Connections                                                              */
/* ------------------------------------------------------------------------ */

/*
 * URLs:  scheme://host:port[,host:port...][?key=value&...]
 *   scheme  tcp (TCP only), rdma (RDMA only, never falls back), auto (RDMA,
 *           falling back to TCP with a recorded reason).
 *   host    IPv4 literal, IPv6 literal in brackets ([::1]), or a host name.
 *   A comma list names several addresses of one multi-homed peer: connect
 *   tries them in order and re-attaches through any of them.
 *   options (rift_connect only) settings of this connection over the
 *           context's, named and written as in the config file and
 *           checked the same way (values as in RIFT_* variables,
 *           docs/config.md): connect_timeout_ms (or
 *           connection_timeout_ms), retries, retry_delay_ms, fallback,
 *           keepalive_interval_ms, keepalive_timeout_ms (this side's
 *           keepalive), grace_ms (or session_grace_ms: how long this
 *           client keeps re-attaching), cm (rdmacm or tcp: how its RDMA
 *           paths are set up), local (group.local: the local address
 *           its paths to each address leave from), e.g.
 *           "rdma://10.0.0.2:7788?cm=tcp&connect_timeout_ms=500".  Any
 *           other key (the context's queues, pool or polling are shared
 *           by its connections), a value out of range, an option given
 *           twice, one that cannot apply to the scheme (cm on tcp://,
 *           fallback but on auto://), local with more than one entry
 *           but fewer than the URL has addresses or with an entry of
 *           another family than its address, or any option in
 *           rift_listen's URL is RIFT_EINVAL saying which.
 * A bad URL is RIFT_EINVAL with the problem in rift_ctx_last_error().
 */

typedef enum rift_event_type {
	RIFT_EVENT_CONNECTED = 1,    /* session established */
	RIFT_EVENT_ERROR = 2,        /* establishing failed; status says why */
	RIFT_EVENT_DISCONNECTED = 3, /* an established session ended */
	RIFT_EVENT_PATH_DOWN = 4,    /* path lost, session re-attaching */
	RIFT_EVENT_PATH_CHANGED = 5, /* session re-attached on a new path */
	RIFT_EVENT_WRITABLE = 6,     /* send window open after RIFT_EAGAIN */
	RIFT_EVENT_FAILBACK = 7,     /* session moved back to a path through
					an address it prefers (appended) */
	RIFT_EVENT_WRITTEN = 8,      /* the peer wrote into an export with
					rift_conn_write_notify (appended) */
	RIFT_EVENT_PATH_UP = 9,      /* a standby path joined the session
					(port groups; appended) */
} rift_event_type;

/* Name of an event type ("connected", ...); static storage. */
const char *rift_event_name(rift_event_type t);

/*
 * Delivered to on_event.  Strings are valid only during the callback.
 *  CONNECTED      transport, peer and local address of the first path.
 *  ERROR          status: why the connection could not be established.
 *                 No further event follows; close the connection.
 *  DISCONNECTED   status: 0 if the peer closed it in order
 *                 (rift_conn_close): every message it sent before closing
 *                 was delivered to on_recv before this event.  Else why
 *                 the session died: RIFT_ECONNRESET: the peer aborted
 *                 (rift_conn_abort, its linger_ms ran out, its context was
 *                 destroyed), messages it sent may be missing;
 *                 RIFT_ETIMEDOUT: no re-attach within the grace time;
 *                 RIFT_EPROTO: the peer broke the protocol; RIFT_ESESSION:
 *                 the peer no longer knows the session.  A peer that could
 *                 not tell its abort (no path was attached) shows as one
 *                 of the last two.  Messages the peer had not
 *                 acknowledged are lost with the session (a peer that
 *                 closed acknowledges and discards what arrives after its
 *                 close).
 *  PATH_DOWN      status: why the path broke.  Sending still works (it is
 *                 buffered within the send window) and will be replayed.
 *                 With standby 1 (port groups): a standby path broke
 *                 (transport, peer, local and device are its), the data
 *                 path carries on and nothing is replayed; rift opens
 *                 another in the background.
 *  PATH_UP        (port groups) a standby path joined the session: it is
 *                 set up and ready for a failover to take over at once
 *                 (with group.policy active-active it carries data too);
 *                 transport, peer, local and device are its, standby 1.
 *  PATH_CHANGED   transport, peer and local address of the new path.
 *  WRITABLE       a send that returned RIFT_EAGAIN may be retried.
 *  FAILBACK       (client, port groups) the session moved from a working
 *                 path back to one through an earlier address of its URL
 *                 that had come back and stayed up group_failback_delay_ms,
 *                 or (auto://) from TCP back to RDMA once RDMA worked
 *                 again (fallback_return_ms; the message says "auto:// is
 *                 on rdma again", the fallback reason is NONE again):
 *                 transport, peer and local address of that path, message
 *                 saying from where.  No PATH_DOWN precedes it; nothing is
 *                 lost, doubled or reordered (the peer sees PATH_CHANGED).
 *  WRITTEN        (the exporter's side) the peer's rift_conn_write_notify
 *                 completed here: the bytes are in place, and every
 *                 message the peer sent before the write was delivered
 *                 first; mem, offset, length: where, tag: the writer's.
 *                 One event per write, after its last byte.
 * Every event of a path (CONNECTED, PATH_DOWN, PATH_CHANGED, FAILBACK,
 * PATH_UP) names its local device and port in device ("rxe0:1"; "" over
 * TCP).
 * Events may be added: on_event ignores types it does not know.
 */
typedef struct rift_event {
	rift_event_type type;
	int status;               /* 0 or RIFT_E* */
	rift_transport transport; /* transport of the current path */
	const char *peer;         /* "tcp://127.0.0.1:7788" or "" */
	const char *message;      /* readable detail, never NULL */
	/* the current path's local address, "10.0.0.2" or "::1" (no
	 * port), or "" (appended) */
	const char *local;
	/* PATH_DOWN: why the path went down; RIFT_PATH_DOWN_NONE for the
	 * other events (appended) */
	rift_path_down_reason down_reason;
	/* WRITTEN: the region written (the exporter's own handle), the
	 * offset in it and the length of what rift_conn_write_notify
	 * wrote, and the writer's tag; NULL and zeros for the other events
	 * (appended) */
	struct rift_mem *mem;
	uint64_t offset;
	uint64_t length;
	uint64_t tag;
	/* The local device and port of the path the event is about,
	 * "rxe0:1", or "" (TCP, none) (appended) */
	const char *device;
	/* 1 when the event is about a standby path of a port group
	 * (PATH_UP, and PATH_DOWN of a standby), 0 when about the data
	 * path (appended) */
	int standby;
} rift_event;

typedef struct rift_conn_callbacks {
	/* Connection life cycle; see rift_event.  May be NULL. */
	void (*on_event)(rift_conn *conn, const rift_event *ev);
	/*
	 * One whole message, in order, exactly once.  msg is borrowed: valid
	 * until on_recv returns unless rift_msg_retain() is called.  May be
	 * NULL (messages are then dropped after being acknowledged).
	 */
	void (*on_recv)(rift_conn *conn, rift_msg *msg);
} rift_conn_callbacks;

/*
 * Open a connection to url.  Returns 0 with *out set, after which exactly
 * one of CONNECTED or ERROR is delivered.  Returns RIFT_EINVAL for a bad
 * URL, RIFT_ENOTSUP for rdma:// where RDMA is not available, and for
 * auto:// there when fallback is off (the reason is in
 * rift_ctx_last_error), RIFT_ENOMEM, with *out set to NULL.  cbs may be
 * NULL (no callbacks).  user is returned by rift_conn_user.
 * Never blocks: numeric addresses are used at once; host names are
 * resolved on a thread of rift's (getaddrinfo), the loop running on
 * meanwhile, and a name that does not resolve ends the connection with
 * ERROR, status RIFT_ENAME and getaddrinfo's reason in the message.
 * (rift_listen resolves its address in the call: use a numeric one where
 * that must not block.)
 */
int rift_connect(rift_ctx *ctx, const char *url,
		 const rift_conn_callbacks *cbs, void *user, rift_conn **out);

/*
 * Accept callback: conn is a new connection that has completed its
 * handshake (no CONNECTED event is delivered for it), using the listener's
 * callbacks and user pointer until changed.  The application owns it and
 * must close it.
 */
typedef void (*rift_accept_cb)(rift_listener *l, rift_conn *conn);

/*
 * Listen on url (host may be empty, "0.0.0.0" or "[::]"; port 0 picks a
 * free port, see rift_listener_port).  Only the first address of a list is
 * used.  A session re-attaches only through the listener that accepted
 * it, proving the secret it was given then (its id is not enough; a refused
 * RESUME leaves the session as it was, counted in resumes_refused): one
 * listener on "0.0.0.0" or "[::]" serves every address of a multi-homed
 * server.  Returns RIFT_EINVAL, RIFT_EADDRINUSE, RIFT_EACCES, ...
 */
int rift_listen(rift_ctx *ctx, const char *url, const rift_conn_callbacks *cbs,
		void *user, rift_accept_cb on_accept, rift_listener **out);

/* Bound TCP port of a listener; RIFT_EINVAL for NULL. */
int rift_listener_port(const rift_listener *l);
void *rift_listener_user(const rift_listener *l);

/*
 * Stop listening.  Sessions already accepted stay open; sessions that were
 * waiting to re-attach through this listener can no longer do so.  close_cb
 * (may be NULL) runs once, from a later progress call; the handle is freed
 * after it returns.
 */
void rift_listener_close(rift_listener *l, void (*close_cb)(rift_listener *l));

/*
 * Send one message of len bytes (0 allowed, up to max_msg_size).  The data
 * is copied; the call never blocks (nor registers memory: over RDMA a
 * message of rendezvous size is copied into a registered buffer when one
 * is ready, else streamed while the pool's thread registers one for the
 * next; rift_ctx_stats.rndv_streamed counts those).  Messages are delivered
 * whole, in order, exactly once, across path changes.  Sends go out from
 * the next progress round, together; a reply sent from on_recv of a
 * message that arrived alone may leave from inside the call (over RDMA:
 * request/reply latency is the time from a completion to the reply's
 * doorbell).  No callback runs from inside the call either way.
 * Returns 0, RIFT_EINVAL (conn NULL, or data NULL with len > 0),
 * RIFT_EAGAIN (the send window is full, or a one-sided operation called
 * before waits for room in it: wait for WRITABLE),
 * RIFT_EMSGSIZE (longer than this side's max_msg_size, or than the peer's,
 * which its handshake told; rift_conn_last_error says which), RIFT_ENOTCONN
 * (the connection failed or was disconnected), RIFT_ECLOSED (closing).
 * A new connection accepts sends at once: they are queued within the
 * send window and go out when the session attaches (CONNECTED).  If one
 * of them turns out longer than the peer's max_msg_size, the connection
 * fails with ERROR, status RIFT_EMSGSIZE; if the connection fails, what
 * was queued is dropped with it.
 */
int rift_conn_send(rift_conn *conn, const void *data, size_t len);

/*
 * Delivery confirmation.  As rift_conn_send, and cb(conn, user, status)
 * runs exactly once, from a later progress call: with status 0 once the
 * peer acknowledged the message (its on_recv returned for it: the peer's
 * application has it; held by rift_conn_recv_stop is not yet), or with
 * the reason the session ended first (RIFT_ETIMEDOUT, RIFT_EPROTO,
 * RIFT_ECONNRESET, ...; before the DISCONNECTED or ERROR event).  What
 * DRBD's protocol C or a key-value store's WAIT are built on.  After
 * rift_conn_close or rift_conn_abort no such callback runs (as no other
 * does): an orderly close_cb (rift_conn_last_error "") says every queued
 * message was delivered.  On a non-zero return cb never runs.
 */
typedef void (*rift_send_cb)(rift_conn *conn, void *user, int status);
int rift_conn_send_cb(rift_conn *conn, const void *data, size_t len,
		      rift_send_cb cb, void *user);

/*
 * Gather send: one message made of iovcnt pieces, in order (struct iovec
 * of <sys/uio.h>; no more than 64 pieces), without the caller copying
 * them into one buffer first.  Otherwise as rift_conn_send; cb (may be
 * NULL) as rift_conn_send_cb.
 */
struct iovec;
int rift_conn_sendv(rift_conn *conn, const struct iovec *iov, int iovcnt,
		    rift_send_cb cb, void *user);

/*
 * Zero-copy sends: allocate a message buffer, fill it, and hand it over with
 * rift_conn_send_buf.  On success the buffer belongs to rift (do not touch
 * or free it); on failure it stays the caller's, to retry or free with
 * rift_buf_free.  Buffers may be used on any connection of the same context.
 * Over RDMA the buffer is registered memory (so a large message moves by
 * RDMA READ from it, with no copy): while the context's pool registers a
 * region for it, which only a pool still growing to its traffic's need
 * does, rift_buf_alloc waits (milliseconds on hardware; rift_conn_send
 * never does: its copy goes to unregistered memory meanwhile).  Except
 * while a session of the process re-attaches: then it never waits (a
 * re-attach must not wait behind it), and the buffer is ordinary memory,
 * whose message goes by copy.
 */
void *rift_buf_alloc(rift_ctx *ctx, size_t len);
void rift_buf_free(rift_ctx *ctx, void *buf);
int rift_conn_send_buf(rift_conn *conn, void *buf, size_t len);

/*
 * Stop / restart delivering messages (on_recv).  While stopped, rift keeps
 * reading the connection, so the peer's acknowledgements and keepalives
 * still arrive, and holds the messages that come in without acknowledging
 * them: a busy sender fills its window and gets RIFT_EAGAIN.  This is
 * backpressure; what is held is bounded by the peer's send window.  An
 * application that stops receiving until its own sends are WRITABLE again
 * cannot deadlock with a peer doing the same.  After rift_conn_recv_start
 * the held messages are delivered, in order, from the next progress call
 * (never from inside rift_conn_recv_start).  Messages still held when the
 * session ends are dropped, like everything the peer had not seen
 * acknowledged.
 */
int rift_conn_recv_stop(rift_conn *conn);
int rift_conn_recv_start(rift_conn *conn);

/*
 * Close the connection in order.  The messages queued before the call are
 * still delivered: the session lingers, re-attaching and replaying across
 * broken paths as ever, until the peer has acknowledged every one (it
 * acknowledges a message once on_recv ran for it), then sends CLOSE; the
 * peer answers with its own and sees DISCONNECTED with status 0, after the
 * last message.  Both ends may close at once: each delivers its queue, and
 * a CLOSE crossing the other's ends both.
 *
 * linger_ms (rift_config) bounds the wait.  When it passes first (the
 * peer stopped receiving, no path re-attached in time), the close becomes
 * abortive, as rift_conn_abort's: the queue is dropped and the peer sees
 * DISCONNECTED with RIFT_ECONNRESET.  With linger_ms 0 a close is orderly
 * only if nothing is unacknowledged and a path is attached.  A session
 * that ends for its usual reasons meanwhile (grace time, the peer's
 * abort) ends the close with it.
 *
 * From the call on, sends are refused (RIFT_ECLOSED) and no callback but
 * close_cb runs: messages that arrive meanwhile, and those held by
 * rift_conn_recv_stop, are acknowledged and discarded (never delivered),
 * so a peer closing at the same time is not held up by this end.
 * close_cb (may be NULL) runs once, from a later progress call, when the
 * close has ended: about a round trip after the last acknowledgement, at
 * most linger_ms after the call (an abortive end then waits, as
 * rift_conn_abort's, for the ERROR frame to leave); the handle is freed
 * after it returns.
 * Inside close_cb, rift_conn_last_error() says how it ended: "" when it
 * was orderly (everything acknowledged, CLOSE sent), else why not, e.g.
 * "close: linger_ms (300 ms) passed with 12 messages (786432 bytes)
 * unacknowledged" (counted in rift_ctx_stats.closes_aborted).  A
 * connection not established yet, or that had ended already (ERROR,
 * DISCONNECTED), closes at once, its last error kept.  A second close is
 * ignored; rift_conn_abort cuts a linger short.
 */
void rift_conn_close(rift_conn *conn, void (*close_cb)(rift_conn *conn));

/*
 * Close the connection abortively: unsent and unacknowledged messages are
 * dropped, held ones too, nothing more is sent or delivered, and the peer
 * is told with an ERROR frame on the path attached now: it sees
 * DISCONNECTED with RIFT_ECONNRESET.  The frame goes behind what the
 * transport was writing already (what of the queue was on its way may
 * still arrive first), and the path closes once the transport has taken
 * it, or failed, or keepalive_timeout_ms passed.  Without an attached path
 * (the session was re-attaching), or if the frame was lost, the peer sees
 * the path go, then RIFT_ETIMEDOUT (a server, after its grace time) or
 * RIFT_ESESSION (a client, at its next re-attach).  close_cb (may be NULL)
 * runs once from a later progress call, then, and rift_conn_last_error()
 * in it says what was dropped ("rift_conn_abort with 200 messages
 * (13107200 bytes) unacknowledged").  On a connection rift_conn_close left
 * lingering, it ends the linger now (in order if its CLOSE went already:
 * then nothing is left to drop), and close_cb replaces the callback
 * rift_conn_close was given; on one closed or aborted already it does
 * nothing.
 */
void rift_conn_abort(rift_conn *conn, void (*close_cb)(rift_conn *conn));

void *rift_conn_user(const rift_conn *conn);
void rift_conn_set_user(rift_conn *conn, void *user);
/* Replace the callbacks (copied); cbs NULL: none from now on. */
void rift_conn_set_callbacks(rift_conn *conn, const rift_conn_callbacks *cbs);
rift_ctx *rift_conn_ctx(const rift_conn *conn);
rift_transport rift_conn_transport(const rift_conn *conn);
rift_fallback_reason rift_conn_fallback_reason(const rift_conn *conn);

/*
 * Readable message for the connection's last failure, e.g.
 * "connect 127.0.0.1:7788: connection refused (3 attempts)".  "" if none.
 * Valid until the next failure or the end of the close callback (in which
 * it says how the close ended: rift_conn_close).
 */
const char *rift_conn_last_error(const rift_conn *conn);

typedef struct rift_conn_stats {
	uint32_t size;             /* set by rift_conn_stats_init */
	uint64_t msgs_sent;        /* accepted by rift_conn_send*, count */
	uint64_t bytes_sent;       /* payload bytes of msgs_sent */
	uint64_t msgs_recv;        /* delivered to on_recv, count */
	uint64_t bytes_recv;       /* payload bytes of msgs_recv */
	uint64_t msgs_replayed;    /* sent again after a re-attach, count */
	uint64_t dups_dropped;     /* duplicates discarded by the receiver */
	uint64_t acks_sent;        /* explicit ack frames, count */
	uint64_t pings_sent;       /* keepalive frames, count */
	uint64_t send_eagain;      /* sends refused by a full window, count */
	uint64_t path_changes;     /* re-attaches, count */
	uint64_t unacked_msgs;     /* held for replay now, count */
	uint64_t unacked_bytes;    /* held for replay now, bytes */
	uint64_t write_calls;      /* writev calls on TCP paths, count */
	uint64_t read_calls;       /* read calls on TCP paths, count */
	/* Metrics (docs/metrics.md). */
	uint64_t connect_attempts; /* transport connects (client), count */
	uint64_t connect_retries;  /* attempts after a failed one, count */
	uint64_t credit_stalls;    /* rdma: out of peer credits, episodes */
	uint64_t wc_errors;        /* failed completions, count */
	uint64_t path_downs;       /* PATH_DOWN events, count */
	uint64_t keepalive_timeouts; /* paths failed for silence, count */
	uint64_t msgs_held;        /* received while receiving was stopped */
	uint64_t held_bytes;       /* held for delivery now, frame bytes */
	uint64_t rx_copied_bytes;  /* received bytes rift copied after the
				      transport placed them: frames split
				      across reads (tcp.read_buffer), held
				      messages; bytes */
	/* active-active: messages that arrived before an earlier one (on
	 * another path) and waited for it, count (appended) */
	uint64_t msgs_reordered;
} rift_conn_stats;

void rift__conn_stats_init(rift_conn_stats *st, size_t size);
#define rift_conn_stats_init(st) rift__conn_stats_init((st), sizeof(*(st)))
int rift_conn_stats_get(const rift_conn *conn, rift_conn_stats *st);

/*
 * The paths of a connection (port groups): the one carrying its data,
 * the standbys joined to it, those being set up, and, on a client, each
 * address of its URL whose last path failed and that has none now
 * (RIFT_PATH_STATE_DOWN, with why).
 */
typedef enum rift_path_state {
	RIFT_PATH_STATE_DOWN = 1, /* client: an address whose last path
				     failed, none there now; last_error
				     says why */
	RIFT_PATH_STATE_SETUP,    /* connecting, or hand-shaking (HELLO,
				     RESUME, JOIN) */
	RIFT_PATH_STATE_ACTIVE,   /* carries the session's data (with
				     group_policy active-active, every
				     joined path of its transport does) */
	RIFT_PATH_STATE_STANDBY,  /* joined to the session, keepalives only:
				     a failover resumes on it */
} rift_path_state;

/* "down", "setup", "active", "standby"; "?" otherwise. */
const char *rift_path_state_name(rift_path_state s);

typedef struct rift_path_info {
	rift_path_state state;
	uint32_t id;               /* path id in its session: 0 for a data
				      path set up as one, 1.. for one that
				      joined as a standby */
	rift_transport transport;  /* RIFT_TRANSPORT_NONE when down */
	char peer[80];             /* "rdma://10.0.1.1:7788" (events' form) */
	char local[64];            /* local address, "" before it is known */
	char device[40];           /* verbs: "rxe0:1" (device:port); "" */
	uint64_t age_us;           /* since it was set up (setup: since it
				      began; down: since it failed), us */
	uint64_t idle_us;          /* since it last received a frame, us;
				      0 when down */
	uint64_t msgs_sent;        /* DATA frames sent on it, count */
	uint64_t bytes_sent;       /* their payload, bytes */
	uint64_t msgs_recv;        /* DATA frames received on it, count */
	uint64_t bytes_recv;       /* their payload, bytes */
	int last_status;           /* down: the RIFT_E* it failed with; 0 */
	char last_error[128];      /* down: why it failed; "" */
	rift_path_down_reason down_reason; /* down: its reason; NONE */
} rift_path_info;

/*
 * Up to max paths of conn into out, the data path first, then standbys,
 * paths being set up, and (client) the URL's addresses without a path;
 * returns how many there are (more than max: some were left out), or
 * RIFT_EINVAL (conn NULL, out NULL with max > 0).  A snapshot: call it on
 * the context's thread, as every rift_conn_* call.  Use the macro: the
 * size it passes lets fields be appended to rift_path_info.
 */
int rift__conn_paths(const rift_conn *conn, rift_path_info *out, int max,
		     size_t size);
#define rift_conn_paths(conn, out, max) \
	rift__conn_paths((conn), (out), (max), sizeof(*(out)))

/* ------------------------------------------------------------------------ */
/* Metrics                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Counters are the fields of rift_ctx_stats and rift_conn_stats; they are
 * always kept.  With cfg.metrics set (the default) rift also keeps latency
 * histograms, per context (every connection it ever had) and per
 * connection; with cfg.metrics = 0 it records none, and the renderers
 * below leave out the histograms and the per-connection series.
 * docs/metrics.md lists every metric.
 *
 * Latencies are taken from the loop time, refreshed once per progress
 * round (no clock call per message), in microseconds.  A message sent
 * from outside progress after a long idle stretch is stamped with the
 * time of the last round, so its latency reads long by that stretch.
 */
typedef enum rift_latency {
	RIFT_LATENCY_ACK = 0,      /* rift_conn_send* to the peer's ack */
	RIFT_LATENCY_REATTACH = 1, /* PATH_DOWN to PATH_CHANGED */
	RIFT_LATENCY__COUNT
} rift_latency;

/* Index of rift_ctx_stats.wc_errors for statuses outside 0..31. */
#define RIFT_WC_STATUS_OTHER 32

/*
 * Read a latency histogram: the connection's if conn is not NULL (it must
 * belong to ctx), else the context's.  *value_us (may be NULL) gets the
 * q-quantile, 0 <= q <= 1 (0.5 the median, 0.99, 1 the maximum), accurate
 * to 1/16 of the value (the histogram has 16 buckets per power of two),
 * or 0 if there are no samples; *count (may be NULL) the number of
 * samples.  Returns 0, or RIFT_EINVAL (bad argument, q outside 0..1).
 */
int rift_metrics_latency(rift_ctx *ctx, const rift_conn *conn,
			 rift_latency which, double q, uint64_t *value_us,
			 uint64_t *count);

/*
 * Render every metric of ctx in the Prometheus text exposition format
 * 0.0.4 (what a /metrics endpoint serves with Content-Type
 * "text/plain; version=0.0.4"): metric names rift_*, counters ending in
 * _total, latency histograms in seconds as _bucket{le="..."} (cumulative,
 * powers of two from 1 us to 134 s, then +Inf), _sum and _count.
 * Connection series carry conn="<session id in hex>" and role="client"
 * or "server".
 * Writes at most len bytes including the NUL (buf may be NULL if len is
 * 0); nothing is allocated.  Returns the length of the whole text, as
 * snprintf does (the output was cut if that is >= len: call again with a
 * larger buffer), RIFT_EINVAL, or RIFT_ERANGE past INT_MAX bytes.  Runs
 * on the context's thread; the text is about 8 KiB plus 7.5 KiB per open
 * connection with metrics on.
 */
int rift_metrics_prometheus(rift_ctx *ctx, char *buf, size_t len);

/*
 * A one-shot dump like Redis INFO: "# Section" lines (Server,
 * Connections, Sessions, Traffic, Transport, Errors, Latency, Pool) each
 * followed by "key:value" lines, every line ending in "\r\n", a blank line
 * between sections.  Same buffer and return rules as
 * rift_metrics_prometheus; context-wide figures only.
 */
int rift_metrics_info(rift_ctx *ctx, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Received messages                                                        */
/* ------------------------------------------------------------------------ */

const void *rift_msg_data(const rift_msg *msg);
size_t rift_msg_len(const rift_msg *msg);
/* Sequence number of the message among those the peer's application sent
 * on its connection: 1, 2, 3... (one-sided operations between them take
 * no number). */
uint64_t rift_msg_seq(const rift_msg *msg);
/*
 * Keep the message after on_recv returns: call from on_recv, then use the
 * handle returned (not msg) until rift_msg_release.  A message that
 * arrived in memory of its own keeps it, without a copy: over RDMA, a
 * large one (rendezvous) or, from rdma.zero_copy_threshold up, one whose
 * receive buffer rift replaces with a fresh one (counted in
 * msgs_retained_in_place); others are copied once.  Returns the handle,
 * or NULL when out of memory (msg is then valid until on_recv returns).
 * Retaining a retained message returns it as it is.
 *
 * The retained message belongs to the caller, not to its connection or
 * context: it stays valid after the connection's close callback and
 * after rift_ctx_destroy, and keeps the memory it lies in (registered
 * memory too: the process's pool stays until the last such message is
 * released).
 */
rift_msg *rift_msg_retain(rift_msg *msg);
/*
 * Give back a retained message, once; msg is invalid afterwards.  While
 * its context exists, call it on the context's thread; after
 * rift_ctx_destroy, on any one thread.  A message that was not retained
 * (or NULL) is ignored.
 */
void rift_msg_release(rift_msg *msg);

/* ------------------------------------------------------------------------ */
/* One-sided access: the peer reads and writes memory this side exports    */
/* ------------------------------------------------------------------------ */

/*
 * A region of the application's memory that peers may be given access to
 * (rift_mem_export), and that this side reads into or writes from
 * (rift_conn_read / rift_conn_write).  Operations name ranges by a token:
 * opaque bytes the exporter gives its peer (by a message, say), bound to
 * the one session it was exported on.  Operations complete once each,
 * through their callback, on the loop thread.
 *
 * How the bytes move: on an RDMA path, by one-sided RDMA READ and WRITE
 * through a memory window the exporter's rift binds over the export on
 * that path's queue pair alone (the window's key is useless on any other
 * connection); the exporter's CPU does not touch them.  The window is
 * bound the first time the export is used on a path, and its key sent in
 * band: until the requester has it (the first operation on a new path,
 * after a failover) and on every other transport (TCP, an auto://
 * session that fell back), operations are served by the exporter's rift
 * library over the session, as frames ordered, acknowledged and
 * replayed like messages.  A piece by RDMA that a failing path breaks is
 * done again that way, from the start of its operation (the same bytes
 * to the same place): the operation completes once, its callback runs
 * once.  rift_ctx_stats says which way pieces went (rma_direct,
 * rma_redone, rma_served).  Both sides need a rift that offers it
 * (RIFT_ENOTSUP with an older peer).
 *
 * Bounds: some devices do not check a window's bounds (soft-RoCE checks
 * only the registration's); rift checks every operation against its
 * token (range, access, the token's tag under the session's key) before
 * it goes, on both sides, so a rift peer never reaches past an export.
 */
/* Access a region or an export grants the peer (bits). */
#define RIFT_MEM_READ 1u  /* the peer may read it */
#define RIFT_MEM_WRITE 2u /* the peer may write it */
/* The largest token, bytes: room enough for any rift_mem_export. */
#define RIFT_TOKEN_MAX_LEN 304u

/*
 * Register [addr, addr + len) of this context's process memory for
 * one-sided access; access (RIFT_MEM_READ | RIFT_MEM_WRITE, at least one)
 * is the most any export of it may grant.  len > 0; the memory stays the
 * application's and must stay valid until rift_mem_dereg.  It is
 * registered (its pages pinned) at once on every RDMA device the context
 * uses, and on a device the context takes up later the first time an
 * operation or an export uses it there (a registration refused then
 * leaves that device's operations to the frames, with a warning in the
 * log).  Returns 0 with *out set, RIFT_EINVAL (NULL addr or out, len 0,
 * range that wraps, access 0 or unknown bits), RIFT_EMEMLOCK (the
 * locked-memory limit would be exceeded: the message says it and how to
 * raise it), RIFT_ENOMEM (the device refused, said why).  Call on the
 * loop thread, as every function of this section.
 */
int rift_mem_reg(rift_ctx *ctx, void *addr, size_t len, unsigned access,
		 rift_mem **out);
/*
 * Deregister: refused with RIFT_EBUSY (and nothing changes) while an
 * export of it is live (revoke it, or close its connection: exports end
 * with their session) or an operation of this side uses it (wait for the
 * callbacks; after rift_conn_close, for close_cb).  Refusing is the
 * choice because the memory under a peer's operation in flight must not
 * go.  Returns 0 (mem freed), RIFT_EINVAL (NULL), RIFT_EBUSY.
 */
int rift_mem_dereg(rift_mem *mem);
/* The region's address and length. */
void *rift_mem_addr(const rift_mem *mem);
size_t rift_mem_len(const rift_mem *mem);

/*
 * Export [offset, offset + len) of mem to the peer of conn with access
 * (at most mem's): a token of up to RIFT_TOKEN_MAX_LEN bytes into token,
 * whose room *token_len gives; *token_len is its size on return.  Send it
 * to the peer however the application likes; the peer's rift_conn_read /
 * _write use it on conn's session only (a copy used on another session,
 * or altered, is refused and counted in rma_refused).  The export lives
 * until rift_mem_revoke or the end of the session.  Returns 0,
 * RIFT_EINVAL (a NULL argument, range outside mem, len 0, access 0 or
 * more than mem's), RIFT_ENOSPC (room too small: *token_len the size
 * needed), RIFT_ENOTCONN (the session is not established: a client's
 * until CONNECTED, or it ended), RIFT_ECLOSED (closing), RIFT_ENOTSUP
 * (the peer's rift has no one-sided access), RIFT_ENOMEM.
 */
int rift_mem_export(rift_mem *mem, rift_conn *conn, size_t offset, size_t len,
		    unsigned access, void *token, size_t *token_len);
/*
 * Revoke the export a token of mem names, for every copy of it at once:
 * this side refuses the peer's operations by it from now on (counted in
 * rma_refused, logged), and the peer is told, so its operations queued by
 * it fail with RIFT_EACCES.  A piece of an operation this side served
 * before the call stays served.  Returns 0, RIFT_EINVAL (NULL, or a token
 * of another region or that is no token), RIFT_ENOENT (revoked already,
 * or its session ended).
 */
int rift_mem_revoke(rift_mem *mem, const void *token, size_t token_len);

/*
 * One-sided operations on the peer's exported memory.  The callback runs
 * exactly once, from a later progress call, on the loop thread: status 0
 * and bytes = len when the operation completed (a read: the bytes are in
 * local; a write: in the peer's memory), else an error and bytes 0:
 *   RIFT_EACCES    refused: outside the token's range, an access it does
 *                  not grant, revoked, altered or forged, another
 *                  session's (rift_conn_last_error says which, when this
 *                  side refused it)
 *   RIFT_ECLOSED, RIFT_ETIMEDOUT, RIFT_ECONNRESET, ...  the session ended
 *                  first (before its DISCONNECTED event)
 * After rift_conn_close or rift_conn_abort no such callback runs (as no
 * other does), and no byte lands in local any more.
 * The range [local_off, local_off + len) must lie in local, and
 * [remote_off, remote_off + len) in the token's range.  Until the
 * callback, the operation uses both ranges: do not touch local's (a
 * read may write it more than once with the same bytes), and local may
 * not be deregistered.  An operation larger than a message goes in
 * pieces.  Operations and messages leave in the order called: while an
 * operation waits for room in the send window, rift_conn_send returns
 * RIFT_EAGAIN (WRITABLE follows), so no message overtakes it.  A
 * message sent after a write completed finds the write's bytes in place
 * at the peer.  A read gives the peer's memory as it is when the read
 * reaches it: do not count on the peer's application having handled the
 * messages sent before the read (wait for its answer).  While an
 * application has stopped receiving (rift_conn_recv_stop), operations
 * served by its rift may wait with the messages.  Returns 0 (cb will run), RIFT_EINVAL (a NULL argument, len
 * 0, a range outside local, a token that does not parse), RIFT_EACCES
 * (as above, refused before anything went; cb does not run),
 * RIFT_ENOTCONN (the session is not established, or ended),
 * RIFT_ENOTSUP (the peer's rift has no one-sided access), RIFT_ECLOSED
 * (closing), RIFT_ENOMEM.  On a non-zero return cb never runs.
 */
typedef void (*rift_rma_cb)(rift_conn *conn, void *user, int status,
			    size_t bytes);
int rift_conn_read(rift_conn *conn, rift_mem *local, size_t local_off,
		   const void *token, size_t token_len, size_t remote_off,
		   size_t len, rift_rma_cb cb, void *user);
int rift_conn_write(rift_conn *conn, rift_mem *local, size_t local_off,
		    const void *token, size_t token_len, size_t remote_off,
		    size_t len, rift_rma_cb cb, void *user);
/*
 * A write the exporter is told of: as rift_conn_write, and once its bytes
 * are in place the exporter's application gets RIFT_EVENT_WRITTEN with
 * the range and tag, in order with the messages: a one-sided write can
 * stand for a message (log shipping).  The callback here runs after the
 * exporter's rift has emitted the event.
 */
int rift_conn_write_notify(rift_conn *conn, rift_mem *local, size_t local_off,
			   const void *token, size_t token_len,
			   size_t remote_off, size_t len, uint64_t tag,
			   rift_rma_cb cb, void *user);


/* ------------------------------------------------------------------------ */
/* Byte streams (foreign protocols)                                         */
/* ------------------------------------------------------------------------ */

/*
 * A byte stream is a connection that carries an ordered stream of bytes
 * in a protocol that is not rift's, so that rift's applications serve
 * (and reach) programs that do not link rift.  It has no sessions,
 * sequence numbers, replay or failover: a broken path ends it, as a
 * broken socket ends a TCP connection.  It runs on the context's loop
 * like everything else (its completion and connection manager fds are
 * polled by the context); its callbacks run inside progress calls.
 *
 * URL:  valkey-rdma://host:port[?rx_size=BYTES]
 *   Valkey's "Valkey over RDMA" protocol (valkey.io/topics/RDMA): an RC
 *   queue pair set up by rdma_cm; 32-byte big-endian control messages by
 *   SEND (GetServerFeature, SetClientFeature, Keepalive,
 *   RegisterXferMemory); the bytes go by RDMA WRITE WITH IMMEDIATE into
 *   the receive buffer the peer advertised with RegisterXferMemory, at
 *   the next offset, the immediate carrying the length; once a side has
 *   consumed its whole receive buffer it advertises it again and the
 *   peer writes from offset 0.  Stock valkey-server, valkey-cli --rdma
 *   and valkey-benchmark --rdma speak it.
 *   rx_size: this side's receive buffer, 4096 .. 16777216 bytes (default
 *   1048576, Valkey's): the most the peer may have written and this side
 *   not yet consumed.  A stream registers it and as much again for its
 *   writes on their way (a WRITE's bytes stay put until it completes).
 *   Limits are this side's: a peer that advertises a receive buffer of 0
 *   bytes or more than 16 MiB, sends a control message that is not 32
 *   bytes or has an unknown opcode, asks for a feature this side does
 *   not offer, or writes past the buffer this side advertised, has its
 *   stream ended (DISCONNECTED with RIFT_EPROTO, the reason logged at
 *   warn level and in rift_stream_last_error); nothing it advertises is
 *   written beyond what it advertised.  Keepalive control messages go
 *   every keepalive_interval_ms (the context's), as Valkey's 3 s do: a
 *   peer that stopped answering at the transport level fails them
 *   (rdma.retry_count, rdma.ack_timeout) and ends the stream with
 *   RIFT_ETIMEDOUT.
 * A bad URL is RIFT_EINVAL, an unknown scheme RIFT_ENOTSUP, with the
 * reason in rift_ctx_last_error().
 */
typedef struct rift_stream rift_stream;
typedef struct rift_stream_listener rift_stream_listener;

typedef struct rift_stream_callbacks {
	/*
	 * The stream's life: CONNECTED (a client's stream is up and has
	 * the server's buffer: writes take bytes; status 0, peer set), ERROR (a client's stream could not be set up:
	 * status says why; nothing follows, close it), DISCONNECTED (an
	 * established stream ended: status 0 when the peer disconnected,
	 * RIFT_EPROTO when it broke the protocol, RIFT_ETIMEDOUT or
	 * RIFT_EIO when the path failed; close it), WRITABLE (a write that
	 * took less than asked, or returned RIFT_EAGAIN, may go on).  Only
	 * type, status, transport (RIFT_TRANSPORT_RDMA), peer and message
	 * are set; strings valid during the call.  May be NULL.
	 */
	void (*on_event)(rift_stream *s, const rift_event *ev);
	/*
	 * The next len bytes (len > 0) of the stream, in order.  data is
	 * borrowed: it points into the stream's receive buffer and is
	 * valid until on_read returns, when the bytes count as consumed
	 * (room the peer may write into again).  May be NULL (bytes are
	 * dropped).
	 */
	void (*on_read)(rift_stream *s, const void *data, size_t len);
} rift_stream_callbacks;

/*
 * Open a byte stream to url.  Returns 0 with *out set, after which
 * exactly one of CONNECTED or ERROR is delivered (ERROR with
 * RIFT_ETIMEDOUT when not established within the time rift_connect
 * gives its attempts: connect_timeout_ms x (retries + 1)); RIFT_EINVAL (bad URL,
 * NULL ctx or out), RIFT_ENOTSUP (unknown scheme, no RDMA here),
 * RIFT_ENAME (host name not found: the name is resolved in the call),
 * RIFT_ENOMEM, with *out NULL.  cbs may be NULL; user is returned by
 * rift_stream_user.  The handle is the caller's until rift_stream_close.
 */
int rift_stream_connect(rift_ctx *ctx, const char *url,
			const rift_stream_callbacks *cbs, void *user,
			rift_stream **out);

/*
 * Accept callback: s is a new established stream (no CONNECTED event is
 * delivered for it) with the listener's callbacks and user pointer until
 * changed.  The application owns it and must close it.  A write before
 * the client has advertised its buffer returns RIFT_EAGAIN (WRITABLE
 * follows); clients advertise it at once, before their first request.
 */
typedef void (*rift_stream_accept_cb)(rift_stream_listener *l,
				      rift_stream *s);

/*
 * Listen on url (host may be empty or "0.0.0.0"; port 0 picks a free
 * port, see rift_stream_listener_port).  Returns 0 with *out set,
 * RIFT_EINVAL, RIFT_ENOTSUP, RIFT_EADDRINUSE, RIFT_EADDRNOTAVAIL (no RDMA
 * device has that address), ...  with *out NULL.
 */
int rift_stream_listen(rift_ctx *ctx, const char *url,
		       const rift_stream_callbacks *cbs, void *user,
		       rift_stream_accept_cb on_accept,
		       rift_stream_listener **out);
/* The port the listener is bound to; RIFT_EINVAL for NULL. */
int rift_stream_listener_port(const rift_stream_listener *l);
void *rift_stream_listener_user(const rift_stream_listener *l);
/*
 * Stop listening; streams accepted stay open.  close_cb (may be NULL)
 * runs once, from a later progress call; the handle is freed after it
 * returns.
 */
void rift_stream_listener_close(rift_stream_listener *l,
				void (*close_cb)(rift_stream_listener *l));

/*
 * Write up to len bytes: they are copied (the caller keeps data) and go
 * out at once, in order.  Returns how many bytes were taken, 1 .. len
 * (fewer than len when the peer's advertised buffer or this side's send
 * room is full: WRITABLE follows once more may go), RIFT_EAGAIN (none
 * taken; WRITABLE follows), RIFT_EINVAL (s NULL, data NULL, len 0, or
 * len above INT_MAX), RIFT_ENOTCONN (not established yet, or ended),
 * RIFT_ECLOSED (closing).  Never blocks; no callback runs from inside it.
 */
int rift_stream_write(rift_stream *s, const void *data, size_t len);

/*
 * Stop / restart on_read.  While stopped, bytes that arrive stay in the
 * receive buffer, unconsumed: once it is full the peer can write no more
 * (backpressure, as a TCP window).  After rift_stream_read_start what
 * waits is delivered from the next progress call.  0 or RIFT_EINVAL,
 * RIFT_ECLOSED.
 */
int rift_stream_read_stop(rift_stream *s);
int rift_stream_read_start(rift_stream *s);

/*
 * Close the stream: writes already taken go first (the close waits for
 * their completions, at most keepalive_timeout_ms), then the connection
 * is disconnected and its resources freed.  From the call on no callback
 * but close_cb runs, and writes are refused (RIFT_ECLOSED).  close_cb
 * (may be NULL) runs once, from a later progress call; the handle is
 * freed after it returns.  A second close is ignored.
 */
void rift_stream_close(rift_stream *s, void (*close_cb)(rift_stream *s));

void *rift_stream_user(const rift_stream *s);
void rift_stream_set_user(rift_stream *s, void *user);
/* Replace the callbacks (copied); cbs NULL: none from now on. */
void rift_stream_set_callbacks(rift_stream *s,
			       const rift_stream_callbacks *cbs);
rift_ctx *rift_stream_ctx(const rift_stream *s);
/* The peer's address, "10.77.0.2:40123" ("" before CONNECTED). */
const char *rift_stream_peer(const rift_stream *s);
/*
 * Readable message for the stream's last failure, e.g. "peer advertised
 * a receive buffer of 0 bytes (RegisterXferMemory)".  "" if none.
 */
const char *rift_stream_last_error(const rift_stream *s);

typedef struct rift_stream_stats {
	uint32_t size;          /* set by rift_stream_stats_init */
	uint64_t bytes_written; /* taken by rift_stream_write */
	uint64_t bytes_read;    /* delivered to on_read */
	uint64_t writes_posted; /* RDMA WRITEs with immediate posted */
	uint64_t ctrl_sent;     /* control messages sent, every opcode */
	uint64_t ctrl_recv;     /* control messages received */
	uint64_t keepalives_sent;
	uint64_t keepalives_recv;
	uint64_t rx_advertised; /* RegisterXferMemory sent: 1 + re-advertisements */
	uint64_t tx_windows;    /* RegisterXferMemory received */
	uint64_t write_stalls;  /* writes cut short or refused: peer buffer or send room full */
} rift_stream_stats;

void rift__stream_stats_init(rift_stream_stats *st, size_t size);
#define rift_stream_stats_init(st) rift__stream_stats_init((st), sizeof(*(st)))
/* Copy the stream's counters into *st (its size set); 0 or RIFT_EINVAL. */
int rift_stream_stats_get(const rift_stream *s, rift_stream_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* RIFT_H */
