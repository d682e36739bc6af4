/*
 * secret.c - random bytes, SipHash-2-4 and a constant-time comparison;
 * see secret.h.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "internal.h"
#include "util/secret.h"

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

#define SIPROUND                                                              \
	do {                                                                  \
		v0 += v1;                                                     \
		v1 = rotl(v1, 13);                                            \
		v1 ^= v0;                                                     \
		v0 = rotl(v0, 32);                                            \
		v2 += v3;                                                     \
		v3 = rotl(v3, 16);                                            \
		v3 ^= v2;                                                     \
		v0 += v3;                                                     \
		v3 = rotl(v3, 21);                                            \
		v3 ^= v0;                                                     \
		v2 += v1;                                                     \
		v1 = rotl(v1, 17);                                            \
		v1 ^= v2;                                                     \
		v2 = rotl(v2, 32);                                            \
	} while (0)

void rift__siphash(const uint8_t key[RIFT_SIPHASH_KEY_LEN], const void *in,
		   size_t n, uint8_t *out, size_t outlen)
{
	const uint8_t *p = in;
	uint64_t k0 = get_le64(key), k1 = get_le64(key + 8);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull;
	uint64_t v1 = k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ull;
	uint64_t v3 = k1 ^ 0x7465646279746573ull;
	uint64_t b = (uint64_t)n << 56, m;
	size_t left = n & 7;

	if (outlen == 16)
		v1 ^= 0xee;
	for (const uint8_t *end = p + (n - left); p != end; p += 8) {
		m = get_le64(p);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t i = 0; i < left; i++)
		b |= (uint64_t)p[i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;

	v2 ^= outlen == 16 ? 0xee : 0xff;
	for (int i = 0; i < 4; i++)
		SIPROUND;
	put_le64(out, v0 ^ v1 ^ v2 ^ v3);
	if (outlen != 16)
		return;
	v1 ^= 0xdd;
	for (int i = 0; i < 4; i++)
		SIPROUND;
	put_le64(out + 8, v0 ^ v1 ^ v2 ^ v3);
}

uint64_t rift__siphash64(const uint8_t key[RIFT_SIPHASH_KEY_LEN],
			 const void *in, size_t n)
{
	uint8_t out[8];

	rift__siphash(key, in, n, out, sizeof(out));
	return get_le64(out);
}

bool rift__ct_equal(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

int rift__random(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t got = getrandom(p, n, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return RIFT_EIO;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}
