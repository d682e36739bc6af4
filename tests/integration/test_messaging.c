/* Messaging over one path: order, sizes, close, errors, polling modes. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* Client streams n messages of its own stream, server echoes them back;
 * the client checks the echo byte for byte and in order. */
static uint64_t echo_stalls_min; /* the server's echo must have stalled */
static uint64_t client_pause_every; /* client stops receiving every n sends */

static void echo_run(rift_ctx *ctx, uint64_t n, size_t max_size)
{
	struct side srv = { .echo = true, .verify = true, .seed = 11,
			    .max_size = max_size };
	struct side cli = { .verify = true, .seed = 11, .max_size = max_size };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	uint64_t sent = 0, end = h_now_us() + 60000000u;
	rift_conn *conns[2];

	h_connected(ctx, &cli);
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
			if (client_pause_every && sent % client_pause_every == 0) {
				/* Keep sending but hold the echoes a while:
				 * the server's window fills with echoes the
				 * client does not acknowledge, and its echo
				 * stalls. */
				CHECK_EQ(rift_conn_recv_stop(c), 0);
				for (int i = 0; i < 10 && sent < n; i++) {
					while (sent < n &&
					       h_send(c, 11, sent, max_size) == 0)
						sent++;
					rift_ctx_run(ctx, 1);
				}
				CHECK_EQ(rift_conn_recv_start(c), 0);
			}
		}
		rift_ctx_run(ctx, 5);
	}
	CHECK_EQ(srv.recv_count, n);
	CHECK_EQ(cli.recv_count, n);
	CHECK_EQ(srv.bad, 0);
	CHECK_EQ(cli.bad, 0);
	CHECK(srv.checksum == cli.checksum);
	CHECK_EQ(cli.errors + cli.disconnected + srv.disconnected, 0);
	printf("echo stalled %llu times\n", (unsigned long long)srv.echo_stalls);
	CHECK(srv.echo_stalls >= echo_stalls_min);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

TEST_T(echo_ordering_random_sizes_to_1mib)
{
	/* About 100 MB of random sizes both ways with the default window:
	 * the echo side stops receiving whenever its window is full. */
	echo_run(h_ctx(NULL), 1500, 1u << 20);
}

/*
 * The deadlock an earlier design had: an echo server that stops receiving
 * when its send gets RIFT_EAGAIN, and waits for WRITABLE, needs the
 * client's acks, which travel in the stream it no longer delivers.  The
 * client pauses its own receiving now and then, so the server's window
 * fills and its echo stalls hundreds of times.
 */
TEST_T(echo_that_stops_receiving_on_eagain_never_deadlocks)
{
	rift_config cfg = h_config();

	cfg.send_window = 64u << 10;
	echo_stalls_min = 10;
	client_pause_every = 200;
	echo_run(h_ctx(&cfg), 10000, 16u << 10);
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
	h_connected(ctx, &cli);
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

	h_connected(ctx, &cli);
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

	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	CHECK_EQ(rift_conn_send(c, "bye", 3), 0);
	rift_conn_close(c, on_closed);
	rift_conn_close(c, on_closed); /* second close is a no-op */
	CHECK_EQ(closed_count, 0);     /* never from inside the call */
	CHECK_EQ(rift_conn_send(c, "x", 1), RIFT_ECLOSED);
	CHECK(h_wait(ctx, &srv.disconnected, 5000));
	CHECK_EQ(srv.last_status, 0); /* orderly */
	CHECK_EQ(srv.recv_count, 1);  /* "bye" came first */
	CHECK(h_wait(ctx, &closed_count, 5000)); /* after the peer's CLOSE */
	CHECK_EQ(rift_conn_send(srv.conn, "x", 1), RIFT_ENOTCONN);
	CHECK_EQ(cli.disconnected, 0); /* no event after close */
	conns[0] = srv.conn;
	h_teardown(ctx, l, conns, 1);
	CHECK_EQ(closed_count, 1);
}

/*
 * Issue 15, item 4: a new connection accepts sends at once, as UCX
 * endpoints do; they are queued within the window and delivered in order
 * once the session attaches.  Before, every send until CONNECTED returned
 * RIFT_ENOTCONN.
 */
