/*
 * config_file.c - rift_config_load: rift_config from a TOML file, every
 * key checked against the table of config_keys.c, and an error naming the
 * file, line and column of the first fault.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/config_int.h"
#include "util/toml.h"

#define MAX_FILE_SIZE (1u << 20) /* a config file is a few KiB */

/* ---- conversions ---- */

/* A size from a file: an integer, or a string with a unit. */
static int toml_size(const struct key *k, const char *as, long idx,
		     const struct rift__toml_val *v, int64_t *out, char *m,
		     size_t len)
{
	char ix[16] = "";
	const char *why;
	uint64_t u;

	if (idx >= 0)
		snprintf(ix, sizeof(ix), "[%ld]", idx);
	if (v->type == RIFT_TOML_INT) {
		*out = v->u.i;
		return 0;
	}
	if (v->type != RIFT_TOML_STRING) {
		snprintf(m, len,
			 "%s%s must be a size (an integer or a string like "
			 "\"64KiB\"), not %s",
			 as, ix, rift__toml_type_name(v->type));
		return -1;
	}
	if (rift__toml_size(v->u.s, &u, &why) != 0) {
		snprintf(m, len, "%s%s = \"%.40s\" is not a size: %s", as, ix,
			 v->u.s, why);
		return -1;
	}
	if (u > (uint64_t)INT64_MAX) {
		char hi[32], lo[32];

		rift__cfg_show(k, k->min, lo, sizeof(lo));
		rift__cfg_show(k, k->max, hi, sizeof(hi));
		snprintf(m, len, "%s%s = \"%.40s\" is out of range %s..%s (%s)",
			 as, ix, v->u.s, lo, hi, k->help);
		return -1;
	}
	*out = (int64_t)u; /* the range check follows */
	return 0;
}

/*
 * Convert a value of a file.  Returns 0, or -1 with the message in m and
 * *at the array element at fault (-1: the whole value).
 */
static int from_toml(const struct key *k, const char *as,
		     const struct rift__toml_val *v, struct setting *st,
		     long *at, char *m, size_t len)
{
	char ch[64];

	*at = -1;
	switch (k->kind) {
	case K_UINT:
	case K_INT:
		if (v->type != RIFT_TOML_INT) {
			snprintf(m, len, "%s must be an integer, not %s", as,
				 rift__toml_type_name(v->type));
			return -1;
		}
		st->v[0] = v->u.i;
		break;
	case K_SIZE:
		if (toml_size(k, as, -1, v, &st->v[0], m, len))
			return -1;
		break;
	case K_BOOL:
		if (v->type != RIFT_TOML_BOOL) {
			snprintf(m, len, "%s must be true or false, not %s", as,
				 rift__toml_type_name(v->type));
			return -1;
		}
		st->v[0] = v->u.b;
		break;
	case K_ENUM:
		rift__cfg_choices(k, ch, sizeof(ch));
		if (v->type != RIFT_TOML_STRING) {
			snprintf(m, len, "%s must be one of %s, not %s", as, ch,
				 rift__toml_type_name(v->type));
			return -1;
		}
		for (st->v[0] = 0; k->names[st->v[0]]; st->v[0]++)
			if (!strcmp(k->names[st->v[0]], v->u.s))
				return 0;
		snprintf(m, len, "%s = \"%.40s\" is not one of %s", as, v->u.s,
			 ch);
		return -1;
	case K_STRING:
		if (v->type != RIFT_TOML_STRING) {
			snprintf(m, len, "%s must be a string, not %s", as,
				 rift__toml_type_name(v->type));
			return -1;
		}
		st->s = v->u.s;
		break;
	case K_SIZES:
		if (v->type != RIFT_TOML_ARRAY) {
			snprintf(m, len,
				 "%s must be an array of %d sizes, not %s", as,
				 RIFT_BLOCK_CLASSES,
				 rift__toml_type_name(v->type));
			return -1;
		}
		if (v->u.arr.n != RIFT_BLOCK_CLASSES) {
			snprintf(m, len, "%s needs exactly %d sizes, got %zu",
				 as, RIFT_BLOCK_CLASSES, v->u.arr.n);
			return -1;
		}
		for (size_t i = 0; i < RIFT_BLOCK_CLASSES; i++)
			if (toml_size(k, as, (long)i, &v->u.arr.items[i],
				      &st->v[i], m, len)) {
				*at = (long)i;
				return -1;
			}
		break;
	}
	return 0;
}

