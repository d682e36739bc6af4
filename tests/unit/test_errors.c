/* Error table, names, version, config validation. */
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "../runner.h"

TEST(errors_table_is_complete_and_distinct)
{
	static const int codes[] = {
#define XX(name, value, msg) RIFT_##name,
		RIFT_ERRNO_MAP(XX)
#undef XX
	};
	static const char *const names[] = {
#define XX(name, value, msg) "RIFT_" #name,
		RIFT_ERRNO_MAP(XX)
#undef XX
	};

	for (size_t i = 0; i < RIFT_ARRAY_SIZE(codes); i++) {
		CHECK(codes[i] < 0);
		CHECK_STR(rift_err_name(codes[i]), names[i]);
		CHECK(strcmp(rift_strerror(codes[i]), "unknown error") != 0 ||
		      codes[i] == RIFT_EUNKNOWN);
		for (size_t j = 0; j < i; j++)
			CHECK(codes[i] != codes[j]);
	}
	CHECK_STR(rift_strerror(RIFT_EPROTO), "protocol error");
	CHECK_STR(rift_err_name(RIFT_EAGAIN), "RIFT_EAGAIN");
	CHECK_STR(rift_err_name(-12345), "RIFT_EUNKNOWN");
	CHECK_STR(rift_strerror(-12345), "unknown error");
	CHECK_STR(rift_strerror(0), "success");
}

TEST(errors_from_errno)
{
	CHECK_EQ(rift__from_errno(ECONNREFUSED), RIFT_ECONNREFUSED);
	CHECK_EQ(rift__from_errno(EAGAIN), RIFT_EAGAIN);
	CHECK_EQ(rift__from_errno(ETIMEDOUT), RIFT_ETIMEDOUT);
	CHECK_EQ(rift__from_errno(0x7fff), RIFT_EUNKNOWN);
}

TEST(version_and_names)
{
	char v[32];

	snprintf(v, sizeof(v), "%d.%d.%d", RIFT_VERSION_MAJOR,
		 RIFT_VERSION_MINOR, RIFT_VERSION_PATCH);
	CHECK_STR(rift_version_string(), v);
	CHECK_EQ(rift_version() >> 16, RIFT_VERSION_MAJOR);
	CHECK_STR(rift_transport_name(RIFT_TRANSPORT_TCP), "tcp");
	CHECK_STR(rift_fallback_reason_str(RIFT_FALLBACK_NO_DEVICE),
		  "no RDMA device");
	CHECK_STR(rift_event_name(RIFT_EVENT_PATH_CHANGED), "path_changed");
}

TEST(config_validation_names_the_key)
{
	rift_config cfg;
	rift_ctx *ctx = NULL;

	rift_config_init(&cfg);
	cfg.keepalive_interval_ms = 5;
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(NULL), "keepalive_interval_ms");
	CHECK_CONTAINS(rift_ctx_last_error(NULL), "10..");

	rift_config_init(&cfg);
	cfg.keepalive_timeout_ms = cfg.keepalive_interval_ms;
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(NULL), "keepalive_timeout_ms");

	rift_config_init(&cfg);
	cfg.polling = (rift_polling)9;
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(NULL), "polling");

	rift_config_init(&cfg);
	cfg.size = 2;
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(NULL), "rift_config_init");
	CHECK(ctx == NULL);

	rift_config_init(&cfg);
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), 0);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}

static int fired;
static void on_timer(rift_timer *t, void *user)
{
	(void)user;
	if (++fired == 3)
		rift_timer_stop(t);
}

