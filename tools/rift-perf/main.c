/*
 * rift-perf - rift's benchmark, speaking perftest's language.  Uses only
 * rift.h, like any application.
 *
 *   rift-perf [options]              server: serve one client, then exit
 *   rift-perf -S [options] [ADDR]    server listening on ADDR only
 *   rift-perf [options] HOST         client of the server on HOST
 *   rift-perf --loopback [options] [ADDR]
 *                                    server and client in one process, two
 *                                    threads with a context each, both on
 *                                    ADDR (default 127.0.0.1)
 *
 * Tests: lat (ping-pong: the server echoes, each sample is one round trip
 * as the application sees it) and bw (one-way streaming with zero-copy
 * buffers; the server counts).  docs/rift-perf.md has every option, the
 * output columns and the JSON schema.
 *
 * The client drives everything over a control connection: HELLO carries the
 * test, the server answers with a session token that the data connections
 * present in a JOIN, and each message size is one BEGIN .. END/DONE step,
 * DONE carrying what the server received and its CPU time.  Data
 * connections carry nothing but the benchmark's messages after the JOIN, so
 * any size, even 2 bytes, is measured as it is.
 *
 * The loop is an external one (poll on rift_ctx_fd, then
 * rift_ctx_progress), following the polling mode of the configuration, so
 * the bandwidth test can send again as soon as acknowledgements arrive.
 *
 * With --metrics-port, GET /metrics and /info are served over HTTP
 * (metrics_http.h): libmicrohttpd's thread asks, each context's loop
 * renders its own context after a progress round.
 *
 * With --json, stdout gets exactly one JSON object whatever happens: the
 * client's (client_report) or the server's when they ran, else one for
 * the failure that stopped rift-perf before (main), from the first
 * failure reported with errf.
 *
 * The code is in several files; perf.h says which holds what.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

volatile sig_atomic_t interrupted;
int stop_all; /* loopback: the client is done (atomic) */

/* The failure behind the exit status, for --json when no object that
 * carries its own error (client, server) was printed: the first one. */
static struct {
	pthread_mutex_t lock;
	bool set;
	int rc; /* RIFT_E* or 0 */
	char msg[768];
} failure = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void fail_vrecord(int rc, const char *fmt, va_list ap)
{
	pthread_mutex_lock(&failure.lock);
	if (!failure.set) {
		vsnprintf(failure.msg, sizeof(failure.msg), fmt, ap);
		failure.rc = rc;
		failure.set = true;
	}
	pthread_mutex_unlock(&failure.lock);
}

__attribute__((format(printf, 2, 3))) void fail_record(int rc, const char *fmt,
						       ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail_vrecord(rc, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2))) void notef(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void verrf(int rc, const char *fmt, va_list ap)
{
	va_list cp;

	va_copy(cp, ap);
	fail_vrecord(rc, fmt, cp);
	va_end(cp);
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

__attribute__((format(printf, 1, 2))) void errf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verrf(0, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3))) void errf_rc(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verrf(rc, fmt, ap);
	va_end(ap);
}

/* --metrics-port: serve the sides this mode runs; 0 or EXIT_FAIL. */
static int metrics_start(const struct opts *o, struct metrics_http *mh)
{
	static const char *const sides[2] = {"server", "client"};
	char err[512];
	bool v6 = strchr(o->metrics_addr, ':') && o->metrics_addr[0] != '[';

	if (metrics_http_start(mh, PROG, o->metrics_addr, o->metrics_port,
			       o->mode == MODE_CLIENT ? sides + 1 : sides,
			       o->mode == MODE_LOOPBACK ? 2 : 1, err,
			       sizeof(err))) {
		errf("--metrics-port %d: %s", o->metrics_port, err);
		return EXIT_FAIL;
	}
	fprintf(stderr,
		PROG ": metrics on http://%s%s%s:%d/metrics and /info\n",
		v6 ? "[" : "", o->metrics_addr, v6 ? "]" : "", mh->port);
	return 0;
}

static int run(const struct opts *o, struct metrics_http *mh)
{
	struct client *cl = NULL;
	struct server srv;
	sigset_t stop, old;
	pthread_t th;
	int rc;

	if (o->mode == MODE_CLIENT) {
		rc = client_run(o, o->port, metrics_http_src(mh, 0), &cl);
		return client_report(cl, rc);
	}

	memset(&srv, 0, sizeof(srv));
	srv.o = o;
	srv.msrc = metrics_http_src(mh, 0);
	if (o->mode == MODE_SERVER) {
		srv.who = PROG;
		rc = server_run(&srv);
		if (o->json)
			print_server_json(&srv, rc);
		return rc;
	}

	/* Loopback: the server on a thread of its own, the client here. */
	srv.who = PROG " server";
	srv.loopback = true;
	/* The server thread is born with SIGINT and SIGTERM blocked, so they
	 * reach the client thread and wake its poll. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	rc = pthread_create(&th, NULL, server_thread, &srv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		errf("pthread_create: %s", strerror(rc));
		return EXIT_FAIL;
	}
	while (!__atomic_load_n(&srv.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (__atomic_load_n(&srv.ready, __ATOMIC_ACQUIRE) < 0) {
		pthread_join(th, NULL);
		return EXIT_FAIL;
	}
	rc = client_run(o, srv.port, metrics_http_src(mh, 1), &cl);
	__atomic_store_n(&stop_all, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	/* The report waits for the server: its failure is the run's too. */
	if (!rc && srv.failed) {
		rc = srv.failed;
		if (cl)
			cl_fail_rc(cl, srv.err_rc, "server: %s", srv.err);
	}
	return client_report(cl, rc);
}

/* --json: the object of a failure nothing else has printed. */
static void json_failure(const struct opts *o)
{
	if (o->json && !json_printed)
		print_error_json(failure.set ? failure.msg : "failed",
				 failure.rc);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct metrics_http mh;
	struct sigaction sa;
	int rc;

	rc = parse_args(argc, argv, &o);
	if (rc) {
		json_failure(&o); /* o.json is known even when parsing failed */
		return rc;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&mh, 0, sizeof(mh));
	if (o.metrics_port >= 0 && (rc = metrics_start(&o, &mh))) {
		json_failure(&o);
		return rc;
	}
	rc = run(&o, &mh);
	metrics_http_stop(&mh);
	/* Every failure gives one JSON object: the client's and the
	 * server's carry their error; any other is printed here. */
	if (rc)
		json_failure(&o);
	return rc;
}
