/*
 * conn.c - a connection of rift-kv's client tools.  See conn.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "reply.h"

static void down(struct kvc *k, const char *why)
{
	if (k->state != KVC_DOWN)
		snprintf(k->err, sizeof(k->err), "%s", why);
	k->state = KVC_DOWN;
}

static void on_event_k(struct kvc *k, const rift_event *ev)
{
	switch (ev->type) {
	case RIFT_EVENT_CONNECTED:
		k->state = KVC_UP;
		break;
	case RIFT_EVENT_WRITABLE:
		k->blocked = 0;
		kvc_flush(k);
		break;
	case RIFT_EVENT_ERROR:
	case RIFT_EVENT_DISCONNECTED:
		down(k, ev->message[0] ? ev->message
		       : ev->type == RIFT_EVENT_ERROR ? rift_strerror(ev->status)
						       : "the server closed the connection");
		break;
	default:
		break; /* path changes: rift carries the session on */
	}
}

static void on_event(rift_conn *conn, const rift_event *ev)
{
	on_event_k(rift_conn_user(conn), ev);
}

static void on_stream_event(rift_stream *st, const rift_event *ev)
{
	on_event_k(rift_stream_user(st), ev);
}

/* Bytes of replies arrived (borrowed): keep them. */
static void take_in(struct kvc *k, const void *data, size_t n)
{
	if (n > k->icap - k->ilen) {
		size_t cap = k->icap ? k->icap : 4096;
		char *p;

		while (cap - k->ilen < n)
			cap *= 2;
		p = realloc(k->in, cap);
		if (!p) {
			down(k, "out of memory");
			return;
		}
		k->in = p;
		k->icap = cap;
	}
	memcpy(k->in + k->ilen, data, n);
	k->ilen += n;
	if (k->on_data)
		k->on_data(k);
}

static void on_recv(rift_conn *conn, rift_msg *m)
{
	take_in(rift_conn_user(conn), rift_msg_data(m), rift_msg_len(m));
}

static void on_read(rift_stream *st, const void *data, size_t n)
{
	take_in(rift_stream_user(st), data, n);
}

int kvc_open(struct kvc *k, rift_ctx *ctx, const char *url)
{
	static const rift_conn_callbacks cbs = { .on_event = on_event,
						 .on_recv = on_recv };
	static const rift_stream_callbacks scbs = {
		.on_event = on_stream_event, .on_read = on_read
	};
	int rc;

	k->state = KVC_CONNECTING;
	k->msg_max = KVC_MSG_MAX;
	if (strncmp(url, "valkey-rdma://", 14) == 0)
		rc = rift_stream_connect(ctx, url, &scbs, k, &k->stream);
	else
		rc = rift_connect(ctx, url, &cbs, k, &k->conn);
	if (rc) {
		snprintf(k->err, sizeof(k->err), "%s", rift_ctx_last_error(ctx));
		k->state = KVC_DOWN;
		k->conn = NULL;
		return -1;
	}
	return 0;
}

static long long ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000LL +
	       (now.tv_nsec - t0->tv_nsec) / 1000000;
}

int kvc_wait_up(rift_ctx *ctx, struct kvc *k, int timeout_ms)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (k->state == KVC_CONNECTING) {
		if (ms_since(&t0) >= timeout_ms)
			down(k, "timed out connecting");
		else
			rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 100);
	}
	return k->state == KVC_UP ? 0 : -1;
}

int kvc_command(struct kvc *k, size_t argc, const struct kv_resp_arg *argv)
{
	size_t mark = k->out.len;
	int rc = kv_resp_add_array(&k->out, argc);

	for (size_t i = 0; i < argc && !rc; i++)
		rc = kv_resp_add_bulk(&k->out, argv[i].ptr, argv[i].len);
	if (rc)
		k->out.len = mark; /* all of it or nothing */
	return rc;
}

int kvc_flush(struct kvc *k)
{
	const char *src = k->lent ? k->lent : k->out.buf;
	size_t len = k->lent ? k->lent_len : k->out.len;

	while (!k->blocked && k->state != KVC_DOWN && k->opos < len) {
		size_t n = len - k->opos;
		int rc;

		if (k->stream) {
			/* Takes what the server's buffer has room for. */
			rc = rift_stream_write(k->stream, src + k->opos, n);
			if (rc > 0) {
				k->opos += (size_t)rc;
				k->blocked = k->opos < len;
				continue;
			}
		} else {
			if (n > k->msg_max)
				n = k->msg_max;
			rc = rift_conn_send(k->conn, src + k->opos, n);
		}
		if (rc == RIFT_EAGAIN) {
			k->blocked = 1;
			return 0;
		}
		if (rc == RIFT_EMSGSIZE && k->msg_max > 4096) {
			k->msg_max /= 2;
			continue;
		}
		if (rc) {
			down(k, rift_strerror(rc));
			return -1;
		}
		k->opos += n;
	}
	if (k->state == KVC_DOWN)
		return -1;
	if (k->opos == len) {
		k->opos = k->out.len = 0;
		k->lent = NULL;
	}
	return 0;
}

int kvc_send_lent(struct kvc *k, const char *buf, size_t len)
{
	k->lent = buf;
	k->lent_len = len;
	k->opos = 0;
	return kvc_flush(k);
}

int kvc_reply(struct kvc *k, size_t *len)
{
	return kv_reply_scan(k->in, k->ilen, len);
}

void kvc_take(struct kvc *k, size_t len)
{
	memmove(k->in, k->in + len, k->ilen - len);
	k->ilen -= len;
}

void kvc_transport(const struct kvc *k, char *buf, size_t n)
{
	rift_transport t = k->conn ? rift_conn_transport(k->conn)
				   : RIFT_TRANSPORT_NONE;

	if (k->stream) {
		snprintf(buf, n, "valkey-rdma");
		return;
	}
	rift_fallback_reason r = k->conn ? rift_conn_fallback_reason(k->conn)
					 : RIFT_FALLBACK_NONE;

	if (r != RIFT_FALLBACK_NONE)
		snprintf(buf, n, "%s (fallback: %s)", rift_transport_name(t),
			 rift_fallback_reason_str(r));
	else
		snprintf(buf, n, "%s", rift_transport_name(t));
}

void kvc_close(struct kvc *k)
{
	if (k->conn)
		rift_conn_abort(k->conn, NULL);
	if (k->stream)
		rift_stream_close(k->stream, NULL);
	k->conn = NULL;
	k->stream = NULL;
	kv_resp_out_free(&k->out);
	free(k->in);
	k->in = NULL;
	k->ilen = k->icap = 0;
}

void kvc_ctx_destroy(rift_ctx *ctx)
{
	for (int i = 0; i < 100 && rift_ctx_destroy(ctx) == RIFT_EBUSY; i++)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 20);
}
