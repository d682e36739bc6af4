/*
 * tcp.c - the TCP transport: one non-blocking, TCP_NODELAY socket per path.
 *
 * Writes gather control frames and queued messages into one writev (up to
 * BATCH_IOV pieces or BATCH_BYTES), so a burst of small sends costs one
 * system call.  Reads go into a large per-path buffer and messages that fit
 * are delivered in place; a message larger than the buffer is read straight
 * into its own block, so big messages are copied once, by the kernel.  How
 * much each read takes is the stream's choice (session/stream.h): a large
 * frame is read up to its end and no further, so it is never moved.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "session/session.h"
#include "session/stream.h"
#include "transports/tcp.h"

#define BATCH_IOV 128
#define BATCH_BYTES (4u << 20)
#define CTRL_CAP 1024
#define ACCEPTS_PER_EVENT 64
#define READS_PER_EVENT 8

struct tcp_path {
	rift__path base;
	int fd;
	rift__io io;
	bool connecting;     /* non-blocking connect in progress */
	uint64_t rto_seen_us; /* loop time an unanswered RTO was first seen
				 (tcp_tx_stalled_us), 0: none */

	struct rift__stream rx; /* read side */

	/* write side: a batch is written across as many writev as needed */
	struct iovec iov[BATCH_IOV];
	struct rift__omsg *iov_msg[BATCH_IOV]; /* message an iov completes */
	int iov_n, iov_i;
	uint8_t ctrl[CTRL_CAP];
};

static struct tcp_path *tp_of(rift__path *p)
{
	return rift__container_of(p, struct tcp_path, base);
}

static void update_events(struct tcp_path *tp)
{
	uint32_t ev = 0;

	if (tp->connecting)
		ev = EPOLLOUT;
	else {
		/* Always reading, even while the application stopped
		 * receiving: the session holds what it cannot deliver. */
		ev |= EPOLLIN;
		if (tp->iov_n)
			ev |= EPOLLOUT;
	}
	rift__io_modify(tp->base.ctx, &tp->io, ev);
}

static int conn_stat_add(rift__path *p, bool write)
{
	if (p->conn) {
		if (write)
			p->conn->stats.write_calls++;
		else
			p->conn->stats.read_calls++;
	}
	return 0;
}

/* ---- read side ---- */

static unsigned user_timeout_ms(const rift_config *c);

/* The socket failed with err in a read or a write (what). */
static void sock_fail(struct tcp_path *tp, const char *what, int err)
{
	rift__path *p = &tp->base;

	if (err == ETIMEDOUT) {
		rift__path_failed_why(
			p, RIFT_PATH_DOWN_STALL, RIFT_ETIMEDOUT,
			"the peer acknowledged nothing sent for %u ms "
			"(TCP_USER_TIMEOUT)",
			user_timeout_ms(p->cfg));
	} else {
		rift__path_failed(p, rift__from_errno(err), "%s: %s", what,
				  rift_strerror(rift__from_errno(err)));
	}
}

static void read_fail(struct tcp_path *tp, ssize_t n, int err)
{
	if (n == 0)
		rift__path_failed(&tp->base, RIFT_ECONNRESET,
				  "peer closed the TCP connection");
	else
		sock_fail(tp, "read", err);
}

static void on_readable(struct tcp_path *tp)
{
	rift__path *p = &tp->base;

	for (int i = 0; i < READS_PER_EVENT; i++) {
		uint8_t *dst;
		size_t want;
		ssize_t n;
		int rc;

		rift__stream_space(&tp->rx, &dst, &want);
		if (rift__fault_hit(RIFT_FAULT_TCP_READ)) {
			rift__path_failed(p, RIFT_ECONNRESET,
					  "read: connection reset (fault point)");
			return;
		}
		n = read(tp->fd, dst, want);
		conn_stat_add(p, false);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			read_fail(tp, n, errno);
			return;
		}
		p->last_rx_us = p->ctx->now_us;
		rc = rift__stream_commit(p, &tp->rx, (size_t)n);
		if (rc)
			return;
		if ((size_t)n < want)
			return; /* drained: wait for the next readiness */
	}
}

/* ---- write side ---- */

