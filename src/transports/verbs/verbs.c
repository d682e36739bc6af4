/*
 * verbs.c - every call into libibverbs and librdmacm, with their error
 * conventions converted at this one boundary.  See verbs.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transports/verbs/verbs.h"

uint64_t rift__vb_calls[RIFT_VB__COUNT];

#define COUNT(name)                                                           \
	__atomic_fetch_add(&rift__vb_calls[RIFT_VB_##name], 1, __ATOMIC_RELAXED)

/* librdmacm: -1 and errno.  libibverbs: a positive errno is returned. */
int rift__vb_fail(rift__vb_err err, const char *call, int e)
{
	snprintf(err, sizeof(rift__vb_err), "%s: %s", call,
		 rift_strerror(rift__from_errno(e)));
	return rift__from_errno(e);
}

static int nonblock(int fd, const char *what, rift__vb_err err)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return rift__vb_fail(err, what, errno);
	return 0;
}

rift_fallback_reason rift__vb_probe(char *first, size_t len)
{
	struct ibv_device **list;
	rift_fallback_reason why = RIFT_FALLBACK_NO_DEVICE;
	int n = 0;

	COUNT(get_device_list);
	list = ibv_get_device_list(&n);
	if (!list)
		return RIFT_FALLBACK_NO_DEVICE;
	for (int i = 0; i < n && why != RIFT_FALLBACK_NONE; i++) {
		struct ibv_context *c = ibv_open_device(list[i]);
		struct ibv_device_attr da;

		if (!c)
			continue;
		if (ibv_query_device(c, &da) == 0)
			for (uint8_t p = 1; p <= da.phys_port_cnt; p++) {
				struct ibv_port_attr pa;

				COUNT(query_port);
				if (ibv_query_port(c, p, &pa) == 0 &&
				    pa.state == IBV_PORT_ACTIVE) {
					snprintf(first, len, "%s",
						 ibv_get_device_name(list[i]));
					why = RIFT_FALLBACK_NONE;
					break;
				}
			}
		ibv_close_device(c);
	}
	ibv_free_device_list(list);
	return why;
}

int rift__vb_channel_create(struct rdma_event_channel **out, rift__vb_err err)
{
	COUNT(create_event_channel);
	*out = rdma_create_event_channel();
	if (!*out)
		return rift__vb_fail(err, "rdma_create_event_channel", errno);
	return nonblock((*out)->fd, "rdma event channel", err);
}

void rift__vb_channel_destroy(struct rdma_event_channel *ch)
{
	COUNT(destroy);
	if (ch)
		rdma_destroy_event_channel(ch);
}

int rift__vb_id_create(struct rdma_event_channel *ch, void *context,
		       struct rdma_cm_id **out, rift__vb_err err)
{
	COUNT(create_id);
	if (rdma_create_id(ch, out, context, RDMA_PS_TCP))
		return rift__vb_fail(err, "rdma_create_id", errno);
	return 0;
}

void rift__vb_id_destroy(struct rdma_cm_id *id)
{
	COUNT(destroy);
	if (id)
		rdma_destroy_id(id);
}

int rift__vb_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *ch,
			rift__vb_err err)
{
	COUNT(migrate_id);
	if (rdma_migrate_id(id, ch))
		return rift__vb_fail(err, "rdma_migrate_id", errno);
	return 0;
}

int rift__vb_resolve_addr(struct rdma_cm_id *id, const struct sockaddr *src,
			  const struct sockaddr *dst, int timeout_ms,
			  rift__vb_err err)
{
	COUNT(resolve_addr);
	if (rdma_resolve_addr(id, (struct sockaddr *)src, (struct sockaddr *)dst,
			      timeout_ms))
		return rift__vb_fail(err, "rdma_resolve_addr", errno);
	return 0;
}

int rift__vb_resolve_route(struct rdma_cm_id *id, int timeout_ms,
			   rift__vb_err err)
{
	COUNT(resolve_route);
	if (rdma_resolve_route(id, timeout_ms))
		return rift__vb_fail(err, "rdma_resolve_route", errno);
	return 0;
}

int rift__vb_set_ack_timeout(struct rdma_cm_id *id, uint8_t timeout,
			     rift__vb_err err)
{
	COUNT(set_option);
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &timeout, sizeof(timeout)))
		return rift__vb_fail(err, "rdma_set_option(ACK_TIMEOUT)", errno);
	return 0;
}

