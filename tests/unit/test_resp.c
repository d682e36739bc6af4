/* rift-kv's RESP2 codec: requests in any cut, Redis's errors, replies. */
#include <errno.h>
#include <limits.h>

#include "../../examples/rift-kv/resp.h"
#include "../runner.h"

/* A growing string the tests print commands into. */
struct text {
	char *s;
	size_t len, cap;
};

static void text_add(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		t->s = realloc(t->s, t->cap);
		CHECK(t->s != NULL);
	}
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len] = '\0';
}

static void text_str(struct text *t, const char *s)
{
	text_add(t, s, strlen(s));
}

/* A command as "<len>:<bytes> ...\n", bytes outside printable ASCII (and
 * the backslash) as \xHH, so that every byte shows. */
static void show_cmd(struct text *t, const struct kv_resp_cmd *cmd)
{
	char tmp[32];

	CHECK(cmd->argc >= 1);
	for (size_t i = 0; i < cmd->argc; i++) {
		const struct kv_resp_arg *a = &cmd->argv[i];

		snprintf(tmp, sizeof(tmp), "%s%zu:", i ? " " : "", a->len);
		text_str(t, tmp);
		CHECK(a->ptr != NULL);
		for (size_t k = 0; k < a->len; k++) {
			unsigned char c = (unsigned char)a->ptr[k];

			if (c < 0x21 || c > 0x7e || c == '\\') {
				snprintf(tmp, sizeof(tmp), "\\x%02x", c);
				text_str(t, tmp);
			} else {
				text_add(t, (const char *)&c, 1);
			}
		}
	}
	text_str(t, "\n");
}

/*
 * Parse n bytes of data handed over in pieces of chunk bytes (0: all at
 * once), each piece in a buffer of its own that is scribbled over and
 * freed once the parser has it all, as a server reusing its read buffer
 * would.  Returns every command shown, then "ERR <message>\n" if the
 * parser failed, or "MORE\n" if it waits for more; the caller frees it.
 */
static char *run(const struct kv_resp_config *cfg, const void *data, size_t n,
		 size_t chunk)
{
	kv_resp_parser *p = kv_resp_parser_new(cfg);
	struct text t = {0};
	size_t off = 0;
	int rc = KV_RESP_MORE;

	CHECK(p != NULL);
	text_str(&t, "");
	while (off < n && rc >= 0) {
		size_t m = chunk && chunk < n - off ? chunk : n - off, at = 0;
		char *piece = malloc(m);

		CHECK(piece != NULL);
		memcpy(piece, (const char *)data + off, m);
		for (;;) {
			struct kv_resp_cmd cmd = {0};
			size_t used = 12345;

			rc = kv_resp_parse(p, piece + at, m - at, &used, &cmd);
			if (rc == KV_RESP_CMD) {
				CHECK(used >= 1 && used <= m - at);
				show_cmd(&t, &cmd);
				at += used;
				continue;
			}
			if (rc == KV_RESP_MORE)
				CHECK_EQ(used, m - at);
			else
				CHECK_EQ(used, 0);
			break;
		}
		memset(piece, 0xa5, m);
		free(piece);
		off += m;
	}
	if (rc < 0) {
		text_str(&t, "ERR ");
		text_str(&t, kv_resp_parser_error(p));
		text_str(&t, "\n");
	} else {
		CHECK_STR(kv_resp_parser_error(p), "");
		text_str(&t, "MORE\n");
	}
	kv_resp_parser_free(p);
	return t.s;
}

/* data parsed at once and in pieces of every size from 1 to n bytes
 * gives want. */
static void expect_n(const struct kv_resp_config *cfg, const void *data,
		     size_t n, const char *want)
{
	for (size_t chunk = 0; chunk <= n; chunk++) {
		char *got = run(cfg, data, n, chunk);

		if (strcmp(got, want) != 0)
			FAIL("pieces of %zu bytes: got \"%s\", want \"%s\"",
			     chunk, got, want);
		free(got);
	}
}

static void expect(const char *data, const char *want)
{
	expect_n(NULL, data, strlen(data), want);
}

static void expect_cfg(const struct kv_resp_config *cfg, const char *data,
		       const char *want)
{
	expect_n(cfg, data, strlen(data), want);
}