/*
 * Gather owed control frames and unsent messages into a new batch.  Each
 * message's last piece remembers the message, so it is committed as soon
 * as its last byte is written: the peer may acknowledge it before the rest
 * of the batch has left.
 */
static void build_batch(struct tcp_path *tp)
{
	rift__path *p = &tp->base;
	struct rift__omsg *m = NULL, *next;
	size_t bytes = 0, clen;
	int n = 0;

	clen = rift__sess_control(p, tp->ctrl, sizeof(tp->ctrl));
	if (clen) {
		tp->iov[n].iov_base = tp->ctrl;
		tp->iov[n].iov_len = clen;
		tp->iov_msg[n++] = NULL;
	}
	while (n + 2 <= BATCH_IOV && bytes < BATCH_BYTES &&
	       (next = rift__sess_next(p, m)) != NULL) {
		m = next;
		tp->iov[n].iov_base = m->hdr;
		tp->iov[n].iov_len = RIFT_HDR_SIZE;
		tp->iov_msg[n++] = NULL;
		if (m->len) {
			tp->iov[n].iov_base = m->data;
			tp->iov[n].iov_len = m->len;
			tp->iov_msg[n++] = NULL;
		}
		tp->iov_msg[n - 1] = m;
		bytes += RIFT_HDR_SIZE + m->len;
	}
	tp->iov_n = n;
	tp->iov_i = 0;
}

static void tcp_flush(rift__path *p)
{
	struct tcp_path *tp = tp_of(p);

	if (tp->connecting || p->state == RIFT_PATH_DEAD)
		return;
	for (;;) {
		struct msghdr msg = { 0 };
		ssize_t n;

		if (tp->iov_n == 0) {
			build_batch(tp);
			if (tp->iov_n == 0)
				break;
		}
		if (rift__fault_hit(RIFT_FAULT_TCP_WRITE)) {
			rift__path_failed(p, RIFT_ECONNRESET,
					  "writev: connection reset (fault point)");
			return;
		}
		/* writev with MSG_NOSIGNAL: a library must not raise SIGPIPE
		 * in its application when the peer has gone (the default
		 * action ends the process); EPIPE fails the path instead. */
		msg.msg_iov = tp->iov + tp->iov_i;
		msg.msg_iovlen = (size_t)(tp->iov_n - tp->iov_i);
		n = sendmsg(tp->fd, &msg, MSG_NOSIGNAL);
		conn_stat_add(p, true);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			sock_fail(tp, "writev", errno);
			return;
		}
		p->last_tx_us = p->ctx->now_us;
		while (n > 0) {
			struct iovec *v = &tp->iov[tp->iov_i];

			if ((size_t)n >= v->iov_len) {
				n -= (ssize_t)v->iov_len;
				if (tp->iov_msg[tp->iov_i])
					rift__sess_written(p, tp->iov_msg[tp->iov_i]);
				tp->iov_i++;
			} else {
				v->iov_base = (uint8_t *)v->iov_base + n;
				v->iov_len -= (size_t)n;
				n = 0;
			}
		}
		if (tp->iov_i == tp->iov_n)
			tp->iov_n = tp->iov_i = 0;
	}
	update_events(tp);
}

/* ---- events ---- */

/* The socket's local address as the path's (kept for its lifetime:
 * the connection's does not change). */
static void note_local(struct tcp_path *tp)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(tp->fd, (struct sockaddr *)&ss, &len) == 0)
		rift__sockaddr_ip((struct sockaddr *)&ss, tp->base.local,
				  sizeof(tp->base.local));
}

static void finish_connect(struct tcp_path *tp)
{
	rift__path *p = &tp->base;
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(tp->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		rift__path_failed(p, rift__from_errno(err), "connect: %s",
				  rift_strerror(rift__from_errno(err)));
		return;
	}
	note_local(tp);
	RIFT_DEBUG(p->ctx, "%s: connected from %s", p->peer, p->local);
	tp->connecting = false;
	update_events(tp);
	rift__path_connected(p);
}

