/*
 * rdma_reap.c - tearing verbs paths down: the QP to ERR, QPs and cm_ids
 * destroyed off the loop (the reaper), paths parked while their port is
 * down, and their blocks given back once the QP is gone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <unistd.h>

#include "transports/verbs/rdma_int.h"

/* ---- teardown ---- */

/*
 * A QP of ours (an rdma_cm connection's user-managed QP, or cm=tcp's) to
 * ERR, as rdma_disconnect does for the ones librdmacm owns
 * (ucma_shutdown): posted work is flushed and nothing more goes out
 * before the id is disconnected or the QP destroyed.  What it flushes
 * into the shared CQ is dropped there (its path is gone by then).
 */
void rift__rdma_qp_err(struct rdma_path *rp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	rift__vb_err err;

	if ((rp->user_qp || rp->tc || rp->park) && rp->qp &&
	    rift__vb_qp_modify(rp->qp, &a, IBV_QP_STATE, "ERR", err))
		RIFT_DEBUG(rp->base.ctx, "%s: %s", rp->base.peer, err);
}

/*
 * The reaper: destroying a QP can block.  rxe's destroy waits until the
 * kernel lets go of every packet the QP sent, and packets queued for a
 * neighbour that no longer answers (a dead link) are let go only when ARP
 * gives up, seconds later: measured 2.0 s in rdma_destroy_qp after a
 * carrier loss.  On the loop thread that stalled every other path and
 * every timer of the context, so a re-attach over a healthy link missed
 * its own deadline.  So a path's QP and cm_id are destroyed by a thread of
 * the context's own; the loop finishes the path (CQ share, registered
 * blocks, memory) when it is told, through an eventfd, that the QP is
 * gone (DMA may touch the blocks until then).
 */
struct reaper {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rdma_path *todo, **todo_tail; /* for the thread */
	struct rdma_path *done;              /* for the loop */
	unsigned pending;                    /* queued or being destroyed */
	bool stop;
	int efd;
	rift__io io;
	rift_ctx *ctx;                       /* whose paths */
};

static void reap_finish(struct rdma_path *rp);

/* rp's QP (ours, or librdmacm's on its id), then its cm_id.  Either
 * thread; nothing else touches them any more. */
static void qp_id_destroy(struct rdma_path *rp)
{
	/* The windows first, the QP in the error state: destroyed, the QP
	 * would wait for the references its windows hold on it. */
	rift__rdma_binds_dealloc(rp);
	if (rp->id) {
		if (rp->user_qp)
			rift__vb_qp_destroy(rp->qp);
		else
			rift__vb_qp_teardown(rp->id, NULL, NULL);
		rift__vb_id_destroy(rp->id);
	} else {
		rift__vb_qp_destroy(rp->qp);
	}
}

static void *reaper_main(void *arg)
{
	struct reaper *rr = arg;
	uint64_t one = 1;

	/* Named for top -H and perf: whose CPU a teardown takes. */
	pthread_setname_np(pthread_self(), "rift-reaper");

	pthread_mutex_lock(&rr->mu);
	for (;;) {
		struct rdma_path *rp = rr->todo;

		if (!rp) {
			if (rr->stop)
				break;
			pthread_cond_wait(&rr->cv, &rr->mu);
			continue;
		}
		rr->todo = rp->reap_next;
		if (!rr->todo)
			rr->todo_tail = &rr->todo;
		pthread_mutex_unlock(&rr->mu);
		qp_id_destroy(rp);
		pthread_mutex_lock(&rr->mu);
		rp->reap_next = rr->done;
		rr->done = rp;
		if (write(rr->efd, &one, sizeof(one)) < 0) /* no loop here */
			RIFT_PLOG(RIFT_LOG_DEBUG, "reaper: eventfd: %s",
				  strerror(errno));
	}
	pthread_mutex_unlock(&rr->mu);
	return NULL;
}

