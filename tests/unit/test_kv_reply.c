/* rift-kv's client tools: where a RESP2 reply ends, and how redis-cli
 * prints it (examples/rift-kv/client/reply.c). */
#include "../../examples/rift-kv/client/reply.h"
#include "../runner.h"

/* The reply's length when whole, checking that every shorter cut of it
 * is "read more". */
static size_t whole(const char *s, size_t n)
{
	size_t len = 0;

	for (size_t k = 0; k < n; k++)
		if (kv_reply_scan(s, k, &len) != 0)
			FAIL("a cut of %zu bytes of \"%s\" is not 'more'", k, s);
	CHECK_EQ(kv_reply_scan(s, n, &len), 1);
	return len;
}

#define WHOLE(lit) whole(lit, sizeof(lit) - 1)

TEST(kv_reply_scan_finds_the_end)
{
	CHECK_EQ(WHOLE("+OK\r\n"), 5);
	CHECK_EQ(WHOLE("-ERR no\r\n"), 9);
	CHECK_EQ(WHOLE(":-9223372036854775808\r\n"), 23);
	CHECK_EQ(WHOLE("$5\r\nab\r\nc\r\n"), 11); /* CRLF inside a bulk */
	CHECK_EQ(WHOLE("$0\r\n\r\n"), 6);
	CHECK_EQ(WHOLE("$-1\r\n"), 5);
	CHECK_EQ(WHOLE("*-1\r\n"), 5);
	CHECK_EQ(WHOLE("*0\r\n"), 4);
	CHECK_EQ(WHOLE("*2\r\n*1\r\n:1\r\n$-1\r\n"), 17);
	CHECK_EQ(WHOLE("*1\r\n*1\r\n*0\r\n"), 12);
	/* what follows the reply is not its */
	{
		size_t len;

		CHECK_EQ(kv_reply_scan("+a\r\n+b\r\n", 8, &len), 1);
		CHECK_EQ(len, 4);
		CHECK_EQ(kv_reply_scan("*1\r\n:1\r\n:2\r\n", 12, &len), 1);
		CHECK_EQ(len, 8);
	}
}

TEST(kv_reply_scan_refuses_what_is_no_resp)
{
	static const char *const bad[] = {
		"x\r\n",  "+a\rb\r\n", "+a\n",     ":12a\r\n",  ":\r\n",
		":-\r\n", "$-2\r\n",   "$3\r\nabcde", "$2\r\nab\n\n",
		"*-2\r\n", ":99999999999999999999\r\n",
		":1234567890123456789012345", /* no CR where one must be */
	};
	char deep[5 * (KV_REPLY_MAX_DEPTH + 2)];
	size_t len, n = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		if (kv_reply_scan(bad[i], strlen(bad[i]), &len) != -1)
			FAIL("\"%s\" is taken", bad[i]);
	for (int d = 0; d <= KV_REPLY_MAX_DEPTH; d++)
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "*1\r\n");
	CHECK_EQ(kv_reply_scan(deep, n, &len), -1);
	/* at the limit it is taken */
	CHECK_EQ(kv_reply_scan(deep + 4, n - 4, &len), 0);
}

/* What kv_reply_print writes for the reply s. */
static char *printed(const char *s, int raw)
{
	char *out = NULL;
	size_t n = 0, len;
	FILE *f = open_memstream(&out, &n);

	CHECK(f != NULL);
	CHECK_EQ(kv_reply_scan(s, strlen(s), &len), 1);
	kv_reply_print(f, s, raw);
	fclose(f);
	return out;
}

static void expect(const char *s, int raw, const char *want)
{
	char *got = printed(s, raw);

	if (strcmp(got, want))
		FAIL("\"%s\" (%s): got \"%s\", want \"%s\"", s,
		     raw ? "raw" : "formatted", got, want);
	free(got);
}

/* As redis-cli 7.0 prints them (checked against it: tests/kv/run.sh
 * compares the two over commands.txt). */
TEST(kv_reply_print_formatted_as_redis_cli)
{
	expect("+OK\r\n", 0, "OK\n");
	expect("-ERR no such\r\n", 0, "(error) ERR no such\n");
	expect(":-3\r\n", 0, "(integer) -3\n");
	expect("$-1\r\n", 0, "(nil)\n");
	expect("*-1\r\n", 0, "(nil)\n");
	expect("*0\r\n", 0, "(empty array)\n");
	expect("$9\r\na\"b\\\n\t\x01\x7f\xff\r\n", 0,
	       "\"a\\\"b\\\\\\n\\t\\x01\\x7f\\xff\"\n");
	expect("*2\r\n$1\r\na\r\n$-1\r\n", 0, "1) \"a\"\n2) (nil)\n");
	expect("*2\r\n*2\r\n:1\r\n+x\r\n*0\r\n", 0,
	       "1) 1) (integer) 1\n   2) x\n2) (empty array)\n");
}

/* ten elements: numbers right-aligned, nested lines under them */
TEST(kv_reply_print_ten_elements)
{
	expect("*10\r\n*2\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n"
	       ":8\r\n:9\r\n:10\r\n*1\r\n-E\r\n",
	       0,
	       " 1) 1) (integer) 1\n    2) (integer) 2\n 2) (integer) 3\n"
	       " 3) (integer) 4\n 4) (integer) 5\n 5) (integer) 6\n"
	       " 6) (integer) 7\n 7) (integer) 8\n 8) (integer) 9\n"
	       " 9) (integer) 10\n10) 1) (error) E\n");
}

TEST(kv_reply_print_raw_as_redis_cli)
{
	expect("+OK\r\n", 1, "OK\n");
	expect("-ERR no\r\n", 1, "ERR no\n\n");
	expect(":42\r\n", 1, "42\n");
	expect("$-1\r\n", 1, "\n");
	expect("*0\r\n", 1, "\n");
	expect("$3\r\na\nb\r\n", 1, "a\nb\n");
	expect("*3\r\n$1\r\na\r\n$-1\r\n*2\r\n:1\r\n:2\r\n", 1,
	       "a\n\n1\n2\n");
}
