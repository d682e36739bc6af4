/*
 * config_keys.c - the keys of rift's config file and environment, and what
 * rift_config_load (config_file.c), rift_config_env (config_env.c) and
 * rift_config_dump (config_dump.c) all do with them.
 *
 * One table (rift__cfg_keys[]) drives everything: each row names a
 * section and key, the rift_config member behind it, how its value is
 * written, its range and a one-line help.  Loading, the environment, the
 * dump and the error messages all read that table, so a new member of
 * rift_config needs one row here and one line in docs/config.md.
 *
 * Where a value came from is kept beside the struct (config_origin.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/config_int.h"
#include "util/toml.h"

static const char *const polling_names[] = { "event", "busy", "adaptive",
					     NULL };
static const char *const cm_names[] = { "rdmacm", "tcp", NULL };
static const char *const policy_names[] = { "active-backup", "active-active",
					    NULL };

/* The enum values above are the indexes of these names. */
_Static_assert(RIFT_POLL_EVENT == 0 && RIFT_POLL_BUSY == 1 &&
		       RIFT_POLL_ADAPTIVE == 2,
	       "polling_names follows rift_polling");
_Static_assert(RIFT_CM_RDMACM == 0 && RIFT_CM_TCP == 1,
	       "cm_names follows rift_cm");
_Static_assert(RIFT_LOG_OFF == 0 && RIFT_LOG_ERROR == 1 &&
		       RIFT_LOG_WARN == 2 && RIFT_LOG_INFO == 3 &&
		       RIFT_LOG_DEBUG == 4,
	       "rift__log_names (util/log.c) follows rift_log_level");
_Static_assert(sizeof(rift_polling) == 4 && sizeof(rift_cm) == 4 &&
		       sizeof(rift_log_level) == 4,
	       "enum members are stored as 32-bit integers");

/* group.local: numeric addresses only (util/addr.c says what else is
 * refused, and why). */
static int local_check(const char *s, char *m, size_t len)
{
	return rift__local_parse(s, NULL, NULL, NULL, RIFT_URL_MAX_ADDRS, m,
				 len) < 0
		       ? -1
		       : 0;
}

#define M(f)                                                                  \
	.field = #f, .off = offsetof(rift_config, f),                         \
	.width = sizeof(((rift_config *)0)->f)
#define KiB (1ll << 10)
#define MiB (1ll << 20)
#define GiB (1ll << 30)
#define TiB (1ll << 40)

/* Ranges mirror cfg_check in ctx.c; a unit test holds them together. */
const struct key rift__cfg_keys[] = {
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
	{ "connect", "fallback_return_ms", NULL, M(fallback_return_ms), K_UINT,
	  0, 3600000, NULL,
	  "auto:// on TCP tries RDMA again after this long, doubling per try "
	  "that fails (up to 64 times); 0 = stays on TCP" },
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
	  4 * GiB - 1, NULL, "largest message accepted, bytes (a frame's "
	  "length has 32 bits)" },
	{ "session", "linger_ms", NULL, M(linger_ms), K_UINT, 0, 3600000, NULL,
	  "rift_conn_close delivers the queue for at most this long, then "
	  "aborts, ms" },
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
	{ "rdma", "inline_threshold", NULL, M(inline_threshold), K_SIZE, 0,
	  4 * KiB, NULL, "sends up to this size go inline, bytes" },
	{ "rdma", "cq_size", NULL, M(cq_size), K_UINT, 32, 4 * MiB, NULL,
	  "entries of each completion queue a context's paths share" },
	{ "rdma", "poll_batch", NULL, M(poll_batch), K_UINT, 1,
	  RIFT_POLL_BATCH_MAX, NULL,
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
	/* [log] */
	{ "log", "level", NULL, M(log_level), K_ENUM, RIFT_LOG_OFF,
	  RIFT_LOG_DEBUG, rift__log_names,
	  "lines logged: off, error, warn, info or debug",
	  .env = "RIFT_LOG" },
	/* [group] */
	{ "group", "max_paths", NULL, M(group_max_paths), K_UINT, 1,
	  RIFT_GROUP_MAX, NULL,
	  "paths a client connection keeps: the data path and warm standbys "
	  "through the URL's other addresses; 1 = one path" },
	{ "group", "failback_delay_ms", NULL, M(group_failback_delay_ms),
	  K_UINT, 0, 3600000, NULL,
	  "a client moves its session back to a standby through an earlier "
	  "URL address once that standby stayed up this long, ms; 0 = never" },
	{ "group", "policy", NULL, M(group_policy), K_ENUM, 0, 1, policy_names,
	  "what a client's joined paths do: active-backup (one carries the "
	  "data, the others take over) or active-active (all carry it)" },
	{ "group", "local", NULL, M(group_local), K_STRING, 0, 0, NULL,
	  "local addresses a client's paths leave from, by URL address, "
	  "\"\" = routing's choice",
	  .check = local_check },
};
#undef M

_Static_assert(RIFT_ARRAY_SIZE(rift__cfg_keys) == N_KEYS,
	       "N_KEYS (config_int.h) counts the rows of rift__cfg_keys");

const char *const rift__cfg_sections[] = { "progress", "connect", "session",
					   "tcp",      "rdma",    "pool",
					   "metrics",  "log",     "group" };
_Static_assert(RIFT_ARRAY_SIZE(rift__cfg_sections) == N_SECTIONS,
	       "N_SECTIONS (config_int.h) counts rift__cfg_sections");

/* ---- values in and out of members ---- */

bool rift__cfg_size_ok(const rift_config *cfg)
{
	return cfg && cfg->size >= offsetof(rift_config, busy_poll_us) &&
	       cfg->size <= sizeof(rift_config);
}