TEST(resp_multibulk_command)
{
	expect("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n",
	       "3:SET 3:key 5:value\nMORE\n");
	expect("*1\r\n$4\r\nPING\r\n", "4:PING\nMORE\n");
	/* A partial request waits, whatever it stops at. */
	expect("*2\r\n$3\r\nGET\r\n$3\r\nke", "MORE\n");
	expect("*2\r\n$3\r\nGET\r\n$3\r\nkey\r", "MORE\n");
	expect("*", "MORE\n");
	expect("*12", "MORE\n");
	expect("*1\r\n$1", "MORE\n");
}

TEST(resp_binary_safe_arguments)
{
	static const char req[] = "*2\r\n$3\r\nSET\r\n$8\r\na\0b\r\n$*\n\r\n";

	expect_n(NULL, req, sizeof(req) - 1,
		 "3:SET 8:a\\x00b\\x0d\\x0a$*\\x0a\nMORE\n");
}

TEST(resp_empty_and_null_bulks)
{
	/* An empty argument is one. */
	expect("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", "4:ECHO 0:\nMORE\n");
	/* "*0" and "*-1" are no command, as in Redis. */
	expect("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", "4:PING\nMORE\n");
	/* A null bulk string is a reply; Redis refuses it in a request. */
	expect("*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length\n");
}

TEST(resp_pipelined_requests_one_buffer)
{
	static const char req[] = "*1\r\n$4\r\nPING\r\n"
				  "PING\r\n"
				  "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
				  "\r\n"
				  "*1\r\n$4\r\nQU";
	kv_resp_parser *p = kv_resp_parser_new(NULL);
	struct kv_resp_cmd cmd;
	size_t used, at = 0, n = sizeof(req) - 1;

	CHECK(p != NULL);
	CHECK_EQ(kv_resp_parse(p, req, n, &used, &cmd), KV_RESP_CMD);
	CHECK_EQ(used, 14);
	CHECK_EQ(cmd.argc, 1);
	CHECK(cmd.argv[0].len == 4 && !memcmp(cmd.argv[0].ptr, "PING", 4));
	at += used;
	CHECK_EQ(kv_resp_parse(p, req + at, n - at, &used, &cmd), KV_RESP_CMD);
	CHECK_EQ(used, 6);
	CHECK_EQ(cmd.argc, 1);
	CHECK(cmd.argv[0].len == 4 && !memcmp(cmd.argv[0].ptr, "PING", 4));
	at += used;
	CHECK_EQ(kv_resp_parse(p, req + at, n - at, &used, &cmd), KV_RESP_CMD);
	CHECK_EQ(used, 20);
	CHECK_EQ(cmd.argc, 2);
	CHECK(cmd.argv[0].len == 3 && !memcmp(cmd.argv[0].ptr, "GET", 3));
	CHECK(cmd.argv[1].len == 1 && cmd.argv[1].ptr[0] == 'k');
	at += used;
	/* The empty line is no command; the last request is cut. */
	CHECK_EQ(kv_resp_parse(p, req + at, n - at, &used, &cmd), KV_RESP_MORE);
	CHECK_EQ(used, n - at);
	CHECK_EQ(kv_resp_parse(p, "IT\r\n", 4, &used, &cmd), KV_RESP_CMD);
	CHECK_EQ(used, 4);
	CHECK_EQ(cmd.argc, 1);
	CHECK(cmd.argv[0].len == 4 && !memcmp(cmd.argv[0].ptr, "QUIT", 4));
	CHECK_EQ(kv_resp_parse(p, "", 0, &used, &cmd), KV_RESP_MORE);
	CHECK_EQ(used, 0);
	kv_resp_parser_free(p);

	expect(req, "4:PING\n4:PING\n3:GET 1:k\nMORE\n");
}

/* Arguments that came whole in this call's buffer point into it; the
 * others were copied and outlive the buffers they came in. */
