/*
 * cmd_server.c - rift-kv's connection and server commands: PING, ECHO,
 * SELECT, QUIT, DBSIZE, FLUSHALL/FLUSHDB, INFO (with its rdma section),
 * CONFIG GET, COMMAND, CLIENT; Redis 7.0's replies.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "glob.h"
#include "server.h"

#define ARGS struct kv_client *c, size_t argc, const struct kv_resp_arg *argv

int kv_text_reserve(struct kv_text *t, size_t n)
{
	size_t cap;
	char *p;

	if (t->failed)
		return -1;
	if (t->s && n < t->cap - t->len)
		return 0;
	if (n > SIZE_MAX / 4 - t->len) {
		t->failed = 1;
		return -1;
	}
	for (cap = t->cap ? t->cap : 1024; cap <= t->len + n;)
		cap *= 2;
	p = realloc(t->s, cap);
	if (!p) {
		t->failed = 1;
		return -1;
	}
	t->s = p;
	t->cap = cap;
	return 0;
}

void kv_tprintf(struct kv_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (size_t want = 0;; want = (size_t)n) {
		if (kv_text_reserve(t, want))
			return;
		va_start(ap, fmt);
		n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = 1;
			return;
		}
		if ((size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
	}
}

static void reply_text(struct kv_client *c, struct kv_text *t)
{
	if (t->failed)
		c->oom = 1;
	else
		kv_reply_bulk(c, t->s, t->len);
	free(t->s);
}

static void cmd_ping(ARGS)
{
	if (argc > 2)
		kv_reply_arity(c, "ping");
	else if (argc == 2)
		kv_reply_bulk(c, argv[1].ptr, argv[1].len);
	else
		kv_reply_simple(c, "PONG");
}

static void cmd_echo(ARGS)
{
	(void)argc;
	kv_reply_bulk(c, argv[1].ptr, argv[1].len);
}

static void cmd_select(ARGS)
{
	long long id;

	(void)argc;
	if (!kv_arg_ll(&argv[1], &id) || id < -2147483648LL ||
	    id > 2147483647LL)
		kv_reply_not_int(c);
	else if (id != 0)
		kv_reply_error(c, "ERR DB index is out of range");
	else
		kv_reply_ok(c);
}

static void cmd_quit(ARGS)
{
	(void)argc;
	(void)argv;
	kv_reply_ok(c);
	c->flags |= KV_CLOSE_AFTER_REPLY;
}

static void cmd_dbsize(ARGS)
{
	struct kv_store_info si;

	(void)argc;
	(void)argv;
	kv_store_info(c->srv->store, &si);
	kv_reply_int(c, (long long)si.keys);
}

static void cmd_flush(ARGS)
{
	/* ASYNC is accepted as Redis does; the store frees at once (the
	 * reply and what a client sees after it are the same). */
	if (argc > 2 || (argc == 2 && !kv_arg_is(&argv[1], "async") &&
			 !kv_arg_is(&argv[1], "sync"))) {
		kv_reply_syntax(c);
		return;
	}
	kv_store_flush(c->srv->store);
	kv_reply_ok(c);
}

/* ---- INFO ---- */

static void human(char *buf, size_t n, double v)
{
	const char *u = "BKMGT";

	while (v >= 1024 && u[1]) {
		v /= 1024;
		u++;
	}
	if (*u == 'B')
		snprintf(buf, n, "%.0fB", v);
	else
		snprintf(buf, n, "%.2f%c", v, *u);
}

static size_t clients_mem(struct kv_server *s)
{
	size_t m = 0;

	for (struct kv_client *c = s->clients; c; c = c->next)
		m += sizeof(*c) + c->icap + c->out.cap +
		     kv_resp_parser_footprint(c->parser);
	return m;
}

