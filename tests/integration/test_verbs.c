/*
 * Verbs-only behaviour, run in the soft-RoCE lab (--transport rdma):
 * memlock too low, registration failure under auto://, a peer whose
 * rdma_cm hello is garbage or lies, and a real link cut in the pair
 * topology.  On TCP these skip, saying why; the layout of registered
 * buffers (rift_buf_alloc) is tested on every transport, as the pool
 * exists with or without a device.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "memory/pool.h"
#include "session/session.h"
#include "transports/verbs/rdma.h"
#include "transports/verbs/verbs.h"
#include "harness.h"

static void need_rdma(void)
{
	if (strcmp(rt_transport(), "rdma") != 0)
		SKIP("verbs-only test: run with --transport rdma (the lab)");
}

TEST_T(memlock_too_low_is_an_actionable_error)
{
	rift_ctx *ctx;
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l;
	struct rlimit rl = { .rlim_cur = 64 * 1024, .rlim_max = 64 * 1024 };
	rift_config cfg = h_config();
	rift_conn *conns[1];

	need_rdma();
	cfg.retries = 0;
	/* Lowering works even for root; the lab runs tests as root.  Before
	 * the context first uses RDMA: that readies (registers on) every
	 * device, and a failure there is only a debug line; the connect
	 * that needs the device says why. */
	CHECK_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	h_connect(ctx, rift_listener_port(l), &cli);
	CHECK(h_wait(ctx, &cli.errors, 10000));
	CHECK_EQ(cli.last_status, RIFT_EMEMLOCK);
	CHECK_CONTAINS(cli.last_message, "RLIMIT_MEMLOCK");
	CHECK_CONTAINS(cli.last_message, "ulimit -l unlimited");
	CHECK_CONTAINS(cli.last_message, "KiB");
	conns[0] = cli.conn;
	h_teardown(ctx, l, conns, 1);
}

TEST_T(reg_mr_failure_under_auto_falls_back_with_reason)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = NULL;
	rift_ctx_stats st;
	rift_conn *c = NULL, *conns[2];
	char url[128];

	need_rdma();
	/* Every registration fails: the context's first use of RDMA (the
	 * listener) readies the device, quietly, and each of the client's
	 * 1 + retries attempts tries again. */
	rift__fault_arm(RIFT_FAULT_IBV_REG_MR, 1, 100);
	snprintf(url, sizeof(url), "auto://%s:0", rt_host());
	CHECK_EQ(rift_listen(ctx, url, &h_callbacks, &srv, h_accept_side, &l), 0);
	snprintf(url, sizeof(url), "auto://%s:%d", rt_host(),
		 rift_listener_port(l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	CHECK(rift__fault_fired(RIFT_FAULT_IBV_REG_MR) >= 3);
	CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_TCP);
	CHECK_EQ(rift_conn_fallback_reason(c), RIFT_FALLBACK_REG_MR);
	/* The server knows why too (the client's HELLO says). */
	CHECK(h_wait(ctx, &srv.connected, 5000));
	CHECK_EQ(rift_conn_fallback_reason(srv.conn), RIFT_FALLBACK_REG_MR);
	CHECK_CONTAINS(cli.last_message, "connected over tcp (fell back: "
					 "memory registration failed)");
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.fallbacks[RIFT_FALLBACK_REG_MR], 1);
	CHECK_EQ(rift_conn_send(c, "over tcp", 8), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 1, 5000));
	rift__fault_clear();
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* Connect to the listener with our own rdma_cm id and private data. */
static enum rdma_cm_event_type raw_cm_connect(rift_ctx *server, int port,
					      const void *pdata, uint8_t plen,
					      uint8_t *reject_reason)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct rift__vb_qp_caps caps = { 16, 16, 1, 1, 0 };
	struct rdma_conn_param param = { .private_data = pdata,
					 .private_data_len = plen,
					 .retry_count = 3 };
	enum rdma_cm_event_type got = RDMA_CM_EVENT_CONNECT_ERROR;
	rift__vb_err err;
	uint64_t end = h_now_us() + 10000000u;

	inet_pton(AF_INET, rt_host(), &sa.sin_addr);
	CHECK_EQ(rift__vb_channel_create(&ch, err), 0);
	CHECK_EQ(rift__vb_id_create(ch, NULL, &id, err), 0);
	CHECK_EQ(rift__vb_resolve_addr(id, NULL, (struct sockaddr *)&sa, 2000,
				       err),
		 0);
	pd = NULL;
	cch = NULL;
	cq = NULL;
	while (h_now_us() < end) {
		rift_ctx_run(server, 2);
		if (rift__vb_cm_get(ch, &ev))
			continue;
		got = ev->event;
		if (ev->event == RDMA_CM_EVENT_ADDR_RESOLVED) {
			CHECK_EQ(rift__vb_resolve_route(id, 2000, err), 0);
		} else if (ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED) {
			CHECK_EQ(rift__vb_pd_alloc(id->verbs, &pd, err), 0);
			CHECK_EQ(rift__vb_qp_setup(id, pd, 64, &caps, &cch, &cq,
						   err),
				 0);
			CHECK_EQ(rift__vb_connect(id, &param, err), 0);
		} else {
			if (ev->event == RDMA_CM_EVENT_REJECTED &&
			    ev->param.conn.private_data_len)
				*reject_reason = *(const uint8_t *)
							 ev->param.conn.private_data;
			rift__vb_cm_ack(ev);
			break;
		}
		rift__vb_cm_ack(ev);
	}
	rift__vb_qp_teardown(id, cch, cq);
	rift__vb_pd_free(pd);
	rift__vb_id_destroy(id);
	rift__vb_channel_destroy(ch);
	return got;
}

static void hostile_hello(const void *pdata, uint8_t len, const char *what)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { 0 };
	rift_listener *l;

	/* rdma_cm's private data: a cm=tcp run tests its own hellos in
	 * test_cm_tcp.c. */
	cfg.cm = RIFT_CM_RDMACM;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	rift_ctx_stats st;
	uint8_t why = 0;

	CHECK_EQ(raw_cm_connect(ctx, rift_listener_port(l), pdata, len, &why),
		 RDMA_CM_EVENT_REJECTED);
	if (why != 1)
		FAIL("%s: reject reason %u, expected 1 (bad hello)", what, why);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.protocol_errors, 1);
	CHECK(srv.conn == NULL); /* never trusted with a session */
	h_teardown(ctx, l, NULL, 0);
}

TEST_T(garbage_rdma_cm_hello_is_refused_and_counted)
{
	static const char junk[24] = "GET / HTTP/1.1\r\n\r\n";

	need_rdma();
	hostile_hello(junk, sizeof(junk), "garbage");
}

TEST_T(lying_rdma_cm_hello_is_refused_and_counted)
{
	/* Right magic and version, impossible receive depth: a peer that
	 * claims buffers it cannot have. */
	uint32_t hello[4] = { htonl(0x52494654u), htonl(1u << 16),
			      htonl(1u << 30), htonl(8192) };

	need_rdma();
	hostile_hello(hello, sizeof(hello), "lying");
}

/*
 * Pair topology: a listener of scheme on every address (callbacks cbs,
 * user srv) and a client whose URL names the server's address on link0,
 * then on link1, connected.  Skips elsewhere.
 */
static rift_conn *pair_open(rift_ctx *ctx, const char *scheme,
			    const rift_conn_callbacks *cbs, void *srv,
			    struct side *cli, rift_listener **l)
{
	const char *topo = getenv("RIFT_LAB_TOPO");
	const char *a0 = getenv("RIFT_LAB_SERVER_ADDR0");
	const char *a1 = getenv("RIFT_LAB_SERVER_ADDR1");
	rift_conn *c = NULL;
	char url[256];

	if (!topo || strcmp(topo, "pair") != 0 || !a0 || !a1)
		SKIP("needs the lab's pair topology (two links)");
	snprintf(url, sizeof(url), "%s://0.0.0.0:0", scheme);
	CHECK_EQ(rift_listen(ctx, url, cbs, srv, h_accept_side, l), 0);
	snprintf(url, sizeof(url), "%s://%s:%d,%s:%d", scheme, a0,
		 rift_listener_port(*l), a1, rift_listener_port(*l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, cli, &c), 0);
	cli->conn = c;
	h_connected(ctx, cli);
	return c;
}

static rift_conn *pair_session(rift_ctx *ctx, struct side *srv,
			       struct side *cli, rift_listener **l)
{
	return pair_open(ctx, "rdma", &h_callbacks, srv, cli, l);
}

/*
 * Pair topology: two links between client and server.  Cut link0 for real
 * (100% loss on the client's end, as a cable fault: routes stay, packets
 * vanish) while messages stream both ways;
 * the QP's retries run out within a second, the session re-attaches
 * through the server's address on link1, and nothing is lost or doubled.
 */
/* The lab link c's path runs on: attempts race, so either address of a
 * pair URL may have connected first. */
static const char *link_of(const rift_conn *c)
{
	return c->path && strstr(c->path->peer,
				 getenv("RIFT_LAB_SERVER_ADDR1"))
		       ? "link1"
		       : "link0";
}

