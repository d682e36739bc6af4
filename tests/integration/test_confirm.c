/*
 * Delivery confirmation and gather sends (issue 15, item 9):
 * rift_conn_send_cb's callback runs once the peer's application has the
 * message (its ack), or with the reason the session ended first; never
 * after rift_conn_close.  rift_conn_sendv sends one message of pieces.
 */
#include <string.h>
#include <sys/uio.h>

#include "harness.h"

struct confirm {
	struct side *srv;       /* the receiving side, to look at */
	int n, zero, failed;    /* callbacks, with status 0, without */
	int order_bad;          /* out of order, or before the peer had it */
	int after_event;        /* failures reported after DISCONNECTED */
	int last_status;
	const struct side *cli;
};

static struct confirm cf;

static void on_confirm(rift_conn *conn, void *user, int status)
{
	uintptr_t i = (uintptr_t)user;

	(void)conn;
	if ((uintptr_t)cf.n != i)
		cf.order_bad++;
	if (status == 0 && cf.srv->recv_count < i + 1)
		cf.order_bad++; /* confirmed before the peer's on_recv */
	if (status != 0 && cf.cli && cf.cli->disconnected)
		cf.after_event++;
	cf.n++;
	if (status == 0)
		cf.zero++;
	else
		cf.failed++;
	cf.last_status = status;
}

TEST_T(send_cb_confirms_each_message_once_the_peer_has_it)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[2];
	uint8_t msg[300];

	memset(&cf, 0, sizeof(cf));
	cf.srv = &srv;
	memset(msg, 'm', sizeof(msg));
	for (uintptr_t i = 0; i < 20; i++)
		CHECK_EQ(rift_conn_send_cb(c, msg, i * 15, on_confirm,
					   (void *)i), 0);
	CHECK_EQ(cf.n, 0); /* never from inside the call */
	h_connected(ctx, &cli);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 20, 10000));
	for (int i = 0; i < 400 && cf.n < 20; i++)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(cf.n, 20);
	CHECK_EQ(cf.zero, 20);
	CHECK_EQ(cf.order_bad, 0);
	/* A plain send among them has no callback. */
	CHECK_EQ(rift_conn_send(c, "x", 1), 0);
	CHECK_EQ(rift_conn_send_cb(c, "y", 1, NULL, NULL), 0);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 22, 5000));
	rift_ctx_run(ctx, 50);
	CHECK_EQ(cf.n, 20);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* The peer stops receiving (nothing it holds is acknowledged), then
 * aborts: each callback runs once, with a failure, before DISCONNECTED. */
TEST_T(send_cb_reports_the_end_of_the_session)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[1];

	memset(&cf, 0, sizeof(cf));
	cf.srv = &srv;
	cf.cli = &cli;
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	CHECK_EQ(rift_conn_recv_stop(srv.conn), 0);
	for (uintptr_t i = 0; i < 5; i++)
		CHECK_EQ(rift_conn_send_cb(c, "held", 4, on_confirm,
					   (void *)i), 0);
	rift_ctx_run(ctx, 100);
	CHECK_EQ(cf.n, 0);
	rift_conn_abort(srv.conn, NULL);
	CHECK(h_wait(ctx, &cli.disconnected, 10000));
	printf("callbacks %d, failed %d (%s), client: %s\n", cf.n, cf.failed,
	       rift_err_name(cf.last_status), cli.last_message);
	CHECK_EQ(cf.n, 5);
	CHECK_EQ(cf.failed, 5);
	CHECK_EQ(cf.after_event, 0);
	CHECK_EQ(cf.order_bad, 0);
	rift_ctx_run(ctx, 50);
	CHECK_EQ(cf.n, 5);
	conns[0] = c;
	h_teardown(ctx, l, conns, 1);
}

/* After rift_conn_close no delivery callback runs, though the close
 * delivers the message. */
TEST_T(send_cb_never_runs_after_close)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[2];

	memset(&cf, 0, sizeof(cf));
	cf.srv = &srv;
	h_connected(ctx, &cli);
	CHECK_EQ(rift_conn_send_cb(c, "bye", 3, on_confirm, (void *)0), 0);
	rift_conn_close(c, NULL);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 1, 5000));
	CHECK(h_wait(ctx, &srv.disconnected, 5000));
	rift_ctx_run(ctx, 50);
	CHECK_EQ(cf.n, 0);
	conns[0] = srv.conn;
	(void)conns;
	h_teardown(ctx, l, conns, 1);
}

static uint8_t gathered[64];
static size_t gathered_len;

static void gather_recv(rift_conn *conn, rift_msg *msg)
{
	struct side *s = rift_conn_user(conn);

	gathered_len = rift_msg_len(msg);
	if (gathered_len <= sizeof(gathered))
		memcpy(gathered, rift_msg_data(msg), gathered_len);
	s->recv_count++;
}

TEST_T(sendv_sends_one_message_of_its_pieces)
{
	static const rift_conn_callbacks cbs = { .on_recv = gather_recv };
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	rift_conn *conns[2];
	struct iovec iov[3] = { { "ab", 2 }, { NULL, 0 }, { "cdef", 4 } };
	struct iovec many[65];

	memset(&cf, 0, sizeof(cf));
	cf.srv = &srv;
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	rift_conn_set_callbacks(srv.conn, &cbs);
	CHECK_EQ(rift_conn_sendv(c, iov, 3, on_confirm, (void *)0), 0);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 1, 5000));
	CHECK_EQ(gathered_len, 6);
	CHECK(memcmp(gathered, "abcdef", 6) == 0);
	for (int i = 0; i < 200 && cf.n < 1; i++)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(cf.zero, 1);
	/* No pieces: an empty message. */
	CHECK_EQ(rift_conn_sendv(c, NULL, 0, NULL, NULL), 0);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 2, 5000));
	CHECK_EQ(gathered_len, 0);
	/* Refused: too many pieces, a piece without memory. */
	for (int i = 0; i < 65; i++)
		many[i] = (struct iovec){ "z", 1 };
	CHECK_EQ(rift_conn_sendv(c, many, 65, NULL, NULL), RIFT_EINVAL);
	iov[1] = (struct iovec){ NULL, 3 };
	CHECK_EQ(rift_conn_sendv(c, iov, 3, NULL, NULL), RIFT_EINVAL);
	CHECK_EQ(rift_conn_sendv(NULL, iov, 1, NULL, NULL), RIFT_EINVAL);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}
