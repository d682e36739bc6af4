/*
 * log.c - the debug log (RIFT_LOG=debug, to stderr) and the monotonic
 * clock: what every layer, the pool included, uses and nothing below.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int rift__log_level;

void rift__log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "rift[%d] %.6f %s\n", (int)getpid(),
		(double)rift__clock_us() / 1e6, line);
}

uint64_t rift__clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
