/*
 * rift_io.c - RESP over rift: the listener, and clients whose byte
 * stream travels as rift messages.
 *
 * Each message a client sends carries the next bytes of its RESP stream
 * (a command may span messages, a message may hold many); the replies to
 * what one message asked go back as one message (several when they
 * exceed max_msg_size).  rift keeps the messages whole, in order and
 * exactly once across path changes, so the stream survives a broken
 * path or a fallback from RDMA to TCP (auto://).
 *
 * Backpressure: replies waiting beyond KV_OUT_HIGH stop the client's
 * deliveries (rift_conn_recv_stop: rift then holds its messages, and the
 * client's sends fill its window); a full send window here
 * (RIFT_EAGAIN) keeps the replies until RIFT_EVENT_WRITABLE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* Largest message the replies are cut into (within max_msg_size). */
#define MSG_MAX ((size_t)1 << 20)

static void on_closed(rift_conn *conn)
{
	struct kv_client *c = rift_conn_user(conn);

	if (c)
		kv_client_free(c);
}

void kv_rift_abort(struct kv_client *c)
{
	c->flags |= KV_CLOSING;
	rift_conn_abort(c->conn, on_closed);
}

static int is_rdma(struct kv_client *c)
{
	return rift_conn_transport(c->conn) == RIFT_TRANSPORT_RDMA;
}

/* Send what is waiting, in messages of at most MSG_MAX bytes (less if
 * the peer takes less: RIFT_EMSGSIZE halves them), unless the send
 * window is full (until WRITABLE). */
static void flush(struct kv_client *c)
{
	struct kv_server *s = c->srv;
	size_t max = MSG_MAX < s->rcfg.max_msg_size ? MSG_MAX
						     : s->rcfg.max_msg_size;

	if (c->flags & KV_RIFT_BLOCKED)
		return;
	while (c->opos < c->out.len) {
		size_t n = c->out.len - c->opos;
		int rc;

		if (n > max)
			n = max;
		rc = rift_conn_send(c->conn, c->out.buf + c->opos, n);
		if (rc == RIFT_EAGAIN) {
			c->flags |= KV_RIFT_BLOCKED;
			return;
		}
		if (rc == RIFT_EMSGSIZE && max > 4096) {
			max /= 2;
			continue;
		}
		if (rc) {
			c->flags |= KV_CLOSE_ASAP;
			return;
		}
		if (is_rdma(c)) {
			s->rdma_msgs_sent++;
			s->rdma_bytes_sent += n;
		}
		s->net_out += n;
		c->opos += n;
	}
	kv_client_out_sent(c);
}

/* After new requests or a writable window: send, go on with requests a
 * pause held back, then close or set the flow of deliveries. */
void kv_rift_service(struct kv_client *c)
{
	if (c->flags & KV_CLOSING)
		return;
	switch (kv_client_service(c, flush)) {
	case KV_NEXT_ABORT:
		kv_rift_abort(c);
		break;
	case KV_NEXT_CLOSE:
		/* In order: the replies queued go first. */
		c->flags |= KV_CLOSING;
		rift_conn_close(c->conn, on_closed);
		break;
	case KV_NEXT_STOP:
		rift_conn_recv_stop(c->conn);
		break;
	case KV_NEXT_START:
		rift_conn_recv_start(c->conn);
		break;
	case KV_NEXT_NONE:
		break;
	}
}

static void on_recv(rift_conn *conn, rift_msg *m)
{
	struct kv_client *c = rift_conn_user(conn);
	size_t len = rift_msg_len(m);

	if (!c || (c->flags & (KV_CLOSING | KV_CLOSE_AFTER_REPLY)))
		return;
	if (is_rdma(c)) {
		c->srv->rdma_msgs_recv++;
		c->srv->rdma_bytes_recv += len;
	}
	kv_client_feed(c, rift_msg_data(m), len);
	kv_rift_service(c);
}

