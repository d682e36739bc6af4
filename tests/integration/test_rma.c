/*
 * One-sided access (issue 17; rift.h, "One-sided access"): regions,
 * exports and their tokens, reads and writes of the peer's memory, and
 * what is refused, where.  Data-path tests: over TCP on the host, over
 * verbs in the lab.
 */
#include <string.h>
#include <sys/resource.h>

#include "internal.h"
#include "session/session.h"
#include "harness.h"

#define BIG (3u << 20) /* several pieces, more than a window's quarter */

/* What the exporting side saw besides what struct side records. */
struct written {
	int n;
	rift_mem *mem;
	uint64_t offset, length, tag;
	uint64_t recv_before; /* messages delivered before the event */
};
static struct written wr;
static const struct side *wr_side;

static void on_event(rift_conn *conn, const rift_event *ev)
{
	if (ev->type == RIFT_EVENT_WRITTEN) {
		wr.n++;
		wr.mem = ev->mem;
		wr.offset = ev->offset;
		wr.length = ev->length;
		wr.tag = ev->tag;
		wr.recv_before = wr_side ? wr_side->recv_count : 0;
		return;
	}
	h_callbacks.on_event(conn, ev);
}

static const rift_conn_callbacks cbs = { .on_event = on_event,
					 .on_recv = NULL };

/* Completions, by the user pointer's index. */
#define OPS 64
struct done {
	int calls[OPS];
	int status[OPS];
	size_t bytes[OPS];
	int n;
	int written_seen[OPS]; /* wr.n when the callback ran */
};
static struct done dn;

static void on_done(rift_conn *conn, void *user, int status, size_t bytes)
{
	uintptr_t i = (uintptr_t)user;

	(void)conn;
	if (i >= OPS)
		abort();
	dn.calls[i]++;
	dn.status[i] = status;
	dn.bytes[i] = bytes;
	dn.written_seen[i] = wr.n;
	dn.n++;
}

static bool wait_done(rift_ctx *ctx, int n, int ms)
{
	uint64_t end = h_now_us() + (uint64_t)ms * 1000;

	while (dn.n < n && h_now_us() < end)
		rift_ctx_run(ctx, 5);
	return dn.n >= n;
}

struct pair {
	rift_ctx *ctx;
	rift_listener *l;
	struct side srv, cli;
	rift_conn *c;
};

static void pair_up(struct pair *p, const rift_config *cfg)
{
	memset(p, 0, sizeof(*p));
	memset(&dn, 0, sizeof(dn));
	memset(&wr, 0, sizeof(wr));
	wr_side = &p->srv;
	p->ctx = h_ctx(cfg);
	p->l = h_listen(p->ctx, &p->srv);
	p->c = h_connect(p->ctx, rift_listener_port(p->l), &p->cli);
	h_connected(p->ctx, &p->cli);
	CHECK(h_wait(p->ctx, &p->srv.connected, 5000));
	rift_conn_set_callbacks(p->srv.conn, &cbs);
}

/* Close what is open, then deregister the regions (their exports end
 * with the sessions), then the context must go. */
static void teardown(rift_ctx *ctx, rift_listener *l, rift_conn **conns,
		     int nc, rift_mem **mems, int n)
{
	h_close_all(ctx, l, conns, nc);
	/* Their exports end with the sessions: the closes must be done. */
	CHECK(h_close_wait(ctx, 20000));
	for (int i = 0; i < n; i++)
		CHECK_EQ(rift_mem_dereg(mems[i]), 0);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}

static void pair_down(struct pair *p, rift_mem **mems, int n)
{
	rift_conn *conns[2] = { p->c, p->srv.conn };

	teardown(p->ctx, p->l, conns, 2, mems, n);
}

static void pattern(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 131u + seed + (i >> 12));
}