TEST_TIMEOUT(link_cut_mid_stream_reattaches_over_the_other_port, 240)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { .verify = true, .seed = 7, .max_size = 256 };
	struct side cli = { .verify = true, .seed = 70, .max_size = 256 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	uint64_t n = 20000, sent_c = 0, sent_s = 0, end, cut_at = 0;
	const char *link = "link0";
	char cmd[64];
	int down = 0;

	need_rdma();
	cfg.keepalive_interval_ms = 100;
	cfg.keepalive_timeout_ms = 1500;
	/* The first rdma_cm connect to an address of a freshly booted guest
	 * sometimes takes over 2 s (its first CM exchange is lost and waits
	 * for rdma_cm's retransmission): seen once in 11 runs both at start
	 * and on the re-attach, which then outlasted a 5 s grace. */
	cfg.connect_timeout_ms = 6000;
	cfg.session_grace_ms = 20000;
	ctx = h_ctx(&cfg);
	c = pair_session(ctx, &srv, &cli, &l);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	end = h_now_us() + 200000000u;
	while ((cli.recv_count < n || srv.recv_count < n) && h_now_us() < end &&
	       !cli.disconnected && !srv.disconnected) {
		for (int k = 0; k < 32 && sent_c < n; k++, sent_c++)
			if (h_send(c, 7, sent_c, 256) == RIFT_EAGAIN)
				break;
		for (int k = 0; k < 32 && sent_s < n; k++, sent_s++)
			if (h_send(srv.conn, 70, sent_s, 256) == RIFT_EAGAIN)
				break;
		if (!down && srv.recv_count > n / 4) {
			link = link_of(c);
			snprintf(cmd, sizeof(cmd), "lab-link loss %s", link);
			CHECK_EQ(system(cmd), 0);
			cut_at = h_now_us();
			down = 1;
		}
		rift_ctx_run(ctx, 1);
	}
	if (down) {
		snprintf(cmd, sizeof(cmd), "lab-link noloss %s", link);
		CHECK_EQ(system(cmd), 0);
	}
	printf("path_down cli %d srv %d, changed cli %d srv %d, %.2f s after "
	       "the cut\n",
	       cli.path_down, srv.path_down, cli.path_changed, srv.path_changed,
	       (double)(h_now_us() - cut_at) / 1e6);
	if (cli.disconnected || srv.disconnected)
		FAIL("session died: %s / %s", cli.last_message, srv.last_message);
	CHECK(down);
	CHECK_EQ(cli.recv_count, n);
	CHECK_EQ(srv.recv_count, n);
	CHECK_EQ(cli.bad + srv.bad, 0);
	CHECK(cli.path_changed >= 1);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * rift_ctx_stats.pool_growing says when the registered pool registers
 * memory ahead of need (its own thread, competing for the CPU: rift-perf
 * waits for it before it times): 1 soon after blocks carve new regions,
 * 0 once the regions ahead are there.
 */
TEST_T(pool_growing_says_when_the_pool_registers_ahead)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = NULL, *conns[2];
	rift_ctx_stats st;
	void *b[640];
	uint64_t end, settled_us = 0;
	int seen = 0;

	need_rdma();
	CHECK_EQ(rift_connect(ctx, rt_url(rift_listener_port(l)), &h_callbacks,
			      &cli, &c),
		 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	rift_ctx_stats_init(&st);
	/* 40 MiB of 64 KiB blocks: regions carved, more wanted ahead. */
	for (int k = 0; k < 640; k++) {
		b[k] = rift_buf_alloc(ctx, 64u << 10);
		CHECK(b[k] != NULL);
		rift_ctx_stats_get(ctx, &st);
		seen |= st.pool_growing != 0;
	}
	end = h_now_us() + 20000000u;
	while (h_now_us() < end) {
		rift_ctx_stats_get(ctx, &st);
		seen |= st.pool_growing != 0;
		if (!st.pool_growing) {
			settled_us = h_now_us();
			break;
		}
		rift_ctx_run(ctx, 1);
	}
	printf("growing seen %d, settled after %.2f s, %llu MiB registered\n",
	       seen, settled_us ? (settled_us + 20000000u - end) / 1e6 : -1.0,
	       (unsigned long long)(st.pool_registered_bytes >> 20));
	for (int k = 0; k < 640; k++)
		rift_buf_free(ctx, b[k]);
	CHECK(seen);
	CHECK(settled_us != 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* Messages from rift_buf_alloc that fit a receive buffer leave straight
 * from their registered pool block, are delivered from the receive buffer
 * they landed in, and arrive intact. */
TEST_T(registered_buffers_are_sent_and_received_without_a_copy)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .verify = true, .seed = 99, .max_size = 4096 },
		    cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[2];
	uint64_t n = 300;

	need_rdma();
	h_connected(ctx, &cli);
	for (uint64_t i = 0; i < n; i++) {
		int rc;

		while ((rc = h_send(c, 99, i, 4096)) == RIFT_EAGAIN)
			rift_ctx_run(ctx, 1);
		CHECK_EQ(rc, 0);
		if (i % 16 == 0)
			rift_ctx_progress(ctx);
	}
	CHECK(h_wait_u64(ctx, &srv.recv_count, n, 30000));
	CHECK_EQ(srv.bad, 0);
	printf("zero-copy sends: %llu of %llu messages\n",
	       (unsigned long long)rift__conn_rdma_figure(c, RIFT__RDMA_ZC_SENDS),
	       (unsigned long long)n);
	/* Sizes are random in 0..4096: all above the inline size go
	 * without a copy. */
	CHECK(rift__conn_rdma_figure(c, RIFT__RDMA_ZC_SENDS) >= n / 2);
	printf("delivered in place: %llu of %llu bytes\n",
	       (unsigned long long)rift__conn_rdma_figure(srv.conn, RIFT__RDMA_INPLACE_BYTES),
	       (unsigned long long)srv.recv_bytes);
	CHECK(rift__conn_rdma_figure(srv.conn, RIFT__RDMA_INPLACE_BYTES) >= srv.recv_bytes / 2);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* ---- replies from on_recv ---- */

/* A server that echoes from on_recv, and notes an event delivered while
 * its on_recv runs (rift calls no callback from inside a call). */
struct reply_side {
	struct side s; /* first: the harness's on_event and h_accept_side use it */
	uint64_t arm_at;        /* request whose reply finds the link dead */
	int in_recv, reentered;
};

static void reply_recv(rift_conn *conn, rift_msg *msg)
{
	struct reply_side *r = rift_conn_user(conn);

	r->in_recv = 1;
	r->s.recv_count++;
	if (r->s.recv_count == r->arm_at)
		rift__fault_arm(RIFT_FAULT_RDMA_SEND, 1, 1);
	CHECK_EQ(rift_conn_send(conn, rift_msg_data(msg), rift_msg_len(msg)),
		 0);
	r->in_recv = 0;
}

static void reply_event(rift_conn *conn, const rift_event *ev)
{
	struct reply_side *r = rift_conn_user(conn);

	if (r->in_recv)
		r->reentered++;
	h_callbacks.on_event(conn, ev);
}

static const rift_conn_callbacks reply_callbacks = { .on_event = reply_event,
						     .on_recv = reply_recv };

/*
 * Request/reply: a reply sent from on_recv of a lone request leaves from
 * inside rift_conn_send (its doorbell before the rest of the delivery's
 * work), carrying the ack.  When that send finds the link dead (fault
 * point), the path fails only after on_recv has returned (no event from
 * inside the call), and the reply waits in the session: it arrives over
 * the re-attached path, once.
 */
TEST_TIMEOUT(a_reply_from_on_recv_leaves_at_once_and_survives_a_dead_link, 120)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct reply_side srv = { 0 };
	struct side cli = { .verify = true, .seed = 7, .max_size = 64 };
	rift_listener *l;
	rift_conn *c, *conns[2];
	char url[128];
	uint64_t n = 200;

	need_rdma();
	snprintf(url, sizeof(url), "rdma://%s:0", rt_host());
	CHECK_EQ(rift_listen(ctx, url, &reply_callbacks, &srv, h_accept_side,
			     &l),
		 0);
	c = h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.s.connected, 5000));
	for (uint64_t i = 0; i < n; i++) {
		CHECK_EQ(h_send(c, 7, i, 64), 0);
		CHECK(h_wait_u64(ctx, &cli.recv_count, i + 1, 10000));
	}
	printf("replies sent from on_recv: %llu of %llu; bare frames: "
	       "client %llu, server %llu\n",
	       (unsigned long long)rift__conn_rdma_figure(srv.s.conn, RIFT__RDMA_NOW_SENDS),
	       (unsigned long long)n,
	       (unsigned long long)rift__conn_rdma_figure(c, RIFT__RDMA_BARE_SENDS),
	       (unsigned long long)rift__conn_rdma_figure(srv.s.conn, RIFT__RDMA_BARE_SENDS));
	/* A few may find a control frame owed and go with the flush. */
	CHECK(rift__conn_rdma_figure(srv.s.conn, RIFT__RDMA_NOW_SENDS) >= n * 9 / 10);
	/* All but each side's first DATA frame may go without a header. */
	CHECK(rift__conn_rdma_figure(c, RIFT__RDMA_BARE_SENDS) >= n * 9 / 10);
	CHECK(rift__conn_rdma_figure(srv.s.conn, RIFT__RDMA_BARE_SENDS) >= n * 9 / 10);

	srv.arm_at = n + 1;
	CHECK_EQ(h_send(c, 7, n, 64), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, n + 1, 30000));
	CHECK(h_wait(ctx, &cli.path_changed, 30000));
	rift__fault_clear();
	CHECK_EQ(srv.reentered, 0);
	CHECK(srv.s.path_down >= 1);
	CHECK_EQ(cli.bad, 0);
	/* Once: nothing more comes. */
	rift_ctx_run(ctx, 200);
	CHECK_EQ(cli.recv_count, n + 1);
	CHECK_EQ(srv.s.recv_count, n + 1);
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * A peer that sends a bare DATA frame (no header: seq and ack follow from
 * the path's last DATA frame) where no rift peer would (fault points play
 * it) is refused: the session ends with RIFT_EPROTO, counted, and nothing
 * it sent from then on is delivered.
 */
