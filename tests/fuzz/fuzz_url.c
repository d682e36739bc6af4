/*
 * libFuzzer target for the URL parser (src/api/url.c): the input, cut at
 * its first NUL, is a URL.  Properties beyond "no crash": a refusal is
 * RIFT_EINVAL with a message that names the URL; an accepted URL has one
 * to RIFT_URL_MAX_ADDRS addresses and at most RIFT_URL_MAX_OPTS options,
 * and written out again (IPv6 hosts in brackets) it parses to the same
 * thing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static size_t put(char *out, size_t cap, size_t n, const char *s)
{
	size_t l = strlen(s);

	if (n + l >= cap)
		abort(); /* the buffer is sized for the largest URL */
	memcpy(out + n, s, l + 1);
	return n + l;
}

/* u as a URL again: scheme, addresses, options. */
static void unparse(const struct rift__url *u, char *out, size_t cap)
{
	static const char *const prefix[] = {
		[RIFT_SCHEME_TCP] = "tcp://",
		[RIFT_SCHEME_RDMA] = "rdma://",
		[RIFT_SCHEME_AUTO] = "auto://",
		[RIFT_SCHEME_VALKEY_RDMA] = "valkey-rdma://",
	};
	size_t n = put(out, cap, 0, prefix[u->scheme]);
	char item[RIFT_HOST_LEN + 16];

	for (unsigned i = 0; i < u->n_addrs; i++) {
		const struct rift__hostport *hp = &u->addrs[i];

		snprintf(item, sizeof(item), strchr(hp->host, ':') ? "%s[%s]:%u"
								   : "%s%s:%u",
			 i ? "," : "", hp->host, hp->port);
		n = put(out, cap, n, item);
	}
	for (unsigned i = 0; i < u->n_opts; i++) {
		n = put(out, cap, n, i ? "&" : "?");
		n = put(out, cap, n, u->opts[i].key);
		n = put(out, cap, n, "=");
		n = put(out, cap, n, u->opts[i].value);
	}
}

static void same(const struct rift__url *a, const struct rift__url *b)
{
	if (a->scheme != b->scheme || a->n_addrs != b->n_addrs ||
	    a->n_opts != b->n_opts)
		abort();
	for (unsigned i = 0; i < a->n_addrs; i++)
		if (strcmp(a->addrs[i].host, b->addrs[i].host) ||
		    a->addrs[i].port != b->addrs[i].port)
			abort();
	for (unsigned i = 0; i < a->n_opts; i++)
		if (strcmp(a->opts[i].key, b->opts[i].key) ||
		    strcmp(a->opts[i].value, b->opts[i].value))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly the input and its NUL, so that reading past
	 * the end is caught. */
	char *url = malloc(size + 1), err[256];
	static char again[RIFT_URL_MAX_ADDRS * (RIFT_HOST_LEN + 16) +
			  RIFT_URL_MAX_OPTS * 256 + 64];
	struct rift__url u, v;
	int rc;

	if (!url)
		return 0;
	memcpy(url, data, size);
	url[size] = '\0';
	memset(err, 0x5a, sizeof(err));
	rc = rift__url_parse(url, &u, err, sizeof(err));
	if (rc) {
		if (rc != RIFT_EINVAL || !memchr(err, '\0', sizeof(err)) ||
		    strncmp(err, "url '", 5) != 0)
			abort();
		free(url);
		return 0;
	}
	if (u.scheme != RIFT_SCHEME_TCP && u.scheme != RIFT_SCHEME_RDMA &&
	    u.scheme != RIFT_SCHEME_AUTO && u.scheme != RIFT_SCHEME_VALKEY_RDMA)
		abort();
	if (u.n_addrs < 1 || u.n_addrs > RIFT_URL_MAX_ADDRS ||
	    u.n_opts > RIFT_URL_MAX_OPTS)
		abort();
	unparse(&u, again, sizeof(again));
	if (rift__url_parse(again, &v, err, sizeof(err)) != 0)
		abort();
	same(&u, &v);
	free(url);
	return 0;
}
