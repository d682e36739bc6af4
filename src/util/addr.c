/*
 * addr.c - socket addresses as text, for messages and peer names: what
 * the transports and the API print alike; and group.local's list of
 * local addresses read from text.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void rift__sockaddr_ip(const struct sockaddr *sa, char *buf, size_t len)
{
	const struct sockaddr_in *in = (const void *)sa;
	const struct sockaddr_in6 *in6 = (const void *)sa;

	if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &in6->sin6_addr, buf, (socklen_t)len);
	else if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &in->sin_addr, buf, (socklen_t)len);
	else
		snprintf(buf, len, "(family %d)", sa->sa_family);
}

void rift__sockaddr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const struct sockaddr_in *in = (const void *)sa;
	const struct sockaddr_in6 *in6 = (const void *)sa;
	char ip[INET6_ADDRSTRLEN] = "?";

	rift__sockaddr_ip(sa, ip, sizeof(ip));
	if (sa->sa_family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", ip, ntohs(in6->sin6_port));
	else if (sa->sa_family == AF_INET)
		snprintf(buf, len, "%s:%u", ip, ntohs(in->sin_port));
	else
		snprintf(buf, len, "%s", ip);
}

/* Whether s is all digits (and not empty). */
static bool digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Whether s can be an RDMA device's name (rdma_cm and sysfs names:
 * letters, digits, '_', '-', '.'; a letter first), not empty. */
static bool dev_name(const char *s, size_t n)
{
	if (!n || n >= RIFT_LOCAL_DEV_MAX || !isalpha((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

/*
 * One entry, as text without blanks: a numeric address into *ss, or a
 * device and port into *dev (*ss then AF_UNSPEC), or -1 with what it
 * looks like instead ("10.0.0.1:5" is the likely mistake) in err.
 */
static int local_entry(const char *e, struct sockaddr_storage *ss,
		       socklen_t *len, struct rift__local_dev *dev, char *err,
		       size_t errlen)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *colon = strrchr(e, ':');
	char head[RIFT_GROUP_LOCAL_MAX];
	struct in6_addr a;

	memset(ss, 0, sizeof(*ss));
	memset(dev, 0, sizeof(*dev));
	if (inet_pton(AF_INET, e, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		*len = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, e, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		*len = sizeof(*in6);
		return 0;
	}
	if (colon && digits(colon + 1)) {
		snprintf(head, sizeof(head), "%.*s", (int)(colon - e), e);
		if (head[0] == '[' && head[strlen(head) - 1] == ']') {
			memmove(head, head + 1, strlen(head));
			head[strlen(head) - 1] = '\0';
		}
		if (inet_pton(AF_INET, head, &a) == 1 ||
		    inet_pton(AF_INET6, head, &a) == 1) {
			snprintf(err, errlen,
				 "'%s' has a port: give the address alone (the "
				 "system picks the port)",
				 e);
			return -1;
		}
		if (dev_name(e, (size_t)(colon - e))) {
			long port = strtol(colon + 1, NULL, 10);

			if (strlen(colon + 1) > 3 || port < 1 || port > 255) {
				snprintf(err, errlen,
					 "'%s': port %s of device %s is not "
					 "1..255",
					 e, colon + 1, head);
				return -1;
			}
			snprintf(dev->name, sizeof(dev->name), "%s", head);
			dev->port = (int)port;
			*len = 0;
			return 0;
		}
	}
	snprintf(err, errlen,
		 "'%s' is neither a numeric IPv4 or IPv6 address nor an RDMA "
		 "device and port such as rxe0:1 (host names are not "
		 "accepted)",
		 e);
	return -1;
}

int rift__local_parse(const char *list, struct sockaddr_storage *out,
		      socklen_t *lens, struct rift__local_dev *devs, int max,
		      char *err, size_t errlen)
{
	char e[RIFT_GROUP_LOCAL_MAX];
	int n = 0;

	while (*list == ' ' || *list == '\t')
		list++;
	if (!*list)
		return 0;
	for (const char *p = list;; p++) {
		size_t k = strcspn(p, ","), b = 0;
		struct sockaddr_storage ss;
		struct rift__local_dev dev;
		socklen_t len;

		while (b < k && (p[b] == ' ' || p[b] == '\t'))
			b++;
		while (k > b && (p[k - 1] == ' ' || p[k - 1] == '\t'))
			k--;
		if (n == max) {
			snprintf(err, errlen, "more than %d addresses", max);
			return -1;
		}
		if (k == b) {
			snprintf(err, errlen, "address %d is empty", n + 1);
			return -1;
		}
		snprintf(e, sizeof(e), "%.*s", (int)(k - b), p + b);
		if (local_entry(e, &ss, &len, &dev, err, errlen))
			return -1;
		if (out) {
			out[n] = ss;
			lens[n] = len;
		}
		if (devs)
			devs[n] = dev;
		n++;
		p += strcspn(p, ",");
		if (!*p)
			return n;
	}
}
