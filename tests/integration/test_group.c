/*
 * Port groups, active-backup (session/group.c): standby paths joined
 * ahead, and failover onto one without setting up a connection.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "session/session.h"
#include "harness.h"

/* Listener on every address, and the URL of its two addresses (the
 * lab pair's two links over verbs; two loopback addresses over TCP). */
static rift_listener *two_addresses(rift_ctx *ctx, struct side *srv,
				    const char *opts, char *url, size_t len)
{
	const char *a0 = "127.0.0.1", *a1 = "127.0.0.2";
	rift_listener *l = NULL;
	char any[64];

	if (!strcmp(rt_transport(), "rdma")) {
		a0 = getenv("RIFT_LAB_SERVER_ADDR0");
		a1 = getenv("RIFT_LAB_SERVER_ADDR1");
		if (!a0 || !a1)
			SKIP("needs the lab's pair topology (two links)");
	}
	snprintf(any, sizeof(any), "%s://0.0.0.0:0", rt_transport());
	CHECK_EQ(rift_listen(ctx, any, &h_callbacks, srv, h_accept_side, &l),
		 0);
	snprintf(url, len, "%s://%s:%d,%s:%d%s", rt_transport(), a0,
		 rift_listener_port(l), a1, rift_listener_port(l), opts);
	return l;
}

/* A server listening on both addresses, and its client. */
struct grp {
	rift_ctx *ctx;
	struct side srv, cli;
	rift_listener *l;
	rift_conn *c;
	char url[200];
};

/* The client of g connects to url. */
static void grp_connect(struct grp *g, const char *url)
{
	CHECK_EQ(rift_connect(g->ctx, url, &h_callbacks, &g->cli, &g->c), 0);
	g->cli.conn = g->c;
	h_connected(g->ctx, &g->cli);
}

/* The client of g, verifying the server's stream of seed 21 (stream()),
 * connects to g's URL. */
static void grp_connect_verified(struct grp *g)
{
	g->cli.verify = true;
	g->cli.seed = 21;
	g->cli.max_size = 4096;
	grp_connect(g, g->url);
}

/* g's server, its URL with options opts, and its client connected when
 * connect says so; the server verifies the stream of seed 21. */
static void grp_open(struct grp *g, const char *opts, bool connect)
{
	memset(g, 0, sizeof(*g));
	g->srv.verify = true;
	g->srv.seed = 21;
	g->srv.max_size = 4096;
	g->ctx = h_ctx(NULL);
	g->l = two_addresses(g->ctx, &g->srv, opts, g->url, sizeof(g->url));
	if (connect)
		grp_connect(g, g->url);
}

static void grp_close(struct grp *g)
{
	rift_conn *conns[2] = { g->c, g->srv.conn };

	h_teardown(g->ctx, g->l, conns, 2);
}

/* The client's joined standby, once there is one (5 s at most). */
static rift__path *joined_standby(rift_ctx *ctx, rift_conn *c,
				  rift_conn *const *srv)
{
	uint64_t end = h_now_us() + 5000000u;

	while (h_now_us() < end) {
		if (c->n_standby && c->standby[0]->state == RIFT_PATH_STANDBY &&
		    *srv && (*srv)->n_standby == 1)
			return c->standby[0];
		rift_ctx_run(ctx, 2);
	}
	return NULL;
}

/* Messages 0..n-1 of seed 21 from c, the loop running meanwhile. */
static void stream(rift_ctx *ctx, rift_conn *c, uint64_t from, uint64_t n)
{
	for (uint64_t i = from; i < n;) {
		int rc = h_send(c, 21, i, 4096);

		if (rc == RIFT_EAGAIN) {
			rift_ctx_run(ctx, 1);
			continue;
		}
		CHECK_EQ(rc, 0);
		i++;
	}
}

/*
 * A client with two addresses (and group.max_paths at its default, 2)
 * joins a standby path to its session through the second one; when its
 * data path breaks mid-stream, the session resumes on that standby (no
 * new connection: the path after PATH_CHANGED is the standby), every
 * message arrives once and in order, and a new standby is joined
 * afterwards.
 */
TEST_T(standby_path_takes_over_without_a_new_connection)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c;
	rift__path *standby;
	rift_ctx_stats st;

	grp_open(&g, "", true);
	ctx = g.ctx;
	c = g.c;
	standby = joined_standby(ctx, c, &g.srv.conn);
	CHECK(standby != NULL);
	CHECK(strcmp(standby->peer, c->path->peer) != 0); /* the other one */
	printf("data path %s, standby %s\n", c->path->peer, standby->peer);

	stream(ctx, c, 0, 300);
	CHECK_EQ(rift__conn_cut(c), 0);
	stream(ctx, c, 300, 600);
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 600, 10000));
	/* The cut shows when the transport notices: messages may all have
	 * gone before, and the resume end after. */
	CHECK(h_wait(ctx, &g.cli.path_changed, 10000));
	CHECK_EQ(g.srv.bad, 0);
	CHECK_EQ(g.cli.path_down, 1);
	CHECK_EQ(g.cli.path_changed, 1);
	CHECK(c->path == standby);
	CHECK(standby->promoted);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.sessions_resumed, 1);
	/* The lost address gets a standby again. */
	CHECK(joined_standby(ctx, c, &g.srv.conn) != NULL);
	printf("after the failover: data path %s, standby %s\n",
	       c->path->peer, c->standby[0]->peer);
	CHECK(strcmp(c->standby[0]->peer, c->path->peer) != 0);

	grp_close(&g);
}

/* One-sided operations' callbacks (rma_... below). */
static int rma_n, rma_status;

static void rma_cb(rift_conn *conn, void *user, int status, size_t bytes)
{
	(void)conn;
	(void)user;
	(void)bytes;
	if (status)
		rma_status = status;
	rma_n++;
}

/* One read of len bytes at off by tok; its status. */
static int rma_read_one(struct grp *g, rift_mem *lm, const uint8_t *tok,
			size_t tl, size_t off, size_t len)
{
	uint64_t end = h_now_us() + 10000000u;
	int n = rma_n;

	rma_status = 0;
	CHECK_EQ(rift_conn_read(g->c, lm, 0, tok, tl, off, len, rma_cb, NULL),
		 0);
	while (rma_n == n && h_now_us() < end)
		rift_ctx_run(g->ctx, 5);
	CHECK(rma_n > n);
	return rma_status;
}

/*
 * An export in use gets a window on every joined standby too, its key
 * told ahead; a failover onto the standby (a RESUME there, which gives
 * the path a new attach counter on both sides) keeps the keys: the next
 * read after it goes by RDMA at once, no frame served.  Over TCP every
 * read is served by frames.
 */