TEST_TIMEOUT(rma_write_then_read_moves_every_byte_once, 120)
{
	struct pair p;
	static uint8_t exp_buf[BIG + 4096], src[BIG], dst[BIG];
	rift_mem *em, *sm, *dm, *mems[3];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);
	rift_ctx_stats st;

	pair_up(&p, NULL);
	CHECK_EQ(rift_mem_reg(p.ctx, exp_buf, sizeof(exp_buf),
			      RIFT_MEM_READ | RIFT_MEM_WRITE, &em), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, src, sizeof(src), RIFT_MEM_READ, &sm), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, dst, sizeof(dst), RIFT_MEM_READ, &dm), 0);
	CHECK(rift_mem_addr(em) == exp_buf);
	CHECK_EQ(rift_mem_len(em), sizeof(exp_buf));
	/* The export starts 4 KiB in: offsets are the export's. */
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 4096, BIG,
				 RIFT_MEM_READ | RIFT_MEM_WRITE, tok, &tl), 0);
	CHECK(tl > 0 && tl <= RIFT_TOKEN_MAX_LEN);
	pattern(src, sizeof(src), 7);
	memset(exp_buf, 0xee, sizeof(exp_buf));
	CHECK_EQ(rift_conn_write(p.c, sm, 0, tok, tl, 0, BIG, on_done,
				 (void *)0), 0);
	CHECK_EQ(dn.n, 0); /* never from inside the call */
	CHECK(wait_done(p.ctx, 1, 30000));
	CHECK_EQ(dn.status[0], 0);
	CHECK_EQ(dn.bytes[0], BIG);
	CHECK(memcmp(exp_buf + 4096, src, BIG) == 0);
	CHECK_EQ(exp_buf[4095], 0xee); /* nothing before the export */
	/* Read it back, and a piece from the middle, in two operations. */
	CHECK_EQ(rift_conn_read(p.c, dm, 0, tok, tl, 0, BIG, on_done,
				(void *)1), 0);
	CHECK_EQ(rift_conn_read(p.c, dm, 100, tok, tl, 12345, 777, on_done,
				(void *)2), 0);
	CHECK(wait_done(p.ctx, 3, 30000));
	CHECK_EQ(dn.status[1], 0);
	CHECK_EQ(dn.status[2], 0);
	CHECK_EQ(dn.bytes[2], 777);
	CHECK(memcmp(dst + 777 + 100, src + 777 + 100, BIG - 877) == 0);
	CHECK(memcmp(dst + 100, src + 12345, 777) == 0);
	rift_ctx_run(p.ctx, 20);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(dn.calls[i], 1);
	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(p.ctx, &st), 0);
	CHECK_EQ(st.rma_writes, 1);
	CHECK_EQ(st.rma_write_bytes, BIG);
	CHECK_EQ(st.rma_reads, 2);
	CHECK_EQ(st.rma_read_bytes, BIG + 777);
	CHECK(st.rma_served >= 3);
	CHECK_EQ(st.rma_refused, 0);
	/* On verbs the first pieces taught the requester the window's key
	 * (the exporter's KEYS): the reads went by RDMA READ alone, three
	 * pieces at least (BIG in 1 MiB ones); over TCP nothing can. */
	if (strcmp(rt_transport(), "rdma") == 0)
		CHECK(st.rma_direct >= 3);
	else
		CHECK_EQ(st.rma_direct, 0);
	CHECK_EQ(st.rma_redone, 0);
	/* Neither side's application saw a message. */
	CHECK_EQ(p.cli.recv_count, 0);
	CHECK_EQ(p.srv.recv_count, 0);
	mems[0] = em, mems[1] = sm, mems[2] = dm;
	pair_down(&p, mems, 3);
}

/* Which side refuses what: the requester what its token shows (range,
 * access, session, known revoked); the exporter what only its key and
 * table can tell (a forged or altered token, a revocation the requester
 * has not heard of yet).  Refusals are counted. */
