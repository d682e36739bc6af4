/*
 * rift-kv-cli - redis-cli for RESP over rift: send commands to rift-kv's
 * rift listener and print the replies as redis-cli does.
 *
 *   rift-kv-cli [-u URL] [--raw|--no-raw] [--info] [COMMAND [ARG ...]]
 *
 * With a command on the command line, sends it, prints its reply and
 * exits; without, reads commands from stdin, one a line, split as
 * redis-cli splits them (blanks, "..." with \n \xHH escapes, '...'),
 * skipping empty lines, each sent once the reply to the one before has
 * been printed.  docs/rift-kv.md says more.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "reply.h"

#define DEFAULT_URL "auto://127.0.0.1:6380"
#define CONNECT_MS 10000

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rift-kv-cli [-u URL] [--raw|--no-raw] [--info] "
		"[COMMAND [ARG ...]]\n"
		"  -u URL      rift-kv's rift listener: tcp://, rdma:// or\n"
		"              auto://HOST:PORT (" DEFAULT_URL "), or its\n"
		"              Valkey RDMA port: valkey-rdma://HOST:PORT\n"
		"  --raw       print replies raw (the default when stdout is "
		"not a terminal)\n"
		"  --no-raw    print them formatted (the default on a "
		"terminal)\n"
		"  --info      say which transport the connection is on, and "
		"why\n"
		"              (on stderr; said anyway when auto:// fell back "
		"to TCP)\n"
		"Without a command, reads commands from stdin, one a line.\n");
}

/* Send the command, wait for its reply, print it: 0, or -1 (the
 * connection is down, or the reply is no RESP: said on stderr). */
static int call(rift_ctx *ctx, struct kvc *k, size_t argc,
		const struct kv_resp_arg *argv, int raw)
{
	size_t len = 0;
	int r = 0;

	if (kvc_command(k, argc, argv)) {
		fprintf(stderr, "rift-kv-cli: out of memory\n");
		return -1;
	}
	if (kvc_flush(k))
		goto down;
	while ((r = kvc_reply(k, &len)) == 0 && k->state != KVC_DOWN)
		rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 1000);
	if (r < 0) {
		fprintf(stderr, "rift-kv-cli: the server's reply is no RESP\n");
		return -1;
	}
	if (r == 0)
		goto down;
	kv_reply_print(stdout, k->in, raw);
	fflush(stdout);
	kvc_take(k, len);
	return 0;
down:
	fprintf(stderr, "rift-kv-cli: %s\n", k->err);
	return -1;
}

/*
 * Commands from stdin.  A line is split by rift-kv's own parser as an
 * inline request (resp.h: sdssplitargs()'s rules), after a blank put
 * first so that a line starting with '*' is words too (the parser takes
 * '*' first for the multibulk form).
 */
static int from_stdin(rift_ctx *ctx, struct kvc *k, int raw,
		      const char *url)
{
	struct kv_resp_config pc = { .max_inline = (size_t)1 << 30 };
	kv_resp_parser *p = kv_resp_parser_new(&pc);
	int tty = isatty(0), rc = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!p) {
		fprintf(stderr, "rift-kv-cli: out of memory\n");
		return -1;
	}
	for (;;) {
		struct kv_resp_cmd cmd;
		size_t used;
		int r;

		if (tty) {
			printf("%s> ", url);
			fflush(stdout);
		}
		n = getline(&line, &cap, stdin);
		if (n < 0)
			break;
		if (n && line[n - 1] != '\n') {
			/* the last line, with no line end */
			char *l = realloc(line, (size_t)n + 2);

			if (!l)
				break;
			line = l;
			line[n++] = '\n';
		}
		r = kv_resp_parse(p, " ", 1, &used, &cmd);
		if (r == KV_RESP_MORE)
			r = kv_resp_parse(p, line, (size_t)n, &used, &cmd);
		if (r == KV_RESP_ERROR) {
			/* redis-cli's words for unbalanced quotes */
			fprintf(stderr, "Invalid argument(s)\n");
			kv_resp_parser_free(p);
			p = kv_resp_parser_new(&pc);
			if (p)
				continue;
			fprintf(stderr, "rift-kv-cli: out of memory\n");
			rc = -1;
			break;
		}
		if (r == KV_RESP_NOMEM) {
			fprintf(stderr, "rift-kv-cli: out of memory\n");
			rc = -1;
			break;
		}
		if (r == KV_RESP_MORE)
			continue; /* an empty line */
		if (call(ctx, k, cmd.argc, cmd.argv, raw)) {
			rc = -1;
			break;
		}
	}
	free(line);
	kv_resp_parser_free(p);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "raw", no_argument, NULL, 'r' },
		{ "no-raw", no_argument, NULL, 'R' },
		{ "info", no_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = DEFAULT_URL;
	int raw = !isatty(1), info = 0, opt, rc = 1;
	struct kvc k = { 0 };
	char how[128];
	rift_ctx *ctx;

	/* '+': options end at the command, whose arguments may start with
	 * '-' ("rift-kv-cli set k -1") */
	while ((opt = getopt_long(argc, argv, "+u:h", longs, NULL)) != -1) {
		switch (opt) {
		case 'u': url = optarg; break;
		case 'r': raw = 1; break;
		case 'R': raw = 0; break;
		case 'i': info = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (rift_ctx_create(&ctx, NULL)) {
		fprintf(stderr, "rift-kv-cli: %s\n", rift_ctx_last_error(NULL));
		return 1;
	}
	if (kvc_open(&k, ctx, url) || kvc_wait_up(ctx, &k, CONNECT_MS)) {
		fprintf(stderr, "rift-kv-cli: %s\n", k.err); /* names url */
		goto out;
	}
	kvc_transport(&k, how, sizeof(how));
	if (info || rift_conn_fallback_reason(k.conn) != RIFT_FALLBACK_NONE)
		fprintf(stderr, "rift-kv-cli: %s: connected over %s\n", url,
			how);
	if (optind < argc) {
		size_t n = (size_t)(argc - optind);
		struct kv_resp_arg *args = calloc(n, sizeof(*args));

		if (!args) {
			fprintf(stderr, "rift-kv-cli: out of memory\n");
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			args[i] = (struct kv_resp_arg){
				argv[optind + (int)i],
				strlen(argv[optind + (int)i]) };
		rc = call(ctx, &k, n, args, raw) ? 1 : 0;
		free(args);
	} else {
		rc = from_stdin(ctx, &k, raw, url) ? 1 : 0;
	}
out:
	kvc_close(&k);
	kvc_ctx_destroy(ctx);
	return rc;
}