TEST_T(rma_reads_stay_one_sided_across_a_failover_onto_a_standby)
{
	static uint8_t buf[65536], mine[4096];
	bool rdma = strcmp(rt_transport(), "rdma") == 0;
	struct grp g;
	rift__path *standby;
	rift_mem *em, *lm;
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);
	rift_ctx_stats st;
	uint64_t served;

	grp_open(&g, "", true);
	standby = joined_standby(g.ctx, g.c, &g.srv.conn);
	CHECK(standby != NULL);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13u + 1);
	CHECK_EQ(rift_mem_reg(g.ctx, buf, sizeof(buf), RIFT_MEM_READ, &em), 0);
	CHECK_EQ(rift_mem_reg(g.ctx, mine, sizeof(mine),
			      RIFT_MEM_READ | RIFT_MEM_WRITE, &lm), 0);
	CHECK_EQ(rift_mem_export(em, g.srv.conn, 0, sizeof(buf), RIFT_MEM_READ,
				 tok, &tl), 0);
	/* The first by frames (the keys come with its answer), then RDMA. */
	CHECK_EQ(rma_read_one(&g, lm, tok, tl, 100, 1000), 0);
	CHECK_EQ(rma_read_one(&g, lm, tok, tl, 2000, 1000), 0);
	CHECK(memcmp(mine, buf + 2000, 1000) == 0);
	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(g.ctx, &st), 0);
	CHECK_EQ(st.rma_direct, rdma ? 1 : 0);
	served = st.rma_served;
	/* The data path goes; the session resumes on the standby. */
	CHECK_EQ(rift__conn_cut(g.c), 0);
	CHECK(h_wait(g.ctx, &g.cli.path_changed, 10000));
	CHECK(g.c->path == standby);
	CHECK_EQ(rma_read_one(&g, lm, tok, tl, 30000, 3000), 0);
	CHECK(memcmp(mine, buf + 30000, 3000) == 0);
	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(g.ctx, &st), 0);
	printf("after the failover: pieces by RDMA %llu, served by frames "
	       "%llu (%llu before)\n",
	       (unsigned long long)st.rma_direct,
	       (unsigned long long)st.rma_served, (unsigned long long)served);
	if (rdma) {
		CHECK_EQ(st.rma_direct, 2);
		CHECK_EQ(st.rma_served, served);
	} else {
		CHECK_EQ(st.rma_direct, 0);
	}
	CHECK_EQ(st.rma_redone, 0);
	{
		rift_conn *conns[2] = { g.c, g.srv.conn };

		h_close_all(g.ctx, g.l, conns, 2);
	}
	CHECK(h_close_wait(g.ctx, 20000)); /* the exports end with them */
	CHECK_EQ(rift_mem_dereg(em), 0);
	CHECK_EQ(rift_mem_dereg(lm), 0);
	CHECK_EQ(rift_ctx_destroy(g.ctx), 0);
}

/*
 * The application hears of its standby paths (issue 16, item 5): PATH_UP
 * on both sides when one joins, PATH_DOWN with standby set when one
 * breaks (the data path untouched: no PATH_DOWN of it, no re-attach),
 * PATH_UP again when rift has joined another; each names the path's
 * local device ("rxeN:port" over verbs, "" over TCP).
 */
TEST_T(standby_paths_tell_the_application_up_and_down)
{
	struct grp g;
	rift__path *standby;
	bool rdma = !strcmp(rt_transport(), "rdma");

	grp_open(&g, "", true);
	standby = joined_standby(g.ctx, g.c, &g.srv.conn);
	CHECK(standby != NULL);
	CHECK(h_wait(g.ctx, &g.cli.path_up, 5000));
	CHECK(h_wait(g.ctx, &g.srv.path_up, 5000));
	CHECK_EQ(g.cli.path_up, 1);
	CHECK_EQ(g.srv.path_up, 1);
	printf("connected on device '%s', standby on '%s'\n", g.cli.last_device,
	       g.cli.standby_device);
	CHECK(rdma ? strncmp(g.cli.standby_device, "rxe", 3) == 0
		   : g.cli.standby_device[0] == '\0');
	CHECK(rdma ? strncmp(g.cli.last_device, "rxe", 3) == 0
		   : g.cli.last_device[0] == '\0');
	standby->ops->cut(standby);
	CHECK(h_wait(g.ctx, &g.cli.standby_down, 10000));
	/* Another standby joins; the data path never moved. */
	for (int i = 0; i < 2500 && g.cli.path_up < 2; i++)
		rift_ctx_run(g.ctx, 2);
	CHECK_EQ(g.cli.path_up, 2);
	CHECK_EQ(g.cli.path_down, 0);
	CHECK_EQ(g.cli.path_changed, 0);
	CHECK_EQ(g.srv.path_down, 0);
	CHECK_EQ(rift_conn_send(g.c, "x", 1), 0);
	CHECK(h_wait_u64(g.ctx, &g.srv.recv_count, 1, 5000));
	grp_close(&g);
}

/* Messages from..n-1 of seed 21 both ways at once: a to b and b to a. */
static void stream_both(rift_ctx *ctx, rift_conn *a, rift_conn *b,
			uint64_t from, uint64_t n)
{
	for (uint64_t i = from; i < n; i++) {
		rift_conn *both[2] = { a, b };

		for (int k = 0; k < 2; k++) {
			int rc;

			while ((rc = h_send(both[k], 21, i, 4096)) == RIFT_EAGAIN)
				rift_ctx_run(ctx, 1);
			CHECK_EQ(rc, 0);
		}
	}
}

/*
 * group.policy = active-active (session/spread.c): the client's data
 * path and its joined standby both carry messages, each way; when the
 * standby dies mid-stream, what it carried goes over the data path at
 * once (no re-attach, no PATH_DOWN: the session did not lose its data
 * path), and when the data path dies later, the session resumes on the
 * new standby.  Every message arrives once, in order, intact, both ways.
 */
TEST_T(active_active_carries_on_every_path_and_loses_nothing_when_one_dies)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c, *s;
	rift__path *standby;
	rift_conn_stats cs, ss;

	grp_open(&g, "?policy=active-active", false);
	grp_connect_verified(&g);
	ctx = g.ctx;
	c = g.c;
	standby = joined_standby(ctx, c, &g.srv.conn);
	CHECK(standby != NULL);
	s = g.srv.conn;
	CHECK(c->spread && s->spread);
	CHECK(c->path->slot != 0 && standby->slot != 0);
	CHECK(s->path->slot != 0 && s->standby[0]->slot != 0);

	stream_both(ctx, c, s, 0, 3000);
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 3000, 10000));
	CHECK(h_wait_u64(ctx, &g.cli.recv_count, 3000, 10000));
	printf("client sent %llu + %llu messages, server %llu + %llu "
	       "(data path + standby)\n",
	       (unsigned long long)c->path->tx_msgs,
	       (unsigned long long)standby->tx_msgs,
	       (unsigned long long)s->path->tx_msgs,
	       (unsigned long long)s->standby[0]->tx_msgs);
	CHECK(c->path->tx_msgs > 0 && standby->tx_msgs > 0);
	CHECK(s->path->tx_msgs > 0 && s->standby[0]->tx_msgs > 0);

	/* The standby dies with messages on it. */
	stream_both(ctx, c, s, 3000, 3200);
	standby->ops->cut(standby);
	stream_both(ctx, c, s, 3200, 6000);
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 6000, 10000));
	CHECK(h_wait_u64(ctx, &g.cli.recv_count, 6000, 10000));
	CHECK_EQ(g.cli.path_down, 0);
	CHECK_EQ(g.srv.path_down, 0);

	/* Then the data path, once a standby carries again. */
	standby = joined_standby(ctx, c, &g.srv.conn);
	CHECK(standby != NULL && standby->slot != 0);
	stream_both(ctx, c, s, 6000, 6200);
	CHECK_EQ(rift__conn_cut(c), 0);
	stream_both(ctx, c, s, 6200, 9000);
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 9000, 15000));
	CHECK(h_wait_u64(ctx, &g.cli.recv_count, 9000, 15000));
	CHECK(h_wait(ctx, &g.cli.path_changed, 10000));
	CHECK_EQ(g.srv.bad, 0);
	CHECK_EQ(g.cli.bad, 0);

	rift_conn_stats_init(&cs);
	rift_conn_stats_init(&ss);
	CHECK_EQ(rift_conn_stats_get(c, &cs), 0);
	CHECK_EQ(rift_conn_stats_get(s, &ss), 0);
	printf("reordered: client %llu, server %llu; duplicates dropped: "
	       "client %llu, server %llu\n",
	       (unsigned long long)cs.msgs_reordered,
	       (unsigned long long)ss.msgs_reordered,
	       (unsigned long long)cs.dups_dropped,
	       (unsigned long long)ss.dups_dropped);
	grp_close(&g);
}

