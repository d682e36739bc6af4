/*
 * runner.h - rift's test runner.
 *
 * TEST(name) { ... }            a test that runs once
 * TEST_T(name) { ... }          a data-path test: runs on the transport
 *                               chosen with --transport (tcp by default;
 *                               rdma inside the soft-RoCE lab)
 * TEST_TIMEOUT(name, secs)      same as TEST_T with its own time limit
 *
 * Every test runs in its own child process with a time limit; a crash, an
 * abort, a sanitizer report or the time limit fails that test only.
 * CHECK* print where and why, then fail the test.  SKIP("why") ends it as
 * skipped (exit status 77).  Output of passing tests is hidden unless -v.
 */
#ifndef RIFT_TESTS_RUNNER_H
#define RIFT_TESTS_RUNNER_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_test {
	const char *name;
	const char *file;
	void (*fn)(void);
	bool per_transport;
	int timeout_s;
	struct rt_test *next;
};

void rt_register(struct rt_test *t);
__attribute__((noreturn, format(printf, 3, 4))) void
rt_fail(const char *file, int line, const char *fmt, ...);
__attribute__((noreturn)) void rt_skip(const char *why);

/* "tcp" or "rdma": the transport this run tests. */
const char *rt_transport(void);
/* "rdmacm" or "tcp": the rdma.cm h_config() sets (--cm). */
const char *rt_cm(void);
/* Host address tests should listen on and connect to. */
const char *rt_host(void);
/* Build "<transport>://<host>:<port>" into a static buffer. */
const char *rt_url(int port);
/*
 * The whole text of a file of rift's source tree, NUL-terminated, which
 * the caller frees: rel ("docs/config.md") is found from the current
 * directory or from the test binary's (build/<flavour>/rift-tests).  NULL
 * if rel names nothing there (a directory, say); fails the test when the
 * source tree itself is not found.
 */
char *rt_read_source(const char *rel);
/* The path rt_read_source found for rel, or fails like it. */
const char *rt_source_path(const char *rel);

#define RT_DEFINE(name, per_t, secs)                                          \
	static void name(void);                                               \
	static struct rt_test rt_t_##name = { #name, __FILE__, name, per_t,   \
					      secs, NULL };                   \
	__attribute__((constructor)) static void rt_reg_##name(void)          \
	{                                                                     \
		rt_register(&rt_t_##name);                                    \
	}                                                                     \
	static void name(void)

#define TEST(name) RT_DEFINE(name, false, 0)
#define TEST_T(name) RT_DEFINE(name, true, 0)
#define TEST_TIMEOUT(name, secs) RT_DEFINE(name, true, secs)

#define SKIP(why) rt_skip(why)
#define FAIL(...) rt_fail(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond))                                                  \
			rt_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);\
	} while (0)
#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long rt_a = (long long)(a), rt_b = (long long)(b);       \
		if (rt_a != rt_b)                                             \
			rt_fail(__FILE__, __LINE__,                           \
				"CHECK_EQ(%s, %s): %lld != %lld", #a, #b,     \
				rt_a, rt_b);                                  \
	} while (0)
#define CHECK_STR(a, b)                                                       \
	do {                                                                  \
		const char *rt_a = (a), *rt_b = (b);                          \
		if (strcmp(rt_a, rt_b) != 0)                                  \
			rt_fail(__FILE__, __LINE__,                           \
				"CHECK_STR(%s, %s): \"%s\" != \"%s\"", #a,    \
				#b, rt_a, rt_b);                              \
	} while (0)
#define CHECK_CONTAINS(hay, needle)                                           \
	do {                                                                  \
		const char *rt_h = (hay), *rt_n = (needle);                   \
		if (!strstr(rt_h, rt_n))                                      \
			rt_fail(__FILE__, __LINE__,                           \
				"\"%s\" does not contain \"%s\"", rt_h, rt_n); \
	} while (0)

#endif
