/*
 * rift-kv-benchmark - redis-benchmark for RESP over rift: clients that
 * each send a pipeline of commands, wait for all the replies, and send
 * the next, until the requests of a test are done; then the test's
 * requests per second and latency percentiles, and the transport the
 * connections ended up on (and why, when auto:// fell back to TCP).
 *
 *   rift-kv-benchmark [-u URL] [-c CLIENTS] [-n REQUESTS] [-P PIPELINE]
 *                     [-d SIZE] [-t TESTS] [--csv]
 *
 * One thread, one rift context, as redis-benchmark runs one thread.  A
 * request's latency is from the send of its pipeline to the arrival of
 * its reply (as redis-benchmark counts it).  The output has the shape of
 * `redis-benchmark -q`, with p99 after p50; --csv has redis-benchmark's
 * columns and the transport and the fallback reason.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conn.h"
#include "reply.h"

#define DEFAULT_URL "auto://127.0.0.1:6380"
#define CONNECT_MS 10000
#define STALL_MS 10000 /* no reply for this long fails the test */
#define MAX_DATA ((long)64 << 20)
#define MAX_BATCH ((size_t)1 << 30)

/* Latencies, ns: exact below 64, else 64 buckets per power of two (each
 * about 1.6 % of its value wide). */
#define SUB 64
#define NBUCKETS (SUB * 60)
struct hist {
	uint64_t b[NBUCKETS];
	uint64_t n, sum, min, max;
};

static unsigned bucket(uint64_t v)
{
	int e;

	if (v < SUB)
		return (unsigned)v;
	e = 63 - __builtin_clzll(v); /* 6 and up */
	return (unsigned)((e - 5) * SUB + (int)((v >> (e - 6)) & (SUB - 1)));
}

/* The middle of bucket i, ns. */
static double bucket_mid(unsigned i)
{
	unsigned e;

	if (i < SUB)
		return i;
	e = i / SUB + 5;
	return (double)((1ull << e) + (uint64_t)(i % SUB) * (1ull << (e - 6))) +
	       (double)(1ull << (e - 6)) / 2;
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->b[bucket(v)]++;
	h->sum += v;
	if (!h->n || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->n++;
}

/* The q-quantile, ns (within its bucket, clamped to the exact extremes). */
static double hist_q(const struct hist *h, double q)
{
	uint64_t want = (uint64_t)(q * (double)h->n + 0.5), seen = 0;
	double v;

	if (want < 1)
		want = 1;
	for (unsigned i = 0; i < NBUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			v = bucket_mid(i);
			return v < (double)h->min   ? (double)h->min
			       : v > (double)h->max ? (double)h->max
						    : v;
		}
	}
	return (double)h->max;
}

/* ---- the run ---- */

struct client {
	struct kvc k;
	uint64_t sent_ns; /* when its pipeline went */
	size_t inflight;  /* its requests without a reply */
};

static struct {
	size_t n, issued, done; /* requests of the test */
	size_t pipeline;
	const char *cmd;        /* pipeline copies of one command */
	size_t cmd_len;         /* bytes of one */
	struct hist h;
	uint64_t errors;
	char first_error[128];
	int broken;             /* a reply was no RESP */
} run;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void issue(struct client *c)
{
	size_t m = run.n - run.issued;

	if (m > run.pipeline)
		m = run.pipeline;
	if (!m)
		return;
	run.issued += m;
	c->inflight = m;
	c->sent_ns = mono_ns();
	kvc_send_lent(&c->k, run.cmd, m * run.cmd_len);
}

static void on_data(struct kvc *k)
{
	struct client *c = k->user;
	uint64_t now = mono_ns();
	size_t len;
	int r = 0;

	while (c->inflight && (r = kvc_reply(k, &len)) == 1) {
		if (kv_reply_is_error(k->in) && !run.errors++)
			snprintf(run.first_error, sizeof(run.first_error),
				 "%.*s", (int)(len > 3 ? len - 3 : 0),
				 k->in + 1);
		hist_add(&run.h, now - c->sent_ns);
		c->inflight--;
		run.done++;
		kvc_take(k, len);
	}
	if (c->inflight && r < 0)
		run.broken = 1;
	else if (!c->inflight && !k->lent)
		issue(c);
}

/* The transport of the connections: one name, or "mixed: ...". */
static void transports(struct client *cs, size_t n, char *buf, size_t len,
		       const char **fallback)
{
	char first[128], t[128];
	size_t same = 0;

	*fallback = "none";
	kvc_transport(&cs[0].k, first, sizeof(first));
	for (size_t i = 0; i < n; i++) {
		rift_fallback_reason r = rift_conn_fallback_reason(cs[i].k.conn);

		kvc_transport(&cs[i].k, t, sizeof(t));
		same += !strcmp(t, first);
		if (r != RIFT_FALLBACK_NONE)
			*fallback = rift_fallback_reason_str(r);
	}
	if (same == n) {
		snprintf(buf, len, "%s", first);
		return;
	}
	snprintf(buf, len, "mixed: %zu of %zu over %s", same, n, first);
}

