/*
 * be.h - big-endian fields of a wire format, read and written through
 * single loads and stores at any alignment: rift's frames (session/
 * wire.c) and foreign protocols' messages (transports/verbs/
 * valkey_rdma.c).  Inline: a frame header is encoded and decoded once
 * per message.
 */
#ifndef RIFT_UTIL_BE_H
#define RIFT_UTIL_BE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void rift__put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void rift__put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void rift__put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t rift__get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static inline uint32_t rift__get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline uint64_t rift__get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

#endif
