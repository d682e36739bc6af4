/*
 * rift-perf's one-sided traffic on the client (--op write, --op read),
 * as perftest's ib_write_* and ib_read_* post theirs.  Each data
 * connection has a region of its own (opts.rma_len bytes: -s times
 * opts.rma_slots), and the server one per data connection, exported to
 * it with RIFT_MEM_READ | RIFT_MEM_WRITE; its token came in JOIN_OK.
 *
 *   write lat  perftest's write_lat: a ping-pong of plain rift_conn_write
 *              of -s bytes, each side writing into the other's region
 *              (this side's is exported to the server in JOIN) and
 *              polling the last byte of its own slot until the other's
 *              write lands, with an __ATOMIC_ACQUIRE load after every
 *              round of the loop (rma_poll; the loop never sleeps while
 *              a step runs, whatever the polling mode, as ib_write_lat
 *              spins and refuses -e).  Each write's last byte is
 *              rma_mark(k), k counting the slot's writes of the step;
 *              the server answers the k-th with a k-th of its own.  A
 *              round trip ends once the server's write landed and this
 *              side's write's callback ran (its slot may be written
 *              again); the sample is the time from the call to then,
 *              as perftest's is the time from one post to the next.
 *              A region is two halves of -t slots: [0, -t x -s) to
 *              write from, the rest to be written into (perftest's
 *              write_lat buffer has a half for each).
 *   write lat  --notify: rift_conn_write_notify of -s bytes into the
 *   --notify   server's region; the server, told by RIFT_EVENT_WRITTEN,
 *              writes them back into this side's region with a
 *              write_notify of its own; a sample is the time from the
 *              call to that WRITTEN here: rift's way of telling an
 *              application, a notify frame after each write.
 *   read lat   rift_conn_read of -s bytes; a sample is the time from the
 *              call to its callback: one READ, itself a round trip.
 *   write bw,  -t operations outstanding on each connection; each
 *   read bw    callback calls the next operation at once, in its slot.
 *
 * An operation's slot says where it reads and writes, at the same offset
 * in both regions: slot modulo rma_slots, times -s (polled write lat:
 * from this half to the other).  Every callback runs on the loop
 * thread, from rift_ctx_progress (never inside the call).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static bool write_polled(const struct opts *o)
{
	return write_lat_polled(o->op, o->test, o->notify);
}

/* Polled write lat: the last byte of slot's range in the half the
 * server writes into, on this step's size. */
static uint8_t *poll_byte(const struct cconn *c, uint32_t slot)
{
	const struct client *cl = c->cl;

	return c->buf + cl->o->rma_len / 2 + (size_t)slot * cl->size +
	       cl->size - 1;
}

static void rma_done(rift_conn *conn, void *user, int status, size_t bytes);

/*
 * Call op's next operation, if the phase wants more.  now: a stamp just
 * taken (the completion that freed the slot), used as this call's, as
 * perftest stamps each round trip once; 0: take one.
 */
static void rma_call(struct rma_op *op, uint64_t now)
{
	struct cconn *c = op->c;
	struct client *cl = c->cl;
	const struct opts *o = cl->o;
	size_t off = (size_t)(op->slot % o->rma_slots) * (size_t)cl->size;
	const char *what;
	int rc;

	if (cl->failed || !more_to_send(c))
		return;
	if (o->test == TEST_LAT)
		op->t = now ? now : stamp_now();
	if (o->op == OP_READ) {
		what = "rift_conn_read";
		rc = rift_conn_read(c->conn, c->mem, off, c->rtok, c->rtok_len,
				    off, cl->size, rma_done, op);
	} else if (write_polled(o)) {
		/* The slot's next mark last: the server polls for it.  The
		 * slot's previous write has called back (rma_done). */
		op->k++;
		c->buf[off + cl->size - 1] = rma_mark(op->k);
		what = "rift_conn_write";
		rc = rift_conn_write(c->conn, c->mem, off, c->rtok, c->rtok_len,
				     o->rma_len / 2 + off, cl->size, rma_done,
				     op);
	} else if (o->test == TEST_LAT) {
		/* the tag names the slot: the server's answer carries it */
		what = "rift_conn_write_notify";
		rc = rift_conn_write_notify(c->conn, c->mem, off, c->rtok,
					    c->rtok_len, off, cl->size,
					    op->slot, rma_done, op);
	} else {
		what = "rift_conn_write";
		rc = rift_conn_write(c->conn, c->mem, off, c->rtok, c->rtok_len,
				     off, cl->size, rma_done, op);
	}
	if (rc) {
		/* a non-zero return: the callback never runs */
		cl_fail_rc(cl, rc, "%s on data connection %d: %s (%s)", what,
			   c->idx, rift_strerror(rc),
			   rift_conn_last_error(c->conn));
		return;
	}
	c->sent++;
	c->inflight++;
	if (o->op == OP_WRITE && o->test == TEST_LAT)
		c->ts_n++; /* a round trip waiting for the server's write */
	if (write_polled(o))
		op->busy = op->awaited = true;
}

