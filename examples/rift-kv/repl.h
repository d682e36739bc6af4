/*
 * repl.h - rift-kv's replication: a primary ships its write log to
 * replicas over rift, by one-sided RDMA WRITE into a ring each replica
 * exports (rift_conn_write_notify), or by messages (use_rdma_write =
 * false); replicas report the offset they applied; WAIT counts them.
 *
 * The log.  Every command that changes keys appends to the primary's log
 * what it left, not what it asked: for each key it named, SET key value
 * [PXAT ms] when the key is there after it, DEL key when not; FLUSHALL
 * for FLUSHALL and FLUSHDB.  So the log is deterministic (no relative
 * time, no INCR to apply twice) and a replica applies it as it comes.
 * Its bytes are RESP commands; master_repl_offset counts them.  The last
 * backlog_size bytes stay in the backlog for replicas that come back.
 *
 * The link.  A replica connects to the primary's rift listener as a RESP
 * client and sends one command:
 *
 *   PSYNC replid offset [LISTENING-PORT port] [RING size token]
 *
 * (replid "?" and offset -1 when it has nothing).  RING offers the ring:
 * size bytes the replica exported to this session (rift_mem_export),
 * token the export's token.  The primary answers on the message stream,
 * each a RESP command:
 *
 *   CONTINUE replid offset      partial resync: the log from offset on
 *                               follows (the replica's replid and an
 *                               offset the backlog still holds)
 *   FULLRESYNC replid offset    full resync: the snapshot follows, SET
 *                               key value [PXAT ms] per key, then
 *   SYNC-END                    after which the log from offset follows
 *   -ERR ...                    refused, saying why
 *
 * and then ships the log: with a ring, log offset x goes to ring byte
 * x % size by rift_conn_write_notify, tag x, never across the ring's end
 * and never over bytes the replica has not taken (flow control: at most
 * size bytes past its last "consumed"); the replica's rift emits
 * RIFT_EVENT_WRITTEN in order with the messages.  Without a ring, by
 * messages: LOG offset bytes.  The replica answers after each piece it
 * applied, and every second:
 *
 *   REPLCONF ACK applied consumed
 *
 * applied: the log offset after the last whole command it applied (what
 * WAIT counts and a PSYNC resumes from); consumed: the bytes its parser
 * took (a command cut by the ring's end is kept by the parser, so its
 * ring bytes are free).  Anything else is a protocol error that ends the
 * link with a message saying what: a log offset other than the one
 * expected, a WRITTEN outside the ring, log bytes that are no RESP
 * command or no write, an ACK ahead of what was shipped, a RING whose
 * size is outside 4 KiB..1 GiB or whose token does not fit.  Limits are
 * ours: the primary's staging buffer is at most 1 MiB whatever ring the
 * replica claims, and the replica's parsers take its own request limits.
 *
 * Reconnection.  A link cut is rift's: the session re-attaches (another
 * port, TCP) and the writes in flight are done again.  A session that
 * ends (the replica killed, grace time passed) ends the link; the
 * replica connects again every second with PSYNC of its replid and
 * applied offset: partial when the backlog still holds that offset, full
 * otherwise.  A replica with replica_file keeps there what it applied
 * (the last snapshot, then the log; rewritten as a snapshot once the log
 * outgrows it), so that a restarted replica loads it and resumes by a
 * partial resync.
 */
#ifndef RIFT_KV_REPL_H
#define RIFT_KV_REPL_H

#include <stddef.h>
#include <stdint.h>

#include <rift.h>

#include "resp.h"

struct kv_server;
struct kv_client;
struct kv_cmd;
struct kv_text;
struct kv_repl_link;

/* The replica's link to its primary (INFO master_link_status). */
enum kv_repl_state {
	KV_REPL_NONE,       /* not a replica, or waiting to connect again */
	KV_REPL_CONNECTING, /* rift_connect under way */
	KV_REPL_HANDSHAKE,  /* PSYNC sent */
	KV_REPL_SYNC,       /* receiving a snapshot */
	KV_REPL_UP,         /* applying the log */
};

