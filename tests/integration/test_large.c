/*
 * Large messages over a byte stream (issue 15): what a steady flow of
 * them costs the process besides the copies the kernel makes.  Counted,
 * never timed: the figures these tests bound are page faults and bytes,
 * which do not change when the machine is busy.  The speed itself is
 * measured by `make bench` (bench/run.sh, the size sweep).
 */
#include <sys/resource.h>

#include "harness.h"

static uint64_t minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_minflt;
}

/* ---- an echo of large messages, both ends with rift_conn_send ---- */

struct pingpong {
	rift_ctx *ctx;
	rift_conn *cli, *srv;
	const uint8_t *msg; /* what the client sends */
	size_t len;
	uint64_t done;      /* round trips completed */
	uint64_t bad;       /* echoes of the wrong length */
	int connected;
};

static void pp_event(rift_conn *conn, const rift_event *ev)
{
	struct pingpong *pp = rift_conn_user(conn);

	if (ev->type == RIFT_EVENT_CONNECTED)
		pp->connected = 1;
	else if (ev->type == RIFT_EVENT_ERROR ||
		 ev->type == RIFT_EVENT_DISCONNECTED)
		FAIL("%s: %s", rift_event_name(ev->type), ev->message);
}

static void pp_srv_recv(rift_conn *conn, rift_msg *msg)
{
	CHECK_EQ(rift_conn_send(conn, rift_msg_data(msg), rift_msg_len(msg)), 0);
}

static void pp_cli_recv(rift_conn *conn, rift_msg *msg)
{
	struct pingpong *pp = rift_conn_user(conn);

	if (rift_msg_len(msg) != pp->len)
		pp->bad++;
	pp->done++;
}

static void pp_accept(rift_listener *l, rift_conn *conn)
{
	struct pingpong *pp = rift_listener_user(l);

	pp->srv = conn;
}

/*
 * Round trips of len bytes: after a few to warm up, the page faults of
 * `rounds` more, per round trip.  A round trip moves the message four
 * times through user memory (two sends, two receives), len / 4096 pages
 * each: a library that takes fresh memory from the system for each
 * message faults in all of them again, every time.
 */
static uint64_t faults_per_round_trip(size_t len, uint64_t rounds)
{
	static const rift_conn_callbacks srv_cbs = { .on_event = pp_event,
						     .on_recv = pp_srv_recv };
	static const rift_conn_callbacks cli_cbs = { .on_event = pp_event,
						     .on_recv = pp_cli_recv };
	const uint64_t warmup = 3;
	struct pingpong pp = { .len = len };
	rift_listener *l;
	rift_conn *conns[2];
	uint8_t *msg = malloc(len);
	uint64_t f0 = 0;

	CHECK(msg != NULL);
	h_fill(msg, len, 3, 0);
	pp.msg = msg;
	pp.ctx = h_ctx(NULL);
	CHECK_EQ(rift_listen(pp.ctx, rt_url(0), &srv_cbs, &pp, pp_accept, &l), 0);
	CHECK_EQ(rift_connect(pp.ctx, rt_url(rift_listener_port(l)), &cli_cbs,
			      &pp, &pp.cli), 0);
	CHECK(h_wait(pp.ctx, &pp.connected, 10000));
	for (uint64_t i = 0; i < warmup + rounds; i++) {
		if (i == warmup)
			f0 = minor_faults();
		CHECK_EQ(rift_conn_send(pp.cli, pp.msg, len), 0);
		CHECK(h_wait_u64(pp.ctx, &pp.done, i + 1, 30000));
	}
	f0 = (minor_faults() - f0) / rounds;
	CHECK_EQ(pp.bad, 0);
	printf("%zu-byte round trips: %llu page faults each (%zu pages a "
	       "message)\n", len, (unsigned long long)f0, len / 4096);
	conns[0] = pp.cli;
	conns[1] = pp.srv;
	h_teardown(pp.ctx, l, conns, 2);
	free(msg);
	return f0;
}

/*
 * The cliff of issue 15: from a quarter of the window up (where the
 * receiver acknowledges a message on its own, so the sender frees its
 * copy before it makes the next), every round trip of a 16 MiB message
 * faulted most of its four 16 MiB buffers in again (12256 of their 16384
 * pages), zero-filled: memory malloc had given back to the system.  The
 * context keeps the memory of large messages for the next ones instead
 * (its spares); allow a sixteenth of one message's pages.
 */
TEST_T(large_round_trips_reuse_their_memory)
{
	const size_t len = 16u << 20;

	if (!strcmp(rt_transport(), "rdma"))
		SKIP("tcp: large messages over verbs go in registered memory");
#if defined(__SANITIZE_ADDRESS__)
	SKIP("under ASan rift keeps no block, so that ASan sees each one's "
	     "life");
#endif
	CHECK(faults_per_round_trip(len, 10) < len / 4096 / 16);
	CHECK(faults_per_round_trip(5u << 20, 10) < (5u << 20) / 4096 / 16);
}

