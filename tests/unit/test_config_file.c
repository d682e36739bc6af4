/*
 * Config files: the TOML subset parser (every value kind, every error with
 * its line:column), the mapping onto rift_config (every key, unknown keys
 * with suggestions, ranges, types), environment overrides and their
 * precedence, and the dump with origins and its round trip.
 */
#include <stdlib.h>
#include <unistd.h>

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

/*
 * Files are written under mkstemp names and removed as soon as they are
 * loaded; messages and dumps show them under the name the test chose.
 */
static struct {
	char path[32];
	char name[32];
} files[4];

static void tidy(char *s)
{
	if (!s)
		return;
	for (size_t f = 0; f < RIFT_ARRAY_SIZE(files); f++) {
		size_t pl = strlen(files[f].path), nl = strlen(files[f].name);
		char *at;

		while (pl && (at = strstr(s, files[f].path))) {
			memcpy(at, files[f].name, nl);
			memmove(at + nl, at + pl, strlen(at + pl) + 1);
		}
	}
}

static int load_as(rift_config *cfg, const char *name, const char *text,
		   char *err, size_t errlen)
{
	static unsigned next;
	char *path = files[next % RIFT_ARRAY_SIZE(files)].path;
	int fd, rc;

	snprintf(path, sizeof(files[0].path), "/tmp/rift-cfg-XXXXXX");
	snprintf(files[next++ % RIFT_ARRAY_SIZE(files)].name,
		 sizeof(files[0].name), "%s", name);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
	close(fd);
	rc = rift_config_load(cfg, path, err, errlen);
	unlink(path);
	tidy(err);
	return rc;
}

static int load(rift_config *cfg, const char *text, char *err, size_t errlen)
{
	return load_as(cfg, "rift.toml", text, err, errlen);
}

static void load_ok(rift_config *cfg, const char *text)
{
	char err[RIFT_CONFIG_ERRLEN] = "";

	if (load(cfg, text, err, sizeof(err)) != 0)
		FAIL("rejected: %s\n---\n%s", err, text);
	CHECK_STR(err, "");
}

/* Every member a key sets, up to the last one, without padding. */
static bool same_cfg(const rift_config *a, const rift_config *b)
{
	/* every member up to log_level at once (no padding there), then
	 * the appended ones by name (padding before the pointers) */
	return !memcmp(a, b, offsetof(rift_config, log_level) +
				     sizeof(rift_log_level)) &&
	       a->log_cb == b->log_cb && a->log_user == b->log_user &&
	       a->linger_ms == b->linger_ms &&
	       a->group_max_paths == b->group_max_paths &&
	       a->group_failback_delay_ms == b->group_failback_delay_ms &&
	       !strcmp(a->group_local, b->group_local) &&
	       a->fallback_return_ms == b->fallback_return_ms &&
	       a->group_policy == b->group_policy;
}

/* The file must be refused with exactly this message, cfg untouched. */
static void load_bad(const char *text, const char *expect)
{
	char err[RIFT_CONFIG_ERRLEN] = "";
	rift_config cfg, orig;

	rift_config_init(&cfg);
	cfg.sq_depth = 999; /* something not default, to see it survive */
	orig = cfg;
	if (load(&cfg, text, err, sizeof(err)) == 0)
		FAIL("accepted, expected \"%s\"\n---\n%s", expect, text);
	CHECK_STR(err, expect);
	CHECK(same_cfg(&cfg, &orig));
}

static void env_bad(const char *var, const char *value, const char *expect)
{
	char err[RIFT_CONFIG_ERRLEN] = "";
	rift_config cfg, orig;

	rift_config_init(&cfg);
	orig = cfg;
	setenv(var, value, 1);
	CHECK_EQ(rift_config_env(&cfg, err, sizeof(err)), RIFT_EINVAL);
	unsetenv(var);
	CHECK_STR(err, expect);
	CHECK(same_cfg(&cfg, &orig));
}

static char dump_buf[8192];

static const char *dump(const rift_config *cfg)
{
	int n = rift_config_dump(cfg, dump_buf, sizeof(dump_buf));

	CHECK(n > 0 && (size_t)n < sizeof(dump_buf));
	CHECK_EQ(strlen(dump_buf), n);
	tidy(dump_buf);
	return dump_buf;
}

/* Value and origin of key in a dump: "key = VALUE   # ORIGIN". */
static void dumped(const char *d, const char *key, char *value, char *origin)
{
	char pat[64];
	const char *l, *hash, *eol;

	snprintf(pat, sizeof(pat), "\n%s = ", key);
	l = strstr(d, pat);
	if (!l)
		FAIL("no line for %s in\n%s", key, d);
	l += strlen(pat);
	eol = strchr(l, '\n');
	hash = strstr(l, " # ");
	CHECK(eol && hash && hash < eol);
	memcpy(value, l, (size_t)(hash - l));
	value[hash - l] = '\0';
	for (char *e = value + strlen(value); e > value && e[-1] == ' ';)
		*--e = '\0';
	memcpy(origin, hash + 3, (size_t)(eol - hash - 3));
	origin[eol - hash - 3] = '\0';
}

