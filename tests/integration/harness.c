#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <time.h>

#include "harness.h"

uint64_t h_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

size_t h_size(uint64_t seed, uint64_t i, size_t max_size)
{
	uint64_t r = splitmix(seed ^ (i * 0x100000001b3ull));

	if (max_size <= 4096)
		return (size_t)(r % (max_size + 1));
	/* Mostly small, some large, a few empty: like real traffic. */
	switch (r % 16) {
	case 0:
		return 0;
	case 1:
		return (size_t)((r >> 8) % (max_size + 1));
	default:
		return (size_t)((r >> 8) % 4097);
	}
}

void h_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t i)
{
	uint64_t x = splitmix(seed + i);

	for (size_t k = 0; k < len; k++) {
		if ((k & 7) == 0)
			x = splitmix(x);
		buf[k] = (uint8_t)(x >> ((k & 7) * 8));
	}
}

uint64_t h_mix(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;

	h ^= len;
	h *= 0x100000001b3ull;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int h_send(rift_conn *conn, uint64_t seed, uint64_t i, size_t max_size)
{
	size_t len = h_size(seed, i, max_size);
	uint8_t *buf = rift_buf_alloc(rift_conn_ctx(conn), len);
	int rc;

	if (!buf)
		return RIFT_ENOMEM;
	h_fill(buf, len, seed, i);
	rc = rift_conn_send_buf(conn, buf, len);
	if (rc)
		rift_buf_free(rift_conn_ctx(conn), buf);
	return rc;
}

/*
 * The echo of a well-behaved server: when its own send is refused for a
 * full window, keep the message, stop receiving, and go on when WRITABLE
 * says the window opened.  The window only opens on the peer's acks, which
 * keep arriving while receiving is stopped.
 */
/* Sides with an echo pending, for h_teardown (conn users vary by test). */
static struct side *stalled[64];
static int n_stalled;

static void stalled_del(struct side *s)
{
	for (int i = 0; i < n_stalled; i++)
		if (stalled[i] == s) {
			stalled[i] = stalled[--n_stalled];
			return;
		}
}

static void echo_resume(rift_conn *conn, struct side *s)
{
	rift_msg *m = s->echo_pending;
	int rc;

	if (!m)
		return;
	rc = rift_conn_send(conn, rift_msg_data(m), rift_msg_len(m));
	if (rc == RIFT_EAGAIN)
		return; /* another WRITABLE follows */
	if (rc)
		FAIL("echo send failed: %s", rift_err_name(rc));
	rift_msg_release(m);
	s->echo_pending = NULL;
	stalled_del(s);
	CHECK_EQ(rift_conn_recv_start(conn), 0);
}

static void on_event(rift_conn *conn, const rift_event *ev)
{
	struct side *s = rift_conn_user(conn);

	if (!s)
		return;
	/* A standby path's events (port groups) are counted apart: what
	 * the tests read of the last event stays the data path's. */
	if (ev->standby) {
		snprintf(s->standby_device, sizeof(s->standby_device), "%s",
			 ev->device);
		if (ev->type == RIFT_EVENT_PATH_UP)
			s->path_up++;
		else if (ev->type == RIFT_EVENT_PATH_DOWN)
			s->standby_down++;
		return;
	}
	s->last_status = ev->status;
	snprintf(s->last_message, sizeof(s->last_message), "%s", ev->message);
	snprintf(s->last_local, sizeof(s->last_local), "%s", ev->local);
	if (ev->type != RIFT_EVENT_WRITABLE)
		snprintf(s->last_device, sizeof(s->last_device), "%s",
			 ev->device);
	switch (ev->type) {
	case RIFT_EVENT_CONNECTED:
		s->connected++;
		break;
	case RIFT_EVENT_ERROR:
		s->errors++;
		break;
	case RIFT_EVENT_DISCONNECTED:
		s->disconnected++;
		s->disconnected_us = h_now_us();
		break;
	case RIFT_EVENT_PATH_DOWN:
		s->path_down++;
		s->last_down_reason = ev->down_reason;
		break;
	case RIFT_EVENT_PATH_UP:
		break;
	case RIFT_EVENT_PATH_CHANGED:
		s->path_changed++;
		break;
	case RIFT_EVENT_FAILBACK:
		if (!s->failback++)
			snprintf(s->failback_message,
				 sizeof(s->failback_message), "%s",
				 ev->message);
		break;
	case RIFT_EVENT_WRITABLE:
		s->writable++;
		echo_resume(conn, s);
		break;
	case RIFT_EVENT_WRITTEN:
		break;
	}
}

static void on_recv(rift_conn *conn, rift_msg *msg)
{
	struct side *s = rift_conn_user(conn);
	size_t len = rift_msg_len(msg);
	const uint8_t *data = rift_msg_data(msg);

	if (!s)
		return;
	if (s->verify) {
		size_t want = h_size(s->seed, s->expect_index, s->max_size);
		uint8_t *expect = malloc(want ? want : 1);

		h_fill(expect, want, s->seed, s->expect_index);
		if (len != want || memcmp(expect, data, len) != 0)
			s->bad++;
		free(expect);
	}
	if (rift_msg_seq(msg) != s->recv_count + 1)
		s->bad++;
	s->expect_index++;
	s->recv_count++;
	s->recv_bytes += len;
	s->checksum = h_mix(s->checksum, data, len);
	if (s->echo) {
		int rc;

		if (s->echo_pending)
			FAIL("message delivered while receiving was stopped");
		rc = rift_conn_send(conn, data, len);
		if (rc == RIFT_EAGAIN) {
			s->echo_pending = rift_msg_retain(msg);
			s->echo_stalls++;
			CHECK(s->echo_pending != NULL);
			CHECK(n_stalled < 64);
			stalled[n_stalled++] = s;
			CHECK_EQ(rift_conn_recv_stop(conn), 0);
		} else if (rc) {
			FAIL("echo send failed: %s", rift_err_name(rc));
		}
	}
}

const rift_conn_callbacks h_callbacks = { .on_event = on_event,
					  .on_recv = on_recv };

rift_config h_config(void)
{
	rift_config cfg;

	rift_config_init(&cfg);
	cfg.connect_timeout_ms = 2000;
	cfg.retry_delay_ms = 10;
	cfg.keepalive_interval_ms = 200;
	cfg.keepalive_timeout_ms = 1000;
	cfg.session_grace_ms = 5000;
	if (strcmp(rt_cm(), "tcp") == 0)
		cfg.cm = RIFT_CM_TCP;
	return cfg;
}

rift_config h_config_many(uint32_t depth)
{
	rift_config cfg = h_config();

	cfg.sq_depth = cfg.rq_depth = depth;
	cfg.block_size[0] = 4096;
	cfg.connect_timeout_ms = 60000;
	cfg.keepalive_interval_ms = 5000;
	cfg.keepalive_timeout_ms = 60000;
	cfg.session_grace_ms = 60000;
	return cfg;
}

rift_ctx *h_ctx(const rift_config *override)
{
	rift_config cfg = override ? *override : h_config();
	rift_ctx *ctx = NULL;
	int rc = rift_ctx_create(&ctx, &cfg);

	if (rc)
		FAIL("rift_ctx_create: %s: %s", rift_err_name(rc),
		     rift_ctx_last_error(NULL));
	return ctx;
}

void h_accept_side(rift_listener *l, rift_conn *conn)
{
	struct side *s = rift_listener_user(l);

	if (s->conn)
		FAIL("unexpected second connection");
	s->conn = conn;
	s->connected++;
}

rift_listener *h_listen(rift_ctx *ctx, struct side *server)
{
	rift_listener *l = NULL;
	int rc = rift_listen(ctx, rt_url(0), &h_callbacks, server, h_accept_side, &l);

	if (rc)
		FAIL("rift_listen %s: %s: %s", rt_url(0), rift_err_name(rc),
		     rift_ctx_last_error(ctx));
	return l;
}

rift_conn *h_connect(rift_ctx *ctx, int port, struct side *client)
{
	rift_conn *c = NULL;
	int rc = rift_connect(ctx, rt_url(port), &h_callbacks, client, &c);

	if (rc)
		FAIL("rift_connect %s: %s: %s", rt_url(port), rift_err_name(rc),
		     rift_ctx_last_error(ctx));
	client->conn = c;
	return c;
}

bool h_wait(rift_ctx *ctx, const int *flag, int timeout_ms)
{
	uint64_t end = h_now_us() + (uint64_t)timeout_ms * 1000u;

	while (!*flag && h_now_us() < end)
		rift_ctx_run(ctx, 5);
	return *flag != 0;
}

bool h_wait2(rift_ctx *a, rift_ctx *b, const int *flag, int timeout_ms)
{
	uint64_t end = h_now_us() + (uint64_t)timeout_ms * 1000u;

	while (!*flag && h_now_us() < end) {
		rift_ctx_run(a, 2);
		rift_ctx_run(b, 2);
	}
	return *flag != 0;
}

bool h_wait_u64(rift_ctx *ctx, const uint64_t *v, uint64_t target,
		int timeout_ms)
{
	uint64_t end = h_now_us() + (uint64_t)timeout_ms * 1000u;

	while (*v < target && h_now_us() < end)
		rift_ctx_run(ctx, 5);
	return *v >= target;
}

static int closes_done, closes_wanted;
static void count_close(rift_conn *c)
{
	(void)c;
	closes_done++;
}
static void count_lclose(rift_listener *l)
{
	(void)l;
	closes_done++;
}

void h_teardown(rift_ctx *ctx, rift_listener *l, rift_conn **conns, int n)
{
	int rc;

	h_close_all(ctx, l, conns, n);
	rc = rift_ctx_destroy(ctx);
	if (rc)
		FAIL("leak check: rift_ctx_destroy: %s: %s", rift_err_name(rc),
		     rift_ctx_last_error(ctx));
	CHECK_EQ(closes_done, closes_wanted);
}

void h_close_all(rift_ctx *ctx, rift_listener *l, rift_conn **conns, int n)
{
	int want = 0;

	closes_done = 0;
	for (int i = 0; i < n_stalled; i++) {
		rift_msg_release(stalled[i]->echo_pending);
		stalled[i]->echo_pending = NULL;
	}
	n_stalled = 0;
	for (int i = 0; i < n; i++)
		if (conns[i]) {

			rift_conn_close(conns[i], count_close);
			want++;
		}
	if (l) {
		rift_listener_close(l, count_lclose);
		want++;
	}
	for (int i = 0; i < 200 && closes_done < want; i++)
		rift_ctx_run(ctx, 5);
	/* A close whose peer does not answer (its loop is not running, its
	 * process is gone) lingers up to linger_ms: rift_ctx_destroy aborts
	 * it and runs its callback. */
	if (closes_done < want)
		printf("teardown: %d close(s) still lingering after 1 s: "
		       "rift_ctx_destroy aborts them\n",
		       want - closes_done);
	closes_wanted = want;
}

bool h_close_wait(rift_ctx *ctx, int ms)
{
	uint64_t end = h_now_us() + (uint64_t)ms * 1000u;

	while (closes_done < closes_wanted && h_now_us() < end)
		rift_ctx_run(ctx, 5);
	return closes_done >= closes_wanted;
}

void h_teardown2(rift_ctx *a, rift_listener *la, rift_conn **ca, int na,
		 rift_ctx *b, rift_listener *lb, rift_conn **cb, int nb)
{
	int want = 0;

	closes_done = 0;
	for (int i = 0; i < na; i++)
		if (ca[i]) {
			rift_conn_close(ca[i], count_close);
			want++;
		}
	for (int i = 0; i < nb; i++)
		if (cb[i]) {
			rift_conn_close(cb[i], count_close);
			want++;
		}
	for (int i = 0; i < 1000 && closes_done < want; i++) {
		rift_ctx_run(a, 1);
		rift_ctx_run(b, 1);
	}
	CHECK_EQ(closes_done, want); /* both loops ran: in order */
	h_teardown(a, la, NULL, 0);
	h_teardown(b, lb, NULL, 0);
}

void h_connected(rift_ctx *ctx, struct side *s)
{
	if (!h_wait(ctx, &s->connected, 10000))
		FAIL("not connected after 10 s: errors %d, last event \"%s\", "
		     "last error \"%s\"",
		     s->errors, s->last_message,
		     s->conn ? rift_conn_last_error(s->conn) : "(no conn)");
}

const char *h_tool_path(const char *name)
{
	static char path[4096];
	char exe[4096];
	ssize_t n;
	char *slash;

	snprintf(path, sizeof(path), "build/bin/%s", name);
	if (access(path, X_OK) == 0)
		return path;
	/* build/<flavour>/rift-tests -> build/bin/NAME */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/../bin/%s", exe, name);
			if (access(path, X_OK) == 0)
				return path;
		}
	}
	snprintf(path, sizeof(path),
		 "build/bin/%s is missing: run `make all` first", name);
	SKIP(path);
	return NULL;
}

int h_silent_port(int fds[2])
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fds[0] >= 0);
	CHECK_EQ(bind(fds[0], (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(listen(fds[0], 0), 0);
	CHECK_EQ(getsockname(fds[0], (struct sockaddr *)&sa, &len), 0);
	/* One connection fills a backlog of 0; later SYNs are dropped. */
	fds[1] = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fds[1] >= 0);
	CHECK_EQ(connect(fds[1], (struct sockaddr *)&sa, sizeof(sa)), 0);
	return ntohs(sa.sin_port);
}

int h_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	CHECK(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}
