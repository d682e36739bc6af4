/*
 * libFuzzer target for the config loader: the input is the text of a
 * config file, fed to rift_config_load's parser and key table
 * (src/util/toml.c, toml_lex.c, src/api/config_file.c, config_keys.c)
 * through rift__config_load_text, exactly len bytes with no NUL after
 * them, so that reading past the text is caught.
 *
 * Properties beyond "no crash", from rift.h's contract: a refusal leaves
 * the config unchanged, with a NUL-terminated message; an accepted file
 * gives a config rift_config_check accepts; rift_config_dump of it is
 * TOML that loads back to the same config, whatever the device name
 * holds (corpus/config/dump-control-chars: 25 control characters, which
 * a fixed line of the dump once cut mid-escape).
 */
#include <stdlib.h>
#include <string.h>

#include "api/config_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dump[16384];
	char err[RIFT_CONFIG_ERRLEN];
	rift_config cfg, before, again;
	char *text = malloc(size ? size : 1);
	int rc, n;

	if (!text)
		return 0;
	memcpy(text, data, size);
	rift_config_init(&cfg);
	before = cfg;
	if (rift__cfg_start(&cfg, err, sizeof(err)) != 0)
		abort();
	memset(err, 0x5a, sizeof(err));
	rc = rift__config_load_text(&cfg, "fuzz.toml", text, size, err,
				    sizeof(err));
	free(text);
	if (rc) {
		if ((rc != RIFT_EINVAL && rc != RIFT_ENOMEM) ||
		    !memchr(err, '\0', sizeof(err)) || err[0] == '\0' ||
		    memcmp(&cfg, &before, sizeof(cfg)) != 0)
			abort();
		return 0;
	}
	if (err[0] != '\0' || rift_config_check(&cfg) != 0)
		abort();
	n = rift_config_dump(&cfg, dump, sizeof(dump));
	if (n <= 0 || (size_t)n >= sizeof(dump))
		abort();
	rift_config_init(&again);
	if (rift__config_load_text(&again, "dump.toml", dump, (size_t)n, err,
				   sizeof(err)) != 0)
		abort();
	for (size_t i = 0; i < N_KEYS; i++)
		if (!rift__cfg_same(&again, &cfg, &rift__cfg_keys[i]))
			abort();
	return 0;
}
