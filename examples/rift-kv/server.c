/*
 * server.c - rift-kv's main, its epoll loop, and its clients over TCP.
 *
 * The loop holds the RESP listening socket, each TCP client's socket, a
 * signalfd (SIGINT, SIGTERM: stop), and rift's context fd: readable, it
 * runs rift_ctx_progress, which runs rift's callbacks (its clients,
 * rift_io.c) and its timers (the periodic work).  The loop sleeps no
 * longer than rift_ctx_timeout allows, as rift.h asks of external loops.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server.h"

#define MAX_EVENTS 256
#define ACCEPTS_PER_ROUND 64
/* An output buffer this big is freed once empty, not kept. */
#define OUT_KEEP ((size_t)64 << 10)

static char rift_mark; /* epoll data of rift's fd */

static int64_t unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void tick(struct kv_server *s)
{
	s->now_ms = unix_ms();
	kv_store_set_now(s->store, s->now_ms);
}

/* ---- clients ---- */

size_t kv_client_pending(const struct kv_client *c)
{
	return c->out.len - c->opos;
}

struct kv_client *kv_client_new(struct kv_server *s, int fd, rift_conn *conn)
{
	struct kv_resp_config pc = {
		.max_bulk = s->cfg.proto_max_bulk_len,
		.max_command = s->cfg.client_query_buffer_limit,
	};
	struct kv_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->parser = kv_resp_parser_new(&pc);
	if (!c->parser)
		goto fail_parser;
	if (fd >= 0) {
		c->ibuf = malloc(KV_IBUF);
		if (!c->ibuf)
			goto fail_ibuf;
		c->icap = KV_IBUF;
	}
	c->srv = s;
	c->fd = fd;
	c->conn = conn;
	c->id = ++s->next_id;
	c->ctime_ms = c->atime_ms = s->now_ms;
	c->next = s->clients;
	if (s->clients)
		s->clients->prev = c;
	s->clients = c;
	s->nclients++;
	if (conn) {
		s->rift_clients++;
		s->conns_rift++;
	}
	s->conns_received++;
	return c;

fail_ibuf:
	kv_resp_parser_free(c->parser);
fail_parser:
	free(c);
	return NULL;
}

void kv_client_free(struct kv_client *c)
{
	struct kv_server *s = c->srv;

	if (c->prev)
		c->prev->next = c->next;
	else
		s->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nclients--;
	if (c->conn)
		s->rift_clients--;
	kv_repl_client_gone(c);
	if (c->fd >= 0)
		close(c->fd); /* leaves the epoll set with it */
	kv_resp_parser_free(c->parser);
	kv_resp_out_free(&c->out);
	free(c->ibuf);
	free(c->name);
	free(c);
}

void kv_client_process(struct kv_client *c)
{
	while (c->ipos < c->ilen) {
		struct kv_resp_cmd cmd;
		size_t used = 0;
		int rc;

		if (c->flags & (KV_CLOSE_AFTER_REPLY | KV_CLOSE_ASAP))
			break; /* what follows QUIT is dropped, as Redis does */
		if (c->flags & KV_BLOCKED)
			return; /* in WAIT: the rest after its reply */
		if (kv_client_pending(c) >= KV_OUT_HIGH) {
			c->flags |= KV_PAUSED;
			return;
		}
		rc = kv_resp_parse(c->parser, c->ibuf + c->ipos,
				   c->ilen - c->ipos, &used, &cmd);
		c->ipos += used;
		if (rc == KV_RESP_CMD) {
			/* timed for /metrics only: two clock reads */
			uint64_t t0 = c->srv->metrics ? mono_ns() : 0;

			c->atime_ms = c->srv->now_ms;
			kv_cmd_exec(c, &cmd);
			if (t0)
				kv_lat_record(c->srv, mono_ns() - t0);
		} else if (rc == KV_RESP_ERROR || rc == KV_RESP_NOMEM) {
			/* Redis replies the protocol error and closes. */
			if (kv_resp_add_error(&c->out, "ERR",
					      rc == KV_RESP_NOMEM
						      ? "out of memory"
						      : kv_resp_parser_error(
								c->parser)))
				c->flags |= KV_CLOSE_ASAP;
			c->flags |= KV_CLOSE_AFTER_REPLY;
			break;
		}
	}
	c->ipos = c->ilen = 0;
}

void kv_client_pump(struct kv_client *c, void (*write)(struct kv_client *c))
{
	for (;;) {
		write(c);
		if ((c->flags & KV_CLOSE_ASAP) || !(c->flags & KV_PAUSED) ||
		    kv_client_pending(c) > KV_OUT_LOW)
			return;
		c->flags &= ~(unsigned)KV_PAUSED;
		kv_client_process(c);
	}
}