static void check_origin(const char *d, const char *key, const char *value,
			 const char *origin)
{
	char v[128], o[128];

	dumped(d, key, v, o);
	CHECK_STR(v, value);
	CHECK_STR(o, origin);
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

/* ---- the config file ---- */

/* Every key, each set to something other than its default. */
static const char every_key[] =
	"# every key of rift_config\n"
	"[progress]\n"
	"polling = \"busy\"\n"
	"busy_poll_us = 7\n"
	"\n"
	"[connect]\n"
	"connect_timeout_ms = 1500\n"
	"retries = 5\n"
	"retry_delay_ms = 250\n"
	"fallback = false\n"
	"\n"
	"[session]\n"
	"keepalive_interval_ms = 200\n"
	"keepalive_timeout_ms = 900\n"
	"grace_ms = 30_000\n"
	"ack_delay_ms = 0\n"
	"send_window = \"64MiB\"\n"
	"max_msg_size = \"1GB\"\n"
	"linger_ms = 2_500\n"
	"\n"
	"[tcp]\n"
	"read_buffer = \"1M\"\n"
	"listen_backlog = 128\n"
	"\n"
	"[rdma]\n"
	"device = \"mlx5_1\"\n"
	"port = 2\n"
	"gid_index = 3\n"
	"cm = \"tcp\"\n"
	"retry_count = 6\n"
	"ack_timeout = 18\n"
	"sq_depth = 0x400\n"
	"rq_depth = 2048\n"
	"max_send_sge = 4\n"
	"inline_threshold = 256\n"
	"cq_size = 8192\n"
	"poll_batch = 32\n"
	"qp_pool_count = 8\n"
	"zero_copy_threshold = \"64k\"\n"
	"\n"
	"[pool]\n"
	"block_sizes = [\"4KiB\", 16384, 131072, \"1MiB\",\n"
	"               \"4 MiB\"]\n"
	"initial = \"32MiB\"\n"
	"increment = '8MiB'\n"
	"max = \"2GiB\"\n"
	"buckets = 8\n"
	"thread_cache = 64\n"
	"recv_reserve_pct = 25\n"
	"huge_pages = true\n"
	"\n"
	"[metrics]\n"
	"enabled = false\n"
	"\n"
	"[log]\n"
	"level = \"debug\"\n";

TEST(config_file_sets_every_key)
{
	rift_config c;

	rift_config_init(&c);
	load_ok(&c, every_key);
	CHECK_EQ(c.size, sizeof(c));
	CHECK_EQ(c.polling, RIFT_POLL_BUSY);
	CHECK_EQ(c.busy_poll_us, 7);
	CHECK_EQ(c.connect_timeout_ms, 1500);
	CHECK_EQ(c.retries, 5);
	CHECK_EQ(c.retry_delay_ms, 250);
	CHECK_EQ(c.fallback, 0);
	CHECK_EQ(c.keepalive_interval_ms, 200);
	CHECK_EQ(c.keepalive_timeout_ms, 900);
	CHECK_EQ(c.session_grace_ms, 30000);
	CHECK_EQ(c.ack_delay_ms, 0);
	CHECK_EQ(c.send_window, 64ull << 20);
	CHECK_EQ(c.max_msg_size, 1ull << 30);
	CHECK_EQ(c.linger_ms, 2500);
	CHECK_EQ(c.tcp_read_buffer, 1u << 20);
	CHECK_EQ(c.listen_backlog, 128);
	CHECK_STR(c.device, "mlx5_1");
	CHECK_EQ(c.port, 2);
	CHECK_EQ(c.gid_index, 3);
	CHECK_EQ(c.cm, RIFT_CM_TCP);
	CHECK_EQ(c.rdma_retry_count, 6);
	CHECK_EQ(c.rdma_ack_timeout, 18);
	CHECK_EQ(c.sq_depth, 1024);
	CHECK_EQ(c.rq_depth, 2048);
	CHECK_EQ(c.max_send_sge, 4);
	CHECK_EQ(c.inline_threshold, 256);
	CHECK_EQ(c.cq_size, 8192);
	CHECK_EQ(c.poll_batch, 32);
	CHECK_EQ(c.qp_pool_count, 8);
	CHECK_EQ(c.zero_copy_threshold, 64u << 10);
	CHECK_EQ(c.block_size[0], 4096);
	CHECK_EQ(c.block_size[1], 16u << 10);
	CHECK_EQ(c.block_size[2], 128u << 10);
	CHECK_EQ(c.block_size[3], 1u << 20);
	CHECK_EQ(c.block_size[4], 4u << 20);
	CHECK_EQ(c.pool_initial, 32ull << 20);
	CHECK_EQ(c.pool_increment, 8ull << 20);
	CHECK_EQ(c.pool_max, 2ull << 30);
	CHECK_EQ(c.pool_buckets, 8);
	CHECK_EQ(c.pool_thread_cache, 64);
	CHECK_EQ(c.recv_reserve_pct, 25);
	CHECK_EQ(c.huge_pages, 1);
	CHECK_EQ(c.metrics, 0);
	CHECK_EQ(c.log_level, RIFT_LOG_DEBUG);
	CHECK_EQ(rift_config_check(&c), 0);
}

TEST(config_file_keeps_what_it_does_not_name)
{
	rift_config c, want;

	rift_config_init(&c);
	c.cq_size = 4096; /* set in code before the file */
	want = c;
	want.sq_depth = 512;
	want.pool_max = 4ull << 30;
	load_ok(&c, "[rdma]\nsq_depth = 512\n[pool]\nmax = \"4GB\"\n");
	CHECK(same_cfg(&c, &want));
	/* an empty file, or one of comments, changes nothing */
	load_ok(&c, "");
	load_ok(&c, "# nothing\n\n[rdma] # but a header\n");
	CHECK(same_cfg(&c, &want));
}

TEST(config_file_accepts_the_issue_names)
{
	rift_config c;
	char err[RIFT_CONFIG_ERRLEN];

	rift_config_init(&c);
	load_ok(&c, "[connect]\nconnection_timeout_ms = 777\n"
		    "[session]\nsession_grace_ms = 1234\n");
	CHECK_EQ(c.connect_timeout_ms, 777);
	CHECK_EQ(c.session_grace_ms, 1234);
	CHECK_EQ(load(&c,
		      "[connect]\nconnect_timeout_ms = 1\n"
		      "connection_timeout_ms = 2\n",
		      err, sizeof(err)),
		 RIFT_EINVAL);
	CHECK_STR(err, "rift.toml:3:1: 'connection_timeout_ms' sets the same "
		       "value as 'connect_timeout_ms' at line 2");
}

TEST(config_file_errors_name_key_and_place)
{
	/* unknown names, with a suggestion where one is close */
	load_bad("[rdma]\nsq_dept = 512\n",
		 "rift.toml:2:1: unknown key 'sq_dept' in [rdma]; did you "
		 "mean 'sq_depth'?");
	load_bad("[rdma]\nSQ_DEPTH = 512\n",
		 "rift.toml:2:1: unknown key 'SQ_DEPTH' in [rdma]; did you "
		 "mean 'sq_depth'?");
	load_bad("[rdma]\nqp_pool_cuont = 4\n",
		 "rift.toml:2:1: unknown key 'qp_pool_cuont' in [rdma]; did "
		 "you mean 'qp_pool_count'?");
	load_bad("[pool]\nsq_depth = 512\n",
		 "rift.toml:2:1: unknown key 'sq_depth' in [pool]; it belongs "
		 "in [rdma]");
	load_bad("[rdma]\nwhatever = 1\n",
		 "rift.toml:2:1: unknown key 'whatever' in [rdma]");
	load_bad("sq_depth = 512\n",
		 "rift.toml:1:1: key 'sq_depth' is outside any section; it "
		 "belongs in [rdma]");
	load_bad("x = 1\n", "rift.toml:1:1: key 'x' is outside any section; "
			    "keys go under a [section] header");
	load_bad("[rdma]\nsq_depth = 512\n\n[rmda]\n",
		 "rift.toml:4:1: unknown section [rmda]; did you mean [rdma]?");
	load_bad("[rdma.extra]\nx = 1\n",
		 "rift.toml:1:1: unknown section [rdma.extra] (sections: "
		 "progress, connect, session, tcp, rdma, pool, metrics, log, "
		 "group)");
	/* out of range, with the allowed range */
	load_bad("[rdma]\nsq_depth = 8\n",
		 "rift.toml:2:12: sq_depth = 8 is out of range 16..32768 "
		 "(send queue entries)");
	load_bad("[rdma]\nretry_count = 7\n",
		 "rift.toml:2:15: retry_count = 7 is out of range 0..6 (QP "
		 "retry_cnt; 7 (retry forever) is refused)");
	load_bad("[rdma]\ngid_index = -2\n",
		 "rift.toml:2:13: gid_index = -2 is out of range -1..4095 "
		 "(GID table index, -1 = the GID matching the address)");
	load_bad("[rdma]\nport = 4294967297\n",
		 "rift.toml:2:8: port = 4294967297 is out of range 0..255 "
		 "(device port number, 0 = first active port)");
	load_bad("[session]\nsend_window = \"1KiB\"\n",
		 "rift.toml:2:15: send_window = 1KiB is out of range "
		 "4KiB..1TiB (unacknowledged bytes per connection)");
	load_bad("[session]\nsend_window = 100\n",
		 "rift.toml:2:15: send_window = 100 is out of range 4KiB..1TiB "
		 "(unacknowledged bytes per connection)");
	load_bad("[tcp]\nread_buffer = \"2TB\"\n",
		 "rift.toml:2:15: read_buffer = 2TiB is out of range "
		 "4KiB..64MiB (receive buffer per TCP path, bytes)");
	load_bad("[tcp]\nread_buffer = \"9999999TiB\"\n",
		 "rift.toml:2:15: read_buffer = \"9999999TiB\" is out of range "
		 "4KiB..64MiB (receive buffer per TCP path, bytes)");
	load_bad("[pool]\nblock_sizes = [\"8KiB\",\n  \"1KiB\", \"64KiB\", \"512KiB\", "
		 "\"2MiB\"]\n",
		 "rift.toml:3:3: block_sizes[1] = 1KiB is out of range "
		 "4KiB..1GiB (the 5 block classes, increasing, bytes)");
	/* wrong types */
	load_bad("[rdma]\nsq_depth = \"512\"\n",
		 "rift.toml:2:12: sq_depth must be an integer, not a string");
	load_bad("[rdma]\nsq_depth = 512.0\n",
		 "rift.toml:2:12: sq_depth must be an integer, not a float");
	load_bad("[rdma]\ndevice = 0\n",
		 "rift.toml:2:10: device must be a string, not an integer");
	load_bad("[metrics]\nenabled = 1\n",
		 "rift.toml:2:11: enabled must be true or false, not an "
		 "integer");
	load_bad("[progress]\npolling = 1\n",
		 "rift.toml:2:11: polling must be one of \"event\", "
		 "\"busy\" or \"adaptive\", not an integer");
	load_bad("[progress]\npolling = \"spin\"\n",
		 "rift.toml:2:11: polling = \"spin\" is not one of \"event\", "
		 "\"busy\" or \"adaptive\"");
	load_bad("[rdma]\ncm = \"RDMACM\"\n",
		 "rift.toml:2:6: cm = \"RDMACM\" is not one of \"rdmacm\" or "
		 "\"tcp\"");
	load_bad("[session]\nsend_window = true\n",
		 "rift.toml:2:15: send_window must be a size (an integer or a "
		 "string like \"64KiB\"), not a boolean");
	load_bad("[session]\nsend_window = \"1.5GB\"\n",
		 "rift.toml:2:15: send_window = \"1.5GB\" is not a size: a "
		 "size must be a whole number (write \"1536MiB\", not "
		 "\"1.5GiB\")");
	load_bad("[pool]\nblock_sizes = \"8KiB\"\n",
		 "rift.toml:2:15: block_sizes must be an array of 5 sizes, not "
		 "a string");
	load_bad("[pool]\nblock_sizes = [8192, 65536, 2097152]\n",
		 "rift.toml:2:15: block_sizes needs exactly 5 sizes, got 3");
	load_bad("[pool]\nblock_sizes = [8192, true, 3, 4, 5]\n",
		 "rift.toml:2:22: block_sizes[1] must be a size (an integer or "
		 "a string like \"64KiB\"), not a boolean");
	load_bad("[rdma]\ndevice = \"0123456789012345678901234567890123456789"
		 "012345678901234567890123\"\n",
		 "rift.toml:2:10: device = \"01234567890123456789012345678901"
		 "23456789012345678901234567890123\" is too long (at most 63 "
		 "bytes)");
	/* syntax errors and duplicates come from the parser, same format */
	load_bad("[rdma]\nsq_depth 512\n",
		 "rift.toml:2:9: expected '=' after key 'sq_depth'");
	load_bad("[rdma]\nsq_depth = 256\ncq_size = 512\nsq_depth = 512\n",
		 "rift.toml:4:1: duplicate key 'sq_depth' (first set at line "
		 "2)");
	load_bad("[rdma]\n[pool]\n[rdma]\n",
		 "rift.toml:3:1: duplicate table [rdma] (first defined at line "
		 "1)");
	/* the first error in the file is the one reported */
	load_bad("[rdma]\nsq_depth = 1\n[nope]\n",
		 "rift.toml:2:12: sq_depth = 1 is out of range 16..32768 (send "
		 "queue entries)");
}

TEST(config_file_checks_cross_field_rules)
{
	/* rift_config_check's rules, in the file's names, at the key */
	load_bad("[session]\n\nkeepalive_interval_ms = 6000\n",
		 "rift.toml:3:1: session.keepalive_timeout_ms (5000) must be "
		 "greater than session.keepalive_interval_ms (6000)");
	load_bad("[pool]\nblock_sizes = [\"64KiB\", \"8KiB\", \"128KiB\", "
		 "\"512KiB\", \"2MiB\"]\n",
		 "rift.toml:2:1: pool.block_sizes[1] (8192) must be larger "
		 "than pool.block_sizes[0] (65536)");
	load_bad("[pool]\nmax = \"8MiB\"\n",
		 "rift.toml:2:1: pool.initial (16777216) exceeds pool.max "
		 "(8388608)");

	/* a rule broken before the file, by code, has no line to point at */
	rift_config c;
	char err[RIFT_CONFIG_ERRLEN];

	rift_config_init(&c);
	c.keepalive_interval_ms = 9000;
	CHECK_EQ(load(&c, "[rdma]\nsq_depth = 512\n", err, sizeof(err)),
		 RIFT_EINVAL);
	CHECK_STR(err, "rift.toml: session.keepalive_timeout_ms (5000) must "
		       "be greater than session.keepalive_interval_ms (9000)");
	CHECK_EQ(c.sq_depth, 256);
}

TEST(config_file_that_cannot_be_read)
{
	rift_config c, orig;
	char err[RIFT_CONFIG_ERRLEN];

	rift_config_init(&c);
	orig = c;
	CHECK_EQ(rift_config_load(&c, "/nonexistent/rift.toml", err,
				  sizeof(err)),
		 RIFT_ENOENT);
	CHECK_STR(err, "/nonexistent/rift.toml: cannot open: No such file or "
		       "directory");
	CHECK_EQ(rift_config_load(&c, "/", err, sizeof(err)), RIFT_EINVAL);
	CHECK_STR(err, "/: is a directory, not a config file");
	CHECK_EQ(rift_config_load(&c, NULL, err, sizeof(err)), RIFT_EINVAL);
	CHECK_EQ(rift_config_load(NULL, "x", err, sizeof(err)), RIFT_EINVAL);
	CHECK(same_cfg(&c, &orig));
	/* err may be NULL */
	CHECK_EQ(rift_config_load(&c, "/nonexistent", NULL, 0), RIFT_ENOENT);
	/* a short err is cut, never overrun */
	char small[12];

	CHECK_EQ(rift_config_load(&c, "/nonexistent", small, sizeof(small)),
		 RIFT_ENOENT);
	CHECK_STR(small, "/nonexisten");
}

/*
 * The key table keeps its own ranges (for messages and for the docs);
 * they must be the ones rift_config_check enforces.  For every integer
 * key the dump lists: its range from the error for a hopeless value, then
 * both ends load, and one past each end is refused; and, set straight into
 * the member (so the table's own check is bypassed), rift_config_check
 * accepts both ends and refuses one past each.
 */
#define FIELD(key, member)                                                   \
	{ key, offsetof(rift_config, member),                                 \
	  sizeof(((rift_config *)0)->member) }
static const struct {
	const char *key;
	size_t off, width;
} members[] = {
	FIELD("busy_poll_us", busy_poll_us),
	FIELD("connect_timeout_ms", connect_timeout_ms),
	FIELD("retries", retries),
	FIELD("retry_delay_ms", retry_delay_ms),
	FIELD("keepalive_interval_ms", keepalive_interval_ms),
	FIELD("keepalive_timeout_ms", keepalive_timeout_ms),
	FIELD("grace_ms", session_grace_ms),
	FIELD("ack_delay_ms", ack_delay_ms),
	FIELD("send_window", send_window),
	FIELD("max_msg_size", max_msg_size),
	FIELD("linger_ms", linger_ms),
	FIELD("max_paths", group_max_paths),
	FIELD("failback_delay_ms", group_failback_delay_ms),
	FIELD("fallback_return_ms", fallback_return_ms),
	FIELD("read_buffer", tcp_read_buffer),
	FIELD("listen_backlog", listen_backlog),
	FIELD("port", port),
	FIELD("gid_index", gid_index),
	FIELD("retry_count", rdma_retry_count),
	FIELD("ack_timeout", rdma_ack_timeout),
	FIELD("sq_depth", sq_depth),
	FIELD("rq_depth", rq_depth),
	FIELD("max_send_sge", max_send_sge),
	FIELD("inline_threshold", inline_threshold),
	FIELD("cq_size", cq_size),
	FIELD("poll_batch", poll_batch),
	FIELD("qp_pool_count", qp_pool_count),
	FIELD("zero_copy_threshold", zero_copy_threshold),
	FIELD("rndv_threshold", rndv_threshold),
	FIELD("initial", pool_initial),
	FIELD("increment", pool_increment),
	FIELD("max", pool_max),
	FIELD("buckets", pool_buckets),
	FIELD("thread_cache", pool_thread_cache),
	FIELD("recv_reserve_pct", recv_reserve_pct),
};

/* Set a member to v; false if v does not fit its type. */
static bool poke(rift_config *c, const char *key, int64_t v)
{
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(members); i++) {
		char *p = (char *)c + members[i].off;

		if (strcmp(members[i].key, key) != 0)
			continue;
		if (members[i].width == 8) {
			uint64_t u = (uint64_t)v;

			if (v < 0)
				return false;
			memcpy(p, &u, 8);
		} else if (!strcmp(key, "gid_index")) {
			int32_t x = (int32_t)v;

			memcpy(p, &x, 4);
		} else {
			uint32_t u = (uint32_t)v;

			if (v < 0 || v > UINT32_MAX)
				return false;
			memcpy(p, &u, 4);
		}
		return true;
	}
	FAIL("no member for key %s: add it to members[]", key);
}

