/*
 * libFuzzer target for rift-kv's RESP request parser
 * (examples/rift-kv/resp.c): what a client sends rift-kv, over TCP or in
 * rift messages.
 *
 * Input: byte 0 picks the limits (two bits each, 0 the default: max_args
 * 3/8/64, max_bulk 4/16/1000, max_inline 8/32/200, max_command
 * 16/64/300), byte 1 the size of the pieces the rest is fed in (1 + byte
 * % 64); the rest is the byte stream.
 *
 * Properties beyond "no crash", from resp.h's contract:
 *  - the result does not depend on how the bytes were cut: the commands
 *    and the final status and error are those of the stream fed at once;
 *  - after MORE every byte was taken, after CMD some; a failed parser
 *    says the same again, taking nothing;
 *  - a command has 1..max_args arguments, each at most max_bulk bytes
 *    (multibulk) or max_inline (inline), and framed again as a
 *    multibulk request it is at most max_command bytes (the inline line
 *    at most max_inline, and max_command);
 *  - memory follows the bytes that came: the parser never holds more
 *    than a constant plus a small multiple of the bytes fed, whatever
 *    lengths they claim;
 *  - an error is one of resp.h's messages; a command framed again
 *    (kv_resp_add_array and _bulk) and parsed by a parser with the
 *    default limits is the same command.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../examples/rift-kv/resp.h"
#include "fuzz.h"

/* The commands and final state of one run, flattened to compare runs. */
struct trace {
	char *s;
	size_t len, cap;
};

static void put(struct trace *t, const void *p, size_t n)
{
	if (t->len + n > t->cap) {
		size_t cap = t->cap ? t->cap : 256;

		while (cap < t->len + n)
			cap *= 2;
		t->s = realloc(t->s, cap);
		FZ_CHECK(t->s != NULL);
		t->cap = cap;
	}
	memcpy(t->s + t->len, p, n);
	t->len += n;
}

static void put_size(struct trace *t, size_t v)
{
	put(t, &v, sizeof(v));
}

static const char *const messages[] = {
	"Protocol error: invalid multibulk length",
	"Protocol error: invalid bulk length",
	"Protocol error: expected '$', got '",
	"Protocol error: too big inline request",
	"Protocol error: unbalanced quotes in request",
	"Protocol error: expected CRLF after bulk data",
	"Protocol error: too many arguments in inline request",
	"Protocol error: too big command: more than ",
	"out of memory",
};

static void check_error(const char *err)
{
	for (size_t i = 0; i < sizeof(messages) / sizeof(*messages); i++)
		if (!strncmp(err, messages[i], strlen(messages[i])))
			return;
	FZ_CHECK(!"an error resp.h does not list");
}

/* The command framed again as a multibulk request parses to itself. */
static void round_trip(const struct kv_resp_cmd *cmd)
{
	struct kv_resp_out o = { 0 };
	kv_resp_parser *p = kv_resp_parser_new(NULL);
	struct kv_resp_cmd again;
	size_t used;

	FZ_CHECK(p != NULL);
	FZ_CHECK(kv_resp_add_array(&o, cmd->argc) == 0);
	for (size_t i = 0; i < cmd->argc; i++)
		FZ_CHECK(kv_resp_add_bulk(&o, cmd->argv[i].ptr,
					  cmd->argv[i].len) == 0);
	FZ_CHECK(kv_resp_parse(p, o.buf, o.len, &used, &again) == KV_RESP_CMD);
	FZ_CHECK(used == o.len && again.argc == cmd->argc);
	for (size_t i = 0; i < cmd->argc; i++)
		FZ_CHECK(again.argv[i].len == cmd->argv[i].len &&
			 !memcmp(again.argv[i].ptr, cmd->argv[i].ptr,
				 cmd->argv[i].len));
	kv_resp_parser_free(p);
	kv_resp_out_free(&o);
}

