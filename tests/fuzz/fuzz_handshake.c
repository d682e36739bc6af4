/*
 * libFuzzer target for the session handshakes (src/session/session.c):
 * HELLO and RESUME as a server meets them (server_handshake), HELLO_ACK,
 * RESUME_ACK and ERROR as a client meets them (client_handshake), and
 * whatever follows on the same path, through the real loop, TCP transport
 * and frame parser of one context built once.  Port groups' JOIN and the
 * other frames of RIFT_CAP_GROUP come in too: decodable, and refused, as
 * no session negotiates the capability yet.
 *
 * The input's first byte picks the fuzzer's part, the rest is the byte
 * stream it writes as that peer on a fresh TCP connection:
 *   0, 1  a client of our listener, which holds three sessions of other
 *         clients: A attached, B detached (its client went away, the
 *         server waits for its RESUME), C attached with receiving
 *         stopped and two messages held.  Each has received two messages
 *         and sent three, one of them acknowledged.
 *   2     the server of a new client of ours, which has sent its HELLO
 *   3     the server a client of ours re-attaches to: it connected,
 *         sent two messages, lost its path and has sent its RESUME
 * Session ids cannot be guessed, nor session keys: a handshake frame
 * whose session id is 1, 2 or 3 names A, B or C (the client's own as the
 * server); if it is a RESUME, a JOIN or their answer, sealed under
 * fz_session_key (fuzz.h) as the seeds' are (mkseeds.c), it is sealed
 * again under the key of the session it names, and proves it as that
 * session's own peer would.  libFuzzer learns the real ids all the
 * same, from the comparisons it traces: an input that holds one anywhere
 * names that session too.
 *
 * Properties beyond "no crash" (sanitizers, and the loop never fails):
 * once the fuzzer's connection is closed and the sessions it made are
 * closed, no path or session of its remains; a session the input did not
 * name is untouched (same path, same state, no event).  One it named may
 * be taken over (by a RESUME sealed as above) or end; it is then made
 * again.
 */
#include <string.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "session/session.h"
#include "session/wire.h"

#define ID_BASE 0x52494654485a0000ull /* "RIFTHZ" */
#define N_VICTIMS 3
#define MAX_MADE 64

enum victim_kind { ATTACHED, DETACHED, HOLDING };

struct victim {
	enum victim_kind kind;
	rift_conn *conn;   /* server side */
	int fd;            /* our end as its client, -1 once closed */
	uint64_t id;
	rift__path *path;  /* its path when made (NULL: detached) */
	int state;         /* conn->state when made */
	int events;        /* events since it was made */
};

static rift_ctx *ctx;
static rift_listener *lst;
static int port, raw_lfd, raw_port;
static uint64_t gen;
static struct victim victims[N_VICTIMS];
static struct victim *making;    /* the victim being made */
static rift_conn *made[MAX_MADE]; /* sessions the input made */
static int n_made;
static int closing; /* closes asked for whose callback has not run */

/* ---- callbacks ---- */

static void on_event(rift_conn *conn, const rift_event *ev)
{
	struct victim *v = rift_conn_user(conn);

	(void)ev;
	if (v)
		v->events++;
}

static const rift_conn_callbacks cbs = { .on_event = on_event };

static void on_closed(rift_conn *conn)
{
	(void)conn;
	closing--;
}

static void on_accept(rift_listener *l, rift_conn *conn)
{
	(void)l;
	if (making && conn->session_id == making->id) {
		making->conn = conn;
		rift_conn_set_user(conn, making);
		return;
	}
	rift_conn_set_user(conn, NULL);
	if (n_made < MAX_MADE) {
		made[n_made++] = conn;
		return;
	}
	closing++;
	rift_conn_close(conn, on_closed);
}

/* ---- frames of a well-behaved peer ---- */

static size_t put_hello(uint8_t *out, uint8_t type, uint64_t id,
			uint64_t recv_seq, uint64_t held_seq)
{
	struct rift__hdr h = { .type = type, .len = RIFT_HELLO_SIZE };
	struct rift__hello m = { .proto = RIFT_WIRE_VERSION,
				 .session_id = id,
				 .recv_seq = recv_seq,
				 .held_seq = held_seq,
				 .max_msg_size = 1u << 20,
				 .window = 1u << 20 };

	size_t n;

	/* The session key a server gives (HELLO_ACK), and the proof of it
	 * a RESUME and its answer carry (session/wire.h). */
	if (type == RIFT_FRAME_HELLO_ACK)
		memcpy(m.auth, fz_session_key, sizeof(m.auth));
	rift__hdr_encode(out, &h);
	n = rift__hello_encode(out + RIFT_HDR_SIZE, &m);
	if (type == RIFT_FRAME_RESUME || type == RIFT_FRAME_RESUME_ACK)
		rift__hello_seal(out + RIFT_HDR_SIZE, type, RIFT_HELLO_AUTH_AT,
				 fz_session_key);
	return RIFT_HDR_SIZE + n;
}

