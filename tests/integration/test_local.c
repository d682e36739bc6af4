/*
 * group.local and the URL's local= (docs/config.md, [group]): the local
 * address a client's paths leave from.  Over TCP on loopback, where any
 * 127.0.0.0/8 address is this host's: the server sees the bound address
 * as its peer, the client's path and events report it, re-attaches bind
 * again, a bind that fails says which address, and bad values are
 * refused at rift_connect.  The last test binds verbs paths to the lab's
 * second link (pair topology, both cm modes: PAIR_TESTS in the
 * Makefile).
 */
#include <stdlib.h>

#include "internal.h"
#include "session/session.h"
#include "transports/verbs/rdma.h"
#include "harness.h"

/* The Prometheus text of ctx (malloc'd). */
static char *prometheus(rift_ctx *ctx)
{
	int n = rift_metrics_prometheus(ctx, NULL, 0);
	char *text = malloc((size_t)n + 1);

	CHECK(n > 0 && text != NULL);
	CHECK_EQ(rift_metrics_prometheus(ctx, text, (size_t)n + 1), n);
	return text;
}

/* Run both contexts until the client is connected and the server has
 * its connection. */
static void both_connected(rift_ctx *sctx, rift_ctx *cctx, struct side *srv,
			   struct side *cli)
{
	uint64_t end = h_now_us() + 10000000u;

	while ((!cli->connected || !srv->connected) && !cli->errors &&
	       h_now_us() < end) {
		rift_ctx_run(sctx, 2);
		rift_ctx_run(cctx, 2);
	}
	if (!cli->connected || !srv->connected)
		FAIL("not connected: errors %d, \"%s\"", cli->errors,
		     cli->last_message);
}

/*
 * A client on cctx connects to url (a listener of sctx on 127.0.0.1):
 * its path leaves from 127.0.0.2, which the client's path, its CONNECTED
 * event and its metrics report as the local address, and the server's
 * accepted connection as its peer; a message crosses.
 */
static void bound_to_127_0_0_2(rift_ctx *sctx, rift_ctx *cctx,
			       const char *opts)
{
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *conns[1];
	char url[128], *text;

	CHECK_EQ(rift_listen(sctx, "tcp://127.0.0.1:0", &h_callbacks, &srv,
			     h_accept_side, &l),
		 0);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d%s",
		 rift_listener_port(l), opts);
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, &cli, &cli.conn), 0);
	both_connected(sctx, cctx, &srv, &cli);
	CHECK_STR(cli.conn->path->local, "127.0.0.2");
	CHECK_STR(cli.last_local, "127.0.0.2");
	CHECK_CONTAINS(srv.conn->path->peer, "tcp://127.0.0.2:");
	CHECK_STR(srv.conn->path->local, "127.0.0.1");
	text = prometheus(cctx);
	CHECK_CONTAINS(text, "role=\"client\",transport=\"tcp\",peer=\"tcp://"
			     "127.0.0.1:");
	CHECK_CONTAINS(text, "\",local=\"127.0.0.2\",fallback_reason=");
	free(text);
	text = prometheus(sctx);
	CHECK_CONTAINS(text, "role=\"server\",transport=\"tcp\",peer=\"tcp://"
			     "127.0.0.2:");
	free(text);
	CHECK_EQ(h_send(cli.conn, 5, 0, 100), 0);
	for (uint64_t end = h_now_us() + 5000000u;
	     srv.recv_count < 1 && h_now_us() < end;) {
		rift_ctx_run(cctx, 2);
		rift_ctx_run(sctx, 2);
	}
	CHECK_EQ(srv.recv_count, 1);
	conns[0] = cli.conn;
	h_teardown2(cctx, NULL, conns, 1, sctx, l, &srv.conn, 1);
}

/* The URL's local= binds the connection's paths. */
TEST(local_option_binds_the_client_path)
{
	bound_to_127_0_0_2(h_ctx(NULL), h_ctx(NULL), "?local=127.0.0.2");
}

/* group.local (here from its variable, RIFT_GROUP_LOCAL) binds every
 * connection of the context. */
