/*
 * server.h - rift-kv's server: clients, replies, the command table.
 *
 * One thread runs everything: an epoll loop over the RESP listening
 * socket, the clients' sockets, a signalfd and rift's context fd
 * (rift_ctx_fd), whose readiness runs rift_ctx_progress; rift's timer
 * drives the periodic work (kv_server_cron).  A client is a TCP socket
 * or a rift connection; both carry the RESP byte stream, the rift one as
 * messages, each a piece of it (server.c, rift_io.c).
 */
#ifndef RIFT_KV_SERVER_H
#define RIFT_KV_SERVER_H

#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include <rift.h>

#include "config.h"
#include "repl.h"
#include "resp.h"
#include "store.h"

/* Output a client may have waiting before the server stops reading its
 * requests, and the level that starts reading again (backpressure). */
#define KV_OUT_HIGH ((size_t)1 << 20)
#define KV_OUT_LOW  ((size_t)256 << 10)
/* Bytes of requests read from a TCP client at once. */
#define KV_IBUF     ((size_t)16 << 10)
/* The periodic work's rate (Redis's hz) and its expiry budget, us. */
#define KV_HZ 10
#define KV_EXPIRE_BUDGET_US 25000

enum kv_client_flags {
	KV_CLOSE_AFTER_REPLY = 1, /* QUIT, protocol error */
	KV_CLOSE_ASAP = 2,        /* write error, peer gone */
	KV_PAUSED = 4,            /* too much output waiting: not reading */
	KV_RIFT_BLOCKED = 8,      /* rift send window full: wait WRITABLE */
	KV_RIFT_STOPPED = 16,     /* rift_conn_recv_stop in force */
	KV_CLOSING = 32,          /* rift close under way */
	KV_BLOCKED = 64,          /* in WAIT: requests held (repl.c) */
};

struct kv_server;
struct kv_metrics;

/* The command time histogram's buckets: bucket b counts commands of at
 * most 2^(b+7) ns (128 ns .. about 1.07 s), the last one the rest. */
#define KV_LAT_BUCKETS 25

struct kv_client {
	struct kv_server *srv;
	uint64_t id;            /* CLIENT ID */
	int fd;                 /* TCP socket, or -1 */
	rift_conn *conn;        /* rift connection, or NULL */
	rift_stream *stream;    /* Valkey RDMA stream, or NULL */
	unsigned flags;         /* enum kv_client_flags */
	uint32_t events;        /* epoll mask in force */
	kv_resp_parser *parser;
	char *ibuf;             /* requests not parsed yet */
	size_t ipos;            /* bytes of ibuf parsed */
	size_t ilen;            /* bytes in ibuf */
	size_t icap;            /* bytes allocated at ibuf */
	struct kv_resp_out out; /* replies; [opos, out.len) unsent */
	size_t opos;
	int oom;                /* a reply of this command failed */
	char *name;             /* CLIENT SETNAME, or NULL */
	char addr[64];          /* peer, "127.0.0.1:5555" */
	char laddr[64];         /* local end */
	int64_t ctime_ms;       /* connected, Unix ms */
	int64_t atime_ms;       /* last command, Unix ms */
	const char *last_cmd;   /* its name, static */
	struct kv_repl_link *link; /* a replica's link (repl.c), or NULL */
	uint64_t wait_off;      /* WAIT: the log offset to reach */
	long long wait_num;     /* WAIT: replicas that must reach it */
	int64_t wait_until_ms;  /* WAIT: Unix ms of its timeout, 0 none */
	struct kv_client *prev, *next;
};

struct kv_server {
	struct kv_config cfg;
	struct kv_store *store;
	int ep;                  /* epoll */
	int lfd;                 /* RESP listening socket */
	int sfd;                 /* signalfd: SIGINT, SIGTERM */
	rift_ctx *rift;
	rift_config rcfg;        /* what rift was created with */
	rift_listener *rl;       /* RESP over rift, or NULL */
	rift_timer *cron;
	char rift_url[300];      /* the rift listener's URL, or "" */
	rift_stream_listener *vl; /* Valkey's RDMA protocol, or NULL */
	char valkey_url[300];    /* its URL, or "" */
	size_t valkey_clients;   /* of nclients, on vl's streams */
	struct kv_client *clients;
	size_t nclients;         /* TCP and rift */
	size_t rift_clients;     /* of those, rift */
	uint64_t next_id;
	int64_t now_ms;          /* Unix ms, per loop round */
	int64_t start_ms;
	int stop;
	/* INFO stats */
	uint64_t conns_received; /* count */
	uint64_t conns_rejected; /* out of memory, count */
	uint64_t cmds;           /* commands run, count */
	uint64_t cmds_rejected;  /* of those, refused before running:
				    unknown, wrong arity, count */
	uint64_t conns_rift;     /* of conns_received, over rift, count */
	uint64_t hits, misses;   /* key lookups of reads, count */
	uint64_t net_in, net_out; /* bytes of RESP, both ways */
	/* rift connections whose path is RDMA when a message passes
	 * (rift_conn_transport): messages and their bytes */
	uint64_t rdma_msgs_sent, rdma_msgs_recv;
	uint64_t rdma_bytes_sent, rdma_bytes_recv;
	/* command times, while /metrics is served (kv_lat_record) */
	uint64_t lat[KV_LAT_BUCKETS]; /* commands, by bucket */
	uint64_t lat_sum_ns;          /* their sum, ns */
	struct kv_metrics *metrics;   /* GET /metrics (metrics.c), or NULL */
	struct kv_repl repl;          /* replication (repl.c) */
};

