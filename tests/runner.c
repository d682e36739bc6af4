/*
 * runner.c - run each registered test in a forked child with a time limit.
 *
 *   rift-tests [-v] [-l] [-j N] [--transport tcp|rdma] [--host ADDR]
 *              [--cm rdmacm|tcp]
 *              [--timeout SECS] [NAME-SUBSTRING...]
 *
 * --transport rdma runs only the data-path tests (TEST_T), over RDMA: that
 * is how the soft-RoCE lab reuses the TCP suite.  The last line is
 * "N passed, N failed, N skipped"; the exit status is 1 if any failed.
 * --cm tcp makes h_config() set rdma.cm = tcp, so the same suite runs over
 * QPs brought up by the TCP side channel instead of rdma_cm.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

#if defined(__SANITIZE_ADDRESS__)
void __lsan_do_leak_check(void);
#endif

#define SKIP_STATUS 77

static struct rt_test *tests;
static const char *transport = "tcp";
static const char *host = "127.0.0.1";
static const char *cm = "rdmacm";

void rt_register(struct rt_test *t)
{
	/* Keep file order within a file, file order across files. */
	struct rt_test **pp = &tests;

	while (*pp)
		pp = &(*pp)->next;
	*pp = t;
}

void rt_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(NULL);
	_exit(1);
}

void rt_skip(const char *why)
{
	fprintf(stderr, "skip: %s\n", why);
	fflush(NULL);
	_exit(SKIP_STATUS);
}

const char *rt_transport(void)
{
	return transport;
}

const char *rt_cm(void)
{
	return cm;
}

const char *rt_host(void)
{
	return host;
}

const char *rt_url(int port)
{
	static char buf[300];

	if (strchr(host, ':'))
		snprintf(buf, sizeof(buf), "%s://[%s]:%d", transport, host, port);
	else
		snprintf(buf, sizeof(buf), "%s://%s:%d", transport, host, port);
	return buf;
}

/* The source tree: the current directory, or two up from the binary. */
static const char *source_root(void)
{
	static char root[4096];
	char exe[4096];
	ssize_t n;
	char *slash;

	if (root[0])
		return root;
	if (access("include/rift.h", R_OK) == 0) {
		snprintf(root, sizeof(root), ".");
		return root;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(root, sizeof(root), "%s/../..", exe);
			snprintf(exe + strlen(exe), sizeof(exe) - strlen(exe),
				 "/../../include/rift.h");
			if (access(exe, R_OK) == 0)
				return root;
		}
	}
	root[0] = '\0';
	rt_fail(__FILE__, __LINE__,
		"rift's source tree is not in the current directory nor two "
		"up from the test binary: run from the top of the tree");
}

const char *rt_source_path(const char *rel)
{
	static char path[8192];

	snprintf(path, sizeof(path), "%s/%s", source_root(), rel);
	return path;
}

char *rt_read_source(const char *rel)
{
	FILE *f = fopen(rt_source_path(rel), "r");
	char *text = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			cap = (cap ? cap * 2 : 65536);
			text = realloc(text, cap);
			if (!text)
				rt_fail(__FILE__, __LINE__, "out of memory");
		}
		n = fread(text + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	if (ferror(f)) {
		free(text);
		text = NULL;
	} else {
		text[len] = '\0';
	}
	fclose(f);
	return text;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void dump(int fd)
{
	char buf[4096];
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(STDOUT_FILENO, buf, (size_t)n) < 0)
			break;
}

/* Returns 0 pass, 1 fail, 2 skip. */
static int run_one(const struct rt_test *t, int timeout_s, bool verbose)
{
	char path[] = "/tmp/rift-test-XXXXXX";
	int out = mkstemp(path), status = 0, result;
	double start = now_s(), limit = t->timeout_s ? t->timeout_s : timeout_s;
	bool timed_out = false;
	pid_t pid;

	if (out < 0) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		dup2(out, STDOUT_FILENO);
		dup2(out, STDERR_FILENO);
		t->fn();
		fflush(NULL);
#if defined(__SANITIZE_ADDRESS__)
		/* _exit skips LeakSanitizer's check at exit: without this
		 * an ASan run never saw a test leak. */
		__lsan_do_leak_check();
#endif
		_exit(0);
	}
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (now_s() - start > limit) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			timed_out = true;
			break;
		}
		usleep(2000);
	}
	/* Anything the test forked dies with it. */
	kill(-pid, SIGKILL);

	if (timed_out) {
		result = 1;
		printf("FAIL %-44s timed out after %.0f s\n", t->name, limit);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		result = 0;
		printf("ok   %-44s %.2f s\n", t->name, now_s() - start);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_STATUS) {
		result = 2;
		printf("skip %-44s\n", t->name);
	} else {
		result = 1;
		if (WIFSIGNALED(status))
			printf("FAIL %-44s killed by signal %d\n", t->name,
			       WTERMSIG(status));
		else
			printf("FAIL %-44s exit status %d\n", t->name,
			       WEXITSTATUS(status));
	}
	fflush(stdout);
	if (result != 0 || verbose)
		dump(out);
	close(out);
	return result;
}

static bool selected(const struct rt_test *t, int argc, char **argv, int first)
{
	if (strcmp(transport, "tcp") != 0 && !t->per_transport)
		return false;
	if (first >= argc)
		return true;
	for (int i = first; i < argc; i++)
		if (strstr(t->name, argv[i]) || strstr(t->file, argv[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	int timeout_s = 120, first = argc, passed = 0, failed = 0, skipped = 0;
	bool verbose = false, list = false;
	struct rlimit rl;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = true;
		} else if (!strcmp(argv[i], "-l")) {
			list = true;
		} else if (!strcmp(argv[i], "--transport") && i + 1 < argc) {
			transport = argv[++i];
		} else if (!strcmp(argv[i], "--host") && i + 1 < argc) {
			host = argv[++i];
		} else if (!strcmp(argv[i], "--cm") && i + 1 < argc) {
			cm = argv[++i];
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			timeout_s = atoi(argv[++i]);
		} else if (argv[i][0] == '-') {
			fprintf(stderr,
				"usage: %s [-v] [-l] [--transport tcp|rdma] "
				"[--host ADDR] [--cm rdmacm|tcp] [--timeout SECS] "
				"[NAME...]\n",
				argv[0]);
			return 2;
		} else {
			first = i;
			break;
		}
	}
	if (strcmp(transport, "tcp") && strcmp(transport, "rdma") &&
	    strcmp(transport, "auto")) {
		fprintf(stderr, "unknown transport '%s'\n", transport);
		return 2;
	}
	if (strcmp(cm, "rdmacm") && strcmp(cm, "tcp")) {
		fprintf(stderr, "unknown cm '%s' (rdmacm or tcp)\n", cm);
		return 2;
	}
	/* Many-connection tests need descriptors: raise the soft limit. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	for (struct rt_test *t = tests; t; t = t->next) {
		if (!selected(t, argc, argv, first))
			continue;
		if (list) {
			printf("%s%s\n", t->name, t->per_transport ? " [T]" : "");
			continue;
		}
		switch (run_one(t, timeout_s, verbose)) {
		case 0:
			passed++;
			break;
		case 2:
			skipped++;
			break;
		default:
			failed++;
			break;
		}
	}
	if (!list)
		printf("%s%s: %d passed, %d failed, %d skipped\n", transport,
		       strcmp(cm, "tcp") ? "" : " (cm=tcp)", passed, failed,
		       skipped);
	return failed ? 1 : 0;
}