TEST_TIMEOUT(rma_refuses_what_the_token_does_not_grant, 60)
{
	struct pair p;
	static uint8_t buf[65536], mine[65536];
	rift_mem *em, *lm, *mems[2];
	uint8_t tok[RIFT_TOKEN_MAX_LEN], ro[RIFT_TOKEN_MAX_LEN],
		bad[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok), rl = sizeof(ro), small = 8;
	rift_ctx_stats st;
	struct side other = { 0 }, other_srv = { 0 };
	rift_listener *l2;
	rift_conn *c2;

	pair_up(&p, NULL);
	CHECK_EQ(rift_mem_reg(p.ctx, buf, sizeof(buf),
			      RIFT_MEM_READ | RIFT_MEM_WRITE, &em), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, mine, sizeof(mine), RIFT_MEM_READ, &lm),
		 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, 4096,
				 RIFT_MEM_READ | RIFT_MEM_WRITE, tok, &tl), 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 8192, 4096, RIFT_MEM_READ, ro,
				 &rl), 0);
	/* Export arguments. */
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, 4096, RIFT_MEM_READ, bad,
				 &small), RIFT_ENOSPC);
	CHECK_EQ(small, tl);
	small = sizeof(bad);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 65000, 4096, RIFT_MEM_READ,
				 bad, &small), RIFT_EINVAL);
	CHECK_EQ(rift_mem_export(lm, p.srv.conn, 0, 4096, RIFT_MEM_WRITE, bad,
				 &small), RIFT_EINVAL); /* more than lm grants */
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, 0, RIFT_MEM_READ, bad,
				 &small), RIFT_EINVAL);
	/* Refused here, before anything goes: no callback. */
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 4000, 200, on_done,
				(void *)0), RIFT_EACCES); /* past the end */
	CHECK(strstr(rift_conn_last_error(p.c), "range") != NULL);
	CHECK_EQ(rift_conn_write(p.c, lm, 0, ro, rl, 0, 16, on_done,
				 (void *)0), RIFT_EACCES); /* read only */
	CHECK_EQ(rift_conn_read(p.c, lm, 65000, tok, tl, 0, 1000, on_done,
				(void *)0), RIFT_EINVAL); /* local range */
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl - 1, 0, 16, on_done,
				(void *)0), RIFT_EINVAL); /* no token */
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, 0, on_done,
				(void *)0), RIFT_EINVAL);
	/* Another session's token: refused by the requester. */
	l2 = h_listen(p.ctx, &other_srv);
	c2 = h_connect(p.ctx, rift_listener_port(l2), &other);
	h_connected(p.ctx, &other);
	CHECK_EQ(rift_conn_read(c2, lm, 0, tok, tl, 0, 16, on_done, (void *)0),
		 RIFT_EACCES);
	CHECK(strstr(rift_conn_last_error(c2), "another session") != NULL);
	CHECK_EQ(dn.n, 0);
	/* A forged tag, a range widened by hand, the read-only token's
	 * access raised: the requester holds the session key too, and
	 * refuses them before a piece could go (on verbs, through a window
	 * whose bounds rxe does not check).  The exporter's own checks of
	 * the same are test_hostile.c's (a peer that bypasses rift). */
	memcpy(bad, tok, tl);
	bad[tl - 1] ^= 1;
	CHECK_EQ(rift_conn_read(p.c, lm, 0, bad, tl, 0, 16, on_done,
				(void *)1), RIFT_EACCES);
	CHECK(strstr(rift_conn_last_error(p.c), "forged") != NULL);
	memcpy(bad, tok, tl);
	bad[24 + 6] = 0x20; /* length 4096 (big-endian) -> 8192 */
	CHECK_EQ(rift_conn_write(p.c, lm, 0, bad, tl, 4096, 16, on_done,
				 (void *)2), RIFT_EACCES);
	memcpy(bad, ro, rl);
	bad[1] |= RIFT_MEM_WRITE;
	CHECK_EQ(rift_conn_write(p.c, lm, 0, bad, rl, 0, 16, on_done,
				 (void *)3), RIFT_EACCES);
	CHECK_EQ(dn.n, 0);
	for (size_t i = 4096; i < 4096 + 16; i++)
		CHECK_EQ(buf[i], 0); /* the widened write did not land */
	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(p.ctx, &st), 0);
	CHECK_EQ(st.rma_refused, 3 + 3); /* all here */
	CHECK_EQ(st.rma_served, 0);
	/* The session is intact: a good read works. */
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, 16, on_done,
				(void *)4), 0);
	CHECK(wait_done(p.ctx, 1, 10000));
	CHECK_EQ(dn.status[4], 0);
	CHECK_EQ(p.cli.disconnected, 0);
	rift_conn_close(c2, NULL);
	rift_conn_close(other_srv.conn, NULL);
	rift_listener_close(l2, NULL);
	mems[0] = em, mems[1] = lm;
	pair_down(&p, mems, 2);
}

