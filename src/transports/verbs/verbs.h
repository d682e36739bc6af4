/*
 * verbs.h - the one boundary between rift and rdma-core.
 *
 * Only verbs.c calls ibv_* and rdma_* functions, and this header's three
 * inline data-path wrappers (post send, post receive, poll), which do as
 * verbs.c does.  It converts their two
 * error conventions (libibverbs: positive errno or NULL + errno;
 * librdmacm: -1 + errno) into negative RIFT_E* codes, fills a readable
 * message naming the call, counts every call (the data path's per
 * context, the rest for the process), and hosts the verbs fault
 * points used by tests.  The rest of the transport may read the fields of
 * rdma-core's structs but never calls into the libraries itself.
 */
#ifndef RIFT_VERBS_H
#define RIFT_VERBS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "internal.h"

#define RIFT_VB_CALLS(XX)                                                     \
	XX(get_device_list) XX(query_port) XX(create_event_channel)           \
	XX(create_id) XX(resolve_addr) XX(resolve_route) XX(set_option)       \
	XX(alloc_pd) XX(create_comp_channel) XX(create_cq) XX(create_qp)      \
	XX(reg_mr) XX(req_notify_cq) XX(connect) XX(accept) XX(reject)        \
	XX(bind_addr) XX(listen) XX(disconnect) XX(get_cm_event) XX(destroy)  \
	XX(modify_qp) XX(query_gid) XX(get_devices) XX(init_qp_attr)        \
	XX(query_qp) XX(async_event) XX(alloc_mw) XX(dealloc_mw)        \
	XX(migrate_id)

enum rift__vb_call {
#define XX(name) RIFT_VB_##name,
	RIFT_VB_CALLS(XX)
#undef XX
	RIFT_VB__COUNT
};

/*
 * Calls made by this process, per wrapper (observability and tests):
 * connection setup and teardown, any thread, so counted with atomic
 * increments; read them with __atomic_load_n.
 */
extern uint64_t rift__vb_calls[RIFT_VB__COUNT];

/*
 * The data path's calls (per message, poll or completion event), counted
 * per context by the context's thread into the array the caller passes
 * (struct rift__rdma_ctx, dp_calls): a process-wide count written per
 * message would be a data race between contexts on different threads,
 * and bounce its cache line between their cores at every message.
 */
enum rift__vb_dp_call {
	RIFT_VB_DP_post_recv,
	RIFT_VB_DP_post_send,
	RIFT_VB_DP_poll_cq,
	RIFT_VB_DP_get_cq_event,
	RIFT_VB_DP_req_notify_cq, /* arming a CQ again (rift__vb_cq_arm) */
	RIFT_VB_DP__COUNT
};

/* Every wrapper: 0 or RIFT_E*, with "call: reason" in err on failure. */
typedef char rift__vb_err[160];

/* Is there a device with an active port?  Fills name of the first. */
rift_fallback_reason rift__vb_probe(char *first, size_t len);

int rift__vb_channel_create(struct rdma_event_channel **out, rift__vb_err err);
void rift__vb_channel_destroy(struct rdma_event_channel *ch);
int rift__vb_id_create(struct rdma_event_channel *ch, void *context,
		       struct rdma_cm_id **out, rift__vb_err err);
void rift__vb_id_destroy(struct rdma_cm_id *id);
/* Move id (every CM event on it acknowledged first) onto channel ch: an
 * accepted byte stream takes its events on a channel of its own, apart
 * from its listener's (valkey_rdma.c). */
int rift__vb_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *ch,
			rift__vb_err err);
/* src (may be NULL: the route chooses) binds the id to its device. */
int rift__vb_resolve_addr(struct rdma_cm_id *id, const struct sockaddr *src,
			  const struct sockaddr *dst, int timeout_ms,
			  rift__vb_err err);
int rift__vb_resolve_route(struct rdma_cm_id *id, int timeout_ms,
			   rift__vb_err err);
int rift__vb_set_ack_timeout(struct rdma_cm_id *id, uint8_t timeout,
			     rift__vb_err err);
int rift__vb_bind(struct rdma_cm_id *id, const struct sockaddr *sa,
		  rift__vb_err err);
int rift__vb_listen(struct rdma_cm_id *id, int backlog, rift__vb_err err);
int rift__vb_connect(struct rdma_cm_id *id, struct rdma_conn_param *p,
		     rift__vb_err err);
int rift__vb_accept(struct rdma_cm_id *id, struct rdma_conn_param *p,
		    rift__vb_err err);
