/*
 * perf.h - what the files of rift-perf share: the options, the control
 * protocol's numbers, the loop, and the state of the server and of the
 * client.  main.c has the overview; each file says what it holds:
 *
 *   main.c     main, the signals, the loopback threads, --metrics-port
 *   options.c  the command line and the usage text
 *   loop.c     the clock and the loop both sides run
 *   ctl.c      the control messages
 *   server.c   the server side
 *   client.c   the client side: connections, waiting, the run
 *   measure.c  the client's traffic, one message size at a time
 *   rma.c      ... of --op write and read: one-sided operations
 *   output.c   the table, the JSON objects and the warnings
 *   plot.c     --plot with gnuplot
 */
#ifndef RIFT_TOOLS_PERF_H
#define RIFT_TOOLS_PERF_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rift.h"
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "../metrics_http.h"

#define PROG		  "rift-perf"
#define DEFAULT_PORT	  18515	      /* perftest's */
#define PROTO_MAGIC	  0x46525052u /* "RPRF" */
#define PROTO_VERSION	  3u	      /* 3: HELLO says op and --notify */
#define CTL_VALUES	  8
#define CTL_HDR		  8u /* magic, type */
#define CTL_SIZE	  (CTL_HDR + 8u * CTL_VALUES)
#define CTL_TEXT	  256	/* ERR text, bytes */
#define CTL_BLOB	  RIFT_TOKEN_MAX_LEN /* JOIN, JOIN_OK: a token */
#define REPLY_TIMEOUT_MS  60000 /* control answers, ms */
#define CLOSE_TIMEOUT_MS  5000	/* waiting for close callbacks, ms */
#define TICK_MS		  100	/* longest sleep between flag checks, ms */
#define MAX_CONNS	  1024
#define MAX_QD		  65536
#define MAX_SIZES	  40
#define SWEEP_MIN	  2
#define SWEEP_MAX_DEFAULT (1ull << 23)
#define LAT_ITERS_DEFAULT 1000 /* perftest's lat default */
#define BW_ITERS_DEFAULT  5000 /* perftest's bw default */
#define LAT_SIZE_DEFAULT  2
#define BW_SIZE_DEFAULT	  65536
#define RMA_TX_DEFAULT	  128 /* write/read bw: perftest's tx-depth */
/* write/read: what one side registers for all its data connections
 * together at most (-s times -q), bytes; and what it spreads a bw test's
 * outstanding operations over (one slot of -s bytes each, fewer slots
 * than -t when they do not fit: operations then share slots) */
#define RMA_MEM_MAX	  (1ull << 30)
#define RMA_SLOT_MEM	  (64ull << 20)
#define PLOT_POINTS	  2000 /* CDF points drawn at most */
/* A step is too short to be stable (a warning says so) when a lat step
 * measured fewer round trips than this, all connections together: below
 * it the nearest-rank p99.9 is the maximum ... */
#define STABLE_MIN_SAMPLES 1000
/* ... or when a bw step ran for less than this: its rate is then mostly
 * the ramp of the send window and the END/DONE round trip, ms. */
#define STABLE_MIN_MS 100
#define MAX_WARN      4	  /* warnings kept for the report */
#define WARN_LEN      320 /* bytes of one warning */

#define EXIT_FAIL  1
#define EXIT_USAGE 2
#define EXIT_INTR  130

enum mode { MODE_CLIENT, MODE_SERVER, MODE_LOOPBACK };
enum test { TEST_LAT = 1, TEST_BW = 2 };
/* The operation measured (HELLO's; perftest's ib_send_*, ib_write_*,
 * ib_read_*). */
enum op { OP_SEND = 0, OP_WRITE = 1, OP_READ = 2 };

enum ctl_type {
	CTL_HELLO = 1, /* v: version, test, conns, qd, largest size, op,
			  write/read: region bytes per data conn,
			  write lat: 1 = --notify */
	CTL_HELLO_OK,  /* v: token */
	CTL_JOIN,      /* v: token, index (first message of a data conn);
			  write lat: blob, the client's export */
	CTL_JOIN_OK,   /* write/read: blob, the server's export */
	CTL_BEGIN,     /* v: step, size */
	CTL_BEGIN_OK,
	CTL_END,  /* v: messages sent in the step, bytes */
	CTL_DONE, /* v: messages, bytes, user us, sys us, wall us */
	CTL_ERR,  /* text */
};