TEST_TIMEOUT(rma_revoke_ends_every_copy_of_a_token, 60)
{
	struct pair p;
	static uint8_t buf[8192], mine[8192];
	rift_mem *em, *lm, *mems[2];
	uint8_t tok[RIFT_TOKEN_MAX_LEN], t2[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok), tl2 = sizeof(t2);
	rift_ctx_stats st;

	pair_up(&p, NULL);
	CHECK_EQ(rift_mem_reg(p.ctx, buf, sizeof(buf), RIFT_MEM_READ, &em), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, mine, sizeof(mine), RIFT_MEM_READ, &lm),
		 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, 4096, RIFT_MEM_READ, tok,
				 &tl), 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 4096, 4096, RIFT_MEM_READ, t2,
				 &tl2), 0);
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, 64, on_done,
				(void *)0), 0);
	CHECK(wait_done(p.ctx, 1, 10000));
	CHECK_EQ(dn.status[0], 0);
	/* Live exports keep the region. */
	CHECK_EQ(rift_mem_dereg(em), RIFT_EBUSY);
	CHECK_EQ(rift_mem_revoke(lm, tok, tl), RIFT_EINVAL); /* not lm's */
	CHECK_EQ(rift_mem_revoke(em, tok, tl), 0);
	CHECK_EQ(rift_mem_revoke(em, tok, tl), RIFT_ENOENT);
	/* Posted before the requester heard: the exporter refuses it. */
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, 64, on_done,
				(void *)1), 0);
	CHECK(wait_done(p.ctx, 2, 10000));
	CHECK_EQ(dn.status[1], RIFT_EACCES);
	/* On verbs the requester held the window's key: its READ went,
	 * the device refused it (the window invalidated), and the frames
	 * that redid it were refused by the exporter's library. */
	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(p.ctx, &st), 0);
	if (strcmp(rt_transport(), "rdma") == 0) {
		CHECK_EQ(st.rma_direct, 0);
		CHECK_EQ(st.rma_redone, 1);
		/* Both refusals counted: the device's, the exporter's. */
		CHECK_EQ(st.rma_refused, 2);
	} else {
		CHECK_EQ(st.rma_refused, 1);
	}
	/* Now the requester knows: refused at once. */
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, 64, on_done,
				(void *)2), RIFT_EACCES);
	CHECK(strstr(rift_conn_last_error(p.c), "revoked") != NULL);
	/* The other export still works. */
	CHECK_EQ(rift_conn_read(p.c, lm, 0, t2, tl2, 0, 64, on_done,
				(void *)3), 0);
	CHECK(wait_done(p.ctx, 3, 10000));
	CHECK_EQ(dn.status[3], 0);
	/* The end of the session ends its exports: the region is free. */
	CHECK_EQ(rift_mem_dereg(em), RIFT_EBUSY);
	mems[0] = em, mems[1] = lm;
	pair_down(&p, mems, 2);
}

/*
 * A device need not check a memory window's bounds (rxe 6.1 checks only
 * the region's under it: tests/lab/README.md): rift's own check of the
 * token is then what keeps a requester inside its export.  This plays a
 * requester that skips that check (RIFT_FAULT_RMA_UNCHECKED, as a peer
 * that bypasses rift would) and says which layer refused: over TCP the
 * exporter's library; on verbs the device, or nobody (then the bytes past
 * the export came back, and rift's check is the only guard).
 */
TEST_TIMEOUT(rma_out_of_range_says_which_layer_refuses, 60)
{
	struct pair p;
	static uint8_t buf[8192], mine[4096];
	rift_mem *em, *lm, *mems[2];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);
	bool rdma = strcmp(rt_transport(), "rdma") == 0;
	rift_ctx_stats st;

	pair_up(&p, NULL);
	pattern(buf, sizeof(buf), 3);
	CHECK_EQ(rift_mem_reg(p.ctx, buf, sizeof(buf), RIFT_MEM_READ, &em), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, mine, sizeof(mine),
			      RIFT_MEM_READ | RIFT_MEM_WRITE, &lm), 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, 4096, RIFT_MEM_READ, tok,
				 &tl), 0);
	/* In range: on verbs it teaches the requester the window's key. */
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, 64, on_done,
				(void *)0), 0);
	CHECK(wait_done(p.ctx, 1, 10000));
	CHECK_EQ(dn.status[0], 0);
	/* rift's check: refused before anything goes. */
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 4096, 64, on_done,
				(void *)1), RIFT_EACCES);
	/* Without it. */
	memset(mine, 0, sizeof(mine));
	rift__fault_arm(RIFT_FAULT_RMA_UNCHECKED, 1, 1);
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 4096, 64, on_done,
				(void *)1), 0);
	CHECK_EQ(rift__fault_fired(RIFT_FAULT_RMA_UNCHECKED), 1);
	rift__fault_clear();
	CHECK(wait_done(p.ctx, 2, 20000));
	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(p.ctx, &st), 0);
	if (dn.status[1] == 0) {
		/* Nobody refused: only possible by RDMA READ. */
		CHECK(rdma);
		CHECK_EQ(st.rma_direct, 1);
		CHECK(memcmp(mine, buf + 4096, 64) == 0);
		printf("rma: past the export: the device did not refuse (it "
		       "does not check a window's bounds); rift's own check "
		       "of the token is what refuses it\n");
	} else {
		CHECK_EQ(dn.status[1], RIFT_EACCES);
		CHECK(memcmp(mine, buf + 4096, 64) != 0);
		if (rdma)
			CHECK_EQ(st.rma_redone, 1);
		printf("rma: past the export: refused by %s\n",
		       rdma ? "the device (remote access error), then the "
			      "exporter's library"
			    : "the exporter's library");
	}
	mems[0] = em, mems[1] = lm;
	pair_down(&p, mems, 2);
}

/* Many operations in flight at once (rift-perf's bandwidth tests keep
 * 128): more than a path's READ depth and send slots take, pieces by RDMA
 * and by frames side by side while the key is learnt; every one
 * completes once with its bytes. */