int rift__vb_bind(struct rdma_cm_id *id, const struct sockaddr *sa,
		  rift__vb_err err)
{
	COUNT(bind_addr);
	if (rdma_bind_addr(id, (struct sockaddr *)sa))
		return rift__vb_fail(err, "rdma_bind_addr", errno);
	return 0;
}

int rift__vb_listen(struct rdma_cm_id *id, int backlog, rift__vb_err err)
{
	COUNT(listen);
	if (rdma_listen(id, backlog))
		return rift__vb_fail(err, "rdma_listen", errno);
	return 0;
}

int rift__vb_connect(struct rdma_cm_id *id, struct rdma_conn_param *p,
		     rift__vb_err err)
{
	COUNT(connect);
	if (rdma_connect(id, p))
		return rift__vb_fail(err, "rdma_connect", errno);
	return 0;
}

int rift__vb_accept(struct rdma_cm_id *id, struct rdma_conn_param *p,
		    rift__vb_err err)
{
	COUNT(accept);
	if (rdma_accept(id, p))
		return rift__vb_fail(err, "rdma_accept", errno);
	return 0;
}

void rift__vb_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	COUNT(reject);
	rdma_reject(id, pdata, len);
}

void rift__vb_disconnect(struct rdma_cm_id *id)
{
	COUNT(disconnect);
	rdma_disconnect(id);
}

int rift__vb_cm_get(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	COUNT(get_cm_event);
	if (rdma_get_cm_event(ch, ev) == 0)
		return 0;
	return errno == EAGAIN ? RIFT_EAGAIN : rift__from_errno(errno);
}

void rift__vb_cm_ack(struct rdma_cm_event *ev)
{
	rdma_ack_cm_event(ev);
}

const char *rift__vb_cm_event_str(enum rdma_cm_event_type t)
{
	return rdma_event_str(t);
}

int rift__vb_pd_alloc(struct ibv_context *verbs, struct ibv_pd **out,
		      rift__vb_err err)
{
	COUNT(alloc_pd);
	*out = ibv_alloc_pd(verbs);
	return *out ? 0 : rift__vb_fail(err, "ibv_alloc_pd", errno);
}

void rift__vb_pd_free(struct ibv_pd *pd)
{
	COUNT(destroy);
	if (pd)
		ibv_dealloc_pd(pd);
}

int rift__vb_cq_setup(struct ibv_context *verbs, uint32_t cq_size,
		      struct ibv_comp_channel **ch, struct ibv_cq **cq,
		      rift__vb_err err)
{
	int rc;

	*ch = NULL;
	*cq = NULL;
	COUNT(create_comp_channel);
	*ch = ibv_create_comp_channel(verbs);
	if (!*ch) {
		rc = rift__vb_fail(err, "ibv_create_comp_channel", errno);
		goto fail;
	}
	rc = nonblock((*ch)->fd, "completion channel", err);
	if (rc)
		goto fail;
	COUNT(create_cq);
	*cq = ibv_create_cq(verbs, (int)cq_size, NULL, *ch, 0);
	if (!*cq) {
		rc = rift__vb_fail(err, "ibv_create_cq", errno);
		goto fail;
	}
	COUNT(req_notify_cq);
	rc = ibv_req_notify_cq(*cq, 0);
	if (rc) {
		rc = rift__vb_fail(err, "ibv_req_notify_cq", rc);
		goto fail;
	}
	return 0;

fail:
	rift__vb_qp_teardown(NULL, *ch, *cq);
	*ch = NULL;
	*cq = NULL;
	return rc;
}

static void qp_init_attr(struct ibv_qp_init_attr *qa, struct ibv_cq *cq,
			 const struct rift__vb_qp_caps *caps)
{
	memset(qa, 0, sizeof(*qa));
	qa->send_cq = cq;
	qa->recv_cq = cq;
	qa->qp_type = IBV_QPT_RC;
	qa->sq_sig_all = 0;
	qa->cap.max_send_wr = caps->sq_depth;
	qa->cap.max_recv_wr = caps->rq_depth;
	qa->cap.max_send_sge = caps->max_send_sge;
	qa->cap.max_recv_sge = caps->max_recv_sge;
	qa->cap.max_inline_data = caps->inline_max;
}

