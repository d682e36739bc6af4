/*
 * config.h - rift-kv's configuration: a config file and command-line
 * options in the manner of valkey-server.
 *
 *   rift-kv [CONFIG_FILE] [--port N] [--bind ADDR] [--rdma-port N]
 *           [--rdma-bind ADDR] [--rift-url URL] [--KEY VALUE ...]
 *
 * The file is TOML-ish: "# comments", a [network] and a [replication]
 * section, "key = value" lines whose values are integers, "strings" or
 * true/false:
 *
 *   [network]
 *   port = 6379               TCP port of RESP (1..65535)
 *   bind = "127.0.0.1"        its numeric address
 *   rdma_enabled = true       serve RESP over rift too
 *   rdma_device = "rxe0"      the RDMA device (its address, when
 *                             rdma_bind is not set)
 *   rdma_port = 6380          the rift listener's port
 *   rdma_bind = "10.0.0.1"    its numeric address
 *   rdma_gid_index = 1        rift's rdma.gid_index (-1..4095)
 *   rdma_queue_depth = 256    rift's rdma.sq_depth and rq_depth
 *   rdma_fallback = "tcp"     "tcp": auto:// (RDMA, else TCP);
 *                             "none": rdma:// only
 *   metrics_port = 9121       GET /metrics over HTTP (0: any free port)
 *   metrics_bind = "0.0.0.0"  its numeric address (bind's)
 *   proto_max_bulk_len = 536870912          bytes of one argument
 *   client_query_buffer_limit = 1073741824  bytes of one command
 *
 *   [replication]             (repl.h)
 *   replicaof = "10.0.0.1 6380"  the primary's rift listener: "HOST
 *                             PORT" (auto://HOST:PORT) or a rift URL
 *   use_rdma_write = true     the log by one-sided writes into a ring
 *                             the replica exports (false: by messages)
 *   backlog_size = 1048576    primary: bytes of log kept for partial
 *                             resyncs (16 KiB..16 GiB)
 *   ring_size = 1048576       replica: bytes of its ring (4 KiB..1 GiB)
 *   replica_file = "r.aof"    replica: keeps what it applied there, so
 *                             that a restart resumes by partial resync
 *
 * Every option --some-key VALUE is the key some_key of its section (so
 * --rdma-port is rdma_port), applied after the file.  Unknown keys,
 * values of the wrong type or out of range, a key given twice in the
 * file, and knobs that could not take effect (an rdma_* key while RDMA
 * is off) are errors naming the file and line, or the option.
 */
#ifndef RIFT_KV_CONFIG_H
#define RIFT_KV_CONFIG_H

#include <stddef.h>

#define KV_CFG_STR 256
#define KV_CFG_ERRLEN 512

/* Knobs, indexes of kv_config.origin. */
enum kv_knob {
	KV_PORT,
	KV_BIND,
	KV_RDMA_ENABLED,
	KV_RDMA_DEVICE,
	KV_RDMA_PORT,
	KV_RDMA_BIND,
	KV_RDMA_GID_INDEX,
	KV_RDMA_QUEUE_DEPTH,
	KV_RDMA_FALLBACK,
	KV_RIFT_URL,
	KV_METRICS_PORT,
	KV_METRICS_BIND,
	KV_PROTO_MAX_BULK_LEN,
	KV_CLIENT_QUERY_BUFFER_LIMIT,
	/* [replication] */
	KV_REPLICAOF,
	KV_USE_RDMA_WRITE,
	KV_BACKLOG_SIZE,
	KV_RING_SIZE,
	KV_REPLICA_FILE,
	KV_VALKEY_RDMA_PORT,
	KV_VALKEY_RDMA_BIND,
	KV_KNOBS
};

