/*
 * Settings that used to be accepted and then ignored (issue 14, item 6):
 * a second context's [pool] settings, and rdma.device / rdma.port /
 * rdma.gid_index choosing the local device under rdma_cm.  The verbs
 * parts run in the soft-RoCE lab (--transport rdma) and skip on TCP.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "session/session.h"
#include "transports/verbs/rdma.h"
#include "harness.h"

static bool on_rdma(void)
{
	return strcmp(rt_transport(), "rdma") == 0;
}

static void need_rdma(void)
{
	if (!on_rdma())
		SKIP("verbs-only test: run with --transport rdma (the lab)");
}

/*
 * The registered pool is the process's: a second context with other
 * [pool] settings cannot have them, and is told so, each key named,
 * where it needs the pool (rift_buf_alloc, an RDMA path) rather than
 * given the first context's pool silently.
 */
TEST_T(second_context_with_other_pool_settings_is_refused)
{
	rift_config ca = h_config(), cb = h_config();
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = NULL;
	rift_conn *conns[2];
	rift_ctx *a, *b;
	void *ba, *bb;

	cb.pool_max = 2ull << 30;
	cb.pool_thread_cache = 7;
	a = h_ctx(&ca);
	b = h_ctx(&cb);
	ba = rift_buf_alloc(a, 100); /* the pool, from a's settings */
	CHECK(ba != NULL);
	/* b gets memory all the same (its sends are copied), and the
	 * reason its buffers are not registered */
	bb = rift_buf_alloc(b, 100);
	CHECK(bb != NULL);
	CHECK_CONTAINS(rift_ctx_last_error(b),
		       "pool.max = 2GiB here, 1GiB in the pool; "
		       "pool.thread_cache = 7 here, 32 in the pool");
	rift_buf_free(a, ba);
	rift_buf_free(b, bb);
	if (on_rdma()) {
		/* an RDMA path of b needs the pool: refused, saying why */
		char url[160];

		l = h_listen(a, &srv);
		snprintf(url, sizeof(url), "%s?retries=0",
			 rt_url(rift_listener_port(l)));
		CHECK_EQ(rift_connect(b, url, &h_callbacks, &cli, &cli.conn),
			 0);
		CHECK(h_wait(b, &cli.errors, 10000));
		CHECK_EQ(cli.last_status, RIFT_EINVAL);
		CHECK_CONTAINS(cli.last_message, "pool.max = 2GiB here");
	}
	conns[0] = cli.conn;
	h_teardown(b, NULL, conns, cli.conn ? 1 : 0);
	conns[0] = srv.conn;
	h_teardown(a, l, conns, srv.conn ? 1 : 0);
}

/* ---- rdma.device, rdma.port, rdma.gid_index choose a client's device ---- */

/* The index of the RoCE v2 GID that holds ip on dev port 1 (-1: none). */
static int gid_index_of(const char *dev, const char *ip)
{
	rift_device_info *d = calloc(16, sizeof(*d));
	char err[256];
	int n = rift_devices(d, 16, err, sizeof(err)), idx = -1;

	CHECK(d != NULL);
	for (int i = 0; i < n && i < 16 && idx < 0; i++) {
		const rift_port_info *p = &d[i].ports[0];

		if (strcmp(d[i].name, dev) != 0 || d[i].port_count < 1)
			continue;
		for (uint32_t g = 0; g < p->gid_count && g < RIFT_PORT_MAX_GIDS;
		     g++)
			if (p->gids[g].type == RIFT_GID_ROCE_V2 &&
			    !strcmp(p->gids[g].ip, ip))
				idx = (int)p->gids[g].index;
	}
	free(d);
	return idx;
}

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

/*
 * A client configured with a device, port and GID index binds its paths
 * to that GID's address: the path runs on the device and port named, and
 * carries messages.
 */
