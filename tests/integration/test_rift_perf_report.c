/*
 * What rift-perf reports, and how: --json's one object on every failure
 * (a bad option, a server that cannot listen, a connect failure, a run
 * that fails half-way) with the RIFT_E* name behind it; --plot's file
 * checked before anything runs; the round trip said so, with one way
 * (half of it, as perftest reports latency) beside it; the table in 80
 * columns; the warning about steps too short to be stable.  All over TCP
 * on 127.0.0.1 (TEST: the transport does not matter to the report).
 */
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_run.h"

/* stdout is one JSON object and nothing else. */
static void check_one_object(const char *out)
{
	size_t n = strlen(out);

	CHECK(n > 4);
	CHECK(out[0] == '{');
	CHECK(!strcmp(out + n - 2, "}\n"));
	CHECK_EQ(count(out, "\n{"), 0);
	CHECK_EQ(count(out, "\"error\": "), 1);
}

/* --json's error: the message says what says does, the RIFT_E* name is
 * rift_error (NULL: none, null in the JSON). */
static void check_error(const char *out, const char *says,
			const char *rift_error)
{
	char want[96];

	check_one_object(out);
	CHECK_CONTAINS(out, "\"error\": { \"message\": \"");
	CHECK_CONTAINS(strstr(out, "\"error\": {"), says);
	if (rift_error)
		snprintf(want, sizeof(want), "\"rift_error\": \"%s\" }",
			 rift_error);
	else
		snprintf(want, sizeof(want), "\"rift_error\": null }");
	CHECK_CONTAINS(strstr(out, "\"error\": {"), want);
}

TEST(rift_perf_json_reports_a_bad_option_as_json)
{
	static const struct {
		const char *env;
		const char *args[6];
		const char *says, *rift_error;
	} cases[] = {
		/* --json after the bad option is still seen */
		{NULL,
		 {"--loopback", "-s", "lots", "--json"},
		 "-s/--size",
		 NULL},
		{NULL, {"--json", "--loopback", "--qd", "x"}, "-t/--qd", NULL},
		{NULL,
		 {"--loopback", "--no-such-option", "--json"},
		 "unknown or ambiguous option '--no-such-option'",
		 NULL},
		{NULL,
		 {"--json", "--loopback", "-z"},
		 "unknown option '-z'",
		 NULL},
		/* an abbreviation of --json, and a missing argument */
		{NULL,
		 {"--js", "--loopback", "--plot"},
		 "--plot: needs an argument",
		 NULL},
		{NULL,
		 {"--json", "--config", "/nonexistent/rift.toml"},
		 "/nonexistent/rift.toml: cannot open",
		 "RIFT_ENOENT"},
		{"RIFT_RDMA_SQ_DEPT=64",
		 {"--json", "--loopback"},
		 "RIFT_RDMA_SQ_DEPT",
		 "RIFT_EINVAL"},
	};
	struct run *r = new_run();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		perf_run(r, cases[i].env, cases[i].args);
		CHECK_EQ(r->status, 2);
		check_error(r->out, cases[i].says, cases[i].rift_error);
		/* stderr says it too, for whoever watches */
		CHECK_CONTAINS(r->err, cases[i].says);
	}
	/* A word that is an option's argument is not --json. */
	{
		const char *args[] = {"--loopback", "--plot", "--json", NULL};

		perf_run(r, NULL, args);
		CHECK_EQ(r->status, 2);
		CHECK_STR(r->out, "");
	}
	free(r);
}