static void tcp_io_cb(rift__io *io, uint32_t revents)
{
	struct tcp_path *tp = rift__container_of(io, struct tcp_path, io);
	rift__path *p = &tp->base;

	if (p->state == RIFT_PATH_DEAD)
		return;
	if (tp->connecting) {
		finish_connect(tp);
		return;
	}
	if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
		on_readable(tp);
	if (p->state == RIFT_PATH_DEAD)
		return;
	if ((revents & EPOLLOUT) && tp->iov_n)
		tcp_flush(p);
}

/*
 * TCP_NODELAY, and TCP_USER_TIMEOUT: data the peer has not acknowledged
 * for that long makes the socket fail with ETIMEDOUT, which the next read
 * reports.  Without it a TCP path whose link broke was noticed only by
 * the session's keepalive (5 s by default; TCP itself retransmits for
 * minutes), and every message stalled that long.  The bound is twice the
 * keepalive interval (an idle path sends a PING every interval, so its
 * data is never unacknowledged longer on a live link), at least 1 s, at
 * most keepalive_timeout_ms.
 */
static unsigned user_timeout_ms(const rift_config *c)
{
	unsigned ut = 2 * c->keepalive_interval_ms;

	if (ut < 1000)
		ut = 1000;
	return ut < c->keepalive_timeout_ms ? ut : c->keepalive_timeout_ms;
}

static int set_socket_opts(int fd, const rift_config *cfg)
{
	unsigned ut = user_timeout_ms(cfg);
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut)) < 0)
		return rift__from_errno(errno);
	return 0;
}

static struct tcp_path *tcp_path_new(rift_ctx *ctx, int fd, bool is_client)
{
	struct tcp_path *tp = calloc(1, sizeof(*tp));

	if (!tp)
		return NULL;
	if (rift__stream_init(&tp->rx, ctx->cfg.tcp_read_buffer)) {
		free(tp);
		return NULL;
	}
	tp->fd = fd;
	rift__path_init(&tp->base, ctx, &rift__tcp_ops, is_client);
	ctx->n_sock_paths++; /* busy polling watches its socket more often */
	return tp;
}

int rift__tcp_bind_local(int fd, const struct sockaddr *src, socklen_t len,
			 char *err, size_t errlen)
{
	char ip[INET6_ADDRSTRLEN];
	int e;

	if (bind(fd, src, len) == 0)
		return 0;
	e = errno;
	rift__sockaddr_ip(src, ip, sizeof(ip));
	snprintf(err, errlen, "bind to local address %s: %s", ip, strerror(e));
	return rift__from_errno(e);
}

static int tcp_connect(rift_ctx *ctx, const rift_config *cfg,
		       const struct sockaddr *src, socklen_t src_len,
		       const struct sockaddr *sa, socklen_t len,
		       rift__path **out)
{
	struct tcp_path *tp;
	char err[RIFT_ERRMSG_LEN];
	int fd, rc;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rift__from_errno(errno);
	rc = set_socket_opts(fd, cfg);
	if (rc)
		goto fail_fd;
	if (src) {
		rc = rift__tcp_bind_local(fd, src, src_len, err, sizeof(err));
		if (rc) {
			rift__ctx_fail(ctx, rc, "%s", err);
			goto fail_fd;
		}
	}
	if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
		rc = rift__from_errno(errno);
		/* A well-formed address the kernel will not route (EINVAL
		 * from a blackhole or a missing route): most often the
		 * link to it is down and its routes went with it. */
		if (rc == RIFT_EINVAL || rc == RIFT_ENETUNREACH) {
			rc = rift__ctx_fail(ctx, RIFT_ENETUNREACH,
					    "no route to the address (is the "
					    "link to it down?)");
		}
		goto fail_fd;
	}
	tp = tcp_path_new(ctx, fd, true);
	if (!tp) {
		rc = RIFT_ENOMEM;
		goto fail_fd;
	}
	tp->base.cfg = cfg;
	/* Even an immediate success is reported from the loop. */
	tp->connecting = true;
	rc = rift__io_start(ctx, &tp->io, fd, EPOLLOUT, tcp_io_cb);
	if (rc) {
		rift__path_destroy(&tp->base);
		return rc;
	}
	*out = &tp->base;
	return 0;

fail_fd:
	close(fd);
	return rc;
}