TEST_T(configured_device_port_and_gid_are_the_ones_its_paths_use)
{
	const char *dev, *addr, *got;
	rift_config cc = h_config();
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l;
	rift_ctx *sctx, *cctx;
	rift_conn *conns[1];
	unsigned port = 0;

	need_rdma();
	dev = lab_env("RIFT_LAB_CLIENT_DEV0");
	addr = lab_env("RIFT_LAB_CLIENT_ADDR0");
	snprintf(cc.device, sizeof(cc.device), "%s", dev);
	cc.port = 1;
	cc.gid_index = gid_index_of(dev, addr);
	if (cc.gid_index < 0)
		FAIL("%s has no RoCE v2 GID for %s (rift-info)", dev, addr);
	sctx = h_ctx(NULL);
	cctx = h_ctx(&cc);
	l = h_listen(sctx, &srv);
	CHECK_EQ(rift_connect(cctx, rt_url(rift_listener_port(l)),
			      &h_callbacks, &cli, &cli.conn),
		 0);
	if (!h_wait2(sctx, cctx, &cli.connected, 10000))
		FAIL("not connected: %s", cli.last_message);
	got = rift__conn_rdma_device(cli.conn, &port);
	CHECK(got != NULL);
	CHECK_STR(got, dev);
	CHECK_EQ(port, 1);
	CHECK_EQ(h_send(cli.conn, 3, 0, 100), 0);
	for (uint64_t end = h_now_us() + 5000000u;
	     srv.recv_count < 1 && h_now_us() < end;) {
		rift_ctx_run(sctx, 2);
		rift_ctx_run(cctx, 2);
	}
	CHECK_EQ(srv.recv_count, 1u);
	conns[0] = cli.conn;
	h_teardown(cctx, NULL, conns, 1);
	conns[0] = srv.conn;
	h_teardown(sctx, l, conns, 1);
}

/*
 * Two links (pair): a client configured with link1's device, given both
 * server addresses with link0's first, attaches through link1 (without
 * the setting the first address, link0, would carry it), and alone with
 * link0's address it fails, saying that the device has no address that
 * reaches it.
 */
TEST_T(configured_device_chooses_the_link)
{
	const char *dev1, *a0, *a1, *got, *role = getenv("RIFT_LAB_ROLE");
	rift_config cc = h_config();
	struct side srv = { 0 }, cli = { 0 }, lone = { 0 };
	rift_listener *l = NULL;
	rift_ctx *sctx, *cctx;
	rift_conn *conns[2];
	char url[256];
	unsigned port = 0;

	need_rdma();
	dev1 = lab_env("RIFT_LAB_CLIENT_DEV1");
	a0 = lab_env("RIFT_LAB_SERVER_ADDR0");
	a1 = lab_env("RIFT_LAB_SERVER_ADDR1");
	if (!role || strcmp(role, "both") != 0)
		SKIP("plays both ends: the pair topology");
	snprintf(cc.device, sizeof(cc.device), "%s", dev1);
	sctx = h_ctx(NULL);
	cctx = h_ctx(&cc);
	CHECK_EQ(rift_listen(sctx, "rdma://0.0.0.0:0", &h_callbacks, &srv,
			     h_accept_side, &l),
		 0);
	snprintf(url, sizeof(url), "rdma://%s:%d,%s:%d", a0,
		 rift_listener_port(l), a1, rift_listener_port(l));
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, &cli, &cli.conn), 0);
	if (!h_wait2(sctx, cctx, &cli.connected, 10000))
		FAIL("%s with rdma.device %s: not connected: %s", url, dev1,
		     cli.last_message);
	CHECK_CONTAINS(cli.conn->path->peer, a1);
	got = rift__conn_rdma_device(cli.conn, &port);
	CHECK(got != NULL);
	CHECK_STR(got, dev1);

	snprintf(url, sizeof(url), "rdma://%s:%d?retries=0", a0,
		 rift_listener_port(l));
	CHECK_EQ(rift_connect(cctx, url, &h_callbacks, &lone, &lone.conn), 0);
	if (!h_wait2(sctx, cctx, &lone.errors, 10000))
		FAIL("%s with rdma.device %s: no error (connected %d)", url,
		     dev1, lone.connected);
	CHECK_EQ(lone.last_status, RIFT_ENETUNREACH);
	CHECK_CONTAINS(lone.last_message, "no address that can reach");
	CHECK_CONTAINS(lone.last_message, a0);
	conns[0] = cli.conn;
	conns[1] = lone.conn;
	h_teardown(cctx, NULL, conns, 2);
	conns[0] = srv.conn;
	h_teardown(sctx, l, conns, 1);
}
