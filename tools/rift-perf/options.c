/*
 * rift-perf's command line: the options (perftest's where it has them),
 * the usage text, and the configuration they build: defaults < config
 * file < RIFT_* environment < options.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "perf.h"

enum {
	OPT_LOOPBACK = 256,
	OPT_TRANSPORT,
	OPT_TEST,
	OPT_OP,
	OPT_JSON,
	OPT_PLOT,
	OPT_CONFIG,
	OPT_PERSISTENT,
	OPT_MAX_SIZE,
	OPT_WARMUP,
	OPT_POLL,
	OPT_FILL,
	OPT_METRICS_PORT,
	OPT_METRICS_ADDR,
	OPT_REPORT_GBITS,
	OPT_NOTIFY,
};

/* ':' first: a missing argument is ':', not '?' */
#define OPTSTRING ":Sp:d:i:x:s:n:aD:t:q:hV"

static const struct option long_opts[] = {
	{"server", no_argument, NULL, 'S'},
	{"loopback", no_argument, NULL, OPT_LOOPBACK},
	{"transport", required_argument, NULL, OPT_TRANSPORT},
	{"port", required_argument, NULL, 'p'},
	{"ib-dev", required_argument, NULL, 'd'},
	{"ib-port", required_argument, NULL, 'i'},
	{"gid-index", required_argument, NULL, 'x'},
	{"size", required_argument, NULL, 's'},
	{"iters", required_argument, NULL, 'n'},
	{"all", no_argument, NULL, 'a'},
	{"max-size", required_argument, NULL, OPT_MAX_SIZE},
	{"duration", required_argument, NULL, 'D'},
	{"qd", required_argument, NULL, 't'},
	{"tx-depth", required_argument, NULL, 't'},
	{"conns", required_argument, NULL, 'q'},
	{"qp", required_argument, NULL, 'q'},
	{"test", required_argument, NULL, OPT_TEST},
	{"op", required_argument, NULL, OPT_OP},
	{"json", no_argument, NULL, OPT_JSON},
	{"plot", required_argument, NULL, OPT_PLOT},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"persistent", no_argument, NULL, OPT_PERSISTENT},
	{"warmup", required_argument, NULL, OPT_WARMUP},
	{"poll", required_argument, NULL, OPT_POLL},
	{"fill", no_argument, NULL, OPT_FILL},
	{"notify", no_argument, NULL, OPT_NOTIFY},
	{"metrics-port", required_argument, NULL, OPT_METRICS_PORT},
	{"metrics-addr", required_argument, NULL, OPT_METRICS_ADDR},
	{"report_gbits", no_argument, NULL, OPT_REPORT_GBITS},
	{"report-gbits", no_argument, NULL, OPT_REPORT_GBITS},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* "-s/--size" for an option code, as error messages name it. */
static const char *opt_name(int code)
{
	static char buf[64];
	const char *lname = NULL;

	for (const struct option *lo = long_opts; lo->name; lo++) {
		if (lo->val == code) {
			lname = lo->name;
			break;
		}
	}
	if (code < 256)
		snprintf(buf, sizeof(buf), "-%c/--%s", code,
			 lname ? lname : "?");
	else
		snprintf(buf, sizeof(buf), "--%s", lname ? lname : "?");
	return buf;
}

