/*
 * rift-perf's client side: the control connection (HELLO), the data
 * connections (JOIN), waiting on the loop for the server's answers, and
 * the run over the message sizes; measure.c has the traffic of a step.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "perf.h"

static void cl_vfail(struct client *cl, int rc, const char *fmt, va_list ap)
{
	if (cl->failed)
		return; /* the first failure is the one to report */
	vsnprintf(cl->err, sizeof(cl->err), fmt, ap);
	cl->err_rc = rc;
	cl->failed = true;
}

__attribute__((format(printf, 2, 3))) void cl_fail(struct client *cl,
						   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cl_vfail(cl, 0, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 3, 4))) void cl_fail_rc(struct client *cl, int rc,
						      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cl_vfail(cl, rc, fmt, ap);
	va_end(ap);
}

static void cl_closed(rift_conn *conn)
{
	struct cconn *c = rift_conn_user(conn);

	/* write/read: the session is over, and with it the exports and
	 * the operations: the region may go */
	if (c->idx >= 0)
		rma_conn_release(c);
	c->cl->open--;
}

void progress_clear(struct client *cl)
{
	if (cl->progress_shown) {
		fputs("\r\033[K", stderr);
		cl->progress_shown = false;
	}
}

/* A progress line on a terminal, for runs longer than a second. */
static void progress_tick(struct client *cl)
{
	uint64_t now, done = 0;
	const struct opts *o = cl->o;

	if (!cl->tty || !cl->in_step)
		return;
	now = now_ns();
	if (now < cl->next_progress)
		return;
	cl->next_progress = now + 250000000u;
	if (now - cl->run_start < 1000000000u)
		return;
	for (uint32_t i = 0; i < cl->n_data; i++)
		done += o->test == TEST_LAT ? cl->data[i].recvd
					    : cl->data[i].sent;
	fprintf(stderr, "\r\033[K" PROG ": %s %s %" PRIu64 " B", op_label(o),
		o->test == TEST_LAT ? "lat" : "bw", cl->size);
	if (o->n_sizes > 1)
		fprintf(stderr, " (size %d of %d)", cl->step_no + 1,
			o->n_sizes);
	if (o->duration > 0)
		fprintf(stderr, ": %.1f of %.1f s, %" PRIu64 " messages",
			(double)(now - cl->t0) / 1e9, o->duration, done);
	else
		fprintf(stderr, ": %" PRIu64 " of %" PRIu64 " messages", done,
			cl->total * cl->n_data);
	cl->progress_shown = true;
}

/*
 * Run the loop until done(cl), calling work(cl) before each round.
 * Returns 0, -1 on failure (cl->err says why), -2 when interrupted.
 */
int cl_wait(struct client *cl, bool (*done)(struct client *),
	    void (*work)(struct client *), const char *what, int timeout_ms)
{
	uint64_t end = timeout_ms > 0
			       ? now_ns() + (uint64_t)timeout_ms * 1000000u
			       : UINT64_MAX;
	uint32_t idle = 0;
	bool look = true;
	int rc;

	for (;;) {
		if (interrupted)
			return -2;
		if (cl->failed)
			return -1;
		/* What done() looks at changes only in callbacks, that is in
		 * a round that did work: a busy round that found nothing
		 * costs little more than rift_ctx_progress, as perftest's
		 * costs one ibv_poll_cq. */
		if (look) {
			if (done(cl))
				return 0;
			if (end != UINT64_MAX && now_ns() > end) {
				cl_fail(cl, "%s: no answer from the server within %d s",
					what, timeout_ms / 1000);
				return -1;
			}
			progress_tick(cl);
		}
		if (work)
			work(cl);
		rc = loop_once(&cl->lp, cl->spin ? 0 : TICK_MS);
		if (rc < 0) {
			cl_fail_rc(cl, rc, "rift_ctx_progress: %s",
				   rift_strerror(rc));
			return -1;
		}
		look = rc > 0 || work || end != UINT64_MAX || ++idle % 4096 == 0;
	}
}

static bool got_reply(struct client *cl)
{
	return cl->have_reply;
}

static bool ctl_connected(struct client *cl)
{
	return cl->ctl.connected;
}

static bool all_connected(struct client *cl)
{
	for (uint32_t i = 0; i < cl->n_data; i++)
		if (!cl->data[i].connected)
			return false;
	return true;
}

