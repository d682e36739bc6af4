/*
 * URL options (rift.h, "URLs"): settings of one connection over the
 * context's.  Each option shows its effect against a context configured
 * otherwise; every other key, and every mistake, is refused saying why.
 * Over TCP; the rdma.cm option is tested over verbs in test_verbs.c.
 */
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "harness.h"

static const char *url_of(const char *scheme, int port, const char *opts)
{
	static char url[256];

	snprintf(url, sizeof(url), "%s://127.0.0.1:%d%s%s", scheme, port,
		 opts[0] ? "?" : "", opts);
	return url;
}

static void refused_at(rift_ctx *ctx, const char *scheme, const char *opts,
		       const char *says)
{
	rift_conn *c = (rift_conn *)1;

	CHECK_EQ(rift_connect(ctx, url_of(scheme, 9, opts), &h_callbacks, NULL,
			      &c),
		 RIFT_EINVAL);
	CHECK(c == NULL);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), says);
}

static void refused(rift_ctx *ctx, const char *opts, const char *says)
{
	refused_at(ctx, "tcp", opts, says);
}

TEST(url_options_refused_say_why)
{
	rift_ctx *ctx = h_ctx(NULL);
	rift_listener *l = NULL;

	refused(ctx, "colour=blue",
		"unknown option 'colour' (options: connect_timeout_ms, "
		"retries, retry_delay_ms, fallback, fallback_return_ms, "
		"keepalive_interval_ms, "
		"keepalive_timeout_ms, grace_ms, cm, max_paths, policy, local, "
		"failback_delay_ms)");
	refused(ctx, "sq_depth=64",
		"option 'sq_depth' is not a setting of one connection: set "
		"rdma.sq_depth in the context's configuration");
	refused(ctx, "retries=1001",
		"option retries = 1001 is out of range 0..1000 (extra "
		"attempts per address)");
	refused(ctx, "retries=many",
		"option retries: 'many' is not an integer");
	refused_at(ctx, "auto", "fallback=maybe",
		   "option fallback: 'maybe' is not a boolean");
	refused_at(ctx, "auto", "cm=ib",
		   "option cm: 'ib' is not one of \"rdmacm\" or \"tcp\"");
	/* options that could change nothing for the scheme */
	refused(ctx, "cm=tcp", "option 'cm' sets up RDMA paths, and a tcp:// "
			       "connection has none");
	refused_at(ctx, "rdma", "fallback=false",
		   "option 'fallback' is for auto:// (rdma:// never falls "
		   "back");
	refused(ctx, "fallback=false", "option 'fallback' is for auto://");
	refused(ctx, "retries=1&retries=2",
		"option 'retries' is given twice");
	refused(ctx, "connect_timeout_ms=100&connection_timeout_ms=200",
		"option 'connect_timeout_ms' is given twice");
	/* the context's keepalive_timeout_ms is 1000: an interval of 1000
	 * breaks the rule that ties them */
	refused(ctx, "keepalive_interval_ms=1000",
		"session.keepalive_timeout_ms (1000) must be greater than "
		"session.keepalive_interval_ms (1000)");
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0?retries=1", &h_callbacks,
			     NULL, h_accept_side, &l),
		 RIFT_EINVAL);
	CHECK(l == NULL);
	CHECK_CONTAINS(rift_ctx_last_error(ctx),
		       "option 'retries': a listener takes no options");
	h_teardown(ctx, NULL, NULL, 0);
}

