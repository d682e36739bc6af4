/*
 * http.c - requests and answer heads for rift-kv's /metrics.  See http.h.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http.h"

/* RFC 9110's tchar: the bytes of a method or a field name. */
static int tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A control byte (HTAB aside) or DEL: in no line of a head. */
static int ctl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

static size_t span(const char *s, size_t n, int (*ok)(unsigned char))
{
	size_t i = 0;

	while (i < n && ok((unsigned char)s[i]))
		i++;
	return i;
}

static int visible(unsigned char c)
{
	return c > 0x20 && c != 0x7f;
}

/* The request line (without its line end): 0 if it is well formed (its
 * method and path in *m and *p), else 400 or 505. */
static int request_line(const char *s, size_t n, const char **m, size_t *ml,
			const char **p, size_t *pl)
{
	size_t i = span(s, n, tchar), t;

	if (!i || i >= n || s[i] != ' ')
		return 400;
	*m = s;
	*ml = i++;
	t = span(s + i, n - i, visible);
	if (!t || i + t >= n || s[i + t] != ' ')
		return 400;
	*p = s + i;
	*pl = t;
	/* absolute-form (RFC 9112, 3.2.2): the path after the authority */
	if (t > 7 && (!strncasecmp(*p, "http://", 7) ||
		      (t > 8 && !strncasecmp(*p, "https://", 8)))) {
		const char *a = memchr(*p, '/', t) + 2;
		const char *slash = memchr(a, '/', (size_t)(*p + t - a));

		if (slash) {
			*pl = (size_t)(*p + t - slash);
			*p = slash;
		} else {
			*p = "/";
			*pl = 1;
		}
	}
	if (**p != '/')
		return 400;
	i += t + 1;
	if (n - i != 8 || strncmp(s + i, "HTTP/", 5) || s[i + 5] < '0' ||
	    s[i + 5] > '9' || s[i + 6] != '.' || s[i + 7] < '0' ||
	    s[i + 7] > '9')
		return 400;
	return s[i + 5] == '1' ? 0 : 505;
}

/* A header line (without its line end): 0, or 400. */
static int header_line(const char *s, size_t n)
{
	size_t i = span(s, n, tchar);

	/* no name, blank before the colon, or a folded line */
	return i && i < n && s[i] == ':' ? 0 : 400;
}

int kv_http_request(const char *buf, size_t len, int *head_only)
{
	const char *m = NULL, *p = NULL;
	size_t ml = 0, pl = 0, i = 0;
	int have_line = 0, rc;

	*head_only = 0;
	for (;;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t e, n;

		if (!nl) {
			/* a control byte is refused at once, before its
			 * line ends (a TLS hello, say); a CR last may be
			 * the line's end */
			for (size_t k = i; k < len; k++)
				if (ctl((unsigned char)buf[k]) &&
				    (buf[k] != '\r' || k + 1 < len))
					return 400;
			return len > KV_HTTP_MAX_HEAD ? 431 : 0;
		}
		e = (size_t)(nl - buf);
		if (e + 1 > KV_HTTP_MAX_HEAD)
			return 431;
		n = e - i;
		if (n && buf[e - 1] == '\r')
			n--;
		for (size_t k = i; k < i + n; k++)
			if (ctl((unsigned char)buf[k]))
				return 400;
		if (!have_line) {
			if (n) { /* else an empty line before it: skipped */
				rc = request_line(buf + i, n, &m, &ml, &p, &pl);
				if (rc)
					return rc;
				have_line = 1;
			}
		} else if (!n) {
			break; /* the empty line: the head is whole */
		} else if (header_line(buf + i, n)) {
			return 400;
		}
		i = e + 1;
	}
	if (ml == 4 && !memcmp(m, "HEAD", 4))
		*head_only = 1;
	else if (ml != 3 || memcmp(m, "GET", 3))
		return 405;
	for (size_t k = 0; k < pl; k++)
		if (p[k] == '?')
			pl = k;
	return pl == 8 && !memcmp(p, "/metrics", 8) ? 200 : 404;
}

const char *kv_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Error";
}

size_t kv_http_head(char *buf, size_t n, int status, const char *ctype,
		    size_t body_len)
{
	int k = snprintf(buf, n,
			 "HTTP/1.1 %d %s\r\n"
			 "Content-Type: %s\r\n"
			 "Content-Length: %zu\r\n"
			 "%s"
			 "Connection: close\r\n"
			 "\r\n",
			 status, kv_http_reason(status), ctype, body_len,
			 status == 405 ? "Allow: GET, HEAD\r\n" : "");

	return k < 0 || (size_t)k >= n ? 0 : (size_t)k;
}
