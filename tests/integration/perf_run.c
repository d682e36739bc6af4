/*
 * perf_run.c - running build/bin/rift-perf for the tests (perf_run.h).
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_run.h"

static const char *perf_path(void)
{
	return h_tool_path("rift-perf");
}

void slurp(int fd, char *buf)
{
	ssize_t n, len = 0;

	lseek(fd, 0, SEEK_SET);
	while (len < OUT_MAX - 1 &&
	       (n = read(fd, buf + len, OUT_MAX - 1 - len)) > 0)
		len += n;
	buf[len] = '\0';
	close(fd);
}

int tmpfile_fd(void)
{
	char path[] = "/tmp/rift-perf-test-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	unlink(path);
	return fd;
}

pid_t perf_start(const char *const *args, const char *const *env, int out,
		 int err)
{
	const char *argv[64];
	int n = 0;
	pid_t pid;

	argv[n++] = perf_path();
	for (; *args && n < 63; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(out, STDOUT_FILENO);
		dup2(err, STDERR_FILENO);
		for (; env && *env; env++)
			putenv((char *)*env);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int perf_wait(pid_t pid)
{
	time_t end = time(NULL) + RUN_TIMEOUT_S;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		if (time(NULL) > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			FAIL("rift-perf did not finish within %d s",
			     RUN_TIMEOUT_S);
		}
		usleep(5000);
	}
}

void perf_run_env(struct run *r, const char *const *env,
		  const char *const *args)
{
	int out = tmpfile_fd(), err = tmpfile_fd();

	r->status = perf_wait(perf_start(args, env, out, err));
	slurp(out, r->out);
	slurp(err, r->err);
	printf("$");
	for (; env && *env; env++)
		printf(" %s", *env);
	printf(" rift-perf");
	for (; *args; args++)
		printf(" %s", *args);
	printf("\n-> exit %d\n--- stdout\n%s--- stderr\n%s---\n", r->status,
	       r->out, r->err);
}

void perf_run(struct run *r, const char *env, const char *const *args)
{
	const char *envs[] = {env, NULL};

	perf_run_env(r, envs, args);
}

struct run *new_run(void)
{
	struct run *r = calloc(1, sizeof(*r));

	CHECK(r);
	return r;
}

double jnum_from(const char *json, const char *from, const char *key)
{
	char pat[128];
	const char *p = json;
	char *end;
	double v;

	if (from) {
		p = strstr(p, from);
		if (!p)
			FAIL("no '%s' in the JSON", from);
	}
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(p, pat);
	if (!p)
		FAIL("no \"%s\" in the JSON", key);
	p += strlen(pat);
	v = strtod(p, &end);
	if (end == p)
		FAIL("\"%s\" is not a number", key);
	return v;
}

double jnum(const char *json, const char *key)
{
	return jnum_from(json, NULL, key);
}

int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A latency result's figures are in order; a bandwidth result's are
 * positive and agree (perf_run.h). */
void perf_check_lat(const char *json)
{
	double min = jnum(json, "min"), p50 = jnum(json, "p50"),
	       p90 = jnum(json, "p90"), p99 = jnum(json, "p99"),
	       p999 = jnum(json, "p99_9"), max = jnum(json, "max"),
	       mean = jnum(json, "mean");

	CHECK(p50 > 0);
	CHECK(min <= p50);
	CHECK(p50 <= p90);
	CHECK(p90 <= p99);
	CHECK(p99 <= p999);
	CHECK(p999 <= max);
	CHECK(mean >= min && mean <= max);
	CHECK(jnum(json, "client") >= 0);
	CHECK(jnum(json, "server") >= 0);
}

void perf_check_bw(const char *json)
{
	double gbs = jnum(json, "gbytes_per_s"),
	       gbits = jnum(json, "gbits_per_s");

	CHECK(gbs > 0);
	CHECK(gbits > 7.99 * gbs && gbits < 8.01 * gbs);
	CHECK(jnum(json, "mmsg_per_s") > 0);
	CHECK(jnum(json, "seconds") > 0);
}