static bool all_joined(struct client *cl)
{
	for (uint32_t i = 0; i < cl->n_data; i++)
		if (!cl->data[i].joined)
			return false;
	return true;
}
/* Send a control message and wait for the answer of type want. */
int cl_ask(struct client *cl, uint32_t type, const uint64_t *v, int nv,
	   uint32_t want, const char *what)
{
	int rc;

	cl->have_reply = false;
	rc = ctl_send(cl->ctl.conn, type, v, nv, NULL);
	if (rc) {
		cl_fail_rc(cl, rc, "%s: %s (%s)", what, rift_strerror(rc),
			   rift_conn_last_error(cl->ctl.conn));
		return -1;
	}
	rc = cl_wait(cl, got_reply, NULL, what, REPLY_TIMEOUT_MS);
	if (rc)
		return rc;
	if (cl->reply.type != want) {
		cl_fail(cl, "%s: unexpected answer type %u", what,
			cl->reply.type);
		return -1;
	}
	return 0;
}

static int cl_connect(struct client *cl, struct cconn *c)
{
	static const rift_conn_callbacks cbs = {
		.on_event = cl_on_event,
		.on_recv = cl_on_recv,
	};
	int rc;

	c->cl = cl;
	rc = rift_connect(cl->ctx, cl->url, &cbs, c, &c->conn);
	if (rc) {
		cl_fail_rc(cl, rc, "cannot connect to %s: %s", cl->url,
			   *rift_ctx_last_error(cl->ctx)
				   ? rift_ctx_last_error(cl->ctx)
				   : rift_strerror(rc));
		c->conn = NULL;
		return -1;
	}
	cl->open++;
	return 0;
}

/* ---- the client run ---- */

/* Say why the run ended, once: interrupted, or the failure. */
static int cl_end_status(struct client *cl, int ret)
{
	if (interrupted) {
		notef("interrupted after %d of %d size(s)", cl->n_res,
		      cl->o->n_sizes);
		return EXIT_INTR;
	}
	if (cl->failed) {
		errf_rc(cl->err_rc, "%s", cl->err);
		return EXIT_FAIL;
	}
	return ret;
}

int client_run(const struct opts *o, int port, struct metrics_src *msrc,
	       struct client **out)
{
	struct client *cl = calloc(1, sizeof(*cl));
	uint64_t max_size = 0, v[CTL_VALUES], end;
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tok_len;
	int rc, ret = 0, step_rc = 0;
	char why[200];

	*out = cl;
	if (!cl) {
		errf("out of memory");
		return EXIT_FAIL;
	}
	cl->o = o;
	cl->ctl.idx = -1;
	cl->tty = isatty(STDERR_FILENO);
	cl->qd = o->qd ? o->qd : 1;
	for (int i = 0; i < o->n_sizes; i++)
		if (o->sizes[i] > max_size)
			max_size = o->sizes[i];
	cl->data = calloc(o->conns, sizeof(*cl->data));
	cl->payload =
		calloc(1, o->test == TEST_LAT && o->op == OP_SEND && max_size
				  ? max_size
				  : 1);
	if (!cl->data || !cl->payload) {
		cl_fail_rc(cl, RIFT_ENOMEM, "out of memory");
		goto fail_early;
	}
	for (uint32_t i = 0; i < o->conns; i++) {
		cl->data[i].idx = (int)i;
		cl->data[i].cl = cl;
		if (o->test == TEST_LAT) {
			cl->data[i].ts = calloc(cl->qd, sizeof(uint64_t));
			if (!cl->data[i].ts) {
				cl_fail_rc(cl, RIFT_ENOMEM, "out of memory");
				goto fail_early;
			}
		}
	}
	if (o->test == TEST_LAT && o->duration <= 0 &&
	    !(cl->lat.v = malloc(o->iters * o->conns * sizeof(uint64_t)))) {
		cl_fail_rc(cl, RIFT_ENOMEM,
			   "out of memory for %" PRIu64 " samples",
			   o->iters * o->conns);
		goto fail_early;
	}
	cl->lat.cap = o->duration <= 0 && o->test == TEST_LAT
			      ? o->iters * o->conns
			      : 0;

	rc = rift_ctx_create(&cl->ctx, &o->cfg);
	if (rc) {
		cl_fail_rc(cl, rc, "rift_ctx_create: %s",
			   rift_ctx_last_error(NULL));
		goto fail_early;
	}
	loop_init(&cl->lp, cl->ctx, &o->cfg, msrc);
	url_build(cl->url, sizeof(cl->url), o->transport, o->host, port);

	/* Control connection, then HELLO: the server learns the test. */
	if (cl_connect(cl, &cl->ctl))
		goto close;
	rc = cl_wait(cl, ctl_connected, NULL, "connect", 0);
	if (rc)
		goto close;
	v[0] = PROTO_VERSION;
	v[1] = (uint64_t)o->test;
	v[2] = o->conns;
	v[3] = o->qd;
	v[4] = max_size;
	v[5] = (uint64_t)o->op;
	v[6] = o->rma_len;
	v[7] = o->notify;
	if (cl_ask(cl, CTL_HELLO, v, 8, CTL_HELLO_OK, "HELLO"))
		goto close;
	cl->token = cl->reply.v[0];

