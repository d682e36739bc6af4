/*
 * resp.h - the RESP2 codec of rift-kv: requests in, replies out.
 *
 * rift-kv is an example key-value server that stock Redis clients
 * (redis-cli, redis-benchmark) talk to.  This codec is its first block: it
 * uses only libc, no rift internals, and is no part of the library (hence
 * kv_resp_, not rift_).
 *
 * ---- Requests ----
 *
 * A client sends commands in one of the two forms Redis accepts, chosen by
 * the request's first byte:
 *
 *   multibulk  '*' <n> CRLF, then n times '$' <len> CRLF <len bytes> CRLF
 *   inline     anything else: one line of words ending in LF or CRLF
 *
 * Inline words are split as Redis's sdssplitargs() splits them: blanks
 * separate words; "..." takes the escapes \n \r \t \b \a \xHH and \<any>
 * (that character), '...' takes \' ; a closing quote must be followed by a
 * blank or the line's end.  A line with no word is no command.  A raw NUL
 * byte is an ordinary byte of a word here (Redis, reading C strings, cannot
 * take one).
 *
 * The parser is incremental: feed it whatever bytes arrived, in pieces of
 * any size.  It keeps its state between calls, so each byte is looked at
 * once (a request fed one byte at a time costs what it costs at once), and
 * the result never depends on how the bytes were cut.
 *
 * The limits are ours, never the peer's claim, and a declared length is
 * checked against them while its digits arrive, before anything is
 * allocated for it; a whole command is checked against max_command as
 * each length line ends, counting the arguments still to come at their
 * least ("$0\r\n\r\n", 6 bytes), so that a command that cannot fit is
 * refused before its bytes are read.  Memory grows only with bytes that actually arrived:
 * the argument store at most doubles, and never past what the argument
 * being read still needs, so a peer announcing "$536870912" and sending
 * ten bytes costs about ten bytes, not 512 MiB.
 *
 * Protocol errors carry Redis's message where Redis has one, so that the
 * server replies "-ERR <message>" and closes, as Redis does:
 *
 *   Protocol error: invalid multibulk length     bad "*<n>" (also n over
 *                                                max_args, n < -1)
 *   Protocol error: invalid bulk length          bad "$<len>" (also len
 *                                                over max_bulk, $-1)
 *   Protocol error: expected '$', got 'x'        an argument that is not a
 *                                                bulk string (CR, LF or NUL
 *                                                shown as a blank, as
 *                                                Redis blanks CR and LF)
 *   Protocol error: too big inline request       an inline line over
 *                                                max_inline bytes
 *   Protocol error: unbalanced quotes in request an inline line that
 *                                                sdssplitargs() refuses
 *
 * and three of ours, where Redis has none:
 *
 *   Protocol error: expected CRLF after bulk data  (Redis skips two bytes
 *                                                  unseen)
 *   Protocol error: too many arguments in inline request  (over max_args)
 *   Protocol error: too big command: more than N bytes    (over
 *                                                  max_command; Redis
 *                                                  closes such a client
 *                                                  without a word)
 *
 * Numbers are read as Redis's string2ll() reads them: decimal digits, a
 * leading '-' only, no '+', no blank, no leading zero ("0" alone is zero),
 * no "-0", nothing that overflows.  "*0" and "*-1" are no command (Redis
 * skips them too); any other negative count is refused, where Redis skips
 * it.  A line's CR must be followed by LF.
 */
#ifndef RIFT_KV_RESP_H
#define RIFT_KV_RESP_H

#include <stddef.h>

/* Defaults, Redis's: 1 Mi arguments (multibulk), proto-max-bulk-len
 * (512 MiB), PROTO_INLINE_MAX_SIZE (64 KiB), client-query-buffer-limit
 * (1 GiB) for a whole command. */
#define KV_RESP_MAX_ARGS_DEFAULT    ((size_t)1 << 20)
#define KV_RESP_MAX_BULK_DEFAULT    ((size_t)512 << 20)
#define KV_RESP_MAX_INLINE_DEFAULT  ((size_t)64 << 10)
#define KV_RESP_MAX_COMMAND_DEFAULT ((size_t)1 << 30)

/* The parser's limits.  Zero a field (or pass no config) for its default;
 * fields may be added at the end, so zero-initialize it. */
struct kv_resp_config {
	size_t max_args;   /* arguments per command */
	size_t max_bulk;   /* bytes per bulk argument */
	size_t max_inline; /* bytes per inline line, its CRLF or LF not counted
			    */
	size_t max_command; /* bytes per command as it arrives: the
			     * multibulk count line, each argument's length
			     * line, bytes and CRLF; an inline line (then
			     * the smaller of this and max_inline) */
};

