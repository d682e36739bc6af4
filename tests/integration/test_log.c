/*
 * Logging (rift.h, "Logging"): a context's lines go to its log_cb, or to
 * stderr as "rift[PID] SECONDS LEVEL: MESSAGE", up to its log_level; the
 * life of a connection (connected, path down, re-attach attempts,
 * re-attached, fallback, refusals, failures) shows at info and warn, the
 * per-frame chatter only at debug.  RIFT_LOG sets the level of programs
 * that do not, and a bad level is refused wherever it is given.  Lines of
 * no context go to stderr at RIFT_LOG's level.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "harness.h"

/* ---- what a callback collected ---- */

#define MAX_LINES 512

struct lines {
	int n;
	int level[MAX_LINES];
	char text[MAX_LINES][RIFT_LOG_LINE];
};

static void collect(void *user, rift_log_level level, const char *msg)
{
	struct lines *l = user;

	CHECK(msg != NULL);
	CHECK(strlen(msg) < RIFT_LOG_LINE);
	CHECK(!strchr(msg, '\n'));
	if (l->n == MAX_LINES)
		return;
	l->level[l->n] = (int)level;
	snprintf(l->text[l->n], sizeof(l->text[0]), "%s", msg);
	l->n++;
}

/* Lines of that level (any level: -1) containing needle. */
static int count(const struct lines *l, int level, const char *needle)
{
	int n = 0;

	for (int i = 0; i < l->n; i++)
		if ((level < 0 || l->level[i] == level) &&
		    strstr(l->text[i], needle))
			n++;
	return n;
}

static void show(const struct lines *l)
{
	for (int i = 0; i < l->n; i++)
		printf("  [%s] %s\n", rift_log_level_name(l->level[i]),
		       l->text[i]);
}

static void expect(const struct lines *l, int level, const char *needle)
{
	if (count(l, level, needle) == 0) {
		show(l);
		FAIL("no %s line containing \"%s\" among the %d above",
		     rift_log_level_name(level), needle, l->n);
	}
}

static rift_config log_config(struct lines *l, rift_log_level level)
{
	rift_config cfg = h_config();

	cfg.log_level = level;
	cfg.log_cb = collect;
	cfg.log_user = l;
	return cfg;
}

/* ---- stderr, caught in a file ---- */

struct caught {
	FILE *f;
	int saved;
};

static void catch_stderr(struct caught *c)
{
	fflush(stderr);
	c->f = tmpfile();
	CHECK(c->f != NULL);
	c->saved = dup(STDERR_FILENO);
	CHECK(c->saved >= 0);
	CHECK(dup2(fileno(c->f), STDERR_FILENO) >= 0);
}

/* Give stderr back; what was written meanwhile, in a static buffer. */
static const char *release_stderr(struct caught *c)
{
	static char text[65536];
	size_t n;

	fflush(stderr);
	CHECK(dup2(c->saved, STDERR_FILENO) >= 0);
	close(c->saved);
	rewind(c->f);
	n = fread(text, 1, sizeof(text) - 1, c->f);
	text[n] = '\0';
	fclose(c->f);
	return text;
}

/*
 * A connection of ctx to a port nobody listens on: INFO for each attempt
 * that failed, ERROR for the connection.  Runs until ERROR, closes it and
 * destroys ctx (h_teardown's leak check).
 */
static void refused_connect(rift_ctx *ctx)
{
	struct side cli = { 0 };
	rift_conn *c = NULL;
	char url[64];

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", h_free_port());
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	CHECK(h_wait(ctx, &cli.errors, 5000));
	h_teardown(ctx, NULL, &c, 1);
}

static rift_config one_attempt(void)
{
	rift_config cfg;

	rift_config_init(&cfg);
	cfg.retries = 0;
	return cfg;
}

/* ---- levels filter the life of a connection ---- */

/*
 * A TCP (or, in the lab, RDMA) session at level: connected, its path cut
 * on the client's side, re-attached.  Both sides log through one
 * callback; returns after both saw PATH_CHANGED.
 */