/*
 * An ERROR frame's last words.  A path that refused its peer or aborted
 * (p->said_error) goes with an ERROR frame in its socket, or still in its
 * batch.  Closing the socket at once lost the frame whenever the peer's
 * frames sat unread in ours: close() then resets the connection, and a
 * reset drops what the socket had not sent yet (a peer whose window was
 * full had not taken it), so the peer learnt of the end from its grace
 * time, not from the frame.  Such a socket lingers, off its path: the
 * rest of the frame is written, the write side shut after it (FIN), and
 * what arrives is read and dropped until the peer closes, or LINGER_MS.
 */
#define LINGER_MS 2000u

struct tcp_linger {
	rift_ctx *ctx;
	rift__io io;
	rift_timer timer;
	struct rift__list node;  /* the context's (tcp_lingers) */
	size_t len, off;         /* buf[off..len): still to write */
	bool shut;               /* the write side is shut */
	uint8_t buf[CTRL_CAP];
};

/* The context's lingering sockets: a list, made when first needed. */
static struct rift__list *tcp_lingers(rift_ctx *ctx, bool make)
{
	struct rift__list *l = ctx->transport_state[RIFT_TRANSPORT_TCP];

	if (!l && make) {
		l = malloc(sizeof(*l));
		if (l) {
			rift__list_init(l);
			ctx->transport_state[RIFT_TRANSPORT_TCP] = l;
		}
	}
	return l;
}

static void linger_end(struct tcp_linger *lg)
{
	rift__io_stop(lg->ctx, &lg->io);
	rift_timer_stop(&lg->timer);
	close(lg->io.fd);
	rift__list_del(&lg->node);
	free(lg);
}

static void linger_expired(rift_timer *t, void *user)
{
	RIFT_UNUSED(t);
	linger_end(user);
}

static void linger_io(rift__io *io, uint32_t revents)
{
	struct tcp_linger *lg = rift__container_of(io, struct tcp_linger, io);
	uint8_t scratch[4096];
	ssize_t n;

	while (lg->off < lg->len) {
		n = send(io->fd, lg->buf + lg->off, lg->len - lg->off,
			 MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return; /* EPOLLOUT stays on */
		if (n <= 0) {
			linger_end(lg);
			return;
		}
		lg->off += (size_t)n;
	}
	if (!lg->shut) {
		lg->shut = true;
		shutdown(io->fd, SHUT_WR);
		rift__io_modify(lg->ctx, io, EPOLLIN);
	}
	if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	for (;;) {
		n = recv(io->fd, scratch, sizeof(scratch), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) { /* the peer closed too, or the socket failed */
			linger_end(lg);
			return;
		}
	}
}

/*
 * Linger tp's socket if it owes its peer an ERROR frame; false when it
 * does not, or cannot (then it closes at once, as any other).  The frame
 * starts the last batch (rift__sess_control's frames come first): what
 * of it is unwritten is kept, the messages after it are not (the peer
 * ends its path at the frame).
 */
static bool linger_start(struct tcp_path *tp)
{
	rift__path *p = &tp->base;
	struct rift__list *list;
	struct tcp_linger *lg;
	const struct iovec *v = &tp->iov[tp->iov_i];
	bool ctrl_left = tp->iov_i == 0 && tp->iov_n > 0 &&
			 (uint8_t *)v->iov_base >= tp->ctrl &&
			 (uint8_t *)v->iov_base < tp->ctrl + sizeof(tp->ctrl);

	if (!p->said_error || tp->connecting)
		return false;
	list = tcp_lingers(p->ctx, true);
	lg = list ? calloc(1, sizeof(*lg)) : NULL;
	if (!lg)
		return false;
	lg->ctx = p->ctx;
	if (ctrl_left) {
		lg->len = v->iov_len;
		memcpy(lg->buf, v->iov_base, v->iov_len);
	}
	if (tp->io.cb)
		rift__io_stop(p->ctx, &tp->io);
	if (rift__io_start(p->ctx, &lg->io, tp->fd, EPOLLIN | EPOLLOUT,
			   linger_io)) {
		free(lg);
		return false;
	}
	rift__timer_init(p->ctx, &lg->timer, linger_expired, lg);
	rift_timer_start(&lg->timer, LINGER_MS, 0);
	rift__list_add_tail(list, &lg->node);
	tp->fd = -1;
	return true;
}

/* The context ends: its lingering sockets close now. */
static void tcp_ctx_destroy(rift_ctx *ctx)
{
	struct rift__list *list = tcp_lingers(ctx, false);

	if (!list)
		return;
	while (!rift__list_empty(list))
		linger_end(rift__list_entry(list->next, struct tcp_linger, node));
	free(list);
	ctx->transport_state[RIFT_TRANSPORT_TCP] = NULL;
}

static void tcp_destroy(rift__path *p)
{
	struct tcp_path *tp = tp_of(p);

	if (tp->fd >= 0)
		linger_start(tp);
	if (tp->io.cb)
		rift__io_stop(p->ctx, &tp->io);
	if (tp->fd >= 0)
		close(tp->fd);
	rift__stream_free(&tp->rx);
	p->ctx->n_sock_paths--;
	free(tp);
}

/* ---- listening ---- */

#define ACCEPT_PAUSE_MS 100

static void accept_resume(rift_timer *t, void *user)
{
	rift__io *io = user;

	if (io->cb) /* still listening */
		rift__io_modify(t->ctx, io, EPOLLIN);
}

void rift__accept_pause_init(rift_ctx *ctx, rift_timer *t, rift__io *io)
{
	rift__timer_init(ctx, t, accept_resume, io);
}

/*
 * Out of descriptors or memory: the pending connection stays in the
 * backlog and the level-triggered listener would wake the loop again at
 * once, spinning a core.  Stop watching it for a while instead; the
 * connection is accepted when resources come back, or times out at the
 * client like any connect to an overloaded server.
 */
bool rift__accept_failed(rift_ctx *ctx, rift__io *io, rift_timer *pause,
			 int err)
{
	if (err == ECONNABORTED || err == EINTR)
		return true; /* that one is gone; next */
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		ctx->stats.accept_pauses++;
		RIFT_WARN(ctx, "accept: %s; pausing the listener %d ms",
			  strerror(err), ACCEPT_PAUSE_MS);
		rift__io_modify(ctx, io, 0);
		rift_timer_start(pause, ACCEPT_PAUSE_MS, 0);
	}
	return false; /* EAGAIN: drained */
}