static void lat_sample(struct cconn *c, uint64_t t, uint64_t now)
{
	struct client *cl = c->cl;

	if (c->recvd > cl->o->warmup &&
	    samples_push(&cl->lat, now > t ? now - t : 0))
		cl_fail_rc(cl, RIFT_ENOMEM,
			   "out of memory for latency samples");
}

/*
 * Polled write lat: op's round trip is over (the server's write landed
 * and this side's called back): the next write at once, stamped now,
 * then the sample.
 */
static void round_trip_end(struct rma_op *op)
{
	struct cconn *c = op->c;
	uint64_t now = stamp_now(), t = op->t;

	c->recvd++;
	rma_call(op, now);
	lat_sample(c, t, now);
}

static void rma_done(rift_conn *conn, void *user, int status, size_t bytes)
{
	struct rma_op *op = user;
	struct cconn *c = op->c;
	struct client *cl = c->cl;
	const struct opts *o = cl->o;
	uint64_t now, t;

	(void)conn;
	c->inflight--;
	if (status) {
		cl_fail_rc(cl, status,
			   "%s on data connection %d failed: %s (%s)",
			   op_name(o->op), c->idx, rift_strerror(status),
			   rift_conn_last_error(c->conn));
		return;
	}
	if (bytes != cl->size) {
		cl_fail(cl, "%s on data connection %d: %zu bytes of %" PRIu64,
			op_name(o->op), c->idx, bytes, cl->size);
		return;
	}
	/* write lat --notify: the round trip ends with the server's write;
	 * the slot may already carry the next one (op->t is its) */
	if (o->notify)
		return;
	/* polled: once the server's write landed too (rma_poll) */
	if (write_polled(o)) {
		op->busy = false;
		if (!op->awaited)
			round_trip_end(op);
		return;
	}
	c->recvd++;
	if (o->test == TEST_BW) {
		rma_call(op, 0);
		return;
	}
	/* The next READ first (perftest posts before it stores), then the
	 * sample. */
	now = stamp_now();
	t = op->t;
	rma_call(op, now);
	lat_sample(c, t, now);
}

/*
 * Polled write lat, after every round of the client's loop: the last
 * byte of each slot a server's write is awaited in.  The load acquires:
 * what the write brought is seen before the mark, on any transport
 * (over frames this side's rift copied it in during the round).
 * Returns whether a write had landed.
 */
static bool rma_look(struct client *cl)
{
	bool seen = false;

	for (uint32_t i = 0; i < cl->n_data; i++) {
		struct cconn *c = &cl->data[i];

		for (uint32_t s = 0; c->ts_n && s < cl->o->qd; s++) {
			struct rma_op *op = &c->ops[s];

			if (!op->awaited || __atomic_load_n(poll_byte(c, s),
							    __ATOMIC_ACQUIRE) !=
						    rma_mark(op->k))
				continue;
			op->awaited = false;
			c->ts_n--;
			seen = true;
			if (!op->busy)
				round_trip_end(op);
		}
	}
	return seen;
}

void rma_poll(struct client *cl)
{
	/* Memory first, as ib_write_lat spins on its byte: up to
	 * RMA_SPINS looks before the next round of the loop, which reaps
	 * the completions (a write seen ends the spin at once). */
	for (int n = 0; n < RMA_SPINS && !rma_look(cl); n++)
		;
}

