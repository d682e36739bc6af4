/*
 * config_file.c - rift_config from a TOML file and the environment, and
 * back to TOML with the origin of every value.
 *
 * One table (keys[]) drives everything: each row names a section and key,
 * the rift_config member behind it, how its value is written, its range
 * and a one-line help.  Loading, the environment, the dump and the error
 * messages all read that table, so a new member of rift_config needs one
 * row here and one line in docs/config.md.
 *
 * Where a value came from is kept beside the struct, not in it (rift_config
 * has no room and must not grow for this): a small registry maps the
 * address of a struct that load/env changed to the origin of each key and
 * a snapshot of the values they set.  A value that no longer equals its
 * snapshot was changed by the program afterwards ("set in code").
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "util/toml.h"

#define MAX_FILE_SIZE (1u << 20) /* a config file is a few KiB */

enum kind {
	K_UINT,   /* unsigned integer */
	K_INT,    /* signed integer (int32_t member) */
	K_SIZE,   /* bytes: integer or "64KiB" */
	K_BOOL,   /* true/false (int member) */
	K_ENUM,   /* one of names[] (enum member, value = index) */
	K_STRING, /* char array */
	K_SIZES,  /* array of RIFT_BLOCK_CLASSES sizes (uint32_t[]) */
};

struct key {
	const char *section;
	const char *name;
	const char *alias;        /* also accepted, or NULL */
	const char *field;        /* rift_config member, as rift_config_check
				     names it in its messages */
	size_t off, width;        /* of the member */
	enum kind kind;
	int64_t min, max;         /* integer kinds, per element */
	const char *const *names; /* K_ENUM: by value, NULL-terminated */
	const char *help;
};

static const char *const polling_names[] = { "event", "busy", "adaptive",
					     NULL };
static const char *const cm_names[] = { "rdmacm", "tcp", NULL };

/* The enum values above are the indexes of these names. */
_Static_assert(RIFT_POLL_EVENT == 0 && RIFT_POLL_BUSY == 1 &&
		       RIFT_POLL_ADAPTIVE == 2,
	       "polling_names follows rift_polling");
_Static_assert(RIFT_CM_RDMACM == 0 && RIFT_CM_TCP == 1,
	       "cm_names follows rift_cm");
_Static_assert(sizeof(rift_polling) == 4 && sizeof(rift_cm) == 4,
	       "enum members are stored as 32-bit integers");

#define M(f)                                                                  \
	.field = #f, .off = offsetof(rift_config, f),                         \
	.width = sizeof(((rift_config *)0)->f)
#define KiB (1ll << 10)
#define MiB (1ll << 20)
#define GiB (1ll << 30)
#define TiB (1ll << 40)