void kv_client_out_sent(struct kv_client *c)
{
	c->opos = c->out.len = 0;
	if (c->out.cap > ((size_t)64 << 10))
		kv_resp_out_free(&c->out);
}

enum kv_next kv_client_service(struct kv_client *c,
			       void (*write)(struct kv_client *c))
{
	int stop;

	kv_client_pump(c, write);
	if (c->flags & KV_CLOSE_ASAP)
		return KV_NEXT_ABORT;
	if ((c->flags & KV_CLOSE_AFTER_REPLY) && !kv_client_pending(c))
		return KV_NEXT_CLOSE;
	stop = (c->flags & (KV_PAUSED | KV_BLOCKED)) != 0;
	if (stop && !(c->flags & KV_RIFT_STOPPED)) {
		c->flags |= KV_RIFT_STOPPED;
		return KV_NEXT_STOP;
	}
	if (!stop && (c->flags & KV_RIFT_STOPPED)) {
		c->flags &= ~(unsigned)KV_RIFT_STOPPED;
		return KV_NEXT_START;
	}
	return KV_NEXT_NONE;
}

int kv_client_feed(struct kv_client *c, const void *data, size_t len)
{
	size_t left = c->ilen - c->ipos;

	c->srv->net_in += len;
	/* Keep the bytes: a pause may leave some unparsed past this call
	 * (the caller's are borrowed). */
	if (c->ipos) {
		memmove(c->ibuf, c->ibuf + c->ipos, left);
		c->ipos = 0;
		c->ilen = left;
	}
	if (left + len > c->icap) {
		char *p = realloc(c->ibuf, left + len);

		if (!p) {
			c->flags |= KV_CLOSE_ASAP;
			return -1;
		}
		c->ibuf = p;
		c->icap = left + len;
	}
	if (len)
		memcpy(c->ibuf + c->ilen, data, len);
	c->ilen += len;
	if (!(c->flags & (KV_PAUSED | KV_BLOCKED)))
		kv_client_process(c);
	if (c->icap > ((size_t)64 << 10) && c->ipos == c->ilen) {
		free(c->ibuf); /* a big request's room is not kept */
		c->ibuf = NULL;
		c->icap = c->ipos = c->ilen = 0;
	}
	return 0;
}

/* ---- TCP clients ---- */

ssize_t kv_send_some(int fd, const char *buf, size_t len, size_t *pos)
{
	size_t from = *pos;

	while (*pos < len) {
		ssize_t n = send(fd, buf + *pos, len - *pos, MSG_NOSIGNAL);

		if (n > 0)
			*pos += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		else
			return -1;
	}
	return (ssize_t)(*pos - from);
}

static void tcp_write(struct kv_client *c)
{
	ssize_t n = kv_send_some(c->fd, c->out.buf, c->out.len, &c->opos);

	if (n < 0) {
		c->flags |= KV_CLOSE_ASAP;
		return;
	}
	c->srv->net_out += (uint64_t)n;
	if (c->opos == c->out.len) {
		c->opos = c->out.len = 0;
		if (c->out.cap > OUT_KEEP)
			kv_resp_out_free(&c->out);
	} else if (c->opos >= OUT_KEEP) {
		memmove(c->out.buf, c->out.buf + c->opos,
			c->out.len - c->opos);
		c->out.len -= c->opos;
		c->opos = 0;
	}
}

/* After a read or a write: send what is waiting, go on with requests a
 * pause held back, then close, or set the epoll mask to what c needs. */
static void tcp_service(struct kv_client *c)
{
	struct epoll_event ev = { 0 };
	uint32_t want;

	kv_client_pump(c, tcp_write);
	if ((c->flags & KV_CLOSE_ASAP) ||
	    ((c->flags & KV_CLOSE_AFTER_REPLY) && !kv_client_pending(c))) {
		kv_client_free(c);
		return;
	}
	want = (c->flags & (KV_PAUSED | KV_BLOCKED | KV_CLOSE_AFTER_REPLY))
		       ? 0
		       : EPOLLIN;
	if (kv_client_pending(c))
		want |= EPOLLOUT;
	if (want == c->events)
		return;
	ev.events = want;
	ev.data.ptr = c;
	if (epoll_ctl(c->srv->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->events = want;
	else
		kv_client_free(c);
}

void kv_client_resume(struct kv_client *c)
{
	kv_client_process(c);
	if (c->conn)
		kv_rift_service(c);
	else if (c->stream)
		kv_valkey_service(c);
	else
		tcp_service(c);
}

static void tcp_read(struct kv_client *c)
{
	ssize_t n;

	if (c->ipos < c->ilen || (c->flags & KV_PAUSED))
		return; /* requests held back by a pause come first */
	n = read(c->fd, c->ibuf, c->icap);
	if (n > 0) {
		c->srv->net_in += (uint64_t)n;
		c->ipos = 0;
		c->ilen = (size_t)n;
		kv_client_process(c);
	} else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
			      errno != EINTR)) {
		c->flags |= KV_CLOSE_ASAP;
	}
}