/*
 * The server's side of a standby the client resumed on is the data path
 * from then on: when it fails there, the server says PATH_DOWN and waits
 * for the client's re-attach.  It used to fail as a standby, quietly,
 * leaving the session pointing at a path that was freed (a use after
 * free when the next RESUME replaced it: a lab soak died of SIGSEGV once
 * failbacks made paths come and go often).
 */
TEST_T(a_resumed_standby_that_fails_on_the_server_is_its_data_path)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c;
	rift__path *standby;
	int downs, changes;

	grp_open(&g, "", true);
	ctx = g.ctx;
	c = g.c;
	standby = joined_standby(ctx, c, &g.srv.conn);
	CHECK(standby != NULL);
	stream(ctx, c, 0, 100);
	CHECK_EQ(rift__conn_fail(c), 0);
	CHECK(h_wait(ctx, &g.cli.path_changed, 10000));
	CHECK(h_wait(ctx, &g.srv.path_changed, 10000));
	CHECK(c->path == standby);
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 100, 10000));
	/* The server fails it (as on a completion error): PATH_DOWN there.
	 * (It may have seen one already: the old path's end can reach it
	 * before the RESUME, over verbs.) */
	downs = g.srv.path_down;
	changes = g.srv.path_changed;
	CHECK_EQ(rift__conn_fail(g.srv.conn), 0);
	CHECK_EQ(g.srv.path_down, downs + 1);
	CHECK(g.srv.conn->path == NULL);
	/* The client re-attaches; nothing is lost. */
	stream(ctx, c, 100, 200);
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 200, 10000));
	for (uint64_t end = h_now_us() + 10000000u;
	     g.srv.path_changed < changes + 1 && h_now_us() < end;)
		rift_ctx_run(ctx, 2);
	CHECK_EQ(g.srv.path_changed, changes + 1);
	CHECK_EQ(g.srv.bad, 0);
	CHECK_EQ(g.srv.disconnected, 0);
	grp_close(&g);
}

/*
 * A standby's keepalive may still be waiting when the session moves to it
 * (verbs holds a PING back until the path has two credits).  It went out
 * right behind the RESUME carrying no ack, the client's path not being
 * attached yet; the server, whose path that RESUME had just attached,
 * read ack 0 as "cumulative ack went backwards" and ended the session
 * (CI lost a session so, 0.7 s after a link cut, once it had sent data
 * the client acknowledged).  A path being resumed on sends no PING: the
 * RESUME says it lives.  Here the PING is made pending as verbs leaves
 * it, the server's messages acknowledged first.
 */
TEST_T(a_ping_left_on_the_standby_does_not_follow_its_resume)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c;
	rift__path *standby;

	grp_open(&g, "", false);
	grp_connect_verified(&g);
	ctx = g.ctx;
	c = g.c;
	standby = joined_standby(ctx, c, &g.srv.conn);
	CHECK(standby != NULL);
	stream(ctx, g.srv.conn, 0, 100);
	stream(ctx, c, 0, 100);
	CHECK(h_wait_u64(ctx, &g.cli.recv_count, 100, 10000));
	CHECK(h_wait_u64(ctx, &g.srv.conn->acked_seq, 100, 10000));

	standby->pending |= RIFT_PEND_PING;
	CHECK_EQ(rift__conn_fail(c), 0);
	CHECK(c->path == standby && standby->promoted);
	stream(ctx, g.srv.conn, 100, 200);
	stream(ctx, c, 100, 200);
	CHECK(h_wait(ctx, &g.cli.path_changed, 10000));
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 200, 10000));
	CHECK(h_wait_u64(ctx, &g.cli.recv_count, 200, 10000));
	CHECK_EQ(g.srv.bad, 0);
	CHECK_EQ(g.cli.bad, 0);
	CHECK_EQ(g.srv.disconnected, 0);
	CHECK_EQ(g.cli.disconnected, 0);
	CHECK(c->path == standby);
	grp_close(&g);
}

/*
 * A standby whose link died since its last keepalive takes the RESUME
 * and never answers (a fault point makes the server's standby lose it).
 * The session must not wait out connect_timeout_ms (10 s here) on it: it
 * gives the standby what a setup takes (rift__group_resume_limit), then
 * re-attaches by a new connection, and every message arrives once and in
 * order.
 */
TEST_T(standby_that_does_not_answer_costs_less_than_connect_timeout)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c;
	rift__path *standby;
	rift_ctx_stats st;
	uint64_t t0, limit, took, attempts;

	grp_open(&g, "?max_paths=2&connect_timeout_ms=10000", true);
	ctx = g.ctx;
	c = g.c;
	standby = joined_standby(ctx, c, &g.srv.conn);
	CHECK(standby != NULL);
	stream(ctx, c, 0, 200);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	attempts = st.connect_attempts;
	rift__fault_arm(RIFT_FAULT_STANDBY_DEAF, 1, 1);
	t0 = h_now_us();
	CHECK_EQ(rift__conn_fail(c), 0);
	/* The failure is this side's own: the client fails over at once. */
	CHECK(c->path == standby && standby->promoted);
	limit = standby->limit_ms;
	CHECK(limit >= RIFT_PROMOTE_MIN_MS && limit < 10000);
	stream(ctx, c, 200, 400);
	CHECK(h_wait(ctx, &g.cli.path_changed, 9000));
	took = (h_now_us() - t0) / 1000u;
	printf("RESUME on the standby bounded by %llu ms; re-attached after "
	       "%llu ms\n", (unsigned long long)limit,
	       (unsigned long long)took);
	CHECK(took < 9000);
	CHECK_EQ(rift__fault_fired(RIFT_FAULT_STANDBY_DEAF), 1);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK(st.connect_attempts > attempts); /* a new connection */
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 400, 10000));
	CHECK_EQ(g.srv.bad, 0);
	CHECK_EQ(g.cli.path_down, 1);
	CHECK_EQ(g.cli.path_changed, 1);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.sessions_resumed, 1);
	grp_close(&g);
}