/* Ranges mirror cfg_check in ctx.c; a unit test holds them together. */
static const struct key keys[] = {
	/* [progress] */
	{ "progress", "polling", NULL, M(polling), K_ENUM, 0, 2, polling_names,
	  "how rift_ctx_run waits: event, busy or adaptive" },
	{ "progress", "busy_poll_us", NULL, M(busy_poll_us), K_UINT, 0, 1000000,
	  NULL, "adaptive polling spins this long before sleeping, us" },
	/* [connect] */
	{ "connect", "connect_timeout_ms", "connection_timeout_ms",
	  M(connect_timeout_ms), K_UINT, 1, 600000, NULL,
	  "one connect attempt, ms" },
	{ "connect", "retries", NULL, M(retries), K_UINT, 0, 1000, NULL,
	  "extra attempts per address" },
	{ "connect", "retry_delay_ms", NULL, M(retry_delay_ms), K_UINT, 0,
	  600000, NULL, "pause between attempts, ms" },
	{ "connect", "fallback", NULL, M(fallback), K_BOOL, 0, 1, NULL,
	  "auto:// may fall back to TCP" },
	/* [session] */
	{ "session", "keepalive_interval_ms", NULL, M(keepalive_interval_ms),
	  K_UINT, 10, 3600000, NULL, "idle time before a ping, ms" },
	{ "session", "keepalive_timeout_ms", NULL, M(keepalive_timeout_ms),
	  K_UINT, 20, 3600000, NULL, "silence that kills a path, ms" },
	{ "session", "grace_ms", "session_grace_ms", M(session_grace_ms),
	  K_UINT, 0, 3600000, NULL,
	  "time a broken session may take to re-attach, ms" },
	{ "session", "ack_delay_ms", NULL, M(ack_delay_ms), K_UINT, 0, 10000,
	  NULL, "longest wait before an explicit ack, ms" },
	{ "session", "send_window", NULL, M(send_window), K_SIZE, 4 * KiB, TiB,
	  NULL, "unacknowledged bytes per connection" },
	{ "session", "max_msg_size", NULL, M(max_msg_size), K_SIZE, 1,
	  4 * GiB, NULL, "largest message accepted, bytes" },
	/* [tcp] */
	{ "tcp", "read_buffer", NULL, M(tcp_read_buffer), K_SIZE, 4 * KiB,
	  64 * MiB, NULL, "receive buffer per TCP path, bytes" },
	{ "tcp", "listen_backlog", NULL, M(listen_backlog), K_UINT, 1, 65535,
	  NULL, "listen(2) backlog" },
	/* [rdma] */
	{ "rdma", "device", NULL, M(device), K_STRING, 0, 0, NULL,
	  "RDMA device name, \"\" = first active device" },
	{ "rdma", "port", NULL, M(port), K_UINT, 0, 255, NULL,
	  "device port number, 0 = first active port" },
	{ "rdma", "gid_index", NULL, M(gid_index), K_INT, -1, 4095, NULL,
	  "GID table index, -1 = the GID matching the address" },
	{ "rdma", "cm", NULL, M(cm), K_ENUM, 0, 1, cm_names,
	  "connection manager: rdmacm or tcp" },
	{ "rdma", "retry_count", NULL, M(rdma_retry_count), K_UINT, 0, 6, NULL,
	  "QP retry_cnt; 7 (retry forever) is refused" },
	{ "rdma", "ack_timeout", NULL, M(rdma_ack_timeout), K_UINT, 1, 31, NULL,
	  "QP local ACK timeout exponent: 4.096 us * 2^n" },
	{ "rdma", "sq_depth", NULL, M(sq_depth), K_UINT, 16, 32768, NULL,
	  "send queue entries" },
	{ "rdma", "rq_depth", NULL, M(rq_depth), K_UINT, 16, 32768, NULL,
	  "receive queue entries" },
	{ "rdma", "max_send_sge", NULL, M(max_send_sge), K_UINT, 1, 32, NULL,
	  "scatter/gather entries per send" },
	{ "rdma", "max_recv_sge", NULL, M(max_recv_sge), K_UINT, 1, 32, NULL,
	  "scatter/gather entries per receive" },
	{ "rdma", "inline_threshold", NULL, M(inline_threshold), K_SIZE, 0,
	  4 * KiB, NULL, "sends up to this size go inline, bytes" },
	{ "rdma", "cq_size", NULL, M(cq_size), K_UINT, 32, 4 * MiB, NULL,
	  "entries of each completion queue a context's paths share" },
	{ "rdma", "poll_batch", NULL, M(poll_batch), K_UINT, 1, 1024, NULL,
	  "completions taken per poll" },
	{ "rdma", "qp_pool_count", NULL, M(qp_pool_count), K_UINT, 0, 4096,
	  NULL, "prepared QP sets kept ready per listener" },
	{ "rdma", "zero_copy_threshold", NULL, M(zero_copy_threshold), K_SIZE,
	  0, GiB, NULL,
	  "retained messages from this size keep their registered memory" },
	{ "rdma", "rndv_threshold", NULL, M(rndv_threshold), K_SIZE, 0, GiB,
	  NULL, "messages from this size move by RDMA READ, 0 = never" },
	/* [pool] */
	{ "pool", "block_sizes", NULL, M(block_size), K_SIZES, 4 * KiB, GiB,
	  NULL, "the 5 block classes, increasing, bytes" },
	{ "pool", "initial", NULL, M(pool_initial), K_SIZE, 0, TiB, NULL,
	  "registered at start, bytes" },
	{ "pool", "increment", NULL, M(pool_increment), K_SIZE, 0, TiB, NULL,
	  "registered per growth step, bytes" },
	{ "pool", "max", NULL, M(pool_max), K_SIZE, MiB, TiB, NULL,
	  "registered at most, bytes" },
	{ "pool", "buckets", NULL, M(pool_buckets), K_UINT, 1, 256, NULL,
	  "free lists per block class" },
	{ "pool", "thread_cache", NULL, M(pool_thread_cache), K_UINT, 0, 65536,
	  NULL, "blocks cached per thread and class" },
	{ "pool", "recv_reserve_pct", NULL, M(recv_reserve_pct), K_UINT, 0, 100,
	  NULL, "share of the pool kept for receives, %" },
	{ "pool", "huge_pages", NULL, M(huge_pages), K_BOOL, 0, 1, NULL,
	  "back the pool with huge pages" },
	/* [metrics] */
	{ "metrics", "enabled", NULL, M(metrics), K_BOOL, 0, 1, NULL,
	  "keep counters and histograms" },
};
#undef M

#define N_KEYS RIFT_ARRAY_SIZE(keys)

static const char *const sections[] = { "progress", "connect", "session",
					"tcp",      "rdma",    "pool",
					"metrics" };

/* ---- values in and out of members ---- */

static bool is_signed(const struct key *k)
{
	return k->kind == K_INT || k->kind == K_BOOL || k->kind == K_ENUM;
}

static size_t elems(const struct key *k)
{
	return k->kind == K_SIZES ? RIFT_BLOCK_CLASSES : 1;
}

static int64_t get_int(const rift_config *c, const struct key *k, size_t i)
{
	size_t w = k->width / elems(k);
	const char *p = (const char *)c + k->off + i * w;

	if (w == 8) {
		uint64_t u;

		memcpy(&u, p, 8);
		return (int64_t)u;
	} else {
		uint32_t u;

		memcpy(&u, p, 4);
		return is_signed(k) ? (int64_t)(int32_t)u : (int64_t)u;
	}
}

static void put_int(rift_config *c, const struct key *k, size_t i, int64_t v)
{
	size_t w = k->width / elems(k);
	char *p = (char *)c + k->off + i * w;

	if (w == 8) {
		uint64_t u = (uint64_t)v;

		memcpy(p, &u, 8);
	} else {
		uint32_t u = (uint32_t)v;

		memcpy(p, &u, 4);
	}
}

static bool same(const rift_config *a, const rift_config *b,
		 const struct key *k)
{
	if (k->kind == K_STRING)
		return strncmp((const char *)a + k->off,
			       (const char *)b + k->off, k->width) == 0;
	return memcmp((const char *)a + k->off, (const char *)b + k->off,
		      k->width) == 0;
}

/* A value as the dump and the messages write it. */
static void show(const struct key *k, int64_t v, char *buf, size_t len)
{
	if ((k->kind == K_SIZE || k->kind == K_SIZES) && v >= 0)
		rift__toml_size_str((uint64_t)v, buf, len);
	else
		snprintf(buf, len, "%lld", (long long)v);
}

