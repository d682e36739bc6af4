/*
 * rift-demo - a server and a client in one process, each on its own thread
 * and context, over the best transport the machine has (auto://).  Prints
 * which transport was used and why, round-trip latency percentiles and
 * streaming bandwidth.  Uses only rift.h.
 *
 *   rift-demo [-n ROUND_TRIPS] [-s SIZE] [-b MIB]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rift.h"

#define BIG 65536

static int server_port;
static volatile int server_ready;
static rift_ctx *server_ctx;
static rift_conn *server_conn;
static uint64_t server_bytes;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static const char *fail_msg = "";

static void die(const char *what, int rc, rift_ctx *ctx)
{
	fprintf(stderr, "rift-demo: %s: %s%s%s%s\n", what, rift_strerror(rc),
		*fail_msg ? " (" : "", fail_msg, *fail_msg ? ")" : "");
	if (ctx && *rift_ctx_last_error(ctx))
		fprintf(stderr, "rift-demo: last error: %s\n",
			rift_ctx_last_error(ctx));
	exit(1);
}

/* Server: echo small messages; count big ones; answer "F" with the count. */
static void srv_recv(rift_conn *conn, rift_msg *msg)
{
	size_t len = rift_msg_len(msg);
	int rc = 0;

	if (len == 1 && *(const char *)rift_msg_data(msg) == 'F')
		rc = rift_conn_send(conn, &server_bytes, sizeof(server_bytes));
	else if (len >= BIG)
		server_bytes += len;
	else
		rc = rift_conn_send(conn, rift_msg_data(msg), len);
	if (rc)
		fprintf(stderr, "rift-demo: server send: %s\n", rift_strerror(rc));
}

static void srv_event(rift_conn *conn, const rift_event *ev)
{
	(void)conn;
	if (ev->type == RIFT_EVENT_DISCONNECTED)
		rift_ctx_stop(server_ctx);
}

static void srv_accept(rift_listener *l, rift_conn *conn)
{
	(void)l;
	server_conn = conn;
}

static void *server_main(void *arg)
{
	static const rift_conn_callbacks cbs = { .on_event = srv_event,
						 .on_recv = srv_recv };
	rift_listener *l;
	int rc;

	(void)arg;
	rc = rift_ctx_create(&server_ctx, NULL);
	if (rc)
		die("server context", rc, NULL);
	rc = rift_listen(server_ctx, "auto://127.0.0.1:0", &cbs, NULL,
			 srv_accept, &l);
	if (rc)
		die("listen", rc, server_ctx);
	server_port = rift_listener_port(l);
	__atomic_store_n(&server_ready, 1, __ATOMIC_RELEASE);
	rift_ctx_run(server_ctx, -1);
	if (server_conn)
		rift_conn_close(server_conn, NULL);
	rift_listener_close(l, NULL);
	rift_ctx_run(server_ctx, 50);
	rc = rift_ctx_destroy(server_ctx);
	if (rc)
		die("server destroy", rc, server_ctx);
	return NULL;
}

/* Client state. */
static int connected, failed, got;
static uint64_t got_value;
static char fail_buf[256];

static void cli_event(rift_conn *conn, const rift_event *ev)
{
	(void)conn;
	if (ev->type == RIFT_EVENT_CONNECTED)
		connected = 1;
	else if (ev->type == RIFT_EVENT_ERROR ||
		 ev->type == RIFT_EVENT_DISCONNECTED) {
		failed = 1;
		snprintf(fail_buf, sizeof(fail_buf), "%s: %s",
			 rift_event_name(ev->type), ev->message);
		fail_msg = fail_buf;
	}
}

static void cli_recv(rift_conn *conn, rift_msg *msg)
{
	(void)conn;
	if (rift_msg_len(msg) == sizeof(got_value))
		memcpy(&got_value, rift_msg_data(msg), sizeof(got_value));
	got++;
}