static void cut_and_reattach(rift_log_level level, struct lines *l)
{
	rift_config cfg = log_config(l, level);
	struct side srv = { .echo = true }, cli = { 0 };
	rift_listener *lst;
	rift_conn *c, *conns[2];
	rift_ctx *ctx;

	ctx = h_ctx(&cfg);
	lst = h_listen(ctx, &srv);
	c = h_connect(ctx, rift_listener_port(lst), &cli);
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	CHECK_EQ(rift_conn_send(c, "ping", 4), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 1, 5000));
	CHECK_EQ(rift__conn_cut(c), 0);
	CHECK(h_wait(ctx, &cli.path_changed, 5000));
	CHECK(h_wait(ctx, &srv.path_changed, 5000));
	CHECK_EQ(rift_conn_send(c, "pong", 4), 0);
	CHECK(h_wait_u64(ctx, &cli.recv_count, 2, 5000));
	CHECK_EQ(cli.disconnected + srv.disconnected, 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, lst, conns, 2);
}

TEST_T(log_levels_filter_a_path_cut_and_reattach)
{
	static struct lines info, warn, debug;

	cut_and_reattach(RIFT_LOG_INFO, &info);
	printf("at info:\n");
	show(&info);
	/* the session's life, both sides */
	expect(&info, RIFT_LOG_INFO, "connected to");
	expect(&info, RIFT_LOG_INFO, "accepted from");
	expect(&info, RIFT_LOG_WARN, "path down");
	expect(&info, RIFT_LOG_INFO, "re-attaching to");
	expect(&info, RIFT_LOG_INFO, "re-attached on");
	/* both sides re-attached: the client and the server */
	CHECK(count(&info, RIFT_LOG_INFO, "re-attached on") >= 2);
	/* nothing from debug: no frames, no attempt of the first connect */
	CHECK_EQ(count(&info, RIFT_LOG_DEBUG, ""), 0);
	CHECK_EQ(count(&info, -1, ": frame "), 0);
	CHECK_EQ(count(&info, -1, ": connecting to "), 0);

	cut_and_reattach(RIFT_LOG_WARN, &warn);
	printf("at warn:\n");
	show(&warn);
	expect(&warn, RIFT_LOG_WARN, "path down");
	for (int i = 0; i < warn.n; i++)
		CHECK(warn.level[i] <= RIFT_LOG_WARN);
	CHECK_EQ(count(&warn, -1, "re-attached on"), 0);

	/* debug shows what info left out, and the info lines too */
	cut_and_reattach(RIFT_LOG_DEBUG, &debug);
	expect(&debug, RIFT_LOG_DEBUG, ": frame ");
	expect(&debug, RIFT_LOG_DEBUG, ": connecting to ");
	expect(&debug, RIFT_LOG_INFO, "re-attached on");
	expect(&debug, RIFT_LOG_WARN, "path down");
}

TEST(log_off_logs_nothing)
{
	static struct lines l;
	rift_config cfg = log_config(&l, RIFT_LOG_OFF);
	rift_ctx *ctx;

	cfg.retries = 0;
	ctx = h_ctx(&cfg);
	refused_connect(ctx);
	CHECK_EQ(l.n, 0);
}

/* ---- what else info, warn and error tell ---- */

TEST(log_refused_connect_is_info_then_error)
{
	static struct lines l;
	rift_config cfg = log_config(&l, RIFT_LOG_INFO);
	rift_ctx *ctx;

	cfg.retries = 1;
	cfg.retry_delay_ms = 1;
	ctx = h_ctx(&cfg);
	refused_connect(ctx);
	show(&l);
	expect(&l, RIFT_LOG_INFO, "connect attempt 1 failed");
	expect(&l, RIFT_LOG_INFO, "connect attempt 2 failed");
	expect(&l, RIFT_LOG_ERROR, "connection failed: RIFT_ECONNREFUSED");
	CHECK_EQ(count(&l, RIFT_LOG_ERROR, ""), 1);
}

TEST(log_auto_fallback_says_why)
{
	static struct lines l;
	rift_config cfg = log_config(&l, RIFT_LOG_INFO);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *lst;
	rift_conn *c = NULL, *conns[2];
	rift_ctx *ctx = h_ctx(&cfg);
	const char *why;
	char url[128];

	lst = h_listen(ctx, &srv);
	snprintf(url, sizeof(url), "auto://127.0.0.1:%d",
		 rift_listener_port(lst));
	CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
	cli.conn = c;
	h_connected(ctx, &cli);
	if (rift_conn_fallback_reason(c) == RIFT_FALLBACK_NONE) {
		conns[0] = c;
		conns[1] = srv.conn;
		h_teardown(ctx, lst, conns, 2);
		SKIP("RDMA is available here: auto:// did not fall back");
	}
	show(&l);
	why = rift_fallback_reason_str(rift_conn_fallback_reason(c));
	expect(&l, RIFT_LOG_INFO, why);
	expect(&l, RIFT_LOG_INFO, "connects over tcp");
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, lst, conns, 2);
}

