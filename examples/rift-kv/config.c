/*
 * config.c - rift-kv's config file and command line.  See config.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "resp.h"

/* A config file is read whole; a bigger one is refused (ours, not a
 * claim: the file is the operator's, but a wrong path to a huge file
 * should not fill memory). */
#define MAX_FILE_BYTES (1u << 20)

enum type { T_INT, T_STR, T_BOOL, T_ADDR, T_FALLBACK, T_URL, T_PRIMARY,
	    T_PATH };

/* The file's sections; a knob belongs to one. */
static const char *const section_names[] = { "network", "replication" };
#define NSECTIONS 2

static const struct knob {
	const char *key;
	enum type type;
	long min, max; /* T_INT */
	const char *what;
	int section;   /* index in section_names */
} knobs[KV_KNOBS] = {
	[KV_PORT] = { "port", T_INT, 1, 65535, "TCP port of RESP" },
	[KV_BIND] = { "bind", T_ADDR, 0, 0, "address of RESP over TCP" },
	[KV_RDMA_ENABLED] = { "rdma_enabled", T_BOOL, 0, 0, "" },
	[KV_RDMA_DEVICE] = { "rdma_device", T_STR, 0, 0, "" },
	[KV_RDMA_PORT] = { "rdma_port", T_INT, 1, 65535,
			   "port of the rift listener" },
	[KV_RDMA_BIND] = { "rdma_bind", T_ADDR, 0, 0, "" },
	[KV_RDMA_GID_INDEX] = { "rdma_gid_index", T_INT, -1, 4095,
				"GID table index, -1 = the address's" },
	[KV_RDMA_QUEUE_DEPTH] = { "rdma_queue_depth", T_INT, 16, 32768,
				  "send and receive queue entries" },
	[KV_RDMA_FALLBACK] = { "rdma_fallback", T_FALLBACK, 0, 0, "" },
	[KV_RIFT_URL] = { "rift_url", T_URL, 0, 0, "" },
	[KV_METRICS_PORT] = { "metrics_port", T_INT, 0, 65535,
			      "HTTP port of /metrics, 0 = any free port" },
	[KV_METRICS_BIND] = { "metrics_bind", T_ADDR, 0, 0, "" },
	[KV_PROTO_MAX_BULK_LEN] = { "proto_max_bulk_len", T_INT, 1L << 20,
				    1L << 40, "bytes of one argument" },
	[KV_CLIENT_QUERY_BUFFER_LIMIT] = { "client_query_buffer_limit", T_INT,
					   1L << 20, 1L << 40,
					   "bytes of one command" },
	[KV_REPLICAOF] = { "replicaof", T_PRIMARY, 0, 0, "", 1 },
	[KV_USE_RDMA_WRITE] = { "use_rdma_write", T_BOOL, 0, 0, "", 1 },
	[KV_BACKLOG_SIZE] = { "backlog_size", T_INT, 16L << 10, 16L << 30,
			      "bytes of log kept for partial resyncs", 1 },
	[KV_RING_SIZE] = { "ring_size", T_INT, 4L << 10, 1L << 30,
			   "bytes of the ring a replica exports", 1 },
	[KV_REPLICA_FILE] = { "replica_file", T_PATH, 0, 0, "", 1 },
	[KV_VALKEY_RDMA_PORT] = { "valkey_rdma_port", T_INT, 1, 65535,
				  "port of Valkey's RDMA protocol" },
	[KV_VALKEY_RDMA_BIND] = { "valkey_rdma_bind", T_ADDR, 0, 0, "" },
};

static bool parse_long(const char *s, long *out);
static void errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

const char *kv_config_key(enum kv_knob k)
{
	return k < KV_KNOBS ? knobs[k].key : "?";
}

void kv_config_defaults(struct kv_config *c)
{
	memset(c, 0, sizeof(*c));
	c->port = 6379;
	snprintf(c->bind, sizeof(c->bind), "127.0.0.1");
	c->rdma_gid_index = -1;
	c->rdma_fallback_tcp = 1;
	c->metrics_port = -1;
	c->proto_max_bulk_len = KV_RESP_MAX_BULK_DEFAULT;
	c->client_query_buffer_limit = KV_RESP_MAX_COMMAND_DEFAULT;
	c->use_rdma_write = 1;
	c->backlog_size = (size_t)1 << 20;
	c->ring_size = (size_t)1 << 20;
}

