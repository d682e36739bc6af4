/* URL parser: every accepted form and a clear message for each mistake. */
#include "internal.h"
#include "../runner.h"

static struct rift__url parse_ok(const char *s)
{
	struct rift__url u;
	char err[256] = "";

	if (rift__url_parse(s, &u, err, sizeof(err)) != 0)
		FAIL("'%s' rejected: %s", s, err);
	return u;
}

static void parse_bad(const char *s, const char *expect)
{
	struct rift__url u;
	char err[256] = "";

	CHECK_EQ(rift__url_parse(s, &u, err, sizeof(err)), RIFT_EINVAL);
	CHECK_CONTAINS(err, expect);
}

TEST(url_accepts_every_form)
{
	struct rift__url u;

	u = parse_ok("tcp://127.0.0.1:7788");
	CHECK_EQ(u.scheme, RIFT_SCHEME_TCP);
	CHECK_EQ(u.n_addrs, 1);
	CHECK_STR(u.addrs[0].host, "127.0.0.1");
	CHECK_EQ(u.addrs[0].port, 7788);

	u = parse_ok("rdma://[fe80::1]:1");
	CHECK_EQ(u.scheme, RIFT_SCHEME_RDMA);
	CHECK_STR(u.addrs[0].host, "fe80::1");
	CHECK_EQ(u.addrs[0].port, 1);

	u = parse_ok("auto://storage-01.example.org:65535");
	CHECK_EQ(u.scheme, RIFT_SCHEME_AUTO);
	CHECK_STR(u.addrs[0].host, "storage-01.example.org");
	CHECK_EQ(u.addrs[0].port, 65535);

	u = parse_ok("rdma://a:7788,b:7789,[::1]:7790");
	CHECK_EQ(u.n_addrs, 3);
	CHECK_STR(u.addrs[1].host, "b");
	CHECK_EQ(u.addrs[1].port, 7789);
	CHECK_STR(u.addrs[2].host, "::1");

	u = parse_ok("tcp://:0");
	CHECK_STR(u.addrs[0].host, "");
	CHECK_EQ(u.addrs[0].port, 0);

	u = parse_ok("tcp://h:1?cm=tcp&x=1");
	CHECK_EQ(u.n_opts, 2);
	CHECK_STR(u.opts[0].key, "cm");
	CHECK_STR(u.opts[0].value, "tcp");
}

TEST(url_rejects_with_a_reason)
{
	parse_bad("127.0.0.1:7788", "missing scheme");
	parse_bad("udp://h:1", "unknown scheme 'udp'");
	parse_bad("tcp://", "no address");
	parse_bad("tcp://host", "missing port");
	parse_bad("tcp://host:", "missing port");
	parse_bad("tcp://host:http", "not a number");
	parse_bad("tcp://host:65536", "out of range");
	parse_bad("tcp://host:1234567", "out of range");
	parse_bad("tcp://fe80::1:80", "must be in brackets");
	parse_bad("tcp://[fe80::1:80", "missing ']'");
	parse_bad("tcp://[zz::1]:80", "not an IPv6 address");
	parse_bad("tcp://[::1]80", "missing port");
	parse_bad("tcp://bad host:80", "bad host name");
	parse_bad("tcp://a:1,", "empty address");
	parse_bad("tcp://a:1,,b:2", "empty address");
	parse_bad("tcp://a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9", "more than 8");
	parse_bad("tcp://h:1?novalue", "not key=value");
	parse_bad(NULL, "no url");
}

static void no_accept(rift_listener *l, rift_conn *conn)
{
	(void)l;
	(void)conn;
}

TEST(url_errors_reach_the_caller)
{
	rift_ctx *ctx;
	rift_conn *c = NULL;
	rift_listener *l = NULL;

	CHECK_EQ(rift_ctx_create(&ctx, NULL), 0);
	CHECK_EQ(rift_connect(ctx, "tcp://nowhere", NULL, NULL, &c), RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "missing port");
	CHECK_EQ(rift_connect(ctx, "tcp://h:1?colour=blue", NULL, NULL, &c),
		 RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "unknown option 'colour'");
	/* A host name that does not resolve is an event, not an error of
	 * the call (resolved off the loop: test_resolve.c); rift_listen
	 * resolves in the call. */
	CHECK_EQ(rift_listen(ctx, "tcp://no-such-host.invalid:1", NULL, NULL,
			     no_accept, &l),
		 RIFT_ENAME);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "no-such-host.invalid");
	CHECK_EQ(rift_listen(ctx, "tcp//x", NULL, NULL, NULL, &l), RIFT_EINVAL);
	CHECK(c == NULL && l == NULL);
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}

static int stream_closed;

static void count_stream_close(rift_stream *s)
{
	(void)s;
	stream_closed++;
}

/* Byte-stream URLs (rift.h, "Byte streams"): each kind of URL goes to its
 * own calls, its options are checked, and a stream holds its context. */
TEST(stream_urls_are_checked)
{
	rift_ctx *ctx;
	rift_conn *c = NULL;
	rift_stream *s = NULL;
	int rc;

	CHECK_EQ(rift_ctx_create(&ctx, NULL), 0);
	CHECK_EQ(rift_connect(ctx, "valkey-rdma://10.0.0.1:6379", NULL, NULL,
			      &c),
		 RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "rift_stream_connect");
	CHECK_EQ(rift_stream_connect(ctx, "tcp://10.0.0.1:6379", NULL, NULL,
				     &s),
		 RIFT_ENOTSUP);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "not a byte-stream scheme");
	CHECK_EQ(rift_stream_connect(ctx, "valkey-rdma://a:1,b:2", NULL, NULL,
				     &s),
		 RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "one address");
	CHECK_EQ(rift_stream_connect(ctx, "valkey-rdma://a:1?rx_size=4095",
				     NULL, NULL, &s),
		 RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "rx_size '4095'");
	CHECK_EQ(rift_stream_connect(ctx, "valkey-rdma://a:1?rx_size=16777217",
				     NULL, NULL, &s),
		 RIFT_EINVAL);
	CHECK_EQ(rift_stream_connect(ctx, "valkey-rdma://a:1?colour=blue",
				     NULL, NULL, &s),
		 RIFT_EINVAL);
	CHECK_CONTAINS(rift_ctx_last_error(ctx), "unknown option 'colour'");
	CHECK(c == NULL && s == NULL);
	/* Without an RDMA device (the build host: this test runs on TCP
	 * only) the scheme is refused, saying why; the lifetime of a stream
	 * is test_stream.c's, in the lab. */
	rc = rift_stream_connect(ctx, "valkey-rdma://127.0.0.1:1", NULL, NULL,
				 &s);
	if (rc == RIFT_ENOTSUP) {
		CHECK_CONTAINS(rift_ctx_last_error(ctx), "unavailable");
	} else {
		CHECK_EQ(rc, 0);
		rift_stream_close(s, count_stream_close);
		for (int i = 0; i < 200 && !stream_closed; i++)
			rift_ctx_run(ctx, 5);
		CHECK_EQ(stream_closed, 1);
	}
	CHECK_EQ(rift_ctx_destroy(ctx), 0);
}
