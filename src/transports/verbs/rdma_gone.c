/*
 * rdma_gone.c - a device removed while in use (`rdma link del`, a hot
 * unplugged adapter, a driver unloaded): its paths fail, and everything
 * the process holds on it is let go, because the kernel waits for that.
 *
 * Without a driver that can take a context away by itself (rxe cannot),
 * ib_unregister_device waits until every process has closed every file
 * of the device: librdmacm's context (closed by librdmacm when its last
 * user lets go of a device it saw removed), and a context's own event
 * watch.  Before that, the objects on those contexts must go, or freeing
 * them later touches a closed context: per rift context its QPs (the
 * paths, on the reaper), its prepared QPs, its CQs and completion
 * channel; per process the block pool's registrations and the PD
 * (rdma_dev.c, once no context holds CQs there).  A session on the
 * device fails over to another path of its group, or re-attaches; the
 * device, once added again, is a new device to rift.
 *
 * How it is learnt: rdma_cm's DEVICE_REMOVAL on an id bound to it (a path
 * in rdma_cm mode), and the kernel's uevent for the device's verbs file
 * (every context, both cm modes: a context with only CQs or a cm=tcp
 * path there has no id to be told on).  The uevent comes first: the
 * verbs file's node is removed before the kernel waits.  Where uevents
 * do not come (a container in a user namespace), a context told by
 * rdma_cm tells every other of the process (its note_fd, rdma_cq.c), so
 * one holding only CQs there lets go too.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>

#include "transports/verbs/rdma_int.h"

static void settle_cb(rift_timer *t, void *user)
{
	struct rift__rdma_ctx *r = user;

	RIFT_UNUSED(t);
	for (int i = r->n_cqdev - 1; i >= 0; i--) {
		struct cq_dev *d = r->cqdev[i];

		if (!d->gone || !rift__rdma_cq_dev_unused(r, d))
			continue;
		RIFT_DEBUG(r->ctx, "%s: the context's CQs on it are gone",
			   rift__vb_device_name(d->verbs->device));
		rift__rdma_cq_dev_free(r, d);
	}
}

void rift__rdma_gone_settle_later(struct rift__rdma_ctx *r)
{
	if (r->gone_timer_on && !rift__timer_active(&r->gone_timer))
		rift_timer_start(&r->gone_timer, 0, 0);
}

void rift__rdma_device_gone(struct rift__rdma_ctx *r, struct ibv_device *dev,
			    const char *how)
{
	rift_ctx *ctx = r->ctx;
	const char *name = rift__vb_device_name(dev);
	struct cq_dev *d = NULL;
	struct rift__list *it, *next;
	int n = 0;

	for (int i = 0; i < r->n_cqdev; i++)
		if (r->cqdev[i]->verbs->device == dev)
			d = r->cqdev[i];
	if (d && d->gone)
		return; /* known already */
	if (d)
		d->gone = true;
	free(r->sel);
	r->sel = NULL;
	rift__rdma_dev_mark_gone(ctx->pool, dev);
	for (it = ctx->paths.next; it != &ctx->paths; it = next) {
		rift__path *p = rift__list_entry(it, rift__path, ctx_node);
		struct rdma_path *rp;

		next = it->next;
		if (p->ops != &rift__rdma_ops || p->state == RIFT_PATH_DEAD)
			continue;
		rp = rp_of(p);
		if (!rp->verbs || rp->verbs->device != dev)
			continue;
		rift__path_failed_why(p, RIFT_PATH_DOWN_DEVICE, RIFT_ENODEV,
				      "RDMA device %s was removed", name);
		n++;
	}
	/* Parked for a port that never comes back. */
	rift__rdma_parked_release(r, dev, 0);
	for (it = ctx->listeners.next; it != &ctx->listeners; it = it->next) {
		rift_listener *l = rift__list_entry(it, rift_listener, node);
		struct rdma_listener *rl = l->transport_state;

		if (l->ops != &rift__rdma_ops || !rl)
			continue;
		if (rl->prep_verbs && rl->prep_verbs->device == dev)
			rift__rdma_pool_drop(rl, rl->prep_verbs);
		/* Bound to an address of the device: its id holds it. */
		if (rl->id && rl->id->verbs && rl->id->verbs->device == dev)
			rift__rdma_relisten(rl);
	}
	for (int i = 0; i < r->n_watch; i++) {
		struct dev_watch *w = r->watch[i];

		if (w->dev != dev)
			continue;
		rift__io_stop(ctx, &w->io);
		rift__vb_device_close(w->c);
		free(w);
		r->watch[i--] = r->watch[--r->n_watch];
	}
	RIFT_WARN(ctx, "RDMA device %s was removed (%s): %d path%s on it "
		       "failed; what the context holds there goes once "
		       "they are torn down",
		  name, how, n, n == 1 ? "" : "s");
	rift__rdma_gone_settle_later(r);
}

/* ---- the kernel's uevents ---- */

/* A device added: setups wait this long first (its port goes ACTIVE and
 * its GID table fills in from a workqueue after it registers). */