/* retries and retry_delay_ms: attempts at a port nobody listens on. */
TEST(url_options_retries_and_retry_delay)
{
	rift_config cfg = h_config();
	struct side cli = { 0 };
	rift_conn *c = NULL;
	rift_conn_stats st;
	rift_ctx *ctx;
	uint64_t t0;

	cfg.retries = 0;
	cfg.retry_delay_ms = 0;
	ctx = h_ctx(&cfg);
	t0 = h_now_us();
	CHECK_EQ(rift_connect(ctx, url_of("tcp", h_free_port(),
					  "retries=3&retry_delay_ms=100"),
			      &h_callbacks, &cli, &c),
		 0);
	cli.conn = c;
	CHECK(h_wait(ctx, &cli.errors, 5000));
	CHECK(h_now_us() - t0 >= 300000); /* three pauses of 100 ms */
	CHECK_EQ(cli.last_status, RIFT_ECONNREFUSED);
	CHECK_CONTAINS(cli.last_message, "(4 attempts)");
	rift_conn_stats_init(&st);
	CHECK_EQ(rift_conn_stats_get(c, &st), 0);
	CHECK_EQ(st.connect_attempts, 4);
	CHECK_EQ(st.connect_retries, 3);

	/* without options, the context's: one attempt */
	memset(&cli, 0, sizeof(cli));
	rift_conn_close(c, NULL);
	CHECK_EQ(rift_connect(ctx, url_of("tcp", h_free_port(), ""),
			      &h_callbacks, &cli, &c),
		 0);
	cli.conn = c;
	CHECK(h_wait(ctx, &cli.errors, 5000));
	CHECK_CONTAINS(cli.last_message, "(1 attempts)");
	h_teardown(ctx, NULL, &c, 1);
}

/* connect_timeout_ms: a peer that accepts but never answers the HELLO. */
TEST(url_option_connect_timeout_bounds_the_handshake)
{
	rift_config cfg = h_config();
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	struct side cli = { 0 };
	rift_conn *c = NULL;
	rift_ctx *ctx;
	uint64_t t0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(listen(fd, 8), 0); /* the kernel accepts; nobody answers */
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	cfg.connect_timeout_ms = 10000;
	cfg.retries = 0;
	ctx = h_ctx(&cfg);
	t0 = h_now_us();
	CHECK_EQ(rift_connect(ctx, url_of("tcp", ntohs(sa.sin_port),
					  "connect_timeout_ms=200"),
			      &h_callbacks, &cli, &c),
		 0);
	cli.conn = c;
	CHECK(h_wait(ctx, &cli.errors, 3000));
	CHECK(h_now_us() - t0 >= 200000);
	CHECK_EQ(cli.last_status, RIFT_ETIMEDOUT);
	CHECK_CONTAINS(cli.last_message,
		       "handshake not completed within connect_timeout_ms "
		       "(200 ms)");
	close(fd);
	h_teardown(ctx, NULL, &c, 1);
}

/* keepalive_interval_ms: an idle client pings at its own interval, the
 * server (the context's 1 s) not at all. */