/* ---- one way: what the receiver copies besides the kernel's copy ---- */

struct oneway {
	rift_conn *srv;
	uint64_t got;      /* messages delivered */
	uint64_t sum;      /* h_mix of their payloads, in order */
	size_t len;        /* expected length */
	uint64_t bad;
};

static void ow_recv(rift_conn *conn, rift_msg *msg)
{
	struct oneway *ow = rift_conn_user(conn);

	if (rift_msg_len(msg) != ow->len)
		ow->bad++;
	ow->sum = h_mix(ow->sum, rift_msg_data(msg), rift_msg_len(msg));
	ow->got++;
}

static void ow_accept(rift_listener *l, rift_conn *conn)
{
	struct oneway *ow = rift_listener_user(l);

	ow->srv = conn;
}

/*
 * n messages of len bytes one way, sent without a copy (rift_buf_alloc);
 * returns the bytes the receiving side copied
 * (rift_conn_stats.rx_copied_bytes), and checks every byte.  The window
 * holds them all: the sender never waits for an ack, so the reader never
 * catches up with it at a frame's end and starts on a new burst (whose
 * first read may take a frame and part of the next, which is then moved:
 * a copy of less than half the buffer, once a burst).  The sender's
 * keepalive pings, small frames between the large ones, are returned in
 * *pings.
 */
static uint64_t oneway_copies(size_t len, uint64_t n, uint64_t *pings)
{
	static const rift_conn_callbacks srv_cbs = { .on_recv = ow_recv };
	struct oneway ow = { .len = len };
	struct side cli = { 0 };
	rift_config cfg = h_config();
	rift_ctx *ctx;
	rift_listener *l;
	rift_conn *c, *conns[2];
	rift_conn_stats st, cst;
	uint64_t sent = 0, sum = 0, end = h_now_us() + 60000000u;

	cfg.send_window = 2 * len * n;
	ctx = h_ctx(&cfg);
	CHECK_EQ(rift_listen(ctx, rt_url(0), &srv_cbs, &ow, ow_accept, &l), 0);
	c = h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	while (ow.got < n && h_now_us() < end) {
		while (sent < n) {
			uint8_t *buf = rift_buf_alloc(ctx, len);
			int rc;

			CHECK(buf != NULL);
			h_fill(buf, len, 7, sent);
			rc = rift_conn_send_buf(c, buf, len);
			if (rc == RIFT_EAGAIN) {
				rift_buf_free(ctx, buf);
				break;
			}
			CHECK_EQ(rc, 0);
			sum = h_mix(sum, buf, len);
			sent++;
		}
		rift_ctx_run(ctx, 1);
	}
	CHECK_EQ(ow.got, n);
	CHECK_EQ(ow.bad, 0);
	CHECK(ow.sum == sum);
	CHECK(ow.srv != NULL);
	rift_conn_stats_init(&st);
	CHECK_EQ(rift_conn_stats_get(ow.srv, &st), 0);
	rift_conn_stats_init(&cst);
	CHECK_EQ(rift_conn_stats_get(c, &cst), 0);
	*pings = cst.pings_sent;
	printf("%llu messages of %zu bytes: %llu bytes copied on receive, "
	       "%llu reads, %llu pings between\n", (unsigned long long)n, len,
	       (unsigned long long)st.rx_copied_bytes,
	       (unsigned long long)st.read_calls, (unsigned long long)*pings);
	conns[0] = c;
	conns[1] = ow.srv;
	h_teardown(ctx, l, conns, 2);
	return st.rx_copied_bytes;
}

/*
 * A frame that did not fit where it started in the read buffer was
 * moved: to the front of the buffer (memmove, most of the frame for sizes
 * a little over half the buffer), or into a block of its own (the part
 * already read, up to a whole buffer per message): about a quarter of
 * all bytes received, for 160 KiB to 1 MiB messages.  Reads of a large
 * frame stop at its end and take the next header alone, so a stream of
 * large frames lands where it is delivered from, and only the first of a
 * run (read with smaller frames before it: the handshake, a ping) is
 * moved, once.
 */
TEST_T(large_frames_are_not_moved_on_receive)
{
	static const size_t sizes[] = { 160u << 10, 200u << 10, 1u << 20,
					16u << 20 };
	rift_config cfg;

	if (!strcmp(rt_transport(), "rdma"))
		SKIP("tcp: over verbs large messages are READ into a block");
	rift_config_init(&cfg);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = (64u << 20) / sizes[i], pings = 0;
		uint64_t copied = oneway_copies(sizes[i], n, &pings);

		CHECK(copied <= (2 + pings) * cfg.tcp_read_buffer);
	}
}