/* A listening socket on 127.0.0.1 that rift-perf cannot bind again. */
static int busy_port(int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(*fd >= 0);
	CHECK_EQ(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	CHECK_EQ(listen(*fd, 1), 0);
	CHECK_EQ(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

TEST(rift_perf_json_reports_a_server_failure)
{
	struct run *r = new_run();
	char port[16];
	const char *srv[] = {"-S", "--json", "--transport", "tcp",
			     "-p", port,     "127.0.0.1",   NULL};
	const char *loop[] = {"--loopback", "--json", "--transport", "tcp",
			      "-p",	    port,     NULL};
	int fd;

	snprintf(port, sizeof(port), "%d", busy_port(&fd));
	perf_run(r, NULL, srv);
	CHECK_EQ(r->status, 1);
	check_error(r->out, "Address already in use", "RIFT_EADDRINUSE");
	CHECK_CONTAINS(r->out, "\"mode\": \"server\"");
	CHECK_CONTAINS(r->out, "\"clients\": 0");
	/* loopback: the server's thread failed, before any client */
	perf_run(r, NULL, loop);
	CHECK_EQ(r->status, 1);
	check_error(r->out,
		    "server: listen tcp://127.0.0.1:", "RIFT_EADDRINUSE");
	close(fd);
	free(r);
}

TEST(rift_perf_json_reports_a_connect_failure)
{
	struct run *r = new_run();
	char port[16];
	const char *args[] = {"--json", "--transport", "tcp", "-p",
			      port,	"127.0.0.1",   NULL};

	snprintf(port, sizeof(port), "%d", h_free_port());
	perf_run(r, NULL, args);
	CHECK_EQ(r->status, 1);
	check_error(r->out, "connection refused", "RIFT_ECONNREFUSED");
	CHECK_CONTAINS(r->out, "\"url\": \"tcp://127.0.0.1:");
	CHECK_CONTAINS(r->out, "\"results\": []");
	free(r);
}

/* Wait until the file behind fd holds text; fail after secs. */
static void wait_for(int fd, const char *text, int secs)
{
	static char buf[OUT_MAX];
	time_t end = time(NULL) + secs;

	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

		buf[n > 0 ? n : 0] = '\0';
		if (strstr(buf, text))
			return;
		if (time(NULL) > end)
			FAIL("no '%s' within %d s; it said:\n%s", text, secs,
			     buf);
		usleep(10000);
	}
}

TEST(rift_perf_json_reports_a_run_that_fails)
{
	struct run *r = new_run();
	char port[16];
	const char *srv_args[] = {"-S", "--transport", "tcp", "-p",
				  port, "127.0.0.1",   NULL};
	const char *cli_args[] = {"--json", "--transport", "tcp",
				  "-p",	    port,	   "-D",
				  "60",	    "127.0.0.1",   NULL};
	/* the client gives a silent server up within about 2 s */
	const char *env[] = {"RIFT_SESSION_KEEPALIVE_INTERVAL_MS=100",
			     "RIFT_SESSION_KEEPALIVE_TIMEOUT_MS=400",
			     "RIFT_SESSION_GRACE_MS=1000", NULL};
	int sout = tmpfile_fd(), serr = tmpfile_fd();
	int cout = tmpfile_fd(), cerr = tmpfile_fd();
	pid_t srv, cli;

	snprintf(port, sizeof(port), "%d", h_free_port());
	srv = perf_start(srv_args, NULL, sout, serr);
	wait_for(serr, "listening on", 30);
	cli = perf_start(cli_args, env, cout, cerr);
	/* the run has begun (the transport line), then the server stops */
	wait_for(cerr, "rift-perf: transport tcp", 30);
	usleep(300000);
	CHECK_EQ(kill(srv, SIGSTOP), 0);
	r->status = perf_wait(cli);
	kill(srv, SIGKILL);
	kill(srv, SIGCONT);
	waitpid(srv, NULL, 0);
	close(sout);
	close(serr);
	slurp(cout, r->out);
	slurp(cerr, r->err);
	printf("-> exit %d\n%s%s", r->status, r->out, r->err);
	CHECK_EQ(r->status, 1);
	check_error(r->out, "session lost", "RIFT_ETIMEDOUT");
	CHECK_CONTAINS(r->out, "\"interrupted\": false");
	free(r);
}

TEST(rift_perf_plot_file_is_checked_before_the_run)
{
	struct run *r = new_run();
	char dir[] = "/tmp/rift-perf-plot-XXXXXX", file[64];
	const char *missing[] = {"--loopback",
				 "--transport",
				 "tcp",
				 "--plot",
				 "/nonexistent-dir/lat.svg",
				 NULL};
	const char *json[] = {"--loopback", "--transport",
			      "tcp",	    "--json",
			      "--plot",	    "/nonexistent-dir/lat.svg",
			      NULL};
	const char *isdir[] = {"--loopback", "--transport", "tcp",
			       "--plot",     file,	    NULL};
	const char *ok[] = {"--loopback", "--transport", "tcp", "-n",
			    "100",	  "--plot",	 file,	NULL};

	/* Checked before gnuplot is looked for: the file is the error. */
	perf_run(r, "PATH=/nonexistent", missing);
	CHECK_EQ(r->status, 1);
	CHECK_CONTAINS(r->err, "--plot: cannot write /nonexistent-dir/lat.svg: "
			       "No such file or directory");
	CHECK_STR(r->out, ""); /* no header: nothing ran */
	CHECK(!strstr(r->err, "transport"));
	perf_run(r, NULL, json);
	CHECK_EQ(r->status, 1);
	check_error(r->out, "cannot write /nonexistent-dir/lat.svg", NULL);
	CHECK(!strstr(r->out, "\"results\""));

	CHECK(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/a.svg", dir);
	CHECK_EQ(mkdir(file, 0700), 0);
	perf_run(r, NULL, isdir);
	CHECK_EQ(r->status, 1);
	CHECK_CONTAINS(r->err, "Is a directory");
	CHECK_STR(r->out, "");
	CHECK_EQ(rmdir(file), 0);
	/* A file that can be written is not left behind by the check. */
	perf_run(r, "PATH=/nonexistent", ok);
	CHECK_EQ(r->status, 1);
	CHECK_CONTAINS(r->err, "gnuplot is not installed");
	CHECK(access(file, F_OK) != 0);
	CHECK_EQ(rmdir(dir), 0);
	free(r);
}

/* Every line of text is at most 80 columns; returns the widest. */
static int check_80_columns(const char *text)
{
	int widest = 0;

	for (const char *p = text; *p;) {
		int n = (int)strcspn(p, "\n");

		if (n > 80)
			FAIL("a line of %d columns:\n%.*s", n, n, p);
		widest = n > widest ? n : widest;
		p += n + (p[n] == '\n');
	}
	return widest;
}

TEST(rift_perf_human_output_fits_80_columns)
{
	struct run *r = new_run();
	const char *lat[] = {"--loopback", "--transport", "tcp", "-n", "1000",
			     "-t",	   "2",		  "-q",	 "2",  NULL};
	const char *bw[] = {"--loopback", "--transport", "tcp",
			    "--test",	  "bw",		 "-n",
			    "300",	  "--fill",	 NULL};
	const char *bw_qd[] = {"--loopback", "--transport", "tcp", "--test",
			       "bw",	     "-D",	    "0.2", "-t",
			       "32",	     NULL};
	const char *sweep[] = {"--loopback", "--transport", "tcp",
			       "-a",	     "--max-size",  "1M",
			       "-n",	     "200",	    NULL};
	const char *bw_sweep[] = {
		"--loopback", "--transport", "tcp", "-a",  "--test", "bw",
		"--max-size", "256K",	     "-n",  "100", NULL};
	const char *const *runs[] = {lat, bw, bw_qd, sweep, bw_sweep};

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		perf_run(r, NULL, runs[i]);
		CHECK_EQ(r->status, 0);
		CHECK_CONTAINS(r->out, "Transport       : tcp (as requested)");
		printf("widest line: %d columns\n", check_80_columns(r->out));
	}
	/* the last sweep printed a row per size, 2 .. 256K */
	CHECK_CONTAINS(r->out, "\n 2 ");
	CHECK_CONTAINS(r->out, "\n 262144 ");
	free(r);
}

TEST(rift_perf_latency_is_a_round_trip_with_one_way_beside_it)
{
	struct run *r = new_run();
	const char *human[] = {"--loopback", "--transport", "tcp",
			       "-n",	     "1000",	    NULL};
	const char *json[] = {"--loopback", "--transport", "tcp", "-n",
			      "1000",	    "--json",	   NULL};
	double v[11], rtt, half;
	const char *row;
	int n;

	perf_run(r, NULL, human);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "send latency (round trip) test");
	CHECK_CONTAINS(r->out, " round trip [us] ");
	CHECK_CONTAINS(r->out, " p50/2 ");
	/* the row: size, iterations, min p50 p99 p99.9 max avg, p50/2, CPU */
	row = strstr(r->out, "\n 2 ");
	CHECK(row);
	n = sscanf(row, " %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
		   &v[9], &v[10]);
	CHECK_EQ(n, 11);
	printf("p50 %.2f, p50/2 %.2f\n", v[3], v[8]);
	CHECK(v[3] > 0);
	CHECK(fabs(v[8] - v[3] / 2) <= 0.06);

	perf_run(r, NULL, json);
	CHECK_EQ(r->status, 0);
	rtt = jnum_from(r->out, "\"lat_us\"", "p50");
	half = jnum_from(r->out, "\"one_way_us\"", "p50");
	CHECK(rtt > 0);
	CHECK(fabs(half - rtt / 2) <= 0.001);
	CHECK(fabs(jnum_from(r->out, "\"one_way_us\"", "mean") -
		   jnum_from(r->out, "\"lat_us\"", "mean") / 2) <= 0.001);
	free(r);
}

TEST(rift_perf_warns_when_steps_are_too_short)
{
	struct run *r = new_run();
	const char *lat_short[] = {"--loopback", "--transport", "tcp", "-a",
				   "--max-size", "16",		"-n",  "200",
				   "--json",	 NULL};
	/* 600 round trips on each of 2 connections: 1200 samples a step */
	const char *lat_ok[] = {"--loopback", "--transport", "tcp",    "-a",
				"--max-size", "16",	     "-n",     "600",
				"-q",	      "2",	     "--json", NULL};
	const char *bw_short[] = {
		"--loopback", "--transport", "tcp", "-a", "--test", "bw",
		"--max-size", "64",	     "-n",  "50", NULL};
	const char *bw_ok[] = {"--loopback", "--transport", "tcp",	  "-a",
			       "--test",     "bw",	    "--max-size", "4",
			       "-D",	     "0.15",	    "--json",	  NULL};

	perf_run(r, NULL, lat_short);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->err, "rift-perf: warning: 4 of 4 size(s) (2..16 B) "
			       "measured fewer than 1000 round trips");
	CHECK_CONTAINS(r->out, "\"warnings\": [\n    \"4 of 4 size(s)");
	CHECK_CONTAINS(r->out, "use -n 1000 or more");

	perf_run(r, NULL, lat_ok);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "\"warnings\": []");
	CHECK(!strstr(r->err, "warning"));

	/* in the table's output too, on stderr */
	perf_run(r, NULL, bw_short);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->err, "rift-perf: warning: ");
	CHECK_CONTAINS(r->err, "ran less than 100 ms");
	CHECK(!strstr(r->out, "warning"));

	perf_run(r, NULL, bw_ok);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "\"warnings\": []");
	CHECK(!strstr(r->err, "warning"));
	free(r);
}

