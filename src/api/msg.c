/*
 * msg.c - the public calls on a received message: its payload, length and
 * sequence number, and keeping it past on_recv (rift_msg_retain,
 * rift_msg_release).  Nothing here calls a user callback.
 *
 * A retained message owns what holds its payload: a malloc'd copy or
 * block, or a block of the registered pool, on which it then holds a
 * reference of its own, so that it may be released after its connection
 * and its context are gone.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memory/pool.h"

const void *rift_msg_data(const rift_msg *msg)
{
	return msg ? msg->data : NULL;
}

size_t rift_msg_len(const rift_msg *msg)
{
	return msg ? msg->len : 0;
}

uint64_t rift_msg_seq(const rift_msg *msg)
{
	return msg ? msg->seq : 0;
}

rift_msg *rift_msg_retain(rift_msg *msg)
{
	rift_msg *r;

	if (!msg)
		return NULL;
	if (msg->retained)
		return msg;
	if (msg->owned || msg->lend) {
		r = malloc(sizeof(*r));
		if (!r)
			return NULL;
		*r = *msg;
		r->lend = NULL;
		r->retained = true;
		if (msg->owned) {
			/* The payload already has its own block: hand it
			 * over. */
			msg->owned = NULL;
			return r;
		}
		/* Registered memory the transport lends: kept where it is
		 * when the transport can give it up for good. */
		if (msg->lend->take(msg->lend, msg->len, &r->pool, &r->block)) {
			rift__pool_hold(r->pool);
			return r;
		}
		free(r);
	}
	/* The payload sits in memory the transport keeps (a read buffer):
	 * a copy. */
	r = malloc(sizeof(*r) + msg->len);
	if (!r)
		return NULL;
	*r = *msg;
	r->data = r + 1;
	r->owned = NULL;
	r->lend = NULL;
	r->pool = NULL;
	r->block = NULL;
	memcpy(r->data, msg->data, msg->len);
	r->retained = true;
	return r;
}

void rift_msg_release(rift_msg *msg)
{
	if (!msg || !msg->retained)
		return;
	free(msg->owned);
	if (msg->block) {
		rift__pool_free(msg->pool, msg->block, RIFT_POOL_RECV);
		rift__pool_put(msg->pool); /* the last holder frees the pool */
	}
	free(msg);
}
