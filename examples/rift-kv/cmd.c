/*
 * cmd.c - rift-kv's command dispatch: the table, Redis's errors for an
 * unknown command, a wrong number of arguments or an unknown subcommand,
 * and the reply helpers every command uses.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server.h"

/* ---- replies ---- */

static void check(struct kv_client *c, int rc)
{
	if (rc)
		c->oom = 1;
}

void kv_reply_simple(struct kv_client *c, const char *s)
{
	check(c, kv_resp_add_simple(&c->out, s));
}

void kv_reply_ok(struct kv_client *c)
{
	kv_reply_simple(c, "OK");
}

void kv_reply_error(struct kv_client *c, const char *text)
{
	char buf[600], *sp;

	snprintf(buf, sizeof(buf), "%s", text);
	for (char *p = buf; *p; p++)
		if (*p == '\r' || *p == '\n')
			*p = ' ';
	sp = strchr(buf, ' ');
	if (sp)
		*sp++ = '\0';
	check(c, kv_resp_add_error(&c->out, buf, sp));
}

void kv_reply_errorf(struct kv_client *c, const char *fmt, ...)
{
	char buf[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kv_reply_error(c, buf);
}

void kv_reply_int(struct kv_client *c, long long v)
{
	check(c, kv_resp_add_int(&c->out, v));
}

void kv_reply_bulk(struct kv_client *c, const void *p, size_t n)
{
	check(c, kv_resp_add_bulk(&c->out, p, n));
}

void kv_reply_bulk_str(struct kv_client *c, const char *s)
{
	kv_reply_bulk(c, s, strlen(s));
}

void kv_reply_null(struct kv_client *c)
{
	check(c, kv_resp_add_null_bulk(&c->out));
}

void kv_reply_array(struct kv_client *c, size_t n)
{
	check(c, kv_resp_add_array(&c->out, n));
}

void kv_reply_syntax(struct kv_client *c)
{
	kv_reply_error(c, "ERR syntax error");
}

void kv_reply_not_int(struct kv_client *c)
{
	kv_reply_error(c, "ERR value is not an integer or out of range");
}

void kv_reply_arity(struct kv_client *c, const char *fullname)
{
	kv_reply_errorf(c, "ERR wrong number of arguments for '%s' command",
			fullname);
}

int kv_arg_is(const struct kv_resp_arg *a, const char *b)
{
	size_t n = strlen(b);

	return a->len == n && strncasecmp(a->ptr, b, n) == 0;
}

int kv_arg_ll(const struct kv_resp_arg *a, long long *out)
{
	return kv_str2ll(a->ptr, a->len, out);
}

/* ---- the table ---- */

static const struct kv_cmd **table; /* sorted by name */
static size_t ntable;
/* Calls of each command (/metrics): table[i]'s at i, then every
 * subcommand, table[i]'s from first_sub[i] on. */
static uint64_t *calls;
static size_t *first_sub;
static size_t ncalls;

static int by_name(const void *a, const void *b)
{
	return strcmp((*(const struct kv_cmd *const *)a)->name,
		      (*(const struct kv_cmd *const *)b)->name);
}

int kv_cmd_init(void)
{
	const struct kv_cmd *lists[] = { kv_string_cmds, kv_server_cmds,
					 kv_repl_cmds };
	size_t n = 0;

	for (size_t l = 0; l < 3; l++)
		for (const struct kv_cmd *k = lists[l]; k->name; k++)
			n++;
	table = malloc(n * sizeof(*table));
	if (!table)
		return -ENOMEM;
	for (size_t l = 0; l < 3; l++)
		for (const struct kv_cmd *k = lists[l]; k->name; k++)
			table[ntable++] = k;
	qsort(table, ntable, sizeof(*table), by_name);
	first_sub = malloc(ntable * sizeof(*first_sub));
	if (!first_sub)
		goto fail;
	ncalls = ntable;
	for (size_t i = 0; i < ntable; i++) {
		first_sub[i] = ncalls;
		for (const struct kv_cmd *k = table[i]->subs; k && k->name; k++)
			ncalls++;
	}
	calls = calloc(ncalls, sizeof(*calls));
	if (!calls)
		goto fail;
	return 0;
fail:
	kv_cmd_fini();
	return -ENOMEM;
}

void kv_cmd_fini(void)
{
	free(table);
	free(first_sub);
	free(calls);
	table = NULL;
	first_sub = NULL;
	calls = NULL;
	ntable = ncalls = 0;
}

size_t kv_cmd_calls(size_t i, const struct kv_cmd **cmd, uint64_t *n)
{
	size_t t;

	if (i >= ncalls)
		return ncalls;
	*n = calls[i];
	if (i < ntable) {
		*cmd = table[i];
		return ncalls;
	}
	for (t = ntable; t-- > 0;)
		if (first_sub[t] <= i && table[t]->subs)
			break;
	*cmd = &table[t]->subs[i - first_sub[t]];
	return ncalls;
}

size_t kv_cmd_count(void)
{
	return ntable;
}

const struct kv_cmd *kv_cmd_at(size_t i)
{
	return i < ntable ? table[i] : NULL;
}

/* Lower-case name into buf (sized n + 1); 0 if it is too long for any
 * command. */
static int lower(char *buf, size_t cap, const char *name, size_t n)
{
	if (n >= cap)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];

		buf[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
	}
	buf[n] = '\0';
	return 1;
}