static void hostile_bare(rift__fault_point fault, const char *says)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .verify = true, .seed = 5, .max_size = 64 },
		    cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[2];
	rift_ctx_stats st;
	uint64_t before = 0;

	need_rdma();
	h_connected(ctx, &cli);
	if (fault == RIFT_FAULT_BARE_ACK) {
		/* A first frame with its header, so the next may go bare. */
		CHECK_EQ(h_send(c, 5, 0, 64), 0);
		CHECK(h_wait_u64(ctx, &srv.recv_count, 1, 10000));
		before = 1;
	}
	rift__fault_arm(fault, 1, 1);
	CHECK_EQ(h_send(c, 5, before, 64), 0);
	CHECK(h_wait(ctx, &srv.disconnected, 20000));
	CHECK_EQ(rift__fault_fired(fault), 1);
	rift__fault_clear();
	printf("server: %s: %s\n", rift_err_name(srv.last_status),
	       srv.last_message);
	CHECK_EQ(srv.last_status, RIFT_EPROTO);
	CHECK_CONTAINS(srv.last_message, says);
	CHECK_EQ(srv.recv_count, before);
	CHECK_EQ(srv.bad, 0);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK(st.protocol_errors >= 1);
	CHECK(h_wait(ctx, &cli.disconnected, 20000));
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

TEST_TIMEOUT(bare_frame_before_any_data_frame_is_refused, 120)
{
	hostile_bare(RIFT_FAULT_BARE_EARLY, "bare DATA frame refused: before "
					    "any DATA frame on the path");
}

TEST_TIMEOUT(bare_frame_acking_messages_never_sent_is_refused, 120)
{
	hostile_bare(RIFT_FAULT_BARE_ACK, "ack for a message that was never sent");
}

/*
 * Issue 14, item 2: credits are checked against the receive depth the
 * peer announced in its hello, not against the 16-bit field's range.  A
 * peer that returns rq_depth credits more than it has buffers (a fault
 * point plays it) is refused with RIFT_EPROTO.  Before, anything up to
 * 65 536 passed, and the sender could overrun the peer's receive queue.
 */
TEST_TIMEOUT(credits_beyond_the_peers_announced_depth_are_refused, 120)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[2];

	need_rdma();
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 10000));
	rift__fault_arm(RIFT_FAULT_CREDITS_EXTRA, 1, 1);
	CHECK_EQ(rift_conn_send(c, "x", 1), 0);
	/* RIFT_EPROTO: the session ends (no PATH_DOWN first). */
	CHECK(h_wait(ctx, &srv.disconnected, 20000));
	CHECK_EQ(srv.last_status, RIFT_EPROTO);
	CHECK_EQ(rift__fault_fired(RIFT_FAULT_CREDITS_EXTRA), 1);
	rift__fault_clear();
	printf("server: %s\n", rift_conn_last_error(srv.conn));
	CHECK_CONTAINS(rift_conn_last_error(srv.conn),
		       "peer returned more credits than it has buffers");
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* ---- retained messages keep their receive buffer ---- */

#define KEEP_N 600      /* messages sent */
#define KEEP_FIRST 300  /* of them retained: then the ring wraps */

struct keep_side {
	struct side s; /* first: the harness's on_event and h_accept_side use it */
	rift_msg *kept[KEEP_FIRST];
	const void *at[KEEP_FIRST]; /* where each was delivered */
};

static size_t keep_size(uint64_t i)
{
	return i % 2 ? 3000 : 512; /* above and below the threshold */
}

static void keep_recv(rift_conn *conn, rift_msg *msg)
{
	struct keep_side *k = rift_conn_user(conn);
	uint64_t i = k->s.recv_count++;
	size_t len = keep_size(i);
	uint8_t expect[3000];

	h_fill(expect, len, 77, i);
	if (rift_msg_len(msg) != len ||
	    memcmp(rift_msg_data(msg), expect, len) != 0)
		k->s.bad++;
	if (i < KEEP_FIRST) {
		k->at[i] = rift_msg_data(msg);
		k->kept[i] = rift_msg_retain(msg);
	}
}

static const rift_conn_callbacks keep_callbacks = { .on_event = reply_event,
						    .on_recv = keep_recv };

/*
 * From rdma.zero_copy_threshold up, a retained message keeps the receive
 * buffer it arrived in and a fresh block is posted in its place: its data
 * stays where it was delivered, intact while the ring wraps over it more
 * than once; below the threshold it is copied.
 */
TEST_TIMEOUT(retained_messages_keep_their_receive_buffer_from_the_threshold,
	     120)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct keep_side srv = { 0 };
	struct side cli = { 0 };
	rift_listener *l;
	rift_conn *c, *conns[2];
	rift_ctx_stats st;
	char url[128];
	uint64_t sent = 0, in_place = 0, above = 0;

	need_rdma();
	cfg.zero_copy_threshold = 1024;
	ctx = h_ctx(&cfg);
	snprintf(url, sizeof(url), "rdma://%s:0", rt_host());
	CHECK_EQ(rift_listen(ctx, url, &keep_callbacks, &srv, h_accept_side, &l),
		 0);
	c = h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	while (srv.s.recv_count < KEEP_N && !srv.s.disconnected) {
		while (sent < KEEP_N) {
			size_t len = keep_size(sent);
			uint8_t *buf = rift_buf_alloc(ctx, len);
			int rc;

			CHECK(buf != NULL);
			h_fill(buf, len, 77, sent);
			rc = rift_conn_send_buf(c, buf, len);
			if (rc == RIFT_EAGAIN) {
				rift_buf_free(ctx, buf);
				break;
			}
			CHECK_EQ(rc, 0);
			sent++;
		}
		rift_ctx_run(ctx, 1);
	}
	CHECK_EQ(srv.s.recv_count, KEEP_N);
	CHECK_EQ(srv.s.bad, 0);
	for (uint64_t i = 0; i < KEEP_FIRST; i++) {
		size_t len = keep_size(i);
		uint8_t expect[3000];

		CHECK(srv.kept[i] != NULL);
		h_fill(expect, len, 77, i);
		CHECK_EQ(rift_msg_len(srv.kept[i]), len);
		CHECK(memcmp(rift_msg_data(srv.kept[i]), expect, len) == 0);
		if (len >= cfg.zero_copy_threshold) {
			above++;
			in_place += rift_msg_data(srv.kept[i]) == srv.at[i];
		} else {
			CHECK(rift_msg_data(srv.kept[i]) != srv.at[i]);
		}
		rift_msg_release(srv.kept[i]);
	}
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	printf("retained in place: %llu of %llu above the threshold\n",
	       (unsigned long long)in_place, (unsigned long long)above);
	/* Each arrived alone in its buffer, or shared it with one below
	 * the threshold: kept in place either way. */
	CHECK_EQ(in_place, above);
	CHECK_EQ(st.msgs_retained_in_place, above);
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/* ---- rendezvous: large messages by RDMA READ ---- */

/* A receiver that checks every message of the sender's stream: size and
 * bytes, order, and whether a large one was delivered in place (from
 * registered pool memory, not a copy). */
struct big_side {
	struct side s; /* first: the harness's on_event and h_accept_side use it */
	rift_ctx *ctx;
	uint64_t seed;
	size_t (*size_of)(uint64_t i);
	uint64_t large;         /* received of rndv_threshold and up */
	uint64_t in_place;      /* of those, delivered from registered memory */
	uint64_t retain_index;  /* message to retain and check later (0: none) */
	rift_msg *kept;
	bool kept_in_place;     /* its data stayed where it was delivered */
	/* called from on_recv after each message: the moment a receiver is
	 * sure to have READs of later messages in flight (the loop may
	 * fetch and deliver a whole message within one round) */
	void (*on_each)(struct big_side *b);
};

static void big_recv(rift_conn *conn, rift_msg *msg)
{
	struct big_side *b = rift_conn_user(conn);
	uint64_t i = b->s.recv_count;
	size_t want = b->size_of(i), len = rift_msg_len(msg);
	const uint8_t *data = rift_msg_data(msg);
	uint8_t *expect = malloc(want ? want : 1);

	h_fill(expect, want, b->seed, i);
	if (len != want || memcmp(expect, data, len) != 0 ||
	    rift_msg_seq(msg) != i + 1)
		b->s.bad++;
	free(expect);
	if (len >= b->ctx->cfg.rndv_threshold) {
		b->large++;
		if (rift__pool_block_size(rift__ctx_pool(b->ctx), data) >= len)
			b->in_place++;
	}
	if (b->retain_index && i == b->retain_index) {
		b->kept = rift_msg_retain(msg);
		b->kept_in_place = b->kept && rift_msg_data(b->kept) == data;
	}
	b->s.recv_count++;
	b->s.recv_bytes += len;
	if (b->on_each)
		b->on_each(b);
}

static void big_event(rift_conn *conn, const rift_event *ev)
{
	h_callbacks.on_event(conn, ev);
}

static const rift_conn_callbacks big_callbacks = { .on_event = big_event,
						   .on_recv = big_recv };

/* Send message i of the stream: rift_conn_send (copied into registered
 * memory) for even i, a rift_buf_alloc buffer (no copy) for odd i. */
/* Message i of the stream by rift_conn_send (a copy). */
static int copied_send(rift_conn *c, uint64_t seed, uint64_t i, size_t len)
{
	uint8_t *buf = malloc(len ? len : 1);
	int rc;

	h_fill(buf, len, seed, i);
	rc = rift_conn_send(c, buf, len);
	free(buf);
	return rc;
}

static int big_send(rift_conn *c, uint64_t seed, uint64_t i, size_t len)
{
	rift_ctx *ctx = rift_conn_ctx(c);
	uint8_t *buf;
	int rc;

	if (i % 2 == 0)
		return copied_send(c, seed, i, len);
	buf = rift_buf_alloc(ctx, len);
	if (!buf)
		return RIFT_ENOMEM;
	h_fill(buf, len, seed, i);
	rc = rift_conn_send_buf(c, buf, len);
	if (rc)
		rift_buf_free(ctx, buf);
	return rc;
}

/* Large ones (256 KiB .. 4 MiB, one a byte past a 2 MiB block) between
 * small ones, empty ones and one just below the threshold. */
