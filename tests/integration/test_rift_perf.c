/*
 * rift-perf as a user runs it: build/bin/rift-perf (built by `make all`)
 * in loopback mode with --json, checked for sane numbers; bad options,
 * a closed port, bad configuration; a server and a client as two
 * processes.  The TCP checks are TEST; the one that runs on the suite's
 * transport (rdma in the lab) is TEST_T and uses rt_transport()/rt_host().
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_run.h"
#include "relay.h"

TEST(rift_perf_lat_json_over_tcp)
{
	struct run *r = new_run();
	const char *args[] = {"--loopback", "--transport", "tcp",
			      "--json",	    "-n",	   "2000",
			      "-s",	    "64",	   NULL};

	perf_run(r, NULL, args);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "\"transport\": \"tcp\"");
	CHECK_CONTAINS(r->out, "\"test\": \"lat\"");
	CHECK_CONTAINS(r->out, "\"fallback\": null");
	CHECK_CONTAINS(r->out, "\"error\": null");
	CHECK_EQ(jnum(r->out, "size"), 64);
	CHECK_EQ(jnum(r->out, "iterations"), 2000);
	CHECK_EQ(jnum(r->out, "messages"), 2000);
	perf_check_lat(r->out);
	free(r);
}

TEST(rift_perf_bw_json_over_tcp)
{
	struct run *r = new_run();
	const char *args[] = {"--loopback", "--transport", "tcp", "--json",
			      "--test",	    "bw",	   "-n",  "3000",
			      "-s",	    "65536",	   "-q",  "2",
			      NULL};

	perf_run(r, NULL, args);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "\"transport\": \"tcp\"");
	CHECK_CONTAINS(r->out, "\"test\": \"bw\"");
	/* A warm-up phase of -n/10 messages went first, uncounted. */
	CHECK_EQ(jnum(r->out, "warmup"), 300);
	CHECK_EQ(jnum(r->out, "iterations"), 3000);
	CHECK_EQ(jnum(r->out, "messages"), 6000);
	CHECK_EQ(jnum_from(r->out, "\"results\"", "bytes"), 6000.0 * 65536);
	perf_check_bw(r->out);
	free(r);
}

TEST(rift_perf_sweep_and_duration)
{
	struct run *r = new_run();
	const char *sweep[] = {"--loopback", "--transport", "tcp", "--json",
			       "-a",	     "--max-size",  "256", "-n",
			       "200",	     NULL};
	const char *dur[] = {"--loopback", "--transport", "tcp", "--json",
			     "--test",	   "bw",	  "-D",	 "0.3",
			     "-s",	   "4K",	  "-t",	 "64",
			     "--fill",	   NULL};

	perf_run(r, NULL, sweep);
	CHECK_EQ(r->status, 0);
	/* 2, 4, ... 256: eight sizes, each with its own percentiles */
	CHECK_EQ(count(r->out, "\"lat_us\": {"), 8);
	CHECK_CONTAINS(r->out, "\"sizes\": [2, 4, 8, 16, 32, 64, 128, 256]");
	CHECK_EQ(jnum_from(r->out, "\"size\": 256", "iterations"), 200);
	perf_check_lat(strstr(r->out, "\"size\": 256"));

	perf_run(r, NULL, dur);
	CHECK_EQ(r->status, 0);
	CHECK(jnum(r->out, "iterations") > 0);
	CHECK(jnum(r->out, "seconds") >= 0.3);
	CHECK_EQ(jnum(r->out, "qd"), 64);
	perf_check_bw(r->out);
	free(r);
}

TEST(rift_perf_human_table)
{
	struct run *r = new_run();
	const char *lat[] = {"--loopback", "--transport", "tcp",
			     "-n",	   "300",	  NULL};
	const char *bw[] = {"--loopback", "--transport", "tcp", "--test",
			    "bw",	  "-n",		 "300", NULL};

	perf_run(r, NULL, lat);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "Transport       : tcp (as requested)");
	CHECK_CONTAINS(r->out, "round trip [us]");
	CHECK_CONTAINS(r->out, " p99.9 ");
	CHECK_CONTAINS(r->out, "CPU [%]");
	perf_run(r, NULL, bw);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "BW[Gb/s]");
	CHECK_CONTAINS(r->out, "MsgRate[Mmsg/s]");
	CHECK_CONTAINS(r->out, " 65536    300 ");
	free(r);
}

