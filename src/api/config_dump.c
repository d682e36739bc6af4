/*
 * config_dump.c - rift_config_dump: a rift_config back to TOML, with the
 * origin of every value.
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/config_int.h"
#include "util/toml.h"

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

/*
 * Text for a comment: a file's path may hold anything, but a comment ends
 * at a newline and may hold neither control characters nor bytes that are
 * not UTF-8, so those are written as \xNN.
 */
static void out_comment(struct out *o, const char *s)
{
	const char *end = s + strlen(s);
	size_t n;

	for (; s < end; s += n) {
		unsigned char c = (unsigned char)*s;

		n = rift__toml_utf8_seq(s, end);
		if (n == 0 || c < 0x20 || c == 0x7f) {
			outf(o, "\\x%02X", c);
			n = 1;
		} else {
			outf(o, "%.*s", (int)n, s);
		}
	}
}

/* One size as TOML: "64KiB" when it is whole KiB, else an integer. */
static void out_size(struct out *o, int64_t v)
{
	char one[32];

	rift__toml_size_str((uint64_t)v, one, sizeof(one));
	if (v > 0 && (v & 1023) == 0)
		outf(o, "\"%s\"", one);
	else
		outf(o, "%s", one);
}

/*
 * "key = value" for one row, as TOML, straight into the output: a device
 * name of control characters writes six bytes for each of them, so no
 * fixed line holds every value.
 */
static void dump_value(struct out *o, const struct key *k,
		       const rift_config *c)
{
	int64_t v = rift__cfg_get_int(c, k, 0);
	char s[STRING_MAX];
	int n;

	outf(o, "%s = ", k->name);
	switch (k->kind) {
	case K_UINT:
	case K_INT:
		outf(o, "%lld", (long long)v);
		break;
	case K_SIZE:
		out_size(o, v);
		break;
	case K_BOOL:
		if (v == 0 || v == 1)
			outf(o, "%s", v ? "true" : "false");
		else
			outf(o, "%lld", (long long)v);
		break;
	case K_ENUM:
		if (v >= k->min && v <= k->max)
			outf(o, "\"%s\"", k->names[v]);
		else
			outf(o, "%lld", (long long)v);
		break;
	case K_STRING:
		snprintf(s, sizeof(s), "%.*s", (int)k->width - 1,
			 (const char *)c + k->off);
		n = rift__toml_quote(s, o->n < o->len ? o->buf + o->n : NULL,
				     o->n < o->len ? o->len - o->n : 0);
		o->n += (size_t)n;
		break;
	case K_SIZES:
		outf(o, "[");
		for (size_t i = 0; i < rift__cfg_elems(k); i++) {
			outf(o, "%s", i ? ", " : "");
			out_size(o, rift__cfg_get_int(c, k, i));
		}
		outf(o, "]");
		break;
	}
}

/* Whether rift_config_init took k's default from k's own variable
 * (log.level from RIFT_LOG): it is set to one of k's names. */
static bool env_default(const struct key *k)
{
	const char *v = k->env ? secure_getenv(k->env) : NULL;

	for (size_t i = 0; v && k->names && k->names[i]; i++)
		if (!strcmp(v, k->names[i]))
			return true;
	return false;
}

int rift_config_dump(const rift_config *cfg, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	struct origin org[N_KEYS];
	char files[ORIGIN_FILES][ORIGIN_PATH];
	char from[ORIGIN_PATH + 32];
	const struct origin_slot *slot;
	rift_config c, def, snap;
	bool known;

	if (buf && len)
		buf[0] = '\0';
	if (!rift__cfg_size_ok(cfg) || (!buf && len))
		return RIFT_EINVAL;
	rift_config_init(&def);
	c = def;
	memcpy(&c, cfg, cfg->size);
	snap = c;
	pthread_mutex_lock(&rift__cfg_origin_lock);
	slot = rift__cfg_slot_find(cfg, &c);
	known = slot != NULL;
	if (known) {
		memcpy(org, slot->o, sizeof(org));
		memcpy(files, slot->files, sizeof(files));
		snap = slot->snap;
	}
	pthread_mutex_unlock(&rift__cfg_origin_lock);

	outf(&o, "# rift %s effective configuration (rift_config_dump).\n"
		 "# After each value: where it came from.\n",
	     rift_version_string());
	for (size_t s = 0; s < N_SECTIONS; s++) {
		outf(&o, "\n[%s]\n", rift__cfg_sections[s]);
		for (size_t i = 0; i < N_KEYS; i++) {
			const struct key *k = &rift__cfg_keys[i];
			char var[96];
			size_t start = o.n;

			if (strcmp(k->section, rift__cfg_sections[s]) != 0)
				continue;
			dump_value(&o, k, &c);
			if (known && org[i].from == FROM_FILE &&
			    rift__cfg_same(&snap, &c, k)) {
				snprintf(from, sizeof(from), "%s:%u",
					 org[i].file == NO_FILE
						 ? "(file)"
						 : files[org[i].file],
					 org[i].line);
			} else if (known && org[i].from == FROM_ENV &&
				   rift__cfg_same(&snap, &c, k)) {
				rift__cfg_env_var(k, org[i].alias, var,
						  sizeof(var));
				snprintf(from, sizeof(from), "env %s", var);
			} else if (rift__cfg_same(&def, &c, k) &&
				   env_default(k)) {
				/* rift_config_init took it from there */
				snprintf(from, sizeof(from), "env %s", k->env);
			} else if (rift__cfg_same(&def, &c, k)) {
				snprintf(from, sizeof(from), "default");
			} else {
				snprintf(from, sizeof(from), "set in code");
			}
			/* origins line up after short values */
			outf(&o, "%*s # ",
			     o.n - start < 32 ? (int)(32 - (o.n - start)) : 0,
			     "");
			out_comment(&o, from);
			outf(&o, "\n");
		}
	}
	return o.n > INT_MAX ? INT_MAX : (int)o.n;
}
