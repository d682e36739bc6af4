/*
 * toml_lex.c - the lexical pieces of the TOML parser (toml.c): comments
 * and ends of lines, numbers, strings, arrays and values, read at the
 * cursor of toml_int.h.
 */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rift.h"
#include "util/toml_int.h"

/* ---- lexical pieces ---- */

static int skip_comment(struct parser *p)
{
	adv(p); /* '#' */
	while (peek(p) >= 0 && !at_newline(p)) {
		if (is_control(peek(p)))
			return FAIL(p, "control character U+%04X in a comment",
				    (unsigned)peek(p));
		adv(p);
	}
	return 0;
}

/* After a header or a value: blanks, an optional comment, end of line. */
int rift__toml_end_of_line(struct parser *p, const char *after)
{
	char buf[16];

	skip_ws(p);
	if (peek(p) == '#') {
		int rc = skip_comment(p);

		if (rc)
			return rc;
	}
	if (peek(p) < 0)
		return 0;
	if (at_newline(p)) {
		if (peek(p) == '\r')
			adv(p);
		adv(p);
		return 0;
	}
	return FAIL(p, "unexpected %s after %s", found(p, buf, sizeof(buf)),
		    after);
}

/* Inside arrays values may be spread over lines, with comments between. */
static int skip_ws_lines(struct parser *p)
{
	for (;;) {
		skip_ws(p);
		if (peek(p) == '#') {
			int rc = skip_comment(p);

			if (rc)
				return rc;
		} else if (at_newline(p)) {
			if (peek(p) == '\r')
				adv(p);
			adv(p);
		} else {
			return 0;
		}
	}
}

/*
 * Digits of base with '_' allowed only between two digits.  Returns the
 * number of digits at s[*i..n) and advances *i, or -1 for a misplaced '_'.
 */
int rift__toml_scan_digits(const char *s, size_t *i, size_t n, int base)
{
	int count = 0;
	bool prev_digit = false;

	for (; *i < n; (*i)++) {
		int c = (unsigned char)s[*i], v;

		if (c == '_') {
			if (!prev_digit)
				return -1;
			prev_digit = false;
			continue;
		}
		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			break;
		if (v >= base)
			break;
		prev_digit = true;
		count++;
	}
	if (count && !prev_digit)
		return -1; /* trailing '_' */
	return count;
}

