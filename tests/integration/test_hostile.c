/*
 * Hostile input: a peer that sends garbage, lies or breaks the protocol
 * gets its connection closed with RIFT_EPROTO, counted; nothing crashes
 * and other connections on the same context carry on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "session/session.h"
#include "harness.h"

static rift_conn *hostile_conns[64];
static int n_hostile;
static struct side hostile_sides[64];
static bool hostile_stop_recv; /* accepted sessions stop receiving */

static void hostile_accept(rift_listener *l, rift_conn *conn)
{
	(void)l;
	CHECK(n_hostile < 64);
	rift_conn_set_user(conn, &hostile_sides[n_hostile]);
	hostile_conns[n_hostile++] = conn;
	if (hostile_stop_recv)
		CHECK_EQ(rift_conn_recv_stop(conn), 0);
}

/* The hostile listener beside l (its port returned in *hl's), and the
 * well-behaved neighbour, cli, connected to l. */
static int hostile_listen(rift_ctx *ctx, rift_listener *l, struct side *cli,
			  rift_listener **hl)
{
	n_hostile = 0;
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0", &h_callbacks, NULL,
			     hostile_accept, hl),
		 0);
	h_connect(ctx, rift_listener_port(l), cli);
	h_connected(ctx, cli);
	return rift_listener_port(*hl);
}

static int raw_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	CHECK(fd >= 0);
	CHECK_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static size_t frame(uint8_t *out, uint8_t type, uint32_t len, uint64_t seq,
		    uint64_t ack)
{
	struct rift__hdr h = { .type = type, .len = len, .seq = seq, .ack = ack };

	rift__hdr_encode(out, &h);
	return RIFT_HDR_SIZE;
}

static size_t hello_w(uint8_t *out, uint8_t type, uint64_t session,
		      uint64_t window)
{
	struct rift__hello m = { .proto = RIFT_WIRE_VERSION,
				 .session_id = session,
				 .max_msg_size = 1u << 20,
				 .window = window };
	size_t n = frame(out, type, RIFT_HELLO_SIZE, 0, 0);

	return n + rift__hello_encode(out + n, &m);
}

static size_t hello(uint8_t *out, uint8_t type, uint64_t session)
{
	return hello_w(out, type, session, 1u << 20);
}

/* Run ctx until the server closes fd (EOF or reset). */
static bool closed_by_server(rift_ctx *ctx, int fd)
{
	uint64_t end = h_now_us() + 5000000u;
	uint8_t buf[4096];

	while (h_now_us() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		rift_ctx_run(ctx, 2);
		if (poll(&p, 1, 0) == 1) {
			ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (n <= 0)
				return true;
		}
	}
	return false;
}

static uint64_t proto_errors(rift_ctx *ctx)
{
	rift_ctx_stats st;

	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	return st.protocol_errors;
}

/* The well-behaved neighbour still gets its echo. */
static void neighbour_ok(rift_ctx *ctx, struct side *cli)
{
	uint64_t before = cli->recv_count;

	CHECK_EQ(rift_conn_send(cli->conn, "alive", 5), 0);
	CHECK(h_wait_u64(ctx, &cli->recv_count, before + 1, 5000));
}

static void attack(rift_ctx *ctx, int port, struct side *cli,
		   const uint8_t *bytes, size_t n, const char *what)
{
	uint64_t before = proto_errors(ctx);
	int fd = raw_connect(port);

	CHECK_EQ(send(fd, bytes, n, MSG_NOSIGNAL), (ssize_t)n);
	if (!closed_by_server(ctx, fd))
		FAIL("%s: connection not closed", what);
	close(fd);
	if (proto_errors(ctx) != before + 1)
		FAIL("%s: protocol_errors %llu -> %llu", what,
		     (unsigned long long)before,
		     (unsigned long long)proto_errors(ctx));
	neighbour_ok(ctx, cli);
}

TEST(hostile_frames_close_only_the_offender)
{
	static const rift_conn_callbacks cbs = { 0 };
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = NULL, *hl = NULL;
	uint8_t b[8192];
	size_t n;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	rift_conn *conns[70];
	int nc = 0, port;

	(void)cbs;
	l = h_listen(ctx, &srv);
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0", &h_callbacks, NULL,
			     hostile_accept, &hl),
		 0);
	port = rift_listener_port(hl);
	h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	neighbour_ok(ctx, &cli);

	for (size_t i = 0; i < 1024; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		b[i] = (uint8_t)x;
	}
	attack(ctx, port, &cli, b, 1024, "random bytes");

	n = frame(b, RIFT_FRAME_PING, 0, 0, 0);
	b[0] = 'G'; /* "GET / HTTP/1.1" style */
	attack(ctx, port, &cli, b, n, "bad magic");

	n = frame(b, 42, 0, 0, 0);
	attack(ctx, port, &cli, b, n, "unknown type");

	n = frame(b, RIFT_FRAME_HELLO, 0xffffffffu, 0, 0);
	attack(ctx, port, &cli, b, n, "impossible length");

	n = frame(b, RIFT_FRAME_DATA, 3, 1, 0);
	memcpy(b + n, "abc", 3);
	attack(ctx, port, &cli, b, n + 3, "data before handshake");

	n = hello(b, RIFT_FRAME_RESUME, 0x1234567);
	attack(ctx, port, &cli, b, n, "resume of unknown session");

	n = hello(b, RIFT_FRAME_HELLO, 0);
	attack(ctx, port, &cli, b, n, "session id 0");

	/* Now attacks from inside an accepted session. */
	n = hello(b, RIFT_FRAME_HELLO, 101);
	n += frame(b + n, RIFT_FRAME_DATA, (1u << 28) + 1, 1, 0);
	attack(ctx, port, &cli, b, n, "message above max_msg_size");

	n = hello(b, RIFT_FRAME_HELLO, 102);
	n += frame(b + n, RIFT_FRAME_DATA, 0, 5, 0);
	attack(ctx, port, &cli, b, n, "sequence gap");

	n = hello(b, RIFT_FRAME_HELLO, 103);
	n += frame(b + n, RIFT_FRAME_ACK, 0, 0, 1000);
	attack(ctx, port, &cli, b, n, "ack for unsent data");

	n = hello(b, RIFT_FRAME_HELLO, 104);
	n += frame(b + n, RIFT_FRAME_ERROR, 10, 0, 0);
	memset(b + n, 0, 10);
	n += 10;
	attack(ctx, port, &cli, b, n, "malformed error frame");

	n = hello(b, RIFT_FRAME_HELLO, 105);
	n += hello(b + n, RIFT_FRAME_HELLO, 105);
	attack(ctx, port, &cli, b, n, "second hello");

	/* A receiver that stopped receiving holds what arrives, never more
	 * than the window the sender advertised: 2 x 2024 frame bytes fit
	 * in 4096, the third does not. */
	hostile_stop_recv = true;
	n = hello_w(b, RIFT_FRAME_HELLO, 106, 4096);
	for (uint64_t seq = 1; seq <= 3; seq++) {
		n += frame(b + n, RIFT_FRAME_DATA, 2000, seq, 0);
		memset(b + n, 'x', 2000);
		n += 2000;
	}
	attack(ctx, port, &cli, b, n, "data beyond the advertised window");
	hostile_stop_recv = false;
	CHECK_CONTAINS(rift_conn_last_error(hostile_conns[5]),
		       "beyond the window");
	CHECK_EQ(hostile_sides[5].recv_count, 0);

	/* Sessions created by the attacker ended with RIFT_EPROTO. */
	CHECK_EQ(n_hostile, 6);
	for (int i = 0; i < n_hostile; i++) {
		CHECK_EQ(hostile_sides[i].disconnected, 1);
		CHECK_EQ(hostile_sides[i].last_status, RIFT_EPROTO);
		conns[nc++] = hostile_conns[i];
	}
	conns[nc++] = cli.conn;
	conns[nc++] = srv.conn;
	rift_listener_close(hl, NULL);
	h_teardown(ctx, l, conns, nc);
}

