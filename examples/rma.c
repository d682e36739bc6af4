/*
 * rma - one-sided access: a server exports a buffer, a client writes into
 * it and reads it back, checking every byte (rift.h, "One-sided access").
 *
 *   rma                         both ends in one process, over tcp:// on
 *                               127.0.0.1: one round, then exit
 *   rma server URL              serve one client, e.g. auto://0.0.0.0:7790
 *   rma client URL [ROUNDS]     e.g. auto://10.0.0.1:7790 60: a round a
 *                               second (default 10)
 *
 * Run as two processes on two machines over rdma:// or auto:// (several
 * addresses, "rdma://10.0.0.1:7790,10.1.0.1:7790", give a second path) and
 * pull a link while the client runs: the session re-attaches over another
 * path (PATH_DOWN, then PATH_CHANGED, printed), and the operations under
 * way complete once each, their bytes intact.  A link down for longer than
 * session_grace_ms (10 s by default) ends the session: the operations then
 * fail with the reason, and so does this program.
 *
 * Lifetimes, as rift.h states them:
 *  - A region (rift_mem_reg) stays the application's memory, and must stay
 *    valid until rift_mem_dereg.  rift_mem_dereg refuses (RIFT_EBUSY) while
 *    an export of the region lives or an operation uses it, so deregister
 *    after the connection's close callback: the session's exports end with
 *    it, and no callback of an operation runs after rift_conn_close.
 *  - A token (rift_mem_export) is opaque bytes, sent to the peer however
 *    the application likes (here: in a message).  It works on that one
 *    session only, and ends with it or with rift_mem_revoke.
 *  - An operation's callback runs exactly once, on the loop thread, from a
 *    later run of the loop, never inside the call; until then the local
 *    range is rift's.  A call that returns an error never calls back.
 *
 * make test-install builds this against the installed library
 * (cc -std=c11 rma.c $(pkg-config --cflags --libs rift)) and runs it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rift.h>

#define LEN 4096 /* bytes exported, written and read back */

struct side {
	const char *name; /* "server" or "client" */
	rift_ctx *ctx;
	rift_conn *conn;
	rift_mem *mem; /* server: buf[0, LEN) exported; client: buf
			  [0, LEN) written from, [LEN, 2 LEN) read into */
	unsigned char buf[2 * LEN];
	unsigned char tok[RIFT_TOKEN_MAX_LEN]; /* client: the server's */
	size_t tok_len;
	int ops;    /* operations completed */
	int ended;  /* the peer closed in order (DISCONNECTED, 0) */
	int closed; /* close callbacks run */
};

static struct side srv = {.name = "server"}, cli = {.name = "client"};

/* A failed call ends the program, saying what and why. */
static void check(int rc, struct side *s, const char *what)
{
	if (rc == 0)
		return;
	fprintf(stderr, "rma: %s: %s: %s: %s\n", s->name, what,
		rift_err_name(rc),
		s->conn && *rift_conn_last_error(s->conn)
			? rift_conn_last_error(s->conn)
			: rift_ctx_last_error(s->ctx));
	exit(1);
}

/* Run the loop until *v reaches want (a callback counts it). */
static void run_until(struct side *s, const int *v, int want)
{
	while (*v < want) {
		int rc = rift_ctx_run_mode(s->ctx, RIFT_RUN_ONCE, 1000);

		if (rc < 0 && rc != RIFT_ETIMEDOUT)
			check(rc, s, "rift_ctx_run_mode");
	}
}

static void on_event(rift_conn *conn, const rift_event *ev)
{
	struct side *s = rift_conn_user(conn);

	switch (ev->type) {
	case RIFT_EVENT_CONNECTED:
		printf("%s: connected over %s\n", s->name,
		       rift_transport_name(ev->transport));
		break;
	case RIFT_EVENT_WRITTEN: /* a write_notify landed in our export */
		printf("%s: the client wrote %llu bytes at %llu (tag %llu): "
		       "\"%s\"\n",
		       s->name, (unsigned long long)ev->length,
		       (unsigned long long)ev->offset,
		       (unsigned long long)ev->tag, (const char *)s->buf);
		break;
	case RIFT_EVENT_PATH_DOWN: /* operations wait, nothing is lost */
		printf("%s: path down: %s\n", s->name, ev->message);
		break;
	case RIFT_EVENT_PATH_CHANGED:
		printf("%s: path changed: now over %s via %s\n", s->name,
		       rift_transport_name(ev->transport), ev->peer);
		break;
	case RIFT_EVENT_ERROR:
	case RIFT_EVENT_DISCONNECTED:
		if (ev->status) {
			fprintf(stderr, "rma: %s: %s: %s\n", s->name,
				rift_event_name(ev->type), ev->message);
			exit(1);
		}
		s->ended = 1; /* the peer closed in order */
		break;
	default:
		break; /* events may be added */
	}
}

