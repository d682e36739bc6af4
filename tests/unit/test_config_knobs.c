/*
 * Every documented knob is real, or it is gone (issue 14, item 6): the
 * dump writes every configuration rift_config_check accepts as TOML that
 * loads back, ranges are the ones the library honours.
 */
#include <stdlib.h>
#include <unistd.h>

#include "api/config_int.h"
#include "util/toml.h"
#include "../runner.h"

static char dump_text[16384];

/* cfg dumped and loaded back into a fresh struct: it must be the same. */
static void round_trip(const rift_config *cfg)
{
	char err[RIFT_CONFIG_ERRLEN];
	rift_config back;
	int n;

	n = rift_config_dump(cfg, dump_text, sizeof(dump_text));
	CHECK(n > 0 && (size_t)n < sizeof(dump_text));
	rift_config_init(&back);
	if (rift__config_load_text(&back, "dump.toml", dump_text, (size_t)n,
				   err, sizeof(err)) != 0)
		FAIL("the dump does not load back: %s\n---\n%s", err,
		     dump_text);
	for (size_t i = 0; i < N_KEYS; i++)
		if (!rift__cfg_same(&back, cfg, &rift__cfg_keys[i]))
			FAIL("%s.%s differs after the round trip\n---\n%s",
			     rift__cfg_keys[i].section,
			     rift__cfg_keys[i].name, dump_text);
}

/*
 * A device name of 25 control characters (tests/fuzz/corpus/config/
 * dump-control-chars) wrote 150 bytes of escapes into a 160-byte line
 * and was cut mid-escape; 63 of them are 378 bytes.  Every control
 * character comes back.
 */
TEST(config_dump_writes_any_device_name_that_loads_back)
{
	rift_config c;

	rift_config_init(&c);
	memset(c.device, 1, 25);
	CHECK_EQ(rift_config_check(&c), 0);
	round_trip(&c);

	rift_config_init(&c);
	for (int i = 0; i < RIFT_DEVICE_NAME_MAX - 1; i++)
		c.device[i] = (char)(i < 31 ? i + 1 : (i == 31 ? 0x7f : i));
	CHECK_EQ(rift_config_check(&c), 0);
	round_trip(&c);
	CHECK_CONTAINS(dump_text, "\\u0007\\b\\t\\n\\u000B\\f\\r\\u000E");
	CHECK_CONTAINS(dump_text, "\\u001F\\u007F");

	/* UTF-8 is text: written as it is, and read back */
	rift_config_init(&c);
	snprintf(c.device, sizeof(c.device), "r\xc3\xa9seau_\xe2\x82\xac_"
					     "\xf0\x9f\x90\x87\"\\");
	CHECK_EQ(rift_config_check(&c), 0);
	round_trip(&c);
	CHECK_CONTAINS(dump_text, "device = \"r\xc3\xa9seau_\xe2\x82\xac_"
				  "\xf0\x9f\x90\x87\\\"\\\\\"");
}

/*
 * A byte that is not UTF-8 cannot be written in a TOML file (which is
 * UTF-8), so rift_config_check refuses such a device name, and the env
 * with it; the dump of the struct anyway stays loadable TOML.
 */
TEST(config_device_that_is_not_utf8_is_refused)
{
	static const char *const bad[] = { "mlx5_\xff", "\xc3", "\xc0\xaf",
					   "\xed\xa0\x80", "\xf4\x90\x80\x80",
					   "a\x80" };
	char err[RIFT_CONFIG_ERRLEN];
	rift_config c;

	for (size_t i = 0; i < RIFT_ARRAY_SIZE(bad); i++) {
		rift_config_init(&c);
		snprintf(c.device, sizeof(c.device), "%s", bad[i]);
		CHECK_EQ(rift_config_check(&c), RIFT_EINVAL);
		CHECK_STR(rift_ctx_last_error(NULL),
			  "config device is not UTF-8 text");
		CHECK(rift_config_dump(&c, dump_text, sizeof(dump_text)) > 0);
		CHECK(rift__toml_utf8_ok(dump_text));
		CHECK_CONTAINS(dump_text, "\\uFFFD");
	}
	rift_config_init(&c);
	setenv("RIFT_RDMA_DEVICE", "mlx5_\xff", 1);
	CHECK_EQ(rift_config_env(&c, err, sizeof(err)), RIFT_EINVAL);
	unsetenv("RIFT_RDMA_DEVICE");
	CHECK_STR(err, "env RIFT_RDMA_DEVICE: rdma.device is not UTF-8 text");
	CHECK_STR(c.device, "");
}

