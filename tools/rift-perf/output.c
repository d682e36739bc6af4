/*
 * rift-perf's output: the table, as perftest lays it out in at most 80
 * columns, the warnings about steps too short to be stable, and the JSON
 * objects of --json: the client's, the server's, and a failure's before
 * either exists (docs/rift-perf.md has the columns and the schemas).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "perf.h"

static const char *fallback_code(rift_fallback_reason r)
{
	static const char *const names[] = {
#define XX(name, msg) #name,
		RIFT_FALLBACK_MAP(XX)
#undef XX
	};

	return (unsigned)r < RIFT_FALLBACK__COUNT ? names[r] : "UNKNOWN";
}

static const char *polling_name(rift_polling p)
{
	return p == RIFT_POLL_BUSY	 ? "busy"
	       : p == RIFT_POLL_ADAPTIVE ? "adaptive"
					 : "event";
}

void transport_why(const struct client *cl, char *buf, size_t len)
{
	const char *req = cl->o->transport;

	if (cl->fallback != RIFT_FALLBACK_NONE)
		snprintf(buf, len, "%s (auto:// fell back: %s)",
			 rift_transport_name(cl->transport),
			 rift_fallback_reason_str(cl->fallback));
	else if (!strcmp(req, "auto"))
		snprintf(buf, len, "%s (auto:// chose it: RDMA %s)",
			 rift_transport_name(cl->transport),
			 cl->transport == RIFT_TRANSPORT_RDMA ? "available"
							      : "not used");
	else
		snprintf(buf, len, "%s (as requested)",
			 rift_transport_name(cl->transport));
}

/*
 * A header line, " Label           : text", folded at spaces to fit
 * TABLE_WIDTH, later lines under the text; a word longer than a line
 * (a long URL) is cut where the line ends.
 */
static void header_line(const char *label, const char *text)
{
	const int indent = 19, room = TABLE_WIDTH - indent;

	printf(" %-16s: ", label);
	while (*text) {
		int n = (int)strlen(text);

		if (n > room) {
			n = room;
			while (n > 0 && text[n] != ' ')
				n--;
			if (n == 0)
				n = room; /* one word wider than the line */
		}
		printf("%.*s\n", n, text);
		text += n;
		text += strspn(text, " ");
		if (*text)
			printf("%*s", indent, "");
	}
}

__attribute__((format(printf, 2, 3))) static void header_f(const char *label,
							   const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	header_line(label, text);
}

void print_rule(void)
{
	for (int i = 0; i < TABLE_WIDTH; i++)
		putchar('-');
	putchar('\n');
}

/* v in at most w characters: as many decimals as fit, 2 at most. */
static const char *fmt_us(double v, int w, char *buf, size_t len)
{
	for (int dec = 2; dec >= 0; dec--)
		if (snprintf(buf, len, "%.*f", dec, v) <= w)
			return buf;
	snprintf(buf, len, "%.0e", v); /* a round trip of minutes */
	return buf;
}

/* A count in at most w characters: whole, else with k, M or G. */
static const char *fmt_count(uint64_t v, int w, char *buf, size_t len)
{
	static const char units[] = "kMGT";
	double d = (double)v;

	if (snprintf(buf, len, "%" PRIu64, v) <= w)
		return buf;
	for (int u = 0; u < 4; u++) {
		d /= 1000;
		if (snprintf(buf, len, "%.1f%c", d, units[u]) <= w ||
		    snprintf(buf, len, "%.0f%c", d, units[u]) <= w)
			return buf;
	}
	return buf;
}