TEST_T(sends_before_connected_are_queued_and_delivered)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .verify = true, .seed = 11, .max_size = 3000 },
		    cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[2];

	CHECK_EQ(cli.connected, 0);
	for (uint64_t i = 0; i < 50; i++)
		CHECK_EQ(h_send(c, 11, i, 3000), 0);
	h_connected(ctx, &cli);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 50, 10000));
	CHECK_EQ(srv.bad, 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* ... and one longer than the peer turns out to accept fails the
 * connection with ERROR / RIFT_EMSGSIZE, saying why; nothing of it is
 * delivered. */
TEST_T(send_before_connected_beyond_the_peers_limit_fails_the_connection)
{
	rift_config scfg = h_config();
	rift_ctx *cctx = h_ctx(NULL), *sctx;
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l;
	rift_conn *c, *conns[1];
	static uint8_t big[100000];
	char url[128];
	uint64_t end;

	scfg.max_msg_size = 64 << 10;
	sctx = h_ctx(&scfg);
	l = h_listen(sctx, &srv);
	snprintf(url, sizeof(url), "%s", rt_url(rift_listener_port(l)));
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	CHECK_EQ(rift_conn_send(c, "small", 5), 0);
	CHECK_EQ(rift_conn_send(c, big, sizeof(big)), 0);
	end = h_now_us() + 10000000u;
	while (!cli.errors && !cli.connected && h_now_us() < end) {
		rift_ctx_run_mode(cctx, RIFT_RUN_NOWAIT, 0);
		rift_ctx_run_mode(sctx, RIFT_RUN_NOWAIT, 0);
	}
	printf("client: %s: %s\n", rift_err_name(cli.last_status),
	       cli.last_message);
	CHECK_EQ(cli.connected, 0);
	CHECK_EQ(cli.errors, 1);
	CHECK_EQ(cli.last_status, RIFT_EMSGSIZE);
	CHECK_CONTAINS(cli.last_message, "exceeds the peer's max_msg_size");
	CHECK_EQ(rift_conn_send(c, "x", 1), RIFT_ENOTCONN);
	/* The server's side ends too, having delivered nothing. */
	end = h_now_us() + 10000000u;
	while (srv.connected && !srv.disconnected && h_now_us() < end) {
		rift_ctx_run_mode(cctx, RIFT_RUN_NOWAIT, 0);
		rift_ctx_run_mode(sctx, RIFT_RUN_NOWAIT, 0);
	}
	CHECK_EQ(srv.recv_count, 0);
	conns[0] = c;
	h_teardown(cctx, NULL, conns, 1);
	conns[0] = srv.conn;
	h_teardown(sctx, l, conns, srv.conn ? 1 : 0);
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
	CHECK_CONTAINS(rift_conn_last_error(cli.conn), rt_host());
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
	h_connected(ctx, &cli);
	CHECK_EQ(rift_conn_send(c, "hi", 2), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 1, 5000));
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * The first address of a URL answers nothing (a listener whose accept
 * queue is full drops every SYN, as a black-holed address does): the
 * second, healthy one gets an attempt of its own long before the first
 * waits out connect_timeout_ms (3 attempts of 3 s without racing).
 */
TEST(a_silent_first_address_does_not_hold_up_the_next)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = NULL, *conns[2];
	int silent[2];
	uint64_t t0;
	char url[256];

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d,127.0.0.1:%d",
		 h_silent_port(silent), rift_listener_port(l));
	t0 = h_now_us();
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	CHECK(h_wait(ctx, &cli.connected, 20000));
	printf("connected after %.0f ms\n", (h_now_us() - t0) / 1e3);
	CHECK(h_now_us() - t0 < 3000000u); /* connect_timeout_ms */
	{
		rift_ctx_stats st;

		rift_ctx_stats_init(&st);
		CHECK_EQ(rift_ctx_stats_get(ctx, &st), 0);
		CHECK_EQ(st.connect_races, 1);
	}
	CHECK_EQ(rift_conn_send(c, "hi", 2), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 1, 5000));
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
	close(silent[1]);
	close(silent[0]);
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