struct kv_repl {
	char replid[41];        /* this history's id, 40 hex digits */
	uint64_t offset;        /* primary: master_repl_offset; replica:
				   the log applied, bytes */
	/* primary */
	char *backlog;          /* the log's last backlog_size bytes, a
				   ring: offset x at x % backlog_size */
	size_t backlog_size;    /* bytes */
	size_t histlen;         /* bytes of it that hold log */
	struct kv_resp_out scratch; /* one command's log, being encoded */
	struct kv_repl_link *links; /* replicas attached */
	size_t nlinks;
	size_t blocked;         /* clients in WAIT */
	uint64_t sync_full;     /* full resyncs served, count */
	uint64_t sync_partial_ok;  /* partial resyncs served, count */
	uint64_t sync_partial_err; /* PSYNCs of a replid/offset that could
				      not continue, count */
	/* replica */
	int replica;            /* the role (bool) */
	char primary[256];      /* the primary's rift URL */
	rift_conn *conn;        /* to it, or NULL */
	int closing;            /* a closed conn's callback is to come */
	enum kv_repl_state state;
	rift_timer *retry;      /* the next connect */
	char *ring;             /* exported to the primary, ring_size */
	rift_mem *ring_mem;     /* or NULL (use_rdma_write = false) */
	kv_resp_parser *msgp;   /* the primary's messages */
	kv_resp_parser *logp;   /* the log */
	struct kv_client *master; /* applies the log (never linked) */
	uint64_t consumed;      /* log bytes the log parser took */
	int ack_due;            /* an ACK waits for room to be sent */
	int64_t last_io_ms;     /* the primary's last message or write */
	int64_t down_since_ms;  /* link not up since, or 0 */
	uint64_t full_syncs;    /* snapshots loaded, count */
	uint64_t partial_syncs; /* CONTINUEs, count */
	uint64_t ring_writes;   /* WRITTEN events applied, count */
	uint64_t ring_bytes;    /* their bytes */
	uint64_t log_msgs;      /* LOG messages applied, count */
	uint64_t link_errors;   /* links ended by a protocol error, count */
	char last_error[256];   /* the last of those, or "" */
	/* replica_file */
	int fd;                 /* open for appending the log, or -1 */
	int tmpfd;              /* a snapshot being written, or -1 */
	struct kv_resp_out fbuf; /* snapshot commands not written yet */
	uint64_t file_base;     /* the log offset the file's log starts at */
	uint64_t file_log_at;   /* the file offset of that log's start */
	uint64_t loaded;        /* log bytes loaded from it at start */
	uint64_t rewrites;      /* times its log became a snapshot, count */
};

/* Set up s->repl from s->cfg: a replid, the backlog; as a replica
 * (replicaof), its file loaded and the first connect.  0, or -1 having
 * printed why. */
int kv_repl_init(struct kv_server *s);
/* Close the link to the primary and the replicas' links (their close
 * callbacks to come); kv_repl_busy says when they have run. */
void kv_repl_stop(struct kv_server *s);
int kv_repl_busy(const struct kv_server *s);
/* Free what is left (after kv_repl_stop and the loop ran). */
void kv_repl_free(struct kv_server *s);

/* A command k of c (argv) changed keys: append its log (primary). */
void kv_repl_propagate(struct kv_client *c, const struct kv_cmd *k,
		       size_t argc, const struct kv_resp_arg *argv);
/* 1 when c may not run k here: a replica's client and a write. */
int kv_repl_readonly(const struct kv_client *c, const struct kv_cmd *k);
/* Each loop round: ship the log, answer WAITs that are done or timed
 * out.  Returns how long the loop may sleep at most (ms, -1: any). */
int kv_repl_pump(struct kv_server *s);
/* Periodic (KV_HZ): the replica's ACK each second, the primary's
 * replicas' lag. */
void kv_repl_cron(struct kv_server *s);
/* c is being freed: end its link or WAIT. */
void kv_repl_client_gone(struct kv_client *c);
/* INFO replication. */
void kv_repl_info(struct kv_server *s, struct kv_text *t);

#endif
