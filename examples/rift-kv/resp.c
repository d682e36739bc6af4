/*
 * resp.c - the RESP2 codec of rift-kv.  See resp.h for the protocol, the
 * limits and the lifetimes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

/* Buffers a parser keeps between commands when they are at most this big;
 * bigger ones (left by a big argument) are freed once their command is
 * done, so an idle connection holds little. */
#define KEEP_BYTES (64u << 10)
#define KEEP_ARGS  1024u

enum state {
	S_START,   /* between requests: the first byte picks the form */
	S_INLINE,  /* an inline line, up to its LF */
	S_COUNT,   /* the digits of "*<n>\r\n" */
	S_TYPE,	   /* the '$' of an argument */
	S_LEN,	   /* the digits of "$<len>\r\n" */
	S_BODY,	   /* an argument's bytes */
	S_BODY_CR, /* the CR after them */
	S_BODY_LF, /* and its LF */
	S_FAILED,
};

/* A number being read digit by digit, as string2ll() would read it whole. */
struct num {
	uint64_t v;	 /* value of the digits so far */
	unsigned digits; /* digits so far */
	bool neg;	 /* a '-' came first */
	bool cr;	 /* the CR came: LF is next */
};

/* An argument as it is being collected: in the caller's buffer of this
 * call (direct) or at off in the store. */
struct slot {
	const char *direct;
	size_t off; /* bytes into store, when direct is NULL */
	size_t len; /* bytes */
};

struct kv_resp_parser {
	struct kv_resp_config cfg;
	enum state st;
	int failed;	/* status returned again once failed */
	bool delivered; /* the last call returned a command */
	bool fresh;	/* S_BODY: no byte of this argument taken yet */
	struct num num;
	size_t want;	  /* arguments the multibulk count declared */
	size_t cmd_bytes; /* of the multibulk command: its lines so far and
			     the bytes their lengths declare */
	size_t body_left; /* bytes of the current argument still to come */
	struct slot *slots;
	struct kv_resp_arg *argv;
	size_t nargs;	 /* arguments complete */
	size_t args_cap; /* entries allocated in slots and argv */
	char *store;	 /* argument bytes kept across calls */
	size_t store_len;
	size_t store_cap;
	char *line; /* an inline line kept across calls */
	size_t line_len;
	size_t line_cap;
	char err[96];
};

kv_resp_parser *kv_resp_parser_new(const struct kv_resp_config *cfg)
{
	kv_resp_parser *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (cfg)
		p->cfg = *cfg;
	if (!p->cfg.max_args)
		p->cfg.max_args = KV_RESP_MAX_ARGS_DEFAULT;
	if (!p->cfg.max_bulk)
		p->cfg.max_bulk = KV_RESP_MAX_BULK_DEFAULT;
	if (!p->cfg.max_inline)
		p->cfg.max_inline = KV_RESP_MAX_INLINE_DEFAULT;
	if (!p->cfg.max_command)
		p->cfg.max_command = KV_RESP_MAX_COMMAND_DEFAULT;
	p->st = S_START;
	return p;
}

void kv_resp_parser_free(kv_resp_parser *p)
{
	if (!p)
		return;
	free(p->slots);
	free(p->argv);
	free(p->store);
	free(p->line);
	free(p);
}

const char *kv_resp_parser_error(const kv_resp_parser *p)
{
	return p->st == S_FAILED ? p->err : "";
}

size_t kv_resp_parser_footprint(const kv_resp_parser *p)
{
	return sizeof(*p) + p->store_cap + p->line_cap +
	       p->args_cap * (sizeof(*p->slots) + sizeof(*p->argv));
}

static int fail(kv_resp_parser *p, int status, const char *msg)
{
	snprintf(p->err, sizeof(p->err), "%s", msg);
	p->st = S_FAILED;
	p->failed = status;
	return status;
}

/*
 * Take n more bytes of the multibulk command (a line, or a length line
 * and the bytes and CRLF it declares), if they fit in max_command with
 * the `later` arguments still to come at their least ("$0\r\n\r\n").
 * Returns 0, or the status of the failure.
 */
static int command_bytes(kv_resp_parser *p, size_t n, size_t later)
{
	size_t max = p->cfg.max_command;
	char msg[80];

	if (n <= max - p->cmd_bytes &&
	    later <= (max - p->cmd_bytes - n) / 6) {
		p->cmd_bytes += n;
		return 0;
	}
	snprintf(msg, sizeof(msg),
		 "Protocol error: too big command: more than %zu bytes", max);
	return fail(p, KV_RESP_ERROR, msg);
}

