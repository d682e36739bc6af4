/*
 * Orderly and abortive close (issue 14, item 5).  rift_conn_close
 * delivers what was queued before it, within linger_ms, and only then
 * tells the peer, which sees DISCONNECTED with status 0 after the last
 * message; rift_conn_abort drops the queue and the peer sees
 * RIFT_ECONNRESET.  Every test runs on the runner's transport.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "harness.h"

#define MSG (64u << 10)
#define COUNT 200u

/* The receiving end: every message MSG bytes of stream `seed`, in order. */
struct rx {
	rift_conn *conn;
	uint64_t seed;
	bool stop;              /* rift_conn_recv_stop as soon as accepted */
	uint64_t stop_at;       /* ... and once this many arrived (0: never):
				   the tests cut paths mid-transfer however
				   fast the transport is (verbs delivers all
				   200 before a loop round ends) */
	uint64_t got, bad;
	int disconnected, status, path_down, path_changed;
	uint64_t got_at_end;    /* messages delivered when DISCONNECTED came */
	char message[256];
};

/* The closing end. */
struct tx {
	rift_conn *conn;
	int closed;             /* close callbacks run */
	int events_after_close;
	bool closing;
	char close_error[RIFT_ERRMSG_LEN]; /* rift_conn_last_error in close_cb */
	uint64_t closed_us;
};

static void rx_event(rift_conn *conn, const rift_event *ev)
{
	struct rx *r = rift_conn_user(conn);

	switch (ev->type) {
	case RIFT_EVENT_DISCONNECTED:
		r->disconnected++;
		r->status = ev->status;
		r->got_at_end = r->got;
		snprintf(r->message, sizeof(r->message), "%s", ev->message);
		break;
	case RIFT_EVENT_PATH_DOWN:
		if (!ev->standby)
			r->path_down++;
		break;
	case RIFT_EVENT_PATH_CHANGED:
		r->path_changed++;
		break;
	default:
		break;
	}
}

static void rx_recv(rift_conn *conn, rift_msg *msg)
{
	struct rx *r = rift_conn_user(conn);
	static uint8_t want[MSG];

	h_fill(want, MSG, r->seed, r->got);
	if (rift_msg_len(msg) != MSG || rift_msg_seq(msg) != r->got + 1 ||
	    memcmp(rift_msg_data(msg), want, MSG) != 0)
		r->bad++;
	r->got++;
	if (r->stop_at && r->got == r->stop_at)
		CHECK_EQ(rift_conn_recv_stop(conn), 0);
}

static const rift_conn_callbacks rx_cbs = { .on_event = rx_event,
					    .on_recv = rx_recv };

static void rx_accept(rift_listener *l, rift_conn *conn)
{
	struct rx *r = rift_listener_user(l);

	if (r->conn)
		FAIL("unexpected second connection");
	r->conn = conn;
	if (r->stop)
		CHECK_EQ(rift_conn_recv_stop(conn), 0);
}

static void tx_event(rift_conn *conn, const rift_event *ev)
{
	struct tx *t = rift_conn_user(conn);

	if (t->closing)
		t->events_after_close++;
	(void)ev;
}

static const rift_conn_callbacks tx_cbs = { .on_event = tx_event };

static void tx_closed(rift_conn *conn)
{
	struct tx *t = rift_conn_user(conn);

	t->closed++;
	t->closed_us = h_now_us();
	snprintf(t->close_error, sizeof(t->close_error), "%s",
		 rift_conn_last_error(conn));
}

static rift_listener *rx_listen(rift_ctx *ctx, struct rx *r)
{
	rift_listener *l = NULL;
	int rc = rift_listen(ctx, rt_url(0), &rx_cbs, r, rx_accept, &l);

	if (rc)
		FAIL("rift_listen %s: %s: %s", rt_url(0), rift_err_name(rc),
		     rift_ctx_last_error(ctx));
	return l;
}

/* Connect t to l and wait until both ends are up. */
static void tx_connect(rift_ctx *ctx, rift_listener *l, struct tx *t,
		       struct rx *r)
{
	int rc = rift_connect(ctx, rt_url(rift_listener_port(l)), &tx_cbs, t,
			      &t->conn);
	uint64_t end = h_now_us() + 10000000u;

