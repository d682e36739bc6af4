/*
 * rift-perf --op write and --op read (issue 17, item 4), as a user runs
 * build/bin/rift-perf: latency and bandwidth over tcp:// (loopback, and
 * a server and a client as two processes), write lat polling memory as
 * ib_write_lat does and, with --notify, told by RIFT_EVENT_WRITTEN, the
 * figure perftest would print beside the round trip (half of it for a
 * write, all of it for a read), an operation larger than a message, and
 * the combinations that are refused.  TEST_T: the same on the suite's
 * transport (rdma in the lab).
 */
#include <math.h>
#include <stdbool.h>
#include <unistd.h>

#include "perf_run.h"

/*
 * A write lat's JSON (polled, or --notify): over tcp, iters measured
 * round trips of 64 bytes on one connection, regions of region_bytes,
 * and perftest's figure beside the round trip: half of it, one way.
 */
static void check_write_lat_json(const char *out, bool notify, int iters,
				 double region_bytes)
{
	double rtt;

	CHECK_CONTAINS(out, "\"test\": \"lat\"");
	CHECK_CONTAINS(out, "\"op\": \"write\"");
	CHECK_CONTAINS(out, notify ? "\"notify\": true" : "\"notify\": false");
	CHECK_CONTAINS(out, "\"transport\": \"tcp\"");
	CHECK_CONTAINS(out, "\"error\": null");
	CHECK_EQ(jnum(out, "size"), 64);
	CHECK_EQ(jnum(out, "iterations"), iters);
	CHECK_EQ(jnum(out, "messages"), iters);
	CHECK_EQ(jnum(out, "region_bytes"), region_bytes);
	perf_check_lat(out);
	rtt = jnum_from(out, "\"lat_us\"", "p50");
	CHECK(fabs(jnum_from(out, "\"one_way_us\"", "p50") - rtt / 2) <= 0.001);
	CHECK(fabs(jnum_from(out, "\"perftest_us\"", "p50") - rtt / 2) <=
	      0.001);
}

/* ib_write_lat: each side writes plainly into the other's region and
 * polls the last byte of its own; perftest prints half the round trip,
 * as for send.  2000 round trips on one slot: its mark (count mod 255,
 * plus 1) wraps several times. */
TEST(rift_perf_write_lat_polls_memory_as_ib_write_lat)
{
	struct run *r = new_run();
	const char *json[] = {"--loopback", "--transport", "tcp", "--op",
			      "write",	    "--json",	   "-n",  "2000",
			      "--warmup",   "300",	   "-s",  "64",
			      NULL};
	const char *human[] = {"--loopback", "--transport", "tcp", "--op",
			       "write",	     "-n",	    "500", NULL};

	perf_run(r, NULL, json);
	CHECK_EQ(r->status, 0);
	/* -n measured, after 300 warm-up round trips, unsampled; a 64-byte
	 * slot to write from and one to be written into per round trip in
	 * flight (1), as perftest's buffer halves */
	CHECK_EQ(jnum(r->out, "warmup"), 300);
	check_write_lat_json(r->out, false, 2000, 128);

	perf_run(r, NULL, human);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "rift-perf: write latency (round trip) test");
	CHECK_CONTAINS(r->out, "1 round trip per connection");
	CHECK_CONTAINS(r->out, "Write seen by   : polling its last byte (as "
			       "ib_write_lat)");
	CHECK_CONTAINS(r->out, " p50/2 ");
	free(r);
}

/* Polling with several slots and connections, over a sweep: each slot's
 * last byte moves with the size, each size starts from zeroed slots, and
 * every round trip of every slot is answered and counted once. */
TEST(rift_perf_write_lat_polls_every_slot_of_every_size)
{
	struct run *r = new_run();
	const char *json[] = {"--loopback", "--transport", "tcp",  "--op",
			      "write",	    "--json",	   "-a",   "--max-size",
			      "256",	    "-t",	   "3",	   "-q",
			      "2",	    "-n",	   "1000", "--poll",
			      "busy",	    NULL};
	const char *at = NULL;

	perf_run(r, NULL, json);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "\"error\": null");
	CHECK_CONTAINS(r->out, "\"notify\": false");
	CHECK_EQ(jnum(r->out, "qd"), 3);
	CHECK_EQ(jnum(r->out, "region_bytes"), 2.0 * 3 * 256);
	/* 2, 4, ... 256: eight sizes, each with every round trip */
	CHECK_EQ(count(r->out, "\"iterations\": 1000,"), 8);
	CHECK_EQ(count(r->out, "\"messages\": 2000,"), 8);
	for (int size = 2; size <= 256; size *= 2) {
		char key[32];

		snprintf(key, sizeof(key), "\"size\": %d,", size);
		at = strstr(r->out, key);
		CHECK(at != NULL);
		if (at)
			perf_check_lat(at);
	}
	free(r);
}