/* The usage text as it prints. */
/* clang-format off */
static void usage(FILE *f)
{
	fprintf(f,
"usage: rift-perf [options]                 server (one client, then exit)\n"
"       rift-perf -S [options] [ADDR]       server listening on ADDR\n"
"       rift-perf [options] HOST            client of the server on HOST\n"
"                                           (ADDR,ADDR,...: the server's\n"
"                                           addresses, one port group)\n"
"       rift-perf --loopback [options] [ADDR]  both ends in one process\n"
"\n"
"  -S, --server            server mode (also: no HOST given)\n"
"      --loopback          server and client in one process (two threads), on\n"
"                          ADDR (default 127.0.0.1), any free port unless -p\n"
"      --persistent        server: serve clients one after another, forever\n"
"      --transport T       rdma, tcp or auto (default auto: RDMA, else TCP with\n"
"                          the reason printed)\n"
"  -p, --port PORT         port to listen on / connect to (default %d)\n"
"  -d, --ib-dev DEV        RDMA device (default: the first active one)\n"
"  -i, --ib-port N         device port (default: the first active one)\n"
"  -x, --gid-index N       GID index (default: the one matching the address)\n"
"      --test lat|bw       round-trip latency (default) or one-way bandwidth\n"
"      --op OP             send (default), write or read: messages, or\n"
"                          one-sided writes or reads of memory the server\n"
"                          exported (perftest's ib_write_*, ib_read_*);\n"
"                          write lat polls the last byte, as ib_write_lat\n"
"      --notify            write lat: a ping-pong of rift_conn_write_notify,\n"
"                          each side told by RIFT_EVENT_WRITTEN instead\n"
"  -s, --size SIZE         message size, bytes; K, M, G suffixes are powers of\n"
"                          1024 (default 2 for lat, 65536 for bw)\n"
"  -a, --all               sweep sizes 2, 4, 8, ... up to --max-size\n"
"      --max-size SIZE     largest size of the sweep (default 8M)\n"
"  -n, --iters N           messages per connection and size (default 1000 for\n"
"                          lat, 5000 for bw)\n"
"  -D, --duration SEC      run each size for SEC seconds instead of -n\n"
"      --warmup N          unmeasured round trips (lat) or messages (bw) per\n"
"                          connection first\n"
"                          (default: a tenth of -n, at most 1000; 100 with -D)\n"
"  -t, --qd N              messages in flight per connection (lat default 1;\n"
"                          bw default 0: as many as the send window allows;\n"
"                          write/read bw: operations outstanding, default\n"
"                          128, perftest's --tx-depth)\n"
"  -q, --conns N           connections (default 1)\n"
"      --fill              send bw: write every byte of every message, not\n"
"                          just a sequence number (what an application pays)\n"
"      --report_gbits      accepted as perftest's; the table always shows\n"
"                          GB/s and Gb/s\n"
"      --poll MODE         event, busy or adaptive (rift_config.polling)\n"
"      --config FILE       rift config file (TOML, docs/config.md); RIFT_*\n"
"                          environment variables override it, options both\n"
"      --json              one JSON object on stdout instead of the table;\n"
"                          a failure too is one, with its \"error\"\n"
"      --plot FILE.svg     draw the sweep (-a) or the latency distribution\n"
"                          with gnuplot (FILE is checked before the run)\n"
"      --metrics-port PORT serve rift's metrics over HTTP while running:\n"
"                          GET /metrics (Prometheus), GET /info; 0 = any\n"
"                          free port (printed on stderr)\n"
"      --metrics-addr ADDR address for --metrics-port (default 127.0.0.1)\n"
"  -h, --help, -V, --version\n"
"\n"
"Exit status: 0 done, 1 failed (connection, server, gnuplot, plot file,\n"
"metrics port), "
"2 bad usage, 130 interrupted.\n", DEFAULT_PORT);
}
/* clang-format on */

__attribute__((format(printf, 2, 3))) static int bad(int code, const char *fmt,
						     ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	errf("%s: %s", opt_name(code), msg);
	fprintf(stderr, PROG ": try '" PROG " --help'\n");
	return EXIT_USAGE;
}

/* What getopt_long refused (opterr is 0: the message is ours, so that
 * --json can carry it); argv[optind - 1] is the word it stopped at. */
/* A client's HOST may list addresses, a port group's (ADDR,ADDR); a
 * listener has one.  Says what is wrong, or returns 0. */
static int host_check(const struct opts *o)
{
	char url[300]; /* as the client's and the server's */

	if (strchr(o->host, ',') && o->mode != MODE_CLIENT) {
		errf("'%s': a server listens on one address (0.0.0.0: all of "
		     "them); several, ADDR,ADDR, are a client's",
		     o->host);
		return -1;
	}
	for (const char *a = o->host;; a += strcspn(a, ",") + 1) {
		if (!strcspn(a, ",")) {
			errf("'%s': an empty address in the list", o->host);
			return -1;
		}
		if (!a[strcspn(a, ",")])
			break;
	}
	if (url_build(url, sizeof(url), "auto", o->host, 65535)) {
		errf("'%s': too many addresses (the URL would pass %zu bytes)",
		     o->host, sizeof(url) - 1);
		return -1;
	}
	return 0;
}

