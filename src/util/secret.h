/*
 * secret.h - what a session's secret needs: random bytes from the
 * kernel, a keyed hash (SipHash-2-4) and a comparison whose time does not
 * depend on where two buffers differ.
 *
 * SipHash-2-4 (Aumasson and Bernstein, 2012) is a pseudorandom function
 * keyed with 128 bits, made for short inputs: rift uses it as the MAC of
 * a RESUME (session/wire.h says why) with its 128-bit output, and to
 * hash session ids into the context's table (session/sessions.c) with
 * its 64-bit one, keyed per context so that a peer choosing its ids
 * cannot choose their buckets.  Checked against the reference vectors
 * (tests/unit/test_secret.c).
 */
#ifndef RIFT_UTIL_SECRET_H
#define RIFT_UTIL_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RIFT_SIPHASH_KEY_LEN 16u

/*
 * SipHash-2-4 of n bytes at in under key, outlen 8 (the 64-bit
 * function) or 16 (the 128-bit one) bytes written to out, in the byte
 * order of the reference implementation.
 */
void rift__siphash(const uint8_t key[RIFT_SIPHASH_KEY_LEN], const void *in,
		   size_t n, uint8_t *out, size_t outlen);
/* The 64-bit function as a number (its bytes read little-endian). */
uint64_t rift__siphash64(const uint8_t key[RIFT_SIPHASH_KEY_LEN],
			 const void *in, size_t n);

/* Whether a and b hold the same n bytes, in a time that depends on n
 * only: a forger timing refusals learns nothing about a correct tag. */
bool rift__ct_equal(const void *a, const void *b, size_t n);

/* n random bytes from getrandom(2) (blocks only until the kernel's pool
 * is first seeded, at boot).  0, or RIFT_EIO. */
int rift__random(void *buf, size_t n);

#endif