/* Polled write lat: a new step starts from zeroed slots and marks.  No
 * write is under way: the last step ended with every callback run on
 * both sides (DONE), so nothing lands in the half cleared here. */
void rma_begin(struct cconn *c)
{
	const struct opts *o = c->cl->o;

	if (!write_polled(o) || !c->buf)
		return;
	memset(c->buf + o->rma_len / 2, 0, o->rma_len / 2);
	for (uint32_t s = 0; s < o->qd; s++)
		c->ops[s].k = 0;
}

/* write lat --notify: the server's write back, the end of a round trip. */
void rma_on_written(struct cconn *c, const rift_event *ev)
{
	struct client *cl = c->cl;
	uint64_t now = stamp_now(), t;
	struct rma_op *op;

	if (ev->mem != c->mem || ev->tag >= cl->o->qd ||
	    ev->length != cl->size || !c->ts_n) {
		cl_fail(cl,
			"data connection %d: a write from the server that "
			"answers none (tag %" PRIu64 ", %" PRIu64 " bytes)",
			c->idx, ev->tag, ev->length);
		return;
	}
	op = &c->ops[ev->tag];
	t = op->t;
	c->ts_n--;
	c->recvd++;
	rma_call(op, now);
	lat_sample(c, t, now);
}

/* The first operations of a phase: -t on each data connection. */
void rma_start(struct client *cl)
{
	for (uint32_t i = 0; i < cl->n_data; i++)
		for (uint32_t s = 0; s < cl->o->qd && !cl->failed; s++)
			rma_call(&cl->data[i].ops[s], 0);
}

/*
 * Once c is connected: its region, registered; for write lat also
 * exported to the server, the token into tok (room *tok_len, its size on
 * return; 0 when there is none to send).  0, or -1 with the failure in
 * cl.  The region stays until rma_conn_release, after c's close
 * callback: its export ends with the session, and no operation of
 * c uses it any more.
 */
int rma_conn_setup(struct cconn *c, void *tok, size_t *tok_len)
{
	struct client *cl = c->cl;
	const struct opts *o = cl->o;
	void *buf;
	int rc;

	c->ops = calloc(o->qd, sizeof(*c->ops));
	if (!c->ops || posix_memalign(&buf, 4096, o->rma_len)) {
		cl_fail_rc(cl, RIFT_ENOMEM,
			   "out of memory for a region of %" PRIu64 " bytes",
			   o->rma_len);
		return -1;
	}
	c->buf = buf;
	/* Bytes for the server to read (and valgrind to see written). */
	memset(c->buf, 0xa5, o->rma_len);
	for (uint32_t s = 0; s < o->qd; s++) {
		c->ops[s].c = c;
		c->ops[s].slot = s;
	}
	rc = rift_mem_reg(cl->ctx, c->buf, o->rma_len,
			  RIFT_MEM_READ | RIFT_MEM_WRITE, &c->mem);
	if (rc) {
		cl_fail_rc(cl, rc, "rift_mem_reg of %" PRIu64 " bytes: %s (%s)",
			   o->rma_len, rift_strerror(rc),
			   rift_ctx_last_error(cl->ctx));
		return -1;
	}
	if (o->op != OP_WRITE || o->test != TEST_LAT) {
		*tok_len = 0;
		return 0;
	}
	rc = rift_mem_export(c->mem, c->conn, 0, o->rma_len,
			     RIFT_MEM_READ | RIFT_MEM_WRITE, tok, tok_len);
	if (rc) {
		cl_fail_rc(cl, rc,
			   "rift_mem_export on data connection %d: %s (%s)",
			   c->idx, rift_strerror(rc),
			   rift_conn_last_error(c->conn));
		return -1;
	}
	return 0;
}

/* After c's close callback: deregister its region and free it.  A
 * region rift refuses to let go stays (and rift_ctx_destroy says so). */
void rma_conn_release(struct cconn *c)
{
	int rc;

	if (c->mem) {
		rc = rift_mem_dereg(c->mem);
		if (rc) {
			cl_fail_rc(c->cl, rc, "rift_mem_dereg: %s",
				   rift_strerror(rc));
			return;
		}
		c->mem = NULL;
	}
	free(c->buf);
	c->buf = NULL;
	free(c->ops);
	c->ops = NULL;
}
