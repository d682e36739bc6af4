/*
 * cm_tcp.c - the side channel of rdma.cm = tcp: sockets, the bootstrap's
 * wire format, and the listener that tells bootstraps from TCP sessions.
 * See cm_tcp.h for the exchange.  No verbs calls here: rdma_boot.c makes
 * and moves the QP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "session/session.h"
#include "session/wire.h"
#include "transports/verbs/cm_tcp.h"

#define ACCEPTS_PER_EVENT 64

enum tc_state {
	TC_CONNECTING = 1, /* client: non-blocking connect in progress */
	TC_CLASSIFY,       /* listener: bootstrap or TCP session? */
	TC_BOOT,           /* waiting for the peer's bootstrap */
	TC_LIVE,           /* path up: readable = the peer left */
	TC_DONE,           /* refused or failed: nothing more is read */
};

struct rift__cmtcp {
	rift__path *p;       /* the verbs path this channel belongs to */
	rift_ctx *ctx;
	int fd;
	rift__io io;
	enum tc_state state;
	bool serve_tcp;      /* listener side of auto://: sessions go to TCP */
	bool sent;           /* our bootstrap (or refusal) is queued */
	uint8_t in[RIFT_BOOT_SIZE];
	size_t in_n;
	uint8_t out[RIFT_BOOT_SIZE + 256];
	size_t out_n, out_off;
	char addr[64];       /* peer, for messages */
};

struct rift__cmtcp_listener {
	rift_listener *l;
	int fd;
	rift__io io;
	rift_timer accept_pause; /* accepting paused after EMFILE & co */
	bool serve_tcp;
};

const char *rift__rej_str(unsigned why)
{
	switch (why) {
	case RIFT_REJ_BAD_HELLO:
		return "peer refused our hello";
	case RIFT_REJ_RESOURCES:
		return "peer out of resources";
	case RIFT_REJ_CLOSING:
		return "listener closing";
	case RIFT_REJ_CM_TCP:
		return "the peer's listener uses rdma.cm = tcp, we use rdmacm";
	case RIFT_REJ_NO_RDMA:
		return "the peer has no usable RDMA device";
	default:
		return "refused for an unknown reason";
	}
}

/* ---- wire format ---- */

/*
 *  0 u32 magic "RVBT"   4 u16 version   6 u8 status   7 u8 link layer
 *  8 u16 lid           10 u8 mtu       11 u8 rd_atom  12 u32 qpn
 * 16 u32 psn           20 u32 caps     24 u8 gid[16]  40 u8 hello[16]
 * 56 u8 reserved[8] (zero)
 */
void rift__boot_encode(uint8_t *o, const struct rift__boot *b)
{
	uint32_t v32;
	uint16_t v16;

	memset(o, 0, RIFT_BOOT_SIZE);
	v32 = htonl(RIFT_BOOT_MAGIC);
	memcpy(o, &v32, 4);
	v16 = htons(RIFT_BOOT_VERSION);
	memcpy(o + 4, &v16, 2);
	o[6] = b->status;
	o[7] = b->link_layer;
	v16 = htons(b->lid);
	memcpy(o + 8, &v16, 2);
	o[10] = b->mtu;
	o[11] = b->rd_atom;
	v32 = htonl(b->qpn);
	memcpy(o + 12, &v32, 4);
	v32 = htonl(b->psn);
	memcpy(o + 16, &v32, 4);
	v32 = htonl(b->caps);
	memcpy(o + 20, &v32, 4);
	memcpy(o + 24, b->gid, 16);
	memcpy(o + 40, b->hello, RIFT_BOOT_HELLO_LEN);
}

const char *rift__boot_decode(const uint8_t *in, struct rift__boot *b)
{
	uint32_t v32;
	uint16_t v16;

	memcpy(&v32, in, 4);
	if (ntohl(v32) != RIFT_BOOT_MAGIC)
		return "side channel: bad magic (not a rift verbs bootstrap)";
	memcpy(&v16, in + 4, 2);
	if (ntohs(v16) != RIFT_BOOT_VERSION)
		return "side channel: unsupported bootstrap version";
	memset(b, 0, sizeof(*b));
	b->status = in[6];
	b->link_layer = in[7];
	memcpy(&v16, in + 8, 2);
	b->lid = ntohs(v16);
	b->mtu = in[10];
	b->rd_atom = in[11];
	memcpy(&v32, in + 12, 4);
	b->qpn = ntohl(v32);
	memcpy(&v32, in + 16, 4);
	b->psn = ntohl(v32);
	memcpy(&v32, in + 20, 4);
	b->caps = ntohl(v32);
	memcpy(b->gid, in + 24, 16);
	memcpy(b->hello, in + 40, RIFT_BOOT_HELLO_LEN);
	return NULL;
}