static void info_server(struct kv_server *s, struct kv_text *t)
{
	int64_t up = (s->now_ms - s->start_ms) / 1000;

	kv_tprintf(t,
		"# Server\r\n"
		"redis_version:7.0.0\r\n"
		"rift_kv_version:0.1.0\r\n"
		"rift_version:%s\r\n"
		"redis_mode:standalone\r\n"
		"arch_bits:%d\r\n"
		"multiplexing_api:epoll\r\n"
		"process_id:%ld\r\n"
		"tcp_port:%d\r\n"
		"uptime_in_seconds:%lld\r\n"
		"uptime_in_days:%lld\r\n"
		"hz:%d\r\n"
		"config_file:%s\r\n",
		rift_version_string(), (int)(sizeof(void *) * 8),
		(long)getpid(), s->cfg.port, (long long)up,
		(long long)(up / 86400), KV_HZ, s->cfg.config_file);
}

static void info_clients(struct kv_server *s, struct kv_text *t)
{
	kv_tprintf(t,
		"# Clients\r\n"
		"connected_clients:%zu\r\n"
		"rift_clients:%zu\r\n"
		"blocked_clients:%zu\r\n",
		s->nclients, s->rift_clients, s->repl.blocked);
}

static void info_memory(struct kv_server *s, struct kv_text *t)
{
	struct kv_store_info si;
	size_t used;
	char h[32];

	kv_store_info(s->store, &si);
	used = si.mem + clients_mem(s);
	human(h, sizeof(h), (double)used);
	kv_tprintf(t,
		"# Memory\r\n"
		"used_memory:%zu\r\n"
		"used_memory_human:%s\r\n"
		"used_memory_dataset:%zu\r\n"
		"used_memory_clients:%zu\r\n"
		"maxmemory:0\r\n"
		"mem_allocator:libc\r\n",
		used, h, si.mem, used - si.mem);
}

static void info_stats(struct kv_server *s, struct kv_text *t)
{
	struct kv_store_info si;

	kv_store_info(s->store, &si);
	kv_tprintf(t,
		"# Stats\r\n"
		"total_connections_received:%llu\r\n"
		"total_commands_processed:%llu\r\n"
		"total_net_input_bytes:%llu\r\n"
		"total_net_output_bytes:%llu\r\n"
		"rejected_connections:%llu\r\n"
		"expired_keys:%llu\r\n"
		"keyspace_hits:%llu\r\n"
		"keyspace_misses:%llu\r\n"
		"hash_table_buckets:%zu\r\n"
		"hash_table_rehashing:%d\r\n",
		(unsigned long long)s->conns_received,
		(unsigned long long)s->cmds,
		(unsigned long long)s->net_in, (unsigned long long)s->net_out,
		(unsigned long long)s->conns_rejected,
		(unsigned long long)si.expired, (unsigned long long)s->hits,
		(unsigned long long)s->misses, si.buckets, si.rehashing);
}

static void info_keyspace(struct kv_server *s, struct kv_text *t)
{
	struct kv_store_info si;

	kv_store_info(s->store, &si);
	kv_tprintf(t, "# Keyspace\r\n");
	if (si.keys)
		kv_tprintf(t, "db0:keys=%zu,expires=%zu,avg_ttl=0\r\n", si.keys,
			si.volatile_keys);
}

/* The fields and their sources: docs/rift-kv.md, "INFO". */
static void info_rdma(struct kv_server *s, struct kv_text *t)
{
	struct kv_field f[KV_RDMA_FIELDS];

	kv_rdma_fields(s, f);
	kv_tprintf(t,
		"# rdma\r\n"
		"rdma_enabled:%d\r\n"
		"rdma_listener:%s\r\n",
		s->rl != NULL, s->rift_url);
	for (size_t i = 0; i < KV_RDMA_FIELDS; i++)
		kv_tprintf(t, "%s:%llu\r\n", f[i].name,
			(unsigned long long)f[i].v);
}

static const struct {
	const char *name;
	void (*fn)(struct kv_server *s, struct kv_text *t);
} sections[] = {
	{ "server", info_server },     { "clients", info_clients },
	{ "memory", info_memory },     { "stats", info_stats },
	{ "replication", kv_repl_info }, { "keyspace", info_keyspace },
	{ "rdma", info_rdma },
};
#define NSECTIONS (sizeof(sections) / sizeof(*sections))

