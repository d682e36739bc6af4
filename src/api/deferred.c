/*
 * deferred.c - the deferred work of a loop round (rift__ctx_deferred,
 * internal.h): deliveries of held messages, batched flushes, destruction
 * of dead paths, then the close callbacks of connections and listeners.
 * API calls only queue this work; it runs at the start and end of each
 * progress round, and from rift_ctx_destroy for close callbacks already
 * due (ctx.c).
 */
#include <stdlib.h>
#include <string.h>

#include "session/session.h"

int rift__ctx_deferred_run(rift_ctx *ctx)
{
	int done = 0;

	/* Delivering held messages queues acks, one-sided operations queue
	 * frames (and callbacks that send), and flushing may fail paths and
	 * queue more work: loop until quiet. */
	while (!rift__list_empty(&ctx->drainq) ||
	       !rift__list_empty(&ctx->flushq) ||
	       !rift__list_empty(&ctx->rmaq)) {
		if (!rift__list_empty(&ctx->rmaq)) {
			done += rift__rma_run(ctx);
			continue;
		}
		if (!rift__list_empty(&ctx->drainq)) {
			rift_conn *conn = rift__list_entry(ctx->drainq.next,
							   rift_conn, drain_node);

			rift__list_del(&conn->drain_node);
			rift__conn_drain(conn);
			done++;
			continue;
		}
		rift__path *p = rift__list_entry(ctx->flushq.next, rift__path,
						 flush_node);

		rift__path_unqueue(p);
		if (p->state != RIFT_PATH_DEAD)
			p->ops->flush(p);
		if (p->state != RIFT_PATH_DEAD)
			rift__sess_after_flush(p);
	}
	while (!rift__list_empty(&ctx->dead_paths)) {
		rift__path *p = rift__list_entry(ctx->dead_paths.next,
						 rift__path, ctx_node);

		rift__list_del(&p->ctx_node);
		p->ops->destroy(p);
	}
	while (!rift__list_empty(&ctx->closing_conns)) {
		rift_conn *conn = rift__list_entry(ctx->closing_conns.next,
						   rift_conn, node);

		rift__list_del(&conn->node);
		rift__conn_drop_queue(conn);
		rift__rma_conn_free(conn);
		if (conn->close_cb)
			conn->close_cb(conn);
		explicit_bzero(conn->key, sizeof(conn->key));
		free(conn);
		done++;
	}
	while (!rift__list_empty(&ctx->closing_listeners)) {
		rift_listener *l = rift__list_entry(ctx->closing_listeners.next,
						    rift_listener, node);

		rift__list_del(&l->node);
		if (l->close_cb)
			l->close_cb(l);
		free(l);
		done++;
	}
	return done;
}