/* ---- messages ---- */


/* Optimal string alignment distance, case-insensitive; 99 if too long. */
static unsigned distance(const char *a, const char *b)
{
	unsigned d[3][65], la = (unsigned)strlen(a), lb = (unsigned)strlen(b);

	if (la > 64 || lb > 64)
		return 99;
	for (unsigned j = 0; j <= lb; j++)
		d[0][j] = j;
	for (unsigned i = 1; i <= la; i++) {
		unsigned *cur = d[i % 3], *prev = d[(i - 1) % 3],
			 *pp = d[(i + 1) % 3];

		cur[0] = i;
		for (unsigned j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]);
			int cb = tolower((unsigned char)b[j - 1]);
			unsigned cost = ca != cb, v = prev[j - 1] + cost;

			if (prev[j] + 1 < v)
				v = prev[j] + 1;
			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			if (i > 1 && j > 1 &&
			    ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb &&
			    pp[j - 2] + 1 < v)
				v = pp[j - 2] + 1; /* transposition */
			cur[j] = v;
		}
	}
	return d[la % 3][lb];
}

static bool close_to(const char *typed, const char *known)
{
	unsigned d = distance(typed, known);

	return d <= 2 && d * 3 <= strlen(known);
}

static const char *section_of(const char *name)
{
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(sections); i++)
		if (!strcmp(sections[i], name))
			return sections[i];
	return NULL;
}

/* The row for section/name (or its alias); *alias says which matched. */
static const struct key *find_key(const char *section, const char *name,
				  bool *alias)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(keys[i].section, section) != 0)
			continue;
		if (!strcmp(keys[i].name, name)) {
			*alias = false;
			return &keys[i];
		}
		if (keys[i].alias && !strcmp(keys[i].alias, name)) {
			*alias = true;
			return &keys[i];
		}
	}
	return NULL;
}

/*
 * "; did you mean 'sq_depth'?" for a typo in the same section, or
 * "; it belongs in [rdma]" for a key of another section; "" otherwise.
 */
static void suggest(const char *section, const char *name, char *buf,
		    size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];

		if (section && !strcmp(k->section, section) &&
		    (close_to(name, k->name) ||
		     (k->alias && close_to(name, k->alias)))) {
			snprintf(buf, len, "; did you mean '%s'?",
				 close_to(name, k->name) ? k->name : k->alias);
			return;
		}
	}
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];

		if (!strcasecmp(name, k->name) ||
		    (k->alias && !strcasecmp(name, k->alias))) {
			snprintf(buf, len, "; it belongs in [%s]", k->section);
			return;
		}
	}
}

static void range_msg(const struct key *k, const char *as, long idx,
		      int64_t v, char *m, size_t len)
{
	char sv[32], lo[32], hi[32], ix[16] = "";

	show(k, v, sv, sizeof(sv));
	show(k, k->min, lo, sizeof(lo));
	show(k, k->max, hi, sizeof(hi));
	if (idx >= 0)
		snprintf(ix, sizeof(ix), "[%ld]", idx);
	snprintf(m, len, "%s%s = %s is out of range %s..%s (%s)", as, ix, sv,
		 lo, hi, k->help);
}

static void choices(const struct key *k, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; k->names[i] && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s\"%s\"",
				      i ? (k->names[i + 1] ? ", " : " or ")
					: "",
				      k->names[i]);
}

/* ---- conversions ---- */

/*
 * A converted value, before it is stored: integers for the numeric kinds
 * (one per element for K_SIZES), the text for K_STRING.
 */
struct setting {
	int64_t v[RIFT_BLOCK_CLASSES];
	const char *s;
};

static int check_range(const struct key *k, const char *as,
		       const struct setting *st, long *at, char *m, size_t len)
{
	if (k->kind == K_STRING) {
		if (strlen(st->s) >= k->width) {
			snprintf(m, len,
				 "%s = \"%.80s\" is too long (at most %zu "
				 "bytes)",
				 as, st->s, k->width - 1);
			return -1;
		}
		return 0;
	}
	for (size_t i = 0; i < elems(k); i++)
		if (st->v[i] < k->min || st->v[i] > k->max) {
			*at = k->kind == K_SIZES ? (long)i : -1;
			range_msg(k, as, *at, st->v[i], m, len);
			return -1;
		}
	return 0;
}

/* A size from a file: an integer, or a string with a unit. */
static int toml_size(const struct key *k, const char *as, long idx,
		     const struct rift__toml_val *v, int64_t *out, char *m,
		     size_t len)
{
	char ix[16] = "";
	const char *why;
	uint64_t u;

	if (idx >= 0)
		snprintf(ix, sizeof(ix), "[%ld]", idx);
	if (v->type == RIFT_TOML_INT) {
		*out = v->u.i;
		return 0;
	}
	if (v->type != RIFT_TOML_STRING) {
		snprintf(m, len,
			 "%s%s must be a size (an integer or a string like "
			 "\"64KiB\"), not %s",
			 as, ix, rift__toml_type_name(v->type));
		return -1;
	}
	if (rift__toml_size(v->u.s, &u, &why) != 0) {
		snprintf(m, len, "%s%s = \"%.40s\" is not a size: %s", as, ix,
			 v->u.s, why);
		return -1;
	}
	if (u > (uint64_t)INT64_MAX) {
		char hi[32], lo[32];

		show(k, k->min, lo, sizeof(lo));
		show(k, k->max, hi, sizeof(hi));
		snprintf(m, len, "%s%s = \"%.40s\" is out of range %s..%s (%s)",
			 as, ix, v->u.s, lo, hi, k->help);
		return -1;
	}
	*out = (int64_t)u; /* the range check follows */
	return 0;
}

