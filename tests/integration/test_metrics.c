/*
 * Metrics: the Prometheus exposition is read back by a strict checker,
 * numbers are checked after real traffic, INFO has its keys, and the
 * verbs-only hooks count what they are given.
 */
#include <ctype.h>
#include <math.h>

#include "internal.h"
#include "memory/pool.h"
#include "session/session.h"
#include "harness.h"

/* ---- a strict reader of the text exposition format 0.0.4 ---- */

#define P_MAX_SAMPLES 4096
#define P_MAX_FAMILIES 128
#define P_MAX_GROUPS 64

struct p_sample {
	char series[512]; /* name{labels} exactly as written */
	char name[128];
	double value;
};

/* One histogram series (its labels without le). */
struct p_group {
	char labels[400];
	double last_le, last_count, inf_count, count;
	bool inf, has_sum, has_count;
	int n_buckets;
};

struct p_family {
	char name[128];
	char type[16];
	struct p_group groups[P_MAX_GROUPS];
	int n_groups;
};

struct prom {
	struct p_sample *s;
	int n;
	struct p_family *f;
	int n_fam;
};

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' ||
			s[0] == ':'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static struct p_group *p_group(struct p_family *f, const char *labels,
			       int line)
{
	for (int i = 0; i < f->n_groups; i++)
		if (strcmp(f->groups[i].labels, labels) == 0)
			return &f->groups[i];
	if (f->n_groups == P_MAX_GROUPS)
		FAIL("line %d: too many series in %s", line, f->name);
	snprintf(f->groups[f->n_groups].labels,
		 sizeof(f->groups[0].labels), "%s", labels);
	f->groups[f->n_groups].last_le = -INFINITY;
	return &f->groups[f->n_groups++];
}

/*
 * Parse a labels block at *p (just after '{') up to and including '}'.
 * Fills le (the value of an "le" label, or "") and rest (the other
 * labels, as written, comma-joined).
 */
static void p_labels(const char **pp, char *le, size_t le_len, char *rest,
		     size_t rest_len, int line)
{
	const char *p = *pp;
	char seen[16][64];
	int n_seen = 0;
	size_t rn = 0;

	le[0] = rest[0] = '\0';
	while (*p != '}') {
		const char *k = p;
		size_t kn;
		char val[512];
		size_t vn = 0;

		while (isalnum((unsigned char)*p) || *p == '_')
			p++;
		kn = (size_t)(p - k);
		if (kn == 0 || isdigit((unsigned char)k[0]) || k[0] == ':' ||
		    (kn >= 2 && k[0] == '_' && k[1] == '_'))
			FAIL("line %d: bad label name at '%.20s'", line, k);
		for (int i = 0; i < n_seen; i++)
			if (strlen(seen[i]) == kn && !strncmp(seen[i], k, kn))
				FAIL("line %d: label %.*s twice", line, (int)kn, k);
		if (n_seen < 16)
			snprintf(seen[n_seen++], sizeof(seen[0]), "%.*s", (int)kn, k);
		if (p[0] != '=' || p[1] != '"')
			FAIL("line %d: expected =\" after label %.*s", line,
			     (int)kn, k);
		p += 2;
		for (; *p != '"'; p++) {
			if (*p == '\0' || *p == '\n')
				FAIL("line %d: unterminated label value", line);
			if (*p == '\\') {
				p++;
				if (*p != '\\' && *p != '"' && *p != 'n')
					FAIL("line %d: bad escape \\%c", line, *p);
			}
			if (vn + 1 < sizeof(val))
				val[vn++] = *p;
		}
		val[vn] = '\0';
		p++;
		if (kn == 2 && !strncmp(k, "le", 2)) {
			snprintf(le, le_len, "%s", val);
		} else {
			int w = snprintf(rest + rn, rest_len - rn, "%s%.*s",
					 rn ? "," : "", (int)(p - k), k);

			rn += (size_t)w;
			if (rn >= rest_len)
				FAIL("line %d: labels too long", line);
		}
		if (*p == ',')
			p++;
		else if (*p != '}')
			FAIL("line %d: expected , or } after a label", line);
	}
	*pp = p + 1;
}

static double p_number(const char *s, int line)
{
	char *end;
	double v;

	if (!strcmp(s, "+Inf"))
		return INFINITY;
	if (!strcmp(s, "-Inf"))
		return -INFINITY;
	if (!strcmp(s, "NaN"))
		return NAN;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || isinf(v) || isnan(v))
		FAIL("line %d: bad number '%s'", line, s);
	return v;
}