TEST(rift_perf_bad_options_exit_2_naming_the_option)
{
	static const struct {
		const char *args[6];
		const char *says[2];
	} cases[] = {
		{{"--loopback", "-s", "lots"}, {"-s/--size", "lots"}},
		{{"--loopback", "--qd", "x"}, {"-t/--qd", "'x'"}},
		{{"--loopback", "-q", "0"}, {"-q/--conns", "out of range"}},
		{{"--loopback", "--transport", "ib"}, {"--transport", "'ib'"}},
		{{"--loopback", "--op", "recv"},
		 {"--op", "send, write or read"}},
		{{"--loopback", "--test", "rr"}, {"--test", "lat or bw"}},
		{{"--loopback", "-D", "-1"}, {"-D/--duration", "seconds"}},
		{{"--loopback", "-n", "5", "-D", "1"},
		 {"-n/--iters", "-D/--duration"}},
		{{"--loopback", "-a", "-s", "8"}, {"-s/--size", "--max-size"}},
		{{"--loopback", "--plot", "out.png"}, {"--plot", ".svg"}},
		{{"--loopback", "--no-such-option"},
		 {"no-such-option", "--help"}},
		{{"-S", "0.0.0.0,127.0.0.2"},
		 {"'0.0.0.0,127.0.0.2'", "listens on one address"}},
		{{"127.0.0.1,,127.0.0.2"}, {"127.0.0.1,,127.0.0.2", "empty"}},
		{{"127.0.0.1,"}, {"'127.0.0.1,'", "empty"}},
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

TEST(rift_perf_config_file_and_environment)
{
	struct run *r = new_run();
	const char *big[] = {"--loopback", "--transport", "tcp",
			     "-s",	   "4096",	  NULL};
	const char *plain[] = {"--loopback", "--transport", "tcp", "-n",
			       "100",	     "--json",	    NULL};
	char path[] = "/tmp/rift-perf-test-XXXXXX";
	const char *file[] = {"--loopback", "--config", path, NULL};
	int fd;

	/* The environment applies: max_msg_size 1 KiB refuses -s 4096. */
	perf_run(r, "RIFT_SESSION_MAX_MSG_SIZE=1KiB", big);
	CHECK_EQ(r->status, 2);
	CHECK_CONTAINS(r->err, "-s/--size");
	CHECK_CONTAINS(r->err, "max_msg_size 1024");
	/* ... and a typo in it is an error naming the variable. */
	perf_run(r, "RIFT_RDMA_SQ_DEPT=64", plain);
	CHECK_EQ(r->status, 2);
	CHECK_CONTAINS(r->err, "RIFT_RDMA_SQ_DEPT");
	/* The polling mode from the environment shows in the parameters. */
	perf_run(r, "RIFT_PROGRESS_POLLING=busy", plain);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "\"polling\": \"busy\"");
	/* A config file with a mistake: file, line and key. */
	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, "[rdma]\nsq_dept = 64\n", 20) == 20);
	close(fd);
	perf_run(r, NULL, file);
	unlink(path);
	CHECK_EQ(r->status, 2);
	CHECK_CONTAINS(r->err, "--config");
	CHECK_CONTAINS(r->err, ":2:1:");
	CHECK_CONTAINS(r->err, "sq_depth");
	free(r);
}

TEST(rift_perf_client_to_a_closed_port_fails_readably)
{
	struct run *r = new_run();
	char port[16];
	const char *args[] = {"--transport", "tcp",	  "-p",
			      port,	     "127.0.0.1", NULL};

	snprintf(port, sizeof(port), "%d", h_free_port());
	perf_run(r, NULL, args);
	CHECK_EQ(r->status, 1);
	CHECK_CONTAINS(r->err, "cannot connect to tcp://127.0.0.1:");
	CHECK_CONTAINS(r->err, "connection refused");
	CHECK_STR(r->out, "");
	free(r);
}