/*
 * With group.max_paths = 1 a client keeps one path, and a broken path
 * re-attaches by a new connection.
 */
TEST_T(one_path_with_max_paths_1)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c;
	rift_ctx_stats st;
	uint64_t attempts;

	grp_open(&g, "?max_paths=1", true);
	ctx = g.ctx;
	c = g.c;
	for (uint64_t end = h_now_us() + 300000u; h_now_us() < end;)
		rift_ctx_run(ctx, 2);
	CHECK_EQ(c->n_standby, 0);
	CHECK_EQ(g.srv.conn->n_standby, 0);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	attempts = st.connect_attempts;
	stream(ctx, c, 0, 100);
	CHECK_EQ(rift__conn_cut(c), 0);
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 100, 10000));
	CHECK(h_wait(ctx, &g.cli.path_changed, 5000));
	CHECK_EQ(g.srv.bad, 0);
	rift_ctx_stats_get(ctx, &st);
	CHECK(st.connect_attempts > attempts); /* a new connection */
	grp_close(&g);
}

/* ---- failback ---- */

/* Messages of seed 21 from g's client, *i on, the loop running, for
 * for_us; with until_failback, until 200 ms after a FAILBACK instead (for_us
 * at most).  Every message sent arrives both ways (the server echoes).
 * Returns when the FAILBACK came, 0 if none. */
static uint64_t traffic(struct grp *g, uint64_t *i, uint64_t for_us,
			bool until_failback)
{
	uint64_t end = h_now_us() + for_us, back_us = 0;
	int rc;

	while (h_now_us() < end && (!until_failback || !back_us ||
				    h_now_us() < back_us + 200000u)) {
		rc = h_send(g->c, 21, *i, 4096);
		if (rc == 0)
			(*i)++;
		else
			CHECK_EQ(rc, RIFT_EAGAIN);
		rift_ctx_run(g->ctx, 1);
		if (g->cli.failback && !back_us)
			back_us = h_now_us();
	}
	CHECK(h_wait_u64(g->ctx, &g->srv.recv_count, *i, 10000));
	CHECK(h_wait_u64(g->ctx, &g->cli.recv_count, *i, 10000));
	return back_us;
}

/*
 * After a failover onto the standby through the URL's second address, a
 * new standby joins through the first, which the client prefers; once it
 * has stayed up failback_delay_ms the session moves back to it while
 * messages keep flowing both ways: one FAILBACK (no second PATH_DOWN),
 * every message once and in order, the data path through the first
 * address.
 */
TEST_T(failback_returns_to_the_first_address_once_it_stays_up)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c;
	rift_ctx_stats st;
	rift_path_info pi[8];
	uint64_t i = 0, changed_us, back_us;

	grp_open(&g, "?failback_delay_ms=300", false);
	/* The server echoes: frames come both ways over the path left. */
	g.srv.echo = true;
	grp_connect_verified(&g);
	ctx = g.ctx;
	c = g.c;
	CHECK(joined_standby(ctx, c, &g.srv.conn) != NULL);
	CHECK_EQ(c->path->addr_idx, 0);
	stream(ctx, c, 0, 100);
	i = 100;
	CHECK_EQ(rift__conn_fail(c), 0);
	CHECK(h_wait(ctx, &g.cli.path_changed, 10000));
	changed_us = h_now_us();
	CHECK_EQ(c->path->addr_idx, 1);
	/* Traffic through the failback, until a while after it. */
	back_us = traffic(&g, &i, 10000000u, true);
	CHECK_EQ(g.cli.bad, 0);
	printf("failback %.0f ms after the failover; %llu messages\n",
	       (double)(back_us - changed_us) / 1e3, (unsigned long long)i);
	CHECK_EQ(g.cli.failback, 1);
	/* Not before the delay (less the loop time's staleness: the
	 * standby's join is stamped with its round's start). */
	CHECK(back_us - changed_us >= 280000u);
	CHECK_EQ(g.srv.bad, 0);
	CHECK_EQ(g.cli.path_down, 1);
	CHECK_EQ(g.cli.path_changed, 1);
	CHECK_EQ(c->path->addr_idx, 0);
	CHECK(strstr(g.cli.last_message, "failed back") != NULL);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.failbacks, 1);
	CHECK_EQ(st.standby_promotions, 1);
	/* A standby opens again through the second address. */
	CHECK(joined_standby(ctx, c, &g.srv.conn) != NULL);
	CHECK_EQ(rift_conn_paths(c, pi, 8), 2);
	CHECK_EQ(pi[0].state, RIFT_PATH_STATE_ACTIVE);
	CHECK_EQ(pi[1].state, RIFT_PATH_STATE_STANDBY);
	grp_close(&g);
}

/*
 * The path a failback leaves may still hold frames its peer sent before
 * the RESUME arrived (the client's loop had not read them yet).  They go
 * with it, and the RESUME's rewind sends them again on the new path;
 * nobody refuses anything (a first version kept the old path until the
 * RESUME's answer, refused its DATA as "data before the handshake" and
 * ended the session with RIFT_EPROTO in the lab).  Client and server run
 * on loops of their own, so the server's echoes wait unread on the path
 * left.
 */
