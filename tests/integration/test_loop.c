/*
 * test_loop.c - the loop's run modes (rift_ctx_run_mode): RIFT_RUN_ONCE
 * returns right after the round that did work, however long its timeout,
 * RIFT_RUN_NOWAIT never waits, and rift_ctx_stop ends either as the header
 * says; in each polling mode.  Behavioural, not timed: the long timeouts
 * here outlast the runner's time limit, so a call that waited one out
 * fails its test by that limit.
 */
#include <pthread.h>
#include <time.h>

#include "harness.h"

#define LONG_MS (600 * 1000) /* beyond the runner's limit (120 s) */

static const rift_polling pollings[] = {
	RIFT_POLL_EVENT,
	RIFT_POLL_BUSY,
	RIFT_POLL_ADAPTIVE,
};
#define N_POLLINGS (int)(sizeof(pollings) / sizeof(pollings[0]))

static const char *polling_name(rift_polling p)
{
	return p == RIFT_POLL_EVENT  ? "event"
	       : p == RIFT_POLL_BUSY ? "busy"
				     : "adaptive";
}

static rift_ctx *ctx_polling(rift_polling p)
{
	rift_config cfg = h_config();

	cfg.polling = p;
	printf("polling %s\n", polling_name(p));
	return h_ctx(&cfg);
}

static uint64_t rounds(rift_ctx *ctx)
{
	rift_ctx_stats st;

	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(ctx, &st), 0);
	return st.progress_calls;
}

static void count_fire(rift_timer *t, void *user)
{
	(void)t;
	(*(int *)user)++;
}

TEST(run_once_returns_after_a_timer_however_long_its_timeout)
{
	for (int m = 0; m < N_POLLINGS; m++) {
		rift_ctx *ctx = ctx_polling(pollings[m]);
		rift_timer *t;
		int fired = 0, rc;

		CHECK_EQ(rift_timer_create(ctx, count_fire, &fired, &t), 0);
		CHECK_EQ(rift_timer_start(t, 20, 0), 0);
		rc = rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, LONG_MS);
		CHECK(rc > 0);
		CHECK_EQ(fired, 1);
		/* Nothing left to do: a short timeout passes. */
		CHECK_EQ(rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 20),
			 RIFT_ETIMEDOUT);
		rift_timer_destroy(t);
		CHECK_EQ(rift_ctx_destroy(ctx), 0);
	}
}

TEST_T(run_once_returns_after_each_message_however_long_its_timeout)
{
	for (int m = 0; m < N_POLLINGS; m++) {
		rift_ctx *ctx = ctx_polling(pollings[m]);
		struct side srv = { .echo = true }, cli = { 0 };
		rift_listener *l = h_listen(ctx, &srv);
		rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
		rift_conn *conns[2];
		int calls = 0, rc;

		while (!cli.connected && !cli.errors) {
			rc = rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, LONG_MS);
			CHECK(rc > 0);
		}
		CHECK_EQ(cli.connected, 1);
		/* Ten round trips, each waited for with a long timeout. */
		for (uint64_t i = 0; i < 10; i++) {
			CHECK_EQ(h_send(c, cli.seed, i, 64), 0);
			while (cli.recv_count < i + 1) {
				rc = rift_ctx_run_mode(ctx, RIFT_RUN_ONCE,
						       LONG_MS);
				CHECK(rc > 0);
				calls++;
			}
		}
		CHECK_EQ(cli.recv_count, 10);
		CHECK_EQ(cli.bad, 0);
		printf("  10 round trips in %d calls\n", calls);
		conns[0] = c;
		conns[1] = srv.conn;
		h_teardown(ctx, l, conns, 2);
	}
}

struct waker {
	rift_ctx *ctx;
	int rc;
};

static void *wake_later(void *arg)
{
	struct waker *w = arg;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	w->rc = rift_ctx_wake(w->ctx);
	return NULL;
}

