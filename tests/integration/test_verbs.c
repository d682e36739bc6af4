/*
 * Verbs-only behaviour, run in the soft-RoCE lab (--transport rdma):
 * memlock too low, registration failure under auto://, a peer whose
 * rdma_cm hello is garbage or lies, and a real link cut in the pair
 * topology.  On TCP these skip, saying why.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"
#include "session/session.h"
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
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	/* Lowering works even for root; the lab runs tests as root. */
	CHECK_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
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
	snprintf(url, sizeof(url), "auto://%s:0", rt_host());
	CHECK_EQ(rift_listen(ctx, url, &h_callbacks, &srv, h_accept_side, &l), 0);
	/* Every client registration fails (1 + retries attempts). */
	rift__fault_arm(RIFT_FAULT_IBV_REG_MR, 1, 3);
	snprintf(url, sizeof(url), "auto://%s:%d", rt_host(),
		 rift_listener_port(l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	CHECK_EQ(rift__fault_fired(RIFT_FAULT_IBV_REG_MR), 3);
	CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_TCP);
	CHECK_EQ(rift_conn_fallback_reason(c), RIFT_FALLBACK_REG_MR);
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
	CHECK_EQ(rift__vb_resolve_addr(id, (struct sockaddr *)&sa, 2000, err), 0);
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
 * Pair topology: a listener on every address and a client whose URL names
 * the server's address on link0, then on link1.  Skips elsewhere.
 */
static rift_conn *pair_session(rift_ctx *ctx, struct side *srv,
			       struct side *cli, rift_listener **l)
{
	const char *topo = getenv("RIFT_LAB_TOPO");
	const char *a0 = getenv("RIFT_LAB_SERVER_ADDR0");
	const char *a1 = getenv("RIFT_LAB_SERVER_ADDR1");
	rift_conn *c = NULL;
	char url[256];

	if (!topo || strcmp(topo, "pair") != 0 || !a0 || !a1)
		SKIP("needs the lab's pair topology (two links)");
	CHECK_EQ(rift_listen(ctx, "rdma://0.0.0.0:0", &h_callbacks, srv,
			     h_accept_side, l),
		 0);
	snprintf(url, sizeof(url), "rdma://%s:%d,%s:%d", a0,
		 rift_listener_port(*l), a1, rift_listener_port(*l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, cli, &c), 0);
	cli->conn = c;
	h_connected(ctx, cli);
	return c;
}

/*
 * Pair topology: two links between client and server.  Cut link0 for real
 * (100% loss on the client's end, as a cable fault: routes stay, packets
 * vanish) while messages stream both ways;
 * the QP's retries run out within a second, the session re-attaches
 * through the server's address on link1, and nothing is lost or doubled.
 */
TEST_TIMEOUT(link_cut_mid_stream_reattaches_over_the_other_port, 240)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { .verify = true, .seed = 7, .max_size = 256 };
	struct side cli = { .verify = true, .seed = 70, .max_size = 256 };
	rift_listener *l = NULL;
	rift_conn *c, *conns[2];
	uint64_t n = 20000, sent_c = 0, sent_s = 0, end, cut_at = 0;
	int down = 0;

	need_rdma();
	cfg.keepalive_interval_ms = 100;
	cfg.keepalive_timeout_ms = 1500;
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
			CHECK_EQ(system("lab-link loss link0"), 0);
			cut_at = h_now_us();
			down = 1;
		}
		rift_ctx_run(ctx, 1);
	}
	if (down)
		CHECK_EQ(system("lab-link noloss link0"), 0);
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
	       (unsigned long long)rift__conn_zero_copy_sends(c),
	       (unsigned long long)n);
	/* Sizes are random in 0..4096: all above the inline size go
	 * without a copy. */
	CHECK(rift__conn_zero_copy_sends(c) >= n / 2);
	printf("delivered in place: %llu of %llu bytes\n",
	       (unsigned long long)rift__conn_inplace_recv_bytes(srv.conn),
	       (unsigned long long)srv.recv_bytes);
	CHECK(rift__conn_inplace_recv_bytes(srv.conn) >= srv.recv_bytes / 2);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
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
	CHECK_EQ(system("lab-link down link0"), 0);
	downed = h_now_us();
	CHECK(h_wait(ctx, &cli.path_down, 5000));
	printf("path down %.3f s after lab-link returned: %s\n",
	       (double)(cli.disconnected_us ? 0 : h_now_us() - downed) / 1e6,
	       rift_conn_last_error(c));
	CHECK(h_now_us() - downed < 1000000u);
	CHECK_CONTAINS(rift_conn_last_error(c), "port error");
	/* The rest goes over link1. */
	for (uint64_t i = n / 2; i < n; i++)
		CHECK_EQ(h_send(c, 5, i, 256), 0);
	end = h_now_us() + 30000000u;
	while (srv.recv_count < n && h_now_us() < end && !cli.disconnected)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(system("lab-link up link0"), 0);
	if (cli.disconnected)
		FAIL("session died: %s", cli.last_message);
	CHECK_EQ(srv.recv_count, n);
	CHECK_EQ(srv.bad, 0);
	CHECK(cli.path_changed >= 1);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* rdma.device names a device the route does not use: a clear error. */
TEST_T(configured_device_the_route_does_not_use_is_an_error)
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
	CHECK_EQ(cli.last_status, RIFT_EINVAL);
	CHECK_CONTAINS(cli.last_message, "not the configured device mlx5_7");
	CHECK_CONTAINS(cli.last_message, "rdma.device");
	conns[0] = cli.conn;
	h_teardown(ctx, l, conns, 1);
}
