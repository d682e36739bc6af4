/*
 * cm_tcp.h - rdma.cm = tcp: a TCP side channel brings a verbs path up
 * without rdma_cm, then stays open and shares fate with the QP (as brpc
 * does).  cm_tcp.c owns the socket, the bootstrap's wire format and the
 * checks that need no device; rdma_boot.c owns the QP and calls the
 * shots.
 *
 * The exchange, both ways one fixed-size message, no round trip more:
 *
 *   client                                   listener (TCP port = URL port)
 *   connect ---------------------------------> accept; the first two bytes
 *   QP made (INIT, receives posted)            tell a bootstrap ("RV") from
 *   bootstrap: GID, LID, QPN, PSN, MTU,        a rift TCP session ("RF", the
 *     rd_atomic, rift's hello ---------------> frame magic; auto:// only)
 *                                              checks; QP (prepared or new)
 *                                              to RTR and RTS; its bootstrap,
 *                                 <----------- or one with a refusal status
 *   checks; QP to RTR and RTS;
 *   session HELLO over the QP ...
 *
 * Afterwards the socket carries nothing.  Readable means the peer closed it
 * (its process died, or its path failed and it closed the socket): the
 * path fails at once.  A path that fails for any other reason is destroyed
 * in the same loop round, which closes the socket, so the peer follows.
 */
#ifndef RIFT_VERBS_CM_TCP_H
#define RIFT_VERBS_CM_TCP_H

#include <net/if.h>
#include <sys/socket.h>

#include "transports/tcp.h"

#define RIFT_BOOT_MAGIC 0x52564254u /* "RVBT": never "RF" (a session frame) */
#define RIFT_BOOT_VERSION 1u
#define RIFT_BOOT_SIZE 64u
#define RIFT_BOOT_HELLO_LEN 16u /* rift's hello, checked by rdma_cm.c */

/* Refusals, in a bootstrap's status and in rdma_reject's private data. */
enum rift__rej {
	RIFT_REJ_BAD_HELLO = 1, /* the peer's hello was refused */
	RIFT_REJ_RESOURCES = 2, /* out of resources */
	RIFT_REJ_CLOSING = 3,   /* listener closing */
	RIFT_REJ_CM_TCP = 4,    /* rdma_cm request at a cm=tcp listener */
	RIFT_REJ_NO_RDMA = 5,   /* the listener has no usable RDMA device */
	RIFT_REJ__MAX = 5,
};
const char *rift__rej_str(unsigned why);

/* A bootstrap, host byte order. */
struct rift__boot {
	uint8_t status;     /* 0, or an enum rift__rej: the peer refuses */
	uint8_t link_layer; /* IBV_LINK_LAYER_INFINIBAND (1) or _ETHERNET (2) */
	uint16_t lid;       /* InfiniBand only */
	uint8_t gid[16];    /* the sender's GID (RoCE: IPv4-mapped address) */
	uint32_t qpn;       /* 24 bits */
	uint32_t psn;       /* 24 bits: the sender's first send PSN */
	uint8_t mtu;        /* enum ibv_mtu, 1 (256) .. 5 (4096) */
	uint8_t rd_atom;    /* RDMA READs the sender serves at once */
	uint32_t caps;      /* capability bits (none defined yet: 0) */
	uint8_t hello[RIFT_BOOT_HELLO_LEN]; /* rift's hello (rdma_cm.c) */
};

/* The bootstrap on the wire (RIFT_BOOT_SIZE bytes, cm_tcp.c has the
 * layout): encode b into o; decode in into *b, checking only the magic
 * and version (NULL, or a static reason).  The reserved bytes go out as
 * zeros and are ignored coming in. */
void rift__boot_encode(uint8_t *o, const struct rift__boot *b);
const char *rift__boot_decode(const uint8_t *in, struct rift__boot *b);

/*
 * Check what needs no device: a QPN, PSN, MTU, LID or GID that cannot be.
 * Returns NULL or a static reason.  link_layer is ours: a peer on the
 * other kind of fabric is refused.
 */
const char *rift__boot_check(const struct rift__boot *b, uint8_t link_layer);

struct rift__cmtcp;
struct rift__cmtcp_listener;

/* A client path's local address: set, the address and its netdev
 * ("" when unknown, for messages); given (group.local), or chosen by
 * rift__rdma_src (rdma_int.h). */
struct rift__rdma_src {
	bool set;
	struct sockaddr_storage addr;
	socklen_t len;
	char ifname[IF_NAMESIZE];
};

/*
 * Client: connect the side channel of p to sa without blocking, from src
 * when it is set (else the route chooses; rdma_int.h).  When it is up,
 * rift__rdma_boot_connected(p) runs; failures fail p with a reason.
 * Returns 0, or RIFT_E* with err saying why ("bind to local address
 * ...: ...", "connect: ..."), nothing made.
 */
int rift__cmtcp_connect(rift__path *p, const struct sockaddr *sa,
			socklen_t len, const struct rift__rdma_src *src,
			struct rift__cmtcp **out, char *err, size_t errlen);
/* Send our bootstrap (once per channel).  0, or p failed. */
int rift__cmtcp_send(struct rift__cmtcp *tc, const struct rift__boot *b);
/* Refuse: send a bootstrap with only status set (best effort). */
void rift__cmtcp_refuse(struct rift__cmtcp *tc, enum rift__rej why);
/* The path is up: from now on, anything readable means the peer left. */
void rift__cmtcp_live(struct rift__cmtcp *tc);
/* The side channel's local address (device lookup).  0 or RIFT_E*. */
int rift__cmtcp_local(struct rift__cmtcp *tc, struct sockaddr_storage *ss);
/* Tests (rift__conn_cut): shut the channel down as a dying peer would. */
void rift__cmtcp_shutdown(struct rift__cmtcp *tc);
/* Close the socket and free tc. */
void rift__cmtcp_close(struct rift__cmtcp *tc);

/*
 * Listen on sa's TCP port for side channels (l->port is set).  With
 * serve_tcp (auto://), a connection that starts with a rift frame is
 * handed to the TCP transport: one socket serves both, so no TCP twin.
 * Returns 0 or RIFT_E* with ctx's error message set.
 */
int rift__cmtcp_listen(rift_listener *l, const struct sockaddr *sa,
		       socklen_t len, bool serve_tcp,
		       struct rift__cmtcp_listener **out);
void rift__cmtcp_listen_close(struct rift__cmtcp_listener *tl);

/* ---- implemented by rdma_boot.c ---- */

/* A new side channel at l: a server path that owns tc, or NULL. */
rift__path *rift__rdma_boot_path(rift_listener *l, struct rift__cmtcp *tc,
				 const char *peer);
/* Client: the side channel is connected; make the QP, send ours. */
void rift__rdma_boot_connected(rift__path *p);
/* The peer's bootstrap arrived (magic and version already checked). */
void rift__rdma_boot_received(rift__path *p, const struct rift__boot *b);
/* The peer closed the side channel of a live path. */
void rift__rdma_boot_closed(rift__path *p, int err, const char *why);

/* Tests and benchmarks: accepts completed (both cm modes) and the time
 * spent in them, from the peer's request to our answer, us.  For the
 * process, written with atomic operations (contexts on several threads
 * accept at once). */
extern uint64_t rift__rdma_accepts, rift__rdma_accept_us;
#define RIFT_ACCEPT_SAMPLES 64 /* the last accepts' times, us, a ring */
extern uint32_t rift__rdma_accept_samples[RIFT_ACCEPT_SAMPLES];

#endif
