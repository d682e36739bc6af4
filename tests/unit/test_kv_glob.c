/* rift-kv's glob patterns (KEYS, CONFIG GET): Redis's stringmatchlen. */
#include "../../examples/rift-kv/glob.h"
#include "../runner.h"

static int m(const char *pat, const char *str)
{
	return kv_glob_match(pat, strlen(pat), str, strlen(str), 0);
}

TEST(kv_glob_star_and_question)
{
	CHECK_EQ(m("*", ""), 1);
	CHECK_EQ(m("*", "anything"), 1);
	CHECK_EQ(m("", ""), 1);
	CHECK_EQ(m("", "a"), 0);
	CHECK_EQ(m("h?llo", "hello"), 1);
	CHECK_EQ(m("h?llo", "hllo"), 0);
	CHECK_EQ(m("h*llo", "hllo"), 1);
	CHECK_EQ(m("h*llo", "heeeello"), 1);
	CHECK_EQ(m("h*llo", "hello!"), 0);
	CHECK_EQ(m("*a*b", "xaxxbyb"), 1); /* the last b, after backtracking */
	CHECK_EQ(m("*a*b", "xaxxbyc"), 0);
	CHECK_EQ(m("a**b", "ab"), 1);
	CHECK_EQ(m("user:*:name", "user:42:name"), 1);
	CHECK_EQ(m("user:*:name", "user:42:nam"), 0);
}

TEST(kv_glob_classes)
{
	CHECK_EQ(m("h[ae]llo", "hallo"), 1);
	CHECK_EQ(m("h[ae]llo", "hillo"), 0);
	CHECK_EQ(m("h[^e]llo", "hallo"), 1);
	CHECK_EQ(m("h[^e]llo", "hello"), 0);
	CHECK_EQ(m("h[a-c]llo", "hbllo"), 1);
	CHECK_EQ(m("h[a-c]llo", "hdllo"), 0);
	CHECK_EQ(m("h[c-a]llo", "hbllo"), 1); /* reversed range, as Redis */
	CHECK_EQ(m("[\\]]", "]"), 1);         /* escaped ] in a class */
	CHECK_EQ(m("[]", "]"), 0);            /* an empty class */
	CHECK_EQ(m("[a-]", "]"), 1);          /* Redis reads a..']' */
	CHECK_EQ(m("[ab", "b"), 1);           /* unterminated: ends there */
	CHECK_EQ(m("[", "["), 0);
	CHECK_EQ(m("x[", "x"), 0);
}

TEST(kv_glob_escapes_and_case)
{
	CHECK_EQ(m("h\\*llo", "h*llo"), 1);
	CHECK_EQ(m("h\\*llo", "hello"), 0);
	CHECK_EQ(m("\\?", "?"), 1);
	CHECK_EQ(m("\\?", "a"), 0);
	CHECK_EQ(m("a\\", "a\\"), 1); /* a trailing backslash is itself */
	CHECK_EQ(m("h\\[e]llo", "h[e]llo"), 1);
	CHECK_EQ(kv_glob_match("SAVE", 4, "save", 4, 1), 1);
	CHECK_EQ(kv_glob_match("SAVE", 4, "save", 4, 0), 0);
	CHECK_EQ(kv_glob_match("[A-C]x", 6, "bx", 2, 1), 1);
	/* binary-safe: a NUL inside both */
	CHECK_EQ(kv_glob_match("a\0*", 3, "a\0bc", 4, 0), 1);
	CHECK_EQ(kv_glob_match("a\0*", 3, "a\1bc", 4, 0), 0);
}

TEST(kv_glob_no_exponential_backtracking)
{
	/* Redis's recursive matcher takes ages on this; ours is
	 * pattern x string steps at most. */
	char pat[200], str[20000];
	size_t n = 0;

	for (int i = 0; i < 60; i++) {
		pat[n++] = '*';
		pat[n++] = 'a';
	}
	pat[n++] = 'b';
	memset(str, 'a', sizeof(str));
	CHECK_EQ(kv_glob_match(pat, n, str, sizeof(str), 0), 0);
}
