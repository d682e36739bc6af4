/*
 * rift-perf's control messages: magic, type and CTL_VALUES numbers, little
 * endian, then an ERR's text.  main.c tells how the client drives a run
 * with them.
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
	}
	return n;
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
	if (len >= CTL_TEXT)
		len = CTL_TEXT - 1;
	memcpy(m->text, p + CTL_SIZE, len);
	m->text[len] = '\0';
	return 0;
}

int ctl_send(rift_conn *conn, uint32_t type, const uint64_t *v, int nv,
	     const char *text)
{
	uint8_t buf[CTL_SIZE + CTL_TEXT];
	struct ctl m = {.type = type};

	for (int i = 0; i < nv && i < CTL_VALUES; i++)
		m.v[i] = v[i];
	if (text)
		snprintf(m.text, sizeof(m.text), "%s", text);
	return rift_conn_send(conn, buf, ctl_encode(&m, buf));
}