static void cmd_info(ARGS)
{
	int want[NSECTIONS] = { 0 };
	struct kv_text t = { 0 };
	int first = 1;

	if (argc == 1)
		for (size_t i = 0; i < NSECTIONS; i++)
			want[i] = 1;
	for (size_t a = 1; a < argc; a++) {
		for (size_t i = 0; i < NSECTIONS; i++)
			if (kv_arg_is(&argv[a], sections[i].name) ||
			    kv_arg_is(&argv[a], "all") ||
			    kv_arg_is(&argv[a], "default") ||
			    kv_arg_is(&argv[a], "everything"))
				want[i] = 1;
	}
	kv_tprintf(&t, "%s", "");
	for (size_t i = 0; i < NSECTIONS; i++) {
		if (!want[i])
			continue;
		if (!first)
			kv_tprintf(&t, "\r\n");
		first = 0;
		sections[i].fn(c->srv, &t);
	}
	reply_text(c, &t);
}

/* ---- CONFIG ---- */

static void cmd_config_get(ARGS)
{
	struct kv_server *s = c->srv;
	const struct kv_config *k = &s->cfg;
	char port[16], rport[16], gid[16], qd[16], bulk[24], query[24];
	char backlog[24], ring[24];
	const char *params[][2] = {
		{ "port", port },
		{ "bind", k->bind },
		{ "databases", "1" },
		{ "save", "" },
		{ "appendonly", "no" },
		{ "maxmemory", "0" },
		{ "timeout", "0" },
		{ "hz", "10" },
		{ "proto-max-bulk-len", bulk },
		{ "client-query-buffer-limit", query },
		{ "rdma-enabled", s->rl ? "yes" : "no" },
		{ "rdma-port", rport },
		{ "rdma-bind", k->rdma_bind },
		{ "rdma-device", k->rdma_device },
		{ "rdma-gid-index", gid },
		{ "rdma-queue-depth", qd },
		{ "rdma-fallback", k->rdma_fallback_tcp ? "tcp" : "none" },
		{ "rift-url", s->rift_url },
		{ "replicaof", s->repl.replica ? s->repl.primary : "" },
		{ "replica-read-only", "yes" },
		{ "repl-backlog-size", backlog },
		{ "use-rdma-write", k->use_rdma_write ? "yes" : "no" },
		{ "ring-size", ring },
		{ "replica-file", k->replica_file },
	};
	const size_t np = sizeof(params) / sizeof(*params);
	int hit[sizeof(params) / sizeof(*params)] = { 0 };
	size_t n = 0;

	snprintf(port, sizeof(port), "%d", k->port);
	snprintf(rport, sizeof(rport), "%d", k->rdma_port);
	snprintf(gid, sizeof(gid), "%d", k->rdma_gid_index);
	snprintf(qd, sizeof(qd), "%d", k->rdma_queue_depth);
	snprintf(bulk, sizeof(bulk), "%zu", k->proto_max_bulk_len);
	snprintf(query, sizeof(query), "%zu", k->client_query_buffer_limit);
	snprintf(backlog, sizeof(backlog), "%zu", k->backlog_size);
	snprintf(ring, sizeof(ring), "%zu", k->ring_size);
	for (size_t a = 2; a < argc; a++)
		for (size_t i = 0; i < np; i++)
			if (!hit[i] &&
			    kv_glob_match(argv[a].ptr, argv[a].len,
					  params[i][0], strlen(params[i][0]),
					  1)) {
				hit[i] = 1;
				n++;
			}
	kv_reply_array(c, n * 2);
	for (size_t i = 0; i < np; i++) {
		if (!hit[i])
			continue;
		kv_reply_bulk_str(c, params[i][0]);
		kv_reply_bulk_str(c, params[i][1]);
	}
}

static void cmd_config_set(ARGS)
{
	(void)argc;
	(void)argv;
	kv_reply_error(c,
		       "ERR CONFIG SET is not supported by rift-kv yet: "
		       "restart it with the option or config file key");
}

static void reply_help(struct kv_client *c, const char *const *lines)
{
	size_t n = 0;

	while (lines[n])
		n++;
	kv_reply_array(c, n);
	for (size_t i = 0; i < n; i++)
		kv_reply_simple(c, lines[i]);
}