/* One argument: len bytes at ptr, binary-safe (no terminating NUL). */
struct kv_resp_arg {
	const char *ptr;
	size_t len;
};

/* One command: argc (at least 1) arguments, argv[0] the command's name. */
struct kv_resp_cmd {
	size_t argc;
	const struct kv_resp_arg *argv;
};

/* What kv_resp_parse() returns. */
enum kv_resp_status {
	KV_RESP_NOMEM = -2, /* out of memory; the parser is failed */
	KV_RESP_ERROR = -1, /* protocol error: reply it, then close */
	KV_RESP_MORE = 0,   /* no whole command yet: feed more bytes */
	KV_RESP_CMD = 1,    /* one command in *cmd */
};

typedef struct kv_resp_parser kv_resp_parser;

/*
 * A parser with cfg's limits (NULL: the defaults).  A zero limit is its
 * default.  NULL when out of memory.  Free it with kv_resp_parser_free().
 */
kv_resp_parser *kv_resp_parser_new(const struct kv_resp_config *cfg);

/* Free p and everything it holds (NULL is a no-op).  The arguments of the
 * last command returned are gone with it. */
void kv_resp_parser_free(kv_resp_parser *p);

/*
 * Feed the len bytes at buf (len may be 0).  Returns:
 *
 *   KV_RESP_CMD    one whole command in *cmd; *consumed is how many bytes
 *                  of buf it took (the rest of that command and nothing
 *                  after it).  Call again with buf + *consumed for the next
 *                  pipelined request.
 *   KV_RESP_MORE   every byte of buf was taken (*consumed == len) and kept
 *                  as needed: the caller may drop or reuse buf.  Empty
 *                  inline lines and "*0", "*-1" are consumed this way.
 *   KV_RESP_ERROR  a protocol error, worded by kv_resp_parser_error().
 *   KV_RESP_NOMEM  out of memory ("out of memory").
 *
 * After an error or NOMEM the parser is failed: every call returns the
 * same status again, with *consumed 0; the connection is to be closed.
 *
 * Lifetime of a command's arguments: until the next call of
 * kv_resp_parse() or kv_resp_parser_free() on p.  An argument that came
 * whole in this call's buf may point into buf (no copy), so the caller
 * also keeps the first *consumed bytes of buf unchanged until then; the
 * others point into storage p owns.
 */
int kv_resp_parse(kv_resp_parser *p, const void *buf, size_t len,
		  size_t *consumed, struct kv_resp_cmd *cmd);

/* The failed parser's message (no "-ERR ", no CRLF), or "" if p has not
 * failed.  Valid as long as p. */
const char *kv_resp_parser_error(const kv_resp_parser *p);

/* Bytes of heap p holds now (itself and its buffers): what a peer made
 * it allocate.  For tests and metrics. */
size_t kv_resp_parser_footprint(const kv_resp_parser *p);

/* ---- Replies ----
 *
 * An output buffer the encoder grows (realloc) and the caller owns: the
 * caller sends buf[0..len) and may set len back (to 0 once all is sent)
 * or move the unsent rest down itself.  Zero-initialized, it is empty;
 * kv_resp_out_free() frees it.
 *
 * Every kv_resp_add_* appends one reply element, all of it or nothing,
 * and returns 0, -EINVAL (refused input; nothing written) or -ENOMEM
 * (nothing written).
 */
struct kv_resp_out {
	char *buf;
	size_t len; /* bytes of encoded replies in buf */
	size_t cap; /* bytes allocated at buf */
};

void kv_resp_out_free(struct kv_resp_out *o);

/* "+<s>\r\n".  -EINVAL if s holds CR or LF. */
int kv_resp_add_simple(struct kv_resp_out *o, const char *s);

/* "-<code> <msg>\r\n", or "-<code>\r\n" when msg is NULL or empty: code
 * is Redis's error class ("ERR", "WRONGTYPE"), so a protocol error is
 * kv_resp_add_error(o, "ERR", kv_resp_parser_error(p)).  -EINVAL if code
 * is empty or has a blank, or either holds CR or LF. */
int kv_resp_add_error(struct kv_resp_out *o, const char *code, const char *msg);

/* ":<v>\r\n". */
int kv_resp_add_int(struct kv_resp_out *o, long long v);

/* "$<n>\r\n<n bytes>\r\n", binary-safe (data may be NULL when n is 0). */
int kv_resp_add_bulk(struct kv_resp_out *o, const void *data, size_t n);

/* The null bulk string, "$-1\r\n". */
int kv_resp_add_null_bulk(struct kv_resp_out *o);

/* "*<n>\r\n": an array of the n elements added next. */
int kv_resp_add_array(struct kv_resp_out *o, size_t n);

/* The null array, "*-1\r\n". */
int kv_resp_add_null_array(struct kv_resp_out *o);

#endif