const char *rift__boot_check(const struct rift__boot *b, uint8_t link_layer)
{
	static const uint8_t zero[16];

	if (b->link_layer != 1 && b->link_layer != 2)
		return "bootstrap names an unknown link layer";
	if (b->link_layer != link_layer)
		return link_layer == 2 ? "peer is on InfiniBand, we are on Ethernet"
				       : "peer is on Ethernet, we are on InfiniBand";
	/* QPs 0 and 1 are the special management QPs; QPNs have 24 bits. */
	if (b->qpn < 2 || b->qpn > 0xffffffu)
		return "bootstrap names an impossible QP number";
	if (b->psn > 0xffffffu)
		return "bootstrap names an impossible packet sequence number";
	if (b->mtu < 1 || b->mtu > 5)
		return "bootstrap names an impossible path MTU";
	if (link_layer == 2) {
		if (memcmp(b->gid, zero, 16) == 0)
			return "bootstrap names an empty GID";
		if (b->gid[0] == 0xff)
			return "bootstrap names a multicast GID";
	} else if (b->lid == 0 || b->lid >= 0xc000) {
		return "bootstrap names an impossible LID";
	}
	return NULL;
}

/* ---- one channel ---- */

static void tc_events(struct rift__cmtcp *tc)
{
	uint32_t ev = tc->state == TC_CONNECTING ? EPOLLOUT : EPOLLIN;

	if (tc->out_off < tc->out_n)
		ev |= EPOLLOUT;
	if (tc->state == TC_DONE && !(ev & EPOLLOUT))
		ev = 0;
	rift__io_modify(tc->ctx, &tc->io, ev);
}

/* Fail the path; a refused peer gets told first (best effort). */
static void tc_fail(struct rift__cmtcp *tc, int err, rift_fallback_reason fb,
		    const char *fmt, const char *what)
{
	if (fb != RIFT_FALLBACK_NONE)
		tc->p->fb_reason = fb;
	tc->state = TC_DONE;
	rift__path_failed(tc->p, err, fmt, what);
}

static void tc_write(struct rift__cmtcp *tc)
{
	while (tc->out_off < tc->out_n) {
		/* MSG_NOSIGNAL: no SIGPIPE for the application (tcp.c). */
		ssize_t n = send(tc->fd, tc->out + tc->out_off,
				 tc->out_n - tc->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			if (tc->state != TC_DONE)
				tc_fail(tc, rift__from_errno(errno),
					RIFT_FALLBACK_NONE,
					"side channel: write: %s",
					strerror(errno));
			return;
		}
		tc->out_off += (size_t)n;
	}
	tc_events(tc);
}

int rift__cmtcp_send(struct rift__cmtcp *tc, const struct rift__boot *b)
{
	if (tc->sent)
		return 0;
	rift__boot_encode(tc->out, b);
	tc->out_n = RIFT_BOOT_SIZE;
	tc->out_off = 0;
	tc->sent = true;
	tc_write(tc);
	return tc->p->state == RIFT_PATH_DEAD ? RIFT_ECONNRESET : 0;
}

void rift__cmtcp_refuse(struct rift__cmtcp *tc, enum rift__rej why)
{
	struct rift__boot b = { .status = (uint8_t)why };

	if (tc->sent)
		return;
	tc->state = TC_DONE;
	rift__cmtcp_send(tc, &b);
}

void rift__cmtcp_live(struct rift__cmtcp *tc)
{
	tc->state = TC_LIVE;
	tc_events(tc);
}

int rift__cmtcp_local(struct rift__cmtcp *tc, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	if (getsockname(tc->fd, (struct sockaddr *)ss, &len) < 0)
		return rift__from_errno(errno);
	return 0;
}

void rift__cmtcp_shutdown(struct rift__cmtcp *tc)
{
	shutdown(tc->fd, SHUT_RDWR);
}

void rift__cmtcp_close(struct rift__cmtcp *tc)
{
	if (!tc)
		return;
	if (tc->io.cb)
		rift__io_stop(tc->ctx, &tc->io);
	if (tc->fd >= 0)
		close(tc->fd);
	free(tc);
}