TEST_TIMEOUT(rma_many_operations_in_flight_complete, 120)
{
	enum { K = 128, SZ = 64 << 10, ROUNDS = 4 };
	static uint8_t remote[K * SZ], local[K * SZ];
	static int calls[K];
	struct pair p;
	rift_mem *em, *lm, *mems[2];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);
	rift_ctx_stats st;

	pair_up(&p, NULL);
	CHECK_EQ(rift_mem_reg(p.ctx, remote, sizeof(remote),
			      RIFT_MEM_READ | RIFT_MEM_WRITE, &em), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, local, sizeof(local),
			      RIFT_MEM_READ | RIFT_MEM_WRITE, &lm), 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, sizeof(remote),
				 RIFT_MEM_READ | RIFT_MEM_WRITE, tok, &tl), 0);
	for (int r = 0; r < ROUNDS; r++) {
		bool rd = r % 2 == 0;
		uint64_t end = h_now_us() + 60000000u;
		int n = 0;

		pattern(rd ? remote : local, sizeof(remote), (unsigned)r);
		memset(rd ? local : remote, 0, sizeof(local));
		memset(calls, 0, sizeof(calls));
		dn.n = 0;
		for (int i = 0; i < K; i++) {
			int rc = rd ? rift_conn_read(p.c, lm, (size_t)i * SZ,
						     tok, tl, (size_t)i * SZ,
						     SZ, on_done, (void *)0)
				    : rift_conn_write(p.c, lm, (size_t)i * SZ,
						      tok, tl, (size_t)i * SZ,
						      SZ, on_done, (void *)0);

			CHECK_EQ(rc, 0);
		}
		while (dn.n < K && h_now_us() < end)
			rift_ctx_run(p.ctx, 5);
		n = dn.n;
		if (n < K)
			printf("round %d (%s): %d of %d done\n", r,
			       rd ? "reads" : "writes", n, K);
		CHECK_EQ(n, K);
		CHECK_EQ(dn.status[0], 0);
		CHECK(memcmp(local, remote, sizeof(local)) == 0);
	}
	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(p.ctx, &st), 0);
	printf("pieces by RDMA %llu, served by frames %llu\n",
	       (unsigned long long)st.rma_direct,
	       (unsigned long long)st.rma_served);
	if (strcmp(rt_transport(), "rdma") == 0)
		CHECK(st.rma_direct >= (ROUNDS - 1) * K);
	mems[0] = em, mems[1] = lm;
	pair_down(&p, mems, 2);
}

/*
 * rift_mem_reg registers the region at once on the devices the context
 * uses (as ucp_mem_map does), so a locked-memory limit too low is an
 * error of the call, saying the limit and how to raise it, not a stall
 * or a silent fallback on the first operation.  Over TCP nothing is
 * pinned.
 */
TEST_TIMEOUT(rma_reg_over_the_memlock_limit_says_so, 60)
{
	struct pair p;
	struct rlimit old, low;
	size_t len = 32u << 20;
	void *buf = malloc(len);
	rift_mem *m = NULL;
	int rc;

	CHECK(buf != NULL);
	pair_up(&p, NULL);
	CHECK_EQ(getrlimit(RLIMIT_MEMLOCK, &old), 0);
	low = (struct rlimit){ .rlim_cur = 1u << 20, .rlim_max = old.rlim_max };
	CHECK_EQ(setrlimit(RLIMIT_MEMLOCK, &low), 0);
	rc = rift_mem_reg(p.ctx, buf, len, RIFT_MEM_READ, &m);
	CHECK_EQ(setrlimit(RLIMIT_MEMLOCK, &old), 0);
	if (strcmp(rt_transport(), "rdma") == 0) {
		printf("%s\n", rift_ctx_last_error(p.ctx));
		CHECK_EQ(rc, RIFT_EMEMLOCK);
		CHECK(m == NULL);
		CHECK_CONTAINS(rift_ctx_last_error(p.ctx), "RLIMIT_MEMLOCK");
		CHECK_CONTAINS(rift_ctx_last_error(p.ctx), "ulimit -l");
		/* Under the limit restored, it registers. */
		CHECK_EQ(rift_mem_reg(p.ctx, buf, len, RIFT_MEM_READ, &m), 0);
	} else {
		CHECK_EQ(rc, 0);
	}
	pair_down(&p, &m, 1);
	free(buf);
}

/* A region under an operation, or with a live export, stays; the
 * context does not go while a region is registered. */