/* A size in at most w characters: bytes, else as -s takes it (8M). */
static const char *fmt_size(uint64_t v, int w, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	if (snprintf(buf, len, "%" PRIu64, v) <= w)
		return buf;
	while (v >= 1024 && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		return fmt_count(v, w, buf, len);
	snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
	return buf;
}

/*
 * The lat table: the round trip (send to the echo's on_recv; write: to
 * the server's write landing, and this side's write's callback;
 * --notify: to the server's write's RIFT_EVENT_WRITTEN; read: to the
 * READ's callback), and what
 * perftest reports as latency: for send and write half the round trip,
 * one way (its t_typical is the p50 of that); for read the whole of it,
 * as ib_read_lat does not halve (its rtt_factor is 1 for READ, 2 for
 * SEND and WRITE).  Columns: " %-7s %8s", 6 + 1 of " %6s", 2 of " %5s":
 * 78 wide.
 */
#define LAT_W 6 /* a latency column */
#define CPU_W 5 /* a CPU column */

/* perftest's latency from the round trip: 1/2 but for READ. */
static double perftest_factor(const struct opts *o)
{
	return o->op == OP_READ ? 1 : 0.5;
}

void print_header(const struct client *cl)
{
	const struct opts *o = cl->o;
	char why[200];

	transport_why(cl, why, sizeof(why));
	print_rule();
	printf("                    rift-perf: %s %s test\n", op_label(o),
	       o->test == TEST_LAT ? "latency (round trip)" : "bandwidth");
	header_line("Mode", o->mode == MODE_LOOPBACK
				    ? "loopback (server and client in one "
				      "process)"
				    : "client");
	header_line("URL", cl->url);
	header_line("Transport", why);
	header_f("Connections", "%u", o->conns);
	if (o->test == TEST_LAT && o->op == OP_READ)
		header_f("In flight", "%u READ%s per connection", o->qd,
			 o->qd == 1 ? "" : "s");
	else if (o->test == TEST_LAT)
		header_f("In flight", "%u round trip%s per connection", o->qd,
			 o->qd == 1 ? "" : "s");
	else if (o->op != OP_SEND)
		header_f("In flight", "%u %s%s outstanding per connection (-t)",
			 o->qd, o->op == OP_WRITE ? "WRITE" : "READ",
			 o->qd == 1 ? "" : "s");
	else if (o->qd)
		header_f("In flight",
			 "at most %u unacknowledged per connection", o->qd);
	else
		header_f("In flight",
			 "send window (%" PRIu64 " bytes) per connection",
			 (uint64_t)o->cfg.send_window);
	if (o->op == OP_WRITE && o->test == TEST_LAT)
		header_line("Write seen by",
			    o->notify ? "RIFT_EVENT_WRITTEN (--notify: "
					"rift_conn_write_notify)"
				      : "polling its last byte (as "
					"ib_write_lat)");
	if (o->duration > 0)
		header_f("Duration", "%.1f s per size, warm-up %" PRIu64,
			 o->duration, o->warmup);
	else
		header_f("Iterations",
			 "%" PRIu64
			 " per connection and size, warm-up %" PRIu64,
			 o->iters, o->warmup);
	header_line("Polling", polling_name(o->cfg.polling));
	header_line("rift", rift_version_string());
	print_rule();
	if (o->test == TEST_LAT) {
		/* read: perftest's t_typical is the p50 itself */
		bool rd = o->op == OP_READ;

		printf("%17s %-*s %*s %*s\n", "", 6 * (LAT_W + 1) - 1,
		       "------------ round trip [us] ------------", LAT_W,
		       rd ? "t_typ" : "1 way", 2 * CPU_W + 1, "CPU [%]");
		printf(" %-7s %8s %*s %*s %*s %*s %*s %*s %*s %*s %*s\n",
		       "#bytes", "#iters", LAT_W, "min", LAT_W, "p50", LAT_W,
		       "p99", LAT_W, "p99.9", LAT_W, "max", LAT_W, "avg", LAT_W,
		       rd ? "p50" : "p50/2", CPU_W, "cli", CPU_W, "srv");
	} else {
		printf(" %-8s %-11s %10s %10s %15s %8s %8s\n", "#bytes",
		       "#iterations", "BW[GB/s]", "BW[Gb/s]", "MsgRate[Mmsg/s]",
		       "CPU_cli%", "CPU_srv%");
	}
	fflush(stdout);
}

void print_row(const struct client *cl, const struct result *r)
{
	char sz[16], it[16], v[7][16];

	if (cl->o->test == TEST_LAT)
		printf(" %-7s %8s %*s %*s %*s %*s %*s %*s %*s %*.1f %*.1f\n",
		       fmt_size(r->size, 7, sz, sizeof(sz)),
		       fmt_count(r->iters, 8, it, sizeof(it)), LAT_W,
		       fmt_us(r->lat.min, LAT_W, v[0], sizeof(v[0])), LAT_W,
		       fmt_us(r->lat.p50, LAT_W, v[1], sizeof(v[1])), LAT_W,
		       fmt_us(r->lat.p99, LAT_W, v[2], sizeof(v[2])), LAT_W,
		       fmt_us(r->lat.p999, LAT_W, v[3], sizeof(v[3])), LAT_W,
		       fmt_us(r->lat.max, LAT_W, v[4], sizeof(v[4])), LAT_W,
		       fmt_us(r->lat.mean, LAT_W, v[5], sizeof(v[5])), LAT_W,
		       fmt_us(r->lat.p50 * perftest_factor(cl->o), LAT_W, v[6],
			      sizeof(v[6])),
		       CPU_W, r->cpu_cli, CPU_W, r->cpu_srv);
	else
		printf(" %-8s %-11s %10.3f %10.3f %15.4f %8.1f %8.1f\n",
		       fmt_size(r->size, 8, sz, sizeof(sz)),
		       fmt_count(r->iters, 11, it, sizeof(it)), r->gbytes,
		       r->gbits, r->mmsgs, r->cpu_cli, r->cpu_srv);
	fflush(stdout);
}

/* Keep a warning for the report and say it on stderr. */
__attribute__((format(printf, 2, 3))) static void cl_warn(struct client *cl,
							  const char *fmt, ...)
{
	va_list ap;

	if (cl->n_warn == MAX_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(cl->warn[cl->n_warn], WARN_LEN, fmt, ap);
	va_end(ap);
	fprintf(stderr, PROG ": warning: %s\n", cl->warn[cl->n_warn]);
	cl->n_warn++;
}

/*
 * Steps too short to be stable (perf.h): a lat step with fewer than
 * STABLE_MIN_SAMPLES round trips, a bw step shorter than STABLE_MIN_MS.
 * One warning for the run, naming the sizes and what to do.
 */
void check_stable(struct client *cl)
{
	const struct opts *o = cl->o;
	uint64_t first = 0, last = 0;
	int n = 0;
	char a[16], b[16];

	for (int i = 0; i < cl->n_res; i++) {
		const struct result *r = &cl->res[i];
		bool short_step = o->test == TEST_LAT
					  ? r->msgs < STABLE_MIN_SAMPLES
					  : r->secs * 1e3 < STABLE_MIN_MS;

		if (!short_step)
			continue;
		if (!n++)
			first = r->size;
		last = r->size;
	}
	if (!n)
		return;
	fmt_size(first, 15, a, sizeof(a));
	fmt_size(last, 15, b, sizeof(b));
	if (o->test == TEST_LAT)
		cl_warn(cl,
			"%d of %d size(s) (%s%s%s B) measured fewer than %d "
			"round trips: too short to be stable (p99.9 is the "
			"maximum); use -n %d or more, or -D",
			n, cl->n_res, a, n > 1 ? ".." : "", n > 1 ? b : "",
			STABLE_MIN_SAMPLES,
			(STABLE_MIN_SAMPLES + (int)o->conns - 1) /
				(int)o->conns);
	else
		cl_warn(cl,
			"%d of %d size(s) (%s%s%s B) ran less than %d ms: too "
			"short to be stable (the send window's ramp and the "
			"last acknowledgement weigh in); use -D or a larger "
			"-n",
			n, cl->n_res, a, n > 1 ? ".." : "", n > 1 ? b : "",
			STABLE_MIN_MS);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static double num_or_0(double d)
{
	return isfinite(d) ? d : 0;
}

bool json_printed;

/* --json's "error": null, or the message and the RIFT_E* name, if any. */
static void json_error(FILE *f, const char *msg, int rc)
{
	if (!msg) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{ \"message\": ");
	json_str(f, msg);
	fprintf(f, ", \"rift_error\": ");
	if (rc)
		json_str(f, rift_err_name(rc));
	else
		fputs("null", f);
	fputs(" }", f);
}

static void json_head(FILE *f)
{
	fprintf(f, "{\n  \"tool\": \"rift-perf\",\n  \"rift_version\": ");
	json_str(f, rift_version_string());
	fputs(",\n", f);
}

static void json_lat(FILE *f, const char *name, const struct latstats *l,
		     double k)
{
	fprintf(f,
		"\"%s\": { \"min\": %.3f, \"p50\": %.3f, \"p90\": %.3f, "
		"\"p99\": %.3f, \"p99_9\": %.3f, \"max\": %.3f, "
		"\"mean\": %.3f, \"stdev\": %.3f },\n      ",
		name, l->min * k, l->p50 * k, l->p90 * k, l->p99 * k,
		l->p999 * k, l->max * k, num_or_0(l->mean) * k,
		num_or_0(l->stdev) * k);
}

void print_json(const struct client *cl, bool was_interrupted)
{
	const struct opts *o = cl->o;
	FILE *f = stdout;

	json_head(f);
	fprintf(f,
		"  \"test\": \"%s\",\n  \"op\": \"%s\",\n"
		"  \"notify\": %s,\n  \"mode\": \"%s\",\n",
		o->test == TEST_LAT ? "lat" : "bw", op_name(o->op),
		o->notify ? "true" : "false",
		o->mode == MODE_LOOPBACK ? "loopback" : "client");
	fprintf(f, "  \"url\": ");
	if (cl->url[0])
		json_str(f, cl->url);
	else
		fputs("null", f); /* failed before it was made */
	fprintf(f,
		",\n  \"transport_requested\": \"%s\",\n  \"transport\": "
		"\"%s\",\n",
		o->transport, rift_transport_name(cl->transport));
	if (cl->fallback == RIFT_FALLBACK_NONE)
		fprintf(f, "  \"fallback\": null,\n");
	else
		fprintf(f,
			"  \"fallback\": { \"code\": \"%s\", \"reason\": "
			"\"%s\" },\n",
			fallback_code(cl->fallback),
			rift_fallback_reason_str(cl->fallback));
	fprintf(f,
		"  \"params\": {\n    \"conns\": %u,\n    \"qd\": %u,\n"
		"    \"iters\": %" PRIu64 ",\n    \"duration_s\": %g,\n"
		"    \"warmup\": %" PRIu64 ",\n    \"sizes\": [",
		o->conns, o->qd, o->iters, o->duration, o->warmup);
	for (int i = 0; i < o->n_sizes; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", o->sizes[i]);
	fprintf(f,
		"],\n    \"fill\": %s,\n    \"polling\": \"%s\",\n"
		"    \"send_window\": %" PRIu64 ",\n"
		"    \"region_bytes\": %" PRIu64 ",\n    \"device\": ",
		o->fill ? "true" : "false", polling_name(o->cfg.polling),
		(uint64_t)o->cfg.send_window, o->rma_len);
	json_str(f, o->cfg.device);
	fprintf(f,
		",\n    \"ib_port\": %u,\n    \"gid_index\": %d,\n    "
		"\"config_file\": ",
		o->cfg.port, o->cfg.gid_index);
	if (o->config)
		json_str(f, o->config);
	else
		fputs("null", f);
	fprintf(f, "\n  },\n  \"results\": [");
	for (int i = 0; i < cl->n_res; i++) {
		const struct result *r = &cl->res[i];

		fprintf(f,
			"%s\n    { \"size\": %" PRIu64
			", \"iterations\": %" PRIu64 ", \"messages\": %" PRIu64
			", \"seconds\": %.6f,\n      ",
			i ? "," : "", r->size, r->iters, r->msgs,
			num_or_0(r->secs));
		if (o->test == TEST_LAT) {
			/* the round trip; half of it, one way (not for a
			 * READ: it has none); and perftest's figure */
			json_lat(f, "lat_us", &r->lat, 1);
			if (o->op != OP_READ)
				json_lat(f, "one_way_us", &r->lat, 0.5);
			json_lat(f, "perftest_us", &r->lat, perftest_factor(o));
		} else {
			fprintf(f,
				"\"bytes\": %" PRIu64
				", \"bw\": { \"gbytes_per_s\": %.6f,"
				" \"gbits_per_s\": %.6f, \"mmsg_per_s\": %.6f "
				"},\n      ",
				r->bytes, num_or_0(r->gbytes),
				num_or_0(r->gbits), num_or_0(r->mmsgs));
		}
		fprintf(f,
			"\"cpu_pct\": { \"client\": %.1f, \"server\": %.1f } }",
			num_or_0(r->cpu_cli), num_or_0(r->cpu_srv));
	}
	fprintf(f, "%s],\n  \"warnings\": [", cl->n_res ? "\n  " : "");
	for (int i = 0; i < cl->n_warn; i++) {
		fputs(i ? ",\n    " : "\n    ", f);
		json_str(f, cl->warn[i]);
	}
	fprintf(f,
		"%s],\n  \"path_changes\": %" PRIu64
		",\n  \"standby_paths\": %u,\n  \"active_paths\": %u"
		",\n  \"interrupted\": %s,\n  \"error\": ",
		cl->n_warn ? "\n  " : "", cl->path_changes, cl->standby_paths,
		cl->active_paths,
		was_interrupted ? "true" : "false");
	json_error(f, cl->failed ? cl->err : NULL, cl->err_rc);
	fputs("\n}\n", f);
	fflush(f);
	json_printed = true;
}

/* The server's object: what it served, and why it failed if it did. */
void print_server_json(const struct server *s, int status)
{
	const struct opts *o = s->o;
	FILE *f = stdout;

	json_head(f);
	fprintf(f, "  \"mode\": \"server\",\n  \"url\": ");
	json_str(f, s->url);
	fprintf(f,
		",\n  \"transport_requested\": \"%s\",\n"
		"  \"persistent\": %s,\n  \"clients\": %d,\n"
		"  \"clients_failed\": %d,\n  \"interrupted\": %s,\n"
		"  \"error\": ",
		o->transport, o->persistent ? "true" : "false", s->served,
		s->served_failed, status == EXIT_INTR ? "true" : "false");
	json_error(f, status == EXIT_FAIL ? s->err : NULL, s->err_rc);
	fputs("\n}\n", f);
	fflush(f);
	json_printed = true;
}

/* A failure before a client or a server could report it (an option, a
 * port for --metrics-port, the loopback server's thread). */
void print_error_json(const char *msg, int rc)
{
	FILE *f = stdout;

	json_head(f);
	fputs("  \"error\": ", f);
	json_error(f, msg, rc);
	fputs("\n}\n", f);
	fflush(f);
	json_printed = true;
}
