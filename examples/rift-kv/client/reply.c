/*
 * reply.c - RESP2 replies for rift-kv's client tools.  See reply.h.
 */
#include <stdint.h>
#include <string.h>

#include "reply.h"

/* Longest "-9223372036854775808" plus CRLF. */
#define NUM_MAX 22

/*
 * The line from b[i]: the bytes up to its CRLF, which must come before
 * any other CR or LF.  1 with *end just after the LF, 0 if the line is
 * not whole yet, -1 if a CR or LF stands alone.
 */
static int line(const char *b, size_t n, size_t i, size_t *end)
{
	for (; i < n; i++) {
		if (b[i] == '\n')
			return -1;
		if (b[i] != '\r')
			continue;
		if (i + 1 == n)
			return 0;
		if (b[i + 1] != '\n')
			return -1;
		*end = i + 2;
		return 1;
	}
	return 0;
}

/* A number line from b[i] (after its type byte): 1 with its value, 0 if
 * not whole yet, -1 if it is no decimal integer of 64 bits. */
static int number(const char *b, size_t n, size_t i, long long *v,
		  size_t *end)
{
	size_t k = i;
	uint64_t u = 0;
	int neg = 0, r;

	r = line(b, n < i + NUM_MAX ? n : i + NUM_MAX, i, end);
	if (r == 0 && n >= i + NUM_MAX)
		return -1; /* too long for a number */
	if (r <= 0)
		return r;
	if (b[k] == '-') {
		neg = 1;
		k++;
	}
	if (k == *end - 2)
		return -1;
	for (; k < *end - 2; k++) {
		if (b[k] < '0' || b[k] > '9' ||
		    u > (UINT64_MAX - (uint64_t)(b[k] - '0')) / 10)
			return -1;
		u = u * 10 + (uint64_t)(b[k] - '0');
	}
	if (u > (uint64_t)INT64_MAX + (uint64_t)neg)
		return -1;
	*v = neg ? (long long)(0 - u) : (long long)u;
	return 1;
}

int kv_reply_scan(const char *b, size_t n, size_t *len)
{
	long long left[KV_REPLY_MAX_DEPTH + 1]; /* elements still to come */
	size_t i = 0, end = 0;
	int d = 0;

	left[0] = 1;
	for (;;) {
		long long v = 0;
		int r;

		if (i == n)
			return 0;
		switch (b[i]) {
		case '+':
		case '-':
			r = line(b, n, i + 1, &end);
			break;
		case ':':
			r = number(b, n, i + 1, &v, &end);
			break;
		case '$':
			r = number(b, n, i + 1, &v, &end);
			if (r == 1 && v < -1)
				r = -1;
			if (r == 1 && v >= 0) {
				if (n - end < 2 || (uint64_t)v > n - end - 2)
					r = 0;
				else if (b[end + v] != '\r' ||
					 b[end + v + 1] != '\n')
					r = -1;
				else
					end += (size_t)v + 2;
			}
			break;
		case '*':
			r = number(b, n, i + 1, &v, &end);
			if (r == 1 && v < -1)
				r = -1;
			if (r == 1 && v > 0) {
				if (d == KV_REPLY_MAX_DEPTH)
					return -1;
				left[d]--;
				left[++d] = v;
				i = end;
				continue;
			}
			break;
		default:
			return -1;
		}
		if (r <= 0)
			return r;
		i = end;
		left[d]--;
		while (left[d] == 0) {
			if (d == 0) {
				*len = i;
				return 1;
			}
			d--;
		}
	}
}

int kv_reply_is_error(const char *buf)
{
	return buf[0] == '-';
}

/* sdscatrepr(): quoted, with C escapes for what is not printable. */
static void repr(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '\\':
		case '"':
			fprintf(f, "\\%c", c);
			break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		case '\a': fputs("\\a", f); break;
		case '\b': fputs("\\b", f); break;
		default:
			if (c >= 0x20 && c <= 0x7e)
				fputc(c, f);
			else
				fprintf(f, "\\x%02x", c);
		}
	}
	fputc('"', f);
}

/*
 * Print the element at b (whole) with prefix[0..plen) before each of its
 * lines but the first (redis-cli's cliFormatReplyTTY and
 * cliFormatReplyRaw); returns its length.
 */
static size_t print(FILE *f, const char *b, int raw, char *prefix,
		    size_t plen)
{
	size_t end = 0, at;
	long long v = 0;
	int digits = 0;

	switch (b[0]) {
	case '+':
	case '-':
		line(b, SIZE_MAX, 1, &end);
		if (!raw && b[0] == '-')
			fputs("(error) ", f);
		fwrite(b + 1, 1, end - 3, f);
		if (!raw || b[0] == '-')
			fputc('\n', f);
		return end;
	case ':':
		number(b, SIZE_MAX, 1, &v, &end);
		fprintf(f, raw ? "%lld" : "(integer) %lld\n", v);
		return end;
	}
	number(b, SIZE_MAX, 1, &v, &end);
	if (v < 0) {
		if (!raw)
			fputs("(nil)\n", f);
		return end;
	}
	if (b[0] == '$') {
		if (raw) {
			fwrite(b + end, 1, (size_t)v, f);
		} else {
			repr(f, b + end, (size_t)v);
			fputc('\n', f);
		}
		return end + (size_t)v + 2;
	}
	if (v == 0) {
		if (!raw)
			fputs("(empty array)\n", f);
		return end;
	}
	for (long long k = v; k; k /= 10)
		digits++;
	/* the elements' lines go under the first one's text */
	memset(prefix + plen, ' ', (size_t)digits + 2);
	at = end;
	for (long long k = 0; k < v; k++) {
		if (raw && k)
			fputc('\n', f);
		if (!raw)
			fprintf(f, "%.*s%*lld) ", k ? (int)plen : 0, prefix,
				digits, k + 1);
		at += print(f, b + at, raw, prefix, plen + (size_t)digits + 2);
	}
	return at;
}

void kv_reply_print(FILE *f, const char *buf, int raw)
{
	/* 20 digits and ") " per level at most */
	char prefix[KV_REPLY_MAX_DEPTH * 22];

	print(f, buf, raw, prefix, 0);
	if (raw)
		fputc('\n', f);
}
