/*
 * rdma_devices.c - what the machine's RDMA devices look like: the verbs
 * transport's devices hook, behind rift_devices() (api/devices.c).
 *
 * Every verbs call goes through the wrappers of verbs.c; this file only
 * reads the structs they fill and turns numbers into the words
 * ibv_devinfo and `rdma link` use.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transports/verbs/rdma_int.h"

/* The names iproute2's `rdma link` prints. */
static const char *port_state_name(int s)
{
	static const char *const names[] = {"NOP",   "DOWN",   "INIT",
					    "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	return s >= 0 && s < (int)RIFT_ARRAY_SIZE(names) ? names[s] : "UNKNOWN";
}

static const char *phys_state_name(int s)
{
	static const char *const names[] = {
		"UNKNOWN",
		"SLEEP",
		"POLLING",
		"DISABLED",
		"TRAINING",
		"LINK_UP",
		"LINK_ERROR_RECOVERY",
		"PHY_TEST",
	};

	return s >= 0 && s < (int)RIFT_ARRAY_SIZE(names) ? names[s] : "UNKNOWN";
}

static const char *transport_name(enum ibv_transport_type t)
{
	switch (t) {
	case IBV_TRANSPORT_IB:
		return "InfiniBand";
	case IBV_TRANSPORT_IWARP:
		return "iWARP";
	case IBV_TRANSPORT_USNIC:
		return "usNIC";
	case IBV_TRANSPORT_USNIC_UDP:
		return "usNIC UDP";
	default:
		return "unspecified";
	}
}

static const char *link_layer_name(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_UNSPECIFIED: /* what older InfiniBand HCAs say */
	case IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet";
	default:
		return "Unknown";
	}
}

/* IBV_MTU_256 (1) .. IBV_MTU_4096 (5) in bytes; 0 for anything else. */
static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

/* active_width is a bit per lane count, not the count. */
static uint32_t width_lanes(uint8_t w)
{
	switch (w) {
	case 1:
		return 1;
	case 2:
		return 4;
	case 4:
		return 8;
	case 8:
		return 12;
	case 16:
		return 2;
	default:
		return 0;
	}
}

/* active_speed per lane, Mb/s, rounded as ibv_devinfo prints them. */
static uint32_t lane_mbps(uint8_t s)
{
	switch (s) {
	case 1: /* SDR */
		return 2500;
	case 2: /* DDR */
		return 5000;
	case 4: /* QDR */
	case 8: /* FDR10 */
		return 10000;
	case 16: /* FDR */
		return 14000;
	case 32: /* EDR */
		return 25000;
	case 64: /* HDR */
		return 50000;
	case 128: /* NDR */
		return 100000;
	default:
		return 0;
	}
}

static void guid_str(uint64_t guid, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x",
		 (unsigned)(guid >> 48) & 0xffff,
		 (unsigned)(guid >> 32) & 0xffff,
		 (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
}

static bool gid_v4_mapped(const uint8_t *raw)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};

	return memcmp(raw, prefix, sizeof(prefix)) == 0;
}

static void gid_fill(rift_gid_info *g, const struct ibv_gid_entry *e)
{
	g->index = e->gid_index;
	switch (e->gid_type) {
	case IBV_GID_TYPE_ROCE_V1:
		g->type = RIFT_GID_ROCE_V1;
		break;
	case IBV_GID_TYPE_ROCE_V2:
		g->type = RIFT_GID_ROCE_V2;
		break;
	default:
		g->type = RIFT_GID_IB;
		break;
	}
	inet_ntop(AF_INET6, e->gid.raw, g->gid, sizeof(g->gid));
	if (g->type == RIFT_GID_IB)
		return;
	if (gid_v4_mapped(e->gid.raw))
		inet_ntop(AF_INET, e->gid.raw + 12, g->ip, sizeof(g->ip));
	else
		memcpy(g->ip, g->gid, sizeof(g->ip));
	/* The interface may be gone by now; the name then stays "". */
	if (e->ndev_ifindex) {
		char name[IF_NAMESIZE];

		if (if_indextoname(e->ndev_ifindex, name))
			snprintf(g->netdev, sizeof(g->netdev), "%s", name);
	}
}

static int gid_cmp(const void *a, const void *b)
{
	const struct ibv_gid_entry *x = a, *y = b;

	if (x->port_num != y->port_num)
		return x->port_num < y->port_num ? -1 : 1;
	if (x->gid_index != y->gid_index)
		return x->gid_index < y->gid_index ? -1 : 1;
	return 0;
}

static void device_fill(rift_device_info *d, const struct ibv_device_attr *a)
{
	rift_device_limits *l = &d->limits;

	d->node_guid = be64toh(a->node_guid);
	guid_str(d->node_guid, d->node_guid_str, sizeof(d->node_guid_str));
	d->sys_image_guid = be64toh(a->sys_image_guid);
	snprintf(d->fw_ver, sizeof(d->fw_ver), "%s", a->fw_ver);
	d->vendor_id = a->vendor_id;
	d->vendor_part_id = a->vendor_part_id;
	d->hw_ver = a->hw_ver;
	d->port_count = a->phys_port_cnt;
	l->max_mr_size = a->max_mr_size;
	l->page_size_cap = a->page_size_cap;
	l->max_qp = (uint32_t)a->max_qp;
	l->max_qp_wr = (uint32_t)a->max_qp_wr;
	l->max_sge = (uint32_t)a->max_sge;
	l->max_sge_rd = (uint32_t)a->max_sge_rd;
	l->max_cq = (uint32_t)a->max_cq;
	l->max_cqe = (uint32_t)a->max_cqe;
	l->max_mr = (uint32_t)a->max_mr;
	l->max_pd = (uint32_t)a->max_pd;
	l->max_mw = (uint32_t)a->max_mw;
	l->max_ah = (uint32_t)a->max_ah;
	l->max_srq = (uint32_t)a->max_srq;
	l->max_srq_wr = (uint32_t)a->max_srq_wr;
	l->max_srq_sge = (uint32_t)a->max_srq_sge;
	l->max_qp_rd_atom = (uint32_t)a->max_qp_rd_atom;
	l->max_qp_init_rd_atom = (uint32_t)a->max_qp_init_rd_atom;
	l->atomic_cap = (uint32_t)a->atomic_cap;
	l->local_ca_ack_delay = a->local_ca_ack_delay;
	l->mw_type2 = rift__vb_attr_mw_type2(a);
}