static int bad_option(int ch, char **argv)
{
	const char *word = optind > 0 ? argv[optind - 1] : "?";

	if (ch == ':' && optopt)
		return bad(optopt, "needs an argument");
	/* --json=1: a long option that takes no argument was given one */
	if (ch != ':' && optopt && !strncmp(word, "--", 2))
		return bad(optopt, "takes no argument");
	if (ch == ':')
		errf("'%s' needs an argument", word);
	else if (optopt)
		errf("unknown option '-%c'", optopt);
	else
		errf("unknown or ambiguous option '%s'", word);
	fprintf(stderr, PROG ": try '" PROG " --help'\n");
	return EXIT_USAGE;
}

/* Is --json among the options?  Known before anything else is looked
 * at, so that every failure, the first bad option too, is reported as
 * JSON.  A pass of getopt_long of its own: it knows which words are
 * arguments of other options and what abbreviations mean. */
static bool wants_json(int argc, char **argv)
{
	bool json = false;
	int ch;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, OPTSTRING, long_opts, NULL)) != -1)
		if (ch == OPT_JSON)
			json = true;
	optind = 0; /* glibc: start again from the beginning */
	return json;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

/* Bytes with an optional K/M/G (KB, KiB, ...) suffix, powers of 1024. */
static int parse_size(const char *s, uint64_t *out)
{
	static const char *const units = "KMGT";
	char *end;
	uint64_t v;
	const char *u;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end) {
		int c = toupper((unsigned char)*end);

		u = c ? strchr(units, c) : NULL;
		if (!u)
			return -1;
		end++;
		if (!strcmp(end, "") || !strcasecmp(end, "B") ||
		    !strcasecmp(end, "iB")) {
			int shift = 10 * (int)(u - units + 1);

			if (v > (UINT64_MAX >> shift))
				return -1;
			v <<= shift;
		} else {
			return -1;
		}
	}
	*out = v;
	return 0;
}

static int parse_range(int code, const char *arg, uint64_t lo, uint64_t hi,
		       uint64_t *out)
{
	if (parse_u64(arg, out))
		return bad(code, "'%s' is not a whole number", arg);
	if (*out < lo || *out > hi)
		return bad(code, "%s is out of range %" PRIu64 "..%" PRIu64,
			   arg, lo, hi);
	return 0;
}

