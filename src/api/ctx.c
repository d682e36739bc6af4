/*
 * ctx.c - the context and its event loop: one epoll fd for sockets, one
 * timerfd for the earliest timer, one eventfd for wake-ups (watchers and
 * the timer heap: core/loop.c); each round dispatches them, polls the
 * transports' completion queues in busy and adaptive modes (through the
 * registry, transports/transport.c), and runs deferred work (batched
 * flushes, close callbacks) at its end, so that many sends made from
 * callbacks leave in one writev.  rift_ctx_run_mode runs rounds until a
 * stop or its timeout (DEFAULT), until one did work (ONCE), or one round
 * without waiting (NOWAIT).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "memory/pool.h"
#include "session/rma.h"
#include "session/session.h"
#include "util/toml.h"

#define MAX_EVENTS 256

void rift__config_init(rift_config *cfg, size_t size)
{
	/* RIFT_LOG is log_level's default: it reaches programs that never
	 * call rift_config_env (rift_ctx_create refuses a bad one).  It is
	 * also the level of the lines no context has (util/log.c). */
	int env = rift__log_env();
	rift_log_level level = env < 0 ? RIFT_LOG_WARN : (rift_log_level)env;
	rift_config d = {
		.size = (uint32_t)(size < sizeof(d) ? size : sizeof(d)),
		.polling = RIFT_POLL_EVENT,
		.busy_poll_us = 50,
		.connect_timeout_ms = 3000,
		.retries = 2,
		.retry_delay_ms = 100,
		.keepalive_interval_ms = 1000,
		.keepalive_timeout_ms = 5000,
		.session_grace_ms = 10000,
		.ack_delay_ms = 2,
		.send_window = 16u << 20,
		.max_msg_size = 256u << 20,
		.tcp_read_buffer = 256u << 10,
		.listen_backlog = 1024,
		.device = "",
		.port = 0,
		.gid_index = -1,
		.cm = RIFT_CM_RDMACM,
		.fallback = 1,
		/* 6 with 15 below: a dead link fails its QP after 7 x 0.13 s
		 * (0.94 s). */
		.rdma_retry_count = 6,
		/* 15 (0.13 s); UCX waits 1 s, NCCL 4 s.  Every ack timeout
		 * that fires on a healthy link is a retransmission, and
		 * rxe's retransmission can wedge a READ; on a loaded host a
		 * response can lag 60 ms (issue 12, a 60 s busy soak: 12 ->
		 * 103 retries, 13 -> 13, 14 -> 1, 15 and 16 -> none).  On a
		 * lossy link each lost retransmission costs one more ack
		 * timeout (rxe NAKs a gap once), and the stall check allows
		 * three of them within its bound (rdma_tx_stalled_us: 4 x
		 * 0.13 s + 0.1 s without progress), so a link that loses
		 * 2 % of its packets keeps its path, while a silent one is
		 * left within a second.  17 (0.54 s), the default before,
		 * allowed none in 0.64 s. */
		.rdma_ack_timeout = 15,
		.sq_depth = 256,
		.rq_depth = 256,
		.max_send_sge = 2,
		.inline_threshold = 128,
		.cq_size = 8192,
		.poll_batch = 16,
		.qp_pool_count = 0,
		.zero_copy_threshold = 16u << 10,
		.block_size = { 8u << 10, 64u << 10, 256u << 10, 1u << 20,
				2u << 20 },
		.pool_initial = 16u << 20,
		.pool_increment = 16u << 20,
		.pool_max = 1u << 30,
		.pool_buckets = 4,
		.pool_thread_cache = 32,
		.recv_reserve_pct = 50,
		.huge_pages = 0,
		.metrics = 1,
		.rndv_threshold = 64u << 10,
		.log_level = level,
		.log_cb = NULL,
		.log_user = NULL,
		/* As long as a broken session may take to re-attach: a close
		 * rides out one failover by default. */
		.linger_ms = 10000,
		.group_max_paths = 2,
		.group_failback_delay_ms = 2000,
		.fallback_return_ms = 1000,
	};

	__atomic_store_n(&rift__log_level, (int)level, __ATOMIC_RELAXED);
	if (cfg)
		memcpy(cfg, &d, d.size);
}

static int cfg_check(const rift_config *c);

