/*
 * repl.c - rift-kv's replication: the primary's log, backlog and links to
 * its replicas, the replica's link to its primary, WAIT, REPLICAOF.  The
 * protocol is described in repl.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server.h"

#define ARGS struct kv_client *c, size_t argc, const struct kv_resp_arg *argv

/* Our limits on what a replica offers: its ring's size, and the most
 * the primary stages for one write whatever the ring. */
#define RING_MIN ((uint64_t)4 << 10)
#define RING_MAX ((uint64_t)1 << 30)
#define STAGE_MAX ((size_t)1 << 20)
/* Message mode: log bytes per LOG message, and the output a link may
 * have waiting before no more is appended (the send window's share). */
#define LOG_CHUNK ((size_t)256 << 10)
#define LOG_AHEAD ((size_t)512 << 10)
/* A replica connects again this long after its link ended, ms. */
#define RETRY_MS 1000
/* The replica's snapshot commands are written to its file in pieces of
 * about this many bytes. */
#define FBUF_FLUSH ((size_t)1 << 20)
/* The most the backlog grows to so as to keep what replicas attached
 * have not been shipped (backlog_grow), Redis's replica output buffer
 * hard limit. */
#define BACKLOG_PIN_MAX ((uint64_t)256 << 20)
/* A replica_file is rewritten as a snapshot once its log is at least
 * REWRITE_MIN bytes and REWRITE_RATIO times its snapshot (file_rewrite). */
#define REWRITE_MIN ((uint64_t)1 << 20)
#define REWRITE_RATIO 4

/* The primary's view of one replica (a rift client that sent PSYNC). */
struct kv_repl_link {
	struct kv_client *c;
	uint64_t sent;       /* log shipped up to (written, in flight or
				queued as LOG), offset */
	uint64_t acked;      /* applied, by its last ACK */
	uint64_t consumed;   /* taken by its parser, by its last ACK */
	int64_t ack_ms;      /* its last ACK, Unix ms */
	int port;            /* LISTENING-PORT, or 0 */
	int online;          /* the PSYNC answer (snapshot) is sent */
	/* ring mode */
	uint64_t ring_size;  /* bytes, as the replica said (checked) */
	unsigned char token[RIFT_TOKEN_MAX_LEN];
	size_t token_len;    /* 0: message mode */
	char *stage;         /* the bytes of the write in flight */
	size_t stage_cap;
	rift_mem *stage_mem;
	int inflight;        /* a write is on its way */
	uint64_t writes;     /* writes completed, count */
	struct kv_repl_link *prev, *next;
};