TEST_TIMEOUT(rma_dereg_refuses_while_in_use, 60)
{
	struct pair p;
	static uint8_t buf[4096], mine[4096];
	rift_mem *em, *lm, *mems[2];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);

	pair_up(&p, NULL);
	CHECK_EQ(rift_mem_reg(p.ctx, buf, sizeof(buf), RIFT_MEM_WRITE, &em), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, mine, sizeof(mine), RIFT_MEM_READ, &lm),
		 0);
	CHECK_EQ(rift_mem_reg(p.ctx, mine, 0, RIFT_MEM_READ, &mems[0]),
		 RIFT_EINVAL);
	CHECK_EQ(rift_mem_reg(p.ctx, mine, 1, 4, &mems[0]), RIFT_EINVAL);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, 4096, RIFT_MEM_WRITE, tok,
				 &tl), 0);
	CHECK_EQ(rift_conn_write(p.c, lm, 0, tok, tl, 0, 4096, on_done,
				 (void *)0), 0);
	CHECK_EQ(rift_mem_dereg(lm), RIFT_EBUSY);
	CHECK(wait_done(p.ctx, 1, 10000));
	CHECK_EQ(dn.status[0], 0);
	CHECK_EQ(rift_mem_dereg(lm), 0);
	CHECK_EQ(rift_mem_revoke(em, tok, tl), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, mine, sizeof(mine), RIFT_MEM_READ, &lm),
		 0);
	CHECK_EQ(rift_ctx_destroy(p.ctx), RIFT_EBUSY);
	CHECK(strstr(rift_ctx_last_error(p.ctx), "registered") != NULL);
	mems[0] = em, mems[1] = lm;
	pair_down(&p, mems, 2);
}

/* A write the exporter is told of comes after the messages sent before
 * it, before those sent after it; the writer's callback after the
 * event. */
/* Where a message must find a write in place when it arrives, if set. */
static const uint8_t *expect_at, *expect_src;
static size_t expect_len;
static int expect_missed;

static void count_recv(rift_conn *conn, rift_msg *msg)
{
	struct side *s = rift_conn_user(conn);

	/* Messages are numbered 1, 2, 3... whatever one-sided operations
	 * went between them (rift's own frames take numbers of the session's
	 * sequence, never the application's). */
	if (rift_msg_seq(msg) != s->recv_count + 1)
		s->bad++;
	s->recv_count++;
	if (expect_at && memcmp(expect_at, expect_src, expect_len))
		expect_missed++;
}

TEST_TIMEOUT(rma_write_notify_is_ordered_with_messages, 60)
{
	struct pair p;
	static uint8_t ring[1 << 20], rec[200000];
	rift_mem *em, *lm, *mems[2];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);
	static const rift_conn_callbacks srv_cbs = { .on_event = on_event,
						     .on_recv = count_recv };

	pair_up(&p, NULL);
	rift_conn_set_callbacks(p.srv.conn, &srv_cbs);
	CHECK_EQ(rift_mem_reg(p.ctx, ring, sizeof(ring), RIFT_MEM_WRITE, &em),
		 0);
	CHECK_EQ(rift_mem_reg(p.ctx, rec, sizeof(rec), RIFT_MEM_READ, &lm), 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 1000, 500000, RIFT_MEM_WRITE,
				 tok, &tl), 0);
	pattern(rec, sizeof(rec), 3);
	CHECK_EQ(rift_conn_send(p.c, "a", 1), 0);
	CHECK_EQ(rift_conn_write_notify(p.c, lm, 0, tok, tl, 300, sizeof(rec),
					0x1234abcdull, on_done, (void *)0), 0);
	CHECK(wait_done(p.ctx, 1, 10000));
	CHECK_EQ(dn.status[0], 0);
	CHECK_EQ(wr.n, 1);
	CHECK_EQ(dn.written_seen[0], 1); /* the event came first */
	CHECK(wr.mem == em);
	CHECK_EQ(wr.offset, 1300); /* in the region */
	CHECK_EQ(wr.length, sizeof(rec));
	CHECK(wr.tag == 0x1234abcdull);
	CHECK_EQ(wr.recv_before, 1);
	CHECK(memcmp(ring + 1300, rec, sizeof(rec)) == 0);
	CHECK_EQ(rift_conn_send(p.c, "b", 1), 0);
	CHECK(h_wait_u64(p.ctx, &p.srv.recv_count, 2, 5000));
	CHECK_EQ(p.srv.bad, 0);
	mems[0] = em, mems[1] = lm;
	pair_down(&p, mems, 2);
}

/* A write waiting for room in the window holds back the messages sent
 * after it (RIFT_EAGAIN, then WRITABLE): they find its bytes in place. */
