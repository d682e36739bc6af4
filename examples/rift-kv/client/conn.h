/*
 * conn.h - a connection of rift-kv's client tools (rift-kv-cli,
 * rift-kv-benchmark) to rift-kv's rift listener: RESP commands out, RESP
 * replies in, over one rift connection (tcp://, rdma:// or auto://), or
 * one rift byte stream in Valkey's RDMA protocol (valkey-rdma://), which
 * reaches valkey-server as well.
 *
 * As on the server's side (rift_io.c), the connection carries a RESP
 * byte stream in messages: the commands queued between two flushes go as
 * one message (cut at KVC_MSG_MAX bytes), and the replies arrive in
 * messages that may end anywhere, so they are gathered until one is
 * whole (reply.h).  A byte stream carries the same bytes, cut where the
 * server's advertised buffer ends.  Everything runs on the thread of the
 * rift context.
 */
#ifndef RIFT_KV_CLIENT_CONN_H
#define RIFT_KV_CLIENT_CONN_H

#include <stddef.h>

#include <rift.h>

#include "../resp.h"

/* Largest message sent: rift-kv sends its replies in messages of this
 * size too; a peer that takes less halves it (RIFT_EMSGSIZE). */
#define KVC_MSG_MAX ((size_t)1 << 20)

enum kvc_state {
	KVC_CONNECTING, /* rift_connect called, no CONNECTED yet */
	KVC_UP,         /* CONNECTED came */
	KVC_DOWN,       /* ERROR or DISCONNECTED came: err says why */
};

struct kvc {
	rift_conn *conn;        /* NULL once closed */
	rift_stream *stream;    /* valkey-rdma://: instead of conn */
	enum kvc_state state;
	char err[256];          /* why it is down */
	struct kv_resp_out out; /* commands queued; [opos, out.len) unsent */
	const char *lent;       /* or commands lent (kvc_send_lent) */
	size_t lent_len;
	size_t opos;
	size_t msg_max;         /* largest message to send, bytes */
	int blocked;            /* send window full: until WRITABLE */
	char *in;               /* replies received, not yet taken */
	size_t ilen, icap;      /* bytes in in, allocated */
	void (*on_data)(struct kvc *k); /* after bytes arrived, or NULL */
	void *user;             /* the tool's */
};

/* Connect k (zero it first) to url on ctx: 0, or -1 with k->err set
 * (rift_connect refused the URL, say). */
int kvc_open(struct kvc *k, rift_ctx *ctx, const char *url);

/* Run ctx until k is UP (0) or DOWN, or timeout_ms pass (-1, k->err says
 * why). */
int kvc_wait_up(rift_ctx *ctx, struct kvc *k, int timeout_ms);

/* Queue a command of argc arguments: 0, or -ENOMEM. */
int kvc_command(struct kvc *k, size_t argc, const struct kv_resp_arg *argv);

/* Send what is queued, as far as the send window lets (the rest on
 * WRITABLE): 0, or -1 with the connection DOWN (k->err). */
int kvc_flush(struct kvc *k);

/* Send the len bytes of commands at buf instead of a queue: buf is the
 * caller's, unchanged until they are all sent (k->lent is NULL again).
 * Nothing may be queued or lent before.  0, or -1 as kvc_flush. */
int kvc_send_lent(struct kvc *k, const char *buf, size_t len);

/* The first whole reply received: 1 with its length in *len (at k->in;
 * kvc_take drops it), 0 if none is whole yet, -1 if the bytes are no
 * RESP reply. */
int kvc_reply(struct kvc *k, size_t *len);
void kvc_take(struct kvc *k, size_t len);

/* "tcp", "rdma", or "tcp (fallback: no RDMA device)" when an auto://
 * connection fell back; "none" when it has no path now. */
void kvc_transport(const struct kvc *k, char *buf, size_t n);

/* Abort k's connection and free its buffers. */
void kvc_close(struct kvc *k);
/* Destroy ctx once its connections are closed (waiting a little for rift
 * to let go of them). */
void kvc_ctx_destroy(rift_ctx *ctx);

#endif