/*
 * Make room for need bytes in *buf (cap *cap), doubling, but to no more
 * than limit when need <= limit: limit is what the data being stored can
 * still grow to, so that a declared length is never allocated ahead of
 * its bytes.
 */
static bool reserve(char **buf, size_t *cap, size_t need, size_t limit)
{
	size_t ncap;
	char *nb;

	if (need <= *cap)
		return true;
	ncap = *cap > SIZE_MAX / 2 ? SIZE_MAX : *cap * 2;
	if (ncap < 64)
		ncap = 64;
	if (ncap > limit)
		ncap = limit;
	if (ncap < need)
		ncap = need;
	nb = realloc(*buf, ncap);
	if (!nb)
		return false;
	*buf = nb;
	*cap = ncap;
	return true;
}

static bool store_put(kv_resp_parser *p, const void *src, size_t n,
		      size_t limit)
{
	if (!reserve(&p->store, &p->store_cap, p->store_len + n, limit))
		return false;
	memcpy(p->store + p->store_len, src, n);
	p->store_len += n;
	return true;
}

/* Room for argument number nargs; the arrays double with arguments that
 * arrived, never with a declared count. */
static bool slot_reserve(kv_resp_parser *p)
{
	size_t ncap;
	struct slot *s;
	struct kv_resp_arg *a;

	if (p->nargs < p->args_cap)
		return true;
	ncap = p->args_cap ? p->args_cap * 2 : 8;
	s = realloc(p->slots, ncap * sizeof(*s));
	if (!s)
		return false;
	p->slots = s;
	a = realloc(p->argv, ncap * sizeof(*a));
	if (!a)
		return false;
	p->argv = a;
	p->args_cap = ncap;
	return true;
}

/* Forget the command delivered last, and let go of what it made big. */
static void drop_delivered(kv_resp_parser *p)
{
	p->delivered = false;
	p->nargs = 0;
	p->store_len = 0;
	if (p->store_cap > KEEP_BYTES) {
		free(p->store);
		p->store = NULL;
		p->store_cap = 0;
	}
	if (p->line_cap > KEEP_BYTES) {
		free(p->line);
		p->line = NULL;
		p->line_cap = 0;
	}
	if (p->args_cap > KEEP_ARGS) {
		free(p->slots);
		free(p->argv);
		p->slots = NULL;
		p->argv = NULL;
		p->args_cap = 0;
	}
}

static int deliver(kv_resp_parser *p, struct kv_resp_cmd *cmd)
{
	for (size_t i = 0; i < p->nargs; i++) {
		const struct slot *s = &p->slots[i];

		/* "" for an empty one: the store may be NULL. */
		p->argv[i].ptr = s->direct ? s->direct
				 : s->len  ? p->store + s->off
					   : "";
		p->argv[i].len = s->len;
	}
	cmd->argc = p->nargs;
	cmd->argv = p->argv;
	p->delivered = true;
	p->st = S_START;
	return KV_RESP_CMD;
}

/* The caller may drop its buffer after KV_RESP_MORE: arguments that point
 * into it are copied into the store (each once: they are direct no more). */
static bool keep_direct(kv_resp_parser *p)
{
	size_t n = p->nargs + (p->st >= S_BODY && p->st <= S_BODY_LF);

	for (size_t i = 0; i < n; i++) {
		struct slot *s = &p->slots[i];

		if (!s->direct)
			continue;
		s->off = p->store_len;
		if (!store_put(p, s->direct, s->len, SIZE_MAX))
			return false;
		s->direct = NULL;
	}
	return true;
}

/*
 * One byte of a number ending in CRLF.  neg_ok: "-1" is allowed (and no
 * other negative).  Returns 1 when the LF came, 0 for more, -1 when the
 * number cannot be valid any more: not a digit, a second '-', a leading
 * zero, "-0", over max, CR not followed by LF, no digit.
 */
static int num_feed(struct num *n, unsigned char c, bool neg_ok, uint64_t max)
{
	uint64_t d;

	if (n->cr)
		return c == '\n' ? 1 : -1;
	if (c == '\r') {
		n->cr = true;
		return n->digits ? 0 : -1;
	}
	if (c == '-') {
		if (!neg_ok || n->neg || n->digits)
			return -1;
		n->neg = true;
		return 0;
	}
	if (c < '0' || c > '9')
		return -1;
	/* After a lone "0", no digit: string2ll() refuses leading zeros. */
	if (n->digits && n->v == 0)
		return -1;
	d = c - '0';
	if (n->neg && (d == 0 || n->digits))
		return -1; /* "-0" or below -9: only -1 is allowed */
	if (d > max || n->v > (max - d) / 10)
		return -1;
	n->v = n->v * 10 + d;
	n->digits++;
	if (n->neg && n->v != 1)
		return -1;
	return 0;
}