/* An accepted socket becomes a server path of l, handshaking. */
int rift__tcp_adopt(rift_listener *l, int fd, const struct sockaddr *sa)
{
	rift_ctx *ctx = l->ctx;
	struct tcp_path *tp;
	char addr[64];

	if (set_socket_opts(fd, &ctx->cfg) ||
	    !(tp = tcp_path_new(ctx, fd, false)))
		return RIFT_ENOMEM;
	rift__sockaddr_str(sa, addr, sizeof(addr));
	snprintf(tp->base.peer, sizeof(tp->base.peer), "tcp://%s", addr);
	note_local(tp);
	RIFT_DEBUG(ctx, "%s: accepted on %s", tp->base.peer, tp->base.local);
	if (rift__io_start(ctx, &tp->io, fd, EPOLLIN, tcp_io_cb)) {
		tp->fd = -1; /* the caller closes it */
		rift__path_destroy(&tp->base);
		return RIFT_ENOMEM;
	}
	rift__listener_path(l, &tp->base);
	return 0;
}

static void accept_cb(rift__io *io, uint32_t revents)
{
	rift_listener *l = rift__container_of(io, rift_listener, io);

	RIFT_UNUSED(revents);
	for (int i = 0; i < ACCEPTS_PER_EVENT && !l->closing; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		int fd;

		fd = accept4(l->fd, (struct sockaddr *)&sa, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (rift__accept_failed(l->ctx, &l->io, &l->accept_pause,
						errno))
				continue;
			return;
		}
		if (rift__tcp_adopt(l, fd, (struct sockaddr *)&sa))
			close(fd);
	}
}