static void on_event(rift_conn *conn, const rift_event *ev)
{
	struct kv_client *c = rift_conn_user(conn);

	if (!c || (c->flags & KV_CLOSING))
		return;
	switch (ev->type) {
	case RIFT_EVENT_WRITABLE:
		c->flags &= ~(unsigned)KV_RIFT_BLOCKED;
		kv_rift_service(c);
		break;
	case RIFT_EVENT_DISCONNECTED:
	case RIFT_EVENT_ERROR:
		c->flags |= KV_CLOSING;
		rift_conn_close(conn, on_closed);
		break;
	default:
		break; /* path changes: rift carries the session on */
	}
}

static void on_accept(rift_listener *l, rift_conn *conn)
{
	struct kv_server *s = rift_listener_user(l);
	struct kv_client *c = kv_client_new(s, -1, conn);
	rift_path_info pi;

	if (!c) {
		s->conns_rejected++;
		rift_conn_set_user(conn, NULL);
		rift_conn_abort(conn, NULL);
		return;
	}
	rift_conn_set_user(conn, c);
	if (rift_conn_paths(conn, &pi, 1) >= 1) {
		snprintf(c->addr, sizeof(c->addr), "%s", pi.peer);
		snprintf(c->laddr, sizeof(c->laddr), "%s", pi.local);
	}
}

/*
 * The address of rdma_device's port for the listener: the IP of its GID
 * rdma_gid_index when set, else of its first RoCE v2 GID holding an IPv4
 * address (then any holding an address).  0, or -1 having printed why.
 */
static int device_addr(const struct kv_config *cfg, char *out, size_t n)
{
	rift_device_info *devs;
	char err[256];
	int count = rift_devices(NULL, 0, err, sizeof(err)), rc = -1;

	if (count <= 0) {
		fprintf(stderr,
			"rift-kv: rdma_device %s: no RDMA device here%s%s\n",
			cfg->rdma_device, err[0] ? ": " : "", err);
		return -1;
	}
	devs = calloc((size_t)count, sizeof(*devs));
	if (!devs) {
		fprintf(stderr, "rift-kv: out of memory\n");
		return -1;
	}
	count = rift_devices(devs, count, err, sizeof(err));
	for (int d = 0; d < count && rc; d++) {
		const rift_device_info *di = &devs[d];
		int best = 0;

		if (strcmp(di->name, cfg->rdma_device))
			continue;
		for (uint32_t p = 0;
		     p < di->port_count && p < RIFT_DEVICE_MAX_PORTS; p++) {
			const rift_port_info *pi = &di->ports[p];

			for (uint32_t g = 0;
			     g < pi->gid_count && g < RIFT_PORT_MAX_GIDS;
			     g++) {
				const rift_gid_info *gi = &pi->gids[g];
				int score;

				if (!gi->ip[0])
					continue;
				if (cfg->rdma_gid_index >= 0)
					score = gi->index ==
							(uint32_t)cfg->rdma_gid_index
						? 4
						: 0;
				else
					score = 1 + (gi->type == RIFT_GID_ROCE_V2) +
						!strchr(gi->ip, ':');
				if (score > best) {
					best = score;
					snprintf(out, n, "%s", gi->ip);
				}
			}
		}
		if (best)
			rc = 0;
		else
			fprintf(stderr,
				"rift-kv: rdma_device %s: no GID%s holds an "
				"IP address (InfiniBand: set rdma_bind)\n",
				cfg->rdma_device,
				cfg->rdma_gid_index >= 0 ? " of rdma_gid_index"
							 : "");
		free(devs);
		return rc;
	}
	fprintf(stderr,
		"rift-kv: rdma_device %s: no such RDMA device (rift-info "
		"lists them)\n",
		cfg->rdma_device);
	free(devs);
	return -1;
}

