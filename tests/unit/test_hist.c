/* Log-linear histograms: layout, percentiles, merge, extremes, the hook. */
#include <math.h>

#include "internal.h"
#include "session/session.h"
#include "../runner.h"

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Lower bound (exclusive) of bucket i, for values >= 1. */
static uint64_t lower_of(unsigned i)
{
	return i ? rift__hist_upper(i - 1) : 0;
}

static void check_bucket_of(uint64_t v)
{
	unsigned i = rift__hist_index(v);

	if (i >= RIFT__HIST_BUCKETS)
		FAIL("value %llu: index %u out of range", (unsigned long long)v,
		     i);
	if (v > rift__hist_upper(i) || (i && v <= lower_of(i)))
		FAIL("value %llu in bucket %u (%llu, %llu]",
		     (unsigned long long)v, i,
		     (unsigned long long)lower_of(i),
		     (unsigned long long)rift__hist_upper(i));
}

TEST(hist_buckets_partition_the_values)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;

	CHECK_EQ(RIFT__HIST_BUCKETS, 385);
	/* Uppers strictly increase; every bucket is at most 1/16 of its
	 * values wide, so any value is known to within 6.25 %. */
	for (unsigned i = 1; i < RIFT__HIST_OVERFLOW; i++) {
		uint64_t lo = lower_of(i), hi = rift__hist_upper(i);

		CHECK(hi > lo);
		CHECK((hi - lo) * 16 <= lo + 1 || hi - lo == 1);
		CHECK_EQ(rift__hist_index(hi), i);
		CHECK_EQ(rift__hist_index(lo + 1), i);
	}
	CHECK_EQ(rift__hist_upper(RIFT__HIST_OVERFLOW - 1), RIFT__HIST_LIMIT);
	for (uint64_t v = 0; v < 200000; v++)
		check_bucket_of(v);
	for (int k = 0; k < 64; k++) {
		check_bucket_of((1ull << k) - 1);
		if (k < 63)
			check_bucket_of(1ull << k);
		check_bucket_of((1ull << k) + 1);
	}
	for (int n = 0; n < 1000000; n++)
		check_bucket_of(xorshift(&s) >> (xorshift(&s) % 64));
	/* Every power of two is the upper end of a bucket: Prometheus
	 * buckets le=2^k are sums of whole buckets. */
	for (int k = 0; k <= RIFT__HIST_MAX_BITS; k++)
		CHECK_EQ(rift__hist_upper(rift__hist_index(1ull << k)),
			 1ull << k);
}

TEST(hist_percentiles_within_bucket_precision)
{
	static struct rift__hist h;
	uint64_t n = 100000;

	for (uint64_t v = 1; v <= n; v++)
		rift__hist_record(&h, v);
	CHECK_EQ(h.count, n);
	CHECK(h.sum == n * (n + 1) / 2);
	CHECK_EQ(rift__hist_min(&h), 1);
	CHECK_EQ(h.max, n);
	CHECK_EQ(rift__hist_quantile(&h, 0), 1);
	CHECK_EQ(rift__hist_quantile(&h, 1), n);
	for (double q = 0.01; q < 1; q += 0.01) {
		uint64_t exact = (uint64_t)ceil(q * (double)n);
		uint64_t got = rift__hist_quantile(&h, q);

		/* The answer is the top of the bucket holding the exact
		 * value: never below it, at most 1/16 above. */
		if (got < exact || (double)(got - exact) > (double)exact / 16)
			FAIL("q %.2f: %llu, exact %llu", q,
			     (unsigned long long)got,
			     (unsigned long long)exact);
	}
	/* Small values are exact. */
	rift__hist_reset(&h);
	for (uint64_t v = 0; v < 32; v++)
		rift__hist_record(&h, v);
	CHECK_EQ(rift__hist_quantile(&h, 0.5), 15);
	CHECK_EQ(rift__hist_quantile(&h, 0), 0);
	CHECK_EQ(rift__hist_quantile(&h, 1), 31);
}

TEST(hist_merge_equals_recording_everything)
{
	static struct rift__hist a, b, all;
	uint64_t s = 42;

	for (int i = 0; i < 50000; i++) {
		uint64_t v = xorshift(&s) % 3000000;

		rift__hist_record(i & 1 ? &a : &b, v);
		rift__hist_record(&all, v);
	}
	rift__hist_record(&b, 7);
	rift__hist_record(&all, 7);
	rift__hist_merge(&a, &b);
	CHECK(memcmp(&a, &all, sizeof(a)) == 0);
	/* Merging an empty histogram changes nothing, also min and max. */
	rift__hist_reset(&b);
	rift__hist_merge(&a, &b);
	CHECK(memcmp(&a, &all, sizeof(a)) == 0);
	/* Into an empty one: a copy. */
	rift__hist_merge(&b, &all);
	CHECK(memcmp(&b, &all, sizeof(b)) == 0);
	CHECK_EQ(rift__hist_min(&b), rift__hist_min(&all));
}