int rift__vb_qp_create_cm(struct rdma_cm_id *id, struct ibv_pd *pd,
			  struct ibv_cq *cq, struct rift__vb_qp_caps *caps,
			  rift__vb_err err)
{
	struct ibv_qp_init_attr qa;

	qp_init_attr(&qa, cq, caps);
	COUNT(create_qp);
	if (rdma_create_qp(id, pd, &qa))
		return rift__vb_fail(err, "rdma_create_qp", errno);
	/* The device may round up; inline may come back smaller. */
	caps->inline_max = qa.cap.max_inline_data;
	return 0;
}

int rift__vb_qp_create(struct ibv_pd *pd, struct ibv_cq *cq,
		       struct rift__vb_qp_caps *caps, struct ibv_qp **out,
		       rift__vb_err err)
{
	struct ibv_qp_init_attr qa;

	qp_init_attr(&qa, cq, caps);
	COUNT(create_qp);
	*out = ibv_create_qp(pd, &qa);
	if (!*out)
		return rift__vb_fail(err, "ibv_create_qp", errno);
	caps->inline_max = qa.cap.max_inline_data;
	return 0;
}

void rift__vb_qp_destroy(struct ibv_qp *qp)
{
	COUNT(destroy);
	if (qp)
		ibv_destroy_qp(qp);
}

int rift__vb_qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		       const char *what, rift__vb_err err)
{
	char call[64];
	int rc;

	COUNT(modify_qp);
	rc = ibv_modify_qp(qp, attr, mask);
	if (rc) {
		snprintf(call, sizeof(call), "ibv_modify_qp(%s)", what);
		return rift__vb_fail(err, call, rc);
	}
	return 0;
}

int rift__vb_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr,
			  int *mask, rift__vb_err err)
{
	char call[64];

	COUNT(init_qp_attr);
	*mask = 0;
	if (rdma_init_qp_attr(id, attr, mask)) {
		snprintf(call, sizeof(call), "rdma_init_qp_attr(%s)",
			 attr->qp_state == IBV_QPS_INIT  ? "INIT"
			 : attr->qp_state == IBV_QPS_RTR ? "RTR"
			 : attr->qp_state == IBV_QPS_RTS ? "RTS"
							 : "?");
		return rift__vb_fail(err, call, errno);
	}
	return 0;
}

int rift__vb_qp_query(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		      rift__vb_err err)
{
	struct ibv_qp_init_attr ia;
	int rc;

	COUNT(query_qp);
	rc = ibv_query_qp(qp, attr, mask, &ia);
	return rc ? rift__vb_fail(err, "ibv_query_qp", rc) : 0;
}

int rift__vb_cm_devices(struct ibv_context ***list, int *n, rift__vb_err err)
{
	COUNT(get_devices);
	*n = 0;
	errno = 0;
	*list = rdma_get_devices(n);
	if (!*list)
		return rift__vb_fail(err, "rdma_get_devices", errno ? errno : ENODEV);
	return 0;
}

void rift__vb_cm_devices_free(struct ibv_context **list)
{
	if (list)
		rdma_free_devices(list);
}

/*
 * rdma_get_devices takes a reference on every device it lists, and
 * rdma_free_devices drops one for each context in the array it is given
 * and frees the array (librdmacm/cma.c): so the list is split, the one
 * device kept in an array of its own, the others' references dropped at
 * once.  A whole list kept would keep every device of it open, and a
 * removed one could not go until this one did.
 */
struct ibv_context **rift__vb_cm_device_hold(struct ibv_context *verbs)
{
	struct ibv_context **list, **one;
	int n = 0, k = -1;

	COUNT(get_devices);
	list = rdma_get_devices(&n);
	if (!list)
		return NULL;
	for (int i = 0; i < n; i++)
		if (list[i] == verbs)
			k = i;
	one = k >= 0 ? calloc(2, sizeof(*one)) : NULL;
	if (!one) {
		rdma_free_devices(list);
		return NULL;
	}
	one[0] = verbs;
	memmove(&list[k], &list[k + 1], (size_t)(n - k) * sizeof(*list));
	rdma_free_devices(list);
	return one;
}

int rift__vb_gid_query(struct ibv_context *c, uint8_t port, uint32_t index,
		       struct ibv_gid_entry *e, rift__vb_err err)
{
	int rc;