/*
 * An external loop sleeping on rift_ctx_fd wakes for rift's timers: under
 * event polling the fd alone does it; under busy and adaptive polling,
 * whose spinning loop leaves the timerfd unarmed (core/loop.c, arm_tfd),
 * once rift_ctx_timeout was asked before sleeping, as rift.h says.
 */
static int timer_fired;
static void on_timer(rift_timer *t, void *user)
{
	(void)t, (void)user;
	timer_fired++;
}

TEST(external_loop_wakes_for_timers_in_every_polling_mode)
{
	static const rift_polling modes[] = { RIFT_POLL_EVENT, RIFT_POLL_BUSY,
					      RIFT_POLL_ADAPTIVE };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		rift_config cfg = h_config();
		rift_ctx *ctx;
		rift_timer *t;
		struct pollfd pfd;
		uint64_t t0;
		int n;

		cfg.polling = modes[i];
		ctx = h_ctx(&cfg);
		CHECK_EQ(rift_timer_create(ctx, on_timer, NULL, &t), 0);
		/* A spinning loop's rounds first: the timer starts between
		 * them, as rift's own (keepalive, delayed ack) do. */
		for (int k = 0; k < 100; k++)
			CHECK(rift_ctx_progress(ctx) >= 0);
		timer_fired = 0;
		CHECK_EQ(rift_timer_start(t, 40, 0), 0);
		CHECK(rift_ctx_progress(ctx) >= 0);
		if (modes[i] != RIFT_POLL_EVENT)
			CHECK(rift_ctx_timeout(ctx) > 0);
		pfd = (struct pollfd){ .fd = rift_ctx_fd(ctx), .events = POLLIN };
		t0 = h_now_us();
		n = poll(&pfd, 1, 3000);
		printf("polling %d: fd readable after %.1f ms\n", (int)modes[i],
		       (double)(h_now_us() - t0) / 1000);
		CHECK_EQ(n, 1);
		CHECK(h_now_us() - t0 < 2000000u);
		CHECK(rift_ctx_progress(ctx) >= 0);
		CHECK_EQ(timer_fired, 1);
		rift_timer_destroy(t);
		CHECK_EQ(rift_ctx_destroy(ctx), 0);
	}
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
	h_connected(ctx, &cli);
	CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_TCP);
	why = rift_conn_fallback_reason(c);
	CHECK_EQ(why, RIFT_FALLBACK_NO_DEVICE);
	/* Both ends know the transport and why (issue 15, item 5): the
	 * server learns the client's reason in the HELLO, and CONNECTED's
	 * message names the transport and the reason. */
	CHECK(h_wait(ctx, &srv.connected, 5000));
	CHECK_EQ(rift_conn_fallback_reason(srv.conn), why);
	CHECK_CONTAINS(cli.last_message, "connected over tcp (fell back: ");
	CHECK_CONTAINS(cli.last_message, rift_fallback_reason_str(why));
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
	h_connected(ctx, &cli);
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

/*
 * A retained message outlives its connection and its context: released
 * after rift_ctx_destroy, still intact.  Over RDMA the large ones stay in
 * the registered memory they arrived in (rendezvous; a receive buffer
 * from rdma.zero_copy_threshold up), so they keep the process pool alive
 * (tests/unit/test_lifetimes.c does the same on the host).
 */
TEST_T(retained_messages_outlive_their_context)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	static const rift_conn_callbacks keep_cbs = { .on_recv = on_recv_retain };
	static const size_t sizes[3] = { 100, 32u << 10, 1u << 20 };
	rift_msg *keep[4] = { 0 };
	uint8_t *want;
	rift_conn *conns[2];

	CHECK(h_wait(ctx, &srv.connected, 5000));
	h_connected(ctx, &cli);
	rift_conn_set_callbacks(srv.conn, &keep_cbs);
	rift_conn_set_user(srv.conn, keep);
	want = malloc(sizes[2]);
	CHECK(want != NULL);
	for (int i = 0; i < 3; i++) {
		h_fill(want, sizes[i], 7, (uint64_t)i);
		CHECK_EQ(rift_conn_send(c, want, sizes[i]), 0);
	}
	for (int i = 0; i < 2000 && !keep[2]; i++)
		rift_ctx_run(ctx, 5);
	CHECK(keep[2] != NULL);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2); /* rift_ctx_destroy: the context is gone */
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(rift_msg_len(keep[i]), sizes[i]);
		h_fill(want, sizes[i], 7, (uint64_t)i);
		CHECK(memcmp(rift_msg_data(keep[i]), want, sizes[i]) == 0);
		rift_msg_release(keep[i]);
	}
	free(want);
}