/*
 * Convert a value of a file.  Returns 0, or -1 with the message in m and
 * *at the array element at fault (-1: the whole value).
 */
static int from_toml(const struct key *k, const char *as,
		     const struct rift__toml_val *v, struct setting *st,
		     long *at, char *m, size_t len)
{
	char ch[64];

	*at = -1;
	switch (k->kind) {
	case K_UINT:
	case K_INT:
		if (v->type != RIFT_TOML_INT) {
			snprintf(m, len, "%s must be an integer, not %s", as,
				 rift__toml_type_name(v->type));
			return -1;
		}
		st->v[0] = v->u.i;
		break;
	case K_SIZE:
		if (toml_size(k, as, -1, v, &st->v[0], m, len))
			return -1;
		break;
	case K_BOOL:
		if (v->type != RIFT_TOML_BOOL) {
			snprintf(m, len, "%s must be true or false, not %s", as,
				 rift__toml_type_name(v->type));
			return -1;
		}
		st->v[0] = v->u.b;
		break;
	case K_ENUM:
		choices(k, ch, sizeof(ch));
		if (v->type != RIFT_TOML_STRING) {
			snprintf(m, len, "%s must be one of %s, not %s", as, ch,
				 rift__toml_type_name(v->type));
			return -1;
		}
		for (st->v[0] = 0; k->names[st->v[0]]; st->v[0]++)
			if (!strcmp(k->names[st->v[0]], v->u.s))
				return 0;
		snprintf(m, len, "%s = \"%.40s\" is not one of %s", as, v->u.s,
			 ch);
		return -1;
	case K_STRING:
		if (v->type != RIFT_TOML_STRING) {
			snprintf(m, len, "%s must be a string, not %s", as,
				 rift__toml_type_name(v->type));
			return -1;
		}
		st->s = v->u.s;
		break;
	case K_SIZES:
		if (v->type != RIFT_TOML_ARRAY) {
			snprintf(m, len,
				 "%s must be an array of %d sizes, not %s", as,
				 RIFT_BLOCK_CLASSES,
				 rift__toml_type_name(v->type));
			return -1;
		}
		if (v->u.arr.n != RIFT_BLOCK_CLASSES) {
			snprintf(m, len, "%s needs exactly %d sizes, got %zu",
				 as, RIFT_BLOCK_CLASSES, v->u.arr.n);
			return -1;
		}
		for (size_t i = 0; i < RIFT_BLOCK_CLASSES; i++)
			if (toml_size(k, as, (long)i, &v->u.arr.items[i],
				      &st->v[i], m, len)) {
				*at = (long)i;
				return -1;
			}
		break;
	}
	return 0;
}

static int env_size(const struct key *k, const char *s, int64_t *out,
		    char *m, size_t len)
{
	const char *why;
	uint64_t u;

	if (rift__toml_int(s, out, &why) == 0)
		return 0; /* "-1" and "0x1000" reach the range check */
	if (rift__toml_size(s, &u, &why) != 0) {
		snprintf(m, len, "'%.40s' is not a size: %s", s, why);
		return -1;
	}
	*out = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
	RIFT_UNUSED(k);
	return 0;
}

/* Convert the text of an environment variable; -1 with m on error. */
static int from_env(const struct key *k, const char *s, struct setting *st,
		    char *m, size_t len)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };
	const char *why, *p;
	char ch[64], item[64];

	switch (k->kind) {
	case K_UINT:
	case K_INT:
		if (rift__toml_int(s, &st->v[0], &why) != 0) {
			snprintf(m, len, "'%.40s' is not an integer (%s)", s,
				 why);
			return -1;
		}
		return 0;
	case K_SIZE:
		return env_size(k, s, &st->v[0], m, len);
	case K_BOOL:
		for (size_t i = 0; i < RIFT_ARRAY_SIZE(yes); i++) {
			if (!strcasecmp(s, yes[i])) {
				st->v[0] = 1;
				return 0;
			}
			if (!strcasecmp(s, no[i])) {
				st->v[0] = 0;
				return 0;
			}
		}
		snprintf(m, len,
			 "'%.40s' is not a boolean (true/false, 1/0, yes/no, "
			 "on/off)",
			 s);
		return -1;
	case K_ENUM:
		for (st->v[0] = 0; k->names[st->v[0]]; st->v[0]++)
			if (!strcmp(k->names[st->v[0]], s))
				return 0;
		choices(k, ch, sizeof(ch));
		snprintf(m, len, "'%.40s' is not one of %s", s, ch);
		return -1;
	case K_STRING:
		st->s = s;
		return 0;
	case K_SIZES:
		p = s;
		for (size_t i = 0;; i++) {
			size_t n = strcspn(p, ","), b = 0;

			while (b < n && (p[b] == ' ' || p[b] == '\t'))
				b++;
			while (n > b && (p[n - 1] == ' ' || p[n - 1] == '\t'))
				n--;
			if (i == RIFT_BLOCK_CLASSES || n - b >= sizeof(item)) {
				snprintf(m, len,
					 "'%.60s' is not %d sizes separated by "
					 "commas",
					 s, RIFT_BLOCK_CLASSES);
				return -1;
			}
			memcpy(item, p + b, n - b);
			item[n - b] = '\0';
			if (env_size(k, item, &st->v[i], m, len))
				return -1;
			p += strcspn(p, ",");
			if (*p == '\0') {
				if (i + 1 == RIFT_BLOCK_CLASSES)
					return 0;
				snprintf(m, len,
					 "'%.60s' is not %d sizes separated by "
					 "commas",
					 s, RIFT_BLOCK_CLASSES);
				return -1;
			}
			p++;
		}
	}
	return 0;
}

