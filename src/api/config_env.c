/*
 * config_env.c - rift_config_env: rift_config from RIFT_<SECTION>_<KEY>
 * environment variables, every one checked against the table of
 * config_keys.c.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "api/config_int.h"
#include "util/toml.h"

/* ---- conversions ---- */

static int env_size(const struct key *k, const char *s, int64_t *out,
		    char *m, size_t len)
{
	const char *why;
	uint64_t u;

	if (rift__toml_int(s, out, &why) == 0)
		return 0; /* "-1" and "0x1000" reach the range check */
	if (rift__toml_size(s, &u, &why) != 0) {
		snprintf(m, len, "'%.40s' is not a size: %s", s, why);
		return -1;
	}
	*out = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
	RIFT_UNUSED(k);
	return 0;
}

int rift__cfg_from_text(const struct key *k, const char *s,
			struct setting *st, char *m, size_t len)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };
	const char *why, *p;
	char ch[64], item[64];

	switch (k->kind) {
	case K_UINT:
	case K_INT:
		if (rift__toml_int(s, &st->v[0], &why) != 0) {
			snprintf(m, len, "'%.40s' is not an integer (%s)", s,
				 why);
			return -1;
		}
		return 0;
	case K_SIZE:
		return env_size(k, s, &st->v[0], m, len);
	case K_BOOL:
		for (size_t i = 0; i < RIFT_ARRAY_SIZE(yes); i++) {
			if (!strcasecmp(s, yes[i])) {
				st->v[0] = 1;
				return 0;
			}
			if (!strcasecmp(s, no[i])) {
				st->v[0] = 0;
				return 0;
			}
		}
		snprintf(m, len,
			 "'%.40s' is not a boolean (true/false, 1/0, yes/no, "
			 "on/off)",
			 s);
		return -1;
	case K_ENUM:
		for (st->v[0] = 0; k->names[st->v[0]]; st->v[0]++)
			if (!strcmp(k->names[st->v[0]], s))
				return 0;
		rift__cfg_choices(k, ch, sizeof(ch));
		snprintf(m, len, "'%.40s' is not one of %s", s, ch);
		return -1;
	case K_STRING:
		st->s = s;
		return 0;
	case K_SIZES:
		p = s;
		for (size_t i = 0;; i++) {
			size_t n = strcspn(p, ","), b = 0;

			while (b < n && (p[b] == ' ' || p[b] == '\t'))
				b++;
			while (n > b && (p[n - 1] == ' ' || p[n - 1] == '\t'))
				n--;
			if (i == RIFT_BLOCK_CLASSES || n - b >= sizeof(item)) {
				snprintf(m, len,
					 "'%.60s' is not %d sizes separated by "
					 "commas",
					 s, RIFT_BLOCK_CLASSES);
				return -1;
			}
			memcpy(item, p + b, n - b);
			item[n - b] = '\0';
			if (env_size(k, item, &st->v[i], m, len))
				return -1;
			p += strcspn(p, ",");
			if (*p == '\0') {
				if (i + 1 == RIFT_BLOCK_CLASSES)
					return 0;
				snprintf(m, len,
					 "'%.60s' is not %d sizes separated by "
					 "commas",
					 s, RIFT_BLOCK_CLASSES);
				return -1;
			}
			p++;
		}
	}
	return 0;
}

/* ---- rift_config_env ---- */

/* "RIFT_RDMA_SQ_DEPTH" for rdma/sq_depth. */
void rift__cfg_env_name(const char *section, const char *name, char *buf,
			size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "RIFT_%s_%s", section, name);

	for (size_t i = 0; i < n && i < len; i++)
		buf[i] = (char)toupper((unsigned char)buf[i]);
}

void rift__cfg_env_var(const struct key *k, unsigned which, char *buf,
		       size_t len)
{
	if (which == ENV_OTHER)
		snprintf(buf, len, "%s", k->env);
	else
		rift__cfg_env_name(k->section,
				   which == ENV_ALIAS ? k->alias : k->name, buf,
				   len);
}

/*
 * A RIFT_<SECTION>_* variable that names no key is a typo: report it
 * rather than run with the default the operator meant to change.
 */