static void check_cut(size_t cut, bool hello_in_b)
{
	static const char req[] = "*2\r\n$3\r\nGET\r\n$5\r\nhello\r\n";
	kv_resp_parser *p = kv_resp_parser_new(NULL);
	size_t n = sizeof(req) - 1, used;
	struct kv_resp_cmd cmd;
	char a[32], b[32];

	CHECK(p != NULL);
	memcpy(a, req, cut);
	CHECK_EQ(kv_resp_parse(p, a, cut, &used, &cmd), KV_RESP_MORE);
	CHECK_EQ(used, cut);
	memset(a, 'x', sizeof(a));
	memcpy(b, req + cut, n - cut);
	CHECK_EQ(kv_resp_parse(p, b, n - cut, &used, &cmd), KV_RESP_CMD);
	CHECK_EQ(used, n - cut);
	CHECK_EQ(cmd.argc, 2);
	CHECK(cmd.argv[0].ptr < a || cmd.argv[0].ptr >= a + sizeof(a));
	CHECK(cmd.argv[0].ptr < b || cmd.argv[0].ptr >= b + sizeof(b));
	if (hello_in_b)
		CHECK(cmd.argv[1].ptr == b + (17 - cut));
	else
		CHECK(cmd.argv[1].ptr < b || cmd.argv[1].ptr >= b + sizeof(b));
	CHECK(cmd.argv[0].len == 3 && !memcmp(cmd.argv[0].ptr, "GET", 3));
	CHECK(cmd.argv[1].len == 5 && !memcmp(cmd.argv[1].ptr, "hello", 5));
	memset(b, 'y', sizeof(b));
	if (!hello_in_b)
		CHECK(!memcmp(cmd.argv[1].ptr, "hello", 5));
	CHECK(!memcmp(cmd.argv[0].ptr, "GET", 3));
	kv_resp_parser_free(p);
}

TEST(resp_argument_storage)
{
	static const char req[] = "*2\r\n$3\r\nGET\r\n$5\r\nhello\r\n";
	kv_resp_parser *p = kv_resp_parser_new(NULL);
	struct kv_resp_cmd cmd;
	size_t used;

	CHECK(p != NULL);
	CHECK_EQ(kv_resp_parse(p, req, sizeof(req) - 1, &used, &cmd),
		 KV_RESP_CMD);
	CHECK_EQ(used, sizeof(req) - 1);
	CHECK(cmd.argv[0].ptr == req + 8);
	CHECK(cmd.argv[1].ptr == req + 17);
	kv_resp_parser_free(p);

	check_cut(15, true);  /* "GET" in a, "hello" whole in b */
	check_cut(19, false); /* "hello" cut after "he" */
	check_cut(10, true);  /* "GET" cut, "hello" whole in b */
}

TEST(resp_inline_commands)
{
	expect("PING\r\n", "4:PING\nMORE\n");
	expect("PING\n", "4:PING\nMORE\n");
	expect("  set\tkey   value  \r\n", "3:set 3:key 5:value\nMORE\n");
	/* Empty and blank lines are no command. */
	expect("\r\n\n \t \r\nECHO x\n", "4:ECHO 1:x\nMORE\n");
	/* A CR inside the line separates words, like a blank. */
	expect("a\rb\n", "1:a 1:b\nMORE\n");
	/* sdssplitargs() skips a leading \v but does not end a word at one. */
	expect("\va\vb c\n", "3:a\\x0bb 1:c\nMORE\n");
	/* A line not yet ended waits. */
	expect("GET ke", "MORE\n");
	expect("GET key\r", "MORE\n");
	/* A NUL is a byte of the word here (documented in resp.h). */
	expect_n(NULL, "a\0b c\n", 6, "3:a\\x00b 1:c\nMORE\n");
}

TEST(resp_inline_quoting)
{
	expect("set \"a b\" 'c d'\r\n", "3:set 3:a\\x20b 3:c\\x20d\nMORE\n");
	/* Every escape of "...". */
	expect("\"\\n\\r\\t\\b\\a\\\\\\\"\\x41\\x6a\\xFf\"\n",
	       "10:\\x0a\\x0d\\x09\\x08\\x07\\x5c\"Aj\\xff\nMORE\n");
	/* \xHH needs two hex digits; otherwise \x is x, as is any \c. */
	expect("\"\\xZZ\" \"\\x4\" \"\\q\"\n", "3:xZZ 2:x4 1:q\nMORE\n");
	expect("\"a\\x00b\"\n", "3:a\\x00b\nMORE\n");
	/* '...' knows \' only. */
	expect("'it\\'s' 'a\\nb' 'c\\\\d'\n",
	       "4:it's 4:a\\x5cnb 4:c\\x5c\\x5cd\nMORE\n");
	/* Quotes may open inside a word; empty quotes are an empty word. */
	expect("a\"b c\" \"\" ''\n", "4:ab\\x20c 0: 0:\nMORE\n");
	/* A closing quote before a tab, CR or the end is fine. */
	expect("\"a\"\t'b'\r\n", "1:a 1:b\nMORE\n");
	/* Quoted CR LF, written as escapes, are bytes of the word. */
	expect("\"\\r\\n\"\n", "2:\\x0d\\x0a\nMORE\n");
}

