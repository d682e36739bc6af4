/* Messaging over one path: order, sizes, close, errors, polling modes. */
#include <poll.h>

#include "harness.h"

/* Client streams n messages of its own stream, server echoes them back;
 * the client checks the echo byte for byte and in order. */
static void echo_run(rift_ctx *ctx, uint64_t n, size_t max_size)
{
	struct side srv = { .echo = true, .verify = true, .seed = 11,
			    .max_size = max_size };
	struct side cli = { .verify = true, .seed = 11, .max_size = max_size };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	uint64_t sent = 0, end = h_now_us() + 60000000u;
	rift_conn *conns[2];

	CHECK(h_wait(ctx, &cli.connected, 5000));
	CHECK_EQ(rift_conn_transport(c), strcmp(rt_transport(), "rdma")
						 ? RIFT_TRANSPORT_TCP
						 : RIFT_TRANSPORT_RDMA);
	while ((sent < n || cli.recv_count < n) && h_now_us() < end) {
		while (sent < n) {
			int rc = h_send(c, 11, sent, max_size);

			if (rc == RIFT_EAGAIN)
				break;
			CHECK_EQ(rc, 0);
			sent++;
		}
		rift_ctx_run(ctx, 5);
	}
	CHECK_EQ(srv.recv_count, n);
	CHECK_EQ(cli.recv_count, n);
	CHECK_EQ(srv.bad, 0);
	CHECK_EQ(cli.bad, 0);
	CHECK(srv.checksum == cli.checksum);
	CHECK_EQ(cli.errors + cli.disconnected + srv.disconnected, 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

TEST_T(echo_ordering_random_sizes_to_1mib)
{
	echo_run(h_ctx(NULL), 1500, 1u << 20);
}

TEST_T(echo_small_messages_busy_polling)
{
	rift_config cfg = h_config();

	cfg.polling = RIFT_POLL_BUSY;
	echo_run(h_ctx(&cfg), 5000, 256);
}

TEST_T(echo_small_messages_adaptive_polling)
{
	rift_config cfg = h_config();

	cfg.polling = RIFT_POLL_ADAPTIVE;
	cfg.busy_poll_us = 200;
	echo_run(h_ctx(&cfg), 5000, 256);
}

TEST_T(echo_with_tiny_window_and_read_buffer)
{
	rift_config cfg = h_config();

	/* Every path through partial frames, big-frame reads, EAGAIN. */
	cfg.send_window = 4096;
	cfg.tcp_read_buffer = 4096;
	echo_run(h_ctx(&cfg), 800, 20000);
}

static void big_message(size_t len)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	uint8_t *buf = rift_buf_alloc(ctx, len);
	uint64_t sum;
	rift_conn *conns[2];

	CHECK(buf != NULL);
	h_fill(buf, len, 5, 0);
	sum = h_mix(0, buf, len);
	CHECK(h_wait(ctx, &cli.connected, 5000));
	CHECK_EQ(rift_conn_send_buf(c, buf, len), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 1, 60000));
	CHECK_EQ(srv.recv_count, 1);
	CHECK_EQ(cli.recv_bytes, len);
	CHECK(srv.checksum == sum);
	CHECK(cli.checksum == sum);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

TEST_TIMEOUT(single_64mib_message_both_ways, 180)
{
	big_message(64u << 20);
}

TEST_T(zero_byte_messages)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[2];

	CHECK(h_wait(ctx, &cli.connected, 5000));
	for (int i = 0; i < 100; i++)
		CHECK_EQ(rift_conn_send(c, NULL, 0), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 100, 10000));
	CHECK_EQ(cli.recv_bytes, 0);
	CHECK_EQ(cli.bad, 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

static int closed_count;
static void on_closed(rift_conn *c)
{
	(void)c;
	closed_count++;
}

TEST_T(close_tells_peer_and_runs_callback_once)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[1];

	CHECK(h_wait(ctx, &cli.connected, 5000));
	CHECK(h_wait(ctx, &srv.connected, 5000));
	CHECK_EQ(rift_conn_send(c, "bye", 3), 0);
	rift_conn_close(c, on_closed);
	rift_conn_close(c, on_closed); /* second close is a no-op */
	CHECK_EQ(closed_count, 0);     /* never from inside the call */
	CHECK_EQ(rift_conn_send(c, "x", 1), RIFT_ECLOSED);
	CHECK(h_wait(ctx, &srv.disconnected, 5000));
	CHECK_EQ(srv.last_status, 0); /* orderly */
	CHECK_EQ(closed_count, 1);
	CHECK_EQ(rift_conn_send(srv.conn, "x", 1), RIFT_ENOTCONN);
	CHECK_EQ(cli.disconnected, 0); /* no event after close */
	conns[0] = srv.conn;
	h_teardown(ctx, l, conns, 1);
	CHECK_EQ(closed_count, 1);
}