void rift__vb_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len);
void rift__vb_disconnect(struct rdma_cm_id *id);
/* Next CM event or RIFT_EAGAIN; ack it with rift__vb_cm_ack. */
int rift__vb_cm_get(struct rdma_event_channel *ch, struct rdma_cm_event **ev);
void rift__vb_cm_ack(struct rdma_cm_event *ev);
const char *rift__vb_cm_event_str(enum rdma_cm_event_type t);

struct rift__vb_qp_caps {
	uint32_t sq_depth, rq_depth, max_send_sge, max_recv_sge, inline_max;
};
/* A protection domain on a device (shared by every path there). */
int rift__vb_pd_alloc(struct ibv_context *verbs, struct ibv_pd **out,
		      rift__vb_err err);
void rift__vb_pd_free(struct ibv_pd *pd);
/* Completion channel, CQ (armed) and RC QP on id's device, in pd. */
int rift__vb_qp_setup(struct rdma_cm_id *id, struct ibv_pd *pd,
		      uint32_t cq_size, struct rift__vb_qp_caps *caps,
		      struct ibv_comp_channel **ch, struct ibv_cq **cq,
		      rift__vb_err err);
void rift__vb_qp_teardown(struct rdma_cm_id *id, struct ibv_comp_channel *ch,
			  struct ibv_cq *cq);
/*
 * The pieces of rift__vb_qp_setup apart, for QPs made without rdma_cm
 * (cm=tcp) or ahead of time (the prepared-QP pool): a non-blocking
 * completion channel and an armed CQ on a device; an RC QP on that CQ in
 * RESET state (caps->inline_max updated to what the device gives); a QP
 * made by rift__vb_qp_setup on id, taking ch and cq made here.
 */
int rift__vb_cq_setup(struct ibv_context *verbs, uint32_t cq_size,
		      struct ibv_comp_channel **ch, struct ibv_cq **cq,
		      rift__vb_err err);
int rift__vb_qp_create(struct ibv_pd *pd, struct ibv_cq *cq,
		       struct rift__vb_qp_caps *caps, struct ibv_qp **out,
		       rift__vb_err err);
int rift__vb_qp_create_cm(struct rdma_cm_id *id, struct ibv_pd *pd,
			  struct ibv_cq *cq, struct rift__vb_qp_caps *caps,
			  rift__vb_err err);
void rift__vb_qp_destroy(struct ibv_qp *qp);
/* ibv_modify_qp; what names the transition in err ("INIT", "RTR"...). */
int rift__vb_qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		       const char *what, rift__vb_err err);
/*
 * rdma_init_qp_attr: what rdma_cm says a QP of id needs to enter
 * attr->qp_state (INIT, RTR, RTS), for a QP librdmacm does not own (the
 * prepared-QP pool: rdma_accept with conn_param.qp_num).  The RTS
 * attributes carry the ack timeout set on id (RDMA_OPTION_ID_ACK_TIMEOUT)
 * and the retry count of the connection.
 */
int rift__vb_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr,
			  int *mask, rift__vb_err err);
/* ibv_query_qp of the attributes in mask (tests, debug logs). */
int rift__vb_qp_query(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		      rift__vb_err err);
/*
 * The devices librdmacm has open (the contexts rdma_cm ids use, so PDs and
 * registrations are shared by both cm modes): *list of *n, freed with
 * rift__vb_cm_devices_free.
 */
int rift__vb_cm_devices(struct ibv_context ***list, int *n, rift__vb_err err);
void rift__vb_cm_devices_free(struct ibv_context **list);
/* librdmacm's context of verbs held open (closed by nothing else while
 * held), as a list of one for rift__vb_cm_devices_free; NULL when verbs
 * is none of its devices (removed). */
struct ibv_context **rift__vb_cm_device_hold(struct ibv_context *verbs);
/* One GID table entry; RIFT_ENOENT when the index is empty or past the
 * table's end. */
int rift__vb_gid_query(struct ibv_context *c, uint8_t port, uint32_t index,
		       struct ibv_gid_entry *e, rift__vb_err err);
/*
 * A device as the block pool knows it (rift__vb_pool_reg's dev).  Its
 * regions never allow remote access by themselves: with type 2 memory
 * windows (mw) they allow binding one, and a rendezvous lets the peer
 * READ a message through a window over that message alone; without, the
 * device does no rendezvous.
 */
struct rift__vb_pool_dev {
	struct ibv_pd *pd;
	bool mw;
};
/* Does the device bind type 2 memory windows (to its QPs)?  From its
 * attributes, or asking it. */