/*
 * The origin comment names the file: a path with a newline, control
 * characters or stray bytes must not break the TOML around it.
 */
TEST(config_dump_comment_survives_any_file_name)
{
	char path[64] = "/tmp/rift-\n\x01\xff-XXXXXX", err[RIFT_CONFIG_ERRLEN];
	rift_config c;
	int fd;

	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "[rdma]\nsq_depth = 512\n", 22), 22);
	close(fd);
	rift_config_init(&c);
	CHECK_EQ(rift_config_load(&c, path, err, sizeof(err)), 0);
	unlink(path);
	CHECK_EQ(c.sq_depth, 512);
	round_trip(&c);
	CHECK_CONTAINS(dump_text, "# /tmp/rift-\\x0A\\x01\\xFF-");
}

/* Load text; 0 or the error, with err set. */
static int load_text(rift_config *c, const char *text, char *err,
		     size_t errlen)
{
	return rift__config_load_text(c, "rift.toml", text, strlen(text), err,
				      errlen);
}

/*
 * The verbs backend polls at most 64 completions at a time; a larger
 * poll_batch was accepted and silently capped.  Now the range is the one
 * honoured.
 */
TEST(config_poll_batch_range_is_what_a_poll_takes)
{
	char err[RIFT_CONFIG_ERRLEN];
	rift_config c;

	rift_config_init(&c);
	c.poll_batch = 64;
	CHECK_EQ(rift_config_check(&c), 0);
	c.poll_batch = 65;
	CHECK_EQ(rift_config_check(&c), RIFT_EINVAL);
	CHECK_STR(rift_ctx_last_error(NULL),
		  "config poll_batch = 65 is out of range 1..64");
	rift_config_init(&c);
	CHECK_EQ(load_text(&c, "[rdma]\npoll_batch = 1024\n", err,
			   sizeof(err)),
		 RIFT_EINVAL);
	CHECK_STR(err, "rift.toml:2:14: poll_batch = 1024 is out of range "
		       "1..64 (completions taken per poll)");
	CHECK_EQ(c.poll_batch, 16);
	CHECK_EQ(load_text(&c, "[rdma]\npoll_batch = 64\n", err, sizeof(err)),
		 0);
	CHECK_EQ(c.poll_batch, 64);
}

/*
 * rdma.max_recv_sge sized the receive queue's scatter lists, but every
 * receive posts one buffer: the key changed nothing and is gone, from the
 * file, the environment and the dump.
 */
TEST(config_max_recv_sge_is_gone)
{
	char err[RIFT_CONFIG_ERRLEN];
	rift_config c;
	bool alias;

	rift_config_init(&c);
	CHECK_EQ(load_text(&c, "[rdma]\nmax_recv_sge = 2\n", err,
			   sizeof(err)),
		 RIFT_EINVAL);
	CHECK_STR(err, "rift.toml:2:1: unknown key 'max_recv_sge' in [rdma]");
	setenv("RIFT_RDMA_MAX_RECV_SGE", "1", 1);
	CHECK_EQ(rift_config_env(&c, err, sizeof(err)), RIFT_EINVAL);
	unsetenv("RIFT_RDMA_MAX_RECV_SGE");
	CHECK_STR(err, "env RIFT_RDMA_MAX_RECV_SGE: no such setting in [rdma]");
	CHECK(rift__cfg_find_key("rdma", "max_recv_sge", &alias) == NULL);
	CHECK(rift_config_dump(&c, dump_text, sizeof(dump_text)) > 0);
	CHECK(strstr(dump_text, "recv_sge") == NULL);
	CHECK_CONTAINS(dump_text, "\nmax_send_sge = 2 ");
}

/*
 * group.local takes numeric addresses only, wherever it is set: the
 * file, the environment and the program (rift_config_check) refuse
 * anything else naming the key and the value; a list loads, dumps and
 * loads back.
 */