/*
 * An auto:// session on TCP because RDMA is not there (no device here)
 * tries RDMA again (connect.fallback_return_ms), and waits twice as long
 * after each try that fails; 0 stays on TCP without trying.  The session
 * carries messages meanwhile.
 */
TEST(auto_on_tcp_tries_rdma_again_with_backoff)
{
	static struct lines l;
	rift_config cfg = log_config(&l, RIFT_LOG_INFO);
	uint32_t every[] = { 50, 0 };

	for (int k = 0; k < 2; k++) {
		struct side srv = { .verify = true, .seed = 3, .max_size = 64 };
		struct side cli = { 0 };
		rift_listener *lst;
		rift_conn *c = NULL, *conns[2];
		rift_ctx *ctx;
		uint64_t end;
		char url[128];

		memset(&l, 0, sizeof(l));
		cfg.fallback_return_ms = every[k];
		ctx = h_ctx(&cfg);
		lst = h_listen(ctx, &srv);
		snprintf(url, sizeof(url), "auto://127.0.0.1:%d,127.0.0.2:%d",
			 rift_listener_port(lst), rift_listener_port(lst));
		CHECK_EQ(rift_connect(ctx, url, &h_callbacks, &cli, &c), 0);
		cli.conn = c;
		h_connected(ctx, &cli);
		conns[0] = c;
		if (rift_conn_fallback_reason(c) == RIFT_FALLBACK_NONE) {
			conns[1] = srv.conn;
			h_teardown(ctx, lst, conns, 2);
			SKIP("RDMA is available here: auto:// did not fall back");
		}
		end = h_now_us() + 1200000u;
		for (uint64_t i = 0; h_now_us() < end; i++) {
			CHECK_EQ(h_send(c, 3, i, 64), 0);
			rift_ctx_run(ctx, 5);
		}
		show(&l);
		if (every[k]) {
			expect(&l, RIFT_LOG_INFO, "rdma is not back yet");
			expect(&l, RIFT_LOG_INFO, "next try in 100 ms");
			expect(&l, RIFT_LOG_INFO, "next try in 200 ms");
			expect(&l, RIFT_LOG_INFO, "next try in 400 ms");
			CHECK(count(&l, RIFT_LOG_INFO, "next try in") <= 5);
		} else {
			CHECK_EQ(count(&l, -1, "next try in"), 0);
		}
		CHECK_EQ(rift_conn_transport(c), RIFT_TRANSPORT_TCP);
		CHECK(srv.recv_count > 0);
		CHECK_EQ(srv.bad, 0);
		conns[1] = srv.conn;
		h_teardown(ctx, lst, conns, 2);
	}
}