/* A HELLO asking for active-active (session/spread.c): port groups,
 * data out of order, spread by the client. */
static size_t hello_spread(uint8_t *out, uint64_t session, uint64_t window)
{
	struct rift__hello m = { .proto = RIFT_WIRE_VERSION,
				 .session_id = session,
				 .max_msg_size = 1u << 20,
				 .window = window,
				 .flags = RIFT_CAP_GROUP | RIFT_CAP_REORDER |
					  RIFT_CAP_SPREAD };
	size_t n = frame(out, RIFT_FRAME_HELLO, RIFT_HELLO_SIZE, 0, 0);

	return n + rift__hello_encode(out + n, &m);
}

/*
 * A peer claiming a window of 2^64 - 1 to a server whose send_window is
 * 64 KiB sends 40 messages of 2000 bytes that the server keeps
 * undelivered: held (spread false: it stopped receiving), or waiting
 * ahead of their turn (spread: active-active negotiated, the first
 * message never sent).  The frames beyond 64 KiB are refused.
 */
static void undelivered_beyond_our_window(bool spread)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l, *hl = NULL;
	rift_conn *conns[3];
	static uint8_t b[RIFT_HDR_SIZE + RIFT_HELLO_SIZE + 41 * 2024];
	size_t n;
	int fd;

	cfg.send_window = 64 << 10;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	n_hostile = 0;
	hostile_stop_recv = !spread;
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0", &h_callbacks, NULL,
			     hostile_accept, &hl), 0);
	h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	n = spread ? hello_spread(b, 108, UINT64_MAX)
		   : hello_w(b, RIFT_FRAME_HELLO, 107, UINT64_MAX);
	for (uint64_t seq = spread ? 2 : 1; seq <= 41; seq++) {
		n += frame(b + n, RIFT_FRAME_DATA, 2000, seq, 0);
		memset(b + n, 'x', 2000);
		n += 2000;
	}
	fd = raw_connect(rift_listener_port(hl));
	CHECK_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	if (!closed_by_server(ctx, fd))
		FAIL("the server kept %llu bytes undelivered for a peer "
		     "claiming an endless window", n_hostile ? (unsigned long long)
		     (hostile_conns[0]->held_bytes + hostile_conns[0]->ooo_bytes)
							  : 0ull);
	close(fd);
	hostile_stop_recv = false;
	CHECK_EQ(n_hostile, 1);
	CHECK_EQ(hostile_conns[0]->spread, spread);
	CHECK_CONTAINS(rift_conn_last_error(hostile_conns[0]),
		       "beyond the window (65536 bytes");
	CHECK_EQ(hostile_sides[0].last_status, RIFT_EPROTO);
	neighbour_ok(ctx, &cli);
	conns[0] = hostile_conns[0];
	conns[1] = cli.conn;
	conns[2] = srv.conn;
	rift_listener_close(hl, NULL);
	h_teardown(ctx, l, conns, 3);
}

/*
 * Issue 14, item 2: what a stopped receiver holds is bounded by its own
 * send_window, not by the window the peer claims.  Before, the server
 * held whatever came.
 */
TEST(held_bytes_are_bounded_by_our_window_not_the_peers_claim)
{
	undelivered_beyond_our_window(false);
}

/*
 * active-active: the reorder buffer is bounded by our own send_window
 * too, as held messages are.  Before, a gap was refused at once.
 */
TEST(reordered_bytes_are_bounded_by_our_window_not_the_peers_claim)
{
	undelivered_beyond_our_window(true);
}

/*
 * active-active: a message ahead of its turn waits for the ones before
 * it, a second copy of one waiting is dropped, and they are delivered in
 * order once the first arrives (3, 2, 3 again, 1: delivered 1, 2, 3).  A
 * peer that did not negotiate it gets the old answer to a gap.
 */
TEST(messages_ahead_of_their_turn_wait_and_copies_go)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv), *hl = NULL;
	const uint64_t order[] = { 3, 2, 3, 1 };
	rift_conn_stats st;
	rift_conn *conns[4];
	uint8_t b[RIFT_HDR_SIZE + RIFT_HELLO_SIZE + 4 * (RIFT_HDR_SIZE + 8)];
	size_t n;
	int fd, fd2;

	n_hostile = 0;
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0", &h_callbacks, NULL,
			     hostile_accept, &hl), 0);
	h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	memset(&hostile_sides[0], 0, sizeof(hostile_sides[0]));
	n = hello_spread(b, 109, 1u << 20);
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(order); i++) {
		n += frame(b + n, RIFT_FRAME_DATA, 8, order[i], 0);
		memset(b + n, (int)order[i], 8);
		n += 8;
	}
	fd = raw_connect(rift_listener_port(hl));
	CHECK_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	CHECK(h_wait_u64(ctx, &hostile_sides[0].recv_count, 3, 5000));
	CHECK_EQ(hostile_sides[0].bad, 0);
	CHECK_EQ(n_hostile, 1);
	rift_conn_stats_init(&st);
	CHECK_EQ(rift_conn_stats_get(hostile_conns[0], &st), 0);
	CHECK_EQ(st.msgs_reordered, 2);
	CHECK_EQ(st.dups_dropped, 1);
	CHECK_EQ(hostile_conns[0]->ooo_bytes, 0);

	/* Without it: a gap is a protocol error, as before. */
	n = hello(b, RIFT_FRAME_HELLO, 110);
	n += frame(b + n, RIFT_FRAME_DATA, 8, 2, 0);
	memset(b + n, 2, 8);
	n += 8;
	fd2 = raw_connect(rift_listener_port(hl));
	CHECK_EQ(send(fd2, b, n, MSG_NOSIGNAL), (ssize_t)n);
	CHECK(closed_by_server(ctx, fd2));
	close(fd2);
	CHECK_EQ(n_hostile, 2);
	CHECK(!hostile_conns[1]->spread);
	CHECK_CONTAINS(rift_conn_last_error(hostile_conns[1]),
		       "gap in message sequence");
	close(fd);
	conns[0] = hostile_conns[0];
	conns[1] = hostile_conns[1];
	conns[2] = cli.conn;
	conns[3] = srv.conn;
	rift_listener_close(hl, NULL);
	h_teardown(ctx, l, conns, 4);
}