TEST(local_key_binds_the_client_path)
{
	char err[RIFT_CONFIG_ERRLEN];
	rift_config cc = h_config();

	setenv("RIFT_GROUP_LOCAL", "127.0.0.2", 1);
	CHECK_EQ(rift_config_env(&cc, err, sizeof(err)), 0);
	unsetenv("RIFT_GROUP_LOCAL");
	CHECK_STR(cc.group_local, "127.0.0.2");
	bound_to_127_0_0_2(h_ctx(NULL), h_ctx(&cc), "");
}

/*
 * Two addresses, one local address each: the first path leaves from the
 * first; cut, the session re-attaches through the second address (the
 * next one after a broken path) from the second, as both ends say.
 */
TEST(local_address_binds_the_reattach)
{
	rift_ctx *sctx = h_ctx(NULL), *cctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *conns[1];
	uint64_t end;
	char url[160];
	int port;

	CHECK_EQ(rift_listen(sctx, "tcp://127.0.0.1:0", &h_callbacks, &srv,
			     h_accept_side, &l),
		 0);
	port = rift_listener_port(l);
	snprintf(url, sizeof(url),
		 "tcp://127.0.0.1:%d,127.0.0.1:%d?local=127.0.0.2,127.0.0.3",
		 port, port);
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, &cli, &cli.conn), 0);
	both_connected(sctx, cctx, &srv, &cli);
	CHECK_STR(cli.conn->path->local, "127.0.0.2");
	CHECK_CONTAINS(srv.conn->path->peer, "tcp://127.0.0.2:");
	CHECK_EQ(rift__conn_cut(cli.conn), 0);
	end = h_now_us() + 10000000u;
	while ((!cli.path_changed || !srv.path_changed) && h_now_us() < end) {
		rift_ctx_run(sctx, 2);
		rift_ctx_run(cctx, 2);
	}
	if (!cli.path_changed || !srv.path_changed)
		FAIL("not re-attached: \"%s\"", cli.last_message);
	CHECK_STR(cli.conn->path->local, "127.0.0.3");
	CHECK_STR(cli.last_local, "127.0.0.3");
	CHECK_CONTAINS(srv.conn->path->peer, "tcp://127.0.0.3:");
	conns[0] = cli.conn;
	h_teardown2(cctx, NULL, conns, 1, sctx, l, &srv.conn, 1);
}

/* A local address this host does not have: the attempt fails as any
 * other, its error naming the address and the bind's reason. */
TEST(local_address_not_on_this_host_fails_naming_it)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side cli = { 0 };
	char url[128], want[160];
	int port = h_free_port();

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d?local=192.0.2.1&"
				   "retries=0",
		 port);
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &cli.conn), 0);
	CHECK(h_wait(ctx, &cli.errors, 5000));
	CHECK_EQ(cli.last_status, RIFT_EADDRNOTAVAIL);
	snprintf(want, sizeof(want),
		 "tcp://127.0.0.1:%d: connect: bind to local address "
		 "192.0.2.1: Cannot assign requested address (1 attempts)",
		 port);
	CHECK_STR(cli.last_message, want);
	h_teardown(ctx, NULL, &cli.conn, 1);
}

/* A local entry naming an RDMA device this host does not have (or, in
 * the lab, one whose address cannot reach the peer): the attempt fails
 * as a bind to a missing address does, naming the entry. */
TEST(local_device_not_on_this_host_fails_naming_it)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side cli = { 0 };
	char url[128];

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d?local=nosuchdev0:1&"
				   "retries=0",
		 h_free_port());
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &cli.conn), 0);
	CHECK(h_wait(ctx, &cli.errors, 5000));
	CHECK(cli.last_status != 0);
	CHECK_CONTAINS(cli.last_message, ": connect: local nosuchdev0:1: ");
	printf("%s: %s\n", rift_err_name(cli.last_status), cli.last_message);
	h_teardown(ctx, NULL, &cli.conn, 1);
}

static void refused(rift_ctx *ctx, const char *url, const char *says)
{
	rift_conn *c = (rift_conn *)1;

	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, NULL, &c), RIFT_EINVAL);
	CHECK(c == NULL);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), says);
}

/* Every value that is not a list of numeric addresses fitting the URL's
 * addresses is refused by rift_connect, saying why; one that fits is
 * taken. */
