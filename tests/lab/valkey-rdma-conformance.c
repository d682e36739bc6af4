/*
 * valkey-rdma-conformance.c - a client of Valkey's RDMA protocol written
 * from its specification (valkey.io/topics/RDMA, "Protocol"), with
 * rdma_cm and verbs directly and nothing of rift, checking a server that
 * speaks RESP over it (rift-kv --valkey-rdma-port):
 *
 *   valkey-rdma-conformance ADDR PORT
 *
 *  1. control messages: on ESTABLISHED the server advertises its receive
 *     buffer (RegisterXferMemory, 32 bytes, big-endian, a length of at
 *     least one byte); GetServerFeature is answered with the same opcode
 *     and no feature bits; SetClientFeature without features is taken;
 *  2. data: RESP by RDMA WRITE WITH IMMEDIATE (immediate = length) into
 *     the advertised buffer; PING answered +PONG into ours;
 *  3. window: this client advertises 64 bytes only: a reply longer than
 *     what is left is written up to the window's end and no further
 *     until this client advertises again, then from offset 0;
 *  4. re-advertisement: writing the server's whole buffer full (one SET
 *     of exactly its length) makes it advertise again once consumed, and
 *     the stream goes on at offset 0 of the new window;
 *  5. keepalive: the server sends Keepalive unprompted; one sent to it
 *     is taken;
 *  6. malformed control messages are refused: an unknown opcode, a
 *     RegisterXferMemory of length 0, a control message of 16 bytes, a
 *     feature not offered, a write whose immediate runs past the
 *     advertised buffer: each on a connection of its own, which the
 *     server disconnects, while the first connection still gets answers.
 * Prints "ok: ..." per check and exits 0, or "FAIL: ..." and exits 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CMD 32
#define OP_GET_FEATURE 0
#define OP_SET_FEATURE 1
#define OP_KEEPALIVE 2
#define OP_REGISTER 3
#define NRECV 64
#define CLIENT_RX 64            /* this client's advertised buffer */
#define TX_MAX (16u << 20)
#define TIMEOUT_MS 10000

struct cl {
	const char *name;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	uint8_t ctrl[(NRECV + 1) * CMD]; /* receives, then one send slot */
	struct ibv_mr *ctrl_mr;
	uint8_t rx[CLIENT_RX];
	struct ibv_mr *rx_mr;
	uint32_t rx_off, rx_pos;         /* written by the server, read */
	uint8_t *tx;
	struct ibv_mr *tx_mr;
	uint64_t srv_addr;               /* the server's advertised buffer */
	uint32_t srv_len, srv_key, srv_off;
	int srv_windows;                 /* RegisterXferMemory received */
	int keepalives;                  /* Keepalive received */
	uint8_t last[CMD];               /* the last other control message */
	int last_op;                     /* its opcode, -1 when taken */
	int sends;                       /* send completions outstanding */
	int disconnected;
};

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("valkey-rdma-conformance: FAIL: ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(1);
}

static void ok(const char *what)
{
	printf("valkey-rdma-conformance: ok: %s\n", what);
	fflush(stdout);
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void post_recv(struct cl *c, uint32_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(c->ctrl + slot * CMD), CMD,
			       c->ctrl_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad))
		fail("%s: ibv_post_recv", c->name);
}

/* Take one CM event if there is one: DISCONNECTED is noted. */
static int cm_poll(struct cl *c, enum rdma_cm_event_type *type)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(c->ch, &ev))
		return 0;
	*type = ev->event;
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
		c->disconnected = 1;
	rdma_ack_cm_event(ev);
	return 1;
}