	if (rc)
		FAIL("rift_connect: %s: %s", rift_err_name(rc),
		     rift_ctx_last_error(ctx));
	while ((!r->conn || rift_conn_transport(t->conn) == RIFT_TRANSPORT_NONE) &&
	       h_now_us() < end)
		rift_ctx_run(ctx, 5);
	if (!r->conn)
		FAIL("not connected after 10 s: %s",
		     rift_conn_last_error(t->conn));
}

/* Queue message i of stream seed; returns rift_conn_send's code. */
static int tx_send(rift_conn *conn, uint64_t seed, uint64_t i)
{
	static uint8_t buf[MSG];

	h_fill(buf, MSG, seed, i);
	return rift_conn_send(conn, buf, MSG);
}

static void tx_close(struct tx *t)
{
	t->closing = true;
	rift_conn_close(t->conn, tx_closed);
}

/* Close what is left (the listener, the receiving end) and check that
 * nothing leaked. */
static void finish(rift_ctx *ctx, rift_listener *l, struct rx *r)
{
	rift_conn *conns[1] = { r->conn };

	h_teardown(ctx, l, conns, r->conn ? 1 : 0);
}

/*
 * The case: 200 x 64 KiB queued and closed at once arrived as 0
 * of 200 while the peer was told the close was orderly.  All 200 arrive,
 * in order and byte for byte, before DISCONNECTED with status 0.
 */
TEST_TIMEOUT(close_delivers_what_was_queued_before_it, 120)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct rx r = { .seed = 7 };
	struct tx t = { 0 };
	rift_listener *l = rx_listen(ctx, &r);

	tx_connect(ctx, l, &t, &r);
	for (uint64_t i = 0; i < COUNT; i++)
		CHECK_EQ(tx_send(t.conn, 7, i), 0);
	tx_close(&t);
	CHECK_EQ(t.closed, 0); /* never from inside the call */
	CHECK_EQ(rift_conn_send(t.conn, "x", 1), RIFT_ECLOSED);
	CHECK(h_wait(ctx, &r.disconnected, 60000));
	printf("delivered %llu of %u before DISCONNECTED (status %s): %s\n",
	       (unsigned long long)r.got_at_end, COUNT,
	       rift_err_name(r.status), r.message);
	CHECK_EQ(r.got_at_end, COUNT);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.status, 0);
	CHECK(h_wait(ctx, &t.closed, 10000));
	CHECK_STR(t.close_error, ""); /* the close was orderly */
	CHECK_EQ(t.events_after_close, 0);
	for (int i = 0; i < 20; i++)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(t.closed, 1);
	CHECK_EQ(r.disconnected, 1);
	finish(ctx, l, &r);
}

static rift_ctx_stats ctx_stats(rift_ctx *ctx)
{
	rift_ctx_stats st;

	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(ctx, &st), 0);
	return st;
}

/* Fill the send window (RIFT_EAGAIN); returns how many were queued. */
static uint64_t tx_fill(rift_conn *conn, uint64_t seed)
{
	uint64_t n = 0;
	int rc;

	while ((rc = tx_send(conn, seed, n)) == 0)
		n++;
	CHECK_EQ(rc, RIFT_EAGAIN);
	return n;
}

/*
 * What an abort looks like from the peer: RIFT_ECONNRESET, from the ERROR
 * frame, on every transport.  (Over verbs the frame was posted right
 * before the QP went to ERR, which could flush it, and the peer then
 * learned of the end from the path: "peer disconnected", or the grace
 * time.  The path now waits for it to leave: rdma_reap.c.)
 */
static void check_reset(const struct rx *r)
{
	printf("peer: DISCONNECTED %s: %s\n", rift_err_name(r->status),
	       r->message);
	CHECK_EQ(r->status, RIFT_ECONNRESET);
}

/*
 * A peer that stopped receiving holds what arrives without acknowledging
 * it: the close waits linger_ms, no longer, then drops the queue, and the
 * peer hears of it as a reset, not as an orderly close.
 */