/*
 * active-active: a message held_seq + k comes after k - 1 others, each
 * at least a header counted against the window, so an honest peer is
 * never more than window / RIFT_HDR_SIZE ahead (64 KiB: 2730).  Further
 * is a protocol error, refused as bytes beyond the window are: before,
 * the server kept message 2^40 + 1 (and 2731) waiting for a peer that
 * will never send what comes before.  At the bound the message waits,
 * and the 2729 before it (empty: the whole window in headers) follow.
 */
TEST(messages_too_far_ahead_are_refused_not_held)
{
	const uint64_t most = (64 << 10) / RIFT_HDR_SIZE;
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l, *hl = NULL;
	static uint8_t b[RIFT_HDR_SIZE + RIFT_HELLO_SIZE +
			 (64 << 10) / RIFT_HDR_SIZE * RIFT_HDR_SIZE];
	rift_conn *conns[5];
	uint64_t end;
	size_t n;
	int fd;

	cfg.send_window = 64 << 10;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	n_hostile = 0;
	memset(hostile_sides, 0, sizeof(hostile_sides));
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0", &h_callbacks, NULL,
			     hostile_accept, &hl), 0);
	h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);

	n = hello_spread(b, 115, 1u << 20);
	n += frame(b + n, RIFT_FRAME_DATA, 8, (1ull << 40) + 1, 0);
	memset(b + n, 'x', 8);
	n += 8;
	attack(ctx, rift_listener_port(hl), &cli, b, n, "2^40 ahead");
	CHECK_CONTAINS(rift_conn_last_error(hostile_conns[0]),
		       "beyond the window (65536 bytes");

	/* One past the bound, after one that waits (the buffer exists). */
	n = hello_spread(b, 116, 1u << 20);
	n += frame(b + n, RIFT_FRAME_DATA, 8, 3, 0);
	memset(b + n, 'x', 8);
	n += 8;
	n += frame(b + n, RIFT_FRAME_DATA, 8, most + 1, 0);
	memset(b + n, 'x', 8);
	n += 8;
	attack(ctx, rift_listener_port(hl), &cli, b, n, "one past the bound");
	CHECK_CONTAINS(rift_conn_last_error(hostile_conns[1]),
		       "beyond the window (65536 bytes");
	CHECK_EQ(hostile_conns[1]->stats.msgs_reordered, 1);

	/* At the bound. */
	n = hello_spread(b, 117, 1u << 20);
	n += frame(b + n, RIFT_FRAME_DATA, 0, most, 0);
	fd = raw_connect(rift_listener_port(hl));
	CHECK_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	end = h_now_us() + 5000000u;
	while ((n_hostile < 3 || !hostile_conns[2]->stats.msgs_reordered) &&
	       h_now_us() < end)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(n_hostile, 3);
	CHECK_EQ(hostile_conns[2]->stats.msgs_reordered, 1);
	n = 0;
	for (uint64_t seq = 1; seq < most; seq++)
		n += frame(b + n, RIFT_FRAME_DATA, 0, seq, 0);
	CHECK_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	CHECK(h_wait_u64(ctx, &hostile_sides[2].recv_count, most, 5000));
	CHECK_EQ(hostile_sides[2].bad, 0);
	CHECK_EQ(hostile_sides[2].disconnected, 0);
	CHECK_EQ(hostile_conns[2]->ooo_bytes, 0);
	CHECK_EQ(hostile_conns[2]->ooo_n, 0);
	/* Doubling would have made 4096 slots: it stops at the bound. */
	CHECK_EQ(hostile_conns[2]->ooo_size, most);
	close(fd);

	CHECK_EQ(n_hostile, 3);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(hostile_sides[i].last_status, RIFT_EPROTO);
	for (int i = 0; i < n_hostile; i++)
		conns[i] = hostile_conns[i];
	conns[3] = cli.conn;
	conns[4] = srv.conn;
	rift_listener_close(hl, NULL);
	h_teardown(ctx, l, conns, 5);
}

/* xorshift64: the fixed-seed order of the tests below. */
static uint64_t shuffle_next(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

/*
 * active-active: 400 messages in an order of their own (the first 200
 * shuffled over all of them, the next 200 within runs of 10, so the
 * reorder buffer both grows and turns over many times), one in ten
 * followed by a copy of one sent before (some still waiting, some
 * delivered already).  Each is delivered once, in order, with its own
 * bytes; msgs_reordered counts the messages that waited, dups_dropped
 * the copies, as a model of the receiver computes them.
 */
TEST(shuffled_messages_arrive_once_in_order)
{
	enum { N = 400, MAX_SIZE = 200, COPIES_MAX = N };
	const uint64_t seed = 0x5eed;
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv), *hl = NULL;
	static uint64_t order[N], wire[N + COPIES_MAX];
	static bool waiting[N + 2];
	static uint8_t b[RIFT_HDR_SIZE + RIFT_HELLO_SIZE +
			 (N + COPIES_MAX) * (RIFT_HDR_SIZE + MAX_SIZE)];
	uint64_t x = 0x243f6a8885a308d3ull, held = 0, reordered = 0;
	uint64_t late = 0, twice = 0; /* copies of delivered, of waiting */
	rift_conn_stats st;
	rift_conn *conns[3];
	size_t n, nw = 0;
	int fd;

	for (uint64_t i = 0; i < N; i++)
		order[i] = i + 1;
	for (size_t i = N / 2 - 1; i > 0; i--) {
		size_t j = shuffle_next(&x) % (i + 1);
		uint64_t t = order[i];

		order[i] = order[j], order[j] = t;
	}
	for (size_t run = N / 2; run < N; run += 10)
		for (size_t i = 9; i > 0; i--) {
			size_t j = shuffle_next(&x) % (i + 1);
			uint64_t t = order[run + i];

			order[run + i] = order[run + j], order[run + j] = t;
		}
	for (size_t i = 0; i < N; i++) {
		wire[nw++] = order[i];
		if (shuffle_next(&x) % 10 == 0)
			wire[nw++] = order[shuffle_next(&x) % (i + 1)];
	}
	/* The receiver, as a model: in order, waiting, or a copy. */
	for (size_t i = 0; i < nw; i++) {
		uint64_t seq = wire[i];

		if (seq <= held) {
			late++;
		} else if (waiting[seq]) {
			twice++;
		} else if (seq == held + 1) {
			for (held++; waiting[held + 1]; held++)
				waiting[held + 1] = false;
		} else {
			waiting[seq] = true;
			reordered++;
		}
	}
	CHECK_EQ(held, N);
	printf("%zu frames: %llu waited, copies %llu late + %llu twice\n", nw,
	       (unsigned long long)reordered, (unsigned long long)late,
	       (unsigned long long)twice);
	/* Both kinds of copy, and the buffer beyond its first size. */
	CHECK(late > 0 && twice > 0 && reordered > 100);

	n_hostile = 0;
	memset(&hostile_sides[0], 0, sizeof(hostile_sides[0]));
	hostile_sides[0].verify = true;
	hostile_sides[0].seed = seed;
	hostile_sides[0].max_size = MAX_SIZE;
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0", &h_callbacks, NULL,
			     hostile_accept, &hl), 0);
	h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	n = hello_spread(b, 114, 1u << 20);
	for (size_t i = 0; i < nw; i++) {
		/* Message seq is the stream's message seq - 1 (harness.c). */
		size_t len = h_size(seed, wire[i] - 1, MAX_SIZE);

		n += frame(b + n, RIFT_FRAME_DATA, (uint32_t)len, wire[i], 0);
		h_fill(b + n, len, seed, wire[i] - 1);
		n += len;
	}
	fd = raw_connect(rift_listener_port(hl));
	CHECK_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	CHECK(h_wait_u64(ctx, &hostile_sides[0].recv_count, N, 5000));
	rift_ctx_run(ctx, 20); /* nothing more comes */
	CHECK_EQ(n_hostile, 1);
	CHECK(hostile_conns[0]->spread);
	CHECK_EQ(hostile_sides[0].recv_count, N);
	CHECK_EQ(hostile_sides[0].bad, 0);
	CHECK_EQ(hostile_sides[0].disconnected, 0);
	rift_conn_stats_init(&st);
	CHECK_EQ(rift_conn_stats_get(hostile_conns[0], &st), 0);
	CHECK_EQ(st.msgs_recv, N);
	CHECK_EQ(st.msgs_reordered, reordered);
	CHECK_EQ(st.dups_dropped, late + twice);
	CHECK_EQ(hostile_conns[0]->ooo_bytes, 0);
	CHECK_EQ(hostile_conns[0]->ooo_n, 0);
	/* Grown from 16 slots as far as the furthest ahead (< 200). */
	CHECK(hostile_conns[0]->ooo_size > 16);
	CHECK(hostile_conns[0]->ooo_size <= 256);
	close(fd);
	conns[0] = hostile_conns[0];
	conns[1] = cli.conn;
	conns[2] = srv.conn;
	rift_listener_close(hl, NULL);
	h_teardown(ctx, l, conns, 3);
}