TEST(rift_perf_json_server_reports_what_it_served)
{
	struct run *r = new_run();
	char port[16];
	const char *srv_args[] = {"-S", "--json", "--transport", "tcp",
				  "-p", port,	  "127.0.0.1",	 NULL};
	const char *cli_args[] = {"--transport", "tcp",	      "-p",
				  port,		 "-n",	      "200",
				  "--json",	 "127.0.0.1", NULL};
	int out = tmpfile_fd(), err = tmpfile_fd(), status;
	pid_t srv;

	snprintf(port, sizeof(port), "%d", h_free_port());
	srv = perf_start(srv_args, NULL, out, err);
	wait_for(err, "listening on", 30);
	perf_run(r, NULL, cli_args);
	CHECK_EQ(r->status, 0);
	status = perf_wait(srv);
	slurp(out, r->out);
	slurp(err, r->err);
	printf("server: exit %d\n%s%s", status, r->out, r->err);
	CHECK_EQ(status, 0);
	check_one_object(r->out);
	CHECK_CONTAINS(r->out, "\"mode\": \"server\"");
	CHECK_CONTAINS(r->out, "\"clients\": 1,");
	CHECK_CONTAINS(r->out, "\"clients_failed\": 0,");
	CHECK_CONTAINS(r->out, "\"error\": null");
	free(r);
}
