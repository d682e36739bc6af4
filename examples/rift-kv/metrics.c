/*
 * metrics.c - rift-kv's GET /metrics over HTTP, served from its own loop.
 *
 * The tools serve rift's metrics with tools/metrics_http.c: libmicrohttpd
 * on a thread of its own, which asks each context's thread for a
 * rendering.  rift-kv is one thread that uses rift.h and libc only, and
 * a scraper asks a few times a minute, so it serves HTTP itself, in its
 * epoll loop, never blocking: a non-blocking listening socket, and up to
 * KV_HTTP_CONNS connections, each reading one request head of at most
 * KV_HTTP_MAX_HEAD bytes (http.c says what is answered), answered once
 * and closed (Connection: close).  A connection has KV_HTTP_TIMEOUT_MS
 * from its accept to send its head (then 408) and again to take the
 * answer; one more beyond KV_HTTP_CONNS is answered 503 at once.
 *
 * The text is rendered when asked, whole: rift-kv's figures (riftkv_*),
 * then rift_metrics_prometheus() of its context (rift_*, docs/metrics.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "server.h"

#define KV_HTTP_CONNS 16         /* open at once */
#define KV_HTTP_TIMEOUT_MS 5000  /* to send the head; to take the answer */
#define KV_HTTP_LINGER_MS 1000   /* reading what follows, after it */
#define PROM_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum hstate { H_FREE, H_READ, H_WRITE, H_DRAIN };

struct hconn {
	int fd;
	enum hstate st;
	int64_t deadline_ms;  /* Unix ms: 408 or close then */
	char *out;            /* the answer, head and body */
	size_t olen, opos;    /* bytes in out, and sent */
	size_t rlen;          /* bytes in req */
	char req[KV_HTTP_MAX_HEAD + 1]; /* one more shows "too large" */
};

struct kv_metrics {
	int lfd;
	int port; /* bound */
	struct hconn conns[KV_HTTP_CONNS];
};

void kv_lat_record(struct kv_server *s, uint64_t ns)
{
	unsigned b = 0;

	if (ns > 128) /* ceil(log2(ns)) - 7: bucket b holds up to 2^(b+7) */
		b = (unsigned)(64 - __builtin_clzll(ns - 1) - 7);
	if (b > KV_LAT_BUCKETS - 1)
		b = KV_LAT_BUCKETS - 1;
	s->lat[b]++;
	s->lat_sum_ns += ns;
}

/* ---- the text ---- */

