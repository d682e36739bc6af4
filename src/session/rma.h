/*
 * rma.h - one-sided access (rift.h, "One-sided access";
 * docs/design/one-sided.md): registered regions, exports and their
 * tokens, and the operations of a connection.
 *
 * Served by the exporter's library over the session: a READ or WRITE
 * goes as RMA frames (session/wire.h), sequenced messages of rift's own
 * that the session orders, acknowledges and replays with the
 * application's (rift__conn_enqueue_type), so an operation survives a
 * path's failure as a message does, on every transport.
 *
 * Requester: an operation is cut into pieces of at most rma_piece()
 * bytes, issued in order while the send window has room (a piece waits
 * otherwise: conn->rma_wait, rift__rma_kick) and, for reads, while the
 * answers asked for stay within half the window, at most RMA_PIECES
 * pieces unanswered.  Its callback runs once every piece it issued was
 * answered (no answer can land in the local memory after it).
 *
 * Exporter: each request is checked against the export table (the
 * token's tag under the session key, its session, the export alive and
 * bound to this connection, the range, the access), then served: a
 * WRITE's bytes copied in at once, a READ's copied out when its answer
 * goes.  Answers wait, in order, for room in the window; a peer that
 * keeps more requests waiting than a rift requester ever has is
 * refused (RMA_PEND_MAX).
 */
#ifndef RIFT_SESSION_RMA_H
#define RIFT_SESSION_RMA_H

#include "session/session.h"

struct rift_mem {
	rift_ctx *ctx;
	uint8_t *addr;
	size_t len;
	unsigned access;        /* RIFT_MEM_*: the most an export grants */
	unsigned n_exports;     /* live exports of it */
	unsigned n_ops;         /* this side's operations using it */
	struct rift__list node; /* ctx->rma->mems */
	void *tr;               /* the transports' (device registrations:
				 * ops->mem_drop frees them) */
};

/* Registered regions and exports of a context (made on first use). */
struct rift__rma_ctx {
	struct rift__list mems;
	struct rift__export **tab; /* by export id, chained */
	size_t tab_size;           /* buckets, a power of two */
	size_t n_exports;
	uint32_t last_id;          /* export ids are given once each */
};

/* The context's state, made on first use (NULL when out of memory). */
struct rift__rma_ctx *rift__rma_ctx_get(rift_ctx *ctx);
/* Regions still registered (rift_ctx_destroy refuses while any is). */
size_t rift__rma_mems(const rift_ctx *ctx);
/* The context goes: its state with it (no region left: see above). */
void rift__rma_ctx_free(rift_ctx *ctx);

/* The public calls' bodies, arguments checked for NULL by the API. */
int rift__mem_reg(rift_ctx *ctx, void *addr, size_t len, unsigned access,
		  rift_mem **out);
int rift__mem_dereg(rift_mem *mem);
int rift__mem_export(rift_mem *mem, rift_conn *conn, size_t off, size_t len,
		     unsigned access, void *token, size_t *token_len);
int rift__mem_revoke(rift_mem *mem, const void *token, size_t token_len);

/* Operation kinds. */
enum { RIFT__RMA_READ = 1, RIFT__RMA_WRITE = 2, RIFT__RMA_WRITE_NOTIFY = 3 };
int rift__rma_post(rift_conn *conn, int kind, rift_mem *local,
		   size_t local_off, const void *token, size_t token_len,
		   size_t remote_off, size_t len, uint64_t tag, rift_rma_cb cb,
		   void *user);

#endif
