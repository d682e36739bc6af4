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

#include "internal.h"

static int bad(char *err, size_t errlen, const char *url, const char *fmt,
	       const char *detail)
{
	char what[160];

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

int rift__resolve(const struct rift__hostport *hp, bool passive,
		  struct sockaddr_storage *out, socklen_t *lens, int max,
		  char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char port[8];
	int rc, n = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	snprintf(port, sizeof(port), "%u", hp->port);
	if (rift__fault_hit(RIFT_FAULT_RESOLVE_SLOW))
		usleep(300000);
	rc = getaddrinfo(hp->host[0] ? hp->host : NULL, port, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "resolve '%s': %s", hp->host,
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

int rift__url_take(rift_ctx *ctx, const char *url, struct rift__url *out)
{
	int rc = rift__url_parse(url, out, ctx->errmsg, sizeof(ctx->errmsg));

	if (rc)
		return rc;
	if (out->n_opts)
		return rift__ctx_fail(ctx, RIFT_EINVAL,
				      "url '%s': unknown option '%s'", url,
				      out->opts[0].key);
	return 0;
}
