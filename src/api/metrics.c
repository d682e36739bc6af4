/*
 * metrics.c - latency queries and two renderings of the metrics: the
 * Prometheus text exposition format 0.0.4 and a Redis-INFO-like dump.
 * The hooks that record them, which the session and the transports call,
 * are session/stats.c's.
 *
 * Counters live in ctx->stats and conn->stats (the public stats structs),
 * so rift_*_stats_get and the renderers read the same numbers.  Latency
 * histograms (util/hist.h) sit in the context and in each connection and
 * are only written when cfg.metrics is set.  Nothing here allocates: the
 * renderers write into the caller's buffer and count what did not fit.
 *
 * This file knows the numbering of verbs work completion statuses (as
 * rift.h's wc_errors does) but includes no verbs header: the transport
 * passes the status as an int.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "session/session.h"

_Static_assert(sizeof(((rift_ctx_stats *)0)->wc_errors) ==
		       (RIFT_WC_STATUS_OTHER + 1) * sizeof(uint64_t),
	       "wc_errors has a slot per status 0..31 and one for others");

/* ---- queries ---- */

static const struct rift__hist *hist_of(rift_ctx *ctx, const rift_conn *conn,
					rift_latency which)
{
	if (conn)
		return which == RIFT_LATENCY_ACK ? &conn->ack_hist
						 : &conn->reattach_hist;
	return which == RIFT_LATENCY_ACK ? &ctx->ack_hist : &ctx->reattach_hist;
}

int rift_metrics_latency(rift_ctx *ctx, const rift_conn *conn,
			 rift_latency which, double q, uint64_t *value_us,
			 uint64_t *count)
{
	const struct rift__hist *h;

	if (!ctx || (conn && conn->ctx != ctx) ||
	    (unsigned)which >= RIFT_LATENCY__COUNT || !(q >= 0 && q <= 1))
		return RIFT_EINVAL;
	h = hist_of(ctx, conn, which);
	if (value_us)
		*value_us = rift__hist_quantile(h, q);
	if (count)
		*count = h->count;
	return 0;
}

/* ---- output buffer: snprintf semantics over many appends ---- */

struct out {
	char *buf;
	size_t cap;
	size_t len; /* length of the whole text so far, written or not */
};

static void out_init(struct out *o, char *buf, size_t cap)
{
	o->buf = buf;
	o->cap = cap;
	o->len = 0;
	if (cap)
		buf[0] = '\0';
}

static void out_write(struct out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t room = o->cap - o->len - 1;
		size_t k = n < room ? n : room;

		memcpy(o->buf + o->len, s, k);
		o->buf[o->len + k] = '\0';
	}
	o->len += n;
}

