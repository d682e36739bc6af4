/*
 * info.h - what the files of rift-info share.  main.c has the overview;
 * each file says what it holds:
 *
 *   main.c     main, the options and the usage text
 *   system.c   the machine: kernel, modules, the no-device advice,
 *              locked memory and huge pages
 *   report.c   the report as text and as JSON, and their helpers
 *   check.c    --check: a config file and the environment, and where
 *              each value that is not the default came from
 */
#ifndef RIFT_TOOLS_INFO_H
#define RIFT_TOOLS_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/utsname.h>

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

/* ---- report.c: notes, text and JSON helpers, the report ---- */

#define MAX_NOTES 32

/* Warnings and hints collected while looking; printed once at the end. */
struct notes {
	char *warn[MAX_NOTES];
	int n_warn;
};

__attribute__((format(printf, 2, 3))) void note_warn(struct notes *nt,
						     const char *fmt, ...);
void notes_free(struct notes *nt);
void json_str(const char *s);
const char *size_str(uint64_t v, char *buf, size_t len);
void print_wrapped(const char *prefix, const char *text, int indent);

/* ---- system.c: kernel, modules, memory ---- */

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

#define N_CORE	 4  /* core_modules */
#define N_PROV	 18 /* provider_modules */
#define PROV_RXE 0  /* rdma_rxe in provider_modules */
extern const char *const core_modules[N_CORE];
extern const char *const provider_modules[N_PROV];

struct modules {
	enum mod_state core[N_CORE];
	enum mod_state prov[N_PROV];
	int providers_active; /* loaded or built in */
	char missing[256];    /* "ib_uverbs, rdma_ucm" */
	bool userspace;	      /* /etc/libibverbs.d has provider drivers */
};

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

void kernel_init(struct kernel *k);
void kernel_free(struct kernel *k);
const char *mod_state_str(enum mod_state s);
void modules_scan(const struct kernel *k, struct modules *m);
/* Why there is no device and what to do, as lines of text; how many. */
int no_device_hints(struct kernel *k, const struct modules *m, const char *why,
		    char hint[][400], int max);
void memory_scan(struct memory *mem, struct notes *nt);

/* ---- report.c: the report ---- */

void print_device(const rift_device_info *d, const struct opts *o);
void print_modules(const struct modules *m, bool verbose);
void print_memory(const struct memory *mem);
void json_report(const rift_device_info *devs, int n, const struct opts *o,
		 const struct modules *m, const struct memory *mem,
		 char hints[][400], int n_hints, const struct notes *nt);

/* ---- check.c ---- */

/* --check FILE: the exit status. */
int check_file(const char *path);

#endif /* RIFT_TOOLS_INFO_H */
