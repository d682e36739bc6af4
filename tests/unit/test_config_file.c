/*
 * Config files: the TOML subset parser (every value kind, every error with
 * its line:column), the mapping onto rift_config (every key, unknown keys
 * with suggestions, ranges, types), environment overrides and their
 * precedence, and the dump with origins and its round trip.
 */
#include "internal.h"
#include "util/toml.h"
#include "../runner.h"

/* ---- helpers ---- */

static struct rift__toml_doc doc_ok(const char *text)
{
	struct rift__toml_doc d;
	char err[256] = "";

	if (rift__toml_parse(&d, "t.toml", text, strlen(text), err,
			     sizeof(err)) != 0)
		FAIL("rejected: %s\n---\n%s", err, text);
	return d;
}

static void doc_bad(const char *text, const char *expect)
{
	struct rift__toml_doc d;
	char err[256] = "";

	if (rift__toml_parse(&d, "t.toml", text, strlen(text), err,
			     sizeof(err)) == 0) {
		rift__toml_free(&d);
		FAIL("accepted, expected \"%s\"\n---\n%s", expect, text);
	}
	CHECK_STR(err, expect);
}

static const struct rift__toml_val *get(const struct rift__toml_doc *d,
					const char *table, const char *key)
{
	for (size_t i = 0; i < d->n_kvs; i++)
		if (!strcmp(d->kvs[i].table, table) &&
		    !strcmp(d->kvs[i].key, key))
			return &d->kvs[i].val;
	FAIL("no key %s in [%s]", key, table);
}

/* ---- the TOML subset ---- */

TEST(toml_reads_every_value_kind)
{
	struct rift__toml_doc d =
		doc_ok("\xef\xbb\xbf# a comment first\n"
		       "top = 1\n"
		       "\n"
		       "[a]   # section comment\n"
		       "s = \"q\\\" b\\\\ n\\n t\\t e\\u00e9 g\\U0001F600\" # "
		       "trailing\n"
		       "lit = 'C:\\no\\escapes \"here\"'\n"
		       "empty = \"\"\n"
		       "dec = +1_000\n"
		       "neg = -17\n"
		       "zero = 0\n"
		       "hex = 0xdead_BEEF\n"
		       "oct = 0o755\n"
		       "bin = 0b1010\n"
		       "max = 9223372036854775807\n"
		       "min = -9223372036854775808\n"
		       "f1 = 3.25\n"
		       "f2 = -2e3\n"
		       "f3 = 1_000.5E-1_0\n"
		       "pinf = +inf\n"
		       "nan = nan\n"
		       "yes = true\n"
		       "no = false\n"
		       "arr = [ 1, \"two\",   # a comment inside\n"
		       "\t'three', 0x4, ]\n"
		       "none = []\n"
		       "[ b . c-d ]\r\n"
		       "k_1 = 'v'\r\n"
		       "\t  \n");
	const struct rift__toml_val *v;

	CHECK_EQ(d.n_tables, 2);
	CHECK_STR(d.tables[0].name, "a");
	CHECK_EQ(d.tables[0].line, 4);
	CHECK_STR(d.tables[1].name, "b.c-d");
	CHECK_EQ(d.tables[1].line, 26);

	CHECK_STR(d.kvs[0].table, "");
	CHECK_EQ(d.kvs[0].table_idx, -1);
	CHECK_STR(d.kvs[0].key, "top");
	CHECK_EQ(d.kvs[0].val.u.i, 1);

	v = get(&d, "a", "s");
	CHECK_EQ(v->type, RIFT_TOML_STRING);
	CHECK_STR(v->u.s, "q\" b\\ n\n t\t e\xc3\xa9 g\xf0\x9f\x98\x80");
	CHECK_EQ(v->line, 5);
	CHECK_EQ(v->col, 5);
	CHECK_STR(get(&d, "a", "lit")->u.s, "C:\\no\\escapes \"here\"");
	CHECK_STR(get(&d, "a", "empty")->u.s, "");
	CHECK_EQ(get(&d, "a", "dec")->type, RIFT_TOML_INT);
	CHECK_EQ(get(&d, "a", "dec")->u.i, 1000);
	CHECK_EQ(get(&d, "a", "neg")->u.i, -17);
	CHECK_EQ(get(&d, "a", "zero")->u.i, 0);
	CHECK_EQ(get(&d, "a", "hex")->u.i, 0xdeadbeef);
	CHECK_EQ(get(&d, "a", "oct")->u.i, 0755);
	CHECK_EQ(get(&d, "a", "bin")->u.i, 10);
	CHECK(get(&d, "a", "max")->u.i == INT64_MAX);
	CHECK(get(&d, "a", "min")->u.i == INT64_MIN);
	CHECK_EQ(get(&d, "a", "f1")->type, RIFT_TOML_FLOAT);
	CHECK(get(&d, "a", "f1")->u.f == 3.25);
	CHECK(get(&d, "a", "f2")->u.f == -2000.0);
	CHECK(get(&d, "a", "f3")->u.f > 1.00049e-7 &&
	      get(&d, "a", "f3")->u.f < 1.00051e-7);
	CHECK(get(&d, "a", "pinf")->u.f > 1e308);
	CHECK(get(&d, "a", "nan")->u.f != get(&d, "a", "nan")->u.f);
	CHECK_EQ(get(&d, "a", "yes")->type, RIFT_TOML_BOOL);
	CHECK_EQ(get(&d, "a", "yes")->u.b, true);
	CHECK_EQ(get(&d, "a", "no")->u.b, false);

	v = get(&d, "a", "arr");
	CHECK_EQ(v->type, RIFT_TOML_ARRAY);
	CHECK_EQ(v->u.arr.n, 4);
	CHECK_EQ(v->u.arr.items[0].u.i, 1);
	CHECK_STR(v->u.arr.items[1].u.s, "two");
	CHECK_STR(v->u.arr.items[2].u.s, "three");
	CHECK_EQ(v->u.arr.items[2].line, 24);
	CHECK_EQ(v->u.arr.items[2].col, 2);
	CHECK_EQ(v->u.arr.items[3].u.i, 4);
	CHECK_EQ(get(&d, "a", "none")->u.arr.n, 0);

	CHECK_STR(get(&d, "b.c-d", "k_1")->u.s, "v");
	CHECK_EQ(d.kvs[d.n_kvs - 1].line, 27);
	CHECK_EQ(d.kvs[d.n_kvs - 1].table_idx, 1);
	rift__toml_free(&d);

	d = doc_ok(""); /* an empty file is a valid file */
	CHECK_EQ(d.n_kvs, 0);
	rift__toml_free(&d);
	d = doc_ok("x = 1"); /* no newline at the end */
	CHECK_EQ(d.n_kvs, 1);
	rift__toml_free(&d);
}

