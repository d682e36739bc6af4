/*
 * Byte streams (rift.h, "Byte streams") through the API, both ends in one
 * context, over soft-RoCE in the lab (--transport rdma; on TCP these
 * skip, saying why): bytes whole and in order across many windows of a
 * small receive buffer, backpressure by rift_stream_read_stop, the peer's
 * disconnect, and the close's lifetime.  The protocol itself is checked
 * against a client written from Valkey's specification in
 * tests/lab/valkey-rdma.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define RX 4096

static void need_rdma(void)
{
	if (strcmp(rt_transport(), "rdma") != 0)
		SKIP("byte streams are RDMA only: run with --transport rdma "
		     "(the lab)");
}

/* One end: what it read, what it has left to write, what it was told. */
struct end {
	rift_stream *s;
	uint8_t *in;            /* bytes read */
	size_t in_len, in_cap;
	const uint8_t *out;     /* bytes to write, from out_pos */
	size_t out_len, out_pos;
	int echo;               /* write back what is read */
	int connected, writable, disconnected, closed, reads;
	int last_status;
};

static struct end *server_end; /* what the next accepted stream uses */
static int accepted;

static void push(struct end *e)
{
	while (e->out_pos < e->out_len) {
		int n = rift_stream_write(e->s, e->out + e->out_pos,
					  e->out_len - e->out_pos);

		if (n == RIFT_EAGAIN)
			return;
		CHECK(n > 0);
		e->out_pos += (size_t)n;
	}
}

static void on_read(rift_stream *s, const void *data, size_t len)
{
	struct end *e = rift_stream_user(s);

	CHECK(len > 0);
	e->reads++;
	if (e->in_len + len > e->in_cap) {
		e->in_cap = (e->in_len + len) * 2;
		e->in = realloc(e->in, e->in_cap);
		CHECK(e->in != NULL);
	}
	memcpy(e->in + e->in_len, data, len);
	e->in_len += len;
	if (e->echo) {
		/* What is read is written back, from the copy kept. */
		e->out = e->in;
		e->out_len = e->in_len;
		push(e);
	}
}

static void on_event(rift_stream *s, const rift_event *ev)
{
	struct end *e = rift_stream_user(s);

	switch (ev->type) {
	case RIFT_EVENT_CONNECTED:
		e->connected++;
		break;
	case RIFT_EVENT_WRITABLE:
		e->writable++;
		push(e);
		break;
	case RIFT_EVENT_DISCONNECTED:
	case RIFT_EVENT_ERROR:
		e->disconnected++;
		e->last_status = ev->status;
		break;
	default:
		break;
	}
}

static const rift_stream_callbacks cbs = { .on_event = on_event,
					   .on_read = on_read };

static void on_accept(rift_stream_listener *l, rift_stream *s)
{
	(void)l;
	server_end->s = s;
	rift_stream_set_user(s, server_end);
	accepted++;
}

static void count_close(rift_stream *s)
{
	((struct end *)rift_stream_user(s))->closed++;
}

/* A listener and a connected pair of ends, with rx_size RX both ways. */
static rift_stream_listener *pair(rift_ctx *ctx, struct end *srv,
				  struct end *cli)
{
	rift_stream_listener *l;
	char url[300];

	server_end = srv;
	accepted = 0;
	snprintf(url, sizeof(url), "valkey-rdma://%s:0?rx_size=%d", rt_host(),
		 RX);
	CHECK_EQ(rift_stream_listen(ctx, url, &cbs, NULL, on_accept, &l), 0);
	snprintf(url, sizeof(url), "valkey-rdma://%s:%d?rx_size=%d", rt_host(),
		 rift_stream_listener_port(l), RX);
	CHECK_EQ(rift_stream_connect(ctx, url, &cbs, cli, &cli->s), 0);
	CHECK_EQ(rift_stream_write(cli->s, "x", 1), RIFT_ENOTCONN);
	CHECK(h_wait(ctx, &cli->connected, 20000));
	CHECK(h_wait(ctx, &accepted, 10000));
	CHECK_CONTAINS(rift_stream_peer(cli->s), rt_host());
	return l;
}

/* Close both ends and the listener, the context last: it refuses while
 * any is open. */
static void finish(rift_ctx *ctx, rift_stream_listener *l, struct end *srv,
		   struct end *cli)
{
	rift_stream_close(cli->s, count_close);
	rift_stream_close(srv->s, count_close);
	rift_stream_close(cli->s, count_close); /* ignored */
	CHECK_EQ(rift_stream_write(cli->s, "x", 1), RIFT_ECLOSED);
	CHECK_EQ(cli->closed + srv->closed, 0); /* never from inside */
	rift_stream_listener_close(l, NULL);
	CHECK_EQ(rift_ctx_destroy(ctx), RIFT_EBUSY);
	CHECK(h_wait(ctx, &cli->closed, 5000));
	CHECK(h_wait(ctx, &srv->closed, 5000));
	CHECK_EQ(cli->closed, 1);
	CHECK_EQ(srv->closed, 1);
	for (int i = 0; i < 100 && rift_ctx_destroy(ctx) == RIFT_EBUSY; i++)
		rift_ctx_run(ctx, 10);
	free(srv->in);
	free(cli->in);
}