	COUNT(query_gid);
	/* Returns a positive errno; ENODATA for an empty entry. */
	rc = ibv_query_gid_ex(c, port, index, e, 0);
	if (rc == ENODATA || rc == EINVAL) {
		snprintf(err, sizeof(rift__vb_err),
			 "ibv_query_gid_ex: no GID at index %u", index);
		return RIFT_ENOENT;
	}
	return rc ? rift__vb_fail(err, "ibv_query_gid_ex", rc) : 0;
}

int rift__vb_qp_setup(struct rdma_cm_id *id, struct ibv_pd *pd,
		      uint32_t cq_size, struct rift__vb_qp_caps *caps,
		      struct ibv_comp_channel **ch, struct ibv_cq **cq,
		      rift__vb_err err)
{
	int rc = rift__vb_cq_setup(id->verbs, cq_size, ch, cq, err);

	if (rc)
		return rc;
	rc = rift__vb_qp_create_cm(id, pd, *cq, caps, err);
	if (rc) {
		rift__vb_qp_teardown(NULL, *ch, *cq);
		*ch = NULL;
		*cq = NULL;
	}
	return rc;
}

void rift__vb_qp_teardown(struct rdma_cm_id *id, struct ibv_comp_channel *ch,
			  struct ibv_cq *cq)
{
	COUNT(destroy);
	if (id && id->qp)
		rdma_destroy_qp(id);
	if (cq)
		ibv_destroy_cq(cq);
	if (ch)
		ibv_destroy_comp_channel(ch);
}

int rift__vb_pool_reg(void *dev, void *addr, size_t len, void **handle,
		      uint32_t *lkey, uint32_t *rkey, char *err, size_t errlen)
{
	rift__vb_err e;
	struct ibv_mr *mr;
	const struct rift__vb_pool_dev *d = dev;
	int rc = rift__vb_reg_mr(d->pd, addr, len, d->mw, &mr, e);

	if (rc) {
		snprintf(err, errlen, "%s", e);
		return rc;
	}
	*handle = mr;
	*lkey = mr->lkey;
	*rkey = mr->rkey;
	return 0;
}

void rift__vb_pool_dereg(void *handle)
{
	rift__vb_dereg_mr(handle);
}

/* ibv_reg_mr with access, counted, with the fault point of test builds. */
static int reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access,
		  struct ibv_mr **out, rift__vb_err err)
{
	COUNT(reg_mr);
	if (rift__fault_hit(RIFT_FAULT_IBV_REG_MR))
		return rift__vb_fail(err, "ibv_reg_mr (fault point)", ENOMEM);
	*out = ibv_reg_mr(pd, addr, len, access);
	if (!*out)
		return rift__vb_fail(err, "ibv_reg_mr", errno);
	return 0;
}

int rift__vb_reg_mr(struct ibv_pd *pd, void *addr, size_t len, bool mw,
		    struct ibv_mr **out, rift__vb_err err)
{
	/* No remote access through the region's own rkey, ever: it covers
	 * every connection's buffers.  A peer READs a rendezvous message
	 * through a memory window bound over that message alone (MW_BIND),
	 * and nothing lets a peer write into the pool. */
	return reg_mr(pd, addr, len,
		      IBV_ACCESS_LOCAL_WRITE | (mw ? IBV_ACCESS_MW_BIND : 0),
		      out, err);
}

int rift__vb_reg_stream_mr(struct ibv_pd *pd, void *addr, size_t len,
			   bool remote_write, struct ibv_mr **out,
			   rift__vb_err err)
{
	return reg_mr(pd, addr, len,
		      IBV_ACCESS_LOCAL_WRITE |
			      (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0),
		      out, err);
}

bool rift__vb_attr_mw_type2(const struct ibv_device_attr *a)
{
	return a->max_mw > 0 &&
	       (a->device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
				       IBV_DEVICE_MEM_WINDOW_TYPE_2B));
}

bool rift__vb_mw_type2(struct ibv_context *c)
{
	struct ibv_device_attr da;
	rift__vb_err err;

	return !rift__vb_device_query(c, &da, err) &&
	       rift__vb_attr_mw_type2(&da);
}

int rift__vb_mw_alloc(struct ibv_pd *pd, struct ibv_mw **out,
		      rift__vb_err err)
{
	COUNT(alloc_mw);
	*out = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	return *out ? 0 : rift__vb_fail(err, "ibv_alloc_mw", errno);
}