/* client: the server's token, the one message it sends */
static void on_recv(rift_conn *conn, rift_msg *msg)
{
	struct side *s = rift_conn_user(conn);

	if (rift_msg_len(msg) > sizeof(s->tok)) {
		fprintf(stderr, "rma: %s: a message of %zu bytes is no token\n",
			s->name, rift_msg_len(msg));
		exit(1);
	}
	memcpy(s->tok, rift_msg_data(msg), rift_msg_len(msg));
	s->tok_len = rift_msg_len(msg);
}

static const rift_conn_callbacks cbs = {.on_event = on_event,
					.on_recv = on_recv};

/* Each operation's completion: once, with its status. */
static void on_done(rift_conn *conn, void *user, int status, size_t bytes)
{
	struct side *s = rift_conn_user(conn);

	if (status) {
		fprintf(stderr, "rma: %s: %s failed: %s (%s)\n", s->name,
			(const char *)user, rift_err_name(status),
			rift_conn_last_error(conn));
		exit(1);
	}
	if (bytes != LEN) {
		fprintf(stderr, "rma: %s: %s: %zu bytes\n", s->name,
			(const char *)user, bytes);
		exit(1);
	}
	s->ops++;
}

static void on_closed(rift_conn *conn)
{
	struct side *s = rift_conn_user(conn);

	s->closed++;
}

static void on_listener_closed(rift_listener *l)
{
	struct side *s = rift_listener_user(l);

	s->closed++;
}

/* server: export the buffer to the client that connected, send the token. */
static void on_accept(rift_listener *l, rift_conn *conn)
{
	struct side *s = rift_listener_user(l);
	size_t tok_len = sizeof(s->tok);

	if (s->conn) { /* one client at a time */
		rift_conn_close(conn, NULL);
		return;
	}
	s->conn = conn; /* its user pointer is the listener's: s */
	check(rift_mem_export(s->mem, conn, 0, LEN,
			      RIFT_MEM_READ | RIFT_MEM_WRITE, s->tok, &tok_len),
	      s, "rift_mem_export");
	check(rift_conn_send(conn, s->tok, tok_len), s, "rift_conn_send");
	printf("%s: exported %d bytes to the client: a %zu-byte token, sent "
	       "as a message\n",
	       s->name, LEN, tok_len);
}

/* server: listen on url, with LEN bytes registered for the clients. */
static rift_listener *server_start(const char *url)
{
	rift_listener *l;

	check(rift_mem_reg(srv.ctx, srv.buf, LEN,
			   RIFT_MEM_READ | RIFT_MEM_WRITE, &srv.mem),
	      &srv, "rift_mem_reg");
	check(rift_listen(srv.ctx, url, &cbs, &srv, on_accept, &l), &srv,
	      "rift_listen");
	printf("%s: listening on %s (port %d)\n", srv.name, url,
	       rift_listener_port(l));
	return l;
}

/* server: once the client closed, close its connection and the
 * listener, then deregister (nothing uses the region any more). */
static void server_end(rift_listener *l)
{
	int closed = srv.closed;

	rift_conn_close(srv.conn, on_closed);
	rift_listener_close(l, on_listener_closed);
	run_until(&srv, &srv.closed, closed + 2);
	check(rift_mem_dereg(srv.mem), &srv, "rift_mem_dereg");
}

/* client: write a round's bytes into the server's buffer, read them
 * back, and compare. */