/* ---- rift_config_load ---- */

static int read_file(const char *path, char **text, size_t *len, char *err,
		     size_t errlen)
{
	char *buf = NULL, ebuf[128];
	size_t cap = 0, n = 0;
	struct stat st;
	int rc = 0, e;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		e = errno;
		rift__set_err(err, errlen, "%s: cannot open: %s", path,
			strerror_r(e, ebuf, sizeof(ebuf)));
		return rift__from_errno(e);
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		rift__set_err(err, errlen, "%s: is a directory, not a config file",
			path);
		fclose(f);
		return RIFT_EINVAL;
	}
	for (;;) {
		size_t got;

		if (n == cap) {
			char *nb;

			if (cap >= MAX_FILE_SIZE) {
				rift__set_err(err, errlen,
					"%s: larger than %u KiB; not a config "
					"file?",
					path, MAX_FILE_SIZE >> 10);
				rc = RIFT_EINVAL;
				goto out_free;
			}
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				rift__set_err(err, errlen, "%s: out of memory", path);
				rc = RIFT_ENOMEM;
				goto out_free;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				e = errno;
				rift__set_err(err, errlen, "%s: cannot read: %s",
					path,
					strerror_r(e, ebuf, sizeof(ebuf)));
				rc = rift__from_errno(e);
				goto out_free;
			}
			break;
		}
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	goto out_close;
out_free:
	free(buf);
out_close:
	fclose(f);
	return rc;
}

struct loader {
	const struct rift__toml_doc *doc;
	rift_config tmp;           /* the result, committed on success */
	uint32_t size;             /* the caller's struct size */
	struct origin got[N_KEYS]; /* keys this file set */
	char *err;
	size_t errlen;
};

static int check_table(struct loader *ld, const struct rift__toml_table *t)
{
	char hint[160] = "";

	if (rift__cfg_section_of(t->name))
		return 0;
	for (size_t i = 0; i < N_SECTIONS; i++)
		if (rift__cfg_close_to(t->name, rift__cfg_sections[i])) {
			snprintf(hint, sizeof(hint), "; did you mean [%s]?",
				 rift__cfg_sections[i]);
			break;
		}
	if (!hint[0])
		snprintf(hint, sizeof(hint),
			 " (sections: progress, connect, session, tcp, rdma, "
			 "pool, metrics, log, group)");
	return rift__toml_errf(ld->err, ld->errlen, ld->doc->name, t->line,
			       t->col, "unknown section [%s]%s", t->name, hint);
}

