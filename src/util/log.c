/*
 * log.c - log lines and the monotonic clock: what every layer, the pool
 * included, uses and nothing below.
 *
 * A context's lines go, up to its cfg.log_level, to its cfg.log_cb or to
 * stderr.  Lines that concern no context (the process's registered pool,
 * the threads beside the loops) go to stderr up to rift__log_level: the
 * level RIFT_LOG named when rift_config_init last read it (rift.h,
 * "Logging").  The macros of internal.h compare the level before any
 * argument is evaluated, so a log point below the level costs that one
 * compare.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* By level, as RIFT_LOG and log.level write them; NULL-terminated for the
 * config key table (api/config_keys.c). */
const char *const rift__log_names[] = { "off",  "error", "warn",
					"info", "debug", NULL };

/* Stored atomically (contexts are made on any thread); WARN until a
 * rift_config_init read RIFT_LOG. */
int rift__log_level = RIFT_LOG_WARN;

const char *rift_log_level_name(rift_log_level level)
{
	if ((unsigned)level > RIFT_LOG_DEBUG)
		return "unknown";
	return rift__log_names[level];
}

int rift__log_parse(const char *name)
{
	for (int i = 0; rift__log_names[i]; i++)
		if (!strcmp(name, rift__log_names[i]))
			return i;
	return -1;
}

int rift__log_env(void)
{
	const char *s = secure_getenv("RIFT_LOG");

	return s ? rift__log_parse(s) : RIFT_LOG_WARN;
}

void rift__log(const rift_ctx *ctx, int level, const char *fmt, ...)
{
	char line[RIFT_LOG_LINE];
	int saved = errno; /* callers may go on with errno after a line */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (ctx && ctx->cfg.log_cb)
		ctx->cfg.log_cb(ctx->cfg.log_user, (rift_log_level)level, line);
	else
		fprintf(stderr, "rift[%d] %.6f %s: %s\n", (int)getpid(),
			(double)rift__clock_us() / 1e6,
			rift_log_level_name((rift_log_level)level), line);
	errno = saved;
}

uint64_t rift__clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