TEST(timers_and_destroy_with_live_objects)
{
	rift_ctx *ctx;
	rift_timer *t, *t2;
	uint64_t start;

	CHECK_EQ(rift_ctx_create(&ctx, NULL), 0);
	CHECK_EQ(rift_timer_create(ctx, on_timer, NULL, &t), 0);
	CHECK_EQ(rift_timer_create(ctx, on_timer, NULL, &t2), 0);
	CHECK_EQ(rift_timer_start(t, 5, 5), 0);
	CHECK_EQ(rift_timer_start(t2, 100000, 0), 0);
	CHECK(rift_ctx_timeout(ctx) >= 0 && rift_ctx_timeout(ctx) <= 5);
	start = rift__clock_us();
	while (fired < 3 && rift__clock_us() - start < 2000000)
		rift_ctx_run(ctx, 10);
	CHECK_EQ(fired, 3);
	CHECK(rift__clock_us() - start >= 14000);
	/* Destroying with live timers is refused and changes nothing. */
	CHECK_EQ(rift_ctx_destroy(ctx), RIFT_EBUSY);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "2 timers");
	rift_timer_destroy(t);
	rift_timer_destroy(t2);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}

static void *waker(void *arg)
{
	usleep(50000);
	rift_ctx_stop(arg);
	return NULL;
}

TEST(ctx_stop_from_another_thread_and_fd_readiness)
{
	rift_ctx *ctx;
	pthread_t th;
	struct pollfd pfd;

	CHECK_EQ(rift_ctx_create(&ctx, NULL), 0);
	CHECK(rift_ctx_fd(ctx) >= 0);
	pfd = (struct pollfd){ .fd = rift_ctx_fd(ctx), .events = POLLIN };
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	CHECK_EQ(rift_ctx_wake(ctx), 0);
	CHECK_EQ(poll(&pfd, 1, 0), 1); /* the one fd shows the wake-up */
	CHECK(rift_ctx_progress(ctx) >= 1);
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	CHECK_EQ(pthread_create(&th, NULL, waker, ctx), 0);
	CHECK_EQ(rift_ctx_run(ctx, 5000), 0); /* returns because stopped */
	pthread_join(th, NULL);
	CHECK_EQ(rift_ctx_run(ctx, 20), RIFT_ETIMEDOUT);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}

/* ---- every fallback reason is produced somewhere ---- */

static char *src_text;
static size_t src_len;

static int add_source(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	size_t plen = strlen(path);
	FILE *f;
	size_t n;

	RIFT_UNUSED(ftw);
	if (type != FTW_F || plen < 2 ||
	    (strcmp(path + plen - 2, ".c") && strcmp(path + plen - 2, ".h")))
		return 0;
	/* error.c writes the names of all reasons from the table */
	if (strstr(path, "/util/error.c"))
		return 0;
	src_text = realloc(src_text, src_len + (size_t)st->st_size + 2);
	CHECK(src_text != NULL);
	f = fopen(path, "r");
	CHECK(f != NULL);
	n = fread(src_text + src_len, 1, (size_t)st->st_size, f);
	fclose(f);
	src_len += n;
	src_text[src_len++] = '\n';
	src_text[src_len] = '\0';
	return 0;
}

/*
 * A reason that no code path records is a promise the library does not
 * keep (NOT_BUILT was one: every build has the verbs backend): each
 * reason but NONE must be named by the library outside the table.
 */
TEST(every_fallback_reason_is_produced)
{
	static const char *const names[] = {
#define XX(name, msg) "RIFT_FALLBACK_" #name,
		RIFT_FALLBACK_MAP(XX)
#undef XX
	};

	CHECK_EQ(nftw(rt_source_path("src"), add_source, 16, FTW_PHYS), 0);
	CHECK(src_len > 100000);
	for (size_t i = 1; i < RIFT_ARRAY_SIZE(names); i++) {
		char pat[64];
		const char *at = src_text;
		bool found = false;

		snprintf(pat, sizeof(pat), "%s", names[i]);
		/* a use, not a longer name that starts the same */
		while (!found && (at = strstr(at, pat))) {
			char next = at[strlen(pat)];

			found = !(next == '_' || (next >= 'A' && next <= 'Z'));
			at += strlen(pat);
		}
		if (!found)
			FAIL("%s is never recorded by the library", names[i]);
	}
	free(src_text);
}
