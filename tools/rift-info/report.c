/*
 * rift-info's report: devices, ports and GIDs with ibv_devinfo's words,
 * the modules, memory and warnings, as text folded to 79 columns or as
 * one JSON object; and the small helpers of both.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"

/* ---- output: text to stdout, or JSON built up as we go ---- */

void note_warn(struct notes *nt, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (nt->n_warn == MAX_NOTES)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s)
		nt->warn[nt->n_warn++] = s;
}

void notes_free(struct notes *nt)
{
	for (int i = 0; i < nt->n_warn; i++)
		free(nt->warn[i]);
	nt->n_warn = 0;
}

void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* "name": "value" with the separator that comes before it. */
static void json_kv(const char *sep, const char *k, const char *v)
{
	printf("%s", sep);
	json_str(k);
	fputs(": ", stdout);
	json_str(v);
}

static void json_ku(const char *sep, const char *k, uint64_t v)
{
	printf("%s", sep);
	json_str(k);
	printf(": %" PRIu64, v);
}

/* "16 MiB", "1.5 GiB", "512 bytes": sizes as people read them. */
const char *size_str(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	uint64_t div = 1;

	while (u < 4 && v >= div * 1024) {
		div *= 1024;
		u++;
	}
	if (v % div == 0)
		snprintf(buf, len, "%" PRIu64 " %s", v / div, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", (double)v / (double)div, unit[u]);
	return buf;
}

/*
 * Print text after prefix, folded at spaces to fit 79 columns, later lines
 * indented by indent spaces.
 */
void print_wrapped(const char *prefix, const char *text, int indent)
{
	int col = printf("%s", prefix);
	bool fresh = true; /* no word on this line yet */

	while (*text) {
		int w = (int)strcspn(text, " ");

		/* Keep "16 MiB" on one line. */
		if (text[w] == ' ' && strchr("KMGT", text[w + 1]) &&
		    strncmp(text + w + 2, "iB", 2) == 0)
			w += 1 + (int)strcspn(text + w + 1, " ");

		if (!fresh && col + 1 + w > 79) {
			col = printf("\n%*s", indent, "") - 1;
			fresh = true;
		}
		col += printf("%s%.*s", fresh ? "" : " ", w, text);
		fresh = false;
		text += w;
		text += strspn(text, " ");
	}
	putchar('\n');
}

/* ---- text report ---- */

static void print_gid(const rift_gid_info *g)
{
	char gid[64];

	snprintf(gid, sizeof(gid), "GID[%3u]:", g->index);
	printf("      %-20s%s, %s", gid, g->gid, rift_gid_type_name(g->type));
	if (g->ip[0] && strcmp(g->ip, g->gid) != 0)
		printf(", IPv4 %s", g->ip);
	if (g->netdev[0])
		printf(", netdev %s", g->netdev);
	putchar('\n');
}

static void print_empty(uint32_t from, uint32_t to)
{
	char gid[64];

	if (from > to)
		return;
	if (from == to)
		snprintf(gid, sizeof(gid), "GID[%3u]:", from);
	else
		snprintf(gid, sizeof(gid), "GID[%u..%u]:", from, to);
	printf("      %-20s(empty)\n", gid);
}

static void print_port(const rift_device_info *d, const rift_port_info *p,
		       bool verbose)
{
	uint32_t next = 0, shown;

	printf("    port:     %u\n", p->number);
	/* The one-line summary `rdma link` prints. */
	printf("      %-20s%s/%u state %s physical_state %s%s%s\n",
	       "link:", d->name, p->number, p->state_name, p->phys_state_name,
	       p->netdev[0] ? " netdev " : "", p->netdev);
	printf("      %-20s%s (%d)\n", "state:", p->state_name, p->state);
	printf("      %-20s%s (%d)\n", "phys_state:", p->phys_state_name,
	       p->phys_state);
	printf("      %-20s%s\n", "link_layer:", p->link_layer);
	printf("      %-20s%u\n", "max_mtu:", p->max_mtu);
	printf("      %-20s%u\n", "active_mtu:", p->active_mtu);
	if (p->speed_mbps)
		printf("      %-20s%" PRIu64 " Mb/s (%uX, %u Mb/s per lane)\n",
		       "speed:", p->speed_mbps, p->width, p->lane_mbps);
	else
		printf("      %-20sunknown\n", "speed:");
	if (verbose) {
		printf("      %-20s%u\n", "port_lid:", p->lid);
		printf("      %-20s%u\n", "sm_lid:", p->sm_lid);
		printf("      %-20s0x%02x\n", "port_lmc:", p->lmc);
		printf("      %-20s0x%x\n", "max_msg_sz:", p->max_msg_size);
		printf("      %-20s0x%08x\n",
		       "port_cap_flags:", p->port_cap_flags);
		printf("      %-20s%u\n", "gid_tbl_len:", p->gid_table_len);
	}
	shown = p->gid_count < RIFT_PORT_MAX_GIDS ? p->gid_count
						  : RIFT_PORT_MAX_GIDS;
	if (!shown)
		printf("      %-20snone\n", "GIDs:");
	for (uint32_t i = 0; i < shown; i++) {
		if (verbose && p->gids[i].index > next)
			print_empty(next, p->gids[i].index - 1);
		print_gid(&p->gids[i]);
		next = p->gids[i].index + 1;
	}
	if (p->gid_count > shown)
		printf("      ... %u more non-empty GIDs (rift-info shows the "
		       "first %d)\n",
		       p->gid_count - shown, RIFT_PORT_MAX_GIDS);
	else if (verbose && p->gid_table_len)
		print_empty(next, p->gid_table_len - 1);
}

static void print_limits(const rift_device_limits *l)
{
	printf("    %-22s0x%" PRIx64 "\n", "max_mr_size:", l->max_mr_size);
	printf("    %-22s0x%" PRIx64 "\n", "page_size_cap:", l->page_size_cap);
	printf("    %-22s%u\n", "max_qp:", l->max_qp);
	printf("    %-22s%u\n", "max_qp_wr:", l->max_qp_wr);
	printf("    %-22s%u\n", "max_sge:", l->max_sge);
	printf("    %-22s%u\n", "max_sge_rd:", l->max_sge_rd);
	printf("    %-22s%u\n", "max_cq:", l->max_cq);
	printf("    %-22s%u\n", "max_cqe:", l->max_cqe);
	printf("    %-22s%u\n", "max_mr:", l->max_mr);
	printf("    %-22s%u\n", "max_pd:", l->max_pd);
	printf("    %-22s%u\n", "max_mw:", l->max_mw);
	printf("    %-22s%u\n", "max_ah:", l->max_ah);
	printf("    %-22s%u\n", "max_srq:", l->max_srq);
	printf("    %-22s%u\n", "max_srq_wr:", l->max_srq_wr);
	printf("    %-22s%u\n", "max_srq_sge:", l->max_srq_sge);
	printf("    %-22s%u\n", "max_qp_rd_atom:", l->max_qp_rd_atom);
	printf("    %-22s%u\n", "max_qp_init_rd_atom:", l->max_qp_init_rd_atom);
	printf("    %-22s%s (%u)\n", "atomic_cap:",
	       l->atomic_cap == 0   ? "ATOMIC_NONE"
	       : l->atomic_cap == 1 ? "ATOMIC_HCA"
				    : "ATOMIC_GLOB",
	       l->atomic_cap);
	printf("    %-22s%u\n", "local_ca_ack_delay:", l->local_ca_ack_delay);
	printf("    %-22s%s\n", "mw_type2:",
	       l->mw_type2 ? "yes (rendezvous READs through a window per "
			     "message)"
			   : "no (large messages stream, no rendezvous)");
}

static uint32_t ports_shown(const rift_device_info *d)
{
	return d->port_count < RIFT_DEVICE_MAX_PORTS ? d->port_count
						     : RIFT_DEVICE_MAX_PORTS;
}

void print_device(const rift_device_info *d, const struct opts *o)
{
	printf("hca_id: %s\n", d->name);
	if (d->status) {
		printf("    %-22s%s\n", "error:", d->error);
		if (d->status == RIFT_EACCES || d->status == RIFT_EPERM)
			printf("    %-22sno permission on /dev/infiniband: run "
			       "as root or join the group that owns it\n",
			       "hint:");
	}
	printf("    %-22s%s\n", "transport:", d->transport);
	if (d->fw_ver[0])
		printf("    %-22s%s\n", "fw_ver:", d->fw_ver);
	printf("    %-22s%s\n", "node_guid:", d->node_guid_str);
	if (o->verbose)
		printf("    %-22s%04x:%04x:%04x:%04x\n", "sys_image_guid:",
		       (unsigned)(d->sys_image_guid >> 48) & 0xffff,
		       (unsigned)(d->sys_image_guid >> 32) & 0xffff,
		       (unsigned)(d->sys_image_guid >> 16) & 0xffff,
		       (unsigned)d->sys_image_guid & 0xffff);
	printf("    %-22s0x%04x\n", "vendor_id:", d->vendor_id);
	printf("    %-22s%u\n", "vendor_part_id:", d->vendor_part_id);
	printf("    %-22s0x%X\n", "hw_ver:", d->hw_ver);
	printf("    %-22s%u\n", "phys_port_cnt:", d->port_count);
	if (o->verbose && !d->status)
		print_limits(&d->limits);
	for (uint32_t i = 0; i < ports_shown(d); i++)
		if (!o->port || o->port == d->ports[i].number)
			print_port(d, &d->ports[i], o->verbose);
	if (!o->port && d->port_count > ports_shown(d))
		printf("    ... ports %u..%u not shown (rift reports at most "
		       "%d per device)\n",
		       ports_shown(d) + 1, d->port_count,
		       RIFT_DEVICE_MAX_PORTS);
	putchar('\n');
}

void print_modules(const struct modules *m, bool verbose)
{
	bool any = false;

	printf("kernel modules:\n");
	for (size_t i = 0; i < N_CORE; i++)
		printf("    %-22s%s%s%s\n", core_modules[i],
		       mod_state_str(m->core[i]),
		       m->core[i] == MOD_AVAILABLE ? ": modprobe " : "",
		       m->core[i] == MOD_AVAILABLE ? core_modules[i] : "");
	printf("    %-22s", "providers:");
	for (size_t i = 0; i < N_PROV; i++)
		if (m->prov[i] == MOD_LOADED || m->prov[i] == MOD_BUILTIN) {
			printf("%s%s (%s)", any ? ", " : "",
			       provider_modules[i], mod_state_str(m->prov[i]));
			any = true;
		}
	if (!any)
		printf("none loaded%s",
		       m->prov[PROV_RXE] == MOD_AVAILABLE
			       ? " (soft-RoCE: modprobe rdma_rxe)"
			       : "");
	putchar('\n');
	if (verbose)
		for (size_t i = 0; i < N_PROV; i++)
			if (m->prov[i] != MOD_LOADED &&
			    m->prov[i] != MOD_BUILTIN)
				printf("    %-22s%s\n", provider_modules[i],
				       mod_state_str(m->prov[i]));
	print_wrapped("    missing:              ",
		      m->missing[0] ? m->missing : "none", 26);
	printf("    %-22s%s\n", "userspace:",
	       m->userspace ? "providers installed (/etc/libibverbs.d)"
			    : "no providers: apt install ibverbs-providers");
}

void print_memory(const struct memory *mem)
{
	char a[32], b[32];

	printf("locked memory:\n");
	printf("    %-22s%s", "RLIMIT_MEMLOCK:",
	       mem->limit_inf ? "unlimited"
			      : size_str(mem->limit, a, sizeof(a)));
	printf(" (hard %s)\n",
	       mem->hard_inf ? "unlimited" : size_str(mem->hard, b, sizeof(b)));
	printf("    %-22s%s at start (pool.initial)\n",
	       "pool needs:", size_str(mem->need_start, a, sizeof(a)));
	printf("    %-22s%s at most (pool.max)\n", "",
	       size_str(mem->need_max, b, sizeof(b)));
	printf("    %-22sper device the process uses\n", "");
	printf("    %-22s%s\n", "config:", mem->cfg_src);
	printf("huge pages:\n");
	printf("    %-22s%" PRIu64 " of %" PRIu64 " (%s each)\n",
	       "free:", mem->huge_free, mem->huge_total,
	       size_str(mem->huge_size, a, sizeof(a)));
	printf("    %-22s%s\n",
	       "pool.huge_pages:", mem->cfg.huge_pages ? "true" : "false");
}

/* ---- JSON report ---- */

static void json_port(const rift_port_info *p, bool verbose)
{
	uint32_t shown = p->gid_count < RIFT_PORT_MAX_GIDS ? p->gid_count
							   : RIFT_PORT_MAX_GIDS;

	json_ku("{", "port", p->number);
	json_kv(", ", "state", p->state_name);
	json_ku(", ", "state_num", (uint64_t)p->state);
	json_kv(", ", "physical_state", p->phys_state_name);
	json_ku(", ", "physical_state_num", (uint64_t)p->phys_state);
	json_kv(", ", "link_layer", p->link_layer);
	json_kv(", ", "netdev", p->netdev);
	json_ku(", ", "max_mtu", p->max_mtu);
	json_ku(", ", "active_mtu", p->active_mtu);
	json_ku(", ", "width", p->width);
	json_ku(", ", "speed_mbps", p->speed_mbps);
	if (verbose) {
		json_ku(", ", "lid", p->lid);
		json_ku(", ", "sm_lid", p->sm_lid);
		json_ku(", ", "lmc", p->lmc);
		json_ku(", ", "max_msg_size", p->max_msg_size);
		json_ku(", ", "port_cap_flags", p->port_cap_flags);
	}
	json_ku(", ", "gid_tbl_len", p->gid_table_len);
	json_ku(", ", "gid_count", p->gid_count);
	fputs(", \"gids\": [", stdout);
	for (uint32_t i = 0; i < shown; i++) {
		const rift_gid_info *g = &p->gids[i];

		json_ku(i ? ", {" : "{", "index", g->index);
		json_kv(", ", "gid", g->gid);
		json_kv(", ", "type", rift_gid_type_name(g->type));
		json_kv(", ", "ip", g->ip);
		json_kv(", ", "netdev", g->netdev);
		putchar('}');
	}
	fputs("]}", stdout);
}

static void json_device(const rift_device_info *d, const struct opts *o)
{
	const rift_device_limits *l = &d->limits;
	bool first = true;

	json_kv("{", "hca_id", d->name);
	if (d->status) {
		json_kv(", ", "error", d->error);
		json_kv(", ", "status", rift_err_name(d->status));
	}
	json_kv(", ", "transport", d->transport);
	json_kv(", ", "fw_ver", d->fw_ver);
	json_kv(", ", "node_guid", d->node_guid_str);
	json_ku(", ", "vendor_id", d->vendor_id);
	json_ku(", ", "vendor_part_id", d->vendor_part_id);
	json_ku(", ", "hw_ver", d->hw_ver);
	json_ku(", ", "phys_port_cnt", d->port_count);
	if (o->verbose) {
		fputs(", \"limits\": ", stdout);
		json_ku("{", "max_mr_size", l->max_mr_size);
		json_ku(", ", "page_size_cap", l->page_size_cap);
		json_ku(", ", "max_qp", l->max_qp);
		json_ku(", ", "max_qp_wr", l->max_qp_wr);
		json_ku(", ", "max_sge", l->max_sge);
		json_ku(", ", "max_sge_rd", l->max_sge_rd);
		json_ku(", ", "max_cq", l->max_cq);
		json_ku(", ", "max_cqe", l->max_cqe);
		json_ku(", ", "max_mr", l->max_mr);
		json_ku(", ", "max_pd", l->max_pd);
		json_ku(", ", "max_mw", l->max_mw);
		json_ku(", ", "max_ah", l->max_ah);
		json_ku(", ", "max_srq", l->max_srq);
		json_ku(", ", "max_srq_wr", l->max_srq_wr);
		json_ku(", ", "max_srq_sge", l->max_srq_sge);
		json_ku(", ", "max_qp_rd_atom", l->max_qp_rd_atom);
		json_ku(", ", "max_qp_init_rd_atom", l->max_qp_init_rd_atom);
		json_ku(", ", "atomic_cap", l->atomic_cap);
		json_ku(", ", "local_ca_ack_delay", l->local_ca_ack_delay);
		json_ku(", ", "mw_type2", l->mw_type2);
		putchar('}');
	}
	fputs(", \"ports\": [", stdout);
	for (uint32_t i = 0; i < ports_shown(d); i++) {
		if (o->port && o->port != d->ports[i].number)
			continue;
		if (!first)
			fputs(", ", stdout);
		json_port(&d->ports[i], o->verbose);
		first = false;
	}
	fputs("]}", stdout);
}

void json_report(const rift_device_info *devs, int n, const struct opts *o,
		 const struct modules *m, const struct memory *mem,
		 char hints[][400], int n_hints, const struct notes *nt)
{
	bool first = true;

	printf("{\"version\": ");
	json_str(rift_version_string());
	fputs(",\n \"devices\": [", stdout);
	for (int i = 0; i < n; i++) {
		if (o->dev && strcmp(devs[i].name, o->dev) != 0)
			continue;
		fputs(first ? "\n  " : ",\n  ", stdout);
		json_device(&devs[i], o);
		first = false;
	}
	fputs("],\n \"no_device\": ", stdout);
	if (n_hints) {
		fputs("[", stdout);
		for (int i = 0; i < n_hints; i++) {
			fputs(i ? ", " : "", stdout);
			json_str(hints[i]);
		}
		fputs("]", stdout);
	} else {
		fputs("null", stdout);
	}
	fputs(",\n \"modules\": {", stdout);
	for (size_t i = 0; i < N_CORE; i++)
		json_kv(i ? ", " : "", core_modules[i],
			mod_state_str(m->core[i]));
	fputs(", \"providers\": {", stdout);
	first = true;
	for (size_t i = 0; i < N_PROV; i++) {
		if (!o->verbose && m->prov[i] != MOD_LOADED &&
		    m->prov[i] != MOD_BUILTIN)
			continue;
		json_kv(first ? "" : ", ", provider_modules[i],
			mod_state_str(m->prov[i]));
		first = false;
	}
	fputs("}", stdout);
	json_kv(", ", "missing", m->missing);
	printf(", \"userspace_providers\": %s}",
	       m->userspace ? "true" : "false");
	fputs(",\n \"memlock\": {\"limit\": ", stdout);
	if (mem->limit_inf)
		fputs("null", stdout);
	else
		printf("%" PRIu64, mem->limit);
	fputs(", \"hard_limit\": ", stdout);
	if (mem->hard_inf)
		fputs("null", stdout);
	else
		printf("%" PRIu64, mem->hard);
	json_ku(", ", "pool_start", mem->need_start);
	json_ku(", ", "pool_max", mem->need_max);
	json_kv(", ", "config", mem->cfg_src);
	fputs("},\n \"huge_pages\": ", stdout);
	json_ku("{", "total", mem->huge_total);
	json_ku(", ", "free", mem->huge_free);
	json_ku(", ", "size", mem->huge_size);
	printf(", \"pool_huge_pages\": %s}",
	       mem->cfg.huge_pages ? "true" : "false");
	fputs(",\n \"warnings\": [", stdout);
	for (int i = 0; i < nt->n_warn; i++) {
		fputs(i ? ", " : "", stdout);
		json_str(nt->warn[i]);
	}
	fputs("]}\n", stdout);
}