static int cfg_range(const char *key, uint64_t v, uint64_t lo, uint64_t hi)
{
	if (v >= lo && v <= hi)
		return 0;
	return rift__ctx_fail(NULL, RIFT_EINVAL,
			      "config %s = %llu is out of range %llu..%llu",
			      key, (unsigned long long)v,
			      (unsigned long long)lo, (unsigned long long)hi);
}

int rift_config_check(const rift_config *cfg)
{
	rift_config full;

	rift__ctx_fail(NULL, 0, "%s", ""); /* no creation error yet */
	if (!cfg || cfg->size < offsetof(rift_config, busy_poll_us) ||
	    cfg->size > sizeof(full))
		return rift__ctx_fail(NULL, RIFT_EINVAL,
				      "config: size is not from rift_config_init");
	rift_config_init(&full);
	memcpy(&full, cfg, cfg->size);
	return cfg_check(&full);
}

/* group_local: text of numeric addresses only (util/addr.c). */
static int group_local_check(const rift_config *c)
{
	char why[RIFT_ERRMSG_LEN];

	if (!memchr(c->group_local, '\0', sizeof(c->group_local)))
		return rift__ctx_fail(NULL, RIFT_EINVAL,
				      "config group_local is not NUL-terminated "
				      "(at most %d characters)",
				      RIFT_GROUP_LOCAL_MAX - 1);
	if (rift__local_parse(c->group_local, NULL, NULL, NULL,
			      RIFT_URL_MAX_ADDRS, why, sizeof(why)) < 0)
		return rift__ctx_fail(NULL, RIFT_EINVAL,
				      "config group_local = \"%.80s\": %s",
				      c->group_local, why);
	return 0;
}

