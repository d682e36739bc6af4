/*
 * rift-info's look at the machine: the kernel's modules and build
 * configuration, why there is no RDMA device and what to do about it,
 * the locked-memory limit and huge pages against what the pool needs.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "info.h"

/* ---- small file helpers ---- */

static bool path_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Names in dir (not . or ..), comma separated, into buf; their count. */
static int dir_names(const char *dir, char *buf, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t used = 0;
	int n = 0;

	if (len)
		buf[0] = '\0';
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (used < len) {
			int w = snprintf(buf + used, len - used, "%s%s",
					 n ? ", " : "", e->d_name);

			used += w > 0 ? (size_t)w : 0;
		}
		n++;
	}
	closedir(d);
	return n;
}

/* ---- kernel: modules and configuration ---- */

static char *slurp(FILE *f)
{
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	buf[len] = '\0';
	return buf;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = slurp(f);

	if (f)
		fclose(f);
	return s;
}

void kernel_init(struct kernel *k)
{
	char path[512];

	memset(k, 0, sizeof(*k));
	uname(&k->uts);
	k->proc_modules = read_file("/proc/modules");
	k->have_proc_modules = k->proc_modules != NULL;
	snprintf(path, sizeof(path), "/lib/modules/%s/modules.dep",
		 k->uts.release);
	k->modules_dep = read_file(path);
	snprintf(path, sizeof(path), "/lib/modules/%s/modules.builtin",
		 k->uts.release);
	k->modules_builtin = read_file(path);
}

void kernel_free(struct kernel *k)
{
	free(k->proc_modules);
	free(k->modules_dep);
	free(k->modules_builtin);
	free(k->config);
}

/* The kernel's build configuration, if it can be found. */
static const char *kernel_config(struct kernel *k)
{
	char path[512];
	FILE *p;

	if (k->config_read)
		return k->config;
	k->config_read = true;
	snprintf(path, sizeof(path), "/boot/config-%s", k->uts.release);
	k->config = read_file(path);
	if (k->config) {
		snprintf(k->config_src, sizeof(k->config_src), "%s", path);
		return k->config;
	}
	if (!path_exists("/proc/config.gz"))
		return NULL;
	p = popen("gzip -dc /proc/config.gz 2>/dev/null", "r");
	k->config = slurp(p);
	if (p && pclose(p) != 0) {
		free(k->config);
		k->config = NULL;
	}
	snprintf(k->config_src, sizeof(k->config_src), "/proc/config.gz");
	return k->config;
}

/* 'y', 'm', 'n' (is not set), or 0 when the config is not known. */
static char kernel_option(struct kernel *k, const char *opt)
{
	const char *cfg = kernel_config(k), *p;
	char want[96];
	size_t n;

	if (!cfg)
		return 0;
	n = (size_t)snprintf(want, sizeof(want), "\n%s=", opt);
	p = strstr(cfg, want);
	if (p)
		return p[n];
	snprintf(want, sizeof(want), "# %s is not set", opt);
	return strstr(cfg, want) ? 'n' : 0;
}

/* Does text hold a line whose module file is NAME.ko[.xz|.zst|.gz]? */
static bool has_ko(const char *text, const char *name)
{
	char want[80];
	const char *p = text;
	size_t n = (size_t)snprintf(want, sizeof(want), "/%s.ko", name);

	while (text && (p = strstr(p, want))) {
		char c = p[n];

		if (c == ':' || c == '.' || c == '\n' || c == '\0')
			return true;
		p += n;
	}
	return false;
}

/* Does a line of text start with "name "?  (/proc/modules) */
static bool has_line(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n')) {
		p += *p == '\n';
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return true;
	}
	return false;
}

static enum mod_state module_state(const struct kernel *k, const char *name)
{
	char path[256];
	bool in_sys;

	if (has_line(k->proc_modules, name))
		return MOD_LOADED;
	snprintf(path, sizeof(path), "/sys/module/%s", name);
	in_sys = path_exists(path);
	snprintf(path, sizeof(path), "/sys/module/%s/initstate", name);
	if (in_sys && path_exists(path))
		return MOD_LOADED;
	if (in_sys || has_ko(k->modules_builtin, name))
		return MOD_BUILTIN;
	if (has_ko(k->modules_dep, name))
		return MOD_AVAILABLE;
	return MOD_ABSENT;
}

const char *mod_state_str(enum mod_state s)
{
	switch (s) {
	case MOD_LOADED:
		return "loaded";
	case MOD_BUILTIN:
		return "built in";
	case MOD_AVAILABLE:
		return "not loaded";
	case MOD_ABSENT:
		break;
	}
	return "not in this kernel";
}

const char *const core_modules[] = {"ib_core", "ib_uverbs", "rdma_ucm",
				    "rdma_cm"};