/* Check the whole text, keep every sample for lookups. */
static void prom_parse(struct prom *pr, const char *text)
{
	const char *p = text;
	struct p_family *cur = NULL;
	bool help_pending = false;
	char help_name[128] = "";
	int line = 0;

	memset(pr, 0, sizeof(*pr));
	pr->s = calloc(P_MAX_SAMPLES, sizeof(*pr->s));
	pr->f = calloc(P_MAX_FAMILIES, sizeof(*pr->f));
	CHECK(pr->s && pr->f);
	if (*text == '\0')
		FAIL("empty exposition");
	if (text[strlen(text) - 1] != '\n')
		FAIL("exposition does not end with a newline");
	while (*p) {
		const char *eol = strchr(p, '\n');
		char l[1024];
		size_t n = (size_t)(eol - p);

		line++;
		if (n >= sizeof(l))
			FAIL("line %d: too long", line);
		memcpy(l, p, n);
		l[n] = '\0';
		p = eol + 1;
		if (n == 0)
			FAIL("line %d: empty line", line);
		if (l[0] == '#') {
			char name[128], rest[512];

			if (sscanf(l, "# HELP %127s %511[^\n]", name, rest) == 2) {
				if (!name_ok(name, strlen(name)))
					FAIL("line %d: bad name %s", line, name);
				for (int i = 0; i < pr->n_fam; i++)
					if (!strcmp(pr->f[i].name, name))
						FAIL("line %d: family %s again",
						     line, name);
				if (help_pending)
					FAIL("line %d: HELP of %s without TYPE",
					     line, help_name);
				snprintf(help_name, sizeof(help_name), "%s", name);
				help_pending = true;
				continue;
			}
			if (sscanf(l, "# TYPE %127s %511s", name, rest) == 2) {
				if (!help_pending || strcmp(name, help_name))
					FAIL("line %d: TYPE %s without its HELP "
					     "just before", line, name);
				if (strcmp(rest, "counter") &&
				    strcmp(rest, "gauge") &&
				    strcmp(rest, "histogram"))
					FAIL("line %d: unexpected type %s",
					     line, rest);
				if (!strcmp(rest, "counter") &&
				    !ends_with(name, "_total"))
					FAIL("line %d: counter %s without _total",
					     line, name);
				if (strcmp(rest, "counter") &&
				    ends_with(name, "_total"))
					FAIL("line %d: %s %s ends in _total",
					     line, rest, name);
				if (pr->n_fam == P_MAX_FAMILIES)
					FAIL("too many families");
				cur = &pr->f[pr->n_fam++];
				snprintf(cur->name, sizeof(cur->name), "%s", name);
				snprintf(cur->type, sizeof(cur->type), "%s", rest);
				help_pending = false;
				continue;
			}
			FAIL("line %d: unexpected comment '%s'", line, l);
		}
		/* A sample: name[{labels}] value */
		{
			struct p_sample *s;
			const char *q = l;
			char le[64], labels[400], base[128], vbuf[64];
			size_t nn;

			while (*q && *q != '{' && *q != ' ')
				q++;
			nn = (size_t)(q - l);
			if (!name_ok(l, nn) || nn >= sizeof(base))
				FAIL("line %d: bad sample name in '%s'", line, l);
			if (!cur || help_pending)
				FAIL("line %d: sample before HELP and TYPE", line);
			if (pr->n == P_MAX_SAMPLES)
				FAIL("too many samples");
			s = &pr->s[pr->n++];
			snprintf(s->name, sizeof(s->name), "%.*s", (int)nn, l);
			le[0] = labels[0] = '\0';
			if (*q == '{') {
				q++;
				p_labels(&q, le, sizeof(le), labels,
					 sizeof(labels), line);
			}
			snprintf(s->series, sizeof(s->series), "%.*s",
				 (int)(q - l), l);
			if (*q != ' ' || q[1] == ' ' || q[1] == '\0')
				FAIL("line %d: expected one space and a value",
				     line);
			if (strchr(q + 1, ' '))
				FAIL("line %d: trailing fields (timestamps are "
				     "not expected)", line);
			snprintf(vbuf, sizeof(vbuf), "%s", q + 1);
			s->value = p_number(vbuf, line);
			for (int i = 0; i < pr->n - 1; i++)
				if (!strcmp(pr->s[i].series, s->series))
					FAIL("line %d: series %s twice", line,
					     s->series);
			snprintf(base, sizeof(base), "%s", s->name);
			if (strcmp(cur->type, "histogram")) {
				if (strcmp(s->name, cur->name))
					FAIL("line %d: sample %s in family %s",
					     line, s->name, cur->name);
				if (le[0])
					FAIL("line %d: le outside a histogram",
					     line);
				if (s->value < 0)
					FAIL("line %d: negative value", line);
				continue;
			}
			{
				size_t fl = strlen(cur->name);
				const char *suf = s->name + fl;
				struct p_group *g;

				if (strncmp(s->name, cur->name, fl) ||
				    (strcmp(suf, "_bucket") && strcmp(suf, "_sum") &&
				     strcmp(suf, "_count")))
					FAIL("line %d: sample %s in histogram %s",
					     line, s->name, cur->name);
				g = p_group(cur, labels, line);
				if (!strcmp(suf, "_bucket")) {
					double lev;

					if (!le[0])
						FAIL("line %d: bucket without le",
						     line);
					if (g->inf)
						FAIL("line %d: bucket after +Inf",
						     line);
					lev = p_number(le, line);
					if (!(lev > g->last_le))
						FAIL("line %d: le %s not increasing",
						     line, le);
					if (s->value < g->last_count)
						FAIL("line %d: buckets not "
						     "cumulative", line);
					g->last_le = lev;
					g->last_count = s->value;
					g->n_buckets++;
					if (isinf(lev)) {
						g->inf = true;
						g->inf_count = s->value;
					}
				} else if (le[0]) {
					FAIL("line %d: le on %s", line, s->name);
				} else if (!strcmp(suf, "_sum")) {
					g->has_sum = true;
				} else {
					if (!g->inf)
						FAIL("line %d: _count before the "
						     "+Inf bucket", line);
					g->has_count = true;
					g->count = s->value;
				}
			}
		}
	}
	if (help_pending)
		FAIL("HELP of %s without TYPE at the end", help_name);
	for (int i = 0; i < pr->n_fam; i++) {
		struct p_family *f = &pr->f[i];

		for (int j = 0; j < f->n_groups; j++) {
			struct p_group *g = &f->groups[j];

			if (!g->inf || !g->has_sum || !g->has_count)
				FAIL("histogram %s{%s}: missing +Inf, _sum or "
				     "_count", f->name, g->labels);
			if (g->inf_count != g->count)
				FAIL("histogram %s{%s}: +Inf bucket %.0f != "
				     "_count %.0f", f->name, g->labels,
				     g->inf_count, g->count);
		}
	}
}