TEST_TIMEOUT(rma_messages_wait_behind_a_queued_write, 60)
{
	rift_config cfg = h_config();
	struct pair p;
	static uint8_t ring[4 << 20], rec[3 << 20];
	rift_mem *em, *lm, *mems[2];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);
	static const rift_conn_callbacks srv_cbs = { .on_event = on_event,
						     .on_recv = count_recv };
	uint64_t end;

	cfg.send_window = 1u << 20;
	pair_up(&p, &cfg);
	rift_conn_set_callbacks(p.srv.conn, &srv_cbs);
	CHECK_EQ(rift_mem_reg(p.ctx, ring, sizeof(ring), RIFT_MEM_WRITE, &em),
		 0);
	CHECK_EQ(rift_mem_reg(p.ctx, rec, sizeof(rec), RIFT_MEM_READ, &lm), 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, sizeof(ring),
				 RIFT_MEM_WRITE, tok, &tl), 0);
	pattern(rec, sizeof(rec), 9);
	CHECK_EQ(rift_conn_write_notify(p.c, lm, 0, tok, tl, 0, sizeof(rec), 5,
					on_done, (void *)0), 0);
	CHECK_EQ(rift_conn_send(p.c, "b", 1), RIFT_EAGAIN);
	expect_at = ring, expect_src = rec, expect_len = sizeof(rec);
	end = h_now_us() + 10000000u;
	while (!p.cli.writable && h_now_us() < end)
		rift_ctx_run(p.ctx, 2);
	CHECK(p.cli.writable >= 1);
	CHECK_EQ(rift_conn_send(p.c, "b", 1), 0);
	CHECK(h_wait_u64(p.ctx, &p.srv.recv_count, 1, 10000));
	CHECK(wait_done(p.ctx, 1, 10000));
	CHECK_EQ(dn.status[0], 0);
	CHECK_EQ(wr.n, 1);
	CHECK_EQ(expect_missed, 0); /* "b" found the write in place */
	CHECK(memcmp(ring, rec, sizeof(rec)) == 0);
	expect_at = NULL;
	mems[0] = em, mems[1] = lm;
	pair_down(&p, mems, 2);
}

/* Operations under way when the session ends fail once each, before the
 * DISCONNECTED event; after rift_conn_close none reports. */
static int events_at_fail;
static struct side *fail_side;
static void on_fail(rift_conn *conn, void *user, int status, size_t bytes)
{
	on_done(conn, user, status, bytes);
	events_at_fail = fail_side->disconnected;
}

TEST_TIMEOUT(rma_operations_fail_with_their_session, 60)
{
	struct pair p;
	static uint8_t buf[1 << 20], mine[1 << 20];
	rift_mem *em, *lm, *mems[2];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);

	pair_up(&p, NULL);
	fail_side = &p.cli;
	CHECK_EQ(rift_mem_reg(p.ctx, buf, sizeof(buf), RIFT_MEM_READ, &em), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, mine, sizeof(mine), RIFT_MEM_READ, &lm),
		 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, sizeof(buf), RIFT_MEM_READ,
				 tok, &tl), 0);
	/* The exporter stops receiving: the reads wait there. */
	CHECK_EQ(rift_conn_recv_stop(p.srv.conn), 0);
	for (uintptr_t i = 0; i < 4; i++)
		CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, sizeof(mine),
					on_fail, (void *)i), 0);
	for (int i = 0; i < 50; i++)
		rift_ctx_run(p.ctx, 2);
	CHECK_EQ(dn.n, 0);
	rift_conn_abort(p.srv.conn, NULL);
	p.srv.conn = NULL;
	CHECK(wait_done(p.ctx, 4, 10000));
	CHECK(h_wait(p.ctx, &p.cli.disconnected, 5000));
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(dn.calls[i], 1);
		CHECK_EQ(dn.status[i], RIFT_ECONNRESET);
		CHECK_EQ(dn.bytes[i], 0);
	}
	CHECK_EQ(events_at_fail, 0);
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, 16, on_done,
				(void *)5), RIFT_ENOTCONN);
	/* The exporter's side ended with the abort: its export with it. */
	CHECK_EQ(rift_mem_dereg(em), 0);
	mems[0] = lm;
	{
		rift_conn *conns[1] = { p.c };

		teardown(p.ctx, p.l, conns, 1, mems, 1);
	}
}