static int cfg_check(const rift_config *c)
{
	int rc = 0;

#define R(key, lo, hi)                                                        \
	if (!rc)                                                              \
	rc = cfg_range(#key, (uint64_t)c->key, lo, hi)
	R(polling, RIFT_POLL_EVENT, RIFT_POLL_ADAPTIVE);
	R(busy_poll_us, 0, 1000000);
	R(connect_timeout_ms, 1, 600000);
	R(retries, 0, 1000);
	R(retry_delay_ms, 0, 600000);
	R(keepalive_interval_ms, 10, 3600000);
	R(keepalive_timeout_ms, 20, 3600000);
	R(session_grace_ms, 0, 3600000);
	R(ack_delay_ms, 0, 10000);
	R(send_window, 4096, 1ull << 40);
	/* A frame's length field has 32 bits. */
	R(max_msg_size, 1, UINT32_MAX);
	R(tcp_read_buffer, 4096, 64u << 20);
	R(listen_backlog, 1, 65535);
	R(port, 0, 255);
	R(cm, RIFT_CM_RDMACM, RIFT_CM_TCP);
	R(fallback, 0, 1);
	R(rdma_retry_count, 0, 6);
	R(rdma_ack_timeout, 1, 31);
	R(sq_depth, 16, 32768);
	R(rq_depth, 16, 32768);
	R(max_send_sge, 1, 32);
	R(inline_threshold, 0, 4096);
	R(cq_size, 32, 1u << 22);
	R(poll_batch, 1, RIFT_POLL_BATCH_MAX);
	R(qp_pool_count, 0, 4096);
	R(zero_copy_threshold, 0, 1u << 30);
	R(block_size[0], 4096, 1u << 30);
	R(block_size[1], 4096, 1u << 30);
	R(block_size[2], 4096, 1u << 30);
	R(block_size[3], 4096, 1u << 30);
	R(block_size[4], 4096, 1u << 30);
	R(pool_initial, 0, 1ull << 40);
	R(pool_increment, 0, 1ull << 40);
	R(pool_max, 1u << 20, 1ull << 40);
	R(pool_buckets, 1, 256);
	R(pool_thread_cache, 0, 65536);
	R(recv_reserve_pct, 0, 100);
	R(huge_pages, 0, 1);
	R(metrics, 0, 1);
	R(rndv_threshold, 0, 1u << 30);
	R(log_level, RIFT_LOG_OFF, RIFT_LOG_DEBUG);
	R(linger_ms, 0, 3600000);
	R(group_max_paths, 1, RIFT_GROUP_MAX);
	R(group_failback_delay_ms, 0, 3600000);
	R(fallback_return_ms, 0, 3600000);
	R(group_policy, RIFT_POLICY_ACTIVE_BACKUP, RIFT_POLICY_ACTIVE_ACTIVE);
#undef R
	if (!rc && (c->gid_index < -1 || c->gid_index > 4095)) {
		rc = rift__ctx_fail(NULL, RIFT_EINVAL,
				    "config gid_index = %d is out of range "
				    "-1..4095",
				    c->gid_index);
	}
	if (!rc && memchr(c->device, '\0', sizeof(c->device)) == NULL) {
		rc = rift__ctx_fail(NULL, RIFT_EINVAL,
				    "config device is not NUL-terminated (at "
				    "most %d characters)",
				    RIFT_DEVICE_NAME_MAX - 1);
	}
	/* Device names are text: rift_config_dump writes them in a TOML
	 * file, which is UTF-8, and has no way to write a stray byte. */
	if (!rc && !rift__toml_utf8_ok(c->device)) {
		rc = rift__ctx_fail(NULL, RIFT_EINVAL,
				    "config device is not UTF-8 text");
	}
	if (!rc)
		rc = group_local_check(c);
	for (int i = 1; !rc && i < RIFT_BLOCK_CLASSES; i++)
		if (c->block_size[i] <= c->block_size[i - 1]) {
			rc = rift__ctx_fail(NULL, RIFT_EINVAL,
					    "config block_size[%d] (%u) must be "
					    "larger than block_size[%d] (%u)",
					    i, c->block_size[i], i - 1,
					    c->block_size[i - 1]);
		}
	if (!rc && c->pool_initial > c->pool_max) {
		rc = rift__ctx_fail(NULL, RIFT_EINVAL,
				    "config pool_initial (%llu) exceeds "
				    "pool_max (%llu)",
				    (unsigned long long)c->pool_initial,
				    (unsigned long long)c->pool_max);
	}
	if (!rc && c->keepalive_timeout_ms <= c->keepalive_interval_ms) {
		rc = rift__ctx_fail(NULL, RIFT_EINVAL,
				    "config keepalive_timeout_ms (%u) must be "
				    "greater than keepalive_interval_ms (%u)",
				    c->keepalive_timeout_ms,
				    c->keepalive_interval_ms);
	}
	return rc;
}

static void evfd_cb(rift__io *io, uint32_t revents)
{
	uint64_t v;

	RIFT_UNUSED(revents);
	if (read(io->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return; /* nothing to recover: the next wake retries */
}

static void tfd_cb(rift__io *io, uint32_t revents)
{
	rift_ctx *ctx = rift__container_of(io, rift_ctx, t_io);
	uint64_t v;

	RIFT_UNUSED(revents);
	if (read(io->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	ctx->tfd_armed_us = 0; /* fired: the timer pass re-arms it */
}

int rift_ctx_create(rift_ctx **out, const rift_config *cfg)
{
	rift_ctx *ctx;
	rift_config def;
	int rc;

	rift__ctx_fail(NULL, 0, "%s", ""); /* no creation error yet */
	if (!out)
		return rift__ctx_fail(NULL, RIFT_EINVAL, "rift_ctx_create: out is NULL");
	*out = NULL; /* until it succeeds: no stale handle on failure */
	/* rift_config_init fell back to WARN for it: say so, as
	 * rift_config_env does, rather than run at a level nobody chose. */
	if (rift__log_env() < 0)
		return rift__ctx_fail(NULL, RIFT_EINVAL,
				      "env RIFT_LOG: '%.40s' is not one of "
				      "\"off\", \"error\", \"warn\", "
				      "\"info\" or \"debug\"",
				      secure_getenv("RIFT_LOG"));
	rift_config_init(&def);
	if (cfg) {
		if (cfg->size < offsetof(rift_config, busy_poll_us) ||
		    cfg->size > sizeof(def))
			return rift__ctx_fail(NULL, RIFT_EINVAL,
					      "config: size %u is not from "
					      "rift_config_init",
					      cfg->size);
		memcpy(&def, cfg, cfg->size);
		def.size = sizeof(def);
	}
	rc = cfg_check(&def);
	if (rc)
		return rc;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return rift__ctx_fail(NULL, RIFT_ENOMEM, "rift_ctx_create: out of memory");
	ctx->cfg = def;
	ctx->epfd = ctx->evfd = ctx->tfd = -1;
	rift__list_init(&ctx->conns);
	rift__list_init(&ctx->listeners);
	rift__list_init(&ctx->bstreams);
	rift__list_init(&ctx->paths);
	rift__list_init(&ctx->flushq);
	rift__list_init(&ctx->lingering_conns);
	rift__list_init(&ctx->closing_conns);
	rift__list_init(&ctx->closing_listeners);
	rift__list_init(&ctx->dead_paths);
	rift__list_init(&ctx->drainq);
	rift__list_init(&ctx->rmaq);
	rift_ctx_stats_init(&ctx->stats);
	ctx->now_us = rift__clock_us();

	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->epfd < 0)
		goto fail_sys;
	ctx->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctx->evfd < 0)
		goto fail_sys;
	ctx->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ctx->tfd < 0)
		goto fail_sys;
	rc = rift__io_start(ctx, &ctx->ev_io, ctx->evfd, EPOLLIN, evfd_cb);
	if (!rc)
		rc = rift__io_start(ctx, &ctx->t_io, ctx->tfd, EPOLLIN, tfd_cb);
	if (rc)
		goto fail_fds;
	*out = ctx;
	return 0;

fail_sys:
	rc = rift__from_errno(errno);
	rift__ctx_fail(NULL, rc, "rift_ctx_create: %s", strerror(errno));
fail_fds:
	if (ctx->tfd >= 0)
		close(ctx->tfd);
	if (ctx->evfd >= 0)
		close(ctx->evfd);
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	free(ctx);
	return rc;
}

/* What keeps a context from being destroyed (closes still lingering
 * aside); RIFT_EBUSY with the message set, or 0. */
static int ctx_busy(rift_ctx *ctx)
{
	if (!rift__list_empty(&ctx->conns) || !rift__list_empty(&ctx->listeners) ||
	    !rift__list_empty(&ctx->closing_conns) ||
	    !rift__list_empty(&ctx->closing_listeners) || ctx->n_timers ||
	    rift__rma_mems(ctx) || !rift__list_empty(&ctx->bstreams))
		return rift__ctx_fail(ctx, RIFT_EBUSY,
				      "rift_ctx_destroy: %llu connections, "
				      "%llu listeners, %llu timers, %zu "
				      "registered regions and %zu byte streams "
				      "or their listeners still open",
				      (unsigned long long)ctx->stats.conns_active,
				      (unsigned long long)ctx->stats.listeners_active,
				      (unsigned long long)ctx->n_timers,
				      rift__rma_mems(ctx),
				      rift__list_len(&ctx->bstreams));
	return 0;
}

int rift_ctx_destroy(rift_ctx *ctx)
{
	int rc;

	if (!ctx)
		return RIFT_EINVAL;
	/* Let close callbacks that are already due run first. */
	rift__ctx_deferred(ctx);
	rc = ctx_busy(ctx);
	if (rc)
		return rc;
	/* Closes still delivering end now, abortively (nobody will run
	 * this loop again), and their callbacks run here; one of those may
	 * have opened something. */
	if (!rift__list_empty(&ctx->lingering_conns)) {
		while (!rift__list_empty(&ctx->lingering_conns))
			rift__conn_close_abort(
				rift__list_entry(ctx->lingering_conns.next,
						 rift_conn, node),
				"rift_ctx_destroy", false);
		rift__ctx_deferred(ctx);
		rc = ctx_busy(ctx);
		if (rc)
			return rc;
	}
	/* Unattached server paths (mid-handshake) belong to the context. */
	while (!rift__list_empty(&ctx->paths)) {
		rift__path *p = rift__list_entry(ctx->paths.next, rift__path,
						 ctx_node);
		rift__path_destroy(p);
	}
	rift__transports_ctx_destroy(ctx);
	rift__ctx_free_small_bufs(ctx);
	rift__sessions_free(ctx);
	rift__rma_ctx_free(ctx);
	close(ctx->tfd);
	close(ctx->evfd);
	close(ctx->epfd);
	free(ctx->heap);
	free(ctx);
	return 0;
}

int rift_ctx_fd(const rift_ctx *ctx)
{
	return ctx ? ctx->epfd : RIFT_EINVAL;
}

/* rift_ctx_timeout with the time already read. */
static int timeout_at(rift_ctx *ctx, uint64_t now)
{
	if (!rift__list_empty(&ctx->flushq) ||
	    !rift__list_empty(&ctx->drainq) ||
	    !rift__list_empty(&ctx->closing_conns) ||
	    !rift__list_empty(&ctx->closing_listeners) ||
	    !rift__list_empty(&ctx->dead_paths) ||
	    !rift__list_empty(&ctx->rmaq))
		return 0;
	/* Busy and adaptive polling leave the CQs unarmed while they spin;
	 * whoever asks how long to sleep is about to: arm them now, and
	 * have one more round pick up what completed before. */
	if (ctx->cfg.polling != RIFT_POLL_EVENT && rift__transports_arm(ctx) > 0)
		return 0;
	if (ctx->heap_len == 0)
		return -1;
	/* About to sleep: a spinning loop's timerfd is armed only now
	 * (core/loop.c, arm_tfd). */
	rift__timers_arm(ctx);
	if (ctx->heap[0]->due_us <= now)
		return 0;
	return (int)((ctx->heap[0]->due_us - now + 999) / 1000);
}

int rift_ctx_timeout(rift_ctx *ctx)
{
	if (!ctx)
		return RIFT_EINVAL;
	return timeout_at(ctx, rift__clock_us());
}

/*
 * Busy polling with RDMA paths: most rounds only take completions from the
 * CQs, in user space.  The rest of a round (epoll_wait for sockets, rdma_cm
 * and timers, then the clock) costs system calls, about 2.5 us each in the
 * lab's QEMU guest, and runs as soon as the coarse clock (read in the vDSO,
 * no system call) has moved, so timers and the loop time stay within a tick
 * of the truth whatever a round costs, and otherwise every FAST_ROUNDS
 * rounds while some path carries data over a socket (a TCP fallback must
 * not wait for a tick), every FAST_ROUNDS_RDMA rounds when the sockets
 * only carry connection setup, side-channel liveness and wake-ups.  (In
 * the lab a full round every 64 made a 32-byte round trip about 1 us
 * slower: 27% of a spinning loop's time went to them.)
 */
#define FAST_ROUNDS 64
#define FAST_ROUNDS_RDMA 1024
#define COARSE_EVERY 8

static bool fast_round(rift_ctx *ctx, int timeout_ms)
{
	struct timespec ts;
	uint64_t tick;
	uint32_t every;

	if (timeout_ms != 0 || ctx->cfg.polling == RIFT_POLL_EVENT ||
	    !ctx->n_polled_paths)
		return false;
	/* Even the vDSO costs a fast round much (0.3 us under TCG): look at
	 * the coarse clock every COARSE_EVERY rounds only. */
	every = ctx->n_sock_paths ? FAST_ROUNDS : FAST_ROUNDS_RDMA;
	if (++ctx->fast_rounds < every && ctx->fast_rounds % COARSE_EVERY != 0)
		return true;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	tick = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (ctx->fast_rounds < every && tick == ctx->coarse_ns)
		return true;
	ctx->fast_rounds = 0;
	ctx->coarse_ns = tick;
	return false;
}

/* One round: wait up to timeout_ms for events, dispatch, run due work. */
static int loop_round(rift_ctx *ctx, int timeout_ms)
{
	struct epoll_event evs[MAX_EVENTS];
	int n, handled = 0;

	/* Work queued by API calls since the last round goes out first. */
	handled = rift__ctx_deferred(ctx);
	if (fast_round(ctx, timeout_ms)) {
		int polled = rift__transports_poll(ctx);

		ctx->stats.progress_calls++;
		if (polled)
			handled += polled + rift__ctx_deferred(ctx);
		return handled;
	}
	if (timeout_ms != 0)
		rift__timers_arm(ctx);
	n = epoll_wait(ctx->epfd, evs, MAX_EVENTS, timeout_ms);
	if (n < 0) {
		if (errno != EINTR)
			return rift__from_errno(errno);
		n = 0;
	}
	ctx->now_us = rift__clock_us();
	ctx->stats.progress_calls++;
	for (int i = 0; i < n; i++) {
		rift__io *io = evs[i].data.ptr;

		/* An earlier callback of this round may have stopped io. */
		if (io->cb)
			io->cb(io, evs[i].events);
		/* The timer fd only says that a timer may be due: the timers
		 * that run count (rift__timers_run), it does not, so that a
		 * timer already run by the clock is no work (RIFT_RUN_ONCE). */
		if (io != &ctx->t_io)
			handled++;
	}
	if (ctx->cfg.polling != RIFT_POLL_EVENT)
		handled += rift__transports_poll(ctx);
	handled += rift__timers_run(ctx);
	handled += rift__ctx_deferred(ctx);
	return handled;
}

int rift_ctx_progress(rift_ctx *ctx)
{
	if (!ctx)
		return RIFT_EINVAL;
	return loop_round(ctx, 0);
}

int rift_ctx_run(rift_ctx *ctx, int timeout_ms)
{
	return rift_ctx_run_mode(ctx, RIFT_RUN_DEFAULT, timeout_ms);
}

/* Rounds of DEFAULT and ONCE: a round waits as the polling mode says, at
 * most until the next timer and the end of the call. */
static int run_rounds(rift_ctx *ctx, bool once, int timeout_ms)
{
	uint64_t start = rift__clock_us();
	uint64_t end = timeout_ms < 0 ? UINT64_MAX
				      : start + (uint64_t)timeout_ms * 1000u;
	uint64_t last_work = start;

	for (bool first = true;; first = false) {
		uint64_t now;
		int wait, t, rc;

		if (__atomic_exchange_n(&ctx->stop, 0, __ATOMIC_ACQ_REL))
			return 0;
		/* Busy polling goes by the loop time, which its rounds keep
		 * within a tick (fast_round), not by a system call a round. */
		now = ctx->cfg.polling == RIFT_POLL_BUSY ? ctx->now_us
							 : rift__clock_us();
		/* ONCE looks at least once, even with no time to wait. */
		if (now >= end && !(once && first))
			return RIFT_ETIMEDOUT;
		switch (ctx->cfg.polling) {
		case RIFT_POLL_BUSY:
			wait = 0;
			break;
		case RIFT_POLL_ADAPTIVE:
			if (now - last_work < ctx->cfg.busy_poll_us) {
				wait = 0;
				break;
			}
			/* spun long enough: sleep like event mode */
			__attribute__((fallthrough));
		default:
			t = timeout_at(ctx, now);
			wait = end == UINT64_MAX ? t
			       : now >= end	 ? 0
						 : (int)((end - now + 999) / 1000);
			if (t >= 0 && t < wait)
				wait = t;
			break;
		}
		rc = loop_round(ctx, wait);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			last_work = now; /* spin busy_poll_us from here */
			if (once) {
				/* This return answers a stop made meanwhile
				 * (a callback's, most likely) as well. */
				__atomic_store_n(&ctx->stop, 0,
						 __ATOMIC_RELEASE);
				return rc;
			}
		}
	}
}

int rift_ctx_run_mode(rift_ctx *ctx, rift_run_mode mode, int timeout_ms)
{
	if (!ctx)
		return RIFT_EINVAL;
	switch (mode) {
	case RIFT_RUN_DEFAULT:
		return run_rounds(ctx, false, timeout_ms);
	case RIFT_RUN_ONCE:
		return run_rounds(ctx, true, timeout_ms);
	case RIFT_RUN_NOWAIT:
		return loop_round(ctx, 0);
	}
	return rift__ctx_fail(ctx, RIFT_EINVAL,
			      "rift_ctx_run_mode: unknown mode %d", (int)mode);
}

void rift_ctx_stop(rift_ctx *ctx)
{
	if (!ctx)
		return;
	__atomic_store_n(&ctx->stop, 1, __ATOMIC_RELEASE);
	rift_ctx_wake(ctx);
}

int rift_ctx_wake(rift_ctx *ctx)
{
	uint64_t one = 1;

	if (!ctx)
		return RIFT_EINVAL;
	if (write(ctx->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return rift__from_errno(errno);
	return 0;
}

void rift__ctx_stats_init(rift_ctx_stats *st, size_t size)
{
	if (!st)
		return;
	memset(st, 0, size);
	st->size = (uint32_t)(size < sizeof(*st) ? size : sizeof(*st));
}

void rift__ctx_stats_now(rift_ctx *ctx, rift_ctx_stats *st)
{
	struct rift__pool_usage u;

	*st = ctx->stats;
	/* The pool keeps its own figures; a context without one has none. */
	if (!ctx->pool)
		return;
	rift__pool_usage(ctx->pool, &u);
	st->pool_registered_bytes = u.registered + u.large_bytes;
	st->pool_growing = u.growing;
	memcpy(st->pool_blocks_in_use, u.blocks_in_use,
	       sizeof(st->pool_blocks_in_use));
}

int rift_ctx_stats_get(rift_ctx *ctx, rift_ctx_stats *st)
{
	rift_ctx_stats now;
	uint32_t size;

	if (!ctx || !st)
		return RIFT_EINVAL;
	size = st->size;
	if (size < sizeof(uint32_t) || size > sizeof(*st))
		return RIFT_EINVAL;
	rift__ctx_stats_now(ctx, &now);
	memcpy(st, &now, size);
	st->size = size;
	return 0;
}