/* Take the completions there are; returns how many. */
static int cq_poll(struct cl *c)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(c->cq, 16, wc);

	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			/* Flushed: the QP went to the error state, as a
			 * disconnect does; the CM event says which. */
			if (c->disconnected ||
			    wc[i].status == IBV_WC_WR_FLUSH_ERR)
				continue;
			fail("%s: completion %s (opcode %d)", c->name,
			     ibv_wc_status_str(wc[i].status), wc[i].opcode);
		}
		if (wc[i].opcode == IBV_WC_SEND ||
		    wc[i].opcode == IBV_WC_RDMA_WRITE) {
			c->sends--;
			continue;
		}
		if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
			uint32_t len = ntohl(wc[i].imm_data);

			if (len > CLIENT_RX - c->rx_off)
				fail("%s: the server wrote %u bytes at offset "
				     "%u of a %u-byte window", c->name, len,
				     c->rx_off, CLIENT_RX);
			c->rx_off += len;
		} else if (wc[i].opcode == IBV_WC_RECV) {
			uint8_t *m = c->ctrl + wc[i].wr_id * CMD;
			uint16_t op;

			if (wc[i].byte_len != CMD)
				fail("%s: control message of %u bytes",
				     c->name, wc[i].byte_len);
			memcpy(&op, m, 2);
			op = ntohs(op);
			if (op == OP_REGISTER) {
				uint64_t a;
				uint32_t l, k;

				memcpy(&a, m + 16, 8);
				memcpy(&l, m + 24, 4);
				memcpy(&k, m + 28, 4);
				c->srv_addr = be64toh(a);
				c->srv_len = ntohl(l);
				c->srv_key = ntohl(k);
				c->srv_off = 0;
				c->srv_windows++;
			} else if (op == OP_KEEPALIVE) {
				c->keepalives++;
			} else {
				memcpy(c->last, m, CMD);
				c->last_op = op;
			}
		} else {
			fail("%s: unexpected completion opcode %d", c->name,
			     wc[i].opcode);
		}
		post_recv(c, (uint32_t)wc[i].wr_id);
	}
	return n;
}

/* Run until cond(c) holds or TIMEOUT_MS pass: 1, or 0 on the timeout. */
static int run_until(struct cl *c, int (*cond)(struct cl *c), int ms)
{
	long long end = now_ms() + ms;
	enum rdma_cm_event_type t;

	while (!cond(c)) {
		if (now_ms() > end)
			return 0;
		if (!cq_poll(c) && !cm_poll(c, &t))
			usleep(200);
	}
	return 1;
}

static int has_window(struct cl *c) { return c->srv_windows > 0; }
static int sent_all(struct cl *c) { return c->sends == 0; }
static int gone(struct cl *c) { return c->disconnected; }
static int has_ctrl(struct cl *c) { return c->last_op >= 0; }

static void cl_connect(struct cl *c, const char *name, const char *addr,
		       const char *port)
{
	struct addrinfo *ai;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	enum rdma_cm_event_type want[] = { RDMA_CM_EVENT_ADDR_RESOLVED,
					   RDMA_CM_EVENT_ROUTE_RESOLVED,
					   RDMA_CM_EVENT_ESTABLISHED };

	memset(c, 0, sizeof(*c));
	c->name = name;
	c->last_op = -1;
	if (getaddrinfo(addr, port, NULL, &ai))
		fail("%s: getaddrinfo %s", name, addr);
	c->ch = rdma_create_event_channel();
	if (!c->ch || rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP) ||
	    rdma_resolve_addr(c->id, NULL, ai->ai_addr, 2000))
		fail("%s: rdma_cm setup: %s", name, strerror(errno));
	freeaddrinfo(ai);
	for (int step = 0; step < 3; step++) {
		if (rdma_get_cm_event(c->ch, &ev))
			fail("%s: rdma_get_cm_event", name);
		if (ev->event != want[step])
			fail("%s: %s, expected %s", name,
			     rdma_event_str(ev->event),
			     rdma_event_str(want[step]));
		rdma_ack_cm_event(ev);
		if (step == 0 && rdma_resolve_route(c->id, 2000))
			fail("%s: rdma_resolve_route", name);
		if (step != 1)
			continue;
		c->pd = ibv_alloc_pd(c->id->verbs);
		c->cq = c->pd ? ibv_create_cq(c->id->verbs, 256, NULL, NULL, 0)
			      : NULL;
		if (!c->cq)
			fail("%s: pd/cq", name);
		qa.send_cq = qa.recv_cq = c->cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = 64;
		qa.cap.max_recv_wr = NRECV;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		c->tx = calloc(1, TX_MAX);
		if (!c->tx || rdma_create_qp(c->id, c->pd, &qa))
			fail("%s: rdma_create_qp", name);
		c->ctrl_mr = ibv_reg_mr(c->pd, c->ctrl, sizeof(c->ctrl),
					IBV_ACCESS_LOCAL_WRITE);
		c->rx_mr = ibv_reg_mr(c->pd, c->rx, sizeof(c->rx),
				      IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_WRITE);
		c->tx_mr = ibv_reg_mr(c->pd, c->tx, TX_MAX,
				      IBV_ACCESS_LOCAL_WRITE);
		if (!c->ctrl_mr || !c->rx_mr || !c->tx_mr)
			fail("%s: ibv_reg_mr", name);
		for (uint32_t i = 0; i < NRECV; i++)
			post_recv(c, i);
		cp.initiator_depth = cp.responder_resources = 1;
		cp.retry_count = 6;
		cp.rnr_retry_count = 7;
		if (rdma_connect(c->id, &cp))
			fail("%s: rdma_connect: %s", name, strerror(errno));
	}
	/* From here on the event channel is polled. */
	fcntl(c->ch->fd, F_SETFL, fcntl(c->ch->fd, F_GETFL) | O_NONBLOCK);
}

