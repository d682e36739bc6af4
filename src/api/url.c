/*
 * url.c - parse rift URLs and resolve their addresses.
 *
 *   scheme://host:port[,host:port...][?key=value[&key=value...]]
 *
 * Every rejection says what is wrong and where, because a URL usually comes
 * from a config file or a command line that a person typed.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "api/config_int.h"

static int bad(char *err, size_t errlen, const char *url, const char *fmt,
	       const char *detail)
{
	char what[RIFT_ERRMSG_LEN];

	snprintf(what, sizeof(what), fmt, detail);
	snprintf(err, errlen, "url '%s': %s", url, what);
	return RIFT_EINVAL;
}

static bool valid_hostname(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n > 253)
		return false;
	for (const char *p = h; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' &&
		    *p != '_')
			return false;
	return h[0] != '-' && h[0] != '.';
}

/* Parse one "host:port" item of length n at s. */
static int parse_hostport(const char *url, const char *s, size_t n,
			  struct rift__hostport *hp, char *err, size_t errlen)
{
	char item[RIFT_HOST_LEN + 16];
	const char *port_s;
	char *end;
	unsigned long port;

	if (n == 0)
		return bad(err, errlen, url, "empty address%s", "");
	if (n >= sizeof(item))
		return bad(err, errlen, url, "address too long%s", "");
	memcpy(item, s, n);
	item[n] = '\0';

	if (item[0] == '[') {
		char *close = strchr(item, ']');
		struct in6_addr a6;

		if (!close)
			return bad(err, errlen, url,
				   "missing ']' after IPv6 address '%s'", item);
		*close = '\0';
		if (inet_pton(AF_INET6, item + 1, &a6) != 1)
			return bad(err, errlen, url,
				   "'%s' is not an IPv6 address", item + 1);
		snprintf(hp->host, sizeof(hp->host), "%s", item + 1);
		if (close[1] != ':')
			return bad(err, errlen, url,
				   "missing port after '[%s]'", item + 1);
		port_s = close + 2;
	} else {
		char *colon = strrchr(item, ':');

		if (!colon)
			return bad(err, errlen, url, "missing port in '%s'",
				   item);
		if (strchr(item, ':') != colon)
			return bad(err, errlen, url,
				   "IPv6 address '%s' must be in brackets", item);
		*colon = '\0';
		port_s = colon + 1;
		if (item[0] != '\0' && !valid_hostname(item))
			return bad(err, errlen, url, "bad host name '%s'",
				   item);
		snprintf(hp->host, sizeof(hp->host), "%s", item);
	}
	if (*port_s == '\0')
		return bad(err, errlen, url, "missing port after '%s:'",
			   hp->host);
	for (const char *p = port_s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return bad(err, errlen, url, "port '%s' is not a number",
				   port_s);
	port = strtoul(port_s, &end, 10);
	if (port > 65535 || strlen(port_s) > 5)
		return bad(err, errlen, url, "port '%s' is out of range 0..65535",
			   port_s);
	hp->port = (uint16_t)port;
	return 0;
}

static int parse_query(const char *url, const char *q, struct rift__url *out,
		       char *err, size_t errlen)
{
	while (*q) {
		const char *amp = strchr(q, '&');
		size_t n = amp ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', n);
		size_t kl, vl;

		if (!eq || eq == q)
			return bad(err, errlen, url,
				   "option '%s' is not key=value", q);
		if (out->n_opts == RIFT_URL_MAX_OPTS)
			return bad(err, errlen, url, "too many options%s", "");
		kl = (size_t)(eq - q);
		vl = n - kl - 1;
		if (kl >= sizeof(out->opts[0].key) ||
		    vl >= sizeof(out->opts[0].value))
			return bad(err, errlen, url, "option '%s' too long", q);
		memcpy(out->opts[out->n_opts].key, q, kl);
		out->opts[out->n_opts].key[kl] = '\0';
		memcpy(out->opts[out->n_opts].value, eq + 1, vl);
		out->opts[out->n_opts].value[vl] = '\0';
		out->n_opts++;
		q += n;
		if (*q == '&')
			q++;
	}
	return 0;
}

int rift__url_parse(const char *url, struct rift__url *out, char *err,
		    size_t errlen)
{
	static const struct {
		const char *prefix;
		rift__scheme scheme;
	} schemes[] = {
		{ "tcp://", RIFT_SCHEME_TCP },
		{ "rdma://", RIFT_SCHEME_RDMA },
		{ "auto://", RIFT_SCHEME_AUTO },
		{ "valkey-rdma://", RIFT_SCHEME_VALKEY_RDMA },
	};
	const char *s = NULL, *q, *end;

	memset(out, 0, sizeof(*out));
	if (!url)
		return bad(err, errlen, "(null)", "no url given%s", "");
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(schemes); i++)
		if (strncmp(url, schemes[i].prefix, strlen(schemes[i].prefix)) ==
		    0) {
			out->scheme = schemes[i].scheme;
			s = url + strlen(schemes[i].prefix);
		}
	if (!s) {
		const char *sep = strstr(url, "://");

		if (sep) {
			char scheme[32];
			size_t n = (size_t)(sep - url);

			if (n >= sizeof(scheme))
				n = sizeof(scheme) - 1;
			memcpy(scheme, url, n);
			scheme[n] = '\0';
			return bad(err, errlen, url,
				   "unknown scheme '%s' (use tcp, rdma or auto)",
				   scheme);
		}
		return bad(err, errlen, url,
			   "missing scheme%s (write tcp://, rdma:// or auto://)",
			   "");
	}
	q = strchr(s, '?');
	end = q ? q : s + strlen(s);
	if (s == end)
		return bad(err, errlen, url, "no address%s", "");
	while (s < end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		size_t n = comma ? (size_t)(comma - s) : (size_t)(end - s);
		int rc;

		if (out->n_addrs == RIFT_URL_MAX_ADDRS)
			return bad(err, errlen, url,
				   "more than 8 addresses%s", "");
		rc = parse_hostport(url, s, n, &out->addrs[out->n_addrs], err,
				    errlen);
		if (rc)
			return rc;
		out->n_addrs++;
		s += n;
		if (comma) {
			s++;
			if (s == end)
				return bad(err, errlen, url,
					   "empty address after ','%s", "");
		}
	}
	if (q)
		return parse_query(url, q + 1, out, err, errlen);
	return 0;
}

