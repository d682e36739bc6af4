/*
 * rma.c - one-sided access served over the session (session/rma.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/rma.h"

/* Pieces of this side's operations unanswered at most, and the answers a
 * peer may keep waiting here (a rift requester never has more than
 * RMA_PIECES unanswered, plus a notify and a revocation or two). */
#define RMA_PIECES 256u
#define RMA_PEND_MAX 1024u
/* The largest piece: large operations interleave with messages. */
#define RMA_PIECE_MAX ((uint64_t)256 << 10)
/* Export ids the peer said it revoked, remembered (the latest). */
#define RMA_REVOKED_KEEP 64u
/* Refusals logged per connection at WARN; the rest at DEBUG. */
#define RMA_LOG_REFUSALS 8u
/* Keys of the peer's windows remembered (the latest). */
#define RMA_KEYS_MAX 64u
/* Operations' memory kept for reuse, per connection. */
#define RMA_SPARE 64u

/* Exporter: an export's window on one path (ops->rma_expose). */
struct os_win {
	struct os_win *next;
	rift__path *path;       /* alive: rift__rma_path_gone drops it */
	void *win;
	uint32_t rkey;
	/* The path's attach counter the peer was told the key for: a
	 * standby promoted by a RESUME takes a new one, told again. */
	uint64_t attach;
};

/* Requester: the key of an export's window on the path of an attach
 * counter (the peer's KEYS). */
struct os_key {
	uint32_t export_id, rkey;
	uint64_t attach;
};

struct rift__export {
	uint32_t id;
	rift_mem *mem;
	rift_conn *conn;
	uint64_t off, len;       /* in mem */
	unsigned access;
	struct rift__export *hnext; /* the table's chain */
	struct rift__export *cnext; /* its connection's exports */
	struct os_win *wins;     /* its windows, one per path at most */
};

struct rma_op;

/* A one-sided piece posted on a path (ops->rma_post), not reported. */
struct os_piece {
	struct rift__list node; /* rift__rma_conn.os, in post order */
	struct rma_op *op;
	rift__path *path;
	uint64_t cookie, len;
};

struct rma_op {
	struct rift__list node; /* rma_conn.ops, in issue order */
	struct rma_op *spare;   /* rift__rma_conn.spare's chain */
	struct os_piece piece0; /* its first piece out needs no malloc */
	bool piece0_out;
	uint64_t id;
	int kind;               /* RIFT__RMA_* */
	rift_mem *local;
	size_t local_off;
	uint32_t export_id;
	uint64_t base;          /* the token's: the peer's address of 0 */
	uint64_t remote_off, len, tag;
	uint64_t issued;        /* bytes asked for or sent */
	uint64_t answered;      /* bytes answered */
	unsigned pieces;        /* pieces unanswered */
	unsigned os_out;        /* of them: one-sided, on a path */
	bool os_fail;           /* a one-sided piece failed: done again by
				 * frames once no piece is out */
	bool frames;            /* by frames only from now on */
	bool notify_sent, notify_answered;
	int status;             /* the first error, or 0 */
	rift_rma_cb cb;
	void *user;
	uint16_t tok_len;
	uint8_t tok[RIFT_TOKEN_MAX];
};

/* An answer (or a revocation, or keys) waiting for room in the window. */
struct rma_pend {
	struct rma_pend *next;
	uint8_t op;     /* RIFT_RMA_READ_RESP, _WRITE_ACK, _REVOKED, _KEYS */
	int32_t status;
	uint64_t id, off, len, tag;
	uint32_t export_id;     /* READ_RESP: read from it when it goes */
};

struct rift__rma_conn {
	rift_conn *conn;
	struct rift__list ops;  /* this side's operations, in issue order */
	struct rift__list done; /* finished, callbacks due (rift__rma_run) */
	struct rift__list due_node; /* ctx->rmaq, when queued */
	bool queued;
	struct rift__list os;   /* struct os_piece, in post order */
	uint64_t os_cookie;     /* the last given */
	struct os_key keys[RMA_KEYS_MAX];
	unsigned n_keys;        /* given so far (the ring keeps the last) */
	/* Operations' memory kept for the next ones (at most RMA_SPARE):
	 * an operation a round trip, malloc's cost shows. */
	struct rma_op *spare;
	unsigned n_spare;
	/* The last token checked good (its tag) and what it says: an
	 * application uses one token for many operations. */
	uint16_t vtok_len;
	uint8_t vtok[RIFT_TOKEN_MAX];
	struct rift__token vt;
	uint64_t last_id;
	uint64_t read_out;      /* bytes of reads asked, unanswered */
	unsigned pieces_out;
	struct rma_pend *pend_head, *pend_tail;
	unsigned n_pend;
	struct rift__export *exports; /* live exports bound to the session */
	uint32_t revoked[RMA_REVOKED_KEEP];
	unsigned n_revoked;     /* given so far (the ring keeps the last) */
	unsigned refusals;      /* logged so far */
};

/* ---- the context: regions and the export table ---- */

struct rift__rma_ctx *rift__rma_ctx_get(rift_ctx *ctx)
{
	struct rift__rma_ctx *r = ctx->rma;

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->tab_size = 64;
	r->tab = calloc(r->tab_size, sizeof(*r->tab));
	if (!r->tab) {
		free(r);
		return NULL;
	}
	rift__list_init(&r->mems);
	ctx->rma = r;
	return r;
}

size_t rift__rma_mems(const rift_ctx *ctx)
{
	size_t n = 0;

	if (!ctx->rma)
		return 0;
	for (struct rift__list *l = ctx->rma->mems.next; l != &ctx->rma->mems;
	     l = l->next)
		n++;
	return n;
}

void rift__rma_ctx_free(rift_ctx *ctx)
{
	if (!ctx->rma)
		return;
	free(ctx->rma->tab);
	free(ctx->rma);
	ctx->rma = NULL;
}

static struct rift__export *export_find(const rift_ctx *ctx, uint32_t id)
{
	const struct rift__rma_ctx *r = ctx->rma;
	struct rift__export *e;

	if (!r)
		return NULL;
	for (e = r->tab[id & (r->tab_size - 1)]; e; e = e->hnext)
		if (e->id == id)
			return e;
	return NULL;
}