TEST(run_once_returns_after_a_wake_from_another_thread)
{
	for (int m = 0; m < N_POLLINGS; m++) {
		struct waker w = { ctx_polling(pollings[m]), -1 };
		pthread_t th;

		CHECK_EQ(pthread_create(&th, NULL, wake_later, &w), 0);
		CHECK(rift_ctx_run_mode(w.ctx, RIFT_RUN_ONCE, LONG_MS) > 0);
		pthread_join(th, NULL);
		CHECK_EQ(w.rc, 0);
		CHECK_EQ(rift_ctx_destroy(w.ctx), 0);
	}
}

static int lclosed;
static void on_lclose(rift_listener *l)
{
	(void)l;
	lclosed++;
}

TEST(run_once_returns_after_a_close_callback)
{
	for (int m = 0; m < N_POLLINGS; m++) {
		rift_ctx *ctx = ctx_polling(pollings[m]);
		struct side srv = { 0 };
		rift_listener *l = h_listen(ctx, &srv);

		lclosed = 0;
		rift_listener_close(l, on_lclose);
		CHECK(rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, LONG_MS) > 0);
		CHECK_EQ(lclosed, 1);
		CHECK_EQ(rift_ctx_destroy(ctx), 0);
	}
}

static void stop_fire(rift_timer *t, void *user)
{
	(void)t;
	rift_ctx_stop(user);
}

/* No stop is pending: what is left of it (its wake-up) is handled, then
 * a short timeout passes; no call returns 0 for a stop. */
static void used_up(rift_ctx *ctx)
{
	int rc;

	while ((rc = rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 10)) > 0)
		;
	CHECK_EQ(rc, RIFT_ETIMEDOUT);
}

TEST(run_once_and_stop)
{
	for (int m = 0; m < N_POLLINGS; m++) {
		rift_ctx *ctx = ctx_polling(pollings[m]);
		rift_timer *t;

		/* A stop before the call: it returns 0 at once, and uses the
		 * stop up. */
		rift_ctx_stop(ctx);
		CHECK_EQ(rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, LONG_MS), 0);
		used_up(ctx);
		/* A stop from a callback of the round that did work: the
		 * count, and the stop is used up all the same. */
		CHECK_EQ(rift_timer_create(ctx, stop_fire, ctx, &t), 0);
		CHECK_EQ(rift_timer_start(t, 10, 0), 0);
		CHECK(rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, LONG_MS) > 0);
		used_up(ctx);
		/* NOWAIT leaves a stop pending for the next waiting call. */
		rift_ctx_stop(ctx);
		CHECK(rift_ctx_run_mode(ctx, RIFT_RUN_NOWAIT, LONG_MS) > 0);
		CHECK_EQ(rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, LONG_MS), 0);
		/* DEFAULT: a stop from a callback ends the run with 0. */
		CHECK_EQ(rift_timer_start(t, 10, 0), 0);
		CHECK_EQ(rift_ctx_run_mode(ctx, RIFT_RUN_DEFAULT, LONG_MS), 0);
		rift_timer_destroy(t);
		CHECK_EQ(rift_ctx_destroy(ctx), 0);
	}
}

TEST(run_nowait_returns_at_once_with_nothing_to_do)
{
	for (int m = 0; m < N_POLLINGS; m++) {
		rift_ctx *ctx = ctx_polling(pollings[m]);
		rift_timer *t;
		int fired = 0;
		uint64_t before;

		/* A timer far away: what an event loop would sleep until. */
		CHECK_EQ(rift_timer_create(ctx, count_fire, &fired, &t), 0);
		CHECK_EQ(rift_timer_start(t, LONG_MS, 0), 0);
		before = rounds(ctx);
		for (int i = 0; i < 100; i++)
			CHECK_EQ(rift_ctx_run_mode(ctx, RIFT_RUN_NOWAIT,
						   LONG_MS),
				 0);
		CHECK_EQ(rounds(ctx) - before, 100);
		/* ONCE with no time to wait: one round, then the timeout. */
		before = rounds(ctx);
		CHECK_EQ(rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 0),
			 RIFT_ETIMEDOUT);
		CHECK_EQ(rounds(ctx) - before, 1);
		CHECK_EQ(fired, 0);
		CHECK_EQ(rift_ctx_run_mode(ctx, (rift_run_mode)7, 0),
			 RIFT_EINVAL);
		rift_timer_destroy(t);
		CHECK_EQ(rift_ctx_destroy(ctx), 0);
	}
}
