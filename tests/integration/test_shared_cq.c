/*
 * Shared completion queues (verbs, run in the lab): the paths of a
 * context on a device share a few CQs; every completion reaches its own
 * path; one that dies leaves the others untouched, and what its QP left
 * in the CQ is dropped and counted; an overflowing CQ fails the paths on
 * it, which re-attach on a new one.
 */
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "internal.h"
#include "harness.h"

static void need_rdma(void)
{
	if (strcmp(rt_transport(), "rdma") != 0)
		SKIP("verbs-only test: run with --transport rdma (the lab)");
}

static rift_ctx_stats ctx_stats(rift_ctx *ctx)
{
	rift_ctx_stats st;

	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(ctx, &st), 0);
	return st;
}

/* Clients in cli[], the accepted ends in srv[] (they echo). */
#define MAXCONN 200

struct many {
	struct side cli[MAXCONN], srv[MAXCONN];
	rift_conn *conns[2 * MAXCONN];
	int n, n_srv;
};

static void many_accept(rift_listener *l, rift_conn *conn)
{
	struct many *m = rift_listener_user(l);
	struct side *s;

	CHECK(m->n_srv < m->n);
	s = &m->srv[m->n_srv++];
	s->conn = conn;
	s->connected++;
	s->echo = true;
	rift_conn_set_user(conn, s);
}

/* n connections on one context, all connected; returns the listener. */
static rift_listener *many_connect(rift_ctx *ctx, struct many *m, int n)
{
	rift_listener *l = NULL;
	uint64_t end = h_now_us() + 120000000u;
	int up = 0;

	m->n = n;
	CHECK_EQ(rift_listen(ctx, rt_url(0), &h_callbacks, m, many_accept, &l),
		 0);
	for (int i = 0; i < n; i++) {
		struct side *c = &m->cli[i];

		c->verify = true;
		c->seed = 1000 + (uint64_t)i;
		c->max_size = 2048;
		CHECK_EQ(rift_connect(ctx, rt_url(rift_listener_port(l)),
				      &h_callbacks, c, &c->conn),
			 0);
	}
	while (h_now_us() < end) {
		up = 0;
		for (int i = 0; i < n; i++)
			up += m->cli[i].connected > 0;
		if (up == n && m->n_srv == n)
			break;
		rift_ctx_run(ctx, 10);
	}
	CHECK_EQ(up, n);
	CHECK_EQ(m->n_srv, n);
	return l;
}

/* Each live client sends its stream up to k messages (window of w). */
static void many_send(struct many *m, uint64_t *sent, uint64_t k, int w)
{
	for (int i = 0; i < m->n; i++) {
		struct side *c = &m->cli[i];

		if (!c->conn)
			continue;
		while (sent[i] < k && sent[i] < c->recv_count + (uint64_t)w) {
			int rc = h_send(c->conn, c->seed, sent[i], c->max_size);

			if (rc == RIFT_EAGAIN)
				break;
			CHECK_EQ(rc, 0);
			sent[i]++;
		}
	}
}

static bool all_echoed(struct many *m, uint64_t k)
{
	for (int i = 0; i < m->n; i++)
		if (m->cli[i].conn && m->cli[i].recv_count < k)
			return false;
	return true;
}

static void many_teardown(rift_ctx *ctx, rift_listener *l, struct many *m)
{
	int n = 0;

	for (int i = 0; i < m->n; i++) {
		if (m->cli[i].conn)
			m->conns[n++] = m->cli[i].conn;
		if (m->srv[i].conn)
			m->conns[n++] = m->srv[i].conn;
	}
	h_teardown(ctx, l, m->conns, n);
}

/*
 * 200 connections on one context (400 paths, client and server ends) in
 * a handful of CQs: at most ceil(paths / (cq_size / need)), need being
 * sq_depth + rq_depth.  Every connection echoes its own stream back
 * intact and in order, so every completion reached its own path.
 */
