/*
 * rift-perf's output: the table, as perftest lays it out, and the JSON
 * object of --json (docs/rift-perf.md has the columns and the schema).
 */
#include <inttypes.h>
#include <math.h>
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

void print_header(const struct client *cl)
{
	const struct opts *o = cl->o;
	char why[200];

	transport_why(cl, why, sizeof(why));
	printf("%.*s\n", o->test == TEST_LAT ? LAT_WIDTH : BW_WIDTH, RULE);
	printf("                    rift-perf: send %s test\n",
	       o->test == TEST_LAT ? "latency" : "bandwidth");
	printf(" Mode            : %s\n",
	       o->mode == MODE_LOOPBACK
		       ? "loopback (server and client in one process)"
		       : "client");
	printf(" URL             : %s\n", cl->url);
	printf(" Transport       : %s\n", why);
	if (o->test == TEST_LAT)
		printf(" Connections     : %u          In flight  : %u per "
		       "connection\n",
		       o->conns, o->qd);
	else if (o->qd)
		printf(" Connections     : %u          In flight  : at most %u "
		       "unacknowledged"
		       " per connection\n",
		       o->conns, o->qd);
	else
		printf(" Connections     : %u          In flight  : send "
		       "window (%" PRIu64 " bytes) per connection\n",
		       o->conns, (uint64_t)o->cfg.send_window);
	if (o->duration > 0)
		printf(" Duration        : %.1f s per size", o->duration);
	else
		printf(" Iterations      : %" PRIu64 " per connection and size",
		       o->iters);
	printf(", warm-up %" PRIu64, o->warmup);
	printf("\n Polling         : %s\n", polling_name(o->cfg.polling));
	printf(" rift            : %s\n", rift_version_string());
	printf("%.*s\n", o->test == TEST_LAT ? LAT_WIDTH : BW_WIDTH, RULE);
	if (o->test == TEST_LAT)
		printf(" %-8s %-11s %9s %9s %9s %9s %9s %9s %9s %9s %8s %8s\n",
		       "#bytes", "#iterations", "min[us]", "p50[us]", "p90[us]",
		       "p99[us]", "p99.9[us]", "max[us]", "avg[us]",
		       "stdev[us]", "CPU_cli%", "CPU_srv%");
	else
		printf(" %-8s %-11s %10s %10s %15s %8s %8s\n", "#bytes",
		       "#iterations", "BW[GB/s]", "BW[Gb/s]", "MsgRate[Mmsg/s]",
		       "CPU_cli%", "CPU_srv%");
	fflush(stdout);
}

void print_row(const struct client *cl, const struct result *r)
{
	if (cl->o->test == TEST_LAT)
		printf(" %-8" PRIu64 " %-11" PRIu64
		       " %9.2f %9.2f %9.2f %9.2f %9.2f"
		       " %9.2f %9.2f %9.2f %8.1f %8.1f\n",
		       r->size, r->iters, r->lat.min, r->lat.p50, r->lat.p90,
		       r->lat.p99, r->lat.p999, r->lat.max, r->lat.mean,
		       r->lat.stdev, r->cpu_cli, r->cpu_srv);
	else
		printf(" %-8" PRIu64 " %-11" PRIu64
		       " %10.3f %10.3f %15.4f %8.1f %8.1f\n",
		       r->size, r->iters, r->gbytes, r->gbits, r->mmsgs,
		       r->cpu_cli, r->cpu_srv);
	fflush(stdout);
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

void print_json(const struct client *cl, bool was_interrupted)
{
	const struct opts *o = cl->o;
	FILE *f = stdout;

	fprintf(f, "{\n  \"tool\": \"rift-perf\",\n  \"rift_version\": ");
	json_str(f, rift_version_string());
	fprintf(f,
		",\n  \"test\": \"%s\",\n  \"op\": \"send\",\n  \"mode\": "
		"\"%s\",\n",
		o->test == TEST_LAT ? "lat" : "bw",
		o->mode == MODE_LOOPBACK ? "loopback" : "client");
	fprintf(f, "  \"url\": ");
	json_str(f, cl->url);
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
		"    \"send_window\": %" PRIu64 ",\n    \"device\": ",
		o->fill ? "true" : "false", polling_name(o->cfg.polling),
		(uint64_t)o->cfg.send_window);
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
		if (o->test == TEST_LAT)
			fprintf(f,
				"\"lat_us\": { \"min\": %.3f, \"p50\": %.3f, "
				"\"p90\": %.3f,"
				" \"p99\": %.3f, \"p99_9\": %.3f, \"max\": "
				"%.3f, \"mean\": %.3f,"
				" \"stdev\": %.3f },\n      ",
				r->lat.min, r->lat.p50, r->lat.p90, r->lat.p99,
				r->lat.p999, r->lat.max, num_or_0(r->lat.mean),
				num_or_0(r->lat.stdev));
		else
			fprintf(f,
				"\"bytes\": %" PRIu64
				", \"bw\": { \"gbytes_per_s\": %.6f,"
				" \"gbits_per_s\": %.6f, \"mmsg_per_s\": %.6f "
				"},\n      ",
				r->bytes, num_or_0(r->gbytes),
				num_or_0(r->gbits), num_or_0(r->mmsgs));
		fprintf(f,
			"\"cpu_pct\": { \"client\": %.1f, \"server\": %.1f } }",
			num_or_0(r->cpu_cli), num_or_0(r->cpu_srv));
	}
	fprintf(f,
		"%s],\n  \"path_changes\": %" PRIu64
		",\n  \"interrupted\": %s,\n"
		"  \"error\": ",
		cl->n_res ? "\n  " : "", cl->path_changes,
		was_interrupted ? "true" : "false");
	if (cl->failed)
		json_str(f, cl->err);
	else
		fputs("null", f);
	fputs("\n}\n", f);
	fflush(f);
}
