/*
 * loop.c - the loop's primitives that every layer above uses: watchers of
 * file descriptors on the context's epoll fd, and timers, a binary heap
 * on due time behind one timerfd.  The loop itself (rounds, polling
 * modes, deferred work) is api/ctx.c's; it dispatches what these set up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>

#include "internal.h"

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
void rift__timers_arm(rift_ctx *ctx)
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

/*
 * A loop that spins (busy polling, adaptive while it spins) runs its
 * timers by the loop time each full round (api/ctx.c, fast_round), not by
 * the timerfd: programming the timerfd, and reading it when it fires, are
 * three system calls per timer, each 8-10 us in the lab's QEMU guest, and
 * the delayed-ack timer (ack_delay_ms) starts every few milliseconds in
 * request/reply traffic.  So it is armed only before the loop (or an
 * external loop: rift_ctx_timeout) sleeps, and always under event
 * polling, where an external loop may sleep on rift_ctx_fd alone.
 */
static void arm_tfd(rift_ctx *ctx)
{
	if (ctx->cfg.polling == RIFT_POLL_EVENT)
		rift__timers_arm(ctx);
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

	if (out)
		*out = NULL;
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
	rift_ctx *ctx;

	if (!t)
		return RIFT_EINVAL;
	ctx = t->ctx;
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
	if (t)
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

int rift__timers_run(rift_ctx *ctx)
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
