/*
 * config_origin.c - where each value of a rift_config came from, for
 * rift_config_dump.
 *
 * Where a value came from is kept beside the struct, not in it (rift_config
 * has no room and must not grow for this): a small registry maps the
 * address of a struct that load/env changed to the origin of each key and
 * a snapshot of the values they set.  A value that no longer equals its
 * snapshot was changed by the program afterwards ("set in code").
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "api/config_int.h"

/* ---- origins ---- */

pthread_mutex_t rift__cfg_origin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct origin_slot origin_slots[ORIGIN_SLOTS];
static uint64_t origin_clock;

static bool slot_matches(const struct origin_slot *s, const rift_config *c)
{
	bool any = false;

	for (size_t i = 0; i < N_KEYS; i++) {
		if (!rift__cfg_same(&s->snap, c, &rift__cfg_keys[i]))
			return false;
		any |= s->o[i].from != FROM_DEFAULT;
	}
	return any;
}

/*
 * The slot for cfg: its own, or else one whose values cfg still has all
 * of (cfg is a copy of a loaded struct).  Call with
 * rift__cfg_origin_lock held.
 */
struct origin_slot *rift__cfg_slot_find(const rift_config *cfg,
					const rift_config *values)
{
	struct origin_slot *copy = NULL;

	for (size_t i = 0; i < ORIGIN_SLOTS; i++) {
		struct origin_slot *s = &origin_slots[i];

		if (s->cfg == cfg)
			return s;
		if (s->cfg && !copy && slot_matches(s, values))
			copy = s;
	}
	return copy;
}

static uint8_t slot_file(struct origin_slot *s, const char *path)
{
	for (uint8_t i = 0; i < ORIGIN_FILES; i++) {
		if (!s->files[i][0]) {
			snprintf(s->files[i], ORIGIN_PATH, "%s", path);
			return i;
		}
		if (!strncmp(s->files[i], path, ORIGIN_PATH - 1))
			return i;
	}
	return NO_FILE;
}

/*
 * load/env changed cfg from before to after, setting the keys in got[]
 * (from path when it is a file).  Origins recorded earlier for cfg stay
 * when their value was not changed in between.
 */
void rift__cfg_origin_record(const rift_config *cfg, const rift_config *before,
			     const rift_config *after, const struct origin *got,
			     const char *path)
{
	struct origin_slot *s, *old, *mine = NULL;

	pthread_mutex_lock(&rift__cfg_origin_lock);
	old = rift__cfg_slot_find(cfg, before);
	if (old && old->cfg == cfg) {
		mine = old;
	} else {
		/* a free slot, else the least recently used (never old) */
		for (size_t i = 0; i < ORIGIN_SLOTS; i++) {
			s = &origin_slots[i];
			if (s == old)
				continue;
			if (!s->cfg) {
				mine = s;
				break;
			}
			if (!mine || s->used < mine->used)
				mine = s;
		}
		if (old)
			*mine = *old; /* cfg started as a copy of old's */
		else
			memset(mine, 0, sizeof(*mine));
		mine->cfg = cfg;
	}
	for (size_t i = 0; i < N_KEYS; i++) {
		if (mine->o[i].from != FROM_DEFAULT &&
		    !rift__cfg_same(&mine->snap, before, &rift__cfg_keys[i]))
			mine->o[i].from = FROM_DEFAULT;
		if (got[i].from == FROM_DEFAULT)
			continue;
		mine->o[i] = got[i];
		if (got[i].from == FROM_FILE)
			mine->o[i].file = slot_file(mine, path);
	}
	mine->snap = *after;
	mine->used = ++origin_clock;
	pthread_mutex_unlock(&rift__cfg_origin_lock);
}