struct ctl {
	uint32_t type;
	uint64_t v[CTL_VALUES];
	char text[CTL_TEXT];	/* ERR */
	uint8_t blob[CTL_BLOB]; /* JOIN, JOIN_OK: a rift_mem_export token */
	size_t blob_len;	/* bytes, 0 = none */
};

struct opts {
	enum mode mode;
	enum test test;
	enum op op;
	const char *transport; /* "tcp", "rdma" or "auto" */
	const char *host; /* client: server; server: bind; loopback: both */
	int port;	  /* listen / connect port, 0 = any (loopback) */
	uint64_t sizes[MAX_SIZES]; /* message sizes to run, bytes */
	int n_sizes;
	uint64_t iters;	 /* per connection and size; 0 with -D */
	double duration; /* seconds per size; 0 = iterations */
	uint64_t warmup; /* lat: unmeasured round trips per connection */
	uint32_t qd;	 /* messages in flight per connection, 0 = window;
			    write/read: operations outstanding */
	uint32_t rma_slots; /* write/read: -s slots in each region (polled
			       write lat: -t to write from, -t into) */
	uint64_t rma_len;   /* ... the region of a data connection, bytes */
	bool notify;	    /* write lat: --notify, told by WRITTEN */
	uint32_t conns;	 /* data connections */
	bool json, persistent;
	bool fill;		  /* bw: write every byte of every message */
	const char *plot;	  /* SVG path or NULL */
	const char *config;	  /* config file or NULL */
	int metrics_port;	  /* --metrics-port, -1 = no endpoint */
	const char *metrics_addr; /* --metrics-addr */
	rift_config cfg;	  /* defaults < file < env < options */
};

/* main.c */
extern volatile sig_atomic_t interrupted;
extern int stop_all; /* loopback: the client is done (atomic) */
/*
 * errf: a failure, on stderr; errf_rc names the RIFT_E* code behind it.
 * The first failure reported (any thread; fail_record only records) is
 * the "error" of --json's object when neither the client nor the server
 * printed one.  notef: stderr only, not a failure.
 */
__attribute__((format(printf, 1, 2))) void errf(const char *fmt, ...);
__attribute__((format(printf, 2, 3))) void errf_rc(int rc, const char *fmt,
						   ...);
__attribute__((format(printf, 2, 3))) void fail_record(int rc, const char *fmt,
						       ...);
__attribute__((format(printf, 1, 2))) void notef(const char *fmt, ...);

/* options.c: parse argv into *o, build the configuration; 0 or an exit
 * status. */
int parse_args(int argc, char **argv, struct opts *o);

/* loop.c */
struct loop {
	rift_ctx *ctx;
	rift_polling polling;
	uint64_t busy_ns;	  /* adaptive: spin this long after work, ns */
	uint64_t last_work;	  /* ns */
	struct metrics_src *msrc; /* /metrics of ctx, or NULL */
};

uint64_t now_ns(void);
int loop_once(struct loop *lp, int max_ms);
void loop_init(struct loop *lp, rift_ctx *ctx, const rift_config *cfg,
	       struct metrics_src *msrc);
void loop_fini(struct loop *lp);
int url_build(char *buf, size_t len, const char *scheme, const char *host,
	      int port);

/* ctl.c */
const char *op_name(enum op op); /* "send", "write", "read" */
/* The operation as the report names the test: op_name, or
 * "write_notify" for --notify. */
const char *op_label(const struct opts *o);
int ctl_decode(const void *data, size_t len, struct ctl *m);
int ctl_send(rift_conn *conn, uint32_t type, const uint64_t *v, int nv,
	     const char *text);
/* A message carrying blob (len <= CTL_BLOB bytes) after its values. */
int ctl_send_blob(rift_conn *conn, uint32_t type, const uint64_t *v, int nv,
		  const void *blob, size_t len);

/* server.c */
struct sconn;

struct server {
	const struct opts *o;
	const char *who;	  /* log prefix */
	bool loopback;		  /* a thread beside the client: logs errors
				     only, ends when the client is done */
	struct metrics_src *msrc; /* --metrics-port: this side, or NULL */
	rift_ctx *ctx;
	struct loop lp;
	rift_listener *lst;
	char url[300];
	int port; /* bound port */
	struct sconn *conns;
	int open; /* handles whose close callback is due */
	int failed;
	char err[512]; /* why server_run failed, for the report */
	int err_rc;    /* RIFT_E* behind err, or 0 */
	/* the client being served */
	struct sconn *ctl;
	uint64_t token;
	enum test test;
	enum op op;
	uint64_t rma_len;      /* write/read: region bytes per data conn */
	uint32_t rma_inflight; /* write lat: writes back under way */
	bool notify;	       /* write lat: --notify, else polled */
	uint32_t qd;	       /* polled write lat: slots per connection */
	uint64_t max_size;     /* ... and the largest -s, bytes */
	uint64_t size;	       /* ... this step's -s, bytes */
	bool spin;	       /* ... a step runs: poll memory, never sleep */
	uint32_t want_conns, joined;
	bool session_end; /* the main loop ends the session */
	bool session_failed;
	int served;	   /* sessions that said HELLO */
	int served_failed; /* ... and ended in a failure */
	/* the current step */
	uint64_t rmsgs, rbytes;
	uint64_t want_msgs;
	bool end_pending; /* END seen, DONE due once want_msgs arrived */
	uint64_t t_begin, u_begin, s_begin;
	/* loopback: 1 listening, -1 failed (atomic) */
	int ready;
};