/*
 * Many large messages in flight, receiver on its own thread: it
 * acknowledges messages from the front of a writev batch while the rest of
 * the batch is still being written, which must be accepted as an honest
 * ack (a bug once treated it as a lie and killed the session).  The sender
 * must be fast for batches to end half-written, so contents come from a
 * few precomputed patterns and the receiver compares with memcmp.
 */
#define NPAT 16
#define BIGMSG 65536
static uint8_t *patterns[NPAT];

struct threaded_server {
	int port;
	int ready, stop, done;
	uint64_t recv_count, bad;
	rift_conn *conn;
};

static void pattern_recv(rift_conn *conn, rift_msg *msg)
{
	struct threaded_server *ts = rift_conn_user(conn);
	uint64_t i = rift_msg_seq(msg) - 1;

	if (rift_msg_len(msg) != BIGMSG ||
	    memcmp((const uint8_t *)rift_msg_data(msg) + 8,
		   patterns[i % NPAT] + 8, BIGMSG - 8) != 0 ||
	    memcmp(rift_msg_data(msg), &i, sizeof(i)) != 0)
		ts->bad++;
	__atomic_store_n(&ts->recv_count, ts->recv_count + 1, __ATOMIC_RELEASE);
}

static void pattern_accept(rift_listener *l, rift_conn *conn)
{
	struct threaded_server *ts = rift_listener_user(l);

	rift_conn_set_user(conn, ts);
	ts->conn = conn;
}

