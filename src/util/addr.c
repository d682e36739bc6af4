/*
 * addr.c - socket addresses as text, for messages and peer names: what
 * the transports and the API print alike.
 */
#include <arpa/inet.h>
#include <stdio.h>

#include "internal.h"

void rift__sockaddr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(s4->sin_port));
	} else {
		snprintf(buf, len, "(family %d)", sa->sa_family);
	}
}
