/*
 * ctx.c - the event loop: one epoll fd for sockets, one timerfd for the
 * earliest timer, one eventfd for wake-ups; a binary heap of timers;
 * deferred work (batched flushes, close callbacks) run at the end of each
 * round so that many sends made from callbacks leave in one writev.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAX_EVENTS 256

static __thread char create_err[RIFT_ERRMSG_LEN];

int rift__log_level;

void rift__log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "rift[%d] %.6f %s\n", (int)getpid(),
		(double)rift__clock_us() / 1e6, line);
}

uint64_t rift__clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void rift__config_init(rift_config *cfg, size_t size)
{
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
		.rdma_retry_count = 3,
		/* 17 (0.54 s): rdma_cm's RoCE packet lifetime (16) plus
		 * one; UCX waits 1 s, NCCL 4 s.  Every ack
		 * timeout that fires on a healthy link is a retransmission,
		 * and rxe's retransmission can wedge a READ; on a loaded
		 * host a response can lag 60 ms (issue 12: 12 -> 103
		 * retries a minute, 13 -> 13, 14 -> 1, about 8x fewer per
		 * step).  A dead link still shows in 4 x 0.54 s. */
		.rdma_ack_timeout = 17,
		.sq_depth = 256,
		.rq_depth = 256,
		.max_send_sge = 2,
		.max_recv_sge = 1,
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
	};
	memcpy(cfg, &d, d.size);
}

static int cfg_check(const rift_config *c);

static int cfg_range(const char *key, uint64_t v, uint64_t lo, uint64_t hi)
{
	if (v >= lo && v <= hi)
		return 0;
	snprintf(create_err, sizeof(create_err),
		 "config %s = %llu is out of range %llu..%llu", key,
		 (unsigned long long)v, (unsigned long long)lo,
		 (unsigned long long)hi);
	return RIFT_EINVAL;
}

int rift_config_check(const rift_config *cfg)
{
	rift_config full;

	create_err[0] = '\0';
	if (!cfg || cfg->size < offsetof(rift_config, busy_poll_us) ||
	    cfg->size > sizeof(full))
		return rift__ctx_fail(NULL, RIFT_EINVAL,
				      "config: size is not from rift_config_init");
	rift_config_init(&full);
	memcpy(&full, cfg, cfg->size);
	return cfg_check(&full);
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
	R(max_msg_size, 1, 1ull << 32);
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
	R(max_recv_sge, 1, 32);
	R(inline_threshold, 0, 4096);
	R(cq_size, 32, 1u << 22);
	R(poll_batch, 1, 1024);
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
#undef R
	if (!rc && (c->gid_index < -1 || c->gid_index > 4095)) {
		snprintf(create_err, sizeof(create_err),
			 "config gid_index = %d is out of range -1..4095",
			 c->gid_index);
		rc = RIFT_EINVAL;
	}
	if (!rc && memchr(c->device, '\0', sizeof(c->device)) == NULL) {
		snprintf(create_err, sizeof(create_err),
			 "config device is not NUL-terminated (at most %d "
			 "characters)",
			 RIFT_DEVICE_NAME_MAX - 1);
		rc = RIFT_EINVAL;
	}
	for (int i = 1; !rc && i < RIFT_BLOCK_CLASSES; i++)
		if (c->block_size[i] <= c->block_size[i - 1]) {
			snprintf(create_err, sizeof(create_err),
				 "config block_size[%d] (%u) must be larger than "
				 "block_size[%d] (%u)",
				 i, c->block_size[i], i - 1, c->block_size[i - 1]);
			rc = RIFT_EINVAL;
		}
	if (!rc && c->pool_initial > c->pool_max) {
		snprintf(create_err, sizeof(create_err),
			 "config pool_initial (%llu) exceeds pool_max (%llu)",
			 (unsigned long long)c->pool_initial,
			 (unsigned long long)c->pool_max);
		rc = RIFT_EINVAL;
	}
	if (!rc && c->keepalive_timeout_ms <= c->keepalive_interval_ms) {
		snprintf(create_err, sizeof(create_err),
			 "config keepalive_timeout_ms (%u) must be greater than "
			 "keepalive_interval_ms (%u)",
			 c->keepalive_timeout_ms, c->keepalive_interval_ms);
		rc = RIFT_EINVAL;
	}
	return rc;
}

