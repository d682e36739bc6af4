/*
 * fault.c - fault points of test builds (-DRIFT_FAULT_INJECTION): the
 * nth hit of a point fails, count times in a row (internal.h lists the
 * points).  Every layer has some; none of them depends on another.
 */
#include <string.h>

#include "internal.h"

#ifdef RIFT_FAULT_INJECTION
static struct {
	uint64_t hits, nth, count, fired;
} faults[RIFT_FAULT__COUNT];

void rift__fault_arm(rift__fault_point p, uint64_t nth, uint64_t count)
{
	faults[p].hits = 0;
	faults[p].nth = nth;
	faults[p].count = count;
}

void rift__fault_clear(void)
{
	memset(faults, 0, sizeof(faults));
}

bool rift__fault_hit(rift__fault_point p)
{
	if (!faults[p].count)
		return false;
	if (++faults[p].hits < faults[p].nth)
		return false;
	faults[p].count--;
	faults[p].fired++;
	return true;
}

uint64_t rift__fault_fired(rift__fault_point p)
{
	return faults[p].fired;
}
#endif