static int apply_kv(struct loader *ld, const struct rift__toml_kv *kv)
{
	const char *name = ld->doc->name;
	const struct key *k;
	struct setting st;
	char m[320], hint[96];
	bool alias;
	long at;
	size_t i;

	if (kv->table_idx < 0) {
		rift__cfg_suggest(NULL, kv->key, hint, sizeof(hint));
		return rift__toml_errf(ld->err, ld->errlen, name, kv->line,
				       kv->col,
				       "key '%s' is outside any section%s",
				       kv->key,
				       hint[0] ? hint : "; keys go under a "
							"[section] header");
	}
	k = rift__cfg_find_key(kv->table, kv->key, &alias);
	if (!k) {
		rift__cfg_suggest(kv->table, kv->key, hint, sizeof(hint));
		return rift__toml_errf(ld->err, ld->errlen, name, kv->line,
				       kv->col, "unknown key '%s' in [%s]%s",
				       kv->key, kv->table, hint);
	}
	i = (size_t)(k - rift__cfg_keys);
	if (ld->got[i].from != FROM_DEFAULT)
		return rift__toml_errf(ld->err, ld->errlen, name, kv->line,
				       kv->col,
				       "'%s' sets the same value as '%s' at "
				       "line %u",
				       kv->key,
				       ld->got[i].alias ? k->alias : k->name,
				       ld->got[i].line);
	if (k->off + k->width > ld->size)
		return rift__toml_errf(ld->err, ld->errlen, name, kv->line,
				       kv->col,
				       "'%s' is not in this program's "
				       "rift_config (built with an older "
				       "rift.h)",
				       kv->key);
	memset(&st, 0, sizeof(st));
	if (from_toml(k, kv->key, &kv->val, &st, &at, m, sizeof(m)) ||
	    rift__cfg_check_range(k, kv->key, &st, &at, m, sizeof(m))) {
		const struct rift__toml_val *v = &kv->val;

		if (at >= 0 && kv->val.type == RIFT_TOML_ARRAY)
			v = &kv->val.u.arr.items[at];
		return rift__toml_errf(ld->err, ld->errlen, name, v->line,
				       v->col, "%s", m);
	}
	rift__cfg_store(&ld->tmp, k, &st);
	ld->got[i].from = FROM_FILE;
	ld->got[i].alias = alias;
	ld->got[i].line = kv->line;
	ld->got[i].col = kv->col;
	return 0;
}

static int apply_doc(struct loader *ld)
{
	const struct rift__toml_doc *d = ld->doc;
	size_t t = 0;
	char m[320];
	long at;
	int rc;

	/* headers and keys in document order, so the first error is first */
	for (size_t i = 0; i < d->n_kvs; i++) {
		for (; (long)t <= d->kvs[i].table_idx; t++) {
			rc = check_table(ld, &d->tables[t]);
			if (rc)
				return rc;
		}
		rc = apply_kv(ld, &d->kvs[i]);
		if (rc)
			return rc;
	}
	for (; t < d->n_tables; t++) {
		rc = check_table(ld, &d->tables[t]);
		if (rc)
			return rc;
	}
	if (rift__cfg_cross_check(&ld->tmp, ld->got, &at, m, sizeof(m)) == 0)
		return 0;
	if (at < 0) {
		rift__set_err(ld->err, ld->errlen, "%s: %s", d->name, m);
		return RIFT_EINVAL;
	}
	return rift__toml_errf(ld->err, ld->errlen, d->name, ld->got[at].line,
			       ld->got[at].col, "%s", m);
}

int rift__config_load_text(rift_config *cfg, const char *name,
			   const char *text, size_t len, char *err,
			   size_t errlen)
{
	struct rift__toml_doc doc;
	struct loader ld;
	rift_config before;
	int rc;

	rc = rift__toml_parse(&doc, name, text, len, err, errlen);
	if (rc)
		return rc;
	memset(&ld, 0, sizeof(ld));
	ld.doc = &doc;
	ld.size = cfg->size;
	ld.err = err;
	ld.errlen = errlen;
	rift_config_init(&ld.tmp);
	memcpy(&ld.tmp, cfg, cfg->size);
	before = ld.tmp;
	rc = apply_doc(&ld);
	if (rc == 0) {
		memcpy(cfg, &ld.tmp, cfg->size);
		rift__cfg_origin_record(cfg, &before, &ld.tmp, ld.got, name);
	}
	rift__toml_free(&doc);
	return rc;
}

int rift_config_load(rift_config *cfg, const char *path, char *err,
		     size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	rc = rift__cfg_start(cfg, err, errlen);
	if (rc)
		return rc;
	if (!path) {
		rift__set_err(err, errlen, "config: no file name");
		return RIFT_EINVAL;
	}
	rc = read_file(path, &text, &len, err, errlen);
	if (rc)
		return rc;
	rc = rift__config_load_text(cfg, path, text, len, err, errlen);
	free(text);
	return rc;
}