TEST_TIMEOUT(close_linger_expires_when_the_peer_stops_receiving, 60)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct rx r = { .seed = 3, .stop = true };
	struct tx t = { 0 };
	rift_listener *l;
	uint64_t queued, t0, took_ms;

	cfg.linger_ms = 300;
	cfg.send_window = 1u << 20;
	ctx = h_ctx(&cfg);
	l = rx_listen(ctx, &r);
	tx_connect(ctx, l, &t, &r);
	queued = tx_fill(t.conn, 3);
	CHECK(queued >= 1);
	t0 = h_now_us();
	tx_close(&t);
	CHECK(h_wait(ctx, &t.closed, 10000));
	took_ms = (t.closed_us - t0) / 1000;
	printf("queued %llu, close ended after %llu ms: %s\n",
	       (unsigned long long)queued, (unsigned long long)took_ms,
	       t.close_error);
	CHECK(took_ms >= 290);
	CHECK(took_ms <= 300 + 3000);
	CHECK_CONTAINS(t.close_error, "linger_ms (300 ms) passed with");
	CHECK_CONTAINS(t.close_error, "unacknowledged");
	CHECK_EQ(ctx_stats(ctx).closes_aborted, 1);
	CHECK(h_wait(ctx, &r.disconnected, 15000));
	check_reset(&r);
	CHECK_EQ(r.got, 0); /* it never received: nothing was delivered */
	CHECK_EQ(t.events_after_close, 0);
	CHECK_EQ(t.closed, 1);
	finish(ctx, l, &r);
}

/*
 * rift_conn_abort drops the queue at once: nothing of it leaves, and the
 * peer sees RIFT_ECONNRESET.
 */
TEST_TIMEOUT(abort_drops_the_queue_and_tells_the_peer, 60)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct rx r = { .seed = 9 };
	struct tx t = { 0 };
	rift_listener *l = rx_listen(ctx, &r);

	tx_connect(ctx, l, &t, &r);
	for (uint64_t i = 0; i < COUNT; i++)
		CHECK_EQ(tx_send(t.conn, 9, i), 0);
	t.closing = true;
	rift_conn_abort(t.conn, tx_closed);
	CHECK_EQ(t.closed, 0); /* never from inside the call */
	CHECK_EQ(rift_conn_send(t.conn, "x", 1), RIFT_ECLOSED);
	rift_conn_close(t.conn, NULL); /* ignored: it is closed */
	CHECK(h_wait(ctx, &t.closed, 5000));
	CHECK_CONTAINS(t.close_error, "rift_conn_abort with 200 messages");
	CHECK_EQ(ctx_stats(ctx).closes_aborted, 1);
	CHECK(h_wait(ctx, &r.disconnected, 15000));
	check_reset(&r);
	CHECK_EQ(r.got, 0); /* the queue never left */
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(t.events_after_close, 0);
	for (int i = 0; i < 20; i++)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(t.closed, 1);
	finish(ctx, l, &r);
}

static int first_cb_runs;
static void first_cb(rift_conn *conn)
{
	(void)conn;
	first_cb_runs++;
}

/*
 * rift_conn_abort on a close that lingers ends it now, and its callback
 * replaces the close's; once the close has ended, a further abort changes
 * nothing.
 */
TEST_TIMEOUT(abort_cuts_a_linger_short, 60)
{
	rift_ctx *ctx = h_ctx(NULL); /* linger_ms: the default, 10 s */
	struct rx r = { .seed = 5, .stop = true };
	struct tx t = { 0 };
	rift_listener *l = rx_listen(ctx, &r);
	uint64_t t0;

	tx_connect(ctx, l, &t, &r);
	tx_fill(t.conn, 5);
	t.closing = true;
	rift_conn_close(t.conn, first_cb);
	for (int i = 0; i < 20; i++)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(first_cb_runs, 0); /* lingering: the peer holds the queue */
	t0 = h_now_us();
	rift_conn_abort(t.conn, tx_closed);
	rift_conn_abort(t.conn, first_cb); /* ended already: nothing */
	CHECK(h_wait(ctx, &t.closed, 5000));
	CHECK((t.closed_us - t0) / 1000 < 1000);
	CHECK_CONTAINS(t.close_error, "rift_conn_abort with");
	CHECK(h_wait(ctx, &r.disconnected, 15000));
	check_reset(&r);
	for (int i = 0; i < 20; i++)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(t.closed, 1);
	CHECK_EQ(first_cb_runs, 0);
	CHECK_EQ(ctx_stats(ctx).closes_aborted, 1);
	finish(ctx, l, &r);
}

/*
 * Both ends queue a stream and close at once.  Each acknowledges (and
 * drops) what arrives after its own close, so both queues drain, both
 * CLOSEs pass, and both closes end in order, with no event on either.
 */
