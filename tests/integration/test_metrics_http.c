/*
 * rift-perf --metrics-port as an operator uses it: build/bin/rift-perf
 * (built by `make all`) runs as a child, and the test scrapes it with a
 * plain-socket HTTP GET (no curl), the way Prometheus would.
 *
 *  - the text format is checked line by line: HELP and TYPE once per
 *    family and before its samples, sample syntax, families contiguous,
 *    no duplicate series, counters ending in _total, histogram buckets
 *    cumulative with +Inf equal to _count, a side label on every sample;
 *  - loopback (two contexts), and a persistent server scraped while a
 *    client runs: counters grow, connections show up and go away;
 *  - /info, a 404, a busy port, and option errors.
 *
 * All of it is TCP only, so these are TEST, not TEST_T.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define HTTP_MAX      (4 * 1024 * 1024)
#define OUT_MAX	      (64 * 1024)
#define RUN_TIMEOUT_S 60

static const char *perf_path(void)
{
	return h_tool_path("rift-perf");
}

/* ---- child processes ---- */

struct child {
	pid_t pid;
	int out, err; /* unlinked temporary files */
};

static int tmp_fd(void)
{
	char path[] = "/tmp/rift-metrics-test-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	unlink(path);
	return fd;
}

/* Start rift-perf with args (NULL-terminated). */
static void start(struct child *c, const char *const *args)
{
	const char *argv[64];
	int n = 0;

	argv[n++] = perf_path();
	printf("$ rift-perf");
	for (; *args && n < 63; args++) {
		printf(" %s", *args);
		argv[n++] = *args;
	}
	printf("\n");
	argv[n] = NULL;
	c->out = tmp_fd();
	c->err = tmp_fd();
	fflush(NULL);
	c->pid = fork();
	CHECK(c->pid >= 0);
	if (c->pid == 0) {
		dup2(c->out, STDOUT_FILENO);
		dup2(c->err, STDERR_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
}

static void slurp(int fd, char *buf, size_t len)
{
	ssize_t n;
	size_t got = 0;

	lseek(fd, 0, SEEK_SET);
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
}

/* Wait for the child; its exit status (-1: killed).  out/err filled. */
static int finish(struct child *c, char *out, char *err)
{
	time_t end = time(NULL) + RUN_TIMEOUT_S;
	int status;

	for (;;) {
		pid_t r = waitpid(c->pid, &status, WNOHANG);

		if (r == c->pid)
			break;
		if (time(NULL) > end) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &status, 0);
			FAIL("rift-perf did not finish within %d s",
			     RUN_TIMEOUT_S);
		}
		usleep(5000);
	}
	slurp(c->out, out, OUT_MAX);
	slurp(c->err, err, OUT_MAX);
	close(c->out);
	close(c->err);
	printf("-> exit %d\n--- stdout\n%s--- stderr\n%s---\n",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, err);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- HTTP ---- */

struct resp {
	int status;
	char head[4096]; /* status line and headers */
	char *body;	 /* NUL-terminated, in buf */
	char buf[HTTP_MAX];
};

/*
 * GET path from 127.0.0.1:port with a plain socket, retrying while the
 * port refuses (the child is starting).  Returns 0, or -1 if nothing
 * answered within wait_ms.
 */
static int http_get(int port, const char *path, struct resp *r, int wait_ms)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char req[256];
	size_t got = 0;
	ssize_t n;
	char *sep;
	int fd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(fd >= 0);
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		close(fd);
		if (errno != ECONNREFUSED || wait_ms <= 0)
			return -1;
		usleep(20000);
		wait_ms -= 20;
	}
	n = snprintf(req, sizeof(req),
		     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		     "User-Agent: rift-tests\r\nAccept: text/plain\r\n"
		     "Connection: close\r\n\r\n",
		     path, port);
	CHECK(write(fd, req, (size_t)n) == n);
	while (got < sizeof(r->buf) - 1 &&
	       (n = read(fd, r->buf + got, sizeof(r->buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	r->buf[got] = '\0';
	sep = strstr(r->buf, "\r\n\r\n");
	if (!sep)
		FAIL("GET %s: no end of headers in %zu bytes", path, got);
	snprintf(r->head, sizeof(r->head), "%.*s", (int)(sep - r->buf), r->buf);
	r->body = sep + 4;
	if (sscanf(r->buf, "HTTP/1.%*d %d", &r->status) != 1)
		FAIL("GET %s: bad status line in '%.40s'", path, r->buf);
	return 0;
}

static struct resp *get(int port, const char *path)
{
	static struct resp *r;

	if (!r)
		r = malloc(sizeof(*r));
	CHECK(r);
	if (http_get(port, path, r, 10000))
		FAIL("GET http://127.0.0.1:%d%s: no answer", port, path);
	return r;
}

/* ---- the Prometheus text format 0.0.4 ---- */

struct series {
	char name[128];
	char labels[1024]; /* as written, without le for buckets */
	double v;
};

struct hist {		/* the histogram series being read */
	char key[1200]; /* name + labels without le */
	double last_le, last_count;
	bool inf_seen;
	double inf_count;
};

struct prom {
	struct series *s; /* every sample */
	size_t n, cap;
	int families, histograms, buckets;
};

static bool name_char(int c, bool first)
{
	return isalpha(c) || c == '_' || c == ':' || (!first && isdigit(c));
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* Parse a sample line into name, labels (le split off) and value. */
static void parse_sample(const char *line, int lno, struct series *out,
			 char *le, size_t le_len)
{
	const char *p = line;
	char *end;
	size_t n = 0, ln = 0;

	le[0] = '\0';
	if (!name_char((unsigned char)*p, true))
		FAIL("line %d: '%s': no metric name", lno, line);
	while (name_char((unsigned char)*p, false) && n < sizeof(out->name) - 1)
		out->name[n++] = *p++;
	out->name[n] = '\0';
	out->labels[0] = '\0';
	if (*p == '{') {
		p++;
		while (*p != '}') {
			char lname[64], lval[512];
			size_t a = 0, b = 0;

			if (!name_char((unsigned char)*p, true) || *p == ':')
				FAIL("line %d: bad label name at '%s'", lno, p);
			while (name_char((unsigned char)*p, false) &&
			       *p != ':' && a < sizeof(lname) - 1)
				lname[a++] = *p++;
			lname[a] = '\0';
			if (p[0] != '=' || p[1] != '"')
				FAIL("line %d: label %s: no =\"", lno, lname);
			p += 2;
			while (*p != '"') {
				if (!*p || *p == '\n')
					FAIL("line %d: unterminated label %s",
					     lno, lname);
				if (*p == '\\') {
					if (p[1] != '\\' && p[1] != '"' &&
					    p[1] != 'n')
						FAIL("line %d: bad escape in "
						     "%s",
						     lno, lname);
					if (b < sizeof(lval) - 2) {
						lval[b++] = p[0];
						lval[b++] = p[1];
					}
					p += 2;
					continue;
				}
				if (b < sizeof(lval) - 1)
					lval[b++] = *p;
				p++;
			}
			lval[b] = '\0';
			p++;
			if (!strcmp(lname, "le")) {
				snprintf(le, le_len, "%s", lval);
			} else {
				ln += (size_t)snprintf(
					out->labels + ln,
					ln < sizeof(out->labels)
						? sizeof(out->labels) - ln
						: 0,
					"%s%s=\"%s\"", ln ? "," : "", lname,
					lval);
				CHECK(ln < sizeof(out->labels));
			}
			if (*p == ',')
				p++;
			else if (*p != '}')
				FAIL("line %d: expected , or } at '%s'", lno,
				     p);
		}
		p++;
	}
	if (*p != ' ')
		FAIL("line %d: '%s': no space before the value", lno, line);
	p++;
	if (!strncmp(p, "+Inf", 4) || !strncmp(p, "-Inf", 4) ||
	    !strncmp(p, "NaN", 3)) {
		out->v = *p == 'N' ? NAN : *p == '-' ? -INFINITY : INFINITY;
		end = (char *)p + (*p == 'N' ? 3 : 4);
	} else {
		out->v = strtod(p, &end);
		if (end == p)
			FAIL("line %d: '%s': value is not a number", lno, line);
	}
	if (*end == ' ') { /* optional timestamp, ms */
		p = end + 1;
		strtoll(p, &end, 10);
		if (end == p)
			FAIL("line %d: bad timestamp", lno);
	}
	if (*end)
		FAIL("line %d: '%s': junk after the value", lno, line);
}

static double le_value(const char *le, int lno)
{
	char *end;
	double v;

	if (!strcmp(le, "+Inf"))
		return INFINITY;
	v = strtod(le, &end);
	if (end == le || *end)
		FAIL("line %d: le=\"%s\" is not a number", lno, le);
	return v;
}

/* The end of a histogram series: +Inf seen, and equal to _count (later). */
static void hist_close(struct hist *h, int lno)
{
	if (h->key[0] && !h->inf_seen)
		FAIL("line %d: histogram %s has no le=\"+Inf\" bucket", lno,
		     h->key);
	h->key[0] = '\0';
}

/*
 * Check text against the exposition format and the conventions rift
 * follows; fill *pm with every sample.  Fails the test on the first
 * problem, naming the line.
 */
static void prom_check(char *text, struct prom *pm)
{
	char fam[128] = "", type[32] = "", help_of[128] = "";
	char closed[256][128]; /* families already finished */
	int n_closed = 0, lno = 0;
	struct hist h = {0};
	char *save = NULL;

	memset(pm, 0, sizeof(*pm));
	CHECK(text[0] != '\0');
	CHECK(text[strlen(text) - 1] == '\n');
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[128], rest[32], le[64];
		struct series s;

		lno++;
		if (!strncmp(line, "# HELP ", 7) ||
		    !strncmp(line, "# TYPE ", 7)) {
			bool is_type = line[2] == 'T';

			if (sscanf(line + 7, "%127s %31s", name, rest) < 1)
				FAIL("line %d: '%s'", lno, line);
			for (int i = 0; i < n_closed; i++)
				if (!strcmp(closed[i], name))
					FAIL("line %d: family %s appears twice",
					     lno, name);
			if (strcmp(name, fam)) {
				/* a new family: the last one is done */
				hist_close(&h, lno);
				if (fam[0]) {
					CHECK(n_closed < 256);
					snprintf(closed[n_closed++],
						 sizeof(closed[0]), "%s", fam);
				}
				snprintf(fam, sizeof(fam), "%s", name);
				type[0] = help_of[0] = '\0';
				pm->families++;
			}
			if (is_type) {
				if (type[0])
					FAIL("line %d: second TYPE for %s", lno,
					     name);
				snprintf(type, sizeof(type), "%s", rest);
				if (strcmp(type, "counter") &&
				    strcmp(type, "gauge") &&
				    strcmp(type, "histogram") &&
				    strcmp(type, "summary") &&
				    strcmp(type, "untyped"))
					FAIL("line %d: type '%s'", lno, type);
				if (!strcmp(type, "counter") &&
				    !ends_with(name, "_total"))
					FAIL("line %d: counter %s does not end "
					     "in _total",
					     lno, name);
				if (!strcmp(type, "histogram"))
					pm->histograms++;
			} else {
				if (help_of[0])
					FAIL("line %d: second HELP for %s", lno,
					     name);
				snprintf(help_of, sizeof(help_of), "%s", name);
			}
			continue;
		}
		if (line[0] == '#')
			continue; /* a comment */
		if (!type[0])
			FAIL("line %d: '%s': a sample before its TYPE", lno,
			     line);
		parse_sample(line, lno, &s, le, sizeof(le));
		/* the sample belongs to the family announced last */
		if (!strcmp(type, "histogram")) {
			snprintf(name, sizeof(name), "%s_bucket", fam);
			if (!strcmp(s.name, name)) {
				char key[1200];
				double lev = le_value(le, lno);

				if (!le[0])
					FAIL("line %d: bucket without le", lno);
				snprintf(key, sizeof(key), "%s{%s}", fam,
					 s.labels);
				if (strcmp(key, h.key)) {
					hist_close(&h, lno);
					snprintf(h.key, sizeof(h.key), "%s",
						 key);
					h.last_le = -INFINITY;
					h.last_count = 0;
					h.inf_seen = false;
				}
				if (h.inf_seen || !(lev > h.last_le))
					FAIL("line %d: le=\"%s\" out of order",
					     lno, le);
				if (s.v < h.last_count)
					FAIL("line %d: bucket count %g below "
					     "the previous %g: not cumulative",
					     lno, s.v, h.last_count);
				h.last_le = lev;
				h.last_count = s.v;
				if (isinf(lev)) {
					h.inf_seen = true;
					h.inf_count = s.v;
				}
				pm->buckets++;
			} else if (ends_with(s.name, "_count") ||
				   ends_with(s.name, "_sum")) {
				char key[1200];

				snprintf(key, sizeof(key), "%s{%s}", fam,
					 s.labels);
				if (strcmp(key, h.key) || !h.inf_seen)
					FAIL("line %d: %s without its buckets",
					     lno, s.name);
				if (ends_with(s.name, "_count") &&
				    s.v != h.inf_count)
					FAIL("line %d: _count %g != +Inf "
					     "bucket "
					     "%g",
					     lno, s.v, h.inf_count);
				if (strncmp(s.name, fam, strlen(fam)))
					FAIL("line %d: %s in family %s", lno,
					     s.name, fam);
			} else {
				FAIL("line %d: %s in histogram %s", lno, s.name,
				     fam);
			}
			if (le[0])
				snprintf(s.labels + strlen(s.labels),
					 sizeof(s.labels) - strlen(s.labels),
					 ",le=\"%s\"", le);
		} else if (strcmp(s.name, fam)) {
			FAIL("line %d: sample %s in family %s", lno, s.name,
			     fam);
		} else if (le[0]) {
			FAIL("line %d: le label outside a histogram", lno);
		}
		if (strncmp(s.labels, "side=\"", 6))
			FAIL("line %d: '%s' has no side label first", lno,
			     line);
		for (size_t i = 0; i < pm->n; i++)
			if (!strcmp(pm->s[i].name, s.name) &&
			    !strcmp(pm->s[i].labels, s.labels))
				FAIL("line %d: duplicate series %s{%s}", lno,
				     s.name, s.labels);
		if (pm->n == pm->cap) {
			pm->cap = pm->cap ? pm->cap * 2 : 256;
			pm->s = realloc(pm->s, pm->cap * sizeof(*pm->s));
			CHECK(pm->s);
		}
		pm->s[pm->n++] = s;
	}
	hist_close(&h, lno);
}

/* The value of name{labels}; labels exactly as written.  -1 if absent. */
static double value(const struct prom *pm, const char *name, const char *labels)
{
	for (size_t i = 0; i < pm->n; i++)
		if (!strcmp(pm->s[i].name, name) &&
		    !strcmp(pm->s[i].labels, labels))
			return pm->s[i].v;
	return -1;
}

/* GET /metrics, check the headers and the format, parse into *pm. */
static void scrape(int port, struct prom *pm)
{
	struct resp *r = get(port, "/metrics");

	if (r->status != 200)
		FAIL("GET /metrics: %d\n%s", r->status, r->head);
	CHECK_CONTAINS(r->head, "\r\nContent-Type: text/plain; "
				"version=0.0.4; charset=utf-8");
	free(pm->s);
	prom_check(r->body, pm);
	printf("scrape: %zu samples, %d families (%d histograms, %d "
	       "buckets)\n",
	       pm->n, pm->families, pm->histograms, pm->buckets);
}

/* Samples with side="<side>". */
static int side_samples(const struct prom *pm, const char *side)
{
	char lb[64];
	int n = 0;

	snprintf(lb, sizeof(lb), "side=\"%s\"", side);
	for (size_t i = 0; i < pm->n; i++)
		n += !strncmp(pm->s[i].labels, lb, strlen(lb));
	return n;
}

/*
 * Scrape until name{labels} > min, at most 10 s.  With min above the
 * handful of control messages, the benchmark's own traffic has begun.
 */
static void scrape_until_above(int port, struct prom *pm, const char *name,
			       const char *labels, double min)
{
	for (int i = 0; i < 100; i++) {
		scrape(port, pm);
		if (value(pm, name, labels) > min)
			return;
		usleep(100000);
	}
	FAIL("%s{%s} stayed at %g", name, labels, value(pm, name, labels));
}

/* /info: "# Section" lines, key:value lines, blank lines; \r\n ends. */
static void info_check(int port, const char *const *want)
{
	struct resp *r = get(port, "/info");
	int lines = 0, kv = 0;
	char *save = NULL;

	if (r->status != 200)
		FAIL("GET /info: %d\n%s", r->status, r->head);
	CHECK_CONTAINS(r->head, "\r\nContent-Type: text/plain");
	for (; *want; want++)
		CHECK_CONTAINS(r->body, *want);
	for (char *line = strtok_r(r->body, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t n = strlen(line);
		char *colon;

		lines++;
		if (!n || line[n - 1] != '\r')
			FAIL("/info line %d: '%s' does not end in \\r\\n",
			     lines, line);
		line[--n] = '\0';
		if (!n || line[0] == '#')
			continue;
		colon = strchr(line, ':');
		if (!colon || colon == line)
			FAIL("/info line %d: '%s' is not key:value", lines,
			     line);
		for (char *k = line; k < colon; k++)
			if (!islower((unsigned char)*k) &&
			    !isdigit((unsigned char)*k) && *k != '_')
				FAIL("/info line %d: key '%.*s'", lines,
				     (int)(colon - line), line);
		kv++;
	}
	printf("/info: %d lines, %d key:value\n", lines, kv);
	CHECK(kv > 20);
}

/* ---- the tests ---- */

TEST(metrics_http_loopback_scrape_both_contexts)
{
	char port[16], *out = malloc(OUT_MAX), *err = malloc(OUT_MAX);
	const char *args[] = {
		"--loopback", "--transport",	"tcp", "--test", "bw", "-D",
		"2",	      "--metrics-port", port,  NULL};
	static const char *const info[] = {"# Context\r\nside:server\r\n",
					   "# Context\r\nside:client\r\n",
					   "# Traffic\r\n", "msgs_sent:", NULL};
	struct prom pm = {0};
	struct child c;
	int p = h_free_port();
	struct resp *r;

	CHECK(out && err);
	snprintf(port, sizeof(port), "%d", p);
	start(&c, args);
	scrape_until_above(p, &pm, "rift_ops_total",
			   "side=\"client\",kind=\"send\"", 100);
	/* both contexts, told apart by side, each family once */
	CHECK(value(&pm, "rift_ops_total", "side=\"server\",kind=\"recv\"") >=
	      0);
	CHECK(value(&pm, "rift_listeners_active", "side=\"server\"") == 1);
	CHECK(value(&pm, "rift_listeners_active", "side=\"client\"") == 0);
	CHECK(value(&pm, "rift_connections_active",
		    "side=\"client\",transport=\"tcp\"") == 2);
	CHECK(pm.histograms >= 4); /* ctx and conn: ack, reattach */
	CHECK(value(&pm, "rift_ack_latency_seconds_count", "side=\"client\"") >
	      0);
	/* a second scrape: counters only grow */
	{
		double sent = value(&pm, "rift_ops_total",
				    "side=\"client\",kind=\"send\"");

		usleep(300000);
		scrape(p, &pm);
		CHECK(value(&pm, "rift_ops_total",
			    "side=\"client\",kind=\"send\"") > sent);
		CHECK(value(&pm, "rift_ops_total",
			    "side=\"server\",kind=\"recv\"") > 0);
	}
	info_check(p, info);
	r = get(p, "/nope");
	CHECK_EQ(r->status, 404);
	r = get(p, "/");
	CHECK_EQ(r->status, 404);
	CHECK_EQ(finish(&c, out, err), 0);
	CHECK_CONTAINS(err, "metrics on http://127.0.0.1:");
	CHECK_CONTAINS(out, "BW[Gb/s]");
	free(pm.s);
	free(out);
	free(err);
}

TEST(metrics_http_persistent_server_scraped_while_a_client_runs)
{
	char sport[16], mport[16], *out = malloc(OUT_MAX),
				   *err = malloc(OUT_MAX);
	const char *srv_args[] = {
		"-S",  "--persistent",	 "--transport", "tcp",	     "-p",
		sport, "--metrics-port", mport,		"127.0.0.1", NULL};
	const char *cli_args[] = {"--transport", "tcp", "-p", sport,
				  "--test",	 "bw",	"-D", "2",
				  "127.0.0.1",	 NULL};
	static const char *const info[] = {"# Context\r\nside:server\r\n",
					   "listeners_active:1\r\n", NULL};
	struct prom pm = {0};
	struct child srv, cli;
	int mp = h_free_port();
	double recv1, recv2;

	CHECK(out && err);
	snprintf(sport, sizeof(sport), "%d", h_free_port());
	snprintf(mport, sizeof(mport), "%d", mp);
	start(&srv, srv_args);
	/* Before any client: listening, nothing open, nothing counted.  The
	 * HTTP server answers as soon as it runs, before the server's context
	 * exists (an empty page then, seen on a loaded host): wait for it. */
	for (int i = 0; i < 100; i++) {
		scrape(mp, &pm);
		if (value(&pm, "rift_listeners_active", "side=\"server\"") >= 0)
			break;
		usleep(100000);
	}
	CHECK(value(&pm, "rift_listeners_active", "side=\"server\"") == 1);
	CHECK(value(&pm, "rift_connections_active",
		    "side=\"server\",transport=\"tcp\"") == 0);
	CHECK(value(&pm, "rift_ops_total", "side=\"server\",kind=\"recv\"") ==
	      0);
	CHECK(side_samples(&pm, "server") > 100);
	CHECK_EQ(side_samples(&pm, "client"), 0);
	info_check(mp, info);

	start(&cli, cli_args);
	scrape_until_above(mp, &pm, "rift_ops_total",
			   "side=\"server\",kind=\"recv\"", 100);
	/* During the run: the control and the data connection. */
	CHECK(value(&pm, "rift_connections_active",
		    "side=\"server\",transport=\"tcp\"") == 2);
	CHECK(value(&pm, "rift_paths_active",
		    "side=\"server\",transport=\"tcp\"") == 2);
	recv1 = value(&pm, "rift_ops_total", "side=\"server\",kind=\"recv\"");
	usleep(400000);
	scrape(mp, &pm);
	recv2 = value(&pm, "rift_ops_total", "side=\"server\",kind=\"recv\"");
	printf("server recv: %g then %g\n", recv1, recv2);
	CHECK(recv2 > recv1);
	/* all but the few control messages are 64 KiB */
	CHECK(value(&pm, "rift_bytes_total", "side=\"server\",kind=\"recv\"") >=
	      (recv2 - 10) * 65536);
	CHECK_EQ(finish(&cli, out, err), 0);

	/* The client is gone: its connections too; the counts stay. */
	for (int i = 0; i < 50; i++) {
		scrape(mp, &pm);
		if (value(&pm, "rift_connections_active",
			  "side=\"server\",transport=\"tcp\"") == 0)
			break;
		usleep(100000);
	}
	CHECK(value(&pm, "rift_connections_active",
		    "side=\"server\",transport=\"tcp\"") == 0);
	CHECK(value(&pm, "rift_connections_opened_total", "side=\"server\"") ==
	      2);
	CHECK(value(&pm, "rift_ops_total", "side=\"server\",kind=\"recv\"") >=
	      recv2);
	CHECK_EQ(kill(srv.pid, SIGINT), 0);
	CHECK_EQ(finish(&srv, out, err), 130);
	CHECK_CONTAINS(err, "client done");
	free(pm.s);
	free(out);
	free(err);
}

TEST(metrics_http_busy_port_names_the_option)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	char port[16], want[64], *out = malloc(OUT_MAX), *err = malloc(OUT_MAX);
	const char *args[] = {"--loopback", "--transport",    "tcp", "-n",
			      "10",	    "--metrics-port", port,  NULL};
	struct child c;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(out && err && fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(listen(fd, 1), 0);
	CHECK_EQ(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(port, sizeof(port), "%d", ntohs(sa.sin_port));
	start(&c, args);
	CHECK_EQ(finish(&c, out, err), 1);
	close(fd);
	snprintf(want, sizeof(want),
		 "--metrics-port %s: cannot listen on "
		 "127.0.0.1:%s: ",
		 port, port);
	CHECK_CONTAINS(err, want);
	CHECK_CONTAINS(err, "in use");
	CHECK_STR(out, ""); /* refused before running anything */
	free(out);
	free(err);
}

TEST(metrics_http_option_errors)
{
	static const struct {
		const char *args[6];
		int status;
		const char *says[2];
	} cases[] = {
		{{"--loopback", "--metrics-port", "65536"},
		 2,
		 {"--metrics-port", "out of range"}},
		{{"--loopback", "--metrics-port", "http"},
		 2,
		 {"--metrics-port", "'http'"}},
		{{"--loopback", "--metrics-addr", "127.0.0.1"},
		 2,
		 {"--metrics-addr", "only with --metrics-port"}},
		{{"--loopback", "--metrics-port", "0", "--metrics-addr",
		  "192.0.2.1"}, /* TEST-NET-1: not this host's */
		 1,
		 {"--metrics-port 0: cannot listen on 192.0.2.1:0: ",
		  "assign"}},
	};
	char *out = malloc(OUT_MAX), *err = malloc(OUT_MAX);
	struct child c;

	CHECK(out && err);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		start(&c, cases[i].args);
		CHECK_EQ(finish(&c, out, err), cases[i].status);
		CHECK_CONTAINS(err, cases[i].says[0]);
		CHECK_CONTAINS(err, cases[i].says[1]);
		CHECK_STR(out, "");
	}
	free(out);
	free(err);
}