void rift__vb_mw_free(struct ibv_mw *mw)
{
	COUNT(dealloc_mw);
	ibv_dealloc_mw(mw);
}

int rift__vb_dereg_mr_try(struct ibv_mr *mr)
{
	COUNT(destroy);
	return ibv_dereg_mr(mr);
}

void rift__vb_dereg_mr(struct ibv_mr *mr)
{
	COUNT(destroy);
	if (mr)
		ibv_dereg_mr(mr);
}

int rift__vb_read_limits(struct ibv_context *c, uint8_t port,
			 uint32_t *init_depth, uint32_t *resp_res,
			 uint32_t *max_msg, rift__vb_err err)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int rc = rift__vb_device_query(c, &da, err);

	if (!rc)
		rc = rift__vb_port_query(c, port, &pa, err);
	if (rc)
		return rc;
	*init_depth = da.max_qp_init_rd_atom > 0 ? (uint32_t)da.max_qp_init_rd_atom
						 : 0;
	*resp_res = da.max_qp_rd_atom > 0 ? (uint32_t)da.max_qp_rd_atom : 0;
	*max_msg = pa.max_msg_sz;
	return 0;
}

int rift__vb_cq_limit(struct ibv_context *c, uint32_t *max_cqe,
		      rift__vb_err err)
{
	struct ibv_device_attr da;
	int rc = rift__vb_device_query(c, &da, err);

	if (!rc)
		*max_cqe = da.max_cqe > 0 ? (uint32_t)da.max_cqe : 0;
	return rc;
}

int rift__vb_comp_channel_create(struct ibv_context *verbs,
				 struct ibv_comp_channel **out,
				 rift__vb_err err)
{
	int rc;

	COUNT(create_comp_channel);
	*out = ibv_create_comp_channel(verbs);
	if (!*out)
		return rift__vb_fail(err, "ibv_create_comp_channel", errno);
	rc = nonblock((*out)->fd, "completion channel", err);
	if (rc) {
		ibv_destroy_comp_channel(*out);
		*out = NULL;
	}
	return rc;
}

void rift__vb_comp_channel_destroy(struct ibv_comp_channel *ch)
{
	COUNT(destroy);
	if (ch && ibv_destroy_comp_channel(ch))
		RIFT_PLOG(RIFT_LOG_DEBUG, "ibv_destroy_comp_channel: %s",
			  strerror(errno));
}

int rift__vb_cq_create(struct ibv_context *verbs, uint32_t *cqe, void *ctx,
		       struct ibv_comp_channel *ch, struct ibv_cq **out,
		       rift__vb_err err)
{
	int n = (int)*cqe;

	if (rift__fault_hit(RIFT_FAULT_CQ_SHORT))
		n = 8;
	COUNT(create_cq);
	*out = ibv_create_cq(verbs, n, ctx, ch, 0);
	if (!*out)
		return rift__vb_fail(err, "ibv_create_cq", errno);
	if (n == (int)*cqe && (*out)->cqe > n)
		*cqe = (uint32_t)(*out)->cqe;
	return 0;
}

void rift__vb_cq_destroy(struct ibv_cq *cq)
{
	int rc;

	COUNT(destroy);
	rc = cq ? ibv_destroy_cq(cq) : 0;
	if (rc)
		RIFT_PLOG(RIFT_LOG_DEBUG, "ibv_destroy_cq: %s", strerror(rc));
}

int rift__vb_cq_next_event(uint64_t *calls, struct ibv_comp_channel *ch,
			   struct ibv_cq **cq, rift__vb_err err)
{
	void *ev_ctx;

	calls[RIFT_VB_DP_get_cq_event]++;
	if (ibv_get_cq_event(ch, cq, &ev_ctx)) {
		if (errno == EAGAIN)
			return RIFT_EAGAIN;
		return rift__vb_fail(err, "ibv_get_cq_event", errno);
	}
	ibv_ack_cq_events(*cq, 1);
	return 0;
}

int rift__vb_cq_arm(uint64_t *calls, struct ibv_cq *cq, rift__vb_err err)
{
	int rc;

	calls[RIFT_VB_DP_req_notify_cq]++;
	rc = ibv_req_notify_cq(cq, 0);
	return rc ? rift__vb_fail(err, "ibv_req_notify_cq", rc) : 0;
}

