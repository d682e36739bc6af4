/*
 * rift-info - what this machine offers rift: RDMA devices, ports and GIDs,
 * the kernel modules behind them, the locked-memory limit and huge pages
 * against what the configured pool needs, and a config file check.
 *
 *   rift-info [-d DEV] [-i PORT] [-v] [--json] [--config FILE]
 *   rift-info -l
 *   rift-info --check FILE
 *
 * Uses only rift.h, like any user.  Options and words follow rdma-core's
 * ibv_devinfo (-d, -i, -l, -v, hca_id, port states) and iproute2's
 * `rdma link` (state ACTIVE physical_state LINK_UP netdev eth0).
 *
 * Exit status: 0 when the report was made, also on a machine without an
 * RDMA device (it says so and what to install or load); 1 for a real
 * error (a config file that does not load, -d or -i naming nothing, the
 * library failing to list devices or to query one); 2 for a bad option.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <rift.h>

#define EXIT_ERROR 1
#define EXIT_USAGE 2

struct opts {
	const char *dev;    /* -d: only this device */
	unsigned port;	    /* -i: only this port; 0 = all */
	bool verbose;	    /* -v */
	bool json;	    /* --json */
	bool list;	    /* -l */
	const char *config; /* --config FILE */
	const char *check;  /* --check FILE */
};

/* ---- output: text to stdout, or JSON built up as we go ---- */

#define MAX_NOTES 32

/* Warnings and hints collected while looking; printed once at the end. */
struct notes {
	char *warn[MAX_NOTES];
	int n_warn;
};

static void note_warn(struct notes *nt, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note_warn(struct notes *nt, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (nt->n_warn == MAX_NOTES)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s)
		nt->warn[nt->n_warn++] = s;
}