/*
 * The other half: an honest sender whose send_window is larger than its
 * peer's keeps to the peer's, so a peer that stopped receiving is never
 * pushed past what it holds (send returns RIFT_EAGAIN at the smaller
 * window), and everything arrives once receiving starts again.
 */
TEST(a_sender_keeps_to_the_smaller_of_both_windows)
{
	rift_config big = h_config(), small = h_config();
	rift_ctx *cctx, *sctx;
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l;
	rift_conn *c, *conns[1];
	static uint8_t msg[1000];
	uint64_t sent = 0, end;
	char url[64];

	big.send_window = 16 << 20;
	small.send_window = 64 << 10;
	cctx = h_ctx(&big);
	sctx = h_ctx(&small);
	l = h_listen(sctx, &srv);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", rift_listener_port(l));
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	end = h_now_us() + 5000000u;
	while ((!cli.connected || !srv.connected) && h_now_us() < end) {
		rift_ctx_run_mode(cctx, RIFT_RUN_NOWAIT, 0);
		rift_ctx_run_mode(sctx, RIFT_RUN_NOWAIT, 0);
	}
	CHECK(cli.connected && srv.connected);
	CHECK_EQ(rift_conn_recv_stop(srv.conn), 0);
	/* Fill the window; run both loops until the sender is refused. */
	for (int round = 0; round < 2000; round++) {
		while (rift_conn_send(c, msg, sizeof(msg)) == 0)
			sent++;
		rift_ctx_run_mode(cctx, RIFT_RUN_NOWAIT, 0);
		rift_ctx_run_mode(sctx, RIFT_RUN_NOWAIT, 0);
	}
	printf("sent %llu messages of %zu bytes before RIFT_EAGAIN\n",
	       (unsigned long long)sent, sizeof(msg));
	CHECK(sent * (sizeof(msg) + RIFT_HDR_SIZE) <= (64 << 10) + 1024);
	CHECK(sent >= 32);
	CHECK_EQ(srv.disconnected, 0);
	CHECK_EQ(rift_conn_recv_start(srv.conn), 0);
	end = h_now_us() + 5000000u;
	while (srv.recv_count < sent && h_now_us() < end) {
		rift_ctx_run_mode(cctx, RIFT_RUN_NOWAIT, 0);
		rift_ctx_run_mode(sctx, RIFT_RUN_NOWAIT, 0);
	}
	CHECK_EQ(srv.recv_count, sent);
	CHECK_EQ(srv.disconnected, 0);
	CHECK_EQ(cli.disconnected, 0);
	conns[0] = c;
	h_teardown(cctx, NULL, conns, 1);
	conns[0] = srv.conn;
	h_teardown(sctx, l, conns, 1);
}

/* A raw server that answers a rift client with lies. */
static void lying_server(uint8_t type, uint64_t session_delta,
			 const char *expect)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	struct side cli = { 0 };
	uint8_t in[RIFT_HDR_SIZE + RIFT_HELLO_SIZE], out[128];
	struct rift__hello h;
	struct rift__hdr hdr;
	const char *why;
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fd = -1;
	size_t got = 0, n;
	rift_conn *conns[1];

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	CHECK_EQ(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(listen(lfd, 1), 0);
	getsockname(lfd, (struct sockaddr *)&sa, &len);
	h_connect(ctx, ntohs(sa.sin_port), &cli);
	while (fd < 0) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		rift_ctx_run(ctx, 2);
		if (poll(&p, 1, 0) == 1)
			fd = accept(lfd, NULL, NULL);
	}
	while (got < sizeof(in)) {
		ssize_t r = recv(fd, in + got, sizeof(in) - got, MSG_DONTWAIT);

		if (r > 0)
			got += (size_t)r;
		rift_ctx_run(ctx, 2);
	}
	CHECK_EQ(rift__hdr_decode(in, got, 1u << 20, &hdr, &why), 0);
	CHECK_EQ(hdr.type, RIFT_FRAME_HELLO);
	CHECK_EQ(rift__hello_decode(in + RIFT_HDR_SIZE, hdr.len, &h, &why), 0);
	h.session_id += session_delta;
	n = frame(out, type, RIFT_HELLO_SIZE, 0, 0);
	n += rift__hello_encode(out + n, &h);
	CHECK_EQ(send(fd, out, n, MSG_NOSIGNAL), (ssize_t)n);
	CHECK(h_wait(ctx, &cli.errors, 5000));
	CHECK_EQ(cli.last_status, RIFT_EPROTO);
	CHECK_CONTAINS(cli.last_message, expect);
	CHECK_EQ(proto_errors(ctx), 1);
	close(fd);
	close(lfd);
	conns[0] = cli.conn;
	h_teardown(ctx, NULL, conns, 1);
}