TEST(config_ranges_agree_with_rift_config_check)
{
	rift_config c;
	const char *d, *l;
	char section[32] = "", err[RIFT_CONFIG_ERRLEN], text[256];
	int checked = 0;

	rift_config_init(&c);
	d = dump(&c);
	for (l = d; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		char key[64], value[64], origin[64];
		const char *r, *why;
		int64_t lo, hi, ends[4];
		uint64_t u;

		if (sscanf(l, "[%31[^]]]", section) == 1 || *l == '#' ||
		    *l == '\n')
			continue;
		CHECK(sscanf(l, "%63s =", key) == 1);
		dumped(d, key, value, origin);
		if (value[0] == '[' || !strcmp(value, "true") ||
		    !strcmp(value, "false") ||
		    (value[0] == '"' && !(value[1] >= '0' && value[1] <= '9')))
			continue; /* not an integer or a size */
		snprintf(text, sizeof(text), "[%s]\n%s = -99999999999\n",
			 section, key);
		CHECK_EQ(load(&c, text, err, sizeof(err)), RIFT_EINVAL);
		r = strstr(err, " is out of range ");
		if (!r)
			FAIL("%s: %s", key, err);
		r += strlen(" is out of range ");
		CHECK(sscanf(r, "%63[^.]..%63[^ ]", value, origin) == 2);
		if (rift__toml_int(value, &lo, &why) != 0) {
			CHECK_EQ(rift__toml_size(value, &u, &why), 0);
			lo = (int64_t)u;
		}
		if (rift__toml_int(origin, &hi, &why) != 0) {
			CHECK_EQ(rift__toml_size(origin, &u, &why), 0);
			hi = (int64_t)u;
		}
		ends[0] = lo;
		ends[1] = hi;
		ends[2] = lo - 1;
		ends[3] = hi + 1;
		for (int e = 0; e < 4; e++) {
			rift_config t;
			const char *m;
			int rc;

			rift_config_init(&t);
			if (poke(&t, key, ends[e])) {
				rc = rift_config_check(&t);
				m = rift_ctx_last_error(NULL);
				if (e < 2 && rc != 0 &&
				    strstr(m, "out of range"))
					FAIL("table allows %s = %lld, "
					     "rift_config_check does not: %s",
					     key, (long long)ends[e], m);
				if (e >= 2 && (rc == 0 || !strstr(m, "out of "
								     "range")))
					FAIL("table refuses %s = %lld, "
					     "rift_config_check does not (%s)",
					     key, (long long)ends[e], m);
			}

			rift_config_init(&t);
			snprintf(text, sizeof(text), "[%s]\n%s = %lld\n",
				 section, key, (long long)ends[e]);
			rc = load(&t, text, err, sizeof(err));
			/* at the ends, only a cross-field rule may object */
			if (e < 2 && rc != 0 && strstr(err, "out of range"))
				FAIL("%s = %lld: %s", key, (long long)ends[e],
				     err);
			if (e >= 2 && (rc == 0 || !strstr(err, "out of range")))
				FAIL("%s = %lld accepted (%s)", key,
				     (long long)ends[e], err);
		}
		checked++;
	}
	CHECK_EQ(checked, 35);
}