static void out_str(struct out *o, const char *s)
{
	out_write(o, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void
out_printf(struct out *o, const char *fmt, ...)
{
	bool room = o->len < o->cap;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->len : NULL, room ? o->cap - o->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

/*
 * Write s escaped for the exposition format: in label values \, " and
 * newline (label = true); in HELP text \ and newline.
 */
static void out_escaped(struct out *o, const char *s, bool label)
{
	const char *run = s;

	for (; *s; s++) {
		const char *rep = NULL;

		if (*s == '\\')
			rep = "\\\\";
		else if (*s == '\n')
			rep = "\\n";
		else if (*s == '"' && label)
			rep = "\\\"";
		if (!rep)
			continue;
		out_write(o, run, (size_t)(s - run));
		out_str(o, rep);
		run = s + 1;
	}
	out_write(o, run, (size_t)(s - run));
}

/* Microseconds as exact decimal seconds: 16 -> 0.000016, 2000000 -> 2. */
static void out_seconds(struct out *o, uint64_t us)
{
	char t[48];
	int n = snprintf(t, sizeof(t), "%" PRIu64 ".%06" PRIu64, us / 1000000u,
			 us % 1000000u);

	while (t[n - 1] == '0')
		n--;
	if (t[n - 1] == '.')
		n--;
	out_write(o, t, (size_t)n);
}

static int out_done(const struct out *o)
{
	return o->len > INT_MAX ? RIFT_ERANGE : (int)o->len;
}

/* ---- names ---- */

static const char *const fallback_names[RIFT_FALLBACK__COUNT] = {
#define XX(name, msg) #name,
	RIFT_FALLBACK_MAP(XX)
#undef XX
};

static const char *const down_names[RIFT_PATH_DOWN__COUNT] = {
#define XX(name, msg) #name,
	RIFT_PATH_DOWN_MAP(XX)
#undef XX
};

/* "NO_DEVICE" -> "no_device" */
static void lower(char *dst, size_t cap, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < cap && src[i]; i++)
		dst[i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] + 32
							       : src[i]);
	dst[i] = '\0';
}

/* Work completion status names (libibverbs' enum without its prefix),
 * lower case. */
static const char *const wc_names[] = {
	"success",         "loc_len_err",       "loc_qp_op_err",
	"loc_eec_op_err",  "loc_prot_err",      "wr_flush_err",
	"mw_bind_err",     "bad_resp_err",      "loc_access_err",
	"rem_inv_req_err", "rem_access_err",    "rem_op_err",
	"retry_exc_err",   "rnr_retry_exc_err", "loc_rdd_viol_err",
	"rem_inv_rd_req_err", "rem_abort_err",  "inv_eecn_err",
	"inv_eec_state_err", "fatal_err",       "resp_timeout_err",
	"general_err",     "tm_err",            "tm_rndv_incomplete",
};

static void wc_name(char *dst, size_t cap, unsigned i)
{
	if (i < RIFT_ARRAY_SIZE(wc_names))
		snprintf(dst, cap, "%s", wc_names[i]);
	else if (i == RIFT_WC_STATUS_OTHER)
		snprintf(dst, cap, "other");
	else
		snprintf(dst, cap, "status_%u", i);
}

static const char *polling_name(rift_polling p)
{
	switch (p) {
	case RIFT_POLL_BUSY:
		return "busy";
	case RIFT_POLL_ADAPTIVE:
		return "adaptive";
	default:
		return "event";
	}
}

/* ---- figures computed at render time ---- */

struct live {
	uint64_t conns[3]; /* by rift_transport: none, tcp, rdma */
	uint64_t paths[3]; /* attached, by transport */
	uint64_t unacked_msgs, unacked_bytes;
	uint64_t wc_errors;
	uint64_t fallbacks;
};

static void live_collect(rift_ctx *ctx, struct live *lv)
{
	struct rift__list *it;

	memset(lv, 0, sizeof(*lv));
	for (it = ctx->conns.next; it != &ctx->conns; it = it->next) {
		rift_conn *c = rift__list_entry(it, rift_conn, node);

		lv->conns[(unsigned)c->transport < 3 ? c->transport : 0]++;
		lv->unacked_msgs += c->unacked_msgs;
		lv->unacked_bytes += c->unacked_bytes;
	}
	for (it = ctx->paths.next; it != &ctx->paths; it = it->next) {
		rift__path *p = rift__list_entry(it, rift__path, ctx_node);

		if (p->state == RIFT_PATH_ATTACHED &&
		    (unsigned)p->ops->kind < 3)
			lv->paths[p->ops->kind]++;
	}
	for (unsigned i = 0; i <= RIFT_WC_STATUS_OTHER; i++)
		lv->wc_errors += ctx->stats.wc_errors[i];
	for (unsigned i = 1; i < RIFT_FALLBACK__COUNT; i++)
		lv->fallbacks += ctx->stats.fallbacks[i];
}

/* ---- Prometheus text exposition 0.0.4 ---- */

#define CTX_STAT(field) offsetof(rift_ctx_stats, field)
#define CONN_STAT(field) offsetof(rift_conn_stats, field)

struct family_def {
	const char *name;
	const char *help;
	size_t off; /* of the uint64_t in the stats struct */
};

static const struct family_def ctx_counters[] = {
	{ "rift_connections_opened_total",
	  "Connections opened, by rift_connect and by accepting.",
	  CTX_STAT(conns_opened) },
	{ "rift_connect_attempts_total",
	  "Client transport connect attempts, first ones and retries.",
	  CTX_STAT(connect_attempts) },
	{ "rift_connect_retries_total",
	  "Connect attempts that followed a failed attempt of the same "
	  "connection setup or re-attach.",
	  CTX_STAT(connect_retries) },
	{ "rift_failovers_total",
	  "Sessions re-attached on a new path (PATH_CHANGED), client and "
	  "server side.",
	  CTX_STAT(failovers) },
	{ "rift_keepalive_timeouts_total",
	  "Paths failed because the peer sent nothing for "
	  "keepalive_timeout_ms.",
	  CTX_STAT(keepalive_timeouts) },
	{ "rift_qp_pool_prepared_total",
	  "RDMA connection resource sets (CQ, buffers, QP in INIT) prepared "
	  "ahead by listeners (rdma.qp_pool_count).",
	  CTX_STAT(qp_pool_prepared) },
	{ "rift_qp_pool_hits_total",
	  "RDMA accepts served by a prepared resource set.",
	  CTX_STAT(qp_pool_hits) },
	{ "rift_qp_pool_misses_total",
	  "RDMA accepts that made their own resources (pool empty or on "
	  "another device).",
	  CTX_STAT(qp_pool_misses) },
	{ "rift_sessions_resumed_total",
	  "Sessions a server re-attached (RESUME accepted).",
	  CTX_STAT(sessions_resumed) },
	{ "rift_sessions_expired_total",
	  "Sessions not re-attached within session_grace_ms.",
	  CTX_STAT(sessions_expired) },
	{ "rift_protocol_errors_total",
	  "Paths closed because the peer broke the protocol.",
	  CTX_STAT(protocol_errors) },
	{ "rift_failbacks_total",
	  "Client sessions moved back to a path through an address they "
	  "prefer once it stayed up group.failback_delay_ms (port groups).",
	  CTX_STAT(failbacks) },
	{ "rift_failbacks_deferred_total",
	  "Failbacks put off because the standby path did not answer a "
	  "probe in time; its time up starts again (port groups).",
	  CTX_STAT(failbacks_deferred) },
	{ "rift_peer_path_downs_total",
	  "Paths failed at once because the peer said its end had failed "
	  "(active-active: PATH_CTL).",
	  CTX_STAT(peer_path_downs) },
	{ "rift_rma_reads_total",
	  "One-sided reads this side asked for that completed "
	  "(rift_conn_read).",
	  CTX_STAT(rma_reads) },
	{ "rift_rma_read_bytes_total",
	  "Bytes those reads moved.",
	  CTX_STAT(rma_read_bytes) },
	{ "rift_rma_writes_total",
	  "One-sided writes this side asked for that completed "
	  "(rift_conn_write, rift_conn_write_notify).",
	  CTX_STAT(rma_writes) },
	{ "rift_rma_write_bytes_total",
	  "Bytes those writes moved.",
	  CTX_STAT(rma_write_bytes) },
	{ "rift_rma_served_total",
	  "Pieces of the peer's one-sided operations this side's exports "
	  "served.",
	  CTX_STAT(rma_served) },
	{ "rift_rma_refused_total",
	  "One-sided operations refused: outside the token's range or "
	  "access, revoked, forged or altered, another session's token "
	  "(by this side as requester or as exporter).",
	  CTX_STAT(rma_refused) },
	{ "rift_rma_direct_total",
	  "Pieces of this side's one-sided operations the adapter moved "
	  "alone (RDMA READ or WRITE through the peer's window).",
	  CTX_STAT(rma_direct) },
	{ "rift_rma_redone_total",
	  "This side's one-sided operations done again through the peer's "
	  "library after a piece by RDMA failed (its path died).",
	  CTX_STAT(rma_redone) },
	{ "rift_fallback_returns_total",
	  "auto:// client sessions moved back from TCP, where they had "
	  "fallen back, to RDMA once it worked again "
	  "(connect.fallback_return_ms).",
	  CTX_STAT(fallback_returns) },
	{ "rift_standby_promotions_total",
	  "Client failovers that resumed the session on a standby path, "
	  "with no connection to set up (port groups).",
	  CTX_STAT(standby_promotions) },
	{ "rift_resumes_refused_total",
	  "RESUMEs refused without touching the session they named: unknown "
	  "session, no proof of its secret, replayed, or a state it cannot "
	  "rewind to (also counted as protocol errors).",
	  CTX_STAT(resumes_refused) },
	{ "rift_closes_aborted_total",
	  "Established connections whose close did not end in order: "
	  "rift_conn_abort, linger_ms passed, or the session ended first.",
	  CTX_STAT(closes_aborted) },
	{ "rift_credit_stalls_total",
	  "RDMA: times a sender ran out of peer receive credits with data "
	  "waiting.",
	  CTX_STAT(credit_stalls) },
	{ "rift_accept_pauses_total",
	  "Times a listener stopped accepting for a while because the "
	  "process ran out of descriptors or memory (EMFILE, ENFILE, ...).",
	  CTX_STAT(accept_pauses) },
	{ "rift_progress_calls_total", "Event loop rounds.",
	  CTX_STAT(progress_calls) },
	{ "rift_stale_completions_total",
	  "RDMA: completions dropped because their path was already "
	  "destroyed (left in a shared CQ by its QP).",
	  CTX_STAT(wc_stale) },
	{ "rift_dropped_completions_total",
	  "RDMA: completions dropped because their path had already failed "
	  "(its flushed requests).",
	  CTX_STAT(wc_dropped) },
	{ "rift_rndv_sends_total",
	  "RDMA: large messages sent as a rendezvous descriptor for the peer "
	  "to READ.",
	  CTX_STAT(rndv_sends) },
	{ "rift_rndv_streamed_total",
	  "RDMA: copied sends of rendezvous size streamed because no "
	  "registered buffer was ready (registered meanwhile for the next).",
	  CTX_STAT(rndv_streamed) },
	{ "rift_rndv_recvs_total",
	  "RDMA: large messages received by RDMA READ, delivered in place.",
	  CTX_STAT(rndv_recvs) },
	{ "rift_rndv_read_bytes_total",
	  "RDMA: bytes moved by rendezvous READs.",
	  CTX_STAT(rndv_read_bytes) },
	{ "rift_rndv_refused_total",
	  "RDMA: rendezvous descriptors refused (a buffer the peer does not "
	  "own, or a length that does not match).",
	  CTX_STAT(rndv_refused) },
	{ "rift_rndv_bind_failures_total",
	  "RDMA: paths that could not bind a memory window for a rendezvous "
	  "and stream large messages since.",
	  CTX_STAT(rndv_bind_failures) },
	{ "rift_msgs_retained_in_place_total",
	  "Messages rift_msg_retain kept in the registered memory they "
	  "arrived in, without a copy.",
	  CTX_STAT(msgs_retained_in_place) },
	{ "rift_connect_races_total",
	  "Connect attempts started beside one that had not reached its "
	  "peer in twice the measured setup time, to the next address.",
	  CTX_STAT(connect_races) },
	{ "rift_connect_alts_total",
	  "RDMA connect attempts made through the listener's cm=tcp side "
	  "channel because rdma_cm got no answer from that address.",
	  CTX_STAT(connect_alts) },
};

static const struct family_def conn_counters[] = {
	{ "rift_conn_replayed_messages_total",
	  "Messages sent again after a re-attach.", CONN_STAT(msgs_replayed) },
	{ "rift_conn_duplicates_dropped_total",
	  "Duplicate messages the receiver discarded.",
	  CONN_STAT(dups_dropped) },
	{ "rift_conn_held_messages_total",
	  "Messages received while receiving was stopped, held for later "
	  "delivery.",
	  CONN_STAT(msgs_held) },
	{ "rift_conn_reordered_messages_total",
	  "Messages that arrived before an earlier one (active-active: on "
	  "another path) and waited for it in the reorder buffer.",
	  CONN_STAT(msgs_reordered) },
	{ "rift_conn_acks_sent_total", "Explicit ack frames sent.",
	  CONN_STAT(acks_sent) },
	{ "rift_conn_rx_copied_bytes_total",
	  "Received bytes copied after the transport placed them (frames "
	  "split across reads, held messages).",
	  CONN_STAT(rx_copied_bytes) },
	{ "rift_conn_pings_sent_total", "Keepalive pings sent.",
	  CONN_STAT(pings_sent) },
	{ "rift_conn_send_eagain_total",
	  "Sends refused with RIFT_EAGAIN by a full send window.",
	  CONN_STAT(send_eagain) },
	{ "rift_conn_path_downs_total", "Paths this session lost (PATH_DOWN).",
	  CONN_STAT(path_downs) },
	{ "rift_conn_path_changes_total",
	  "Re-attaches of this session (failovers, PATH_CHANGED).",
	  CONN_STAT(path_changes) },
	{ "rift_conn_connect_attempts_total",
	  "Transport connect attempts of this client connection.",
	  CONN_STAT(connect_attempts) },
	{ "rift_conn_connect_retries_total",
	  "Connect attempts that followed a failed one.",
	  CONN_STAT(connect_retries) },
	{ "rift_conn_keepalive_timeouts_total",
	  "Paths of this session failed for peer silence.",
	  CONN_STAT(keepalive_timeouts) },
	{ "rift_conn_completion_errors_total",
	  "RDMA work completions that failed on this session's paths.",
	  CONN_STAT(wc_errors) },
	{ "rift_conn_credit_stalls_total",
	  "RDMA: times this session ran out of peer receive credits with "
	  "data waiting.",
	  CONN_STAT(credit_stalls) },
};

static const char *const kinds[2] = { "send", "recv" };

static uint64_t stat_at(const void *st, size_t off)
{
	uint64_t v;

	memcpy(&v, (const char *)st + off, sizeof(v));
	return v;
}

static void family(struct out *o, const char *name, const char *type,
		   const char *help)
{
	out_printf(o, "# HELP %s ", name);
	out_escaped(o, help, false);
	out_printf(o, "\n# TYPE %s %s\n", name, type);
}

/* name{labels} v, or name v when labels is "". */
static void sample(struct out *o, const char *name, const char *labels,
		   uint64_t v)
{
	if (*labels)
		out_printf(o, "%s{%s} %" PRIu64 "\n", name, labels, v);
	else
		out_printf(o, "%s %" PRIu64 "\n", name, v);
}

/* A counter family by reason: one series per reason but the first
 * (NONE), labeled with its name in lower case. */
static void by_reason(struct out *o, const char *name, const char *help,
		      const char *const *names, const uint64_t *v, unsigned n)
{
	char lb[64], r[32];

	family(o, name, "counter", help);
	for (unsigned i = 1; i < n; i++) {
		lower(r, sizeof(r), names[i]);
		snprintf(lb, sizeof(lb), "reason=\"%s\"", r);
		sample(o, name, lb, v[i]);
	}
}

/*
 * Buckets at every power of two from 1 us to 2^27 us: each is a sum of
 * whole histogram buckets (they are upper-inclusive), so the counts are
 * exact.  Seconds, as Prometheus names want.
 */
static void hist_samples(struct out *o, const char *name, const char *labels,
			 const struct rift__hist *h)
{
	const char *sep = *labels ? "," : "";
	uint64_t cum = 0;
	unsigned i = 0;

	for (unsigned k = 0; k <= RIFT__HIST_MAX_BITS; k++) {
		uint64_t bound = 1ull << k;

		while (i < RIFT__HIST_OVERFLOW && rift__hist_upper(i) <= bound)
			cum += h->b[i++];
		out_printf(o, "%s_bucket{%s%sle=\"", name, labels, sep);
		out_seconds(o, bound);
		out_printf(o, "\"} %" PRIu64 "\n", cum);
	}
	out_printf(o, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels,
		   sep, h->count);
	out_printf(o, *labels ? "%s_sum{%s} " : "%s_sum%s ", name, labels);
	out_seconds(o, h->sum);
	out_printf(o, *labels ? "\n%s_count{%s} %" PRIu64 "\n"
			      : "\n%s_count%s %" PRIu64 "\n",
		   name, labels, h->count);
}

static const char *role(const rift_conn *c)
{
	return c->is_client ? "client" : "server";
}

/* conn="<session id>",role="client"; no escaping needed. */
static void conn_labels(const rift_conn *c, char *buf, size_t len)
{
	snprintf(buf, len, "conn=\"%016" PRIx64 "\",role=\"%s\"", c->session_id,
		 role(c));
}

#define FOR_EACH_CONN(ctx, it, c)                                             \
	for ((it) = (ctx)->conns.next;                                        \
	     (it) != &(ctx)->conns &&                                         \
	     ((c) = rift__list_entry((it), rift_conn, node), 1);              \
	     (it) = (it)->next)

static void prom_conns(struct out *o, rift_ctx *ctx)
{
	struct rift__list *it;
	rift_conn *c;
	char lb[128], fb[32];

	family(o, "rift_conn_info", "gauge",
	       "One per open connection: its current transport, peer, local "
	       "address and fallback reason; always 1.");
	FOR_EACH_CONN(ctx, it, c) {
		conn_labels(c, lb, sizeof(lb));
		lower(fb, sizeof(fb), fallback_names[rift__conn_fallback(c)]);
		out_printf(o, "rift_conn_info{%s,transport=\"%s\",peer=\"", lb,
			   rift_transport_name(c->transport));
		out_escaped(o, c->path ? c->path->peer : "", true);
		out_printf(o, "\",local=\"");
		out_escaped(o, c->path ? c->path->local : "", true);
		out_printf(o, "\",fallback_reason=\"%s\"} 1\n", fb);
	}
	family(o, "rift_conn_paths", "gauge",
	       "Paths of this connection by state (rift_conn_paths): active "
	       "(carries its data), standby (joined, keepalives only), setup "
	       "(being connected or hand-shaken), down (a client's address "
	       "whose last path failed).");
	FOR_EACH_CONN(ctx, it, c) {
		rift_path_info pi[RIFT_GROUP_MAX + RIFT_URL_MAX_ADDRS * 2];
		int n = rift_conn_paths(c, pi, (int)RIFT_ARRAY_SIZE(pi));
		uint64_t by[5] = { 0 };

		for (int i = 0; i < n && i < (int)RIFT_ARRAY_SIZE(pi); i++)
			if (pi[i].state >= 1 && pi[i].state <= 4)
				by[pi[i].state]++;
		conn_labels(c, lb, sizeof(lb));
		for (int k = 1; k <= 4; k++)
			out_printf(o, "rift_conn_paths{%s,state=\"%s\"} %" PRIu64
				   "\n",
				   lb, rift_path_state_name((rift_path_state)k),
				   by[k]);
	}
	family(o, "rift_conn_ops_total", "counter",
	       "Messages of this connection by kind: send (accepted by "
	       "rift_conn_send*), recv (delivered).");
	FOR_EACH_CONN(ctx, it, c) {
		const uint64_t v[2] = { c->stats.msgs_sent,
					c->stats.msgs_recv };

		conn_labels(c, lb, sizeof(lb));
		for (int k = 0; k < 2; k++)
			out_printf(o,
				   "rift_conn_ops_total{%s,kind=\"%s\"} %" PRIu64
				   "\n",
				   lb, kinds[k], v[k]);
	}
	family(o, "rift_conn_bytes_total", "counter",
	       "Payload bytes of rift_conn_ops_total, by kind.");
	FOR_EACH_CONN(ctx, it, c) {
		const uint64_t v[2] = { c->stats.bytes_sent,
					c->stats.bytes_recv };

		conn_labels(c, lb, sizeof(lb));
		for (int k = 0; k < 2; k++)
			out_printf(o,
				   "rift_conn_bytes_total{%s,kind=\"%s\"} %" PRIu64
				   "\n",
				   lb, kinds[k], v[k]);
	}
	for (size_t f = 0; f < RIFT_ARRAY_SIZE(conn_counters); f++) {
		const struct family_def *d = &conn_counters[f];

		family(o, d->name, "counter", d->help);
		FOR_EACH_CONN(ctx, it, c) {
			conn_labels(c, lb, sizeof(lb));
			sample(o, d->name, lb, stat_at(&c->stats, d->off));
		}
	}
	family(o, "rift_conn_tcp_syscalls_total", "counter",
	       "System calls on this connection's TCP paths, by call.");
	FOR_EACH_CONN(ctx, it, c) {
		conn_labels(c, lb, sizeof(lb));
		out_printf(o,
			   "rift_conn_tcp_syscalls_total{%s,call=\"writev\"} "
			   "%" PRIu64 "\n"
			   "rift_conn_tcp_syscalls_total{%s,call=\"read\"} "
			   "%" PRIu64 "\n",
			   lb, c->stats.write_calls, lb, c->stats.read_calls);
	}
	family(o, "rift_conn_unacked_messages", "gauge",
	       "Messages held for replay until the peer acknowledges them.");
	FOR_EACH_CONN(ctx, it, c) {
		conn_labels(c, lb, sizeof(lb));
		sample(o, "rift_conn_unacked_messages", lb, c->unacked_msgs);
	}
	family(o, "rift_conn_unacked_bytes", "gauge",
	       "Payload bytes held for replay.");
	FOR_EACH_CONN(ctx, it, c) {
		conn_labels(c, lb, sizeof(lb));
		sample(o, "rift_conn_unacked_bytes", lb, c->unacked_bytes);
	}
	family(o, "rift_conn_held_bytes", "gauge",
	       "Frame bytes received while receiving is stopped, waiting for "
	       "rift_conn_recv_start.");
	FOR_EACH_CONN(ctx, it, c) {
		conn_labels(c, lb, sizeof(lb));
		sample(o, "rift_conn_held_bytes", lb, c->held_bytes);
	}
	family(o, "rift_conn_ack_latency_seconds", "histogram",
	       "Time from a message's enqueue in rift_conn_send* to its "
	       "cumulative acknowledgement by the peer.");
	FOR_EACH_CONN(ctx, it, c) {
		conn_labels(c, lb, sizeof(lb));
		hist_samples(o, "rift_conn_ack_latency_seconds", lb,
			     &c->ack_hist);
	}
	family(o, "rift_conn_reattach_seconds", "histogram",
	       "Time from PATH_DOWN to PATH_CHANGED of this session.");
	FOR_EACH_CONN(ctx, it, c) {
		conn_labels(c, lb, sizeof(lb));
		hist_samples(o, "rift_conn_reattach_seconds", lb,
			     &c->reattach_hist);
	}
}

int rift_metrics_prometheus(rift_ctx *ctx, char *buf, size_t len)
{
	static const char *const tnames[3] = { "none", "tcp", "rdma" };
	rift_ctx_stats now;
	const rift_ctx_stats *st = &now;
	struct live lv;
	struct out o;
	char lb[64];

	if (!ctx || (!buf && len))
		return RIFT_EINVAL;
	rift__ctx_stats_now(ctx, &now);
	out_init(&o, buf, len);
	live_collect(ctx, &lv);

	family(&o, "rift_info", "gauge",
	       "Library version and configured RDMA device; always 1.");
	out_printf(&o, "rift_info{version=\"%s\",device=\"",
		   rift_version_string());
	out_escaped(&o, ctx->cfg.device, true);
	out_printf(&o, "\",polling=\"%s\"} 1\n", polling_name(ctx->cfg.polling));

	family(&o, "rift_connections_active", "gauge",
	       "Open connections by the transport of their current path "
	       "(none: connecting or re-attaching).");
	for (int t = 0; t < 3; t++) {
		snprintf(lb, sizeof(lb), "transport=\"%s\"", tnames[t]);
		sample(&o, "rift_connections_active", lb, lv.conns[t]);
	}
	family(&o, "rift_paths_active", "gauge",
	       "Paths carrying a session, by transport.");
	for (int t = 1; t < 3; t++) {
		snprintf(lb, sizeof(lb), "transport=\"%s\"", tnames[t]);
		sample(&o, "rift_paths_active", lb, lv.paths[t]);
	}
	family(&o, "rift_listeners_active", "gauge", "Open listeners.");
	sample(&o, "rift_listeners_active", "", st->listeners_active);
	family(&o, "rift_completion_queues", "gauge",
	       "RDMA completion queues open, shared by the paths of this "
	       "context on a device (rdma.cq_size).");
	sample(&o, "rift_completion_queues", "", st->cqs);
	family(&o, "rift_unacked_messages", "gauge",
	       "Messages held for replay on all open connections.");
	sample(&o, "rift_unacked_messages", "", lv.unacked_msgs);
	family(&o, "rift_unacked_bytes", "gauge",
	       "Payload bytes held for replay on all open connections.");
	sample(&o, "rift_unacked_bytes", "", lv.unacked_bytes);

	family(&o, "rift_ops_total", "counter",
	       "Messages by kind: send (accepted by rift_conn_send*), recv "
	       "(delivered to on_recv).");
	{
		const uint64_t ops[2] = { st->msgs_sent, st->msgs_recv };
		const uint64_t bytes[2] = { st->bytes_sent, st->bytes_recv };

		for (int k = 0; k < 2; k++) {
			snprintf(lb, sizeof(lb), "kind=\"%s\"", kinds[k]);
			sample(&o, "rift_ops_total", lb, ops[k]);
		}
		family(&o, "rift_bytes_total", "counter",
		       "Payload bytes of rift_ops_total, by kind.");
		for (int k = 0; k < 2; k++) {
			snprintf(lb, sizeof(lb), "kind=\"%s\"", kinds[k]);
			sample(&o, "rift_bytes_total", lb, bytes[k]);
		}
	}

	for (size_t f = 0; f < RIFT_ARRAY_SIZE(ctx_counters); f++) {
		const struct family_def *d = &ctx_counters[f];

		family(&o, d->name, "counter", d->help);
		sample(&o, d->name, "", stat_at(st, d->off));
	}

	by_reason(&o, "rift_path_downs_total",
		  "Paths an established session lost (PATH_DOWN events), by "
		  "reason.",
		  down_names, st->path_downs_by, RIFT_PATH_DOWN__COUNT);
	by_reason(&o, "rift_fallbacks_total",
		  "auto:// connections that went to TCP instead of RDMA, by "
		  "reason.",
		  fallback_names, st->fallbacks, RIFT_FALLBACK__COUNT);

	family(&o, "rift_completion_errors_total", "counter",
	       "RDMA work completions that failed, by work completion status "
	       "(a status appears once it has been seen).");
	for (unsigned i = 0; i <= RIFT_WC_STATUS_OTHER; i++) {
		char name[32];

		if (!st->wc_errors[i])
			continue;
		wc_name(name, sizeof(name), i);
		snprintf(lb, sizeof(lb), "status=\"%s\"", name);
		sample(&o, "rift_completion_errors_total", lb, st->wc_errors[i]);
	}

	family(&o, "rift_pool_registered_bytes", "gauge",
	       "Bytes of the registered block pool this context uses (its "
	       "regions and large buffers; shared by the process's "
	       "contexts).");
	sample(&o, "rift_pool_registered_bytes", "", st->pool_registered_bytes);
	family(&o, "rift_pool_growing", "gauge",
	       "1 while the registered pool registers memory ahead of need, "
	       "or is about to (a thread of its own, competing for the CPU); "
	       "0 when settled.");
	sample(&o, "rift_pool_growing", "", st->pool_growing);
	family(&o, "rift_pool_blocks_in_use", "gauge",
	       "Blocks of the registered pool handed out, by block class.");
	for (int k = 0; k < RIFT_BLOCK_CLASSES; k++) {
		snprintf(lb, sizeof(lb), "class=\"%d\",block_size=\"%u\"", k,
			 ctx->cfg.block_size[k]);
		sample(&o, "rift_pool_blocks_in_use", lb,
		       st->pool_blocks_in_use[k]);
	}

	if (ctx->cfg.metrics) {
		family(&o, "rift_ack_latency_seconds", "histogram",
		       "Time from a message's enqueue in rift_conn_send* to its "
		       "cumulative acknowledgement by the peer.");
		hist_samples(&o, "rift_ack_latency_seconds", "", &ctx->ack_hist);
		family(&o, "rift_reattach_seconds", "histogram",
		       "Time from PATH_DOWN to PATH_CHANGED (session "
		       "re-attach).");
		hist_samples(&o, "rift_reattach_seconds", "",
			     &ctx->reattach_hist);
		prom_conns(&o, ctx);
	}
	return out_done(&o);
}

/* ---- INFO ---- */

/* Values of INFO lines may not break lines: control bytes become '?'. */
static void out_info_str(struct out *o, const char *key, const char *v)
{
	out_printf(o, "%s:", key);
	for (; *v; v++) {
		char ch = (unsigned char)*v < 0x20 || *v == 0x7f ? '?' : *v;

		out_write(o, &ch, 1);
	}
	out_str(o, "\r\n");
}

static void kv(struct out *o, const char *key, uint64_t v)
{
	out_printf(o, "%s:%" PRIu64 "\r\n", key, v);
}

static void info_hist(struct out *o, const char *prefix,
		      const struct rift__hist *h)
{
	static const struct {
		const char *name;
		double q;
	} qs[] = { { "p50", 0.5 }, { "p90", 0.9 }, { "p99", 0.99 },
		   { "p999", 0.999 } };
	char key[64];

	snprintf(key, sizeof(key), "%s_count", prefix);
	kv(o, key, h->count);
	snprintf(key, sizeof(key), "%s_mean_us", prefix);
	kv(o, key, h->count ? h->sum / h->count : 0);
	snprintf(key, sizeof(key), "%s_min_us", prefix);
	kv(o, key, rift__hist_min(h));
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(qs); i++) {
		snprintf(key, sizeof(key), "%s_%s_us", prefix, qs[i].name);
		kv(o, key, rift__hist_quantile(h, qs[i].q));
	}
	snprintf(key, sizeof(key), "%s_max_us", prefix);
	kv(o, key, h->max);
}

