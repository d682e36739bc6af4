/*
 * rdma_src.c - rdma.device, rdma.port and rdma.gid_index on a client,
 * or group.local: the local address its RDMA paths leave from.
 *
 * Without them the route to the peer chooses the device (rdma_cm from
 * its route lookup, cm=tcp from the side channel's local address).  With
 * them, a client binds its paths to an address of the configured device
 * and port (the IP address a RoCE GID holds; with gid_index, that GID's),
 * which the kernel then routes through that device: rdma_resolve_addr
 * with that source binds the rdma_cm id to its netdev, and the cm=tcp
 * side channel binds its socket to it, whose local address then selects
 * the device (rdma_boot.c).  An address is taken only if the peer can be
 * reached from it through its netdev: the kernel's route from it to the
 * peer (rtnetlink, as `ip route get PEER from ADDR`) leaves by that
 * netdev (for an address of this host: the netdev holds it).  A device
 * with no such address is an error that says so, not a silent choice of
 * another device.
 *
 * InfiniBand GIDs hold no IP address: on InfiniBand the route keeps
 * choosing, and the device it chose must be the configured one
 * (rift__rdma_device_mismatch).
 *
 * A local address given for the path (group.local) wins: the device and
 * port holding it are the path's, and a configured device or port must
 * be those (rift__rdma_src_given), or the attempt fails naming both.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transports/verbs/rdma_int.h"

#define MAX_CANDS 16

/* The address a RoCE GID holds, of the family of dst; false if none
 * (an IPv6 link-local GID: no scope to route it by). */
static bool gid_addr(const uint8_t *gid, int family,
		     struct sockaddr_storage *ss)
{
	static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0,
					       0, 0, 0, 0, 0xff, 0xff };

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(gid, v4_prefix, 12)) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		if (family != AF_INET)
			return false;
		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, gid + 12, 4);
		return true;
	}
	if (family != AF_INET6 || (gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80))
		return false;
	((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
	memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, gid, 16);
	return true;
}


static socklen_t sa_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

/* The address bytes of a socket address, and their length. */
static const void *ip_bytes(const struct sockaddr_storage *ss, size_t *n)
{
	if (ss->ss_family == AF_INET6) {
		*n = 16;
		return &((const struct sockaddr_in6 *)ss)->sin6_addr;
	}
	*n = 4;
	return &((const struct sockaddr_in *)ss)->sin_addr;
}

static void rta_put(struct nlmsghdr *nh, size_t cap, int type,
		    const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)nh +
					     NLMSG_ALIGN(nh->nlmsg_len));

	if (NLMSG_ALIGN(nh->nlmsg_len) + RTA_SPACE(len) > cap)
		return;
	a->rta_type = (unsigned short)type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_SPACE(len);
}

/*
 * The kernel's route from src to dst, as `ip route get DST from SRC`
 * shows it: its type (RTN_UNICAST, RTN_LOCAL, ...) and the interface it
 * leaves by.  0, or the errno of the refusal (ENETUNREACH: no route).
 */
static int route_get(const struct sockaddr_storage *src,
		     const struct sockaddr_storage *dst, int *oif,
		     unsigned char *type)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[64];
	} req;
	union {
		struct nlmsghdr nh;
		char buf[4096];
	} resp;
	const void *a;
	size_t n;
	ssize_t got;
	int fd, rc = 0;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.rt.rtm_family = (unsigned char)dst->ss_family;
	a = ip_bytes(dst, &n);
	req.rt.rtm_dst_len = (unsigned char)(n * 8);
	rta_put(&req.nh, sizeof(req), RTA_DST, a, n);
	a = ip_bytes(src, &n);
	req.rt.rtm_src_len = (unsigned char)(n * 8);
	rta_put(&req.nh, sizeof(req), RTA_SRC, a, n);
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return errno;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
		rc = errno;
		goto out;
	}
	got = recv(fd, &resp, sizeof(resp), 0);
	if (got < 0) {
		rc = errno;
		goto out;
	}
	*oif = 0;
	*type = RTN_UNSPEC;
	for (struct nlmsghdr *h = &resp.nh; NLMSG_OK(h, (size_t)got);
	     h = NLMSG_NEXT(h, got)) {
		struct rtmsg *rt = NLMSG_DATA(h);
		struct rtattr *at;
		size_t left;

		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			rc = e->error ? -e->error : 0;
			break;
		}
		if (h->nlmsg_type != RTM_NEWROUTE)
			continue;
		*type = rt->rtm_type;
		left = RTM_PAYLOAD(h);
		for (at = RTM_RTA(rt); RTA_OK(at, left);
		     at = RTA_NEXT(at, left))
			if (at->rta_type == RTA_OIF)
				memcpy(oif, RTA_DATA(at), sizeof(*oif));
		break;
	}