/* Kernel RDMA providers: soft ones first (rdma_rxe is PROV_RXE), then NICs. */
const char *const provider_modules[] = {
	"rdma_rxe", "siw",	"mlx5_ib",     "mlx4_ib",    "irdma",
	"bnxt_re",  "efa",	"erdma",       "mana_ib",    "hns_roce_hw_v2",
	"qedr",	    "iw_cxgb4", "ocrdma",      "vmw_pvrdma", "hfi1",
	"ib_qib",   "ib_mthca", "usnic_verbs",
};

void modules_scan(const struct kernel *k, struct modules *m)
{
	char names[256];
	size_t used = 0;

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < N_CORE; i++) {
		m->core[i] = module_state(k, core_modules[i]);
		if (m->core[i] == MOD_LOADED || m->core[i] == MOD_BUILTIN)
			continue;
		used += (size_t)snprintf(m->missing + used,
					 sizeof(m->missing) - used, "%s%s",
					 used ? ", " : "", core_modules[i]);
	}
	for (size_t i = 0; i < N_PROV; i++) {
		m->prov[i] = module_state(k, provider_modules[i]);
		if (m->prov[i] == MOD_LOADED || m->prov[i] == MOD_BUILTIN)
			m->providers_active++;
	}
	if (!m->providers_active && used < sizeof(m->missing))
		snprintf(m->missing + used, sizeof(m->missing) - used,
			 "%sa provider (rdma_rxe, mlx5_ib, siw, ...)",
			 used ? ", " : "");
	m->userspace = dir_names("/etc/libibverbs.d", names, sizeof(names)) > 0;
}

/* First interface that is up and not loopback: for the rxe hint. */
static void first_netdev(char *buf, size_t len)
{
	DIR *d = opendir("/sys/class/net");
	struct dirent *e;

	snprintf(buf, len, "eth0");
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[300], *state;
		bool up;

		if (e->d_name[0] == '.' || strcmp(e->d_name, "lo") == 0)
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/operstate",
			 e->d_name);
		state = read_file(path);
		up = state && strncmp(state, "up", 2) == 0;
		free(state);
		if (up) {
			snprintf(buf, len, "%s", e->d_name);
			break;
		}
	}
	closedir(d);
}

/*
 * Why there is no device and what to do, as lines of text.  Returns the
 * number of lines put in hint[].
 */
int no_device_hints(struct kernel *k, const struct modules *m, const char *why,
		    char hint[][400], int max)
{
	char kdevs[256], netdev[64];
	int n = 0, nk;

#define HINT(...) (n < max ? snprintf(hint[n++], 400, __VA_ARGS__) : 0)
	if (why && why[0])
		HINT("why: %s", why);
	nk = dir_names("/sys/class/infiniband", kdevs, sizeof(kdevs));
	first_netdev(netdev, sizeof(netdev));
	if (nk > 0 && !path_exists("/sys/class/infiniband_verbs")) {
		HINT("the kernel has RDMA devices (%s) but no userspace access "
		     "to them: modprobe ib_uverbs",
		     kdevs);
	} else if (nk > 0) {
		HINT("the kernel has RDMA devices (%s) but libibverbs has no "
		     "provider for them: apt install ibverbs-providers "
		     "(rdma-core's userspace drivers)",
		     kdevs);
	} else if (kernel_option(k, "CONFIG_INFINIBAND") == 'n') {
		HINT("this kernel (%s) was built without InfiniBand/RDMA "
		     "support (CONFIG_INFINIBAND is not set in %s), so no "
		     "module can add it",
		     k->uts.release, k->config_src);
		HINT("to use RDMA, boot a kernel built with CONFIG_INFINIBAND, "
		     "CONFIG_INFINIBAND_USER_ACCESS and a provider "
		     "(CONFIG_RDMA_RXE for soft-RoCE), e.g. Debian's "
		     "linux-image-amd64, then: modprobe rdma_rxe; rdma link "
		     "add rxe0 type rxe netdev %s (package iproute2)",
		     netdev);
	} else if (!k->have_proc_modules &&
		   !path_exists("/sys/module/ib_core")) {
		HINT("this kernel (%s) has no RDMA support built in and cannot "
		     "load modules (no /proc/modules): boot a kernel with "
		     "CONFIG_INFINIBAND, CONFIG_INFINIBAND_USER_ACCESS and "
		     "CONFIG_RDMA_RXE (soft-RoCE)",
		     k->uts.release);
	} else {
		if (m->prov[PROV_RXE] == MOD_LOADED ||
		    m->prov[PROV_RXE] == MOD_BUILTIN)
			HINT("rdma_rxe is loaded but has no link: rdma link "
			     "add rxe0 type rxe netdev %s (package iproute2)",
			     netdev);
		else
			HINT("for soft-RoCE (RDMA over an Ethernet "
			     "interface): modprobe rdma_rxe; rdma link add "
			     "rxe0 type rxe netdev %s (package iproute2)",
			     netdev);
		if (module_state(k, "rdma_rxe") == MOD_ABSENT)
			HINT("rdma_rxe is not among this kernel's modules "
			     "(/lib/modules/%s): install its modules package "
			     "or a kernel that has CONFIG_RDMA_RXE",
			     k->uts.release);
		HINT("for a real NIC, load its RDMA driver (mlx5_ib, irdma, "
		     "bnxt_re, efa, ...) and check its link");
		if (m->missing[0])
			HINT("kernel modules missing: %s", m->missing);
	}
	HINT("userspace: apt install rdma-core ibverbs-providers%s",
	     m->userspace ? " (providers are installed here)" : "");
	HINT("rift works without RDMA: tcp:// URLs, and auto:// falls back "
	     "to TCP (reason \"no RDMA device\")");
#undef HINT
	return n;
}