/* Send a control message of len bytes. */
static void send_ctrl(struct cl *c, const uint8_t *m, uint32_t len)
{
	uint8_t *slot = c->ctrl + NRECV * CMD;
	struct ibv_sge sge = { (uintptr_t)slot, len, c->ctrl_mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (!run_until(c, sent_all, TIMEOUT_MS))
		fail("%s: a send never completed", c->name);
	memcpy(slot, m, len);
	if (ibv_post_send(c->id->qp, &wr, &bad))
		fail("%s: ibv_post_send", c->name);
	c->sends++;
}

static void ctrl_msg(uint8_t *m, uint16_t op)
{
	memset(m, 0, CMD);
	op = htons(op);
	memcpy(m, &op, 2);
}

/* Advertise this client's buffer (again): the server writes from 0. */
static void advertise(struct cl *c, uint32_t len)
{
	uint8_t m[CMD];
	uint64_t a = htobe64((uintptr_t)c->rx);
	uint32_t l = htonl(len), k = htonl(c->rx_mr->rkey);

	ctrl_msg(m, OP_REGISTER);
	memcpy(m + 16, &a, 8);
	memcpy(m + 24, &l, 4);
	memcpy(m + 28, &k, 4);
	c->rx_off = c->rx_pos = 0;
	send_ctrl(c, m, CMD);
}

/* One WRITE WITH IMMEDIATE of len bytes at the server's offset, whose
 * immediate says imm. */
static void write_imm(struct cl *c, const void *data, uint32_t len,
		      uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)c->tx, len, c->tx_mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (!run_until(c, sent_all, TIMEOUT_MS))
		fail("%s: a write never completed", c->name);
	memcpy(c->tx, data, len);
	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = c->srv_addr + c->srv_off;
	wr.wr.rdma.rkey = c->srv_key;
	if (ibv_post_send(c->id->qp, &wr, &bad))
		fail("%s: ibv_post_send (write)", c->name);
	c->sends++;
	c->srv_off += len;
}

/* Write len bytes within the server's windows, waiting for it to
 * advertise again when one is full. */
static void stream_write(struct cl *c, const uint8_t *p, size_t len)
{
	while (len) {
		uint32_t n = c->srv_len - c->srv_off;
		int w = c->srv_windows;

		if (!n) {
			if (!run_until(c, sent_all, TIMEOUT_MS))
				fail("%s: writes never completed", c->name);
			for (long long end = now_ms() + TIMEOUT_MS;
			     c->srv_windows == w; usleep(200)) {
				if (now_ms() > end)
					fail("%s: the server never advertised "
					     "its buffer again", c->name);
				cq_poll(c);
			}
			continue;
		}
		if (n > len)
			n = (uint32_t)len;
		if (n > 65536)
			n = 65536;
		write_imm(c, p, n, n);
		p += n;
		len -= n;
	}
}

/* Read exactly len bytes of replies, advertising this client's buffer
 * again each time it is full and consumed. */
static void stream_read(struct cl *c, uint8_t *out, size_t len)
{
	long long end = now_ms() + TIMEOUT_MS;

	while (len) {
		uint32_t n = c->rx_off - c->rx_pos;

		if (!n) {
			if (now_ms() > end)
				fail("%s: %zu bytes of a reply never came",
				     c->name, len);
			if (!cq_poll(c))
				usleep(200);
			continue;
		}
		if (n > len)
			n = (uint32_t)len;
		memcpy(out, c->rx + c->rx_pos, n);
		c->rx_pos += n;
		out += n;
		len -= n;
		if (c->rx_pos == CLIENT_RX)
			advertise(c, CLIENT_RX);
	}
}