static void addr_text(const struct sockaddr_storage *ss, char *buf,
		      size_t n)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		port = ntohs(a->sin6_port);
	}
	snprintf(buf, n, "%s:%d", ip, port);
}

static void listener_pause(struct kv_server *s, int on)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->lfd };

	epoll_ctl(s->ep, on ? EPOLL_CTL_DEL : EPOLL_CTL_ADD, s->lfd, &ev);
}

static int accept_paused;

static void tcp_accept(struct kv_server *s)
{
	for (int i = 0; i < ACCEPTS_PER_ROUND; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct epoll_event ev = { .events = EPOLLIN };
		struct kv_client *c;
		int one = 1;
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: stop accepting
				 * until the next periodic round, rather
				 * than spin on a ready listener. */
				listener_pause(s, 1);
				accept_paused = 1;
				s->conns_rejected++;
			}
			return;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = kv_client_new(s, fd, NULL);
		if (!c) {
			s->conns_rejected++;
			close(fd);
			continue;
		}
		addr_text(&ss, c->addr, sizeof(c->addr));
		sl = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
			addr_text(&ss, c->laddr, sizeof(c->laddr));
		ev.data.ptr = c;
		if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev)) {
			kv_client_free(c);
			continue;
		}
		c->events = EPOLLIN;
	}
}

int kv_tcp_listen(const char *addr, int port, int *bound)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	int one = 1, fd, e;

	if (strchr(addr, ':')) {
		struct sockaddr_in6 *a = (void *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, addr, &a->sin6_addr);
		sl = sizeof(*a);
	} else {
		struct sockaddr_in *a = (void *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, addr, &a->sin_addr);
		sl = sizeof(*a);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 511) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*bound = ntohs(ss.ss_family == AF_INET6
			       ? ((struct sockaddr_in6 *)&ss)->sin6_port
			       : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

static int tcp_listen(struct kv_server *s)
{
	int port;

	s->lfd = kv_tcp_listen(s->cfg.bind, s->cfg.port, &port);
	if (s->lfd >= 0)
		return 0;
	fprintf(stderr, "rift-kv: listen on %s:%d: %s\n", s->cfg.bind,
		s->cfg.port, strerror(errno));
	return -1;
}

/* ---- the loop ---- */

static void on_cron(rift_timer *t, void *user)
{
	struct kv_server *s = user;

	(void)t;
	tick(s);
	kv_store_cron(s->store, KV_EXPIRE_BUDGET_US);
	kv_metrics_cron(s);
	kv_repl_cron(s);
	if (accept_paused) {
		accept_paused = 0;
		listener_pause(s, 0);
	}
}

static void run(struct kv_server *s)
{
	struct epoll_event evs[MAX_EVENTS];

	while (!s->stop) {
		/* the log goes out once a round, what the round wrote
		 * together; a WAIT's timeout bounds the sleep */
		int w = kv_repl_pump(s), t = rift_ctx_timeout(s->rift), n;

		if (t == 0) {
			rift_ctx_progress(s->rift);
			t = rift_ctx_timeout(s->rift);
			if (t == 0)
				t = 1; /* rift still busy: look again soon */
		}
		if (w >= 0 && (t < 0 || w < t))
			t = w;
		n = epoll_wait(s->ep, evs, MAX_EVENTS, t);
		if (n < 0 && errno != EINTR) {
			perror("rift-kv: epoll_wait");
			return;
		}
		tick(s);
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			uint32_t e = evs[i].events;

			if (p == &s->lfd) {
				tcp_accept(s);
			} else if (p == &s->sfd) {
				s->stop = 1;
			} else if (p == &rift_mark) {
				rift_ctx_progress(s->rift);
			} else if (kv_metrics_event(s, p, e)) {
				continue;
			} else {
				struct kv_client *c = p;

				if (e & (EPOLLERR | EPOLLHUP) && !(e & EPOLLIN))
					c->flags |= KV_CLOSE_ASAP;
				else if (e & EPOLLIN)
					tcp_read(c);
				tcp_service(c);
			}
		}
	}
}