static void replid_new(char out[41])
{
	unsigned char r[20];
	size_t got = 0;

	while (got < sizeof(r)) {
		ssize_t n = getrandom(r + got, sizeof(r) - got, 0);

		if (n > 0)
			got += (size_t)n;
		else if (n < 0 && errno != EINTR)
			break;
	}
	for (size_t i = got; i < sizeof(r); i++) /* no getrandom: still */
		r[i] = (unsigned char)(rand() ^ (int)getpid());
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

/* One line on stderr, "rift-kv: replication: ...". */
static void repl_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void repl_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rift-kv: replication: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- the primary's log and backlog ---- */

static uint64_t backlog_start(const struct kv_repl *r)
{
	return r->offset - r->histlen;
}

static void backlog_append(struct kv_repl *r, const char *p, size_t n)
{
	size_t b = r->backlog_size;

	r->offset += n;
	if (n > b) { /* only the end of it stays */
		p += n - b;
		n = b;
	}
	for (size_t done = 0; done < n;) {
		size_t at = (size_t)((r->offset - n + done) % b);
		size_t k = n - done < b - at ? n - done : b - at;

		memcpy(r->backlog + at, p + done, k);
		done += k;
	}
	r->histlen = r->histlen + n > b ? b : r->histlen + n;
}

/* Copy log [from, from + n) (held by the backlog) to dst. */
static void backlog_copy(const struct kv_repl *r, uint64_t from, size_t n,
			 char *dst)
{
	size_t b = r->backlog_size;

	for (size_t done = 0; done < n;) {
		size_t at = (size_t)((from + done) % b);
		size_t k = n - done < b - at ? n - done : b - at;

		memcpy(dst + done, r->backlog + at, k);
		done += k;
	}
}

/* Append "SET key value [PXAT ms]" for e, or "DEL key" when e is NULL:
 * non-zero when out of memory. */
static int entry_state(struct kv_resp_out *o, const char *key, size_t klen,
		       const struct kv_entry *e)
{
	char at[24];

	if (!e)
		return kv_resp_add_array(o, 2) || kv_resp_add_bulk(o, "DEL", 3) ||
		       kv_resp_add_bulk(o, key, klen);
	if (e->expire_ms == KV_NO_EXPIRE)
		return kv_resp_add_array(o, 3) || kv_resp_add_bulk(o, "SET", 3) ||
		       kv_resp_add_bulk(o, key, klen) ||
		       kv_resp_add_bulk(o, e->val, e->vlen);
	snprintf(at, sizeof(at), "%lld", (long long)e->expire_ms);
	return kv_resp_add_array(o, 5) || kv_resp_add_bulk(o, "SET", 3) ||
	       kv_resp_add_bulk(o, key, klen) ||
	       kv_resp_add_bulk(o, e->val, e->vlen) ||
	       kv_resp_add_bulk(o, "PXAT", 4) || kv_resp_add_bulk(o, at, strlen(at));
}

/* Move the backlog into a buffer of size bytes, keeping the newest
 * history that fits.  0, or -1 (out of memory: nothing changed). */
static int backlog_resize(struct kv_repl *r, size_t size)
{
	size_t keep = r->histlen < size ? r->histlen : size;
	uint64_t from = r->offset - keep;
	char *b = malloc(size);

	if (!b)
		return -1;
	for (size_t done = 0; done < keep;) {
		size_t at = (size_t)((from + done) % size);
		size_t k = keep - done < size - at ? keep - done : size - at;

		backlog_copy(r, from + done, k, b + at);
		done += k;
	}
	free(r->backlog);
	r->backlog = b;
	r->backlog_size = size;
	r->histlen = keep;
	return 0;
}

/*
 * n more bytes of log are coming: the backlog grows (up to
 * BACKLOG_PIN_MAX) so as not to drop what a replica attached has not been
 * shipped yet, as Redis keeps a replica's output buffer: a write bigger
 * than backlog_size, or a burst, then costs memory for a while, not a
 * full resync.  kv_repl_cron shrinks it back to backlog_size.
 */
static void backlog_grow(struct kv_server *s, size_t n)
{
	struct kv_repl *r = &s->repl;
	uint64_t floor = r->offset, need;
	size_t size = r->backlog_size;

	for (struct kv_repl_link *l = r->links; l; l = l->next)
		if (!(l->c->flags & (KV_CLOSING | KV_CLOSE_ASAP)) && l->sent < floor)
			floor = l->sent;
	need = r->offset + n - floor;
	if (need <= size || need > BACKLOG_PIN_MAX)
		return; /* fits; or too much: such a replica is dropped */
	while (size < need)
		size *= 2;
	if (size > BACKLOG_PIN_MAX)
		size = BACKLOG_PIN_MAX;
	if (backlog_resize(r, size))
		repl_log("out of memory growing the backlog to %zu bytes", size);
}

void kv_repl_propagate(struct kv_client *c, const struct kv_cmd *k,
		       size_t argc, const struct kv_resp_arg *argv)
{
	struct kv_server *s = c->srv;
	struct kv_repl *r = &s->repl;
	struct kv_resp_out *o = &r->scratch;
	int rc = 0;

	if (r->replica)
		return;
	o->len = 0;
	if (k->first_key <= 0) { /* FLUSHALL, FLUSHDB */
		rc = kv_resp_add_array(o, 1) || kv_resp_add_bulk(o, "FLUSHALL", 8);
	} else {
		/* Redis's key positions: last_key -1 is the last argument */
		size_t last = k->last_key < 0 ? argc - 1 : (size_t)k->last_key;

		for (size_t i = (size_t)k->first_key; i <= last && i < argc && !rc;
		     i += (size_t)k->step)
			rc = entry_state(o, argv[i].ptr, argv[i].len,
					 kv_store_find(s->store, argv[i].ptr,
						       argv[i].len));
	}
	if (rc) {
		/* The log cannot say what changed: replicas cannot follow
		 * it any more, so they resync in full. */
		repl_log("out of memory encoding the log of %s: replicas "
		      "resync in full", k->name);
		replid_new(r->replid);
		r->histlen = 0;
		for (struct kv_repl_link *l = r->links; l; l = l->next)
			l->c->flags |= KV_CLOSE_ASAP;
		return;
	}
	if (r->links)
		backlog_grow(s, o->len);
	backlog_append(r, o->buf, o->len);
	if (o->cap > ((size_t)64 << 10))
		kv_resp_out_free(o);
}

/* Does k write (the word "write" among its flags)? */
static int is_write(const struct kv_cmd *k)
{
	const char *f = k->flags;
	size_t n = strlen("write");

	for (const char *p = strstr(f, "write"); p; p = strstr(p + 1, "write"))
		if ((p == f || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
			return 1;
	return 0;
}

int kv_repl_readonly(const struct kv_client *c, const struct kv_cmd *k)
{
	return c->srv->repl.replica && c != c->srv->repl.master && is_write(k);
}

/* ---- the primary's links ---- */

static void link_free(struct kv_server *s, struct kv_repl_link *l)
{
	struct kv_repl *r = &s->repl;

	if (l->prev)
		l->prev->next = l->next;
	else
		r->links = l->next;
	if (l->next)
		l->next->prev = l->prev;
	r->nlinks--;
	if (l->stage_mem) {
		int rc = rift_mem_dereg(l->stage_mem);

		if (rc) /* an operation still uses it: keep it (leak) */
			repl_log("rift_mem_dereg of a staging buffer: %s",
			      rift_strerror(rc));
		else
			free(l->stage);
	} else {
		free(l->stage);
	}
	l->c->link = NULL;
	free(l);
}

/* End l's link: c is closed (its close callback frees the link) at
 * once when now, else once the command that found it out returns. */
static void link_drop(struct kv_repl_link *l, const char *why, int now)
{
	struct kv_client *c = l->c;

	repl_log("dropping replica %s: %s", c->addr, why);
	c->flags |= KV_CLOSE_ASAP;
	if (now)
		kv_rift_service(c);
}

static void on_ring_written(rift_conn *conn, void *user, int status,
			    size_t bytes)
{
	struct kv_client *c = rift_conn_user(conn);
	struct kv_repl_link *l = c ? c->link : NULL;

	(void)user;
	if (!l)
		return;
	l->inflight = 0;
	if (status) {
		char why[200];

		snprintf(why, sizeof(why), "a write into its ring failed: %s (%s)",
			 rift_err_name(status), rift_conn_last_error(conn));
		link_drop(l, why, 1);
		return;
	}
	(void)bytes;
	l->writes++;
}

/* Ring mode: one write of what the ring has room for. */
static void ship_ring(struct kv_server *s, struct kv_repl_link *l)
{
	struct kv_repl *r = &s->repl;
	uint64_t room = l->consumed + l->ring_size - l->sent;
	uint64_t to_end = l->ring_size - l->sent % l->ring_size;
	uint64_t n = r->offset - l->sent;
	int rc;

	if (l->inflight || !n)
		return;
	if (n > room)
		n = room;
	if (n > to_end)
		n = to_end;
	if (n > l->stage_cap)
		n = l->stage_cap;
	if (!n)
		return; /* the ring is full: the next ACK makes room */
	backlog_copy(r, l->sent, (size_t)n, l->stage);
	rc = rift_conn_write_notify(l->c->conn, l->stage_mem, 0, l->token,
				    l->token_len, (size_t)(l->sent % l->ring_size),
				    (size_t)n, l->sent, on_ring_written, NULL);
	if (rc) {
		char why[200];

		snprintf(why, sizeof(why), "rift_conn_write_notify: %s (%s)",
			 rift_err_name(rc), rift_conn_last_error(l->c->conn));
		link_drop(l, why, 1);
		return;
	}
	l->inflight = 1;
	l->sent += n;
}

/* Message mode: LOG offset bytes, as far as the output allows. */
static void ship_msgs(struct kv_server *s, struct kv_repl_link *l)
{
	struct kv_repl *r = &s->repl;
	struct kv_client *c = l->c;
	char off[24], *tmp;

	if (l->sent == r->offset || kv_client_pending(c) >= LOG_AHEAD)
		return;
	tmp = malloc(LOG_CHUNK);
	if (!tmp)
		return; /* again next round */
	while (l->sent < r->offset && kv_client_pending(c) < LOG_AHEAD) {
		uint64_t n = r->offset - l->sent;

		if (n > LOG_CHUNK)
			n = LOG_CHUNK;
		backlog_copy(r, l->sent, (size_t)n, tmp);
		snprintf(off, sizeof(off), "%llu", (unsigned long long)l->sent);
		if (kv_resp_add_array(&c->out, 3) ||
		    kv_resp_add_bulk(&c->out, "LOG", 3) ||
		    kv_resp_add_bulk(&c->out, off, strlen(off)) ||
		    kv_resp_add_bulk(&c->out, tmp, (size_t)n)) {
			free(tmp);
			link_drop(l, "out of memory", 1);
			return;
		}
		l->sent += n;
	}
	free(tmp);
	kv_rift_service(c);
}

static void ship(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;

	for (struct kv_repl_link *l = r->links, *next; l; l = next) {
		struct kv_client *c = l->c;

		next = l->next;
		if (c->flags & KV_CLOSING)
			continue;
		if (c->flags & KV_CLOSE_ASAP) { /* dropped by a command */
			kv_rift_service(c);
			continue;
		}
		if (!l->online) {
			if (kv_client_pending(c))
				continue; /* the snapshot is on its way */
			l->online = 1;
		}
		if (l->sent < backlog_start(r)) {
			char why[160];

			snprintf(why, sizeof(why),
				 "it fell behind the backlog (needs offset "
				 "%llu, the backlog starts at %llu)",
				 (unsigned long long)l->sent,
				 (unsigned long long)backlog_start(r));
			link_drop(l, why, 1);
			continue;
		}
		if (l->token_len)
			ship_ring(s, l);
		else
			ship_msgs(s, l);
	}
}

/* Replicas whose ACK reached off. */
static long long acked(const struct kv_repl *r, uint64_t off)
{
	long long n = 0;

	for (const struct kv_repl_link *l = r->links; l; l = l->next)
		n += l->acked >= off;
	return n;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* WAITs that are done (enough replicas) or timed out: answered. */
static int waits(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;
	int64_t now = mono_ms(), next = -1;

	for (struct kv_client *c = s->clients, *nx; c && r->blocked; c = nx) {
		long long n;

		nx = c->next;
		if (!(c->flags & KV_BLOCKED))
			continue;
		n = acked(r, c->wait_off);
		if (n < c->wait_num && (!c->wait_until_ms || now < c->wait_until_ms)) {
			if (c->wait_until_ms &&
			    (next < 0 || c->wait_until_ms - now < next))
				next = c->wait_until_ms - now;
			continue;
		}
		c->flags &= ~(unsigned)KV_BLOCKED;
		r->blocked--;
		kv_reply_int(c, n);
		kv_client_resume(c); /* may free c, never nx */
	}
	return next > INT32_MAX ? INT32_MAX : (int)next;
}

/* ---- the replica ---- */

static void replica_connect(struct kv_server *s);
static void replica_ack(struct kv_server *s);
static int loading; /* file_load runs: FULLRESYNC writes no file */

static void on_replica_closed(rift_conn *conn)
{
	struct kv_server *s = rift_conn_user(conn);

	if (s)
		s->repl.closing--;
}

/* End the link to the primary (state NONE); another connect in
 * RETRY_MS when retry. */
static void replica_drop(struct kv_server *s, int retry)
{
	struct kv_repl *r = &s->repl;

	if (r->conn) {
		r->closing++;
		rift_conn_abort(r->conn, on_replica_closed);
		r->conn = NULL;
	}
	r->ack_due = 0;
	if (!r->down_since_ms)
		r->down_since_ms = s->now_ms;
	if (r->state == KV_REPL_SYNC) {
		/* A snapshot cut short: the keys are part old, part new, so
		 * only a full resync can follow; the file on disk holds the
		 * old history whole and stays (a restart resumes that). */
		r->replid[0] = '\0';
		if (r->tmpfd >= 0)
			close(r->tmpfd);
		if (r->fd >= 0)
			close(r->fd);
		r->tmpfd = r->fd = -1;
	}
	r->state = KV_REPL_NONE;
	if (retry && r->retry)
		rift_timer_start(r->retry, RETRY_MS, 0);
}

static void replica_fail(struct kv_server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void replica_fail(struct kv_server *s, const char *fmt, ...)
{
	struct kv_repl *r = &s->repl;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->last_error, sizeof(r->last_error), fmt, ap);
	va_end(ap);
	r->link_errors++;
	repl_log("link to %s ended: %s", r->primary, r->last_error);
	replica_drop(s, 1);
}

/* ---- replica_file ---- */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The file failed: say so and keep no file (a restart then resyncs in
 * full rather than resume from a hole). */
static void file_fail(struct kv_server *s, const char *what)
{
	struct kv_repl *r = &s->repl;

	repl_log("%s %s: %s; the replica keeps no file from now on", what,
	      s->cfg.replica_file, strerror(errno));
	if (r->fd >= 0)
		close(r->fd);
	if (r->tmpfd >= 0)
		close(r->tmpfd);
	r->fd = r->tmpfd = -1;
	unlink(s->cfg.replica_file);
	s->cfg.replica_file[0] = '\0';
}

static int encode_cmd(struct kv_resp_out *o, size_t argc,
		      const struct kv_resp_arg *argv)
{
	if (kv_resp_add_array(o, argc))
		return -1;
	for (size_t i = 0; i < argc; i++)
		if (kv_resp_add_bulk(o, argv[i].ptr, argv[i].len))
			return -1;
	return 0;
}

static void fbuf_flush(struct kv_server *s, int fd)
{
	struct kv_repl *r = &s->repl;

	if (fd >= 0 && r->fbuf.len && write_all(fd, r->fbuf.buf, r->fbuf.len))
		file_fail(s, "write");
	r->fbuf.len = 0;
}

/* Put the file back to the log applied: what a parser held of a command
 * cut short is gone with the link, and the log resumes at applied. */
static void file_trim(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;

	if (r->fd >= 0 &&
	    ftruncate(r->fd, (off_t)(r->file_log_at + r->offset - r->file_base)))
		file_fail(s, "ftruncate");
}

/* ---- applying ---- */

/* A parser with the server's own request limits (never the primary's
 * claims), or NULL. */
static kv_resp_parser *parser_new(const struct kv_server *s)
{
	struct kv_resp_config pc = {
		.max_bulk = s->cfg.proto_max_bulk_len,
		.max_command = s->cfg.client_query_buffer_limit,
	};

	return kv_resp_parser_new(&pc);
}

/* What feed does with a command: 0 go on, 1 stop after it, -1 failed
 * (said why).  end: the bytes of this feed taken up to its end. */
typedef int cmd_fn(struct kv_server *s, const struct kv_resp_cmd *cmd,
		   size_t end);

/*
 * Parse the n bytes at p with prs, fn for each whole command.  Returns
 * the bytes taken (n, or fewer when fn said stop), or -1 when fn failed
 * or the bytes are no RESP (the link ends: "malformed WHAT").
 */
static long feed(struct kv_server *s, kv_resp_parser *prs, const char *p,
		 size_t n, cmd_fn *fn, const char *what)
{
	size_t pos = 0;

	while (pos < n) {
		struct kv_resp_cmd cmd;
		size_t used = 0;
		int rc = kv_resp_parse(prs, p + pos, n - pos, &used, &cmd);

		pos += used;
		if (rc == KV_RESP_CMD) {
			rc = fn(s, &cmd, pos);
			if (rc)
				return rc < 0 ? -1 : (long)pos;
		} else if (rc != KV_RESP_MORE) {
			replica_fail(s, "malformed %s: %s", what,
				     rc == KV_RESP_NOMEM ? "out of memory"
							 : kv_resp_parser_error(prs));
			return -1;
		}
	}
	return (long)pos;
}

/* Run one command of the primary's on the master client: writes only. */
static int apply(struct kv_server *s, const struct kv_resp_cmd *cmd)
{
	struct kv_repl *r = &s->repl;
	const struct kv_cmd *k = kv_cmd_lookup(cmd->argv[0].ptr, cmd->argv[0].len);

	if (!k || !is_write(k)) {
		replica_fail(s, "the log holds '%.*s', which is no write command",
			     (int)(cmd->argv[0].len < 64 ? cmd->argv[0].len : 64),
			     cmd->argv[0].ptr);
		return -1;
	}
	r->master->out.len = 0;
	kv_cmd_exec(r->master, cmd);
	if (r->master->out.len && r->master->out.buf[0] == '-') {
		replica_fail(s, "applying '%.*s' failed: %.*s",
			     (int)(cmd->argv[0].len < 64 ? cmd->argv[0].len : 64),
			     cmd->argv[0].ptr,
			     (int)(r->master->out.len > 2 ? r->master->out.len - 2 : 0),
			     r->master->out.buf);
		return -1;
	}
	r->master->out.len = 0;
	return 0;
}

static int log_cmd(struct kv_server *s, const struct kv_resp_cmd *cmd,
		   size_t end)
{
	if (apply(s, cmd))
		return -1;
	s->repl.offset = s->repl.consumed + end;
	return 0;
}

/* Log bytes [consumed, consumed + n) at p: parsed and applied; offset
 * and consumed move on; written to the file (persist).  0, or -1 when
 * the link ended (malformed). */
static int log_feed(struct kv_server *s, const char *p, size_t n, int persist)
{
	struct kv_repl *r = &s->repl;
	char what[48];

	snprintf(what, sizeof(what), "log after offset %llu",
		 (unsigned long long)r->consumed);
	if (feed(s, r->logp, p, n, log_cmd, what) < 0)
		return -1;
	if (persist && r->fd >= 0 && write_all(r->fd, p, n))
		file_fail(s, "write");
	r->consumed += n;
	return 0;
}

static void replica_ack(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;
	char buf[96];
	int n, rc;

	if (r->state != KV_REPL_UP || !r->conn)
		return;
	n = snprintf(buf, sizeof(buf),
		     "*4\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%llu\r\n$%d\r\n%llu\r\n",
		     snprintf(NULL, 0, "%llu", (unsigned long long)r->offset),
		     (unsigned long long)r->offset,
		     snprintf(NULL, 0, "%llu", (unsigned long long)r->consumed),
		     (unsigned long long)r->consumed);
	rc = rift_conn_send(r->conn, buf, (size_t)n);
	r->ack_due = rc == RIFT_EAGAIN;
	if (rc && rc != RIFT_EAGAIN)
		replica_fail(s, "sending ACK: %s", rift_strerror(rc));
}

/* Same replid text as the n bytes at p (a 40-digit id). */
static int replid_is(const char *id, const struct kv_resp_arg *a)
{
	return a->len == 40 && memcmp(id, a->ptr, 40) == 0;
}

static int arg_u64(const struct kv_resp_arg *a, uint64_t *out)
{
	long long v;

	if (!kv_arg_ll(a, &v) || v < 0)
		return 0;
	*out = (uint64_t)v;
	return 1;
}

/* FULLRESYNC replid offset: a snapshot follows. */
static int full_begin(struct kv_server *s, const struct kv_resp_cmd *cmd)
{
	struct kv_repl *r = &s->repl;
	uint64_t off;

	if (cmd->argc != 3 || cmd->argv[1].len != 40 || !arg_u64(&cmd->argv[2], &off)) {
		replica_fail(s, "malformed FULLRESYNC");
		return -1;
	}
	memcpy(r->replid, cmd->argv[1].ptr, 40);
	r->replid[40] = '\0';
	r->offset = r->consumed = off;
	kv_resp_parser_free(r->logp);
	r->logp = parser_new(s);
	if (!r->logp) {
		replica_fail(s, "out of memory");
		return -1;
	}
	kv_store_flush(s->store);
	r->state = KV_REPL_SYNC;
	r->full_syncs++;
	r->file_base = off;
	if (!loading)
		repl_log("full resync from %s: replid %s offset %llu", r->primary,
		      r->replid, (unsigned long long)off);
	if (s->cfg.replica_file[0] && !loading) {
		char tmp[KV_CFG_STR + 8];

		snprintf(tmp, sizeof(tmp), "%s.tmp", s->cfg.replica_file);
		r->tmpfd = open(tmp, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC,
				0644);
		if (r->tmpfd < 0) {
			file_fail(s, "open");
			return 0;
		}
		r->fbuf.len = 0;
		if (encode_cmd(&r->fbuf, cmd->argc, cmd->argv))
			file_fail(s, "encode");
	}
	return 0;
}

/* SYNC-END: the snapshot is in; the file (if any) takes its place. */
/* The snapshot in tmpfd is whole: SYNC-END, and it becomes the file
 * (rename), its log to follow. */
static void file_commit(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;
	static const char end[] = "*1\r\n$8\r\nSYNC-END\r\n";
	char tmp[KV_CFG_STR + 8];
	off_t at;

	snprintf(tmp, sizeof(tmp), "%s.tmp", s->cfg.replica_file);
	fbuf_flush(s, r->tmpfd);
	if (r->tmpfd >= 0 && write_all(r->tmpfd, end, sizeof(end) - 1) == 0 &&
	    (at = lseek(r->tmpfd, 0, SEEK_END)) >= 0 &&
	    rename(tmp, s->cfg.replica_file) == 0) {
		if (r->fd >= 0)
			close(r->fd);
		r->fd = r->tmpfd;
		r->tmpfd = -1;
		r->file_log_at = (uint64_t)at;
	} else if (r->tmpfd >= 0) {
		file_fail(s, "write");
	}
}

/* SYNC-END: the snapshot is in; the file (if any) takes its place. */
static void full_end(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;

	r->state = KV_REPL_UP;
	r->down_since_ms = 0;
	if (r->tmpfd >= 0 && s->cfg.replica_file[0])
		file_commit(s);
	replica_ack(s);
}

static int rewrite_key(void *user, const struct kv_entry *e)
{
	struct kv_server *s = user;
	struct kv_repl *r = &s->repl;

	if (entry_state(&r->fbuf, e->key, e->klen, e))
		return 1;
	if (r->fbuf.len >= FBUF_FLUSH)
		fbuf_flush(s, r->tmpfd);
	return r->tmpfd < 0;
}

/*
 * The file's log outgrew REWRITE_MIN and REWRITE_RATIO times its
 * snapshot: the keys as they are now become its snapshot, at the offset
 * applied, so that it stays about the size of the data (and a restart
 * loads that, not all the log since the last full resync).  Only with
 * no command cut short in the log parser: its first bytes are in the
 * file's log and not in the keys.
 */
static void file_rewrite(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;
	uint64_t log = r->offset - r->file_base;
	char tmp[KV_CFG_STR + 8], off[24];

	if (r->fd < 0 || r->state != KV_REPL_UP || r->consumed != r->offset ||
	    log < REWRITE_MIN || log / REWRITE_RATIO < r->file_log_at)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", s->cfg.replica_file);
	snprintf(off, sizeof(off), "%llu", (unsigned long long)r->offset);
	r->tmpfd = open(tmp, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC,
			0644);
	if (r->tmpfd < 0) {
		file_fail(s, "open");
		return;
	}
	r->fbuf.len = 0;
	if (kv_resp_add_array(&r->fbuf, 3) ||
	    kv_resp_add_bulk(&r->fbuf, "FULLRESYNC", 10) ||
	    kv_resp_add_bulk(&r->fbuf, r->replid, 40) ||
	    kv_resp_add_bulk(&r->fbuf, off, strlen(off)) ||
	    kv_store_each(s->store, rewrite_key, s)) {
		if (r->tmpfd >= 0)
			file_fail(s, "rewrite");
		return;
	}
	r->file_base = r->offset;
	file_commit(s);
	if (r->fd >= 0) {
		r->rewrites++;
		repl_log("rewrote %s: %llu bytes of log became a snapshot of "
		      "%llu bytes at offset %llu", s->cfg.replica_file,
		      (unsigned long long)log, (unsigned long long)r->file_log_at,
		      (unsigned long long)r->offset);
	}
}

/* One command of the primary's message stream. */
static int stream_cmd(struct kv_server *s, const struct kv_resp_cmd *cmd)
{
	struct kv_repl *r = &s->repl;
	const struct kv_resp_arg *a = cmd->argv;

	if (a[0].len && a[0].ptr[0] == '-') { /* an error reply, inline */
		char text[200];
		size_t n = 0;

		for (size_t i = 0; i < cmd->argc && n < sizeof(text) - 1; i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%.*s",
					      i ? " " : "", (int)a[i].len, a[i].ptr);
		replica_fail(s, "the primary answered %s", text + 1);
		return -1;
	}
	if (r->state == KV_REPL_HANDSHAKE && kv_arg_is(&a[0], "fullresync"))
		return full_begin(s, cmd);
	if (r->state == KV_REPL_HANDSHAKE && kv_arg_is(&a[0], "continue")) {
		uint64_t off;

		if (cmd->argc != 3 || !replid_is(r->replid, &a[1]) ||
		    !arg_u64(&a[2], &off) || off != r->offset) {
			replica_fail(s, "CONTINUE of another replid or offset "
				     "than asked");
			return -1;
		}
		r->state = KV_REPL_UP;
		r->down_since_ms = 0;
		r->partial_syncs++;
		repl_log("partial resync from %s at offset %llu", r->primary,
		      (unsigned long long)off);
		replica_ack(s);
		return 0;
	}
	if (r->state == KV_REPL_SYNC && kv_arg_is(&a[0], "sync-end")) {
		full_end(s);
		return 0;
	}
	if (r->state == KV_REPL_SYNC) {
		if (apply(s, cmd))
			return -1;
		if (r->tmpfd >= 0) {
			if (encode_cmd(&r->fbuf, cmd->argc, cmd->argv))
				file_fail(s, "encode");
			else if (r->fbuf.len >= FBUF_FLUSH)
				fbuf_flush(s, r->tmpfd);
		}
		return 0;
	}
	if (r->state == KV_REPL_UP && kv_arg_is(&a[0], "log") && cmd->argc == 3) {
		uint64_t off;

		/* taken with a ring offered too: a primary with
		 * use_rdma_write = false ships by messages */
		if (!arg_u64(&a[1], &off) || off != r->consumed) {
			replica_fail(s, "LOG at offset %.*s, expected %llu",
				     (int)(a[1].len < 24 ? a[1].len : 24), a[1].ptr,
				     (unsigned long long)r->consumed);
			return -1;
		}
		if (log_feed(s, a[2].ptr, a[2].len, 1))
			return -1;
		r->log_msgs++;
		replica_ack(s);
		return 0;
	}
	replica_fail(s, "unexpected '%.*s' from the primary",
		     (int)(a[0].len < 64 ? a[0].len : 64), a[0].ptr);
	return -1;
}

static int msg_cmd(struct kv_server *s, const struct kv_resp_cmd *cmd,
		   size_t end)
{
	(void)end;
	return stream_cmd(s, cmd);
}

static void on_replica_recv(rift_conn *conn, rift_msg *m)
{
	struct kv_server *s = rift_conn_user(conn);
	struct kv_repl *r = &s->repl;

	if (conn != r->conn)
		return;
	r->last_io_ms = s->now_ms;
	feed(s, r->msgp, rift_msg_data(m), rift_msg_len(m), msg_cmd,
	     "message from the primary");
}

static void on_written(struct kv_server *s, const rift_event *ev)
{
	struct kv_repl *r = &s->repl;
	uint64_t size = s->cfg.ring_size;

	if (r->state != KV_REPL_UP || ev->mem != r->ring_mem || !ev->length ||
	    ev->tag != r->consumed || ev->offset != r->consumed % size ||
	    ev->length > size - ev->offset) {
		replica_fail(s, "a write into the ring at %llu, %llu bytes, tag "
			     "%llu: expected log offset %llu at ring byte %llu",
			     (unsigned long long)ev->offset,
			     (unsigned long long)ev->length,
			     (unsigned long long)ev->tag,
			     (unsigned long long)r->consumed,
			     (unsigned long long)(r->consumed % size));
		return;
	}
	r->last_io_ms = s->now_ms;
	if (log_feed(s, r->ring + ev->offset, (size_t)ev->length, 1))
		return;
	r->ring_writes++;
	r->ring_bytes += ev->length;
	replica_ack(s);
}

/* CONNECTED: offer the ring, ask for the log from our offset. */
static void handshake(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;
	struct kv_resp_out o = { 0 };
	unsigned char tok[RIFT_TOKEN_MAX_LEN];
	size_t tlen = sizeof(tok);
	char off[24], port[12], size[24];
	int have = r->replid[0] != '\0', rc, ring = 0;

	if (r->ring_mem) {
		rc = rift_mem_export(r->ring_mem, r->conn, 0, s->cfg.ring_size,
				     RIFT_MEM_WRITE, tok, &tlen);
		if (rc) {
			replica_fail(s, "rift_mem_export of the ring: %s (%s)",
				     rift_strerror(rc), rift_conn_last_error(r->conn));
			return;
		}
		ring = 1;
	}
	snprintf(off, sizeof(off), "%lld", have ? (long long)r->offset : -1LL);
	snprintf(port, sizeof(port), "%d", s->cfg.port);
	snprintf(size, sizeof(size), "%zu", s->cfg.ring_size);
	if (kv_resp_add_array(&o, ring ? 8 : 5) || kv_resp_add_bulk(&o, "PSYNC", 5) ||
	    kv_resp_add_bulk(&o, have ? r->replid : "?", have ? 40 : 1) ||
	    kv_resp_add_bulk(&o, off, strlen(off)) ||
	    kv_resp_add_bulk(&o, "LISTENING-PORT", 14) ||
	    kv_resp_add_bulk(&o, port, strlen(port)) ||
	    (ring && (kv_resp_add_bulk(&o, "RING", 4) ||
		      kv_resp_add_bulk(&o, size, strlen(size)) ||
		      kv_resp_add_bulk(&o, tok, tlen)))) {
		kv_resp_out_free(&o);
		replica_fail(s, "out of memory");
		return;
	}
	rc = rift_conn_send(r->conn, o.buf, o.len);
	kv_resp_out_free(&o);
	if (rc) {
		replica_fail(s, "sending PSYNC: %s", rift_strerror(rc));
		return;
	}
	/* a new stream: what the parsers held of the old one is gone */
	kv_resp_parser_free(r->msgp);
	kv_resp_parser_free(r->logp);
	r->msgp = parser_new(s);
	r->logp = parser_new(s);
	if (!r->msgp || !r->logp) {
		replica_fail(s, "out of memory");
		return;
	}
	r->consumed = r->offset;
	file_trim(s);
	r->state = KV_REPL_HANDSHAKE;
}

static void on_replica_event(rift_conn *conn, const rift_event *ev)
{
	struct kv_server *s = rift_conn_user(conn);
	struct kv_repl *r = &s->repl;

	if (conn != r->conn)
		return;
	switch (ev->type) {
	case RIFT_EVENT_CONNECTED:
		repl_log("connected to %s over %s", r->primary,
		      rift_transport_name(ev->transport));
		handshake(s);
		break;
	case RIFT_EVENT_WRITTEN:
		on_written(s, ev);
		break;
	case RIFT_EVENT_WRITABLE:
		if (r->ack_due)
			replica_ack(s);
		break;
	case RIFT_EVENT_PATH_DOWN:
		repl_log("path to %s down (%s): rift re-attaches", r->primary,
		      ev->message);
		break;
	case RIFT_EVENT_PATH_CHANGED:
	case RIFT_EVENT_FAILBACK:
		repl_log("path to %s now over %s via %s", r->primary,
		      rift_transport_name(ev->transport), ev->peer);
		break;
	case RIFT_EVENT_ERROR:
	case RIFT_EVENT_DISCONNECTED:
		replica_fail(s, "%s: %s", rift_event_name(ev->type), ev->message);
		break;
	default:
		break;
	}
}

static void replica_connect(struct kv_server *s)
{
	static const rift_conn_callbacks cbs = { .on_event = on_replica_event,
						 .on_recv = on_replica_recv };
	struct kv_repl *r = &s->repl;
	int rc;

	if (!r->replica || r->conn)
		return;
	rc = rift_connect(s->rift, r->primary, &cbs, s, &r->conn);
	if (rc) {
		r->conn = NULL;
		replica_fail(s, "rift_connect %s: %s: %s", r->primary,
			     rift_strerror(rc), rift_ctx_last_error(s->rift));
		return;
	}
	r->state = KV_REPL_CONNECTING;
}

static void on_retry(rift_timer *t, void *user)
{
	(void)t;
	replica_connect(user);
}

/* The file's commands up to SYNC-END: FULLRESYNC first, then what
 * stream_cmd takes of a snapshot; stop at SYNC-END (state UP). */
static int load_cmd(struct kv_server *s, const struct kv_resp_cmd *cmd,
		    size_t end)
{
	struct kv_repl *r = &s->repl;

	(void)end;
	if (r->state == KV_REPL_HANDSHAKE && !kv_arg_is(&cmd->argv[0], "fullresync"))
		return -1;
	if (r->state == KV_REPL_SYNC && kv_arg_is(&cmd->argv[0], "sync-end")) {
		r->state = KV_REPL_UP;
		return 1;
	}
	return stream_cmd(s, cmd);
}

/* Load replica_file: the snapshot up to SYNC-END, then the log.  A
 * missing file is no error; a damaged one is set aside (full resync). */
static void file_load(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;
	const char *path = s->cfg.replica_file;
	char *buf;
	/* O_APPEND: after file_trim the log goes on at the new end */
	int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC), in_log = 0, ok = 1;
	uint64_t fpos = 0;

	if (fd < 0) {
		if (errno != ENOENT)
			file_fail(s, "open");
		else if ((r->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
				       0644)) < 0)
			file_fail(s, "create");
		return;
	}
	buf = malloc((size_t)1 << 20);
	r->msgp = parser_new(s);
	r->logp = parser_new(s);
	if (!buf || !r->msgp || !r->logp) {
		repl_log("out of memory loading %s", path);
		ok = 0;
	}
	r->state = KV_REPL_HANDSHAKE; /* stream_cmd's FULLRESYNC, SYNC-END */
	loading = 1;
	for (ssize_t n; ok && (n = read(fd, buf, (size_t)1 << 20)) > 0;) {
		long pos = 0;

		if (!in_log) {
			pos = feed(s, r->msgp, buf, (size_t)n, load_cmd,
				   "replica file");
			ok = pos >= 0;
			in_log = ok && r->state == KV_REPL_UP;
			fpos += (uint64_t)(ok ? pos : 0);
			if (in_log)
				r->file_log_at = fpos;
		}
		if (ok && in_log && pos < n)
			ok = !log_feed(s, buf + pos, (size_t)(n - pos), 0);
	}
	free(buf);
	loading = 0;
	if (ok && in_log) {
		r->state = KV_REPL_NONE;
		r->loaded = r->offset;
		r->fd = fd;
		repl_log("loaded %s: replid %s offset %llu", path, r->replid,
		      (unsigned long long)r->offset);
		r->full_syncs = 0;
		r->link_errors = 0;
		r->last_error[0] = '\0';
		return;
	}
	repl_log("%s is no replica file of rift-kv (or damaged): set aside "
	      "as %s.bad, the replica resyncs in full", path, path);
	{
		char bad[KV_CFG_STR + 8];

		snprintf(bad, sizeof(bad), "%s.bad", path);
		rename(path, bad);
	}
	close(fd);
	kv_store_flush(s->store);
	r->replid[0] = '\0';
	r->offset = r->consumed = 0;
	r->state = KV_REPL_NONE;
	r->full_syncs = r->link_errors = 0;
	r->last_error[0] = '\0';
	if ((r->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC,
			  0644)) < 0)
		file_fail(s, "create");
}

/* ---- roles ---- */

/* The ring a replica exports (use_rdma_write): its for the server's
 * life, exported anew to each session, deregistered at the end.  0, or
 * -1 having said why. */
static int ring_setup(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;
	int rc;

	if (!s->cfg.use_rdma_write || r->ring_mem)
		return 0;
	if (!r->ring && posix_memalign((void **)&r->ring, 4096, s->cfg.ring_size)) {
		r->ring = NULL;
		repl_log("out of memory for the ring (ring_size %zu)",
		      s->cfg.ring_size);
		return -1;
	}
	rc = rift_mem_reg(s->rift, r->ring, s->cfg.ring_size, RIFT_MEM_WRITE,
			  &r->ring_mem);
	if (rc) {
		repl_log("rift_mem_reg of the ring (ring_size %zu): %s: %s",
		      s->cfg.ring_size, rift_strerror(rc),
		      rift_ctx_last_error(s->rift));
		return -1;
	}
	return 0;
}

/* Become a replica of url (REPLICAOF, replicaof): the replicas' links
 * end (rift-kv does not chain them), the connect starts.  0, or -1
 * (the ring could not be set up: said why). */
static int become_replica(struct kv_server *s, const char *url)
{
	struct kv_repl *r = &s->repl;

	if (ring_setup(s))
		return -1;

	for (struct kv_repl_link *l = r->links; l; l = l->next)
		if (!(l->c->flags & (KV_CLOSING | KV_CLOSE_ASAP)))
			link_drop(l, "this server becomes a replica", 0);
	if (r->replica)
		replica_drop(s, 0);
	r->replica = 1;
	snprintf(r->primary, sizeof(r->primary), "%s", url);
	r->last_error[0] = '\0';
	r->down_since_ms = s->now_ms;
	replica_connect(s);
	return 0;
}

/* REPLICAOF NO ONE: a primary of a new history that starts where the
 * replica's log ended. */
static void become_primary(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;

	replica_drop(s, 0);
	if (r->retry)
		rift_timer_stop(r->retry);
	r->replica = 0;
	r->primary[0] = '\0';
	replid_new(r->replid);
	r->histlen = 0;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	repl_log("now a primary: replid %s offset %llu", r->replid,
	      (unsigned long long)r->offset);
}

/* ---- commands ---- */

static void cmd_replicaof(ARGS)
{
	struct kv_server *s = c->srv;
	struct kv_repl *r = &s->repl;
	char url[256];

	if (c->link || c == r->master) {
		kv_reply_error(c, "ERR Command is not valid when client is a replica.");
		return;
	}
	if (argc == 3 && kv_arg_is(&argv[1], "no") && kv_arg_is(&argv[2], "one")) {
		if (r->replica)
			become_primary(s);
		kv_reply_ok(c);
		return;
	}
	if (argc == 3 ? kv_config_primary_url(argv[1].ptr, argv[1].len, argv[2].ptr,
					       argv[2].len, url, sizeof(url))
		      : argc != 2 || argv[1].len >= sizeof(url) ||
				(strncmp(argv[1].ptr, "tcp://", 6) &&
				 strncmp(argv[1].ptr, "rdma://", 7) &&
				 strncmp(argv[1].ptr, "auto://", 7))) {
		kv_reply_error(c, argc == 3 ? "ERR Invalid master port or host"
					    : "ERR REPLICAOF takes HOST PORT, a "
					      "rift URL, or NO ONE");
		return;
	}
	if (argc == 2) {
		memcpy(url, argv[1].ptr, argv[1].len);
		url[argv[1].len] = '\0';
	}
	if (r->replica && !strcmp(url, r->primary)) {
		kv_reply_simple(c, "OK Already connected to specified master");
		return;
	}
	if (become_replica(s, url)) {
		kv_reply_error(c, "ERR the replica's ring could not be set up "
				  "(the server's log says why)");
		return;
	}
	kv_reply_ok(c);
}

static void cmd_wait(ARGS)
{
	struct kv_repl *r = &c->srv->repl;
	long long num, ms;
	long long n;

	(void)argc;
	if (r->replica) {
		kv_reply_error(c, "ERR WAIT cannot be used with replica instances.");
		return;
	}
	if (!kv_arg_ll(&argv[1], &num) || !kv_arg_ll(&argv[2], &ms)) {
		kv_reply_not_int(c);
		return;
	}
	if (ms < 0) {
		kv_reply_error(c, "ERR timeout is negative");
		return;
	}
	n = acked(r, r->offset);
	if (n >= num || c->link || c == r->master) {
		kv_reply_int(c, n);
		return;
	}
	c->wait_off = r->offset;
	c->wait_num = num;
	c->wait_until_ms = ms ? mono_ms() + ms : 0;
	c->flags |= KV_BLOCKED;
	r->blocked++;
}

/* Do rift peers a and b ("tcp://10.0.0.2:50304") name one host? */
static int same_host(const char *a, const char *b)
{
	const char *ca = strrchr(a, ':'), *cb = strrchr(b, ':');

	return ca && cb && ca - a == cb - b && !strncmp(a, b, (size_t)(ca - a));
}

/* The snapshot's line for e: SET key value [PXAT ms].  Non-zero when
 * out of memory. */
static int snapshot_key(void *user, const struct kv_entry *e)
{
	struct kv_client *c = user;

	return entry_state(&c->out, e->key, e->klen, e);
}

/* PSYNC replid offset [LISTENING-PORT port] [RING size token] */
static void cmd_psync(ARGS)
{
	struct kv_server *s = c->srv;
	struct kv_repl *r = &s->repl;
	struct kv_repl_link *l;
	uint64_t ring = 0, from = 0, port = 0;
	const struct kv_resp_arg *tok = NULL;
	long long off;
	size_t mark = c->out.len;
	int partial;
	char at[24];

	if (r->replica) {
		kv_reply_error(c, "ERR this server is a replica: rift-kv does "
				  "not chain replicas");
		return;
	}
	if (!c->conn) {
		kv_reply_error(c, "ERR PSYNC over TCP: replicas connect to the "
				  "rift listener");
		return;
	}
	if (c->link) {
		kv_reply_error(c, "ERR PSYNC twice on one link");
		return;
	}
	if (!kv_arg_ll(&argv[2], &off) || off < -1) {
		kv_reply_error(c, "ERR PSYNC offset is not an integer >= -1");
		return;
	}
	for (size_t i = 3; i < argc;) {
		if (kv_arg_is(&argv[i], "listening-port") && i + 1 < argc) {
			if (!arg_u64(&argv[i + 1], &port) || !port || port > 65535) {
				kv_reply_error(c, "ERR PSYNC LISTENING-PORT is "
						  "no port");
				return;
			}
			i += 2;
		} else if (kv_arg_is(&argv[i], "ring") && i + 2 < argc) {
			if (!arg_u64(&argv[i + 1], &ring) || ring < RING_MIN ||
			    ring > RING_MAX) {
				kv_reply_errorf(c, "ERR PSYNC RING size %.*s outside "
						   "%llu..%llu",
						(int)(argv[i + 1].len < 24 ? argv[i + 1].len : 24),
						argv[i + 1].ptr,
						(unsigned long long)RING_MIN,
						(unsigned long long)RING_MAX);
				return;
			}
			tok = &argv[i + 2];
			if (!tok->len || tok->len > RIFT_TOKEN_MAX_LEN) {
				kv_reply_errorf(c, "ERR PSYNC RING token of %zu "
						   "bytes does not fit (1..%u)",
						tok->len, RIFT_TOKEN_MAX_LEN);
				return;
			}
			i += 3;
		} else {
			kv_reply_syntax(c);
			return;
		}
	}
	partial = off >= 0 && replid_is(r->replid, &argv[1]) &&
		  (uint64_t)off >= backlog_start(r) && (uint64_t)off <= r->offset;
	if (off >= 0 && replid_is(r->replid, &argv[1]) && (uint64_t)off > r->offset)
		repl_log("replica %s asked for offset %lld, ahead of the primary's "
		      "%llu: full resync", c->addr, off,
		      (unsigned long long)r->offset);
	if (partial) {
		from = (uint64_t)off;
		kv_reply_array(c, 3);
		kv_reply_bulk(c, "CONTINUE", 8);
		kv_reply_bulk(c, r->replid, 40);
		snprintf(at, sizeof(at), "%llu", (unsigned long long)from);
		kv_reply_bulk_str(c, at);
	} else {
		struct kv_store_info si;

		from = r->offset;
		kv_store_info(s->store, &si);
		kv_reply_array(c, 3);
		kv_reply_bulk(c, "FULLRESYNC", 10);
		kv_reply_bulk(c, r->replid, 40);
		snprintf(at, sizeof(at), "%llu", (unsigned long long)from);
		kv_reply_bulk_str(c, at);
		/* the snapshot, as the log would say each key */
		if (!c->oom && kv_store_each(s->store, snapshot_key, c))
			c->oom = 1;
		kv_reply_array(c, 1);
		kv_reply_bulk(c, "SYNC-END", 8);
	}
	l = calloc(1, sizeof(*l));
	if (!l || c->oom) {
		free(l);
		c->out.len = mark;
		c->oom = 1; /* kv_cmd_exec says so */
		return;
	}
	l->c = c;
	l->sent = l->acked = l->consumed = from;
	l->ack_ms = s->now_ms;
	l->port = (int)port;
	if (tok && s->cfg.use_rdma_write) {
		int rc;

		l->ring_size = ring;
		l->stage_cap = ring < STAGE_MAX ? (size_t)ring : STAGE_MAX;
		l->stage = malloc(l->stage_cap);
		rc = l->stage ? rift_mem_reg(s->rift, l->stage, l->stage_cap,
					     RIFT_MEM_READ, &l->stage_mem)
			      : RIFT_ENOMEM;
		if (rc) {
			free(l->stage);
			free(l);
			c->out.len = mark;
			kv_reply_errorf(c, "ERR registering the staging buffer: %s",
					rift_strerror(rc));
			return;
		}
		memcpy(l->token, tok->ptr, tok->len);
		l->token_len = tok->len;
	}
	/* The same replica (address and port) come back on a new session
	 * while its old one still waits to re-attach: the old link goes,
	 * so that WAIT counts each replica once. */
	for (struct kv_repl_link *o = r->links; o && port; o = o->next)
		if (o->port == (int)port && same_host(o->c->addr, c->addr) &&
		    !(o->c->flags & (KV_CLOSING | KV_CLOSE_ASAP)))
			link_drop(o, "replaced by a new link from the same replica", 0);
	if (partial)
		r->sync_partial_ok++;
	else
		r->sync_full++;
	if (!partial && off >= 0)
		r->sync_partial_err++;
	l->next = r->links;
	if (r->links)
		r->links->prev = l;
	r->links = l;
	r->nlinks++;
	c->link = l;
	repl_log("replica %s: %s resync from offset %llu, the log by %s", c->addr,
	      partial ? "partial" : "full", (unsigned long long)from,
	      l->token_len ? "one-sided writes into its ring" : "messages");
}

/* REPLCONF ACK applied consumed (a replica's link); other REPLCONFs
 * are answered OK, as Redis does. */
static void cmd_replconf(ARGS)
{
	struct kv_repl_link *l = c->link;
	uint64_t applied, consumed;

	if (!kv_arg_is(&argv[1], "ack")) {
		if (argc % 2 == 0)
			kv_reply_syntax(c);
		else
			kv_reply_ok(c);
		return;
	}
	if (!l) {
		kv_reply_error(c, "ERR REPLCONF ACK from a client that is no replica");
		return;
	}
	if (argc != 4 || !arg_u64(&argv[2], &applied) ||
	    !arg_u64(&argv[3], &consumed) || applied > consumed ||
	    consumed > l->sent || applied < l->acked || consumed < l->consumed) {
		char why[200];

		snprintf(why, sizeof(why),
			 "REPLCONF ACK %.*s %.*s: not within what was shipped "
			 "(acked %llu, consumed %llu, shipped %llu)",
			 (int)(argc > 2 && argv[2].len < 24 ? argv[2].len : 0),
			 argc > 2 ? argv[2].ptr : "",
			 (int)(argc > 3 && argv[3].len < 24 ? argv[3].len : 0),
			 argc > 3 ? argv[3].ptr : "",
			 (unsigned long long)l->acked,
			 (unsigned long long)l->consumed,
			 (unsigned long long)l->sent);
		link_drop(l, why, 0);
		return;
	}
	l->acked = applied;
	l->consumed = consumed;
	l->ack_ms = c->srv->now_ms;
}

#define ADMIN "admin noscript loading stale"
const struct kv_cmd kv_repl_cmds[] = {
	{ "replicaof", -2, cmd_replicaof, ADMIN, 0, 0, 0,
	  "@admin @slow @dangerous", "server", "5.0.0",
	  "Make the server a replica of another instance (HOST PORT or a "
	  "rift URL), or promote it as master (NO ONE)", NULL },
	{ "slaveof", -2, cmd_replicaof, ADMIN, 0, 0, 0,
	  "@admin @slow @dangerous", "server", "1.0.0",
	  "Make the server a replica of another instance, or promote it as "
	  "master", NULL },
	{ "wait", 3, cmd_wait, "noscript", 0, 0, 0, "@slow @connection",
	  "generic", "3.0.0",
	  "Wait for the synchronous replication of all the write commands "
	  "sent in the context of the current connection", NULL },
	{ "psync", -3, cmd_psync, "admin noscript no_async_loading no_multi",
	  0, 0, 0, "@admin @slow @dangerous", "server", "2.8.0",
	  "Internal command used for replication", NULL },
	{ "replconf", -2, cmd_replconf, "admin noscript loading stale", 0, 0, 0,
	  "@admin @slow @dangerous", "server", "3.0.0",
	  "An internal command for configuring the replication stream", NULL },
	{ NULL, 0, NULL, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, NULL },
};

/* ---- life cycle ---- */

int kv_repl_init(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;

	r->fd = r->tmpfd = -1;
	replid_new(r->replid);
	r->backlog_size = s->cfg.backlog_size;
	r->backlog = malloc(r->backlog_size);
	r->master = calloc(1, sizeof(*r->master));
	if (!r->backlog || !r->master) {
		fprintf(stderr, "rift-kv: out of memory for the replication "
				"backlog (backlog_size %zu)\n",
			r->backlog_size);
		return -1;
	}
	r->master->srv = s;
	r->master->fd = -1;
	snprintf(r->master->addr, sizeof(r->master->addr), "master");
	if (rift_timer_create(s->rift, on_retry, s, &r->retry)) {
		fprintf(stderr, "rift-kv: replication: rift_timer_create failed\n");
		return -1;
	}
	if (!s->cfg.replicaof[0])
		return 0;
	r->replica = 1;
	r->replid[0] = '\0';
	if (s->cfg.replica_file[0])
		file_load(s);
	return become_replica(s, s->cfg.replicaof);
}

void kv_repl_stop(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;

	if (r->retry) {
		rift_timer_destroy(r->retry);
		r->retry = NULL;
	}
	replica_drop(s, 0);
	/* the replicas' links close with their clients (rift_shutdown) */
}

int kv_repl_busy(const struct kv_server *s)
{
	return s->repl.closing > 0;
}

void kv_repl_free(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;

	if (r->ring_mem && rift_mem_dereg(r->ring_mem) == 0)
		r->ring_mem = NULL;
	if (!r->ring_mem) /* else rift may still write it: kept */
		free(r->ring);
	kv_resp_parser_free(r->msgp);
	kv_resp_parser_free(r->logp);
	if (r->master) {
		kv_resp_out_free(&r->master->out);
		free(r->master);
	}
	if (r->fd >= 0)
		close(r->fd);
	if (r->tmpfd >= 0)
		close(r->tmpfd);
	kv_resp_out_free(&r->fbuf);
	kv_resp_out_free(&r->scratch);
	free(r->backlog);
	memset(r, 0, sizeof(*r));
	r->fd = r->tmpfd = -1;
}

void kv_repl_client_gone(struct kv_client *c)
{
	struct kv_server *s = c->srv;

	if (c->flags & KV_BLOCKED) {
		c->flags &= ~(unsigned)KV_BLOCKED;
		s->repl.blocked--;
	}
	if (c->link) {
		repl_log("replica %s gone", c->addr);
		link_free(s, c->link);
	}
}

int kv_repl_pump(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;

	if (r->links)
		ship(s);
	return r->blocked ? waits(s) : -1;
}

void kv_repl_cron(struct kv_server *s)
{
	struct kv_repl *r = &s->repl;
	static int tick;

	if (++tick % KV_HZ)
		return;
	if (r->backlog_size > s->cfg.backlog_size) {
		uint64_t floor = r->offset;

		for (struct kv_repl_link *l = r->links; l; l = l->next)
			if (l->sent < floor)
				floor = l->sent;
		if (r->offset - floor <= s->cfg.backlog_size)
			backlog_resize(r, s->cfg.backlog_size); /* else later */
	}
	if (r->state == KV_REPL_UP) {
		replica_ack(s); /* each second: the primary's lag */
		file_rewrite(s);
	}
}

/* ---- INFO replication ---- */

void kv_repl_info(struct kv_server *s, struct kv_text *t)
{
	struct kv_repl *r = &s->repl;
	static const char *const states[] = { "down", "connecting", "handshake",
					       "sync", "up" };
	int i = 0;

	kv_tprintf(t, "# Replication\r\nrole:%s\r\n",
		   r->replica ? "slave" : "master");
	if (r->replica) {
		kv_tprintf(t,
			   "master_url:%s\r\n"
			   "master_link_status:%s\r\n"
			   "master_link_state:%s\r\n"
			   "master_last_io_seconds_ago:%lld\r\n"
			   "master_sync_in_progress:%d\r\n"
			   "slave_repl_offset:%llu\r\n"
			   "slave_read_repl_offset:%llu\r\n"
			   "slave_read_only:1\r\n"
			   "master_link_down_since_seconds:%lld\r\n"
			   "repl_transport:%s\r\n"
			   "repl_ring_size:%zu\r\n"
			   "repl_ring_writes:%llu\r\n"
			   "repl_ring_bytes:%llu\r\n"
			   "repl_log_messages:%llu\r\n"
			   "repl_full_syncs:%llu\r\n"
			   "repl_partial_syncs:%llu\r\n"
			   "repl_loaded_offset:%llu\r\n"
			   "repl_file_rewrites:%llu\r\n"
			   "repl_link_errors:%llu\r\n"
			   "repl_last_error:%s\r\n",
			   r->primary, r->state == KV_REPL_UP ? "up" : "down",
			   states[r->state],
			   r->last_io_ms ? (long long)(s->now_ms - r->last_io_ms) / 1000
					 : -1LL,
			   r->state == KV_REPL_SYNC,
			   (unsigned long long)r->offset,
			   (unsigned long long)r->consumed,
			   r->down_since_ms
				   ? (long long)(s->now_ms - r->down_since_ms) / 1000
				   : -1LL,
			   r->ring_mem ? "rdma-write" : "messages",
			   r->ring_mem ? s->cfg.ring_size : 0,
			   (unsigned long long)r->ring_writes,
			   (unsigned long long)r->ring_bytes,
			   (unsigned long long)r->log_msgs,
			   (unsigned long long)r->full_syncs,
			   (unsigned long long)r->partial_syncs,
			   (unsigned long long)r->loaded,
			   (unsigned long long)r->rewrites,
			   (unsigned long long)r->link_errors, r->last_error);
	}
	kv_tprintf(t, "connected_slaves:%zu\r\n", r->nlinks);
	for (struct kv_repl_link *l = r->links; l; l = l->next, i++) {
		char ip[64], *colon;
		const char *a = strstr(l->c->addr, "://");

		/* a rift peer is "tcp://127.0.0.1:50304" */
		snprintf(ip, sizeof(ip), "%s", a ? a + 3 : l->c->addr);
		colon = strrchr(ip, ':');
		if (colon)
			*colon = '\0';
		kv_tprintf(t,
			   "slave%d:ip=%s,port=%d,state=%s,offset=%llu,lag=%lld,"
			   "transport=%s,ring_writes=%llu\r\n",
			   i, ip, l->port, l->online ? "online" : "send_bulk",
			   (unsigned long long)l->acked,
			   (long long)(s->now_ms - l->ack_ms) / 1000,
			   l->token_len ? "rdma-write" : "messages",
			   (unsigned long long)l->writes);
	}
	kv_tprintf(t,
		   "master_replid:%s\r\n"
		   "master_repl_offset:%llu\r\n"
		   "repl_backlog_active:%d\r\n"
		   "repl_backlog_size:%zu\r\n"
		   "repl_backlog_first_byte_offset:%llu\r\n"
		   "repl_backlog_histlen:%zu\r\n"
		   "sync_full:%llu\r\n"
		   "sync_partial_ok:%llu\r\n"
		   "sync_partial_err:%llu\r\n",
		   r->replid[0] ? r->replid : "0000000000000000000000000000000000000000",
		   (unsigned long long)r->offset, !r->replica, r->backlog_size,
		   (unsigned long long)backlog_start(r), r->histlen,
		   (unsigned long long)r->sync_full,
		   (unsigned long long)r->sync_partial_ok,
		   (unsigned long long)r->sync_partial_err);
}
