/*
 * harness.h - helpers for integration tests: a server and clients on one
 * context, deterministic message contents so receivers verify order and
 * integrity, and loop helpers with deadlines.
 */
#ifndef RIFT_TESTS_HARNESS_H
#define RIFT_TESTS_HARNESS_H

#include "rift.h"
#include "../runner.h"

/* What one side saw. */
struct side {
	rift_conn *conn;
	uint64_t recv_count;     /* messages delivered */
	uint64_t recv_bytes;
	uint64_t checksum;       /* order-sensitive hash of what arrived */
	uint64_t bad;            /* messages out of order or corrupt */
	uint64_t expect_index;   /* next message index expected */
	uint64_t seed;           /* sizes/contents of the peer's stream */
	size_t max_size;         /* largest message of the peer's stream */
	int connected, errors, disconnected, path_down, path_changed;
	int writable, closed, failback;
	int path_up, standby_down; /* port groups: standby joined, lost */
	char last_device[48];    /* the last path event's device */
	char standby_device[48]; /* the last standby event's */
	int last_status;
	rift_path_down_reason last_down_reason; /* the last PATH_DOWN's */
	uint64_t disconnected_us;
	bool echo;               /* send back what arrives; on RIFT_EAGAIN
				  * stop receiving until WRITABLE */
	rift_msg *echo_pending;  /* echo waiting for the window */
	uint64_t echo_stalls;    /* times the echo stopped receiving */
	bool verify;             /* check contents against the stream */
	char last_message[256];
	char failback_message[256]; /* the first FAILBACK's */
	char last_local[64];     /* the last event's local address */
};

/* Deterministic stream: size and bytes of message i. */
size_t h_size(uint64_t seed, uint64_t i, size_t max_size);
void h_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t i);
uint64_t h_mix(uint64_t h, const void *data, size_t len);

extern const rift_conn_callbacks h_callbacks;
/* Accept callback storing the conn in the listener's struct side. */
void h_accept_side(rift_listener *l, rift_conn *conn);

/* Context with short timers suitable for tests. */
rift_ctx *h_ctx(const rift_config *override);
rift_config h_config(void);
/*
 * h_config for hundreds of connections on one context: rings of depth
 * entries (registered memory per path stays small) on 4 KiB blocks, and
 * timers that a loop round over them cannot outlast on the lab's
 * emulated, shared CPU (60 s connect, keepalive and grace).
 */
rift_config h_config_many(uint32_t depth);
/* Listener on rt_url(0); accepted connections get a struct side from
 * h_server_side (set before connecting). */
rift_listener *h_listen(rift_ctx *ctx, struct side *server);
rift_conn *h_connect(rift_ctx *ctx, int port, struct side *client);
/* Run ctx until *flag != 0 or timeout_ms; returns whether it came true. */
bool h_wait(rift_ctx *ctx, const int *flag, int timeout_ms);
/* The same, running two contexts in turn. */
bool h_wait2(rift_ctx *a, rift_ctx *b, const int *flag, int timeout_ms);
bool h_wait_u64(rift_ctx *ctx, const uint64_t *v, uint64_t target,
		int timeout_ms);
/* Wait up to 10 s for CONNECTED; fail with the connection's last error. */
void h_connected(rift_ctx *ctx, struct side *s);
/* Send message i of the side's own stream; returns rift_conn_send's code. */
int h_send(rift_conn *conn, uint64_t seed, uint64_t i, size_t max_size);
/* Close conns/listener, run until the close callbacks ran (1 s at most:
 * rift_ctx_destroy aborts closes still lingering then, whose peer did not
 * answer), destroy ctx and fail the test if anything is left (the leak
 * check). */
/* Close conns and the listener and run until their close callbacks ran
 * (1 s at most), the context left for the caller (h_teardown's first
 * half). */
void h_close_all(rift_ctx *ctx, rift_listener *l, rift_conn **conns, int n);
/* ... and every one of those closes done, waiting up to ms more (a close
 * under way while the session re-attaches waits for the new path):
 * whether they are.  Needed before resources the sessions hold go, such
 * as regions their exports name (rift_mem_dereg). */
bool h_close_wait(rift_ctx *ctx, int ms);
void h_teardown(rift_ctx *ctx, rift_listener *l, rift_conn **conns, int n);
/* The same for two contexts on this thread whose connections are each
 * other's peers: both loops run while they close, so the closes end in
 * order (they must, within 5 s), then each context is torn down. */
void h_teardown2(rift_ctx *a, rift_listener *la, rift_conn **ca, int na,
		 rift_ctx *b, rift_listener *lb, rift_conn **cb, int nb);
uint64_t h_now_us(void);
/* Path of a built tool (build/bin/NAME, also found from the test binary's
 * own location); skips the test when it is not built. */
const char *h_tool_path(const char *name);
/* A loopback TCP port nobody listens on (bound and closed again). */
int h_free_port(void);
/* A loopback TCP port that answers nothing, as a black-holed address: a
 * listener whose accept queue one connection fills, so later SYNs are
 * dropped.  fds[0] the listener, fds[1] the filler: close both after. */
int h_silent_port(int fds[2]);

#endif