TEST(rift_perf_server_and_client_processes)
{
	struct run *r = new_run();
	char port[16];
	const char *srv_args[] = {"-S", "--transport", "tcp", "-p",
				  port, "127.0.0.1",   NULL};
	const char *cli_args[] = {"--transport", "tcp",	      "-p",
				  port,		 "--json",    "-n",
				  "500",	 "127.0.0.1", NULL};
	int out = tmpfile_fd(), err = tmpfile_fd(), srv_status;
	pid_t srv;

	snprintf(port, sizeof(port), "%d", h_free_port());
	srv = perf_start(srv_args, NULL, out, err);
	/* The client retries while the server starts listening. */
	perf_run(r, "RIFT_CONNECT_RETRIES=100", cli_args);
	CHECK_EQ(r->status, 0);
	perf_check_lat(r->out);
	CHECK_CONTAINS(r->out, "\"mode\": \"client\"");
	/* Without --persistent the server exits after its one client. */
	srv_status = perf_wait(srv);
	slurp(out, r->out);
	slurp(err, r->err);
	printf("server: exit %d\n%s", srv_status, r->err);
	CHECK_EQ(srv_status, 0);
	CHECK_CONTAINS(r->err, "listening on tcp://127.0.0.1:");
	CHECK_CONTAINS(r->err,
		       "client: lat test, 1 connection(s), transport tcp");
	CHECK_CONTAINS(r->err, "client done");
	free(r);
}

/*
 * A client's HOST may list the server's addresses: its connections are
 * port groups (a standby path through the second address), the report
 * says so, and the URL has the port on each address.
 */
TEST(rift_perf_client_of_several_addresses_keeps_a_standby)
{
	struct run *r = new_run();
	char port[16], url[64];
	const char *srv_args[] = {"-S", "--transport", "tcp", "-p",
				  port, "0.0.0.0",     NULL};
	/* A second's run: the standby has long joined when it ends. */
	const char *cli_args[] = {
		"--transport",	       "tcp", "-p", port, "--json", "-D", "1",
		"127.0.0.1,127.0.0.2", NULL};
	int out = tmpfile_fd(), err = tmpfile_fd();
	pid_t srv;

	snprintf(port, sizeof(port), "%d", h_free_port());
	srv = perf_start(srv_args, NULL, out, err);
	perf_run(r, "RIFT_CONNECT_RETRIES=100", cli_args);
	printf("%s%s", r->out, r->err);
	CHECK_EQ(r->status, 0);
	perf_check_lat(r->out);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%s,127.0.0.2:%s", port,
		 port);
	CHECK_CONTAINS(r->out, url);
	CHECK_CONTAINS(r->out, "\"standby_paths\": 1");
	CHECK_CONTAINS(r->out, "\"active_paths\": 1");
	CHECK_EQ(perf_wait(srv), 0);
	free(r);
}

/*
 * A standby path that breaks (its TCP connections, through a relay on
 * 127.0.0.2, reset under a running test) is told as a standby's loss on
 * both sides: the data path carries on, nothing re-attaches, and the run
 * ends well.
 */
TEST(rift_perf_tells_a_lost_standby_from_a_failover)
{
	struct run *r = new_run(), *sr = new_run();
	struct relay rl;
	char port[16];
	int p = h_free_port();
	const char *srv_args[] = {"-S", "--transport", "tcp", "-p",
				  port, "127.0.0.1",   NULL};
	const char *cli_args[] = {"--transport", "tcp", "-p", port, "-D", "3",
				  "127.0.0.1,127.0.0.2", NULL};
	const char *env[] = {"RIFT_CONNECT_RETRIES=100", NULL};
	int sout = tmpfile_fd(), serr = tmpfile_fd();
	int out = tmpfile_fd(), err = tmpfile_fd();
	pid_t srv, cli;

	snprintf(port, sizeof(port), "%d", p);
	CHECK_EQ(relay_start(&rl, "127.0.0.2", p, "127.0.0.1", p), 0);
	srv = perf_start(srv_args, NULL, sout, serr);
	cli = perf_start(cli_args, env, out, err);
	/* The standbys joined (a second's traffic), then they break. */
	for (int i = 0; i < 100 && relay_accepted(&rl) < 1; i++)
		usleep(20000);
	CHECK(relay_accepted(&rl) >= 1);
	usleep(1000000);
	relay_cut(&rl);
	r->status = perf_wait(cli);
	sr->status = perf_wait(srv);
	relay_stop(&rl);
	slurp(out, r->out);
	slurp(err, r->err);
	slurp(sout, sr->out);
	slurp(serr, sr->err);
	printf("client:\n%s%s\nserver:\n%s", r->out, r->err, sr->err);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(sr->status, 0);
	CHECK_CONTAINS(r->err, "standby path down");
	CHECK_CONTAINS(r->err, "the data path carries on");
	CHECK(strstr(r->err, "re-attaching") == NULL);
	CHECK_CONTAINS(sr->err, "standby path down");
	free(r);
	free(sr);
}