static void store(rift_config *c, const struct key *k,
		  const struct setting *st)
{
	if (k->kind == K_STRING) {
		char *dst = (char *)c + k->off;

		memset(dst, 0, k->width);
		memcpy(dst, st->s, strlen(st->s)); /* checked: < width */
		return;
	}
	for (size_t i = 0; i < elems(k); i++)
		put_int(c, k, i, st->v[i]);
}

/* ---- origins ---- */

enum { FROM_DEFAULT = 0, FROM_FILE, FROM_ENV };

#define ORIGIN_SLOTS 16
#define ORIGIN_FILES 4
#define ORIGIN_PATH 256
#define NO_FILE 0xff

struct origin {
	uint8_t from;  /* FROM_* */
	uint8_t file;  /* FROM_FILE: index in slot files, or NO_FILE */
	uint8_t alias; /* the alias name (or its variable) was used */
	unsigned line, col;
};

struct origin_slot {
	const rift_config *cfg; /* whose origins; NULL = free */
	uint64_t used;          /* last use, for eviction */
	rift_config snap;       /* values when the origins were recorded */
	struct origin o[N_KEYS];
	char files[ORIGIN_FILES][ORIGIN_PATH];
};

static pthread_mutex_t origin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct origin_slot origin_slots[ORIGIN_SLOTS];
static uint64_t origin_clock;

static bool slot_matches(const struct origin_slot *s, const rift_config *c)
{
	bool any = false;

	for (size_t i = 0; i < N_KEYS; i++) {
		if (!same(&s->snap, c, &keys[i]))
			return false;
		any |= s->o[i].from != FROM_DEFAULT;
	}
	return any;
}

/*
 * The slot for cfg: its own, or else one whose values cfg still has all
 * of (cfg is a copy of a loaded struct).  Call with origin_lock held.
 */
static struct origin_slot *slot_find(const rift_config *cfg,
				     const rift_config *values)
{
	struct origin_slot *copy = NULL;

	for (size_t i = 0; i < ORIGIN_SLOTS; i++) {
		struct origin_slot *s = &origin_slots[i];

		if (s->cfg == cfg)
			return s;
		if (s->cfg && !copy && slot_matches(s, values))
			copy = s;
	}
	return copy;
}

static uint8_t slot_file(struct origin_slot *s, const char *path)
{
	for (uint8_t i = 0; i < ORIGIN_FILES; i++) {
		if (!s->files[i][0]) {
			snprintf(s->files[i], ORIGIN_PATH, "%s", path);
			return i;
		}
		if (!strncmp(s->files[i], path, ORIGIN_PATH - 1))
			return i;
	}
	return NO_FILE;
}

/*
 * load/env changed cfg from before to after, setting the keys in got[]
 * (from path when it is a file).  Origins recorded earlier for cfg stay
 * when their value was not changed in between.
 */
static void origin_record(const rift_config *cfg, const rift_config *before,
			  const rift_config *after, const struct origin *got,
			  const char *path)
{
	struct origin_slot *s, *old, *mine = NULL;

	pthread_mutex_lock(&origin_lock);
	old = slot_find(cfg, before);
	if (old && old->cfg == cfg) {
		mine = old;
	} else {
		/* a free slot, else the least recently used (never old) */
		for (size_t i = 0; i < ORIGIN_SLOTS; i++) {
			s = &origin_slots[i];
			if (s == old)
				continue;
			if (!s->cfg) {
				mine = s;
				break;
			}
			if (!mine || s->used < mine->used)
				mine = s;
		}
		if (old)
			*mine = *old; /* cfg started as a copy of old's */
		else
			memset(mine, 0, sizeof(*mine));
		mine->cfg = cfg;
	}
	for (size_t i = 0; i < N_KEYS; i++) {
		if (mine->o[i].from != FROM_DEFAULT &&
		    !same(&mine->snap, before, &keys[i]))
			mine->o[i].from = FROM_DEFAULT;
		if (got[i].from == FROM_DEFAULT)
			continue;
		mine->o[i] = got[i];
		if (got[i].from == FROM_FILE)
			mine->o[i].file = slot_file(mine, path);
	}
	mine->snap = *after;
	mine->used = ++origin_clock;
	pthread_mutex_unlock(&origin_lock);
}

/* ---- cross-field rules ---- */

/*
 * Run rift_config_check on the result and rewrite its message in the
 * file's names ("config pool_initial (..) exceeds pool_max (..)" becomes
 * "pool.initial (..) exceeds pool.max (..)").  Returns 0, or -1 with the
 * message in m and *at the first key it names that got[] set (-1: none).
 */
static int cross_check(const rift_config *c, const struct origin *got,
		       long *at, char *m, size_t len)
{
	const char *s;
	size_t n = 0;

	*at = -1;
	if (rift_config_check(c) == 0)
		return 0;
	s = rift_ctx_last_error(NULL);
	if (!strncmp(s, "config ", 7))
		s += 7;
	m[0] = '\0';
	while (*s && n + 1 < len) {
		size_t w = 0;
		const struct key *k = NULL;

		while ((s[w] >= 'a' && s[w] <= 'z') || s[w] == '_' ||
		       (s[w] >= '0' && s[w] <= '9'))
			w++;
		for (size_t i = 0; w && i < N_KEYS; i++)
			if (strlen(keys[i].field) == w &&
			    !strncmp(keys[i].field, s, w)) {
				k = &keys[i];
				if (*at < 0 && got[i].from != FROM_DEFAULT)
					*at = (long)i;
			}
		if (k) {
			n += (size_t)snprintf(m + n, len - n, "%s.%s",
					      k->section, k->name);
		} else {
			if (!w)
				w = 1;
			n += (size_t)snprintf(m + n, len - n, "%.*s", (int)w,
					      s);
		}
		s += w;
	}
	return -1;
}