int rift__ctx_fail(rift_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;
	char *buf = ctx ? ctx->errmsg : create_err;

	va_start(ap, fmt);
	vsnprintf(buf, RIFT_ERRMSG_LEN, fmt, ap);
	va_end(ap);
	return err;
}

const char *rift_ctx_last_error(const rift_ctx *ctx)
{
	return ctx ? ctx->errmsg : create_err;
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

	create_err[0] = '\0';
	if (getenv("RIFT_LOG") && strcmp(getenv("RIFT_LOG"), "debug") == 0)
		rift__log_level = 1;
	if (!out)
		return rift__ctx_fail(NULL, RIFT_EINVAL, "rift_ctx_create: out is NULL");
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
	rift__list_init(&ctx->paths);
	rift__list_init(&ctx->flushq);
	rift__list_init(&ctx->closing_conns);
	rift__list_init(&ctx->closing_listeners);
	rift__list_init(&ctx->dead_paths);
	rift__list_init(&ctx->drainq);
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

int rift_ctx_destroy(rift_ctx *ctx)
{
	if (!ctx)
		return RIFT_EINVAL;
	/* Let close callbacks that are already due run first. */
	rift__ctx_deferred(ctx);
	if (!rift__list_empty(&ctx->conns) || !rift__list_empty(&ctx->listeners) ||
	    !rift__list_empty(&ctx->closing_conns) ||
	    !rift__list_empty(&ctx->closing_listeners) || ctx->n_timers)
		return rift__ctx_fail(ctx, RIFT_EBUSY,
				      "rift_ctx_destroy: %llu connections, "
				      "%llu listeners and %llu timers still open",
				      (unsigned long long)ctx->stats.conns_active,
				      (unsigned long long)ctx->stats.listeners_active,
				      (unsigned long long)ctx->n_timers);
	/* Unattached server paths (mid-handshake) belong to the context. */
	while (!rift__list_empty(&ctx->paths)) {
		rift__path *p = rift__list_entry(ctx->paths.next, rift__path,
						 ctx_node);
		rift__path_destroy(p);
	}
	rift__rdma_ctx_destroy(ctx);
	rift__ctx_free_small_bufs(ctx);
	close(ctx->tfd);
	close(ctx->evfd);
	close(ctx->epfd);
	free(ctx->heap);
	free(ctx);
	return 0;
}

int rift_ctx_fd(const rift_ctx *ctx)
{
	return ctx->epfd;
}

int rift__io_start(rift_ctx *ctx, rift__io *io, int fd, uint32_t events,
		   rift__io_cb cb)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	io->fd = fd;
	io->events = events;
	io->cb = cb;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return rift__from_errno(errno);
	return 0;
}

int rift__io_modify(rift_ctx *ctx, rift__io *io, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	if (io->events == events)
		return 0;
	io->events = events;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, io->fd, &ev) < 0)
		return rift__from_errno(errno);
	return 0;
}

void rift__io_stop(rift_ctx *ctx, rift__io *io)
{
	if (io->fd >= 0)
		epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->cb = NULL;
}

/* ---- timers: a binary min-heap on due_us ---- */

static void heap_swap(rift_ctx *ctx, size_t a, size_t b)
{
	rift_timer *t = ctx->heap[a];

	ctx->heap[a] = ctx->heap[b];
	ctx->heap[b] = t;
	ctx->heap[a]->heap_idx = a;
	ctx->heap[b]->heap_idx = b;
}

static void heap_up(rift_ctx *ctx, size_t i)
{
	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (ctx->heap[parent]->due_us <= ctx->heap[i]->due_us)
			break;
		heap_swap(ctx, i, parent);
		i = parent;
	}
}

static void heap_down(rift_ctx *ctx, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < ctx->heap_len &&
		    ctx->heap[l]->due_us < ctx->heap[m]->due_us)
			m = l;
		if (r < ctx->heap_len &&
		    ctx->heap[r]->due_us < ctx->heap[m]->due_us)
			m = r;
		if (m == i)
			return;
		heap_swap(ctx, i, m);
		i = m;
	}
}