static size_t mixed_size(uint64_t i)
{
	static const size_t sizes[] = { 256u << 10, 1, 4u << 20, 5000, 0,
					(64u << 10) - 1, 100, (2u << 20) + 1,
					64u << 10, 3u << 20, 70000, 17 };

	return sizes[i % RIFT_ARRAY_SIZE(sizes)];
}

/* The first test's stream: mixed, and a 64 MiB message in the middle. */
static size_t with_64m(uint64_t i)
{
	return i == 13 ? 64u << 20 : mixed_size(i);
}

static size_t six_mib(uint64_t i)
{
	(void)i;
	return 6u << 20;
}

static bool is_large(size_t len)
{
	return len >= (64u << 10);
}

/* Listener and client for a rendezvous test; srv receives. */
static rift_conn *big_pair(rift_ctx *ctx, const char *scheme,
			   struct big_side *srv, struct side *cli,
			   rift_listener **l)
{
	rift_conn *c = NULL;
	char url[128];
	void *warm[2];

	srv->ctx = ctx;
	snprintf(url, sizeof(url), "%s://%s:0", scheme, rt_host());
	CHECK_EQ(rift_listen(ctx, url, &big_callbacks, srv, h_accept_side, l), 0);
	snprintf(url, sizeof(url), "%s://%s:%d", scheme, rt_host(),
		 rift_listener_port(*l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, cli, &c), 0);
	cli->conn = c;
	h_connected(ctx, cli);
	CHECK(h_wait(ctx, &srv->s.connected, 5000));
	/* A message from rndv_threshold up goes by RDMA READ from a block
	 * of the pool; rift_conn_send does not wait for the pool to register
	 * one (it streams the message meanwhile), rift_buf_alloc does.  These
	 * tests count READs: the pool holds a region of each class first,
	 * and two large buffers of 4 MiB in its cache (the copied sends'
	 * largest, and the READ into which the peer takes it). */
	for (int k = 0; k < RIFT_BLOCK_CLASSES; k++) {
		size_t len = ctx->cfg.block_size[k];

		if (len >= ctx->cfg.rndv_threshold)
			rift_buf_free(ctx, rift_buf_alloc(ctx, len));
	}
	warm[0] = rift_buf_alloc(ctx, 4u << 20);
	warm[1] = rift_buf_alloc(ctx, 4u << 20);
	rift_buf_free(ctx, warm[0]);
	rift_buf_free(ctx, warm[1]);
	return c;
}

/* Send n messages of the stream (seed 21), keeping the window full. */
static void big_stream(rift_ctx *ctx, rift_conn *c, struct big_side *srv,
		       uint64_t n, int timeout_s)
{
	uint64_t sent = 0, end = h_now_us() + (uint64_t)timeout_s * 1000000u;

	while (srv->s.recv_count < n && h_now_us() < end &&
	       !srv->s.disconnected) {
		while (sent < n) {
			int rc = big_send(c, 21, sent, srv->size_of(sent));

			if (rc == RIFT_EAGAIN)
				break;
			CHECK_EQ(rc, 0);
			sent++;
		}
		rift_ctx_run(ctx, 1);
	}
	if (srv->s.disconnected)
		FAIL("session died: %s", srv->s.last_message);
	if (srv->s.recv_count < n)
		FAIL("%llu of %llu messages after %d s",
		     (unsigned long long)srv->s.recv_count,
		     (unsigned long long)n, timeout_s);
}

/*
 * Large messages (256 KiB to 64 MiB) interleaved with small ones arrive
 * whole, in order, once; each large one went by RDMA READ (the counters)
 * and was delivered from registered memory (its data pointer is in the
 * pool); a retained one stays valid after its callback.
 */
TEST_TIMEOUT(large_messages_go_by_rdma_read_and_arrive_in_place, 200)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct big_side srv = { .seed = 21, .size_of = with_64m,
				.retain_index = 2 };
	struct side cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	rift_ctx_stats st;
	uint64_t n = 36, large = 0, large_bytes = 0;
	uint8_t *expect;

	need_rdma();
	/* Both ends share this thread: checking 64 MiB in on_recv stalls
	 * the loop for seconds under TCG, which must not pass for a dead
	 * peer (a re-attach would replay, and the counts would differ). */
	cfg.keepalive_timeout_ms = 60000;
	cfg.keepalive_interval_ms = 20000;
	ctx = h_ctx(&cfg);
	c = big_pair(ctx, "rdma", &srv, &cli, &l);
	big_stream(ctx, c, &srv, n, 150);
	for (uint64_t i = 0; i < n; i++)
		if (is_large(with_64m(i))) {
			large++;
			large_bytes += with_64m(i);
		}
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	printf("large %llu (in place %llu), path changes %d, rndv sends %llu "
	       "(streamed %llu) recvs %llu, READ %llu bytes\n",
	       (unsigned long long)srv.large, (unsigned long long)srv.in_place,
	       cli.path_changed,
	       (unsigned long long)st.rndv_sends,
	       (unsigned long long)st.rndv_streamed,
	       (unsigned long long)st.rndv_recvs,
	       (unsigned long long)st.rndv_read_bytes);
	CHECK_EQ(srv.s.recv_count, n);
	CHECK_EQ(srv.s.bad, 0);
	CHECK_EQ(srv.large, large);
	/* A copied 4 MiB send that found no cached buffer free (both in
	 * use by READs in flight, or taken by a 3 MiB one) was streamed,
	 * and counted as such: every other large one went by READ. */
	CHECK_EQ(st.rndv_sends + st.rndv_streamed, large);
	CHECK(st.rndv_streamed <= large / 4);
	CHECK_EQ(srv.in_place, st.rndv_sends);
	CHECK_EQ(st.rndv_recvs, st.rndv_sends);
	CHECK_EQ(st.rndv_read_bytes, large_bytes - st.rndv_streamed * (4u << 20));
	CHECK_EQ(st.rndv_refused, 0);
	/* The retained 4 MiB message outlived its callback intact, where
	 * it was delivered: its block was handed over, not copied. */
	CHECK(srv.kept != NULL);
	CHECK(srv.kept_in_place);
	CHECK_EQ(st.msgs_retained_in_place, 1);
	CHECK_EQ(rift_msg_len(srv.kept), 4u << 20);
	expect = malloc(4u << 20);
	h_fill(expect, 4u << 20, 21, 2);
	CHECK(memcmp(rift_msg_data(srv.kept), expect, 4u << 20) == 0);
	free(expect);
	rift_msg_release(srv.kept);
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * Issue 15, item 3: no registration on the loop.  A copied message above
 * the largest block class, with no large buffer of its size cached, is
 * streamed (counted in rndv_streamed) while the pool's thread registers
 * one; once that is done the next such message goes by READ from it, and
 * the receiver's destination for it is registered by the pool's thread
 * too (the descriptor waits).  Before, rift_conn_send registered its own
 * 6 MiB buffer on the loop thread, and so did the receiver for the READ.
 */
TEST_TIMEOUT(copied_large_send_streams_until_the_pool_registers_its_buffer,
	     120)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct big_side srv = { .seed = 21, .size_of = six_mib };
	struct side cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	struct rift__pool_usage u;
	rift_ctx_stats st;
	uint64_t before, regs, end;

	need_rdma();
	c = big_pair(ctx, "rdma", &srv, &cli, &l);
	rift__pool_usage(rift__ctx_pool(ctx), &u);
	before = u.large_bytes;
	regs = u.caller_regs;
	CHECK_EQ(copied_send(c, 21, 0, six_mib(0)), 0);
	end = h_now_us() + 30000000u;
	while (srv.s.recv_count < 1 && h_now_us() < end)
		rift_ctx_run(ctx, 10);
	CHECK_EQ(srv.s.recv_count, 1);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.rndv_streamed, 1);
	CHECK_EQ(st.rndv_sends, 0);
	/* Meanwhile the pool's thread registers 6 MiB into its cache
	 * (seconds under emulation). */
	do {
		rift_ctx_run(ctx, 10);
		rift__pool_usage(rift__ctx_pool(ctx), &u);
	} while (u.large_bytes < before + (6u << 20) && h_now_us() < end);
	CHECK(u.large_bytes >= before + (6u << 20));
	CHECK_EQ(copied_send(c, 21, 1, six_mib(1)), 0);
	while (srv.s.recv_count < 2 && h_now_us() < end)
		rift_ctx_run(ctx, 10);
	CHECK_EQ(srv.s.recv_count, 2);
	CHECK_EQ(srv.s.bad, 0);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	printf("streamed %llu, by READ %llu\n",
	       (unsigned long long)st.rndv_streamed,
	       (unsigned long long)st.rndv_sends);
	CHECK_EQ(st.rndv_streamed, 1);
	CHECK_EQ(st.rndv_sends, 1);
	CHECK_EQ(st.rndv_recvs, 1);
	/* Neither side's loop registered anything: the copy's buffer and
	 * the READ's destination were the pool thread's work. */
	rift__pool_usage(rift__ctx_pool(ctx), &u);
	CHECK_EQ(u.caller_regs, regs);
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/* ---- registered buffers: payload at the block start, header apart ---- */

static uint64_t blocks_in_use(rift_ctx *ctx, int cls)
{
	struct rift__pool_usage u;

	rift__pool_usage(rift__ctx_pool(ctx), &u);
	return u.blocks_in_use[cls];
}

/*
 * rift_buf_alloc(len) takes a block of the smallest class that holds len
 * bytes, header not included: 8 KiB in an 8 KiB block, 64 KiB in a 64 KiB
 * one (a header inside the block would push both one class up, 64 KiB
 * into 256 KiB).  The whole block is payload.  The pool exists wherever
 * rift_buf_alloc runs (with or without a device), so this runs on every
 * transport.
 */
