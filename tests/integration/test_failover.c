/* Sessions that survive broken paths, and peers that die. */
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "session/session.h"
#include "harness.h"

#define STREAM 100000u

/*
 * Both sides stream STREAM messages at each other while the path is broken
 * at random moments, alternately by a fault point (a send fails) and by a
 * real break on either side (shutdown() of the socket, rdma_disconnect()).  Each side must receive
 * the other's whole stream exactly once, in order, byte for byte.
 */
TEST_TIMEOUT(path_cut_mid_stream_loses_and_doubles_nothing, 300)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { .verify = true, .seed = 21, .max_size = 512 };
	struct side cli = { .verify = true, .seed = 12, .max_size = 512 };
	rift_listener *l;
	rift_conn *c, *conns[2];
	uint64_t sent_c = 0, sent_s = 0, cuts = 0, faults = 0;
	uint64_t next_cut, end, rnd = 0x2545f4914f6cdd1dull;
	rift_conn_stats st_c, st_s;
	uint64_t sum_c = 0, sum_s = 0;
	uint8_t scratch[512];

	cfg.retry_delay_ms = 5;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	c = h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	next_cut = h_now_us() + 20000;
	end = h_now_us() + 240000000u;
	while ((cli.recv_count < STREAM || srv.recv_count < STREAM) &&
	       h_now_us() < end) {
		for (int k = 0; k < 64 && sent_c < STREAM; k++) {
			int rc = h_send(c, 21, sent_c, 512);

			if (rc == RIFT_EAGAIN)
				break;
			CHECK_EQ(rc, 0);
			h_fill(scratch, h_size(21, sent_c, 512), 21, sent_c);
			sum_c = h_mix(sum_c, scratch, h_size(21, sent_c, 512));
			sent_c++;
		}
		for (int k = 0; k < 64 && sent_s < STREAM && srv.conn; k++) {
			int rc = h_send(srv.conn, 12, sent_s, 512);

			if (rc == RIFT_EAGAIN)
				break;
			CHECK_EQ(rc, 0);
			h_fill(scratch, h_size(12, sent_s, 512), 12, sent_s);
			sum_s = h_mix(sum_s, scratch, h_size(12, sent_s, 512));
			sent_s++;
		}
		if (h_now_us() >= next_cut && cuts + faults < 40 &&
		    (sent_c < STREAM || sent_s < STREAM)) {
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			if (rnd & 1) {
				/* Fault point: some coming send fails. */
				rift__fault_arm(strcmp(rt_transport(), "tcp")
							? RIFT_FAULT_RDMA_SEND
							: RIFT_FAULT_TCP_WRITE,
						1 + (rnd >> 8) % 20, 1);
				faults++;
			} else {
				/* A real break: shutdown() of the socket, or
				 * rdma_disconnect() of the QP. */
				rift_conn *victim = (rnd & 2) ? c : srv.conn;

				if (rift__conn_cut(victim) == 0)
					cuts++;
			}
			next_cut = h_now_us() + 5000 + (rnd >> 20) % 60000;
		}
		rift_ctx_run(ctx, 1);
	}
	rift__fault_clear();
	printf("cuts %llu faults %llu path_changed cli %d srv %d\n",
	       (unsigned long long)cuts, (unsigned long long)faults,
	       cli.path_changed, srv.path_changed);
	CHECK_EQ(cli.recv_count, STREAM);
	CHECK_EQ(srv.recv_count, STREAM);
	CHECK_EQ(cli.bad, 0);
	CHECK_EQ(srv.bad, 0);
	CHECK(srv.checksum == sum_c);
	CHECK(cli.checksum == sum_s);
	CHECK(cuts + faults >= 10);
	CHECK(cli.path_changed >= 5);
	/* A break between the server taking a RESUME and the client reading
	 * RESUME_ACK makes the server re-attach once more than the client. */
	CHECK(srv.path_changed >= cli.path_changed);
	CHECK_EQ(cli.disconnected + srv.disconnected, 0);
	rift_conn_stats_init(&st_c);
	rift_conn_stats_init(&st_s);
	CHECK_EQ(rift_conn_stats_get(c, &st_c), 0);
	CHECK_EQ(rift_conn_stats_get(srv.conn, &st_s), 0);
	printf("replayed cli %llu srv %llu dups %llu %llu\n",
	       (unsigned long long)st_c.msgs_replayed,
	       (unsigned long long)st_s.msgs_replayed,
	       (unsigned long long)st_c.dups_dropped,
	       (unsigned long long)st_s.dups_dropped);
	CHECK(st_c.msgs_replayed + st_s.msgs_replayed > 0);
	CHECK_EQ(st_c.path_changes, (uint64_t)cli.path_changed);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/* Child: connect to port, then send forever (until killed). */
static void child_client(int port)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side cli = { 0 };
	rift_conn *c = h_connect(ctx, port, &cli);

	for (;;) {
		if (cli.connected)
			rift_conn_send(c, "tick", 4);
		rift_ctx_run(ctx, 20);
	}
}