TEST_T(failback_loses_nothing_the_path_left_held)
{
	struct side srv = { .verify = true, .seed = 21, .max_size = 4096,
			    .echo = true };
	struct side cli = { .verify = true, .seed = 21, .max_size = 4096 };
	rift_ctx *sctx = h_ctx(NULL), *cctx = h_ctx(NULL);
	rift_listener *l;
	rift_conn *c = NULL, *sc[1], *cc[1];
	rift__path *sb;
	rift_ctx_stats st;
	bool ready = false;
	char url[200];
	uint64_t i;

	l = two_addresses(sctx, &srv, "?failback_delay_ms=60000", url,
			  sizeof(url));
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	CHECK(h_wait2(cctx, sctx, &cli.connected, 10000));
	for (uint64_t end = h_now_us() + 10000000u; h_now_us() < end && !ready;) {
		rift_ctx_run(cctx, 1);
		rift_ctx_run(sctx, 1);
		ready = c->n_standby && c->standby[0]->state == RIFT_PATH_STANDBY;
	}
	CHECK(ready);
	/* A failover onto the standby through the second address; a new
	 * standby joins through the first. */
	CHECK_EQ(rift__conn_fail(c), 0);
	CHECK(h_wait2(cctx, sctx, &cli.path_changed, 10000));
	CHECK_EQ(c->path->addr_idx, 1);
	ready = false;
	for (uint64_t end = h_now_us() + 10000000u; h_now_us() < end && !ready;) {
		rift_ctx_run(cctx, 1);
		rift_ctx_run(sctx, 1);
		ready = c->n_standby && c->standby[0]->state == RIFT_PATH_STANDBY &&
			c->standby[0]->addr_idx == 0 && srv.conn &&
			srv.conn->n_standby == 1;
	}
	CHECK(ready);
	/* The standby answers its failback probe (the delay keeps the
	 * failback itself for below). */
	sb = c->standby[0];
	c->cfg.group_failback_delay_ms = 1;
	rift__group_failback_timer(&c->failback_timer, c);
	c->cfg.group_failback_delay_ms = 60000;
	CHECK(sb->probe_nonce != 0 && !c->failing_back);
	for (uint64_t end = h_now_us() + 10000000u;
	     h_now_us() < end && !sb->probe_ok_us;) {
		rift_ctx_run(cctx, 1);
		rift_ctx_run(sctx, 1);
	}
	CHECK(sb->probe_ok_us != 0);
	/* Messages the server echoes: it reads them and writes the echoes,
	 * the client's loop does not run meanwhile. */
	for (i = 0; i < 50; i++)
		CHECK_EQ(h_send(c, 21, i, 4096), 0);
	for (int k = 0; k < 500 && srv.recv_count < 50; k++) {
		rift_ctx_progress(cctx);
		rift_ctx_run(sctx, 1);
	}
	CHECK_EQ(srv.recv_count, 50);
	for (int k = 0; k < 20; k++)
		rift_ctx_run(sctx, 1);
	CHECK(cli.recv_count < 50); /* echoes wait on the path left */
	/* Failback now (its delay is the test's to shorten; the probe's
	 * answer counts as fresh: the test held the client's loop). */
	c->cfg.group_failback_delay_ms = 1;
	sb->probe_ok_us = cctx->now_us;
	rift__group_failback_timer(&c->failback_timer, c);
	CHECK(c->failing_back);
	ready = false;
	for (uint64_t end = h_now_us() + 10000000u; h_now_us() < end && !ready;) {
		rift_ctx_run(cctx, 1);
		rift_ctx_run(sctx, 1);
		ready = cli.failback == 1 && cli.recv_count == 50;
	}
	printf("client: %llu echoes, failback %d, disconnected %d: %s\n",
	       (unsigned long long)cli.recv_count, cli.failback,
	       cli.disconnected, cli.last_message);
	CHECK(ready);
	CHECK_EQ(cli.bad, 0);
	CHECK_EQ(srv.bad, 0);
	CHECK_EQ(cli.disconnected, 0);
	CHECK_EQ(srv.disconnected, 0);
	CHECK_EQ(c->path->addr_idx, 0);
	/* Nothing refused on either side. */
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(cctx, &st);
	CHECK_EQ(st.protocol_errors, 0);
	rift_ctx_stats_get(sctx, &st);
	CHECK_EQ(st.protocol_errors, 0);
	cc[0] = c;
	sc[0] = srv.conn;
	h_teardown2(cctx, NULL, cc, 1, sctx, l, sc, 1);
}

/*
 * A standby whose keepalives arrive may still not carry what the client
 * sends on it (a link that dropped frames a moment ago: the sends wait
 * for the transport's retransmission).  A failback there lost its old
 * path, waited out the RESUME's bound and re-attached by a new
 * connection (the soaks' slowest re-attaches on the server's side).
 * The fault point makes the server's standby lose what the client sends
 * that asks for an answer: the failback waits (a probe unanswered, no
 * second PATH_DOWN), and happens once the standby answers again.
 */
TEST_T(a_failback_waits_for_its_standby_to_answer_a_probe)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c;
	rift_ctx_stats st;
	uint64_t i, heard_us, back_us;

	grp_open(&g, "?failback_delay_ms=200", false);
	g.srv.echo = true;
	grp_connect_verified(&g);
	ctx = g.ctx;
	c = g.c;
	CHECK(joined_standby(ctx, c, &g.srv.conn) != NULL);
	stream(ctx, c, 0, 100);
	i = 100;
	CHECK_EQ(rift__conn_fail(c), 0);
	CHECK(h_wait(ctx, &g.cli.path_changed, 10000));
	CHECK_EQ(c->path->addr_idx, 1);
	/* The new standby, through the first address, joins; then what the
	 * client sends on it asking for an answer is lost. */
	CHECK(joined_standby(ctx, c, &g.srv.conn) != NULL);
	CHECK_EQ(c->standby[0]->addr_idx, 0);
	rift__fault_arm(RIFT_FAULT_STANDBY_DEAF, 1, UINT64_MAX);
	CHECK_EQ(traffic(&g, &i, 1500000u, false), 0);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	printf("deaf standby: %llu probes lost, %llu failbacks deferred, "
	       "path downs %d, failbacks %d\n",
	       (unsigned long long)rift__fault_fired(RIFT_FAULT_STANDBY_DEAF),
	       (unsigned long long)st.failbacks_deferred, g.cli.path_down,
	       g.cli.failback);
	CHECK_EQ(g.cli.path_down, 1);
	CHECK_EQ(g.cli.failback, 0);
	CHECK_EQ(c->path->addr_idx, 1);
	CHECK(rift__fault_fired(RIFT_FAULT_STANDBY_DEAF) >= 1);
	CHECK(st.failbacks_deferred >= 1);
	/* The standby answers again: the failback happens. */
	rift__fault_arm(RIFT_FAULT_STANDBY_DEAF, 0, 0);
	heard_us = h_now_us();
	back_us = traffic(&g, &i, 10000000u, true);
	printf("failback %.0f ms after the standby answered again; %llu "
	       "messages\n",
	       back_us ? (double)(back_us - heard_us) / 1e3 : -1.0,
	       (unsigned long long)i);
	CHECK_EQ(g.cli.failback, 1);
	CHECK_EQ(g.cli.path_down, 1);
	CHECK_EQ(g.cli.bad, 0);
	CHECK_EQ(g.srv.bad, 0);
	CHECK_EQ(c->path->addr_idx, 0);
	grp_close(&g);
}

/* failback_delay_ms = 0: the session stays on the path that works. */
TEST_T(failback_off_stays_on_the_working_path)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c;

	grp_open(&g, "?failback_delay_ms=0", true);
	ctx = g.ctx;
	c = g.c;
	CHECK(joined_standby(ctx, c, &g.srv.conn) != NULL);
	stream(ctx, c, 0, 100);
	CHECK_EQ(rift__conn_fail(c), 0);
	CHECK(h_wait(ctx, &g.cli.path_changed, 10000));
	CHECK(joined_standby(ctx, c, &g.srv.conn) != NULL); /* the first */
	for (uint64_t end = h_now_us() + 1000000u; h_now_us() < end;)
		rift_ctx_run(ctx, 5);
	stream(ctx, c, 100, 200);
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 200, 10000));
	CHECK_EQ(g.cli.failback, 0);
	CHECK_EQ(c->path->addr_idx, 1);
	CHECK_EQ(g.srv.bad, 0);
	grp_close(&g);
}

/*
 * A standby's setup through an address that answers nothing (its
 * listener's accept queue is full: SYNs dropped, as on a link dropping
 * everything) is bounded as a re-attach attempt is, by the session's
 * measured setup time with a one-second floor, doubled per timeout, not
 * by connect_timeout_ms (3 s): over verbs a standby begun while its link
 * still dropped was then missing for seconds, and a data path that
 * stalled meanwhile had nowhere to go (a lab soak: 2.3 s).  Over TCP the
 * kernel's own SYN timing (TCP_USER_TIMEOUT) ends such a connect after
 * about a second too; this checks which bound the setup was given.
 */
