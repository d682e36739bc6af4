/*
 * rma.c - the public calls of one-sided access (rift.h, "One-sided
 * access"); the work is the session's (session/rma.c).
 */
#include "session/rma.h"

int rift_mem_reg(rift_ctx *ctx, void *addr, size_t len, unsigned access,
		 rift_mem **out)
{
	if (out)
		*out = NULL;
	if (!ctx || !addr || !out)
		return RIFT_EINVAL;
	return rift__mem_reg(ctx, addr, len, access, out);
}

int rift_mem_dereg(rift_mem *mem)
{
	if (!mem)
		return RIFT_EINVAL;
	return rift__mem_dereg(mem);
}

void *rift_mem_addr(const rift_mem *mem)
{
	return mem ? mem->addr : NULL;
}

size_t rift_mem_len(const rift_mem *mem)
{
	return mem ? mem->len : 0;
}

int rift_mem_export(rift_mem *mem, rift_conn *conn, size_t offset, size_t len,
		    unsigned access, void *token, size_t *token_len)
{
	if (!mem || !conn || !token || !token_len)
		return RIFT_EINVAL;
	return rift__mem_export(mem, conn, offset, len, access, token,
				token_len);
}

int rift_mem_revoke(rift_mem *mem, const void *token, size_t token_len)
{
	if (!mem || !token)
		return RIFT_EINVAL;
	return rift__mem_revoke(mem, token, token_len);
}

static int post(rift_conn *conn, int kind, rift_mem *local, size_t local_off,
		const void *token, size_t token_len, size_t remote_off,
		size_t len, uint64_t tag, rift_rma_cb cb, void *user)
{
	if (!conn || !local || !token || !cb)
		return RIFT_EINVAL;
	return rift__rma_post(conn, kind, local, local_off, token, token_len,
			      remote_off, len, tag, cb, user);
}

int rift_conn_read(rift_conn *conn, rift_mem *local, size_t local_off,
		   const void *token, size_t token_len, size_t remote_off,
		   size_t len, rift_rma_cb cb, void *user)
{
	return post(conn, RIFT__RMA_READ, local, local_off, token, token_len,
		    remote_off, len, 0, cb, user);
}

int rift_conn_write(rift_conn *conn, rift_mem *local, size_t local_off,
		    const void *token, size_t token_len, size_t remote_off,
		    size_t len, rift_rma_cb cb, void *user)
{
	return post(conn, RIFT__RMA_WRITE, local, local_off, token, token_len,
		    remote_off, len, 0, cb, user);
}

int rift_conn_write_notify(rift_conn *conn, rift_mem *local, size_t local_off,
			   const void *token, size_t token_len,
			   size_t remote_off, size_t len, uint64_t tag,
			   rift_rma_cb cb, void *user)
{
	return post(conn, RIFT__RMA_WRITE_NOTIFY, local, local_off, token,
		    token_len, remote_off, len, tag, cb, user);
}
