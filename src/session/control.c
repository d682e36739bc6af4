/*
 * control.c - what the session gives a transport to write besides
 * messages: the control frames a path owes (HELLO, RESUME, JOIN and their
 * answers, ERROR, ACK, PING, a standby's PROBE and PROBE_ACK, CLOSE:
 * rift__sess_control), and an ERROR
 * frame alone for a transport that sends it out of band.  Messages come
 * through rift__sess_next (session.h).
 */
#include <stdio.h>
#include <string.h>

#include "session/session.h"

/* The path's ERROR payload, now on its way: the path says so to its
 * transport, and an abort that waits for it may end now (close.c).
 * Returns its length. */
static uint32_t error_payload(rift__path *p, uint8_t *payload)
{
	uint32_t len = (uint32_t)rift__error_encode(payload, p->error_code,
						    p->error_text);

	p->pending &= ~RIFT_PEND_ERROR;
	p->said_error = true;
	if (p->conn && p->conn->aborting)
		rift_timer_start(&p->conn->linger_timer, 0, 0);
	return len;
}

size_t rift__sess_error_frame(rift__path *p, uint8_t *buf)
{
	struct rift__hdr h = { .type = RIFT_FRAME_ERROR };

	h.len = error_payload(p, buf + RIFT_HDR_SIZE);
	rift__hdr_encode(buf, &h);
	return RIFT_HDR_SIZE + h.len;
}

size_t rift__sess_control(rift__path *p, uint8_t *buf, size_t cap)
{
	static const struct {
		uint32_t bit;
		uint8_t type;
	} order[] = {
		{ RIFT_PEND_HELLO, RIFT_FRAME_HELLO },
		{ RIFT_PEND_HELLO_ACK, RIFT_FRAME_HELLO_ACK },
		{ RIFT_PEND_RESUME, RIFT_FRAME_RESUME },
		{ RIFT_PEND_RESUME_ACK, RIFT_FRAME_RESUME_ACK },
		{ RIFT_PEND_JOIN, RIFT_FRAME_JOIN },
		{ RIFT_PEND_JOIN_ACK, RIFT_FRAME_JOIN_ACK },
		{ RIFT_PEND_ERROR, RIFT_FRAME_ERROR },
		{ RIFT_PEND_ACK, RIFT_FRAME_ACK },
		{ RIFT_PEND_PING, RIFT_FRAME_PING },
		{ RIFT_PEND_PROBE, RIFT_FRAME_PROBE },
		{ RIFT_PEND_PROBE_ACK, RIFT_FRAME_PROBE_ACK },
		{ RIFT_PEND_PATH_CTL, RIFT_FRAME_PATH_CTL },
		{ RIFT_PEND_CLOSE, RIFT_FRAME_CLOSE },
	};
	rift_conn *conn = p->conn;
	size_t used = 0;

	if (!p->pending)
		return 0;
	if ((p->pending & RIFT_PEND_HELLO) &&
	    rift__fault_hit(RIFT_FAULT_EARLY_DATA)) {
		struct rift__hdr d = {
			.type = RIFT_FRAME_DATA,
			.len = (uint32_t)p->ctx->cfg.max_msg_size,
			.seq = 1,
		};

		rift__hdr_encode(buf, &d);
		used = RIFT_HDR_SIZE;
	}
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(order); i++) {
		struct rift__hdr h = { .type = order[i].type };
		struct rift__hello hello;
		uint8_t *payload = buf + used + RIFT_HDR_SIZE;

		if (!(p->pending & order[i].bit))
			continue;
		if (cap - used < RIFT_HDR_SIZE + 6 + RIFT_ERROR_TEXT_MAX)
			break; /* the rest goes in the next batch */
		p->pending &= ~order[i].bit;
		/* A keepalive left from a standby's days (verbs holds one
		 * back for credits) must not follow the RESUME that promotes
		 * it: not attached here, it would carry no ack, and the peer,
		 * attached by then, would take that for an ack gone back.
		 * The handshake says the path lives. */
		if (order[i].type == RIFT_FRAME_PING &&
		    p->state == RIFT_PATH_HANDSHAKE)
			continue;
		/* PROBE and its answer are a standby's (group.c); one
		 * resumed on since they were due says it lives by its
		 * handshake, and the peer takes neither on a data path. */
		if (order[i].type == RIFT_FRAME_PROBE ||
		    order[i].type == RIFT_FRAME_PROBE_ACK) {
			if (p->state != RIFT_PATH_STANDBY)
				continue;
			h.seq = order[i].type == RIFT_FRAME_PROBE
					? p->probe_nonce
					: p->probe_echo;
		}
		if (order[i].type == RIFT_FRAME_PATH_CTL) {
			/* active-active: "path ctl_gid is dead on my side"
			 * (session/spread.c) */
			struct rift__path_ctl pc = { .op = RIFT_PATH_CTL_DOWN,
						     .path_id = p->ctl_gid,
						     .reason = p->ctl_why };

			h.len = (uint32_t)rift__path_ctl_encode(payload, &pc);
		} else if (order[i].type == RIFT_FRAME_ERROR) {
			h.len = error_payload(p, payload);
		} else if (order[i].type == RIFT_FRAME_JOIN ||
			   order[i].type == RIFT_FRAME_JOIN_ACK) {
			if (!conn)
				continue;
			h.len = (uint32_t)rift__group_join_encode(
				p, order[i].type, payload);
		} else if (order[i].type <= RIFT_FRAME_RESUME_ACK) {
			if (!conn)
				continue;
			rift__hello_fill(p, order[i].type, &hello);
			h.len = (uint32_t)rift__hello_encode(payload, &hello);
			if (order[i].type == RIFT_FRAME_RESUME ||
			    order[i].type == RIFT_FRAME_RESUME_ACK)
				rift__hello_seal(payload, order[i].type,
						 RIFT_HELLO_AUTH_AT, conn->key);
		}
		if (conn && rift__path_takes_data(p)) {
			h.ack = conn->recv_seq;
			conn->ack_sent = conn->recv_seq;
			conn->rx_unacked = 0;
			if (order[i].type == RIFT_FRAME_ACK)
				conn->stats.acks_sent++;
		}
		if (order[i].type == RIFT_FRAME_PING && conn)
			conn->stats.pings_sent++;
		/* CLOSE carries the last sequence sent: a receiver that
		 * lacks some of it knows the close was not in order. */
		if (order[i].type == RIFT_FRAME_CLOSE && conn) {
			h.seq = conn->next_seq;
			conn->close_sent = true;
		}
		rift__hdr_encode(buf + used, &h);
		used += RIFT_HDR_SIZE + h.len;
	}
	return used;
}