bool rift__vb_attr_mw_type2(const struct ibv_device_attr *a);
bool rift__vb_mw_type2(struct ibv_context *c);
/* A type 2 memory window of pd, unbound. */
int rift__vb_mw_alloc(struct ibv_pd *pd, struct ibv_mw **out,
		      rift__vb_err err);
/* Deallocate mw: invalidated once this returns (no READ goes through). */
void rift__vb_mw_free(struct ibv_mw *mw);
/* The key for mw's next bind (a type 2 window changes keys per bind). */
static inline uint32_t rift__vb_mw_next_rkey(const struct ibv_mw *mw)
{
	return ibv_inc_rkey(mw->rkey);
}
/* Registration in the block pool's shape (dev: a struct
 * rift__vb_pool_dev *). */
int rift__vb_pool_reg(void *dev, void *addr, size_t len, void **handle,
		      uint32_t *lkey, uint32_t *rkey, char *err, size_t errlen);
void rift__vb_pool_dereg(void *handle);
int rift__vb_reg_mr(struct ibv_pd *pd, void *addr, size_t len, bool mw,
		    struct ibv_mr **out, rift__vb_err err);
void rift__vb_dereg_mr(struct ibv_mr *mr);
/*
 * A byte stream's buffer (valkey_rdma.c), in the stream's own protection
 * domain: with remote_write, the receive buffer the peer writes into by
 * the region's own key (Valkey's protocol advertises it whole), so the
 * peer reaches that buffer and nothing else; without, local access only.
 */
int rift__vb_reg_stream_mr(struct ibv_pd *pd, void *addr, size_t len,
			   bool remote_write, struct ibv_mr **out,
			   rift__vb_err err);
/* The same, saying whether it went: 0, or the errno (EBUSY, EINVAL: a
 * window is still bound over it). */
int rift__vb_dereg_mr_try(struct ibv_mr *mr);
/*
 * What RDMA READ rendezvous may use on this device and port: READs one
 * QP may have in flight as initiator (max_qp_init_rd_atom) and serve as
 * responder (max_qp_rd_atom), and the largest message (the port's
 * max_msg_sz).  0 or RIFT_E* with err filled.
 */
int rift__vb_read_limits(struct ibv_context *c, uint8_t port,
			 uint32_t *init_depth, uint32_t *resp_res,
			 uint32_t *max_msg, rift__vb_err err);
/* The device's largest CQ (max_cqe); 0 or RIFT_E* with err filled. */
int rift__vb_cq_limit(struct ibv_context *c, uint32_t *max_cqe,
		      rift__vb_err err);
/* Fill err with "call: reason" for errno e; returns the RIFT_E* code. */
int rift__vb_fail(rift__vb_err err, const char *call, int e);

/*
 * The data path's three calls, inline: each runs once per message (or
 * poll), and under QEMU TCG (the lab) a call and return of our own costs
 * about as much as twenty other instructions.  Still the only place
 * these verbs are called.
 */
static RIFT_HOT_INLINE int rift__vb_post_recv(uint64_t *calls,
					      struct ibv_qp *qp,
					      struct ibv_recv_wr *wr,
					      rift__vb_err err)
{
	struct ibv_recv_wr *bad;
	int rc;

	calls[RIFT_VB_DP_post_recv]++;
	rc = ibv_post_recv(qp, wr, &bad);
	return rc ? rift__vb_fail(err, "ibv_post_recv", rc) : 0;
}

static RIFT_HOT_INLINE int rift__vb_post_send(uint64_t *calls,
					      struct ibv_qp *qp,
					      struct ibv_send_wr *wr,
					      rift__vb_err err)
{
	struct ibv_send_wr *bad;
	int rc;

	calls[RIFT_VB_DP_post_send]++;
	rc = ibv_post_send(qp, wr, &bad);
	return rc ? rift__vb_fail(err, "ibv_post_send", rc) : 0;
}

/* Completions (>= 0) or RIFT_E*. */
static RIFT_HOT_INLINE int rift__vb_poll(uint64_t *calls, struct ibv_cq *cq,
					 int n, struct ibv_wc *wc)
{
	int rc;

	calls[RIFT_VB_DP_poll_cq]++;
	rc = ibv_poll_cq(cq, n, wc);
	return rc < 0 ? RIFT_EIO : rc;
}
/*
 * Shared completion queues (rdma_cq.c): one non-blocking completion channel
 * per context and device, and CQs of *cqe entries on it whose cq_context
 * is ctx.  *cqe is what the caller may count on: the device's own figure,
 * which is at least what was asked (drivers round up).  Test builds:
 * RIFT_FAULT_CQ_SHORT makes the CQ far smaller than *cqe says, so it
 * overflows (IBV_EVENT_CQ_ERR) as one a driver miscounted would.  The CQ
 * is not armed.  rift__vb_cq_destroy needs every QP on it destroyed and
 * every event taken from its channel acknowledged.
 */