/* Finish the paths whose QPs are gone; returns how many. */
static unsigned reaper_collect(struct reaper *rr)
{
	struct rdma_path *rp, *next;
	unsigned n = 0;
	uint64_t v;

	if (read(rr->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RIFT_DEBUG(rr->ctx, "reaper: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&rr->mu);
	rp = rr->done;
	rr->done = NULL;
	pthread_mutex_unlock(&rr->mu);
	for (; rp; rp = next, n++) {
		next = rp->reap_next;
		reap_finish(rp);
	}
	pthread_mutex_lock(&rr->mu);
	rr->pending -= n;
	pthread_mutex_unlock(&rr->mu);
	return n;
}

static void reaper_cb(rift__io *io, uint32_t revents)
{
	RIFT_UNUSED(revents);
	reaper_collect(rift__container_of(io, struct reaper, io));
}

static struct reaper *reaper_get(struct rift__rdma_ctx *r)
{
	struct reaper *rr = r->reaper;

	if (rr)
		return rr;
	rr = calloc(1, sizeof(*rr));
	if (!rr)
		return NULL;
	rr->todo_tail = &rr->todo;
	rr->ctx = r->ctx;
	rr->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (rr->efd < 0)
		goto fail_efd;
	if (rift__io_start(r->ctx, &rr->io, rr->efd, EPOLLIN, reaper_cb))
		goto fail_io;
	pthread_mutex_init(&rr->mu, NULL);
	pthread_cond_init(&rr->cv, NULL);
	if (pthread_create(&rr->thread, NULL, reaper_main, rr))
		goto fail_thread;
	r->reaper = rr;
	return rr;
fail_thread:
	pthread_cond_destroy(&rr->cv);
	pthread_mutex_destroy(&rr->mu);
	rift__io_stop(r->ctx, &rr->io);
fail_io:
	close(rr->efd);
fail_efd:
	free(rr);
	return NULL;
}

/*
 * Context teardown: wait until every queued QP is gone, answering CM
 * events meanwhile (rdma_destroy_id waits until the events it reported
 * are acknowledged), then end the thread.
 */
void rift__rdma_reaper_free(struct rift__rdma_ctx *r)
{
	struct reaper *rr = r->reaper;
	unsigned pending;

	if (!rr)
		return;
	for (;;) {
		pthread_mutex_lock(&rr->mu);
		pending = rr->pending;
		pthread_mutex_unlock(&rr->mu);
		if (!pending)
			break;
		if (r->ch)
			rift__rdma_cm_io_cb(&r->io, EPOLLIN);
		if (!reaper_collect(rr))
			usleep(1000);
	}
	pthread_mutex_lock(&rr->mu);
	rr->stop = true;
	pthread_cond_signal(&rr->cv);
	pthread_mutex_unlock(&rr->mu);
	pthread_join(rr->thread, NULL);
	pthread_cond_destroy(&rr->cv);
	pthread_mutex_destroy(&rr->mu);
	rift__io_stop(r->ctx, &rr->io);
	close(rr->efd);
	free(rr);
	r->reaper = NULL;
}

/*
 * A path whose port is down is not torn down until the port is ACTIVE
 * again (or its device goes, or the context ends); its QP is in the
 * error state meanwhile, so nothing moves on it.  Two reasons, both
 * rxe's (6.1), both seen in the lab:
 *  - destroying its cm_id, or rdma_disconnect, sends a MAD (DREQ, or
 *    REJ for a request in flight) through the port that cannot carry
 *    it, and that leaves the port's CM unusable: after a link flap,
 *    connection requests over it never reached the listener, or the
 *    REP never came back, for the rest of the boot;
 *  - destroying its QP waits until the kernel lets go of the packets
 *    the QP queued for a neighbour that no longer answers, 2-3 s, which
 *    even on the reaper's thread slowed the re-attach over the other
 *    link by as much (a 2-vCPU guest).
 * The blocks it holds come back with it.
 */
static void path_park(struct rift__rdma_ctx *r, struct rdma_path *rp)
{
	rp->reap_next = r->parked;
	r->parked = rp;
	RIFT_DEBUG(r->ctx, "%s: torn down when port %u is active again",
		   rp->base.peer, rp->port_num);
}

static void reaper_push(struct rift__rdma_ctx *r, struct rdma_path *rp);

/* Tear down the parked paths of (dev, port): port 0 every port of dev,
 * dev NULL every device. */
void rift__rdma_parked_release(struct rift__rdma_ctx *r, struct ibv_device *dev,
			       int port)
{
	struct rdma_path **pp = &r->parked, *rp;

	while ((rp = *pp)) {
		if (dev && (!rp->verbs || rp->verbs->device != dev ||
			    (port && rp->port_num != port))) {
			pp = &rp->reap_next;
			continue;
		}
		*pp = rp->reap_next;
		rp->park = false;
		reaper_push(r, rp);
	}
}

/* Is the port of this path's device down (not ACTIVE)? */
bool rift__rdma_port_down(struct ibv_context *verbs, uint8_t port)
{
	struct ibv_port_attr pa;
	rift__vb_err err;

	return verbs && port &&
	       (rift__vb_port_query(verbs, port, &pa, err) ||
		pa.state != IBV_PORT_ACTIVE);
}

static void destroy_now(struct rdma_path *rp);

/*
 * A path refused or aborted with an ERROR frame (its code and text, the
 * peer's only way of learning why) goes only once the frame has left.
 * Over TCP close(2) sends what was written first; a QP moved to ERR
 * flushes what it has not sent yet, and the peer then learned only
 * "peer disconnected": an impostor refused by a RESUME's check tried
 * again, an application's abort looked like a lost path.  So a signaled
 * zero-length WRITE goes behind the frame (it needs no credit, no
 * receive buffer and no key, C9-88): on a reliable connection its
 * completion comes after the peer acknowledged everything posted before
 * it.  The path waits for that completion, dead (its receives and other
 * completions dropped), its windows still bound, for LAST_WORD_MS at
 * most; then goes as any other.  Not when its port is down, nothing
 * left it then.
 */
#define LAST_WORD_MS 100

static void last_word_expired(rift_timer *t, void *user)
{
	RIFT_UNUSED(t);
	destroy_now(user);
}

/* The WRITE behind the frame, in the next slot; false if it cannot be
 * posted (the QP failed). */
static bool last_word_post(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	rift__vb_err err;
	uint32_t slot;

	if (rift__rdma_post_zero_write(rp, &slot, err)) {
		RIFT_DEBUG(p->ctx, "%s: %s", p->peer, err);
		return false;
	}
	rp->last_slot = slot;
	return true;
}

static bool last_word_wait(struct rdma_path *rp)
{
	rift__path *p = &rp->base;

	/* Not only once established: a server refuses a client's first
	 * frames before rdma_cm tells it of the connection.  (A QP that
	 * cannot send yet refuses the WRITE, and the path goes at once.) */
	if (!p->said_error || !rp->qp || !rp->scq || rp->last_word ||
	    rift__rdma_port_down(rp->verbs, rp->port_num))
		return false;
	/* A full send queue: the WRITE goes when a completion gives a
	 * slot back (rift__rdma_last_word_wc). */
	rp->last_slot = UINT32_MAX;
	if (rp->slots_free && !last_word_post(rp))
		return false;
	rp->last_word = true;
	rift__list_add_tail(&rctx_of(p->ctx)->last_words, &rp->poll_node);
	rift__timer_init(p->ctx, &rp->last_timer, last_word_expired, rp);
	rift_timer_start(&rp->last_timer, LAST_WORD_MS, 0);
	RIFT_DEBUG(p->ctx, "%s: ERROR frame leaving before the path goes",
		   p->peer);
	return true;
}

/* A send completion of a path whose ERROR frame is leaving.  The WRITE
 * behind it completed (maybe flushed: the QP failed, nothing more leaves
 * then either): the path goes, from the timers, never under the poll
 * that found the completion.  Another one gave slots back: the WRITE
 * goes if it waited for one. */
void rift__rdma_last_word_wc(struct rdma_path *rp, const struct ibv_wc *w)
{
	uint32_t slot = WR_IDX(w->wr_id);

	if (w->status != IBV_WC_SUCCESS || slot == rp->last_slot) {
		rift_timer_start(&rp->last_timer, 0, 0);
		return;
	}
	rp->slots_free += rp->slots[slot].covers;
	if (rp->last_slot == UINT32_MAX && rp->slots_free &&
	    !last_word_post(rp))
		rift_timer_start(&rp->last_timer, 0, 0);
}

/* The context ends: paths whose ERROR frame is leaving go now. */
void rift__rdma_last_words_end(struct rift__rdma_ctx *r)
{
	while (r->last_words.next != &r->last_words)
		destroy_now(rift__list_entry(r->last_words.next,
					     struct rdma_path, poll_node));
}

void rift__rdma_destroy(rift__path *p)
{
	struct rdma_path *rp = rp_of(p);

	rift__list_del(&rp->poll_node);
	if (last_word_wait(rp))
		return;
	destroy_now(rp);
}

static void destroy_now(struct rdma_path *rp)
{
	rift__path *p = &rp->base;
	uint64_t t0 = rift__clock_us();

	if (rp->last_word) {
		rift_timer_stop(&rp->last_timer);
		rift__list_del(&rp->poll_node);
		rp->last_word = false;
	}
	rift_timer_stop(&rp->dst_timer);
	/* From here its completions still in the CQ find no path. */
	rift__rdma_qpt_del(rctx_of(p->ctx), rp);
	/* Nothing more goes out or is answered: rdma_disconnect moves
	 * librdmacm's QP to ERR, ours we move (posted work is flushed,
	 * dropped in the CQ).  First: a READ the peer sends while the QP
	 * still answers, into a window already freed, would get a remote
	 * access error, which the peer takes for a lie (a buffer we do not
	 * own) and ends the whole session for a benign teardown. */
	rp->park = (rp->qp || rp->id) &&
		   rift__rdma_port_down(rp->verbs, rp->port_num) &&
		   !rift__rdma_dev_is_gone(rp->verbs);
	rift__rdma_qp_err(rp);
	if (rp->id && rp->established && !rp->park)
		rift__vb_disconnect(rp->id);
	/* Then the windows leave their buffers (the messages stay queued in
	 * the session, and a new path binds new windows over them); the
	 * reaper deallocates them (rift__rdma_binds_detach says why). */
	rift__rdma_binds_detach(rp);
	if (rift__fault_hit(RIFT_FAULT_TEARDOWN_SLOW))
		usleep(50000);
	/* cm=tcp: closing the side channel tells the peer at once. */
	rift__cmtcp_close(rp->tc);
	rp->tc = NULL;
	if (rp->id)
		rp->id->context = NULL; /* its last events find no path */
	RIFT_DEBUG(p->ctx, "%s: QP stopped and windows freed in %.1f ms",
		   p->peer, (rift__clock_us() - t0) / 1e3);
	if (rp->park) {
		path_park(rctx_of(p->ctx), rp);
		return;
	}
	reaper_push(rctx_of(p->ctx), rp);
}

/* Destroy rp's QP and cm_id on the reaper's thread, or here if there is
 * none; reap_finish follows. */
static void reaper_push(struct rift__rdma_ctx *r, struct rdma_path *rp)
{
	struct reaper *rr = (rp->qp || rp->id) ? reaper_get(r) : NULL;

	if (!rr) {
		/* Nothing to destroy, or no thread to do it: here. */
		qp_id_destroy(rp);
		reap_finish(rp);
		return;
	}
	pthread_mutex_lock(&rr->mu);
	rp->reap_next = NULL;
	*rr->todo_tail = rp;
	rr->todo_tail = &rp->reap_next;
	rr->pending++;
	pthread_cond_signal(&rr->cv);
	pthread_mutex_unlock(&rr->mu);
}

/* The QP is gone: no DMA touches the blocks any more (nor do READs
 * still in flight: their destinations go too). */
static void reap_finish(struct rdma_path *rp)
{
	rift__path *p = &rp->base;

	/* After the QP: the CQ may go with its last holder. */
	if (rp->scq) {
		rift__list_del(&rp->cq_node);
		p->ctx->n_polled_paths--;
		rift__rdma_cq_release(rctx_of(p->ctx), rp->scq, rp->cq_need,
				      rp->qp != NULL);
	}
	rift__rdma_binds_free(rp);
	for (uint32_t k = 0; k < rp->rndv_n; k++)
		rift__rdma_rndv_dst_free(
			rp, &rp->rndv[(rp->rndv_head + k) % RNDV_MAX]);
	for (uint32_t i = 0; rp->rbufs && i < rp->rq_depth; i++)
		if (rp->rbufs[i])
			rift__pool_free(p->ctx->pool, rp->rbufs[i],
					RIFT_POOL_RECV);
	for (uint32_t i = 0; rp->sbufs && i < rp->sq_depth; i++)
		if (rp->sbufs[i])
			rift__pool_free(p->ctx->pool, rp->sbufs[i],
					RIFT_POOL_SEND);
	free(rp->rbufs);
	free(rp->sbufs);
	free(rp->rlkey);
	free(rp->slkey);
	rift__stream_free(&rp->rx);
	free(rp->slots);
	free(rp->pend);
	free(rp->pend_len);
	free(rp->repost);
	free(rp);
}
