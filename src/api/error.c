/*
 * error.c - the error table, version and enum names.
 */
#include <stdio.h>

#include "internal.h"

const char *rift_strerror(int err)
{
	switch (err) {
#define XX(name, value, msg)                                                  \
	case RIFT_##name:                                                     \
		return msg;
		RIFT_ERRNO_MAP(XX)
#undef XX
	case 0:
		return "success";
	}
	return "unknown error";
}

const char *rift_err_name(int err)
{
	switch (err) {
#define XX(name, value, msg)                                                  \
	case RIFT_##name:                                                     \
		return "RIFT_" #name;
		RIFT_ERRNO_MAP(XX)
#undef XX
	case 0:
		return "0";
	}
	return "RIFT_EUNKNOWN";
}

int rift__from_errno(int e)
{
	switch (e) {
#define XX(name, value, msg)                                                  \
	case -(value):                                                        \
		return (value);
		RIFT_ERRNO_MAP(XX)
#undef XX
	}
	return RIFT_EUNKNOWN;
}

unsigned rift_version(void)
{
	return (RIFT_VERSION_MAJOR << 16) | (RIFT_VERSION_MINOR << 8) |
	       RIFT_VERSION_PATCH;
}

#define RIFT__STR2(x) #x
#define RIFT__STR(x) RIFT__STR2(x)
const char *rift_version_string(void)
{
	return RIFT__STR(RIFT_VERSION_MAJOR) "." RIFT__STR(
		RIFT_VERSION_MINOR) "." RIFT__STR(RIFT_VERSION_PATCH);
}

const char *rift_transport_name(rift_transport t)
{
	switch (t) {
	case RIFT_TRANSPORT_TCP:
		return "tcp";
	case RIFT_TRANSPORT_RDMA:
		return "rdma";
	case RIFT_TRANSPORT_NONE:
		break;
	}
	return "none";
}

const char *rift_fallback_reason_str(rift_fallback_reason r)
{
	static const char *const text[] = {
#define XX(name, msg) msg,
		RIFT_FALLBACK_MAP(XX)
#undef XX
	};
	if ((unsigned)r >= RIFT_ARRAY_SIZE(text))
		return "unknown reason";
	return text[r];
}

const char *rift_event_name(rift_event_type t)
{
	switch (t) {
	case RIFT_EVENT_CONNECTED:
		return "connected";
	case RIFT_EVENT_ERROR:
		return "error";
	case RIFT_EVENT_DISCONNECTED:
		return "disconnected";
	case RIFT_EVENT_PATH_DOWN:
		return "path_down";
	case RIFT_EVENT_PATH_CHANGED:
		return "path_changed";
	case RIFT_EVENT_WRITABLE:
		return "writable";
	}
	return "unknown";
}

void rift__set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
