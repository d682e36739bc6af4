/*
 * transport.c - the registry of transports: the one place that names
 * them.  The API and the session find a transport here, by URL scheme,
 * and the context reaches the transports' context hooks (polling, arming,
 * teardown, the registered pool, device listing) through the calls below,
 * which walk the table.  Adding a transport is a line in the table, an
 * ops table, and its scheme in url.c.
 *
 * No hook runs per message (poll and arm once per loop round at most,
 * pool when the context first needs its pool), and the table is
 * constant: with link-time optimization the walks below fold into direct
 * calls.
 */
#include <string.h>

#include "internal.h"
#include "transports/tcp.h"
#include "transports/verbs/rdma.h"

/*
 * Every transport, in auto://'s order of preference: auto:// tries the
 * first one that is available, and falls back from each to the next.
 */
static const struct rift__transport_ops *const transports[] = {
	&rift__rdma_ops,
	&rift__tcp_ops,
};

#define FOR_EACH_TRANSPORT(t)                                                 \
	for (const struct rift__transport_ops *const *t = transports;        \
	     t < transports + RIFT_ARRAY_SIZE(transports); t++)

const struct rift__transport_ops *rift__transport_by_scheme(rift__scheme s)
{
	if (s == RIFT_SCHEME_AUTO)
		return transports[0];
	FOR_EACH_TRANSPORT(t)
		if ((*t)->scheme == s)
			return *t;
	return NULL;
}

/* Byte-stream transports (rift_stream_*), by URL scheme. */
static const struct rift__bs_ops *const bs_transports[] = {
	&rift__valkey_rdma_ops,
};

const struct rift__bs_ops *rift__bs_ops_by_scheme(const char *scheme)
{
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(bs_transports); i++)
		if (!strcmp(bs_transports[i]->scheme, scheme))
			return bs_transports[i];
	return NULL;
}

const struct rift__transport_ops *
rift__transport_fallback(const struct rift__transport_ops *ops)
{
	for (size_t i = 0; i + 1 < RIFT_ARRAY_SIZE(transports); i++)
		if (transports[i] == ops)
			return transports[i + 1];
	return NULL;
}

int rift__transports_poll(rift_ctx *ctx)
{
	int n = 0;

	FOR_EACH_TRANSPORT(t)
		if ((*t)->poll)
			n += (*t)->poll(ctx);
	return n;
}

int rift__transports_arm(rift_ctx *ctx)
{
	int n = 0;

	FOR_EACH_TRANSPORT(t)
		if ((*t)->arm)
			n += (*t)->arm(ctx);
	return n;
}

int rift__transports_mem_reg(rift_ctx *ctx, rift_mem *mem, char *err,
			     size_t errlen)
{
	FOR_EACH_TRANSPORT(t)
		if ((*t)->mem_reg) {
			int rc = (*t)->mem_reg(ctx, mem, err, errlen);

			if (rc) {
				rift__transports_mem_drop(ctx, mem);
				return rc;
			}
		}
	return 0;
}

void rift__transports_mem_drop(rift_ctx *ctx, rift_mem *mem)
{
	FOR_EACH_TRANSPORT(t)
		if ((*t)->mem_drop)
			(*t)->mem_drop(ctx, mem);
}

void rift__transports_ctx_destroy(rift_ctx *ctx)
{
	FOR_EACH_TRANSPORT(t)
		if ((*t)->ctx_destroy)
			(*t)->ctx_destroy(ctx);
}

/* The first transport that registers memory makes the pool (one does:
 * verbs); without one there is none, and buffers are malloc'd. */
struct rift__pool *rift__ctx_pool_make(rift_ctx *ctx)
{
	FOR_EACH_TRANSPORT(t)
		if ((*t)->pool)
			return (*t)->pool(ctx);
	return NULL;
}

int rift__transports_devices(rift_device_info *out, int max, char *err,
			     size_t errlen)
{
	FOR_EACH_TRANSPORT(t)
		if ((*t)->devices)
			return (*t)->devices(out, max, err, errlen);
	rift__set_err(err, errlen, "no transport of this build lists devices");
	return 0;
}

int rift__transports_device_src(const rift_config *cfg, const char *device,
				int port, const struct sockaddr *dst,
				socklen_t dst_len, struct sockaddr_storage *out,
				socklen_t *out_len, char *err, size_t errlen)
{
	FOR_EACH_TRANSPORT(t)
		if ((*t)->device_src)
			return (*t)->device_src(cfg, device, port, dst, dst_len,
						out, out_len, err, errlen);
	rift__set_err(err, errlen,
		      "local %s:%d names an RDMA device, and this build has "
		      "no RDMA transport",
		      device, port);
	return RIFT_ENOTSUP;
}
