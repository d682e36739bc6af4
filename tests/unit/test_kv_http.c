/* rift-kv's HTTP requests for GET /metrics (examples/rift-kv/http.c). */
#include "../../examples/rift-kv/http.h"
#include "../runner.h"

static int req(const char *s, int *head_only)
{
	return kv_http_request(s, strlen(s), head_only);
}

/* The answer to s, and to every part of it cut short: a part is always
 * "read more" unless the answer could be given from it already (the
 * prefix that shows a malformed line). */
static int whole(const char *s)
{
	int h;

	for (size_t n = 0; n < strlen(s); n++) {
		int rc = kv_http_request(s, n, &h);

		if (rc)
			return rc;
	}
	return req(s, &h);
}

TEST(kv_http_get_and_head_of_metrics)
{
	int h = -1;

	CHECK_EQ(req("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &h), 200);
	CHECK_EQ(h, 0);
	CHECK_EQ(req("HEAD /metrics HTTP/1.0\r\n\r\n", &h), 200);
	CHECK_EQ(h, 1);
	/* bare LF, empty lines before the request line, a query string,
	 * the absolute form, headers of every shape Prometheus sends */
	CHECK_EQ(req("GET /metrics HTTP/1.1\n\n", &h), 200);
	CHECK_EQ(req("\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n", &h), 200);
	CHECK_EQ(req("GET /metrics?x=1 HTTP/1.1\r\n\r\n", &h), 200);
	CHECK_EQ(req("GET http://h:9/metrics HTTP/1.1\r\n\r\n", &h), 200);
	CHECK_EQ(req("GET http://h:9 HTTP/1.1\r\n\r\n", &h), 404);
	CHECK_EQ(whole("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"
		       "User-Agent: Prometheus/2.45.0\r\nAccept: "
		       "application/openmetrics-text;version=1.0.0,text/"
		       "plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: "
		       "gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n"
		       "Empty:\r\n\r\n"),
		 200);
	/* a body after the head is not looked at */
	CHECK_EQ(req("GET /metrics HTTP/1.1\r\n\r\n\x01garbage", &h), 200);
}

TEST(kv_http_wait_for_the_whole_head)
{
	int h;

	CHECK_EQ(req("", &h), 0);
	CHECK_EQ(req("GET /metrics HTTP/1.1\r\n", &h), 0);
	CHECK_EQ(req("GET /metrics HTTP/1.1\r\nHost: x\r\n\r", &h), 0);
	CHECK_EQ(req("GET /nope HTTP/1.1\r\n", &h), 0); /* 404 at the end */
}

TEST(kv_http_other_paths_and_methods)
{
	int h;

	CHECK_EQ(whole("GET / HTTP/1.1\r\n\r\n"), 404);
	CHECK_EQ(whole("GET /metricsx HTTP/1.1\r\n\r\n"), 404);
	CHECK_EQ(whole("GET /metrics/ HTTP/1.1\r\n\r\n"), 404);
	CHECK_EQ(whole("GET /METRICS HTTP/1.1\r\n\r\n"), 404);
	CHECK_EQ(whole("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"),
		 405);
	CHECK_EQ(whole("PUT /x HTTP/1.1\r\n\r\n"), 405);
	CHECK_EQ(whole("get /metrics HTTP/1.1\r\n\r\n"), 405); /* case counts */
	CHECK_EQ(req("BREW /pot HTTP/1.1\r\n\r\n", &h), 405);
}

TEST(kv_http_malformed_requests)
{
#define S(s) { s, sizeof(s) - 1 }
	static const struct {
		const char *s;
		size_t n;
	} bad[] = {
		S("GARBAGE\r\n"),
		S("GET\r\n"),
		S("GET /metrics\r\n"),
		S("GET  /metrics HTTP/1.1\r\n"),
		S("GET /metrics  HTTP/1.1\r\n"),
		S("GET metrics HTTP/1.1\r\n"),
		S("GET /metrics HTTP/1.1 \r\n"),
		S("GET /metrics HTTP/1\r\n"),
		S("GET /metrics http/1.1\r\n"),
		S("GET /metrics HTTP/1.x\r\n"),
		S("GET /metrics HTTP/1.1\rX\r\n"),
		S("G\x01T /metrics HTTP/1.1\r\n"),
		S("GET /me\0trics HTTP/1.1\r\n"),
		S("GET /metrics HTTP/1.1\r\nNo colon\r\n"),
		S("GET /metrics HTTP/1.1\r\nName : v\r\n"),
		S("GET /metrics HTTP/1.1\r\n: v\r\n"),
		S("GET /metrics HTTP/1.1\r\nA: b\r\n folded\r\n"),
		S("GET /metrics HTTP/1.1\r\nA: b\x7f\r\n"),
		/* control bytes are refused before any line end */
		S("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), /* TLS */
		S("GET /metrics HTTP/1.1\r\nA: \x00"),
		S("GET /\rX"),
	};
#undef S

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		int h, rc = kv_http_request(bad[i].s, bad[i].n, &h);

		if (rc != 400)
			FAIL("request %zu: %d, want 400", i, rc);
	}
	CHECK_EQ(whole("GET /metrics HTTP/2.0\r\n\r\n"), 505);
	CHECK_EQ(whole("GET /metrics HTTP/0.9\r\n\r\n"), 505);
}

TEST(kv_http_head_size_is_bounded)
{
	static char big[KV_HTTP_MAX_HEAD + 64];
	size_t n;
	int h;

	/* no line end at all */
	memset(big, 'A', sizeof(big));
	CHECK_EQ(kv_http_request(big, KV_HTTP_MAX_HEAD, &h), 0);
	CHECK_EQ(kv_http_request(big, KV_HTTP_MAX_HEAD + 1, &h), 431);
	/* a head of exactly the limit is taken, one byte more is not */
	n = (size_t)snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nX: ");
	memset(big + n, 'v', KV_HTTP_MAX_HEAD - n - 4);
	memcpy(big + KV_HTTP_MAX_HEAD - 4, "\r\n\r\n", 4);
	CHECK_EQ(kv_http_request(big, KV_HTTP_MAX_HEAD, &h), 200);
	memset(big + n, 'v', KV_HTTP_MAX_HEAD - n - 3);
	memcpy(big + KV_HTTP_MAX_HEAD - 3, "\r\n\r\n", 4);
	CHECK_EQ(kv_http_request(big, KV_HTTP_MAX_HEAD + 1, &h), 431);
	/* many short header lines count too */
	n = (size_t)snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\n");
	while (n + 6 < sizeof(big)) {
		memcpy(big + n, "A: b\r\n", 6);
		n += 6;
	}
	CHECK_EQ(kv_http_request(big, n, &h), 431);
}

TEST(kv_http_answer_heads)
{
	char buf[256];
	size_t n = kv_http_head(buf, sizeof(buf), 200,
				"text/plain; version=0.0.4", 1234);

	CHECK(n > 0);
	CHECK_STR(buf, "HTTP/1.1 200 OK\r\n"
		       "Content-Type: text/plain; version=0.0.4\r\n"
		       "Content-Length: 1234\r\n"
		       "Connection: close\r\n\r\n");
	CHECK_EQ(n, strlen(buf));
	n = kv_http_head(buf, sizeof(buf), 405, "text/plain", 0);
	CHECK(n > 0 && strstr(buf, "HTTP/1.1 405 Method Not Allowed\r\n") == buf);
	CHECK(strstr(buf, "\r\nAllow: GET, HEAD\r\n") != NULL);
	CHECK_STR(kv_http_reason(431), "Request Header Fields Too Large");
	CHECK_EQ(kv_http_head(buf, 20, 200, "text/plain", 0), 0);
}