static size_t put_data(uint8_t *out, uint64_t seq, uint64_t ack)
{
	struct rift__hdr h = { .type = RIFT_FRAME_DATA, .len = 1, .seq = seq,
			       .ack = ack };

	rift__hdr_encode(out, &h);
	out[RIFT_HDR_SIZE] = 'x';
	return RIFT_HDR_SIZE + 1;
}

/* ---- the server's other sessions ---- */

static bool victim_accepted(void *arg)
{
	return ((struct victim *)arg)->conn != NULL;
}

static bool victim_detached(void *arg)
{
	return ((struct victim *)arg)->conn->state == RIFT_CONN_DETACHED;
}

static bool all_closed(void *arg)
{
	(void)arg;
	return closing == 0;
}

static void victim_make(struct victim *v)
{
	uint8_t b[256];
	size_t n;

	v->id = ID_BASE + ++gen;
	v->conn = NULL;
	v->fd = fz_connect(port);
	n = put_hello(b, RIFT_FRAME_HELLO, v->id, 0, 0);
	FZ_CHECK(fz_send(v->fd, b, n) == n);
	making = v;
	FZ_CHECK(fz_wait(ctx, victim_accepted, v, 5000));
	making = NULL;
	if (v->kind == HOLDING)
		FZ_CHECK(rift_conn_recv_stop(v->conn) == 0);
	for (int i = 0; i < 3; i++)
		FZ_CHECK(rift_conn_send(v->conn, "m", 1) == 0);
	fz_rounds(ctx, 16);
	n = put_data(b, 1, 1);
	n += put_data(b + n, 2, 1);
	FZ_CHECK(fz_send(v->fd, b, n) == n);
	fz_rounds(ctx, 16);
	if (v->kind == DETACHED) {
		fz_close(v->fd);
		v->fd = -1;
		FZ_CHECK(fz_wait(ctx, victim_detached, v, 5000));
	}
	if (v->fd >= 0)
		fz_drain(v->fd);
	v->path = v->conn->path;
	v->state = v->conn->state;
	v->events = 0;
}

static void victim_drop(struct victim *v)
{
	closing++;
	rift_conn_close(v->conn, on_closed);
	if (v->fd >= 0)
		fz_close(v->fd);
	v->fd = -1;
	FZ_CHECK(fz_wait(ctx, all_closed, NULL, 5000));
}

static bool victim_intact(const struct victim *v)
{
	return v->events == 0 && v->conn->path == v->path &&
	       (int)v->conn->state == v->state &&
	       (!v->path || v->path->state == RIFT_PATH_ATTACHED);
}

static void setup(void)
{
	rift_config cfg = fz_config();

	cfg.max_msg_size = 1u << 20;
	FZ_CHECK(rift_ctx_create(&ctx, &cfg) == 0);
	FZ_CHECK(rift_listen(ctx, "tcp://127.0.0.1:0", &cbs, NULL, on_accept,
			     &lst) == 0);
	port = rift_listener_port(lst);
	raw_lfd = fz_listen(&raw_port);
	for (int i = 0; i < N_VICTIMS; i++) {
		victims[i].kind = (enum victim_kind)i;
		victim_make(&victims[i]);
	}
}

/* ---- the fuzzer as a client of our listener ---- */

static void as_client(uint8_t *stream, size_t n)
{
	uint8_t keys[N_VICTIMS][RIFT_SESSION_KEY_LEN];
	uint64_t ids[N_VICTIMS];
	unsigned named;
	int fd;

	for (int i = 0; i < N_VICTIMS; i++) {
		ids[i] = victims[i].id;
		memcpy(keys[i], victims[i].conn->key, sizeof(keys[i]));
	}
	named = fz_patch_ids(stream, n, ids, keys, N_VICTIMS);
	for (int i = 0; i < N_VICTIMS; i++) {
		uint64_t be = htobe64(ids[i]);

		if (memmem(stream, n, &be, sizeof(be)))
			named |= 1u << i;
	}
	fd = fz_connect(port);
	fz_send(fd, stream, n);
	fz_rounds(ctx, 32);
	fz_close(fd);
	fz_rounds(ctx, 32);
	closing += n_made;
	for (int i = 0; i < n_made; i++)
		rift_conn_close(made[i], on_closed);
	n_made = 0;
	FZ_CHECK(fz_wait(ctx, all_closed, NULL, 5000));
	for (int i = 0; i < N_VICTIMS; i++) {
		struct victim *v = &victims[i];

		if (!(named & (1u << i))) {
			FZ_CHECK(victim_intact(v));
		} else if (!victim_intact(v)) {
			victim_drop(v);
			victim_make(v);
		}
		if (v->fd >= 0)
			fz_drain(v->fd);
	}
	fz_rounds(ctx, 8);
	/* Only the victims' sessions and attached paths are left. */
	FZ_CHECK(fz_count(&ctx->conns) == N_VICTIMS);
	FZ_CHECK(fz_count(&ctx->paths) == N_VICTIMS - 1);
	FZ_CHECK(fz_count(&ctx->dead_paths) == 0);
}