TEST(config_group_local_takes_numeric_addresses)
{
	char err[RIFT_CONFIG_ERRLEN];
	rift_config c;

	rift_config_init(&c);
	CHECK_EQ(load_text(&c, "[group]\nlocal = \"10.0.0.2, fd00::2\"\n",
			   err, sizeof(err)),
		 0);
	CHECK_STR(c.group_local, "10.0.0.2, fd00::2");
	round_trip(&c);
	CHECK_CONTAINS(dump_text, "\nlocal = \"10.0.0.2, fd00::2\"");

	rift_config_init(&c);
	CHECK_EQ(load_text(&c, "[group]\nlocal = \"mlx5_0:1, rxe1:2\"\n",
			   err, sizeof(err)),
		 0);
	CHECK_STR(c.group_local, "mlx5_0:1, rxe1:2");
	rift_config_init(&c);
	CHECK_EQ(load_text(&c, "[group]\nlocal = \"mlx5_0:256\"\n", err,
			   sizeof(err)),
		 RIFT_EINVAL);
	CHECK_STR(err, "rift.toml:2:9: local = \"mlx5_0:256\": 'mlx5_0:256': "
		       "port 256 of device mlx5_0 is not 1..255");
	CHECK_STR(c.group_local, "");
	setenv("RIFT_GROUP_LOCAL", "10.0.0.2,db.example", 1);
	CHECK_EQ(rift_config_env(&c, err, sizeof(err)), RIFT_EINVAL);
	unsetenv("RIFT_GROUP_LOCAL");
	CHECK_STR(err, "env RIFT_GROUP_LOCAL: local = \"10.0.0.2,db.example\": "
		       "'db.example' is neither a numeric IPv4 or IPv6 "
		       "address nor an RDMA device and port such as rxe0:1 "
		       "(host names are not accepted)");
	snprintf(c.group_local, sizeof(c.group_local), "10.0.0.2:7788");
	CHECK_EQ(rift_config_check(&c), RIFT_EINVAL);
	CHECK_STR(rift_ctx_last_error(NULL),
		  "config group_local = \"10.0.0.2:7788\": '10.0.0.2:7788' has "
		  "a port: give the address alone (the system picks the "
		  "port)");
	memset(c.group_local, '1', sizeof(c.group_local));
	CHECK_EQ(rift_config_check(&c), RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(NULL),
		       "config group_local is not NUL-terminated");
}

/* ---- every key of docs/config.md is real ---- */

/*
 * One row per key: a value other than the default, what it sets in
 * rift_config (element elem of the member; for a string, its text),
 * and where the library reads that member, as it is written there.  A
 * key the library knows without a row here fails the test, so a new key
 * needs its row: its effect and its consumer.
 */