static int env_unknown(char *err, size_t errlen)
{
	char var[96], want[96], hint[128];

	for (char **e = environ; e && *e; e++) {
		size_t vl = strcspn(*e, "=");

		if (strncmp(*e, "RIFT_", 5) != 0 || vl >= sizeof(var))
			continue;
		memcpy(var, *e, vl);
		var[vl] = '\0';
		for (size_t s = 0; s < N_SECTIONS; s++) {
			size_t sl = strlen(rift__cfg_sections[s]);
			bool known = false;

			rift__cfg_env_name(rift__cfg_sections[s], "", want,
					   sizeof(want));
			if (strncmp(var, want, sl + 6) != 0)
				continue;
			hint[0] = '\0';
			for (size_t i = 0; i < N_KEYS && !known; i++) {
				const struct key *k = &rift__cfg_keys[i];

				if (strcmp(k->section,
					   rift__cfg_sections[s]) != 0)
					continue;
				for (int a = 0; a < 2; a++) {
					const char *kn = a ? k->alias : k->name;

					if (!kn)
						continue;
					rift__cfg_env_name(k->section, kn,
							   want, sizeof(want));
					if (!strcmp(var, want))
						known = true;
					else if (!hint[0] &&
						 rift__cfg_close_to(var, want))
						snprintf(hint, sizeof(hint),
							 "; did you mean %s?",
							 want);
				}
			}
			if (!known) {
				rift__set_err(err, errlen,
					"env %s: no such setting in [%s]%s",
					var, rift__cfg_sections[s], hint);
				return RIFT_EINVAL;
			}
		}
	}
	return 0;
}

int rift_config_env(rift_config *cfg, char *err, size_t errlen)
{
	struct origin got[N_KEYS];
	rift_config tmp, before;
	char var[96], var2[96], m[320];
	long at;
	int rc;

	rc = rift__cfg_start(cfg, err, errlen);
	if (rc)
		return rc;
	/* set-user-ID: the environment is the caller's, not the owner's */
	if (getauxval(AT_SECURE))
		return 0;
	rc = env_unknown(err, errlen);
	if (rc)
		return rc;
	memset(got, 0, sizeof(got));
	rift_config_init(&tmp);
	memcpy(&tmp, cfg, cfg->size);
	before = tmp;
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &rift__cfg_keys[i];
		const char *val = NULL;
		unsigned which = ENV_NAME;
		struct setting st;
		bool alias;

		/* The key's variables: its name's, its alias's, its own
		 * (RIFT_LOG); one of them at most may be set. */
		for (unsigned w = ENV_NAME; w <= ENV_OTHER; w++) {
			const char *v;

			if ((w == ENV_ALIAS && !k->alias) ||
			    (w == ENV_OTHER && !k->env))
				continue;
			rift__cfg_env_var(k, w, var2, sizeof(var2));
			v = secure_getenv(var2);
			if (!v)
				continue;
			if (val) {
				rift__set_err(err, errlen,
					"env %s: %s is set too; use one",
					var2, var);
				return RIFT_EINVAL;
			}
			val = v;
			which = w;
			memcpy(var, var2, sizeof(var));
		}
		if (!val)
			continue;
		alias = which == ENV_ALIAS;
		if (k->off + k->width > cfg->size) {
			rift__set_err(err, errlen,
				"env %s: not in this program's rift_config "
				"(built with an older rift.h)",
				var);
			return RIFT_EINVAL;
		}
		memset(&st, 0, sizeof(st));
		if (rift__cfg_from_text(k, val, &st, m, sizeof(m)) ||
		    rift__cfg_check_range(k, alias ? k->alias : k->name, &st,
					  &at, m, sizeof(m))) {
			rift__set_err(err, errlen, "env %s: %s", var, m);
			return RIFT_EINVAL;
		}
		rift__cfg_store(&tmp, k, &st);
		got[i].from = FROM_ENV;
		got[i].alias = (uint8_t)which;
	}
	if (rift__cfg_cross_check(&tmp, got, &at, m, sizeof(m))) {
		if (at < 0) {
			rift__set_err(err, errlen, "environment: %s", m);
		} else {
			const struct key *k = &rift__cfg_keys[at];

			rift__cfg_env_var(k, got[at].alias, var, sizeof(var));
			rift__set_err(err, errlen, "env %s: %s", var, m);
		}
		return RIFT_EINVAL;
	}
	memcpy(cfg, &tmp, cfg->size);
	rift__cfg_origin_record(cfg, &before, &tmp, got, NULL);
	return 0;
}
