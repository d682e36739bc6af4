/*
 * toml_int.h - what the two files of the TOML parser share: the parser's
 * state and its cursor.  toml.c has the structure (headers, keys, the
 * document) and the overview, toml_lex.c the lexical pieces (comments,
 * ends of lines, numbers, strings, arrays, values); each function is
 * under the file that defines it.
 */
#ifndef RIFT_UTIL_TOML_INT_H
#define RIFT_UTIL_TOML_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* ---- cursor ---- */

static inline int peek(const struct parser *p)
{
	return p->s < p->end ? (unsigned char)*p->s : -1;
}

static inline int peek_at(const struct parser *p, size_t k)
{
	return (size_t)(p->end - p->s) > k ? (unsigned char)p->s[k] : -1;
}

static inline void adv(struct parser *p)
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

static inline struct pos here(const struct parser *p)
{
	struct pos at = { p->s, p->line, p->col };

	return at;
}

static inline bool at_newline(const struct parser *p)
{
	return peek(p) == '\n' || (peek(p) == '\r' && peek_at(p, 1) == '\n');
}

static inline void skip_ws(struct parser *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		adv(p);
}

static inline bool is_bare(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static inline bool is_control(int c)
{
	return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

/* What the cursor is on, for "found ..." in messages. */
static inline const char *found(const struct parser *p, char *buf, size_t len)
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

/* ---- toml.c: storage ---- */

int rift__toml_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* ---- toml_lex.c: lexical pieces ---- */

int rift__toml_end_of_line(struct parser *p, const char *after);
int rift__toml_scan_digits(const char *s, size_t *i, size_t n, int base);
bool rift__toml_accumulate(const char *s, size_t from, size_t to, int base,
			   uint64_t limit, uint64_t *out);
const char *rift__toml_number(const char *t, size_t n,
			      struct rift__toml_val *v);
int rift__toml_value(struct parser *p, struct rift__toml_val *v,
		     bool in_array);

#endif
