/*
 * metrics_http.c - the HTTP endpoint of metrics_http.h: GET /metrics and
 * GET /info of the tool's contexts, served with libmicrohttpd.
 *
 * Threading.  A rift_ctx belongs to one thread, and
 * rift_metrics_prometheus() must run on it; libmicrohttpd runs its own
 * thread.  So the work is split by who owns what:
 *
 *  - The HTTP thread (MHD_USE_INTERNAL_POLLING_THREAD) never reads a
 *    context.  For a request it bumps a request number in each source,
 *    sets the source's `want` flag and calls rift_ctx_wake(), the one
 *    call rift.h says is safe from any thread (it is made with the
 *    source's mutex held, so a context being detached and destroyed is
 *    never woken), then waits on a condition variable, at most
 *    METRICS_HTTP_WAIT_MS.
 *  - The context's own thread calls metrics_src_poll() after each
 *    rift_ctx_progress().  That is one atomic load when nobody scrapes;
 *    when asked, it renders the context into its own buffer, swaps that
 *    buffer in under the mutex and signals.  Both sides of a loopback
 *    run render in parallel, each on its thread.
 *  - The HTTP thread then copies the texts out and merges them (below),
 *    so the rift thread pays for one rendering per scrape and nothing
 *    else: no periodic snapshot, and every scrape sees the counters of
 *    the moment it was made.
 *
 * Driving MHD from the rift loop instead (MHD_get_fdset + MHD_run) would
 * keep one thread per context, but a process with two contexts still
 * needs one of them to fetch the other's text across threads, a busy-
 * polling loop never sleeps in poll() to notice the HTTP socket, and the
 * endpoint would stall whenever the loop does other work.
 *
 * A context that does not answer in time (its thread is busy outside its
 * loop) is served from its last rendering, flagged with a comment; one
 * that is not attached (not created yet, or already destroyed) is left
 * out.
 *
 * Several contexts.  Prometheus forbids two samples with the same name
 * and labels, and wants all lines of a metric family together.  So every
 * sample gets a side="..." label (always, also with one context, so that
 * queries do not depend on the tool's mode), and the texts are merged
 * family by family: the HELP and TYPE lines once, then the samples of
 * each side.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "rift.h"

#include "metrics_http.h"

#define METRICS_HTTP_WAIT_MS	1000 /* for a context's thread to render, ms */
#define METRICS_HTTP_CONN_LIMIT 16   /* concurrent HTTP connections */
#define METRICS_HTTP_IDLE_S	10   /* idle HTTP connections are closed, s */

#define METRICS_WANT_PROM 1
#define METRICS_WANT_INFO 2

/* ---- small helpers ---- */