TEST(toml_errors_point_at_line_and_column)
{
	doc_bad("[rdma]\nsq_depth 512\n",
		"t.toml:2:9: expected '=' after key 'sq_depth'");
	doc_bad("[rdma]\n   sq_depth: 512\n",
		"t.toml:2:12: expected '=' after key 'sq_depth'");
	doc_bad("a =\n", "t.toml:1:4: missing value after 'a ='");
	doc_bad("a = # nothing\n", "t.toml:1:5: missing value after 'a ='");
	doc_bad("a = \"abc\n", "t.toml:1:5: unterminated string (missing "
			       "closing '\"')");
	doc_bad("a = 'abc", "t.toml:1:5: unterminated string (missing "
			    "closing \"'\")");
	doc_bad("a = \"x\\qy\"",
		"t.toml:1:7: invalid escape '\\q' in a string");
	doc_bad("a = \"\\u12\"", "t.toml:1:6: '\\u' needs 4 hex digits");
	doc_bad("a = \"\\uD800\"",
		"t.toml:1:6: '\\uD800' is not a Unicode scalar value");
	doc_bad("a = \"\\u0000\"",
		"t.toml:1:6: '\\u0000' (NUL) is not allowed in a string");
	doc_bad("a = \"tab\tok, bell\a not\"",
		"t.toml:1:18: control character U+0007 must be escaped in a "
		"string");
	doc_bad("a = 0123", "t.toml:1:5: invalid number '0123': leading zeros "
			    "are not allowed");
	doc_bad("a = 1__0", "t.toml:1:5: invalid number '1__0': '_' must be "
			    "between two digits");
	doc_bad("a = 1_", "t.toml:1:5: invalid number '1_': '_' must be "
			  "between two digits");
	doc_bad("a = 9223372036854775808",
		"t.toml:1:5: invalid number '9223372036854775808': out of the "
		"64-bit integer range");
	doc_bad("a = -0x10", "t.toml:1:5: invalid number '-0x10': a sign is "
			     "not allowed on hex, octal or binary integers");
	doc_bad("a = 0xg", "t.toml:1:5: invalid number '0xg': not a hex "
			   "integer");
	doc_bad("a = 1.", "t.toml:1:5: invalid number '1.': a '.' must be "
			  "followed by digits");
	doc_bad("a = 1e", "t.toml:1:5: invalid number '1e': an exponent "
			  "needs digits");
	doc_bad("a = 12abc", "t.toml:1:5: invalid number '12abc': not a "
			     "number");
	doc_bad("\n\npolling = busy\n",
		"t.toml:3:11: expected a value, found 'busy' (strings must be "
		"quoted)");
	doc_bad("a = True", "t.toml:1:5: expected a value, found 'True' "
			    "(strings must be quoted)");
	doc_bad("a = \"x\" y", "t.toml:1:9: unexpected 'y' after the value "
			       "of 'a'");
	doc_bad("a = 1 2", "t.toml:1:7: unexpected '2' after the value of 'a'");
	doc_bad("[t] x = 1", "t.toml:1:5: unexpected 'x' after a table header");
	doc_bad("[a\nx = 1", "t.toml:1:3: expected '.' or ']' in a table "
			     "header, found end of line");
	doc_bad("[]", "t.toml:1:2: expected a table name, found ']'");
	doc_bad("[a.]", "t.toml:1:4: expected a table name, found ']'");
	doc_bad("[[servers]]", "t.toml:1:1: arrays of tables ([[...]]) are "
			       "not supported");
	doc_bad("[\"quoted\"]", "t.toml:1:2: quoted keys are not supported; "
				"use a bare name (A-Z a-z 0-9 _ -)");
	doc_bad("\"k\" = 1", "t.toml:1:1: quoted keys are not supported; use "
			     "a bare key (A-Z a-z 0-9 _ -)");
	doc_bad("rdma.sq_depth = 1", "t.toml:1:5: dotted keys are not "
				     "supported; put 'rdma' under a [table] "
				     "header");
	doc_bad("a = \"\"\"x\"\"\"", "t.toml:1:5: multi-line strings are not "
				     "supported");
	doc_bad("a = {b = 1}", "t.toml:1:5: inline tables are not supported");
	doc_bad("a = 1979-05-27", "t.toml:1:5: dates and times are not "
				  "supported");
	doc_bad("a = 07:32:00", "t.toml:1:5: dates and times are not "
				"supported");
	doc_bad("a = [1, [2]]", "t.toml:1:9: nested arrays are not supported");
	doc_bad("a = [1 2]", "t.toml:1:8: expected ',' or ']' in an array, "
			     "found '2'");
	doc_bad("a = [1,\n2,\n", "t.toml:1:5: unterminated array (missing "
				 "']')");
	doc_bad("a = [,]", "t.toml:1:6: expected a value, found ','");
	doc_bad("= 1", "t.toml:1:1: expected a key or a [table] header, "
		       "found '='");
	doc_bad("a = 1\r", "t.toml:1:6: unexpected U+000D after the value of "
			   "'a'");
	doc_bad("# bell \a\n", "t.toml:1:8: control character U+0007 in a "
			       "comment");
	/* columns count characters, not bytes */
	doc_bad("a = \"\xc3\xa9\xc3\xa9\" x",
		"t.toml:1:10: unexpected 'x' after the value of 'a'");
	doc_bad("a = \"\xc3\xa9\xff\"", "t.toml:1:7: invalid UTF-8");
	doc_bad("a = '\xed\xa0\x80'", "t.toml:1:6: invalid UTF-8");
	doc_bad("a = '\xc0\xaf'", "t.toml:1:6: invalid UTF-8");
	doc_bad("x = 1\ny = \xe2\x82", "t.toml:2:5: invalid UTF-8");
}