static void cmd_config_help(ARGS)
{
	static const char *const lines[] = {
		"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands "
		"are:",
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and "
		"their values.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	(void)argc;
	(void)argv;
	reply_help(c, lines);
}

/* ---- COMMAND ---- */

/* An array of the blank-separated words of s, as simple strings. */
static void reply_words(struct kv_client *c, const char *s)
{
	char buf[128], *save = NULL, *w;
	size_t n = 0;

	snprintf(buf, sizeof(buf), "%s", s ? s : "");
	for (const char *p = buf; *p;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		n++;
		while (*p && *p != ' ')
			p++;
	}
	kv_reply_array(c, n);
	for (w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
		kv_reply_simple(c, w);
}

static size_t nsubs(const struct kv_cmd *k)
{
	size_t n = 0;

	for (const struct kv_cmd *s = k->subs; s && s->name; s++)
		n++;
	return n;
}

/* COMMAND INFO's entry, Redis 7.0's ten fields (RESP2). */
static void reply_cmd_info(struct kv_client *c, const struct kv_cmd *k)
{
	kv_reply_array(c, 10);
	kv_reply_bulk_str(c, k->name);
	kv_reply_int(c, k->arity);
	reply_words(c, k->flags);
	kv_reply_int(c, k->first_key);
	kv_reply_int(c, k->last_key);
	kv_reply_int(c, k->step);
	reply_words(c, k->acl);
	kv_reply_array(c, 0); /* tips */
	kv_reply_array(c, 0); /* key specs */
	kv_reply_array(c, nsubs(k));
	for (const struct kv_cmd *s = k->subs; s && s->name; s++)
		reply_cmd_info(c, s);
}

/* COMMAND DOCS's map of one command, as redis-cli reads it. */
static void reply_cmd_docs(struct kv_client *c, const struct kv_cmd *k)
{
	size_t subs = nsubs(k);

	kv_reply_array(c, subs ? 8 : 6);
	kv_reply_bulk_str(c, "summary");
	kv_reply_bulk_str(c, k->summary);
	kv_reply_bulk_str(c, "since");
	kv_reply_bulk_str(c, k->since);
	kv_reply_bulk_str(c, "group");
	kv_reply_bulk_str(c, k->group);
	if (!subs)
		return;
	kv_reply_bulk_str(c, "subcommands");
	kv_reply_array(c, subs * 2);
	for (const struct kv_cmd *s = k->subs; s->name; s++) {
		kv_reply_bulk_str(c, s->name);
		reply_cmd_docs(c, s);
	}
}

static void cmd_command(ARGS)
{
	(void)argc;
	(void)argv;
	kv_reply_array(c, kv_cmd_count());
	for (size_t i = 0; i < kv_cmd_count(); i++)
		reply_cmd_info(c, kv_cmd_at(i));
}

static void cmd_command_count(ARGS)
{
	(void)argc;
	(void)argv;
	kv_reply_int(c, (long long)kv_cmd_count());
}

static void cmd_command_info(ARGS)
{
	if (argc == 2) {
		cmd_command(c, argc, argv);
		return;
	}
	kv_reply_array(c, argc - 2);
	for (size_t i = 2; i < argc; i++) {
		const struct kv_cmd *k =
			kv_cmd_lookup(argv[i].ptr, argv[i].len);

		if (k)
			reply_cmd_info(c, k);
		else
			kv_reply_null(c);
	}
}

/* COMMAND DOCS [name ...]: name, docs, ...; names it does not know are
 * left out, as Redis does. */
static void cmd_command_docs(ARGS)
{
	size_t n = 0;

	if (argc == 2) {
		kv_reply_array(c, kv_cmd_count() * 2);
		for (size_t i = 0; i < kv_cmd_count(); i++) {
			kv_reply_bulk_str(c, kv_cmd_at(i)->name);
			reply_cmd_docs(c, kv_cmd_at(i));
		}
		return;
	}
	for (size_t i = 2; i < argc; i++)
		n += kv_cmd_lookup(argv[i].ptr, argv[i].len) != NULL;
	kv_reply_array(c, n * 2);
	for (size_t i = 2; i < argc; i++) {
		const struct kv_cmd *k =
			kv_cmd_lookup(argv[i].ptr, argv[i].len);

		if (!k)
			continue;
		kv_reply_bulk_str(c, k->name);
		reply_cmd_docs(c, k);
	}
}

static void cmd_command_help(ARGS)
{
	static const char *const lines[] = {
		"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands "
		"are:",
		"(no subcommand)",
		"    Return details about all commands.",
		"COUNT",
		"    Return the total number of commands in this server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple commands.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple commands.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	(void)argc;
	(void)argv;
	reply_help(c, lines);
}

/* ---- CLIENT ---- */

static void cmd_client_id(ARGS)
{
	(void)argc;
	(void)argv;
	kv_reply_int(c, (long long)c->id);
}

static void cmd_client_setname(ARGS)
{
	char *name = NULL;

	(void)argc;
	for (size_t i = 0; i < argv[2].len; i++) {
		if (argv[2].ptr[i] < '!' || argv[2].ptr[i] > '~') {
			kv_reply_error(c,
				       "ERR Client names cannot contain "
				       "spaces, newlines or special "
				       "characters.");
			return;
		}
	}
	if (argv[2].len) {
		name = strndup(argv[2].ptr, argv[2].len);
		if (!name) {
			c->oom = 1;
			return;
		}
	}
	free(c->name);
	c->name = name;
	kv_reply_ok(c);
}

static void cmd_client_getname(ARGS)
{
	(void)argc;
	(void)argv;
	if (c->name)
		kv_reply_bulk_str(c, c->name);
	else
		kv_reply_null(c);
}

static void client_line(struct kv_text *t, const struct kv_client *x,
			int64_t now)
{
	size_t pend = kv_client_pending(x);

	kv_tprintf(t,
		"id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld "
		"flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=%zu "
		"qbuf-free=%zu argv-mem=0 multi-mem=0 obl=%zu oll=0 "
		"omem=%zu tot-mem=%zu events=%s cmd=%s user=default "
		"redir=-1 resp=2 transport=%s\n",
		(unsigned long long)x->id, x->addr, x->laddr, x->fd,
		x->name ? x->name : "", (long long)(now - x->ctime_ms) / 1000,
		(long long)(now - x->atime_ms) / 1000, x->ilen - x->ipos,
		x->icap - (x->ilen - x->ipos), pend, x->out.cap,
		sizeof(*x) + x->icap + x->out.cap +
			kv_resp_parser_footprint(x->parser),
		x->flags & KV_PAUSED ? (pend ? "w" : "") : (pend ? "rw" : "r"),
		x->last_cmd ? x->last_cmd : "NULL",
		x->stream  ? "valkey-rdma"
		: !x->conn ? "tcp"
		: rift_conn_transport(x->conn) == RIFT_TRANSPORT_RDMA
			? "rift-rdma"
			: "rift-tcp");
}

static void cmd_client_list(ARGS)
{
	struct kv_text t = { 0 };

	(void)argv;
	if (argc > 2) {
		kv_reply_syntax(c);
		return;
	}
	kv_tprintf(&t, "%s", "");
	for (struct kv_client *x = c->srv->clients; x; x = x->next)
		client_line(&t, x, c->srv->now_ms);
	reply_text(c, &t);
}

static void cmd_client_info(ARGS)
{
	struct kv_text t = { 0 };

	(void)argc;
	(void)argv;
	kv_tprintf(&t, "%s", "");
	client_line(&t, c, c->srv->now_ms);
	reply_text(c, &t);
}

static void cmd_client_help(ARGS)
{
	static const char *const lines[] = {
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands "
		"are:",
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"LIST",
		"    Return information about client connections.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	(void)argc;
	(void)argv;
	reply_help(c, lines);
}

#define SUB(cont, name, arity, fn, flags, acl, summary)                       \
	{ cont "|" name, arity, fn,  flags, 0,    0,                           \
	  0,             acl,   "server", "7.0.0", summary, NULL }
#define END { NULL, 0, NULL, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, NULL }

static const struct kv_cmd config_subs[] = {
	SUB("config", "get", -3, cmd_config_get, "admin noscript loading stale",
	    "@admin @slow @dangerous", "Get the values of configuration "
	    "parameters"),
	SUB("config", "set", -4, cmd_config_set, "admin noscript loading stale",
	    "@admin @slow @dangerous", "Set configuration parameters "
	    "(refused: not supported yet)"),
	SUB("config", "help", 2, cmd_config_help, "loading stale", "@slow",
	    "Show helpful text about the different subcommands"),
	END,
};

static const struct kv_cmd command_subs[] = {
	SUB("command", "count", 2, cmd_command_count, "loading stale",
	    "@slow @connection", "Get total number of Redis commands"),
	SUB("command", "info", -2, cmd_command_info, "loading stale",
	    "@slow @connection", "Get array of specific Redis command "
	    "details, or all when no argument is given"),
	SUB("command", "docs", -2, cmd_command_docs, "loading stale",
	    "@slow @connection", "Get array of specific Redis command "
	    "documentation"),
	SUB("command", "help", 2, cmd_command_help, "loading stale",
	    "@slow @connection", "Show helpful text about the different "
	    "subcommands"),
	END,
};

static const struct kv_cmd client_subs[] = {
	SUB("client", "id", 2, cmd_client_id, "noscript loading stale",
	    "@slow @connection", "Returns the client ID for the current "
	    "connection"),
	SUB("client", "setname", 3, cmd_client_setname,
	    "noscript loading stale", "@slow @connection",
	    "Set the current connection name"),
	SUB("client", "getname", 2, cmd_client_getname,
	    "noscript loading stale", "@slow @connection",
	    "Get the current connection name"),
	SUB("client", "list", -2, cmd_client_list,
	    "admin noscript loading stale", "@admin @slow @dangerous "
	    "@connection", "Get the list of client connections"),
	SUB("client", "info", 2, cmd_client_info, "noscript loading stale",
	    "@slow @connection", "Returns information about the current "
	    "client connection."),
	SUB("client", "help", 2, cmd_client_help, "loading stale",
	    "@slow @connection", "Show helpful text about the different "
	    "subcommands"),
	END,
};

#define CONN "noscript loading stale fast"
const struct kv_cmd kv_server_cmds[] = {
	{ "ping", -1, cmd_ping, CONN, 0, 0, 0, "@fast @connection",
	  "connection", "1.0.0", "Ping the server", NULL },
	{ "echo", 2, cmd_echo, CONN, 0, 0, 0, "@fast @connection",
	  "connection", "1.0.0", "Echo the given string", NULL },
	{ "select", 2, cmd_select, CONN, 0, 0, 0, "@fast @connection",
	  "connection", "1.0.0",
	  "Change the selected database for the current connection "
	  "(rift-kv has database 0 only)",
	  NULL },
	{ "quit", -1, cmd_quit, "allow_busy noscript loading stale fast "
	  "no_auth", 0, 0, 0, "@fast @connection", "connection", "1.0.0",
	  "Close the connection", NULL },
	{ "dbsize", 1, cmd_dbsize, "readonly fast", 0, 0, 0,
	  "@keyspace @read @fast", "server", "1.0.0",
	  "Return the number of keys in the selected database", NULL },
	{ "flushall", -1, cmd_flush, "write", 0, 0, 0,
	  "@keyspace @write @slow @dangerous", "server", "1.0.0",
	  "Remove all keys from all databases", NULL },
	{ "flushdb", -1, cmd_flush, "write", 0, 0, 0,
	  "@keyspace @write @slow @dangerous", "server", "1.0.0",
	  "Remove all keys from the current database", NULL },
	{ "info", -1, cmd_info, "loading stale", 0, 0, 0, "@slow @dangerous",
	  "server", "1.0.0",
	  "Get information and statistics about the server", NULL },
	{ "config", -2, NULL, "", 0, 0, 0, "@slow", "server", "2.0.0",
	  "A container for server configuration commands", config_subs },
	{ "command", -1, cmd_command, "loading stale", 0, 0, 0,
	  "@slow @connection", "server", "2.8.13",
	  "Get array of Redis command details", command_subs },
	{ "client", -2, NULL, "", 0, 0, 0, "@slow", "connection", "2.4.0",
	  "A container for client connection commands", client_subs },
	END,
};