TEST(a_standby_setup_to_a_silent_address_is_bounded_by_the_setup_time)
{
	struct grp g;
	rift_path_info pi[8];
	rift_ctx_stats st;
	uint64_t t0, attempts0;
	char url[200];
	int silent[2], n;

	grp_open(&g, "", false);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d,127.0.0.1:%d",
		 rift_listener_port(g.l), h_silent_port(silent));
	grp_connect(&g, url);
	t0 = h_now_us();
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(g.ctx, &st);
	attempts0 = st.connect_attempts;
	/* 1.5 s in: the first setup failed at its 1 s bound. */
	while (h_now_us() < t0 + 1500000u)
		rift_ctx_run(g.ctx, 5);
	n = rift_conn_paths(g.c, pi, 8);
	printf("1.5 s: %d paths, the second %s: %s\n", n,
	       n > 1 ? rift_path_state_name(pi[1].state) : "-",
	       n > 1 ? pi[1].last_error : "-");
	CHECK_EQ(n, 2);
	CHECK_EQ(pi[1].state, RIFT_PATH_STATE_DOWN);
	CHECK_CONTAINS(pi[1].last_error, "within 1000 ms (a standby setup's");
	/* And it goes on trying (a second after the first two failures,
	 * then backing off: a_dead_address_backs_off_its_standby_setups). */
	while (h_now_us() < t0 + 4500000u)
		rift_ctx_run(g.ctx, 5);
	rift_ctx_stats_get(g.ctx, &st);
	printf("4.5 s: %llu standby setups since 0 s\n",
	       (unsigned long long)(st.connect_attempts - attempts0));
	CHECK(st.connect_attempts - attempts0 >= 2);
	CHECK_EQ(g.cli.path_down, 0); /* the data path never noticed */
	grp_close(&g);
	close(silent[1]);
	close(silent[0]);
}

/* A port of this host that refuses connections (bound, never listening:
 * the kernel answers RST); the socket to close after. */
static int refusing_port(int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(*fd >= 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	CHECK_EQ(bind(*fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(getsockname(*fd, (struct sockaddr *)&sa, &len), 0);
	return ntohs(sa.sin_port);
}

/*
 * The URL's second address refuses every connection: its standby setups
 * back off (1 s after each of the first four failures, then 2, 4, ... up
 * to 30 s) instead of one a second for as long as the address is dead.
 * The data path carries on meanwhile.
 */
TEST(a_dead_address_backs_off_its_standby_setups)
{
	struct grp g;
	rift_ctx_stats st;
	uint64_t t0, attempts0, setups;
	char url[200];
	int fd;

	grp_open(&g, "", false);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d,127.0.0.1:%d",
		 rift_listener_port(g.l), refusing_port(&fd));
	grp_connect(&g, url);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(g.ctx, &st);
	attempts0 = st.connect_attempts;
	t0 = h_now_us();
	/* The first setup went at the connect; the next ones at about 1,
	 * 2, 3, 4, 6 and 10 s: six before 10.5 s (one a second made ten). */
	for (uint64_t i = 0; h_now_us() < t0 + 10500000u;) {
		if (h_send(g.c, 21, i, 4096) == 0)
			i++;
		rift_ctx_run(g.ctx, 5);
	}
	rift_ctx_stats_get(g.ctx, &st);
	setups = st.connect_attempts - attempts0;
	printf("10.5 s: %llu standby setups to the dead address\n",
	       (unsigned long long)setups);
	CHECK(setups >= 5);
	CHECK(setups <= 7);
	CHECK_EQ(g.cli.path_down, 0);
	CHECK(g.srv.recv_count > 0);
	CHECK_EQ(g.srv.bad, 0);
	grp_close(&g);
	close(fd);
}

/* ---- rift_conn_paths ---- */

/* conn's paths into pi (8 at most); how many there are. */
static int paths(const rift_conn *conn, rift_path_info *pi)
{
	int n = rift_conn_paths(conn, pi, 8);

	CHECK(n >= 0 && n <= 8);
	for (int i = 0; i < n; i++)
		printf("  %-7s id %u %-26s local %-10s dev %-8s sent %llu "
		       "recv %llu %s\n",
		       rift_path_state_name(pi[i].state), pi[i].id, pi[i].peer,
		       pi[i].local, pi[i].device,
		       (unsigned long long)pi[i].msgs_sent,
		       (unsigned long long)pi[i].msgs_recv, pi[i].last_error);
	return n;
}

/*
 * rift_conn_paths on both sides: the data path (its messages counted),
 * the standby; after a failover the standby is the data path, with the
 * messages sent since on it.  Entries follow the caller's size (fields
 * appended later stay out of older callers).
 */
TEST_T(conn_paths_lists_the_data_path_and_its_standby)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c;
	rift_path_info pi[8], small[2];
	size_t cut = offsetof(rift_path_info, msgs_sent);
	bool rdma = !strcmp(rt_transport(), "rdma");
	int n;

	grp_open(&g, "", true);
	ctx = g.ctx;
	c = g.c;
	CHECK(joined_standby(ctx, c, &g.srv.conn) != NULL);
	stream(ctx, c, 0, 100);
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 100, 10000));

	printf("client:\n");
	n = paths(c, pi);
	CHECK_EQ(n, 2);
	CHECK_EQ(pi[0].state, RIFT_PATH_STATE_ACTIVE);
	CHECK_EQ(pi[0].id, 0);
	CHECK_EQ(pi[0].msgs_sent, 100);
	CHECK_EQ(pi[1].state, RIFT_PATH_STATE_STANDBY);
	CHECK(pi[1].id >= 1);
	CHECK_EQ(pi[1].msgs_sent, 0);
	CHECK(strcmp(pi[0].peer, pi[1].peer) != 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(pi[i].transport, rdma ? RIFT_TRANSPORT_RDMA
						: RIFT_TRANSPORT_TCP);
		CHECK(pi[i].local[0] != '\0');
		CHECK(rdma ? strchr(pi[i].device, ':') != NULL
			   : pi[i].device[0] == '\0');
		CHECK_EQ(pi[i].last_status, 0);
	}
	printf("server:\n");
	CHECK_EQ(paths(g.srv.conn, pi), 2);
	CHECK_EQ(pi[0].state, RIFT_PATH_STATE_ACTIVE);
	CHECK_EQ(pi[0].msgs_recv, 100);
	CHECK_EQ(pi[1].state, RIFT_PATH_STATE_STANDBY);

	/* Prometheus counts them by state, on each side. */
	{
		size_t len = 1u << 20;
		char *buf = malloc(len), *at;
		int standbys = 0;

		CHECK(buf != NULL);
		CHECK(rift_metrics_prometheus(ctx, buf, len) > 0);
		for (at = buf; (at = strstr(at, "state=\"standby\"} 1\n"));
		     at++)
			standbys++;
		CHECK_EQ(standbys, 2);
		free(buf);
	}

	/* The caller's size: older callers get the fields they know. */
	memset(small, 0xab, sizeof(small));
	CHECK_EQ(rift__conn_paths(c, small, 2, cut), 2);
	CHECK_EQ(small[0].state, RIFT_PATH_STATE_ACTIVE);
	CHECK_EQ(((rift_path_info *)((uint8_t *)small + cut))->state,
		 RIFT_PATH_STATE_STANDBY); /* entries cut long apart */
	CHECK_EQ(((uint8_t *)small)[2 * cut], (uint8_t)0xab);
	CHECK_EQ(rift_conn_paths(c, NULL, 0), 2);
	CHECK_EQ(rift_conn_paths(c, NULL, 1), RIFT_EINVAL);
	CHECK_EQ(rift_conn_paths(NULL, pi, 8), RIFT_EINVAL);

	/* A failover: the standby carries the data. */
	CHECK_EQ(rift__conn_fail(c), 0);
	stream(ctx, c, 100, 150);
	CHECK(h_wait(ctx, &g.cli.path_changed, 10000));
	CHECK(h_wait_u64(ctx, &g.srv.recv_count, 150, 10000));
	printf("client after the failover:\n");
	n = paths(c, pi);
	CHECK(n >= 1);
	CHECK_EQ(pi[0].state, RIFT_PATH_STATE_ACTIVE);
	CHECK(pi[0].id >= 1);
	CHECK(pi[0].msgs_sent >= 50);

	grp_close(&g);
}