TEST_T(registered_buffers_take_a_block_of_their_own_size)
{
	static const struct {
		size_t len;
		int cls;
		size_t block;
	} cases[] = {
		{ 1, 0, 8u << 10 },       { 8u << 10, 0, 8u << 10 },
		{ (8u << 10) + 1, 1, 64u << 10 }, { 64u << 10, 1, 64u << 10 },
		{ (64u << 10) + 1, 2, 256u << 10 }, { 256u << 10, 2, 256u << 10 },
		{ (256u << 10) + 1, 3, 1u << 20 }, { 1u << 20, 3, 1u << 20 },
		{ (1u << 20) + 1, 4, 2u << 20 }, { 2u << 20, 4, 2u << 20 },
	};
	rift_ctx *ctx = h_ctx(NULL);
	struct rift__pool *pool = rift__ctx_pool(ctx);
	uint8_t *buf;

	CHECK(pool != NULL);
	for (size_t k = 0; k < RIFT_ARRAY_SIZE(cases); k++) {
		size_t len = cases[k].len;
		uint64_t before[RIFT_BLOCK_CLASSES];

		for (int c = 0; c < RIFT_BLOCK_CLASSES; c++)
			before[c] = blocks_in_use(ctx, c);
		buf = rift_buf_alloc(ctx, len);
		CHECK(buf != NULL);
		CHECK_EQ(rift__pool_block_size(pool, buf), cases[k].block);
		for (int c = 0; c < RIFT_BLOCK_CLASSES; c++)
			CHECK_EQ(blocks_in_use(ctx, c),
				 before[c] + (c == cases[k].cls));
		memset(buf, 0x3c, len); /* all of it is the caller's */
		/* Not the buffer's start: ignored, the block stays out. */
		rift_buf_free(ctx, buf + 1);
		rift_buf_free(ctx, buf + cases[k].block / 2);
		CHECK_EQ(blocks_in_use(ctx, cases[k].cls),
			 before[cases[k].cls] + 1);
		rift_buf_free(ctx, buf);
		CHECK_EQ(blocks_in_use(ctx, cases[k].cls), before[cases[k].cls]);
	}
	/* Beyond the largest class (and above rndv_threshold): a large
	 * registered buffer of whole 2 MiB steps, no block. */
	buf = rift_buf_alloc(ctx, (2u << 20) + 1);
	CHECK(buf != NULL);
	CHECK_EQ(rift__pool_block_size(pool, buf), 4u << 20);
	CHECK_EQ(blocks_in_use(ctx, RIFT_BLOCK_CLASSES - 1), 0);
	memset(buf, 0x3c, (2u << 20) + 1);
	rift_buf_free(ctx, buf + 4096);
	CHECK_EQ(rift__pool_block_size(pool, buf), 4u << 20); /* still out */
	rift_buf_free(ctx, buf);
	CHECK_EQ(rift__pool_block_size(pool, buf), 0); /* back in the cache */
	h_teardown(ctx, NULL, NULL, 0);
}

static size_t size_64k(uint64_t i)
{
	RIFT_UNUSED(i);
	return 64u << 10;
}

/*
 * rift_conn_send_buf takes only the start of a rift_buf_alloc buffer: a
 * pointer into the middle of one, or into malloc'd memory, is refused
 * with RIFT_EINVAL and a message, and the buffer itself still goes.  Then
 * a stream of 64 KiB rift_buf_alloc buffers arrives intact and in order,
 * sent from 64 KiB blocks (no 2 MiB block is ever taken) and, over
 * verbs, each by rendezvous from its block.
 */
TEST_T(registered_buffers_refuse_pointers_that_do_not_start_one)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct big_side srv = { .seed = 41, .size_of = size_64k };
	struct side cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	rift_ctx_stats st;
	uint64_t n = 200, sent = 0, end;
	uint8_t *buf, *heap;
	bool rdma = strcmp(rt_transport(), "rdma") == 0;

	c = big_pair(ctx, rt_transport(), &srv, &cli, &l);
	buf = rift_buf_alloc(ctx, 64u << 10);
	CHECK(buf != NULL);
	CHECK_EQ(rift_conn_send_buf(c, buf + 4096, 1000), RIFT_EINVAL);
	CHECK_CONTAINS(rift_conn_last_error(c), "not the start");
	CHECK_EQ(rift_conn_send_buf(c, buf + 1, 1000), RIFT_EINVAL);
	CHECK_EQ(rift_conn_send_buf(c, buf + (64u << 10) - 1, 1), RIFT_EINVAL);
	/* malloc'd memory: rift looks in front of the pointer for the
	 * header a malloc'd rift buffer has; the middle of a zeroed block
	 * keeps that look inside the allocation (ASan builds too). */
	heap = calloc(1, 8192);
	CHECK(heap != NULL);
	CHECK_EQ(rift_conn_send_buf(c, heap + 4096, 100), RIFT_EINVAL);
#if !defined(__SANITIZE_ADDRESS__)
	CHECK_EQ(rift_conn_send_buf(c, heap, 100), RIFT_EINVAL);
#endif
	free(heap);
	end = h_now_us() + 120000000u;
	while (srv.s.recv_count < n && h_now_us() < end &&
	       !srv.s.disconnected) {
		while (sent < n) {
			int rc;

			if (!buf) {
				buf = rift_buf_alloc(ctx, 64u << 10);
				CHECK(buf != NULL);
			}
			h_fill(buf, 64u << 10, 41, sent);
			rc = rift_conn_send_buf(c, buf, 64u << 10);
			if (rc == RIFT_EAGAIN)
				break; /* still ours: again after progress */
			CHECK_EQ(rc, 0);
			buf = NULL;
			sent++;
		}
		CHECK_EQ(blocks_in_use(ctx, RIFT_BLOCK_CLASSES - 1), 0);
		rift_ctx_run(ctx, 1);
	}
	if (buf)
		rift_buf_free(ctx, buf);
	if (srv.s.disconnected)
		FAIL("session died: %s", srv.s.last_message);
	CHECK_EQ(srv.s.recv_count, n);
	CHECK_EQ(srv.s.bad, 0);
	CHECK_EQ(blocks_in_use(ctx, RIFT_BLOCK_CLASSES - 1), 0);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	printf("64 KiB messages: %llu, by rendezvous %llu\n",
	       (unsigned long long)n, (unsigned long long)st.rndv_sends);
	if (rdma) {
		CHECK_EQ(st.rndv_sends, n);
		CHECK_EQ(srv.in_place, n);
	}
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/* A client whose rendezvous descriptor is hostile (fault point on its
 * side): the server refuses it, counts it and ends the session with
 * RIFT_EPROTO, having delivered nothing of it. */
static void hostile_rndv(rift__fault_point fault, const char *says,
			 bool read_expected)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct big_side srv = { .seed = 21, .size_of = mixed_size };
	struct side cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	rift_ctx_stats st;

	c = big_pair(ctx, "rdma", &srv, &cli, &l);
	/* Message 0 is 256 KiB: its descriptor lies. */
	rift__fault_arm(fault, 1, 1);
	CHECK_EQ(big_send(c, 21, 0, mixed_size(0)), 0);
	CHECK_EQ(big_send(c, 21, 1, mixed_size(1)), 0);
	CHECK(h_wait(ctx, &srv.s.disconnected, 20000));
	CHECK_EQ(rift__fault_fired(fault), 1);
	rift__fault_clear();
	printf("server: %s: %s\n", rift_err_name(srv.s.last_status),
	       srv.s.last_message);
	CHECK_EQ(srv.s.last_status, RIFT_EPROTO);
	CHECK_CONTAINS(srv.s.last_message, says);
	CHECK_EQ(srv.s.recv_count, 0); /* nothing behind it either */
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.rndv_refused, 1);
	CHECK(st.protocol_errors >= 1);
	CHECK_EQ(st.rndv_recvs, 0);
	if (!read_expected)
		CHECK_EQ(st.rndv_read_bytes, 0);
	/* The client loses its session too (the server forgot it). */
	CHECK(h_wait(ctx, &cli.disconnected, 20000));
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

TEST_TIMEOUT(rendezvous_with_a_buffer_the_peer_does_not_own_is_refused, 120)
{
	need_rdma();
	hostile_rndv(RIFT_FAULT_RNDV_BAD_RKEY, "does not own", true);
}

/*
 * The peer READs a rendezvous message through a memory window bound over
 * that message alone, never through the key of the pool region holding
 * it: that key would let it read every buffer of the region, other
 * connections' too.  Regions are registered without remote access, so a
 * READ through a region's key (the fault point advertises it, as rift did
 * before windows) fails at the sender's device, and the session ends with
 * RIFT_EPROTO.
 */
TEST_TIMEOUT(rendezvous_through_the_pool_region_key_fails, 120)
{
	need_rdma();
	hostile_rndv(RIFT_FAULT_RNDV_REGION_KEY, "remote access error", true);
}

TEST_TIMEOUT(rendezvous_length_mismatch_is_refused_before_any_read, 120)
{
	need_rdma();
	hostile_rndv(RIFT_FAULT_RNDV_BAD_LEN, "does not own", false);
}

/*
 * Issue 14, item 2: a rendezvous descriptor is checked before any memory
 * is taken for it.  Out of sequence (a fault point skips a number): refused
 * at once, nothing READ.  Before, the receiver took a buffer, READ the
 * message, and only the session saw the gap.
 */
TEST_TIMEOUT(rendezvous_out_of_sequence_is_refused_before_any_read, 120)
{
	need_rdma();
	hostile_rndv(RIFT_FAULT_RNDV_BAD_SEQ, "descriptor of message 2 where "
					      "1 was due", false);
}

/*
 * ... and beyond the window: a sender that ignores the window (a fault
 * point) puts four 256 KiB descriptors out at once where the window is
 * 64 KiB (one message may exceed it alone, two may not).  The receiver
 * refuses the second before it takes memory for it.  Before, it took a
 * buffer for each: a peer could pin RNDV_MAX x max_msg_size per path.
 */
