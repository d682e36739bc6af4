/*
 * glob.h - Redis's glob patterns (KEYS, CONFIG GET).
 *
 *   *        any run of bytes, the empty one too
 *   ?        one byte
 *   [abc]    one of the bytes listed; [^abc] one byte not listed;
 *            [a-z] a range (either order, as Redis takes it); \x in a
 *            class is x itself; an unterminated class ends with the
 *            pattern
 *   \x       x itself (a trailing backslash is a backslash)
 *   other    itself (nocase: ASCII letters of either case)
 *
 * Binary-safe.  Matching is iterative with one backtrack point, so it
 * takes at most pattern length times string length steps, whatever the
 * pattern (Redis's recursion is exponential on "*a*a*a...b").
 */
#ifndef RIFT_KV_GLOB_H
#define RIFT_KV_GLOB_H

#include <stddef.h>

/* 1 if str matches pat, else 0. */
int kv_glob_match(const char *pat, size_t plen, const char *str, size_t slen,
		  int nocase);

#endif