static void family(struct kv_text *t, const char *name, const char *type,
		   const char *help)
{
	kv_tprintf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(struct kv_text *t, const char *name, const char *type,
		const char *help, uint64_t v)
{
	family(t, name, type, help);
	kv_tprintf(t, "%s %llu\n", name, (unsigned long long)v);
}

/* A family with a sample for each way in: resp-tcp, rift. */
static void by_way(struct kv_text *t, const char *name, const char *type,
		   const char *help, uint64_t tcp, uint64_t rift)
{
	family(t, name, type, help);
	kv_tprintf(t, "%s{way=\"resp-tcp\"} %llu\n%s{way=\"rift\"} %llu\n",
		   name, (unsigned long long)tcp, name,
		   (unsigned long long)rift);
}

static void render_commands(struct kv_server *s, struct kv_text *t)
{
	const char *h = "riftkv_command_duration_seconds";
	const struct kv_cmd *k;
	uint64_t n, cum = 0;

	family(t, "riftkv_commands_total", "counter",
	       "Commands run, by name (a subcommand as \"config|get\").");
	for (size_t i = 0; i < kv_cmd_calls(i, &k, &n); i++)
		if (k->fn) /* not a container of subcommands alone */
			kv_tprintf(t,
				   "riftkv_commands_total{cmd=\"%s\"} %llu\n",
				   k->name, (unsigned long long)n);
	one(t, "riftkv_commands_rejected_total", "counter",
	    "Commands refused before running: unknown command or "
	    "subcommand, wrong number of arguments.",
	    s->cmds_rejected);
	family(t, h, "histogram",
	       "Time to run a command and queue its reply, every command "
	       "(rejected ones too).");
	for (unsigned b = 0; b < KV_LAT_BUCKETS; b++) {
		cum += s->lat[b];
		if (b + 1 < KV_LAT_BUCKETS)
			kv_tprintf(t, "%s_bucket{le=\"%.9g\"} %llu\n", h,
				   (double)(1ull << (b + 7)) * 1e-9,
				   (unsigned long long)cum);
		else
			kv_tprintf(t, "%s_bucket{le=\"+Inf\"} %llu\n", h,
				   (unsigned long long)cum);
	}
	kv_tprintf(t, "%s_sum %.9f\n%s_count %llu\n", h,
		   (double)s->lat_sum_ns * 1e-9, h, (unsigned long long)cum);
}

static void render(struct kv_server *s, struct kv_text *t)
{
	struct kv_field f[KV_RDMA_FIELDS];
	struct kv_store_info si;
	char name[96];
	int n;

	kv_store_info(s->store, &si);
	render_commands(s, t);
	by_way(t, "riftkv_connections_received_total", "counter",
	       "Clients accepted, by way in: RESP over TCP, RESP over rift.",
	       s->conns_received - s->conns_rift, s->conns_rift);
	by_way(t, "riftkv_connected_clients", "gauge",
	       "Clients connected now, by way in.",
	       s->nclients - s->rift_clients, s->rift_clients);
	one(t, "riftkv_connections_rejected_total", "counter",
	    "Clients refused: out of memory or of descriptors.",
	    s->conns_rejected);
	one(t, "riftkv_keyspace_hits_total", "counter",
	    "Key lookups of reading commands that found the key.", s->hits);
	one(t, "riftkv_keyspace_misses_total", "counter",
	    "Key lookups of reading commands that did not.", s->misses);
	one(t, "riftkv_keys", "gauge", "Keys in the database.", si.keys);
	one(t, "riftkv_expiring_keys", "gauge", "Keys with a time to live.",
	    si.volatile_keys);
	one(t, "riftkv_expired_keys_total", "counter",
	    "Keys deleted because their time passed.", si.expired);
	one(t, "riftkv_net_input_bytes_total", "counter",
	    "RESP bytes received, both ways in.", s->net_in);
	one(t, "riftkv_net_output_bytes_total", "counter",
	    "RESP bytes sent, both ways in.", s->net_out);
	one(t, "riftkv_rdma_enabled", "gauge",
	    "1 while the rift listener is open.", s->rl != NULL);
	kv_rdma_fields(s, f);
	for (size_t i = 0; i < KV_RDMA_FIELDS; i++) {
		snprintf(name, sizeof(name), "riftkv_%s%s", f[i].name,
			 f[i].counter ? "_total" : "");
		family(t, name, f[i].counter ? "counter" : "gauge", f[i].help);
		kv_tprintf(t, "%s %llu\n", name, (unsigned long long)f[i].v);
	}
	/* rift's own, for its context (rift.h: the whole text's length,
	 * as snprintf) */
	n = rift_metrics_prometheus(s->rift, NULL, 0);
	if (n < 0) {
		kv_tprintf(t, "# rift_metrics_prometheus: %s\n",
			   rift_strerror(n));
	} else if (!kv_text_reserve(t, (size_t)n)) {
		rift_metrics_prometheus(s->rift, t->s + t->len, (size_t)n + 1);
		t->len += (size_t)n;
	}
}

/* ---- the connections ---- */

static void hclose(struct hconn *h)
{
	close(h->fd); /* leaves the epoll set with it */
	free(h->out);
	h->out = NULL;
	h->fd = -1;
	h->st = H_FREE;
}

static int hwatch(struct kv_server *s, struct hconn *h, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = h };

	if (epoll_ctl(s->ep, EPOLL_CTL_MOD, h->fd, &ev) == 0)
		return 0;
	hclose(h);
	return -1;
}

/* Send what the socket takes; all sent: stop writing, read what follows
 * a while (a close with unread bytes would reset the connection and
 * could lose the end of the answer). */
static void hwrite(struct kv_server *s, struct hconn *h)
{
	if (kv_send_some(h->fd, h->out, h->olen, &h->opos) < 0) {
		hclose(h);
		return;
	}
	if (h->opos < h->olen)
		return; /* the rest on EPOLLOUT */
	free(h->out);
	h->out = NULL;
	shutdown(h->fd, SHUT_WR);
	h->st = H_DRAIN;
	h->deadline_ms = s->now_ms + KV_HTTP_LINGER_MS;
	hwatch(s, h, EPOLLIN);
}

static void answer(struct kv_server *s, struct hconn *h, int status,
		   int head_only)
{
	struct kv_text body = { 0 };
	char head[256];
	size_t hl;

	if (status == 200)
		render(s, &body);
	else
		kv_tprintf(&body, "%d %s%s\n", status, kv_http_reason(status),
			   status == 404 ? ": rift-kv serves GET /metrics"
					 : "");
	if (body.failed) {
		free(body.s);
		hclose(h);
		return;
	}
	hl = kv_http_head(head, sizeof(head), status,
			  status == 200 ? PROM_TYPE
					: "text/plain; charset=utf-8",
			  body.len);
	if (head_only)
		body.len = 0;
	h->out = malloc(hl + body.len);
	if (!h->out || !hl) {
		free(body.s);
		hclose(h);
		return;
	}
	memcpy(h->out, head, hl);
	if (body.len)
		memcpy(h->out + hl, body.s, body.len);
	free(body.s);
	h->olen = hl + body.len;
	h->opos = 0;
	h->st = H_WRITE;
	h->deadline_ms = s->now_ms + KV_HTTP_TIMEOUT_MS;
	if (hwatch(s, h, EPOLLOUT) == 0)
		hwrite(s, h);
}