int rift__listen_socket(rift_ctx *ctx, const struct sockaddr *sa,
			socklen_t len, const char *what, int *port)
{
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	char addr[64];
	int fd, one = 1, rc;

	rift__sockaddr_str(sa, addr, sizeof(addr));
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rift__ctx_fail(ctx, rift__from_errno(errno),
				      "listen %s%s: socket: %s", addr, what,
				      strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, sa, len) < 0 ||
	    listen(fd, (int)ctx->cfg.listen_backlog) < 0 ||
	    getsockname(fd, (struct sockaddr *)&bound, &blen) < 0) {
		rc = rift__ctx_fail(ctx, rift__from_errno(errno),
				    "listen %s%s: %s", addr, what,
				    strerror(errno));
		close(fd);
		return rc;
	}
	*port = bound.ss_family == AF_INET6
			? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
			: ntohs(((struct sockaddr_in *)&bound)->sin_port);
	return fd;
}

static int tcp_listen(rift_listener *l, const struct sockaddr *sa,
		      socklen_t len)
{
	rift_ctx *ctx = l->ctx;
	int fd, rc;

	rift__accept_pause_init(ctx, &l->accept_pause, &l->io);
	fd = rift__listen_socket(ctx, sa, len, "", &l->port);
	if (fd < 0)
		return fd;
	l->fd = fd;
	rc = rift__io_start(ctx, &l->io, fd, EPOLLIN, accept_cb);
	if (rc) {
		rift__ctx_fail(ctx, rc, "listen: epoll: %s", rift_strerror(rc));
		close(fd);
		l->fd = -1;
		return rc;
	}
	return 0;
}

static void tcp_listen_close(rift_listener *l)
{
	rift_timer_stop(&l->accept_pause);
	if (l->fd < 0)
		return;
	rift__io_stop(l->ctx, &l->io);
	close(l->fd);
	l->fd = -1;
}

static void tcp_cut(rift__path *p)
{
	shutdown(tp_of(p)->fd, SHUT_RDWR);
}

/* A socket's writes go together at the end of the round (one writev):
 * never at once. */
static bool tcp_send_now(rift__path *p)
{
	RIFT_UNUSED(p);
	return false;
}

static rift_fallback_reason tcp_available(rift_ctx *ctx)
{
	RIFT_UNUSED(ctx);
	return RIFT_FALLBACK_NONE;
}

/*
 * Data the peer has not acknowledged although TCP's retransmission timer
 * fired (tcpi_retransmits: RTOs in a row with no new data acknowledged
 * since): a link that drops everything, seen long before TCP_USER_TIMEOUT
 * (2 s).  How long: one RTO before it fired, and the time since this
 * path first saw it.  One lost segment costs one RTO and recovers with
 * the ACK of its retransmission, before the session's check looks again
 * (rift__group_stall_check waits a tick more).  Not the time since the
 * last ACK (tcpi_last_ack_recv): the peer's own data carries duplicate
 * ACKs that refresh it while nothing of ours gets through.
 */
static uint64_t tcp_tx_stalled_us(rift__path *p)
{
	struct tcp_path *tp = (struct tcp_path *)p;
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (tp->fd < 0 || tp->connecting ||
	    getsockopt(tp->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    !ti.tcpi_unacked || !ti.tcpi_retransmits) {
		tp->rto_seen_us = 0;
		return 0;
	}
	if (!tp->rto_seen_us)
		tp->rto_seen_us = p->ctx->now_us;
	return p->ctx->now_us - tp->rto_seen_us +
	       ((uint64_t)ti.tcpi_rto >> (ti.tcpi_backoff < 16 ? ti.tcpi_backoff : 16));
}

/* Sockets are watched by the loop's epoll; the one context hook closes
 * the sockets still lingering after an ERROR frame (tcp_destroy). */
const struct rift__transport_ops rift__tcp_ops = {
	.name = "tcp",
	.kind = RIFT_TRANSPORT_TCP,
	.scheme = RIFT_SCHEME_TCP,
	.registered_sends = false,
	.available = tcp_available,
	.connect = tcp_connect,
	.listen = tcp_listen,
	.listen_close = tcp_listen_close,
	.flush = tcp_flush,
	.send_now = tcp_send_now,
	.destroy = tcp_destroy,
	.cut = tcp_cut,
	.ctx_destroy = tcp_ctx_destroy,
	.tx_stalled_us = tcp_tx_stalled_us,
};
