/*
 * One rift_ctx per thread, and contexts share nothing they write per
 * message: counters of the data path live in the context (ctx->stats, a
 * transport's state of the context), where only its thread writes them.
 * What the library keeps for the whole process is listed below with what
 * makes it safe for threads; this test reads the library's objects and
 * fails on a writable process-wide variable that is not listed, so a new
 * one is looked at before it lands (issue 14, item 4).  Per-thread
 * variables (__thread) and constant tables are not process-wide state and
 * are not listed.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../runner.h"

struct allowed {
	const char *object; /* under src/, without .o */
	const char *symbol; /* a function's static without its .N suffix */
	const char *why;
};

#define POOL "memory/pool"
#define ORIGIN "api/config_origin"
#define CQ "transports/verbs/rdma_cq"
#define DEV "transports/verbs/rdma_dev"
#define BOOT "transports/verbs/rdma_boot"
#define VERBS "transports/verbs/verbs"
static const struct allowed allowed[] = {
	{ POOL, "global_mu", "the lock of the three below" },
	{ POOL, "global_pool", "under global_mu" },
	{ POOL, "global_gen", "under global_mu" },
	{ POOL, "tc_exit", "a pthread key made once (pthread_once)" },
	{ ORIGIN, "rift__cfg_origin_lock", "the lock of the two below" },
	{ ORIGIN, "origin_slots", "under rift__cfg_origin_lock" },
	{ ORIGIN, "origin_clock", "under rift__cfg_origin_lock" },
	{ "session/session", "empty", "a zero-length payload's address" },
	{ CQ, "cqreg_mu", "the lock of the one below" },
	{ CQ, "cqreg", "under cqreg_mu: rift's CQs, for IBV_EVENT_CQ_ERR" },
	{ CQ, "notes_mu", "the lock of the one below" },
	{ CQ, "notes", "under notes_mu: contexts told of a removed device" },
	{ DEV, "rift__rdma_dev_mu", "the lock of the two below" },
	{ DEV, "rift__rdma_devs", "under rift__rdma_dev_mu" },
	{ DEV, "rift__rdma_n_devs", "under rift__rdma_dev_mu" },
	/* Process-wide counters: off the data path, atomic increments. */
	{ VERBS, "rift__vb_calls", "atomic; connection setup and teardown" },
	{ VERBS, "rift__vb_dev_calls", "atomic; rift_devices" },
	{ BOOT, "rift__rdma_accepts", "atomic; once per accept" },
	{ BOOT, "rift__rdma_accept_us", "atomic; once per accept" },
	{ BOOT, "rift__rdma_accept_samples", "atomic stores; once per accept" },
	{ "util/log", "rift__log_level",
	  "atomic stores of RIFT_LOG's level (rift_config_init)" },
	{ "util/fault", "faults", "test builds only: armed by the test itself" },
	{ "memory/pool_shape", "size",
	  "atomic; the huge page size, read once (any reader's is the same)" },
};

static int unlisted;

static bool is_allowed(const char *object, const char *symbol)
{
	char base[256];
	char *dot;

	snprintf(base, sizeof(base), "%s", symbol);
	dot = strchr(base, '.'); /* empty.1: a function's static */
	if (dot)
		*dot = '\0';
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (!strcmp(allowed[i].object, object) &&
		    !strcmp(allowed[i].symbol, base))
			return true;
	return false;
}

/* Writable data of one object file: objects in .data* or .bss*, but not
 * .data.rel.ro (constant once relocated) nor .tdata/.tbss (per thread). */
static void scan_object(const char *path, const char *object)
{
	char cmd[PATH_MAX + 32], line[1024];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "objdump -t '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		FAIL("popen objdump: %s", strerror(errno));
	while (fgets(line, sizeof(line), p)) {
		char *tok[16], *save = NULL, *s;
		int n = 0;
		bool obj = false;

		for (s = strtok_r(line, " \t\n", &save); s && n < 16;
		     s = strtok_r(NULL, " \t\n", &save))
			tok[n++] = s;
		for (int i = 1; i < n - 3; i++)
			obj |= !strcmp(tok[i], "O");
		if (!obj)
			continue;
		s = tok[n - 3]; /* section */
		if (!((!strncmp(s, ".data", 5) && strncmp(s, ".data.rel.ro", 12)) ||
		      !strncmp(s, ".bss", 4) || !strcmp(s, "*COM*")))
			continue;
		/* ASan's one-definition-rule markers name a global twice */
		if (!strncmp(tok[n - 1], "__odr_asan", 10))
			continue;
		if (!is_allowed(object, tok[n - 1])) {
			printf("%s.c: %s (%s) is writable, process-wide and not "
			       "listed in %s\n",
			       object, tok[n - 1], s, __FILE__);
			unlisted++;
		}
	}
	pclose(p);
}

static int scan_dir(const char *dir, const char *rel)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[PATH_MAX], sub[PATH_MAX];
		size_t len = strlen(e->d_name);

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "",
			 e->d_name);
		if (e->d_type == DT_DIR) {
			n += scan_dir(path, sub);
		} else if (len > 2 && !strcmp(e->d_name + len - 2, ".o")) {
			sub[strlen(sub) - 2] = '\0';
			scan_object(path, sub);
			n++;
		}
	}
	closedir(d);
	return n;
}

TEST(library_has_no_unlisted_process_wide_state)
{
	char exe[PATH_MAX], dir[PATH_MAX + 8];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (system("objdump --version >/dev/null 2>&1") != 0)
		SKIP("no objdump");
	if (n <= 0)
		FAIL("readlink /proc/self/exe");
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	CHECK(slash != NULL);
	*slash = '\0';
	/* build/FLAVOUR/rift-tests: the library's objects are build/FLAVOUR/src */
	snprintf(dir, sizeof(dir), "%s/src", exe);
	if (scan_dir(dir, "") < 20)
		SKIP("the library's objects are not beside the test binary");
	CHECK_EQ(unlisted, 0);
}