static bool is_blank(unsigned char c)
{
	/* isspace() in the C locale, as sdssplitargs() uses it */
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
	       c == '\r';
}

static int hex_val(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Split an inline line (without its line end) into words, as Redis's
 * sdssplitargs() does, into the store.  Returns 0, or the status of the
 * failure.  The words are no longer than the line, so the store is
 * reserved once and written in place.
 */
static int split_inline(kv_resp_parser *p, const unsigned char *s, size_t n)
{
	size_t k = 0;
	char *w;

	if (!reserve(&p->store, &p->store_cap, p->store_len + n, SIZE_MAX))
		return fail(p, KV_RESP_NOMEM, "out of memory");
	for (;;) {
		bool inq = false, insq = false, done = false;
		struct slot *sl;

		while (k < n && is_blank(s[k]))
			k++;
		if (k == n)
			return 0;
		if (p->nargs == p->cfg.max_args)
			return fail(p, KV_RESP_ERROR,
				    "Protocol error: too many arguments in "
				    "inline request");
		if (!slot_reserve(p))
			return fail(p, KV_RESP_NOMEM, "out of memory");
		sl = &p->slots[p->nargs];
		sl->direct = NULL;
		sl->off = p->store_len;
		w = p->store + p->store_len;
		while (!done) {
			/* -1: the line's end, sdssplitargs()'s NUL */
			int c = k < n ? s[k] : -1;

			if (inq) {
				if (c == '\\' && k + 3 < n && s[k + 1] == 'x' &&
				    hex_val(s[k + 2]) >= 0 &&
				    hex_val(s[k + 3]) >= 0) {
					*w++ = (char)(hex_val(s[k + 2]) * 16 +
						      hex_val(s[k + 3]));
					k += 3;
				} else if (c == '\\' && k + 1 < n) {
					k++;
					switch (s[k]) {
					case 'n':
						*w++ = '\n';
						break;
					case 'r':
						*w++ = '\r';
						break;
					case 't':
						*w++ = '\t';
						break;
					case 'b':
						*w++ = '\b';
						break;
					case 'a':
						*w++ = '\a';
						break;
					default:
						*w++ = (char)s[k];
						break;
					}
				} else if (c == '"') {
					/* A closing quote ends the word. */
					if (k + 1 < n && !is_blank(s[k + 1]))
						goto unbalanced;
					done = true;
				} else if (c < 0) {
					goto unbalanced;
				} else {
					*w++ = (char)c;
				}
			} else if (insq) {
				if (c == '\\' && k + 1 < n &&
				    s[k + 1] == '\'') {
					k++;
					*w++ = '\'';
				} else if (c == '\'') {
					if (k + 1 < n && !is_blank(s[k + 1]))
						goto unbalanced;
					done = true;
				} else if (c < 0) {
					goto unbalanced;
				} else {
					*w++ = (char)c;
				}
			} else {
				switch (c) {
				case ' ':
				case '\n':
				case '\r':
				case '\t':
				case -1:
					done = true;
					break;
				case '"':
					inq = true;
					break;
				case '\'':
					insq = true;
					break;
				default:
					*w++ = (char)c;
					break;
				}
			}
			if (k < n)
				k++;
		}
		sl->len = (size_t)(w - (p->store + p->store_len));
		p->store_len += sl->len;
		p->nargs++;
	}
unbalanced:
	return fail(p, KV_RESP_ERROR,
		    "Protocol error: unbalanced quotes in request");
}

/*
 * The inline form from b[0..n).  Without an LF there, takes all n bytes
 * (*ended false).  With one, takes the line through its LF (*used bytes,
 * *ended true) and splits it: its words, if any, are the arguments
 * (p->nargs), and the parser is back at S_START.  Returns 0, or the
 * status of a failure.
 */
static int inline_feed(kv_resp_parser *p, const unsigned char *b, size_t n,
		       size_t *used, bool *ended)
{
	const unsigned char *nl = memchr(b, '\n', n);
	size_t take = nl ? (size_t)(nl - b) : n;
	size_t tot = p->line_len + take,
	       max = p->cfg.max_inline < p->cfg.max_command
			     ? p->cfg.max_inline
			     : p->cfg.max_command;
	unsigned char last = take ? b[take - 1]
			     : p->line_len
				     ? (unsigned char)p->line[p->line_len - 1]
				     : 0;
	const unsigned char *s;
	size_t slen;
	int rc;

	*ended = false;
	/* The limit counts the line without its CRLF: until the LF comes,
	 * a last CR may be the line's end. */
	if (nl ? tot - (last == '\r') > max
	       : tot > max + 1 || (tot == max + 1 && last != '\r'))
		return fail(p, KV_RESP_ERROR,
			    "Protocol error: too big inline request");
	if (!nl) {
		if (!reserve(&p->line, &p->line_cap, tot, SIZE_MAX))
			return fail(p, KV_RESP_NOMEM, "out of memory");
		memcpy(p->line + p->line_len, b, take);
		p->line_len = tot;
		*used = n;
		return 0;
	}
	if (p->line_len) {
		if (!reserve(&p->line, &p->line_cap, tot, SIZE_MAX))
			return fail(p, KV_RESP_NOMEM, "out of memory");
		memcpy(p->line + p->line_len, b, take);
		s = (const unsigned char *)p->line;
	} else {
		s = b;
	}
	slen = tot;
	if (slen && s[slen - 1] == '\r')
		slen--;
	*used = take + 1;
	*ended = true;
	rc = split_inline(p, s, slen);
	p->line_len = 0;
	if (rc)
		return rc;
	p->st = S_START;
	return 0;
}

int kv_resp_parse(kv_resp_parser *p, const void *buf, size_t len,
		  size_t *consumed, struct kv_resp_cmd *cmd)
{
	const unsigned char *b = buf;
	size_t i = 0;
	int r;

	*consumed = 0;
	if (p->st == S_FAILED)
		return p->failed;
	if (p->delivered)
		drop_delivered(p);
	while (i < len) {
		switch (p->st) {
		case S_START:
			if (b[i] == '*') {
				i++;
				p->num = (struct num){0};
				p->cmd_bytes = 0;
				p->st = S_COUNT;
			} else {
				p->st = S_INLINE;
			}
			break;
		case S_INLINE: {
			size_t used = 0;
			bool ended;

			r = inline_feed(p, b + i, len - i, &used, &ended);
			if (r < 0)
				return r;
			i += used;
			if (ended && p->nargs) {
				*consumed = i;
				return deliver(p, cmd);
			}
			break;
		}
		case S_COUNT:
			r = num_feed(&p->num, b[i++], true, p->cfg.max_args);
			if (r < 0)
				return fail(p, KV_RESP_ERROR,
					    "Protocol error: invalid multibulk "
					    "length");
			if (r == 0)
				break;
			/* "*0" and "*-1": no command, as in Redis */
			if (p->num.neg || p->num.v == 0) {
				p->st = S_START;
				break;
			}
			p->want = (size_t)p->num.v;
			/* "*<n>\r\n", and n arguments at their least */
			r = command_bytes(p, p->num.digits + 3, p->want);
			if (r)
				return r;
			p->st = S_TYPE;
			break;
		case S_TYPE:
			if (b[i] != '$') {
				char msg[64];
				unsigned char c = b[i];

				/* Redis blanks CR and LF in an error reply;
				 * NUL would end our string. */
				if (c == '\r' || c == '\n' || c == '\0')
					c = ' ';
				snprintf(msg, sizeof(msg),
					 "Protocol error: expected '$', got "
					 "'%c'",
					 c);
				return fail(p, KV_RESP_ERROR, msg);
			}
			i++;
			p->num = (struct num){0};
			p->st = S_LEN;
			break;
		case S_LEN:
			r = num_feed(&p->num, b[i++], false, p->cfg.max_bulk);
			if (r < 0)
				return fail(
					p, KV_RESP_ERROR,
					"Protocol error: invalid bulk length");
			if (r == 0)
				break;
			/* "$<len>\r\n", the bytes and their CRLF */
			r = command_bytes(p, p->num.digits + 3 +
						     (size_t)p->num.v + 2,
					  p->want - p->nargs - 1);
			if (r)
				return r;
			if (!slot_reserve(p))
				return fail(p, KV_RESP_NOMEM, "out of memory");
			p->slots[p->nargs] = (struct slot){.off = p->store_len,
							   .len = p->num.v};
			p->body_left = (size_t)p->num.v;
			p->fresh = true;
			p->st = p->body_left ? S_BODY : S_BODY_CR;
			break;
		case S_BODY: {
			size_t n =
				len - i < p->body_left ? len - i : p->body_left;

			if (p->fresh && n == p->body_left) {
				/* All of it is here: no copy. */
				p->slots[p->nargs].direct = (const char *)b + i;
			} else {
				/* An argument's bytes are contiguous in the
				 * store, so the earlier ones of this call go
				 * in first (keep_direct() at the end of the
				 * call would put them after these). */
				if (p->fresh) {
					if (!keep_direct(p))
						return fail(p, KV_RESP_NOMEM,
							    "out of memory");
					p->slots[p->nargs].off = p->store_len;
				}
				if (!store_put(p, b + i, n,
					       p->store_len + p->body_left))
					return fail(p, KV_RESP_NOMEM,
						    "out of memory");
			}
			p->fresh = false;
			i += n;
			p->body_left -= n;
			if (!p->body_left)
				p->st = S_BODY_CR;
			break;
		}
		case S_BODY_CR:
		case S_BODY_LF:
			if (b[i] != (p->st == S_BODY_CR ? '\r' : '\n'))
				return fail(p, KV_RESP_ERROR,
					    "Protocol error: expected CRLF "
					    "after bulk data");
			i++;
			if (p->st == S_BODY_CR) {
				p->st = S_BODY_LF;
				break;
			}
			p->nargs++;
			if (p->nargs == p->want) {
				*consumed = i;
				return deliver(p, cmd);
			}
			p->st = S_TYPE;
			break;
		case S_FAILED:
			return p->failed;
		}
	}
	if (!keep_direct(p))
		return fail(p, KV_RESP_NOMEM, "out of memory");
	*consumed = len;
	return KV_RESP_MORE;
}

/* ---- Replies ---- */

void kv_resp_out_free(struct kv_resp_out *o)
{
	free(o->buf);
	*o = (struct kv_resp_out){0};
}

static int out_reserve(struct kv_resp_out *o, size_t more)
{
	if (more > SIZE_MAX - o->len)
		return -ENOMEM;
	if (!reserve(&o->buf, &o->cap, o->len + more, SIZE_MAX))
		return -ENOMEM;
	return 0;
}

/* Append n bytes; out_reserve() made room. */
static void out_put(struct kv_resp_out *o, const void *src, size_t n)
{
	if (n)
		memcpy(o->buf + o->len, src, n);
	o->len += n;
}

/* A short element formatted whole ("$-1\r\n", ":42\r\n"). */
static int out_fmt(struct kv_resp_out *o, const char *s, size_t n)
{
	int rc = out_reserve(o, n);

	if (rc)
		return rc;
	out_put(o, s, n);
	return 0;
}

static bool has_crlf(const char *s)
{
	return strpbrk(s, "\r\n") != NULL;
}

int kv_resp_add_simple(struct kv_resp_out *o, const char *s)
{
	size_t n = strlen(s);
	int rc;

	if (has_crlf(s))
		return -EINVAL;
	rc = out_reserve(o, n + 3);
	if (rc)
		return rc;
	out_put(o, "+", 1);
	out_put(o, s, n);
	out_put(o, "\r\n", 2);
	return 0;
}

int kv_resp_add_error(struct kv_resp_out *o, const char *code, const char *msg)
{
	size_t cn = strlen(code), mn = msg ? strlen(msg) : 0;
	int rc;

	if (!cn || strpbrk(code, " \t\r\n") || (msg && has_crlf(msg)))
		return -EINVAL;
	rc = out_reserve(o, cn + mn + 4);
	if (rc)
		return rc;
	out_put(o, "-", 1);
	out_put(o, code, cn);
	if (mn) {
		out_put(o, " ", 1);
		out_put(o, msg, mn);
	}
	out_put(o, "\r\n", 2);
	return 0;
}

int kv_resp_add_int(struct kv_resp_out *o, long long v)
{
	char t[32];

	return out_fmt(o, t, (size_t)snprintf(t, sizeof(t), ":%lld\r\n", v));
}

int kv_resp_add_bulk(struct kv_resp_out *o, const void *data, size_t n)
{
	char t[32];
	size_t hn = (size_t)snprintf(t, sizeof(t), "$%zu\r\n", n);
	int rc;

	if (n > SIZE_MAX - hn - 2)
		return -ENOMEM;
	rc = out_reserve(o, hn + n + 2);
	if (rc)
		return rc;
	out_put(o, t, hn);
	out_put(o, data, n);
	out_put(o, "\r\n", 2);
	return 0;
}

int kv_resp_add_null_bulk(struct kv_resp_out *o)
{
	return out_fmt(o, "$-1\r\n", 5);
}

int kv_resp_add_array(struct kv_resp_out *o, size_t n)
{
	char t[32];

	return out_fmt(o, t, (size_t)snprintf(t, sizeof(t), "*%zu\r\n", n));
}

int kv_resp_add_null_array(struct kv_resp_out *o)
{
	return out_fmt(o, "*-1\r\n", 5);
}
