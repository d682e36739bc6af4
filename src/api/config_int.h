/*
 * config_int.h - what the files behind rift_config_load, rift_config_env
 * and rift_config_dump share: the table of keys and the helpers that read
 * it (config_keys.c), the origins of values (config_origin.c) and the
 * names of the environment variables (config_env.c); each function is
 * under the file that defines it.  config_keys.c has the overview.
 */
#ifndef RIFT_API_CONFIG_INT_H
#define RIFT_API_CONFIG_INT_H

#include <pthread.h>

#include "internal.h"

enum kind {
	K_UINT,   /* unsigned integer */
	K_INT,    /* signed integer (int32_t member) */
	K_SIZE,   /* bytes: integer or "64KiB" */
	K_BOOL,   /* true/false (int member) */
	K_ENUM,   /* one of names[] (enum member, value = index) */
	K_STRING, /* char array */
	K_SIZES,  /* array of RIFT_BLOCK_CLASSES sizes (uint32_t[]) */
};

struct key {
	const char *section;
	const char *name;
	const char *alias;        /* also accepted, or NULL */
	const char *field;        /* rift_config member, as rift_config_check
				     names it in its messages */
	size_t off, width;        /* of the member */
	enum kind kind;
	int64_t min, max;         /* integer kinds, per element */
	const char *const *names; /* K_ENUM: by value, NULL-terminated */
	const char *help;
	/* Another environment variable for the key, besides the ones of
	 * its name and alias, and the one rift_config_init takes its
	 * default from (log.level: RIFT_LOG), or NULL. */
	const char *env;
	/* K_STRING: whether the text is a value of the key: 0, or -1 with
	 * why in m (group.local: addresses); NULL: any text that fits. */
	int (*check)(const char *s, char *m, size_t len);
};

#define N_KEYS 45    /* rows of rift__cfg_keys (config_keys.c checks it) */
#define N_SECTIONS 9 /* entries of rift__cfg_sections */
/* Bytes of the widest K_STRING member (group.local's). */
#define STRING_MAX RIFT_GROUP_LOCAL_MAX

/*
 * A converted value, before it is stored: integers for the numeric kinds
 * (one per element for K_SIZES), the text for K_STRING.
 */
struct setting {
	int64_t v[RIFT_BLOCK_CLASSES];
	const char *s;
};

/* ---- origins ---- */

enum { FROM_DEFAULT = 0, FROM_FILE, FROM_ENV };
/* Which variable set a key (struct origin.alias, FROM_ENV). */
enum { ENV_NAME = 0, ENV_ALIAS = 1, ENV_OTHER = 2 };

#define ORIGIN_SLOTS 16
#define ORIGIN_FILES 4
#define ORIGIN_PATH 256
#define NO_FILE 0xff

struct origin {
	uint8_t from;  /* FROM_* */
	uint8_t file;  /* FROM_FILE: index in slot files, or NO_FILE */
	uint8_t alias; /* the alias name was used; FROM_ENV: which
			  variable, ENV_NAME, ENV_ALIAS or ENV_OTHER */
	unsigned line, col;
};

struct origin_slot {
	const rift_config *cfg; /* whose origins; NULL = free */
	uint64_t used;          /* last use, for eviction */
	rift_config snap;       /* values when the origins were recorded */
	struct origin o[N_KEYS];
	char files[ORIGIN_FILES][ORIGIN_PATH];
};

/* ---- config_keys.c: the key table, values, messages, conversions ---- */

extern const struct key rift__cfg_keys[];
extern const char *const rift__cfg_sections[];

bool rift__cfg_size_ok(const rift_config *cfg);
/* What rift_config_load and rift_config_env do first: clear err, check
 * cfg came from rift_config_init.  0 or RIFT_EINVAL with err set. */
int rift__cfg_start(const rift_config *cfg, char *err, size_t errlen);
size_t rift__cfg_elems(const struct key *k);
int64_t rift__cfg_get_int(const rift_config *c, const struct key *k, size_t i);
bool rift__cfg_same(const rift_config *a, const rift_config *b,
		    const struct key *k);
void rift__cfg_show(const struct key *k, int64_t v, char *buf, size_t len);
bool rift__cfg_close_to(const char *typed, const char *known);
const char *rift__cfg_section_of(const char *name);
const struct key *rift__cfg_find_key(const char *section, const char *name,
				     bool *alias);
void rift__cfg_suggest(const char *section, const char *name, char *buf,
		       size_t len);
void rift__cfg_choices(const struct key *k, char *buf, size_t len);
int rift__cfg_check_range(const struct key *k, const char *as,
			  const struct setting *st, long *at, char *m,
			  size_t len);
void rift__cfg_store(rift_config *c, const struct key *k,
		     const struct setting *st);
int rift__cfg_cross_check(const rift_config *c, const struct origin *got,
			  long *at, char *m, size_t len);

/* ---- config_file.c: rift_config_load ---- */

/*
 * rift_config_load on len bytes of text already in memory, which need
 * no NUL after them (rift_config_load reads the file, then calls this;
 * so does the fuzz target): name stands for the file in messages and
 * origins.  rift__cfg_start(cfg, err, errlen) comes first.  Returns as
 * rift_config_load does.
 */
int rift__config_load_text(rift_config *cfg, const char *name,
			   const char *text, size_t len, char *err,
			   size_t errlen);

/* ---- config_origin.c: where each value came from ---- */

extern pthread_mutex_t rift__cfg_origin_lock;

struct origin_slot *rift__cfg_slot_find(const rift_config *cfg,
					const rift_config *values);
void rift__cfg_origin_record(const rift_config *cfg,
			     const rift_config *before,
			     const rift_config *after,
			     const struct origin *got, const char *path);

/* ---- config_env.c: rift_config_env ---- */

/*
 * Convert a value written as in an environment variable (a file's value
 * without quotes; booleans also 1/0, yes/no, on/off; sizes with units;
 * the block sizes comma-separated): 0, or -1 with the reason in m.  The
 * range is not checked (rift__cfg_check_range).  URL options use it too.
 */
int rift__cfg_from_text(const struct key *k, const char *s,
			struct setting *st, char *m, size_t len);

void rift__cfg_env_name(const char *section, const char *name, char *buf,
			size_t len);
/* The variable of k that set it (ENV_NAME, ENV_ALIAS or ENV_OTHER). */
void rift__cfg_env_var(const struct key *k, unsigned which, char *buf,
		       size_t len);

#endif