static void heap_remove(rift_ctx *ctx, rift_timer *t)
{
	size_t i = t->heap_idx;

	if (i == SIZE_MAX)
		return;
	ctx->heap_len--;
	if (i != ctx->heap_len) {
		ctx->heap[i] = ctx->heap[ctx->heap_len];
		ctx->heap[i]->heap_idx = i;
		heap_down(ctx, i);
		heap_up(ctx, i);
	}
	t->heap_idx = SIZE_MAX;
}

/*
 * Keep the timerfd no later than the earliest timer.  It is only moved
 * earlier here; a later deadline leaves it armed, and the spurious wake-up
 * re-arms it.  That keeps a syscall off paths that restart timers per
 * message (ack delay).
 */
static void arm_tfd(rift_ctx *ctx)
{
	struct itimerspec its = { 0 };
	uint64_t due;

	if (ctx->heap_len == 0)
		return;
	due = ctx->heap[0]->due_us;
	if (ctx->tfd_armed_us && ctx->tfd_armed_us <= due)
		return;
	if (due == 0)
		due = 1; /* 0 would disarm */
	its.it_value.tv_sec = (time_t)(due / 1000000u);
	its.it_value.tv_nsec = (long)(due % 1000000u) * 1000;
	if (timerfd_settime(ctx->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		ctx->tfd_armed_us = due;
}

void rift__timer_init(rift_ctx *ctx, rift_timer *t, rift_timer_cb cb,
		      void *user)
{
	memset(t, 0, sizeof(*t));
	t->ctx = ctx;
	t->cb = cb;
	t->user = user;
	t->heap_idx = SIZE_MAX;
}

int rift_timer_create(rift_ctx *ctx, rift_timer_cb cb, void *user,
		      rift_timer **out)
{
	rift_timer *t;

	if (!ctx || !cb || !out)
		return RIFT_EINVAL;
	t = malloc(sizeof(*t));
	if (!t)
		return RIFT_ENOMEM;
	rift__timer_init(ctx, t, cb, user);
	t->is_public = true;
	ctx->n_timers++;
	*out = t;
	return 0;
}

int rift_timer_start(rift_timer *t, uint64_t timeout_ms, uint64_t repeat_ms)
{
	rift_ctx *ctx = t->ctx;

	if (t->heap_idx == SIZE_MAX && ctx->heap_len == ctx->heap_cap) {
		size_t cap = ctx->heap_cap ? ctx->heap_cap * 2 : 64;
		rift_timer **h = realloc(ctx->heap, cap * sizeof(*h));

		if (!h)
			return RIFT_ENOMEM;
		ctx->heap = h;
		ctx->heap_cap = cap;
	}
	heap_remove(ctx, t);
	t->due_us = ctx->now_us + timeout_ms * 1000u;
	t->repeat_us = repeat_ms * 1000u;
	t->heap_idx = ctx->heap_len++;
	ctx->heap[t->heap_idx] = t;
	heap_up(ctx, t->heap_idx);
	arm_tfd(ctx);
	return 0;
}

void rift_timer_stop(rift_timer *t)
{
	heap_remove(t->ctx, t);
}

void rift_timer_destroy(rift_timer *t)
{
	if (!t)
		return;
	heap_remove(t->ctx, t);
	if (t->is_public)
		t->ctx->n_timers--;
	free(t);
}

static int run_timers(rift_ctx *ctx)
{
	int n = 0;

	while (ctx->heap_len && ctx->heap[0]->due_us <= ctx->now_us) {
		rift_timer *t = ctx->heap[0];

		heap_remove(ctx, t);
		if (t->repeat_us) {
			t->due_us = ctx->now_us + t->repeat_us;
			t->heap_idx = ctx->heap_len++;
			ctx->heap[t->heap_idx] = t;
			heap_up(ctx, t->heap_idx);
		}
		t->cb(t, t->user); /* may destroy t */
		n++;
	}
	arm_tfd(ctx);
	return n;
}

/* rift_ctx_timeout with the time already read. */
static int timeout_at(rift_ctx *ctx, uint64_t now)
{
	if (!rift__list_empty(&ctx->flushq) ||
	    !rift__list_empty(&ctx->drainq) ||
	    !rift__list_empty(&ctx->closing_conns) ||
	    !rift__list_empty(&ctx->closing_listeners) ||
	    !rift__list_empty(&ctx->dead_paths))
		return 0;
	/* Busy and adaptive polling leave the CQs unarmed while they spin;
	 * whoever asks how long to sleep is about to: arm them now, and
	 * have one more round pick up what completed before. */
	if (ctx->cfg.polling != RIFT_POLL_EVENT && rift__rdma_arm(ctx) > 0)
		return 0;
	if (ctx->heap_len == 0)
		return -1;
	if (ctx->heap[0]->due_us <= now)
		return 0;
	return (int)((ctx->heap[0]->due_us - now + 999) / 1000);
}

int rift_ctx_timeout(rift_ctx *ctx)
{
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
	    !rift__rdma_polled(ctx))
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
	rift__ctx_deferred(ctx);
	if (fast_round(ctx, timeout_ms)) {
		ctx->stats.progress_calls++;
		handled = rift__rdma_poll(ctx);
		if (handled)
			rift__ctx_deferred(ctx);
		return handled;
	}
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
	}
	handled += n;
	if (ctx->cfg.polling != RIFT_POLL_EVENT && ctx->rdma)
		handled += rift__rdma_poll(ctx);
	handled += run_timers(ctx);
	rift__ctx_deferred(ctx);
	return handled;
}