TEST(url_option_keepalive_interval_paces_the_pings)
{
	rift_config cfg = h_config();
	struct side srv = { 0 }, cli = { 0 };
	rift_conn_stats cs, ss;
	rift_listener *l;
	rift_conn *c = NULL, *conns[2];
	rift_ctx *ctx;
	uint64_t end;

	cfg.keepalive_interval_ms = 1000;
	cfg.keepalive_timeout_ms = 5000;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	CHECK_EQ(rift_connect(ctx, url_of("tcp", rift_listener_port(l),
					  "keepalive_interval_ms=20"),
			      &h_callbacks, &cli, &c),
		 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	end = h_now_us() + 500000;
	while (h_now_us() < end)
		rift_ctx_run(ctx, 5);
	rift_conn_stats_init(&cs);
	rift_conn_stats_init(&ss);
	CHECK_EQ(rift_conn_stats_get(c, &cs), 0);
	CHECK_EQ(rift_conn_stats_get(srv.conn, &ss), 0);
	CHECK(cs.pings_sent >= 5);
	CHECK_EQ(ss.pings_sent, 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* keepalive_timeout_ms: the client's own bound on a silent peer (whose
 * context stops running), far below the context's. */
TEST(url_option_keepalive_timeout_fails_a_silent_path)
{
	rift_config cfg = h_config();
	struct side srv = { 0 }, cli = { 0 };
	rift_ctx *sctx, *cctx;
	rift_listener *l;
	rift_conn *c = NULL, *conns[1];
	uint64_t end;

	cfg.keepalive_interval_ms = 1000;
	cfg.keepalive_timeout_ms = 10000;
	sctx = h_ctx(&cfg);
	cctx = h_ctx(&cfg);
	l = h_listen(sctx, &srv);
	CHECK_EQ(rift_connect(cctx, url_of("tcp", rift_listener_port(l),
					   "keepalive_interval_ms=50&"
					   "keepalive_timeout_ms=300"),
			      &h_callbacks, &cli, &c),
		 0);
	cli.conn = c;
	end = h_now_us() + 5000000;
	while ((!cli.connected || !srv.connected) && h_now_us() < end) {
		rift_ctx_run(cctx, 2);
		rift_ctx_run(sctx, 2);
	}
	CHECK(cli.connected && srv.connected);
	/* the server falls silent: only the client runs */
	CHECK(h_wait(cctx, &cli.path_down, 2000));
	CHECK_CONTAINS(cli.last_message, "(keepalive_timeout_ms 300)");
	CHECK_EQ(cli.last_down_reason, RIFT_PATH_DOWN_KEEPALIVE);
	{
		rift_ctx_stats st;

		rift_ctx_stats_init(&st);
		CHECK_EQ(rift_ctx_stats_get(cctx, &st), 0);
		CHECK_EQ(st.path_downs_by[RIFT_PATH_DOWN_KEEPALIVE], 1);
	}
	h_teardown(cctx, NULL, &c, 1);
	conns[0] = srv.conn;
	h_teardown(sctx, l, conns, 1);
}

/* grace_ms: how long this client keeps re-attaching. */
TEST(url_option_grace_ends_a_session_that_cannot_reattach)
{
	rift_config cfg = h_config();
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l;
	rift_conn *c = NULL, *conns[2];
	rift_ctx *ctx;
	uint64_t t0;

	cfg.session_grace_ms = 30000;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	CHECK_EQ(rift_connect(ctx, url_of("tcp", rift_listener_port(l),
					  "grace_ms=200"),
			      &h_callbacks, &cli, &c),
		 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	rift_listener_close(l, NULL); /* nowhere to re-attach to */
	t0 = h_now_us();
	CHECK_EQ(rift__conn_cut(c), 0);
	CHECK(h_wait(ctx, &cli.disconnected, 3000));
	CHECK(h_now_us() - t0 >= 200000);
	CHECK_EQ(cli.last_status, RIFT_ETIMEDOUT);
	CHECK_CONTAINS(cli.last_message,
		       "not re-attached within session_grace_ms (200 ms)");
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, NULL, conns, 2);
}

/*
 * fallback: auto:// where RDMA is not available falls back to TCP unless
 * the connection's fallback is off (on a host without an RDMA device).
 */
TEST(url_option_fallback_off_keeps_auto_from_tcp)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *c = NULL, *conns[2];
	char err[256];

	if (rift_devices(NULL, 0, err, sizeof(err)) > 0)
		SKIP("an RDMA device is here: auto:// has no reason to fall "
		     "back");
	CHECK_EQ(rift_listen(ctx, "tcp://127.0.0.1:0", &h_callbacks, &srv,
			     h_accept_side, &l),
		 0);
	CHECK_EQ(rift_connect(ctx, url_of("auto", rift_listener_port(l),
					  "fallback=false"),
			      &h_callbacks, &cli, &c),
		 RIFT_ENOTSUP);
	CHECK_CONTAINS(rift_ctx_last_error(ctx),
		       "rdma:// unavailable: no RDMA device, and "
		       "connect.fallback is off");
	CHECK_EQ(rift_connect(ctx, url_of("auto", rift_listener_port(l),
					  "fallback=on"),
			      &h_callbacks, &cli, &c),
		 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_TCP);
	CHECK_EQ(rift_conn_fallback_reason(c), RIFT_FALLBACK_NO_DEVICE);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}
