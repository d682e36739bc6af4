/*
 * toml.c - strict parser for the TOML subset of rift's config file.
 *
 * One pass over the text with a cursor that tracks line and column, after
 * a first pass that rejects invalid UTF-8 (so every later message can quote
 * a whole character).  Decoded strings, keys and table names go to one
 * arena sized from the input: none of them is longer than its source text
 * plus a NUL, so the arena never grows and pointers into it stay valid.
 *
 * The cursor is in toml_int.h, the lexical pieces (comments, numbers,
 * strings, values) in toml_lex.c; this file has the structure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rift.h"
#include "util/toml_int.h"

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

int rift__toml_grow(void **arr, size_t *cap, size_t need, size_t elem)
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
	rc = rift__toml_grow((void **)&d->tables, &d->cap_tables,
			     d->n_tables + 1, sizeof(*d->tables));
	if (rc)
		return rc;
	d->arena_used += (size_t)(w - name);
	t = &d->tables[d->n_tables];
	t->name = name;
	t->line = start.line;
	t->col = start.col;
	p->table = (int)d->n_tables++;
	return rift__toml_end_of_line(p, "a table header");
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
	rc = rift__toml_value(p, &kv.val, false);
	if (rc)
		return rc;
	rc = rift__toml_grow((void **)&d->kvs, &d->cap_kvs, d->n_kvs + 1,
			     sizeof(*d->kvs));
	if (rc) {
		if (kv.val.type == RIFT_TOML_ARRAY)
			free((void *)kv.val.u.arr.items);
		return rc;
	}
	d->kvs[d->n_kvs++] = kv;
	snprintf(ctx, sizeof(ctx), "the value of '%s'", kv.key);
	return rift__toml_end_of_line(p, ctx);
}

size_t rift__toml_utf8_seq(const char *at, const char *stop)
{
	const unsigned char *s = (const unsigned char *)at;
	const unsigned char *end = (const unsigned char *)stop;
	unsigned c = *s, n, lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
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
		return 0;
	}
	if ((size_t)(end - s) < n || s[1] < lo || s[1] > hi)
		return 0;
	for (unsigned k = 2; k < n; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return n;
}

bool rift__toml_utf8_ok(const char *s)
{
	const char *end = s + strlen(s);
	size_t n;

	for (; s < end; s += n)
		if ((n = rift__toml_utf8_seq(s, end)) == 0)
			return false;
	return true;
}

/* Reject invalid UTF-8 (overlong forms, surrogates, > U+10FFFF) up front. */
static int check_utf8(struct parser *p)
{
	const char *s = p->s;
	unsigned line = 1, col = 1;

	while (s < p->end) {
		size_t n = rift__toml_utf8_seq(s, p->end);

		if (n == 0)
			return rift__toml_errf(p->err, p->errlen, p->doc->name,
					       line, col, "invalid UTF-8");
		if (*s == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
		s += n;
	}
	return 0;
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
			rc = rift__toml_end_of_line(p, "a comment");
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

	*why = n ? rift__toml_number(s, n, &v) : "empty";
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
	d = rift__toml_scan_digits(s, &i, n, 10);
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
	if (!rift__toml_accumulate(s, 0, i, 10, UINT64_MAX, &v)) {
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
	const char *end = s + strlen(s);
	size_t n = 0, seq;

#define PUT(c)                                                                \
	do {                                                                  \
		if (n + 1 < len)                                              \
			buf[n] = (c);                                         \
		n++;                                                          \
	} while (0)
	PUT('"');
	for (; s < end; s += seq) {
		unsigned char c = (unsigned char)*s;
		const char *esc = NULL;
		char hex[8];

		seq = rift__toml_utf8_seq(s, end);
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
			} else if (seq == 0) {
				/* TOML text is UTF-8: a stray byte cannot be
				 * written, its replacement character can. */
				esc = "\\uFFFD";
				seq = 1;
			}
		}
		if (esc)
			for (; *esc; esc++)
				PUT(*esc);
		else
			for (size_t k = 0; k < seq; k++)
				PUT(s[k]);
	}
	PUT('"');
#undef PUT
	if (len)
		buf[n < len ? n : len - 1] = '\0';
	return (int)n;
}