int kv_config_primary_url(const char *host, size_t hlen, const char *port,
			  size_t plen, char *out, size_t outlen)
{
	char h[KV_CFG_STR], p[8];
	long v;
	int n;

	if (!hlen || hlen >= sizeof(h) || !plen || plen >= sizeof(p))
		return -1;
	memcpy(h, host, hlen);
	h[hlen] = '\0';
	memcpy(p, port, plen);
	p[plen] = '\0';
	if (strpbrk(h, " \t/,?[]") || !parse_long(p, &v) || v < 1 || v > 65535)
		return -1;
	n = snprintf(out, outlen, "auto://%s%s%s:%ld", strchr(h, ':') ? "[" : "",
		     h, strchr(h, ':') ? "]" : "", v);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

static bool parse_long(const char *s, long *out)
{
	char *end;
	long v;

	if (!*s || (*s != '-' && (*s < '0' || *s > '9')))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool numeric_addr(const char *s)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, s, buf) == 1 ||
	       inet_pton(AF_INET6, s, buf) == 1;
}

static bool copy_str(char *dst, const char *src)
{
	size_t n = strlen(src);

	if (n >= KV_CFG_STR)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

int kv_config_set(struct kv_config *c, const char *key, const char *value,
		  int quoted, const char *origin, char *err, size_t errlen)
{
	const struct knob *k = NULL;
	enum kv_knob id;
	char url[KV_CFG_STR] = "";
	long v = 0;

	for (id = 0; id < KV_KNOBS; id++) {
		if (strcmp(knobs[id].key, key) == 0) {
			k = &knobs[id];
			break;
		}
	}
	if (!k) {
		char known[KV_CFG_ERRLEN - 128];
		size_t n = 0;

		for (id = 0; id < KV_KNOBS && n < sizeof(known); id++)
			n += (size_t)snprintf(known + n, sizeof(known) - n,
					      "%s%s", id ? ", " : "",
					      knobs[id].key);
		errf(err, errlen, "%s: unknown key '%s' (rift-kv knows %s)",
		     origin, key, known);
		return -1;
	}
	if (c->origin[id][0]) {
		errf(err, errlen, "%s: %s set twice (first by %s)", origin,
		     key, c->origin[id]);
		return -1;
	}
	/* In the file, strings are quoted and the rest is not; an option's
	 * value (quoted < 0) is taken as it comes. */
	if (quoted >= 0 && quoted != (k->type != T_INT && k->type != T_BOOL)) {
		errf(err, errlen, "%s: %s: expected %s, got %s'%s'", origin,
		     key,
		     k->type == T_INT    ? "an integer"
		     : k->type == T_BOOL ? "true or false"
					 : "a quoted string",
		     quoted ? "the string " : "", value);
		return -1;
	}
	switch (k->type) {
	case T_INT:
		if (!parse_long(value, &v) || v < k->min || v > k->max) {
			errf(err, errlen,
			     "%s: %s = '%s' is not an integer in %ld..%ld "
			     "(%s)",
			     origin, key, value, k->min, k->max, k->what);
			return -1;
		}
		break;
	case T_BOOL:
		/* the command line also takes valkey's yes and no */
		if (!strcmp(value, "true") ||
		    (quoted < 0 && !strcmp(value, "yes")))
			v = 1;
		else if (!strcmp(value, "false") ||
			 (quoted < 0 && !strcmp(value, "no")))
			v = 0;
		else {
			errf(err, errlen,
			     "%s: %s = '%s': expected true or false", origin,
			     key, value);
			return -1;
		}
		break;
	case T_ADDR:
		if (!numeric_addr(value)) {
			errf(err, errlen,
			     "%s: %s = '%s' is not a numeric IPv4 or IPv6 "
			     "address",
			     origin, key, value);
			return -1;
		}
		break;
	case T_FALLBACK:
		if (strcmp(value, "tcp") && strcmp(value, "none")) {
			errf(err, errlen,
			     "%s: %s = '%s': expected \"tcp\" (auto://: RDMA, "
			     "else TCP) or \"none\" (rdma:// only)",
			     origin, key, value);
			return -1;
		}
		break;
	case T_URL:
		if (strncmp(value, "tcp://", 6) && strncmp(value, "rdma://", 7) &&
		    strncmp(value, "auto://", 7)) {
			errf(err, errlen,
			     "%s: %s = '%s': expected a rift URL, tcp://, "
			     "rdma:// or auto://HOST:PORT",
			     origin, key, value);
			return -1;
		}
		break;
	case T_PRIMARY: {
		const char *sp = strchr(value, ' ');

		if (!strncmp(value, "tcp://", 6) || !strncmp(value, "rdma://", 7) ||
		    !strncmp(value, "auto://", 7)) {
			if (strlen(value) >= sizeof(url)) {
				errf(err, errlen, "%s: %s: URL longer than %zu "
				     "bytes", origin, key, sizeof(url) - 1);
				return -1;
			}
			snprintf(url, sizeof(url), "%s", value);
		} else if (!sp || kv_config_primary_url(value, (size_t)(sp - value),
							sp + 1, strlen(sp + 1), url,
							sizeof(url))) {
			errf(err, errlen,
			     "%s: %s = '%s': expected \"HOST PORT\" (the "
			     "primary's rift listener) or a rift URL",
			     origin, key, value);
			return -1;
		}
		break;
	}
	case T_PATH:
		if (!*value) {
			errf(err, errlen, "%s: %s: expected a file name", origin,
			     key);
			return -1;
		}
		break;
	case T_STR:
		if (!*value || strlen(value) >= 64) {
			errf(err, errlen,
			     "%s: %s = '%s': expected an RDMA device name "
			     "(1..63 bytes, as rift-info lists it)",
			     origin, key, value);
			return -1;
		}
		break;
	}
	if (strlen(value) >= KV_CFG_STR) {
		errf(err, errlen, "%s: %s: value longer than %d bytes", origin,
		     key, KV_CFG_STR - 1);
		return -1;
	}
	switch (id) {
	case KV_PORT: c->port = (int)v; break;
	case KV_BIND: copy_str(c->bind, value); break;
	case KV_RDMA_ENABLED: c->rdma_enabled = (int)v; break;
	case KV_RDMA_DEVICE: copy_str(c->rdma_device, value); break;
	case KV_RDMA_PORT: c->rdma_port = (int)v; break;
	case KV_RDMA_BIND: copy_str(c->rdma_bind, value); break;
	case KV_RDMA_GID_INDEX: c->rdma_gid_index = (int)v; break;
	case KV_RDMA_QUEUE_DEPTH: c->rdma_queue_depth = (int)v; break;
	case KV_RDMA_FALLBACK:
		c->rdma_fallback_tcp = !strcmp(value, "tcp");
		break;
	case KV_RIFT_URL: copy_str(c->rift_url, value); break;
	case KV_METRICS_PORT: c->metrics_port = (int)v; break;
	case KV_METRICS_BIND: copy_str(c->metrics_bind, value); break;
	case KV_PROTO_MAX_BULK_LEN: c->proto_max_bulk_len = (size_t)v; break;
	case KV_CLIENT_QUERY_BUFFER_LIMIT:
		c->client_query_buffer_limit = (size_t)v;
		break;
	case KV_REPLICAOF: copy_str(c->replicaof, url); break;
	case KV_USE_RDMA_WRITE: c->use_rdma_write = (int)v; break;
	case KV_BACKLOG_SIZE: c->backlog_size = (size_t)v; break;
	case KV_RING_SIZE: c->ring_size = (size_t)v; break;
	case KV_REPLICA_FILE: copy_str(c->replica_file, value); break;
	case KV_VALKEY_RDMA_PORT: c->valkey_rdma_port = (int)v; break;
	case KV_VALKEY_RDMA_BIND: copy_str(c->valkey_rdma_bind, value); break;
	case KV_KNOBS: break;
	}
	snprintf(c->origin[id], sizeof(c->origin[id]), "%s", origin);
	return 0;
}

/* ---- the file ---- */

static char *read_file(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f) {
		errf(err, errlen, "%s: cannot open: %s", path,
		     strerror(errno));
		return NULL;
	}
	buf = malloc(MAX_FILE_BYTES + 1);
	if (!buf) {
		fclose(f);
		errf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	n = fread(buf, 1, MAX_FILE_BYTES + 1, f);
	if (ferror(f) || n > MAX_FILE_BYTES) {
		errf(err, errlen, "%s: %s", path,
		     ferror(f) ? "read error" : "larger than 1 MiB");
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	if (strlen(buf) != n) {
		errf(err, errlen, "%s: holds a NUL byte", path);
		free(buf);
		return NULL;
	}
	return buf;
}

static const char *skip_blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* After a value or section: blanks, then a comment or the end. */
static bool line_rest_ok(const char *s)
{
	s = skip_blank(s);
	return *s == '\0' || *s == '#';
}

/* One line (NUL-terminated, no LF) at lineno. */
static int load_line(struct kv_config *c, const char *path, int lineno,
		     char *line, int *section, int *seen, char *err,
		     size_t errlen)
{
	char origin[KV_CFG_STR + 16], key[64], val[KV_CFG_STR];
	const char *s = skip_blank(line);
	size_t n = 0;
	int quoted = 0;

	snprintf(origin, sizeof(origin), "%s:%d", path, lineno);
	if (*s == '\0' || *s == '#')
		return 0;
	if (*s == '[') {
		const char *e = strchr(s, ']');
		int i;

		if (!e || !line_rest_ok(e + 1)) {
			errf(err, errlen, "%s: expected [network] or [replication]",
			     origin);
			return -1;
		}
		for (i = 0; i < NSECTIONS; i++)
			if ((size_t)(e - s - 1) == strlen(section_names[i]) &&
			    !strncmp(s + 1, section_names[i], (size_t)(e - s - 1)))
				break;
		if (i == NSECTIONS) {
			errf(err, errlen,
			     "%s: unknown section %.*s (rift-kv's file has "
			     "[network] and [replication])",
			     origin, (int)(e - s + 1), s);
			return -1;
		}
		if (*seen & (1 << i)) {
			errf(err, errlen, "%s: [%s] given twice", origin,
			     section_names[i]);
			return -1;
		}
		*seen |= 1 << i;
		*section = i + 1;
		return 0;
	}
	while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
	       (*s >= '0' && *s <= '9') || *s == '_' || *s == '-') {
		if (n + 1 >= sizeof(key)) {
			errf(err, errlen, "%s: key too long", origin);
			return -1;
		}
		key[n++] = *s++;
	}
	key[n] = '\0';
	s = skip_blank(s);
	if (!n || *s != '=') {
		errf(err, errlen, "%s: expected key = value", origin);
		return -1;
	}
	if (!*section) {
		errf(err, errlen, "%s: key '%s' before [network]", origin,
		     key);
		return -1;
	}
	for (int i = 0; i < KV_KNOBS; i++) {
		if (strcmp(knobs[i].key, key) || knobs[i].section == *section - 1)
			continue;
		errf(err, errlen, "%s: %s belongs in [%s], not [%s]", origin,
		     key, section_names[knobs[i].section],
		     section_names[*section - 1]);
		return -1;
	}
	s = skip_blank(s + 1);
	n = 0;
	if (*s == '"') {
		quoted = 1;
		for (s++; *s != '"'; s++) {
			if (!*s) {
				errf(err, errlen, "%s: %s: unterminated string",
				     origin, key);
				return -1;
			}
			if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
				s++;
			else if (*s == '\\') {
				errf(err, errlen,
				     "%s: %s: unknown escape \\%c (only \\\" "
				     "and \\\\)",
				     origin, key, s[1] ? s[1] : ' ');
				return -1;
			}
			if (n + 1 >= sizeof(val)) {
				errf(err, errlen, "%s: %s: value too long",
				     origin, key);
				return -1;
			}
			val[n++] = *s;
		}
		s++;
	} else {
		while (*s && *s != ' ' && *s != '\t' && *s != '#') {
			if (n + 1 >= sizeof(val)) {
				errf(err, errlen, "%s: %s: value too long",
				     origin, key);
				return -1;
			}
			val[n++] = *s++;
		}
		if (!n) {
			errf(err, errlen, "%s: %s: missing value", origin, key);
			return -1;
		}
	}
	val[n] = '\0';
	if (!line_rest_ok(s)) {
		errf(err, errlen, "%s: %s: unexpected text after the value",
		     origin, key);
		return -1;
	}
	return kv_config_set(c, key, val, quoted, origin, err, errlen);
}

int kv_config_load(struct kv_config *c, const char *path, char *err,
		   size_t errlen)
{
	char *buf = read_file(path, err, errlen), *line, *next;
	int lineno = 0, section = 0, seen = 0, rc = 0;

	if (!buf)
		return -1;
	for (line = buf; line && rc == 0; line = next) {
		size_t len;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		len = strlen(line);
		if (len && line[len - 1] == '\r')
			line[len - 1] = '\0';
		lineno++;
		rc = load_line(c, path, lineno, line, &section, &seen, err,
			       errlen);
	}
	free(buf);
	if (rc == 0)
		snprintf(c->config_file, sizeof(c->config_file), "%s", path);
	return rc;
}

/* ---- the command line ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rift-kv [CONFIG_FILE] [--OPTION VALUE ...]\n"
		"  --port N             RESP over TCP on port N (6379)\n"
		"  --bind ADDR          ... on address ADDR (127.0.0.1)\n"
		"  --rdma-port N        RESP over rift on port N (RDMA on)\n"
		"  --rdma-bind ADDR     ... on address ADDR (--bind's)\n"
		"  --rdma-device DEV    ... on DEV's address\n"
		"  --rdma-gid-index N   rift's rdma.gid_index\n"
		"  --rdma-queue-depth N rift's rdma.sq_depth and rq_depth\n"
		"  --rdma-fallback tcp|none  auto:// (default) or rdma://\n"
		"  --rdma-enabled yes|no\n"
		"  --rift-url URL       the rift listener's URL outright\n"
		"                       (tcp://, rdma:// or auto://HOST:PORT)\n"
		"  --metrics-port N     GET /metrics over HTTP on port N\n"
		"                       (0: any free port)\n"
		"  --metrics-bind ADDR  ... on address ADDR (--bind's)\n"
		"  --proto-max-bulk-len N         bytes of one argument "
		"(512 MiB)\n"
		"  --client-query-buffer-limit N  bytes of one command "
		"(1 GiB)\n"
		"  --replicaof 'HOST PORT'|URL   a replica of that primary's\n"
		"                       rift listener\n"
		"  --use-rdma-write yes|no  ship the log by one-sided writes\n"
		"                       into the replica's ring (yes)\n"
		"  --backlog-size N     bytes of log kept for partial resyncs\n"
		"  --ring-size N        bytes of the ring a replica exports\n"
		"  --replica-file PATH  where a replica keeps what it applied\n"
		"  --valkey-rdma-port N Valkey's RDMA protocol on port N\n"
		"                       (valkey-cli --rdma; off by default)\n"
		"  --valkey-rdma-bind ADDR  ... on address ADDR (--rdma-bind's,\n"
		"                       else --bind's)\n"
		"Every option is a key of the config file's [network] or\n"
		"[replication] with '-' for '_' (docs/rift-kv.md).\n");
}

int kv_config_args(struct kv_config *c, int argc, char **argv, char *err,
		   size_t errlen)
{
	int i = 1;

	if (i < argc && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
		usage(stdout);
		return 1;
	}
	if (i < argc &&
	    (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--version"))) {
		printf("rift-kv (rift %s) RESP2, Redis 7.0 commands\n",
		       "0.1.0");
		return 1;
	}
	if (i < argc && strncmp(argv[i], "--", 2) != 0) {
		if (kv_config_load(c, argv[i], err, errlen))
			return -1;
		i++;
	}
	for (; i < argc; i += 2) {
		char key[64];
		const char *o = argv[i];
		size_t n;

		if (strncmp(o, "--", 2) != 0 || !o[2]) {
			errf(err, errlen,
			     "%s: expected --OPTION VALUE (the config file "
			     "goes first)",
			     o);
			return -1;
		}
		n = strlen(o + 2);
		if (n >= sizeof(key)) {
			errf(err, errlen, "%.64s...: unknown option", o);
			return -1;
		}
		for (size_t k = 0; k <= n; k++)
			key[k] = o[2 + k] == '-' ? '_' : o[2 + k];
		if (i + 1 >= argc) {
			errf(err, errlen, "%s needs a value", o);
			return -1;
		}
		if (kv_config_set(c, key, argv[i + 1], -1, o, err, errlen))
			return -1;
	}
	return kv_config_check(c, err, errlen);
}

/* The /metrics knobs: metrics_bind needs metrics_port; a port of its own
 * (not RESP's, nor the rift listener's, which takes that TCP port). */
static int check_metrics(const struct kv_config *c, char *err, size_t errlen)
{
	const char *mp = c->origin[KV_METRICS_PORT];

	if (c->origin[KV_METRICS_BIND][0] && c->metrics_port < 0) {
		errf(err, errlen,
		     "%s: metrics_bind cannot take effect: no metrics_port",
		     c->origin[KV_METRICS_BIND]);
		return -1;
	}
	if (c->metrics_port > 0 && c->metrics_port == c->port) {
		errf(err, errlen, "%s: metrics_port %d is the RESP port too",
		     mp, c->metrics_port);
		return -1;
	}
	if (c->metrics_port > 0 && c->metrics_port == c->rdma_port) {
		errf(err, errlen,
		     "%s: metrics_port %d is rdma_port too (%s)", mp,
		     c->metrics_port, c->origin[KV_RDMA_PORT]);
		return -1;
	}
	return 0;
}

/* Valkey's RDMA protocol: valkey_rdma_bind needs valkey_rdma_port, a
 * port rdma_cm does not give the rift listener too (both listen in its
 * TCP port space; RESP's TCP port may be the same, as with Valkey). */
static int check_valkey_rdma(const struct kv_config *c, char *err,
			     size_t errlen)
{
	if (c->origin[KV_VALKEY_RDMA_BIND][0] && !c->valkey_rdma_port) {
		errf(err, errlen,
		     "%s: valkey_rdma_bind cannot take effect: no "
		     "valkey_rdma_port", c->origin[KV_VALKEY_RDMA_BIND]);
		return -1;
	}
	if (c->valkey_rdma_port && c->valkey_rdma_port == c->rdma_port) {
		errf(err, errlen,
		     "%s: valkey_rdma_port %d is rdma_port too (%s): each "
		     "RDMA listener needs a port of its own",
		     c->origin[KV_VALKEY_RDMA_PORT], c->valkey_rdma_port,
		     c->origin[KV_RDMA_PORT]);
		return -1;
	}
	return 0;
}

int kv_config_check(struct kv_config *c, char *err, size_t errlen)
{
	static const enum kv_knob rdma_knobs[] = {
		KV_RDMA_DEVICE,	   KV_RDMA_PORT,	KV_RDMA_BIND,
		KV_RDMA_GID_INDEX, KV_RDMA_QUEUE_DEPTH, KV_RDMA_FALLBACK,
	};
	static const enum kv_knob url_replaces[] = {
		KV_RDMA_DEVICE, KV_RDMA_PORT, KV_RDMA_BIND, KV_RDMA_FALLBACK,
	};
	const char *en = c->origin[KV_RDMA_ENABLED];

	if (check_metrics(c, err, errlen) || check_valkey_rdma(c, err, errlen))
		return -1;
	if (c->origin[KV_RING_SIZE][0] && !c->use_rdma_write) {
		errf(err, errlen,
		     "%s: ring_size cannot take effect: use_rdma_write = false "
		     "(%s) ships the log by messages",
		     c->origin[KV_RING_SIZE], c->origin[KV_USE_RDMA_WRITE]);
		return -1;
	}
	if (c->origin[KV_PROTO_MAX_BULK_LEN][0] &&
	    c->proto_max_bulk_len >= c->client_query_buffer_limit) {
		errf(err, errlen,
		     "%s: proto_max_bulk_len %zu cannot take effect: a whole "
		     "command is at most client_query_buffer_limit %zu (%s)",
		     c->origin[KV_PROTO_MAX_BULK_LEN], c->proto_max_bulk_len,
		     c->client_query_buffer_limit,
		     c->origin[KV_CLIENT_QUERY_BUFFER_LIMIT][0]
			     ? c->origin[KV_CLIENT_QUERY_BUFFER_LIMIT]
			     : "the default");
		return -1;
	}
	if (!en[0] && (c->rdma_port || c->rift_url[0]))
		c->rdma_enabled = 1;
	if (en[0] && !c->rdma_enabled && c->rift_url[0]) {
		errf(err, errlen, "%s: rift_url, but %s: rdma_enabled = false",
		     c->origin[KV_RIFT_URL], en);
		return -1;
	}
	if (!c->rdma_enabled) {
		for (size_t i = 0; i < sizeof(rdma_knobs) / sizeof(*rdma_knobs);
		     i++) {
			enum kv_knob k = rdma_knobs[i];

			if (c->origin[k][0]) {
				errf(err, errlen,
				     "%s: %s cannot take effect: RDMA is off "
				     "(rdma_enabled = false)",
				     c->origin[k], knobs[k].key);
				return -1;
			}
		}
		return 0;
	}
	if (c->rift_url[0]) {
		for (size_t i = 0;
		     i < sizeof(url_replaces) / sizeof(*url_replaces); i++) {
			enum kv_knob k = url_replaces[i];

			if (c->origin[k][0]) {
				errf(err, errlen,
				     "%s: %s cannot take effect with rift_url "
				     "(%s): the URL names the listener",
				     c->origin[k], knobs[k].key,
				     c->origin[KV_RIFT_URL]);
				return -1;
			}
		}
		if (strncmp(c->rift_url, "tcp://", 6) == 0) {
			for (enum kv_knob k = KV_RDMA_GID_INDEX;
			     k <= KV_RDMA_QUEUE_DEPTH; k++) {
				if (!c->origin[k][0])
					continue;
				errf(err, errlen,
				     "%s: %s cannot take effect: rift_url (%s) "
				     "is tcp://, no RDMA",
				     c->origin[k], knobs[k].key,
				     c->origin[KV_RIFT_URL]);
				return -1;
			}
		}
		return 0;
	}
	if (!c->rdma_port) {
		errf(err, errlen,
		     "%s: rdma_enabled = true needs rdma_port (or rift_url)",
		     en[0] ? en : "rdma_enabled");
		return -1;
	}
	if (c->rdma_port == c->port) {
		errf(err, errlen,
		     "%s: rdma_port %d is the RESP port too: the rift "
		     "listener takes that TCP port as well",
		     c->origin[KV_RDMA_PORT], c->rdma_port);
		return -1;
	}
	if (c->rdma_device[0] && c->rdma_bind[0]) {
		errf(err, errlen,
		     "%s: rdma_device and rdma_bind (%s) both name the "
		     "listener's address: set one",
		     c->origin[KV_RDMA_DEVICE], c->origin[KV_RDMA_BIND]);
		return -1;
	}
	return 0;
}

int kv_config_rift_url(const struct kv_config *c, const char *addr, char *out,
		       size_t outlen)
{
	const char *host;
	int n;

	if (c->rift_url[0])
		n = snprintf(out, outlen, "%s", c->rift_url);
	else {
		host = addr ? addr : c->rdma_bind[0] ? c->rdma_bind : c->bind;
		n = snprintf(out, outlen, "%s://%s%s%s:%d",
			     c->rdma_fallback_tcp ? "auto" : "rdma",
			     strchr(host, ':') ? "[" : "", host,
			     strchr(host, ':') ? "]" : "", c->rdma_port);
	}
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}