out:
	close(fd);
	return rc;
}

static void ip_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	size_t n;

	if (!inet_ntop(ss->ss_family, ip_bytes(ss, &n), buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

/* Whether the address of dst is one of netdev ifname's own. */
static bool own_address(const struct sockaddr_storage *dst,
			const char *ifname)
{
	struct ifaddrs *all, *i;
	size_t n, m;
	const void *want = ip_bytes(dst, &n);
	bool found = false;

	if (!ifname[0] || getifaddrs(&all))
		return false;
	for (i = all; i && !found; i = i->ifa_next) {
		struct sockaddr_storage ss;

		if (!i->ifa_addr || i->ifa_addr->sa_family != dst->ss_family ||
		    strcmp(i->ifa_name, ifname))
			continue;
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, i->ifa_addr,
		       dst->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in));
		found = !memcmp(ip_bytes(&ss, &m), want, n);
	}
	freeifaddrs(all);
	return found;
}

/*
 * Can dst be reached from src through its netdev?  The kernel's own
 * route from src to dst must leave by that netdev, or, for one of this
 * host's addresses (RTN_LOCAL: rxe hands such traffic over inside),
 * dst must be an address of that netdev.  0, or an errno saying why not.
 */
static int reaches(const struct rift__rdma_src *s,
		   const struct sockaddr_storage *dst, int ifindex,
		   char *why, size_t len)
{
	unsigned char type = RTN_UNSPEC;
	char name[IF_NAMESIZE] = "?";
	int oif = 0, rc = route_get(&s->addr, dst, &oif, &type);

	if (rc) {
		snprintf(why, len, "%s", strerror(rc));
		return rc;
	}
	if (type == RTN_LOCAL) {
		if (own_address(dst, s->ifname))
			return 0;
		snprintf(why, len, "the address is this host's, not %s's",
			 s->ifname[0] ? s->ifname : "its netdev");
		return EHOSTUNREACH;
	}
	if (type == RTN_UNICAST && ifindex && oif == ifindex)
		return 0;
	if (oif)
		if_indextoname((unsigned)oif, name);
	snprintf(why, len, "the route leaves by %s", name);
	return ENETUNREACH;
}

struct found {
	bool dev, port, active, ib;
	/* rdma.gid_index: within the GID table of some active RoCE port;
	 * else the first such port and its table's length, for the error */
	bool gid_in_table;
	char table_where[40];
	uint32_t table_len;
	struct rift__rdma_src c[MAX_CANDS];
	int ifindex[MAX_CANDS];
	char where[MAX_CANDS][48]; /* "rxe0 port 1 GID 1" */
	int n;
};

/* The candidates of one port: its GIDs' addresses (gid_index: one). */
static void port_cands(const rift_config *cfg, struct ibv_context *dev,
		       uint8_t port, int family, struct ibv_gid_entry *e,
		       int m, struct found *f)
{
	for (int k = 0; k < m && f->n < MAX_CANDS; k++) {
		struct rift__rdma_src *s = &f->c[f->n];
		bool dup = false;

		if (e[k].port_num != port ||
		    (cfg->gid_index >= 0 &&
		     e[k].gid_index != (uint32_t)cfg->gid_index) ||
		    !gid_addr(e[k].gid.raw, family, &s->addr))
			continue;
		for (int j = 0; j < f->n && !dup; j++)
			dup = !memcmp(&f->c[j].addr, &s->addr, sizeof(s->addr));
		if (dup)
			continue; /* RoCE v1 and v2 GIDs of one address */
		s->len = sa_len(&s->addr);
		s->set = true;
		f->ifindex[f->n] = (int)e[k].ndev_ifindex;
		if (!e[k].ndev_ifindex ||
		    !if_indextoname(e[k].ndev_ifindex, s->ifname))
			s->ifname[0] = '\0';
		snprintf(f->where[f->n], sizeof(f->where[0]),
			 "%s port %u GID %u", rift__vb_device_name(dev->device),
			 port, e[k].gid_index);
		f->n++;
	}
}