	/* Data connections, each presenting the session token. */
	for (uint32_t i = 0; i < o->conns; i++) {
		if (cl_connect(cl, &cl->data[i]))
			goto close;
		cl->n_data++;
	}
	if (cl_wait(cl, all_connected, NULL, "connect", 0))
		goto close;
	for (uint32_t i = 0; i < cl->n_data; i++) {
		/* write/read: a region to read into or write from; write
		 * lat: exported, for the server to answer into */
		tok_len = sizeof(tok);
		if (o->op == OP_SEND)
			tok_len = 0;
		else if (rma_conn_setup(&cl->data[i], tok, &tok_len))
			goto close;
		v[0] = cl->token;
		v[1] = i;
		rc = ctl_send_blob(cl->data[i].conn, CTL_JOIN, v, 2, tok,
				   tok_len);
		if (rc) {
			cl_fail_rc(cl, rc, "JOIN: %s", rift_strerror(rc));
			goto close;
		}
	}
	if (cl_wait(cl, all_joined, NULL, "JOIN", REPLY_TIMEOUT_MS))
		goto close;
	cl->transport = rift_conn_transport(cl->data[0].conn);
	cl->fallback = rift_conn_fallback_reason(cl->data[0].conn);
	for (uint32_t i = 1; i < cl->n_data; i++)
		if (rift_conn_transport(cl->data[i].conn) != cl->transport)
			notef("note: data connection %u runs over %s, "
			      "connection 0 over %s",
			      i,
			      rift_transport_name(
				      rift_conn_transport(cl->data[i].conn)),
			      rift_transport_name(cl->transport));
	if (o->json) {
		transport_why(cl, why, sizeof(why));
		notef("transport %s", why);
	} else {
		print_header(cl);
	}

	cl->run_start = now_ns();
	for (cl->step_no = 0; cl->step_no < o->n_sizes; cl->step_no++) {
		step_rc =
			cl_step(cl, o->sizes[cl->step_no], &cl->res[cl->n_res]);
		if (step_rc)
			break;
		if (!o->json)
			print_row(cl, &cl->res[cl->n_res]);
		cl->n_res++;
	}
	if (cl->n_data && cl->data[0].conn) {
		rift_path_info pi[16];
		int n = rift_conn_paths(cl->data[0].conn, pi, 16);

		for (int i = 0; i < n && i < 16; i++) {
			cl->standby_paths +=
				pi[i].state == RIFT_PATH_STATE_STANDBY;
			cl->active_paths +=
				pi[i].state == RIFT_PATH_STATE_ACTIVE;
		}
	}
	if (!o->json && !step_rc && cl->standby_paths)
		printf(" port group: each connection's data path and %u "
		       "standby path(s), joined ahead\n",
		       cl->standby_paths);
	if (!o->json && !step_rc && cl->active_paths > 1)
		printf(" port group: each connection's data on %u paths at "
		       "once (active-active)\n",
		       cl->active_paths);
	if (!o->json && !step_rc)
		print_rule();
	check_stable(cl);
	if (!step_rc && o->plot && !plot_svg(cl) && !o->json)
		printf(" plot: %s\n", o->plot);

close:
	progress_clear(cl);
	ret = cl_end_status(cl, ret);
	/* Orderly end: the server sees DISCONNECTED and finishes the session.
	 */
	for (uint32_t i = 0; i < cl->n_data; i++)
		if (cl->data[i].conn)
			rift_conn_close(cl->data[i].conn, cl_closed);
	if (cl->ctl.conn)
		rift_conn_close(cl->ctl.conn, cl_closed);
	end = now_ns() + (uint64_t)CLOSE_TIMEOUT_MS * 1000000u;
	while (cl->open > 0 && now_ns() < end)
		if (loop_once(&cl->lp, 10) < 0)
			break;
	loop_fini(&cl->lp);
	rc = rift_ctx_destroy(cl->ctx);
	if (rc) {
		errf_rc(rc, "rift_ctx_destroy: %s",
			rift_ctx_last_error(cl->ctx));
		cl_fail_rc(cl, rc, "rift_ctx_destroy: %s",
			   rift_ctx_last_error(cl->ctx));
		ret = EXIT_FAIL;
	}
	return ret;

fail_early:
	return cl_end_status(cl, ret);
}

/* --json's object, then the client is freed; returns status. */
int client_report(struct client *cl, int status)
{
	if (!cl)
		return status;
	if (cl->o->json)
		print_json(cl, status == EXIT_INTR);
	if (cl->data)
		for (uint32_t i = 0; i < cl->o->conns; i++) {
			struct cconn *c = &cl->data[i];

			free(c->ts);
			free(c->ops);
			if (!c->mem) /* else rift still has it: leave it */
				free(c->buf);
		}
	free(cl->data);
	free(cl->payload);
	free(cl->lat.v);
	free(cl);
	return status;
}