/* With group.policy = active-active (from the environment) both paths
 * carry the bandwidth test's data, and the report says so. */
TEST(rift_perf_active_active_reports_its_paths)
{
	struct run *r = new_run();
	char port[16];
	const char *srv_args[] = {"-S", "--transport", "tcp", "-p",
				  port, "0.0.0.0",     NULL};
	const char *cli_args[] = {
		"--transport", "tcp", "-p", port, "--test", "bw", "-D", "1",
		"127.0.0.1,127.0.0.2", NULL};
	int out = tmpfile_fd(), err = tmpfile_fd();
	pid_t srv;

	snprintf(port, sizeof(port), "%d", h_free_port());
	srv = perf_start(srv_args, NULL, out, err);
	perf_run(r, "RIFT_GROUP_POLICY=active-active", cli_args);
	printf("%s%s", r->out, r->err);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "data on 2 paths at once (active-active)");
	CHECK_EQ(perf_wait(srv), 0);
	free(r);
}

/* On the suite's transport and host: rdma in the lab, tcp otherwise. */
TEST_T(rift_perf_loopback_on_the_test_transport)
{
	struct run *r = new_run();
	const char *lat[] = {
		"--loopback", "--transport", rt_transport(), "--json",	"-n",
		"1000",	      "-s",	     "32",	     rt_host(), NULL};
	const char *bw[] = {"--loopback", "--transport", rt_transport(),
			    "--json",	  "--test",	 "bw",
			    "-n",	  "500",	 "-s",
			    "64K",	  "-q",		 "2",
			    "--fill",	  rt_host(),	 NULL};
	char want[64];

	snprintf(want, sizeof(want), "\"transport\": \"%s\"", rt_transport());
	perf_run(r, NULL, lat);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, want);
	CHECK_EQ(jnum(r->out, "iterations"), 1000);
	perf_check_lat(r->out);
	perf_run(r, NULL, bw);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, want);
	CHECK_EQ(jnum(r->out, "iterations"), 500);
	perf_check_bw(r->out);
	free(r);
}

static bool have_gnuplot(void)
{
	return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

TEST(rift_perf_plot_draws_svg_or_says_what_is_missing)
{
	struct run *r = new_run();
	char path[] = "/tmp/rift-perf-plot-XXXXXX.svg";
	const char *args[] = {"--loopback", "--transport", "tcp", "-n",
			      "500",	    "--plot",	   path,  NULL};
	int fd = mkstemps(path, 4);
	struct stat st;

	CHECK(fd >= 0);
	close(fd);
	unlink(path);
	/* Without gnuplot: refused before anything runs, naming the package. */
	perf_run(r, "PATH=/nonexistent", args);
	CHECK_EQ(r->status, 1);
	CHECK_CONTAINS(r->err, "gnuplot-nox");
	CHECK_STR(r->out, "");
	CHECK(access(path, F_OK) != 0);
	if (!have_gnuplot()) {
		free(r);
		SKIP("gnuplot is not installed: only the error was checked");
	}
	perf_run(r, NULL, args);
	CHECK_EQ(r->status, 0);
	CHECK_CONTAINS(r->out, "plot: ");
	CHECK_EQ(stat(path, &st), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	slurp(fd, r->out);
	unlink(path);
	CHECK_CONTAINS(r->out, "<svg");
	CHECK_CONTAINS(r->out, ">99%<"); /* a percentile tic */
	free(r);
}

TEST(rift_perf_sigint_stops_cleanly)
{
	struct run *r = new_run();
	const char *args[] = {"--loopback", "--transport", "tcp", "--json",
			      "-a",	    "-D",	   "2",	  NULL};
	int out = tmpfile_fd(), err = tmpfile_fd();
	pid_t pid = perf_start(args, NULL, out, err);

	/* Let it connect and finish a size or two, then interrupt. */
	sleep(3);
	CHECK_EQ(kill(pid, SIGINT), 0);
	r->status = perf_wait(pid);
	slurp(out, r->out);
	slurp(err, r->err);
	printf("-> exit %d\n%s%s", r->status, r->out, r->err);
	CHECK_EQ(r->status, 130);
	CHECK_CONTAINS(r->out, "\"interrupted\": true");
	CHECK_CONTAINS(r->out, "\"error\": null");
	CHECK_CONTAINS(r->err, "interrupted after");
	free(r);
}
