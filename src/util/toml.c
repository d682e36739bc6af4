/*
 * toml.c - strict parser for the TOML subset of rift's config file.
 *
 * One pass over the text with a cursor that tracks line and column, after
 * a first pass that rejects invalid UTF-8 (so every later message can quote
 * a whole character).  Decoded strings, keys and table names go to one
 * arena sized from the input: none of them is longer than its source text
 * plus a NUL, so the arena never grows and pointers into it stay valid.
 */
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rift.h"
#include "util/toml.h"

struct pos {
	const char *s;
	unsigned line, col;
};

struct parser {
	struct rift__toml_doc *doc;
	const char *s, *end; /* cursor, end of text */
	unsigned line, col;  /* of the cursor */
	int table;           /* current table (index in doc->tables), -1 */
	char *err;
	size_t errlen;
};

const char *rift__toml_type_name(enum rift__toml_type t)
{
	switch (t) {
	case RIFT_TOML_STRING:
		return "a string";
	case RIFT_TOML_INT:
		return "an integer";
	case RIFT_TOML_FLOAT:
		return "a float";
	case RIFT_TOML_BOOL:
		return "a boolean";
	case RIFT_TOML_ARRAY:
		return "an array";
	}
	return "a value";
}

int rift__toml_errf(char *err, size_t errlen, const char *name, unsigned line,
		    unsigned col, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !errlen)
		return RIFT_EINVAL;
	n = snprintf(err, errlen, "%s:%u:%u: ", name, line, col);
	if (n < 0 || (size_t)n >= errlen)
		return RIFT_EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return RIFT_EINVAL;
}

/* ---- cursor ---- */

static int peek(const struct parser *p)
{
	return p->s < p->end ? (unsigned char)*p->s : -1;
}

static int peek_at(const struct parser *p, size_t k)
{
	return (size_t)(p->end - p->s) > k ? (unsigned char)p->s[k] : -1;
}

static void adv(struct parser *p)
{
	unsigned char c;

	if (p->s >= p->end)
		return;
	c = (unsigned char)*p->s++;
	if (c == '\n') {
		p->line++;
		p->col = 1;
	} else if ((c & 0xc0) != 0x80) {
		/* a continuation byte is part of a character already counted */
		p->col++;
	}
}

static struct pos here(const struct parser *p)
{
	struct pos at = { p->s, p->line, p->col };

	return at;
}

static bool at_newline(const struct parser *p)
{
	return peek(p) == '\n' || (peek(p) == '\r' && peek_at(p, 1) == '\n');
}

static void skip_ws(struct parser *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		adv(p);
}