static void notes_free(struct notes *nt)
{
	for (int i = 0; i < nt->n_warn; i++)
		free(nt->warn[i]);
	nt->n_warn = 0;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* "name": "value" with the separator that comes before it. */
static void json_kv(const char *sep, const char *k, const char *v)
{
	printf("%s", sep);
	json_str(k);
	fputs(": ", stdout);
	json_str(v);
}

static void json_ku(const char *sep, const char *k, uint64_t v)
{
	printf("%s", sep);
	json_str(k);
	printf(": %" PRIu64, v);
}

/* "16 MiB", "1.5 GiB", "512 bytes": sizes as people read them. */
static const char *size_str(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	uint64_t div = 1;

	while (u < 4 && v >= div * 1024) {
		div *= 1024;
		u++;
	}
	if (v % div == 0)
		snprintf(buf, len, "%" PRIu64 " %s", v / div, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", (double)v / (double)div, unit[u]);
	return buf;
}

/*
 * Print text after prefix, folded at spaces to fit 79 columns, later lines
 * indented by indent spaces.
 */
static void print_wrapped(const char *prefix, const char *text, int indent)
{
	int col = printf("%s", prefix);
	bool fresh = true; /* no word on this line yet */

	while (*text) {
		int w = (int)strcspn(text, " ");

		/* Keep "16 MiB" on one line. */
		if (text[w] == ' ' && strchr("KMGT", text[w + 1]) &&
		    strncmp(text + w + 2, "iB", 2) == 0)
			w += 1 + (int)strcspn(text + w + 1, " ");

		if (!fresh && col + 1 + w > 79) {
			col = printf("\n%*s", indent, "") - 1;
			fresh = true;
		}
		col += printf("%s%.*s", fresh ? "" : " ", w, text);
		fresh = false;
		text += w;
		text += strspn(text, " ");
	}
	putchar('\n');
}

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

enum mod_state {
	MOD_LOADED,    /* in /proc/modules (or /sys/module with initstate) */
	MOD_BUILTIN,   /* compiled into the kernel */
	MOD_AVAILABLE, /* in /lib/modules/RELEASE, not loaded */
	MOD_ABSENT,    /* nowhere */
};

struct kernel {
	struct utsname uts;
	bool have_proc_modules; /* /proc/modules readable */
	char *proc_modules;	/* its contents */
	char *modules_dep;	/* /lib/modules/REL/modules.dep */
	char *modules_builtin;	/* /lib/modules/REL/modules.builtin */
	bool config_read;	/* tried the kernel config */
	char *config;		/* /boot/config-REL or /proc/config.gz */
	char config_src[300];	/* which one */
};

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

static void kernel_init(struct kernel *k)
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

static void kernel_free(struct kernel *k)
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

static const char *mod_state_str(enum mod_state s)
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

static const char *const core_modules[] = {"ib_core", "ib_uverbs", "rdma_ucm",
					   "rdma_cm"};
/* Kernel RDMA providers: soft ones first (rdma_rxe is PROV_RXE), then NICs. */
static const char *const provider_modules[] = {
	"rdma_rxe", "siw",	"mlx5_ib",     "mlx4_ib",    "irdma",
	"bnxt_re",  "efa",	"erdma",       "mana_ib",    "hns_roce_hw_v2",
	"qedr",	    "iw_cxgb4", "ocrdma",      "vmw_pvrdma", "hfi1",
	"ib_qib",   "ib_mthca", "usnic_verbs",
};
#define N_CORE	 (sizeof(core_modules) / sizeof(core_modules[0]))
#define N_PROV	 (sizeof(provider_modules) / sizeof(provider_modules[0]))
#define PROV_RXE 0

struct modules {
	enum mod_state core[N_CORE];
	enum mod_state prov[N_PROV];
	int providers_active; /* loaded or built in */
	char missing[256];    /* "ib_uverbs, rdma_ucm" */
	bool userspace;	      /* /etc/libibverbs.d has provider drivers */
};

static void modules_scan(const struct kernel *k, struct modules *m)
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
static int no_device_hints(struct kernel *k, const struct modules *m,
			   const char *why, char hint[][400], int max)
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

struct memory {
	rift_config cfg;
	const char *cfg_src; /* file name, or "defaults" */
	uint64_t need_start; /* rift_config_memlock_need, bytes */
	uint64_t need_max;   /* bytes */
	bool limit_inf;	     /* RLIMIT_MEMLOCK soft is unlimited */
	bool hard_inf;	     /* ... hard */
	uint64_t limit;	     /* soft limit, bytes */
	uint64_t hard;	     /* hard limit, bytes */
	uint64_t huge_total; /* HugePages_Total, pages */
	uint64_t huge_free;  /* HugePages_Free, pages */
	uint64_t huge_size;  /* Hugepagesize, bytes */
};

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

static void memory_scan(struct memory *mem, struct notes *nt)
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

/* ---- text report ---- */

static void print_gid(const rift_gid_info *g)
{
	char gid[64];

	snprintf(gid, sizeof(gid), "GID[%3u]:", g->index);
	printf("      %-20s%s, %s", gid, g->gid, rift_gid_type_name(g->type));
	if (g->ip[0] && strcmp(g->ip, g->gid) != 0)
		printf(", IPv4 %s", g->ip);
	if (g->netdev[0])
		printf(", netdev %s", g->netdev);
	putchar('\n');
}

static void print_empty(uint32_t from, uint32_t to)
{
	char gid[64];

	if (from > to)
		return;
	if (from == to)
		snprintf(gid, sizeof(gid), "GID[%3u]:", from);
	else
		snprintf(gid, sizeof(gid), "GID[%u..%u]:", from, to);
	printf("      %-20s(empty)\n", gid);
}

static void print_port(const rift_device_info *d, const rift_port_info *p,
		       bool verbose)
{
	uint32_t next = 0, shown;

	printf("    port:     %u\n", p->number);
	/* The one-line summary `rdma link` prints. */
	printf("      %-20s%s/%u state %s physical_state %s%s%s\n",
	       "link:", d->name, p->number, p->state_name, p->phys_state_name,
	       p->netdev[0] ? " netdev " : "", p->netdev);
	printf("      %-20s%s (%d)\n", "state:", p->state_name, p->state);
	printf("      %-20s%s (%d)\n", "phys_state:", p->phys_state_name,
	       p->phys_state);
	printf("      %-20s%s\n", "link_layer:", p->link_layer);
	printf("      %-20s%u\n", "max_mtu:", p->max_mtu);
	printf("      %-20s%u\n", "active_mtu:", p->active_mtu);
	if (p->speed_mbps)
		printf("      %-20s%" PRIu64 " Mb/s (%uX, %u Mb/s per lane)\n",
		       "speed:", p->speed_mbps, p->width, p->lane_mbps);
	else
		printf("      %-20sunknown\n", "speed:");
	if (verbose) {
		printf("      %-20s%u\n", "port_lid:", p->lid);
		printf("      %-20s%u\n", "sm_lid:", p->sm_lid);
		printf("      %-20s0x%02x\n", "port_lmc:", p->lmc);
		printf("      %-20s0x%x\n", "max_msg_sz:", p->max_msg_size);
		printf("      %-20s0x%08x\n",
		       "port_cap_flags:", p->port_cap_flags);
		printf("      %-20s%u\n", "gid_tbl_len:", p->gid_table_len);
	}
	shown = p->gid_count < RIFT_PORT_MAX_GIDS ? p->gid_count
						  : RIFT_PORT_MAX_GIDS;
	if (!shown)
		printf("      %-20snone\n", "GIDs:");
	for (uint32_t i = 0; i < shown; i++) {
		if (verbose && p->gids[i].index > next)
			print_empty(next, p->gids[i].index - 1);
		print_gid(&p->gids[i]);
		next = p->gids[i].index + 1;
	}
	if (p->gid_count > shown)
		printf("      ... %u more non-empty GIDs (rift-info shows the "
		       "first %d)\n",
		       p->gid_count - shown, RIFT_PORT_MAX_GIDS);
	else if (verbose && p->gid_table_len)
		print_empty(next, p->gid_table_len - 1);
}

static void print_limits(const rift_device_limits *l)
{
	printf("    %-22s0x%" PRIx64 "\n", "max_mr_size:", l->max_mr_size);
	printf("    %-22s0x%" PRIx64 "\n", "page_size_cap:", l->page_size_cap);
	printf("    %-22s%u\n", "max_qp:", l->max_qp);
	printf("    %-22s%u\n", "max_qp_wr:", l->max_qp_wr);
	printf("    %-22s%u\n", "max_sge:", l->max_sge);
	printf("    %-22s%u\n", "max_sge_rd:", l->max_sge_rd);
	printf("    %-22s%u\n", "max_cq:", l->max_cq);
	printf("    %-22s%u\n", "max_cqe:", l->max_cqe);
	printf("    %-22s%u\n", "max_mr:", l->max_mr);
	printf("    %-22s%u\n", "max_pd:", l->max_pd);
	printf("    %-22s%u\n", "max_mw:", l->max_mw);
	printf("    %-22s%u\n", "max_ah:", l->max_ah);
	printf("    %-22s%u\n", "max_srq:", l->max_srq);
	printf("    %-22s%u\n", "max_srq_wr:", l->max_srq_wr);
	printf("    %-22s%u\n", "max_srq_sge:", l->max_srq_sge);
	printf("    %-22s%u\n", "max_qp_rd_atom:", l->max_qp_rd_atom);
	printf("    %-22s%u\n", "max_qp_init_rd_atom:", l->max_qp_init_rd_atom);
	printf("    %-22s%s (%u)\n", "atomic_cap:",
	       l->atomic_cap == 0   ? "ATOMIC_NONE"
	       : l->atomic_cap == 1 ? "ATOMIC_HCA"
				    : "ATOMIC_GLOB",
	       l->atomic_cap);
	printf("    %-22s%u\n", "local_ca_ack_delay:", l->local_ca_ack_delay);
	printf("    %-22s%s\n", "mw_type2:",
	       l->mw_type2 ? "yes (rendezvous READs through a window per "
			     "message)"
			   : "no (large messages stream, no rendezvous)");
}

static uint32_t ports_shown(const rift_device_info *d)
{
	return d->port_count < RIFT_DEVICE_MAX_PORTS ? d->port_count
						     : RIFT_DEVICE_MAX_PORTS;
}

static void print_device(const rift_device_info *d, const struct opts *o)
{
	printf("hca_id: %s\n", d->name);
	if (d->status) {
		printf("    %-22s%s\n", "error:", d->error);
		if (d->status == RIFT_EACCES || d->status == RIFT_EPERM)
			printf("    %-22sno permission on /dev/infiniband: run "
			       "as root or join the group that owns it\n",
			       "hint:");
	}
	printf("    %-22s%s\n", "transport:", d->transport);
	if (d->fw_ver[0])
		printf("    %-22s%s\n", "fw_ver:", d->fw_ver);
	printf("    %-22s%s\n", "node_guid:", d->node_guid_str);
	if (o->verbose)
		printf("    %-22s%04x:%04x:%04x:%04x\n", "sys_image_guid:",
		       (unsigned)(d->sys_image_guid >> 48) & 0xffff,
		       (unsigned)(d->sys_image_guid >> 32) & 0xffff,
		       (unsigned)(d->sys_image_guid >> 16) & 0xffff,
		       (unsigned)d->sys_image_guid & 0xffff);
	printf("    %-22s0x%04x\n", "vendor_id:", d->vendor_id);
	printf("    %-22s%u\n", "vendor_part_id:", d->vendor_part_id);
	printf("    %-22s0x%X\n", "hw_ver:", d->hw_ver);
	printf("    %-22s%u\n", "phys_port_cnt:", d->port_count);
	if (o->verbose && !d->status)
		print_limits(&d->limits);
	for (uint32_t i = 0; i < ports_shown(d); i++)
		if (!o->port || o->port == d->ports[i].number)
			print_port(d, &d->ports[i], o->verbose);
	if (!o->port && d->port_count > ports_shown(d))
		printf("    ... ports %u..%u not shown (rift reports at most "
		       "%d per device)\n",
		       ports_shown(d) + 1, d->port_count,
		       RIFT_DEVICE_MAX_PORTS);
	putchar('\n');
}

static void print_modules(const struct modules *m, bool verbose)
{
	bool any = false;

	printf("kernel modules:\n");
	for (size_t i = 0; i < N_CORE; i++)
		printf("    %-22s%s%s%s\n", core_modules[i],
		       mod_state_str(m->core[i]),
		       m->core[i] == MOD_AVAILABLE ? ": modprobe " : "",
		       m->core[i] == MOD_AVAILABLE ? core_modules[i] : "");
	printf("    %-22s", "providers:");
	for (size_t i = 0; i < N_PROV; i++)
		if (m->prov[i] == MOD_LOADED || m->prov[i] == MOD_BUILTIN) {
			printf("%s%s (%s)", any ? ", " : "",
			       provider_modules[i], mod_state_str(m->prov[i]));
			any = true;
		}
	if (!any)
		printf("none loaded%s",
		       m->prov[PROV_RXE] == MOD_AVAILABLE
			       ? " (soft-RoCE: modprobe rdma_rxe)"
			       : "");
	putchar('\n');
	if (verbose)
		for (size_t i = 0; i < N_PROV; i++)
			if (m->prov[i] != MOD_LOADED &&
			    m->prov[i] != MOD_BUILTIN)
				printf("    %-22s%s\n", provider_modules[i],
				       mod_state_str(m->prov[i]));
	print_wrapped("    missing:              ",
		      m->missing[0] ? m->missing : "none", 26);
	printf("    %-22s%s\n", "userspace:",
	       m->userspace ? "providers installed (/etc/libibverbs.d)"
			    : "no providers: apt install ibverbs-providers");
}

static void print_memory(const struct memory *mem)
{
	char a[32], b[32];

	printf("locked memory:\n");
	printf("    %-22s%s", "RLIMIT_MEMLOCK:",
	       mem->limit_inf ? "unlimited"
			      : size_str(mem->limit, a, sizeof(a)));
	printf(" (hard %s)\n",
	       mem->hard_inf ? "unlimited" : size_str(mem->hard, b, sizeof(b)));
	printf("    %-22s%s at start (pool.initial)\n",
	       "pool needs:", size_str(mem->need_start, a, sizeof(a)));
	printf("    %-22s%s at most (pool.max)\n", "",
	       size_str(mem->need_max, b, sizeof(b)));
	printf("    %-22sper device the process uses\n", "");
	printf("    %-22s%s\n", "config:", mem->cfg_src);
	printf("huge pages:\n");
	printf("    %-22s%" PRIu64 " of %" PRIu64 " (%s each)\n",
	       "free:", mem->huge_free, mem->huge_total,
	       size_str(mem->huge_size, a, sizeof(a)));
	printf("    %-22s%s\n",
	       "pool.huge_pages:", mem->cfg.huge_pages ? "true" : "false");
}

/* ---- JSON report ---- */

static void json_port(const rift_port_info *p, bool verbose)
{
	uint32_t shown = p->gid_count < RIFT_PORT_MAX_GIDS ? p->gid_count
							   : RIFT_PORT_MAX_GIDS;

	json_ku("{", "port", p->number);
	json_kv(", ", "state", p->state_name);
	json_ku(", ", "state_num", (uint64_t)p->state);
	json_kv(", ", "physical_state", p->phys_state_name);
	json_ku(", ", "physical_state_num", (uint64_t)p->phys_state);
	json_kv(", ", "link_layer", p->link_layer);
	json_kv(", ", "netdev", p->netdev);
	json_ku(", ", "max_mtu", p->max_mtu);
	json_ku(", ", "active_mtu", p->active_mtu);
	json_ku(", ", "width", p->width);
	json_ku(", ", "speed_mbps", p->speed_mbps);
	if (verbose) {
		json_ku(", ", "lid", p->lid);
		json_ku(", ", "sm_lid", p->sm_lid);
		json_ku(", ", "lmc", p->lmc);
		json_ku(", ", "max_msg_size", p->max_msg_size);
		json_ku(", ", "port_cap_flags", p->port_cap_flags);
	}
	json_ku(", ", "gid_tbl_len", p->gid_table_len);
	json_ku(", ", "gid_count", p->gid_count);
	fputs(", \"gids\": [", stdout);
	for (uint32_t i = 0; i < shown; i++) {
		const rift_gid_info *g = &p->gids[i];

		json_ku(i ? ", {" : "{", "index", g->index);
		json_kv(", ", "gid", g->gid);
		json_kv(", ", "type", rift_gid_type_name(g->type));
		json_kv(", ", "ip", g->ip);
		json_kv(", ", "netdev", g->netdev);
		putchar('}');
	}
	fputs("]}", stdout);
}

static void json_device(const rift_device_info *d, const struct opts *o)
{
	const rift_device_limits *l = &d->limits;
	bool first = true;

	json_kv("{", "hca_id", d->name);
	if (d->status) {
		json_kv(", ", "error", d->error);
		json_kv(", ", "status", rift_err_name(d->status));
	}
	json_kv(", ", "transport", d->transport);
	json_kv(", ", "fw_ver", d->fw_ver);
	json_kv(", ", "node_guid", d->node_guid_str);
	json_ku(", ", "vendor_id", d->vendor_id);
	json_ku(", ", "vendor_part_id", d->vendor_part_id);
	json_ku(", ", "hw_ver", d->hw_ver);
	json_ku(", ", "phys_port_cnt", d->port_count);
	if (o->verbose) {
		fputs(", \"limits\": ", stdout);
		json_ku("{", "max_mr_size", l->max_mr_size);
		json_ku(", ", "page_size_cap", l->page_size_cap);
		json_ku(", ", "max_qp", l->max_qp);
		json_ku(", ", "max_qp_wr", l->max_qp_wr);
		json_ku(", ", "max_sge", l->max_sge);
		json_ku(", ", "max_sge_rd", l->max_sge_rd);
		json_ku(", ", "max_cq", l->max_cq);
		json_ku(", ", "max_cqe", l->max_cqe);
		json_ku(", ", "max_mr", l->max_mr);
		json_ku(", ", "max_pd", l->max_pd);
		json_ku(", ", "max_mw", l->max_mw);
		json_ku(", ", "max_ah", l->max_ah);
		json_ku(", ", "max_srq", l->max_srq);
		json_ku(", ", "max_srq_wr", l->max_srq_wr);
		json_ku(", ", "max_srq_sge", l->max_srq_sge);
		json_ku(", ", "max_qp_rd_atom", l->max_qp_rd_atom);
		json_ku(", ", "max_qp_init_rd_atom", l->max_qp_init_rd_atom);
		json_ku(", ", "atomic_cap", l->atomic_cap);
		json_ku(", ", "local_ca_ack_delay", l->local_ca_ack_delay);
		json_ku(", ", "mw_type2", l->mw_type2);
		putchar('}');
	}
	fputs(", \"ports\": [", stdout);
	for (uint32_t i = 0; i < ports_shown(d); i++) {
		if (o->port && o->port != d->ports[i].number)
			continue;
		if (!first)
			fputs(", ", stdout);
		json_port(&d->ports[i], o->verbose);
		first = false;
	}
	fputs("]}", stdout);
}

static void json_report(const rift_device_info *devs, int n,
			const struct opts *o, const struct modules *m,
			const struct memory *mem, char hints[][400],
			int n_hints, const struct notes *nt)
{
	bool first = true;

	printf("{\"version\": ");
	json_str(rift_version_string());
	fputs(",\n \"devices\": [", stdout);
	for (int i = 0; i < n; i++) {
		if (o->dev && strcmp(devs[i].name, o->dev) != 0)
			continue;
		fputs(first ? "\n  " : ",\n  ", stdout);
		json_device(&devs[i], o);
		first = false;
	}
	fputs("],\n \"no_device\": ", stdout);
	if (n_hints) {
		fputs("[", stdout);
		for (int i = 0; i < n_hints; i++) {
			fputs(i ? ", " : "", stdout);
			json_str(hints[i]);
		}
		fputs("]", stdout);
	} else {
		fputs("null", stdout);
	}
	fputs(",\n \"modules\": {", stdout);
	for (size_t i = 0; i < N_CORE; i++)
		json_kv(i ? ", " : "", core_modules[i],
			mod_state_str(m->core[i]));
	fputs(", \"providers\": {", stdout);
	first = true;
	for (size_t i = 0; i < N_PROV; i++) {
		if (!o->verbose && m->prov[i] != MOD_LOADED &&
		    m->prov[i] != MOD_BUILTIN)
			continue;
		json_kv(first ? "" : ", ", provider_modules[i],
			mod_state_str(m->prov[i]));
		first = false;
	}
	fputs("}", stdout);
	json_kv(", ", "missing", m->missing);
	printf(", \"userspace_providers\": %s}",
	       m->userspace ? "true" : "false");
	fputs(",\n \"memlock\": {\"limit\": ", stdout);
	if (mem->limit_inf)
		fputs("null", stdout);
	else
		printf("%" PRIu64, mem->limit);
	fputs(", \"hard_limit\": ", stdout);
	if (mem->hard_inf)
		fputs("null", stdout);
	else
		printf("%" PRIu64, mem->hard);
	json_ku(", ", "pool_start", mem->need_start);
	json_ku(", ", "pool_max", mem->need_max);
	json_kv(", ", "config", mem->cfg_src);
	fputs("},\n \"huge_pages\": ", stdout);
	json_ku("{", "total", mem->huge_total);
	json_ku(", ", "free", mem->huge_free);
	json_ku(", ", "size", mem->huge_size);
	printf(", \"pool_huge_pages\": %s}",
	       mem->cfg.huge_pages ? "true" : "false");
	fputs(",\n \"warnings\": [", stdout);
	for (int i = 0; i < nt->n_warn; i++) {
		fputs(i ? ", " : "", stdout);
		json_str(nt->warn[i]);
	}
	fputs("]}\n", stdout);
}

/* ---- main ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rift-info [options]      RDMA devices, modules and "
		"memory limits\n"
		"       rift-info --check FILE   validate a rift config file\n"
		"\n"
		"Options:\n"
		"  -d, --ib-dev=DEV     only device DEV (default: all)\n"
		"  -i, --ib-port=PORT   only port PORT (default: all)\n"
		"  -l, --list           print only the device names\n"
		"  -v, --verbose        every GID entry (empty ones too) and "
		"the device limits\n"
		"      --json           the same report as JSON\n"
		"      --config=FILE    size the memory checks from FILE "
		"(plus RIFT_* variables)\n"
		"      --check=FILE     check FILE and exit: 0 if it loads, "
		"1 if not\n"
		"  -h, --help           this text\n"
		"  -V, --version        the version of rift\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	enum { OPT_JSON = 256, OPT_CONFIG, OPT_CHECK };
	static const struct option longopts[] = {
		{"ib-dev", required_argument, NULL, 'd'},
		{"ib-port", required_argument, NULL, 'i'},
		{"list", no_argument, NULL, 'l'},
		{"verbose", no_argument, NULL, 'v'},
		{"json", no_argument, NULL, OPT_JSON},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"check", required_argument, NULL, OPT_CHECK},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	while ((c = getopt_long(argc, argv, "d:i:lvhV", longopts, NULL)) != -1) {
		char *end;
		unsigned long v;

		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 'i':
			errno = 0;
			v = strtoul(optarg, &end, 0);
			if (errno || *end || end == optarg || v < 1 ||
			    v > 255) {
				fprintf(stderr,
					"rift-info: -i '%s': a port number is "
					"1..255\n",
					optarg);
				return EXIT_USAGE;
			}
			o->port = (unsigned)v;
			break;
		case 'l':
			o->list = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case OPT_CHECK:
			o->check = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			/* as rift-perf -V: the library is the package */
			printf("rift-info (rift %s)\n", rift_version_string());
			exit(0);
		default:
			/* getopt has named the option on stderr. */
			fprintf(stderr, "Try 'rift-info --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr,
			"rift-info: unexpected argument '%s'\n"
			"Try 'rift-info --help'.\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	return 0;
}

static int check_file(const char *path)
{
	rift_config cfg;
	char err[RIFT_CONFIG_ERRLEN];

	rift_config_init(&cfg);
	if (rift_config_load(&cfg, path, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return EXIT_ERROR;
	}
	printf("%s: ok\n", path);
	return 0;
}

static int load_config(const struct opts *o, struct memory *mem)
{
	char err[RIFT_CONFIG_ERRLEN];

	rift_config_init(&mem->cfg);
	mem->cfg_src = "defaults";
	if (o->config) {
		if (rift_config_load(&mem->cfg, o->config, err, sizeof(err))) {
			fprintf(stderr, "rift-info: %s\n", err);
			return EXIT_ERROR;
		}
		mem->cfg_src = o->config;
	}
	if (rift_config_env(&mem->cfg, err, sizeof(err))) {
		fprintf(stderr, "rift-info: %s\n", err);
		return EXIT_ERROR;
	}
	return 0;
}

/* -d and -i name something that exists?  Says what does if not. */
static int check_selection(const rift_device_info *devs, int n,
			   const struct opts *o)
{
	const rift_device_info *d = NULL;
	char names[256] = "";
	size_t used = 0;

	for (int i = 0; i < n; i++) {
		if (used < sizeof(names))
			used += (size_t)snprintf(names + used,
						 sizeof(names) - used, "%s%s",
						 i ? ", " : "", devs[i].name);
		if (o->dev && strcmp(devs[i].name, o->dev) == 0)
			d = &devs[i];
	}
	if (o->dev && !d) {
		fprintf(stderr, "rift-info: no RDMA device '%s' (%s%s)\n",
			o->dev, n ? "devices: " : "there is none",
			n ? names : "");
		return EXIT_ERROR;
	}
	for (int i = 0; o->port && i < n; i++) {
		if (o->dev && &devs[i] != d)
			continue;
		if (o->port > devs[i].port_count) {
			fprintf(stderr,
				"rift-info: %s has no port %u (%u "
				"port%s)\n",
				devs[i].name, o->port, devs[i].port_count,
				devs[i].port_count == 1 ? "" : "s");
			return EXIT_ERROR;
		}
		if (o->port > RIFT_DEVICE_MAX_PORTS) {
			fprintf(stderr,
				"rift-info: %s port %u: rift reports "
				"at most %d ports per device\n",
				devs[i].name, o->port, RIFT_DEVICE_MAX_PORTS);
			return EXIT_ERROR;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct kernel k;
	struct modules m;
	struct memory mem;
	struct notes nt = {.n_warn = 0};
	rift_device_info *devs = NULL;
	char err[256], hints[16][400];
	int rc, n, n_hints = 0, status = 0;

	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	if (o.check)
		return check_file(o.check);
	memset(&mem, 0, sizeof(mem));
	rc = load_config(&o, &mem);
	if (rc)
		return rc;

	n = rift_devices(NULL, 0, err, sizeof(err));
	if (n > 0) {
		devs = calloc((size_t)n, sizeof(*devs));
		if (!devs) {
			fprintf(stderr,
				"rift-info: out of memory for %d "
				"devices\n",
				n);
			return EXIT_ERROR;
		}
		/* A device may come or go in between: take the smaller. */
		rc = rift_devices(devs, n, err, sizeof(err));
		n = rc < n ? rc : n;
	}
	if (n < 0) {
		fprintf(stderr,
			"rift-info: cannot list RDMA devices: %s (%s)\n", err,
			rift_err_name(n));
		status = EXIT_ERROR;
		n = 0;
	}
	if (o.list) {
		printf("%d HCA%s found:\n", n, n == 1 ? "" : "s");
		for (int i = 0; i < n; i++)
			printf("\t%s\n", devs[i].name);
		free(devs);
		return status;
	}
	if (!status && (o.dev || o.port) && n > 0) {
		status = check_selection(devs, n, &o);
		if (status) {
			free(devs);
			return status;
		}
	}

	kernel_init(&k);
	modules_scan(&k, &m);
	memory_scan(&mem, &nt);
	if (n == 0 && !status) {
		n_hints = no_device_hints(&k, &m, err, hints, 16);
		if (o.dev) {
			fprintf(stderr,
				"rift-info: no RDMA device '%s' (there "
				"is none)\n",
				o.dev);
			status = EXIT_ERROR;
		}
	}
	for (int i = 0; i < n; i++)
		if (devs[i].status &&
		    (!o.dev || strcmp(devs[i].name, o.dev) == 0))
			status = EXIT_ERROR;

	if (o.json) {
		json_report(devs, n, &o, &m, &mem, hints, n_hints, &nt);
	} else {
		if (n_hints) {
			printf("no RDMA device found.\n");
			for (int i = 0; i < n_hints; i++)
				print_wrapped("    ", hints[i], 6);
			putchar('\n');
		}
		for (int i = 0; i < n; i++)
			if (!o.dev || strcmp(devs[i].name, o.dev) == 0)
				print_device(&devs[i], &o);
		print_modules(&m, o.verbose);
		print_memory(&mem);
		for (int i = 0; i < nt.n_warn; i++)
			print_wrapped("warning: ", nt.warn[i], 4);
	}
	notes_free(&nt);
	kernel_free(&k);
	free(devs);
	return status;
}