/* The index in table of the command named n bytes at name, or ntable. */
static size_t lookup(const char *name, size_t n)
{
	char buf[32];
	size_t lo = 0, hi = ntable;

	if (!lower(buf, sizeof(buf), name, n) || memchr(name, '\0', n))
		return ntable;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int d = strcmp(buf, table[mid]->name);

		if (d == 0)
			return mid;
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return ntable;
}

const struct kv_cmd *kv_cmd_lookup(const char *name, size_t n)
{
	size_t i = lookup(name, n);

	return i < ntable ? table[i] : NULL;
}

static const struct kv_cmd *sub_lookup(const struct kv_cmd *k,
				       const struct kv_resp_arg *a)
{
	char buf[64];
	size_t base = strlen(k->name) + 1;

	if (!lower(buf, sizeof(buf) - base, a->ptr, a->len) ||
	    memchr(a->ptr, '\0', a->len))
		return NULL;
	for (const struct kv_cmd *s = k->subs; s->name; s++)
		if (strcmp(s->name + base, buf) == 0)
			return s;
	return NULL;
}

static int arity_ok(const struct kv_cmd *k, size_t argc)
{
	return k->arity > 0 ? argc == (size_t)k->arity
			    : argc >= (size_t)-k->arity;
}

/* Redis's text (rejectCommandFormat): the name and the first arguments,
 * each cut to what is left of 128 bytes. */
static void reply_unknown(struct kv_client *c, size_t argc,
			  const struct kv_resp_arg *argv)
{
	char args[600];
	size_t len = 0;

	args[0] = '\0';
	for (size_t i = 1; i < argc && len < 128; i++) {
		int room = (int)(128 - len);
		size_t n = argv[i].len < (size_t)room ? argv[i].len
						      : (size_t)room;
		const char *nul = memchr(argv[i].ptr, '\0', n);

		if (nul) /* Redis prints C strings */
			n = (size_t)(nul - argv[i].ptr);
		len += (size_t)snprintf(args + len, sizeof(args) - len,
					"'%.*s' ", (int)n, argv[i].ptr);
	}
	kv_reply_errorf(c,
			"ERR unknown command '%.*s', with args beginning "
			"with: %s",
			(int)(argv[0].len < 128 ? argv[0].len : 128),
			argv[0].ptr, args);
}

void kv_cmd_exec(struct kv_client *c, const struct kv_resp_cmd *cmd)
{
	const struct kv_resp_arg *argv = cmd->argv;
	size_t argc = cmd->argc, mark = c->out.len;
	size_t i = lookup(argv[0].ptr, argv[0].len);
	const struct kv_cmd *k = i < ntable ? table[i] : NULL;
	uint64_t *ran = NULL; /* the calls of what ran */

	c->oom = 0;
	c->srv->cmds++;
	if (!k) {
		reply_unknown(c, argc, argv);
		c->last_cmd = "unknown";
	} else if (k->subs && argc >= 2) {
		const struct kv_cmd *sub = sub_lookup(k, &argv[1]);
		char upper[32];
		size_t u;

		for (u = 0; k->name[u] && u + 1 < sizeof(upper); u++)
			upper[u] = (char)(k->name[u] - 32);
		upper[u] = '\0';
		if (!sub) {
			kv_reply_errorf(c,
					"ERR unknown subcommand '%.*s'. Try "
					"%s HELP.",
					(int)(argv[1].len < 128 ? argv[1].len
								: 128),
					argv[1].ptr, upper);
		} else if (!arity_ok(sub, argc)) {
			kv_reply_arity(c, sub->name);
		} else {
			c->last_cmd = sub->name;
			ran = &calls[first_sub[i] + (size_t)(sub - k->subs)];
			sub->fn(c, argc, argv);
		}
	} else if (!arity_ok(k, argc)) {
		kv_reply_arity(c, k->name);
	} else if (kv_repl_readonly(c, k)) {
		kv_reply_error(c, "READONLY You can't write against a read only "
				  "replica.");
	} else {
		uint64_t changes = kv_store_changes(c->srv->store);

		c->last_cmd = k->name;
		ran = &calls[i];
		k->fn(c, argc, argv);
		/* what it changed goes to the log (a failed one changed
		 * nothing); a reply half written is taken back below, the
		 * change stays */
		if (kv_store_changes(c->srv->store) != changes)
			kv_repl_propagate(c, k, argc, argv);
	}
	if (ran)
		(*ran)++;
	else
		c->srv->cmds_rejected++;
	if (c->oom) {
		/* The reply is half written: take it back and say why,
		 * or give up on the client if even that fails. */
		c->out.len = mark;
		c->oom = 0;
		kv_reply_error(c, "ERR out of memory");
		if (c->oom)
			c->flags |= KV_CLOSE_ASAP;
	}
}