int rift__vb_comp_channel_create(struct ibv_context *verbs,
				 struct ibv_comp_channel **out,
				 rift__vb_err err);
void rift__vb_comp_channel_destroy(struct ibv_comp_channel *ch);
int rift__vb_cq_create(struct ibv_context *verbs, uint32_t *cqe, void *ctx,
		       struct ibv_comp_channel *ch, struct ibv_cq **out,
		       rift__vb_err err);
void rift__vb_cq_destroy(struct ibv_cq *cq);
/*
 * The channel's next event, acknowledged: *cq is the CQ that raised it.
 * 0 or RIFT_EAGAIN (no event).  Busy polling leaves CQs unarmed: every
 * event would cost the kernel work and us two system calls.
 */
int rift__vb_cq_next_event(uint64_t *calls, struct ibv_comp_channel *ch,
			   struct ibv_cq **cq, rift__vb_err err);
/* Ask for an event on the CQ's next completion. */
int rift__vb_cq_arm(uint64_t *calls, struct ibv_cq *cq, rift__vb_err err);
const char *rift__vb_wc_str(enum ibv_wc_status s);

/*
 * ---- device queries (rift_devices in api/devices.c) ----
 *
 * Counted apart from RIFT_VB_CALLS so that table stays as it is; listing
 * devices and querying ports count under get_device_list and query_port.
 */
#define RIFT_VB_DEV_CALLS(XX)                                                 \
	XX(open_device) XX(query_device) XX(query_gid_table) XX(close_device)

enum rift__vb_dev_call {
#define XX(name) RIFT_VB_DEV_##name,
	RIFT_VB_DEV_CALLS(XX)
#undef XX
	RIFT_VB_DEV__COUNT
};

/* Any thread may list devices: atomic increments, as rift__vb_calls. */
extern uint64_t rift__vb_dev_calls[RIFT_VB_DEV__COUNT];

/*
 * The devices libibverbs sees: *list (NULL-terminated) and *n.  RIFT_ENOSYS
 * when the kernel has no RDMA support loaded (no uverbs); other RIFT_E*
 * codes with err filled.  Free the list with rift__vb_devices_free.
 */
int rift__vb_devices(struct ibv_device ***list, int *n, rift__vb_err err);
void rift__vb_devices_free(struct ibv_device **list);
const char *rift__vb_device_name(struct ibv_device *dev);
int rift__vb_device_open(struct ibv_device *dev, struct ibv_context **out,
			 rift__vb_err err);
void rift__vb_device_close(struct ibv_context *c);
int rift__vb_device_query(struct ibv_context *c, struct ibv_device_attr *a,
			  rift__vb_err err);
int rift__vb_port_query(struct ibv_context *c, uint8_t port,
			struct ibv_port_attr *a, rift__vb_err err);
/*
 * The non-empty GID entries of every port of c, into e[0 .. max-1]: their
 * count (>= 0) or RIFT_E* (RIFT_EINVAL when max is too small).
 */
int rift__vb_gid_table(struct ibv_context *c, struct ibv_gid_entry *e,
		       size_t max, rift__vb_err err);

/* Device async events (port error/active, fatal): a context opened for
 * listening gets them all; make its fd non-blocking first. */
int rift__vb_async_setup(struct ibv_context *c, rift__vb_err err);
/* Next event's type and port (0 if not a port event), or RIFT_EAGAIN. */
int rift__vb_async_get(struct ibv_context *c, enum ibv_event_type *type,
		       int *port);
/*
 * The same, whole, for events about one object (a CQ's IBV_EVENT_CQ_ERR):
 * the object cannot be destroyed (ibv_destroy_cq waits) until the event
 * is acknowledged with rift__vb_async_ack.  0 or RIFT_EAGAIN.
 */
int rift__vb_async_next(struct ibv_context *c, struct ibv_async_event *ev);
void rift__vb_async_ack(struct ibv_async_event *ev);
const char *rift__vb_event_str(enum ibv_event_type t);

#endif