int rift__resolve(const struct rift__hostport *hp, bool passive, int family,
		  struct sockaddr_storage *out, socklen_t *lens, int max,
		  char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	const char *only = family == AF_INET	? " as IPv4, its local address's family"
			   : family == AF_INET6 ? " as IPv6, its local address's family"
						: "";
	char port[8];
	int rc, n = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	snprintf(port, sizeof(port), "%u", hp->port);
	if (rift__fault_hit(RIFT_FAULT_RESOLVE_SLOW))
		usleep(300000);
	rc = getaddrinfo(hp->host[0] ? hp->host : NULL, port, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "resolve '%s'%s: %s", hp->host, only,
			 gai_strerror(rc));
		return RIFT_ENAME;
	}
	for (ai = res; ai && n < max; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		memcpy(&out[n], ai->ai_addr, ai->ai_addrlen);
		lens[n] = ai->ai_addrlen;
		n++;
	}
	freeaddrinfo(res);
	if (n == 0) {
		snprintf(err, errlen, "resolve '%s': no IPv4 or IPv6 address",
			 hp->host);
		return RIFT_ENAME;
	}
	return n;
}

/*
 * The options a URL may carry: settings of one connection, as the config
 * file names them (section, key).  The rest of rift_config is the
 * context's: its queues, pool and polling are shared by every connection.
 */
static const struct {
	const char *section, *name;
} url_keys[] = {
	{ "connect", "connect_timeout_ms" },
	{ "connect", "retries" },
	{ "connect", "retry_delay_ms" },
	{ "connect", "fallback" },
	{ "connect", "fallback_return_ms" },
	{ "session", "keepalive_interval_ms" },
	{ "session", "keepalive_timeout_ms" },
	{ "session", "grace_ms" },
	{ "rdma", "cm" },
	{ "group", "max_paths" },
	{ "group", "policy" },
	{ "group", "local" },
	{ "group", "failback_delay_ms" },
};

/* The row of a per-connection option named name (or its alias). */
static const struct key *url_key(const char *name, bool *alias)
{
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(url_keys); i++) {
		const struct key *k = rift__cfg_find_key(url_keys[i].section,
							 name, alias);

		if (k && !strcmp(k->name, url_keys[i].name))
			return k;
	}
	return NULL;
}