static void expect_reply(struct cl *c, const char *cmd, const char *reply)
{
	uint8_t got[4096];
	size_t n = strlen(reply);

	stream_write(c, (const uint8_t *)cmd, strlen(cmd));
	stream_read(c, got, n);
	if (memcmp(got, reply, n))
		fail("%s: answered '%.*s', expected '%s'", c->name, (int)n,
		     got, reply);
}

static void bad_peer(const char *addr, const char *port, const char *what,
		     void (*act)(struct cl *c))
{
	struct cl c;
	char msg[160];

	cl_connect(&c, what, addr, port);
	if (!run_until(&c, has_window, TIMEOUT_MS))
		fail("%s: no RegisterXferMemory from the server", what);
	advertise(&c, CLIENT_RX);
	act(&c);
	if (!run_until(&c, gone, TIMEOUT_MS))
		fail("%s: the server kept the connection", what);
	snprintf(msg, sizeof(msg), "refused (disconnected): %s", what);
	ok(msg);
	rdma_destroy_qp(c.id);
	rdma_destroy_id(c.id);
	rdma_destroy_event_channel(c.ch);
}

static void bad_opcode(struct cl *c)
{
	uint8_t m[CMD];

	ctrl_msg(m, 0x7777);
	send_ctrl(c, m, CMD);
}

static void bad_length(struct cl *c)
{
	uint8_t m[CMD];
	uint32_t k = htonl(c->rx_mr->rkey);

	ctrl_msg(m, OP_REGISTER);
	memcpy(m + 28, &k, 4); /* length 0 */
	send_ctrl(c, m, CMD);
}

static void bad_size(struct cl *c)
{
	uint8_t m[CMD];

	ctrl_msg(m, OP_KEEPALIVE);
	send_ctrl(c, m, 16);
}

static void bad_feature(struct cl *c)
{
	uint8_t m[CMD];
	uint64_t f = htobe64(1);

	ctrl_msg(m, OP_SET_FEATURE);
	memcpy(m + 24, &f, 8);
	send_ctrl(c, m, CMD);
}

static void bad_write(struct cl *c)
{
	/* Eight bytes written, the immediate claiming one more than the
	 * whole buffer. */
	write_imm(c, "*1\r\n$4\r\n", 8, c->srv_len + 1);
}