/* --notify: the former exchange, rift's way of telling an application:
 * write_notify both ways, each side told by RIFT_EVENT_WRITTEN; named
 * apart in the table and the JSON. */
TEST(rift_perf_write_lat_notify_is_told_by_written)
{
	struct run *r = new_run();
	const char *json[] = {"--loopback", "--transport", "tcp",    "--op",
			      "write",	    "--notify",	   "--json", "-n",
			      "2000",	    "-s",	   "64",     NULL};
	const char *human[] = {"--loopback", "--transport", "tcp", "--op",
			       "write",	     "--notify",    "-n",  "500",
			       "-t",	     "2",	    NULL};

	perf_run(r, NULL, json);
	CHECK_EQ(r->status, 0);
	/* one slot of 64 bytes, written from and into at the same offset */
	check_write_lat_json(r->out, true, 2000, 64);

	perf_run(r, NULL, human);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out,
		       "rift-perf: write_notify latency (round trip) test");
	CHECK_CONTAINS(r->out, "2 round trips per connection");
	CHECK_CONTAINS(r->out, "Write seen by   : RIFT_EVENT_WRITTEN");
	CHECK_CONTAINS(r->out, "\n 2            500 ");
	/* the header line added fits 80 columns, as the table does */
	for (const char *l = r->out; *l;) {
		size_t n = strcspn(l, "\n");

		CHECK(n <= 79);
		l += n + (l[n] == '\n');
	}
	free(r);
}

/* ib_read_lat reports the whole READ (perftest's rtt_factor is 1 for
 * READ): so does rift-perf's t_typ column, and a read has no one way. */
TEST(rift_perf_read_lat_reports_the_whole_round_trip)
{
	struct run *r = new_run();
	const char *json[] = {"--loopback", "--transport", "tcp",
			      "--op",	    "read",	   "--json",
			      "-n",	    "2000",	   NULL};
	const char *human[] = {"--loopback", "--transport", "tcp",  "--op",
			       "read",	     "-n",	    "1000", NULL};
	double v[11];
	const char *row;

	perf_run(r, NULL, json);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "\"op\": \"read\"");
	CHECK_EQ(jnum(r->out, "iterations"), 2000);
	perf_check_lat(r->out);
	CHECK(strstr(r->out, "one_way_us") == NULL);
	CHECK(fabs(jnum_from(r->out, "\"perftest_us\"", "p50") -
		   jnum_from(r->out, "\"lat_us\"", "p50")) <= 0.001);

	perf_run(r, NULL, human);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "read latency (round trip) test");
	CHECK_CONTAINS(r->out, "1 READ per connection");
	CHECK_CONTAINS(r->out, " t_typ ");
	/* size, iterations, min p50 p99 p99.9 max avg, p50 again, CPU */
	row = strstr(r->out, "\n 2 ");
	CHECK(row);
	CHECK_EQ(sscanf(row, " %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf",
			&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
			&v[8], &v[9], &v[10]),
		 11);
	CHECK_EQ(v[1], 1000);
	CHECK(v[3] > 0);
	CHECK(fabs(v[8] - v[3]) <= 0.01);
	free(r);
}

/* ib_write_bw, ib_read_bw: -t operations outstanding (perftest's 128 by
 * default), every one completed and counted. */