/* ---- the environment ---- */

TEST(config_env_overrides)
{
	char err[RIFT_CONFIG_ERRLEN] = "x";
	rift_config c, orig;

	rift_config_init(&c);
	orig = c;
	CHECK_EQ(rift_config_env(&c, err, sizeof(err)), 0); /* none set */
	CHECK_STR(err, "");
	CHECK(same_cfg(&c, &orig));

	setenv("RIFT_RDMA_SQ_DEPTH", "512", 1);
	setenv("RIFT_PROGRESS_POLLING", "busy", 1);
	setenv("RIFT_RDMA_DEVICE", "rxe0", 1);
	setenv("RIFT_RDMA_GID_INDEX", "-1", 1);
	setenv("RIFT_SESSION_SEND_WINDOW", "32MiB", 1);
	setenv("RIFT_SESSION_MAX_MSG_SIZE", "0x1000", 1);
	setenv("RIFT_POOL_BLOCK_SIZES", "16KiB, 128k,512k, 1MiB,4MB", 1);
	setenv("RIFT_METRICS_ENABLED", "off", 1);
	setenv("RIFT_POOL_HUGE_PAGES", "YES", 1);
	setenv("RIFT_CONNECT_CONNECTION_TIMEOUT_MS", "4000", 1);
	setenv("RIFT_SESSION_LINGER_MS", "0", 1);
	CHECK_EQ(rift_config_env(&c, err, sizeof(err)), 0);
	CHECK_EQ(c.linger_ms, 0);
	CHECK_EQ(c.sq_depth, 512);
	CHECK_EQ(c.polling, RIFT_POLL_BUSY);
	CHECK_STR(c.device, "rxe0");
	CHECK_EQ(c.gid_index, -1);
	CHECK_EQ(c.send_window, 32ull << 20);
	CHECK_EQ(c.max_msg_size, 4096);
	CHECK_EQ(c.block_size[0], 16u << 10);
	CHECK_EQ(c.block_size[1], 128u << 10);
	CHECK_EQ(c.block_size[2], 512u << 10);
	CHECK_EQ(c.block_size[3], 1u << 20);
	CHECK_EQ(c.block_size[4], 4u << 20);
	CHECK_EQ(c.metrics, 0);
	CHECK_EQ(c.huge_pages, 1);
	CHECK_EQ(c.connect_timeout_ms, 4000);
	CHECK_EQ(c.rq_depth, 256); /* not named: untouched */
}