static int metrics_buf_reserve(struct metrics_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->len + more + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

static int metrics_buf_add(struct metrics_buf *b, const char *s, size_t n)
{
	if (metrics_buf_reserve(b, n))
		return -1;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int metrics_buf_str(struct metrics_buf *b, const char *s)
{
	return metrics_buf_add(b, s, strlen(s));
}

static void metrics_buf_free(struct metrics_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- the context's thread ---- */

/*
 * Render into b with one of rift's snprintf-like renderers, growing b
 * when the text did not fit.  0, or -1 (out of memory, renderer error).
 */
static int metrics_render(struct metrics_buf *b, rift_ctx *ctx,
			  int (*fn)(rift_ctx *, char *, size_t))
{
	for (int tries = 0; tries < 4; tries++) {
		int n = fn(ctx, b->p, b->cap);

		if (n < 0)
			return -1;
		if ((size_t)n < b->cap) {
			b->len = (size_t)n;
			return 0;
		}
		/* grow with room to spare: connections come and go */
		b->len = 0;
		if (metrics_buf_reserve(b, (size_t)n + (size_t)n / 4))
			return -1;
	}
	return -1;
}

void metrics_src_poll(struct metrics_src *s)
{
	struct metrics_buf tmp;
	uint64_t gen;
	int what;
	bool ok_prom = false, ok_info = false;

	if (!s || !__atomic_load_n(&s->want, __ATOMIC_RELAXED) || !s->ctx)
		return;
	pthread_mutex_lock(&s->mu);
	what = s->want;
	__atomic_store_n(&s->want, 0, __ATOMIC_RELAXED);
	gen = s->asked;
	pthread_mutex_unlock(&s->mu);

	/* Render outside the lock, into buffers only this thread touches. */
	if (what & METRICS_WANT_PROM)
		ok_prom = !metrics_render(&s->scratch[0], s->ctx,
					  rift_metrics_prometheus);
	if (what & METRICS_WANT_INFO)
		ok_info = !metrics_render(&s->scratch[1], s->ctx,
					  rift_metrics_info);

	pthread_mutex_lock(&s->mu);
	if (ok_prom) {
		tmp = s->prom;
		s->prom = s->scratch[0];
		s->scratch[0] = tmp;
		s->have_prom = true;
	}
	if (ok_info) {
		tmp = s->info;
		s->info = s->scratch[1];
		s->scratch[1] = tmp;
		s->have_info = true;
	}
	if (s->done < gen)
		s->done = gen;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void metrics_src_attach(struct metrics_src *s, rift_ctx *ctx)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->ctx = ctx;
	pthread_mutex_unlock(&s->mu);
}

void metrics_src_detach(struct metrics_src *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->ctx = NULL;
	s->have_prom = s->have_info = false;
	__atomic_store_n(&s->want, 0, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* ---- the HTTP thread ---- */

/* Ask s for a rendering; the request number to wait for, or 0. */
static uint64_t metrics_src_ask(struct metrics_src *s, int what)
{
	uint64_t gen = 0;

	pthread_mutex_lock(&s->mu);
	if (s->ctx) {
		gen = ++s->asked;
		__atomic_store_n(&s->want, s->want | what, __ATOMIC_RELAXED);
		/* under the lock: detach (then destroy) waits for it */
		rift_ctx_wake(s->ctx);
	}
	pthread_mutex_unlock(&s->mu);
	return gen;
}

/*
 * Wait for request gen of s (until *deadline), then copy the rendering
 * asked for into out.  Returns 1 fresh, 0 stale (the thread did not
 * answer in time: the last rendering), -1 nothing to serve.
 */
static int metrics_src_take(struct metrics_src *s, uint64_t gen, int what,
			    const struct timespec *deadline,
			    struct metrics_buf *out)
{
	struct metrics_buf *b;
	bool have;
	int rc = -1;

	out->len = 0;
	pthread_mutex_lock(&s->mu);
	while (gen && s->ctx && s->done < gen)
		if (pthread_cond_timedwait(&s->cv, &s->mu, deadline) ==
		    ETIMEDOUT)
			break;
	b = what == METRICS_WANT_PROM ? &s->prom : &s->info;
	have = what == METRICS_WANT_PROM ? s->have_prom : s->have_info;
	if (gen && s->ctx && have && !metrics_buf_add(out, b->p, b->len))
		rc = s->done >= gen ? 1 : 0;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* One metric family of a rendering: HELP/TYPE lines, then samples. */
struct metrics_family {
	const char *name; /* not NUL-terminated */
	size_t name_len;
	const char *hdr, *hdr_end;   /* "# HELP ...\n# TYPE ...\n" */
	const char *body, *body_end; /* sample lines */
};

struct metrics_text {
	struct metrics_family *f;
	size_t n, cap;
};

static const char *metrics_line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return nl ? nl + 1 : end;
}

/*
 * Split a Prometheus text into families: a family starts at a HELP or
 * TYPE line (both of one name make one header) and takes the sample
 * lines that follow.  Other comments and blank lines are left inside the
 * ranges and skipped when copying.  0, or -1 out of memory.
 */
static int metrics_parse(const char *p, size_t len, struct metrics_text *t)
{
	const char *end = p + len;
	struct metrics_family *cur = NULL;

	while (p < end) {
		const char *le = metrics_line_end(p, end);
		bool hdr = le - p > 7 && (!strncmp(p, "# HELP ", 7) ||
					  !strncmp(p, "# TYPE ", 7));
		const char *name = hdr ? p + 7 : p;
		size_t nlen = strcspn(name, hdr ? " \t\n" : "{ \t\n");

		if (!hdr && (*p == '#' || *p == '\n')) {
			p = le;
			continue;
		}
		if (!cur || (hdr && !(cur->body == cur->body_end &&
				      cur->name_len == nlen &&
				      !memcmp(cur->name, name, nlen)))) {
			if (t->n == t->cap) {
				size_t cap = t->cap ? t->cap * 2 : 64;
				struct metrics_family *f =
					realloc(t->f, cap * sizeof(*f));

				if (!f)
					return -1;
				t->f = f;
				t->cap = cap;
			}
			cur = &t->f[t->n++];
			cur->name = name;
			cur->name_len = nlen;
			cur->hdr = cur->hdr_end = p;
			cur->body = cur->body_end = p;
		}
		if (hdr)
			cur->hdr_end = cur->body = cur->body_end = le;
		else
			cur->body_end = le;
		p = le;
	}
	return 0;
}

static const struct metrics_family *
metrics_find(const struct metrics_text *t, const struct metrics_family *f)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->f[i].name_len == f->name_len &&
		    !memcmp(t->f[i].name, f->name, f->name_len))
			return &t->f[i];
	return NULL;
}

/* The sample lines of f, each with side="..." as its first label. */
static int metrics_add_samples(struct metrics_buf *out,
			       const struct metrics_family *f, const char *side)
{
	char lbl[64];
	int n = snprintf(lbl, sizeof(lbl), "side=\"%s\"", side);

	for (const char *p = f->body; p < f->body_end;) {
		const char *le = metrics_line_end(p, f->body_end);
		size_t nlen = strcspn(p, "{ \t\n");
		int rc;

		if (*p == '#' || *p == '\n') { /* comments: dropped */
			rc = 0;
		} else if (p[nlen] == '{') {
			rc = metrics_buf_add(out, p, nlen + 1) ||
			     metrics_buf_add(out, lbl, (size_t)n) ||
			     (p[nlen + 1] != '}' &&
			      metrics_buf_add(out, ",", 1)) ||
			     metrics_buf_add(out, p + nlen + 1,
					     (size_t)(le - p) - nlen - 1);
		} else {
			rc = metrics_buf_add(out, p, nlen) ||
			     metrics_buf_add(out, "{", 1) ||
			     metrics_buf_add(out, lbl, (size_t)n) ||
			     metrics_buf_add(out, "}", 1) ||
			     metrics_buf_add(out, p + nlen,
					     (size_t)(le - p) - nlen);
		}
		if (rc)
			return -1;
		p = le;
	}
	return 0;
}

/*
 * Merge the renderings txt[0..n-1] of sides side[0..n-1] into out:
 * families in order of first appearance, each family's HELP and TYPE
 * once, then its samples side by side.  0, or -1 out of memory.
 */
static int metrics_merge(struct metrics_buf *out, const struct metrics_buf *txt,
			 const char *const *side, int n)
{
	struct metrics_text t[METRICS_HTTP_MAX_SRC];
	int rc = 0;

	memset(t, 0, sizeof(t));
	for (int i = 0; i < n && !rc; i++)
		rc = metrics_parse(txt[i].p, txt[i].len, &t[i]);
	for (int i = 0; i < n && !rc; i++) {
		for (size_t k = 0; k < t[i].n && !rc; k++) {
			const struct metrics_family *f = &t[i].f[k];
			bool seen = false;

			for (int j = 0; j < i && !seen; j++)
				seen = metrics_find(&t[j], f) != NULL;
			if (seen)
				continue; /* merged when it first appeared */
			rc = metrics_buf_add(out, f->hdr,
					     (size_t)(f->hdr_end - f->hdr));
			for (int j = i; j < n && !rc; j++) {
				const struct metrics_family *g =
					j == i ? f : metrics_find(&t[j], f);

				if (g)
					rc = metrics_add_samples(out, g,
								 side[j]);
			}
		}
	}
	for (int i = 0; i < n; i++)
		free(t[i].f);
	return rc;
}

/* The body of GET /metrics or /info into out.  0, or -1. */
static int metrics_http_body(struct metrics_http *mh, int what,
			     struct metrics_buf *out)
{
	struct metrics_buf txt[METRICS_HTTP_MAX_SRC];
	const char *side[METRICS_HTTP_MAX_SRC];
	uint64_t gen[METRICS_HTTP_MAX_SRC];
	bool stale[METRICS_HTTP_MAX_SRC];
	struct timespec deadline;
	char note[200];
	int n = 0, rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += METRICS_HTTP_WAIT_MS / 1000;
	deadline.tv_nsec += (METRICS_HTTP_WAIT_MS % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	memset(txt, 0, sizeof(txt));
	/* Ask every context first, so that they render in parallel. */
	for (int i = 0; i < mh->n_src; i++)
		gen[i] = metrics_src_ask(&mh->src[i], what);
	for (int i = 0; i < mh->n_src; i++) {
		int fresh = metrics_src_take(&mh->src[i], gen[i], what,
					     &deadline, &txt[n]);

		if (fresh < 0)
			continue;
		stale[n] = !fresh;
		side[n++] = mh->src[i].side;
	}
	if (what == METRICS_WANT_PROM) {
		if (!n)
			rc |= metrics_buf_str(out, "# no rift context is "
						   "running\n");
		for (int i = 0; i < n; i++) {
			if (!stale[i])
				continue;
			snprintf(note, sizeof(note),
				 "# the %s context did not answer within %d "
				 "ms: its samples are from an earlier scrape\n",
				 side[i], METRICS_HTTP_WAIT_MS);
			rc |= metrics_buf_str(out, note);
		}
		rc |= metrics_merge(out, txt, side, n);
	} else {
		for (int i = 0; i < n; i++) {
			snprintf(note, sizeof(note),
				 "%s# Context\r\nside:%s\r\nstale:%d\r\n\r\n",
				 i ? "\r\n" : "", side[i], stale[i]);
			rc |= metrics_buf_str(out, note);
			rc |= metrics_buf_add(out, txt[i].p, txt[i].len);
		}
	}
	for (int i = 0; i < METRICS_HTTP_MAX_SRC; i++)
		metrics_buf_free(&txt[i]);
	return rc ? -1 : 0;
}

static enum MHD_Result metrics_http_reply(struct MHD_Connection *c,
					  unsigned status, const char *ctype,
					  struct metrics_buf *body)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!body->len) {
		metrics_buf_free(body);
		r = MHD_create_response_from_buffer(0, (void *)"",
						    MHD_RESPMEM_PERSISTENT);
	} else {
		/* MHD frees the text with free() once it has been sent */
		r = MHD_create_response_from_buffer(body->len, body->p,
						    MHD_RESPMEM_MUST_FREE);
		if (!r)
			metrics_buf_free(body);
		memset(body, 0, sizeof(*body));
	}
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
metrics_http_handler(void *cls, struct MHD_Connection *c, const char *url,
		     const char *method, const char *version,
		     const char *upload_data, size_t *upload_data_size,
		     void **con_cls)
{
	static const char text[] = "text/plain; charset=utf-8";
	static int headers_seen;
	struct metrics_http *mh = cls;
	struct metrics_buf body = {0};
	int what = 0;

	(void)version;
	(void)upload_data;
	/*
	 * Answer once the whole request is in (the first call has only the
	 * headers; a body is read and dropped): answering earlier makes MHD
	 * close the connection instead of keeping it alive for the next
	 * scrape.
	 */
	if (!*con_cls) {
		*con_cls = &headers_seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!strcmp(url, "/metrics"))
		what = METRICS_WANT_PROM;
	else if (!strcmp(url, "/info"))
		what = METRICS_WANT_INFO;
	if (!what) {
		if (metrics_buf_str(&body,
				    "not found: try /metrics or /info\n"))
			return MHD_NO;
		return metrics_http_reply(c, MHD_HTTP_NOT_FOUND, text, &body);
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		if (metrics_buf_str(&body, "only GET and HEAD\n"))
			return MHD_NO;
		return metrics_http_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, text,
					  &body);
	}
	if (metrics_http_body(mh, what, &body)) {
		metrics_buf_free(&body);
		if (metrics_buf_str(&body, "out of memory\n"))
			return MHD_NO;
		return metrics_http_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
					  text, &body);
	}
	return metrics_http_reply(c, MHD_HTTP_OK,
				  what == METRICS_WANT_PROM
					  ? "text/plain; version=0.0.4; "
					    "charset=utf-8"
					  : text,
				  &body);
}

static void metrics_http_log(void *cls, const char *fmt, va_list ap)
{
	const struct metrics_http *mh = cls;

	fprintf(stderr, "%s: metrics http: ", mh->prog);
	vfprintf(stderr, fmt, ap);
	if (!*fmt || fmt[strlen(fmt) - 1] != '\n')
		fputc('\n', stderr);
}

int metrics_http_start(struct metrics_http *mh, const char *prog,
		       const char *addr, int port, const char *const *sides,
		       int n, char *err, size_t errlen)
{
	struct addrinfo hints, *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	pthread_condattr_t ca;
	sigset_t all, old;
	char host[256], serv[16];
	size_t hl = strlen(addr);
	int fd = -1, one = 1, rc;

	memset(mh, 0, sizeof(*mh));
	mh->prog = prog;
	if (n < 1 || n > METRICS_HTTP_MAX_SRC) {
		snprintf(err, errlen, "%d contexts: 1..%d", n,
			 METRICS_HTTP_MAX_SRC);
		return -1;
	}
	/* "[::1]" as in URLs, or "::1" */
	if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)(hl - 2), addr + 1);
	else
		snprintf(host, sizeof(host), "%s", addr);
	snprintf(serv, sizeof(serv), "%d", port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host, serv, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "address '%s': %s", addr,
			 gai_strerror(rc));
		return -1;
	}
	/* Our own socket, so a failure can say exactly why. */
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		snprintf(err, errlen, "cannot listen on %s%s%s:%d: %s",
			 ai->ai_family == AF_INET6 ? "[" : "", host,
			 ai->ai_family == AF_INET6 ? "]" : "", port,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	mh->port = ntohs(ss.ss_family == AF_INET6
				 ? ((struct sockaddr_in6 *)&ss)->sin6_port
				 : ((struct sockaddr_in *)&ss)->sin_port);

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	for (int i = 0; i < n; i++) {
		mh->src[i].side = sides[i];
		pthread_mutex_init(&mh->src[i].mu, NULL);
		pthread_cond_init(&mh->src[i].cv, &ca);
	}
	pthread_condattr_destroy(&ca);
	mh->n_src = n;

	/* The HTTP thread inherits this mask: signals stay with the tool. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	mh->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
					 MHD_USE_AUTO | MHD_USE_ERROR_LOG,
				 0, NULL, NULL, metrics_http_handler, mh,
				 MHD_OPTION_EXTERNAL_LOGGER, metrics_http_log,
				 mh, MHD_OPTION_LISTEN_SOCKET, fd,
				 MHD_OPTION_CONNECTION_LIMIT,
				 (unsigned)METRICS_HTTP_CONN_LIMIT,
				 MHD_OPTION_CONNECTION_TIMEOUT,
				 (unsigned)METRICS_HTTP_IDLE_S, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!mh->d) {
		/* MHD closes fd itself on some failures: leave it */
		snprintf(err, errlen,
			 "libmicrohttpd could not start on port %d", mh->port);
		for (int i = 0; i < n; i++) {
			pthread_mutex_destroy(&mh->src[i].mu);
			pthread_cond_destroy(&mh->src[i].cv);
		}
		mh->n_src = 0;
		return -1;
	}
	return 0;
}

struct metrics_src *metrics_http_src(struct metrics_http *mh, int i)
{
	return mh && mh->d && i >= 0 && i < mh->n_src ? &mh->src[i] : NULL;
}

void metrics_http_stop(struct metrics_http *mh)
{
	if (!mh || !mh->d)
		return;
	MHD_stop_daemon(mh->d); /* closes the listening socket too */
	mh->d = NULL;
	for (int i = 0; i < mh->n_src; i++) {
		struct metrics_src *s = &mh->src[i];

		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		metrics_buf_free(&s->prom);
		metrics_buf_free(&s->info);
		metrics_buf_free(&s->scratch[0]);
		metrics_buf_free(&s->scratch[1]);
	}
	mh->n_src = 0;
}