static const struct effect {
	const char *section, *name, *value;
	int64_t want;        /* the member (element elem) after loading */
	int elem;
	const char *file;    /* reads it ... */
	const char *uses;    /* ... as this */
} effects[] = {
	{ "progress", "polling", "\"busy\"", RIFT_POLL_BUSY, 0,
	  "src/api/ctx.c", "ctx->cfg.polling" },
	{ "progress", "busy_poll_us", "7", 7, 0, "src/api/ctx.c",
	  "ctx->cfg.busy_poll_us" },
	{ "connect", "connect_timeout_ms", "1500", 1500, 0,
	  "src/session/failover.c", "conn->cfg.connect_timeout_ms" },
	{ "connect", "retries", "5", 5, 0, "src/session/failover.c",
	  "conn->cfg.retries" },
	{ "connect", "retry_delay_ms", "250", 250, 0, "src/session/failover.c",
	  "conn->cfg.retry_delay_ms" },
	{ "connect", "fallback", "false", 0, 0, "src/session/failover.c",
	  "conn->cfg.fallback" },
	{ "session", "keepalive_interval_ms", "2000", 2000, 0,
	  "src/session/session.c", "p->cfg->keepalive_interval_ms" },
	{ "session", "keepalive_timeout_ms", "9000", 9000, 0,
	  "src/session/session.c", "p->cfg->keepalive_timeout_ms" },
	{ "session", "grace_ms", "30_000", 30000, 0, "src/session/failover.c",
	  "conn->cfg.session_grace_ms" },
	{ "session", "linger_ms", "250", 250, 0, "src/session/close.c",
	  "ctx->cfg.linger_ms" },
	{ "session", "ack_delay_ms", "0", 0, 0, "src/session/session.h",
	  "conn->ctx->cfg.ack_delay_ms" },
	{ "session", "send_window", "\"64MiB\"", 64ll << 20, 0,
	  "src/session/session.h", "conn->ctx->cfg.send_window" },
	{ "session", "max_msg_size", "\"1GB\"", 1ll << 30, 0,
	  "src/session/stream.c", "p->ctx->cfg.max_msg_size" },
	{ "tcp", "read_buffer", "\"1M\"", 1ll << 20, 0,
	  "src/transports/tcp.c", "ctx->cfg.tcp_read_buffer" },
	{ "tcp", "listen_backlog", "128", 128, 0, "src/transports/tcp.c",
	  "ctx->cfg.listen_backlog" },
	{ "rdma", "device", "\"mlx5_1\"", 0, 0,
	  "src/transports/verbs/rdma_src.c", "cfg->device" },
	{ "rdma", "port", "2", 2, 0, "src/transports/verbs/rdma_src.c",
	  "cfg->port" },
	{ "rdma", "gid_index", "3", 3, 0, "src/transports/verbs/rdma_src.c",
	  "cfg->gid_index" },
	{ "rdma", "cm", "\"tcp\"", RIFT_CM_TCP, 0,
	  "src/transports/verbs/rdma.c", "cfg->cm" },
	{ "rdma", "retry_count", "5", 5, 0, "src/transports/verbs/rdma_boot.c",
	  "cfg->rdma_retry_count" },
	{ "rdma", "ack_timeout", "18", 18, 0,
	  "src/transports/verbs/rdma_boot.c", "cfg->rdma_ack_timeout" },
	{ "rdma", "sq_depth", "0x400", 1024, 0,
	  "src/transports/verbs/rdma_qp.c", "cfg->sq_depth" },
	{ "rdma", "rq_depth", "2048", 2048, 0, "src/transports/verbs/rdma_qp.c",
	  "cfg->rq_depth" },
	{ "rdma", "max_send_sge", "1", 1, 0, "src/transports/verbs/rdma_tx.c",
	  "ctx->cfg.max_send_sge < 2" },
	{ "rdma", "inline_threshold", "256", 256, 0,
	  "src/transports/verbs/rdma_qp.c", "cfg->inline_threshold" },
	{ "rdma", "cq_size", "4096", 4096, 0, "src/transports/verbs/rdma_cq.c",
	  "ctx->cfg.cq_size" },
	{ "rdma", "poll_batch", "32", 32, 0, "src/transports/verbs/rdma_wc.c",
	  "ctx->cfg.poll_batch" },
	{ "rdma", "qp_pool_count", "8", 8, 0,
	  "src/transports/verbs/rdma_qp.c", "ctx->cfg.qp_pool_count" },
	{ "rdma", "zero_copy_threshold", "\"64k\"", 64 << 10, 0,
	  "src/transports/verbs/rdma_rx.c", "ctx->cfg.zero_copy_threshold" },
	{ "rdma", "rndv_threshold", "0", 0, 0, "src/api/conn.c",
	  "conn->ctx->cfg.rndv_threshold" },
	{ "pool", "block_sizes",
	  "[\"4KiB\", 16384, 131072, \"1MiB\", \"4 MiB\"]", 4ll << 20, 4,
	  "src/memory/pool.c", "cfg->block_size" },
	{ "pool", "initial", "\"32MiB\"", 32ll << 20, 0,
	  "src/memory/pool_shape.c", "cfg->pool_initial" },
	{ "pool", "increment", "'8MiB'", 8ll << 20, 0,
	  "src/memory/pool_shape.c", "cfg->pool_increment" },
	{ "pool", "max", "\"2GiB\"", 2ll << 30, 0, "src/memory/pool_shape.c",
	  "cfg->pool_max" },
	{ "pool", "buckets", "8", 8, 0, "src/memory/pool.c",
	  "cfg->pool_buckets" },
	{ "pool", "thread_cache", "64", 64, 0, "src/memory/pool.c",
	  "cfg->pool_thread_cache" },
	{ "pool", "recv_reserve_pct", "25", 25, 0, "src/memory/pool.c",
	  "cfg->recv_reserve_pct" },
	{ "pool", "huge_pages", "true", 1, 0, "src/memory/pool.c",
	  "cfg->huge_pages" },
	{ "metrics", "enabled", "false", 0, 0, "src/session/stats.c",
	  "ctx->cfg.metrics" },
	{ "log", "level", "\"debug\"", RIFT_LOG_DEBUG, 0, "src/internal.h",
	  "rift__lctx->cfg.log_level" },
	{ "group", "max_paths", "3", 3, 0, "src/api/conn.c",
	  "conn->cfg.group_max_paths" },
	{ "group", "failback_delay_ms", "500", 500, 0, "src/session/group.c",
	  "conn->cfg.group_failback_delay_ms" },
	{ "connect", "fallback_return_ms", "700", 700, 0, "src/session/group.c",
	  "conn->cfg.fallback_return_ms" },
	{ "group", "policy", "\"active-active\"", RIFT_POLICY_ACTIVE_ACTIVE, 0,
	  "src/session/group.c", "conn->cfg.group_policy" },
	{ "group", "local", "\"127.0.0.2\"", 0, 0, "src/api/conn.c",
	  "conn->cfg.group_local" },
};

