/*
 * Host names in rift_connect's URL are resolved off the loop (issue 15,
 * item 3): rift_connect returns at once, the loop keeps serving other
 * connections while a slow DNS answer is awaited, and a name that does
 * not resolve ends the connection with an ERROR event carrying
 * RIFT_ENAME, like any other connect failure.  The resolver is the same
 * for every transport: these run over TCP, where a name ("localhost")
 * reaches a listener of ours.
 */
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "harness.h"

static void tcp_only(void)
{
	if (strcmp(rt_transport(), "tcp") != 0)
		SKIP("host names are resolved before any transport: tested "
		     "over TCP");
}

/*
 * A name whose resolution takes 300 ms (a fault point plays the slow DNS
 * server): rift_connect returns at once, an echo on another connection
 * of the same context goes round meanwhile, and the named connection
 * connects once the answer is there.  Before, rift_connect called
 * getaddrinfo itself and returned 300 ms later, the loop stopped.
 */
TEST(host_names_resolve_off_the_loop)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { .echo = true }, srv2 = { 0 }, cli = { 0 },
		    named = { 0 };
	rift_listener *l = h_listen(ctx, &srv), *l2 = h_listen(ctx, &srv2);
	rift_conn *c, *conns[4];
	uint64_t t0, took_us, echoed_us = 0;
	char url[64];

	tcp_only();
	h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	snprintf(url, sizeof(url), "tcp://localhost:%d",
		 rift_listener_port(l2));
	rift__fault_arm(RIFT_FAULT_RESOLVE_SLOW, 1, 1);
	t0 = h_now_us();
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &named, &c), 0);
	took_us = h_now_us() - t0;
	named.conn = c;
	CHECK_EQ(rift_conn_send(cli.conn, "ping", 4), 0);
	while (!named.connected && !named.disconnected &&
	       h_now_us() - t0 < 10000000u) {
		rift_ctx_run(ctx, 5);
		if (!echoed_us && cli.recv_count == 1)
			echoed_us = h_now_us() - t0;
	}
	printf("rift_connect took %.1f ms, the echo came back after %.1f ms, "
	       "connected after %.1f ms\n", took_us / 1e3, echoed_us / 1e3,
	       (h_now_us() - t0) / 1e3);
	CHECK_EQ(rift__fault_fired(RIFT_FAULT_RESOLVE_SLOW), 1);
	rift__fault_clear();
	CHECK(took_us < 100000);
	CHECK(echoed_us != 0 && echoed_us < 250000);
	CHECK(named.connected);
	CHECK(h_now_us() - t0 >= 300000);
	conns[0] = cli.conn;
	conns[1] = c;
	conns[2] = srv.conn;
	conns[3] = srv2.conn;
	rift_listener_close(l2, NULL);
	h_teardown(ctx, l, conns, 4);
}

/* A name that does not resolve: rift_connect succeeds, the connection
 * ends with ERROR, RIFT_ENAME and getaddrinfo's reason. */
TEST(unresolvable_host_name_ends_the_connection_with_ename)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side cli = { 0 };
	rift_conn *c, *conns[1];

	tcp_only();
	CHECK_EQ(rift_connect(ctx, "tcp://no-such-host.invalid:7788",
			      &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	CHECK(h_wait(ctx, &cli.errors, 60000));
	printf("%s: %s\n", rift_err_name(cli.last_status), cli.last_message);
	CHECK_EQ(cli.last_status, RIFT_ENAME);
	CHECK_CONTAINS(cli.last_message, "resolve 'no-such-host.invalid'");
	CHECK_EQ(cli.connected, 0);
	conns[0] = c;
	h_teardown(ctx, NULL, conns, 1);
}

/* Closed while its name is being resolved: the close callback runs at
 * once, and the resolver's late answer touches nothing (ASan). */
TEST(connection_closed_while_resolving_is_gone_at_once)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side cli = { 0 };
	rift_conn *c, *conns[1];
	uint64_t t0;

	tcp_only();
	rift__fault_arm(RIFT_FAULT_RESOLVE_SLOW, 1, 1);
	CHECK_EQ(rift_connect(ctx, "tcp://localhost:9", &h_callbacks, &cli,
			      &c), 0);
	cli.conn = c;
	rift_ctx_run(ctx, 10);
	t0 = h_now_us();
	conns[0] = c;
	h_teardown(ctx, NULL, conns, 1);
	CHECK(h_now_us() - t0 < 200000);
	CHECK_EQ(cli.connected, 0);
	/* The resolver thread finishes on its own, later. */
	usleep(400000);
}
