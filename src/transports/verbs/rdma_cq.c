/*
 * rdma_cq.c - shared completion queues of the verbs transport: made per
 * context and device, shared by its paths while their completions fit,
 * and failed together when one overflows.  Polling them is rdma_wc.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <unistd.h>

#include "transports/verbs/rdma_int.h"

/* ---- shared completion queues ---- */

/*
 * rdma.cq_size is the size of each shared CQ: made with that many entries
 * (at least one path's need, at most the device's max_cqe), and given as
 * many paths as their needs fit in what the device really made (drivers
 * round up).  A CQ whose last holder leaves is destroyed unless it is the
 * device's only one: a context that reconnects reuses it.
 */

/* A process-wide set of pointers, under a lock of its user's. */
struct ptr_set {
	void **v;
	size_t n, cap;
};

/*
 * Which CQs are rift's, process-wide, for IBV_EVENT_CQ_ERR.  It arrives on
 * the async fd of the device context librdmacm opened (the one the CQs
 * and QPs live on), which every rift context with CQs there watches;
 * whichever reads the event flags the CQ and wakes its context through
 * note_fd.  ibv_destroy_cq waits until the event is acknowledged, so the
 * CQ and its context outlive the reader's look.  The lock is taken when a
 * CQ is made or destroyed and on such events, never per completion.
 */
static pthread_mutex_t cqreg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ptr_set cqreg;

/*
 * The contexts with a note_fd, process-wide: a device removed is told to
 * each (rift__rdma_notes_wake), which looks at its devices (note_cb).
 */
static pthread_mutex_t notes_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ptr_set notes;

/* Add p to set (its lock held): false when out of memory. */
static bool ptr_set_add(struct ptr_set *set, void *p)
{
	if (set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 16;
		void **v = realloc(set->v, cap * sizeof(*v));

		if (!v)
			return false;
		set->v = v;
		set->cap = cap;
	}
	set->v[set->n++] = p;
	return true;
}

/* Take p out of set (its lock held); the last one out frees the array. */
static void ptr_set_del(struct ptr_set *set, void *p)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i] == p) {
			set->v[i] = set->v[--set->n];
			break;
		}
	if (set->n == 0) {
		free(set->v);
		set->v = NULL;
		set->cap = 0;
	}
}

static bool notes_add(struct rift__rdma_ctx *r)
{
	bool ok;

	pthread_mutex_lock(&notes_mu);
	ok = ptr_set_add(&notes, r);
	pthread_mutex_unlock(&notes_mu);
	return ok;
}

static void notes_del(struct rift__rdma_ctx *r)
{
	pthread_mutex_lock(&notes_mu);
	ptr_set_del(&notes, r);
	pthread_mutex_unlock(&notes_mu);
}

void rift__rdma_notes_wake(void)
{
	uint64_t one = 1;

	pthread_mutex_lock(&notes_mu);
	for (size_t i = 0; i < notes.n; i++) {
		struct rift__rdma_ctx *r = notes.v[i];

		if (write(r->note_fd, &one, sizeof(one)) < 0)
			RIFT_PLOG(RIFT_LOG_DEBUG, "device note: write: %s",
				  strerror(errno));
	}
	pthread_mutex_unlock(&notes_mu);
}

static bool cqreg_add(struct shared_cq *s)
{
	bool ok;

	pthread_mutex_lock(&cqreg_mu);
	ok = ptr_set_add(&cqreg, s);
	pthread_mutex_unlock(&cqreg_mu);
	return ok;
}

static void cqreg_del(struct shared_cq *s)
{
	pthread_mutex_lock(&cqreg_mu);
	ptr_set_del(&cqreg, s);
	pthread_mutex_unlock(&cqreg_mu);
}

/*
 * The CQ overflowed (or can no longer be polled): completions are lost,
 * so no path on it can go on.  Every one fails now, with the reason; the
 * sessions re-attach on new paths (on another CQ: this one takes no one
 * any more and goes with its last holder).
 */
