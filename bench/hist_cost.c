/*
 * hist_cost.c - what keeping metrics costs per message: rift__hist_record
 * (one histogram) and rift__metrics_acked (the per-ack hook: the context's
 * and the connection's histograms), each timed over N calls on
 * latency-like values (1 us .. 1 s, log-uniform, cycling through 4096
 * precomputed ones).  Built against the release library (build/lib/
 * librift.a, -O2 with link-time optimization) and rift's internal headers,
 * so the figure is the one a user's build pays; docs/metrics.md quotes it.
 * Unlike the other programs here it uses rift's internals, not only
 * rift.h: the hooks it times are not API.
 *
 *   hist_cost [-n N] [-r ROUNDS]
 *
 * Prints the median of ROUNDS (5) runs of N (10^7) calls each:
 *   RESULT hist rift record_ns=X acked_ns=Y n=N rounds=R
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "internal.h"
#include "session/session.h"

const char *bench_prog = "hist_cost";

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static struct rift__hist h;
	static uint64_t vals[4096];
	static struct rift__omsg msgs[4096];
	uint64_t n = 10000000u, s = 7, t0, t1, t2;
	int rounds = 5, opt;
	double rec[64], hook[64];
	rift_ctx *ctx = NULL;
	rift_conn *conn;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		switch (opt) {
		case 'n':
			n = bench_parse_size("-n", optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			bench_die("usage: hist_cost [-n N] [-r ROUNDS]");
		}
	}
	if (n == 0 || rounds < 1 || rounds > 64)
		bench_die("-n must be > 0 and -r 1..64");
	conn = calloc(1, sizeof(*conn));
	if (!conn || rift_ctx_create(&ctx, NULL) != 0)
		bench_die("cannot create a context");
	conn->ctx = ctx;
	for (size_t i = 0; i < 4096; i++) {
		vals[i] = 1 + (xorshift(&s) >> (44 + xorshift(&s) % 20));
		msgs[i].enq_us = 1000000000u - vals[i];
	}
	ctx->now_us = 1000000000u;
	for (int r = 0; r < rounds; r++) {
		t0 = bench_now_ns();
		for (uint64_t i = 0; i < n; i++)
			rift__hist_record(&h, vals[i & 4095]);
		t1 = bench_now_ns();
		for (uint64_t i = 0; i < n; i++)
			rift__metrics_acked(conn, &msgs[i & 4095]);
		t2 = bench_now_ns();
		rec[r] = (double)(t1 - t0) / (double)n;
		hook[r] = (double)(t2 - t1) / (double)n;
	}
	/* Keep the loops: what they recorded is used. */
	if (h.count != n * (uint64_t)rounds ||
	    conn->ack_hist.count != n * (uint64_t)rounds)
		bench_die("recorded %llu and %llu values, expected %llu",
			  (unsigned long long)h.count,
			  (unsigned long long)conn->ack_hist.count,
			  (unsigned long long)(n * (uint64_t)rounds));
	qsort(rec, (size_t)rounds, sizeof(rec[0]), cmp_double);
	qsort(hook, (size_t)rounds, sizeof(hook[0]), cmp_double);
	printf("RESULT hist rift record_ns=%.2f acked_ns=%.2f n=%llu "
	       "rounds=%d\n",
	       rec[rounds / 2], hook[rounds / 2], (unsigned long long)n,
	       rounds);
	free(conn);
	return rift_ctx_destroy(ctx) == 0 ? 0 : 1;
}