/* ---- replies (cmd.c): each sets c->oom when memory runs out ---- */
void kv_reply_simple(struct kv_client *c, const char *s);
void kv_reply_ok(struct kv_client *c);
/* "-<text>": text is "ERR message" or "WRONGTYPE message"; CR and LF in
 * it become blanks (it may quote a client's bytes). */
void kv_reply_error(struct kv_client *c, const char *text);
void kv_reply_errorf(struct kv_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void kv_reply_int(struct kv_client *c, long long v);
void kv_reply_bulk(struct kv_client *c, const void *p, size_t n);
void kv_reply_bulk_str(struct kv_client *c, const char *s);
void kv_reply_null(struct kv_client *c);
void kv_reply_array(struct kv_client *c, size_t n);
void kv_reply_syntax(struct kv_client *c);
void kv_reply_not_int(struct kv_client *c);

/* Redis's arity error for the command name given. */
void kv_reply_arity(struct kv_client *c, const char *fullname);

/* A growing text (INFO, CLIENT LIST, /metrics): failed once memory ran
 * out; zero-initialized, it is empty; the caller frees s. */
struct kv_text {
	char *s;
	size_t len, cap; /* bytes */
	int failed;
};
/* Room for n more bytes and a NUL at s + len: 0, or -1 (t failed). */
int kv_text_reserve(struct kv_text *t, size_t n);
void kv_tprintf(struct kv_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- commands ---- */
typedef void kv_cmd_fn(struct kv_client *c, size_t argc,
		       const struct kv_resp_arg *argv);

struct kv_cmd {
	const char *name;  /* lowercase; "config|get" for a subcommand */
	int arity;         /* Redis's: n exactly, -n at least n */
	kv_cmd_fn *fn;     /* NULL for a container of subcommands */
	const char *flags; /* COMMAND's flags, blank-separated */
	int first_key, last_key, step;
	const char *acl;   /* ACL categories, blank-separated */
	const char *group; /* COMMAND DOCS */
	const char *since;
	const char *summary;
	const struct kv_cmd *subs; /* subcommands, ending with a NULL name */
};

/* The tables of cmd_string.c, cmd_server.c and repl.c, ending with a
 * NULL name. */
extern const struct kv_cmd kv_string_cmds[];
extern const struct kv_cmd kv_server_cmds[];
/* repl.c's: REPLICAOF, SLAVEOF, WAIT, PSYNC, REPLCONF. */
extern const struct kv_cmd kv_repl_cmds[];

/* Sort the table (once, at start); 0 or -ENOMEM. */
int kv_cmd_init(void);
void kv_cmd_fini(void);
/* The command named n bytes at name (any case), or NULL. */
const struct kv_cmd *kv_cmd_lookup(const char *name, size_t n);
/* Every top-level command, for COMMAND: count and i-th. */
size_t kv_cmd_count(void);
const struct kv_cmd *kv_cmd_at(size_t i);
/* Calls of every command run so far, for /metrics: of the commands and
 * subcommands (i < the count returned), the i-th in *cmd and its calls in
 * *n.  Returns their count (nothing set when i is not below it). */
size_t kv_cmd_calls(size_t i, const struct kv_cmd **cmd, uint64_t *n);
/* Run one command for c, its reply appended to c->out. */
void kv_cmd_exec(struct kv_client *c, const struct kv_resp_cmd *cmd);

/* Case-insensitive: does the n bytes at a spell the C string b? */
int kv_arg_is(const struct kv_resp_arg *a, const char *b);
/* Parse an argument as a long long (Redis's string2ll): 1, else 0. */
int kv_arg_ll(const struct kv_resp_arg *a, long long *out);

/* ---- the server (server.c, rift_io.c) ---- */
/* A figure of INFO's rdma section, served by /metrics too as
 * riftkv_<name> (a counter with _total). */
struct kv_field {
	const char *name; /* INFO's field, "rdma_send_ops" */
	int counter;      /* 1: a count that only grows; 0: a gauge */
	const char *help; /* what it counts, one line */
	uint64_t v;
};
#define KV_RDMA_FIELDS 16
/* INFO rdma's numeric fields now, in INFO's order, from s's counters and
 * rift_ctx_stats (docs/rift-kv.md, "INFO"). */
void kv_rdma_fields(struct kv_server *s, struct kv_field f[KV_RDMA_FIELDS]);

/* Start the rift listener of s->cfg (rift_io.c): 0, or -1 having
 * printed why. */
int kv_rift_listen(struct kv_server *s);
/* Abort c's rift connection; c is freed by its close callback. */
void kv_rift_abort(struct kv_client *c);
/* Send what rift client c has waiting, go on with its requests, close
 * it or set its flow as its flags say (after WAIT, a log appended). */
void kv_rift_service(struct kv_client *c);
/* Valkey's RDMA protocol (valkey_io.c): listen on valkey_rdma_bind and
 * valkey_rdma_port, 0 or -1 having printed why; close the listener and
 * every stream (their clients are freed by the close callbacks). */
int kv_valkey_listen(struct kv_server *s);
void kv_valkey_shutdown(struct kv_server *s);
/* Send what stream client c has waiting, go on with its requests, close
 * it or set its flow as its flags say (after WAIT). */
void kv_valkey_service(struct kv_client *c);
/* All of c's output went (over rift): empty it, and let go of a large
 * buffer (one big reply's room is not kept). */
void kv_client_out_sent(struct kv_client *c);
/* What a rift client (a connection or a stream) is to do after
 * kv_client_service: abort, close in order once its replies are out,
 * stop or start reading (KV_RIFT_STOPPED follows), or nothing. */
enum kv_next { KV_NEXT_NONE, KV_NEXT_ABORT, KV_NEXT_CLOSE, KV_NEXT_STOP,
	       KV_NEXT_START };
/* Pump c with write (kv_client_pump) and say what is next. */
enum kv_next kv_client_service(struct kv_client *c,
			       void (*write)(struct kv_client *c));
/* Take len bytes of c's request stream (a rift message, a stream's
 * read) and run what they complete, unless paused.  0, or -1 when out
 * of memory (c then has KV_CLOSE_ASAP). */
int kv_client_feed(struct kv_client *c, const void *data, size_t len);

/* Send buf[*pos, len) on the non-blocking socket fd as far as it takes,
 * *pos moved on: the bytes sent (0 when it would block), or -1 when the
 * socket failed (the peer is gone). */
ssize_t kv_send_some(int fd, const char *buf, size_t len, size_t *pos);
/* A non-blocking socket listening on addr (numeric) and port (0: any
 * free one), its port in *bound: the socket, or -1 with errno. */
int kv_tcp_listen(const char *addr, int port, int *bound);

/* ---- GET /metrics over HTTP (metrics.c, docs/rift-kv.md) ---- */
/* Listen on metrics_bind (else bind) and metrics_port, in s's epoll set:
 * 0, or -1 having printed why. */
int kv_metrics_start(struct kv_server *s);
/* The port it listens on, or -1 when it does not. */
int kv_metrics_port(const struct kv_server *s);
/* An epoll event whose data is p: 1 if p is the endpoint's (handled),
 * else 0. */
int kv_metrics_event(struct kv_server *s, void *p, uint32_t events);
/* Periodic: answer 408 to, or close, connections past their time. */
void kv_metrics_cron(struct kv_server *s);
/* Close the endpoint and its connections (NULL s->metrics: no-op). */
void kv_metrics_stop(struct kv_server *s);
/* Count one command that took ns nanoseconds in s->lat. */
void kv_lat_record(struct kv_server *s, uint64_t ns);

/* A new client (fd, or conn), linked to s.  NULL when out of memory. */
struct kv_client *kv_client_new(struct kv_server *s, int fd, rift_conn *conn);
void kv_client_free(struct kv_client *c);
/* Parse and run c's buffered requests, until they are all done, or c
 * has KV_OUT_HIGH of output waiting (KV_PAUSED), or is to close. */
void kv_client_process(struct kv_client *c);
/* Send what c has waiting with write (its transport's), and while that
 * brings a paused client down to KV_OUT_LOW, go on with the requests the
 * pause held back (which may pause it again); until c is to close at
 * once (KV_CLOSE_ASAP) or has nothing more to do. */
void kv_client_pump(struct kv_client *c, void (*write)(struct kv_client *c));
/* Bytes of output c has waiting. */
size_t kv_client_pending(const struct kv_client *c);
/* c was blocked (KV_BLOCKED) and has its reply: go on with its requests
 * and send, over its transport.  c may be freed. */
void kv_client_resume(struct kv_client *c);

#endif