static void two_hundred(rift_polling polling)
{
	/* 400 paths: small rings (registered memory), as the thousand test */
	rift_config cfg = h_config_many(32);
	struct many *m = calloc(1, sizeof(*m));
	uint64_t *sent = calloc(MAXCONN, sizeof(*sent));
	const uint64_t k = 20;
	uint32_t need, per_cq, bound;
	uint64_t end, bad = 0;
	rift_listener *l;
	rift_ctx_stats st;
	rift_ctx *ctx;

	need_rdma();
	CHECK(m && sent);
	cfg.polling = polling;
	cfg.cq_size = 4096;
	ctx = h_ctx(&cfg);
	l = many_connect(ctx, m, MAXCONN);
	st = ctx_stats(ctx);
	need = cfg.sq_depth + cfg.rq_depth;
	per_cq = cfg.cq_size / need;
	bound = (2 * MAXCONN + per_cq - 1) / per_cq;
	printf("%d connections, %llu paths: %llu CQs (bound %u)\n", MAXCONN,
	       (unsigned long long)st.paths_active,
	       (unsigned long long)st.cqs, bound);
	CHECK_EQ(st.paths_active, 2 * MAXCONN);
	CHECK(st.cqs >= 1);
	CHECK(st.cqs <= bound);
	end = h_now_us() + 120000000u;
	while (!all_echoed(m, k) && h_now_us() < end) {
		many_send(m, sent, k, 4);
		rift_ctx_run(ctx, 5);
	}
	for (int i = 0; i < MAXCONN; i++) {
		CHECK_EQ(m->cli[i].recv_count, k);
		CHECK_EQ(m->srv[i].recv_count, k);
		bad += m->cli[i].bad + m->srv[i].bad;
		CHECK_EQ(m->cli[i].path_down + m->srv[i].path_down, 0);
	}
	CHECK_EQ(bad, 0);
	st = ctx_stats(ctx);
	CHECK(st.cqs <= bound);
	CHECK_EQ(st.wc_stale + st.wc_dropped, 0);
	many_teardown(ctx, l, m);
	free(sent);
	free(m);
}

TEST_TIMEOUT(shared_cqs_serve_200_connections_event_polling, 240)
{
	two_hundred(RIFT_POLL_EVENT);
}

TEST_TIMEOUT(shared_cqs_serve_200_connections_busy_polling, 240)
{
	two_hundred(RIFT_POLL_BUSY);
}

/*
 * Eight connections stream echoes through one shared CQ.  Mid-stream one
 * connection's path is cut (QP to ERR, disconnect: its posted requests
 * flush into the shared CQ) and another connection is closed outright
 * (its QPs destroyed with receives posted).  The others lose nothing and
 * see no path change; the cut one re-attaches and loses nothing either;
 * what the dead QPs left in the CQ is dropped and counted.
 */
static void one_dies(rift_polling polling)
{
	rift_config cfg = h_config();
	struct many *m = calloc(1, sizeof(*m));
	uint64_t sent[8] = { 0 }, end;
	const uint64_t k = 600;
	const int n = 8, cut = 3, closed = 5;
	rift_listener *l;
	rift_ctx_stats st;
	rift_ctx *ctx;
	bool done = false;

	need_rdma();
	CHECK(m != NULL);
	cfg.polling = polling;
	cfg.sq_depth = cfg.rq_depth = 64;
	cfg.block_size[0] = 4096;
	ctx = h_ctx(&cfg);
	l = many_connect(ctx, m, n);
	st = ctx_stats(ctx);
	CHECK_EQ(st.cqs, 1);
	end = h_now_us() + 120000000u;
	while (!all_echoed(m, k) && h_now_us() < end) {
		many_send(m, sent, k, 32);
		rift_ctx_run(ctx, 1);
		if (!done && m->cli[cut].recv_count > k / 3 &&
		    m->cli[closed].recv_count > k / 3) {
			CHECK_EQ(rift__conn_cut(m->cli[cut].conn), 0);
			rift_conn_close(m->cli[closed].conn, NULL);
			m->cli[closed].conn = NULL;
			done = true;
		}
	}
	st = ctx_stats(ctx);
	printf("stale %llu dropped %llu, flush errors %llu, CQs %llu; cut: "
	       "path_down %d changed %d\n",
	       (unsigned long long)st.wc_stale,
	       (unsigned long long)st.wc_dropped,
	       (unsigned long long)st.wc_errors[IBV_WC_WR_FLUSH_ERR],
	       (unsigned long long)st.cqs, m->cli[cut].path_down,
	       m->cli[cut].path_changed);
	CHECK(done);
	for (int i = 0; i < n; i++) {
		if (i == closed)
			continue;
		CHECK_EQ(m->cli[i].recv_count, k);
		CHECK_EQ(m->cli[i].bad, 0);
		CHECK_EQ(m->cli[i].disconnected, 0);
		if (i != cut)
			CHECK_EQ(m->cli[i].path_down, 0);
	}
	CHECK(m->cli[cut].path_changed >= 1);
	/* Server ends are in accept order: the closed connection's end
	 * hears of it, the cut one's re-attaches, the others see nothing. */
	for (int r = 0; r < 400; r++) {
		int gone = 0;

		for (int i = 0; i < n; i++)
			gone += m->srv[i].disconnected;
		if (gone)
			break;
		rift_ctx_run(ctx, 5);
	}
	{
		int gone = 0, downs = 0;

		for (int i = 0; i < n; i++) {
			CHECK_EQ(m->srv[i].bad, 0);
			if (m->srv[i].disconnected) {
				gone++;
				continue;
			}
			CHECK_EQ(m->srv[i].recv_count, k);
			downs += m->srv[i].path_down > 0;
		}
		CHECK_EQ(gone, 1);
		CHECK(downs <= 1);
	}
	/* Completions of the dead QPs: posted receives flushed after their
	 * paths failed or were destroyed. */
	CHECK(st.wc_stale + st.wc_dropped > 0);
	many_teardown(ctx, l, m);
	free(m);
}