int rift_metrics_info(rift_ctx *ctx, char *buf, size_t len)
{
	rift_ctx_stats now;
	const rift_ctx_stats *st = &now;
	struct live lv;
	struct out o;
	char key[64], name[32];

	if (!ctx || (!buf && len))
		return RIFT_EINVAL;
	rift__ctx_stats_now(ctx, &now);
	out_init(&o, buf, len);
	live_collect(ctx, &lv);

	out_str(&o, "# Server\r\n");
	out_info_str(&o, "rift_version", rift_version_string());
	out_info_str(&o, "polling", polling_name(ctx->cfg.polling));
	out_info_str(&o, "device", ctx->cfg.device);
	kv(&o, "metrics_enabled", ctx->cfg.metrics ? 1 : 0);
	kv(&o, "progress_calls", st->progress_calls);

	out_str(&o, "\r\n# Connections\r\n");
	kv(&o, "connections_active", st->conns_active);
	kv(&o, "connections_tcp", lv.conns[RIFT_TRANSPORT_TCP]);
	kv(&o, "connections_rdma", lv.conns[RIFT_TRANSPORT_RDMA]);
	kv(&o, "connections_unattached", lv.conns[RIFT_TRANSPORT_NONE]);
	kv(&o, "connections_opened", st->conns_opened);
	kv(&o, "listeners_active", st->listeners_active);
	kv(&o, "paths_active", st->paths_active);
	kv(&o, "paths_tcp", lv.paths[RIFT_TRANSPORT_TCP]);
	kv(&o, "paths_rdma", lv.paths[RIFT_TRANSPORT_RDMA]);
	kv(&o, "connect_attempts", st->connect_attempts);
	kv(&o, "connect_retries", st->connect_retries);
	kv(&o, "connect_races", st->connect_races);
	kv(&o, "connect_alts", st->connect_alts);
	kv(&o, "unacked_msgs", lv.unacked_msgs);
	kv(&o, "unacked_bytes", lv.unacked_bytes);

	out_str(&o, "\r\n# Sessions\r\n");
	kv(&o, "sessions_resumed", st->sessions_resumed);
	kv(&o, "sessions_expired", st->sessions_expired);
	kv(&o, "resumes_refused", st->resumes_refused);
	kv(&o, "closes_aborted", st->closes_aborted);
	kv(&o, "path_downs", st->path_downs);
	for (unsigned r = 1; r < RIFT_PATH_DOWN__COUNT; r++) {
		lower(name, sizeof(name), down_names[r]);
		snprintf(key, sizeof(key), "path_down_%s", name);
		kv(&o, key, st->path_downs_by[r]);
	}
	kv(&o, "failovers", st->failovers);
	kv(&o, "standby_promotions", st->standby_promotions);
	kv(&o, "failbacks", st->failbacks);
	kv(&o, "failbacks_deferred", st->failbacks_deferred);
	kv(&o, "keepalive_timeouts", st->keepalive_timeouts);

	out_str(&o, "\r\n# Traffic\r\n");
	kv(&o, "msgs_sent", st->msgs_sent);
	kv(&o, "bytes_sent", st->bytes_sent);
	kv(&o, "msgs_recv", st->msgs_recv);
	kv(&o, "bytes_recv", st->bytes_recv);

	out_str(&o, "\r\n# Transport\r\n");
	kv(&o, "fallbacks", lv.fallbacks);
	kv(&o, "fallback_returns", st->fallback_returns);
	kv(&o, "peer_path_downs", st->peer_path_downs);
	kv(&o, "rma_reads", st->rma_reads);
	kv(&o, "rma_read_bytes", st->rma_read_bytes);
	kv(&o, "rma_writes", st->rma_writes);
	kv(&o, "rma_write_bytes", st->rma_write_bytes);
	kv(&o, "rma_served", st->rma_served);
	kv(&o, "rma_refused", st->rma_refused);
	kv(&o, "rma_direct", st->rma_direct);
	kv(&o, "rma_redone", st->rma_redone);
	for (unsigned r = 1; r < RIFT_FALLBACK__COUNT; r++) {
		lower(name, sizeof(name), fallback_names[r]);
		snprintf(key, sizeof(key), "fallback_%s", name);
		kv(&o, key, st->fallbacks[r]);
	}
	kv(&o, "credit_stalls", st->credit_stalls);
	kv(&o, "rndv_sends", st->rndv_sends);
	kv(&o, "rndv_streamed", st->rndv_streamed);
	kv(&o, "rndv_recvs", st->rndv_recvs);
	kv(&o, "rndv_read_bytes", st->rndv_read_bytes);
	kv(&o, "rndv_refused", st->rndv_refused);
	kv(&o, "rndv_bind_failures", st->rndv_bind_failures);
	kv(&o, "msgs_retained_in_place", st->msgs_retained_in_place);
	kv(&o, "completion_queues", st->cqs);
	kv(&o, "stale_completions", st->wc_stale);
	kv(&o, "dropped_completions", st->wc_dropped);

	out_str(&o, "\r\n# Errors\r\n");
	kv(&o, "protocol_errors", st->protocol_errors);
	kv(&o, "completion_errors", lv.wc_errors);
	for (unsigned i = 0; i <= RIFT_WC_STATUS_OTHER; i++) {
		if (!st->wc_errors[i])
			continue;
		wc_name(name, sizeof(name), i);
		snprintf(key, sizeof(key), "completion_errors_%s", name);
		kv(&o, key, st->wc_errors[i]);
	}

	out_str(&o, "\r\n# Latency\r\n");
	info_hist(&o, "ack_latency", &ctx->ack_hist);
	info_hist(&o, "reattach", &ctx->reattach_hist);

	out_str(&o, "\r\n# Pool\r\n");
	kv(&o, "pool_registered_bytes", st->pool_registered_bytes);
	kv(&o, "pool_growing", st->pool_growing);
	for (int k = 0; k < RIFT_BLOCK_CLASSES; k++) {
		snprintf(key, sizeof(key), "pool_class%d_block_size", k);
		kv(&o, key, ctx->cfg.block_size[k]);
		snprintf(key, sizeof(key), "pool_class%d_blocks_in_use", k);
		kv(&o, key, st->pool_blocks_in_use[k]);
	}
	return out_done(&o);
}