/* Parse argv into *o, build the configuration; 0 or an exit status. */
int parse_args(int argc, char **argv, struct opts *o)
{
	const char *dev = NULL, *op = "send";
	uint64_t v, size = 0, max_size = SWEEP_MAX_DEFAULT;
	bool server = false, loopback = false, sweep = false;
	bool size_set = false, max_set = false, iters_set = false,
	     qd_set = false;
	bool warm_set = false, port_set = false, maddr_set = false;
	uint64_t largest = 0;
	int64_t ib_port = -1, gid = -2;
	int polling = -1, ch, rc;
	char err[RIFT_CONFIG_ERRLEN];

	memset(o, 0, sizeof(*o));
	o->json = wants_json(argc, argv);
	o->test = TEST_LAT;
	o->transport = "auto";
	o->port = DEFAULT_PORT;
	o->conns = 1;
	o->metrics_port = -1;
	o->metrics_addr = "127.0.0.1";
	while ((ch = getopt_long(argc, argv, OPTSTRING, long_opts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'S':
			server = true;
			break;
		case OPT_LOOPBACK:
			loopback = true;
			break;
		case OPT_PERSISTENT:
			o->persistent = true;
			break;
		case OPT_TRANSPORT:
			if (strcmp(optarg, "rdma") && strcmp(optarg, "tcp") &&
			    strcmp(optarg, "auto"))
				return bad(ch, "'%s': use rdma, tcp or auto",
					   optarg);
			o->transport = optarg;
			break;
		case 'p':
			if ((rc = parse_range(ch, optarg, 1, 65535, &v)))
				return rc;
			o->port = (int)v;
			port_set = true;
			break;
		case 'd':
			if (!*optarg || strlen(optarg) >= RIFT_DEVICE_NAME_MAX)
				return bad(ch,
					   "'%s': a device name of 1..%d "
					   "characters",
					   optarg, RIFT_DEVICE_NAME_MAX - 1);
			dev = optarg;
			break;
		case 'i':
			if ((rc = parse_range(ch, optarg, 1, 255, &v)))
				return rc;
			ib_port = (int64_t)v;
			break;
		case 'x':
			if ((rc = parse_range(ch, optarg, 0, 65535, &v)))
				return rc;
			gid = (int64_t)v;
			break;
		case 's':
			if (parse_size(optarg, &size))
				return bad(ch,
					   "'%s' is not a size (bytes, or a "
					   "number with "
					   "K, M or G)",
					   optarg);
			size_set = true;
			break;
		case OPT_MAX_SIZE:
			if (parse_size(optarg, &max_size))
				return bad(ch,
					   "'%s' is not a size (bytes, or a "
					   "number with "
					   "K, M or G)",
					   optarg);
			if (max_size < SWEEP_MIN)
				return bad(ch,
					   "%s: the sweep starts at %d bytes",
					   optarg, SWEEP_MIN);
			max_set = true;
			break;
		case 'a':
			sweep = true;
			break;
		case 'n':
			if ((rc = parse_range(ch, optarg, 1, 1000000000,
					      &o->iters)))
				return rc;
			iters_set = true;
			break;
		case 'D': {
			char *end;

			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || *end || end == optarg ||
			    !(o->duration > 0) || o->duration > 86400)
				return bad(ch,
					   "'%s': seconds, more than 0 and at "
					   "most 86400",
					   optarg);
			break;
		}
		case 't':
			if ((rc = parse_range(ch, optarg, 0, MAX_QD, &v)))
				return rc;
			o->qd = (uint32_t)v;
			qd_set = true;
			break;
		case 'q':
			if ((rc = parse_range(ch, optarg, 1, MAX_CONNS, &v)))
				return rc;
			o->conns = (uint32_t)v;
			break;
		case OPT_TEST:
			if (!strcmp(optarg, "lat"))
				o->test = TEST_LAT;
			else if (!strcmp(optarg, "bw"))
				o->test = TEST_BW;
			else if (!strcmp(optarg, "write") ||
				 !strcmp(optarg, "read"))
				return bad(ch,
					   "'%s': use lat or bw, with --op %s "
					   "(ib_%s_lat is --op %s --test lat)",
					   optarg, optarg, optarg, optarg);
			else
				return bad(ch, "'%s': use lat or bw", optarg);
			break;
		case OPT_OP:
			op = optarg;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_FILL:
			o->fill = true;
			break;
		case OPT_NOTIFY:
			o->notify = true;
			break;
		case OPT_REPORT_GBITS:
			break; /* perftest's: Gb/s are in the table anyway */
		case OPT_PLOT:
			o->plot = optarg;
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case OPT_METRICS_PORT:
			if ((rc = parse_range(ch, optarg, 0, 65535, &v)))
				return rc;
			o->metrics_port = (int)v;
			break;
		case OPT_METRICS_ADDR:
			if (!*optarg)
				return bad(ch, "give an address, e.g. "
					       "127.0.0.1, 0.0.0.0 or ::1");
			o->metrics_addr = optarg;
			maddr_set = true;
			break;
		case OPT_WARMUP:
			if ((rc = parse_range(ch, optarg, 0, 1000000000,
					      &o->warmup)))
				return rc;
			warm_set = true;
			break;
		case OPT_POLL:
			if (!strcmp(optarg, "event"))
				polling = RIFT_POLL_EVENT;
			else if (!strcmp(optarg, "busy"))
				polling = RIFT_POLL_BUSY;
			else if (!strcmp(optarg, "adaptive"))
				polling = RIFT_POLL_ADAPTIVE;
			else
				return bad(ch,
					   "'%s': use event, busy or adaptive",
					   optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " (rift %s)\n", rift_version_string());
			exit(0);
		default:
			return bad_option(ch, argv);
		}
	}

	/* What the operation and the mode are. */
	if (!strcmp(op, "send"))
		o->op = OP_SEND;
	else if (!strcmp(op, "write"))
		o->op = OP_WRITE;
	else if (!strcmp(op, "read"))
		o->op = OP_READ;
	else
		return bad(OPT_OP, "'%s': use send, write or read", op);
	if (argc - optind > 1) {
		errf("one HOST at most, got '%s' and '%s'; try '" PROG
		     " --help'",
		     argv[optind], argv[optind + 1]);
		return EXIT_USAGE;
	}
	if (server && loopback) {
		errf("-S/--server and --loopback exclude each other");
		return EXIT_USAGE;
	}
	if (loopback) {
		o->mode = MODE_LOOPBACK;
		o->host = optind < argc ? argv[optind] : "127.0.0.1";
		if (!port_set)
			o->port = 0; /* any free port: two runs never collide */
	} else if (server || optind == argc) {
		o->mode = MODE_SERVER;
		o->host = optind < argc ? argv[optind] : "0.0.0.0";
	} else {
		o->mode = MODE_CLIENT;
		o->host = argv[optind];
	}
	if (o->persistent && o->mode != MODE_SERVER) {
		errf("--persistent: only for the server");
		return EXIT_USAGE;
	}
	if (host_check(o))
		return EXIT_USAGE;
	if (maddr_set && o->metrics_port < 0)
		return bad(OPT_METRICS_ADDR, "only with --metrics-port");

	/* Sizes, counts, depth. */
	if (iters_set && o->duration > 0) {
		errf("-n/--iters and -D/--duration exclude each other");
		return EXIT_USAGE;
	}
	if (sweep && size_set)
		return bad('s',
			   "with -a/--all the sweep sets the sizes; bound it "
			   "with --max-size");
	if (max_set && !sweep)
		return bad(OPT_MAX_SIZE, "only with -a/--all");
	if (!iters_set && o->duration <= 0)
		o->iters = o->test == TEST_LAT ? LAT_ITERS_DEFAULT
					       : BW_ITERS_DEFAULT;
	if (!warm_set)
		o->warmup = o->duration > 0	   ? 100
			    : o->iters / 10 > 1000 ? 1000
						   : o->iters / 10;
	if (o->fill && o->test != TEST_BW)
		return bad(OPT_FILL, "only for --test bw (lat messages are "
				     "copied from one filled buffer)");
	if (o->fill && o->op != OP_SEND)
		return bad(OPT_FILL,
			   "only for --op send (write and read move a "
			   "registered region, written once)");
	if (o->notify && (o->op != OP_WRITE || o->test != TEST_LAT))
		return bad(OPT_NOTIFY,
			   "only for --op write --test lat (a ping-pong of "
			   "rift_conn_write_notify, each side told of the "
			   "other's write by RIFT_EVENT_WRITTEN), not --op %s "
			   "--test %s",
			   op, o->test == TEST_LAT ? "lat" : "bw");
	if (!qd_set)
		o->qd = o->test == TEST_LAT ? 1
			: o->op == OP_SEND  ? 0
					    : RMA_TX_DEFAULT;
	else if (o->test == TEST_LAT && o->qd == 0)
		return bad(
			't',
			"0: a latency test needs at least 1 message in flight");
	else if (o->qd == 0 && o->op != OP_SEND)
		return bad('t',
			   "0 (the send window) is for --op send: --op %s "
			   "keeps N operations outstanding (default %d)",
			   op, RMA_TX_DEFAULT);
	if (sweep) {
		for (uint64_t s = SWEEP_MIN;
		     s <= max_size && o->n_sizes < MAX_SIZES; s *= 2)
			o->sizes[o->n_sizes++] = s;
	} else {
		o->sizes[o->n_sizes++] = size_set ? size
					 : o->test == TEST_LAT
						 ? LAT_SIZE_DEFAULT
						 : BW_SIZE_DEFAULT;
	}
	if (o->plot) {
		size_t n = strlen(o->plot);

		if (n < 5 || strcasecmp(o->plot + n - 4, ".svg"))
			return bad(OPT_PLOT,
				   "'%s': give a file name ending in .svg",
				   o->plot);
		if (o->test == TEST_BW && !sweep)
			return bad(OPT_PLOT,
				   "the bandwidth test draws a size sweep: "
				   "add -a/--all");
		if (o->mode == MODE_SERVER)
			return bad(OPT_PLOT,
				   "the client draws; the server has no "
				   "results");
		if (plot_writable(o->plot, err, sizeof(err))) {
			errf("--plot: %s", err);
			return EXIT_FAIL;
		}
		if (!gnuplot_found()) {
			errf("--plot: gnuplot is not installed (Debian package "
			     "gnuplot-nox; scripts/setup.sh installs it)");
			return EXIT_FAIL;
		}
	}

	/* Configuration: defaults < file < environment < options. */
	rift_config_init(&o->cfg);
	if (o->config &&
	    (rc = rift_config_load(&o->cfg, o->config, err, sizeof(err)))) {
		errf_rc(rc, "--config: %s", err);
		return EXIT_USAGE;
	}
	if ((rc = rift_config_env(&o->cfg, err, sizeof(err)))) {
		errf_rc(rc, "%s", err);
		return EXIT_USAGE;
	}
	if (dev)
		snprintf(o->cfg.device, sizeof(o->cfg.device), "%s", dev);
	if (ib_port >= 0)
		o->cfg.port = (uint32_t)ib_port;
	if (gid >= -1)
		o->cfg.gid_index = (int32_t)gid;
	if (polling >= 0)
		o->cfg.polling = (rift_polling)polling;
	if ((rc = rift_config_check(&o->cfg))) {
		errf_rc(rc, "options -d/-i/-x/--poll: %s",
			rift_ctx_last_error(NULL));
		return EXIT_USAGE;
	}
	for (int i = 0; i < o->n_sizes; i++)
		if (o->sizes[i] > largest)
			largest = o->sizes[i];
	if (o->op == OP_SEND) {
		if (largest > o->cfg.max_msg_size)
			return bad(
				sweep ? OPT_MAX_SIZE : 's',
				"%" PRIu64 " bytes exceeds "
				"max_msg_size %" PRIu64 " (config [session] "
				"max_msg_size, env RIFT_SESSION_MAX_MSG_SIZE)",
				largest, (uint64_t)o->cfg.max_msg_size);
		return 0;
	}
	/*
	 * write/read: an operation is not a message (a larger one goes in
	 * pieces), so max_msg_size does not bound it; the memory both
	 * sides register does.  Each data connection has a region of
	 * rma_slots operations of the largest size: -t of them while they
	 * fit RMA_SLOT_MEM for all connections, else fewer, shared.  A
	 * polled write lat has -t slots to write from and -t slots the
	 * peer writes into, as perftest's write_lat has a half of its
	 * buffer for each: a slot's last byte is polled, so no two round
	 * trips share one.
	 */
	if (largest == 0)
		return bad('s', "0: --op %s needs at least 1 byte", op);
	if (largest > RMA_MEM_MAX / o->conns)
		return bad(sweep ? OPT_MAX_SIZE : 's',
			   "%" PRIu64 " bytes on %u connection(s): --op %s "
			   "registers -s times -q bytes on each side, at most "
			   "%llu",
			   largest, o->conns, op, RMA_MEM_MAX);
	if (write_lat_polled(o->op, o->test, o->notify)) {
		if (largest > RMA_MEM_MAX / 2 / o->conns / o->qd)
			return bad(qd_set ? 't' : 's',
				   "%" PRIu64 " bytes, %u in flight on %u "
				   "connection(s): write lat registers 2 "
				   "times -s times -t times -q bytes on each "
				   "side (a slot to write from and one to be "
				   "written into per round trip), at most %llu",
				   largest, o->qd, o->conns, RMA_MEM_MAX);
		o->rma_slots = o->qd;
		o->rma_len = 2 * largest * o->qd;
		return 0;
	}
	o->rma_slots = (uint32_t)(RMA_SLOT_MEM / (largest * o->conns));
	if (o->rma_slots > o->qd)
		o->rma_slots = o->qd;
	if (o->rma_slots < 1)
		o->rma_slots = 1;
	o->rma_len = largest * o->rma_slots;
	return 0;
}