static void collect(const rift_config *cfg, struct ibv_context **list, int n,
		    int family, struct found *f)
{
	for (int i = 0; i < n; i++) {
		struct ibv_device_attr da;
		struct ibv_port_attr pa;
		struct ibv_gid_entry *e = NULL;
		rift__vb_err verr;
		size_t cap = 0;
		int m = 0;

		if (cfg->device[0] &&
		    strcmp(cfg->device, rift__vb_device_name(list[i]->device)))
			continue;
		f->dev = true;
		if (rift__vb_device_query(list[i], &da, verr))
			continue;
		for (uint8_t port = 1; port <= da.phys_port_cnt; port++)
			if (!rift__vb_port_query(list[i], port, &pa, verr))
				cap += pa.gid_tbl_len;
		if (cap)
			e = calloc(cap, sizeof(*e));
		if (e)
			m = rift__vb_gid_table(list[i], e, cap, verr);
		for (uint8_t port = 1; port <= da.phys_port_cnt; port++) {
			if (cfg->port && port != cfg->port)
				continue;
			f->port = true;
			if (rift__vb_port_query(list[i], port, &pa, verr) ||
			    pa.state != IBV_PORT_ACTIVE)
				continue;
			f->active = true;
			if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND) {
				f->ib = true;
				continue;
			}
			if (cfg->gid_index >= 0 &&
			    cfg->gid_index < pa.gid_tbl_len)
				f->gid_in_table = true;
			if (!f->table_where[0]) {
				snprintf(f->table_where, sizeof(f->table_where),
					 "%s port %u",
					 rift__vb_device_name(list[i]->device),
					 port);
				f->table_len = pa.gid_tbl_len;
			}
			port_cands(cfg, list[i], port, family, e, m, f);
		}
		free(e);
	}
}

/* The candidate of f whose address is a's, or -1. */
static int cand_of(const struct found *f, const struct sockaddr_storage *a)
{
	size_t n, m;
	const void *want = ip_bytes(a, &n);

	for (int i = 0; i < f->n; i++)
		if (f->c[i].addr.ss_family == a->ss_family &&
		    !memcmp(ip_bytes(&f->c[i].addr, &m), want, n))
			return i;
	return -1;
}

/* What was configured, for messages: "rdma.device rxe0, rdma.port 1". */
static void configured(const rift_config *cfg, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s", cfg->device[0] ? "rdma.device " : "",
			 cfg->device);

	if (cfg->port && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "%srdma.port %u",
			      n ? ", " : "", cfg->port);
	if (cfg->gid_index >= 0 && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "%srdma.gid_index %d",
			 n ? ", " : "", cfg->gid_index);
}

/* The configured device and port's candidates of family in a new *f,
 * from the device list it leaves in *list (NULL or not, for the caller to
 * free, with *f, either way).  0 or RIFT_E* with err. */
static int survey(const rift_config *cfg, int family, struct found **f,
		  struct ibv_context ***list, int *n, char *err, size_t errlen)
{
	rift__vb_err verr;
	int rc;

	*f = calloc(1, sizeof(**f));
	if (!*f) {
		snprintf(err, errlen, "out of memory");
		return RIFT_ENOMEM;
	}
	rc = rift__vb_cm_devices(list, n, verr);
	if (rc) {
		snprintf(err, errlen, "%s", verr);
		return rc;
	}
	collect(cfg, *list, *n, family, *f);
	return 0;
}

int rift__rdma_src(const rift_config *cfg, const struct sockaddr *dst,
		   socklen_t dst_len, struct rift__rdma_src *out, char *err,
		   size_t errlen)
{
	struct ibv_context **list = NULL;
	struct found *f;
	char what[160], to[INET6_ADDRSTRLEN + 8], tried[320] = "";
	struct sockaddr_storage dst_ip;
	size_t tn = 0;
	int n = 0, rc;

	memset(out, 0, sizeof(*out));
	if (!cfg->device[0] && !cfg->port && cfg->gid_index < 0)
		return 0; /* the route chooses */
	rc = survey(cfg, dst->sa_family, &f, &list, &n, err, errlen);
	rift__vb_cm_devices_free(list);
	if (rc)
		goto out;
	configured(cfg, what, sizeof(what));
	memset(&dst_ip, 0, sizeof(dst_ip));
	memcpy(&dst_ip, dst, dst_len < sizeof(dst_ip) ? dst_len : sizeof(dst_ip));
	ip_str(&dst_ip, to, sizeof(to));
	rc = 0;
	if (!f->dev) {
		rc = RIFT_ENODEV;
		snprintf(err, errlen, "%s: no such RDMA device (rift-info "
				      "lists them)", what);
	} else if (!f->port) {
		rc = RIFT_ENODEV;
		snprintf(err, errlen, "%s: no such port", what);
	} else if (!f->active) {
		rc = RIFT_ENETDOWN;
		snprintf(err, errlen, "%s: no active port", what);
	} else if (!f->n && f->ib) {
		goto out; /* InfiniBand: the route chooses, checked after */
	} else if (!f->n && cfg->gid_index >= 0 && !f->gid_in_table) {
		/* As the listener says it (rdma_dev.c). */
		rc = RIFT_EINVAL;
		snprintf(err, errlen, "rdma.gid_index %d does not exist on %s "
				      "(its table has %u entries; rift-info "
				      "lists the valid ones)",
			 cfg->gid_index, f->table_where, f->table_len);
	} else if (!f->n) {
		rc = RIFT_EADDRNOTAVAIL;
		snprintf(err, errlen, "%s: no %s address (no RoCE GID holds "
				      "one) to reach %s from",
			 what, dst->sa_family == AF_INET6 ? "IPv6" : "IPv4",
			 to);
	}
	for (int i = 0; !rc && i < f->n; i++) {
		char a[INET6_ADDRSTRLEN], why[64];

		if (!reaches(&f->c[i], &dst_ip, f->ifindex[i], why,
			     sizeof(why))) {
			*out = f->c[i];
			goto out;
		}
		ip_str(&f->c[i].addr, a, sizeof(a));
		if (tn < sizeof(tried))
			tn += (size_t)snprintf(tried + tn, sizeof(tried) - tn,
					       "%s%s (%s%s%s): %s",
					       tn ? "; " : "", a, f->where[i],
					       f->c[i].ifname[0] ? ", " : "",
					       f->c[i].ifname, why);
	}
	if (!rc) {
		rc = RIFT_ENETUNREACH;
		snprintf(err, errlen, "%s: no address that can reach %s: %s",
			 what, to, tried);
	}
out:
	free(f);
	return rc;
}

