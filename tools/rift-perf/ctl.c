/*
 * rift-perf's control messages: magic, type and CTL_VALUES numbers, little
 * endian, then an ERR's text or a JOIN's or JOIN_OK's token (write and
 * read: the bytes rift_mem_export gave, as they are).  main.c tells how
 * the client drives a run with them.
 */
#include <endian.h>
#include <stdio.h>
#include <string.h>

#include "perf.h"

static size_t ctl_encode(const struct ctl *m, uint8_t *buf)
{
	uint32_t w;
	size_t n = CTL_SIZE;

	w = htole32(PROTO_MAGIC);
	memcpy(buf, &w, 4);
	w = htole32(m->type);
	memcpy(buf + 4, &w, 4);
	for (int i = 0; i < CTL_VALUES; i++) {
		uint64_t v = htole64(m->v[i]);

		memcpy(buf + CTL_HDR + 8 * i, &v, 8);
	}
	if (m->type == CTL_ERR) {
		size_t len = strnlen(m->text, CTL_TEXT - 1);

		memcpy(buf + n, m->text, len);
		n += len;
	} else if (m->blob_len) {
		memcpy(buf + n, m->blob, m->blob_len);
		n += m->blob_len;
	}
	return n;
}

const char *op_name(enum op op)
{
	return op == OP_WRITE ? "write" : op == OP_READ ? "read" : "send";
}

const char *op_label(const struct opts *o)
{
	return o->notify ? "write_notify" : op_name(o->op);
}

int ctl_decode(const void *data, size_t len, struct ctl *m)
{
	const uint8_t *p = data;
	uint32_t w;

	if (len < CTL_SIZE)
		return -1;
	memcpy(&w, p, 4);
	if (le32toh(w) != PROTO_MAGIC)
		return -1;
	memcpy(&w, p + 4, 4);
	m->type = le32toh(w);
	for (int i = 0; i < CTL_VALUES; i++) {
		uint64_t v;

		memcpy(&v, p + CTL_HDR + 8 * i, 8);
		m->v[i] = le64toh(v);
	}
	len -= CTL_SIZE;
	m->blob_len = 0;
	if (m->type != CTL_ERR) {
		if (len > CTL_BLOB)
			return -1;
		memcpy(m->blob, p + CTL_SIZE, len);
		m->blob_len = len;
		len = 0;
	}
	if (len >= CTL_TEXT)
		len = CTL_TEXT - 1;
	memcpy(m->text, p + CTL_SIZE, len);
	m->text[len] = '\0';
	return 0;
}

static int ctl_send_msg(rift_conn *conn, struct ctl *m, const uint64_t *v,
			int nv)
{
	uint8_t buf[CTL_SIZE + (CTL_TEXT > CTL_BLOB ? CTL_TEXT : CTL_BLOB)];

	for (int i = 0; i < nv && i < CTL_VALUES; i++)
		m->v[i] = v[i];
	return rift_conn_send(conn, buf, ctl_encode(m, buf));
}

int ctl_send(rift_conn *conn, uint32_t type, const uint64_t *v, int nv,
	     const char *text)
{
	struct ctl m = {.type = type};

	if (text)
		snprintf(m.text, sizeof(m.text), "%s", text);
	return ctl_send_msg(conn, &m, v, nv);
}

int ctl_send_blob(rift_conn *conn, uint32_t type, const uint64_t *v, int nv,
		  const void *blob, size_t len)
{
	struct ctl m = {.type = type};

	if (len > CTL_BLOB)
		return RIFT_EINVAL;
	if (len)
		memcpy(m.blob, blob, len);
	m.blob_len = len;
	return ctl_send_msg(conn, &m, v, nv);
}