TEST(config_env_errors_name_the_variable)
{
	env_bad("RIFT_RDMA_SQ_DEPTH", "5",
		"env RIFT_RDMA_SQ_DEPTH: sq_depth = 5 is out of range "
		"16..32768 (send queue entries)");
	env_bad("RIFT_RDMA_SQ_DEPTH", "lots",
		"env RIFT_RDMA_SQ_DEPTH: 'lots' is not an integer (not a "
		"number)");
	env_bad("RIFT_RDMA_SQ_DEPTH", "",
		"env RIFT_RDMA_SQ_DEPTH: '' is not an integer (empty)");
	env_bad("RIFT_PROGRESS_POLLING", "spin",
		"env RIFT_PROGRESS_POLLING: 'spin' is not one of \"event\", "
		"\"busy\" or \"adaptive\"");
	env_bad("RIFT_METRICS_ENABLED", "maybe",
		"env RIFT_METRICS_ENABLED: 'maybe' is not a boolean "
		"(true/false, 1/0, yes/no, on/off)");
	env_bad("RIFT_SESSION_SEND_WINDOW", "1.5GB",
		"env RIFT_SESSION_SEND_WINDOW: '1.5GB' is not a size: a size "
		"must be a whole number (write \"1536MiB\", not \"1.5GiB\")");
	env_bad("RIFT_SESSION_SEND_WINDOW", "2TiB",
		"env RIFT_SESSION_SEND_WINDOW: send_window = 2TiB is out of "
		"range 4KiB..1TiB (unacknowledged bytes per connection)");
	env_bad("RIFT_POOL_BLOCK_SIZES", "8KiB,64KiB",
		"env RIFT_POOL_BLOCK_SIZES: '8KiB,64KiB' is not 5 sizes "
		"separated by commas");
	env_bad("RIFT_POOL_BLOCK_SIZES", "8KiB,1KiB,64KiB,512KiB,2MiB",
		"env RIFT_POOL_BLOCK_SIZES: block_sizes[1] = 1KiB is out of "
		"range 4KiB..1GiB (the 5 block classes, increasing, bytes)");
	env_bad("RIFT_RDMA_SQ_DEPT", "512",
		"env RIFT_RDMA_SQ_DEPT: no such setting in [rdma]; did you "
		"mean RIFT_RDMA_SQ_DEPTH?");
	env_bad("RIFT_POOL_WHATEVER", "1",
		"env RIFT_POOL_WHATEVER: no such setting in [pool]");
	env_bad("RIFT_SESSION_KEEPALIVE_INTERVAL_MS", "8000",
		"env RIFT_SESSION_KEEPALIVE_INTERVAL_MS: "
		"session.keepalive_timeout_ms (5000) must be greater than "
		"session.keepalive_interval_ms (8000)");
	setenv("RIFT_CONNECT_CONNECT_TIMEOUT_MS", "100", 1);
	env_bad("RIFT_CONNECT_CONNECTION_TIMEOUT_MS", "200",
		"env RIFT_CONNECT_CONNECTION_TIMEOUT_MS: "
		"RIFT_CONNECT_CONNECT_TIMEOUT_MS is set too; use one");
	unsetenv("RIFT_CONNECT_CONNECT_TIMEOUT_MS");

	/* RIFT_ variables outside the config sections are someone else's */
	rift_config c;
	char err[RIFT_CONFIG_ERRLEN];

	setenv("RIFT_LOG", "debug", 1);
	setenv("RIFT_RDMAX", "1", 1);
	rift_config_init(&c);
	CHECK_EQ(rift_config_env(&c, err, sizeof(err)), 0);
}