static void port_fill(rift_port_info *p, uint32_t num,
		      const struct ibv_port_attr *a)
{
	p->number = num;
	p->state = (int)a->state;
	snprintf(p->state_name, sizeof(p->state_name), "%s",
		 port_state_name(p->state));
	p->phys_state = a->phys_state;
	snprintf(p->phys_state_name, sizeof(p->phys_state_name), "%s",
		 phys_state_name(p->phys_state));
	snprintf(p->link_layer, sizeof(p->link_layer), "%s",
		 link_layer_name(a->link_layer));
	p->max_mtu = mtu_bytes(a->max_mtu);
	p->active_mtu = mtu_bytes(a->active_mtu);
	p->width = width_lanes(a->active_width);
	p->lane_mbps = lane_mbps(a->active_speed);
	p->speed_mbps = (uint64_t)p->width * p->lane_mbps;
	p->lid = a->lid;
	p->sm_lid = a->sm_lid;
	p->lmc = a->lmc;
	p->max_msg_size = a->max_msg_sz;
	p->port_cap_flags = a->port_cap_flags;
	p->gid_table_len = a->gid_tbl_len > 0 ? (uint32_t)a->gid_tbl_len : 0;
}

/* Spread the valid GID entries of the device over its ports. */
static void gids_fill(rift_device_info *d, struct ibv_gid_entry *e, int n)
{
	uint32_t shown = d->port_count < RIFT_DEVICE_MAX_PORTS
				 ? d->port_count
				 : RIFT_DEVICE_MAX_PORTS;

	/* The kernel hands them out in this order; do not depend on it. */
	qsort(e, (size_t)n, sizeof(*e), gid_cmp);
	for (int i = 0; i < n; i++) {
		rift_port_info *p;

		if (e[i].port_num < 1 || e[i].port_num > shown)
			continue;
		p = &d->ports[e[i].port_num - 1];
		if (p->gid_count < RIFT_PORT_MAX_GIDS) {
			rift_gid_info *g = &p->gids[p->gid_count];

			gid_fill(g, &e[i]);
			if (!p->netdev[0] && g->netdev[0])
				memcpy(p->netdev, g->netdev, sizeof(p->netdev));
		}
		p->gid_count++;
	}
}

/*
 * Fill d from one device.  A failure is recorded in d->status and
 * d->error, keeping what was read before it.
 */
static void device_query(struct ibv_device *dev, rift_device_info *d)
{
	struct ibv_context *c = NULL;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_gid_entry *gids = NULL;
	rift__vb_err err = "";
	size_t table = 0;
	int rc, n;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", rift__vb_device_name(dev));
	snprintf(d->transport, sizeof(d->transport), "%s",
		 transport_name(dev->transport_type));
	rc = rift__vb_device_open(dev, &c, err);
	if (rc)
		goto out;
	rc = rift__vb_device_query(c, &da, err);
	if (rc)
		goto close_device;
	device_fill(d, &da);
	/* Every port, to size the GID table query; the first few are kept. */
	for (uint32_t p = 1; p <= d->port_count; p++) {
		rc = rift__vb_port_query(c, (uint8_t)p, &pa, err);
		if (rc)
			goto close_device;
		if (p <= RIFT_DEVICE_MAX_PORTS)
			port_fill(&d->ports[p - 1], p, &pa);
		if (pa.gid_tbl_len > 0)
			table += (size_t)pa.gid_tbl_len;
	}
	if (table == 0)
		goto close_device;
	gids = calloc(table, sizeof(*gids));
	if (!gids) {
		rc = RIFT_ENOMEM;
		snprintf(err, sizeof(err), "GID table of %zu entries: %s",
			 table, rift_strerror(rc));
		goto close_device;
	}
	n = rift__vb_gid_table(c, gids, table, err);
	if (n < 0) {
		rc = n;
		goto free_gids;
	}
	gids_fill(d, gids, n);
free_gids:
	free(gids);
close_device:
	rift__vb_device_close(c);
out:
	if (rc) {
		d->status = rc;
		snprintf(d->error, sizeof(d->error), "%s", err);
	}
}

/* The devices hook (rift__transport_ops.devices): rift_devices, whose
 * arguments the API checked already. */
int rift__rdma_devices(rift_device_info *out, int max, char *err,
		       size_t errlen)
{
	struct ibv_device **list;
	rift__vb_err e = "";
	int rc, n;

	rc = rift__vb_devices(&list, &n, e);
	if (rc == RIFT_ENOSYS) {
		/* No uverbs in the kernel: no device, not a failure. */
		rift__set_err(err, errlen,
			"the kernel has no RDMA support loaded (%s)", e);
		return 0;
	}
	if (rc) {
		rift__set_err(err, errlen, "%s", e);
		return rc;
	}
	for (int i = 0; i < n && i < max; i++)
		device_query(list[i], &out[i]);
	rift__vb_devices_free(list);
	return n;
}