#define DEVICE_BACK_MS 500

/* The device whose verbs file (uverbsN) this is, of those in use. */
static struct ibv_device *dev_by_file(struct rift__rdma_ctx *r,
				      const char *file)
{
	struct ibv_device *dev = NULL;

	pthread_mutex_lock(&rift__rdma_dev_mu);
	for (int i = 0; i < rift__rdma_n_devs && !dev; i++)
		if (rift__rdma_devs[i].verbs &&
		    !strcmp(rift__rdma_devs[i].verbs->device->dev_name, file))
			dev = rift__rdma_devs[i].verbs->device;
	pthread_mutex_unlock(&rift__rdma_dev_mu);
	for (int i = 0; i < r->n_cqdev && !dev; i++)
		if (!strcmp(r->cqdev[i]->verbs->device->dev_name, file))
			dev = r->cqdev[i]->verbs->device;
	for (int i = 0; i < r->n_watch && !dev; i++)
		if (!strcmp(r->watch[i]->dev->dev_name, file))
			dev = r->watch[i]->dev;
	return dev;
}

/*
 * One uevent: "ACTION@DEVPATH" and KEY=VALUE strings, each NUL-ended.
 * A verbs file removed is "remove", SUBSYSTEM=infiniband_verbs,
 * DEVNAME=infiniband/uverbsN.
 */
static void uevent(struct rift__rdma_ctx *r, char *buf, size_t len)
{
	const char *action = NULL, *subsys = NULL, *devname = NULL;
	struct ibv_device *dev;
	const char *file;

	for (size_t off = 0; off < len; off += strlen(buf + off) + 1) {
		const char *kv = buf + off;

		if (!strncmp(kv, "ACTION=", 7))
			action = kv + 7;
		else if (!strncmp(kv, "SUBSYSTEM=", 10))
			subsys = kv + 10;
		else if (!strncmp(kv, "DEVNAME=", 8))
			devname = kv + 8;
	}
	if (!action || !subsys || !devname ||
	    strcmp(subsys, "infiniband_verbs"))
		return;
	if (!strcmp(action, "add")) {
		/* A device (back): setups that backed off may go now,
		 * once its port and GIDs are up. */
		rift__group_links_changed(r->ctx, DEVICE_BACK_MS);
		return;
	}
	if (strcmp(action, "remove"))
		return;
	file = strrchr(devname, '/');
	file = file ? file + 1 : devname;
	dev = dev_by_file(r, file);
	if (dev)
		rift__rdma_device_gone(r, dev, "its verbs file was removed");
}

static void uev_cb(rift__io *io, uint32_t revents)
{
	struct rift__rdma_ctx *r = rift__container_of(io, struct rift__rdma_ctx,
						      uev_io);
	char buf[8192];

	RIFT_UNUSED(revents);
	for (;;) {
		struct sockaddr_nl from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(r->uev_fd, buf, sizeof(buf) - 1,
				     MSG_DONTWAIT, (struct sockaddr *)&from,
				     &flen);

		if (n < 0) {
			if (errno == ENOBUFS) {
				/* Events were lost; a removal among them
				 * still shows through rdma_cm and the QPs. */
				RIFT_DEBUG(r->ctx, "uevents: lost some "
						   "(socket buffer full)");
				continue;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				RIFT_DEBUG(r->ctx, "uevents: recv: %s",
					   strerror(errno));
			return;
		}
		/* Only the kernel's (port 0), not a process's. */
		if (flen != sizeof(from) || from.nl_pid != 0)
			continue;
		buf[n] = '\0';
		uevent(r, buf, (size_t)n);
	}
}

void rift__rdma_gone_start(struct rift__rdma_ctx *r)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };

	rift__timer_init(r->ctx, &r->gone_timer, settle_cb, r);
	r->gone_timer_on = true;
	if (rift__fault_hit(RIFT_FAULT_NO_UEVENTS)) {
		errno = EPERM;
		goto none;
	}
	r->uev_fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			   NETLINK_KOBJECT_UEVENT);
	if (r->uev_fd >= 0 &&
	    !bind(r->uev_fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !rift__io_start(r->ctx, &r->uev_io, r->uev_fd, EPOLLIN, uev_cb))
		return;
none:
	/* Then rdma_cm tells, on the ids bound to the device, and a context
	 * that learns it tells the others (rift__rdma_dev_mark_gone). */
	RIFT_DEBUG(r->ctx, "device removals seen through rdma_cm only "
			   "(uevents: %s)",
		   strerror(errno));
	if (r->uev_fd >= 0)
		close(r->uev_fd);
	r->uev_fd = -1;
}

void rift__rdma_gone_stop(struct rift__rdma_ctx *r)
{
	if (r->gone_timer_on) {
		rift_timer_stop(&r->gone_timer);
		r->gone_timer_on = false;
	}
	if (r->uev_fd >= 0) {
		rift__io_stop(r->ctx, &r->uev_io);
		close(r->uev_fd);
		r->uev_fd = -1;
	}
}