struct kv_config {
	int port;                     /* TCP port of RESP */
	char bind[KV_CFG_STR];        /* numeric address */
	int rdma_enabled;             /* the rift listener is on (bool) */
	char rdma_device[KV_CFG_STR]; /* "" = the bind address's */
	int rdma_port;                /* the rift listener's port, 0 unset */
	char rdma_bind[KV_CFG_STR];   /* "" = bind's */
	int rdma_gid_index;           /* -1 = rift's default */
	int rdma_queue_depth;         /* 0 = rift's default */
	int rdma_fallback_tcp;        /* auto:// (1) or rdma:// (0) */
	char rift_url[KV_CFG_STR];    /* --rift-url: the listener's URL */
	int metrics_port;             /* GET /metrics over HTTP: -1 off, 0
					 any free port */
	char metrics_bind[KV_CFG_STR]; /* its numeric address, "" = bind's */
	size_t proto_max_bulk_len;    /* bytes of one argument, at most */
	size_t client_query_buffer_limit; /* bytes of one command, at most */
	/* [replication] (repl.h) */
	char replicaof[KV_CFG_STR];   /* the primary's rift URL, "" = none */
	int use_rdma_write;           /* ship the log by one-sided writes
					 into a ring (bool) */
	size_t backlog_size;          /* primary: bytes of log kept for
					 partial resyncs */
	size_t ring_size;             /* replica: bytes of the ring it
					 exports */
	char replica_file[KV_CFG_STR]; /* replica: where it keeps what it
					  applied, "" = nowhere */
	/* Valkey's RDMA protocol (valkey_io.c): its port, 0 off, and its
	 * numeric address, "" = rdma_bind's, else bind's */
	int valkey_rdma_port;
	char valkey_rdma_bind[KV_CFG_STR];
	char config_file[KV_CFG_STR]; /* "" if none */
	/* where each knob was set: "file.toml:12", "--rdma-port", or ""
	 * (default) */
	char origin[KV_KNOBS][KV_CFG_STR + 16];
};

/* The name of a knob as the file spells it ("rdma_port"). */
const char *kv_config_key(enum kv_knob k);

/* Defaults: port 6379, bind 127.0.0.1, RDMA off, no /metrics, Redis's
 * request limits; a primary, use_rdma_write, 1 MiB backlog and ring. */
void kv_config_defaults(struct kv_config *c);

/* Apply the file at path.  0, or -1 with err = "path:line: message". */
int kv_config_load(struct kv_config *c, const char *path, char *err,
		   size_t errlen);

/* Apply "key = value" as text (value as in the file, strings with or
 * without quotes) set by origin.  0, or -1 with err. */
int kv_config_set(struct kv_config *c, const char *key, const char *value,
		  int quoted, const char *origin, char *err, size_t errlen);

/*
 * Parse argv: a config file as the first argument, then options.  0; 1
 * when --help or --version printed what they print (exit 0); -1 with err.
 * Checks the result (kv_config_check) too.
 */
int kv_config_args(struct kv_config *c, int argc, char **argv, char *err,
		   size_t errlen);

/* Rules between knobs, after which rdma_enabled is what holds: a
 * non-zero rdma_port or a rift_url turns RDMA on unless rdma_enabled =
 * false was set (an error then); an rdma_* knob needs RDMA on; RDMA on
 * needs rdma_port or rift_url; rift_url excludes rdma_port, rdma_bind,
 * rdma_device and rdma_fallback, which it replaces; rdma_port may not be
 * port; metrics_bind needs metrics_port, which may be neither port nor
 * rdma_port; a proto_max_bulk_len set must be below
 * client_query_buffer_limit.  0, or -1 with err naming where the knob
 * was set. */
int kv_config_check(struct kv_config *c, char *err, size_t errlen);

/*
 * The rift listener's URL: rift_url, or "auto://" (rdma_fallback tcp) or
 * "rdma://" with rdma_bind (else bind) and rdma_port.  addr, when not
 * NULL, replaces the address (rdma_device's).  0, or -1 if it does not
 * fit.
 */
int kv_config_rift_url(const struct kv_config *c, const char *addr,
		       char *out, size_t outlen);

/*
 * A primary named as REPLICAOF names it, "HOST PORT" (the hlen bytes at
 * host, the plen at port): its rift URL, auto://HOST:PORT, into out.  0,
 * or -1 when the host holds a blank, '/', ',', '?' or a bracket, the port
 * is not in 1..65535, or the URL does not fit.
 */
int kv_config_primary_url(const char *host, size_t hlen, const char *port,
			  size_t plen, char *out, size_t outlen);

#endif