TEST_TIMEOUT(shared_cq_path_death_spares_the_others_event_polling, 200)
{
	one_dies(RIFT_POLL_EVENT);
}

TEST_TIMEOUT(shared_cq_path_death_spares_the_others_busy_polling, 200)
{
	one_dies(RIFT_POLL_BUSY);
}

/*
 * A CQ that holds fewer completions than the device said (fault point:
 * a miscounting provider) overflows under a burst: the device reports
 * IBV_EVENT_CQ_ERR, every path on that CQ fails with the reason, and the
 * session re-attaches on a new CQ with nothing lost or doubled.
 */
TEST_TIMEOUT(overflowing_shared_cq_fails_its_paths_which_reattach, 120)
{
	rift_config cfg = h_config();
	struct side srv = { .verify = true, .seed = 5, .max_size = 4096 };
	struct side cli = { 0 };
	rift_listener *l;
	rift_conn *c, *conns[2];
	rift_ctx_stats st;
	rift_ctx *ctx;
	const uint64_t n = 2000;
	uint64_t sent = 0, end;

	need_rdma();
	cfg.session_grace_ms = 20000;
	ctx = h_ctx(&cfg);
	rift__fault_arm(RIFT_FAULT_CQ_SHORT, 1, 1);
	l = h_listen(ctx, &srv);
	c = h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	CHECK_EQ(rift__fault_fired(RIFT_FAULT_CQ_SHORT), 1);
	end = h_now_us() + 60000000u;
	while (srv.recv_count < n && h_now_us() < end && !cli.disconnected) {
		/* Bursts far above the CQ's 8 real entries: registered
		 * buffers of this size go as a SEND each. */
		for (int b = 0; b < 200 && sent < n; b++, sent++)
			if (h_send(c, 5, sent, 4096) == RIFT_EAGAIN)
				break;
		rift_ctx_run(ctx, 1);
	}
	rift__fault_clear();
	st = ctx_stats(ctx);
	printf("path_down cli %d srv %d, changed cli %d, cli: \"%s\", CQs "
	       "%llu\n",
	       cli.path_down, srv.path_down, cli.path_changed, cli.last_message,
	       (unsigned long long)st.cqs);
	if (cli.disconnected)
		FAIL("session died: %s", cli.last_message);
	CHECK(cli.path_down >= 1);
	CHECK(cli.path_changed >= 1);
	CHECK(strstr(rift_conn_last_error(c), "IBV_EVENT_CQ_ERR") != NULL ||
	      strstr(cli.last_message, "IBV_EVENT_CQ_ERR") != NULL);
	CHECK_EQ(srv.recv_count, n);
	CHECK_EQ(srv.bad, 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}