static void client_round(int round)
{
	int ops = cli.ops;

	memset(cli.buf, 'a' + round % 26, LEN);
	snprintf((char *)cli.buf, 64, "round %d from the client", round);
	/* write_notify: the server is told (RIFT_EVENT_WRITTEN), the tag
	 * with it; rift_conn_write would not tell it */
	check(rift_conn_write_notify(cli.conn, cli.mem, 0, cli.tok, cli.tok_len,
				     0, LEN, (uint64_t)round, on_done, "write"),
	      &cli, "rift_conn_write_notify");
	run_until(&cli, &cli.ops, ops + 1);
	memset(cli.buf + LEN, 0, LEN);
	check(rift_conn_read(cli.conn, cli.mem, LEN, cli.tok, cli.tok_len, 0,
			     LEN, on_done, "read"),
	      &cli, "rift_conn_read");
	run_until(&cli, &cli.ops, ops + 2);
	if (memcmp(cli.buf, cli.buf + LEN, LEN)) {
		fprintf(stderr,
			"rma: client: round %d: read back other bytes\n",
			round);
		exit(1);
	}
	printf("%s: round %d: wrote %d bytes, read them back: identical\n",
	       cli.name, round, LEN);
}

/* client: connect to url, wait for the token, run the rounds, close. */
static void client_run(const char *url, int rounds, int pause_ms)
{
	int closed;

	check(rift_connect(cli.ctx, url, &cbs, &cli, &cli.conn), &cli,
	      "rift_connect");
	while (!cli.tok_len) {
		int rc = rift_ctx_run_mode(cli.ctx, RIFT_RUN_ONCE, 1000);

		if (rc < 0 && rc != RIFT_ETIMEDOUT)
			check(rc, &cli, "rift_ctx_run_mode");
	}
	printf("%s: got the server's token (%zu bytes)\n", cli.name,
	       cli.tok_len);
	/* The access bits are the most an export of this region could
	 * grant; it is not exported, and operations need none of them. */
	check(rift_mem_reg(cli.ctx, cli.buf, sizeof(cli.buf), RIFT_MEM_READ,
			   &cli.mem),
	      &cli, "rift_mem_reg");
	for (int r = 1; r <= rounds; r++) {
		client_round(r);
		if (r < rounds && pause_ms) /* the loop runs meanwhile */
			rift_ctx_run(cli.ctx, pause_ms);
	}
	/* Close, then deregister: before close_cb an operation could
	 * still hold the region. */
	closed = cli.closed;
	rift_conn_close(cli.conn, on_closed);
	run_until(&cli, &cli.closed, closed + 1);
	check(rift_mem_dereg(cli.mem), &cli, "rift_mem_dereg");
	printf("%s: closed, region deregistered\n", cli.name);
}

int main(int argc, char **argv)
{
	struct side *me = argc > 1 && !strcmp(argv[1], "client") ? &cli : &srv;
	rift_ctx *ctx;
	rift_listener *l;
	char url[64];

	if (argc == 1) { /* the whole demo in one process and one context */
		check(rift_ctx_create(&ctx, NULL), &srv, "rift_ctx_create");
		srv.ctx = cli.ctx = ctx;
		l = server_start("tcp://127.0.0.1:0");
		snprintf(url, sizeof(url), "tcp://127.0.0.1:%d",
			 rift_listener_port(l));
		client_run(url, 1, 0);
		run_until(&srv, &srv.ended, 1);
		server_end(l);
	} else if (argc == 3 && !strcmp(argv[1], "server")) {
		check(rift_ctx_create(&ctx, NULL), &srv, "rift_ctx_create");
		srv.ctx = ctx;
		l = server_start(argv[2]);
		run_until(&srv, &srv.ended, 1); /* the client closed */
		server_end(l);
	} else if ((argc == 3 || argc == 4) && !strcmp(argv[1], "client")) {
		int rounds = argc == 4 ? atoi(argv[3]) : 10;

		if (rounds < 1) {
			fprintf(stderr, "rma: ROUNDS: a number, 1 or more\n");
			return 2;
		}
		check(rift_ctx_create(&ctx, NULL), &cli, "rift_ctx_create");
		cli.ctx = ctx;
		client_run(argv[2], rounds, 1000);
	} else {
		fprintf(stderr, "usage: rma                       (both ends "
				"here)\n"
				"       rma server URL\n"
				"       rma client URL [ROUNDS]\n");
		return 2;
	}
	check(rift_ctx_destroy(ctx), me, "rift_ctx_destroy");
	printf("librift %s\n", rift_version_string());
	return 0;
}