TEST(client_refuses_answer_for_another_session)
{
	lying_server(RIFT_FRAME_HELLO_ACK, 1, "another session");
}

TEST(client_refuses_wrong_handshake_frame)
{
	lying_server(RIFT_FRAME_RESUME_ACK, 0, "expected HELLO_ACK");
}

/* ---- port groups' frames, before any session negotiates them ---- */

/* Read n bytes from fd, the context running meanwhile. */
static void recv_all(rift_ctx *ctx, int fd, uint8_t *buf, size_t n)
{
	uint64_t end = h_now_us() + 5000000u;
	size_t got = 0;

	while (got < n && h_now_us() < end) {
		ssize_t r = recv(fd, buf + got, n - got, MSG_DONTWAIT);

		if (r > 0)
			got += (size_t)r;
		rift_ctx_run(ctx, 2);
	}
	if (got < n)
		FAIL("%zu of %zu bytes from the server", got, n);
}

/*
 * The frames of RIFT_CAP_GROUP (session/wire.h) decode, but no session
 * negotiates the capability yet: a server's HELLO_ACK advertises none,
 * and any of them on an attached path ends its session saying so, a
 * protocol error; a JOIN as a first frame is refused as anything but a
 * HELLO or RESUME is.  The neighbour carries on.
 */
TEST(group_frames_are_refused_until_negotiated)
{
	static const struct {
		uint8_t type;
		uint32_t len;
	} frames[] = {
		{ RIFT_FRAME_JOIN, RIFT_JOIN_SIZE },
		{ RIFT_FRAME_JOIN_ACK, RIFT_JOIN_SIZE },
		{ RIFT_FRAME_PROBE, 0 },
		{ RIFT_FRAME_PROBE_ACK, 0 },
		{ RIFT_FRAME_PATH_CTL, RIFT_PATH_CTL_SIZE },
		{ RIFT_FRAME_ADDRS, RIFT_ADDRS_HEAD + RIFT_ADDR_SIZE },
	};
	const size_t n_frames = RIFT_ARRAY_SIZE(frames);
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv), *hl = NULL;
	uint8_t b[RIFT_HDR_SIZE + RIFT_HELLO_SIZE + RIFT_HDR_SIZE + 128];
	struct rift__hello ack;
	struct rift__hdr h;
	const char *why = NULL;
	rift_conn *conns[16];
	uint64_t before;
	int port, fd, nc = 0;
	size_t n;

	port = hostile_listen(ctx, l, &cli, &hl);

	/* The server offers port groups; this client did not ask. */
	before = proto_errors(ctx);
	fd = raw_connect(port);
	n = hello(b, RIFT_FRAME_HELLO, 300);
	CHECK_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	recv_all(ctx, fd, b, RIFT_HDR_SIZE + RIFT_HELLO_SIZE);
	CHECK_EQ(rift__hdr_decode(b, RIFT_HDR_SIZE, 1u << 20, &h, &why), 0);
	CHECK_EQ(h.type, RIFT_FRAME_HELLO_ACK);
	CHECK_EQ(rift__hello_decode(b + RIFT_HDR_SIZE, h.len, &ack, &why), 0);
	CHECK_EQ(ack.flags & RIFT_HELLO_CAP_MASK,
		 RIFT_CAP_GROUP | RIFT_CAP_REORDER | RIFT_CAP_RMA);
	/* ... so a JOIN there is refused. */
	n = frame(b, RIFT_FRAME_JOIN, RIFT_JOIN_SIZE, 0, 0);
	memset(b + n, 0, RIFT_JOIN_SIZE);
	n += RIFT_JOIN_SIZE;
	CHECK_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	CHECK(closed_by_server(ctx, fd));
	close(fd);
	CHECK_EQ(proto_errors(ctx), before + 1);

	/* Every other one, each in a session of its own.  Their payloads
	 * are zeros: the type alone is refused. */
	for (size_t i = 1; i < n_frames; i++) {
		n = hello(b, RIFT_FRAME_HELLO, 300 + i);
		n += frame(b + n, frames[i].type, frames[i].len, 7, 0);
		memset(b + n, 0, frames[i].len);
		n += frames[i].len;
		attack(ctx, port, &cli, b, n, rift__frame_name(frames[i].type));
	}
	CHECK_EQ(n_hostile, (int)n_frames);
	for (size_t i = 0; i < n_frames; i++) {
		char want[64];

		snprintf(want, sizeof(want),
			 "%s: frame of a capability not negotiated",
			 rift__frame_name(frames[i].type));
		CHECK_EQ(hostile_sides[i].disconnected, 1);
		CHECK_EQ(hostile_sides[i].last_status, RIFT_EPROTO);
		CHECK_CONTAINS(rift_conn_last_error(hostile_conns[i]), want);
		conns[nc++] = hostile_conns[i];
	}

	/* A JOIN as the first frame of a path makes no session. */
	n = frame(b, RIFT_FRAME_JOIN, RIFT_JOIN_SIZE, 0, 0);
	memset(b + n, 0, RIFT_JOIN_SIZE);
	attack(ctx, port, &cli, b, n + RIFT_JOIN_SIZE, "join first");
	CHECK_EQ(n_hostile, (int)n_frames);

	conns[nc++] = cli.conn;
	conns[nc++] = srv.conn;
	rift_listener_close(hl, NULL);
	h_teardown(ctx, l, conns, nc);
}

/* ---- one-sided access's frames (RIFT_CAP_RMA) ---- */

/* A HELLO offering caps, the peer's window as given. */
static size_t hello_caps(uint8_t *out, uint64_t session, uint64_t window,
			 uint32_t caps)
{
	struct rift__hello m = { .proto = RIFT_WIRE_VERSION,
				 .flags = caps,
				 .session_id = session,
				 .max_msg_size = 1u << 20,
				 .window = window };
	size_t n = frame(out, RIFT_FRAME_HELLO, RIFT_HELLO_SIZE, 0, 0);

	return n + rift__hello_encode(out + n, &m);
}

/* An RMA frame of seq seq: head m, then tok_len bytes of 0x5a, then
 * data_len bytes. */
static size_t rma_frame(uint8_t *out, uint64_t seq,
			const struct rift__rma_hdr *m, size_t data_len)
{
	size_t len = RIFT_RMA_HEAD + m->tok_len + data_len;
	size_t n = frame(out, RIFT_FRAME_RMA, (uint32_t)len, seq, 0);

	rift__rma_hdr_encode(out + n, m);
	memset(out + n + RIFT_RMA_HEAD, 0x5a, m->tok_len + data_len);
	return n + len;
}

/*
 * A peer that did not offer one-sided access may not send its frames; one
 * that did may not send a malformed one, answer what was never asked, or
 * keep more requests unanswered than a requester can (it never
 * acknowledges, so the answers wait for a window that does not open): each
 * ends its session with RIFT_EPROTO.  A token that is not one is refused
 * and counted, the session intact.
 */
