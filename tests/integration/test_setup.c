/*
 * test_setup.c - the setup step's package installs (scripts/setup.sh; the
 * lab's `lab setup` installs through the same scripts/apt-install.sh) wait
 * for the locks of another apt-get instead of failing with "Could not get
 * lock /var/lib/dpkg/lock-frontend".
 *
 * setup.sh runs with stand-ins first on PATH: id (root), dpkg-query (one
 * package missing) and an apt-get that behaves as apt 2.6 does while
 * another apt-get holds the locks for its first calls: the dpkg frontend
 * lock is waited for under -o DPkg::Lock::Timeout only, the package
 * lists' lock (apt-get update) never.  Its package lists are stale until
 * an update went through.  Nothing is installed.  Runs from the
 * repository root, as every test.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../runner.h"

static const char apt_get[] =
	"#!/bin/sh\n"
	"n=$(($(cat \"$STUB/calls\" 2>/dev/null || echo 0) + 1))\n"
	"echo $n >\"$STUB/calls\"\n"
	"echo \"apt-get $*\" >>\"$STUB/log\"\n"
	"wait=0\n"
	"for a; do case $a in DPkg::Lock::Timeout=*) wait=${a#*=};; esac; done\n"
	"case \" $* \" in\n"
	"*' update '*) lock=/var/lib/apt/lists/lock; waits=0 ;;\n"
	"*) lock=/var/lib/dpkg/lock-frontend; waits=$((wait > 0)) ;;\n"
	"esac\n"
	/* the other apt-get holds the locks during the first 3 calls */
	"if [ $n -le 3 ] && [ $waits = 0 ]; then\n"
	"  echo \"E: Could not get lock $lock. It is held by process 4242"
	" (apt-get)\" >&2\n"
	"  exit 100\n"
	"fi\n"
	"case \" $* \" in\n"
	"*' update '*) touch \"$STUB/lists\" ;;\n"
	"*' install '*)\n"
	"  [ -e \"$STUB/lists\" ] || { echo 'E: Unable to locate package"
	" rift-fake-pkg' >&2; exit 100; }\n"
	"  echo installed >>\"$STUB/log\" ;;\n"
	"esac\n";

static const char dpkg_query[] =
	"#!/bin/sh\n"
	"for a; do p=$a; done\n"
	"[ \"$p\" = rift-fake-pkg ] && exit 1\n"
	"printf 'install ok installed'\n";

static const char id[] = "#!/bin/sh\necho 0\n";

static void stub(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	CHECK(fputs(text, f) >= 0);
	CHECK_EQ(fclose(f), 0);
	CHECK_EQ(chmod(path, 0755), 0);
}

static char *slurp(const char *dir, const char *name)
{
	static char buf[8192];
	char path[512];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

TEST(setup_waits_for_another_apt_gets_locks)
{
	char dir[] = "/tmp/rift-setup-test-XXXXXX", cmd[1024];
	char *log;
	int status;

	if (access("scripts/setup.sh", R_OK) != 0)
		SKIP("run from the repository root");
	CHECK(mkdtemp(dir) != NULL);
	stub(dir, "apt-get", apt_get);
	stub(dir, "dpkg-query", dpkg_query);
	stub(dir, "id", id);
	snprintf(cmd, sizeof(cmd),
		 "STUB=%s PATH=%s:$PATH RIFT_APT_RETRY_S=0 "
		 "sh scripts/setup.sh rift-fake-pkg 2>&1",
		 dir, dir);
	status = system(cmd);
	log = slurp(dir, "log");
	printf("apt-get calls:\n%s", log);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	CHECK_CONTAINS(log, "installed");
	/* Every install lets apt-get wait for the dpkg lock itself. */
	for (char *save, *line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (strstr(line, " install "))
			CHECK_CONTAINS(line, "-o DPkg::Lock::Timeout=");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}