/* ---- rift_config_load ---- */

static bool size_ok(const rift_config *cfg)
{
	return cfg && cfg->size >= offsetof(rift_config, busy_poll_us) &&
	       cfg->size <= sizeof(rift_config);
}

static int read_file(const char *path, char **text, size_t *len, char *err,
		     size_t errlen)
{
	char *buf = NULL, ebuf[128];
	size_t cap = 0, n = 0;
	struct stat st;
	int rc = 0, e;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		e = errno;
		rift__set_err(err, errlen, "%s: cannot open: %s", path,
			strerror_r(e, ebuf, sizeof(ebuf)));
		return rift__from_errno(e);
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		rift__set_err(err, errlen, "%s: is a directory, not a config file",
			path);
		fclose(f);
		return RIFT_EINVAL;
	}
	for (;;) {
		size_t got;

		if (n == cap) {
			char *nb;

			if (cap >= MAX_FILE_SIZE) {
				rift__set_err(err, errlen,
					"%s: larger than %u KiB; not a config "
					"file?",
					path, MAX_FILE_SIZE >> 10);
				rc = RIFT_EINVAL;
				goto out_free;
			}
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				rift__set_err(err, errlen, "%s: out of memory", path);
				rc = RIFT_ENOMEM;
				goto out_free;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				e = errno;
				rift__set_err(err, errlen, "%s: cannot read: %s",
					path,
					strerror_r(e, ebuf, sizeof(ebuf)));
				rc = rift__from_errno(e);
				goto out_free;
			}
			break;
		}
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	goto out_close;
out_free:
	free(buf);
out_close:
	fclose(f);
	return rc;
}

struct loader {
	const struct rift__toml_doc *doc;
	rift_config tmp;           /* the result, committed on success */
	uint32_t size;             /* the caller's struct size */
	struct origin got[N_KEYS]; /* keys this file set */
	char *err;
	size_t errlen;
};

static int check_table(struct loader *ld, const struct rift__toml_table *t)
{
	char hint[160] = "";

	if (section_of(t->name))
		return 0;
	for (size_t i = 0; i < RIFT_ARRAY_SIZE(sections); i++)
		if (close_to(t->name, sections[i])) {
			snprintf(hint, sizeof(hint), "; did you mean [%s]?",
				 sections[i]);
			break;
		}
	if (!hint[0])
		snprintf(hint, sizeof(hint),
			 " (sections: progress, connect, session, tcp, rdma, "
			 "pool, metrics)");
	return rift__toml_errf(ld->err, ld->errlen, ld->doc->name, t->line,
			       t->col, "unknown section [%s]%s", t->name, hint);
}

static int apply_kv(struct loader *ld, const struct rift__toml_kv *kv)
{
	const char *name = ld->doc->name;
	const struct key *k;
	struct setting st;
	char m[320], hint[96];
	bool alias;
	long at;
	size_t i;

	if (kv->table_idx < 0) {
		suggest(NULL, kv->key, hint, sizeof(hint));
		return rift__toml_errf(ld->err, ld->errlen, name, kv->line,
				       kv->col,
				       "key '%s' is outside any section%s",
				       kv->key,
				       hint[0] ? hint : "; keys go under a "
							"[section] header");
	}
	k = find_key(kv->table, kv->key, &alias);
	if (!k) {
		suggest(kv->table, kv->key, hint, sizeof(hint));
		return rift__toml_errf(ld->err, ld->errlen, name, kv->line,
				       kv->col, "unknown key '%s' in [%s]%s",
				       kv->key, kv->table, hint);
	}
	i = (size_t)(k - keys);
	if (ld->got[i].from != FROM_DEFAULT)
		return rift__toml_errf(ld->err, ld->errlen, name, kv->line,
				       kv->col,
				       "'%s' sets the same value as '%s' at "
				       "line %u",
				       kv->key,
				       ld->got[i].alias ? k->alias : k->name,
				       ld->got[i].line);
	if (k->off + k->width > ld->size)
		return rift__toml_errf(ld->err, ld->errlen, name, kv->line,
				       kv->col,
				       "'%s' is not in this program's "
				       "rift_config (built with an older "
				       "rift.h)",
				       kv->key);
	memset(&st, 0, sizeof(st));
	if (from_toml(k, kv->key, &kv->val, &st, &at, m, sizeof(m)) ||
	    check_range(k, kv->key, &st, &at, m, sizeof(m))) {
		const struct rift__toml_val *v = &kv->val;

		if (at >= 0 && kv->val.type == RIFT_TOML_ARRAY)
			v = &kv->val.u.arr.items[at];
		return rift__toml_errf(ld->err, ld->errlen, name, v->line,
				       v->col, "%s", m);
	}
	store(&ld->tmp, k, &st);
	ld->got[i].from = FROM_FILE;
	ld->got[i].alias = alias;
	ld->got[i].line = kv->line;
	ld->got[i].col = kv->col;
	return 0;
}