static int blank(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

/* Is the command whose request starts at b[0..n) (before it maybe
 * requests that are no command: "*0", "*-1", lines of blanks) inline? */
static int inline_form(const uint8_t *b, size_t n)
{
	size_t i = 0;

	while (i < n) {
		const uint8_t *lf;
		size_t k;

		if (b[i] == '*') {
			if (n - i >= 4 && !memcmp(b + i, "*0\r\n", 4)) {
				i += 4;
				continue;
			}
			if (n - i >= 5 && !memcmp(b + i, "*-1\r\n", 5)) {
				i += 5;
				continue;
			}
			return 0;
		}
		lf = memchr(b + i, '\n', n - i);
		FZ_CHECK(lf != NULL); /* a command came: its line ended */
		for (k = i; b + k < lf && blank(b[k]); k++)
			;
		if (b + k < lf)
			return 1;
		i = (size_t)(lf - b) + 1;
	}
	FZ_CHECK(!"a command with no request");
	return 0;
}

static void check_cmd(const struct kv_resp_config *lim,
		      const struct kv_resp_cmd *cmd, int inl)
{
	size_t framed = 0, words = 0;
	char num[32];

	FZ_CHECK(cmd->argc >= 1 && cmd->argc <= lim->max_args);
	framed += (size_t)snprintf(num, sizeof(num), "*%zu\r\n", cmd->argc);
	for (size_t i = 0; i < cmd->argc; i++) {
		FZ_CHECK(cmd->argv[i].ptr != NULL);
		framed += (size_t)snprintf(num, sizeof(num), "$%zu\r\n",
					   cmd->argv[i].len) +
			  cmd->argv[i].len + 2;
		words += cmd->argv[i].len;
	}
	if (inl) /* its words come from a line of at most this */
		FZ_CHECK(words <= lim->max_inline && words <= lim->max_command);
	else
		FZ_CHECK(framed <= lim->max_command);
	for (size_t i = 0; !inl && i < cmd->argc; i++)
		FZ_CHECK(cmd->argv[i].len <= lim->max_bulk);
	round_trip(cmd);
}

/*
 * Feed data[0..n) in pieces of `piece` bytes (0: all at once), each in a
 * buffer of its own that is scribbled over once taken, as a server
 * reusing its read buffer does.  The trace gets every command and the
 * final status and error.  Fed at once, each command is checked against
 * the limits lim (the defaults filled in), its form told from the bytes.
 */
static void run(const struct kv_resp_config *cfg,
		const struct kv_resp_config *lim, const uint8_t *data,
		size_t n, size_t piece, struct trace *t)
{
	kv_resp_parser *p = kv_resp_parser_new(cfg);
	size_t off = 0, fresh;
	int rc = KV_RESP_MORE;

	FZ_CHECK(p != NULL);
	fresh = kv_resp_parser_footprint(p);
	while (off < n && rc >= 0) {
		size_t m = piece && piece < n - off ? piece : n - off, at = 0;
		uint8_t *buf = malloc(m);

		FZ_CHECK(buf != NULL);
		memcpy(buf, data + off, m);
		for (;;) {
			struct kv_resp_cmd cmd;
			size_t used = (size_t)-1;

			rc = kv_resp_parse(p, buf + at, m - at, &used, &cmd);
			if (rc != KV_RESP_CMD) {
				FZ_CHECK(used ==
					 (rc == KV_RESP_MORE ? m - at : 0));
				break;
			}
			FZ_CHECK(used >= 1 && used <= m - at);
			if (!piece)
				check_cmd(lim, &cmd,
					  inline_form(data + at, n - at));
			put_size(t, cmd.argc);
			for (size_t i = 0; i < cmd.argc; i++) {
				put_size(t, cmd.argv[i].len);
				put(t, cmd.argv[i].ptr, cmd.argv[i].len);
			}
			at += used;
		}
		memset(buf, 0xa5, m);
		free(buf);
		off += m;
		/* what a peer made it hold: bytes that came, a few times,
		 * plus the buffers kept between commands */
		FZ_CHECK(kv_resp_parser_footprint(p) <=
			 fresh + 64 * off + (256u << 10));
	}
	put_size(t, (size_t)(rc + 8));
	if (rc < 0) {
		const char *err = kv_resp_parser_error(p);
		struct kv_resp_cmd cmd;
		size_t used = 1;

		check_error(err);
		put(t, err, strlen(err));
		FZ_CHECK(kv_resp_parse(p, "x", 1, &used, &cmd) == rc &&
			 used == 0);
	}
	kv_resp_parser_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t args[] = { 0, 3, 8, 64 }, bulk[] = { 0, 4, 16, 1000 },
			    inl[] = { 0, 8, 32, 200 }, cmd[] = { 0, 16, 64, 300 };
	struct kv_resp_config cfg, lim;
	struct trace whole = { 0 }, cut = { 0 };

	if (size < 2)
		return 0;
	cfg = (struct kv_resp_config){
		.max_args = args[data[0] & 3],
		.max_bulk = bulk[(data[0] >> 2) & 3],
		.max_inline = inl[(data[0] >> 4) & 3],
		.max_command = cmd[(data[0] >> 6) & 3],
	};
	lim = (struct kv_resp_config){
		.max_args = cfg.max_args ? cfg.max_args
					 : KV_RESP_MAX_ARGS_DEFAULT,
		.max_bulk = cfg.max_bulk ? cfg.max_bulk
					 : KV_RESP_MAX_BULK_DEFAULT,
		.max_inline = cfg.max_inline ? cfg.max_inline
					     : KV_RESP_MAX_INLINE_DEFAULT,
		.max_command = cfg.max_command ? cfg.max_command
					       : KV_RESP_MAX_COMMAND_DEFAULT,
	};
	run(&cfg, &lim, data + 2, size - 2, 0, &whole);
	run(&cfg, &lim, data + 2, size - 2, 1 + data[1] % 64, &cut);
	FZ_CHECK(whole.len == cut.len && !memcmp(whole.s, cut.s, whole.len));
	free(whole.s);
	free(cut.s);
	return 0;
}