static void prom_free(struct prom *pr)
{
	free(pr->s);
	free(pr->f);
}

static bool prom_has(const struct prom *pr, const char *series)
{
	for (int i = 0; i < pr->n; i++)
		if (!strcmp(pr->s[i].series, series))
			return true;
	return false;
}

static bool prom_has_family(const struct prom *pr, const char *name)
{
	for (int i = 0; i < pr->n_fam; i++)
		if (!strcmp(pr->f[i].name, name))
			return true;
	return false;
}

/* The sum of a family's labeled series name{...}. */
static double prom_sum(const struct prom *pr, const char *name)
{
	size_t n = strlen(name);
	double sum = 0;

	for (int i = 0; i < pr->n; i++)
		if (!strncmp(pr->s[i].series, name, n) &&
		    pr->s[i].series[n] == '{')
			sum += pr->s[i].value;
	return sum;
}

static double prom_get(const struct prom *pr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static double prom_get(const struct prom *pr, const char *fmt, ...)
{
	char series[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(series, sizeof(series), fmt, ap);
	va_end(ap);
	for (int i = 0; i < pr->n; i++)
		if (!strcmp(pr->s[i].series, series))
			return pr->s[i].value;
	FAIL("no series %s", series);
}

/* Render into a malloc'd string, checking the snprintf-like contract. */
static char *render(rift_ctx *ctx, int (*fn)(rift_ctx *, char *, size_t))
{
	int n = fn(ctx, NULL, 0), m;
	char small[16], *buf;

	CHECK(n > 0);
	memset(small, 'x', sizeof(small));
	CHECK_EQ(fn(ctx, small, sizeof(small)), n);
	CHECK_EQ(strlen(small), sizeof(small) - 1);
	buf = malloc((size_t)n + 1);
	CHECK(buf != NULL);
	m = fn(ctx, buf, (size_t)n + 1);
	CHECK_EQ(m, n);
	CHECK_EQ(strlen(buf), (size_t)n);
	CHECK(strncmp(buf, small, sizeof(small) - 1) == 0);
	/* Exactly one byte short: cut, same length reported. */
	CHECK_EQ(fn(ctx, buf, (size_t)n), n);
	CHECK_EQ(strlen(buf), (size_t)n - 1);
	CHECK_EQ(fn(ctx, buf, (size_t)n + 1), n);
	return buf;
}

/* The conn="..." label of the client or the server connection. */
static void conn_id(const struct prom *pr, const char *role, char *out,
		    size_t len)
{
	char want[32];

	snprintf(want, sizeof(want), ",role=\"%s\"", role);
	for (int i = 0; i < pr->n; i++) {
		const char *s = pr->s[i].series;

		if (!strcmp(pr->s[i].name, "rift_conn_info") && strstr(s, want)) {
			snprintf(out, len, "%.*s", 16,
				 strstr(s, "conn=\"") + 6);
			return;
		}
	}
	FAIL("no rift_conn_info for role %s", role);
}

/* ---- tests ---- */

/* Client sends n messages, server only receives; wait until all acked. */
static uint64_t one_way(rift_ctx *ctx, struct side *srv, struct side *cli,
			rift_conn *c, uint64_t n)
{
	uint64_t sent = 0, bytes = 0, end = h_now_us() + 30000000u;
	rift_conn_stats st;

	while (sent < n && h_now_us() < end) {
		int rc = h_send(c, 3, sent, 4000);

		if (rc == RIFT_EAGAIN) {
			rift_ctx_run(ctx, 1);
			continue;
		}
		CHECK_EQ(rc, 0);
		bytes += h_size(3, sent, 4000);
		sent++;
		if (sent % 64 == 0)
			rift_ctx_progress(ctx);
	}
	CHECK(h_wait_u64(ctx, &srv->recv_count, n, 20000));
	rift_conn_stats_init(&st);
	do {
		rift_ctx_run(ctx, 2);
		CHECK_EQ(rift_conn_stats_get(c, &st), 0);
	} while (st.unacked_msgs && h_now_us() < end);
	CHECK_EQ(st.unacked_msgs, 0);
	CHECK_EQ(srv->recv_bytes, bytes);
	CHECK_EQ(cli->recv_count, 0);
	return bytes;
}

TEST_T(metrics_count_real_traffic)
{
	const uint64_t n = 2000;
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l = h_listen(ctx, &srv);
	rift_conn *c = h_connect(ctx, rift_listener_port(l), &cli);
	const char *tr = rt_transport();
	rift_ctx_stats cs;
	rift_conn_stats st;
	uint64_t bytes, v, cnt, p50, p99;
	char *text, cid[17], sid[17];
	struct prom pr;
	rift_conn *conns[2];

	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	bytes = one_way(ctx, &srv, &cli, c, n);

	rift_ctx_stats_init(&cs);
	CHECK_EQ(rift_ctx_stats_get(ctx, &cs), 0);
	CHECK_EQ(cs.msgs_sent, n);
	CHECK_EQ(cs.bytes_sent, bytes);
	CHECK_EQ(cs.msgs_recv, n);
	CHECK_EQ(cs.bytes_recv, bytes);
	/* The pool's own figures (receive buffers and send slots over
	 * RDMA); a context that never needed the pool has none. */
	if (ctx->pool) {
		struct rift__pool_usage u;

		/* the pool's grower may have committed a region since */
		rift__pool_usage(ctx->pool, &u);
		CHECK(cs.pool_registered_bytes <= u.registered + u.large_bytes);
		CHECK(cs.pool_registered_bytes > 0);
		for (int k = 0; k < RIFT_BLOCK_CLASSES; k++)
			CHECK_EQ(cs.pool_blocks_in_use[k], u.blocks_in_use[k]);
	} else {
		CHECK_EQ(cs.pool_registered_bytes, 0);
	}
	if (!strcmp(tr, "rdma"))
		CHECK(cs.pool_blocks_in_use[0] > 0);
	CHECK_EQ(cs.connect_attempts, 1);
	CHECK_EQ(cs.connect_retries, 0);
	CHECK_EQ(cs.failovers + cs.path_downs + cs.keepalive_timeouts, 0);
	rift_conn_stats_init(&st);
	CHECK_EQ(rift_conn_stats_get(c, &st), 0);
	CHECK_EQ(st.connect_attempts, 1);
	CHECK_EQ(st.msgs_sent, n);

	CHECK_EQ(rift_metrics_latency(ctx, NULL, RIFT_LATENCY_ACK, 0.5, &p50,
				      &cnt), 0);
	CHECK_EQ(cnt, n);
	CHECK_EQ(rift_metrics_latency(ctx, c, RIFT_LATENCY_ACK, 0.99, &p99,
				      &cnt), 0);
	CHECK_EQ(cnt, n);
	CHECK(p50 <= p99);
	CHECK(p99 < 20000000u);
	CHECK_EQ(rift_metrics_latency(ctx, srv.conn, RIFT_LATENCY_ACK, 1, &v,
				      &cnt), 0);
	CHECK_EQ(cnt, 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(rift_metrics_latency(ctx, NULL, RIFT_LATENCY_REATTACH, 0.5,
				      NULL, &cnt), 0);
	CHECK_EQ(cnt, 0);
	CHECK_EQ(rift_metrics_latency(ctx, NULL, RIFT_LATENCY_ACK, 1.5, &v,
				      NULL), RIFT_EINVAL);
	CHECK_EQ(rift_metrics_latency(ctx, NULL, RIFT_LATENCY__COUNT, 0.5, &v,
				      NULL), RIFT_EINVAL);
	CHECK_EQ(rift_metrics_latency(NULL, NULL, RIFT_LATENCY_ACK, 0.5, &v,
				      NULL), RIFT_EINVAL);

	text = render(ctx, rift_metrics_prometheus);
	prom_parse(&pr, text);
	CHECK_EQ(prom_get(&pr, "rift_ops_total{kind=\"send\"}"), n);
	CHECK_EQ(prom_get(&pr, "rift_ops_total{kind=\"recv\"}"), n);
	/* nothing that is zero by construction: no one-sided kinds yet */
	CHECK(!prom_has(&pr, "rift_ops_total{kind=\"read\"}"));
	CHECK(!prom_has(&pr, "rift_bytes_total{kind=\"write\"}"));
	CHECK(!prom_has_family(&pr, "rift_conn_failbacks_total"));
	CHECK(!prom_has(&pr, "rift_fallbacks_total{reason=\"not_built\"}"));
	CHECK_EQ(prom_get(&pr, "rift_bytes_total{kind=\"send\"}"), bytes);
	CHECK_EQ(prom_get(&pr, "rift_bytes_total{kind=\"recv\"}"), bytes);
	CHECK_EQ(prom_get(&pr, "rift_ack_latency_seconds_count"), n);
	CHECK_EQ(prom_get(&pr, "rift_ack_latency_seconds_bucket{le=\"+Inf\"}"),
		 n);
	CHECK(prom_get(&pr, "rift_ack_latency_seconds_sum") > 0 ||
	      p99 == 0);
	CHECK_EQ(prom_get(&pr, "rift_reattach_seconds_count"), 0);
	CHECK_EQ(prom_get(&pr, "rift_connections_active{transport=\"%s\"}", tr),
		 2);
	CHECK_EQ(prom_get(&pr, "rift_paths_active{transport=\"%s\"}", tr), 2);
	CHECK_EQ(prom_get(&pr, "rift_listeners_active"), 1);
	CHECK_EQ(prom_get(&pr, "rift_connect_attempts_total"), 1);
	CHECK_EQ(prom_get(&pr, "rift_connect_retries_total"), 0);
	CHECK_EQ(prom_get(&pr, "rift_unacked_messages"), 0);
	CHECK_EQ(prom_get(&pr, "rift_fallbacks_total{reason=\"no_device\"}"),
		 0);
	CHECK_EQ(prom_get(&pr, "rift_pool_blocks_in_use{class=\"0\","
			       "block_size=\"%u\"}", ctx->cfg.block_size[0]),
		 cs.pool_blocks_in_use[0]);
	CHECK_EQ(prom_get(&pr, "rift_pool_registered_bytes"),
		 cs.pool_registered_bytes);
	CHECK(prom_has_family(&pr, "rift_completion_errors_total"));

	conn_id(&pr, "client", cid, sizeof(cid));
	conn_id(&pr, "server", sid, sizeof(sid));
	CHECK_STR(cid, sid); /* one session, seen from both ends */
	CHECK_EQ(prom_get(&pr, "rift_conn_ops_total{conn=\"%s\",role=\"client\","
			       "kind=\"send\"}", cid), n);
	CHECK_EQ(prom_get(&pr, "rift_conn_ops_total{conn=\"%s\",role=\"server\","
			       "kind=\"recv\"}", sid), n);
	CHECK_EQ(prom_get(&pr, "rift_conn_bytes_total{conn=\"%s\","
			       "role=\"client\",kind=\"send\"}", cid), bytes);
	CHECK_EQ(prom_get(&pr, "rift_conn_ack_latency_seconds_count{conn=\"%s\","
			       "role=\"client\"}", cid), n);
	CHECK_EQ(prom_get(&pr, "rift_conn_ack_latency_seconds_count{conn=\"%s\","
			       "role=\"server\"}", sid), 0);
	CHECK_EQ(prom_get(&pr, "rift_conn_connect_attempts_total{conn=\"%s\","
			       "role=\"client\"}", cid), 1);
	CHECK_EQ(prom_get(&pr, "rift_conn_ack_latency_seconds_bucket{conn=\"%s\","
			       "role=\"client\",le=\"+Inf\"}", cid), n);
	prom_free(&pr);
	free(text);

	text = render(ctx, rift_metrics_info);
	CHECK(strncmp(text, "# Server\r\n", 10) == 0);
	CHECK_CONTAINS(text, "\r\n\r\n# Connections\r\nconnections_active:2\r\n");
	CHECK_CONTAINS(text, "# Sessions\r\n");
	CHECK_CONTAINS(text, "# Traffic\r\n");
	CHECK_CONTAINS(text, "# Transport\r\n");
	CHECK_CONTAINS(text, "# Errors\r\n");
	CHECK_CONTAINS(text, "# Latency\r\n");
	CHECK_CONTAINS(text, "# Pool\r\n");
	CHECK_CONTAINS(text, "listeners_active:1\r\n");
	CHECK_CONTAINS(text, "fallback_no_device:0\r\n");
	CHECK_CONTAINS(text, "completion_errors:0\r\n");
	CHECK_CONTAINS(text, "pool_class0_block_size:8192\r\n");
	{
		char want[64];

		snprintf(want, sizeof(want), "\r\nmsgs_sent:%llu\r\n",
			 (unsigned long long)n);
		CHECK_CONTAINS(text, want);
		snprintf(want, sizeof(want), "\r\nbytes_recv:%llu\r\n",
			 (unsigned long long)bytes);
		CHECK_CONTAINS(text, want);
		snprintf(want, sizeof(want), "\r\nack_latency_count:%llu\r\n",
			 (unsigned long long)n);
		CHECK_CONTAINS(text, want);
		snprintf(want, sizeof(want), "\r\nack_latency_p50_us:%llu\r\n",
			 (unsigned long long)p50);
		CHECK_CONTAINS(text, want);
		snprintf(want, sizeof(want), "\r\nconnections_%s:2\r\n", tr);
		CHECK_CONTAINS(text, want);
	}
	/* Every line is "# Section", "key:value" or the blank separator. */
	for (char *line = text; *line;) {
		char *eol = strstr(line, "\r\n");
		char *colon;

		CHECK(eol != NULL);
		if (eol != line && line[0] != '#') {
			colon = memchr(line, ':', (size_t)(eol - line));
			CHECK(colon != NULL && colon > line);
			for (char *k = line; k < colon; k++)
				CHECK(islower((unsigned char)*k) ||
				      isdigit((unsigned char)*k) || *k == '_');
		}
		line = eol + 2;
	}
	free(text);

	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

TEST_T(metrics_reattach_time_and_failover_counters)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l;
	rift_conn *c, *conns[2];
	rift_ctx_stats cs;
	uint64_t cnt, v;
	char *text;
	struct prom pr;

	cfg.retry_delay_ms = 5;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	c = h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	one_way(ctx, &srv, &cli, c, 100);
	CHECK_EQ(rift__conn_cut(c), 0);
	CHECK(h_wait(ctx, &cli.path_changed, 10000));
	/* Messages sent while detached are acked after the re-attach. */
	for (int i = 0; i < 10; i++)
		CHECK_EQ(h_send(c, 3, 100 + (uint64_t)i, 4000), 0);
	CHECK(h_wait_u64(ctx, &srv.recv_count, 110, 10000));

	CHECK_EQ(rift_metrics_latency(ctx, c, RIFT_LATENCY_REATTACH, 1, &v,
				      &cnt), 0);
	CHECK_EQ(cnt, 1);
	CHECK(v < 10000000u);
	rift_ctx_stats_init(&cs);
	CHECK_EQ(rift_ctx_stats_get(ctx, &cs), 0);
	CHECK(cs.failovers >= 1);
	CHECK(cs.path_downs >= 1);
	text = render(ctx, rift_metrics_prometheus);
	prom_parse(&pr, text);
	CHECK(prom_get(&pr, "rift_reattach_seconds_count") >= 1);
	CHECK_EQ(prom_get(&pr, "rift_failovers_total"), cs.failovers);
	CHECK_EQ(prom_sum(&pr, "rift_path_downs_total"), cs.path_downs);
	CHECK(prom_get(&pr, "rift_connect_attempts_total") >= 2);
	prom_free(&pr);
	free(text);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * A PATH_DOWN says why (rift_path_down_reason), and the context counts
 * path downs by reason: the stats, rift_path_downs_total{reason} (one
 * series per reason, summing to the total) and INFO's path_down_<reason>.
 * The client's path failed on its own side here: LOCAL.
 */
TEST_T(path_downs_are_counted_by_reason)
{
	rift_ctx *ctx = h_ctx(NULL);
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l;
	rift_conn *c, *conns[2];
	rift_ctx_stats cs;
	double sum = 0;
	char *text;
	struct prom pr;

	l = h_listen(ctx, &srv);
	c = h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	one_way(ctx, &srv, &cli, c, 10);
	CHECK_EQ(rift__conn_fail(c), 0);
	CHECK_EQ(cli.path_down, 1);
	CHECK_EQ(cli.last_down_reason, RIFT_PATH_DOWN_LOCAL);
	CHECK(h_wait(ctx, &cli.path_changed, 10000));
	rift_ctx_stats_init(&cs);
	CHECK_EQ(rift_ctx_stats_get(ctx, &cs), 0);
	CHECK(cs.path_downs_by[RIFT_PATH_DOWN_LOCAL] >= 1);
	CHECK_EQ(cs.path_downs_by[RIFT_PATH_DOWN_NONE], 0);

	text = render(ctx, rift_metrics_prometheus);
	prom_parse(&pr, text);
	for (int r = 1; r < RIFT_PATH_DOWN__COUNT; r++) {
		static const char *const names[] = {
			"none", "port", "device", "completion", "stall",
			"keepalive", "timeout", "peer", "network", "local",
		};

		CHECK_EQ(RIFT_ARRAY_SIZE(names), RIFT_PATH_DOWN__COUNT);
		CHECK_EQ(prom_get(&pr, "rift_path_downs_total{reason=\"%s\"}",
				  names[r]),
			 cs.path_downs_by[r]);
		sum += prom_get(&pr, "rift_path_downs_total{reason=\"%s\"}",
				names[r]);
	}
	CHECK_EQ(sum, cs.path_downs);
	CHECK_EQ(prom_sum(&pr, "rift_path_downs_total"), sum);
	CHECK(!prom_has(&pr, "rift_path_downs_total{reason=\"none\"}"));
	prom_free(&pr);
	free(text);
	text = render(ctx, rift_metrics_info);
	{
		char line[64];

		snprintf(line, sizeof(line), "\r\npath_down_local:%llu\r\n",
			 (unsigned long long)cs.path_downs_by[RIFT_PATH_DOWN_LOCAL]);
		CHECK_CONTAINS(text, line);
	}
	free(text);
	CHECK_EQ(strcmp(rift_path_down_reason_str(RIFT_PATH_DOWN_STALL),
			"its sends went unacknowledged past the retransmission "
			"time"),
		 0);
	CHECK_EQ(strcmp(rift_path_down_reason_str(RIFT_PATH_DOWN__COUNT),
			"unknown reason"),
		 0);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

TEST_T(metrics_off_records_no_histograms)
{
	rift_config cfg = h_config();
	rift_ctx *ctx;
	struct side srv = { 0 }, cli = { 0 };
	rift_listener *l;
	rift_conn *c, *conns[2];
	uint64_t cnt = 1;
	char *text;
	struct prom pr;

	cfg.metrics = 0;
	ctx = h_ctx(&cfg);
	l = h_listen(ctx, &srv);
	c = h_connect(ctx, rift_listener_port(l), &cli);
	h_connected(ctx, &cli);
	CHECK(h_wait(ctx, &srv.connected, 5000));
	one_way(ctx, &srv, &cli, c, 200);
	CHECK_EQ(rift_metrics_latency(ctx, NULL, RIFT_LATENCY_ACK, 0.5, NULL,
				      &cnt), 0);
	CHECK_EQ(cnt, 0);
	CHECK_EQ(rift_metrics_latency(ctx, c, RIFT_LATENCY_ACK, 0.5, NULL,
				      &cnt), 0);
	CHECK_EQ(cnt, 0);
	text = render(ctx, rift_metrics_prometheus);
	prom_parse(&pr, text);
	/* Counters are kept; histograms and per-connection series are not. */
	CHECK_EQ(prom_get(&pr, "rift_ops_total{kind=\"send\"}"), 200);
	CHECK(!prom_has_family(&pr, "rift_ack_latency_seconds"));
	CHECK(!strstr(text, "# TYPE rift_conn_"));
	CHECK(!strstr(text, "\nrift_conn_"));
	prom_free(&pr);
	free(text);
	text = render(ctx, rift_metrics_info);
	CHECK_CONTAINS(text, "metrics_enabled:0\r\n");
	CHECK_CONTAINS(text, "ack_latency_count:0\r\n");
	free(text);
	conns[0] = c;
	conns[1] = srv.conn;
	h_teardown(ctx, l, conns, 2);
}

/*
 * The hooks the verbs transport calls, driven directly, and label values
 * that need escaping (a device name is the one free-form string).
 */
TEST(metrics_verbs_hooks_and_escaping)
{
	rift_config cfg;
	rift_ctx *ctx = NULL;
	rift_conn *conn = calloc(1, sizeof(*conn));
	rift__path p = { 0 };
	rift_ctx_stats cs;
	char *text;
	struct prom pr;

	CHECK(conn != NULL);
	rift_config_init(&cfg);
	snprintf(cfg.device, sizeof(cfg.device), "we\"ird\\dev\nice");
	CHECK_EQ(rift_ctx_create(&ctx, &cfg), 0);
	conn->ctx = ctx;
	rift_conn_stats_init(&conn->stats);
	p.ctx = ctx;
	p.conn = conn;

	rift__metrics_wc_error(&p, 5);  /* IBV_WC_WR_FLUSH_ERR */
	rift__metrics_wc_error(&p, 5);
	rift__metrics_wc_error(&p, 12); /* IBV_WC_RETRY_EXC_ERR */
	rift__metrics_wc_error(&p, 27);
	rift__metrics_wc_error(&p, 99);
	rift__metrics_wc_error(&p, -1);
	p.conn = NULL; /* a path still in its handshake */
	rift__metrics_wc_error(&p, 1);
	rift__metrics_credit_stall(&p, true);
	p.conn = conn;
	/* Episodes: only entering the stalled state counts. */
	rift__metrics_credit_stall(&p, true);
	rift__metrics_credit_stall(&p, true);
	rift__metrics_credit_stall(&p, false);
	rift__metrics_credit_stall(&p, true);
	rift__metrics_keepalive_timeout(&p);

	rift_ctx_stats_init(&cs);
	CHECK_EQ(rift_ctx_stats_get(ctx, &cs), 0);
	CHECK_EQ(cs.wc_errors[5], 2);
	CHECK_EQ(cs.wc_errors[12], 1);
	CHECK_EQ(cs.wc_errors[27], 1);
	CHECK_EQ(cs.wc_errors[1], 1);
	CHECK_EQ(cs.wc_errors[RIFT_WC_STATUS_OTHER], 2);
	CHECK_EQ(conn->stats.wc_errors, 6);
	CHECK_EQ(cs.credit_stalls, 2);
	CHECK_EQ(conn->stats.credit_stalls, 2);
	CHECK_EQ(cs.keepalive_timeouts, 1);

	text = render(ctx, rift_metrics_prometheus);
	prom_parse(&pr, text);
	CHECK_EQ(prom_get(&pr, "rift_completion_errors_total{status=\""
			       "wr_flush_err\"}"), 2);
	CHECK_EQ(prom_get(&pr, "rift_completion_errors_total{status=\""
			       "retry_exc_err\"}"), 1);
	CHECK_EQ(prom_get(&pr, "rift_completion_errors_total{status=\""
			       "status_27\"}"), 1);
	CHECK_EQ(prom_get(&pr, "rift_completion_errors_total{status=\""
			       "other\"}"), 2);
	CHECK(!prom_has(&pr, "rift_completion_errors_total{status=\""
			     "success\"}"));
	CHECK_EQ(prom_get(&pr, "rift_credit_stalls_total"), 2);
	CHECK_CONTAINS(text, "device=\"we\\\"ird\\\\dev\\nice\"");
	prom_free(&pr);
	free(text);

	text = render(ctx, rift_metrics_info);
	CHECK_CONTAINS(text, "\r\ndevice:we\"ird\\dev?ice\r\n");
	CHECK_CONTAINS(text, "\r\ncompletion_errors:7\r\n");
	CHECK_CONTAINS(text, "\r\ncompletion_errors_wr_flush_err:2\r\n");
	CHECK_CONTAINS(text, "\r\ncredit_stalls:2\r\n");
	free(text);

	CHECK_EQ(rift_metrics_prometheus(NULL, NULL, 0), RIFT_EINVAL);
	CHECK_EQ(rift_metrics_info(ctx, NULL, 5), RIFT_EINVAL);
	free(conn);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}