TEST(local_option_refused_say_why)
{
	rift_ctx *ctx = h_ctx(NULL);
	rift_conn *c = NULL;

	refused(ctx, "tcp://127.0.0.1:9?local=foo",
		"url 'tcp://127.0.0.1:9?local=foo': option local = \"foo\": "
		"'foo' is neither a numeric IPv4 or IPv6 address nor an RDMA "
		"device and port such as rxe0:1 (host names are not "
		"accepted)");
	refused(ctx, "tcp://127.0.0.1:9?local=10.0.0.1:5",
		"option local = \"10.0.0.1:5\": '10.0.0.1:5' has a port: give "
		"the address alone");
	refused(ctx, "tcp://127.0.0.1:9?local=mlx5_0:0",
		"option local = \"mlx5_0:0\": 'mlx5_0:0': port 0 of device "
		"mlx5_0 is not 1..255");
	refused(ctx, "tcp://127.0.0.1:9?local=mlx5_0:1000",
		"port 1000 of device mlx5_0 is not 1..255");
	refused(ctx, "tcp://127.0.0.1:9?local=0mlx:1",
		"'0mlx:1' is neither a numeric IPv4 or IPv6 address nor an "
		"RDMA device and port");
	refused(ctx, "tcp://127.0.0.1:9?local=127.0.0.2,,127.0.0.3",
		"address 2 is empty");
	refused(ctx, "tcp://127.0.0.1:9?local=1.0.0.1,1.0.0.2,1.0.0.3,1.0.0.4,"
		     "1.0.0.5,1.0.0.6,1.0.0.7,1.0.0.8,1.0.0.9",
		"more than 8 addresses");
	refused(ctx, "tcp://127.0.0.1:9?local=::1",
		"url 'tcp://127.0.0.1:9?local=::1': local address ::1 is IPv6, "
		"and address 1 (127.0.0.1) is IPv4");
	refused(ctx, "tcp://127.0.0.1:9,[::1]:9?local=127.0.0.2,127.0.0.3",
		"local address 127.0.0.3 is IPv4, and address 2 (::1) is IPv6");
	refused(ctx, "tcp://127.0.0.1:9,127.0.0.1:10,127.0.0.1:11?local="
		     "127.0.0.2,127.0.0.3",
		"local= has 2 entries for 3 addresses");
	refused(ctx, "tcp://127.0.0.1:9?local=127.0.0.2&local=127.0.0.3",
		"option 'local' is given twice");
	/* each entry of its address's family; one more than addresses is
	 * left unused */
	CHECK_EQ(rift_connect(ctx, "tcp://[::1]:9,127.0.0.1:9?local=::1,"
				   "127.0.0.2,10.0.0.1",
			      &h_callbacks, NULL, &c),
		 0);
	h_teardown(ctx, NULL, &c, 1);
}

/* ---- verbs, in the lab's pair topology ---- */

static const char *lab_env(const char *name)
{
	const char *v = getenv(name);
	char why[128];

	if (!v || !*v) {
		snprintf(why, sizeof(why), "needs the lab's %s", name);
		SKIP(why);
	}
	return v;
}

/* The lab's pair topology: each link's addresses and client device. */
struct links {
	const char *srv[2], *cli[2], *dev[2];
};

/* The link (0 or 1) the client's path is on, checked end to end: its
 * local address is that link's, on that link's device, toward the
 * server's address there, which sees the client's address as its
 * peer. */
static int link_of(const struct links *k, const struct side *cli,
		   const struct side *srv)
{
	const rift__path *p = cli->conn->path;
	int i = !strcmp(p->local, k->cli[1]);
	const char *dev;
	unsigned port = 0;

	CHECK_STR(p->local, k->cli[i]);
	CHECK_STR(cli->last_local, k->cli[i]);
	CHECK_CONTAINS(p->peer, k->srv[i]);
	dev = rift__conn_rdma_device(cli->conn, &port);
	CHECK(dev != NULL);
	CHECK_STR(dev, k->dev[i]);
	CHECK_CONTAINS(srv->conn->path->peer, k->cli[i]);
	return i;
}

/* The pair topology's links into *k, or the test is skipped: verbs
 * only, both ends played here. */
