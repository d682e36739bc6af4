/*
 * hist.c - log-linear histograms; the layout is described in hist.h.
 */
#include <string.h>

#include "util/hist.h"

uint64_t rift__hist_upper(unsigned i)
{
	unsigned shift;

	if (i >= RIFT__HIST_OVERFLOW)
		return UINT64_MAX;
	if (i < 2 * RIFT__HIST_SUB)
		return (uint64_t)i + 1; /* width 1: holds i + 1 (and 0 in 0) */
	/* Bucket i holds v - 1 in [lo, lo + 2^shift): v <= lo + 2^shift. */
	shift = (i >> RIFT__HIST_SUB_BITS) - 1;
	return ((uint64_t)((i & (RIFT__HIST_SUB - 1)) | RIFT__HIST_SUB)
		<< shift) +
	       (1ull << shift);
}

uint64_t rift__hist_min(const struct rift__hist *h)
{
	return h->count ? ~h->min_inv : 0;
}

uint64_t rift__hist_quantile(const struct rift__hist *h, double q)
{
	uint64_t rank, seen = 0, v, lo = rift__hist_min(h);

	if (!h->count)
		return 0;
	if (!(q > 0)) /* also NaN */
		return lo;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (rank == 0)
		rank = 1;
	for (unsigned i = 0; i < RIFT__HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen < rank)
			continue;
		v = rift__hist_upper(i);
		if (v > h->max)
			v = h->max;
		return v < lo ? lo : v;
	}
	return h->max; /* counts and buckets disagree: cannot happen */
}

void rift__hist_merge(struct rift__hist *dst, const struct rift__hist *src)
{
	if (!src->count)
		return;
	for (unsigned i = 0; i < RIFT__HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
	if (src->min_inv > dst->min_inv)
		dst->min_inv = src->min_inv;
}

void rift__hist_reset(struct rift__hist *h)
{
	memset(h, 0, sizeof(*h));
}