/* ---- precedence and the dump ---- */

TEST(config_precedence_file_env_code)
{
	rift_config c;
	char err[RIFT_CONFIG_ERRLEN];
	const char *d;

	rift_config_init(&c);
	load_ok(&c, "[rdma]\nsq_depth = 512\nrq_depth = 512\ncq_size = 512\n"
		    "[progress]\npolling = \"adaptive\"\n");
	setenv("RIFT_RDMA_RQ_DEPTH", "1024", 1);
	setenv("RIFT_RDMA_CQ_SIZE", "1024", 1);
	CHECK_EQ(rift_config_env(&c, err, sizeof(err)), 0);
	c.cq_size = 2048; /* code wins over both */
	c.metrics = 0;

	CHECK_EQ(c.sq_depth, 512);  /* file */
	CHECK_EQ(c.rq_depth, 1024); /* env over file */
	CHECK_EQ(c.cq_size, 2048);  /* code over env over file */
	d = dump(&c);
	check_origin(d, "sq_depth", "512", "rift.toml:2");
	check_origin(d, "rq_depth", "1024", "env RIFT_RDMA_RQ_DEPTH");
	check_origin(d, "cq_size", "2048", "set in code");
	check_origin(d, "polling", "\"adaptive\"", "rift.toml:6");
	check_origin(d, "enabled", "false", "set in code");
	check_origin(d, "max_send_sge", "2", "default");
	check_origin(d, "block_sizes",
		     "[\"8KiB\", \"64KiB\", \"256KiB\", \"1MiB\", \"2MiB\"]",
		     "default");

	/* a value set back to what the file said is the file's again */
	c.cq_size = 1024;
	check_origin(dump(&c), "cq_size", "1024", "env RIFT_RDMA_CQ_SIZE");
}