static void pair_links(struct links *k)
{
	const char *role = getenv("RIFT_LAB_ROLE");

	if (strcmp(rt_transport(), "rdma") != 0)
		SKIP("verbs-only test: run with --transport rdma (the lab)");
	for (int i = 0; i < 2; i++) {
		char name[40];

		snprintf(name, sizeof(name), "RIFT_LAB_SERVER_ADDR%d", i);
		k->srv[i] = lab_env(name);
		snprintf(name, sizeof(name), "RIFT_LAB_CLIENT_ADDR%d", i);
		k->cli[i] = lab_env(name);
		snprintf(name, sizeof(name), "RIFT_LAB_CLIENT_DEV%d", i);
		k->dev[i] = lab_env(name);
	}
	if (!role || strcmp(role, "both") != 0)
		SKIP("plays both ends: the pair topology");
}

/* The pair's links into *k (or the test is skipped), a server's and a
 * client's context, and the server's listener on every address; its
 * port. */
static int pair_server(struct links *k, rift_ctx **sctx, rift_ctx **cctx,
		       struct side *srv, rift_listener **l)
{
	pair_links(k);
	*sctx = h_ctx(NULL);
	*cctx = h_ctx(NULL);
	CHECK_EQ(rift_listen(*sctx, "rdma://0.0.0.0:0", &h_callbacks, srv,
			     h_accept_side, l),
		 0);
	return rift_listener_port(*l);
}

/* Cut the client's path (of url); both ends must see it re-attached
 * within 20 s. */
static void cut_and_reattached(rift_ctx *sctx, rift_ctx *cctx,
			       struct side *srv, struct side *cli,
			       const char *url)
{
	uint64_t end = h_now_us() + 20000000u;

	CHECK_EQ(rift__conn_cut(cli->conn), 0);
	while ((!cli->path_changed || !srv->path_changed) && h_now_us() < end) {
		rift_ctx_run(sctx, 2);
		rift_ctx_run(cctx, 2);
	}
	if (!cli->path_changed || !srv->path_changed)
		FAIL("%s: not re-attached: \"%s\"", url, cli->last_message);
}

/* Connect cctx to url (sctx's listener) and check which link it is on. */
static int connect_on(rift_ctx *sctx, rift_ctx *cctx, const char *url,
		      const struct links *k, struct side *srv,
		      struct side *cli)
{
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, cli, &cli->conn), 0);
	both_connected(sctx, cctx, srv, cli);
	return link_of(k, cli, srv);
}

/*
 * Two links (pair): a client given the server's address on each link
 * and its own on each binds each attempt to its address's own: the path
 * is on the link and device of the address it reached, before and after
 * a cut (racing may reach either; each is checked end to end).  The
 * server's link1 address from the client's link1 address is on link1's
 * device.  With rdma.device naming link0's device, link1's local address
 * is refused, naming both devices.
 */
TEST_T(local_address_picks_the_rdma_device)
{
	rift_config cd = h_config();
	struct side srv = { 0 }, cli = { 0 }, srv1 = { 0 }, cli1 = { 0 },
		    bad = { 0 };
	rift_listener *l = NULL, *l1 = NULL;
	rift_ctx *sctx, *cctx, *dctx;
	rift_conn *conns[2], *sconns[2];
	struct links k;
	char url[256];
	uint64_t end;
	int port, first;

	port = pair_server(&k, &sctx, &cctx, &srv, &l);
	snprintf(url, sizeof(url), "rdma://%s:%d,%s:%d?local=%s,%s", k.srv[0],
		 port, k.srv[1], port, k.cli[0], k.cli[1]);
	first = connect_on(sctx, cctx, url, &k, &srv, &cli);
	cut_and_reattached(sctx, cctx, &srv, &cli, url);
	printf("link%d, then link%d after the cut\n", first,
	       link_of(&k, &cli, &srv));

	CHECK_EQ(rift_listen(sctx, "rdma://0.0.0.0:0", &h_callbacks, &srv1,
			     h_accept_side, &l1),
		 0);
	snprintf(url, sizeof(url), "rdma://%s:%d?local=%s", k.srv[1],
		 rift_listener_port(l1), k.cli[1]);
	CHECK_EQ(connect_on(sctx, cctx, url, &k, &srv1, &cli1), 1);
	CHECK_EQ(h_send(cli1.conn, 7, 0, 100), 0);
	for (end = h_now_us() + 5000000u; srv1.recv_count < 1 && h_now_us() < end;) {
		rift_ctx_run(cctx, 2);
		rift_ctx_run(sctx, 2);
	}
	CHECK_EQ(srv1.recv_count, 1);

	snprintf(cd.device, sizeof(cd.device), "%s", k.dev[0]);
	dctx = h_ctx(&cd);
	snprintf(url, sizeof(url), "rdma://%s:%d?local=%s&retries=0", k.srv[1],
		 port, k.cli[1]);
	CHECK_EQ(rift_connect(dctx, url, &h_callbacks, &bad, &bad.conn), 0);
	if (!h_wait(dctx, &bad.errors, 10000))
		FAIL("%s with rdma.device %s: no error (connected %d)", url,
		     k.dev[0], bad.connected);
	CHECK_EQ(bad.last_status, RIFT_EINVAL);
	CHECK_CONTAINS(bad.last_message, k.cli[1]);
	CHECK_CONTAINS(bad.last_message, k.dev[1]);
	CHECK_CONTAINS(bad.last_message, k.dev[0]);
	h_teardown(dctx, NULL, &bad.conn, 1);
	rift_listener_close(l1, NULL);
	conns[0] = cli.conn;
	conns[1] = cli1.conn;
	sconns[0] = srv.conn;
	sconns[1] = srv1.conn;
	h_teardown2(cctx, NULL, conns, 2, sctx, l, sconns, 2);
}

