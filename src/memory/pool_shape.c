/*
 * pool_shape.c - the shape of the registered pool for a configuration:
 * its geometry (regions, huge pages), the address space it reserves, and
 * whether a context's [pool] settings are those of the process's pool.
 *
 * The pool is the process's, shared by every context (pool.c): a second
 * context whose [pool] settings differ cannot have them, and rather than
 * ignore them, rift__pool_get refuses it, naming each key that differs
 * (rift__pool_settings_check).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memory/pool_int.h"
#include "util/toml.h"

size_t rift__huge_page_size(void)
{
	static size_t size; /* 0: not read yet; 1: none */
	FILE *f;
	char line[128];
	unsigned long long kb;
	size_t got = 1;

	if (__atomic_load_n(&size, __ATOMIC_RELAXED))
		return size > 1 ? size : 0;
	f = fopen("/proc/meminfo", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Hugepagesize: %llu kB", &kb) == 1 && kb) {
			got = (size_t)kb * 1024u;
			break;
		}
	if (f)
		fclose(f);
	__atomic_store_n(&size, got, __ATOMIC_RELAXED);
	return got > 1 ? got : 0;
}

static size_t gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

void rift__pool_geometry(const rift_config *cfg, struct rift__pool_geometry *g)
{
	size_t big = cfg->block_size[RIFT_BLOCK_CLASSES - 1];
	size_t unit = big;
	size_t hp = cfg->huge_pages ? rift__huge_page_size() : 0;

	/* With huge pages a region is whole huge pages too (whole blocks
	 * and whole huge pages: their least common multiple): each is
	 * mapped at its place in the reservation (MAP_FIXED |
	 * MAP_HUGETLB), which the kernel refuses unless it starts and ends
	 * on a huge page. */
	if (hp)
		unit = big / gcd(big, hp) * hp;
	g->region = cfg->pool_increment > big ? cfg->pool_increment : big;
	g->region = (g->region + unit - 1) / unit * unit;
	g->align = hp;
	g->max_regions = cfg->pool_max / g->region;
	if (g->max_regions == 0)
		g->max_regions = 1;
	g->initial_regions = (cfg->pool_initial + g->region - 1) / g->region;
	if (g->initial_regions > g->max_regions)
		g->initial_regions = g->max_regions;
}

void *rift__pool_reserve(size_t len, size_t align)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), extra, head;
	uint8_t *raw;

	if (align < page)
		align = page;
	/* mmap(NULL) promises a page, not a huge page: reserve one
	 * alignment more than asked, then give back what lies before the
	 * first aligned address and after the end. */
	extra = align - page;
	if (len > SIZE_MAX - extra) {
		errno = ENOMEM;
		return NULL;
	}
	raw = mmap(NULL, len + extra, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	head = (size_t)(-(uintptr_t)raw & (align - 1));
	if (head)
		munmap(raw, head);
	if (extra - head)
		munmap(raw + head + len, extra - head);
	return raw + head;
}

/* ---- one pool per process: the settings it was made with ---- */

void rift__pool_settings_of(const rift_config *cfg,
			    struct rift__pool_settings *s)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->block, cfg->block_size, sizeof(s->block));
	s->initial = cfg->pool_initial;
	s->increment = cfg->pool_increment;
	s->max = cfg->pool_max;
	s->buckets = cfg->pool_buckets;
	s->thread_cache = cfg->pool_thread_cache;
	s->recv_pct = cfg->recv_reserve_pct;
	s->huge = cfg->huge_pages != 0;
}

/* "16MiB" */
static void size_text(uint64_t v, char *buf, size_t len)
{
	rift__toml_size_str(v, buf, len);
}

static void blocks_text(const uint32_t *b, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < RIFT_BLOCK_CLASSES && n < len; i++) {
		char one[32];

		size_text(b[i], one, sizeof(one));
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "[",
				      one);
	}
	if (n < len)
		snprintf(buf + n, len - n, "]");
}

int rift__pool_settings_check(const struct rift__pool_settings *pool,
			      const rift_config *cfg, char *err, size_t errlen)
{
	struct rift__pool_settings want;
	char diff[768], a[96], b[96];
	size_t n = 0;
	int count = 0;

	rift__pool_settings_of(cfg, &want);
#define DIFF(key, fmt_a, fmt_b)                                               \
	do {                                                                  \
		if (n < sizeof(diff))                                         \
			n += (size_t)snprintf(diff + n, sizeof(diff) - n,     \
					      "%s%s = %s here, %s in the "    \
					      "pool",                         \
					      count ? "; " : "", key, fmt_a,  \
					      fmt_b);                         \
		count++;                                                      \
	} while (0)
	if (memcmp(want.block, pool->block, sizeof(want.block))) {
		blocks_text(want.block, a, sizeof(a));
		blocks_text(pool->block, b, sizeof(b));
		DIFF("pool.block_sizes", a, b);
	}
	if (want.initial != pool->initial) {
		size_text(want.initial, a, sizeof(a));
		size_text(pool->initial, b, sizeof(b));
		DIFF("pool.initial", a, b);
	}
	if (want.increment != pool->increment) {
		size_text(want.increment, a, sizeof(a));
		size_text(pool->increment, b, sizeof(b));
		DIFF("pool.increment", a, b);
	}
	if (want.max != pool->max) {
		size_text(want.max, a, sizeof(a));
		size_text(pool->max, b, sizeof(b));
		DIFF("pool.max", a, b);
	}
	if (want.buckets != pool->buckets) {
		snprintf(a, sizeof(a), "%u", want.buckets);
		snprintf(b, sizeof(b), "%u", pool->buckets);
		DIFF("pool.buckets", a, b);
	}
	if (want.thread_cache != pool->thread_cache) {
		snprintf(a, sizeof(a), "%u", want.thread_cache);
		snprintf(b, sizeof(b), "%u", pool->thread_cache);
		DIFF("pool.thread_cache", a, b);
	}
	if (want.recv_pct != pool->recv_pct) {
		snprintf(a, sizeof(a), "%u", want.recv_pct);
		snprintf(b, sizeof(b), "%u", pool->recv_pct);
		DIFF("pool.recv_reserve_pct", a, b);
	}
	if (want.huge != pool->huge)
		DIFF("pool.huge_pages", want.huge ? "true" : "false",
		     pool->huge ? "true" : "false");
#undef DIFF
	if (!count)
		return 0;
	snprintf(err, errlen,
		 "pool: this context's [pool] settings are not those of the "
		 "process's registered pool, which every context shares: %s "
		 "(give every context of the process the same [pool] "
		 "settings)",
		 diff);
	return RIFT_EINVAL;
}