static const struct test {
	const char *name; /* -t's, and the report's in upper case */
	int nargs;        /* ping 1, get 2, set 3 */
	const char *args[2];
} tests[] = {
	{ "ping", 1, { NULL, NULL } },
	{ "set", 3, { "key:__rand_int__", NULL } }, /* and the value */
	{ "get", 2, { "key:__rand_int__", NULL } },
	{ "incr", 2, { "counter:__rand_int__", NULL } },
};
#define NTESTS (sizeof(tests) / sizeof(*tests))

/* pipeline copies of t's command (a value of size bytes): a buffer the
 * caller frees, its length in *len; NULL when out of memory. */
static char *build(const struct test *t, size_t size, size_t pipeline,
		   size_t *len)
{
	struct kvc one = { 0 };
	struct kv_resp_arg a[3] = { { t->name, strlen(t->name) } };
	char *value = NULL, *batch = NULL;
	int rc;

	if (t->nargs > 1)
		a[1] = (struct kv_resp_arg){ t->args[0], strlen(t->args[0]) };
	if (t->nargs > 2) {
		value = malloc(size ? size : 1);
		if (!value)
			return NULL;
		memset(value, 'x', size);
		a[2] = (struct kv_resp_arg){ value, size };
	}
	rc = kvc_command(&one, (size_t)t->nargs, a);
	free(value);
	if (!rc && one.out.len <= MAX_BATCH / pipeline)
		batch = malloc(one.out.len * pipeline);
	for (size_t i = 0; batch && i < pipeline; i++)
		memcpy(batch + i * one.out.len, one.out.buf, one.out.len);
	*len = one.out.len;
	kv_resp_out_free(&one.out);
	return batch;
}

static int one_test(rift_ctx *ctx, struct client *cs, size_t nc,
		    const struct test *t, size_t requests, size_t pipeline,
		    size_t size, int csv)
{
	char upper[16], how[160];
	const char *fallback;
	uint64_t t0, last_done_ns;
	size_t last_done = 0, one;
	char *batch = build(t, size, pipeline, &one);
	double secs;

	if (!batch) {
		fprintf(stderr, "rift-kv-benchmark: %s: out of memory\n",
			t->name);
		return -1;
	}
	memset(&run, 0, sizeof(run));
	run.n = requests;
	run.pipeline = pipeline;
	run.cmd = batch;
	run.cmd_len = one;
	t0 = last_done_ns = mono_ns();
	for (size_t i = 0; i < nc; i++)
		issue(&cs[i]);
	while (run.done < run.n && !run.broken) {
		uint64_t now;

		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 1000);
		for (size_t i = 0; i < nc; i++)
			if (cs[i].k.state == KVC_DOWN) {
				fprintf(stderr, "rift-kv-benchmark: %s: "
					"client %zu: %s\n", t->name, i,
					cs[i].k.err);
				free(batch);
				return -1;
			}
		now = mono_ns();
		if (run.done != last_done) {
			last_done = run.done;
			last_done_ns = now;
		} else if (now - last_done_ns > STALL_MS * 1000000ull) {
			fprintf(stderr, "rift-kv-benchmark: %s: no reply "
				"in %d s (%zu of %zu done)\n", t->name,
				STALL_MS / 1000, run.done, run.n);
			free(batch);
			return -1;
		}
	}
	secs = (double)(mono_ns() - t0) / 1e9;
	free(batch);
	if (run.broken) {
		fprintf(stderr, "rift-kv-benchmark: %s: a reply is no RESP\n",
			t->name);
		return -1;
	}
	for (size_t i = 0; i < sizeof(upper); i++) {
		upper[i] = (char)(t->name[i] ? t->name[i] - 32 : 0);
		if (!upper[i])
			break;
	}
	transports(cs, nc, how, sizeof(how), &fallback);
	if (csv)
		printf("\"%s\",\"%.2f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\","
		       "\"%.3f\",\"%.3f\",\"%s\",\"%s\"\n",
		       upper, (double)run.n / secs,
		       (double)run.h.sum / (double)run.h.n / 1e6,
		       (double)run.h.min / 1e6, hist_q(&run.h, 0.5) / 1e6,
		       hist_q(&run.h, 0.95) / 1e6, hist_q(&run.h, 0.99) / 1e6,
		       (double)run.h.max / 1e6, how, fallback);
	else
		printf("%s: %.2f requests per second, p50=%.3f msec, "
		       "p99=%.3f msec\n",
		       upper, (double)run.n / secs, hist_q(&run.h, 0.5) / 1e6,
		       hist_q(&run.h, 0.99) / 1e6);
	fflush(stdout);
	if (run.errors) {
		fprintf(stderr, "rift-kv-benchmark: %s: %llu error replies, "
			"the first: %s\n", t->name,
			(unsigned long long)run.errors, run.first_error);
		return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rift-kv-benchmark [-u URL] [-c CLIENTS] [-n REQUESTS] "
		"[-P PIPELINE]\n"
		"                         [-d SIZE] [-t TESTS] [--csv]\n"
		"  -u URL       rift-kv's rift listener: tcp://, rdma:// or\n"
		"               auto://HOST:PORT (" DEFAULT_URL "), or its\n"
		"               Valkey RDMA port: valkey-rdma://HOST:PORT\n"
		"  -c CLIENTS   connections at once (50)\n"
		"  -n REQUESTS  requests of each test, all clients (100000)\n"
		"  -P PIPELINE  requests a client sends before it waits for "
		"their replies (1)\n"
		"  -d SIZE      bytes of SET's value (3)\n"
		"  -t TESTS     comma-separated: ping, set, get, incr "
		"(set,get)\n"
		"  --csv        redis-benchmark's CSV columns, and the "
		"transport and\n"
		"               the fallback reason\n");
}

