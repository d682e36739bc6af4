/*
 * hist.h - log-linear histograms for latencies, and the metrics hooks that
 * the session layer and the transports call (defined in api/metrics.c).
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

/* ---- metrics hooks (api/metrics.c) ----
 *
 * One call per event, each one line at its call site.  Counters are kept
 * always (they back rift_ctx_stats and rift_conn_stats); histograms only
 * when cfg.metrics is set.
 */
struct rift__path;
struct rift__omsg;

/* rift__conn_enqueue: m->len is set; stamps m with the loop time. */
void rift__metrics_enqueue(rift_conn *conn, struct rift__omsg *m);
/* conn_ack, once per message the cumulative ack releases. */
void rift__metrics_acked(rift_conn *conn, const struct rift__omsg *m);
/* A message of len bytes was delivered to on_recv. */
void rift__metrics_recv(rift_conn *conn, uint64_t len);
/* A client connect attempt (first or retry) is about to start. */
void rift__metrics_connect_attempt(rift_conn *conn);
/* PATH_DOWN is about to be delivered. */
void rift__metrics_path_down(rift_conn *conn);
/* The session re-attached (PATH_CHANGED); counts a failover. */
void rift__metrics_path_changed(rift_conn *conn);
/* A path is failing because its peer went silent. */
void rift__metrics_keepalive_timeout(struct rift__path *p);
/*
 * verbs: a work completion with status != IBV_WC_SUCCESS (status is the
 * ibv_wc_status value; anything outside 0..31 counts as "other").
 */
void rift__metrics_wc_error(struct rift__path *p, int status);
/*
 * verbs: after each flush, whether it stopped with data waiting for peer
 * credits.  Counts the transitions into that state (stall episodes).
 */
void rift__metrics_credit_stall(struct rift__path *p, bool stalled);
/* Reserved: a fallen-back session returned to RDMA. */
void rift__metrics_failback(rift_conn *conn);
/* Reserved: a one-sided RDMA READ (write = false) or WRITE of bytes. */
void rift__metrics_one_sided(rift_conn *conn, bool write, uint64_t bytes);

#endif
