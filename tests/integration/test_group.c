/*
 * Port groups, active-backup (session/group.c): standby paths joined
 * ahead, and failover onto one without setting up a connection.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
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
 * A client with group.max_paths = 2 and two addresses joins a standby
 * path to its session through the second one; when its data path
 * breaks mid-stream, the session resumes on that standby (no new
 * connection: the path after PATH_CHANGED is the standby), every message
 * arrives once and in order, and a new standby is joined afterwards.
 */
TEST_T(standby_path_takes_over_without_a_new_connection)
{
	struct side srv = { .verify = true, .seed = 21, .max_size = 4096 };
	struct side cli = { 0 };
	rift_ctx *ctx = h_ctx(NULL);
	rift_listener *l = NULL;
	rift_conn *c = NULL, *conns[2];
	rift__path *standby;
	rift_ctx_stats st;
	char url[160];

	l = two_addresses(ctx, &srv, "?max_paths=2", url, sizeof(url));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	standby = joined_standby(ctx, c, &srv.conn);
	CHECK(standby != NULL);
	CHECK(strcmp(standby->peer, c->path->peer) != 0); /* the other one */
	printf("data path %s, standby %s\n", c->path->peer, standby->peer);

	stream(ctx, c, 0, 300);
	CHECK_EQ(rift__conn_cut(c), 0);
	stream(ctx, c, 300, 600);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 600, 10000));
	/* The cut shows when the transport notices: messages may all have
	 * gone before, and the resume end after. */
	CHECK(h_wait(ctx, &cli.path_changed, 10000));
	CHECK_EQ(srv.bad, 0);
	CHECK_EQ(cli.path_down, 1);
	CHECK_EQ(cli.path_changed, 1);
	CHECK(c->path == standby);
	CHECK(standby->promoted);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	CHECK_EQ(st.sessions_resumed, 1);
	/* The lost address gets a standby again. */
	CHECK(joined_standby(ctx, c, &srv.conn) != NULL);
	printf("after the failover: data path %s, standby %s\n",
	       c->path->peer, c->standby[0]->peer);
	CHECK(strcmp(c->standby[0]->peer, c->path->peer) != 0);

	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * Without group.max_paths above 1 a client keeps one path, and a broken
 * path re-attaches by a new connection, as before.
 */
TEST_T(one_path_without_max_paths)
{
	struct side srv = { .verify = true, .seed = 21, .max_size = 4096 };
	struct side cli = { 0 };
	rift_ctx *ctx = h_ctx(NULL);
	rift_listener *l = NULL;
	rift_conn *c = NULL, *conns[2];
	rift_ctx_stats st;
	uint64_t attempts;
	char url[160];

	l = two_addresses(ctx, &srv, "", url, sizeof(url));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	for (uint64_t end = h_now_us() + 300000u; h_now_us() < end;)
		rift_ctx_run(ctx, 2);
	CHECK_EQ(c->n_standby, 0);
	CHECK_EQ(srv.conn->n_standby, 0);
	rift_ctx_stats_init(&st);
	rift_ctx_stats_get(ctx, &st);
	attempts = st.connect_attempts;
	stream(ctx, c, 0, 100);
	CHECK_EQ(rift__conn_cut(c), 0);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 100, 10000));
	CHECK(h_wait(ctx, &cli.path_changed, 5000));
	CHECK_EQ(srv.bad, 0);
	rift_ctx_stats_get(ctx, &st);
	CHECK(st.connect_attempts > attempts); /* a new connection */
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
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