TEST_T(stream_bytes_cross_many_windows_in_order)
{
	struct end srv = { .echo = 1 }, cli = { 0 };
	size_t total = 200000;
	rift_stream_stats st;
	rift_stream_listener *l;
	rift_ctx *ctx;
	uint8_t *data;

	need_rdma();
	ctx = h_ctx(NULL);
	l = pair(ctx, &srv, &cli);
	data = malloc(total);
	CHECK(data != NULL);
	h_fill(data, total, 7, 0);
	cli.out = data;
	cli.out_len = total;
	push(&cli);
	/* the peer's buffer is RX bytes: the first write is cut there */
	CHECK_EQ(cli.out_pos, RX);
	for (int i = 0; i < 6000 && cli.in_len < total; i++)
		rift_ctx_run(ctx, 10);
	CHECK_EQ(cli.in_len, total);
	CHECK(memcmp(cli.in, data, total) == 0);
	CHECK(cli.writable > 0);
	rift_stream_stats_init(&st);
	CHECK_EQ(rift_stream_stats_get(cli.s, &st), 0);
	CHECK_EQ(st.bytes_written, total);
	CHECK_EQ(st.bytes_read, total);
	/* 200000 bytes through 4096-byte buffers: each side advertised its
	 * own again and took the other's again about 49 times */
	CHECK(st.rx_advertised >= total / RX);
	CHECK(st.tx_windows >= total / RX);
	CHECK_EQ(st.ctrl_recv, st.keepalives_recv + st.tx_windows);
	finish(ctx, l, &srv, &cli);
	free(data);
}

TEST_T(stream_read_stop_holds_the_writer)
{
	struct end srv = { 0 }, cli = { 0 };
	uint8_t data[3 * RX];
	rift_stream_listener *l;
	rift_ctx *ctx;

	need_rdma();
	ctx = h_ctx(NULL);
	l = pair(ctx, &srv, &cli);
	h_fill(data, sizeof(data), 9, 0);
	CHECK_EQ(rift_stream_read_stop(srv.s), 0);
	cli.out = data;
	cli.out_len = sizeof(data);
	push(&cli);
	for (int i = 0; i < 30; i++)
		rift_ctx_run(ctx, 10);
	/* Nothing consumed: no new window, the writer stays at RX */
	CHECK_EQ(srv.in_len, 0);
	CHECK_EQ(cli.out_pos, RX);
	CHECK_EQ(rift_stream_write(cli.s, data, 1), RIFT_EAGAIN);
	CHECK_EQ(rift_stream_read_start(srv.s), 0);
	CHECK_EQ(srv.reads, 0); /* from the next round, not the call */
	for (int i = 0; i < 3000 && srv.in_len < sizeof(data); i++)
		rift_ctx_run(ctx, 10);
	CHECK_EQ(srv.in_len, sizeof(data));
	CHECK(memcmp(srv.in, data, sizeof(data)) == 0);
	finish(ctx, l, &srv, &cli);
}

TEST_T(stream_peer_close_is_disconnected_zero)
{
	struct end srv = { 0 }, cli = { 0 };
	rift_stream_listener *l;
	rift_ctx *ctx;

	need_rdma();
	ctx = h_ctx(NULL);
	l = pair(ctx, &srv, &cli);
	CHECK_EQ(rift_stream_write(cli.s, "bye", 3), 3);
	rift_stream_close(cli.s, count_close);
	/* The write taken before the close arrives first. */
	CHECK(h_wait(ctx, &srv.disconnected, 5000));
	CHECK_EQ(srv.in_len, 3);
	CHECK_EQ(srv.last_status, 0);
	CHECK_STR(rift_stream_last_error(srv.s), "");
	CHECK_EQ(rift_stream_write(srv.s, "x", 1), RIFT_ENOTCONN);
	CHECK(h_wait(ctx, &cli.closed, 5000));
	cli.s = NULL;
	rift_stream_close(srv.s, count_close);
	rift_stream_listener_close(l, NULL);
	CHECK(h_wait(ctx, &srv.closed, 5000));
	for (int i = 0; i < 100 && rift_ctx_destroy(ctx) == RIFT_EBUSY; i++)
		rift_ctx_run(ctx, 10);
	free(srv.in);
}
