/*
 * hist.h - log-linear histograms for latencies (the metrics hooks that
 * record them are session/session.h's).
 *
 * A histogram counts non-negative integers (rift records microseconds).
 * Buckets are HdrHistogram-like: exact below 32, then every power-of-two
 * range is split into 16 linear sub-buckets, so a value is known to within
 * 1/16 of itself (6.25 %) up to 2^27 (134 s in us); larger values land in
 * one overflow bucket (the exact maximum is still kept).
 *
 * Buckets are upper-inclusive, as Prometheus wants them: bucket i holds
 * the values v with lower(i) < v <= upper(i) (bucket 0 also holds 0), so
 * "count of values <= 2^k" is a sum of whole buckets for every k.  This is
 * done by indexing v - 1: one subtraction on the recording path.
 *
 * Recording is an index computation (one count-leading-zeros), four adds
 * and two compares: no allocation, no clock, no lock.  A zeroed histogram
 * is an empty one (the minimum is stored inverted), so histograms embedded
 * in calloc'd objects need no init call.  Not thread-safe: a histogram
 * belongs to one context's thread, like everything else in rift.
 */
#ifndef RIFT_UTIL_HIST_H
#define RIFT_UTIL_HIST_H

#include <stdbool.h>
#include <stdint.h>

#include "rift.h"

#define RIFT__HIST_SUB_BITS 4                         /* 16 sub-buckets */
#define RIFT__HIST_SUB (1u << RIFT__HIST_SUB_BITS)
#define RIFT__HIST_MAX_BITS 27                        /* exact to 2^27 */
#define RIFT__HIST_LIMIT (1ull << RIFT__HIST_MAX_BITS)
/* (27 - 4 + 1) ranges of 16, plus the overflow bucket: 385. */
#define RIFT__HIST_BUCKETS                                                    \
	((RIFT__HIST_MAX_BITS - RIFT__HIST_SUB_BITS + 1) * RIFT__HIST_SUB + 1)
#define RIFT__HIST_OVERFLOW (RIFT__HIST_BUCKETS - 1)

struct rift__hist {
	uint64_t count;   /* values recorded */
	uint64_t sum;     /* of the values (wraps after 5e5 years of us) */
	uint64_t max;     /* largest value, exact */
	uint64_t min_inv; /* ~smallest value; 0 = empty */
	uint64_t b[RIFT__HIST_BUCKETS]; /* counts; see rift__hist_upper */
};

/* Bucket of value v. */
static inline unsigned rift__hist_index(uint64_t v)
{
	uint64_t u = v - (v != 0);
	unsigned shift;

	if (u > RIFT__HIST_LIMIT)
		u = RIFT__HIST_LIMIT; /* index of 2^27 is the overflow bucket */
	shift = (unsigned)(63 - __builtin_clzll(u | RIFT__HIST_SUB)) -
		RIFT__HIST_SUB_BITS;
	return (shift << RIFT__HIST_SUB_BITS) + (unsigned)(u >> shift);
}

static inline void rift__hist_record(struct rift__hist *h, uint64_t v)
{
	h->b[rift__hist_index(v)]++;
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
	if (~v > h->min_inv)
		h->min_inv = ~v;
}

/* Largest value bucket i holds (UINT64_MAX for the overflow bucket). */
uint64_t rift__hist_upper(unsigned i);
/* Smallest value (0 if empty). */
uint64_t rift__hist_min(const struct rift__hist *h);
/*
 * The q-quantile, 0 <= q <= 1: the upper bound of the bucket holding the
 * ceil(q * count)-th smallest value, clamped to [min, max] (so q = 0 gives
 * the minimum and q = 1 the maximum, exactly).  0 if empty.
 */
uint64_t rift__hist_quantile(const struct rift__hist *h, double q);
/* dst += src (dst may already hold values). */
void rift__hist_merge(struct rift__hist *dst, const struct rift__hist *src);
void rift__hist_reset(struct rift__hist *h);

#endif