int kv_rift_listen(struct kv_server *s)
{
	static const rift_conn_callbacks cbs = { .on_event = on_event,
						 .on_recv = on_recv };
	char addr[RIFT_GID_STR_LEN], url[sizeof(s->rift_url)];
	char *colon;
	int rc;

	if (s->cfg.rdma_device[0] && device_addr(&s->cfg, addr, sizeof(addr)))
		return -1;
	if (kv_config_rift_url(&s->cfg, s->cfg.rdma_device[0] ? addr : NULL,
			       url, sizeof(url))) {
		fprintf(stderr, "rift-kv: the rift URL is too long\n");
		return -1;
	}
	rc = rift_listen(s->rift, url, &cbs, s, on_accept, &s->rl);
	if (rc) {
		fprintf(stderr, "rift-kv: rift_listen %s: %s: %s\n", url,
			rift_strerror(rc), rift_ctx_last_error(s->rift));
		return -1;
	}
	/* The URL as it listens: port 0 becomes the port chosen. */
	colon = strrchr(url, ':');
	if (colon && strcmp(colon, ":0") == 0)
		snprintf(colon, sizeof(url) - (size_t)(colon - url), ":%d",
			 rift_listener_port(s->rl));
	snprintf(s->rift_url, sizeof(s->rift_url), "%s", url);
	return 0;
}

/* ibv_wc_status values rift counts by (rift_ctx_stats.wc_errors) */
#define WC_RETRY_EXC_ERR 12
#define WC_RNR_RETRY_EXC_ERR 13

void kv_rdma_fields(struct kv_server *s, struct kv_field f[KV_RDMA_FIELDS])
{
	rift_ctx_stats st;
	uint64_t wc = 0, rdma_conns = 0;
	size_t n = 0;

	rift_ctx_stats_init(&st);
	if (rift_ctx_stats_get(s->rift, &st))
		memset((char *)&st + sizeof(st.size), 0,
		       sizeof(st) - sizeof(st.size));
	for (size_t i = 0; i < sizeof(st.wc_errors) / sizeof(*st.wc_errors);
	     i++)
		wc += st.wc_errors[i];
	for (struct kv_client *c = s->clients; c; c = c->next)
		rdma_conns += c->conn && !(c->flags & KV_CLOSING) && is_rdma(c);
#define F(nm, cnt, val, hlp) \
	f[n++] = (struct kv_field){ .name = nm, .counter = cnt, .v = val, \
				    .help = hlp }
	F("rdma_connections", 0, rdma_conns,
	  "Rift clients whose path is RDMA now.");
	F("rdma_send_ops", 1, s->rdma_msgs_sent,
	  "Messages sent to rift clients on an RDMA path.");
	F("rdma_recv_ops", 1, s->rdma_msgs_recv,
	  "Messages received from rift clients on an RDMA path.");
	F("rdma_read_ops", 1, st.rma_reads,
	  "One-sided reads this server made that completed (rma_reads).");
	F("rdma_write_ops", 1, st.rma_writes,
	  "One-sided writes this server made that completed (rma_writes).");
	F("rdma_bytes_sent", 1, s->rdma_bytes_sent,
	  "Payload bytes of rdma_send_ops.");
	F("rdma_bytes_received", 1, s->rdma_bytes_recv,
	  "Payload bytes of rdma_recv_ops.");
	F("rdma_read_bytes", 1, st.rma_read_bytes, "Bytes of rdma_read_ops.");
	F("rdma_write_bytes", 1, st.rma_write_bytes, "Bytes of rdma_write_ops.");
	F("rdma_completion_errors", 1, wc,
	  "Failed RDMA work completions, every status.");
	F("rdma_retry_exceeded", 1,
	  st.wc_errors[WC_RETRY_EXC_ERR] + st.wc_errors[WC_RNR_RETRY_EXC_ERR],
	  "Completions failed with RETRY_EXC_ERR or RNR_RETRY_EXC_ERR.");
	F("rdma_rma_served", 1, st.rma_served,
	  "Pieces of clients' one-sided operations this server's rift served.");
	F("rdma_rma_refused", 1, st.rma_refused,
	  "One-sided operations refused, either side (rma_refused).");
	F("rdma_rma_direct", 1, st.rma_direct,
	  "Pieces of this server's one-sided operations moved by RDMA READ "
	  "or WRITE alone.");
	F("rdma_rndv_reads", 1, st.rndv_recvs,
	  "Large messages received by RDMA READ (rendezvous).");
	F("rdma_rndv_read_bytes", 1, st.rndv_read_bytes,
	  "Bytes of rdma_rndv_reads.");
#undef F
}