int server_run(struct server *s);
void *server_thread(void *arg);

/* client.c; its state is measure.c's, output.c's and plot.c's too */
struct samples {
	uint64_t *v; /* round trips, ns */
	size_t n, cap;
};

struct latstats {
	double min, p50, p90, p99, p999, max, mean, stdev; /* round trip, us */
};

struct result {
	uint64_t size;		     /* bytes per message */
	uint64_t iters;		     /* measured messages per connection */
	uint64_t msgs;		     /* measured messages, all connections */
	uint64_t bytes;		     /* bw: bytes streamed */
	double secs;		     /* step wall time, s */
	struct latstats lat;	     /* lat */
	double gbytes, gbits, mmsgs; /* bw: GB/s, Gb/s, Mmsg/s */
	double cpu_cli, cpu_srv;     /* % of wall, per side */
};

struct client;
struct cconn;

/* write/read: one outstanding operation of a data connection; its slot
 * is where it reads or writes in both regions. */
struct rma_op {
	struct cconn *c;
	uint64_t t;    /* lat: stamp of the call */
	uint32_t slot; /* index in c->ops */
	/* polled write lat: this slot's round trip */
	uint32_t k;   /* writes of the step so far; the last byte of
			 the k-th is rma_mark(k) */
	bool busy;    /* its write's callback is due */
	bool awaited; /* the peer's answering write has not landed */
};

struct cconn {
	struct client *cl;
	rift_conn *conn;
	int idx; /* -1: control, else data index */
	bool connected, joined, closing;
	bool blocked; /* a send got RIFT_EAGAIN; wait for WRITABLE */
	void *held;   /* bw: the buffer that was refused */
	uint64_t *ts; /* lat: send stamps in flight, ring of qd */
	uint32_t ts_head, ts_n;
	uint64_t sent, recvd; /* messages this step; write/read:
				 operations called, completed */
	/* write/read: this side's region (-s times rma_slots), the
	 * server's token for it, the operations */
	uint8_t *buf;
	rift_mem *mem;
	uint8_t rtok[RIFT_TOKEN_MAX_LEN];
	size_t rtok_len;
	struct rma_op *ops; /* qd of them */
	uint32_t inflight;  /* operations whose callback is due */
};

struct client {
	const struct opts *o;
	rift_ctx *ctx;
	struct loop lp;
	uint64_t settle_until; /* cl_begin: waiting for the pools, ns */
	char url[300];
	struct cconn ctl;
	struct cconn *data;
	uint32_t n_data; /* data conns opened */
	int open;	 /* connections whose close callback is due */
	bool failed;
	char err[700];
	int err_rc; /* RIFT_E* behind err, or 0 */
	/* control answers */
	struct ctl reply;
	bool have_reply;
	uint64_t token;
	rift_transport transport;
	rift_fallback_reason fallback;
	uint64_t path_changes;
	/* Standby paths of the first data connection once the steps ran
	 * (a port group: HOST listed several addresses). */
	uint32_t standby_paths;
	/* ... and its paths carrying data: 1, or each joined one with
	 * group.policy = active-active. */
	uint32_t active_paths;
	/* the step */
	bool in_step;
	bool warming; /* bw: the unmeasured phase in front of a step */
	bool spin;    /* polled write lat: a step runs, never sleep */
	uint64_t size;
	uint32_t qd;	   /* lat: ring size */
	uint64_t total;	   /* messages per connection, iterations mode */
	uint64_t deadline; /* duration mode, ns */
	uint32_t batch;	   /* bw: sends per loop round */
	uint8_t *payload;  /* lat: message contents */
	struct samples lat; /* stamp ticks during a step, ns after it */
	uint64_t t0;
	/* progress line */
	bool tty, progress_shown;
	uint64_t next_progress, run_start;
	int step_no;
	/* results */
	struct result res[MAX_SIZES];
	int n_res;
	char warn[MAX_WARN][WARN_LEN]; /* said on stderr, kept for --json */
	int n_warn;
};