/*
 * An address whose every path fails (a port nobody listens on) is
 * listed down by rift_conn_paths, with why, beside the data path.
 */
TEST_T(conn_paths_lists_a_dead_address_down_with_why)
{
	struct grp g;
	rift_ctx *ctx;
	rift_conn *c2;
	rift_path_info pi[8];
	bool rdma = !strcmp(rt_transport(), "rdma");
	char url2[200];
	int n, dead_port;

	grp_open(&g, "", false);
	ctx = g.ctx;
	/* An address nobody listens on: down, with why. */
	dead_port = rift_listener_port(g.l) ^ 1;
	if (!rdma) {
		struct sockaddr_in sa = { .sin_family = AF_INET };
		socklen_t sl = sizeof(sa);
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		inet_pton(AF_INET, "127.0.0.2", &sa.sin_addr);
		CHECK_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		CHECK_EQ(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
		dead_port = ntohs(sa.sin_port);
		close(fd);
	}
	snprintf(url2, sizeof(url2), "%s,%s:%d", strtok(g.url, ","),
		 rdma ? getenv("RIFT_LAB_SERVER_ADDR1") : "127.0.0.2",
		 dead_port);
	grp_connect(&g, url2);
	c2 = g.c;
	n = 0;
	for (uint64_t end = h_now_us() + 10000000u; h_now_us() < end;) {
		rift_ctx_run(ctx, 5);
		if (rift_conn_paths(c2, pi, 8) == 2 &&
		    pi[0].state == RIFT_PATH_STATE_ACTIVE &&
		    pi[1].state == RIFT_PATH_STATE_DOWN) {
			n = 2;
			break;
		}
	}
	printf("client with a dead address:\n");
	paths(c2, pi);
	CHECK_EQ(n, 2);
	CHECK_EQ(pi[1].last_status, RIFT_ECONNREFUSED);
	CHECK_EQ(pi[1].down_reason, RIFT_PATH_DOWN_PEER);
	CHECK(pi[1].last_error[0] != '\0');
	CHECK_EQ(pi[1].transport, RIFT_TRANSPORT_NONE);

	grp_close(&g);
}

/* ---- who may join a path to a session ---- */

/* A JOIN for session id on a new loopback TCP connection to port:
 * sealed under key, with attach counter attach; the socket. */
static int raw_join(int port, uint64_t id, const uint8_t *key,
		    uint64_t attach, uint64_t recv_seq)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	struct rift__hdr h = { .type = RIFT_FRAME_JOIN, .len = RIFT_JOIN_SIZE };
	uint8_t b[RIFT_HDR_SIZE + RIFT_JOIN_SIZE];
	struct rift__join j = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	CHECK_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	j.hello.proto = RIFT_WIRE_VERSION;
	j.hello.flags = RIFT_CAP_GROUP;
	j.hello.session_id = id;
	j.hello.recv_seq = j.hello.held_seq = recv_seq;
	j.hello.max_msg_size = 1u << 20;
	j.hello.window = 1u << 20;
	j.hello.attach = attach;
	j.path_id = 1;
	rift__hdr_encode(b, &h);
	rift__join_encode(b + RIFT_HDR_SIZE, &j);
	rift__hello_seal(b + RIFT_HDR_SIZE, RIFT_FRAME_JOIN, RIFT_JOIN_AUTH_AT,
			 key);
	CHECK_EQ(send(fd, b, sizeof(b), MSG_NOSIGNAL), (ssize_t)sizeof(b));
	return fd;
}

/* Run ctx until the server's session has n standbys, or 2 s. */
static bool standbys(rift_ctx *ctx, rift_conn *const *srv, unsigned n)
{
	uint64_t end = h_now_us() + 2000000u;

	while (h_now_us() < end && !(*srv && (*srv)->n_standby == n))
		rift_ctx_run(ctx, 2);
	return *srv && (*srv)->n_standby == n;
}

/*
 * A JOIN must prove the session's key over a fresh attach counter: a
 * forged tag, an unknown session, and a JOIN replayed on another
 * connection are refused on their own connection (counted), and the
 * session goes on untouched; the genuine one joins a standby.
 */
TEST(forged_or_replayed_join_is_refused_session_untouched)
{
	struct side srv = { .verify = true, .seed = 21, .max_size = 512 };
	struct side cli = { 0 };
	rift_ctx *ctx = h_ctx(NULL);
	rift_listener *l = NULL;
	rift_conn *c = NULL, *conns[2];
	uint8_t forged[RIFT_SESSION_KEY_LEN] = { 1, 2, 3 };
	rift_ctx_stats st;
	char url[128];
	int fd[4];

	/* max_paths 2 on one address: the session offers port groups,
	 * and the client opens no standby of its own. */
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0", &h_callbacks, &srv,
			     h_accept_side, &l),
		 0);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d?max_paths=2",
		 rift_listener_port(l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));

	fd[0] = raw_join(rift_listener_port(l), c->session_id, forged, 7, 0);
	fd[1] = raw_join(rift_listener_port(l), c->session_id ^ 1, c->key, 7,
			 0);
	CHECK(!standbys(ctx, &srv.conn, 1));
	fd[2] = raw_join(rift_listener_port(l), c->session_id, c->key, 7, 0);
	CHECK(standbys(ctx, &srv.conn, 1));
	fd[3] = raw_join(rift_listener_port(l), c->session_id, c->key, 7, 0);
	CHECK(!standbys(ctx, &srv.conn, 2));
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.resumes_refused, 3);

	/* The session carries on, on its own path. */
	for (uint64_t i = 0; i < 50; i++)
		CHECK_EQ(h_send(c, 21, i, 512), 0);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 50, 5000));
	CHECK_EQ(srv.bad, 0);
	CHECK_EQ(cli.path_down, 0);
	for (int i = 0; i < 4; i++)
		close(fd[i]);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* Run both contexts in turn for ms. */