TEST(config_dump_origins_follow_the_struct)
{
	rift_config a, b, other;
	const char *d;

	rift_config_init(&a);
	load_as(&a, "base.toml", "[rdma]\nsq_depth = 512\ncq_size = 2048\n",
		NULL, 0);
	load_as(&a, "site.toml", "# site overrides\n[rdma]\ncq_size = 4096\n",
		NULL, 0);
	d = dump(&a);
	check_origin(d, "sq_depth", "512", "base.toml:2");
	check_origin(d, "cq_size", "4096", "site.toml:3");

	/* a copy keeps the origins while its values are the loaded ones */
	b = a;
	check_origin(dump(&b), "sq_depth", "512", "base.toml:2");
	b.sq_depth = 1024;
	d = dump(&b);
	check_origin(d, "sq_depth", "1024", "set in code");
	check_origin(d, "cq_size", "4096", "set in code"); /* b is not a's */
	check_origin(dump(&a), "sq_depth", "512", "base.toml:2");

	/* an unrelated struct knows nothing of a's file */
	rift_config_init(&other);
	other.sq_depth = 512;
	check_origin(dump(&other), "sq_depth", "512", "set in code");
	rift_config_init(&other);
	check_origin(dump(&other), "sq_depth", "256", "default");
}

TEST(config_dump_round_trip)
{
	rift_config a, b, c;
	char err[RIFT_CONFIG_ERRLEN];
	static char text[8192];

	/* every key away from its default, in code, with awkward values */
	rift_config_init(&a);
	a.polling = RIFT_POLL_ADAPTIVE;
	a.busy_poll_us = 3;
	a.connect_timeout_ms = 1;
	a.retries = 1000;
	a.retry_delay_ms = 0;
	a.fallback = 0;
	a.keepalive_interval_ms = 11;
	a.keepalive_timeout_ms = 3600000;
	a.session_grace_ms = 0;
	a.ack_delay_ms = 10000;
	a.send_window = 5000; /* not a whole KiB: written as an integer */
	a.max_msg_size = (1ull << 32) - 1;
	a.linger_ms = 3600000;
	a.group_max_paths = 8;
	a.group_failback_delay_ms = 3600000;
	a.fallback_return_ms = 3600000;
	a.group_policy = RIFT_POLICY_ACTIVE_ACTIVE;
	a.tcp_read_buffer = 4097;
	a.listen_backlog = 65535;
	snprintf(a.device, sizeof(a.device), "we\"ird\\dev\tice");
	a.port = 255;
	a.gid_index = 4095;
	a.cm = RIFT_CM_TCP;
	a.rdma_retry_count = 0;
	a.rdma_ack_timeout = 1;
	a.sq_depth = 16;
	a.rq_depth = 32768;
	a.max_send_sge = 32;
	a.inline_threshold = 0;
	a.cq_size = 1u << 22;
	a.poll_batch = 1;
	a.qp_pool_count = 4096;
	a.zero_copy_threshold = 1u << 30;
	a.rndv_threshold = 0;
	a.block_size[0] = 4096;
	a.block_size[1] = 4096 + 512;
	a.block_size[2] = 8192;
	a.block_size[3] = 1u << 20;
	a.block_size[4] = 1u << 30;
	a.pool_initial = 0;
	a.pool_increment = 1ull << 40;
	a.pool_max = 1ull << 40;
	a.pool_buckets = 256;
	a.pool_thread_cache = 0;
	a.recv_reserve_pct = 100;
	a.huge_pages = 1;
	a.metrics = 0;
	a.log_level = RIFT_LOG_OFF;
	snprintf(a.group_local, sizeof(a.group_local), " 10.0.0.2 ,fd00::2");
	CHECK_EQ(rift_config_check(&a), 0);

	snprintf(text, sizeof(text), "%s", dump(&a));
	CHECK(!strstr(text, "# default"));
	rift_config_init(&b);
	if (load(&b, text, err, sizeof(err)) != 0)
		FAIL("%s\n---\n%s", err, text);
	CHECK(same_cfg(&a, &b));
	CHECK_STR(b.device, "we\"ird\\dev\tice");
	CHECK_STR(b.group_local, " 10.0.0.2 ,fd00::2");
	check_origin(dump(&b), "send_window", "5000", "rift.toml:20");

	/* and the defaults come back as defaults */
	rift_config_init(&c);
	snprintf(text, sizeof(text), "%s", dump(&c));
	CHECK(!strstr(text, "set in code"));
	rift_config_init(&b);
	b.sq_depth = 1024;
	load_ok(&b, text);
	CHECK(same_cfg(&b, &c));
}