TEST(toml_refuses_duplicates)
{
	doc_bad("[rdma]\nsq_depth = 1\n\nsq_depth = 2\n",
		"t.toml:4:1: duplicate key 'sq_depth' (first set at line 2)");
	doc_bad("[rdma]\nx = 1\n[pool]\n[rdma]\n",
		"t.toml:4:1: duplicate table [rdma] (first defined at line 1)");
	doc_bad("[a . b]\n[a.b]\n",
		"t.toml:2:1: duplicate table [a.b] (first defined at line 1)");
	doc_bad("[a]\nb = 1\n[a.b]\n",
		"t.toml:3:1: table [a.b] conflicts with key 'b' set at line 2");
	doc_bad("a = 1\n[a.x]\n",
		"t.toml:2:1: table [a.x] conflicts with key 'a' set at line 1");
	doc_bad("[a.b]\n[a]\nb = 1\n",
		"t.toml:3:1: key 'b' conflicts with table [a.b] at line 1");
	/* the same key in two tables, and a table inside another, are fine */
	struct rift__toml_doc d = doc_ok("[a]\nx = 1\n[b]\nx = 2\n[a.c]\n");

	CHECK_EQ(get(&d, "a", "x")->u.i, 1);
	CHECK_EQ(get(&d, "b", "x")->u.i, 2);
	rift__toml_free(&d);
}