static void peer_dies(int sig)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { 0 };
	rift_listener *l;
	uint64_t killed, limit_ms;
	rift_conn *conns[1];
	pid_t pid;
	int status;

	cfg.keepalive_interval_ms = 100;
	cfg.keepalive_timeout_ms = 400;
	cfg.session_grace_ms = 300;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child_client(rift_listener_port(l));
	CHECK(h_wait(ctx, &srv.connected, 10000));
	CHECK(h_wait_u64(ctx, &srv.recv_count, 5, 10000));
	kill(pid, sig);
	killed = h_now_us();
	CHECK(h_wait(ctx, &srv.disconnected, 5000));
	/* Keepalive window: silence detection plus the grace to re-attach,
	 * plus one keepalive tick of scheduling slack. */
	limit_ms = cfg.keepalive_timeout_ms + cfg.session_grace_ms +
		   cfg.keepalive_interval_ms;
	printf("disconnected %llu ms after signal %d (limit %llu ms): %s\n",
	       (unsigned long long)(srv.disconnected_us - killed) / 1000, sig,
	       (unsigned long long)limit_ms, srv.last_message);
	CHECK((srv.disconnected_us - killed) / 1000 <= limit_ms);
	CHECK_EQ(srv.last_status, RIFT_ETIMEDOUT);
	CHECK_EQ(srv.path_down, 1);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	conns[0] = srv.conn;
	h_teardown(ctx, l, conns, 1);
}

TEST(peer_killed_is_detected_within_keepalive_window)
{
	peer_dies(SIGKILL);
}

TEST(silent_peer_is_detected_by_keepalive)
{
	/* SIGSTOP: the socket stays open and silent, only keepalive sees it. */
	peer_dies(SIGSTOP);
}

TEST(client_survivor_gives_up_after_grace)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side cli = { 0 };
	rift_conn *conns[1];
	uint64_t killed;
	pid_t pid;
	int pipefd[2], port = 0, status;

	cfg.keepalive_interval_ms = 100;
	cfg.keepalive_timeout_ms = 400;
	cfg.session_grace_ms = 500;
	CHECK_EQ(pipe(pipefd), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* Child: a server that echoes until killed. */
		rift_ctx *sctx = h_ctx(&cfg);
		struct side srv = { .echo = true };
		rift_listener *l = h_listen(sctx, &srv);

		port = rift_listener_port(l);
		if (write(pipefd[1], &port, sizeof(port)) != sizeof(port))
			_exit(3);
		for (;;)
			rift_ctx_run(sctx, 100);
	}
	CHECK_EQ(read(pipefd[0], &port, sizeof(port)), (ssize_t)sizeof(port));
	ctx = h_ctx(&cfg);
	h_connect(ctx, port, &cli);
	h_connected(ctx, &cli);
	CHECK_EQ(rift_conn_send(cli.conn, "x", 1), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 1, 5000));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	killed = h_now_us();
	CHECK(h_wait(ctx, &cli.path_down, 2000));
	/* Sending while detached is buffered for replay, not refused. */
	CHECK_EQ(rift_conn_send(cli.conn, "y", 1), 0);
	CHECK(h_wait(ctx, &cli.disconnected, 5000));
	CHECK_EQ(cli.last_status, RIFT_ETIMEDOUT);
	CHECK_CONTAINS(cli.last_message, "session_grace_ms");
	CHECK((cli.disconnected_us - killed) / 1000 <=
	      cfg.session_grace_ms + cfg.keepalive_interval_ms + 200);
	close(pipefd[0]);
	close(pipefd[1]);
	conns[0] = cli.conn;
	h_teardown(ctx, NULL, conns, 1);
}

/*
 * Messages held by a receiver that stopped receiving survive a path break:
 * the RESUME says they are held, so the sender does not send them again,
 * and they stay unacknowledged (in the sender's window) until delivered.
 */
TEST_T(held_messages_survive_a_path_break_without_resend)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { .verify = true, .seed = 4, .max_size = 3000 };
	struct side cli = { 0 };
	rift_listener *l;
	rift_conn *c, *conns[2];
	rift_conn_stats st;
	const uint64_t held = 40, more = 10;

	cfg.retry_delay_ms = 5;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	c = h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	CHECK_EQ(rift_conn_recv_stop(srv.conn), 0);
	for (uint64_t i = 0; i < held; i++)
		CHECK_EQ(h_send(c, 4, i, 3000), 0);
	rift_conn_stats_init(&st);
	for (int i = 0; i < 2000; i++) {
		rift_ctx_run(ctx, 1);
		rift_conn_stats_get(srv.conn, &st);
		if (st.msgs_held == held)
			break;
	}
	CHECK_EQ(st.msgs_held, held);
	CHECK(st.held_bytes >= held * 24);
	CHECK_EQ(srv.recv_count, 0);
	rift_conn_stats_get(c, &st);
	CHECK_EQ(st.unacked_msgs, held); /* held is not acknowledged */

	CHECK_EQ(rift__conn_cut(c), 0);
	CHECK(h_wait(ctx, &cli.path_changed, 10000));
	for (uint64_t i = held; i < held + more; i++)
		CHECK_EQ(h_send(c, 4, i, 3000), 0);
	for (int i = 0; i < 50; i++)
		rift_ctx_run(ctx, 1);
	CHECK_EQ(srv.recv_count, 0); /* still stopped */
	rift_conn_stats_get(c, &st);
	CHECK_EQ(st.msgs_replayed, 0); /* the held ones were not resent */

	CHECK_EQ(rift_conn_recv_start(srv.conn), 0);
	CHECK_EQ(srv.recv_count, 0); /* delivery comes from the loop */
	CHECK(h_wait_u64(ctx, &srv.recv_count, held + more, 10000));
	CHECK_EQ(srv.bad, 0);
	rift_conn_stats_get(srv.conn, &st);
	CHECK_EQ(st.dups_dropped, 0);
	CHECK_EQ(st.held_bytes, 0);
	/* Everything is acknowledged once delivered. */
	for (int i = 0; i < 2000; i++) {
		rift_ctx_run(ctx, 1);
		rift_conn_stats_get(c, &st);
		if (st.unacked_msgs == 0)
			break;
	}
	CHECK_EQ(st.unacked_msgs, 0);
	CHECK_EQ(cli.errors + cli.disconnected + srv.disconnected, 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}
