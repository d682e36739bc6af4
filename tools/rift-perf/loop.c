/*
 * rift-perf's loop, run by the server and by the client, each on a
 * context of its own: an external one (poll on rift_ctx_fd, then
 * rift_ctx_progress), following the polling mode of the configuration.
 */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "perf.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * One round: sleep on rift_ctx_fd as the polling mode allows (never longer
 * than max_ms, so flags are seen), then do what is ready.
 */
int loop_once(struct loop *lp, int max_ms)
{
	/* Busy polling reads no clock here: a round must cost little more
	 * than rift_ctx_progress, as perftest's costs one ibv_poll_cq. */
	uint64_t now = lp->polling == RIFT_POLL_ADAPTIVE ? now_ns() : 0;
	int wait = 0, t, rc;

	if (lp->polling == RIFT_POLL_EVENT ||
	    (lp->polling == RIFT_POLL_ADAPTIVE &&
	     now - lp->last_work >= lp->busy_ns)) {
		t = rift_ctx_timeout(lp->ctx);
		wait = t < 0 || t > max_ms ? max_ms : t;
	}
	if (wait > 0) {
		struct pollfd pfd = {.fd = rift_ctx_fd(lp->ctx),
				     .events = POLLIN};

		poll(&pfd, 1, wait); /* EINTR: the caller looks at the flags */
	}
	rc = rift_ctx_progress(lp->ctx);
	if (rc > 0 && lp->polling == RIFT_POLL_ADAPTIVE)
		lp->last_work = now_ns();
	/* a scrape woke us (rift_ctx_wake): render on this, ctx's thread */
	metrics_src_poll(lp->msrc);
	return rc;
}

/* msrc (may be NULL): where ctx's metrics are served; attached here. */
void loop_init(struct loop *lp, rift_ctx *ctx, const rift_config *cfg,
	       struct metrics_src *msrc)
{
	lp->ctx = ctx;
	lp->polling = cfg->polling;
	lp->busy_ns = (uint64_t)cfg->busy_poll_us * 1000u;
	lp->last_work = now_ns();
	lp->msrc = msrc;
	metrics_src_attach(msrc, ctx);
}

/* Stop serving the loop's context over HTTP; before rift_ctx_destroy. */
void loop_fini(struct loop *lp)
{
	metrics_src_detach(lp->msrc);
	lp->msrc = NULL;
}

/* scheme://host:port; a HOST of several addresses, ADDR[,ADDR...], gets
 * the port on each (a client's port group: rift connects through the
 * first and keeps standby paths through the others).  Returns -1 when
 * the URL does not fit buf. */
int url_build(char *buf, size_t len, const char *scheme, const char *host,
	      int port)
{
	size_t used = (size_t)snprintf(buf, len, "%s://", scheme);

	for (const char *a = host; used < len;) {
		size_t n = strcspn(a, ",");
		bool v6 = memchr(a, ':', n) && a[0] != '[';

		used += (size_t)snprintf(buf + used, len - used,
					 "%s%s%.*s%s:%d", a == host ? "" : ",",
					 v6 ? "[" : "", (int)n, a,
					 v6 ? "]" : "", port);
		if (!a[n])
			break;
		a += n + 1;
	}
	return used < len ? 0 : -1;
}
