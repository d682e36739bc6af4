/*
 * relay.c - a TCP relay for tests (relay.h).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"

static int tcp_to(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Close both ends of pair i; rst: at once, with a reset. */
static void pair_close(struct relay *r, int i, bool rst)
{
	for (int k = 0; k < 2; k++) {
		if (r->fds[i][k] < 0)
			continue;
		if (rst) {
			struct linger lg = { .l_onoff = 1, .l_linger = 0 };

			setsockopt(r->fds[i][k], SOL_SOCKET, SO_LINGER, &lg,
				   sizeof(lg));
		}
		close(r->fds[i][k]);
		r->fds[i][k] = -1;
	}
}

static void take(struct relay *r)
{
	int in = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC), out;

	if (in < 0)
		return;
	out = tcp_to(r->to_addr, r->to_port);
	for (int i = 0; out >= 0 && i < RELAY_PAIRS; i++) {
		if (r->fds[i][0] >= 0)
			continue;
		r->fds[i][0] = in;
		r->fds[i][1] = out;
		__atomic_add_fetch(&r->accepted, 1, __ATOMIC_RELEASE);
		return;
	}
	if (out >= 0)
		close(out);
	close(in);
}

/* Bytes from one end of pair i to the other; false when it ended. */
static bool pass(struct relay *r, int i, int from)
{
	char buf[65536];
	ssize_t n = read(r->fds[i][from], buf, sizeof(buf));

	for (ssize_t done = 0; n > 0 && done < n;) {
		ssize_t w = write(r->fds[i][!from], buf + done,
				  (size_t)(n - done));

		if (w <= 0)
			return false;
		done += w;
	}
	return n > 0;
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;

	while (!r->stop) {
		struct pollfd p[2 + 2 * RELAY_PAIRS];
		int n = 0;

		p[n++] = (struct pollfd){ .fd = r->wake[0], .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
		for (int i = 0; i < RELAY_PAIRS; i++)
			for (int k = 0; k < 2; k++)
				p[n++] = (struct pollfd){ .fd = r->fds[i][k],
							  .events = POLLIN };
		if (poll(p, (nfds_t)n, -1) < 0)
			continue;
		if (p[0].revents) {
			char c = 0;

			if (read(r->wake[0], &c, 1) == 1 && c == 'c')
				for (int i = 0; i < RELAY_PAIRS; i++)
					pair_close(r, i, true);
			if (c == 's')
				r->stop = true;
			continue;
		}
		if (p[1].revents)
			take(r);
		for (int i = 0; i < RELAY_PAIRS; i++)
			for (int k = 0; k < 2; k++)
				if (p[2 + 2 * i + k].revents &&
				    r->fds[i][k] >= 0 && !pass(r, i, k))
					pair_close(r, i, false);
	}
	for (int i = 0; i < RELAY_PAIRS; i++)
		pair_close(r, i, false);
	return NULL;
}

int relay_start(struct relay *r, const char *addr, int port,
		const char *to_addr, int to_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int one = 1;

	memset(r, 0, sizeof(*r));
	memset(r->fds, -1, sizeof(r->fds));
	snprintf(r->to_addr, sizeof(r->to_addr), "%s", to_addr);
	r->to_port = to_port;
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->lfd < 0)
		return -1;
	setsockopt(r->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
	    bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(r->lfd, 16) < 0 || pipe2(r->wake, O_CLOEXEC) < 0) {
		close(r->lfd);
		return -1;
	}
	if (pthread_create(&r->th, NULL, relay_main, r)) {
		close(r->lfd);
		close(r->wake[0]);
		close(r->wake[1]);
		return -1;
	}
	return 0;
}

int relay_accepted(struct relay *r)
{
	return __atomic_load_n(&r->accepted, __ATOMIC_ACQUIRE);
}

void relay_cut(struct relay *r)
{
	if (write(r->wake[1], "c", 1) != 1)
		return;
}

void relay_stop(struct relay *r)
{
	if (write(r->wake[1], "s", 1) == 1)
		pthread_join(r->th, NULL);
	close(r->lfd);
	close(r->wake[0]);
	close(r->wake[1]);
}