/* A plain TCP connection to the listener ctx has on port. */
static int raw_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	sa.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	CHECK_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* A peer whose first bytes are no frame is refused, with a warning. */
TEST(log_handshake_refusal_is_a_warning)
{
	static struct lines l;
	rift_config cfg = log_config(&l, RIFT_LOG_WARN);
	struct side srv = { 0 };
	rift_listener *lst;
	rift_ctx *ctx = h_ctx(&cfg);
	char junk[64];
	int fd;

	lst = h_listen(ctx, &srv);
	fd = raw_connect(rift_listener_port(lst));
	memset(junk, 'x', sizeof(junk));
	CHECK_EQ(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	for (int i = 0; i < 400 && !count(&l, -1, "refused"); i++)
		rift_ctx_run(ctx, 5);
	close(fd);
	show(&l);
	expect(&l, RIFT_LOG_WARN, "handshake refused: RIFT_EPROTO");
	h_teardown(ctx, lst, NULL, 0);
}

/* A peer that connects and never says HELLO: a note when its time runs
 * out (a warning would be too much: it may just be slow). */
TEST(log_silent_peer_handshake_timeout_is_info)
{
	static struct lines l;
	rift_config cfg = log_config(&l, RIFT_LOG_INFO);
	struct side srv = { 0 };
	rift_listener *lst;
	rift_ctx *ctx;
	int fd;

	cfg.connect_timeout_ms = 100;
	ctx = h_ctx(&cfg);
	lst = h_listen(ctx, &srv);
	fd = raw_connect(rift_listener_port(lst));
	for (int i = 0; i < 400 && !count(&l, -1, "handshake"); i++)
		rift_ctx_run(ctx, 5);
	close(fd);
	show(&l);
	expect(&l, RIFT_LOG_INFO, "handshake failed: RIFT_ETIMEDOUT");
	CHECK_EQ(count(&l, RIFT_LOG_WARN, ""), 0);
	h_teardown(ctx, lst, NULL, 0);
}

/* ---- where lines go ---- */

/* "rift[PID] SECONDS LEVEL: MESSAGE" lines of text, at most max of
 * them, each checked; returns how many had that level and message. */
static int stderr_lines(const char *text, const char *level,
			const char *needle)
{
	int n = 0;

	for (const char *s = text; *s;) {
		const char *end = strchr(s, '\n');
		char line[RIFT_LOG_LINE + 64], lv[16];
		int pid = 0, off = 0;
		double secs = -1;

		CHECK(end != NULL);
		snprintf(line, sizeof(line), "%.*s", (int)(end - s), s);
		if (sscanf(line, "rift[%d] %lf %15[a-z]: %n", &pid, &secs, lv,
			   &off) != 3 ||
		    off == 0)
			FAIL("not a log line: \"%s\"", line);
		CHECK_EQ(pid, getpid());
		CHECK(secs > 0);
		if (!strcmp(lv, level) && strstr(line + off, needle))
			n++;
		s = end + 1;
	}
	return n;
}

TEST(log_callback_replaces_stderr)
{
	static struct lines l;
	rift_config cfg;
	struct caught c;
	const char *text;
	rift_ctx *ctx;

	/* no callback: stderr, one formatted line each */
	rift_config_init(&cfg);
	cfg.retries = 0;
	cfg.log_level = RIFT_LOG_INFO;
	catch_stderr(&c);
	ctx = h_ctx(&cfg);
	refused_connect(ctx);
	text = release_stderr(&c);
	printf("stderr:\n%s", text);
	CHECK_EQ(stderr_lines(text, "info", "connect attempt 1 failed: "
					    "tcp://127.0.0.1:"),
		 1);
	CHECK_EQ(stderr_lines(text, "error", "connection failed: "
					     "RIFT_ECONNREFUSED"),
		 1);

	/* a callback: every line to it, none to stderr */
	cfg = log_config(&l, RIFT_LOG_INFO);
	cfg.retries = 0;
	catch_stderr(&c);
	ctx = h_ctx(&cfg);
	refused_connect(ctx);
	text = release_stderr(&c);
	CHECK_STR(text, "");
	expect(&l, RIFT_LOG_INFO, "connect attempt 1 failed");
	expect(&l, RIFT_LOG_ERROR, "connection failed: RIFT_ECONNREFUSED");
}

/* Lines of no context (the process's pool, threads beside the loops):
 * stderr at RIFT_LOG's level, never a context's callback. */
TEST(log_lines_of_no_context_go_to_stderr_at_rift_log)
{
	static struct lines l;
	rift_config cfg;
	struct caught c;
	const char *text;
	rift_ctx *ctx;

	setenv("RIFT_LOG", "debug", 1);
	cfg = log_config(&l, RIFT_LOG_DEBUG); /* RIFT_LOG read here */
	ctx = h_ctx(&cfg);
	catch_stderr(&c);
	RIFT_PLOG(RIFT_LOG_DEBUG, "pool: nobody's %d", 1);
	text = release_stderr(&c);
	CHECK_EQ(stderr_lines(text, "debug", "pool: nobody's 1"), 1);
	CHECK_EQ(l.n, 0);

	setenv("RIFT_LOG", "warn", 1);
	rift_config_init(&cfg);
	catch_stderr(&c);
	RIFT_PLOG(RIFT_LOG_DEBUG, "pool: nobody's %d", 2);
	RIFT_PLOG(RIFT_LOG_WARN, "pool: nobody's %d", 3);
	text = release_stderr(&c);
	CHECK_EQ(stderr_lines(text, "debug", "nobody's"), 0);
	CHECK_EQ(stderr_lines(text, "warn", "pool: nobody's 3"), 1);
	CHECK_EQ(l.n, 0);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}

/* ---- RIFT_LOG and log.level ---- */

/* The [log] level line of a dump as "VALUE # ORIGIN" (blanks squeezed). */
static const char *dumped_level(const char *dump)
{
	static char out[128];
	const char *at = strstr(dump, "\n[log]\nlevel = ");
	size_t n = 0;

	CHECK(at != NULL);
	at += strlen("\n[log]\nlevel = ");
	for (; *at && *at != '\n' && n + 1 < sizeof(out); at++)
		if (*at != ' ' || (n && out[n - 1] != ' '))
			out[n++] = *at;
	out[n] = '\0';
	return out;
}

TEST(log_rift_log_env_values)
{
	char err[RIFT_CONFIG_ERRLEN], dump[8192], want[64];
	rift_config cfg;
	struct caught c;
	const char *text;
	rift_ctx *ctx;

	unsetenv("RIFT_LOG");
	unsetenv("RIFT_LOG_LEVEL");
	rift_config_init(&cfg);
	CHECK_EQ(cfg.log_level, RIFT_LOG_WARN);
	CHECK(rift_config_dump(&cfg, dump, sizeof(dump)) > 0);
	CHECK_STR(dumped_level(dump), "\"warn\" # default");
	for (int v = RIFT_LOG_OFF; v <= RIFT_LOG_DEBUG; v++) {
		const char *name = rift_log_level_name((rift_log_level)v);

		/* the default of rift_config_init, for programs that never
		 * call rift_config_env */
		setenv("RIFT_LOG", name, 1);
		rift_config_init(&cfg);
		CHECK_EQ(cfg.log_level, v);
		CHECK(rift_config_dump(&cfg, dump, sizeof(dump)) > 0);
		snprintf(want, sizeof(want), "\"%s\" # env RIFT_LOG", name);
		CHECK_STR(dumped_level(dump), want);
		/* and rift_config_env over what the program had */
		cfg.log_level = v == RIFT_LOG_OFF ? RIFT_LOG_DEBUG
						  : RIFT_LOG_OFF;
		CHECK_EQ(rift_config_env(&cfg, err, sizeof(err)), 0);
		CHECK_EQ(cfg.log_level, v);
		unsetenv("RIFT_LOG");
		setenv("RIFT_LOG_LEVEL", name, 1);
		cfg.log_level = v == RIFT_LOG_OFF ? RIFT_LOG_DEBUG
						  : RIFT_LOG_OFF;
		CHECK_EQ(rift_config_env(&cfg, err, sizeof(err)), 0);
		CHECK_EQ(cfg.log_level, v);
		CHECK(rift_config_dump(&cfg, dump, sizeof(dump)) > 0);
		snprintf(want, sizeof(want), "\"%s\" # env RIFT_LOG_LEVEL",
			 name);
		CHECK_STR(dumped_level(dump), want);
		unsetenv("RIFT_LOG_LEVEL");
	}

	/* RIFT_LOG reaches a context made with no config at all */
	setenv("RIFT_LOG", "info", 1);
	catch_stderr(&c);
	CHECK_EQ(rift_ctx_create(&ctx, NULL), 0);
	refused_connect(ctx);
	text = release_stderr(&c);
	CHECK_EQ(stderr_lines(text, "info", "connect attempt 1 failed"), 1);
	CHECK_EQ(stderr_lines(text, "error", "connection failed"), 1);
	setenv("RIFT_LOG", "error", 1);
	cfg = one_attempt();
	catch_stderr(&c);
	ctx = h_ctx(&cfg);
	refused_connect(ctx);
	text = release_stderr(&c);
	CHECK_EQ(stderr_lines(text, "info", ""), 0);
	CHECK_EQ(stderr_lines(text, "error", "connection failed"), 1);
	setenv("RIFT_LOG", "off", 1);
	cfg = one_attempt();
	catch_stderr(&c);
	ctx = h_ctx(&cfg);
	refused_connect(ctx);
	CHECK_STR(release_stderr(&c), "");

	/* the program's own level wins over RIFT_LOG */
	setenv("RIFT_LOG", "debug", 1);
	cfg = one_attempt();
	cfg.log_level = RIFT_LOG_OFF;
	catch_stderr(&c);
	ctx = h_ctx(&cfg);
	refused_connect(ctx);
	CHECK_STR(release_stderr(&c), "");

	/* both names of the key: one only */
	setenv("RIFT_LOG_LEVEL", "info", 1);
	rift_config_init(&cfg);
	CHECK_EQ(rift_config_env(&cfg, err, sizeof(err)), RIFT_EINVAL);
	CHECK_STR(err, "env RIFT_LOG: RIFT_LOG_LEVEL is set too; use one");
}

static void load_text(rift_config *cfg, const char *text, int want_rc,
		      char *err, size_t errlen)
{
	char path[] = "/tmp/rift-log-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	CHECK_EQ(rift_config_load(cfg, path, err, errlen), want_rc);
	unlink(path);
	if (want_rc) {
		/* the message names the file by its path: drop it */
		size_t pl = strlen(path);

		CHECK(!strncmp(err, path, pl));
		memmove(err, err + pl, strlen(err + pl) + 1);
	}
}

TEST(log_bad_levels_are_refused)
{
	char err[RIFT_CONFIG_ERRLEN];
	rift_config cfg;
	rift_ctx *ctx = NULL;

	unsetenv("RIFT_LOG_LEVEL");
	/* RIFT_LOG naming no level: the default stays, but a context is
	 * not made, and rift_config_env says so */
	setenv("RIFT_LOG", "verbose", 1);
	rift_config_init(&cfg);
	CHECK_EQ(cfg.log_level, RIFT_LOG_WARN);
	CHECK_EQ(rift_ctx_create(&ctx, NULL), RIFT_EINVAL);
	CHECK(ctx == NULL);
	CHECK_STR(rift_ctx_last_error(NULL),
		  "env RIFT_LOG: 'verbose' is not one of \"off\", \"error\", "
		  "\"warn\", \"info\" or \"debug\"");
	cfg.log_level = RIFT_LOG_INFO; /* whatever the program says */
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), RIFT_EINVAL);
	CHECK_EQ(rift_config_env(&cfg, err, sizeof(err)), RIFT_EINVAL);
	CHECK_STR(err, "env RIFT_LOG: 'verbose' is not one of \"off\", "
		       "\"error\", \"warn\", \"info\" or \"debug\"");
	CHECK_EQ(cfg.log_level, RIFT_LOG_INFO); /* left as it was */
	setenv("RIFT_LOG", "DEBUG", 1); /* names are lower case */
	CHECK_EQ(rift_ctx_create(&ctx, NULL), RIFT_EINVAL);
	setenv("RIFT_LOG", "", 1);
	CHECK_EQ(rift_ctx_create(&ctx, NULL), RIFT_EINVAL);
	unsetenv("RIFT_LOG");

	setenv("RIFT_LOG_LEVEL", "4", 1);
	rift_config_init(&cfg);
	CHECK_EQ(rift_config_env(&cfg, err, sizeof(err)), RIFT_EINVAL);
	CHECK_STR(err, "env RIFT_LOG_LEVEL: '4' is not one of \"off\", "
		       "\"error\", \"warn\", \"info\" or \"debug\"");
	unsetenv("RIFT_LOG_LEVEL");
	setenv("RIFT_LOG_LEVL", "info", 1);
	CHECK_EQ(rift_config_env(&cfg, err, sizeof(err)), RIFT_EINVAL);
	CHECK_STR(err, "env RIFT_LOG_LEVL: no such setting in [log]; did you "
		       "mean RIFT_LOG_LEVEL?");
	unsetenv("RIFT_LOG_LEVL");

	/* the file */
	rift_config_init(&cfg);
	load_text(&cfg, "[log]\nlevel = \"loud\"\n", RIFT_EINVAL, err,
		  sizeof(err));
	CHECK_STR(err, ":2:9: level = \"loud\" is not one of \"off\", "
		       "\"error\", \"warn\", \"info\" or \"debug\"");
	load_text(&cfg, "[log]\nlevel = 3\n", RIFT_EINVAL, err, sizeof(err));
	CHECK_STR(err, ":2:9: level must be one of \"off\", \"error\", "
		       "\"warn\", \"info\" or \"debug\", not an integer");
	load_text(&cfg, "[log]\nlevel = \"info\"\n", 0, err, sizeof(err));
	CHECK_EQ(cfg.log_level, RIFT_LOG_INFO);

	/* the struct */
	rift_config_init(&cfg);
	cfg.log_level = (rift_log_level)5;
	CHECK_EQ(rift_config_check(&cfg), RIFT_EINVAL);
	CHECK_STR(rift_ctx_last_error(NULL),
		  "config log_level = 5 is out of range 0..4");
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), RIFT_EINVAL);
	CHECK(ctx == NULL);
}

TEST(log_level_names)
{
	CHECK_STR(rift_log_level_name(RIFT_LOG_OFF), "off");
	CHECK_STR(rift_log_level_name(RIFT_LOG_ERROR), "error");
	CHECK_STR(rift_log_level_name(RIFT_LOG_WARN), "warn");
	CHECK_STR(rift_log_level_name(RIFT_LOG_INFO), "info");
	CHECK_STR(rift_log_level_name(RIFT_LOG_DEBUG), "debug");
	CHECK_STR(rift_log_level_name((rift_log_level)9), "unknown");
}