TEST(hist_extremes)
{
	static struct rift__hist h;

	CHECK_EQ(rift__hist_quantile(&h, 0.5), 0);
	CHECK_EQ(rift__hist_min(&h), 0);
	rift__hist_record(&h, 0);
	CHECK_EQ(h.b[0], 1);
	CHECK_EQ(rift__hist_min(&h), 0);
	CHECK_EQ(rift__hist_quantile(&h, 0.5), 0);
	/* 2^27 is the last exact value; above it the overflow bucket. */
	rift__hist_record(&h, RIFT__HIST_LIMIT);
	CHECK_EQ(h.b[RIFT__HIST_OVERFLOW - 1], 1);
	rift__hist_record(&h, RIFT__HIST_LIMIT + 1);
	rift__hist_record(&h, UINT64_MAX);
	CHECK_EQ(h.b[RIFT__HIST_OVERFLOW], 2);
	CHECK(h.max == UINT64_MAX);
	CHECK(rift__hist_quantile(&h, 1) == UINT64_MAX);
	/* A quantile in the overflow bucket is the maximum. */
	CHECK(rift__hist_quantile(&h, 0.9) == UINT64_MAX);
	CHECK(rift__hist_quantile(&h, 0.5) == RIFT__HIST_LIMIT);
	/* Bucket 0 holds 0 and 1: its top is 1. */
	CHECK_EQ(rift__hist_quantile(&h, 0.25), 1);
	/* Out-of-range q is clamped, NaN reads as 0. */
	CHECK_EQ(rift__hist_quantile(&h, -1), 0);
	CHECK(rift__hist_quantile(&h, 2) == UINT64_MAX);
	CHECK_EQ(rift__hist_quantile(&h, __builtin_nan("")), 0);
	/* One sample: every quantile is that sample, exactly. */
	rift__hist_reset(&h);
	rift__hist_record(&h, 1234567);
	CHECK_EQ(rift__hist_quantile(&h, 0.001), 1234567);
	CHECK_EQ(rift__hist_quantile(&h, 0.5), 1234567);
	CHECK_EQ(rift__hist_min(&h), 1234567);
}

/*
 * The per-ack hook records one latency in the context's histogram and
 * one in the connection's: the time since the message's enqueue, in the
 * loop's time.  (What it costs is a benchmark figure, not a test:
 * bench/hist_cost.c, printed by `make bench`.)
 */
TEST(hist_acked_hook_records_both_histograms)
{
	static struct rift__hist h;
	static struct rift__omsg msgs[4096];
	rift_ctx *ctx = NULL;
	rift_conn *conn = calloc(1, sizeof(*conn));
	uint64_t s = 7, sum = 0, max = 0;

	CHECK(conn != NULL);
	CHECK_EQ(rift_ctx_create(&ctx, NULL), 0);
	conn->ctx = ctx;
	ctx->now_us = 1000000000u;
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(msgs); i++) {
		uint64_t v = 1 + (xorshift(&s) >> (44 + xorshift(&s) % 20));

		msgs[i].enq_us = ctx->now_us - v;
		rift__hist_record(&h, v);
		sum += v;
		if (v > max)
			max = v;
		rift__metrics_acked(conn, &msgs[i]);
	}
	/* a message stamped after the loop's time counts as 0 us */
	msgs[0].enq_us = ctx->now_us + 5;
	rift__metrics_acked(conn, &msgs[0]);
	rift__hist_record(&h, 0);
	CHECK_EQ(h.count, RIFT_ARRAY_SIZE(msgs) + 1);
	CHECK_EQ(h.sum, sum);
	CHECK_EQ(h.max, max);
	CHECK(memcmp(&h, &ctx->ack_hist, sizeof(h)) == 0);
	CHECK(memcmp(&h, &conn->ack_hist, sizeof(h)) == 0);
	/* with metrics off, the hook records nothing */
	ctx->cfg.metrics = 0;
	rift__metrics_acked(conn, &msgs[1]);
	CHECK_EQ(ctx->ack_hist.count, h.count);
	CHECK_EQ(conn->ack_hist.count, h.count);
	free(conn);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}