TEST_TIMEOUT(rendezvous_beyond_the_window_is_refused_before_any_memory, 120)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct big_side srv = { .seed = 21, .size_of = mixed_size };
	struct side cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	rift_ctx_stats st;

	need_rdma();
	cfg.send_window = 64 << 10;
	ctx = h_ctx(&cfg);
	c = big_pair(ctx, "rdma", &srv, &cli, &l);
	rift__fault_arm(RIFT_FAULT_WINDOW_IGNORED, 1, 1000);
	for (uint64_t i = 0; i < 4; i++)
		CHECK_EQ(big_send(c, 21, i * 12, 256u << 10), 0);
	CHECK(rift__fault_fired(RIFT_FAULT_WINDOW_IGNORED) >= 3);
	CHECK(h_wait(ctx, &srv.s.disconnected, 20000));
	rift__fault_clear();
	printf("server: %s: %s\n", rift_err_name(srv.s.last_status),
	       srv.s.last_message);
	CHECK_EQ(srv.s.last_status, RIFT_EPROTO);
	CHECK_CONTAINS(srv.s.last_message, "descriptor beyond the window");
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.rndv_refused, 1);
	CHECK(h_wait(ctx, &cli.disconnected, 20000));
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/* Cut the receiver's path (rdma_disconnect) while READs are in flight,
 * a few times: from on_recv, with more messages than the one delivered
 * just now being fetched. */
static int cuts_done;
static void cut_mid_read(struct big_side *srv)
{
	if (cuts_done < 3 && srv->s.conn &&
	    rift__conn_rdma_figure(srv->s.conn, RIFT__RDMA_RNDV_INFLIGHT) > 1 &&
	    srv->s.recv_count > (uint64_t)cuts_done * 12 &&
	    rift__conn_cut(srv->s.conn) == 0)
		cuts_done++;
}

/*
 * The path breaks while the receiver is READing: the session re-attaches
 * on a new QP, the sender replays what was not acknowledged (its buffers
 * were kept until then), and nothing is lost or doubled.
 */
TEST_TIMEOUT(path_cut_mid_rendezvous_loses_and_doubles_nothing, 200)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct big_side srv = { .seed = 21, .size_of = mixed_size,
				.on_each = cut_mid_read };
	struct side cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	rift_conn_stats st;
	rift_ctx_stats cst;
	uint64_t n = 60;

	need_rdma();
	cuts_done = 0;
	c = big_pair(ctx, "rdma", &srv, &cli, &l);
	big_stream(ctx, c, &srv, n, 150);
	rift_conn_stats_init(&st);
	rift_conn_stats_get(c, &st);
	printf("cuts %d, path_changed cli %d srv %d, replayed %llu\n",
	       cuts_done, cli.path_changed, srv.s.path_changed,
	       (unsigned long long)st.msgs_replayed);
	CHECK(cuts_done >= 1);
	CHECK(cli.path_changed >= 1);
	CHECK_EQ(srv.s.recv_count, n);
	CHECK_EQ(srv.s.bad, 0);
	/* Every large one by READ, in place, but those of the copied sends
	 * that found no registered buffer free (streamed, counted). */
	rift_ctx_stats_init(&cst);
	rift_ctx_stats_get(ctx, &cst);
	CHECK(cst.rndv_streamed <= srv.large / 4);
	CHECK_EQ(srv.in_place, srv.large - cst.rndv_streamed);
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/* The sender, in a process of its own (a reader in the same process
 * posts no READ while the sender's teardown runs): sends the stream and
 * fails its own path, as on keepalive silence, every 100 ms while
 * messages are unacknowledged, 20 times (before the fix about one cut
 * in twelve ended the session); each teardown stalls after
 * it freed its windows (fault point).  Then it keeps its loop running,
 * and tells (on report) the longest round its loop took. */
static void teardown_sender(int port, uint64_t n, int report)
{
	uint64_t longest = 0;
	bool told = false;
	rift_ctx *ctx = h_ctx(NULL);
	struct side cli = { 0 };
	rift_conn *c = NULL;
	uint64_t sent = 0, next_fail = 0;
	int fails = 0;
	char url[128];

	snprintf(url, sizeof(url), "rdma://%s:%d", rt_host(), port);
	if (rift_connect(ctx, url, &h_callbacks, &cli, &c))
		_exit(3);
	cli.conn = c;
	for (int k = 0; k < RIFT_BLOCK_CLASSES; k++)
		if (ctx->cfg.block_size[k] >= ctx->cfg.rndv_threshold)
			rift_buf_free(ctx, rift_buf_alloc(
						   ctx, ctx->cfg.block_size[k]));
	rift__fault_arm(RIFT_FAULT_TEARDOWN_SLOW, 1, 1000000);
	for (;;) {
		rift_conn_stats st;

		while (cli.connected && sent < n &&
		       big_send(c, 21, sent, mixed_size(sent)) == 0)
			sent++;
		rift_conn_stats_init(&st);
		rift_conn_stats_get(c, &st);
		if (fails < 20 && cli.connected && h_now_us() >= next_fail &&
		    st.unacked_msgs > 0 && rift__conn_fail(c) == 0) {
			fails++;
			next_fail = h_now_us() + 100000;
		}
		{
			uint64_t t0 = h_now_us(), took;

			rift_ctx_run(ctx, 1);
			took = h_now_us() - t0;
			if (took > longest)
				longest = took;
		}
		if (!told && fails == 20 && sent == n && !st.unacked_msgs) {
			told = write(report, &longest, sizeof(longest)) ==
			       (ssize_t)sizeof(longest);
		}
	}
}

/*
 * Issue 14, item 3: a benign teardown never looks like an attack.  A path
 * torn down by the side whose buffers the peer is READing must stop the
 * QP before it frees the windows over them: a READ that reaches a freed
 * window gets a remote access error, which the reader takes for a lie
 * (the peer advertised a buffer it does not own) and ends the session.
 * And the teardown never holds the sender's loop: its windows, some under
 * READ, went on the loop thread, and rxe (6.1) waits up to 800 ms for a
 * window a READ response holds (a session of the lab's soak died of a
 * 26 s stall); the reaper deallocates them now.
 */
TEST_TIMEOUT(sender_teardown_mid_rendezvous_never_looks_like_an_attack, 200)
{
	int rep[2];
	uint64_t longest = 0;
	struct big_side srv = { .seed = 21, .size_of = mixed_size };
	rift_listener *l = NULL;
	rift_conn *conns[1];
	rift_ctx_stats cs;
	rift_ctx *ctx;
	uint64_t n = 240, end;
	int pipefd[2], port, status;
	pid_t pid;
	char url[128];

	need_rdma();
	CHECK_EQ(pipe(pipefd), 0);
	CHECK_EQ(pipe(rep), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (read(pipefd[0], &port, sizeof(port)) != sizeof(port))
			_exit(3);
		teardown_sender(port, n, rep[1]);
	}
	ctx = h_ctx(NULL);
	srv.ctx = ctx;
	snprintf(url, sizeof(url), "rdma://%s:0", rt_host());
	CHECK_EQ(rift_listen(ctx, url, &big_callbacks, &srv, h_accept_side,
			     &l), 0);
	port = rift_listener_port(l);
	CHECK_EQ(write(pipefd[1], &port, sizeof(port)), (ssize_t)sizeof(port));
	end = h_now_us() + 150 * 1000000u;
	while (srv.s.recv_count < n && !srv.s.disconnected &&
	       h_now_us() < end)
		rift_ctx_run(ctx, 10);
	/* The sender's word on its loop, once its queue is acknowledged. */
	for (uint64_t until = h_now_us() + 10000000u;
	     h_now_us() < until && !longest;) {
		struct pollfd pf = { .fd = rep[0], .events = POLLIN };

		rift_ctx_run(ctx, 10);
		if (poll(&pf, 1, 0) == 1 &&
		    read(rep[0], &longest, sizeof(longest)) !=
			    (ssize_t)sizeof(longest))
			longest = 0;
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	rift_ctx_stats_init(&cs);
	rift_ctx_stats_get(ctx, &cs);
	printf("received %llu of %llu, large %llu, path changes %d, "
	       "protocol errors %llu, sender's longest loop round %.1f ms%s%s\n",
	       (unsigned long long)srv.s.recv_count, (unsigned long long)n,
	       (unsigned long long)srv.large, srv.s.path_changed,
	       (unsigned long long)cs.protocol_errors, longest / 1e3,
	       srv.s.disconnected ? ", died: " : "",
	       srv.s.disconnected ? srv.s.last_message : "");
	CHECK(!srv.s.disconnected);
	CHECK_EQ(cs.protocol_errors, 0);
	CHECK_EQ(srv.s.recv_count, n);
	CHECK_EQ(srv.s.bad, 0);
	CHECK(srv.s.path_changed >= 10);
	/* Teardown on the loop is a few ms; 800 ms a window was not. */
	CHECK(longest > 0);
	CHECK(longest < 700000u);
	close(pipefd[0]);
	close(pipefd[1]);
	close(rep[0]);
	close(rep[1]);
	conns[0] = srv.s.conn;
	h_teardown(ctx, l, conns, srv.s.conn ? 1 : 0);
}

/* Every RDMA path fails from now on (fault point): an auto:// session
 * moves to TCP.  From on_recv, with READs of later messages in flight. */
static int fallback_armed;
static void fail_rdma_mid_read(struct big_side *srv)
{
	if (!fallback_armed && srv->s.conn &&
	    rift__conn_rdma_figure(srv->s.conn, RIFT__RDMA_RNDV_INFLIGHT) > 1 && srv->s.recv_count > 6) {
		rift__fault_arm(RIFT_FAULT_RDMA_SEND, 1, 1000000);
		fallback_armed = 1;
	}
}

/*
 * auto://: the RDMA path dies while a rendezvous is being READ and no
 * RDMA path comes back, so the session falls back to TCP; the messages
 * that were in flight by rendezvous are replayed there as plain streamed
 * frames, once each, in order.
 */
TEST_TIMEOUT(rendezvous_in_flight_is_replayed_over_tcp_after_fallback, 200)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct big_side srv = { .seed = 21, .size_of = mixed_size,
				.on_each = fail_rdma_mid_read };
	struct side cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	rift_ctx_stats st;
	uint64_t n = 48;

	need_rdma();
	fallback_armed = 0;
	c = big_pair(ctx, "auto", &srv, &cli, &l);
	CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_RDMA);
	big_stream(ctx, c, &srv, n, 150);
	rift__fault_clear();
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	printf("transport %s, fallback %s, rndv recvs %llu, large %llu\n",
	       rift_conn_transport(c) == RIFT_TRANSPORT_TCP ? "tcp" : "rdma",
	       rift_fallback_reason_str(rift_conn_fallback_reason(c)),
	       (unsigned long long)st.rndv_recvs,
	       (unsigned long long)srv.large);
	CHECK(fallback_armed);
	CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_TCP);
	CHECK_EQ(rift_conn_fallback_reason(c), RIFT_FALLBACK_PATH_LOST);
	CHECK_EQ(srv.s.recv_count, n);
	CHECK_EQ(srv.s.bad, 0);
	/* Some large ones went by READ, the rest streamed over TCP. */
	CHECK(st.rndv_recvs > 0);
	CHECK(st.rndv_recvs < srv.large);
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/* pair_open for the big stream: srv receives it, connected too. */
static rift_conn *big_pair2(rift_ctx *ctx, const char *scheme,
			    struct big_side *srv, struct side *cli,
			    rift_listener **l)
{
	rift_conn *c;

	srv->ctx = ctx;
	c = pair_open(ctx, scheme, &big_callbacks, srv, cli, l);
	CHECK(h_wait(ctx, &srv->s.connected, 10000));
	return c;
}

