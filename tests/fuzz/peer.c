/*
 * peer.c - helpers of the fuzz targets that play a peer of a live context
 * over TCP (fuzz_handshake.c, fuzz_hostile.c); see fuzz.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "session/wire.h"

rift_config fz_config(void)
{
	rift_config cfg;

	rift_config_init(&cfg);
	cfg.connect_timeout_ms = 600000;
	cfg.retry_delay_ms = 0;
	cfg.keepalive_interval_ms = 1800000;
	cfg.keepalive_timeout_ms = 3600000;
	cfg.session_grace_ms = 3600000;
	/* Every input is a refused peer: a warning each would be most of a
	 * run's time.  RIFT_LOG=debug still shows them, replaying a crash. */
	if (!getenv("RIFT_LOG"))
		cfg.log_level = RIFT_LOG_OFF;
	/* A close is abortive at once (the next round): these targets test
	 * what rift makes of hostile input, and a fuzz peer never answers
	 * CLOSE, so an orderly close would wait out its linger (and
	 * re-attach meanwhile) for every input. */
	cfg.linger_ms = 0;
	return cfg;
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

int fz_connect(int port)
{
	struct sockaddr_in sa = loopback(port);
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	FZ_CHECK(fd >= 0);
	FZ_CHECK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	/* From another address of 127/8 each time: thousands of connections
	 * a second, the ones rift closes first kept in TIME_WAIT on its side,
	 * ran out of loopback's (address, port) pairs after about 26 000
	 * (connect: EADDRNOTAVAIL, in make test's 25 s run). */
	{
		static uint32_t next;
		struct sockaddr_in src = { .sin_family = AF_INET };

		next = next % 0xfffffd + 1;
		src.sin_addr.s_addr = htonl(0x7f000001u + next);
		FZ_CHECK(bind(fd, (struct sockaddr *)&src, sizeof(src)) == 0);
	}
	/* Blocking: on loopback the kernel completes it at once, unless
	 * softirq work was deferred and libFuzzer's timer signal came first
	 * (EINTR, seen in CI); the handshake goes on, and its end is
	 * waited for. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		socklen_t elen = sizeof(int);
		int err = 0, n;

		FZ_CHECK(errno == EINTR);
		do
			n = poll(&p, 1, 10000);
		while (n < 0 && errno == EINTR);
		FZ_CHECK(n == 1);
		FZ_CHECK(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0);
		errno = err;
		FZ_CHECK(err == 0);
	}
	FZ_CHECK(fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
	return fd;
}

int fz_listen(int *port)
{
	struct sockaddr_in sa = loopback(0);
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	FZ_CHECK(fd >= 0);
	FZ_CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	FZ_CHECK(listen(fd, 64) == 0);
	FZ_CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

size_t fz_send(int fd, const void *data, size_t n)
{
	ssize_t w = n ? send(fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;

	return w > 0 ? (size_t)w : 0;
}

bool fz_drain(int fd)
{
	uint8_t buf[65536];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EINTR);
	}
}

void fz_close(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

void fz_rounds(rift_ctx *ctx, int max)
{
	int idle = 0;

	for (int i = 0; i < max && idle < 2; i++) {
		int rc = rift_ctx_run_mode(ctx, RIFT_RUN_NOWAIT, 0);

		FZ_CHECK(rc >= 0);
		idle = rc == 0 ? idle + 1 : 0;
	}
}

bool fz_wait(rift_ctx *ctx, bool (*done)(void *arg), void *arg,
	     int timeout_ms)
{
	uint64_t end = rift__clock_us() + (uint64_t)timeout_ms * 1000u;

	while (!done(arg)) {
		int rc;

		if (rift__clock_us() >= end)
			return false;
		rc = rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 10);
		FZ_CHECK(rc >= 0 || rc == RIFT_ETIMEDOUT);
	}
	return true;
}

size_t fz_count(const struct rift__list *l)
{
	size_t n = 0;

	for (const struct rift__list *it = l->next; it != l; it = it->next)
		n++;
	return n;
}

/* Whether a frame of this type carries a session id at byte 8 of its
 * payload: the handshakes', JOIN's included. */
static bool names_a_session(uint8_t type)
{
	return (type >= RIFT_FRAME_HELLO && type <= RIFT_FRAME_RESUME_ACK) ||
	       type == RIFT_FRAME_JOIN || type == RIFT_FRAME_JOIN_ACK;
}

/* Where the tag of a handshake payload of that type and length is if it
 * proves fz_session_key, else 0. */
static size_t sealed_at(const uint8_t *pl, uint8_t type, uint32_t len)
{
	size_t at = 0;

	if ((type == RIFT_FRAME_RESUME || type == RIFT_FRAME_RESUME_ACK) &&
	    len == RIFT_HELLO_SIZE)
		at = RIFT_HELLO_AUTH_AT;
	if ((type == RIFT_FRAME_JOIN || type == RIFT_FRAME_JOIN_ACK) &&
	    len == RIFT_JOIN_SIZE)
		at = RIFT_JOIN_AUTH_AT;
	return at && rift__hello_proves(pl, type, at, fz_session_key) ? at : 0;
}

unsigned fz_patch_ids(uint8_t *buf, size_t n, const uint64_t *ids,
		      const uint8_t (*keys)[RIFT_SESSION_KEY_LEN],
		      unsigned n_ids)
{
	unsigned seen = 0;
	size_t off = 0;

	while (n - off >= RIFT_HDR_SIZE) {
		uint8_t type = buf[off + 3];
		uint8_t *pl = buf + off + RIFT_HDR_SIZE;
		uint32_t len;
		uint64_t id;

		memcpy(&len, buf + off + 4, 4);
		len = be32toh(len);
		if (len > n - off - RIFT_HDR_SIZE)
			break;
		if (names_a_session(type) && len >= 16) {
			memcpy(&id, pl + 8, 8);
			id = be64toh(id);
			if (id >= 1 && id <= n_ids) {
				unsigned i = (unsigned)id - 1;
				/* Asked before the id, which the tag covers,
				 * changes. */
				size_t at = sealed_at(pl, type, len);

				seen |= 1u << i;
				id = htobe64(ids[i]);
				memcpy(pl + 8, &id, 8);
				if (at)
					rift__hello_seal(pl, type, at, keys[i]);
			}
		}
		off += RIFT_HDR_SIZE + len;
	}
	return seen;
}