/* Text with its C comments blanked, so a consumer is code, not prose. */
static char *source_code(const char *rel)
{
	char *t = rt_read_source(rel), *p;

	if (!t)
		FAIL("cannot read %s", rt_source_path(rel));
	for (p = t; (p = strstr(p, "/*"));) {
		char *end = strstr(p + 2, "*/");

		end = end ? end + 2 : p + strlen(p);
		memset(p, ' ', (size_t)(end - p));
		p = end;
	}
	return t;
}

/* Whether code holds uses, not as the start of a longer name. */
static bool reads(const char *code, const char *uses)
{
	size_t n = strlen(uses);

	for (const char *at = code; (at = strstr(at, uses)); at += n) {
		char next = at[n];

		if (!(next == '_' || (next >= 'a' && next <= 'z') ||
		      (next >= 'A' && next <= 'Z') ||
		      (next >= '0' && next <= '9')))
			return true;
	}
	return false;
}

/* The key's effect row, or NULL. */
static const struct effect *effect_of(const struct key *k)
{
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(effects); i++)
		if (!strcmp(effects[i].section, k->section) &&
		    !strcmp(effects[i].name, k->name))
			return &effects[i];
	return NULL;
}

/* The text between the first pair of backticks of s, into buf. */
static bool ticked(const char *s, char *buf, size_t len)
{
	const char *a = strchr(s, '`'), *b = a ? strchr(a + 1, '`') : NULL;

	if (!b || (size_t)(b - a - 1) >= len)
		return false;
	memcpy(buf, a + 1, (size_t)(b - a - 1));
	buf[b - a - 1] = '\0';
	return true;
}

/* Cell i (from 0, after the leading '|') of a table row, trimmed. */
static bool cell(const char *row, int i, char *buf, size_t len)
{
	const char *s = row, *e;
	size_t n;

	for (int k = 0; k <= i; k++) {
		s = strchr(s, '|');
		if (!s)
			return false;
		s++;
	}
	e = strchr(s, '|');
	if (!e)
		return false;
	while (s < e && *s == ' ')
		s++;
	while (e > s && e[-1] == ' ')
		e--;
	n = (size_t)(e - s);
	if (n >= len)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return true;
}

/* The value of key in section as the dump writes the defaults. */
static void default_text(const char *section, const char *key, char *buf,
			 size_t len)
{
	static char d[16384];
	rift_config c;
	char pat[96];
	const char *at, *end;

	rift_config_init(&c);
	CHECK(rift_config_dump(&c, d, sizeof(d)) > 0);
	snprintf(pat, sizeof(pat), "\n[%s]\n", section);
	at = strstr(d, pat);
	CHECK(at != NULL);
	snprintf(pat, sizeof(pat), "\n%s = ", key);
	at = strstr(at, pat);
	CHECK(at != NULL);
	at += strlen(pat);
	end = strstr(at, " #");
	CHECK(end != NULL);
	while (end > at && end[-1] == ' ')
		end--;
	snprintf(buf, len, "%.*s", (int)(end - at), at);
}

/* "4KiB" or "16" or "-1" as a number. */
static int64_t doc_number(const char *s)
{
	const char *why;
	int64_t v;
	uint64_t u;
	char t[64];

	snprintf(t, sizeof(t), "%s", s);
	t[strcspn(t, " (")] = '\0';
	if (rift__toml_int(t, &v, &why) == 0)
		return v;
	if (rift__toml_size(t, &u, &why) == 0)
		return (int64_t)u;
	FAIL("'%s' in docs/config.md is not a number", s);
}

/*
 * docs/config.md's "Every key" tables against the library's key table,
 * both ways: every key documented is known, with its alias, variable,
 * member, default and range; every key known is documented.  Then each
 * key, from its row of effects[]: a file that sets it to a value that is
 * not the default sets the member to that value, and the member is read
 * by the library where the row says.
 */
