/*
 * stats.c - the metrics hooks (declared in session.h): one call per event
 * from the session, the API and the transports.  Counters live in
 * ctx->stats and conn->stats (the public stats structs); latency
 * histograms (util/hist.h) in the context and each connection, written
 * only when cfg.metrics is set.  api/metrics.c renders them all.
 */
#include "session/session.h"

void rift__metrics_enqueue(rift_conn *conn, struct rift__omsg *m)
{
	rift_ctx *ctx = conn->ctx;

	m->enq_us = ctx->now_us;
	ctx->stats.msgs_sent++;
	ctx->stats.bytes_sent += m->len;
}

void rift__metrics_acked(rift_conn *conn, const struct rift__omsg *m)
{
	rift_ctx *ctx = conn->ctx;
	uint64_t us;

	if (!ctx->cfg.metrics)
		return;
	us = ctx->now_us > m->enq_us ? ctx->now_us - m->enq_us : 0;
	rift__hist_record(&conn->ack_hist, us);
	rift__hist_record(&ctx->ack_hist, us);
}

void rift__metrics_recv(rift_conn *conn, uint64_t len)
{
	conn->ctx->stats.msgs_recv++;
	conn->ctx->stats.bytes_recv += len;
}

void rift__metrics_connect_attempt(rift_conn *conn)
{
	rift_ctx *ctx = conn->ctx;

	ctx->stats.connect_attempts++;
	conn->stats.connect_attempts++;
	/* total_attempts counts failures since the last attach. */
	if (conn->total_attempts) {
		ctx->stats.connect_retries++;
		conn->stats.connect_retries++;
	}
}

void rift__metrics_path_down(rift_conn *conn)
{
	conn->ctx->stats.path_downs++;
	if (conn->down_why < RIFT_PATH_DOWN__COUNT)
		conn->ctx->stats.path_downs_by[conn->down_why]++;
	conn->stats.path_downs++;
	conn->down_us = conn->ctx->now_us;
	conn->credit_stalled = false;
}

void rift__metrics_path_changed(rift_conn *conn)
{
	rift_ctx *ctx = conn->ctx;
	uint64_t us;

	ctx->stats.failovers++;
	conn->credit_stalled = false;
	/* A server may see the RESUME before it noticed the old path die:
	 * no PATH_DOWN, so no re-attach time either. */
	if (!conn->down_us)
		return;
	us = ctx->now_us > conn->down_us ? ctx->now_us - conn->down_us : 0;
	conn->down_us = 0;
	if (!ctx->cfg.metrics)
		return;
	rift__hist_record(&conn->reattach_hist, us);
	rift__hist_record(&ctx->reattach_hist, us);
}

void rift__metrics_keepalive_timeout(rift__path *p)
{
	p->ctx->stats.keepalive_timeouts++;
	if (p->conn)
		p->conn->stats.keepalive_timeouts++;
}

void rift__metrics_wc_error(rift__path *p, int status)
{
	unsigned i = status >= 0 && status < RIFT_WC_STATUS_OTHER
			     ? (unsigned)status
			     : RIFT_WC_STATUS_OTHER;

	p->ctx->stats.wc_errors[i]++;
	if (p->conn)
		p->conn->stats.wc_errors++;
}

void rift__metrics_credit_stall(rift__path *p, bool stalled)
{
	rift_conn *conn = p->conn;

	if (!conn)
		return;
	if (stalled && !conn->credit_stalled) {
		p->ctx->stats.credit_stalls++;
		conn->stats.credit_stalls++;
	}
	conn->credit_stalled = stalled;
}