static int apply_doc(struct loader *ld)
{
	const struct rift__toml_doc *d = ld->doc;
	size_t t = 0;
	char m[320];
	long at;
	int rc;

	/* headers and keys in document order, so the first error is first */
	for (size_t i = 0; i < d->n_kvs; i++) {
		for (; (long)t <= d->kvs[i].table_idx; t++) {
			rc = check_table(ld, &d->tables[t]);
			if (rc)
				return rc;
		}
		rc = apply_kv(ld, &d->kvs[i]);
		if (rc)
			return rc;
	}
	for (; t < d->n_tables; t++) {
		rc = check_table(ld, &d->tables[t]);
		if (rc)
			return rc;
	}
	if (cross_check(&ld->tmp, ld->got, &at, m, sizeof(m)) == 0)
		return 0;
	if (at < 0) {
		rift__set_err(ld->err, ld->errlen, "%s: %s", d->name, m);
		return RIFT_EINVAL;
	}
	return rift__toml_errf(ld->err, ld->errlen, d->name, ld->got[at].line,
			       ld->got[at].col, "%s", m);
}

int rift_config_load(rift_config *cfg, const char *path, char *err,
		     size_t errlen)
{
	struct rift__toml_doc doc;
	struct loader ld;
	rift_config before;
	char *text = NULL;
	size_t len = 0;
	int rc;

	rift__set_err(err, errlen, "%s", "");
	if (!size_ok(cfg)) {
		rift__set_err(err, errlen,
			"config: size is not from rift_config_init");
		return RIFT_EINVAL;
	}
	if (!path) {
		rift__set_err(err, errlen, "config: no file name");
		return RIFT_EINVAL;
	}
	rc = read_file(path, &text, &len, err, errlen);
	if (rc)
		return rc;
	rc = rift__toml_parse(&doc, path, text, len, err, errlen);
	if (rc)
		goto out_text;
	memset(&ld, 0, sizeof(ld));
	ld.doc = &doc;
	ld.size = cfg->size;
	ld.err = err;
	ld.errlen = errlen;
	rift_config_init(&ld.tmp);
	memcpy(&ld.tmp, cfg, cfg->size);
	before = ld.tmp;
	rc = apply_doc(&ld);
	if (rc == 0) {
		memcpy(cfg, &ld.tmp, cfg->size);
		origin_record(cfg, &before, &ld.tmp, ld.got, path);
	}
	rift__toml_free(&doc);
out_text:
	free(text);
	return rc;
}

/* ---- rift_config_env ---- */

/* "RIFT_RDMA_SQ_DEPTH" for rdma/sq_depth. */
static void env_name(const char *section, const char *name, char *buf,
		     size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "RIFT_%s_%s", section, name);

	for (size_t i = 0; i < n && i < len; i++)
		buf[i] = (char)toupper((unsigned char)buf[i]);
}

/*
 * A RIFT_<SECTION>_* variable that names no key is a typo: report it
 * rather than run with the default the operator meant to change.
 */
static int env_unknown(char *err, size_t errlen)
{
	char var[96], want[96], hint[128];

	for (char **e = environ; e && *e; e++) {
		size_t vl = strcspn(*e, "=");

		if (strncmp(*e, "RIFT_", 5) != 0 || vl >= sizeof(var))
			continue;
		memcpy(var, *e, vl);
		var[vl] = '\0';
		for (size_t s = 0; s < RIFT_ARRAY_SIZE(sections); s++) {
			size_t sl = strlen(sections[s]);
			bool known = false;

			env_name(sections[s], "", want, sizeof(want));
			if (strncmp(var, want, sl + 6) != 0)
				continue;
			hint[0] = '\0';
			for (size_t i = 0; i < N_KEYS && !known; i++) {
				const struct key *k = &keys[i];

				if (strcmp(k->section, sections[s]) != 0)
					continue;
				for (int a = 0; a < 2; a++) {
					const char *kn = a ? k->alias : k->name;

					if (!kn)
						continue;
					env_name(k->section, kn, want,
						 sizeof(want));
					if (!strcmp(var, want))
						known = true;
					else if (!hint[0] &&
						 close_to(var, want))
						snprintf(hint, sizeof(hint),
							 "; did you mean %s?",
							 want);
				}
			}
			if (!known) {
				rift__set_err(err, errlen,
					"env %s: no such setting in [%s]%s",
					var, sections[s], hint);
				return RIFT_EINVAL;
			}
		}
	}
	return 0;
}

int rift_config_env(rift_config *cfg, char *err, size_t errlen)
{
	struct origin got[N_KEYS];
	rift_config tmp, before;
	char var[96], var2[96], m[320];
	long at;
	int rc;

	rift__set_err(err, errlen, "%s", "");
	if (!size_ok(cfg)) {
		rift__set_err(err, errlen,
			"config: size is not from rift_config_init");
		return RIFT_EINVAL;
	}
	/* set-user-ID: the environment is the caller's, not the owner's */
	if (getauxval(AT_SECURE))
		return 0;
	rc = env_unknown(err, errlen);
	if (rc)
		return rc;
	memset(got, 0, sizeof(got));
	rift_config_init(&tmp);
	memcpy(&tmp, cfg, cfg->size);
	before = tmp;
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];
		const char *val, *val2 = NULL;
		struct setting st;
		bool alias = false;

		env_name(k->section, k->name, var, sizeof(var));
		val = secure_getenv(var);
		if (k->alias) {
			env_name(k->section, k->alias, var2, sizeof(var2));
			val2 = secure_getenv(var2);
		}
		if (val && val2) {
			rift__set_err(err, errlen, "env %s: %s is set too; use one",
				var2, var);
			return RIFT_EINVAL;
		}
		if (val2) {
			val = val2;
			alias = true;
			memcpy(var, var2, sizeof(var));
		}
		if (!val)
			continue;
		if (k->off + k->width > cfg->size) {
			rift__set_err(err, errlen,
				"env %s: not in this program's rift_config "
				"(built with an older rift.h)",
				var);
			return RIFT_EINVAL;
		}
		memset(&st, 0, sizeof(st));
		if (from_env(k, val, &st, m, sizeof(m)) ||
		    check_range(k, alias ? k->alias : k->name, &st, &at, m,
				sizeof(m))) {
			rift__set_err(err, errlen, "env %s: %s", var, m);
			return RIFT_EINVAL;
		}
		store(&tmp, k, &st);
		got[i].from = FROM_ENV;
		got[i].alias = alias;
	}
	if (cross_check(&tmp, got, &at, m, sizeof(m))) {
		if (at < 0) {
			rift__set_err(err, errlen, "environment: %s", m);
		} else {
			const struct key *k = &keys[at];

			env_name(k->section, got[at].alias ? k->alias : k->name,
				 var, sizeof(var));
			rift__set_err(err, errlen, "env %s: %s", var, m);
		}
		return RIFT_EINVAL;
	}
	memcpy(cfg, &tmp, cfg->size);
	origin_record(cfg, &before, &tmp, got, NULL);
	return 0;
}

