/*
 * memlock.c - the locked-memory limit, against which every registration
 * of the pool counts (pool.c commits regions, pool_large.c maps large
 * buffers; rift-info reports it too).
 */
#include <stdio.h>
#include <sys/resource.h>

#include "memory/pool_int.h"

/*
 * RLIMIT_MEMLOCK covers mlock()ed pages (VmLck) and pages pinned by memory
 * registration (VmPin), which ibv_reg_mr charges.
 */
uint64_t rift__locked_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	unsigned long long v, sum = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %llu", &v) == 1 ||
		    sscanf(line, "VmPin: %llu", &v) == 1)
			sum += v;
	if (f)
		fclose(f);
	return (uint64_t)sum * 1024u;
}

/* Say what is needed, what the limit is and how to raise it (hint: more
 * ways, or ""). */
static int memlock_check(size_t need, const char *hint, char *err,
			 size_t errlen)
{
	struct rlimit rl;
	uint64_t have;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	have = rift__locked_bytes();
	if (have + need <= rl.rlim_cur)
		return 0;
	snprintf(err, errlen,
		 "registering %zu KiB would exceed the locked-memory limit "
		 "(RLIMIT_MEMLOCK %llu KiB, %llu KiB locked already): raise it "
		 "with 'ulimit -l unlimited', LimitMEMLOCK=infinity in a "
		 "systemd unit or /etc/security/limits.conf%s",
		 need / 1024, (unsigned long long)rl.rlim_cur / 1024,
		 (unsigned long long)have / 1024, hint);
	return RIFT_EMEMLOCK;
}

int rift__pool_memlock_check(size_t need, char *err, size_t errlen)
{
	return memlock_check(need, ", or lower pool.initial / pool.increment",
			     err, errlen);
}

int rift__memlock_check(size_t need, char *err, size_t errlen)
{
	return memlock_check(need, "", err, errlen);
}