/* The first failure is the one reported; cl_fail_rc names its RIFT_E*. */
__attribute__((format(printf, 2, 3))) void cl_fail(struct client *cl,
						   const char *fmt, ...);
__attribute__((format(printf, 3, 4))) void cl_fail_rc(struct client *cl, int rc,
						      const char *fmt, ...);
void progress_clear(struct client *cl);
int cl_wait(struct client *cl, bool (*done)(struct client *),
	    void (*work)(struct client *), const char *what, int timeout_ms);
int cl_ask(struct client *cl, uint32_t type, const uint64_t *v, int nv,
	   uint32_t want, const char *what);
/* Run the client; its state goes to *out (NULL when none could be made)
 * for client_report, which prints --json's object and frees it.  Both
 * return the exit status. */
int client_run(const struct opts *o, int port, struct metrics_src *msrc,
	       struct client **out);
int client_report(struct client *cl, int status);

/* measure.c */
void cl_on_recv(rift_conn *conn, rift_msg *msg);
void cl_on_event(rift_conn *conn, const rift_event *ev);
int cl_step(struct client *cl, uint64_t size, struct result *r);
int samples_push(struct samples *s, uint64_t v);

/*
 * Latency stamps.  perftest stamps with the TSC (get_cycles), and so
 * does rift-perf on x86-64, converted to ns at a rate measured against
 * CLOCK_MONOTONIC over each step (measure.c, samples_to_ns).
 * clock_gettime costs a system call where the kernel cannot read the TSC
 * itself (a QEMU TCG guest reads the HPET: about 3 us), and one such call
 * would sit inside every sample, a cost perftest's samples do not carry.
 * Like perftest, a sample whose ends ran on two CPUs is kept as it is
 * (rare with busy polling; TSCs of one host agree), only never negative.
 */
static inline uint64_t stamp_now(void)
{
#if defined(__x86_64__)
	unsigned int cpu;

	return __rdtscp(&cpu);
#else
	return now_ns();
#endif
}

/* Whether a data connection has more to send (or operations to call)
 * in this phase: iterations, or the duration (lat: its warm-up first). */
static inline __attribute__((always_inline)) bool
more_to_send(const struct cconn *c)
{
	const struct client *cl = c->cl;

	if (cl->warming)
		return c->sent < cl->total;
	if (cl->o->duration > 0)
		return c->sent < cl->o->warmup * (cl->o->test == TEST_LAT) ||
		       now_ns() < cl->deadline;
	return c->sent < cl->total;
}

/* Polled write lat (rma.c, server.c): the last byte of a slot's k-th
 * write, k from 1, never 0, changing with every write (a zeroed slot
 * holds none: each step starts from 0). */
static inline uint8_t rma_mark(uint32_t k)
{
	return (uint8_t)((k - 1) % 255 + 1);
}

/* Polled write lat: looks at memory between two rounds of the loop
 * (rma.c, server.c), as perftest spins on its byte; a round reaps the
 * completions. */
#define RMA_SPINS 64

/* Polled write lat: whether the test polls memory (not --notify). */
static inline bool write_lat_polled(enum op op, enum test test, bool notify)
{
	return op == OP_WRITE && test == TEST_LAT && !notify;
}

/* rma.c: --op write and read on the client */
int rma_conn_setup(struct cconn *c, void *tok, size_t *tok_len);
void rma_conn_release(struct cconn *c);
void rma_begin(struct cconn *c);
void rma_start(struct client *cl);
void rma_poll(struct client *cl);
void rma_on_written(struct cconn *c, const rift_event *ev);

/* output.c.  The table and its header fit TABLE_WIDTH columns. */
#define TABLE_WIDTH 79

extern bool json_printed; /* --json's one object is out */
void transport_why(const struct client *cl, char *buf, size_t len);
void print_header(const struct client *cl);
void print_row(const struct client *cl, const struct result *r);
void print_rule(void);
void check_stable(struct client *cl);
void print_json(const struct client *cl, bool was_interrupted);
void print_server_json(const struct server *s, int status);
void print_error_json(const char *msg, int rc);

/* plot.c */
bool gnuplot_found(void);
int plot_writable(const char *path, char *err, size_t len);
int plot_svg(struct client *cl);

#endif /* RIFT_TOOLS_PERF_H */