/* ---- rift_config_dump ---- */

struct out {
	char *buf;
	size_t len, n;
};

static void outf(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(o->n < o->len ? o->buf + o->n : NULL,
		      o->n < o->len ? o->len - o->n : 0, fmt, ap);
	va_end(ap);
	if (r > 0)
		o->n += (size_t)r;
}

/* "key = value" for one row, as TOML. */
static void dump_value(const struct key *k, const rift_config *c, char *buf,
		       size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s = ", k->name);
	int64_t v = get_int(c, k, 0);
	char s[RIFT_DEVICE_NAME_MAX];

	switch (k->kind) {
	case K_UINT:
	case K_INT:
		snprintf(buf + n, len - n, "%lld", (long long)v);
		break;
	case K_SIZE:
		if (v > 0 && (v & 1023) == 0) {
			buf[n++] = '"';
			n += (size_t)rift__toml_size_str((uint64_t)v, buf + n,
							 len - n);
			snprintf(buf + n, len - n, "\"");
		} else {
			snprintf(buf + n, len - n, "%llu",
				 (unsigned long long)(uint64_t)v);
		}
		break;
	case K_BOOL:
		if (v == 0 || v == 1)
			snprintf(buf + n, len - n, "%s", v ? "true" : "false");
		else
			snprintf(buf + n, len - n, "%lld", (long long)v);
		break;
	case K_ENUM:
		if (v >= k->min && v <= k->max)
			snprintf(buf + n, len - n, "\"%s\"", k->names[v]);
		else
			snprintf(buf + n, len - n, "%lld", (long long)v);
		break;
	case K_STRING:
		snprintf(s, sizeof(s), "%.*s", (int)sizeof(s) - 1,
			 (const char *)c + k->off);
		rift__toml_quote(s, buf + n, len - n);
		break;
	case K_SIZES:
		n += (size_t)snprintf(buf + n, len - n, "[");
		for (size_t i = 0; i < elems(k) && n < len; i++) {
			char one[32];

			bool unit;

			v = get_int(c, k, i);
			unit = v > 0 && (v & 1023) == 0;
			rift__toml_size_str((uint64_t)v, one, sizeof(one));
			n += (size_t)snprintf(buf + n, len - n, "%s%s%s%s",
					      i ? ", " : "", unit ? "\"" : "",
					      one, unit ? "\"" : "");
		}
		if (n < len)
			snprintf(buf + n, len - n, "]");
		break;
	}
}

int rift_config_dump(const rift_config *cfg, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	struct origin org[N_KEYS];
	char files[ORIGIN_FILES][ORIGIN_PATH];
	char line[160], from[ORIGIN_PATH + 32];
	const struct origin_slot *slot;
	rift_config c, def, snap;
	bool known;

	if (buf && len)
		buf[0] = '\0';
	if (!size_ok(cfg) || (!buf && len))
		return RIFT_EINVAL;
	rift_config_init(&def);
	c = def;
	memcpy(&c, cfg, cfg->size);
	snap = c;
	pthread_mutex_lock(&origin_lock);
	slot = slot_find(cfg, &c);
	known = slot != NULL;
	if (known) {
		memcpy(org, slot->o, sizeof(org));
		memcpy(files, slot->files, sizeof(files));
		snap = slot->snap;
	}
	pthread_mutex_unlock(&origin_lock);

	outf(&o, "# rift %s effective configuration (rift_config_dump).\n"
		 "# After each value: where it came from.\n",
	     rift_version_string());
	for (size_t s = 0; s < RIFT_ARRAY_SIZE(sections); s++) {
		outf(&o, "\n[%s]\n", sections[s]);
		for (size_t i = 0; i < N_KEYS; i++) {
			const struct key *k = &keys[i];
			char var[96];

			if (strcmp(k->section, sections[s]) != 0)
				continue;
			dump_value(k, &c, line, sizeof(line));
			if (known && org[i].from == FROM_FILE &&
			    same(&snap, &c, k)) {
				snprintf(from, sizeof(from), "%s:%u",
					 org[i].file == NO_FILE
						 ? "(file)"
						 : files[org[i].file],
					 org[i].line);
			} else if (known && org[i].from == FROM_ENV &&
				   same(&snap, &c, k)) {
				env_name(k->section,
					 org[i].alias ? k->alias : k->name, var,
					 sizeof(var));
				snprintf(from, sizeof(from), "env %s", var);
			} else if (same(&def, &c, k)) {
				snprintf(from, sizeof(from), "default");
			} else {
				snprintf(from, sizeof(from), "set in code");
			}
			outf(&o, "%-*s # %s\n", 32, line, from);
		}
	}
	return o.n > INT_MAX ? INT_MAX : (int)o.n;
}