static int watch(int ep, int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Close rift's objects and wait (briefly) for their close callbacks, so
 * that the context can be destroyed. */
static void rift_shutdown(struct kv_server *s)
{
	kv_valkey_shutdown(s);
	for (struct kv_client *c = s->clients; c; c = c->next)
		if (c->conn && !(c->flags & KV_CLOSING))
			kv_rift_abort(c);
	if (s->rl) {
		rift_listener_close(s->rl, NULL);
		s->rl = NULL;
	}
	if (s->cron)
		rift_timer_destroy(s->cron);
	kv_repl_stop(s);
	for (int i = 0; i < 100 && (s->rift_clients || kv_repl_busy(s)); i++)
		rift_ctx_run_mode(s->rift, RIFT_RUN_ONCE, 50);
	kv_repl_free(s);
	for (int i = 0; i < 100 && rift_ctx_destroy(s->rift) == RIFT_EBUSY;
	     i++)
		rift_ctx_run_mode(s->rift, RIFT_RUN_ONCE, 50);
}

int main(int argc, char **argv)
{
	static struct kv_server srv;
	struct kv_server *s = &srv;
	char err[KV_CFG_ERRLEN];
	sigset_t sigs;
	int rc = 1;

	kv_config_defaults(&s->cfg);
	rc = kv_config_args(&s->cfg, argc, argv, err, sizeof(err));
	if (rc)
		goto out_args;
	rc = 1;
	s->lfd = s->sfd = s->ep = -1;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	if (kv_cmd_init()) {
		fprintf(stderr, "rift-kv: out of memory\n");
		goto out;
	}
	s->store = kv_store_new(NULL);
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (!s->store || s->ep < 0 || s->sfd < 0) {
		fprintf(stderr, "rift-kv: setup: %s\n",
			s->store ? strerror(errno) : "out of memory");
		goto out_store;
	}
	tick(s);
	s->start_ms = s->now_ms;
	if (tcp_listen(s))
		goto out_store;
	rift_config_init(&s->rcfg);
	if (s->cfg.rdma_queue_depth)
		s->rcfg.sq_depth = s->rcfg.rq_depth =
			(uint32_t)s->cfg.rdma_queue_depth;
	s->rcfg.gid_index = s->cfg.rdma_gid_index;
	s->rcfg.fallback = s->cfg.rdma_fallback_tcp;
	if (s->cfg.rdma_device[0])
		snprintf(s->rcfg.device, sizeof(s->rcfg.device), "%s",
			 s->cfg.rdma_device);
	if (rift_ctx_create(&s->rift, &s->rcfg)) {
		fprintf(stderr, "rift-kv: rift_ctx_create: %s\n",
			rift_ctx_last_error(NULL));
		goto out_listen;
	}
	if (watch(s->ep, s->lfd, &s->lfd) || watch(s->ep, s->sfd, &s->sfd) ||
	    watch(s->ep, rift_ctx_fd(s->rift), &rift_mark) ||
	    rift_timer_create(s->rift, on_cron, s, &s->cron) ||
	    rift_timer_start(s->cron, 1000 / KV_HZ, 1000 / KV_HZ)) {
		fprintf(stderr, "rift-kv: setup of the loop failed\n");
		goto out_rift;
	}
	if (s->cfg.rdma_enabled && kv_rift_listen(s))
		goto out_rift;
	if (kv_repl_init(s) ||
	    (s->cfg.valkey_rdma_port && kv_valkey_listen(s)))
		goto out_rift;
	if (s->cfg.metrics_port >= 0 && kv_metrics_start(s))
		goto out_rift;
	printf("rift-kv: ready: RESP on tcp %s:%d%s%s", s->cfg.bind,
	       s->cfg.port, s->rl ? ", rift on " : "", s->rift_url);
	if (s->vl)
		printf(", valkey-rdma on %s", s->valkey_url);
	if (s->metrics) {
		const char *ma = s->cfg.metrics_bind[0] ? s->cfg.metrics_bind
							 : s->cfg.bind;
		int v6 = strchr(ma, ':') != NULL;

		printf(", metrics on http://%s%s%s:%d/metrics", v6 ? "[" : "",
		       ma, v6 ? "]" : "", kv_metrics_port(s));
	}
	printf(" (pid %ld)\n", (long)getpid());
	fflush(stdout);
	run(s);
	rc = 0;
	for (struct kv_client *c = s->clients, *next; c; c = next) {
		next = c->next;
		if (!c->conn && !c->stream)
			kv_client_free(c);
	}
out_rift:
	kv_metrics_stop(s);
	rift_shutdown(s);
out_listen:
	close(s->lfd);
out_store:
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->ep >= 0)
		close(s->ep);
	kv_store_free(s->store);
	kv_cmd_fini();
out:
	return rc;
out_args:
	if (rc < 0)
		fprintf(stderr, "rift-kv: %s\n", err);
	return rc < 0 ? 1 : 0;
}