void rift__rdma_cq_fail(struct shared_cq *s, const char *why)
{
	struct rift__list *it;

	if (s->failed)
		return;
	s->failed = true;
	RIFT_WARN(s->dev->ctx, "%s: shared CQ of %u paths failed: %s",
		  rift__vb_device_name(s->dev->verbs->device), s->holders,
		  why);
	for (it = s->users.next; it != &s->users; it = it->next) {
		struct rdma_path *rp = rift__list_entry(it, struct rdma_path,
							cq_node);

		if (rp->base.state != RIFT_PATH_DEAD)
			rift__path_failed_why(
				&rp->base, RIFT_PATH_DOWN_DEVICE, RIFT_EIO,
				"%s: %s; every connection on that "
				"completion queue fails",
				rift__vb_device_name(s->dev->verbs->device),
				why);
	}
}

/* note_fd: a CQ of this context was flagged (by any context's reader). */
static void note_cb(rift__io *io, uint32_t revents)
{
	struct rift__rdma_ctx *r = rift__container_of(io, struct rift__rdma_ctx,
						      note_io);
	struct rift__list *it;
	uint64_t v;

	RIFT_UNUSED(revents);
	if (read(r->note_fd, &v, sizeof(v)) < 0)
		RIFT_DEBUG(r->ctx, "CQ error note: read: %s", strerror(errno));
	for (it = r->cqs.next; it != &r->cqs; it = it->next) {
		struct shared_cq *s = rift__list_entry(it, struct shared_cq,
						       node);

		if (__atomic_load_n(&s->overflow, __ATOMIC_ACQUIRE))
			rift__rdma_cq_fail(s, "completion queue overflow "
					      "(IBV_EVENT_CQ_ERR)");
	}
	/* A device another context saw removed (rdma_gone.c: it marks
	 * the device and lets go later, from a timer). */
	for (int i = 0; i < r->n_cqdev; i++)
		if (!r->cqdev[i]->gone &&
		    rift__rdma_dev_is_gone(r->cqdev[i]->verbs))
			rift__rdma_device_gone(r, r->cqdev[i]->verbs->device,
					       "another context was told");
}

/*
 * Async events of librdmacm's device context.  Only CQ errors are acted
 * on here: port events reach every context through its own watch
 * (rift__rdma_watch_device), and a QP's failure shows in its
 * completions.  Every event read is acknowledged (ibv_destroy_* wait for
 * that).
 */
static void cq_async_cb(rift__io *io, uint32_t revents)
{
	struct cq_dev *d = rift__container_of(io, struct cq_dev, async_io);
	struct ibv_async_event ev;

	RIFT_UNUSED(revents);
	while (rift__vb_async_next(d->verbs, &ev) == 0) {
		RIFT_DEBUG(d->ctx, "%s: async event %s",
			   rift__vb_device_name(d->verbs->device),
			   rift__vb_event_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_CQ_ERR) {
			pthread_mutex_lock(&cqreg_mu);
			for (size_t i = 0; i < cqreg.n; i++) {
				struct shared_cq *s = cqreg.v[i];
				uint64_t one = 1;

				if (s->cq != ev.element.cq)
					continue;
				__atomic_store_n(&s->overflow, 1,
						 __ATOMIC_RELEASE);
				if (write(s->dev->r->note_fd, &one,
					  sizeof(one)) < 0)
					RIFT_DEBUG(d->ctx,
						   "CQ error note: write: %s",
						   strerror(errno));
			}
			pthread_mutex_unlock(&cqreg_mu);
		}
		rift__vb_async_ack(&ev);
	}
}