static void run2(rift_ctx *a, rift_ctx *b, int ms)
{
	for (uint64_t end = h_now_us() + (uint64_t)ms * 1000u;
	     h_now_us() < end;) {
		rift_ctx_run(a, 1);
		rift_ctx_run(b, 1);
	}
}

/* Messages from..n-1 of seed 21 from c, both loops running meanwhile. */
static void stream2(rift_ctx *a, rift_ctx *b, rift_conn *c, uint64_t from,
		    uint64_t n)
{
	for (uint64_t i = from; i < n;) {
		int rc = h_send(c, 21, i, 4096);

		if (rc == RIFT_EAGAIN) {
			run2(a, b, 1);
			continue;
		}
		CHECK_EQ(rc, 0);
		i++;
	}
}

/*
 * A JOIN drawn while a RESUME waits for its answer takes the session's
 * next attach counter, and the RESUME_ACK bears the RESUME's own.  The
 * client compared it with the session's latest, took the answer for a
 * forgery ("RESUME_ACK without the session's proof"), and the server,
 * told so, ended the session: a lab soak lost its session at its first
 * fault, 70 ms after connecting, while its standby was still being set
 * up over cm=tcp.  Here the standby's JOIN leaves 200 ms late (a fault
 * point) while the server's loop, a context of its own, is held: the
 * JOIN goes out between the RESUME and its answer.  Each answer is
 * checked against its own path's counter: the session re-attaches, the
 * standby joins, and every message arrives once and in order.
 */
TEST(a_join_between_a_resume_and_its_answer_voids_neither)
{
	struct side srv = { .verify = true, .seed = 21, .max_size = 4096 };
	struct side cli = { 0 };
	rift_ctx *sctx = h_ctx(NULL), *cctx = h_ctx(NULL);
	rift_listener *l = NULL;
	rift_conn *c = NULL;
	rift__path *sb = NULL;
	char url[128];
	uint64_t end;

	CHECK_EQ(rift_listen(sctx, "tcp://0.0.0.0:0", &h_callbacks, &srv,
			     h_accept_side, &l),
		 0);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d,127.0.0.2:%d",
		 rift_listener_port(l), rift_listener_port(l));
	rift__fault_arm(RIFT_FAULT_JOIN_SLOW, 1, 1);
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	CHECK(h_wait2(cctx, sctx, &cli.connected, 5000));
	/* The standby's transport connected; its JOIN is held. */
	for (end = h_now_us() + 5000000u; h_now_us() < end;) {
		if (c->n_standby == 1 &&
		    c->standby[0]->state == RIFT_PATH_HANDSHAKE)
			break;
		run2(cctx, sctx, 1);
	}
	CHECK(c->n_standby == 1 && c->standby[0]->state == RIFT_PATH_HANDSHAKE);
	sb = c->standby[0];
	CHECK_EQ(rift__fault_fired(RIFT_FAULT_JOIN_SLOW), 1);
	stream2(cctx, sctx, c, 0, 100);

	/* The data path fails; no standby is joined: a new connection
	 * carries the RESUME.  The server's loop does not run for 400 ms:
	 * the RESUME goes, then the JOIN. */
	CHECK_EQ(rift__conn_fail(c), 0);
	for (end = h_now_us() + 400000u; h_now_us() < end;)
		rift_ctx_run(cctx, 5);
	CHECK(c->n_standby == 1 && c->standby[0] == sb);
	CHECK(sb->attach > 0 && sb->attach == c->attach_seq);
	printf("RESUME drew attach %llu, the JOIN after it %llu\n",
	       (unsigned long long)(sb->attach - 1),
	       (unsigned long long)sb->attach);

	CHECK(h_wait2(cctx, sctx, &cli.path_changed, 5000));
	for (end = h_now_us() + 5000000u;
	     sb->state != RIFT_PATH_STANDBY && h_now_us() < end;)
		run2(cctx, sctx, 1);
	CHECK_EQ(sb->state, RIFT_PATH_STANDBY);
	stream2(cctx, sctx, c, 100, 200);
	for (end = h_now_us() + 5000000u;
	     srv.recv_count < 200 && h_now_us() < end;)
		run2(cctx, sctx, 1);
	CHECK_EQ(srv.recv_count, 200);
	CHECK_EQ(srv.bad, 0);
	CHECK_EQ(cli.disconnected, 0);
	CHECK_EQ(srv.disconnected, 0);
	CHECK_EQ(cli.path_down, 1);
	CHECK_EQ(cli.path_changed, 1);
	{
		rift_conn *cc[1] = { c }, *sc[1] = { srv.conn };

		h_teardown2(cctx, NULL, cc, 1, sctx, l, sc, 1);
	}
}

/*
 * active-active: a carrier's death, told.  The server's end of a joined
 * carrier fails at once when the client says (PATH_CTL DOWN on the data
 * path) that its end failed, while the standby's own connection is still
 * open: a port lost on one side only, a device removed there, would
 * otherwise leave the server sending into it until its own detection.
 * A PATH_CTL for a path the server does not have changes nothing.
 */
TEST(a_carrier_dead_on_one_side_fails_on_the_other_when_told)
{
	struct side srv = { .verify = true, .seed = 21, .max_size = 512 };
	struct side cli = { 0 };
	rift_ctx *ctx = h_ctx(NULL);
	rift_listener *l = NULL;
	rift_conn *c = NULL, *conns[2];
	rift_ctx_stats st;
	char url[128];
	int fd;

	/* One address: the client opens no standby of its own; the raw
	 * JOIN below is its second path (id 1). */
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0", &h_callbacks, &srv,
			     h_accept_side, &l),
		 0);
	snprintf(url, sizeof(url),
		 "tcp://127.0.0.1:%d?max_paths=2&policy=active-active",
		 rift_listener_port(l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	fd = raw_join(rift_listener_port(l), c->session_id, c->key, 7, 0);
	CHECK(standbys(ctx, &srv.conn, 1));
	CHECK(srv.conn->spread && srv.conn->standby[0]->slot != 0);

	/* An id it does not have: nothing. */
	c->path->ctl_gid = 9;
	c->path->ctl_why = RIFT_PATH_DOWN_PORT;
	c->path->pending |= RIFT_PEND_PATH_CTL;
	rift__path_kick(c->path);
	for (int i = 0; i < 20; i++)
		rift_ctx_run(ctx, 2);
	CHECK_EQ(srv.conn->n_standby, 1);

	/* Its own: the server's end goes, the connection still open. */
	c->path->ctl_gid = 1;
	c->path->pending |= RIFT_PEND_PATH_CTL;
	rift__path_kick(c->path);
	CHECK(standbys(ctx, &srv.conn, 0));
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.peer_path_downs, 1);

	/* The session carries on. */
	for (uint64_t i = 0; i < 50; i++)
		CHECK_EQ(h_send(c, 21, i, 512), 0);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 50, 5000));
	CHECK_EQ(srv.bad, 0);
	CHECK_EQ(cli.path_down, 0);
	close(fd);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