int rift__cfg_start(const rift_config *cfg, char *err, size_t errlen)
{
	rift__set_err(err, errlen, "%s", "");
	if (!rift__cfg_size_ok(cfg)) {
		rift__set_err(err, errlen,
			"config: size is not from rift_config_init");
		return RIFT_EINVAL;
	}
	return 0;
}

static bool is_signed(const struct key *k)
{
	return k->kind == K_INT || k->kind == K_BOOL || k->kind == K_ENUM;
}

size_t rift__cfg_elems(const struct key *k)
{
	return k->kind == K_SIZES ? RIFT_BLOCK_CLASSES : 1;
}

int64_t rift__cfg_get_int(const rift_config *c, const struct key *k, size_t i)
{
	size_t w = k->width / rift__cfg_elems(k);
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
	size_t w = k->width / rift__cfg_elems(k);
	char *p = (char *)c + k->off + i * w;

	if (w == 8) {
		uint64_t u = (uint64_t)v;

		memcpy(p, &u, 8);
	} else {
		uint32_t u = (uint32_t)v;

		memcpy(p, &u, 4);
	}
}

bool rift__cfg_same(const rift_config *a, const rift_config *b,
		    const struct key *k)
{
	if (k->kind == K_STRING)
		return strncmp((const char *)a + k->off,
			       (const char *)b + k->off, k->width) == 0;
	return memcmp((const char *)a + k->off, (const char *)b + k->off,
		      k->width) == 0;
}

/* A value as the dump and the messages write it. */
void rift__cfg_show(const struct key *k, int64_t v, char *buf, size_t len)
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

bool rift__cfg_close_to(const char *typed, const char *known)
{
	unsigned d = distance(typed, known);

	return d <= 2 && d * 3 <= strlen(known);
}

const char *rift__cfg_section_of(const char *name)
{
	for (size_t i = 0; i < N_SECTIONS; i++)
		if (!strcmp(rift__cfg_sections[i], name))
			return rift__cfg_sections[i];
	return NULL;
}

/* The row for section/name (or its alias); *alias says which matched. */
const struct key *rift__cfg_find_key(const char *section, const char *name,
				     bool *alias)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(rift__cfg_keys[i].section, section) != 0)
			continue;
		if (!strcmp(rift__cfg_keys[i].name, name)) {
			*alias = false;
			return &rift__cfg_keys[i];
		}
		if (rift__cfg_keys[i].alias &&
		    !strcmp(rift__cfg_keys[i].alias, name)) {
			*alias = true;
			return &rift__cfg_keys[i];
		}
	}
	return NULL;
}

/*
 * "; did you mean 'sq_depth'?" for a typo in the same section, or
 * "; it belongs in [rdma]" for a key of another section; "" otherwise.
 */
void rift__cfg_suggest(const char *section, const char *name, char *buf,
		       size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &rift__cfg_keys[i];

		if (section && !strcmp(k->section, section) &&
		    (rift__cfg_close_to(name, k->name) ||
		     (k->alias && rift__cfg_close_to(name, k->alias)))) {
			snprintf(buf, len, "; did you mean '%s'?",
				 rift__cfg_close_to(name, k->name) ? k->name
								   : k->alias);
			return;
		}
	}
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &rift__cfg_keys[i];

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

	rift__cfg_show(k, v, sv, sizeof(sv));
	rift__cfg_show(k, k->min, lo, sizeof(lo));
	rift__cfg_show(k, k->max, hi, sizeof(hi));
	if (idx >= 0)
		snprintf(ix, sizeof(ix), "[%ld]", idx);
	snprintf(m, len, "%s%s = %s is out of range %s..%s (%s)", as, ix, sv,
		 lo, hi, k->help);
}

void rift__cfg_choices(const struct key *k, char *buf, size_t len)
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

int rift__cfg_check_range(const struct key *k, const char *as,
			  const struct setting *st, long *at, char *m,
			  size_t len)
{
	if (k->kind == K_STRING) {
		char why[RIFT_ERRMSG_LEN];

		if (strlen(st->s) >= k->width) {
			snprintf(m, len,
				 "%s = \"%.80s\" is too long (at most %zu "
				 "bytes)",
				 as, st->s, k->width - 1);
			return -1;
		}
		if (k->check && k->check(st->s, why, sizeof(why))) {
			snprintf(m, len, "%s = \"%.80s\": %s", as, st->s, why);
			return -1;
		}
		return 0;
	}
	for (size_t i = 0; i < rift__cfg_elems(k); i++)
		if (st->v[i] < k->min || st->v[i] > k->max) {
			*at = k->kind == K_SIZES ? (long)i : -1;
			range_msg(k, as, *at, st->v[i], m, len);
			return -1;
		}
	return 0;
}

void rift__cfg_store(rift_config *c, const struct key *k,
		     const struct setting *st)
{
	if (k->kind == K_STRING) {
		char *dst = (char *)c + k->off;

		memset(dst, 0, k->width);
		memcpy(dst, st->s, strlen(st->s)); /* checked: < width */
		return;
	}
	for (size_t i = 0; i < rift__cfg_elems(k); i++)
		put_int(c, k, i, st->v[i]);
}

/* ---- cross-field rules ---- */

/*
 * Run rift_config_check on the result and rewrite its message in the
 * file's names ("config pool_initial (..) exceeds pool_max (..)" becomes
 * "pool.initial (..) exceeds pool.max (..)").  Returns 0, or -1 with the
 * message in m and *at the first key it names that got[] set (-1: none).
 */
int rift__cfg_cross_check(const rift_config *c, const struct origin *got,
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
			if (strlen(rift__cfg_keys[i].field) == w &&
			    !strncmp(rift__cfg_keys[i].field, s, w)) {
				k = &rift__cfg_keys[i];
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
