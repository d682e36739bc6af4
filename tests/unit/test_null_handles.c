/*
 * Every public call of include/rift.h on a NULL handle (and NULL where a
 * pointer is asked for) returns RIFT_EINVAL, or for a call that returns
 * no error code the neutral value its contract names, instead of
 * crashing.  One entry per function, in the header's order; a second test
 * reads the header and fails when a function there has no entry here, so
 * a new public call cannot come without its NULL check.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rift.h"
#include "../runner.h"

struct api_check {
	const char *name;
	void (*check)(void);
};

#define NULL_CHECK(fn) static void null_##fn(void)

NULL_CHECK(rift_version)
{
	CHECK(rift_version() != 0);
}
NULL_CHECK(rift_version_string)
{
	CHECK(rift_version_string() != NULL);
}
NULL_CHECK(rift_strerror)
{
	CHECK(rift_strerror(123456) != NULL);
}
NULL_CHECK(rift_err_name)
{
	CHECK_STR(rift_err_name(-1234), "RIFT_EUNKNOWN");
}
NULL_CHECK(rift_transport_name)
{
	CHECK(rift_transport_name((rift_transport)77) != NULL);
}
NULL_CHECK(rift_fallback_reason_str)
{
	CHECK(rift_fallback_reason_str((rift_fallback_reason)-1) != NULL);
}
NULL_CHECK(rift_path_down_reason_str)
{
	CHECK_STR(rift_path_down_reason_str((rift_path_down_reason)-1),
		  "unknown reason");
}
NULL_CHECK(rift_log_level_name)
{
	CHECK_STR(rift_log_level_name((rift_log_level)-1), "unknown");
	CHECK_STR(rift_log_level_name((rift_log_level)5), "unknown");
}
NULL_CHECK(rift__config_init)
{
	rift__config_init(NULL, sizeof(rift_config));
}
NULL_CHECK(rift_config_check)
{
	CHECK_EQ(rift_config_check(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_config_load)
{
	CHECK_EQ(rift_config_load(NULL, NULL, NULL, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_config_env)
{
	CHECK_EQ(rift_config_env(NULL, NULL, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_config_dump)
{
	CHECK_EQ(rift_config_dump(NULL, NULL, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_gid_type_name)
{
	CHECK(rift_gid_type_name((rift_gid_type)9) != NULL);
}
NULL_CHECK(rift_devices)
{
	CHECK(rift_devices(NULL, 0, NULL, 0) >= 0);
}
NULL_CHECK(rift_config_memlock_need)
{
	CHECK(rift_config_memlock_need(NULL, NULL) > 0); /* the defaults' */
}
NULL_CHECK(rift_ctx_create)
{
	CHECK_EQ(rift_ctx_create(NULL, NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_ctx_destroy)
{
	CHECK_EQ(rift_ctx_destroy(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_ctx_fd)
{
	CHECK_EQ(rift_ctx_fd(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_ctx_progress)
{
	CHECK_EQ(rift_ctx_progress(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_ctx_run)
{
	CHECK_EQ(rift_ctx_run(NULL, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_ctx_run_mode)
{
	CHECK_EQ(rift_ctx_run_mode(NULL, RIFT_RUN_NOWAIT, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_ctx_stop)
{
	rift_ctx_stop(NULL);
}
NULL_CHECK(rift_ctx_wake)
{
	CHECK_EQ(rift_ctx_wake(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_ctx_timeout)
{
	CHECK_EQ(rift_ctx_timeout(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_ctx_last_error)
{
	CHECK(rift_ctx_last_error(NULL) != NULL);
}
NULL_CHECK(rift__ctx_stats_init)
{
	rift__ctx_stats_init(NULL, sizeof(rift_ctx_stats));
}
NULL_CHECK(rift_ctx_stats_get)
{
	rift_ctx_stats st;

	rift_ctx_stats_init(&st);
	CHECK_EQ(rift_ctx_stats_get(NULL, &st), RIFT_EINVAL);
	CHECK_EQ(rift_ctx_stats_get(NULL, NULL), RIFT_EINVAL);
}

static void timer_cb(rift_timer *t, void *user)
{
	(void)t, (void)user;
}

NULL_CHECK(rift_timer_create)
{
	rift_timer *t = (rift_timer *)&t;

	CHECK_EQ(rift_timer_create(NULL, timer_cb, NULL, &t), RIFT_EINVAL);
	CHECK(t == NULL);
	CHECK_EQ(rift_timer_create(NULL, timer_cb, NULL, NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_timer_start)
{
	CHECK_EQ(rift_timer_start(NULL, 1, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_timer_stop)
{
	rift_timer_stop(NULL);
}
NULL_CHECK(rift_timer_destroy)
{
	rift_timer_destroy(NULL);
}
NULL_CHECK(rift_event_name)
{
	CHECK(rift_event_name((rift_event_type)0) != NULL);
}
NULL_CHECK(rift_connect)
{
	rift_conn *c = (rift_conn *)&c;

	CHECK_EQ(rift_connect(NULL, "tcp://127.0.0.1:1", NULL, NULL, &c),
		 RIFT_EINVAL);
	CHECK(c == NULL);
	CHECK_EQ(rift_connect(NULL, NULL, NULL, NULL, NULL), RIFT_EINVAL);
}

static void on_accept(rift_listener *l, rift_conn *conn)
{
	(void)l, (void)conn;
}

NULL_CHECK(rift_listen)
{
	rift_listener *l = (rift_listener *)&l;

	CHECK_EQ(rift_listen(NULL, "tcp://127.0.0.1:0", NULL, NULL, on_accept,
			     &l),
		 RIFT_EINVAL);
	CHECK(l == NULL);
	CHECK_EQ(rift_listen(NULL, NULL, NULL, NULL, NULL, NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_listener_port)
{
	CHECK_EQ(rift_listener_port(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_listener_user)
{
	CHECK(rift_listener_user(NULL) == NULL);
}
NULL_CHECK(rift_listener_close)
{
	rift_listener_close(NULL, NULL);
}
NULL_CHECK(rift_conn_send)
{
	CHECK_EQ(rift_conn_send(NULL, "x", 1), RIFT_EINVAL);
}
NULL_CHECK(rift_conn_send_cb)
{
	CHECK_EQ(rift_conn_send_cb(NULL, "x", 1, NULL, NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_conn_sendv)
{
	struct iovec v = { "x", 1 };

	CHECK_EQ(rift_conn_sendv(NULL, &v, 1, NULL, NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_buf_alloc)
{
	CHECK(rift_buf_alloc(NULL, 1) == NULL);
}
NULL_CHECK(rift_buf_free)
{
	char x;

	rift_buf_free(NULL, NULL);
	rift_buf_free(NULL, &x);
}
NULL_CHECK(rift_conn_send_buf)
{
	CHECK_EQ(rift_conn_send_buf(NULL, NULL, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_mem_reg)
{
	rift_mem *m = (rift_mem *)1;
	char x;

	CHECK_EQ(rift_mem_reg(NULL, &x, 1, RIFT_MEM_READ, &m), RIFT_EINVAL);
	CHECK(m == NULL);
	CHECK_EQ(rift_mem_reg(NULL, &x, 1, RIFT_MEM_READ, NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_mem_dereg)
{
	CHECK_EQ(rift_mem_dereg(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_mem_addr)
{
	CHECK(rift_mem_addr(NULL) == NULL);
}
NULL_CHECK(rift_mem_len)
{
	CHECK_EQ(rift_mem_len(NULL), 0);
}
NULL_CHECK(rift_mem_export)
{
	uint8_t t[RIFT_TOKEN_MAX_LEN];
	size_t tl = sizeof(t);

	CHECK_EQ(rift_mem_export(NULL, NULL, 0, 1, RIFT_MEM_READ, t, &tl),
		 RIFT_EINVAL);
}
NULL_CHECK(rift_mem_revoke)
{
	CHECK_EQ(rift_mem_revoke(NULL, "x", 1), RIFT_EINVAL);
}
static void null_rma_cb(rift_conn *c, void *u, int st, size_t b)
{
	(void)c, (void)u, (void)st, (void)b;
	abort();
}
NULL_CHECK(rift_conn_read)
{
	CHECK_EQ(rift_conn_read(NULL, NULL, 0, "x", 1, 0, 1, null_rma_cb, NULL),
		 RIFT_EINVAL);
}
NULL_CHECK(rift_conn_write)
{
	CHECK_EQ(rift_conn_write(NULL, NULL, 0, "x", 1, 0, 1, null_rma_cb,
				 NULL),
		 RIFT_EINVAL);
}
NULL_CHECK(rift_conn_write_notify)
{
	CHECK_EQ(rift_conn_write_notify(NULL, NULL, 0, "x", 1, 0, 1, 7,
					null_rma_cb, NULL),
		 RIFT_EINVAL);
}
NULL_CHECK(rift_conn_recv_stop)
{
	CHECK_EQ(rift_conn_recv_stop(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_conn_recv_start)
{
	CHECK_EQ(rift_conn_recv_start(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_conn_close)
{
	rift_conn_close(NULL, NULL);
}
NULL_CHECK(rift_conn_abort)
{
	rift_conn_abort(NULL, NULL);
}
NULL_CHECK(rift_conn_user)
{
	CHECK(rift_conn_user(NULL) == NULL);
}
NULL_CHECK(rift_conn_set_user)
{
	rift_conn_set_user(NULL, NULL);
}
NULL_CHECK(rift_conn_set_callbacks)
{
	rift_conn_set_callbacks(NULL, NULL);
}
NULL_CHECK(rift_conn_ctx)
{
	CHECK(rift_conn_ctx(NULL) == NULL);
}
NULL_CHECK(rift_conn_transport)
{
	CHECK_EQ(rift_conn_transport(NULL), RIFT_TRANSPORT_NONE);
}
NULL_CHECK(rift_conn_fallback_reason)
{
	CHECK_EQ(rift_conn_fallback_reason(NULL), RIFT_FALLBACK_NONE);
}
NULL_CHECK(rift_conn_last_error)
{
	CHECK_STR(rift_conn_last_error(NULL), "");
}
NULL_CHECK(rift__conn_stats_init)
{
	rift__conn_stats_init(NULL, sizeof(rift_conn_stats));
}
NULL_CHECK(rift_conn_stats_get)
{
	rift_conn_stats st;

	rift_conn_stats_init(&st);
	CHECK_EQ(rift_conn_stats_get(NULL, &st), RIFT_EINVAL);
	CHECK_EQ(rift_conn_stats_get(NULL, NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_path_state_name)
{
	CHECK_STR(rift_path_state_name((rift_path_state)0), "?");
}
NULL_CHECK(rift__conn_paths)
{
	rift_path_info pi;

	CHECK_EQ(rift_conn_paths(NULL, &pi, 1), RIFT_EINVAL);
	CHECK_EQ(rift_conn_paths(NULL, NULL, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_metrics_latency)
{
	CHECK_EQ(rift_metrics_latency(NULL, NULL, RIFT_LATENCY_ACK, 0.5, NULL,
				      NULL),
		 RIFT_EINVAL);
}
NULL_CHECK(rift_metrics_prometheus)
{
	CHECK_EQ(rift_metrics_prometheus(NULL, NULL, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_metrics_info)
{
	CHECK_EQ(rift_metrics_info(NULL, NULL, 0), RIFT_EINVAL);
}
NULL_CHECK(rift_msg_data)
{
	CHECK(rift_msg_data(NULL) == NULL);
}
NULL_CHECK(rift_msg_len)
{
	CHECK_EQ(rift_msg_len(NULL), 0);
}
NULL_CHECK(rift_msg_seq)
{
	CHECK_EQ(rift_msg_seq(NULL), 0);
}
NULL_CHECK(rift_msg_retain)
{
	CHECK(rift_msg_retain(NULL) == NULL);
}
NULL_CHECK(rift_msg_release)
{
	rift_msg_release(NULL);
}

static void on_stream_accept(rift_stream_listener *l, rift_stream *st)
{
	(void)l, (void)st;
}

NULL_CHECK(rift_stream_connect)
{
	rift_stream *st = (rift_stream *)&st;

	CHECK_EQ(rift_stream_connect(NULL, "valkey-rdma://127.0.0.1:1", NULL,
				     NULL, &st),
		 RIFT_EINVAL);
	CHECK(st == NULL);
	CHECK_EQ(rift_stream_connect(NULL, NULL, NULL, NULL, NULL),
		 RIFT_EINVAL);
}
NULL_CHECK(rift_stream_listen)
{
	rift_stream_listener *l = (rift_stream_listener *)&l;

	CHECK_EQ(rift_stream_listen(NULL, "valkey-rdma://127.0.0.1:0", NULL,
				    NULL, on_stream_accept, &l),
		 RIFT_EINVAL);
	CHECK(l == NULL);
	CHECK_EQ(rift_stream_listen(NULL, NULL, NULL, NULL, NULL, NULL),
		 RIFT_EINVAL);
}
NULL_CHECK(rift_stream_listener_port)
{
	CHECK_EQ(rift_stream_listener_port(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_stream_listener_user)
{
	CHECK(rift_stream_listener_user(NULL) == NULL);
}
NULL_CHECK(rift_stream_listener_close)
{
	rift_stream_listener_close(NULL, NULL);
}
NULL_CHECK(rift_stream_write)
{
	CHECK_EQ(rift_stream_write(NULL, "x", 1), RIFT_EINVAL);
}
NULL_CHECK(rift_stream_read_stop)
{
	CHECK_EQ(rift_stream_read_stop(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_stream_read_start)
{
	CHECK_EQ(rift_stream_read_start(NULL), RIFT_EINVAL);
}
NULL_CHECK(rift_stream_close)
{
	rift_stream_close(NULL, NULL);
}
NULL_CHECK(rift_stream_user)
{
	CHECK(rift_stream_user(NULL) == NULL);
}
NULL_CHECK(rift_stream_set_user)
{
	rift_stream_set_user(NULL, NULL);
}
NULL_CHECK(rift_stream_set_callbacks)
{
	rift_stream_set_callbacks(NULL, NULL);
}
NULL_CHECK(rift_stream_ctx)
{
	CHECK(rift_stream_ctx(NULL) == NULL);
}
NULL_CHECK(rift_stream_peer)
{
	CHECK_STR(rift_stream_peer(NULL), "");
}
NULL_CHECK(rift_stream_last_error)
{
	CHECK_STR(rift_stream_last_error(NULL), "");
}
NULL_CHECK(rift__stream_stats_init)
{
	rift__stream_stats_init(NULL, 0);
}
NULL_CHECK(rift_stream_stats_get)
{
	rift_stream_stats st;

	rift_stream_stats_init(&st);
	CHECK_EQ(rift_stream_stats_get(NULL, &st), RIFT_EINVAL);
	CHECK_EQ(rift_stream_stats_get(NULL, NULL), RIFT_EINVAL);
}

#define ENTRY(fn) { #fn, null_##fn }
static const struct api_check api[] = {
	ENTRY(rift_version),
	ENTRY(rift_version_string),
	ENTRY(rift_strerror),
	ENTRY(rift_err_name),
	ENTRY(rift_transport_name),
	ENTRY(rift_fallback_reason_str),
	ENTRY(rift_path_down_reason_str),
	ENTRY(rift_log_level_name),
	ENTRY(rift__config_init),
	ENTRY(rift_config_check),
	ENTRY(rift_config_load),
	ENTRY(rift_config_env),
	ENTRY(rift_config_dump),
	ENTRY(rift_gid_type_name),
	ENTRY(rift_devices),
	ENTRY(rift_config_memlock_need),
	ENTRY(rift_ctx_create),
	ENTRY(rift_ctx_destroy),
	ENTRY(rift_ctx_fd),
	ENTRY(rift_ctx_progress),
	ENTRY(rift_ctx_run),
	ENTRY(rift_ctx_run_mode),
	ENTRY(rift_ctx_stop),
	ENTRY(rift_ctx_wake),
	ENTRY(rift_ctx_timeout),
	ENTRY(rift_ctx_last_error),
	ENTRY(rift__ctx_stats_init),
	ENTRY(rift_ctx_stats_get),
	ENTRY(rift_timer_create),
	ENTRY(rift_timer_start),
	ENTRY(rift_timer_stop),
	ENTRY(rift_timer_destroy),
	ENTRY(rift_event_name),
	ENTRY(rift_connect),
	ENTRY(rift_listen),
	ENTRY(rift_listener_port),
	ENTRY(rift_listener_user),
	ENTRY(rift_listener_close),
	ENTRY(rift_conn_send),
	ENTRY(rift_conn_send_cb),
	ENTRY(rift_conn_sendv),
	ENTRY(rift_buf_alloc),
	ENTRY(rift_buf_free),
	ENTRY(rift_conn_send_buf),
	ENTRY(rift_conn_recv_stop),
	ENTRY(rift_conn_recv_start),
	ENTRY(rift_conn_close),
	ENTRY(rift_conn_abort),
	ENTRY(rift_conn_user),
	ENTRY(rift_conn_set_user),
	ENTRY(rift_conn_set_callbacks),
	ENTRY(rift_conn_ctx),
	ENTRY(rift_conn_transport),
	ENTRY(rift_conn_fallback_reason),
	ENTRY(rift_conn_last_error),
	ENTRY(rift__conn_stats_init),
	ENTRY(rift_conn_stats_get),
	ENTRY(rift_path_state_name),
	ENTRY(rift__conn_paths),
	ENTRY(rift_metrics_latency),
	ENTRY(rift_metrics_prometheus),
	ENTRY(rift_metrics_info),
	ENTRY(rift_msg_data),
	ENTRY(rift_msg_len),
	ENTRY(rift_msg_seq),
	ENTRY(rift_msg_retain),
	ENTRY(rift_msg_release),
	ENTRY(rift_mem_reg),
	ENTRY(rift_mem_dereg),
	ENTRY(rift_mem_addr),
	ENTRY(rift_mem_len),
	ENTRY(rift_mem_export),
	ENTRY(rift_mem_revoke),
	ENTRY(rift_conn_read),
	ENTRY(rift_conn_write),
	ENTRY(rift_conn_write_notify),
	ENTRY(rift_stream_connect),
	ENTRY(rift_stream_listen),
	ENTRY(rift_stream_listener_port),
	ENTRY(rift_stream_listener_user),
	ENTRY(rift_stream_listener_close),
	ENTRY(rift_stream_write),
	ENTRY(rift_stream_read_stop),
	ENTRY(rift_stream_read_start),
	ENTRY(rift_stream_close),
	ENTRY(rift_stream_user),
	ENTRY(rift_stream_set_user),
	ENTRY(rift_stream_set_callbacks),
	ENTRY(rift_stream_ctx),
	ENTRY(rift_stream_peer),
	ENTRY(rift_stream_last_error),
	ENTRY(rift__stream_stats_init),
	ENTRY(rift_stream_stats_get),
};

TEST(every_public_call_takes_a_null_handle)
{
	for (size_t i = 0; i < sizeof(api) / sizeof(api[0]); i++) {
		/* A crash shows the last name printed. */
		printf("%s(NULL ...)\n", api[i].name);
		fflush(stdout);
		api[i].check();
	}
}

/* include/rift.h of this tree: from the working directory (make runs the
 * tests from the top), else next to the test binary (build/FLAVOUR/). */
static FILE *open_header(void)
{
	char exe[4096], path[4200];
	ssize_t n;
	char *slash;
	FILE *f = fopen("include/rift.h", "r");

	if (f)
		return f;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/../../include/rift.h", exe);
	return fopen(path, "r");
}

/*
 * Each function the header declares (a line at the top level that starts
 * with its return type; comments, typedefs and struct members start
 * otherwise) has its entry above, and each entry names one.
 */
TEST(every_function_of_rift_h_has_a_null_check)
{
	FILE *f = open_header();
	regex_t re;
	regmatch_t m[2];
	char line[512], name[128];
	bool seen[sizeof(api) / sizeof(api[0])] = { false };
	int found = 0, missing = 0;

	if (!f)
		FAIL("include/rift.h not found from here or the test binary");
	CHECK_EQ(regcomp(&re, "^[a-z][a-z_0-9 ]*[ *](rift_[a-z_0-9]+)\\(",
			 REG_EXTENDED),
		 0);
	while (fgets(line, sizeof(line), f)) {
		size_t k, len;

		if (!strncmp(line, "typedef", 7) ||
		    regexec(&re, line, 2, m, 0) != 0)
			continue;
		len = (size_t)(m[1].rm_eo - m[1].rm_so);
		snprintf(name, sizeof(name), "%.*s", (int)len,
			 line + m[1].rm_so);
		found++;
		for (k = 0; k < sizeof(api) / sizeof(api[0]); k++)
			if (!strcmp(api[k].name, name))
				break;
		if (k == sizeof(api) / sizeof(api[0])) {
			printf("%s: no NULL check in %s\n", name, __FILE__);
			missing++;
		} else {
			seen[k] = true;
		}
	}
	regfree(&re);
	fclose(f);
	for (size_t k = 0; k < sizeof(api) / sizeof(api[0]); k++)
		if (!seen[k]) {
			printf("%s: checked here, not declared in rift.h\n",
			       api[k].name);
			missing++;
		}
	CHECK(found >= 50); /* the pattern still reads the header */
	CHECK_EQ(missing, 0);
}

static int closed;

static void count_close(rift_conn *conn)
{
	(void)conn;
	closed++;
}

/* NULL where a call on a live handle asks for a pointer. */
TEST(null_arguments_beside_a_live_handle)
{
	rift_ctx *ctx = NULL;
	rift_conn *c = (rift_conn *)&c;
	rift_timer *t = (rift_timer *)&t;
	rift_listener *l = (rift_listener *)&l;

	CHECK_EQ(rift_ctx_create(&ctx, NULL), 0);
	CHECK_EQ(rift_ctx_stats_get(ctx, NULL), RIFT_EINVAL);
	CHECK_EQ(rift_timer_create(ctx, NULL, NULL, &t), RIFT_EINVAL);
	CHECK(t == NULL);
	CHECK_EQ(rift_listen(ctx, NULL, NULL, NULL, on_accept, &l),
		 RIFT_EINVAL);
	CHECK(l == NULL);
	CHECK_EQ(rift_connect(ctx, NULL, NULL, NULL, &c), RIFT_EINVAL);
	CHECK(c == NULL);
	CHECK_EQ(rift_connect(ctx, "tcp://127.0.0.1:1", NULL, NULL, NULL),
		 RIFT_EINVAL);
	/* A connection (that will not connect) with no callbacks at all. */
	CHECK_EQ(rift_connect(ctx, "tcp://127.0.0.1:1", NULL, NULL, &c), 0);
	CHECK_EQ(rift_conn_send(c, NULL, 5), RIFT_EINVAL);
	CHECK_EQ(rift_conn_send_buf(c, NULL, 5), RIFT_EINVAL);
	CHECK_EQ(rift_conn_stats_get(c, NULL), RIFT_EINVAL);
	rift_conn_set_callbacks(c, NULL);
	rift_buf_free(ctx, NULL);
	CHECK_EQ(rift_metrics_latency(ctx, NULL, RIFT_LATENCY_ACK, 0.5, NULL,
				      NULL),
		 0);
	rift_conn_close(c, count_close);
	for (int i = 0; i < 200 && !closed; i++)
		rift_ctx_run(ctx, 5);
	CHECK_EQ(closed, 1);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}