static void wait_for(rift_ctx *ctx, int *flag)
{
	double end = now_us() + 10e6;

	while (!*flag && !failed && now_us() < end)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 100);
	if (!*flag) {
		fprintf(stderr, "rift-demo: %s\n",
			failed ? fail_msg : "timed out");
		exit(1);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const rift_conn_callbacks cbs = { .on_event = cli_event,
						 .on_recv = cli_recv };
	int iters = 10000, size = 64, mib = 1024, opt, rc;
	rift_ctx *ctx;
	rift_conn *c;
	pthread_t th;
	char url[64], *payload;
	double *lat, t0, secs;
	uint64_t total, sent = 0;
	rift_fallback_reason why;

	while ((opt = getopt(argc, argv, "n:s:b:")) != -1) {
		switch (opt) {
		case 'n':
			iters = atoi(optarg);
			break;
		case 's':
			size = atoi(optarg);
			break;
		case 'b':
			mib = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: rift-demo [-n ROUND_TRIPS] "
					"[-s SIZE (< 65536)] [-b MIB]\n");
			return 2;
		}
	}
	if (iters < 1 || size < 0 || size >= BIG || mib < 1) {
		fprintf(stderr, "rift-demo: -n >= 1, 0 <= -s < 65536, -b >= 1\n");
		return 2;
	}
	pthread_create(&th, NULL, server_main, NULL);
	while (!__atomic_load_n(&server_ready, __ATOMIC_ACQUIRE))
		usleep(1000);

	rc = rift_ctx_create(&ctx, NULL);
	if (rc)
		die("client context", rc, NULL);
	snprintf(url, sizeof(url), "auto://127.0.0.1:%d", server_port);
	rc = rift_connect(ctx, url, &cbs, NULL, &c);
	if (rc)
		die("connect", rc, ctx);
	wait_for(ctx, &connected);

	why = rift_conn_fallback_reason(c);
	printf("rift %s demo: server and client in one process, %s\n",
	       rift_version_string(), url);
	if (why == RIFT_FALLBACK_NONE)
		printf("transport:  %s\n",
		       rift_transport_name(rift_conn_transport(c)));
	else
		printf("transport:  %s (auto:// fell back: %s)\n",
		       rift_transport_name(rift_conn_transport(c)),
		       rift_fallback_reason_str(why));

	/* Latency: one message in flight, echoed back. */
	payload = calloc(1, BIG);
	lat = malloc(sizeof(*lat) * (size_t)iters);
	for (int i = -iters / 10; i < iters; i++) {
		int want = got + 1;

		t0 = now_us();
		rc = rift_conn_send(c, payload, (size_t)size);
		if (rc)
			die("send", rc, ctx);
		while (got < want && !failed)
			rift_ctx_progress(ctx);
		if (i >= 0)
			lat[i] = now_us() - t0;
	}
	qsort(lat, (size_t)iters, sizeof(*lat), cmp_double);
	printf("latency:    %d B round trip, %d iterations\n", size, iters);
	printf("            p50 %.1f us  p90 %.1f us  p99 %.1f us  "
	       "p99.9 %.1f us  max %.1f us\n",
	       lat[iters / 2], lat[iters * 9 / 10], lat[iters * 99 / 100],
	       lat[(int)((double)iters * 0.999)], lat[iters - 1]);

	/* Bandwidth: stream 64 KiB messages zero-copy, then ask for the count. */
	total = (uint64_t)mib << 20;
	t0 = now_us();
	while (sent < total && !failed) {
		uint8_t *b = rift_buf_alloc(ctx, BIG);

		if (!b)
			die("rift_buf_alloc", RIFT_ENOMEM, ctx);
		while ((rc = rift_conn_send_buf(c, b, BIG)) == RIFT_EAGAIN)
			rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 100);
		if (rc)
			die("send", rc, ctx);
		sent += BIG;
		rift_ctx_progress(ctx);
	}
	got = 0;
	while ((rc = rift_conn_send(c, "F", 1)) == RIFT_EAGAIN)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 100);
	if (rc)
		die("send", rc, ctx);
	wait_for(ctx, &got);
	secs = (now_us() - t0) / 1e6;
	if (got_value != sent) {
		fprintf(stderr, "rift-demo: server counted %llu of %llu bytes\n",
			(unsigned long long)got_value, (unsigned long long)sent);
		return 1;
	}
	printf("bandwidth:  64 KiB messages, %d MiB: %.2f GB/s, %.0f msg/s\n",
	       mib, (double)sent / secs / 1e9, (double)sent / BIG / secs);

	rift_conn_close(c, NULL);
	rift_ctx_run(ctx, 50);
	pthread_join(th, NULL);
	rc = rift_ctx_destroy(ctx);
	if (rc)
		die("client destroy", rc, ctx);
	free(lat);
	free(payload);
	return 0;
}