TEST(resp_inline_unbalanced_quotes)
{
	static const char *const bad[] = {
		"\"abc\r\n",	/* never closed */
		"'abc\n",	/* never closed */
		"\"abc\"def\n", /* closing quote followed by a word */
		"'a'b\n",	/* same, single */
		"\"abc\\\"\n",	/* \" escapes the would-be closing quote */
		"'abc\\'\n",	/* \' likewise */
		"x \"abc\\\n",	/* a backslash last */
		"\"\n",		/* a lone quote */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(bad[i],
		       "ERR Protocol error: unbalanced quotes in request\n");
	/* A command before the bad line is delivered first. */
	expect("PING\n\"x\n",
	       "4:PING\nERR Protocol error: unbalanced quotes in request\n");
}

TEST(resp_inline_too_big)
{
	struct kv_resp_config cfg = {.max_inline = 8};

	/* Exactly the limit, with either line end. */
	expect_cfg(&cfg, "12345678\r\n", "8:12345678\nMORE\n");
	expect_cfg(&cfg, "1234 678\n", "4:1234 3:678\nMORE\n");
	/* A last CR may yet be the line's end: still waiting. */
	expect_cfg(&cfg, "12345678\r", "MORE\n");
	/* One byte over, ended or not. */
	expect_cfg(&cfg, "123456789\r\n",
		   "ERR Protocol error: too big inline request\n");
	expect_cfg(&cfg, "123456789",
		   "ERR Protocol error: too big inline request\n");
	expect_cfg(&cfg, "12345678\rx",
		   "ERR Protocol error: too big inline request\n");
	expect_cfg(&cfg, "12345678\r\r\n",
		   "ERR Protocol error: too big inline request\n");
	/* The default is Redis's 64 KiB. */
	{
		size_t n = KV_RESP_MAX_INLINE_DEFAULT;
		char *line = malloc(n + 2);
		char *got;

		CHECK(line != NULL);
		memset(line, 'a', n + 2);
		line[n] = '\n';
		got = run(NULL, line, n + 1, 0);
		CHECK_EQ(strlen(got), 6 + n + 1 + 5);
		free(got);
		got = run(NULL, line, n + 1, 4096);
		CHECK_EQ(strlen(got), 6 + n + 1 + 5);
		free(got);
		line[n] = 'a';
		line[n + 1] = '\n';
		got = run(NULL, line, n + 2, 0);
		CHECK_STR(got, "ERR Protocol error: too big inline request\n");
		free(got);
		free(line);
	}
}

TEST(resp_inline_too_many_arguments)
{
	struct kv_resp_config cfg = {.max_args = 3};

	expect_cfg(&cfg, "a b c\n", "1:a 1:b 1:c\nMORE\n");
	expect_cfg(
		&cfg, "a b c d\n",
		"ERR Protocol error: too many arguments in inline request\n");
}

TEST(resp_multibulk_count_errors)
{
	static const char *const bad[] = {
		"*x\r\n",
		"*\r\n",
		"*+1\r\n",
		"* 1\r\n",
		"*1 \r\n",
		"*01\r\n",
		"*00\r\n",
		"*-0\r\n",
		"*-2\r\n",
		"*-10\r\n",
		"*--1\r\n",
		"*-\r\n",
		"*1-\r\n",
		"*1\r\r",
		"*1\rx",
		"*1\n",
		"*0x10\r\n",
		"*1.5\r\n",
		"*99999999999999999999999\r\n",
		"*18446744073709551617\r\n",
		"*1048577\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(bad[i],
		       "ERR Protocol error: invalid multibulk length\n");
	/* The largest count allowed is waited for, not refused. */
	expect("*1048576\r\n$1\r\na\r\n", "MORE\n");
}

TEST(resp_bulk_length_errors)
{
	static const char *const bad[] = {
		"*1\r\n$x\r\n",
		"*1\r\n$\r\n",
		"*1\r\n$-1\r\n",
		"*1\r\n$-0\r\n",
		"*1\r\n$+3\r\n",
		"*1\r\n$03\r\n",
		"*1\r\n$3 \r\n",
		"*1\r\n$ 3\r\n",
		"*1\r\n$3\r\r",
		"*1\r\n$3\n",
		"*1\r\n$536870913\r\n",
		"*1\r\n$18446744073709551616\r\n",
		"*1\r\n$99999999999999999999999\r\n",
		"*2\r\n$3\r\nGET\r\n$1x\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(bad[i], "ERR Protocol error: invalid bulk length\n");
	/* The largest bulk allowed is waited for. */
	expect("*1\r\n$536870912\r\nabc", "MORE\n");
}

TEST(resp_wrong_type_byte)
{
	expect("*1\r\n+OK\r\n", "ERR Protocol error: expected '$', got '+'\n");
	expect("*1\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'\n");
	expect("*2\r\n$1\r\na\r\n*1\r\n",
	       "ERR Protocol error: expected '$', got '*'\n");
	expect("*1\r\nPING\r\n", "ERR Protocol error: expected '$', got 'P'\n");
	/* CR, LF (blanked by Redis too) and NUL show as a blank. */
	expect("*2\r\n$1\r\na\r\n\r\n",
	       "ERR Protocol error: expected '$', got ' '\n");
	expect("*1\r\n\n", "ERR Protocol error: expected '$', got ' '\n");
	expect_n(NULL, "*1\r\n\0", 5,
		 "ERR Protocol error: expected '$', got ' '\n");
}

TEST(resp_missing_crlf_after_bulk)
{
	static const char *const bad[] = {
		"*1\r\n$3\r\nfooX\r\n", "*1\r\n$3\r\nfoo\rX",
		"*1\r\n$3\r\nfoo\n",	"*1\r\n$3\r\nfoo\n\r",
		"*1\r\n$0\r\nX",	"*1\r\n$3\r\nfoo\r\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(bad[i],
		       "ERR Protocol error: expected CRLF after bulk data\n");
	/* The command before it is delivered. */
	expect("PING\r\n*1\r\n$1\r\nab\r\n",
	       "4:PING\nERR Protocol error: expected CRLF after bulk data\n");
}

/* A claimed length over a limit is refused at its header, as its digits
 * arrive, before anything is allocated for it. */
TEST(resp_limits_refused_at_header)
{
	struct kv_resp_config cfg = {.max_bulk = 16, .max_args = 3};
	kv_resp_parser *p = kv_resp_parser_new(&cfg);
	size_t fresh, used;
	struct kv_resp_cmd cmd;

	CHECK(p != NULL);
	fresh = kv_resp_parser_footprint(p);
	CHECK_EQ(kv_resp_parse(p, "*1\r\n$16\r\n", 9, &used, &cmd),
		 KV_RESP_MORE);
	kv_resp_parser_free(p);

	p = kv_resp_parser_new(&cfg);
	CHECK(p != NULL);
	/* "$17" with no CRLF yet, and no byte of the body. */
	CHECK_EQ(kv_resp_parse(p, "*1\r\n$17", 7, &used, &cmd), KV_RESP_ERROR);
	CHECK_STR(kv_resp_parser_error(p),
		  "Protocol error: invalid bulk length");
	CHECK_EQ(kv_resp_parser_footprint(p), fresh);
	/* Failed for good: the same answer whatever follows. */
	CHECK_EQ(kv_resp_parse(p, "\r\n", 2, &used, &cmd), KV_RESP_ERROR);
	CHECK_EQ(used, 0);
	CHECK_STR(kv_resp_parser_error(p),
		  "Protocol error: invalid bulk length");
	kv_resp_parser_free(p);

	p = kv_resp_parser_new(&cfg);
	CHECK(p != NULL);
	CHECK_EQ(kv_resp_parse(p, "*4", 2, &used, &cmd), KV_RESP_ERROR);
	CHECK_STR(kv_resp_parser_error(p),
		  "Protocol error: invalid multibulk length");
	CHECK_EQ(kv_resp_parser_footprint(p), fresh);
	kv_resp_parser_free(p);

	expect_cfg(&cfg,
		   "*3\r\n$16\r\n0123456789abcdef\r\n$0\r\n\r\n$1\r\nx\r\n",
		   "16:0123456789abcdef 0: 1:x\nMORE\n");
	expect_cfg(&cfg, "*1\r\n$170\r\n",
		   "ERR Protocol error: invalid bulk length\n");
	expect_cfg(&cfg, "*40\r\n",
		   "ERR Protocol error: invalid multibulk length\n");
}

/* A whole command (its count line, each argument's length line, bytes
 * and CRLF) is at most max_command bytes: refused as soon as the
 * lengths it declares cannot fit, before their bytes come. */
TEST(resp_command_size_limit)
{
	struct kv_resp_config cfg = {.max_command = 64};
	kv_resp_parser *p;
	char one[80], req[160], want[128];
	size_t fresh, used;
	struct kv_resp_cmd cmd;

	/* 4 + 9 + 5 + 44 + 2: 64 bytes, taken; twice in one buffer too */
	snprintf(one, sizeof(one), "*2\r\n$3\r\nSET\r\n$44\r\n%044d\r\n", 7);
	CHECK_EQ(strlen(one), 64);
	snprintf(want, sizeof(want), "3:SET 44:%044d\nMORE\n", 7);
	expect_cfg(&cfg, one, want);
	snprintf(req, sizeof(req), "%s%s", one, one);
	snprintf(want, sizeof(want), "3:SET 44:%044d\n3:SET 44:%044d\nMORE\n",
		 7, 7);
	expect_cfg(&cfg, req, want);
	/* one byte more is refused at its length line */
	expect_cfg(&cfg, "*2\r\n$3\r\nSET\r\n$45\r\n",
		   "ERR Protocol error: too big command: more than 64 "
		   "bytes\n");
	/* the arguments still to come count at their least ("$0\r\n\r\n") */
	expect_cfg(&cfg, "*3\r\n$3\r\nSET\r\n$39\r\n",
		   "ERR Protocol error: too big command: more than 64 "
		   "bytes\n");
	expect_cfg(&cfg, "*3\r\n$3\r\nSET\r\n$38\r\n", "MORE\n");
	expect_cfg(&cfg, "*10\r\n", /* 5 + 10 * 6 */
		   "ERR Protocol error: too big command: more than 64 "
		   "bytes\n");
	expect_cfg(&cfg, "*9\r\n", "MORE\n");
	/* refused with nothing allocated for it */
	p = kv_resp_parser_new(&cfg);
	CHECK(p != NULL);
	fresh = kv_resp_parser_footprint(p);
	CHECK_EQ(kv_resp_parse(p, "*1\r\n$100\r\nabc", 13, &used, &cmd),
		 KV_RESP_ERROR);
	CHECK_EQ(kv_resp_parser_footprint(p), fresh);
	kv_resp_parser_free(p);
	/* an inline line is a command too (its line end not counted, as
	 * for max_inline) */
	cfg.max_command = 16;
	expect_cfg(&cfg, "PING 0123456789a\r\n",
		   "4:PING 11:0123456789a\nMORE\n");
	expect_cfg(&cfg, "PING 0123456789ab\r\n",
		   "ERR Protocol error: too big inline request\n");
}

/* Memory follows the bytes that arrived, never the lengths claimed. */
TEST(resp_memory_grows_with_bytes_not_claims)
{
	kv_resp_parser *p = kv_resp_parser_new(NULL);
	const size_t big = (size_t)1 << 20;
	struct kv_resp_cmd cmd;
	size_t fresh, used, fed;
	char *body = malloc(big);

	CHECK(p != NULL && body != NULL);
	fresh = kv_resp_parser_footprint(p);
	CHECK_EQ(kv_resp_parse(p, "*1048576\r\n$536870912\r\n0123456789", 32,
			       &used, &cmd),
		 KV_RESP_MORE);
	CHECK(kv_resp_parser_footprint(p) <= fresh + 1024);
	/* A megabyte more, in 4 KiB reads: at most twice what came. */
	memset(body, 'v', big);
	for (fed = 0; fed < big; fed += 4096) {
		CHECK_EQ(kv_resp_parse(p, body + fed, 4096, &used, &cmd),
			 KV_RESP_MORE);
		CHECK_EQ(used, 4096);
		CHECK(kv_resp_parser_footprint(p) <=
		      fresh + 1024 + 2 * (10 + fed + 4096));
	}
	kv_resp_parser_free(p);
	free(body);
}

/* A big argument fed one byte a call: state is kept, so this is linear
 * (a parser that rescans would take minutes), and the bytes are right. */
TEST(resp_byte_at_a_time_is_linear)
{
	const size_t big = (size_t)1 << 20;
	kv_resp_parser *p = kv_resp_parser_new(NULL);
	char head[32];
	struct kv_resp_cmd cmd = {0};
	size_t used, n;
	int rc = KV_RESP_MORE;

	CHECK(p != NULL);
	n = (size_t)snprintf(head, sizeof(head), "*2\r\n$3\r\nSET\r\n$%zu\r\n",
			     big);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ(kv_resp_parse(p, head + i, 1, &used, &cmd),
			 KV_RESP_MORE);
	for (size_t i = 0; i < big; i++) {
		char c = (char)('a' + i % 26);

		CHECK_EQ(kv_resp_parse(p, &c, 1, &used, &cmd), KV_RESP_MORE);
	}
	CHECK_EQ(kv_resp_parse(p, "\r", 1, &used, &cmd), KV_RESP_MORE);
	rc = kv_resp_parse(p, "\nPING", 5, &used, &cmd);
	CHECK_EQ(rc, KV_RESP_CMD);
	CHECK_EQ(used, 1);
	CHECK_EQ(cmd.argc, 2);
	CHECK(cmd.argv[0].len == 3 && !memcmp(cmd.argv[0].ptr, "SET", 3));
	CHECK_EQ(cmd.argv[1].len, big);
	for (size_t i = 0; i < big; i++)
		if (cmd.argv[1].ptr[i] != (char)('a' + i % 26))
			FAIL("byte %zu is 0x%02x", i,
			     (unsigned char)cmd.argv[1].ptr[i]);
	kv_resp_parser_free(p);
}

TEST(resp_encoder_bytes)
{
	static const char want[] = "+OK\r\n"
				   "+\r\n"
				   "-ERR unknown command 'FOO'\r\n"
				   "-WRONGTYPE\r\n"
				   ":0\r\n"
				   ":-1\r\n"
				   ":9223372036854775807\r\n"
				   ":-9223372036854775808\r\n"
				   "$3\r\nfoo\r\n"
				   "$0\r\n\r\n"
				   "$5\r\na\0\r\nb\r\n"
				   "$-1\r\n"
				   "*3\r\n"
				   "*0\r\n"
				   "*-1\r\n";
	struct kv_resp_out o = {0};

	CHECK_EQ(kv_resp_add_simple(&o, "OK"), 0);
	CHECK_EQ(kv_resp_add_simple(&o, ""), 0);
	CHECK_EQ(kv_resp_add_error(&o, "ERR", "unknown command 'FOO'"), 0);
	CHECK_EQ(kv_resp_add_error(&o, "WRONGTYPE", NULL), 0);
	CHECK_EQ(kv_resp_add_int(&o, 0), 0);
	CHECK_EQ(kv_resp_add_int(&o, -1), 0);
	CHECK_EQ(kv_resp_add_int(&o, LLONG_MAX), 0);
	CHECK_EQ(kv_resp_add_int(&o, LLONG_MIN), 0);
	CHECK_EQ(kv_resp_add_bulk(&o, "foo", 3), 0);
	CHECK_EQ(kv_resp_add_bulk(&o, NULL, 0), 0);
	CHECK_EQ(kv_resp_add_bulk(&o, "a\0\r\nb", 5), 0);
	CHECK_EQ(kv_resp_add_null_bulk(&o), 0);
	CHECK_EQ(kv_resp_add_array(&o, 3), 0);
	CHECK_EQ(kv_resp_add_array(&o, 0), 0);
	CHECK_EQ(kv_resp_add_null_array(&o), 0);
	CHECK_EQ(o.len, sizeof(want) - 1);
	CHECK(o.cap >= o.len);
	CHECK(memcmp(o.buf, want, o.len) == 0);
	kv_resp_out_free(&o);
	CHECK(o.buf == NULL && o.len == 0 && o.cap == 0);
}

TEST(resp_encoder_refuses_line_breaks)
{
	struct kv_resp_out o = {0};

	CHECK_EQ(kv_resp_add_simple(&o, "PONG"), 0);
	CHECK_EQ(kv_resp_add_simple(&o, "a\rb"), -EINVAL);
	CHECK_EQ(kv_resp_add_simple(&o, "a\nb"), -EINVAL);
	CHECK_EQ(kv_resp_add_simple(&o, "\r\n"), -EINVAL);
	CHECK_EQ(kv_resp_add_error(&o, "ERR", "a\r\n+OK"), -EINVAL);
	CHECK_EQ(kv_resp_add_error(&o, "ERR", "x\n"), -EINVAL);
	CHECK_EQ(kv_resp_add_error(&o, "ERR\r\n", "x"), -EINVAL);
	CHECK_EQ(kv_resp_add_error(&o, "", "x"), -EINVAL);
	CHECK_EQ(kv_resp_add_error(&o, "E R", "x"), -EINVAL);
	/* Nothing of a refused element was written. */
	CHECK_EQ(o.len, 7);
	CHECK(memcmp(o.buf, "+PONG\r\n", 7) == 0);
	kv_resp_out_free(&o);
}

/* What the encoder writes as a command, the parser reads back, in any
 * cut; and a protocol error's reply is Redis's line. */
TEST(resp_round_trip)
{
	static const char *const args[] = {"SET", "k\r\ney", "", "\0\0\0",
					   "\"quoted\" 'x'"};
	static const size_t lens[] = {3, 5, 0, 3, 12};
	struct kv_resp_out o = {0};
	kv_resp_parser *p;
	struct kv_resp_cmd cmd;
	size_t used;

	for (int rep = 0; rep < 3; rep++) {
		CHECK_EQ(kv_resp_add_array(&o, 5), 0);
		for (size_t i = 0; i < 5; i++)
			CHECK_EQ(kv_resp_add_bulk(&o, args[i], lens[i]), 0);
	}
	expect_n(NULL, o.buf, o.len,
		 "3:SET 5:k\\x0d\\x0aey 0: 3:\\x00\\x00\\x00 "
		 "12:\"quoted\"\\x20'x'\n"
		 "3:SET 5:k\\x0d\\x0aey 0: 3:\\x00\\x00\\x00 "
		 "12:\"quoted\"\\x20'x'\n"
		 "3:SET 5:k\\x0d\\x0aey 0: 3:\\x00\\x00\\x00 "
		 "12:\"quoted\"\\x20'x'\n"
		 "MORE\n");
	p = kv_resp_parser_new(NULL);
	CHECK(p != NULL);
	CHECK_EQ(kv_resp_parse(p, o.buf, o.len, &used, &cmd), KV_RESP_CMD);
	CHECK_EQ(used, o.len / 3);
	CHECK_EQ(cmd.argc, 5);
	for (size_t i = 0; i < 5; i++) {
		CHECK_EQ(cmd.argv[i].len, lens[i]);
		CHECK(memcmp(cmd.argv[i].ptr, args[i], lens[i]) == 0);
	}
	o.len = 0;
	CHECK_EQ(kv_resp_parse(p, "*1\r\n$x", 6, &used, &cmd), KV_RESP_ERROR);
	CHECK_EQ(kv_resp_add_error(&o, "ERR", kv_resp_parser_error(p)), 0);
	CHECK_EQ(o.len, strlen("-ERR Protocol error: invalid bulk length\r\n"));
	CHECK(memcmp(o.buf, "-ERR Protocol error: invalid bulk length\r\n",
		     o.len) == 0);
	kv_resp_parser_free(p);
	kv_resp_out_free(&o);
}

/* Many small replies grow the buffer; every byte stays in place. */
TEST(resp_encoder_grows)
{
	struct kv_resp_out o = {0};
	size_t at = 0;
	char want[32];

	for (int i = 0; i < 10000; i++)
		CHECK_EQ(kv_resp_add_int(&o, i), 0);
	for (int i = 0; i < 10000; i++) {
		int n = snprintf(want, sizeof(want), ":%d\r\n", i);

		CHECK(at + (size_t)n <= o.len);
		CHECK(memcmp(o.buf + at, want, (size_t)n) == 0);
		at += (size_t)n;
	}
	CHECK_EQ(at, o.len);
	kv_resp_out_free(&o);
}