static void finish_connect(struct rift__cmtcp *tc)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(tc->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == ECONNREFUSED) {
		tc_fail(tc, RIFT_ECONNREFUSED, RIFT_FALLBACK_REJECTED,
			"cm=tcp side channel to %s: connection refused: no "
			"cm=tcp listener on that TCP port (the peer takes "
			"rdma_cm only: an older rift, or its TCP port is held "
			"by another program)",
			tc->addr);
		return;
	}
	if (err) {
		tc->p->fb_reason = err == ETIMEDOUT ? RIFT_FALLBACK_TIMEOUT
						    : RIFT_FALLBACK_ADDR_RESOLVE;
		tc->state = TC_DONE;
		rift__path_failed(tc->p, rift__from_errno(err),
				  "cm=tcp side channel to %s: connect: %s",
				  tc->addr, strerror(err));
		return;
	}
	RIFT_DEBUG(tc->ctx, "cm=tcp side channel to %s connected", tc->addr);
	tc->state = TC_BOOT;
	tc_events(tc);
	rift__rdma_boot_connected(tc->p);
}

/* A rift TCP session at a cm=tcp rdma:// listener: say why it is refused. */
static void refuse_session(struct rift__cmtcp *tc)
{
	static const char why[] = "this port takes RDMA only (rdma:// with "
				  "rdma.cm = tcp): connect with rdma:// or "
				  "auto://";
	struct rift__hdr h = { .type = RIFT_FRAME_ERROR };

	h.len = (uint32_t)rift__error_encode(tc->out + RIFT_HDR_SIZE,
					     RIFT_ECONNREFUSED, why);
	rift__hdr_encode(tc->out, &h);
	tc->out_n = RIFT_HDR_SIZE + h.len;
	tc->out_off = 0;
	tc->sent = true;
	tc->state = TC_DONE;
	tc_write(tc);
}

/* Listener: the first two bytes say bootstrap ("RV") or session ("RF"). */
static void classify(struct rift__cmtcp *tc)
{
	uint8_t peek[2];
	ssize_t n = recv(tc->fd, peek, sizeof(peek), MSG_PEEK);
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		tc_fail(tc, RIFT_ECONNRESET, RIFT_FALLBACK_NONE,
			"%s: side channel closed before a bootstrap",
			tc->addr);
		return;
	}
	if (n < 2)
		return;
	if (peek[0] != (RIFT_WIRE_MAGIC >> 8) || peek[1] != (RIFT_WIRE_MAGIC & 0xff)) {
		tc->state = TC_BOOT;
		return;
	}
	if (!tc->serve_tcp) {
		refuse_session(tc);
		if (tc->p->state != RIFT_PATH_DEAD)
			rift__path_failed(tc->p, RIFT_ECONNREFUSED,
					  "%s: a rift TCP session at an rdma:// "
					  "cm=tcp listener: refused",
					  tc->addr);
		return;
	}
	/* auto://: the TCP fallback of a client, on the same port. */
	rift__io_stop(tc->ctx, &tc->io);
	tc->io.cb = NULL;
	tc->state = TC_DONE;
	if (getpeername(tc->fd, (struct sockaddr *)&sa, &len) < 0 ||
	    rift__tcp_adopt(tc->p->lst, tc->fd, (struct sockaddr *)&sa) < 0)
		close(tc->fd);
	tc->fd = -1;
	rift__path_failed(tc->p, RIFT_ECANCELED,
			  "side channel was a TCP session: handed to tcp");
}

