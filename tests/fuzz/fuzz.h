/*
 * fuzz.h - what rift's libFuzzer targets share: a property check that
 * says what failed, and (peer.c) the helpers of the targets that play a
 * peer over TCP against a live context.
 */
#ifndef RIFT_TESTS_FUZZ_H
#define RIFT_TESTS_FUZZ_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "internal.h"
#include "session/wire.h"

/* A property that does not hold: say which (with errno, which a failed
 * system call leaves), then crash, so that libFuzzer keeps the input. */
#define FZ_CHECK(cond)                                                        \
	do {                                                                  \
		if (!(cond)) {                                                \
			int fz_errno_ = errno;                                \
			fprintf(stderr,                                       \
				"fuzz: %s:%d: %s does not hold (errno %s)\n", \
				__FILE__, __LINE__, #cond,                    \
				strerror(fz_errno_));                         \
			abort();                                              \
		}                                                             \
	} while (0)

/*
 * The session key the handshake target's peers know: its server gives it
 * in HELLO_ACK, and the seeds' RESUME and RESUME_ACK frames are sealed
 * under it (mkseeds.c), which fz_patch_ids takes as standing for the
 * proof of the session they name.
 */
static const uint8_t fz_session_key[RIFT_SESSION_KEY_LEN] = {
	0x52, 0x46, 0x7a, 0x7a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
};

/* ---- peer.c ---- */

/* Defaults, with timers that never fire during a run (keepalive, grace,
 * handshake timeout), so that what happens follows from the input. */
rift_config fz_config(void);
/* A non-blocking TCP socket connected to 127.0.0.1:port whose close
 * resets the connection: thousands of inputs leave no TIME_WAIT. */
int fz_connect(int port);
/* A listening socket on 127.0.0.1 (non-blocking); its port in *port. */
int fz_listen(int *port);
/* Send what fits without blocking; returns the bytes sent. */
size_t fz_send(int fd, const void *data, size_t n);
/* Read and drop whatever is there; false once the peer closed. */
bool fz_drain(int fd);
/* Close with a reset (see fz_connect). */
void fz_close(int fd);
/* Loop rounds that never wait until two in a row had nothing to do, at
 * most max; a context-level failure is a finding. */
void fz_rounds(rift_ctx *ctx, int max);
/* Rounds until done(arg) or timeout_ms; returns done(arg). */
bool fz_wait(rift_ctx *ctx, bool (*done)(void *arg), void *arg,
	     int timeout_ms);
/* Entries of a context list (paths, conns, ...). */
size_t fz_count(const struct rift__list *l);
/*
 * Session ids cannot be guessed, nor session keys: in the n bytes of
 * frames at buf, a handshake frame (HELLO .. RESUME_ACK, JOIN, JOIN_ACK)
 * whose session id is 1..n_ids gets ids[id - 1] instead, and a RESUME,
 * JOIN or their answer among them that proves fz_session_key is sealed
 * again under keys[id - 1], so that it proves the session it now names
 * as that session's peer would.
 * Returns the placeholders seen, a bit each (bit 0: id 1).
 */
unsigned fz_patch_ids(uint8_t *buf, size_t n, const uint64_t *ids,
		      const uint8_t (*keys)[RIFT_SESSION_KEY_LEN],
		      unsigned n_ids);

#endif