/*
 * Pair topology: the link under a rendezvous stream is cut for real (100%
 * loss) while READs are in flight; the session re-attaches over the other
 * link and every message arrives once, in order, intact.
 */
TEST_TIMEOUT(link_cut_mid_rendezvous_reattaches_over_the_other_port, 240)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct big_side srv = { .seed = 21, .size_of = mixed_size };
	struct side cli = { 0 };
	const char *a0 = getenv("RIFT_LAB_SERVER_ADDR0");
	rift_listener *l = NULL;
	rift_conn *c = NULL, *conns[2];
	uint64_t n = 48, sent = 0, end;
	char cmd[64];
	const char *link = NULL;

	need_rdma();
	cfg.keepalive_interval_ms = 100;
	cfg.keepalive_timeout_ms = 1500;
	/* The first rdma_cm connect to an address of a freshly booted guest
	 * sometimes takes over 2 s (its first CM exchange is lost and waits
	 * for rdma_cm's retransmission): seen once in 11 runs both at start
	 * and on the re-attach, which then outlasted a 5 s grace. */
	cfg.connect_timeout_ms = 6000;
	cfg.session_grace_ms = 20000;
	ctx = h_ctx(&cfg);
	c = big_pair2(ctx, "rdma", &srv, &cli, &l);
	end = h_now_us() + 200000000u;
	while (srv.s.recv_count < n && h_now_us() < end && !srv.s.disconnected &&
	       !cli.disconnected) {
		while (sent < n) {
			int rc = big_send(c, 21, sent, mixed_size(sent));

			if (rc == RIFT_EAGAIN)
				break;
			CHECK_EQ(rc, 0);
			sent++;
		}
		if (!link && srv.s.recv_count > 6 && srv.s.conn && c->path &&
		    rift__conn_rdma_figure(srv.s.conn, RIFT__RDMA_RNDV_INFLIGHT) > 0) {
			/* The link the session runs on now (the first address
			 * may have been refused at connect time). */
			link = strstr(c->path->peer, a0) ? "link0" : "link1";
			snprintf(cmd, sizeof(cmd), "lab-link loss %s", link);
			CHECK_EQ(system(cmd), 0);
		}
		rift_ctx_run(ctx, 1);
	}
	if (link) {
		snprintf(cmd, sizeof(cmd), "lab-link noloss %s", link);
		CHECK_EQ(system(cmd), 0);
		printf("cut %s; path_changed cli %d srv %d\n", link,
		       cli.path_changed, srv.s.path_changed);
	}
	if (cli.disconnected || srv.s.disconnected)
		FAIL("session died: %s / %s", cli.last_message,
		     srv.s.last_message);
	CHECK(link != NULL);
	CHECK_EQ(srv.s.recv_count, n);
	CHECK_EQ(srv.s.bad, 0);
	CHECK(cli.path_changed >= 1);
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/* lab-link ACTION on both of the client's links. */
static void both_links(const char *action)
{
	char cmd[64];

	for (int k = 0; k < 2; k++) {
		snprintf(cmd, sizeof(cmd), "lab-link %s link%d", action, k);
		CHECK_EQ(system(cmd), 0);
	}
}

/*
 * Pair topology, auto://: RDMA stops working on both links (RoCE v2
 * dropped, TCP passing) under a stream of mixed sizes, rendezvous ones
 * included; the session falls back to TCP and carries on.  RDMA works
 * again: the session tries it (connect.fallback_return_ms), joins a
 * standby over it, and moves back there (FAILBACK), its fallback
 * cleared on both sides.  Every message arrives once, in order, intact.
 */
TEST_TIMEOUT(auto_returns_to_rdma_once_it_works_again, 240)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct big_side srv = { .seed = 23, .size_of = mixed_size };
	struct side cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c = NULL, *conns[2];
	rift_ctx_stats st;
	uint64_t sent = 0, mark = 0, end, t_off = 0, t_tcp = 0, t_on = 0;
	uint64_t t_back = 0;
	rift_fallback_reason fell = RIFT_FALLBACK_NONE;
	int phase = 0;

	need_rdma();
	cfg.keepalive_interval_ms = 100;
	cfg.keepalive_timeout_ms = 1500;
	cfg.connect_timeout_ms = 6000;
	cfg.session_grace_ms = 30000;
	cfg.fallback_return_ms = 500;
	cfg.group_failback_delay_ms = 500;
	ctx = h_ctx(&cfg);
	c = big_pair2(ctx, "auto", &srv, &cli, &l);
	CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_RDMA);
	end = h_now_us() + 200000000u;
	while (h_now_us() < end && !srv.s.disconnected && !cli.disconnected &&
	       !(phase == 4 && srv.s.recv_count >= mark + 24)) {
		while (sent < srv.s.recv_count + 24) {
			int rc = big_send(c, 23, sent, mixed_size(sent));

			if (rc == RIFT_EAGAIN)
				break;
			CHECK_EQ(rc, 0);
			sent++;
		}
		if (phase == 0 && srv.s.recv_count >= 24) {
			both_links("roce-off");
			t_off = h_now_us();
			phase = 1;
		} else if (phase == 1 &&
			   rift_conn_transport(c) == RIFT_TRANSPORT_TCP) {
			t_tcp = h_now_us();
			fell = rift_conn_fallback_reason(c);
			mark = srv.s.recv_count;
			phase = 2;
		} else if (phase == 2 && srv.s.recv_count >= mark + 24) {
			both_links("roce-on");
			t_on = h_now_us();
			phase = 3;
		} else if (phase == 3 && cli.failback >= 1 &&
			   rift_conn_transport(c) == RIFT_TRANSPORT_RDMA) {
			t_back = h_now_us();
			mark = srv.s.recv_count;
			phase = 4;
		} else if ((phase == 1 || phase == 3) &&
			   h_now_us() - (phase == 1 ? t_off : t_on) >
				   30000000u) {
			break; /* never moved */
		}
		rift_ctx_run(ctx, 1);
	}
	if (phase == 1 || phase == 2)
		both_links("roce-on");
	/* The rest of what was sent. */
	while (srv.s.recv_count < sent && h_now_us() < end &&
	       !srv.s.disconnected && !cli.disconnected)
		rift_ctx_run(ctx, 1);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	printf("phase %d: on tcp %.2f s after roce-off (fell back: %s); back "
	       "on rdma %.2f s after roce-on; %llu messages (%llu large), "
	       "fallback returns %llu, path downs %d, failbacks %d\n",
	       phase, t_tcp ? (double)(t_tcp - t_off) / 1e6 : -1.0,
	       rift_fallback_reason_str(fell),
	       t_back ? (double)(t_back - t_on) / 1e6 : -1.0,
	       (unsigned long long)srv.s.recv_count,
	       (unsigned long long)srv.large,
	       (unsigned long long)st.fallback_returns, cli.path_down,
	       cli.failback);
	if (cli.disconnected || srv.s.disconnected)
		FAIL("session died: %s / %s", cli.last_message,
		     srv.s.last_message);
	CHECK_EQ(phase, 4);
	CHECK_EQ(fell, RIFT_FALLBACK_PATH_LOST);
	CHECK_EQ(srv.s.recv_count, sent);
	CHECK_EQ(srv.s.bad, 0);
	CHECK(srv.large > 0);
	CHECK_EQ(st.fallback_returns, 1);
	CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_RDMA);
	CHECK_EQ(rift_conn_fallback_reason(c), RIFT_FALLBACK_NONE);
	CHECK(srv.s.conn != NULL);
	CHECK_EQ(rift_conn_transport(srv.s.conn), RIFT_TRANSPORT_RDMA);
	CHECK_EQ(rift_conn_fallback_reason(srv.s.conn), RIFT_FALLBACK_NONE);
	/* The first FAILBACK is the return (a later one may move the
	 * session to an earlier address: the try went through the other). */
	CHECK_CONTAINS(cli.failback_message, "auto:// is on rdma again");
	conns[0] = c;
	conns[1] = srv.s.conn;
	h_teardown(ctx, l, conns, 2);
}

