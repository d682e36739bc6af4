/*
 * devices.c - rift_devices(), what the machine's RDMA devices look like
 * (the transport that has devices describes them: the verbs one,
 * transports/verbs/rdma_devices.c), and rift_config_memlock_need(), what
 * the configured pool will lock.
 */
#include <string.h>

#include "internal.h"
#include "memory/pool.h"

const char *rift_gid_type_name(rift_gid_type t)
{
	switch (t) {
	case RIFT_GID_IB:
		return "IB";
	case RIFT_GID_ROCE_V1:
		return "RoCE v1";
	case RIFT_GID_ROCE_V2:
		return "RoCE v2";
	}
	return "unknown";
}

int rift_devices(rift_device_info *out, int max, char *err, size_t errlen)
{
	rift__set_err(err, errlen, "%s", "");
	if (max < 0 || (max > 0 && !out)) {
		rift__set_err(err, errlen, "rift_devices: max = %d with out %s", max,
			out ? "set" : "NULL");
		return RIFT_EINVAL;
	}
	return rift__transports_devices(out, max, err, errlen);
}

uint64_t rift_config_memlock_need(const rift_config *cfg, uint64_t *max_bytes)
{
	rift_config c;
	struct rift__pool_geometry g;

	rift_config_init(&c);
	if (cfg) {
		if (rift_config_check(cfg)) {
			if (max_bytes)
				*max_bytes = UINT64_MAX;
			return UINT64_MAX;
		}
		memcpy(&c, cfg, cfg->size);
	}
	/* Exactly the pool's own arithmetic: what it registers, it pins. */
	rift__pool_geometry(&c, &g);
	if (max_bytes)
		*max_bytes = (uint64_t)g.max_regions * g.region;
	return (uint64_t)g.initial_regions * g.region;
}