/* ---- memory: RLIMIT_MEMLOCK and huge pages ---- */

static void meminfo(struct memory *mem)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long v;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "HugePages_Total: %llu", &v) == 1)
			mem->huge_total = v;
		else if (sscanf(line, "HugePages_Free: %llu", &v) == 1)
			mem->huge_free = v;
		else if (sscanf(line, "Hugepagesize: %llu kB", &v) == 1)
			mem->huge_size = (uint64_t)v * 1024;
	}
	if (f)
		fclose(f);
}

void memory_scan(struct memory *mem, struct notes *nt)
{
	struct rlimit rl;
	char a[32], b[32], c[32];

	mem->need_start = rift_config_memlock_need(&mem->cfg, &mem->need_max);
	mem->limit_inf = mem->hard_inf = true;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
		mem->limit_inf = rl.rlim_cur == RLIM_INFINITY;
		mem->hard_inf = rl.rlim_max == RLIM_INFINITY;
		mem->limit = (uint64_t)rl.rlim_cur;
		mem->hard = (uint64_t)rl.rlim_max;
	}
	meminfo(mem);

	if (!mem->limit_inf && mem->limit < mem->need_max) {
		bool start = mem->limit < mem->need_start;
		uint64_t kib =
			((start ? mem->need_start : mem->need_max) + 1023) /
			1024;

		char why[320];

		if (start)
			snprintf(why, sizeof(why),
				 "the locked-memory limit (RLIMIT_MEMLOCK %s) "
				 "is below what the pool locks at start (%s, "
				 "pool.initial): RDMA connections will fail "
				 "with RIFT_EMEMLOCK (auto:// falls back to "
				 "TCP)",
				 size_str(mem->limit, a, sizeof(a)),
				 size_str(mem->need_start, b, sizeof(b)));
		else
			snprintf(why, sizeof(why),
				 "the locked-memory limit (RLIMIT_MEMLOCK %s) "
				 "lets the pool start (%s) but not grow to "
				 "pool.max (%s): growing past it fails with "
				 "RIFT_EMEMLOCK",
				 size_str(mem->limit, a, sizeof(a)),
				 size_str(mem->need_start, b, sizeof(b)),
				 size_str(mem->need_max, c, sizeof(c)));
		note_warn(nt,
			  "%s. Raise it: 'ulimit -l %" PRIu64 "' (KiB) or "
			  "'ulimit -l unlimited' in the shell that starts the "
			  "program (up to the hard limit, %s; root may raise "
			  "that); LimitMEMLOCK=infinity in its systemd unit; "
			  "'<user> - memlock unlimited' in "
			  "/etc/security/limits.conf (new logins). Or lower %s",
			  why, kib,
			  mem->hard_inf ? "unlimited"
					: size_str(mem->hard, c, sizeof(c)),
			  start ? "pool.initial" : "pool.max");
	}
	if (mem->cfg.huge_pages && mem->huge_size &&
	    mem->huge_free * mem->huge_size < mem->need_start) {
		uint64_t pages =
			(mem->need_start + mem->huge_size - 1) / mem->huge_size;

		note_warn(
			nt,
			"pool.huge_pages is on but only %" PRIu64
			" huge pages (%s) are free and the pool needs %s at "
			"start: echo %" PRIu64 " > /proc/sys/vm/nr_hugepages "
			"(or hugepages=%" PRIu64 " on the kernel command "
			"line)",
			mem->huge_free,
			size_str(mem->huge_free * mem->huge_size, a, sizeof(a)),
			size_str(mem->need_start, b, sizeof(b)),
			mem->huge_total - mem->huge_free + pages,
			mem->huge_total - mem->huge_free + pages);
	}
}
