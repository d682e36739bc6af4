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

/* "key = value" for one row, as TOML. */
static void dump_value(const struct key *k, const rift_config *c, char *buf,
		       size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s = ", k->name);
	int64_t v = rift__cfg_get_int(c, k, 0);
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
		for (size_t i = 0; i < rift__cfg_elems(k) && n < len; i++) {
			char one[32];

			bool unit;

			v = rift__cfg_get_int(c, k, i);
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
	char line[160], from[ORIGIN_PATH + 32];
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

			if (strcmp(k->section, rift__cfg_sections[s]) != 0)
				continue;
			dump_value(k, &c, line, sizeof(line));
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
			outf(&o, "%-*s # %s\n", 32, line, from);
		}
	}
	return o.n > INT_MAX ? INT_MAX : (int)o.n;
}