static struct cq_dev *cq_dev_get(struct rift__rdma_ctx *r,
				 struct ibv_context *verbs, char *err,
				 size_t errlen)
{
	rift_ctx *ctx = r->ctx;
	struct cq_dev *d;
	rift__vb_err verr;

	for (int i = 0; i < r->n_cqdev; i++) {
		if (r->cqdev[i]->verbs != verbs)
			continue;
		if (r->cqdev[i]->gone) {
			snprintf(err, errlen, "%s was removed",
				 rift__vb_device_name(verbs->device));
			return NULL;
		}
		return r->cqdev[i];
	}
	if (r->n_cqdev == RIFT_POOL_MAX_DEVICES) {
		snprintf(err, errlen, "more than %d RDMA devices",
			 RIFT_POOL_MAX_DEVICES);
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->r = r;
	d->ctx = ctx;
	d->verbs = verbs;
	pthread_mutex_lock(&rift__rdma_dev_mu);
	for (int i = 0; i < rift__rdma_n_devs; i++)
		if (rift__rdma_devs[i].verbs == verbs)
			d->max_cqe = rift__rdma_devs[i].max_cqe;
	pthread_mutex_unlock(&rift__rdma_dev_mu);
	if (rift__vb_comp_channel_create(verbs, &d->cch, verr)) {
		snprintf(err, errlen, "%s", verr);
		free(d);
		return NULL;
	}
	if (rift__io_start(ctx, &d->cch_io, d->cch->fd, EPOLLIN,
			   rift__rdma_cq_event_cb)) {
		snprintf(err, errlen, "epoll: cannot watch the completion "
				      "channel");
		rift__vb_comp_channel_destroy(d->cch);
		free(d);
		return NULL;
	}
	d->cch_on = true;
	/* CQ overflows are reported on the device's async fd.  Watching it
	 * is best effort: the QPs' own errors still show without it. */
	if (r->note_fd < 0) {
		r->note_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (r->note_fd >= 0 &&
		    rift__io_start(ctx, &r->note_io, r->note_fd, EPOLLIN,
				   note_cb)) {
			close(r->note_fd);
			r->note_fd = -1;
		}
		if (r->note_fd >= 0 && !notes_add(r))
			RIFT_DEBUG(ctx, "device notes: out of memory: removals "
					"another context sees are not told "
					"here");
	}
	if (r->note_fd >= 0 && !rift__vb_async_setup(verbs, verr) &&
	    !rift__io_start(ctx, &d->async_io, verbs->async_fd, EPOLLIN,
			    cq_async_cb))
		d->async_on = true;
	else
		RIFT_DEBUG(ctx, "%s: CQ errors not watched",
			   rift__vb_device_name(verbs->device));
	r->cqdev[r->n_cqdev++] = d;
	rift__rdma_dev_ref(verbs);
	return d;
}

static void cq_destroy(struct rift__rdma_ctx *r, struct shared_cq *s)
{
	cqreg_del(s);
	rift__vb_cq_destroy(s->cq);
	rift__list_del(&s->node);
	s->dev->n_cqs--;
	r->ctx->stats.cqs--;
	free(s);
}

/*
 * Room for need completions on a shared CQ of the device: one that has it,
 * or a new one.  0, or RIFT_E* with err.
 */
int rift__rdma_cq_reserve(rift_ctx *ctx, struct ibv_context *verbs,
			  uint32_t need, struct shared_cq **out, char *err,
			  size_t errlen)
{
	struct rift__rdma_ctx *r = rctx_of(ctx);
	struct rift__list *it;
	struct shared_cq *s = NULL;
	struct cq_dev *d = cq_dev_get(r, verbs, err, errlen);
	rift__vb_err verr;
	uint32_t n;

	if (!d)
		return RIFT_ENOMEM;
	for (it = r->cqs.next; it != &r->cqs; it = it->next) {
		struct shared_cq *c = rift__list_entry(it, struct shared_cq,
						       node);

		if (c->dev == d && !c->failed && c->cap - c->used >= need) {
			s = c;
			break;
		}
	}
	if (!s) {
		n = ctx->cfg.cq_size < need ? need : ctx->cfg.cq_size;
		if (d->max_cqe && n > d->max_cqe)
			n = d->max_cqe;
		if (n < need) {
			snprintf(err, errlen,
				 "rdma.sq_depth + rdma.rq_depth (%u completions "
				 "a connection may have outstanding) exceed the "
				 "largest completion queue %s makes (max_cqe "
				 "%u)",
				 need, rift__vb_device_name(verbs->device),
				 d->max_cqe);
			return RIFT_EINVAL;
		}
		s = calloc(1, sizeof(*s));
		if (!s) {
			snprintf(err, errlen, "out of memory");
			return RIFT_ENOMEM;
		}
		rift__list_init(&s->users);
		s->dev = d;
		if (rift__vb_cq_create(verbs, &n, s, d->cch, &s->cq, verr) ||
		    rift__vb_cq_arm(r->dp_calls, s->cq, verr)) {
			snprintf(err, errlen, "%s", verr);
			rift__vb_cq_destroy(s->cq);
			free(s);
			return RIFT_ENOMEM;
		}
		s->cap = n;
		s->armed = true;
		if (!cqreg_add(s))
			RIFT_DEBUG(ctx, "shared CQ: overflow events not "
					"watched");
		rift__list_add_tail(&r->cqs, &s->node);
		d->n_cqs++;
		ctx->stats.cqs++;
		RIFT_DEBUG(ctx, "%s: shared CQ %u of %u entries",
			   rift__vb_device_name(verbs->device), d->n_cqs,
			   s->cap);
	}
	s->used += need;
	s->holders++;
	*out = s;
	return 0;
}

/*
 * A holder leaves.  With a QP destroyed just now its completions may still
 * sit in the CQ (a provider that does not clean them out), so its share
 * stays taken until a poll finds the CQ empty.
 */
void rift__rdma_cq_release(struct rift__rdma_ctx *r, struct shared_cq *s,
			   uint32_t need, bool had_qp)
{
	s->holders--;
	if (had_qp)
		s->stale += need;
	else
		s->used -= need;
	/* A removed device's CQs go together, with the device. */
	if (s->dev->gone) {
		if (s->holders == 0)
			rift__rdma_gone_settle_later(r);
		return;
	}
	/* Destroying a CQ drops whatever it still holds. */
	if (s->holders == 0 && (s->failed || s->dev->n_cqs > 1))
		cq_destroy(r, s);
}

/* Does nothing of the context hold a CQ of d any more? */
bool rift__rdma_cq_dev_unused(struct rift__rdma_ctx *r, struct cq_dev *d)
{
	for (struct rift__list *it = r->cqs.next; it != &r->cqs; it = it->next) {
		const struct shared_cq *s = rift__list_entry(it, struct shared_cq,
							     node);

		if (s->dev == d && s->holders)
			return false;
	}
	return true;
}

/* d's CQs, its channel and its reference on the device go (nothing holds
 * them: context teardown, or a removed device let go). */
void rift__rdma_cq_dev_free(struct rift__rdma_ctx *r, struct cq_dev *d)
{
	struct rift__list *it, *next;
	int i;

	for (it = r->cqs.next; it != &r->cqs; it = next) {
		struct shared_cq *s = rift__list_entry(it, struct shared_cq,
						       node);

		next = it->next;
		if (s->dev == d)
			cq_destroy(r, s);
	}
	if (d->cch_on)
		rift__io_stop(r->ctx, &d->cch_io);
	if (d->async_on)
		rift__io_stop(r->ctx, &d->async_io);
	rift__vb_comp_channel_destroy(d->cch);
	/* One-sided regions' registrations on the device: before its PD,
	 * which may go with the reference below. */
	rift__rdma_rma_dev_drop(r, d->verbs);
	for (i = 0; i < r->n_cqdev && r->cqdev[i] != d; i++)
		;
	if (i < r->n_cqdev)
		r->cqdev[i] = r->cqdev[--r->n_cqdev];
	rift__rdma_dev_unref(r->ctx->pool, d->verbs);
	free(d);
}

void rift__rdma_cq_devs_free(struct rift__rdma_ctx *r)
{
	while (r->n_cqdev)
		rift__rdma_cq_dev_free(r, r->cqdev[r->n_cqdev - 1]);
	if (r->note_fd >= 0) {
		notes_del(r);
		rift__io_stop(r->ctx, &r->note_io);
		close(r->note_fd);
		r->note_fd = -1;
	}
	free(r->qpt);
	r->qpt = NULL;
}