/*
 * The given address s is on none of the configured device's and port's
 * GIDs (want: the configuration, gid_index aside): where is it?  Its
 * error, or 0 on InfiniBand (no address in its GIDs: the route checks
 * the device after, rift__rdma_device_mismatch).
 */
static int src_elsewhere(rift_config *want, struct ibv_context **list, int n,
			 const struct rift__rdma_src *s, struct found *f,
			 char *err, size_t errlen)
{
	char what[160], a[INET6_ADDRSTRLEN];
	int i;

	configured(want, what, sizeof(what));
	ip_str(&s->addr, a, sizeof(a));
	want->device[0] = '\0';
	want->port = 0;
	memset(f, 0, sizeof(*f));
	collect(want, list, n, s->addr.ss_family, f);
	i = cand_of(f, &s->addr);
	if (i >= 0) {
		snprintf(err, errlen, "local address %s is on %s, not on %s", a,
			 f->where[i], what);
		return RIFT_EINVAL;
	}
	if (f->ib)
		return 0;
	snprintf(err, errlen, "local address %s is on no active RDMA port (%s "
			      "is set)",
		 a, what);
	return RIFT_EADDRNOTAVAIL;
}

int rift__rdma_src_given(const rift_config *cfg, const struct sockaddr *src,
			 socklen_t src_len, struct rift__rdma_src *out,
			 char *err, size_t errlen)
{
	struct ibv_context **list = NULL;
	struct found *f;
	rift_config want = *cfg;
	int n = 0, i, rc;

	memset(out, 0, sizeof(*out));
	memcpy(&out->addr, src, src_len);
	out->len = src_len;
	out->set = true;
	if (!cfg->device[0] && !cfg->port)
		return 0; /* the address chooses */
	/* Any GID of the address on the configured device and port will do:
	 * under rdma_cm the address chooses the GID, under cm=tcp
	 * rdma.gid_index does. */
	want.gid_index = -1;
	rc = survey(&want, src->sa_family, &f, &list, &n, err, errlen);
	if (rc)
		goto out;
	i = cand_of(f, &out->addr);
	if (i >= 0)
		memcpy(out->ifname, f->c[i].ifname, sizeof(out->ifname));
	else
		rc = src_elsewhere(&want, list, n, out, f, err, errlen);
out:
	rift__vb_cm_devices_free(list);
	free(f);
	return rc;
}

int rift__rdma_device_src(const rift_config *cfg, const char *device,
			  int port, const struct sockaddr *dst,
			  socklen_t dst_len, struct sockaddr_storage *out,
			  socklen_t *out_len, char *err, size_t errlen)
{
	rift_config c = *cfg;
	struct rift__rdma_src s;
	char why[RIFT_ERRMSG_LEN];
	int rc;

	/* rdma.device and rdma.port, when set, must agree: a path can
	 * leave from one device only. */
	if ((cfg->device[0] && strcmp(cfg->device, device) != 0) ||
	    (cfg->port && cfg->port != (uint32_t)port)) {
		configured(cfg, why, sizeof(why));
		snprintf(err, errlen, "local %s:%d is not on %s", device, port,
			 why);
		return RIFT_EINVAL;
	}
	snprintf(c.device, sizeof(c.device), "%s", device);
	c.port = (uint32_t)port;
	rc = rift__rdma_src(&c, dst, dst_len, &s, why, sizeof(why));
	if (!rc && !s.set) {
		rc = RIFT_EINVAL;
		snprintf(why, sizeof(why),
			 "an InfiniBand port holds no IP address to leave "
			 "from (choose the device with rdma.device)");
	}
	if (rc) {
		snprintf(err, errlen, "local %s:%d: %s", device, port, why);
		return rc;
	}
	*out = s.addr;
	*out_len = sa_len(&s.addr);
	return 0;
}