TEST_TIMEOUT(rma_after_close_no_callback_runs, 60)
{
	struct pair p;
	static uint8_t buf[1 << 20], mine[1 << 20];
	rift_mem *em, *lm, *mems[2];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);
	rift_conn *conns[1];

	pair_up(&p, NULL);
	CHECK_EQ(rift_mem_reg(p.ctx, buf, sizeof(buf), RIFT_MEM_READ, &em), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, mine, sizeof(mine), RIFT_MEM_WRITE, &lm),
		 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, sizeof(buf), RIFT_MEM_READ,
				 tok, &tl), 0);
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, sizeof(mine), on_done,
				(void *)0), 0);
	rift_conn_close(p.c, NULL);
	CHECK_EQ(rift_conn_read(p.c, lm, 0, tok, tl, 0, 16, on_done,
				(void *)1), RIFT_ECLOSED);
	/* Until the handle is gone the operation holds its region. */
	CHECK_EQ(rift_mem_dereg(lm), RIFT_EBUSY);
	conns[0] = p.srv.conn;
	p.c = NULL;
	for (int i = 0; i < 200; i++)
		rift_ctx_run(p.ctx, 5);
	CHECK_EQ(dn.n, 0);
	mems[0] = em, mems[1] = lm;
	teardown(p.ctx, p.l, conns, 1, mems, 2);
}

/* Reads and writes keep completing, each once and byte for byte, while
 * the path breaks under them (either side, at random moments). */
TEST_TIMEOUT(rma_survives_broken_paths, 240)
{
	rift_config cfg = h_config();
	struct pair p;
	enum { N = 300, SZ = 96 << 10 };
	static uint8_t remote[2 * SZ], src[SZ], back[SZ];
	rift_mem *em, *sm, *bm, *mems[3];
	uint8_t tok[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(tok);
	uint64_t rnd = 0x9e3779b97f4a7c15ull, next_cut;
	int cuts = 0, bad = 0;
	rift_ctx_stats st;

	cfg.retry_delay_ms = 5;
	pair_up(&p, &cfg);
	CHECK_EQ(rift_mem_reg(p.ctx, remote, sizeof(remote),
			      RIFT_MEM_READ | RIFT_MEM_WRITE, &em), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, src, sizeof(src), RIFT_MEM_READ, &sm), 0);
	CHECK_EQ(rift_mem_reg(p.ctx, back, sizeof(back), RIFT_MEM_READ, &bm),
		 0);
	CHECK_EQ(rift_mem_export(em, p.srv.conn, 0, sizeof(remote),
				 RIFT_MEM_READ | RIFT_MEM_WRITE, tok, &tl), 0);
	next_cut = h_now_us() + 3000;
	for (int i = 0; i < N; i++) {
		size_t len = 1 + (size_t)((rnd >> 11) % SZ);
		size_t at = (size_t)((rnd >> 33) % SZ);
		uint64_t end = h_now_us() + 60000000u;

		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		pattern(src, len, (unsigned)i);
		memset(dn.calls, 0, sizeof(dn.calls));
		dn.n = 0;
		CHECK_EQ(rift_conn_write(p.c, sm, 0, tok, tl, at, len, on_done,
					 (void *)0), 0);
		CHECK_EQ(rift_conn_read(p.c, bm, 0, tok, tl, at, len, on_done,
					(void *)1), 0);
		while (dn.n < 2 && h_now_us() < end) {
			if (h_now_us() >= next_cut) {
				rift_conn *victim = (rnd & 4) ? p.c : p.srv.conn;

				if (victim && rift__conn_cut(victim) == 0)
					cuts++;
				next_cut = h_now_us() + 2000 + (rnd >> 40) % 20000;
				rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
			}
			rift_ctx_run(p.ctx, 1);
		}
		CHECK_EQ(dn.n, 2);
		CHECK_EQ(dn.status[0], 0);
		CHECK_EQ(dn.status[1], 0);
		if (memcmp(back, src, len) || memcmp(remote + at, src, len))
			bad++;
	}
	rift_ctx_run(p.ctx, 20);
	CHECK_EQ(dn.calls[0], 1);
	CHECK_EQ(dn.calls[1], 1);
	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(p.ctx, &st), 0);
	printf("cuts %d path_changed cli %d srv %d; pieces by RDMA %llu, "
	       "operations redone by frames %llu\n",
	       cuts, p.cli.path_changed, p.srv.path_changed,
	       (unsigned long long)st.rma_direct,
	       (unsigned long long)st.rma_redone);
	/* On verbs each new path learns the keys again, and its pieces go
	 * by RDMA from then on. */
	if (strcmp(rt_transport(), "rdma") == 0)
		CHECK(st.rma_direct >= N);
	CHECK_EQ(bad, 0);
	CHECK(cuts >= 10);
	CHECK(p.cli.path_changed >= 5);
	CHECK_EQ(p.cli.disconnected, 0);
	mems[0] = em, mems[1] = sm, mems[2] = bm;
	pair_down(&p, mems, 3);
}