const char *rift__vb_wc_str(enum ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

/* ---- device queries ---- */

uint64_t rift__vb_dev_calls[RIFT_VB_DEV__COUNT];

#define DEV_COUNT(name)                                                       \
	__atomic_fetch_add(&rift__vb_dev_calls[RIFT_VB_DEV_##name], 1,        \
			   __ATOMIC_RELAXED)

/* Like rift__vb_fail(), but keeps the system's text for errnos rift has no code for. */
static int dev_fail(rift__vb_err err, const char *call, int e)
{
	int rc = rift__from_errno(e);

	snprintf(err, sizeof(rift__vb_err), "%s: %s", call,
		 rc == RIFT_EUNKNOWN ? strerror(e) : rift_strerror(rc));
	return rc;
}

int rift__vb_devices(struct ibv_device ***list, int *n, rift__vb_err err)
{
	COUNT(get_device_list);
	*n = 0;
	errno = 0;
	*list = ibv_get_device_list(n);
	if (*list)
		return 0;
	/* Documented errors: EPERM, ENOSYS (no kernel support), ENOMEM. */
	return dev_fail(err, "ibv_get_device_list", errno ? errno : EIO);
}

void rift__vb_devices_free(struct ibv_device **list)
{
	if (list)
		ibv_free_device_list(list);
}

const char *rift__vb_device_name(struct ibv_device *dev)
{
	return ibv_get_device_name(dev);
}

int rift__vb_device_open(struct ibv_device *dev, struct ibv_context **out,
			 rift__vb_err err)
{
	DEV_COUNT(open_device);
	errno = 0;
	*out = ibv_open_device(dev);
	if (*out)
		return 0;
	return dev_fail(err, "ibv_open_device", errno ? errno : EIO);
}

void rift__vb_device_close(struct ibv_context *c)
{
	if (!c)
		return;
	DEV_COUNT(close_device);
	ibv_close_device(c);
}

int rift__vb_device_query(struct ibv_context *c, struct ibv_device_attr *a,
			  rift__vb_err err)
{
	int rc;

	DEV_COUNT(query_device);
	rc = ibv_query_device(c, a);
	return rc ? dev_fail(err, "ibv_query_device", rc) : 0;
}

int rift__vb_port_query(struct ibv_context *c, uint8_t port,
			struct ibv_port_attr *a, rift__vb_err err)
{
	int rc;

	COUNT(query_port);
	rc = ibv_query_port(c, port, a);
	return rc ? dev_fail(err, "ibv_query_port", rc) : 0;
}

int rift__vb_gid_table(struct ibv_context *c, struct ibv_gid_entry *e,
		       size_t max, rift__vb_err err)
{
	ssize_t n;

	DEV_COUNT(query_gid_table);
	/* Returns the count or a negative errno (not -1 + errno). */
	n = ibv_query_gid_table(c, e, max, 0);
	if (n < 0)
		return dev_fail(err, "ibv_query_gid_table", (int)-n);
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int rift__vb_async_setup(struct ibv_context *c, rift__vb_err err)
{
	return nonblock(c->async_fd, "device async fd", err);
}

int rift__vb_async_get(struct ibv_context *c, enum ibv_event_type *type,
		       int *port)
{
	struct ibv_async_event ev;

	if (ibv_get_async_event(c, &ev))
		return errno == EAGAIN ? RIFT_EAGAIN : rift__from_errno(errno);
	*type = ev.event_type;
	*port = (ev.event_type == IBV_EVENT_PORT_ERR ||
		 ev.event_type == IBV_EVENT_PORT_ACTIVE ||
		 ev.event_type == IBV_EVENT_LID_CHANGE ||
		 ev.event_type == IBV_EVENT_GID_CHANGE)
			? ev.element.port_num
			: 0;
	ibv_ack_async_event(&ev);
	return 0;
}

int rift__vb_async_next(struct ibv_context *c, struct ibv_async_event *ev)
{
	COUNT(async_event);
	if (ibv_get_async_event(c, ev))
		return errno == EAGAIN ? RIFT_EAGAIN : rift__from_errno(errno);
	return 0;
}

void rift__vb_async_ack(struct ibv_async_event *ev)
{
	ibv_ack_async_event(ev);
}

const char *rift__vb_event_str(enum ibv_event_type t)
{
	return ibv_event_type_str(t);
}