static int digit_val(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

/*
 * Accumulate the digits of s[from..to) (skipping '_') in base; false on
 * overflow past limit.
 */
bool rift__toml_accumulate(const char *s, size_t from, size_t to, int base,
			   uint64_t limit, uint64_t *out)
{
	uint64_t v = 0;

	for (size_t i = from; i < to; i++) {
		unsigned d;

		if (s[i] == '_')
			continue;
		d = (unsigned)digit_val((unsigned char)s[i]);
		if (v > (limit - d) / (unsigned)base)
			return false;
		v = v * (unsigned)base + d;
	}
	*out = v;
	return true;
}

/*
 * A TOML number in t[0..n).  Returns NULL with *v set (INT or FLOAT), or
 * a reason in static storage.
 */
const char *rift__toml_number(const char *t, size_t n, struct rift__toml_val *v)
{
	size_t i = 0, j;
	bool neg = false, is_float = false;
	int d;

	if (n && (t[0] == '+' || t[0] == '-')) {
		neg = t[0] == '-';
		i = 1;
	}
	if (n - i == 3 &&
	    (!strncmp(t + i, "inf", 3) || !strncmp(t + i, "nan", 3))) {
		v->type = RIFT_TOML_FLOAT;
		v->u.f = t[i] == 'i' ? (neg ? -INFINITY : INFINITY) : NAN;
		return NULL;
	}
	if (n - i >= 2 && t[i] == '0' &&
	    (t[i + 1] == 'x' || t[i + 1] == 'o' || t[i + 1] == 'b')) {
		int base = t[i + 1] == 'x' ? 16 : t[i + 1] == 'o' ? 8 : 2;
		uint64_t u;

		if (i)
			return "a sign is not allowed on hex, octal or binary "
			       "integers";
		j = i + 2;
		d = rift__toml_scan_digits(t, &j, n, base);
		if (d < 0)
			return "'_' must be between two digits";
		if (d == 0 || j != n)
			return base == 16 ? "not a hex integer"
			       : base == 8 ? "not an octal integer"
					   : "not a binary integer";
		if (!rift__toml_accumulate(t, i + 2, n, base, INT64_MAX, &u))
			return "out of the 64-bit integer range";
		v->type = RIFT_TOML_INT;
		v->u.i = (int64_t)u;
		return NULL;
	}
	j = i;
	d = rift__toml_scan_digits(t, &j, n, 10);
	if (d < 0)
		return "'_' must be between two digits";
	if (d == 0)
		return "not a number";
	if (d > 1 && t[i] == '0')
		return "leading zeros are not allowed";
	if (j < n && t[j] == '.') {
		j++;
		d = rift__toml_scan_digits(t, &j, n, 10);
		if (d < 0)
			return "'_' must be between two digits";
		if (d == 0)
			return "a '.' must be followed by digits";
		is_float = true;
	}
	if (j < n && (t[j] == 'e' || t[j] == 'E')) {
		j++;
		if (j < n && (t[j] == '+' || t[j] == '-'))
			j++;
		d = rift__toml_scan_digits(t, &j, n, 10);
		if (d < 0)
			return "'_' must be between two digits";
		if (d == 0)
			return "an exponent needs digits";
		is_float = true;
	}
	if (j != n)
		return "not a number";
	if (is_float) {
		char buf[128];
		size_t k = 0;
		locale_t c_loc;

		for (size_t m = 0; m < n; m++)
			if (t[m] != '_' && k < sizeof(buf) - 1)
				buf[k++] = t[m];
		buf[k] = '\0';
		if (n >= sizeof(buf))
			return "too long";
		/* the application's locale may use ',' for the decimal point */
		c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
		if (!c_loc)
			return "cannot convert (no C locale)";
		v->u.f = strtod_l(buf, NULL, c_loc);
		freelocale(c_loc);
		if (isinf(v->u.f))
			return "out of the range of a double";
		v->type = RIFT_TOML_FLOAT;
		return NULL;
	} else {
		uint64_t u;
		uint64_t limit = (uint64_t)INT64_MAX + (neg ? 1 : 0);

		if (!rift__toml_accumulate(t, i, n, 10, limit, &u))
			return "out of the 64-bit integer range";
		v->type = RIFT_TOML_INT;
		v->u.i = neg ? (int64_t)(0 - u) : (int64_t)u;
		return NULL;
	}
}

static void put_utf8(char **o, uint32_t cp)
{
	char *w = *o;

	if (cp < 0x80) {
		*w++ = (char)cp;
	} else if (cp < 0x800) {
		*w++ = (char)(0xc0 | (cp >> 6));
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*w++ = (char)(0xe0 | (cp >> 12));
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*w++ = (char)(0xf0 | (cp >> 18));
		*w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	}
	*o = w;
}

/*
 * A basic ("...") or literal ('...') string, decoded straight into the
 * arena: the decoded form is never longer than the source.
 */
static int string(struct parser *p, struct rift__toml_val *v)
{
	struct rift__toml_doc *d = p->doc;
	struct pos start = here(p);
	int quote = peek(p);
	char *out = d->arena + d->arena_used, *w = out;

	adv(p);
	for (;;) {
		int c = peek(p);

		if (c < 0 || at_newline(p))
			return FAIL_AT(p, start,
				       quote == '"'
					       ? "unterminated string "
						 "(missing closing '\"')"
					       : "unterminated string "
						 "(missing closing \"'\")");
		if (c == quote) {
			adv(p);
			break;
		}
		if (c == '\\' && quote == '"') {
			static const char esc_in[] = "btnfr\"\\";
			static const char esc_out[] = "\b\t\n\f\r\"\\";
			struct pos esc = here(p);
			const char *hit;
			int e, ndig;
			uint32_t cp = 0;

			adv(p);
			e = peek(p);
			hit = e > 0 ? strchr(esc_in, e) : NULL;
			if (hit) {
				*w++ = esc_out[hit - esc_in];
				adv(p);
				continue;
			}
			if (e != 'u' && e != 'U') {
				if (e > 0x20 && e < 0x7f)
					return FAIL_AT(p, esc,
						       "invalid escape '\\%c' "
						       "in a string",
						       e);
				return FAIL_AT(p, esc,
					       "invalid escape in a string");
			}
			ndig = e == 'u' ? 4 : 8;
			adv(p);
			for (int k = 0; k < ndig; k++) {
				c = peek(p);
				if (!((c >= '0' && c <= '9') ||
				      (c >= 'a' && c <= 'f') ||
				      (c >= 'A' && c <= 'F')))
					return FAIL_AT(p, esc,
						       "'\\%c' needs %d hex "
						       "digits",
						       e, ndig);
				cp = cp * 16 + (uint32_t)digit_val(c);
				adv(p);
			}
			if (cp == 0)
				return FAIL_AT(
					p, esc,
					"'\\%c%0*X' (NUL) is not allowed "
					"in a string",
					e, ndig, 0);
			if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
				return FAIL_AT(p, esc,
					       "'\\%c%0*X' is not a Unicode "
					       "scalar value",
					       e, ndig, (unsigned)cp);
			put_utf8(&w, cp);
			continue;
		}
		if (is_control(c))
			return FAIL(p,
				    "control character U+%04X must be escaped "
				    "in a string",
				    (unsigned)c);
		*w++ = (char)c;
		adv(p);
	}
	*w++ = '\0';
	d->arena_used += (size_t)(w - out);
	v->type = RIFT_TOML_STRING;
	v->u.s = out;
	return 0;
}

static int array(struct parser *p, struct rift__toml_val *v)
{
	struct pos start = here(p);
	struct rift__toml_val *items = NULL;
	size_t n = 0, cap = 0;
	char buf[16];
	int rc;

	adv(p); /* '[' */
	for (;;) {
		rc = skip_ws_lines(p);
		if (rc)
			goto fail;
		if (peek(p) == ']') {
			adv(p);
			break;
		}
		if (peek(p) < 0) {
			rc = FAIL_AT(p, start,
				     "unterminated array (missing ']')");
			goto fail;
		}
		rc = rift__toml_grow((void **)&items, &cap, n + 1,
				     sizeof(*items));
		if (rc)
			goto fail;
		rc = rift__toml_value(p, &items[n], true);
		if (rc)
			goto fail;
		n++;
		rc = skip_ws_lines(p);
		if (rc)
			goto fail;
		if (peek(p) == ',') {
			adv(p);
			continue;
		}
		if (peek(p) == ']') {
			adv(p);
			break;
		}
		if (peek(p) < 0) {
			rc = FAIL_AT(p, start,
				     "unterminated array (missing ']')");
			goto fail;
		}
		rc = FAIL(p, "expected ',' or ']' in an array, found %s",
			  found(p, buf, sizeof(buf)));
		goto fail;
	}
	v->type = RIFT_TOML_ARRAY;
	v->u.arr.items = items;
	v->u.arr.n = n;
	return 0;
fail:
	free(items);
	return rc;
}

static bool is_token(int c)
{
	return is_bare(c) || c == '.' || c == '+' || c == ':';
}

int rift__toml_value(struct parser *p, struct rift__toml_val *v, bool in_array)
{
	const char *t = p->s, *why;
	size_t n = 0;
	char buf[16];
	int c = peek(p);

	memset(v, 0, sizeof(*v));
	v->line = p->line;
	v->col = p->col;
	if (c == '"' || c == '\'') {
		if (peek_at(p, 1) == c && peek_at(p, 2) == c)
			return FAIL(p, "multi-line strings are not supported");
		return string(p, v);
	}
	if (c == '[') {
		if (in_array)
			return FAIL(p, "nested arrays are not supported");
		return array(p, v);
	}
	if (c == '{')
		return FAIL(p, "inline tables are not supported");
	while (t + n < p->end && is_token((unsigned char)t[n]))
		n++;
	if (n == 0)
		return FAIL(p, "expected a value, found %s",
			    found(p, buf, sizeof(buf)));
	if ((n == 4 && !memcmp(t, "true", 4)) ||
	    (n == 5 && !memcmp(t, "false", 5))) {
		v->type = RIFT_TOML_BOOL;
		v->u.b = n == 4;
	} else if (memchr(t, ':', n) ||
		   (n >= 5 && t[0] >= '0' && t[0] <= '9' && t[4] == '-')) {
		return FAIL(p, "dates and times are not supported");
	} else if ((t[0] >= '0' && t[0] <= '9') || t[0] == '+' ||
		   t[0] == '-' || (n == 3 && (!memcmp(t, "inf", 3) ||
					      !memcmp(t, "nan", 3)))) {
		why = rift__toml_number(t, n, v);
		if (why)
			return FAIL(p, "invalid number '%.*s': %s", (int)n, t,
				    why);
	} else {
		return FAIL(p, "expected a value, found '%.*s' (strings must "
			       "be quoted)",
			    (int)n, t);
	}
	for (size_t k = 0; k < n; k++)
		adv(p);
	return 0;
}