TEST(toml_human_sizes_are_binary)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "0", 0 },
		{ "4096", 4096 },
		{ "1_000", 1000 },
		{ "8B", 8 },
		{ "512k", 512ull << 10 },
		{ "64KiB", 64ull << 10 },
		{ "64KB", 64ull << 10 },
		{ "64 kib", 64ull << 10 },
		{ "16M", 16ull << 20 },
		{ "2MiB", 2ull << 20 },
		{ "1GB", 1ull << 30 },
		{ "1gb", 1ull << 30 },
		{ "4GiB", 4ull << 30 },
		{ "1TB", 1ull << 40 },
		{ "16777215TiB", 16777215ull << 40 },
	};
	static const struct {
		const char *s, *why;
	} bad[] = {
		{ "", "empty" },
		{ "-1K", "a size cannot be negative" },
		{ "K", "a size starts with a number of bytes" },
		{ "1.5GB", "a size must be a whole number (write \"1536MiB\", "
			   "not \"1.5GiB\")" },
		{ "12XB", "unknown unit (use B, K/KB/KiB, M/MB/MiB, G/GB/GiB "
			  "or T/TB/TiB; all are powers of 1024)" },
		{ "1 ", "unknown unit (use B, K/KB/KiB, M/MB/MiB, G/GB/GiB or "
			"T/TB/TiB; all are powers of 1024)" },
		{ "16777216TiB", "too large" },
		{ "99999999999999999999", "too large" },
		{ "1__0", "'_' must be between two digits" },
	};
	const char *why;
	char buf[32];
	uint64_t v;

	for (size_t i = 0; i < RIFT_ARRAY_SIZE(ok); i++) {
		v = 7;
		if (rift__toml_size(ok[i].s, &v, &why) != 0)
			FAIL("'%s' rejected: %s", ok[i].s, why);
		if (v != ok[i].v)
			FAIL("'%s' = %llu, want %llu", ok[i].s,
			     (unsigned long long)v,
			     (unsigned long long)ok[i].v);
	}
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(bad); i++) {
		if (rift__toml_size(bad[i].s, &v, &why) == 0)
			FAIL("'%s' accepted as %llu", bad[i].s,
			     (unsigned long long)v);
		CHECK_STR(why, bad[i].why);
	}

	rift__toml_size_str(0, buf, sizeof(buf));
	CHECK_STR(buf, "0");
	rift__toml_size_str(4095, buf, sizeof(buf));
	CHECK_STR(buf, "4095");
	rift__toml_size_str(6144, buf, sizeof(buf));
	CHECK_STR(buf, "6KiB");
	rift__toml_size_str(1536ull << 20, buf, sizeof(buf));
	CHECK_STR(buf, "1536MiB");
	rift__toml_size_str(1ull << 40, buf, sizeof(buf));
	CHECK_STR(buf, "1TiB");
}

TEST(toml_int_and_quote_helpers)
{
	const char *why;
	int64_t v;
	char buf[64];

	CHECK_EQ(rift__toml_int("512", &v, &why), 0);
	CHECK_EQ(v, 512);
	CHECK_EQ(rift__toml_int("-1", &v, &why), 0);
	CHECK_EQ(v, -1);
	CHECK_EQ(rift__toml_int("0x1_0", &v, &why), 0);
	CHECK_EQ(v, 16);
	CHECK_EQ(rift__toml_int("1.5", &v, &why), -1);
	CHECK_STR(why, "not an integer");
	CHECK_EQ(rift__toml_int("abc", &v, &why), -1);
	CHECK_STR(why, "not a number");
	CHECK_EQ(rift__toml_int("", &v, &why), -1);
	CHECK_STR(why, "empty");

	CHECK_EQ(rift__toml_quote("a\"b\\c\n\x01", buf, sizeof(buf)), 17);
	CHECK_STR(buf, "\"a\\\"b\\\\c\\n\\u0001\"");
	CHECK_EQ(rift__toml_quote("abcdef", buf, 4), 8); /* cut like snprintf */
	CHECK_STR(buf, "\"ab");
}