TEST(rma_frames_a_peer_may_not_send)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv), *hl = NULL;
	static uint8_t b[1 << 20];
	struct rift__rma_hdr m;
	rift_conn *conns[16];
	rift_ctx_stats st;
	int port, nc = 0, fd;
	size_t n;
	static const char *const want[] = {
		"RMA: frame of a capability not negotiated",
		"RMA frame of an unknown op",
		"an answer to no one-sided operation asked",
		"more one-sided requests unanswered than a requester may have",
	};

	port = hostile_listen(ctx, l, &cli, &hl);

	/* Not negotiated. */
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_READ_REQ, .tok_len = 48,
				    .len = 8 };
	n = hello_caps(b, 400, 1u << 20, 0);
	n += rma_frame(b + n, 1, &m, 0);
	attack(ctx, port, &cli, b, n, "rma not negotiated");
	/* An op no rift sends. */
	n = hello_caps(b, 401, 1u << 20, RIFT_CAP_RMA);
	m.op = 9;
	n += rma_frame(b + n, 1, &m, 0);
	attack(ctx, port, &cli, b, n, "rma unknown op");
	/* An answer to nothing. */
	n = hello_caps(b, 402, 1u << 20, RIFT_CAP_RMA);
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_READ_RESP, .id = 77,
				    .len = 16 };
	n += rma_frame(b + n, 1, &m, 16);
	attack(ctx, port, &cli, b, n, "rma answer to nothing");
	/* Requests by the thousand, answers never taken: a 4 KiB window
	 * holds about 60 answers, then they wait here, bounded. */
	n = hello_caps(b, 403, 4096, RIFT_CAP_RMA);
	m = (struct rift__rma_hdr){ .op = RIFT_RMA_READ_REQ, .tok_len = 48,
				    .len = 8 };
	for (uint64_t i = 1; i <= 1200; i++) {
		m.id = i;
		n += rma_frame(b + n, i, &m, 0);
	}
	attack(ctx, port, &cli, b, n, "rma requests unanswered");
	CHECK_EQ(n_hostile, 4);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(hostile_sides[i].disconnected, 1);
		CHECK_EQ(hostile_sides[i].last_status, RIFT_EPROTO);
		CHECK_CONTAINS(rift_conn_last_error(hostile_conns[i]), want[i]);
		conns[nc++] = hostile_conns[i];
	}
	/* Garbage for a token: refused, answered, counted; the session
	 * lives. */
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK(st.rma_refused >= 1000);
	fd = raw_connect(port);
	n = hello_caps(b, 404, 1u << 20, RIFT_CAP_RMA);
	m.id = 1;
	n += rma_frame(b + n, 1, &m, 0);
	CHECK_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	recv_all(ctx, fd, b, RIFT_HDR_SIZE + RIFT_HELLO_SIZE);
	{
		struct rift__hdr h;
		struct rift__rma_hdr a;
		const char *why = NULL;

		recv_all(ctx, fd, b, RIFT_HDR_SIZE);
		CHECK_EQ(rift__hdr_decode(b, RIFT_HDR_SIZE, 1u << 20, &h, &why),
			 0);
		CHECK_EQ(h.type, RIFT_FRAME_RMA);
		CHECK_EQ(h.ack, 1);
		recv_all(ctx, fd, b, h.len);
		CHECK_EQ(rift__rma_hdr_decode(b, h.len, &a, &why), 0);
		CHECK_EQ(a.op, RIFT_RMA_READ_RESP);
		CHECK_EQ(a.status, RIFT_EACCES);
		CHECK(a.id == 1);
	}
	CHECK_EQ(n_hostile, 5);
	CHECK_EQ(hostile_sides[4].disconnected, 0);
	close(fd);
	conns[nc++] = hostile_conns[4];
	conns[nc++] = cli.conn;
	conns[nc++] = srv.conn;
	rift_listener_close(hl, NULL);
	h_teardown(ctx, l, conns, nc);
}

/* ---- who may re-attach a session (issue 14, item 1) ---- */

static rift_ctx_stats ctx_stats(rift_ctx *ctx)
{
	rift_ctx_stats st;

	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	return st;
}

/*
 * A third party on the same context that claims a live session: a client
 * that connects to port and, instead of a HELLO, sends the RESUME of
 * session id with the key and the attach counter given (its RESUME
 * carries attach + 1).  Runs until it is refused: the event it got is in
 * *s.  Returns the conn, dead, for the teardown.
 */
static rift_conn *impostor(rift_ctx *ctx, int port, uint64_t id,
			   const uint8_t *key, uint64_t attach, struct side *s)
{
	rift_conn *c = h_connect(ctx, port, s);

	c->session_id = id;
	if (key)
		memcpy(c->key, key, sizeof(c->key));
	c->attach_seq = attach;
	c->state = RIFT_CONN_DETACHED; /* re-attaching: a RESUME */
	c->detached_us = ctx->now_us;
	if (!h_wait(ctx, &s->disconnected, 10000))
		FAIL("impostor neither refused nor attached: \"%s\"",
		     rift_conn_last_error(c));
	return c;
}

/* The session of cli and srv is still the one it was: no path went down
 * or changed on either side, and it still delivers both ways. */
static void session_untouched(rift_ctx *ctx, struct side *cli,
			      struct side *srv, int changes)
{
	CHECK_EQ(srv->disconnected, 0);
	CHECK_EQ(cli->disconnected, 0);
	CHECK_EQ(srv->path_changed, changes);
	CHECK_EQ(cli->path_changed, changes);
	CHECK_EQ(cli->path_down, changes);
	neighbour_ok(ctx, cli); /* the server echoes it back */
}

/* One refusal each, and the impostor is told why, on every transport.
 * (Over verbs the refusal's ERROR frame was lost with the refused path
 * when its QP went to the error state before rxe sent it; the impostor,
 * told only "peer disconnected", tried again and was refused again.  The
 * path now waits for the frame to leave: rdma_reap.c.) */
static void refused(rift_ctx *ctx, struct side *imp, uint64_t *refusals,
		    const char *why)
{
	uint64_t now = ctx_stats(ctx).resumes_refused;

	CHECK_EQ(imp->last_status, RIFT_ESESSION);
	CHECK_EQ(now, *refusals + 1);
	CHECK_CONTAINS(imp->last_message, why);
	*refusals = now;
}

/*
 * Anyone who knows a session's id (printed in metrics labels; here read
 * from the client's conn) but not its key can neither take the session
 * over nor end it: a RESUME without the key's proof, with another key,
 * replaying a RESUME the client sent, or sent to another listener of the
 * context, is refused on its own path and counted; the live path goes on
 * delivering.  (Before: the RESUME was matched on the id alone, the live
 * path dropped before it was checked, and the session ended on the
 * rewind check, or went to the impostor.)
 */