TEST_T(connect_refused_reports_error_with_reason)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side cli = { 0 };
	rift_listener *l;
	struct side srv = { 0 };
	int port;
	rift_conn *conns[1];

	cfg.retries = 2;
	ctx = h_ctx(&cfg);
	/* A port that was free a moment ago. */
	l = h_listen(ctx, &srv);
	port = rift_listener_port(l);
	rift_listener_close(l, NULL);
	rift_ctx_progress(ctx);
	h_connect(ctx, port, &cli);
	CHECK(h_wait(ctx, &cli.errors, 5000));
	CHECK_EQ(cli.last_status, RIFT_ECONNREFUSED);
	CHECK_CONTAINS(cli.last_message, "connection refused");
	CHECK_CONTAINS(cli.last_message, "3 attempts");
	CHECK_CONTAINS(rift_conn_last_error(cli.conn), "127.0.0.1");
	CHECK_EQ(rift_conn_send(cli.conn, "x", 1), RIFT_ENOTCONN);
	conns[0] = cli.conn;
	h_teardown(ctx, NULL, conns, 1);
}

TEST_T(multi_address_url_uses_the_next_address)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv), *dead = NULL;
	struct side unused = { 0 };
	char url[256];
	rift_conn *c = NULL, *conns[2];
	int dead_port;

	dead = h_listen(ctx, &unused);
	dead_port = rift_listener_port(dead);
	rift_listener_close(dead, NULL);
	snprintf(url, sizeof(url), "%s://%s:%d,%s:%d", rt_transport(), rt_host(),
		 dead_port, rt_host(), rift_listener_port(l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	CHECK(h_wait(ctx, &cli.connected, 5000));
	CHECK_EQ(rift_conn_send(c, "hi", 2), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 1, 5000));
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

TEST_T(external_event_loop_integration)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	struct pollfd pfd = { .fd = rift_ctx_fd(ctx), .events = POLLIN };
	uint64_t end = h_now_us() + 10000000u;
	int sent = 0;
	rift_conn *conns[2];

	/* Only poll() on the one fd with rift's timeout, then progress. */
	while (cli.recv_count < 200 && h_now_us() < end) {
		if (cli.connected && sent < 200 &&
		    rift_conn_send(c, &sent, sizeof(sent)) == 0)
			sent++;
		poll(&pfd, 1, rift_ctx_timeout(ctx));
		CHECK(rift_ctx_progress(ctx) >= 0);
	}
	CHECK_EQ(cli.recv_count, 200);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

TEST(auto_falls_back_to_tcp_with_reason_and_rdma_refuses)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_ctx_stats st;
	char url[128];
	rift_conn *c = NULL, *conns[2];
	rift_fallback_reason why;
	int rc;

	snprintf(url, sizeof(url), "auto://127.0.0.1:%d", rift_listener_port(l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	CHECK(h_wait(ctx, &cli.connected, 5000));
	CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_TCP);
	why = rift_conn_fallback_reason(c);
	CHECK(why == RIFT_FALLBACK_NO_DEVICE || why == RIFT_FALLBACK_NOT_BUILT);
	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(ctx, &st), 0);
	CHECK_EQ(st.fallbacks[why], 1);
	CHECK_EQ(rift_conn_send(c, "x", 1), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 1, 5000));

	snprintf(url, sizeof(url), "rdma://127.0.0.1:%d", rift_listener_port(l));
	rc = rift_connect(ctx, url, &h_callbacks, NULL, &conns[0]);
	CHECK_EQ(rc, RIFT_ENOTSUP);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "rdma:// unavailable");
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

static void on_recv_retain(rift_conn *conn, rift_msg *msg)
{
	rift_msg **keep = rift_conn_user(conn);

	for (int i = 0; i < 4; i++)
		if (!keep[i]) {
			keep[i] = rift_msg_retain(msg);
			return;
		}
}

TEST_T(retained_messages_outlive_the_callback)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	static const rift_conn_callbacks keep_cbs = { .on_recv = on_recv_retain };
	rift_msg *keep[4] = { 0 };
	size_t big = 3u << 20; /* larger than the read buffer: own block */
	uint8_t *buf;
	rift_conn *conns[2];

	CHECK(h_wait(ctx, &srv.connected, 5000));
	rift_conn_set_callbacks(srv.conn, &keep_cbs);
	rift_conn_set_user(srv.conn, keep);
	CHECK_EQ(rift_conn_send(c, "first", 5), 0);
	buf = rift_buf_alloc(ctx, big);
	h_fill(buf, big, 1, 1);
	CHECK_EQ(rift_conn_send_buf(c, buf, big), 0);
	CHECK_EQ(rift_conn_send(c, "third", 5), 0);
	for (int i = 0; i < 2000 && !keep[2]; i++)
		rift_ctx_run(ctx, 5);
	CHECK(keep[2] != NULL);
	CHECK_EQ(rift_msg_len(keep[0]), 5);
	CHECK(memcmp(rift_msg_data(keep[0]), "first", 5) == 0);
	CHECK_EQ(rift_msg_len(keep[1]), big);
	buf = malloc(big);
	h_fill(buf, big, 1, 1);
	CHECK(memcmp(rift_msg_data(keep[1]), buf, big) == 0);
	free(buf);
	CHECK_EQ(rift_msg_seq(keep[2]), 3);
	for (int i = 0; i < 3; i++)
		rift_msg_release(keep[i]);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}
