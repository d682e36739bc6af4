/*
 * Hostile input: a peer that sends garbage, lies or breaks the protocol
 * gets its connection closed with RIFT_EPROTO, counted; nothing crashes
 * and other connections on the same context carry on.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
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
		       "beyond its advertised window");
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
