/*
 * relay.h - a TCP relay for tests: listens on one address and port and
 * joins every connection it accepts to a connection of its own to
 * another, byte for byte, on a thread, until the test cuts them all.
 * It stands for a network path a test can break from outside a
 * process (a rift-perf child's standby path through 127.0.0.2).
 */
#ifndef RIFT_TESTS_RELAY_H
#define RIFT_TESTS_RELAY_H

#include <pthread.h>
#include <stdbool.h>

#define RELAY_PAIRS 8

struct relay {
	int lfd;                     /* the listening socket */
	int wake[2];                 /* a pipe: cut or stop */
	int to_port;                 /* connections go to to_addr:to_port */
	char to_addr[64];
	int fds[RELAY_PAIRS][2];     /* accepted, and its own; -1 unused */
	int accepted;                /* connections accepted, count */
	bool stop;
	pthread_t th;
};

/* Listen on addr:port and relay to to_addr:to_port; 0 or -1. */
int relay_start(struct relay *r, const char *addr, int port,
		const char *to_addr, int to_port);
/* Connections accepted so far (read from the test's thread). */
int relay_accepted(struct relay *r);
/* Close every relayed connection both ways (RST), keep listening. */
void relay_cut(struct relay *r);
/* Stop: every connection closed, the thread joined. */
void relay_stop(struct relay *r);

#endif
