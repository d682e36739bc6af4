/*
 * valkey_io.c - RESP over Valkey's RDMA protocol, so that stock
 * valkey-cli --rdma and valkey-benchmark --rdma reach rift-kv: the
 * listener (valkey_rdma_port, valkey_rdma_bind) and its clients, each a
 * rift byte stream (rift.h, "Byte streams": librift speaks the protocol;
 * this file sees bytes only).
 *
 * Backpressure: replies waiting beyond KV_OUT_HIGH stop the stream's
 * reads (rift_stream_read_stop: the client's requests stay in the
 * receive buffer, so it can write no more once that is full); a write
 * the peer's buffer cannot take whole keeps the rest until
 * RIFT_EVENT_WRITABLE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

static void on_closed(rift_stream *st)
{
	struct kv_client *c = rift_stream_user(st);

	if (c) {
		c->srv->valkey_clients--;
		kv_client_free(c);
	}
}

static void vclose(struct kv_client *c)
{
	c->flags |= KV_CLOSING;
	rift_stream_close(c->stream, on_closed);
}

/* Write what is waiting, as far as the peer's buffer takes it. */
static void flush(struct kv_client *c)
{
	if (c->flags & KV_RIFT_BLOCKED)
		return;
	while (c->opos < c->out.len) {
		int n = rift_stream_write(c->stream, c->out.buf + c->opos,
					  c->out.len - c->opos);

		if (n == RIFT_EAGAIN) {
			c->flags |= KV_RIFT_BLOCKED;
			return;
		}
		if (n < 0) {
			c->flags |= KV_CLOSE_ASAP;
			return;
		}
		c->srv->net_out += (size_t)n;
		c->opos += (size_t)n;
		if (c->opos < c->out.len) {
			c->flags |= KV_RIFT_BLOCKED; /* WRITABLE follows */
			return;
		}
	}
	kv_client_out_sent(c);
}

/* After requests or a writable stream: write, go on with requests a
 * pause held back, then close or set the flow of reads. */
void kv_valkey_service(struct kv_client *c)
{
	if (c->flags & KV_CLOSING)
		return;
	switch (kv_client_service(c, flush)) {
	case KV_NEXT_ABORT:
	case KV_NEXT_CLOSE:
		/* Either way the replies written go first: a stream has no
		 * abort of its own. */
		vclose(c);
		break;
	case KV_NEXT_STOP:
		rift_stream_read_stop(c->stream);
		break;
	case KV_NEXT_START:
		rift_stream_read_start(c->stream);
		break;
	case KV_NEXT_NONE:
		break;
	}
}

static void on_read(rift_stream *st, const void *data, size_t len)
{
	struct kv_client *c = rift_stream_user(st);

	if (!c || (c->flags & (KV_CLOSING | KV_CLOSE_AFTER_REPLY)))
		return;
	kv_client_feed(c, data, len);
	kv_valkey_service(c);
}

static void on_event(rift_stream *st, const rift_event *ev)
{
	struct kv_client *c = rift_stream_user(st);

	if (!c || (c->flags & KV_CLOSING))
		return;
	if (ev->type == RIFT_EVENT_WRITABLE) {
		c->flags &= ~(unsigned)KV_RIFT_BLOCKED;
		kv_valkey_service(c);
	} else if (ev->type == RIFT_EVENT_DISCONNECTED ||
		   ev->type == RIFT_EVENT_ERROR) {
		if (ev->status)
			fprintf(stderr, "rift-kv: valkey-rdma client %s: %s\n",
				c->addr, ev->message);
		vclose(c);
	}
}

static void on_accept(rift_stream_listener *l, rift_stream *st)
{
	struct kv_server *s = rift_stream_listener_user(l);
	struct kv_client *c = kv_client_new(s, -1, NULL);

	if (!c) {
		s->conns_rejected++;
		rift_stream_set_user(st, NULL);
		rift_stream_close(st, NULL);
		return;
	}
	c->stream = st;
	s->valkey_clients++;
	rift_stream_set_user(st, c);
	snprintf(c->addr, sizeof(c->addr), "%s", rift_stream_peer(st));
}

int kv_valkey_listen(struct kv_server *s)
{
	static const rift_stream_callbacks cbs = { .on_event = on_event,
						   .on_read = on_read };
	const char *host = s->cfg.valkey_rdma_bind[0] ? s->cfg.valkey_rdma_bind
			   : s->cfg.rdma_bind[0]      ? s->cfg.rdma_bind
						      : s->cfg.bind;
	int v6 = strchr(host, ':') != NULL, rc;

	snprintf(s->valkey_url, sizeof(s->valkey_url),
		 "valkey-rdma://%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "",
		 s->cfg.valkey_rdma_port);
	rc = rift_stream_listen(s->rift, s->valkey_url, &cbs, s, on_accept,
				&s->vl);
	if (rc) {
		fprintf(stderr, "rift-kv: rift_stream_listen %s: %s: %s\n",
			s->valkey_url, rift_strerror(rc),
			rift_ctx_last_error(s->rift));
		s->valkey_url[0] = '\0';
		return -1;
	}
	return 0;
}

void kv_valkey_shutdown(struct kv_server *s)
{
	for (struct kv_client *c = s->clients; c; c = c->next)
		if (c->stream && !(c->flags & KV_CLOSING))
			vclose(c);
	if (s->vl) {
		rift_stream_listener_close(s->vl, NULL);
		s->vl = NULL;
	}
}
