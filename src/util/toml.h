/*
 * toml.h - a strict parser for the subset of TOML that rift's config file
 * needs; not API.
 *
 * Accepted: [table] and [dotted.table] headers; key = value with bare keys;
 * basic strings "..." with the TOML escapes (\b \t \n \f \r \" \\ \uXXXX
 * \UXXXXXXXX); literal strings '...'; integers (decimal with _ between
 * digits and an optional sign, 0x hex, 0o octal, 0b binary); floats
 * (fraction and/or exponent, inf, nan); true/false; one-level arrays of
 * these (may span lines, may end with a comma); # comments; LF or CRLF.
 *
 * Everything else TOML has (quoted or dotted keys, inline tables, arrays of
 * tables, multi-line strings, dates) is refused with a message saying so,
 * never misread.  Duplicate keys and tables are errors.
 *
 * Errors read "name:line:column: message"; lines and columns count from 1,
 * columns in characters (a tab is one column).
 */
#ifndef RIFT_UTIL_TOML_H
#define RIFT_UTIL_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rift__toml_type {
	RIFT_TOML_STRING = 1,
	RIFT_TOML_INT,
	RIFT_TOML_FLOAT,
	RIFT_TOML_BOOL,
	RIFT_TOML_ARRAY,
};

struct rift__toml_val {
	enum rift__toml_type type;
	unsigned line, col; /* where the value starts */
	union {
		const char *s; /* UTF-8, NUL-terminated, no NUL inside */
		int64_t i;
		double f;
		bool b;
		struct {
			const struct rift__toml_val *items; /* scalars only */
			size_t n;
		} arr;
	} u;
};

struct rift__toml_kv {
	const char *table;  /* "" before any header, "rdma", "a.b" */
	int table_idx;      /* index in doc->tables, -1 before any header */
	const char *key;
	unsigned line, col; /* where the key starts */
	struct rift__toml_val val;
};

struct rift__toml_table {
	const char *name;   /* normalised: "a.b" for [ a . b ] */
	unsigned line, col; /* of the '[' */
};

/* A parsed document.  Everything points into memory owned by the doc. */
struct rift__toml_doc {
	const char *name;   /* as given to rift__toml_parse, not copied */
	struct rift__toml_kv *kvs; /* in document order */
	size_t n_kvs, cap_kvs;
	struct rift__toml_table *tables; /* headers, in document order */
	size_t n_tables, cap_tables;
	char *arena;        /* decoded strings, keys and table names */
	size_t arena_used, arena_cap;
};

/*
 * Parse len bytes of text.  name is used in messages and must outlive the
 * doc.  Returns 0 with *doc filled (free it with rift__toml_free), or
 * RIFT_EINVAL with "name:line:col: message" in err, or RIFT_ENOMEM; on
 * error *doc holds nothing to free.  err (errlen bytes) is always
 * NUL-terminated when errlen > 0.
 */
int rift__toml_parse(struct rift__toml_doc *doc, const char *name,
		     const char *text, size_t len, char *err, size_t errlen);
void rift__toml_free(struct rift__toml_doc *doc);

/* "a string", "an integer", ... for messages. */
const char *rift__toml_type_name(enum rift__toml_type t);

/* Write "name:line:col: " + the formatted message into err.  Returns
 * RIFT_EINVAL. */
int rift__toml_errf(char *err, size_t errlen, const char *name, unsigned line,
		    unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/*
 * A whole string as a TOML integer (same grammar as in a file: "512",
 * "-1", "1_000", "0x1f").  Returns 0, or -1 with a reason in *why (static
 * storage).
 */
int rift__toml_int(const char *s, int64_t *out, const char **why);

/*
 * Human sizes.  A number of bytes with an optional unit, case-insensitive,
 * optionally separated by blanks: B; K, KB, KiB; M, MB, MiB; G, GB, GiB;
 * T, TB, TiB.  Every unit is binary (K = KB = KiB = 1024), as in the
 * kernel's memparse, systemd's memory settings and the RDMA stacks; note
 * that Redis reads "1k" as 1000.  Returns 0, or -1 with a reason in *why.
 */
int rift__toml_size(const char *s, uint64_t *out, const char **why);
/* "64KiB" when v is an exact multiple of a unit, else "65537"; returns
 * what snprintf returns. */
int rift__toml_size_str(uint64_t v, char *buf, size_t len);
/*
 * s as a TOML basic string with its quotes, which rift__toml_parse reads
 * back as s: control characters escaped, UTF-8 kept.  A byte that is not
 * part of valid UTF-8 cannot be written in TOML: it becomes \uFFFD (so a
 * caller that needs the round trip refuses such text first, with
 * rift__toml_utf8_ok).  Returns what snprintf returns.
 */
int rift__toml_quote(const char *s, char *buf, size_t len);
/* Bytes of the valid UTF-8 sequence that starts at s (stop: one past the
 * text), or 0: a stray byte, an overlong form, a surrogate, a code point
 * above U+10FFFF, or a sequence cut short. */
size_t rift__toml_utf8_seq(const char *s, const char *stop);
/* Whether the NUL-terminated s is valid UTF-8. */
bool rift__toml_utf8_ok(const char *s);

#endif
