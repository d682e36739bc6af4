/*
 * rift-info --check FILE: the configuration a rift program would build
 * from FILE, in the library's order (rift_config_init, rift_config_load,
 * then rift_config_env: RIFT_<SECTION>_<KEY> wins over the file), and for
 * each value that does not come from the defaults, where it came from.
 *
 * The origins are the library's own (rift_config_dump's comment after
 * each value): the tool uses only rift.h, and reads them from the dump.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"

/* One value of a dump: "section.key", its TOML text, its origin. */
struct row {
	char key[96];
	char value[160];
	char from[320]; /* "default", "env RIFT_X_Y", "FILE:LINE", ... */
};

/* rift_config_dump of cfg, in memory that the caller frees; NULL if it
 * cannot be made. */
static char *dump(const rift_config *cfg)
{
	int n = rift_config_dump(cfg, NULL, 0);
	char *buf;

	if (n < 0 || !(buf = malloc((size_t)n + 1)))
		return NULL;
	if (rift_config_dump(cfg, buf, (size_t)n + 1) != n) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * Where the comment of a dump line begins: after the last " # ", unless
 * the line ends in " # PATH:LINE" for the file that was loaded (a file
 * name may hold " # " itself).
 */
static const char *comment_of(const char *line, size_t len, const char *path)
{
	const char *hit = NULL;
	size_t pl = strlen(path);

	for (const char *p = line; (p = strstr(p, " # ")) && p < line + len;
	     p++) {
		const char *t = p + 3, *end = line + len;

		if ((size_t)(end - t) > pl + 1 && !strncmp(t, path, pl) &&
		    t[pl] == ':' &&
		    strspn(t + pl + 1, "0123456789") ==
			    (size_t)(end - t - pl - 1))
			return t; /* this file's, whatever else the line holds
				   */
		hit = t;
	}
	return hit;
}

/* Rows of a dump (section.key = value  # origin); their number, or -1. */
static int parse_dump(const char *text, const char *path, struct row *rows,
		      int max)
{
	char section[64] = "";
	int n = 0;

	for (const char *line = text; *line;) {
		size_t len = strcspn(line, "\n"), vl;
		const char *eq = strstr(line, " = "), *c;

		if (line[0] == '[' && len < sizeof(section) + 2) {
			snprintf(section, sizeof(section), "%.*s", (int)len - 2,
				 line + 1);
		} else if (len && line[0] != '#' && eq && eq < line + len) {
			if (n == max || !(c = comment_of(line, len, path)) ||
			    c < eq + 3)
				return -1;
			snprintf(rows[n].key, sizeof(rows[n].key), "%s.%.*s",
				 section, (int)(eq - line), line);
			/* the value, without the padding before " # " */
			vl = (size_t)(c - 3 - (eq + 3));

			while (vl && eq[3 + vl - 1] == ' ')
				vl--;
			snprintf(rows[n].value, sizeof(rows[n].value), "%.*s",
				 (int)vl, eq + 3);
			snprintf(rows[n].from, sizeof(rows[n].from), "%.*s",
				 (int)(line + len - c), c);
			n++;
		}
		line += len + (line[len] == '\n');
	}
	return n;
}

/* "environment RIFT_X_Y", "file FILE:LINE" or the dump's own words. */
static void origin_words(const char *from, char *buf, size_t len)
{
	if (!strncmp(from, "env ", 4))
		snprintf(buf, len, "environment %s", from + 4);
	else if (!strcmp(from, "default") || !strcmp(from, "set in code"))
		snprintf(buf, len, "%s", from);
	else
		snprintf(buf, len, "file %s", from);
}

#define MAX_ROWS 128 /* keys of a dump, with room to grow */

/* The values that do not come from the defaults, and from where. */
static int print_origins(const rift_config *cfg, const char *path)
{
	rift_config def;
	struct row *mine, *dflt;
	char *text, *dtext, where[400];
	int n, nd, listed = 0, rc = EXIT_ERROR;

	rift_config_init(&def);
	text = dump(cfg);
	dtext = dump(&def);
	mine = calloc(MAX_ROWS, sizeof(*mine));
	dflt = calloc(MAX_ROWS, sizeof(*dflt));
	if (!text || !dtext || !mine || !dflt) {
		fprintf(stderr, "rift-info: out of memory\n");
		goto free_all;
	}
	n = parse_dump(text, path, mine, MAX_ROWS);
	nd = parse_dump(dtext, path, dflt, MAX_ROWS);
	if (n < 0 || nd != n) {
		fprintf(stderr,
			"rift-info: cannot read rift_config_dump's output\n");
		goto free_all;
	}
	for (int i = 0; i < n; i++) {
		char kv[300];

		if (strcmp(mine[i].key, dflt[i].key)) {
			fprintf(stderr, "rift-info: cannot read "
					"rift_config_dump's output\n");
			goto free_all;
		}
		if (!strcmp(mine[i].from, "default"))
			continue;
		if (!listed++)
			printf("not from the defaults:\n");
		origin_words(mine[i].from, where, sizeof(where));
		snprintf(kv, sizeof(kv), "%s = %s", mine[i].key, mine[i].value);
		printf("    %-36s %s%s\n", kv, where,
		       strcmp(mine[i].value, dflt[i].value)
			       ? ""
			       : " (the default value)");
	}
	if (!listed)
		printf("every value is the default\n");
	rc = 0;
free_all:
	free(mine);
	free(dflt);
	free(text);
	free(dtext);
	return rc;
}

int check_file(const char *path)
{
	rift_config cfg;
	char err[RIFT_CONFIG_ERRLEN];

	rift_config_init(&cfg);
	if (rift_config_load(&cfg, path, err, sizeof(err)) ||
	    rift_config_env(&cfg, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return EXIT_ERROR;
	}
	printf("%s: ok\n", path);
	return print_origins(&cfg, path);
}
