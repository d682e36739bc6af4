/*
 * metrics_http.h - serve rift's metrics over HTTP from a tool:
 *
 *   GET /metrics   rift_metrics_prometheus of every context, Prometheus
 *                  text format 0.0.4, each sample labelled side="<side>"
 *   GET /info      rift_metrics_info of every context, each after a
 *                  "# Context" section naming its side
 *   anything else  404 (405 for a method other than GET or HEAD)
 *
 * A tool that includes it links tools/metrics_http.c and libmicrohttpd
 * (`pkg-config --libs libmicrohttpd`); it uses only rift.h, like the
 * tools.  metrics_http.c tells how the work is split between the HTTP
 * thread and each context's own thread, and how several contexts share
 * one /metrics.
 */
#ifndef RIFT_TOOLS_METRICS_HTTP_H
#define RIFT_TOOLS_METRICS_HTTP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rift.h"

#define METRICS_HTTP_MAX_SRC 4

struct MHD_Daemon;

/* A text buffer; len excludes the NUL. */
struct metrics_buf {
	char *p;
	size_t len, cap; /* bytes */
};

/* One context, rendered on its own thread. */
struct metrics_src {
	const char *side;     /* label value: "server", "client" */
	pthread_mutex_t mu;   /* guards what follows, except scratch */
	pthread_cond_t cv;    /* signalled when done moves or ctx goes */
	rift_ctx *ctx;	      /* NULL while detached */
	int want;	      /* METRICS_WANT_* asked (atomic reads) */
	uint64_t asked, done; /* request numbers: last asked, last served */
	struct metrics_buf prom, info; /* last renderings */
	bool have_prom, have_info;
	struct metrics_buf scratch[2]; /* owner thread only: prom, info */
};

struct metrics_http {
	struct MHD_Daemon *d;
	int port;	  /* bound port */
	const char *prog; /* log prefix */
	struct metrics_src src[METRICS_HTTP_MAX_SRC];
	int n_src;
};

/* ---- the tool's main thread ---- */

/*
 * Listen on addr:port (port 0: any free port, see mh->port) and serve
 * the contexts of the sides named in sides[0..n-1] (one source each, in
 * that order: mh->src[i]), which their threads attach later.  Returns 0,
 * or -1 with the reason in err ("cannot listen on 127.0.0.1:9100:
 * Address already in use").  Signals are blocked in the HTTP thread.
 */
int metrics_http_start(struct metrics_http *mh, const char *prog,
		       const char *addr, int port, const char *const *sides,
		       int n, char *err, size_t errlen);

/* Source i (the side given to metrics_http_start), or NULL. */
struct metrics_src *metrics_http_src(struct metrics_http *mh, int i);

/*
 * Stop serving (joins the HTTP thread, closes the socket) and free
 * everything.  The sources must be detached.  mh may be NULL or never
 * started.
 */
void metrics_http_stop(struct metrics_http *mh);

/* ---- the context's thread ---- */

/*
 * Serve ctx through s from now on.  Call on ctx's thread, which must
 * then call metrics_src_poll() after each rift_ctx_progress().  s may be
 * NULL (no endpoint).
 */
void metrics_src_attach(struct metrics_src *s, rift_ctx *ctx);

/*
 * Serve pending requests of s: call after every rift_ctx_progress() on
 * the thread that owns the attached context.  s may be NULL.  Costs one
 * atomic load when nothing is asked.
 */
void metrics_src_poll(struct metrics_src *s);

/*
 * Stop serving the context of s and drop its renderings; call before
 * rift_ctx_destroy(), on the context's thread.  s may be NULL.
 */
void metrics_src_detach(struct metrics_src *s);

#endif /* RIFT_TOOLS_METRICS_HTTP_H */