TEST_T(resume_without_the_session_secret_is_refused)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 }, other = { 0 };
	struct side imp[4] = { { 0 } };
	rift_listener *l = h_listen(ctx, &srv), *l2 = h_listen(ctx, &other);
	rift_conn *conns[8];
	uint8_t wrong[RIFT_SESSION_KEY_LEN];
	uint64_t id, refusals = 0;
	int port = rift_listener_port(l), nc = 0;

	h_connect(ctx, port, &cli);
	h_connected(ctx, &cli);
	for (int i = 0; i < 5; i++)
		neighbour_ok(ctx, &cli); /* acked messages: a rewind to 0 lies */
	id = cli.conn->session_id;

	/* No secret at all: a RESUME with a tag under a zero key. */
	conns[nc++] = impostor(ctx, port, id, NULL, 0, &imp[0]);
	session_untouched(ctx, &cli, &srv, 0);
	refused(ctx, &imp[0], &refusals, "without the session's proof");

	/* A wrong secret. */
	memset(wrong, 0x5a, sizeof(wrong));
	conns[nc++] = impostor(ctx, port, id, wrong, 0, &imp[1]);
	session_untouched(ctx, &cli, &srv, 0);
	refused(ctx, &imp[1], &refusals, "without the session's proof");

	/* The client re-attaches once (RESUME, attach counter 1) ... */
	CHECK_EQ(rift__conn_cut(cli.conn), 0);
	CHECK(h_wait(ctx, &srv.path_changed, 10000));
	CHECK(h_wait(ctx, &cli.path_changed, 10000));
	CHECK_EQ(cli.conn->attach_seq, 1);
	/* ... and that RESUME, proof and all, cannot be used again: right
	 * id, right secret, a used counter. */
	conns[nc++] = impostor(ctx, port, id, cli.conn->key, 0, &imp[2]);
	session_untouched(ctx, &cli, &srv, 1);
	refused(ctx, &imp[2], &refusals, "replayed");

	/* Everything right but the listener: a session re-attaches through
	 * the one that accepted it. */
	conns[nc++] = impostor(ctx, rift_listener_port(l2), id, cli.conn->key,
			       cli.conn->attach_seq, &imp[3]);
	session_untouched(ctx, &cli, &srv, 1);
	refused(ctx, &imp[3], &refusals, "unknown session");

	CHECK(other.conn == NULL);
	CHECK_EQ(ctx_stats(ctx).sessions_resumed, 1);
	conns[nc++] = cli.conn;
	conns[nc++] = srv.conn;
	rift_listener_close(l2, NULL);
	h_teardown(ctx, l, conns, nc);
}

/*
 * A sniffer: a TCP relay between a client and the server that keeps the
 * first bytes each of its connections carried from the client, as an
 * observer on the network would see them.
 */
struct relay {
	int lfd, port, to;   /* listening socket, its port, server port */
	int c, s;            /* the connection relayed now, or -1 */
	uint8_t up[512];     /* its first bytes from the client */
	size_t up_n;
};

static struct relay *relay_on; /* pumped by relay_run */

static void relay_close_pair(struct relay *r)
{
	if (r->c >= 0)
		close(r->c);
	if (r->s >= 0)
		close(r->s);
	r->c = r->s = -1;
}

/* Move what is there either way; false when a side closed. */
static bool relay_move(int from, int to, uint8_t *keep, size_t *kept,
		       size_t cap)
{
	uint8_t buf[65536];
	ssize_t n = recv(from, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK;
	if (n == 0)
		return false;
	if (keep && *kept < cap) {
		size_t k = (size_t)n < cap - *kept ? (size_t)n : cap - *kept;

		memcpy(keep + *kept, buf, k);
		*kept += k;
	}
	for (ssize_t off = 0; off < n;) {
		ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);

		if (w < 0 && errno == EAGAIN)
			continue;
		if (w <= 0)
			return false;
		off += w;
	}
	return true;
}

static void relay_pump(struct relay *r)
{
	int fd = accept(r->lfd, NULL, NULL);

	if (fd >= 0) {
		relay_close_pair(r); /* a new path: the old one is gone */
		r->c = fd;
		r->s = raw_connect(r->to);
		r->up_n = 0;
	}
	if (r->c < 0)
		return;
	if (!relay_move(r->c, r->s, r->up, &r->up_n, sizeof(r->up)) ||
	    !relay_move(r->s, r->c, NULL, NULL, 0))
		relay_close_pair(r);
}

static void relay_start(struct relay *r, int to)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	memset(r, 0, sizeof(*r));
	r->c = r->s = -1;
	r->to = to;
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	CHECK_EQ(bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(listen(r->lfd, 4), 0);
	getsockname(r->lfd, (struct sockaddr *)&sa, &len);
	r->port = ntohs(sa.sin_port);
	relay_on = r;
}

static int relay_closed;
static void count_closed(rift_conn *conn)
{
	(void)conn;
	relay_closed++;
}

/* Run ctx and the relay until *flag reaches target or timeout_ms. */
static bool relay_wait(rift_ctx *ctx, const int *flag, int target,
		       int timeout_ms)
{
	uint64_t end = h_now_us() + (uint64_t)timeout_ms * 1000u;

	while (*flag < target && h_now_us() < end) {
		rift_ctx_run(ctx, 1);
		relay_pump(relay_on);
	}
	return *flag >= target;
}

/* The echo through the relay still works. */
static void relayed_ok(rift_ctx *ctx, struct side *cli)
{
	int before = (int)cli->recv_count, now;

	CHECK_EQ(rift_conn_send(cli->conn, "alive", 5), 0);
	for (int i = 0; i < 5000 && (int)cli->recv_count == before; i++) {
		rift_ctx_run(ctx, 1);
		relay_pump(relay_on);
	}
	now = (int)cli->recv_count;
	CHECK_EQ(now, before + 1);
}

/* Send bytes on a new raw connection to port; true once the server
 * closed it (the relay pumped meanwhile, so the session's keepalives go
 * on). */
static bool raw_refused(rift_ctx *ctx, int port, const uint8_t *b, size_t n)
{
	int fd = raw_connect(port);
	uint64_t end = h_now_us() + 5000000u;
	bool closed = false;

	CHECK_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	while (!closed && h_now_us() < end) {
		uint8_t buf[512];
		ssize_t r;

		rift_ctx_run(ctx, 1);
		relay_pump(relay_on);
		r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		closed = r == 0 || (r < 0 && errno != EAGAIN);
	}
	close(fd);
	return closed;
}

/*
 * What an observer of the network learns: the session id from any
 * handshake, and a RESUME sent on a later path.  Neither lets it take
 * the session: a RESUME with the sniffed id and no secret is refused,
 * and so is the sniffed RESUME sent again byte for byte (its attach
 * counter is used up).  The live session carries on.  (Before: the
 * replayed RESUME was accepted, the session moved to the observer's
 * connection.)
 */