static void hread(struct kv_server *s, struct hconn *h)
{
	char sink[4096];
	char *to = h->st == H_READ ? h->req + h->rlen : sink;
	size_t room = h->st == H_READ ? sizeof(h->req) - h->rlen : sizeof(sink);
	ssize_t n = read(h->fd, to, room);
	int head_only, status;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
		      errno == EINTR))
		return;
	if (n <= 0) {
		hclose(h); /* the peer is done, or gone */
		return;
	}
	if (h->st != H_READ)
		return;
	h->rlen += (size_t)n;
	status = kv_http_request(h->req, h->rlen, &head_only);
	if (status)
		answer(s, h, status, head_only);
}

static void haccept(struct kv_server *s)
{
	struct kv_metrics *m = s->metrics;

	for (int i = 0; i < KV_HTTP_CONNS; i++) {
		struct epoll_event ev = { .events = EPOLLIN };
		struct hconn *h = NULL;
		int fd = accept4(m->lfd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		for (int k = 0; k < KV_HTTP_CONNS && !h; k++)
			if (m->conns[k].st == H_FREE)
				h = &m->conns[k];
		if (!h) {
			/* All busy: say so at once; a fresh socket's
			 * buffer takes these few bytes. */
			char busy[160];
			size_t n = kv_http_head(busy, sizeof(busy), 503,
						"text/plain", 0);

			if (send(fd, busy, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				(void)0; /* closing anyway */
			close(fd);
			continue;
		}
		h->fd = fd;
		h->st = H_READ;
		h->rlen = 0;
		h->deadline_ms = s->now_ms + KV_HTTP_TIMEOUT_MS;
		ev.data.ptr = h;
		if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev))
			hclose(h);
	}
}

/* ---- the server's side ---- */

int kv_metrics_start(struct kv_server *s)
{
	const char *addr = s->cfg.metrics_bind[0] ? s->cfg.metrics_bind
						   : s->cfg.bind;
	struct kv_metrics *m = calloc(1, sizeof(*m));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!m) {
		fprintf(stderr, "rift-kv: out of memory\n");
		return -1;
	}
	for (int k = 0; k < KV_HTTP_CONNS; k++)
		m->conns[k].fd = -1;
	m->lfd = kv_tcp_listen(addr, s->cfg.metrics_port, &m->port);
	ev.data.ptr = &m->lfd;
	if (m->lfd < 0 || epoll_ctl(s->ep, EPOLL_CTL_ADD, m->lfd, &ev)) {
		fprintf(stderr, "rift-kv: metrics: listen on %s:%d: %s\n", addr,
			s->cfg.metrics_port, strerror(errno));
		if (m->lfd >= 0)
			close(m->lfd);
		free(m);
		return -1;
	}
	s->metrics = m;
	return 0;
}

int kv_metrics_port(const struct kv_server *s)
{
	return s->metrics ? s->metrics->port : -1;
}

int kv_metrics_event(struct kv_server *s, void *p, uint32_t events)
{
	struct kv_metrics *m = s->metrics;
	uintptr_t a = (uintptr_t)p;
	struct hconn *h;

	if (!m)
		return 0;
	if (p == &m->lfd) {
		haccept(s);
		return 1;
	}
	if (a < (uintptr_t)m->conns ||
	    a >= (uintptr_t)(m->conns + KV_HTTP_CONNS))
		return 0;
	h = p;
	if (h->st == H_FREE)
		return 1;
	if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN))
		hclose(h);
	else if (h->st == H_WRITE)
		hwrite(s, h);
	else
		hread(s, h);
	return 1;
}

void kv_metrics_cron(struct kv_server *s)
{
	struct kv_metrics *m = s->metrics;

	for (int k = 0; m && k < KV_HTTP_CONNS; k++) {
		struct hconn *h = &m->conns[k];

		if (h->st == H_FREE || s->now_ms < h->deadline_ms)
			continue;
		if (h->st == H_READ)
			answer(s, h, 408, 0);
		else
			hclose(h);
	}
}

void kv_metrics_stop(struct kv_server *s)
{
	struct kv_metrics *m = s->metrics;

	if (!m)
		return;
	for (int k = 0; k < KV_HTTP_CONNS; k++)
		if (m->conns[k].st != H_FREE)
			hclose(&m->conns[k]);
	close(m->lfd);
	free(m);
	s->metrics = NULL;
}
