/*
 * tcp.h - what the TCP transport (tcp.c) offers the other transports:
 * its ops table (for the registry, transport.c) and its listening
 * helpers, which the verbs transport's cm=tcp side channel shares
 * (verbs/cm_tcp.c).  The layers above reach TCP through the registry.
 */
#ifndef RIFT_TRANSPORTS_TCP_H
#define RIFT_TRANSPORTS_TCP_H

#include "internal.h"

extern const struct rift__transport_ops rift__tcp_ops;

/* A non-blocking listening TCP socket bound to sa (what: "" or a note
 * for errors, e.g. " (cm=tcp side channel)"); fd and *port, or RIFT_E*
 * with the context's error set. */
int rift__listen_socket(rift_ctx *ctx, const struct sockaddr *sa,
			socklen_t len, const char *what, int *port);
/*
 * Listeners: accept4 failed with err.  Out of descriptors or memory the
 * listener watched by io stops for a while (the pause timer, set up with
 * rift__accept_pause_init, watches it again) instead of spinning.
 * Returns true when the next accept may be tried at once.
 */
void rift__accept_pause_init(rift_ctx *ctx, rift_timer *t, rift__io *io);
bool rift__accept_failed(rift_ctx *ctx, rift__io *io, rift_timer *pause,
			 int err);
/* Bind a socket about to connect to the local address src (port 0: the
 * system picks one): 0, or RIFT_E* with err saying "bind to local
 * address 192.0.2.1: Cannot assign requested address". */
int rift__tcp_bind_local(int fd, const struct sockaddr *src, socklen_t len,
			 char *err, size_t errlen);
/* Take over an accepted socket as a TCP path of l (auto:// + cm=tcp). */
int rift__tcp_adopt(rift_listener *l, int fd, const struct sockaddr *sa);

#endif