/* An option's number in lo..hi, or -1 having said why. */
static long number(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s && !*end && v >= lo && v <= hi)
		return v;
	fprintf(stderr, "rift-kv-benchmark: %s '%s': expected a number in "
		"%ld..%ld\n", opt, s, lo, hi);
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "csv", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = DEFAULT_URL, *list = "set,get";
	long clients = 50, requests = 100000, pipeline = 1, size = 3;
	int csv = 0, opt, rc = 1;
	const struct test *run_tests[NTESTS * 4];
	size_t nrun = 0;
	struct client *cs = NULL;
	char how[160], *copy, *tok, *save;
	const char *fallback;
	rift_ctx *ctx;

	while ((opt = getopt_long(argc, argv, "u:c:n:P:d:t:h", longs,
				  NULL)) != -1) {
		switch (opt) {
		case 'u': url = optarg; break;
		case 'c': clients = number("-c", optarg, 1, 10000); break;
		case 'n': requests = number("-n", optarg, 1, 1L << 40); break;
		case 'P': pipeline = number("-P", optarg, 1, 100000); break;
		case 'd': size = number("-d", optarg, 0, MAX_DATA); break;
		case 't': list = optarg; break;
		case 'C': csv = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (clients < 0 || requests < 0 || pipeline < 0 || size < 0)
			return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "rift-kv-benchmark: unexpected '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	copy = strdup(list);
	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t i = 0;

		while (i < NTESTS && strcasecmp(tok, tests[i].name))
			i++;
		if (i == NTESTS || nrun == sizeof(run_tests) /
						     sizeof(*run_tests)) {
			fprintf(stderr, "rift-kv-benchmark: -t %s: %s (known: "
				"ping, set, get, incr)\n", tok,
				i == NTESTS ? "no such test" : "too many");
			free(copy);
			return 2;
		}
		run_tests[nrun++] = &tests[i];
	}
	free(copy);
	if (!nrun) {
		fprintf(stderr, "rift-kv-benchmark: -t '%s': no test\n", list);
		return 2;
	}
	if (rift_ctx_create(&ctx, NULL)) {
		fprintf(stderr, "rift-kv-benchmark: %s\n",
			rift_ctx_last_error(NULL));
		return 1;
	}
	cs = calloc((size_t)clients, sizeof(*cs));
	if (!cs) {
		fprintf(stderr, "rift-kv-benchmark: out of memory\n");
		goto out;
	}
	for (long i = 0; i < clients; i++) {
		cs[i].k.user = &cs[i];
		cs[i].k.on_data = on_data;
		if (kvc_open(&cs[i].k, ctx, url)) {
			fprintf(stderr, "rift-kv-benchmark: %s\n", cs[i].k.err);
			goto out;
		}
	}
	for (long i = 0; i < clients; i++)
		if (kvc_wait_up(ctx, &cs[i].k, CONNECT_MS)) {
			fprintf(stderr, "rift-kv-benchmark: client %ld: %s\n",
				i, cs[i].k.err);
			goto out;
		}
	transports(cs, (size_t)clients, how, sizeof(how), &fallback);
	if (csv)
		printf("\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\","
		       "\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\","
		       "\"max_latency_ms\",\"transport\",\"fallback\"\n");
	else
		printf("rift-kv-benchmark: %s: %ld connections over %s\n", url,
		       clients, how);
	rc = 0;
	for (size_t i = 0; i < nrun && !rc; i++)
		rc = one_test(ctx, cs, (size_t)clients, run_tests[i],
			      (size_t)requests, (size_t)pipeline, (size_t)size,
			      csv)
			     ? 1
			     : 0;
out:
	for (long i = 0; cs && i < clients; i++)
		kvc_close(&cs[i].k);
	kvc_ctx_destroy(ctx);
	free(cs);
	return rc;
}
