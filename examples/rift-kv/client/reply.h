/*
 * reply.h - RESP2 replies for rift-kv's client tools: find where one
 * ends, and print it as redis-cli 7.0 does.
 *
 * A reply is "+text", "-error", ":integer", "$len" with len bytes, "$-1"
 * (nil), "*n" with n replies, or "*-1" (nil), each line ending in CRLF.
 * Arrays nest at most KV_REPLY_MAX_DEPTH deep (rift-kv's nest three).
 */
#ifndef RIFT_KV_REPLY_H
#define RIFT_KV_REPLY_H

#include <stddef.h>
#include <stdio.h>

#define KV_REPLY_MAX_DEPTH 64

/*
 * Is there one whole reply at the start of buf[0..n)?  1 with its length
 * in *len; 0 if it is not whole yet (read more); -1 if the bytes are no
 * RESP2 reply (a type byte, a number or a CRLF out of place, nested too
 * deep).  Looks at each element's header once: a bulk's body is skipped
 * by its length.
 */
int kv_reply_scan(const char *buf, size_t n, size_t *len);

/* Is the whole reply at buf (kv_reply_scan said so) an error? */
int kv_reply_is_error(const char *buf);

/*
 * Print the whole reply at buf to f, as redis-cli prints it:
 *
 *   raw 0  (a terminal, or --no-raw): "(integer) 1", strings quoted with
 *          escapes ("a\n" as "a\\n"), "(nil)", "(error) ERR ...",
 *          "(empty array)", arrays as numbered lines "1) ", nested ones
 *          indented under their number
 *   raw 1  (--raw, or not a terminal): the bytes of strings as they are,
 *          integers as numbers, nil as nothing, an error's text and a
 *          line end, an array's elements each on its line
 *
 * In the raw form a line end follows, as redis-cli ends each reply; the
 * other form ends each of its lines itself.
 */
void kv_reply_print(FILE *f, const char *buf, int raw);

#endif