TEST(rift_perf_write_and_read_bw_over_tcp)
{
	struct run *r = new_run();
	const char *wr[] = {"--loopback", "--transport", "tcp",	   "--json",
			    "--op",	  "write",	 "--test", "bw",
			    "-n",	  "3000",	 "-s",	   "65536",
			    "-q",	  "2",		 NULL};
	const char *rd[] = {"--loopback", "--transport", "tcp",	   "--json",
			    "--op",	  "read",	 "--test", "bw",
			    "-D",	  "0.3",	 "-s",	   "4K",
			    "-t",	  "16",		 NULL};
	const char *table[] = {"--loopback", "--transport",    "tcp", "--op",
			       "write",	     "--test",	       "bw",  "-n",
			       "300",	     "--report_gbits", NULL};

	perf_run(r, NULL, wr);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "\"test\": \"bw\"");
	CHECK_CONTAINS(r->out, "\"op\": \"write\"");
	CHECK_EQ(jnum(r->out, "qd"), 128);
	/* 128 slots of 64 KiB on each connection */
	CHECK_EQ(jnum(r->out, "region_bytes"), 128.0 * 65536);
	CHECK_EQ(jnum(r->out, "warmup"), 300);
	CHECK_EQ(jnum(r->out, "iterations"), 3000);
	CHECK_EQ(jnum(r->out, "messages"), 6000);
	CHECK_EQ(jnum_from(r->out, "\"results\"", "bytes"), 6000.0 * 65536);
	perf_check_bw(r->out);

	perf_run(r, NULL, rd);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "\"op\": \"read\"");
	CHECK_EQ(jnum(r->out, "qd"), 16);
	CHECK(jnum(r->out, "iterations") > 0);
	CHECK(jnum(r->out, "seconds") >= 0.3);
	perf_check_bw(r->out);

	perf_run(r, NULL, table);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "write bandwidth test");
	CHECK_CONTAINS(r->out, "128 WRITEs outstanding per connection");
	CHECK_CONTAINS(r->out, "BW[Gb/s]");
	CHECK_CONTAINS(r->out, " 65536    300 ");
	free(r);
}

/* An operation is not a message: one larger than max_msg_size goes in
 * pieces, where a send of that size is refused. */
TEST(rift_perf_rma_operations_larger_than_a_message)
{
	struct run *r = new_run();
	const char *wr[] = {"--loopback", "--transport", "tcp",	   "--json",
			    "--op",	  "write",	 "--test", "bw",
			    "-s",	  "1M",		 "-n",	   "40",
			    "-t",	  "4",		 NULL};
	const char *rd[] = {"--loopback", "--transport", "tcp", "--json",
			    "--op",	  "read",	 "-s",	"1M",
			    "-n",	  "30",		 NULL};
	const char *snd[] = {"--loopback", "--transport", "tcp",
			     "-s",	   "1M",	  NULL};

	perf_run(r, "RIFT_SESSION_MAX_MSG_SIZE=64KiB", wr);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(jnum(r->out, "messages"), 40);
	perf_check_bw(r->out);
	perf_run(r, "RIFT_SESSION_MAX_MSG_SIZE=64KiB", rd);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(jnum(r->out, "iterations"), 30);
	perf_check_lat(r->out);
	perf_run(r, "RIFT_SESSION_MAX_MSG_SIZE=64KiB", snd);
	CHECK_EQ(r->status, 2);
	CHECK_CONTAINS(r->err, "max_msg_size 65536");
	free(r);
}

/* Server and client as two processes: the server exports a region per
 * data connection and, in write lat, writes back. */
TEST(rift_perf_rma_server_and_client_processes)
{
	static const struct {
		const char *op, *test, *conns, *opt, *says;
	} runs[] = {
		{"write", "lat", "1", "-t2",
		 "client: write lat test, 1 connection(s), transport tcp"},
		{"write", "lat", "2", "--notify",
		 "client: write_notify lat test, 2 connection(s), transport "
		 "tcp"},
		{"read", "bw", "2", "-t16",
		 "client: read bw test, 2 connection(s), transport tcp"},
	};
	struct run *r = new_run();

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char port[16];
		const char *srv_args[] = {"-S", "--transport", "tcp", "-p",
					  port, "127.0.0.1",   NULL};
		const char *cli_args[] = {
			"--transport", "tcp",	    "-p",	   port,
			"--json",      "--op",	    runs[i].op,	   "--test",
			runs[i].test,  "-q",	    runs[i].conns, "-n",
			"1000",	       runs[i].opt, "127.0.0.1",   NULL};
		int out = tmpfile_fd(), err = tmpfile_fd(), srv_status;
		pid_t srv;

		snprintf(port, sizeof(port), "%d", h_free_port());
		srv = perf_start(srv_args, NULL, out, err);
		perf_run(r, "RIFT_CONNECT_RETRIES=100", cli_args);
		CHECK_EQ(r->status, 0);
		CHECK_CONTAINS(r->out, "\"mode\": \"client\"");
		CHECK_EQ(jnum(r->out, "iterations"), 1000);
		if (!strcmp(runs[i].test, "lat"))
			perf_check_lat(r->out);
		else
			perf_check_bw(r->out);
		srv_status = perf_wait(srv);
		slurp(out, r->out);
		slurp(err, r->err);
		printf("server: exit %d\n%s", srv_status, r->err);
		CHECK_EQ(srv_status, 0);
		CHECK_CONTAINS(r->err, runs[i].says);
		CHECK_CONTAINS(r->err, "client done");
	}
	free(r);
}