/*
 * group.local's device form (pair): a client naming each link's client
 * device for the server's address on that link leaves from that device's
 * address (rdma.device's choice, per attempt): the path is on the link
 * and device named, before and after a cut.  A tcp:// path leaves from
 * that address too.  A device whose addresses cannot reach the address
 * it is given for fails the attempt, naming the entry.
 */
TEST_T(local_device_picks_the_link)
{
	struct side srv = { 0 }, cli = { 0 }, bad = { 0 }, tsrv = { 0 },
		    tcli = { 0 };
	rift_listener *l = NULL, *tl = NULL;
	rift_ctx *sctx, *cctx, *bctx;
	rift_conn *conns[4];
	struct links k;
	char url[256];
	int port, first;

	port = pair_server(&k, &sctx, &cctx, &srv, &l);
	snprintf(url, sizeof(url), "rdma://%s:%d,%s:%d?local=%s:1,%s:1",
		 k.srv[0], port, k.srv[1], port, k.dev[0], k.dev[1]);
	first = connect_on(sctx, cctx, url, &k, &srv, &cli);
	cut_and_reattached(sctx, cctx, &srv, &cli, url);
	printf("%s: link%d, then link%d after the cut\n", url, first,
	       link_of(&k, &cli, &srv));

	CHECK_EQ(rift_listen(sctx, "tcp://0.0.0.0:0", &h_callbacks, &tsrv,
			     h_accept_side, &tl),
		 0);
	snprintf(url, sizeof(url), "tcp://%s:%d?local=%s:1", k.srv[1],
		 rift_listener_port(tl), k.dev[1]);
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, &tcli, &tcli.conn), 0);
	both_connected(sctx, cctx, &tsrv, &tcli);
	CHECK_STR(tcli.conn->path->local, k.cli[1]);
	CHECK_CONTAINS(tsrv.conn->path->peer, k.cli[1]);

	snprintf(url, sizeof(url), "rdma://%s:%d?local=%s:1&retries=0",
		 k.srv[1], port, k.dev[0]);
	bctx = h_ctx(NULL);
	CHECK_EQ(rift_connect(bctx, url, &h_callbacks, &bad, &bad.conn), 0);
	if (!h_wait(bctx, &bad.errors, 10000))
		FAIL("%s: no error (connected %d)", url, bad.connected);
	printf("%s: %s: %s\n", url, rift_err_name(bad.last_status),
	       bad.last_message);
	CHECK_EQ(bad.last_status, RIFT_ENETUNREACH);
	CHECK_CONTAINS(bad.last_message, "local ");
	CHECK_CONTAINS(bad.last_message, k.dev[0]);
	h_teardown(bctx, NULL, &bad.conn, 1);
	rift_listener_close(tl, NULL);
	conns[0] = cli.conn;
	conns[1] = tcli.conn;
	conns[2] = srv.conn;
	conns[3] = tsrv.conn;
	h_teardown2(cctx, NULL, conns, 2, sctx, l, conns + 2, 2);
}
