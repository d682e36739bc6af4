/*
 * http.h - the little HTTP/1.x rift-kv needs to serve GET /metrics from
 * its own loop: read a request's head, say what to answer, write the
 * answer's head.  libc only, no state: metrics.c holds the sockets.
 *
 * A request is its head alone: the request line, header lines, an empty
 * line (CRLF line ends, or bare LF, which RFC 9112 lets a server take).
 * Empty lines before the request line are skipped (RFC 9112, 2.2).  The
 * headers are checked for shape (a field name, a colon) and otherwise
 * not read: the answer does not depend on them, and the connection is
 * closed after one answer, so a body the client sends is never taken
 * for a next request.
 */
#ifndef RIFT_KV_HTTP_H
#define RIFT_KV_HTTP_H

#include <stddef.h>

/* Most bytes of a request's head, the empty line included; more is 431. */
#define KV_HTTP_MAX_HEAD 8192

/*
 * What to answer the len bytes at buf, the start of a request:
 *
 *   0    its head is not complete yet: read more
 *   200  GET or HEAD of /metrics (a query string after it is ignored);
 *        *head_only is 1 for HEAD
 *   400  malformed: a request line that is not METHOD SP TARGET SP
 *        HTTP/x.y, a target not starting with '/', a header line with
 *        no field name and colon (or folded), a NUL or control byte
 *   404  another path
 *   405  a method other than GET or HEAD (answer with Allow: GET, HEAD)
 *   431  more than KV_HTTP_MAX_HEAD bytes with no end of the head
 *   505  a version other than HTTP/1.x
 *
 * 400 and 505 come as soon as the line that shows them has (400 for a
 * control byte as soon as it has), 431 once the limit is passed, the
 * others once the head is whole.
 */
int kv_http_request(const char *buf, size_t len, int *head_only);

/* "OK", "Not Found", ... for the statuses above and 408, 503. */
const char *kv_http_reason(int status);

/*
 * The head of an answer into buf (size n): status line, Content-Type,
 * Content-Length body_len, Connection: close, and Allow for 405.
 * Returns its length, or 0 if it does not fit in n bytes.
 */
size_t kv_http_head(char *buf, size_t n, int status, const char *ctype,
		    size_t body_len);

#endif