int main(int argc, char **argv)
{
	struct cl c;
	uint8_t m[CMD];
	char echo[128], want[256], *big;
	size_t hdr, vlen;
	int w;

	if (argc != 3) {
		fprintf(stderr, "usage: valkey-rdma-conformance ADDR PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	cl_connect(&c, "main", argv[1], argv[2]);

	/* 1. control messages */
	if (!run_until(&c, has_window, TIMEOUT_MS))
		fail("no RegisterXferMemory after ESTABLISHED");
	if (c.srv_len == 0 || c.srv_len > TX_MAX)
		fail("the server advertised %u bytes", c.srv_len);
	printf("valkey-rdma-conformance: the server advertised %u bytes\n",
	       c.srv_len);
	ok("RegisterXferMemory on ESTABLISHED");
	ctrl_msg(m, OP_GET_FEATURE);
	send_ctrl(&c, m, CMD);
	if (!run_until(&c, has_ctrl, TIMEOUT_MS))
		fail("GetServerFeature unanswered");
	{
		uint16_t op;
		uint64_t f;

		memcpy(&op, c.last, 2);
		memcpy(&f, c.last + 24, 8);
		if (ntohs(op) != OP_GET_FEATURE || f)
			fail("GetServerFeature answered with opcode %u, "
			     "features 0x%llx", ntohs(op),
			     (unsigned long long)be64toh(f));
	}
	ok("GetServerFeature answered, no features");
	ctrl_msg(m, OP_SET_FEATURE);
	send_ctrl(&c, m, CMD);
	advertise(&c, CLIENT_RX);

	/* 2. data */
	expect_reply(&c, "*1\r\n$4\r\nPING\r\n", "+PONG\r\n");
	ok("PING by WRITE WITH IMMEDIATE, +PONG into the advertised buffer "
	   "(SetClientFeature without features taken)");

	/* 3. this client's window: 57 bytes left, a 108-byte reply */
	memset(echo, 'e', 100);
	echo[100] = '\0';
	snprintf(want, sizeof(want), "*2\r\n$4\r\nECHO\r\n$100\r\n%s\r\n", echo);
	stream_write(&c, (uint8_t *)want, strlen(want));
	if (!run_until(&c, sent_all, TIMEOUT_MS))
		fail("the ECHO never left");
	usleep(500000);
	cq_poll(&c);
	if (c.rx_off != CLIENT_RX)
		fail("the server wrote %u bytes of its window of %u, expected "
		     "it to fill it", c.rx_off, CLIENT_RX);
	{
		uint8_t got[128];
		char exp[128];
		int n = snprintf(exp, sizeof(exp), "$100\r\n%s\r\n", echo);

		stream_read(&c, got, (size_t)n); /* advertises again */
		if (memcmp(got, exp, (size_t)n))
			fail("ECHO across two windows came back wrong");
	}
	ok("a reply longer than the client's window stops at its end and "
	   "resumes at offset 0 after RegisterXferMemory");

	/* 4. the server's buffer written full by one SET: it advertises
	 * again once consumed */
	hdr = strlen("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$") + 2;
	vlen = c.srv_len - c.srv_off - hdr - 2;
	for (int digits = 1; digits < 10; digits++) {
		size_t v = c.srv_len - c.srv_off - hdr - (size_t)digits - 2;
		int d = snprintf(NULL, 0, "%zu", v);

		if (d == digits) {
			vlen = v;
			break;
		}
	}
	big = malloc(c.srv_len);
	if (!big)
		fail("out of memory");
	{
		int n = snprintf(big, c.srv_len,
				 "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%zu\r\n",
				 vlen);

		memset(big + n, 'v', vlen);
		memcpy(big + n + vlen, "\r\n", 2);
		if ((size_t)n + vlen + 2 != c.srv_len - c.srv_off)
			fail("could not size the SET (%zu of %u)",
			     (size_t)n + vlen + 2, c.srv_len - c.srv_off);
		w = c.srv_windows;
		stream_write(&c, (uint8_t *)big, (size_t)n + vlen + 2);
	}
	free(big);
	expect_reply(&c, "", "+OK\r\n");
	for (long long end = now_ms() + TIMEOUT_MS; c.srv_windows == w;
	     usleep(200)) {
		if (now_ms() > end)
			fail("the server did not advertise its buffer again "
			     "after it was consumed");
		cq_poll(&c);
	}
	if (c.srv_off != 0)
		fail("offset not reset by the new window");
	snprintf(want, sizeof(want), ":%zu\r\n", vlen);
	expect_reply(&c, "*2\r\n$6\r\nSTRLEN\r\n$3\r\nbig\r\n", want);
	ok("the server's buffer filled: RegisterXferMemory again, the stream "
	   "goes on at offset 0");

	/* 5. keepalive */
	w = c.keepalives;
	for (long long end = now_ms() + TIMEOUT_MS; c.keepalives == w;
	     usleep(1000)) {
		if (now_ms() > end)
			fail("no Keepalive from the server in %d ms",
			     TIMEOUT_MS);
		cq_poll(&c);
	}
	ctrl_msg(m, OP_KEEPALIVE);
	send_ctrl(&c, m, CMD);
	expect_reply(&c, "*1\r\n$4\r\nPING\r\n", "+PONG\r\n");
	ok("Keepalive from the server; one sent to it taken");

	/* 6. malformed control messages, each on a connection of its own */
	bad_peer(argv[1], argv[2], "unknown opcode 0x7777", bad_opcode);
	bad_peer(argv[1], argv[2], "RegisterXferMemory of length 0",
		 bad_length);
	bad_peer(argv[1], argv[2], "a 16-byte control message", bad_size);
	bad_peer(argv[1], argv[2], "SetClientFeature asking for feature 1",
		 bad_feature);
	bad_peer(argv[1], argv[2], "an immediate past the advertised buffer",
		 bad_write);
	expect_reply(&c, "*1\r\n$4\r\nPING\r\n", "+PONG\r\n");
	if (c.disconnected)
		fail("the first connection was dropped too");
	ok("the first connection still answered after them");
	rdma_disconnect(c.id);
	printf("valkey-rdma-conformance: all checks passed\n");
	return 0;
}