/* ---- the fuzzer as the server of a client of ours ---- */

struct client {
	rift_conn *conn;
	int fd;               /* accepted from raw_lfd */
	uint8_t hello[RIFT_HDR_SIZE + RIFT_HELLO_SIZE];
	size_t got;
	bool connected;
};

static void client_event(rift_conn *conn, const rift_event *ev)
{
	struct client *c = rift_conn_user(conn);

	if (ev->type == RIFT_EVENT_CONNECTED)
		c->connected = true;
}

static const rift_conn_callbacks client_cbs = { .on_event = client_event };

/* Accept the client's connection and read its HELLO or RESUME. */
static bool client_greeted(void *arg)
{
	struct client *c = arg;
	ssize_t n;

	if (c->fd < 0) {
		c->fd = accept4(raw_lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c->fd < 0)
			return false;
		c->got = 0;
	}
	n = recv(c->fd, c->hello + c->got, sizeof(c->hello) - c->got,
		 MSG_DONTWAIT);
	if (n > 0)
		c->got += (size_t)n;
	return c->got == sizeof(c->hello);
}

static bool client_connected(void *arg)
{
	return ((struct client *)arg)->connected;
}

static void as_server(uint8_t *stream, size_t n, bool resume)
{
	struct client c = { .fd = -1 };
	uint8_t b[256], keys[N_VICTIMS][RIFT_SESSION_KEY_LEN];
	uint64_t id, ids[N_VICTIMS];
	char url[64];
	size_t len;
	int fd;

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", raw_port);
	FZ_CHECK(rift_connect(ctx, url, &client_cbs, &c, &c.conn) == 0);
	FZ_CHECK(fz_wait(ctx, client_greeted, &c, 5000));
	FZ_CHECK(c.hello[3] == RIFT_FRAME_HELLO);
	memcpy(&id, c.hello + RIFT_HDR_SIZE + 8, 8);
	id = be64toh(id);
	if (resume) {
		len = put_hello(b, RIFT_FRAME_HELLO_ACK, id, 0, 0);
		FZ_CHECK(fz_send(c.fd, b, len) == len);
		FZ_CHECK(fz_wait(ctx, client_connected, &c, 5000));
		FZ_CHECK(rift_conn_send(c.conn, "ab", 2) == 0);
		FZ_CHECK(rift_conn_send(c.conn, "cd", 2) == 0);
		fz_rounds(ctx, 16);
		fz_close(c.fd);
		c.fd = -1;
		FZ_CHECK(fz_wait(ctx, client_greeted, &c, 5000));
		FZ_CHECK(c.hello[3] == RIFT_FRAME_RESUME);
	}
	/* The client has the key our HELLO_ACK gave, if any. */
	for (int i = 0; i < N_VICTIMS; i++) {
		ids[i] = id;
		memcpy(keys[i], fz_session_key, sizeof(keys[i]));
	}
	fz_patch_ids(stream, n, ids, keys, N_VICTIMS);
	fz_send(c.fd, stream, n);
	fz_rounds(ctx, 32);
	closing++;
	rift_conn_close(c.conn, on_closed);
	fz_close(c.fd);
	/* Re-attach attempts the input provoked wait in the backlog. */
	while ((fd = accept4(raw_lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		fz_close(fd);
	FZ_CHECK(fz_wait(ctx, all_closed, NULL, 5000));
	fz_rounds(ctx, 8);
	FZ_CHECK(fz_count(&ctx->conns) == N_VICTIMS);
	FZ_CHECK(fz_count(&ctx->paths) == N_VICTIMS - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *stream;

	if (!ctx)
		setup();
	if (size < 1)
		return 0;
	stream = malloc(size);
	FZ_CHECK(stream != NULL);
	memcpy(stream, data + 1, size - 1);
	switch (data[0] & 3) {
	case 0:
	case 1:
		as_client(stream, size - 1);
		break;
	case 2:
		as_server(stream, size - 1, false);
		break;
	default:
		as_server(stream, size - 1, true);
		break;
	}
	free(stream);
	return 0;
}