TEST(rift_perf_rma_bad_combinations_exit_2_saying_why)
{
	static const struct {
		const char *args[10];
		const char *says[2];
	} cases[] = {
		{{"--loopback", "--op", "rdma"},
		 {"--op", "use send, write or read"}},
		{{"--loopback", "--test", "write"},
		 {"--test", "--op write --test lat"}},
		{{"--loopback", "--op", "write", "--test", "bw", "--fill"},
		 {"--fill", "only for --op send"}},
		{{"--loopback", "--op", "read", "--test", "bw", "-t", "0"},
		 {"-t/--qd", "is for --op send"}},
		{{"--loopback", "--op", "read", "-t", "0"},
		 {"-t/--qd", "at least 1"}},
		{{"--loopback", "--op", "write", "-s", "0"},
		 {"-s/--size", "at least 1 byte"}},
		{{"--loopback", "--op", "read", "-s", "1G", "-q", "2"},
		 {"-s/--size", "at most 1073741824"}},
		/* polled write lat: a slot each way per round trip */
		{{"--loopback", "--op", "write", "-s", "16M", "-t", "64"},
		 {"-t/--qd", "write lat registers 2 times -s times -t"}},
		{{"--loopback", "--op", "write", "-s", "600M"},
		 {"-s/--size", "at most 1073741824"}},
		/* --notify: the write lat's alternative, nothing else's */
		{{"--loopback", "--op", "read", "--notify"},
		 {"--notify", "only for --op write --test lat"}},
		{{"--loopback", "--op", "write", "--test", "bw", "--notify"},
		 {"--notify", "not --op write --test bw"}},
		{{"--loopback", "--notify"},
		 {"--notify", "not --op send --test lat"}},
	};
	struct run *r = new_run();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		perf_run(r, NULL, cases[i].args);
		CHECK_EQ(r->status, 2);
		CHECK_CONTAINS(r->err, cases[i].says[0]);
		CHECK_CONTAINS(r->err, cases[i].says[1]);
		CHECK_STR(r->out, "");
	}
	free(r);
}

/* On the suite's transport and host: rdma in the lab, tcp otherwise. */
TEST_T(rift_perf_rma_loopback_on_the_test_transport)
{
	struct run *r = new_run();
	/* write lat polled (by RDMA the server's write lands with no word
	 * to the client's loop), then --notify: the one word told apart */
	const char *lat[] = {"--loopback", "--transport", rt_transport(),
			     "--json",	   "--op",	  "write",
			     "-n",	   "1000",	  "-s",
			     "32",	   rt_host(),	  NULL,
			     NULL};
	const char *bw[] = {
		"--loopback", "--transport", rt_transport(), "--json",
		"--op",	      "read",	     "--test",	     "bw",
		"-n",	      "500",	     "-s",	     "64K",
		"-q",	      "2",	     rt_host(),	     NULL};
	char want[64];

	snprintf(want, sizeof(want), "\"transport\": \"%s\"", rt_transport());
	for (int notify = 0; notify < 2; notify++) {
		lat[11] = notify ? "--notify" : NULL;
		perf_run(r, NULL, lat);
		CHECK_EQ(r->status, 0);
		CHECK_CONTAINS(r->out, want);
		CHECK_CONTAINS(r->out, notify ? "\"notify\": true"
					      : "\"notify\": false");
		CHECK_EQ(jnum(r->out, "iterations"), 1000);
		perf_check_lat(r->out);
	}
	perf_run(r, NULL, bw);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, want);
	CHECK_EQ(jnum(r->out, "iterations"), 500);
	perf_check_bw(r->out);
	free(r);
}
