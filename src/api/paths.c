/*
 * paths.c - rift_conn_paths: what a connection's paths are doing (port
 * groups, session/group.c): the data path, its standbys, attempts being
 * set up, and a client's addresses whose path failed, with why.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "session/session.h"

const char *rift_path_state_name(rift_path_state s)
{
	switch (s) {
	case RIFT_PATH_STATE_DOWN:
		return "down";
	case RIFT_PATH_STATE_SETUP:
		return "setup";
	case RIFT_PATH_STATE_ACTIVE:
		return "active";
	case RIFT_PATH_STATE_STANDBY:
		return "standby";
	}
	return "?";
}

struct paths_out {
	rift_path_info *out;
	int max;
	size_t size;
	int n;
	uint32_t seen; /* client addresses with a path listed (bits) */
};

/* Entry o->n, if the caller has room for it: ours, cut to the caller's
 * size or padded with zeros to it. */
static void put(struct paths_out *o, const rift_path_info *pi)
{
	if (o->n < o->max) {
		uint8_t *dst = (uint8_t *)o->out + (size_t)o->n * o->size;
		size_t n = o->size < sizeof(*pi) ? o->size : sizeof(*pi);

		memcpy(dst, pi, n);
		if (o->size > n)
			memset(dst + n, 0, o->size - n);
	}
	o->n++;
}

static void put_path(struct paths_out *o, const rift_conn *conn,
		     const rift__path *p)
{
	uint64_t now = conn->ctx->now_us;
	rift_path_info pi;

	if (!p || p->state == RIFT_PATH_DEAD)
		return;
	memset(&pi, 0, sizeof(pi));
	/* active-active: a joined path that carries data is active too */
	if (p->state == RIFT_PATH_ATTACHED ||
	    (p->state == RIFT_PATH_STANDBY && p->slot))
		pi.state = RIFT_PATH_STATE_ACTIVE;
	else if (p->state == RIFT_PATH_STANDBY)
		pi.state = RIFT_PATH_STATE_STANDBY;
	else
		pi.state = RIFT_PATH_STATE_SETUP;
	pi.id = p->gid;
	pi.transport = p->ops->kind;
	snprintf(pi.peer, sizeof(pi.peer), "%s", p->peer);
	snprintf(pi.local, sizeof(pi.local), "%s", p->local);
	if (p->ops->describe)
		p->ops->describe(p, pi.device, sizeof(pi.device));
	pi.age_us = now - (p->up_us ? p->up_us : p->born_us);
	pi.idle_us = now > p->last_rx_us ? now - p->last_rx_us : 0;
	pi.msgs_sent = p->tx_msgs;
	pi.bytes_sent = p->tx_bytes;
	pi.msgs_recv = p->rx_msgs;
	pi.bytes_recv = p->rx_bytes;
	if (conn->is_client && p->addr_idx < conn->n_addrs)
		o->seen |= 1u << p->addr_idx;
	put(o, &pi);
}

int rift__conn_paths(const rift_conn *conn, rift_path_info *out, int max,
		     size_t size)
{
	struct paths_out o = { .out = out, .max = max, .size = size };

	if (!conn || max < 0 || (max > 0 && (!out || size == 0)))
		return RIFT_EINVAL;
	put_path(&o, conn, conn->path);
	for (unsigned i = 0; i < conn->n_standby; i++)
		put_path(&o, conn, conn->standby[i]);
	put_path(&o, conn, conn->racer);
	if (!conn->is_client || conn->state == RIFT_CONN_DEAD)
		return o.n;
	/* The client's addresses without a path now. */
	for (unsigned i = 0; i < conn->n_addrs; i++) {
		const struct rift__addr_down *d = &conn->addr_down[i];
		rift_path_info pi;
		char addr[80];

		if (o.seen >> i & 1u || !d->status)
			continue;
		memset(&pi, 0, sizeof(pi));
		pi.state = RIFT_PATH_STATE_DOWN;
		pi.transport = RIFT_TRANSPORT_NONE;
		rift__sockaddr_str((const struct sockaddr *)&conn->addrs[i],
				   addr, sizeof(addr));
		snprintf(pi.peer, sizeof(pi.peer), "%s://%s", conn->ops->name,
			 addr);
		pi.age_us = conn->ctx->now_us - d->at_us;
		pi.last_status = d->status;
		snprintf(pi.last_error, sizeof(pi.last_error), "%s", d->why);
		pi.down_reason = (rift_path_down_reason)d->reason;
		put(&o, &pi);
	}
	return o.n;
}