static void *server_thread(void *arg)
{
	static const rift_conn_callbacks cbs = { .on_recv = pattern_recv };
	struct threaded_server *ts = arg;
	rift_ctx *ctx = h_ctx(NULL);
	rift_listener *l = NULL;
	rift_conn *conns[1];

	CHECK_EQ(rift_listen(ctx, rt_url(0), &cbs, ts, pattern_accept, &l), 0);
	ts->port = rift_listener_port(l);
	__atomic_store_n(&ts->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&ts->stop, __ATOMIC_ACQUIRE))
		rift_ctx_run(ctx, 5);
	conns[0] = ts->conn;
	h_teardown(ctx, l, conns, 1);
	__atomic_store_n(&ts->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

TEST_T(stream_64k_messages_zero_copy_threaded)
{
	static struct threaded_server ts;
	rift_ctx *ctx = h_ctx(NULL);
	struct side cli = { 0 };
	uint64_t sent = 0, n = 6000, end = h_now_us() + 60000000u;
	rift_conn *c, *conns[1];
	pthread_t th;

	for (uint64_t i = 0; i < NPAT; i++) {
		patterns[i] = malloc(BIGMSG);
		h_fill(patterns[i], BIGMSG, 64, i);
	}
	CHECK_EQ(pthread_create(&th, NULL, server_thread, &ts), 0);
	while (!__atomic_load_n(&ts.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	c = h_connect(ctx, ts.port, &cli);
	h_connected(ctx, &cli);
	while (sent < n && h_now_us() < end && !cli.disconnected) {
		uint8_t *b = rift_buf_alloc(ctx, BIGMSG);
		int rc;

		memcpy(b, patterns[sent % NPAT], BIGMSG);
		memcpy(b, &sent, sizeof(sent)); /* stamp: order is checked */
		while ((rc = rift_conn_send_buf(c, b, BIGMSG)) == RIFT_EAGAIN &&
		       !cli.disconnected)
			rift_ctx_run(ctx, 1);
		if (rc) {
			rift_buf_free(ctx, b);
			break;
		}
		sent++;
		rift_ctx_progress(ctx);
	}
	while (__atomic_load_n(&ts.recv_count, __ATOMIC_ACQUIRE) < n &&
	       h_now_us() < end && !cli.disconnected)
		rift_ctx_run(ctx, 5);
	if (cli.disconnected)
		FAIL("session died: %s", cli.last_message);
	__atomic_store_n(&ts.stop, 1, __ATOMIC_RELEASE);
	/* The server closes its end: this end answers its CLOSE. */
	while (!__atomic_load_n(&ts.done, __ATOMIC_ACQUIRE))
		rift_ctx_run(ctx, 5);
	pthread_join(th, NULL);
	CHECK_EQ(ts.recv_count, n);
	CHECK_EQ(ts.bad, 0);
	for (int i = 0; i < NPAT; i++)
		free(patterns[i]);
	conns[0] = c;
	h_teardown(ctx, NULL, conns, 1);
}

TEST(ipv6_loopback_session)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c = NULL, *conns[2];
	char url[64];

	if (rift_listen(ctx, "tcp://[::1]:0", &h_callbacks, &srv,
			h_accept_side, &l) != 0)
		SKIP("no IPv6 loopback here");
	snprintf(url, sizeof(url), "tcp://[::1]:%d", rift_listener_port(l));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	CHECK_EQ(rift_conn_send(c, "six", 3), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 1, 5000));
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * Each side's max_msg_size travels in the handshake: a message larger than
 * the peer accepts is refused by rift_conn_send and rift_conn_send_buf
 * (RIFT_EMSGSIZE, the peer's limit in the connection's last error), and
 * the session goes on.  Before, the send returned 0 and the peer's
 * decoder ended the session with RIFT_EPROTO (client 256 MiB, server
 * 1 MiB, a 2 MiB send).
 */
TEST_T(send_above_the_peers_max_msg_size_is_refused_at_once)
{
	rift_config scfg = h_config();
	struct side srv = { 0 }, cli = { 0 };
	rift_ctx *sctx, *cctx;
	rift_listener *l;
	rift_conn *conns[2];
	static uint8_t big[(1u << 20) + 1];
	uint8_t *b;
	uint64_t end;

	scfg.max_msg_size = 1u << 20;
	sctx = h_ctx(&scfg);
	cctx = h_ctx(NULL);
	l = h_listen(sctx, &srv);
	h_connect(cctx, rift_listener_port(l), &cli);
	for (end = h_now_us() + 10000000u;
	     (!cli.connected || !srv.conn) && !cli.errors && h_now_us() < end;) {
		rift_ctx_run(sctx, 1);
		rift_ctx_run(cctx, 1);
	}
	if (!cli.connected)
		FAIL("not connected: %s", rift_conn_last_error(cli.conn));
	CHECK_EQ(rift_conn_send(cli.conn, big, sizeof(big)), RIFT_EMSGSIZE);
	CHECK_CONTAINS(rift_conn_last_error(cli.conn), "peer's max_msg_size");
	CHECK_CONTAINS(rift_conn_last_error(cli.conn), "1048576");
	b = rift_buf_alloc(cctx, sizeof(big));
	CHECK(b != NULL);
	CHECK_EQ(rift_conn_send_buf(cli.conn, b, sizeof(big)), RIFT_EMSGSIZE);
	rift_buf_free(cctx, b);
	/* At the limit, and after: delivered, the session whole. */
	CHECK_EQ(rift_conn_send(cli.conn, big, sizeof(big) - 1), 0);
	CHECK_EQ(rift_conn_send(cli.conn, big, 100), 0);
	for (end = h_now_us() + 10000000u;
	     srv.recv_count < 2 && !srv.disconnected && !cli.disconnected &&
	     h_now_us() < end;) {
		rift_ctx_run(sctx, 1);
		rift_ctx_run(cctx, 1);
	}
	CHECK_EQ(srv.recv_count, 2u);
	CHECK_EQ(srv.recv_bytes, (uint64_t)(1u << 20) + 100);
	CHECK(!srv.disconnected && !cli.disconnected && !srv.errors);
	conns[0] = cli.conn;
	conns[1] = srv.conn;
	h_teardown2(cctx, NULL, conns, 1, sctx, l, conns + 1, 1);
}