/* A thread that flaps a link: down for down_ms, up for up_ms, n times;
 * done is set after the last "up". */
struct flapper {
	const char *link;
	int n;
	unsigned down_ms, up_ms;
	atomic_int done, failed;
	/* The longest the link really stayed up between two flaps, us:
	 * up_ms and the time lab-link takes to put it down again (about a
	 * second in a loaded guest). */
	uint64_t max_up_us;
};

static void *flap_thread(void *arg)
{
	struct flapper *f = arg;
	char cmd[64];

	uint64_t up_at = 0;

	for (int k = 0; k < f->n; k++) {
		snprintf(cmd, sizeof(cmd), "lab-link down %s", f->link);
		if (system(cmd) != 0)
			atomic_store(&f->failed, 1);
		if (up_at && h_now_us() - up_at > f->max_up_us)
			f->max_up_us = h_now_us() - up_at;
		usleep(f->down_ms * 1000u);
		snprintf(cmd, sizeof(cmd), "lab-link up %s", f->link);
		if (system(cmd) != 0)
			atomic_store(&f->failed, 1);
		up_at = h_now_us();
		usleep(f->up_ms * 1000u);
	}
	atomic_store(&f->done, 1);
	return NULL;
}

/*
 * Pair topology: the data path's link flaps (down 300 ms, up 700 ms, six
 * times) under a stream.  The session fails over to its standby on the
 * other link once, and stays there while the link flaps: the standby
 * through the flapping link is set up at most once a second (no storm of
 * path setups), and the failback waits until that link has stayed up
 * failback_delay_ms.  Then it fails back, once.  Every message arrives
 * once and in order.
 */
TEST_TIMEOUT(a_flapping_link_neither_storms_nor_takes_the_data_back, 240)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { .verify = true, .seed = 9, .max_size = 1024 };
	struct side cli = { 0 };
	struct flapper f = { .n = 6, .down_ms = 300, .up_ms = 700 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	rift_ctx_stats st;
	uint64_t i = 0, t0, t_end = 0, end, setups0, setups = 0;
	int failbacks_flapping = -1;
	pthread_t tf;

	need_rdma();
	cfg.keepalive_interval_ms = 100;
	cfg.keepalive_timeout_ms = 1500;
	cfg.connect_timeout_ms = 6000;
	cfg.session_grace_ms = 20000;
	/* Longer than the link stays up between two flaps, lab-link's own
	 * time included (the flaps of a 6-flap run took 3.5 s each in a
	 * loaded guest, not 1 s: a delay of 1.5 s then failed back). */
	cfg.group_failback_delay_ms = 4000;
	ctx = h_ctx(&cfg);
	c = pair_session(ctx, &srv, &cli, &l);
	CHECK(h_wait(ctx, &srv.connected, 10000));
	/* Its standby joined first. */
	end = h_now_us() + 10000000u;
	while (!(c->n_standby && c->standby[0]->state == RIFT_PATH_STANDBY) &&
	       h_now_us() < end)
		rift_ctx_run(ctx, 5);
	CHECK(c->n_standby == 1);
	f.link = link_of(c);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	setups0 = st.connect_attempts;
	t0 = h_now_us();
	CHECK_EQ(pthread_create(&tf, NULL, flap_thread, &f), 0);
	end = t0 + 120000000u;
	while (h_now_us() < end && !cli.disconnected && !srv.disconnected) {
		if (h_send(c, 9, i, 1024) == 0)
			i++;
		rift_ctx_run(ctx, 1);
		if (!t_end && atomic_load(&f.done)) {
			t_end = h_now_us();
			rift_ctx_stats_get(ctx, &st);
			setups = st.connect_attempts - setups0;
			failbacks_flapping = cli.failback;
		}
		/* Once it stopped: the failback, and a little more. */
		if (t_end && cli.failback >= 1 && srv.recv_count >= i &&
		    h_now_us() > t_end + 500000u)
			break;
	}
	pthread_join(tf, NULL);
	while (srv.recv_count < i && h_now_us() < end && !cli.disconnected)
		rift_ctx_run(ctx, 1);
	printf("flapped %s %d times in %.1f s (up at most %.1f s at a "
	       "time): %llu path setups meanwhile, "
	       "path downs %d, failbacks while flapping %d, after %d (%.1f s "
	       "after the last flap); %llu messages\n",
	       f.link, f.n, t_end ? (t_end - t0) / 1e6 : -1.0,
	       f.max_up_us / 1e6,
	       (unsigned long long)setups, cli.path_down, failbacks_flapping,
	       cli.failback,
	       t_end ? (h_now_us() - t_end) / 1e6 : -1.0,
	       (unsigned long long)srv.recv_count);
	if (cli.disconnected || srv.disconnected)
		FAIL("session died: %s / %s", cli.last_message,
		     srv.last_message);
	CHECK_EQ(atomic_load(&f.failed), 0);
	CHECK(t_end != 0);
	/* One setup a second at most (plus the one at the failover). */
	CHECK(setups <= (t_end - t0) / 1000000u + 2);
	CHECK_EQ(failbacks_flapping, 0);
	CHECK_EQ(cli.failback, 1);
	CHECK(cli.path_down >= 1);
	CHECK_EQ(srv.recv_count, i);
	CHECK_EQ(srv.bad, 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * Kept last of the pair tests: after link0 comes back up, rdma_cm could
 * not connect over it for several seconds (seen in the lab), so a pair
 * test running right after it may find only link1.
 *
 * Pair topology: the client's netdev on link0 goes administratively down
 * while the connection is idle.  With traffic, rxe fails the next send at
 * once (local QP operation error); idle, only the device's
 * IBV_EVENT_PORT_ERR can tell before the keepalive (set long here) would.
 * The path on that port must fail at once, naming the event, and the
 * session carry on over link1 with nothing lost.
 */
TEST_TIMEOUT(port_down_fails_an_idle_path_at_once, 240)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { .verify = true, .seed = 5, .max_size = 256 };
	struct side cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	rift_conn_stats st;
	uint64_t n = 200, downed, end;
	const char *link;
	char cmd[64];

	need_rdma();
	cfg.keepalive_interval_ms = 20000;
	cfg.keepalive_timeout_ms = 60000;
	ctx = h_ctx(&cfg);
	c = pair_session(ctx, &srv, &cli, &l);
	for (uint64_t i = 0; i < n / 2; i++)
		CHECK_EQ(h_send(c, 5, i, 256), 0);
	CHECK(h_wait_u64(ctx, &srv.recv_count, n / 2, 20000));
	/* Idle: everything acknowledged, nothing in flight. */
	rift_conn_stats_init(&st);
	for (int i = 0; i < 500; i++) {
		rift_conn_stats_get(c, &st);
		if (st.unacked_msgs == 0)
			break;
		rift_ctx_run(ctx, 10);
	}
	CHECK_EQ(st.unacked_msgs, 0);
	link = link_of(c);
	snprintf(cmd, sizeof(cmd), "lab-link down %s", link);
	CHECK_EQ(system(cmd), 0);
	downed = h_now_us();
	CHECK(h_wait(ctx, &cli.path_down, 5000));
	printf("path down %.3f s after lab-link returned: %s\n",
	       (double)(cli.disconnected_us ? 0 : h_now_us() - downed) / 1e6,
	       rift_conn_last_error(c));
	CHECK(h_now_us() - downed < 1000000u);
	CHECK_CONTAINS(rift_conn_last_error(c), "port error");
	CHECK_EQ(cli.last_down_reason, RIFT_PATH_DOWN_PORT);
	/* The rest goes over the other link. */
	for (uint64_t i = n / 2; i < n; i++)
		CHECK_EQ(h_send(c, 5, i, 256), 0);
	end = h_now_us() + 30000000u;
	while (srv.recv_count < n && h_now_us() < end && !cli.disconnected)
		rift_ctx_run(ctx, 5);
	snprintf(cmd, sizeof(cmd), "lab-link up %s", link);
	CHECK_EQ(system(cmd), 0);
	if (cli.disconnected)
		FAIL("session died: %s", cli.last_message);
	CHECK_EQ(srv.recv_count, n);
	CHECK_EQ(srv.bad, 0);
	CHECK(cli.path_changed >= 1);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * rdma.device names a device that is not there: a clear error, from
 * listen for a cm=tcp listener's bound address, from connect for a
 * client (which binds its paths to an address of the configured device,
 * test_knobs.c).
 */
TEST_T(configured_device_that_does_not_exist_is_an_error)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l;
	rift_conn *conns[1];

	need_rdma();
	cfg.retries = 0;
	snprintf(cfg.device, sizeof(cfg.device), "mlx5_7");
	ctx = h_ctx(&cfg);
	if (cfg.cm == RIFT_CM_TCP) {
		/* cm=tcp finds the device of a bound address at listen. */
		l = NULL;
		CHECK_EQ(rift_listen(ctx, rt_url(0), &h_callbacks, &srv,
				     h_accept_side, &l),
			 RIFT_EINVAL);
		CHECK_CONTAINS(rift_ctx_last_error(ctx),
			       "not the configured device mlx5_7");
		CHECK_CONTAINS(rift_ctx_last_error(ctx), "rdma.device");
		h_teardown(ctx, NULL, NULL, 0);
		return;
	}
	l = h_listen(ctx, &srv);
	h_connect(ctx, rift_listener_port(l), &cli);
	CHECK(h_wait(ctx, &cli.errors, 10000));
	CHECK_EQ(cli.last_status, RIFT_ENODEV);
	CHECK_CONTAINS(cli.last_message,
		       "rdma.device mlx5_7: no such RDMA device");
	conns[0] = cli.conn;
	h_teardown(ctx, l, conns, 1);
}