TEST(sniffed_session_id_and_resume_cannot_take_the_session)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	struct relay r;
	struct rift__hdr h;
	struct rift__hello hello;
	const char *why = NULL;
	uint8_t b[RIFT_HDR_SIZE + RIFT_HELLO_SIZE], resume[sizeof(b)];
	uint64_t refused0;
	size_t n;

	relay_start(&r, rift_listener_port(l));
	h_connect(ctx, r.port, &cli);
	CHECK(relay_wait(ctx, &cli.connected, 1, 10000));
	relayed_ok(ctx, &cli);

	/* The id, from the HELLO on the wire. */
	CHECK(r.up_n >= sizeof(b));
	CHECK_EQ(rift__hdr_decode(r.up, r.up_n, 1u << 20, &h, &why), 0);
	CHECK_EQ(h.type, RIFT_FRAME_HELLO);
	CHECK_EQ(rift__hello_decode(r.up + RIFT_HDR_SIZE, h.len, &hello, &why),
		 0);
	CHECK(hello.session_id == cli.conn->session_id);

	refused0 = ctx_stats(ctx).resumes_refused;
	n = frame(b, RIFT_FRAME_RESUME, RIFT_HELLO_SIZE, 0, 0);
	hello.attach = 1;
	n += rift__hello_encode(b + n, &hello);
	CHECK(raw_refused(ctx, rift_listener_port(l), b, n));
	CHECK_EQ(srv.disconnected, 0);
	CHECK_EQ(srv.path_changed, 0);
	relayed_ok(ctx, &cli);
	CHECK_EQ(ctx_stats(ctx).resumes_refused, refused0 + 1);

	/* A re-attach through the relay: the observer records its RESUME. */
	CHECK_EQ(rift__conn_cut(cli.conn), 0);
	CHECK(relay_wait(ctx, &cli.path_changed, 1, 10000));
	CHECK(relay_wait(ctx, &srv.path_changed, 1, 10000));
	CHECK(r.up_n >= sizeof(resume));
	memcpy(resume, r.up, sizeof(resume));
	CHECK_EQ(rift__hdr_decode(resume, sizeof(resume), 1u << 20, &h, &why),
		 0);
	CHECK_EQ(h.type, RIFT_FRAME_RESUME);
	relayed_ok(ctx, &cli);

	CHECK(raw_refused(ctx, rift_listener_port(l), resume, sizeof(resume)));
	CHECK_EQ(srv.disconnected, 0);
	CHECK_EQ(srv.path_changed, 1);
	CHECK_EQ(cli.path_down, 1);
	relayed_ok(ctx, &cli);
	CHECK_EQ(ctx_stats(ctx).resumes_refused, refused0 + 2);

	/* The closes' CLOSEs go through the relay: pump it meanwhile. */
	rift_conn_close(cli.conn, count_closed);
	rift_conn_close(srv.conn, count_closed);
	CHECK(relay_wait(ctx, &relay_closed, 2, 5000));
	h_teardown(ctx, l, NULL, 0);
	relay_close_pair(&r);
	close(r.lfd);
}

/* ---- before the handshake, only handshake frames (item 2) ---- */

static long vm_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	CHECK(kb > 0);
	return kb;
}

/*
 * A client that never sent a HELLO declares a DATA frame of max_msg_size
 * (256 MiB by default) and pushes its payload: the server refuses it at
 * the header, allocates nothing for it, and other sessions carry on.
 * (Before: the server gave the frame a 256 MiB block and read the payload
 * into it, the refusal came only after the last byte: the process grew
 * by what was pushed, and a header alone was never answered.)
 */
TEST(data_header_before_hello_is_refused_at_the_header)
{
	static uint8_t chunk[1u << 20];
	rift_config cfg = h_config();
	rift_ctx *ctx = h_ctx(&cfg);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	int port = rift_listener_port(l), fd;
	uint8_t hdr[RIFT_HDR_SIZE];
	uint64_t before, pushed = 0, end;
	long rss0, rss1;
	rift_conn *conns[2];

	h_connect(ctx, port, &cli);
	h_connected(ctx, &cli);
	neighbour_ok(ctx, &cli);
	frame(hdr, RIFT_FRAME_DATA, (uint32_t)cfg.max_msg_size, 1, 0);
	memset(chunk, 'x', sizeof(chunk));

	/* The header and 64 MiB of its payload, as fast as they go. */
	before = proto_errors(ctx);
	rss0 = vm_rss_kb();
	fd = raw_connect(port);
	CHECK_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	CHECK_EQ(send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL), (ssize_t)sizeof(hdr));
	end = h_now_us() + 10000000u;
	while (pushed < 64u << 20 && h_now_us() < end) {
		ssize_t w = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL);

		if (w < 0 && errno != EAGAIN)
			break; /* refused: the server closed it */
		if (w > 0)
			pushed += (uint64_t)w;
		rift_ctx_progress(ctx);
	}
	rift_ctx_run(ctx, 20);
	rss1 = vm_rss_kb();
	if (rss1 - rss0 > 16 * 1024)
		FAIL("RSS grew by %ld KiB while %llu payload bytes were pushed",
		     rss1 - rss0, (unsigned long long)pushed);
	CHECK(closed_by_server(ctx, fd));
	close(fd);
	CHECK_EQ(proto_errors(ctx), before + 1);

	/* The header alone is answered at once: refused and closed. */
	before = proto_errors(ctx);
	fd = raw_connect(port);
	CHECK_EQ(send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL), (ssize_t)sizeof(hdr));
	end = h_now_us();
	CHECK(closed_by_server(ctx, fd));
	CHECK(h_now_us() - end < 1000000u);
	close(fd);
	CHECK_EQ(proto_errors(ctx), before + 1);

	neighbour_ok(ctx, &cli);
	CHECK_EQ(srv.disconnected, 0);
	conns[0] = cli.conn;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * The same on each transport, from a rift client made hostile by a fault
 * point: its first attempt puts a DATA header declaring max_msg_size
 * bytes before its HELLO.  The server refuses it at the header at once;
 * the client's next attempt connects.  (Before: the server waited for
 * the payload, the HELLO taken as part of it, until the attempt's
 * connect_timeout_ms ran out, and counted no protocol error.)
 */
TEST_T(data_header_before_hello_is_refused_on_each_transport)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	uint64_t before = proto_errors(ctx);
	rift_conn *conns[2];

	rift__fault_arm(RIFT_FAULT_EARLY_DATA, 1, 1);
	h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	CHECK_EQ(rift__fault_fired(RIFT_FAULT_EARLY_DATA), 1);
	CHECK_EQ(proto_errors(ctx), before + 1);
	/* The first attempt ended on the server's refusal, which the
	 * client was told, not on its handshake's time limit. */
	CHECK_CONTAINS(rift_conn_last_error(cli.conn),
		       "data before the handshake");
	CHECK(strstr(rift_conn_last_error(cli.conn), "not completed") == NULL);
	neighbour_ok(ctx, &cli);
	rift__fault_clear();
	conns[0] = cli.conn;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}