TEST_TIMEOUT(close_on_both_ends_at_once, 60)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct rx r = { .seed = 11 };
	struct tx t = { 0 }, ts = { 0 };
	rift_listener *l = rx_listen(ctx, &r);

	tx_connect(ctx, l, &t, &r);
	/* The server's end closes like the client's. */
	ts.conn = r.conn;
	r.conn = NULL;
	rift_conn_set_callbacks(ts.conn, &tx_cbs);
	rift_conn_set_user(ts.conn, &ts);
	for (uint64_t i = 0; i < COUNT / 2; i++) {
		CHECK_EQ(tx_send(t.conn, 11, i), 0);
		CHECK_EQ(tx_send(ts.conn, 12, i), 0);
	}
	tx_close(&t);
	tx_close(&ts);
	CHECK(h_wait(ctx, &t.closed, 30000));
	CHECK(h_wait(ctx, &ts.closed, 30000));
	printf("client: \"%s\"; server: \"%s\"\n", t.close_error,
	       ts.close_error);
	CHECK_STR(t.close_error, "");
	CHECK_STR(ts.close_error, "");
	CHECK_EQ(ctx_stats(ctx).closes_aborted, 0);
	for (int i = 0; i < 20; i++)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(t.closed, 1);
	CHECK_EQ(ts.closed, 1);
	CHECK_EQ(t.events_after_close + ts.events_after_close, 0);
	CHECK_EQ(r.got, 0); /* nothing reached the application */
	finish(ctx, l, &r);
}

/*
 * The path breaks twice while a close delivers: a real break (shutdown(),
 * rdma_disconnect()) and a send failing at a fault point.  The session
 * re-attaches within linger_ms, replays what was not acknowledged, and
 * the peer still gets all 200 once, in order, before status 0.
 */
TEST_TIMEOUT(close_rides_out_path_breaks, 120)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct rx r = { .seed = 13 };
	struct tx t = { 0 };
	rift_listener *l;
	rift__fault_point fp = strcmp(rt_transport(), "tcp")
				       ? RIFT_FAULT_RDMA_SEND
				       : RIFT_FAULT_TCP_WRITE;
	uint64_t end;
	bool cut = false, armed = false;

	cfg.retry_delay_ms = 5;
	ctx = h_ctx(&cfg);
	r.stop_at = COUNT / 5;
	l = rx_listen(ctx, &r);
	tx_connect(ctx, l, &t, &r);
	for (uint64_t i = 0; i < COUNT; i++)
		CHECK_EQ(tx_send(t.conn, 13, i), 0);
	tx_close(&t);
	end = h_now_us() + 60000000u;
	while (!r.disconnected && h_now_us() < end) {
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 10);
		if (!cut && r.got >= COUNT / 5) {
			CHECK(r.got < COUNT);
			CHECK_EQ(rift__conn_cut(t.conn), 0);
			cut = true;
			r.stop_at = COUNT * 3 / 5;
			CHECK_EQ(rift_conn_recv_start(r.conn), 0);
		}
		if (!armed && r.got >= COUNT * 3 / 5 && r.path_changed) {
			CHECK(r.got < COUNT);
			rift__fault_arm(fp, 1, 1);
			armed = true;
			CHECK_EQ(rift_conn_recv_start(r.conn), 0);
		}
	}
	printf("delivered %llu, path down %d changed %d, fault fired %llu: "
	       "%s %s\n",
	       (unsigned long long)r.got_at_end, r.path_down, r.path_changed,
	       (unsigned long long)rift__fault_fired(fp),
	       rift_err_name(r.status), r.message);
	CHECK(cut && armed);
	CHECK_EQ(rift__fault_fired(fp), 1);
	rift__fault_clear();
	CHECK_EQ(r.disconnected, 1);
	CHECK_EQ(r.got_at_end, COUNT);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.status, 0);
	CHECK(r.path_changed >= 2);
	CHECK(h_wait(ctx, &t.closed, 10000));
	CHECK_STR(t.close_error, "");
	CHECK_EQ(t.events_after_close, 0);
	finish(ctx, l, &r);
}

/*
 * Closed while re-attaching: the path is down when rift_conn_close is
 * called; the close waits for the re-attach, and the replay delivers
 * everything before the orderly end.
 */