/* "connect_timeout_ms, retries, ..." */
static void url_key_list(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(url_keys) && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
				      url_keys[i].name);
}

/* Why name is not an option: another config key, or nothing at all. */
static void url_unknown(const char *name, char *m, size_t len)
{
	char list[256];

	for (size_t s = 0; s < N_SECTIONS; s++) {
		bool alias;
		const struct key *k =
			rift__cfg_find_key(rift__cfg_sections[s], name, &alias);

		if (k) {
			snprintf(m, len,
				 "option '%s' is not a setting of one "
				 "connection: set %s.%s in the context's "
				 "configuration",
				 name, k->section, k->name);
			return;
		}
	}
	url_key_list(list, sizeof(list));
	snprintf(m, len, "unknown option '%s' (options: %s)", name, list);
}

static int url_options(const char *url, const struct rift__url *u,
		      rift_config *cfg, char *err, size_t errlen)
{
	struct origin got[N_KEYS];
	rift_config tmp = *cfg;
	char m[RIFT_ERRMSG_LEN];
	long at;

	memset(got, 0, sizeof(got));
	for (unsigned i = 0; i < u->n_opts; i++) {
		const char *name = u->opts[i].key;
		struct setting st;
		const struct key *k;
		bool alias;
		size_t row;

		k = url_key(name, &alias);
		if (!k) {
			url_unknown(name, m, sizeof(m));
			return bad(err, errlen, url, "%s", m);
		}
		row = (size_t)(k - rift__cfg_keys);
		/* An option that could change nothing for this scheme is a
		 * mistake to report, not a setting to ignore. */
		if (!strcmp(k->name, "cm") && u->scheme == RIFT_SCHEME_TCP)
			return bad(err, errlen, url, "%s",
				   "option 'cm' sets up RDMA paths, and a "
				   "tcp:// connection has none");
		if (!strcmp(k->name, "fallback") &&
		    u->scheme != RIFT_SCHEME_AUTO)
			return bad(err, errlen, url, "%s",
				   "option 'fallback' is for auto:// (rdma:// "
				   "never falls back, tcp:// has nothing to "
				   "fall back from)");
		if (got[row].from != FROM_DEFAULT) {
			snprintf(m, sizeof(m), "option '%s' is given twice",
				 k->name);
			return bad(err, errlen, url, "%s", m);
		}
		memset(&st, 0, sizeof(st));
		if (rift__cfg_from_text(k, u->opts[i].value, &st, m,
					sizeof(m)) == 0 &&
		    rift__cfg_check_range(k, name, &st, &at, m, sizeof(m)) == 0) {
			rift__cfg_store(&tmp, k, &st);
			got[row].from = FROM_FILE;
			continue;
		}
		if (strncmp(m, name, strlen(name)) != 0) {
			/* "'x' is not an integer": say which option */
			char m2[RIFT_ERRMSG_LEN];

			snprintf(m2, sizeof(m2), "option %s: %s", name, m);
			return bad(err, errlen, url, "%s", m2);
		}
		return bad(err, errlen, url, "option %s", m);
	}
	/* Rules that tie keys together (keepalive_timeout_ms above the
	 * interval), on the connection's settings as a whole. */
	if (rift__cfg_cross_check(&tmp, got, &at, m, sizeof(m)))
		return bad(err, errlen, url, "%s", m);
	*cfg = tmp;
	return 0;
}

int rift__url_take(rift_ctx *ctx, const char *url, struct rift__url *out,
		   rift_config *cfg)
{
	int rc = rift__url_parse(url, out, ctx->errmsg, sizeof(ctx->errmsg));

	if (rc)
		return rc;
	if (out->scheme == RIFT_SCHEME_VALKEY_RDMA)
		return rift__ctx_fail(ctx, RIFT_EINVAL,
				      "url '%s': valkey-rdma:// carries a byte "
				      "stream, not rift's messages: open it "
				      "with rift_stream_connect or "
				      "rift_stream_listen", url);
	if (!out->n_opts)
		return 0;
	if (!cfg)
		return rift__ctx_fail(ctx, RIFT_EINVAL,
				      "url '%s': option '%s': a listener takes "
				      "no options (its sessions have the "
				      "context's configuration)",
				      url, out->opts[0].key);
	return url_options(url, out, cfg, ctx->errmsg,
				 sizeof(ctx->errmsg));
}