/* Twice the buckets when the chains grow past two on average; a table
 * that cannot grow keeps working with longer chains. */
static void export_table_grow(struct rift__rma_ctx *r)
{
	size_t size = r->tab_size * 2;
	struct rift__export **tab = calloc(size, sizeof(*tab));

	if (!tab)
		return;
	for (size_t i = 0; i < r->tab_size; i++) {
		struct rift__export *e = r->tab[i];

		while (e) {
			struct rift__export *next = e->hnext;

			e->hnext = tab[e->id & (size - 1)];
			tab[e->id & (size - 1)] = e;
			e = next;
		}
	}
	free(r->tab);
	r->tab = tab;
	r->tab_size = size;
}

static void export_insert(struct rift__rma_ctx *r, struct rift__export *e)
{
	if (r->n_exports >= 2 * r->tab_size)
		export_table_grow(r);
	e->hnext = r->tab[e->id & (r->tab_size - 1)];
	r->tab[e->id & (r->tab_size - 1)] = e;
	r->n_exports++;
}

/* Take e out of the table and its connection's list, and free it. */
static void export_drop(rift_ctx *ctx, struct rift__export *e)
{
	struct rift__rma_ctx *r = ctx->rma;
	struct rift__export **pp = &r->tab[e->id & (r->tab_size - 1)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	r->n_exports--;
	pp = &e->conn->rma->exports;
	while (*pp != e)
		pp = &(*pp)->cnext;
	*pp = e->cnext;
	e->mem->n_exports--;
	/* Its windows stop serving, ahead of anything the paths send after
	 * (the peer's REVOKED among it); a dead path's went with it. */
	while (e->wins) {
		struct os_win *w = e->wins;

		e->wins = w->next;
		w->path->ops->rma_unexpose(w->path, w->win);
		free(w);
	}
	free(e);
}

int rift__mem_reg(rift_ctx *ctx, void *addr, size_t len, unsigned access,
		  rift_mem **out)
{
	struct rift__rma_ctx *r;
	rift_mem *mem;

	if (!len || (uintptr_t)addr + len < (uintptr_t)addr || !access ||
	    (access & ~(RIFT_MEM_READ | RIFT_MEM_WRITE)))
		return rift__ctx_fail(ctx, RIFT_EINVAL,
				      "rift_mem_reg: %s",
				      !len ? "length 0"
				      : !access || (access & ~(RIFT_MEM_READ |
							       RIFT_MEM_WRITE))
					      ? "access must be RIFT_MEM_READ "
						"and/or RIFT_MEM_WRITE"
					      : "range wraps");
	r = rift__rma_ctx_get(ctx);
	mem = r ? calloc(1, sizeof(*mem)) : NULL;
	if (!mem)
		return rift__ctx_fail(ctx, RIFT_ENOMEM, "rift_mem_reg: out of memory");
	mem->ctx = ctx;
	mem->addr = addr;
	mem->len = len;
	mem->access = access;
	{
		char why[RIFT_ERRMSG_LEN];
		int rc = rift__transports_mem_reg(ctx, mem, why, sizeof(why));

		if (rc) {
			free(mem);
			return rift__ctx_fail(ctx, rc, "rift_mem_reg: %s", why);
		}
	}
	rift__list_add_tail(&r->mems, &mem->node);
	*out = mem;
	return 0;
}

int rift__mem_dereg(rift_mem *mem)
{
	if (mem->n_exports || mem->n_ops)
		return rift__ctx_fail(mem->ctx, RIFT_EBUSY,
				      "rift_mem_dereg: %u exports live and %u "
				      "operations using it",
				      mem->n_exports, mem->n_ops);
	rift__transports_mem_drop(mem->ctx, mem);
	rift__list_del(&mem->node);
	free(mem);
	return 0;
}

/* ---- the connection's state ---- */

static struct rift__rma_conn *rma_conn(rift_conn *conn)
{
	struct rift__rma_conn *rc = conn->rma;

	if (rc)
		return rc;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return NULL;
	rc->conn = conn;
	rift__list_init(&rc->ops);
	rift__list_init(&rc->done);
	rift__list_init(&rc->due_node);
	rift__list_init(&rc->os);
	conn->rma = rc;
	return rc;
}

/* Work for the end of this round (rift__rma_run): callbacks, or room to
 * issue more.  Never inside a call of the application's. */
static void due(rift_conn *conn)
{
	struct rift__rma_conn *rc = conn->rma;

	if (rc->queued)
		return;
	rc->queued = true;
	rift__list_add_tail(&conn->ctx->rmaq, &rc->due_node);
}

static void undue(struct rift__rma_conn *rc)
{
	if (!rc->queued)
		return;
	rc->queued = false;
	rift__list_del(&rc->due_node);
}

static int conn_usable(rift_conn *conn)
{
	if (conn->closing)
		return RIFT_ECLOSED;
	if (conn->state != RIFT_CONN_ESTABLISHED &&
	    conn->state != RIFT_CONN_DETACHED) {
		rift__conn_error(conn, "one-sided access needs an established "
				       "session");
		return RIFT_ENOTCONN;
	}
	if (!rift__rma_negotiated(conn)) {
		rift__conn_error(conn, "the peer's rift has no one-sided access");
		return RIFT_ENOTSUP;
	}
	return 0;
}

/* A refusal: counted, logged (the first few per connection). */
static void refused(rift_conn *conn, const char *side, const char *why)
{
	struct rift__rma_conn *rc = conn->rma;

	conn->ctx->stats.rma_refused++;
	if (rc && rc->refusals < RMA_LOG_REFUSALS) {
		rc->refusals++;
		RIFT_WARN(conn->ctx, "session %016llx: one-sided access refused "
				     "%s: %s",
			  (unsigned long long)conn->session_id, side, why);
	} else {
		RIFT_DEBUG(conn->ctx, "session %016llx: one-sided access "
				      "refused %s: %s",
			   (unsigned long long)conn->session_id, side, why);
	}
}

int rift__mem_export(rift_mem *mem, rift_conn *conn, size_t off, size_t len,
		     unsigned access, void *token, size_t *token_len)
{
	rift_ctx *ctx = mem->ctx;
	struct rift__rma_ctx *r = ctx->rma;
	struct rift__token t = { 0 };
	struct rift__rma_conn *rc;
	struct rift__export *e;
	size_t need = rift__token_size(0);
	int rc_;

	if (conn->ctx != ctx)
		return rift__ctx_fail(ctx, RIFT_EINVAL, "rift_mem_export: the "
					   "connection is another context's");
	if (!len || off > mem->len || len > mem->len - off || !access ||
	    (access & ~mem->access))
		return rift__ctx_fail(ctx, RIFT_EINVAL, "rift_mem_export: %s",
				      !len ? "length 0"
				      : !access || (access & ~mem->access)
					      ? "access 0, or more than the "
						"region's"
					      : "range outside the region");
	rc_ = conn_usable(conn);
	if (rc_)
		return rc_;
	if (*token_len < need) {
		*token_len = need;
		return RIFT_ENOSPC;
	}
	rc = rma_conn(conn);
	e = rc ? calloc(1, sizeof(*e)) : NULL;
	if (!e)
		return RIFT_ENOMEM;
	do
		e->id = ++r->last_id;
	while (!e->id || export_find(ctx, e->id));
	e->mem = mem;
	e->conn = conn;
	e->off = off;
	e->len = len;
	e->access = access;
	t.access = (uint8_t)access;
	t.export_id = e->id;
	t.session_id = conn->session_id;
	t.base = (uint64_t)(uintptr_t)(mem->addr + off);
	t.len = len;
	rc_ = rift__token_encode(&t, conn->key, token, token_len);
	if (rc_) {
		free(e);
		return rc_;
	}
	export_insert(r, e);
	e->cnext = rc->exports;
	rc->exports = e;
	mem->n_exports++;
	return 0;
}

static void pend_add(struct rift__rma_conn *rc, struct rma_pend *p)
{
	p->next = NULL;
	if (rc->pend_tail)
		rc->pend_tail->next = p;
	else
		rc->pend_head = p;
	rc->pend_tail = p;
	rc->n_pend++;
}

static void serve(rift_conn *conn);

int rift__mem_revoke(rift_mem *mem, const void *token, size_t token_len)
{
	rift_ctx *ctx = mem->ctx;
	struct rift__token t;
	struct rift__export *e;
	rift_conn *conn;
	const char *why;

	if (rift__token_decode(token, token_len, &t, &why))
		return rift__ctx_fail(ctx, RIFT_EINVAL, "rift_mem_revoke: %s",
				      why);
	e = export_find(ctx, t.export_id);
	if (!e)
		return rift__ctx_fail(ctx, RIFT_ENOENT, "rift_mem_revoke: "
					   "revoked already, or its session "
					   "ended");
	conn = e->conn;
	if (e->mem != mem || !rift__token_tag_ok(token, token_len, conn->key))
		return rift__ctx_fail(ctx, RIFT_EINVAL, "rift_mem_revoke: %s",
				      e->mem != mem ? "a token of another region"
						    : "not a token this side "
						      "gave");
	export_drop(ctx, e);
	/* Tell the peer, so that what it queued by the token fails as
	 * revoked; an answer owed for it goes first (in order). */
	if (!conn->closing && conn->state != RIFT_CONN_DEAD) {
		struct rma_pend *p = calloc(1, sizeof(*p));

		if (p) {
			p->op = RIFT_RMA_REVOKED;
			p->off = t.export_id;
			pend_add(conn->rma, p);
			serve(conn);
		}
	}
	return 0;
}

/* ---- sending RMA frames ---- */

/* Whether a frame of len payload bytes fits the window now (one alone
 * may exceed it, as a message may: rift_conn_send). */
static bool window_room(const rift_conn *conn, uint64_t len)
{
	return !conn->window_used ||
	       conn->window_used + len + RIFT_HDR_SIZE <= rift__conn_window(conn);
}

static int rma_send(rift_conn *conn, const struct rift__rma_hdr *m,
		    const void *tok, const void *data, size_t dlen)
{
	size_t len = RIFT_RMA_HEAD + m->tok_len + dlen;
	struct rift__buf *b = rift__buf_new(conn->ctx, len);
	uint8_t *p;

	if (!b)
		return RIFT_ENOMEM;
	p = b->data;
	rift__rma_hdr_encode(p, m);
	if (m->tok_len)
		memcpy(p + RIFT_RMA_HEAD, tok, m->tok_len);
	if (dlen)
		memcpy(p + RIFT_RMA_HEAD + m->tok_len, data, dlen);
	rift__conn_enqueue_type(conn, b, len, RIFT_FRAME_RMA);
	return 0;
}

/* The largest piece of data one frame of this session carries, with a
 * token of tok_len bytes in it: both sides' max_msg_size, a quarter of
 * the window, RMA_PIECE_MAX; 0 if not even a byte fits. */
static uint64_t rma_piece(const rift_conn *conn, size_t tok_len)
{
	uint64_t max = conn->ctx->cfg.max_msg_size, w;

	if (conn->peer_max_msg && conn->peer_max_msg < max)
		max = conn->peer_max_msg;
	if (max <= RIFT_RMA_HEAD + tok_len)
		return 0;
	max -= RIFT_RMA_HEAD + tok_len;
	w = rift__conn_window(conn) / 4;
	if (w && w < max)
		max = w;
	return max < RMA_PIECE_MAX ? max : RMA_PIECE_MAX;
}

/* Answers owed, in order, while the window has room. */
static void serve(rift_conn *conn)
{
	struct rift__rma_conn *rc = conn->rma;

	while (rc->pend_head && conn->state != RIFT_CONN_DEAD &&
	       !conn->closing) {
		struct rma_pend *p = rc->pend_head;
		struct rift__rma_hdr m = { .op = p->op, .status = p->status,
					   .id = p->id, .off = p->off,
					   .len = p->len, .tag = p->tag };
		const void *data = NULL;
		size_t dlen = 0;

		if (p->op == RIFT_RMA_READ_RESP && !p->status) {
			const struct rift__export *e =
				export_find(conn->ctx, p->export_id);

			/* Revoked since it was asked for. */
			if (!e || e->conn != conn) {
				m.status = RIFT_EACCES;
			} else {
				data = e->mem->addr + e->off + p->off;
				dlen = p->len;
			}
		}
		if (!window_room(conn, RIFT_RMA_HEAD + dlen)) {
			conn->rma_wait = true;
			return;
		}
		if (rma_send(conn, &m, NULL, data, dlen)) {
			/* Out of memory: tried again at the next ack. */
			conn->rma_wait = true;
			return;
		}
		if (data)
			conn->ctx->stats.rma_served++;
		rc->pend_head = p->next;
		if (!rc->pend_head)
			rc->pend_tail = NULL;
		rc->n_pend--;
		free(p);
	}
}

/* ---- this side's operations ---- */

static bool op_finished(const struct rma_op *op)
{
	if (op->pieces)
		return false;
	if (op->status)
		return true;
	if (op->os_fail || op->issued < op->len)
		return false;
	return op->kind != RIFT__RMA_WRITE_NOTIFY || op->notify_answered;
}

/* op is over: its callback is due at the end of the round. */
static void op_done(rift_conn *conn, struct rma_op *op)
{
	rift__list_del(&op->node);
	rift__list_add_tail(&conn->rma->done, &op->node);
	due(conn);
}

static void op_account(rift_conn *conn, const struct rma_op *op)
{
	rift_ctx_stats *st = &conn->ctx->stats;

	if (op->status)
		return;
	if (op->kind == RIFT__RMA_READ) {
		st->rma_reads++;
		st->rma_read_bytes += op->len;
	} else {
		st->rma_writes++;
		st->rma_write_bytes += op->len;
	}
}

static void issue(rift_conn *conn);

/* An operation's memory: a spare one, or new. */
static struct rma_op *op_get(struct rift__rma_conn *rc)
{
	struct rma_op *op = rc->spare;

	if (!op)
		return malloc(sizeof(*op));
	rc->spare = op->spare;
	rc->n_spare--;
	return op;
}

static void op_put(rift_conn *conn, struct rma_op *op)
{
	struct rift__rma_conn *rc = conn->rma;

	if (!rc || rc->n_spare >= RMA_SPARE) {
		free(op);
		return;
	}
	op->spare = rc->spare;
	rc->spare = op;
	rc->n_spare++;
}

/* The callbacks due; returns how many ran. */
static int run_done(rift_conn *conn)
{
	struct rift__rma_conn *rc = conn->rma;
	int n = 0;

	while (!rift__list_empty(&rc->done)) {
		struct rma_op *op = rift__list_entry(rc->done.next,
						     struct rma_op, node);

		rift__list_del(&op->node);
		op->local->n_ops--;
		op_account(conn, op);
		if (!conn->closing && op->cb) {
			op->cb(conn, op->user, op->status,
			       op->status ? 0 : (size_t)op->len);
			n++;
		}
		op_put(conn, op);
	}
	return n;
}

/* ---- one-sided pieces (ops->rma_post) ---- */

static const struct os_key *key_find(const struct rift__rma_conn *rc,
				     uint32_t export_id, uint64_t attach)
{
	unsigned n = rc->n_keys < RMA_KEYS_MAX ? rc->n_keys : RMA_KEYS_MAX;

	for (unsigned i = 0; i < n; i++)
		if (rc->keys[i].export_id == export_id &&
		    rc->keys[i].attach == attach)
			return &rc->keys[i];
	return NULL;
}

static bool os_on(const struct rift__rma_conn *rc, const rift__path *p)
{
	for (struct rift__list *l = rc->os.next; l != &rc->os; l = l->next)
		if (rift__list_entry(l, struct os_piece, node)->path == p)
			return true;
	return false;
}

/*
 * The next piece of op by one-sided RDMA on the data path, when the peer
 * sent that path's key for its export: 0 posted; 1 not this way (frames
 * carry it); -1 wait (no room on the path now: a completion of its own
 * comes and issues again).
 */
static int direct(rift_conn *conn, struct rma_op *op)
{
	struct rift__rma_conn *rc = conn->rma;
	rift__path *p = conn->path;
	const struct os_key *k;
	struct os_piece *pc;
	uint64_t n = op->len - op->issued, max;
	int rc_;

	if (!p || p->state != RIFT_PATH_ATTACHED || !p->ops->rma_post)
		return 1;
	k = key_find(rc, op->export_id, p->attach);
	max = k ? p->ops->rma_max(p) : 0;
	if (!max)
		return 1;
	if (n > max)
		n = max;
	pc = op->piece0_out ? malloc(sizeof(*pc)) : &op->piece0;
	if (!pc)
		return 1;
	pc->cookie = ++rc->os_cookie;
	rc_ = p->ops->rma_post(p, op->kind == RIFT__RMA_READ, op->local,
			       op->local_off + op->issued,
			       op->base + op->remote_off + op->issued, k->rkey,
			       (uint32_t)n, pc->cookie);
	if (rc_) {
		if (pc != &op->piece0)
			free(pc);
		return rc_ == RIFT_EAGAIN && os_on(rc, p) ? -1 : 1;
	}
	if (pc == &op->piece0)
		op->piece0_out = true;
	pc->op = op;
	pc->path = p;
	pc->len = n;
	rift__list_add_tail(&rc->os, &pc->node);
	op->issued += n;
	op->pieces++;
	op->os_out++;
	rc->pieces_out++;
	return 0;
}

/* A one-sided piece is over: status 0, its bytes are placed; else its
 * operation is done again by frames once nothing of it is out. */
static void piece_end(rift_conn *conn, struct os_piece *pc, int status)
{
	struct rift__rma_conn *rc = conn->rma;
	struct rma_op *op = pc->op;

	rift__list_del(&pc->node);
	op->os_out--;
	op->pieces--;
	rc->pieces_out--;
	if (!status) {
		op->answered += pc->len;
		conn->ctx->stats.rma_direct++;
	} else if (!op->status) {
		op->os_fail = true;
	}
	/* The peer's adapter refused it: its window was invalidated (a
	 * revocation this side had not heard of) or does not cover it. */
	if (status == RIFT_EACCES)
		refused(conn, "by the peer's device",
			"a remote access error (window revoked or out of "
			"range): done again through the peer's library");
	if (pc == &op->piece0)
		op->piece0_out = false;
	else
		free(pc);
	if (op_finished(op))
		op_done(conn, op);
	due(conn); /* room for more */
}

void rift__rma_wr_done(rift__path *p, uint64_t cookie, int status)
{
	rift_conn *conn = p->conn;
	struct rift__rma_conn *rc = conn ? conn->rma : NULL;

	if (!rc)
		return;
	/* Completions come in the order posted: the oldest is the usual. */
	for (struct rift__list *l = rc->os.next; l != &rc->os; l = l->next) {
		struct os_piece *pc = rift__list_entry(l, struct os_piece, node);

		if (pc->cookie == cookie) {
			piece_end(conn, pc, status);
			return;
		}
	}
}

void rift__rma_path_gone(rift_conn *conn, rift__path *p)
{
	struct rift__rma_conn *rc = conn->rma;

	for (struct rift__export *e = rc->exports; e; e = e->cnext) {
		struct os_win **pp = &e->wins;

		while (*pp) {
			struct os_win *w = *pp;

			if (w->path == p) {
				*pp = w->next;
				free(w); /* the window goes with p */
			} else {
				pp = &w->next;
			}
		}
	}
	for (struct rift__list *l = rc->os.next; l != &rc->os;) {
		struct os_piece *pc = rift__list_entry(l, struct os_piece, node);

		l = l->next;
		if (pc->path == p)
			piece_end(conn, pc, RIFT_ECANCELED);
	}
}

/* The key of e's window on p to the peer (KEYS), ahead of what this side
 * answers after. */
static void keys_send(rift_conn *conn, struct rift__export *e,
		      struct os_win *w)
{
	struct rma_pend *k = calloc(1, sizeof(*k));

	if (!k)
		return; /* the peer's pieces there go by frames */
	k->op = RIFT_RMA_KEYS;
	k->id = e->id;
	k->off = w->attach;
	k->tag = w->rkey;
	pend_add(conn->rma, k);
}

/* e reachable by one-sided RDMA through p: a window bound there once,
 * its key told to the peer (again when p's attach counter changed). */
static void expose_on(rift_conn *conn, struct rift__export *e, rift__path *p)
{
	struct os_win *w;
	uint32_t rkey;
	void *win;

	if (!p->ops->rma_expose)
		return;
	for (w = e->wins; w; w = w->next)
		if (w->path == p) {
			if (w->attach != p->attach) {
				w->attach = p->attach;
				keys_send(conn, e, w);
			}
			return;
		}
	w = calloc(1, sizeof(*w));
	if (!w ||
	    p->ops->rma_expose(p, e->mem,
			       (uint64_t)(uintptr_t)(e->mem->addr + e->off),
			       e->len, e->access, &rkey, &win)) {
		free(w);
		return;
	}
	w->path = p;
	w->win = win;
	w->rkey = rkey;
	w->attach = p->attach;
	w->next = e->wins;
	e->wins = w;
	keys_send(conn, e, w);
}

/*
 * The export reachable by one-sided RDMA through the data path and every
 * joined standby, from its first use on (never-used exports cost no
 * window): the peer's next pieces need no frame of ours, and after a
 * failover onto a standby none either.
 */
static void expose(rift_conn *conn, struct rift__export *e)
{
	if (conn->path && conn->path->state == RIFT_PATH_ATTACHED)
		expose_on(conn, e, conn->path);
	for (unsigned i = 0; i < conn->n_standby; i++)
		if (conn->standby[i]->state == RIFT_PATH_STANDBY)
			expose_on(conn, e, conn->standby[i]);
}

void rift__rma_path_joined(rift_conn *conn, rift__path *p)
{
	struct rift__rma_conn *rc = conn->rma;
	bool any = false;

	if (!rc || conn->closing || conn->state == RIFT_CONN_DEAD)
		return;
	for (struct rift__export *e = rc->exports; e; e = e->cnext)
		if (e->wins) {
			expose_on(conn, e, p);
			any = true;
		}
	if (any)
		due(conn); /* the KEYS go from the round's end */
}

void rift__rma_path_reattach(rift_conn *conn, rift__path *p, uint64_t was)
{
	struct rift__rma_conn *rc = conn->rma;
	unsigned n = rc->n_keys < RMA_KEYS_MAX ? rc->n_keys : RMA_KEYS_MAX;

	for (unsigned i = 0; i < n; i++)
		if (rc->keys[i].attach == was)
			rc->keys[i].attach = p->attach;
	for (struct rift__export *e = rc->exports; e; e = e->cnext)
		for (struct os_win *w = e->wins; w; w = w->next)
			if (w->path == p && w->attach == was)
				w->attach = p->attach;
}

int rift__rma_run(rift_ctx *ctx)
{
	int n = 0;

	while (!rift__list_empty(&ctx->rmaq)) {
		struct rift__rma_conn *rc = rift__list_entry(
			ctx->rmaq.next, struct rift__rma_conn, due_node);
		rift_conn *conn = rc->conn;

		undue(rc);
		n += run_done(conn);
		if (conn->rma && conn->state != RIFT_CONN_DEAD &&
		    !conn->closing) {
			serve(conn);
			issue(conn);
		}
	}
	return n;
}

/* Issue what the window and the limits allow, operations in order (one
 * waiting stops those behind it). */
static void issue(rift_conn *conn)
{
	struct rift__rma_conn *rc = conn->rma;
	uint64_t half = rift__conn_window(conn) / 2;

	for (struct rift__list *l = rc->ops.next; l != &rc->ops;) {
		struct rma_op *op = rift__list_entry(l, struct rma_op, node);
		uint64_t piece = rma_piece(conn, op->tok_len);

		l = l->next;
		if (op->os_fail && !op->status) {
			/* A one-sided piece failed: once none is out, the
			 * whole operation again, by frames (the same bytes to
			 * the same place: harmless). */
			if (op->pieces)
				goto wait;
			op->os_fail = false;
			op->frames = true;
			op->issued = op->answered = 0;
			conn->ctx->stats.rma_redone++;
		}
		while (!op->status && op->issued < op->len) {
			struct rift__rma_hdr m = { .tok_len = op->tok_len,
						   .id = op->id,
						   .off = op->remote_off +
							  op->issued };
			uint64_t n = op->len - op->issued;
			bool rd = op->kind == RIFT__RMA_READ;

			if (rc->pieces_out >= RMA_PIECES)
				goto wait;
			if (!op->frames) {
				int d = direct(conn, op);

				if (d == 0)
					continue;
				if (d < 0)
					goto wait;
			}
			if (n > piece)
				n = piece;
			m.len = n;
			if ((rd && rc->read_out && rc->read_out + n > half) ||
			    !window_room(conn, RIFT_RMA_HEAD + op->tok_len +
						       (rd ? 0 : n)))
				goto wait;
			m.op = rd ? RIFT_RMA_READ_REQ : RIFT_RMA_WRITE;
			if (rma_send(conn, &m, op->tok,
				     rd ? NULL
					: op->local->addr + op->local_off +
						  op->issued,
				     rd ? 0 : n))
				goto wait; /* out of memory: at the next ack */
			op->issued += n;
			op->pieces++;
			rc->pieces_out++;
			if (rd)
				rc->read_out += n;
		}
		/* The notify once the write's bytes are placed (a one-sided
		 * piece's completion says so; frames go in order). */
		if (op->kind == RIFT__RMA_WRITE_NOTIFY && !op->status &&
		    !op->notify_sent && (op->os_out || op->os_fail))
			goto wait;
		if (op->kind == RIFT__RMA_WRITE_NOTIFY && !op->status &&
		    !op->notify_sent) {
			struct rift__rma_hdr m = { .op = RIFT_RMA_NOTIFY,
						   .tok_len = op->tok_len,
						   .id = op->id,
						   .off = op->remote_off,
						   .len = op->len,
						   .tag = op->tag };

			if (rc->pieces_out >= RMA_PIECES ||
			    !window_room(conn, RIFT_RMA_HEAD + op->tok_len) ||
			    rma_send(conn, &m, op->tok, NULL, 0))
				goto wait;
			op->notify_sent = true;
			op->pieces++;
			rc->pieces_out++;
		}
		if (op_finished(op))
			op_done(conn, op); /* refused before a piece went */
	}
	/* All issued: messages held back behind them may go. */
	if (conn->rma_queued) {
		conn->rma_queued = false;
		if (conn->want_writable &&
		    conn->window_used < rift__conn_window(conn)) {
			conn->want_writable = false;
			rift__conn_emit(conn, RIFT_EVENT_WRITABLE, 0,
					"send window open");
		}
	}
	return;
wait:
	conn->rma_wait = true;
	conn->rma_queued = true;
}

void rift__rma_kick(rift_conn *conn)
{
	conn->rma_wait = false;
	if (!conn->rma || conn->state == RIFT_CONN_DEAD || conn->closing)
		return;
	serve(conn);
	issue(conn);
}

static bool revoked_known(const struct rift__rma_conn *rc, uint32_t id)
{
	unsigned n = rc->n_revoked < RMA_REVOKED_KEEP ? rc->n_revoked
						      : RMA_REVOKED_KEEP;

	for (unsigned i = 0; i < n; i++)
		if (rc->revoked[i] == id)
			return true;
	return false;
}

/*
 * Decode token into *t and check that it is this session's and unaltered
 * (both sides hold the session key: a token altered or forged is refused
 * here, before a one-sided piece could carry it; the device may not check
 * a window's bounds: rxe does not).  The last token that checked is kept:
 * the same bytes again are not checked twice.  Returns RIFT_EINVAL for
 * bytes that are no token; else 0, with *why set when it is refused.
 */
static int token_check(rift_conn *conn, struct rift__rma_conn *rc,
		       const void *token, size_t token_len,
		       struct rift__token *t, const char **why)
{
	*why = NULL;
	if (token_len == rc->vtok_len && !memcmp(token, rc->vtok, token_len)) {
		*t = rc->vt;
		return 0;
	}
	if (rift__token_decode(token, token_len, t, why)) {
		rift__conn_error(conn, "not a token: %s", *why);
		return RIFT_EINVAL;
	}
	if (t->session_id != conn->session_id) {
		*why = "a token of another session";
	} else if (!rift__token_tag_ok(token, token_len, conn->key)) {
		*why = "a forged or altered token (its tag does not check)";
	} else {
		rc->vtok_len = (uint16_t)token_len;
		memcpy(rc->vtok, token, token_len);
		rc->vt = *t;
	}
	return 0;
}

int rift__rma_post(rift_conn *conn, int kind, rift_mem *local,
		   size_t local_off, const void *token, size_t token_len,
		   size_t remote_off, size_t len, uint64_t tag, rift_rma_cb cb,
		   void *user)
{
	unsigned need = kind == RIFT__RMA_READ ? RIFT_TOKEN_READ
					       : RIFT_TOKEN_WRITE;
	struct rift__rma_conn *rc;
	struct rift__token t;
	struct rma_op *op;
	const char *why;
	int rc_;

	if (local->ctx != conn->ctx || !len || local_off > local->len ||
	    len > local->len - local_off) {
		rift__conn_error(conn, "%s",
				 local->ctx != conn->ctx
					 ? "the local region is another "
					   "context's"
				 : !len ? "length 0"
					: "local range outside the region");
		return RIFT_EINVAL;
	}
	rc_ = conn_usable(conn);
	if (rc_)
		return rc_;
	rc = rma_conn(conn);
	if (!rc)
		return RIFT_ENOMEM;
	rc_ = token_check(conn, rc, token, token_len, &t, &why);
	if (rc_)
		return rc_;
	if (!why && revoked_known(rc, t.export_id))
		why = "a revoked token";
	else if (!why && !rift__fault_hit(RIFT_FAULT_RMA_UNCHECKED))
		rift__token_allows(&t, remote_off, len, need, &why);
	if (why) {
		rift__conn_error(conn, "one-sided access refused: %s", why);
		refused(conn, "here", why);
		return RIFT_EACCES;
	}
	if (!rma_piece(conn, token_len)) {
		rift__conn_error(conn, "max_msg_size too small for one-sided "
				       "access with this token");
		return RIFT_EMSGSIZE;
	}
	op = op_get(rc);
	if (!op)
		return RIFT_ENOMEM;
	/* Every field but the token's bytes past its length. */
	memset(op, 0, offsetof(struct rma_op, tok));
	op->id = ++rc->last_id;
	op->kind = kind;
	op->local = local;
	op->local_off = local_off;
	op->export_id = t.export_id;
	op->base = t.base;
	op->remote_off = remote_off;
	op->len = len;
	op->tag = tag;
	op->cb = cb;
	op->user = user;
	op->tok_len = (uint16_t)token_len;
	memcpy(op->tok, token, token_len);
	local->n_ops++;
	rift__list_add_tail(&rc->ops, &op->node);
	/* At once, even behind operations that wait: they may wait for the
	 * window (an ack kicks them) or for a path's room (its completions
	 * do), and this one may go by another way than theirs. */
	issue(conn);
	return 0;
}

/* ---- frames from the peer ---- */

/* The peer broke the protocol: the session ends as for any other frame
 * it could not have sent. */
static void peer_lied(rift_conn *conn, const char *why)
{
	if (conn->path && conn->path->state == RIFT_PATH_ATTACHED) {
		rift__path_reject(conn->path, RIFT_EPROTO, why);
		return;
	}
	rift__conn_error(conn, "RMA frame: %s", why);
	rift__conn_die(conn, RIFT_EVENT_DISCONNECTED, RIFT_EPROTO);
}

/* Whether the peer may do what m asks (need: RIFT_TOKEN_READ or _WRITE)
 * by its token: the export in *out, or the refusal's reason. */
static const char *check_request(rift_conn *conn,
				 const struct rift__rma_hdr *m, unsigned need,
				 struct rift__export **out)
{
	struct rift__token t;
	struct rift__export *e;
	const char *why = NULL;

	if (rift__token_decode(m->tok, m->tok_len, &t, &why))
		return why;
	if (!rift__token_tag_ok(m->tok, m->tok_len, conn->key))
		return "a forged or altered token (its tag does not check)";
	if (t.session_id != conn->session_id)
		return "a token of another session";
	e = export_find(conn->ctx, t.export_id);
	if (!e || e->conn != conn)
		return "a revoked token";
	if (t.len != e->len || t.base != (uint64_t)(uintptr_t)(e->mem->addr +
								e->off) ||
	    (t.access & ~e->access))
		return "a token that is not its export's";
	if (rift__token_allows(&t, m->off, m->len, need, &why))
		return why;
	*out = e;
	return NULL;
}

static void emit_written(rift_conn *conn, rift_mem *mem, uint64_t off,
			 uint64_t len, uint64_t tag)
{
	rift_event ev = {
		.type = RIFT_EVENT_WRITTEN,
		.transport = conn->transport,
		.peer = conn->path ? conn->path->peer : "",
		.message = "the peer wrote into an export",
		.local = conn->path ? conn->path->local : "",
		.mem = mem,
		.offset = off,
		.length = len,
		.tag = tag,
	};

	if (!conn->closing && conn->cbs.on_event)
		conn->cbs.on_event(conn, &ev);
}

/* A request of the peer's: checked, served (a write at once), answered
 * in order. */
static void request(rift_conn *conn, const struct rift__rma_hdr *m)
{
	struct rift__rma_conn *rc = rma_conn(conn);
	struct rift__export *e = NULL;
	unsigned need = m->op == RIFT_RMA_READ_REQ ? RIFT_TOKEN_READ
						   : RIFT_TOKEN_WRITE;
	const char *why;
	struct rma_pend *p;
	rift_mem *mem = NULL;
	uint64_t at = 0;

	if (!rc) {
		peer_lied(conn, "no memory for a one-sided request");
		return;
	}
	if (rc->n_pend >= RMA_PEND_MAX) {
		peer_lied(conn, "more one-sided requests unanswered than a "
				"requester may have");
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		rift__conn_error(conn, "no memory to answer a one-sided request");
		peer_lied(conn, "no memory to answer a one-sided request");
		return;
	}
	why = check_request(conn, m, need, &e);
	p->op = m->op == RIFT_RMA_READ_REQ ? RIFT_RMA_READ_RESP
					   : RIFT_RMA_WRITE_ACK;
	p->id = m->id;
	p->off = m->off;
	/* A notify's answer says 0 bytes: it is the notify's. */
	p->len = m->op == RIFT_RMA_NOTIFY ? 0 : m->len;
	if (!why)
		expose(conn, e); /* its KEYS go ahead of this answer */
	if (why) {
		p->status = RIFT_EACCES;
		refused(conn, "to the peer", why);
	} else if (m->op == RIFT_RMA_READ_REQ) {
		p->export_id = e->id;
	} else if (m->op == RIFT_RMA_WRITE) {
		memcpy(e->mem->addr + e->off + m->off, m->data, m->len);
		conn->ctx->stats.rma_served++;
	} else {
		mem = e->mem;
		at = e->off + m->off;
	}
	pend_add(rc, p);
	if (mem) /* e may be gone after the callback */
		emit_written(conn, mem, at, m->len, m->tag);
	if (conn->state != RIFT_CONN_DEAD && !conn->closing)
		serve(conn);
}

static struct rma_op *op_find(struct rift__rma_conn *rc, uint64_t id)
{
	/* Answers come in the order asked: the oldest is the usual one. */
	for (struct rift__list *l = rc->ops.next; l != &rc->ops; l = l->next) {
		struct rma_op *op = rift__list_entry(l, struct rma_op, node);

		if (op->id == id)
			return op;
	}
	return NULL;
}

/* An answer to one of this side's pieces. */
static void answer(rift_conn *conn, const struct rift__rma_hdr *m)
{
	struct rift__rma_conn *rc = conn->rma;
	struct rma_op *op = rc ? op_find(rc, m->id) : NULL;
	bool rd = m->op == RIFT_RMA_READ_RESP;

	if (!op || (rd != (op->kind == RIFT__RMA_READ))) {
		peer_lied(conn, "an answer to no one-sided operation asked");
		return;
	}
	if (m->op == RIFT_RMA_WRITE_ACK && m->len == 0) {
		if (op->kind != RIFT__RMA_WRITE_NOTIFY || !op->notify_sent ||
		    op->notify_answered) {
			peer_lied(conn, "an answer to no notify sent");
			return;
		}
		op->notify_answered = true;
	} else {
		if (m->off < op->remote_off ||
		    m->off + m->len > op->remote_off + op->issued ||
		    op->answered + m->len > op->issued) {
			peer_lied(conn, "an answer for bytes not asked for");
			return;
		}
		if (rd && !m->status)
			memcpy(op->local->addr + op->local_off +
				       (m->off - op->remote_off),
			       m->data, m->len);
		op->answered += m->len;
		if (rd)
			rc->read_out -= m->len;
	}
	if (m->status && !op->status) {
		op->status = m->status == RIFT_EACCES ? RIFT_EACCES : RIFT_EIO;
		rift__conn_error(conn, "one-sided access refused by the peer "
				       "(%s)",
				 op->status == RIFT_EACCES
					 ? "range, access, revoked or forged"
					 : "its error");
	}
	op->pieces--;
	rc->pieces_out--;
	if (op_finished(op))
		op_done(conn, op);
	/* Room for more (fewer unanswered). */
	issue(conn);
}

static void peer_revoked(rift_conn *conn, uint64_t id)
{
	struct rift__rma_conn *rc = rma_conn(conn);

	if (!rc)
		return;
	if (id > UINT32_MAX) {
		peer_lied(conn, "revocation of an export id no token has");
		return;
	}
	rc->revoked[rc->n_revoked++ % RMA_REVOKED_KEEP] = (uint32_t)id;
	for (unsigned i = 0; i < RMA_KEYS_MAX && i < rc->n_keys; i++)
		if (rc->keys[i].export_id == id)
			rc->keys[i].export_id = 0; /* no export has id 0 */
	for (struct rift__list *l = rc->ops.next; l != &rc->ops;) {
		struct rma_op *op = rift__list_entry(l, struct rma_op, node);

		l = l->next;
		if (op->export_id != id || op->status)
			continue;
		/* What it issued is answered (refused, from now on); the
		 * rest is not issued. */
		op->status = RIFT_EACCES;
		if (op_finished(op))
			op_done(conn, op);
	}
}

/* The peer's window for one of its exports on a path: its next pieces
 * there go by one-sided RDMA.  A lie costs only the liar: a key that
 * does not serve fails its piece, which frames then redo. */
static void peer_keys(rift_conn *conn, const struct rift__rma_hdr *m)
{
	struct rift__rma_conn *rc = rma_conn(conn);
	struct os_key *k;

	if (!rc || !m->id || revoked_known(rc, (uint32_t)m->id))
		return;
	k = (struct os_key *)key_find(rc, (uint32_t)m->id, m->off);
	if (!k)
		k = &rc->keys[rc->n_keys++ % RMA_KEYS_MAX];
	k->export_id = (uint32_t)m->id;
	k->attach = m->off;
	k->rkey = (uint32_t)m->tag;
	/* Pieces waiting behind the window may go this way now. */
	due(conn);
}

void rift__rma_frame(rift_conn *conn, const uint8_t *payload, uint32_t len)
{
	struct rift__rma_hdr m;
	const char *why;

	if (rift__rma_hdr_decode(payload, len, &m, &why)) {
		peer_lied(conn, why);
		return;
	}
	switch (m.op) {
	case RIFT_RMA_READ_REQ:
	case RIFT_RMA_WRITE:
	case RIFT_RMA_NOTIFY:
		request(conn, &m);
		break;
	case RIFT_RMA_READ_RESP:
	case RIFT_RMA_WRITE_ACK:
		answer(conn, &m);
		break;
	case RIFT_RMA_REVOKED:
		peer_revoked(conn, m.off);
		break;
	case RIFT_RMA_KEYS:
		peer_keys(conn, &m);
		break;
	}
}

/* ---- the end ---- */

static void drop_exports(rift_conn *conn)
{
	while (conn->rma->exports)
		export_drop(conn->ctx, conn->rma->exports);
}

/* Pieces posted on paths: never reported now (the session is over). */
static void drop_os(struct rift__rma_conn *rc)
{
	while (!rift__list_empty(&rc->os)) {
		struct os_piece *pc = rift__list_entry(rc->os.next,
						       struct os_piece, node);

		rift__list_del(&pc->node);
		if (pc == &pc->op->piece0)
			pc->op->piece0_out = false;
		else
			free(pc);
	}
}

static void drop_pend(struct rift__rma_conn *rc)
{
	while (rc->pend_head) {
		struct rma_pend *p = rc->pend_head;

		rc->pend_head = p->next;
		free(p);
	}
	rc->pend_tail = NULL;
	rc->n_pend = 0;
}

void rift__rma_conn_end(rift_conn *conn, int status)
{
	struct rift__rma_conn *rc = conn->rma;

	if (!rc)
		return;
	drop_exports(conn);
	drop_pend(rc);
	conn->rma_wait = false;
	/* Every operation fails now, before the session's event. */
	while (!rift__list_empty(&rc->ops)) {
		struct rma_op *op = rift__list_entry(rc->ops.next,
						     struct rma_op, node);

		op->status = status ? status : RIFT_ECONNRESET;
		op->pieces = 0;
		rift__list_del(&op->node);
		rift__list_add_tail(&rc->done, &op->node);
	}
	drop_os(rc);
	rc->read_out = 0;
	rc->pieces_out = 0;
	conn->rma_queued = false;
	undue(rc);
	run_done(conn);
}

void rift__rma_conn_free(rift_conn *conn)
{
	struct rift__rma_conn *rc = conn->rma;

	if (!rc)
		return;
	drop_exports(conn);
	drop_pend(rc);
	drop_os(rc);
	undue(rc);
	while (rc->spare) {
		struct rma_op *op = rc->spare;

		rc->spare = op->spare;
		free(op);
	}
	for (int i = 0; i < 2; i++) {
		struct rift__list *list = i ? &rc->done : &rc->ops;

		while (!rift__list_empty(list)) {
			struct rma_op *op = rift__list_entry(list->next,
							     struct rma_op,
							     node);

			rift__list_del(&op->node);
			op->local->n_ops--;
			free(op);
		}
	}
	free(rc);
	conn->rma = NULL;
}