TEST_TIMEOUT(close_while_reattaching_delivers_everything, 120)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct rx r = { .seed = 17 };
	struct tx t = { 0 };
	rift_listener *l;
	uint64_t end;

	cfg.retry_delay_ms = 5;
	ctx = h_ctx(&cfg);
	r.stop_at = COUNT / 5;
	l = rx_listen(ctx, &r);
	tx_connect(ctx, l, &t, &r);
	for (uint64_t i = 0; i < COUNT; i++)
		CHECK_EQ(tx_send(t.conn, 17, i), 0);
	end = h_now_us() + 30000000u;
	while (r.got < COUNT / 5 && h_now_us() < end)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 10);
	CHECK(r.got >= COUNT / 5 && r.got < COUNT);
	CHECK_EQ(rift__conn_cut(t.conn), 0);
	while (rift_conn_transport(t.conn) != RIFT_TRANSPORT_NONE &&
	       h_now_us() < end)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 10);
	CHECK_EQ(rift_conn_transport(t.conn), RIFT_TRANSPORT_NONE);
	CHECK_EQ(rift_conn_recv_start(r.conn), 0);
	tx_close(&t); /* detached: re-attaching */
	CHECK(h_wait(ctx, &r.disconnected, 60000));
	printf("delivered %llu, path changed %d: %s %s\n",
	       (unsigned long long)r.got_at_end, r.path_changed,
	       rift_err_name(r.status), r.message);
	CHECK_EQ(r.got_at_end, COUNT);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.status, 0);
	CHECK(r.path_changed >= 1);
	CHECK(h_wait(ctx, &t.closed, 10000));
	CHECK_STR(t.close_error, "");
	CHECK_EQ(t.events_after_close, 0);
	finish(ctx, l, &r);
}

/* Run two contexts on this thread until *flag or timeout_ms. */
static bool run2(rift_ctx *a, rift_ctx *b, const int *flag, int timeout_ms)
{
	uint64_t end = h_now_us() + (uint64_t)timeout_ms * 1000u;

	while (!*flag && h_now_us() < end) {
		if (a)
			rift_ctx_run(a, 1);
		rift_ctx_run(b, 1);
	}
	return *flag != 0;
}

static void no_timer(rift_timer *tm, void *user)
{
	(void)tm;
	(void)user;
}

/*
 * rift_ctx_destroy does not wait for a close that lingers (here on a peer
 * that stopped receiving, with the default linger of 10 s): it aborts it
 * and runs its callback.  While something else is still open it refuses,
 * and the close goes on lingering.
 */
TEST_TIMEOUT(ctx_destroy_aborts_a_lingering_close, 60)
{
	rift_config cfg = h_config();
	rift_ctx *sctx, *cctx;
	struct rx r = { .seed = 19, .stop = true };
	struct tx t = { 0 };
	rift_listener *l;
	rift_timer *tm = NULL;
	rift_conn *conns[1];
	uint64_t t0;
	int rc, up = 0;

	cfg.send_window = 1u << 20;
	sctx = h_ctx(&cfg);
	cctx = h_ctx(&cfg);
	l = rx_listen(sctx, &r);
	rc = rift_connect(cctx, rt_url(rift_listener_port(l)), &tx_cbs, &t,
			  &t.conn);
	CHECK_EQ(rc, 0);
	for (int i = 0; i < 10000 && !up; i++) {
		rift_ctx_run(cctx, 1);
		rift_ctx_run(sctx, 1);
		up = r.conn && rift_conn_transport(t.conn) != RIFT_TRANSPORT_NONE;
	}
	CHECK(up);
	tx_fill(t.conn, 19);
	tx_close(&t);
	for (int i = 0; i < 50; i++) {
		rift_ctx_run(cctx, 1);
		rift_ctx_run(sctx, 1);
	}
	CHECK_EQ(t.closed, 0); /* lingering */
	CHECK_EQ(rift_timer_create(cctx, no_timer, NULL, &tm), 0);
	CHECK_EQ(rift_ctx_destroy(cctx), RIFT_EBUSY);
	CHECK_EQ(t.closed, 0); /* refused, changing nothing */
	rift_timer_destroy(tm);
	t0 = h_now_us();
	CHECK_EQ(rift_ctx_destroy(cctx), 0);
	CHECK((h_now_us() - t0) / 1000 < 1000);
	CHECK_EQ(t.closed, 1); /* from inside rift_ctx_destroy */
	CHECK_CONTAINS(t.close_error, "rift_ctx_destroy with");
	CHECK(run2(NULL, sctx, &r.disconnected, 15000));
	check_reset(&r);
	conns[0] = r.conn;
	h_teardown(sctx, l, conns, 1);
}