TEST(config_every_documented_key_is_real)
{
	char *doc = rt_read_source("docs/config.md");
	char *line, *save = NULL, section[32] = "";
	int documented[N_KEYS] = { 0 };
	bool in_keys = false;

	if (!doc)
		FAIL("cannot read %s", rt_source_path("docs/config.md"));
	for (line = strtok_r(doc, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char c[8][512], name[64], alias[64] = "", var[96], dflt[160];
		const struct key *k;
		const char *also;
		bool is_alias;

		if (!strncmp(line, "## ", 3))
			in_keys = !strcmp(line, "## Every key");
		if (!in_keys)
			continue;
		if (sscanf(line, "### [%31[^]]]", section) == 1)
			continue;
		if (strncmp(line, "| `", 3) != 0)
			continue;
		for (int i = 0; i < 7; i++)
			if (!cell(line, i, c[i], sizeof(c[i])))
				FAIL("docs/config.md: a row without 7 cells: "
				     "%s", line);
		CHECK(ticked(c[0], name, sizeof(name)));
		also = strstr(c[0], "(also ");
		if (also)
			CHECK(ticked(also, alias, sizeof(alias)));
		k = rift__cfg_find_key(section, name, &is_alias);
		if (!k || is_alias)
			FAIL("docs/config.md documents [%s] %s, which the "
			     "library does not know", section, name);
		documented[k - rift__cfg_keys]++;
		if (strcmp(alias, k->alias ? k->alias : ""))
			FAIL("[%s] %s: docs give alias '%s', the library '%s'",
			     section, name, alias, k->alias ? k->alias : "");
		rift__cfg_env_name(k->section, k->name, var, sizeof(var));
		CHECK(ticked(c[4], dflt, sizeof(dflt)));
		if (strcmp(dflt, var))
			FAIL("[%s] %s: docs name variable %s, the library %s",
			     section, name, dflt, var);
		CHECK(ticked(c[5], dflt, sizeof(dflt)));
		if (strcmp(dflt, k->field))
			FAIL("[%s] %s: docs name member %s, the library %s",
			     section, name, dflt, k->field);
		default_text(section, name, var, sizeof(var));
		CHECK(ticked(c[2], dflt, sizeof(dflt)));
		if (strcmp(dflt, var))
			FAIL("[%s] %s: docs give default %s, the library %s",
			     section, name, dflt, var);
		if (strstr(c[3], " .. ") &&
		    (k->kind == K_UINT || k->kind == K_INT ||
		     k->kind == K_SIZE || k->kind == K_SIZES) &&
		    (doc_number(c[3]) != k->min ||
		     doc_number(strstr(c[3], " .. ") + 4) != k->max))
			FAIL("[%s] %s: docs give range %s, the library "
			     "%lld .. %lld",
			     section, name, c[3], (long long)k->min,
			     (long long)k->max);
	}
	free(doc);
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &rift__cfg_keys[i];
		const struct effect *e = effect_of(k);
		char text[256], err[RIFT_CONFIG_ERRLEN], *code;
		rift_config c, def;

		if (documented[i] != 1)
			FAIL("[%s] %s is documented %d times in docs/config.md "
			     "(once, in its section's table)",
			     k->section, k->name, documented[i]);
		if (!e)
			FAIL("[%s] %s has no row in effects[]: what does it "
			     "change, and where is it read?",
			     k->section, k->name);
		rift_config_init(&def);
		c = def;
		snprintf(text, sizeof(text), "[%s]\n%s = %s\n", k->section,
			 k->name, e->value);
		if (load_text(&c, text, err, sizeof(err)) != 0)
			FAIL("[%s] %s = %s: %s", k->section, k->name, e->value,
			     err);
		if (rift__cfg_same(&c, &def, k))
			FAIL("[%s] %s = %s is its default: no effect shown",
			     k->section, k->name, e->value);
		if (k->kind == K_STRING) {
			/* its text: the value without the quotes */
			snprintf(text, sizeof(text), "%.*s",
				 (int)strlen(e->value) - 2, e->value + 1);
			CHECK_STR((const char *)&c + k->off, text);
		} else if (rift__cfg_get_int(&c, k, (size_t)e->elem) != e->want)
			FAIL("[%s] %s = %s set %s[%d] to %lld, not %lld",
			     k->section, k->name, e->value, k->field, e->elem,
			     (long long)rift__cfg_get_int(&c, k,
							  (size_t)e->elem),
			     (long long)e->want);
		code = source_code(e->file);
		if (!reads(code, e->uses))
			FAIL("[%s] %s: %s does not read it as '%s' (any more?)",
			     k->section, k->name, e->file, e->uses);
		free(code);
	}
	CHECK_EQ(RIFT_ARRAY_SIZE(effects), N_KEYS);
}