int rift_ctx_progress(rift_ctx *ctx)
{
	return loop_round(ctx, 0);
}

int rift_ctx_run(rift_ctx *ctx, int timeout_ms)
{
	uint64_t start = rift__clock_us();
	uint64_t end = timeout_ms < 0 ? UINT64_MAX
				      : start + (uint64_t)timeout_ms * 1000u;
	uint64_t last_work = start;

	for (;;) {
		uint64_t now;
		int wait, t, rc;

		if (__atomic_exchange_n(&ctx->stop, 0, __ATOMIC_ACQ_REL))
			return 0;
		/* Busy polling goes by the loop time, which its rounds keep
		 * within a tick (fast_round), not by a system call a round. */
		now = ctx->cfg.polling == RIFT_POLL_BUSY ? ctx->now_us
							 : rift__clock_us();
		if (now >= end)
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
			       : (int)((end - now + 999) / 1000);
			if (t >= 0 && t < wait)
				wait = t;
			break;
		}
		rc = loop_round(ctx, wait);
		if (rc < 0)
			return rc;
		if (rc > 0)
			last_work = now; /* spin busy_poll_us from here */
	}
}

void rift_ctx_stop(rift_ctx *ctx)
{
	__atomic_store_n(&ctx->stop, 1, __ATOMIC_RELEASE);
	rift_ctx_wake(ctx);
}

int rift_ctx_wake(rift_ctx *ctx)
{
	uint64_t one = 1;

	if (write(ctx->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return rift__from_errno(errno);
	return 0;
}

void rift__ctx_stats_init(rift_ctx_stats *st, size_t size)
{
	memset(st, 0, size);
	st->size = (uint32_t)(size < sizeof(*st) ? size : sizeof(*st));
}

int rift_ctx_stats_get(rift_ctx *ctx, rift_ctx_stats *st)
{
	uint32_t size = st->size;

	if (size < sizeof(uint32_t) || size > sizeof(*st))
		return RIFT_EINVAL;
	memcpy(st, &ctx->stats, size);
	st->size = size;
	return 0;
}

/* ---- fault points ---- */
#ifdef RIFT_FAULT_INJECTION
static struct {
	uint64_t hits, nth, count, fired;
} faults[RIFT_FAULT__COUNT];

void rift__fault_arm(rift__fault_point p, uint64_t nth, uint64_t count)
{
	faults[p].hits = 0;
	faults[p].nth = nth;
	faults[p].count = count;
}

void rift__fault_clear(void)
{
	memset(faults, 0, sizeof(faults));
}

bool rift__fault_hit(rift__fault_point p)
{
	if (!faults[p].count)
		return false;
	if (++faults[p].hits < faults[p].nth)
		return false;
	faults[p].count--;
	faults[p].fired++;
	return true;
}

uint64_t rift__fault_fired(rift__fault_point p)
{
	return faults[p].fired;
}
#endif