/*
 * A close whose CLOSE has gone (everything acknowledged) has nothing left
 * to drop: rift_ctx_destroy ends it in order, without waiting for the
 * peer's answer, and the peer sees status 0.
 */
TEST_TIMEOUT(ctx_destroy_after_close_sent_ends_in_order, 60)
{
	rift_config cfg = h_config();
	rift_ctx *sctx, *cctx;
	struct rx r = { .seed = 31 };
	struct tx t = { 0 };
	rift_listener *l;
	rift_conn *conns[1];
	rift_conn_stats st;
	int up = 0;

	sctx = h_ctx(&cfg);
	cctx = h_ctx(&cfg);
	l = rx_listen(sctx, &r);
	CHECK_EQ(rift_connect(cctx, rt_url(rift_listener_port(l)), &tx_cbs,
			      &t, &t.conn),
		 0);
	for (int i = 0; i < 10000 && !up; i++) {
		rift_ctx_run(cctx, 1);
		rift_ctx_run(sctx, 1);
		up = r.conn && rift_conn_transport(t.conn) != RIFT_TRANSPORT_NONE;
	}
	CHECK(up);
	CHECK_EQ(tx_send(t.conn, 31, 0), 0);
	rift_conn_stats_init(&st);
	for (int i = 0; i < 10000; i++) {
		rift_ctx_run(cctx, 1);
		rift_ctx_run(sctx, 1);
		CHECK_EQ(rift_conn_stats_get(t.conn, &st), 0);
		if (r.got == 1 && st.unacked_msgs == 0)
			break;
	}
	CHECK_EQ(st.unacked_msgs, 0);
	tx_close(&t);
	for (int i = 0; i < 5; i++) /* CLOSE goes; the peer does not run */
		rift_ctx_run(cctx, 1);
	CHECK_EQ(t.closed, 0); /* waiting for the answer */
	CHECK_EQ(rift_ctx_destroy(cctx), 0);
	CHECK_EQ(t.closed, 1);
	CHECK_STR(t.close_error, ""); /* in order: nothing was dropped */
	CHECK(run2(NULL, sctx, &r.disconnected, 10000));
	CHECK_EQ(r.status, 0);
	CHECK_EQ(r.got_at_end, 1);
	CHECK_EQ(r.bad, 0);
	conns[0] = r.conn;
	h_teardown(sctx, l, conns, 1);
}

/*
 * linger_ms 0: no wait.  With nothing unacknowledged the close is still
 * orderly; with a queue it is an abort.
 */
TEST_TIMEOUT(close_with_linger_0, 60)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct rx r = { .seed = 23 }, r2 = { .seed = 29 };
	struct tx t = { 0 }, t2 = { 0 };
	rift_listener *l, *l2;

	cfg.linger_ms = 0;
	ctx = h_ctx(&cfg);
	l = rx_listen(ctx, &r);
	tx_connect(ctx, l, &t, &r);
	tx_close(&t);
	CHECK(h_wait(ctx, &r.disconnected, 10000));
	CHECK_EQ(r.status, 0);
	CHECK(h_wait(ctx, &t.closed, 10000));
	CHECK_STR(t.close_error, "");

	l2 = rx_listen(ctx, &r2);
	tx_connect(ctx, l2, &t2, &r2);
	for (uint64_t i = 0; i < COUNT; i++)
		CHECK_EQ(tx_send(t2.conn, 29, i), 0);
	tx_close(&t2);
	CHECK(h_wait(ctx, &t2.closed, 10000));
	CHECK_CONTAINS(t2.close_error, "linger_ms (0 ms) passed with");
	CHECK(h_wait(ctx, &r2.disconnected, 15000));
	check_reset(&r2);
	CHECK_EQ(r2.bad, 0); /* what was on its way may have arrived */
	CHECK_EQ(ctx_stats(ctx).closes_aborted, 1);
	{
		rift_conn *conns[1] = { r2.conn };

		rift_listener_close(l2, NULL);
		rift_conn_close(conns[0], NULL);
	}
	finish(ctx, l, &r);
}