static void read_boot(struct rift__cmtcp *tc)
{
	rift__path *p = tc->p;
	struct rift__boot b;
	const char *bad;

	while (tc->in_n < RIFT_BOOT_SIZE) {
		ssize_t n = read(tc->fd, tc->in + tc->in_n,
				 RIFT_BOOT_SIZE - tc->in_n);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			tc_fail(tc, rift__from_errno(errno), RIFT_FALLBACK_NONE,
				"side channel: read: %s", strerror(errno));
			return;
		}
		if (n == 0) {
			char msg[160];

			if (tc->in_n) {
				/* A truncated bootstrap is a protocol error. */
				snprintf(msg, sizeof(msg),
					 "side channel closed after %zu of %u "
					 "bytes of the peer's bootstrap",
					 tc->in_n, RIFT_BOOT_SIZE);
				tc_fail(tc, RIFT_EPROTO, RIFT_FALLBACK_NONE, "%s",
					msg);
			} else if (p->is_client) {
				tc_fail(tc, RIFT_ECONNRESET,
					RIFT_FALLBACK_PEER_NO_RDMA,
					"the peer closed the cm=tcp side channel "
					"without a bootstrap (%s)",
					"does it take rdma_cm only?");
			} else {
				tc_fail(tc, RIFT_ECONNRESET, RIFT_FALLBACK_NONE,
					"%s", "side channel closed before a bootstrap");
			}
			return;
		}
		tc->in_n += (size_t)n;
		if (p->is_client && tc->in_n >= 2 &&
		    tc->in[0] == (RIFT_WIRE_MAGIC >> 8) &&
		    tc->in[1] == (RIFT_WIRE_MAGIC & 0xff)) {
			/* A rift TCP listener (auto://, cm=rdmacm) refused our
			 * bootstrap with an ERROR frame. */
			tc_fail(tc, RIFT_ECONNREFUSED, RIFT_FALLBACK_PEER_NO_RDMA,
				"%s", "the peer answered the cm=tcp bootstrap "
				"with a rift TCP frame: its port serves TCP "
				"sessions, not cm=tcp (does it take rdma_cm "
				"only?)");
			return;
		}
	}
	bad = rift__boot_decode(tc->in, &b);
	if (bad) {
		if (!p->is_client)
			rift__cmtcp_refuse(tc, RIFT_REJ_BAD_HELLO);
		tc_fail(tc, RIFT_EPROTO, RIFT_FALLBACK_NONE, "%s", bad);
		return;
	}
	tc->state = TC_DONE; /* until rdma_boot.c says live */
	tc_events(tc);
	rift__rdma_boot_received(p, &b);
}

static void tc_io_cb(rift__io *io, uint32_t revents)
{
	struct rift__cmtcp *tc = rift__container_of(io, struct rift__cmtcp, io);
	rift__path *p = tc->p;
	uint8_t byte;
	ssize_t n;

	if (p->state == RIFT_PATH_DEAD)
		return;
	if (tc->state == TC_CONNECTING) {
		finish_connect(tc);
		return;
	}
	if ((revents & EPOLLOUT) && tc->out_off < tc->out_n) {
		tc_write(tc);
		if (p->state == RIFT_PATH_DEAD)
			return;
	}
	if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	switch (tc->state) {
	case TC_CLASSIFY:
		classify(tc);
		if (tc->state != TC_BOOT || p->state == RIFT_PATH_DEAD)
			return;
		/* The bootstrap may be there already. */
		__attribute__((fallthrough));
	case TC_BOOT:
		read_boot(tc);
		break;
	case TC_LIVE:
		n = read(tc->fd, &byte, 1);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n > 0)
			rift__rdma_boot_closed(p, RIFT_EPROTO,
					       "unexpected bytes on the cm=tcp "
					       "side channel");
		else
			rift__rdma_boot_closed(p, RIFT_ECONNRESET,
					       n == 0 ? "cm=tcp side channel "
							"closed by the peer "
							"(its process or path "
							"is gone)"
						      : "cm=tcp side channel "
							"error");
		break;
	default:
		/* Refused: wait for the path's destruction. */
		rift__io_modify(tc->ctx, &tc->io, 0);
		break;
	}
}

static struct rift__cmtcp *tc_new(rift__path *p, rift_ctx *ctx, int fd)
{
	struct rift__cmtcp *tc = calloc(1, sizeof(*tc));

	if (!tc)
		return NULL;
	tc->p = p;
	tc->ctx = ctx;
	tc->fd = fd;
	return tc;
}

