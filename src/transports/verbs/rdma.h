/*
 * rdma.h - what the verbs transport offers outside its own files: its
 * ops table, which the registry lists (transports/transport.c), and
 * figures of a connection's verbs path for tests (rdma.c).  The layers
 * above reach the transport through the registry only; its files share
 * rdma_int.h.
 */
#ifndef RIFT_VERBS_RDMA_H
#define RIFT_VERBS_RDMA_H

#include "internal.h"

extern const struct rift__transport_ops rift__rdma_ops;
/* Valkey's RDMA protocol as a byte stream (valkey_rdma.c). */
extern const struct rift__bs_ops rift__valkey_rdma_ops;

/* Tests: a figure of the current verbs path (0 on another transport). */
enum rift__rdma_figure {
	RIFT__RDMA_ZC_SENDS,	  /* messages sent without a copy */
	RIFT__RDMA_NOW_SENDS,	  /* replies sent from inside on_recv, before
				   * the rest of the delivery's work
				   * (rift__transport_ops.send_now) */
	RIFT__RDMA_BARE_SENDS,	  /* DATA frames sent bare (no header) */
	RIFT__RDMA_INPLACE_BYTES, /* bytes delivered from receive buffers */
	RIFT__RDMA_RNDV_INFLIGHT, /* rendezvous messages being fetched (READs
				   * posted or waiting) or held for delivery */
};
uint64_t rift__conn_rdma_figure(const rift_conn *conn,
				enum rift__rdma_figure f);
/* Tests: the device and port of the current verbs path (NULL on another
 * transport or before its device is known). */
const char *rift__conn_rdma_device(const rift_conn *conn, unsigned *port);
/* Tests: ibv_query_qp of the current verbs path's QP (RTS, else RIFT_EIO):
 * ack timeout, retry counts, and whether the QP is rift's own rather than
 * one librdmacm made (rdma_create_qp).  RIFT_EINVAL without a QP. */
int rift__conn_qp_attrs(const rift_conn *conn, uint8_t *timeout,
			uint8_t *retry, uint8_t *rnr_retry, bool *user_qp);

#endif