static bool is_bare(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static bool is_control(int c)
{
	return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

/* What the cursor is on, for "found ..." in messages. */
static const char *found(const struct parser *p, char *buf, size_t len)
{
	int c = peek(p);

	if (c < 0)
		return "end of file";
	if (at_newline(p))
		return "end of line";
	if (c >= 0x20 && c < 0x7f) {
		snprintf(buf, len, "'%c'", c);
	} else if (c >= 0x80) {
		int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;

		snprintf(buf, len, "'%.*s'", n, p->s);
	} else {
		snprintf(buf, len, "U+%04X", (unsigned)c);
	}
	return buf;
}

#define FAIL_AT(p, at, ...)                                                   \
	rift__toml_errf((p)->err, (p)->errlen, (p)->doc->name, (at).line,     \
			(at).col, __VA_ARGS__)
#define FAIL(p, ...) FAIL_AT(p, here(p), __VA_ARGS__)

/* ---- storage ---- */

static char *arena_put(struct parser *p, const char *s, size_t n)
{
	struct rift__toml_doc *d = p->doc;
	char *out;

	if (d->arena_used + n + 1 > d->arena_cap)
		return NULL; /* cannot happen: see rift__toml_parse */
	out = d->arena + d->arena_used;
	memcpy(out, s, n);
	out[n] = '\0';
	d->arena_used += n + 1;
	return out;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, ncap * elem);
	if (!n)
		return RIFT_ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

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
static int end_of_line(struct parser *p, const char *after)
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
static int scan_digits(const char *s, size_t *i, size_t n, int base)
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
static bool accumulate(const char *s, size_t from, size_t to, int base,
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
static const char *number(const char *t, size_t n, struct rift__toml_val *v)
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
		d = scan_digits(t, &j, n, base);
		if (d < 0)
			return "'_' must be between two digits";
		if (d == 0 || j != n)
			return base == 16 ? "not a hex integer"
			       : base == 8 ? "not an octal integer"
					   : "not a binary integer";
		if (!accumulate(t, i + 2, n, base, INT64_MAX, &u))
			return "out of the 64-bit integer range";
		v->type = RIFT_TOML_INT;
		v->u.i = (int64_t)u;
		return NULL;
	}
	j = i;
	d = scan_digits(t, &j, n, 10);
	if (d < 0)
		return "'_' must be between two digits";
	if (d == 0)
		return "not a number";
	if (d > 1 && t[i] == '0')
		return "leading zeros are not allowed";
	if (j < n && t[j] == '.') {
		j++;
		d = scan_digits(t, &j, n, 10);
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
		d = scan_digits(t, &j, n, 10);
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

		if (!accumulate(t, i, n, 10, limit, &u))
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

static int value(struct parser *p, struct rift__toml_val *v, bool in_array);

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
		rc = grow((void **)&items, &cap, n + 1, sizeof(*items));
		if (rc)
			goto fail;
		rc = value(p, &items[n], true);
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

static int value(struct parser *p, struct rift__toml_val *v, bool in_array)
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
		why = number(t, n, v);
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

/* ---- structure ---- */

/*
 * Does the dotted path table.key name path itself or a table inside it?
 * (A key and a table may not share a name.)
 */
static bool key_covers(const char *table, const char *key, const char *path)
{
	size_t tl = strlen(table), kl = strlen(key);

	if (tl) {
		if (strncmp(path, table, tl) != 0 || path[tl] != '.')
			return false;
		path += tl + 1;
	}
	return strncmp(path, key, kl) == 0 &&
	       (path[kl] == '\0' || path[kl] == '.');
}

static int header(struct parser *p)
{
	struct rift__toml_doc *d = p->doc;
	struct pos start = here(p);
	char *name = d->arena + d->arena_used, *w = name;
	struct rift__toml_table *t;
	char buf[16];
	int rc;

	adv(p); /* '[' */
	if (peek(p) == '[')
		return FAIL_AT(p, start,
			       "arrays of tables ([[...]]) are not supported");
	for (;;) {
		skip_ws(p);
		if (peek(p) == '"' || peek(p) == '\'')
			return FAIL(p, "quoted keys are not supported; use a "
				       "bare name (A-Z a-z 0-9 _ -)");
		if (!is_bare(peek(p)))
			return FAIL(p, "expected a table name, found %s",
				    found(p, buf, sizeof(buf)));
		while (is_bare(peek(p))) {
			*w++ = *p->s;
			adv(p);
		}
		skip_ws(p);
		if (peek(p) == '.') {
			*w++ = '.';
			adv(p);
			continue;
		}
		if (peek(p) == ']') {
			adv(p);
			break;
		}
		return FAIL(p,
			    "expected '.' or ']' in a table header, found %s",
			    found(p, buf, sizeof(buf)));
	}
	*w++ = '\0';
	for (size_t i = 0; i < d->n_tables; i++)
		if (!strcmp(d->tables[i].name, name))
			return FAIL_AT(p, start,
				       "duplicate table [%s] (first defined "
				       "at line %u)",
				       name, d->tables[i].line);
	for (size_t i = 0; i < d->n_kvs; i++)
		if (key_covers(d->kvs[i].table, d->kvs[i].key, name))
			return FAIL_AT(p, start,
				       "table [%s] conflicts with key '%s' set "
				       "at line %u",
				       name, d->kvs[i].key, d->kvs[i].line);
	rc = grow((void **)&d->tables, &d->cap_tables, d->n_tables + 1,
		  sizeof(*d->tables));
	if (rc)
		return rc;
	d->arena_used += (size_t)(w - name);
	t = &d->tables[d->n_tables];
	t->name = name;
	t->line = start.line;
	t->col = start.col;
	p->table = (int)d->n_tables++;
	return end_of_line(p, "a table header");
}

static int keyval(struct parser *p)
{
	struct rift__toml_doc *d = p->doc;
	struct pos kpos = here(p);
	const char *table = p->table < 0 ? "" : d->tables[p->table].name;
	struct rift__toml_kv kv;
	const char *k = p->s;
	char ctx[96];
	size_t kl = 0;
	int rc;

	struct pos after;

	while (is_bare(peek(p))) {
		adv(p);
		kl++;
	}
	after = here(p);
	skip_ws(p);
	if (peek(p) == '.')
		return FAIL(p, "dotted keys are not supported; put '%.*s' "
			       "under a [table] header",
			    (int)kl, k);
	/* point just past the key: that is where the '=' belongs */
	if (peek(p) != '=')
		return FAIL_AT(p, after, "expected '=' after key '%.*s'",
			       (int)kl, k);
	adv(p);
	skip_ws(p);
	if (peek(p) < 0 || at_newline(p) || peek(p) == '#')
		return FAIL(p, "missing value after '%.*s ='", (int)kl, k);

	memset(&kv, 0, sizeof(kv));
	kv.table = table;
	kv.table_idx = p->table;
	kv.line = kpos.line;
	kv.col = kpos.col;
	kv.key = arena_put(p, k, kl);
	if (!kv.key)
		return RIFT_ENOMEM;
	for (size_t i = 0; i < d->n_kvs; i++)
		if (!strcmp(d->kvs[i].table, table) &&
		    !strcmp(d->kvs[i].key, kv.key))
			return FAIL_AT(p, kpos,
				       "duplicate key '%s' (first set at line "
				       "%u)",
				       kv.key, d->kvs[i].line);
	for (size_t i = 0; i < d->n_tables; i++)
		if (key_covers(table, kv.key, d->tables[i].name))
			return FAIL_AT(p, kpos,
				       "key '%s' conflicts with table [%s] at "
				       "line %u",
				       kv.key, d->tables[i].name,
				       d->tables[i].line);
	rc = value(p, &kv.val, false);
	if (rc)
		return rc;
	rc = grow((void **)&d->kvs, &d->cap_kvs, d->n_kvs + 1,
		  sizeof(*d->kvs));
	if (rc) {
		if (kv.val.type == RIFT_TOML_ARRAY)
			free((void *)kv.val.u.arr.items);
		return rc;
	}
	d->kvs[d->n_kvs++] = kv;
	snprintf(ctx, sizeof(ctx), "the value of '%s'", kv.key);
	return end_of_line(p, ctx);
}

/* Reject invalid UTF-8 (overlong forms, surrogates, > U+10FFFF) up front. */
static int check_utf8(struct parser *p)
{
	const unsigned char *s = (const unsigned char *)p->s;
	const unsigned char *end = (const unsigned char *)p->end;
	unsigned line = 1, col = 1;

	while (s < end) {
		unsigned c = *s, n, lo = 0x80, hi = 0xbf;

		if (c < 0x80) {
			if (c == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
			s++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 2;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 3;
			if (c == 0xe0)
				lo = 0xa0; /* overlong */
			if (c == 0xed)
				hi = 0x9f; /* surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 4;
			if (c == 0xf0)
				lo = 0x90; /* overlong */
			if (c == 0xf4)
				hi = 0x8f; /* > U+10FFFF */
		} else {
			goto bad;
		}
		if ((size_t)(end - s) < n || s[1] < lo || s[1] > hi)
			goto bad;
		for (unsigned k = 2; k < n; k++)
			if (s[k] < 0x80 || s[k] > 0xbf)
				goto bad;
		s += n;
		col++;
	}
	return 0;
bad:
	return rift__toml_errf(p->err, p->errlen, p->doc->name, line, col,
			       "invalid UTF-8");
}

static int parse(struct parser *p)
{
	char buf[16];
	int rc;

	if (p->end - p->s >= 3 && !memcmp(p->s, "\xef\xbb\xbf", 3))
		p->s += 3; /* byte order mark */
	rc = check_utf8(p);
	if (rc)
		return rc;
	for (;;) {
		skip_ws(p);
		if (peek(p) < 0)
			return 0;
		if (peek(p) == '#' || at_newline(p)) {
			rc = end_of_line(p, "a comment");
			if (rc)
				return rc;
			continue;
		}
		if (peek(p) == '[')
			rc = header(p);
		else if (is_bare(peek(p)))
			rc = keyval(p);
		else if (peek(p) == '"' || peek(p) == '\'')
			rc = FAIL(p,
				  "quoted keys are not supported; use a bare "
				  "key (A-Z a-z 0-9 _ -)");
		else
			rc = FAIL(
				p,
				"expected a key or a [table] header, found %s",
				found(p, buf, sizeof(buf)));
		if (rc)
			return rc;
	}
}

int rift__toml_parse(struct rift__toml_doc *doc, const char *name,
		     const char *text, size_t len, char *err, size_t errlen)
{
	struct parser p = {
		.doc = doc,
		.s = text,
		.end = text + len,
		.line = 1,
		.col = 1,
		.table = -1,
		.err = err,
		.errlen = errlen,
	};
	int rc;

	if (err && errlen)
		err[0] = '\0';
	memset(doc, 0, sizeof(*doc));
	doc->name = name;
	/*
	 * Every key, table name and decoded string is at most as long as its
	 * source text and each takes at least one byte of it, so twice the
	 * input bounds them all with their NULs.
	 */
	if (len > SIZE_MAX / 2 - 16)
		return RIFT_ENOMEM;
	doc->arena_cap = 2 * len + 16;
	doc->arena = malloc(doc->arena_cap);
	if (!doc->arena)
		return RIFT_ENOMEM;
	rc = parse(&p);
	if (rc) {
		if (rc == RIFT_ENOMEM && err && errlen)
			snprintf(err, errlen, "%s: out of memory", name);
		rift__toml_free(doc);
	}
	return rc;
}

void rift__toml_free(struct rift__toml_doc *doc)
{
	for (size_t i = 0; i < doc->n_kvs; i++)
		if (doc->kvs[i].val.type == RIFT_TOML_ARRAY)
			free((void *)doc->kvs[i].val.u.arr.items);
	free(doc->kvs);
	free(doc->tables);
	free(doc->arena);
	memset(doc, 0, sizeof(*doc));
}

/* ---- helpers for values that come from elsewhere (environment) ---- */

int rift__toml_int(const char *s, int64_t *out, const char **why)
{
	struct rift__toml_val v;
	size_t n = strlen(s);

	*why = n ? number(s, n, &v) : "empty";
	if (!*why && v.type != RIFT_TOML_INT)
		*why = "not an integer";
	if (*why)
		return -1;
	*out = v.u.i;
	return 0;
}

static const struct {
	const char *name;
	unsigned shift;
} units[] = {
	{ "", 0 },    { "b", 0 },    { "k", 10 },  { "kb", 10 },
	{ "kib", 10 }, { "m", 20 },  { "mb", 20 }, { "mib", 20 },
	{ "g", 30 },  { "gb", 30 },  { "gib", 30 }, { "t", 40 },
	{ "tb", 40 }, { "tib", 40 },
};

int rift__toml_size(const char *s, uint64_t *out, const char **why)
{
	size_t n = strlen(s), i = 0, j;
	uint64_t v;
	int d;

	*why = NULL;
	if (n == 0) {
		*why = "empty";
		return -1;
	}
	if (s[0] == '-') {
		*why = "a size cannot be negative";
		return -1;
	}
	d = scan_digits(s, &i, n, 10);
	if (d <= 0) {
		*why = d < 0 ? "'_' must be between two digits"
			     : "a size starts with a number of bytes";
		return -1;
	}
	if (i < n && s[i] == '.') {
		*why = "a size must be a whole number (write \"1536MiB\", not "
		       "\"1.5GiB\")";
		return -1;
	}
	if (!accumulate(s, 0, i, 10, UINT64_MAX, &v)) {
		*why = "too large";
		return -1;
	}
	j = i;
	while (j < n && (s[j] == ' ' || s[j] == '\t'))
		j++;
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		if (strcasecmp(s + j, units[u].name) != 0)
			continue;
		if (units[u].name[0] == '\0' && i != n) /* only blanks */
			break;
		if (units[u].shift && v > (UINT64_MAX >> units[u].shift)) {
			*why = "too large";
			return -1;
		}
		*out = v << units[u].shift;
		return 0;
	}
	*why = "unknown unit (use B, K/KB/KiB, M/MB/MiB, G/GB/GiB or "
	       "T/TB/TiB; all are powers of 1024)";
	return -1;
}

int rift__toml_size_str(uint64_t v, char *buf, size_t len)
{
	static const char *const iec[] = { "TiB", "GiB", "MiB", "KiB" };

	for (unsigned k = 0; v && k < 4; k++) {
		unsigned shift = 40 - 10 * k;

		if ((v & ((1ull << shift) - 1)) == 0)
			return snprintf(buf, len, "%llu%s",
					(unsigned long long)(v >> shift),
					iec[k]);
	}
	return snprintf(buf, len, "%llu", (unsigned long long)v);
}

int rift__toml_quote(const char *s, char *buf, size_t len)
{
	size_t n = 0;

#define PUT(c)                                                                \
	do {                                                                  \
		if (n + 1 < len)                                              \
			buf[n] = (c);                                         \
		n++;                                                          \
	} while (0)
	PUT('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		const char *esc = NULL;
		char hex[8];

		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\t': esc = "\\t"; break;
		case '\n': esc = "\\n"; break;
		case '\f': esc = "\\f"; break;
		case '\r': esc = "\\r"; break;
		default:
			if (c < 0x20 || c == 0x7f) {
				snprintf(hex, sizeof(hex), "\\u%04X", c);
				esc = hex;
			}
		}
		if (esc)
			for (; *esc; esc++)
				PUT(*esc);
		else
			PUT((char)c);
	}
	PUT('"');
#undef PUT
	if (len)
		buf[n < len ? n : len - 1] = '\0';
	return (int)n;
}