TEST(config_dump_sizes_its_output_like_snprintf)
{
	rift_config c;
	char small[40], big[8192];
	int n;

	rift_config_init(&c);
	n = rift_config_dump(&c, NULL, 0);
	CHECK(n > 1000);
	CHECK_EQ(rift_config_dump(&c, small, sizeof(small)), n);
	CHECK_EQ(strlen(small), sizeof(small) - 1);
	CHECK_EQ(rift_config_dump(&c, big, sizeof(big)), n);
	CHECK_EQ(strlen(big), n);
	CHECK(!strncmp(big, small, sizeof(small) - 1));
	CHECK_CONTAINS(big, "\n[rdma]\ndevice = \"\"");
	CHECK_EQ(rift_config_dump(NULL, big, sizeof(big)), RIFT_EINVAL);
	CHECK_EQ(rift_config_dump(&c, NULL, 10), RIFT_EINVAL);
	c.size = 3;
	CHECK_EQ(rift_config_dump(&c, big, sizeof(big)), RIFT_EINVAL);
}

/*
 * A message's length travels in 32 bits of its frame header: a limit of
 * 4 GiB let a 4 GiB message go out with a length of 0.  The largest
 * max_msg_size is 4 GiB - 1, in a file and through rift_config_check.
 */
TEST(max_msg_size_fits_the_frame_length_field)
{
	rift_config c;
	char err[256];

	rift_config_init(&c);
	c.max_msg_size = 1ull << 32;
	CHECK_EQ(rift_config_check(&c), RIFT_EINVAL);
	c.max_msg_size = (1ull << 32) - 1;
	CHECK_EQ(rift_config_check(&c), 0);
	rift_config_init(&c);
	CHECK_EQ(load(&c, "[session]\nmax_msg_size = \"4GiB\"\n", err,
			   sizeof(err)),
		 RIFT_EINVAL);
	CHECK_CONTAINS(err, "max_msg_size");
}