static void sock_opts(int fd)
{
	int one = 1;

	/* Two small messages, then silence: no delay for either. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int rift__cmtcp_connect(rift__path *p, const struct sockaddr *sa,
			socklen_t len, const struct rift__rdma_src *src,
			struct rift__cmtcp **out, char *err, size_t errlen)
{
	struct rift__cmtcp *tc;
	int fd, rc;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = rift__from_errno(errno);
		snprintf(err, errlen, "socket: %s", rift_strerror(rc));
		return rc;
	}
	sock_opts(fd);
	/* The path's local address (given, or the configured device's:
	 * rdma_src.c), whose device is the path's (rdma_boot.c). */
	if (src->set) {
		rc = rift__tcp_bind_local(fd, (const struct sockaddr *)&src->addr,
					  src->len, err, errlen);
		if (rc) {
			close(fd);
			return rc;
		}
	}
	if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
		rc = rift__from_errno(errno);
		close(fd);
		/* As rdma_resolve_addr's refusal (rdma.c): a well-formed
		 * address the kernel will not route. */
		if (rc == RIFT_EINVAL || rc == RIFT_ENETUNREACH) {
			snprintf(err, errlen, "connect: no route to the address "
					      "(is the link to it down?)");
			return RIFT_ENETUNREACH;
		}
		snprintf(err, errlen, "connect: %s", rift_strerror(rc));
		return rc;
	}
	tc = tc_new(p, p->ctx, fd);
	if (!tc) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return RIFT_ENOMEM;
	}
	rift__sockaddr_str(sa, tc->addr, sizeof(tc->addr));
	/* Even an immediate success is reported from the loop. */
	tc->state = TC_CONNECTING;
	rc = rift__io_start(p->ctx, &tc->io, fd, EPOLLOUT, tc_io_cb);
	if (rc) {
		rift__cmtcp_close(tc);
		snprintf(err, errlen, "epoll: %s", rift_strerror(rc));
		return rc;
	}
	*out = tc;
	return 0;
}

/* ---- listening ---- */

static void accept_cb(rift__io *io, uint32_t revents)
{
	struct rift__cmtcp_listener *tl =
		rift__container_of(io, struct rift__cmtcp_listener, io);
	rift_listener *l = tl->l;
	rift_ctx *ctx = l->ctx;

	RIFT_UNUSED(revents);
	for (int i = 0; i < ACCEPTS_PER_EVENT && !l->closing; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		struct rift__cmtcp *tc;
		rift__path *p;
		char addr[64];
		int fd;

		fd = accept4(tl->fd, (struct sockaddr *)&sa, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (rift__accept_failed(ctx, &tl->io, &tl->accept_pause,
						errno))
				continue;
			return;
		}
		sock_opts(fd);
		tc = tc_new(NULL, ctx, fd);
		if (!tc) {
			close(fd);
			continue;
		}
		tc->serve_tcp = tl->serve_tcp;
		tc->state = TC_CLASSIFY;
		rift__sockaddr_str((struct sockaddr *)&sa, addr, sizeof(addr));
		snprintf(tc->addr, sizeof(tc->addr), "%s", addr);
		RIFT_DEBUG(ctx, "cm=tcp side channel from %s accepted", addr);
		/* The path owns tc from here: its destruction closes fd. */
		p = rift__rdma_boot_path(l, tc, addr);
		if (!p) {
			rift__cmtcp_close(tc);
			continue;
		}
		tc->p = p;
		if (rift__io_start(ctx, &tc->io, fd, EPOLLIN, tc_io_cb))
			rift__path_failed(p, RIFT_ENOMEM,
					  "epoll: cannot watch a side channel");
	}
}

int rift__cmtcp_listen(rift_listener *l, const struct sockaddr *sa,
		       socklen_t len, bool serve_tcp,
		       struct rift__cmtcp_listener **out)
{
	rift_ctx *ctx = l->ctx;
	struct rift__cmtcp_listener *tl;
	int fd, rc;

	tl = calloc(1, sizeof(*tl));
	if (!tl)
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "listen: out of memory");
	rift__accept_pause_init(ctx, &tl->accept_pause, &tl->io);
	fd = rift__listen_socket(ctx, sa, len, " (cm=tcp side channel)",
				 &l->port);
	if (fd < 0) {
		free(tl);
		return fd;
	}
	tl->l = l;
	tl->fd = fd;
	tl->serve_tcp = serve_tcp;
	rc = rift__io_start(ctx, &tl->io, fd, EPOLLIN, accept_cb);
	if (rc) {
		rift__ctx_fail(ctx, rc, "listen (cm=tcp): epoll: %s",
			       rift_strerror(rc));
		close(fd);
		free(tl);
		return rc;
	}
	*out = tl;
	return 0;
}

void rift__cmtcp_listen_close(struct rift__cmtcp_listener *tl)
{
	if (!tl)
		return;
	rift_timer_stop(&tl->accept_pause);
	rift__io_stop(tl->l->ctx, &tl->io);
	close(tl->fd);
	free(tl);
}
