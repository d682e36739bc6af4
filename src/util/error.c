/*
 * error.c - the error table, version and enum names, and where error
 * messages go: a caller's buffer (rift__set_err) or a context's last
 * error (rift__ctx_fail).  Every layer reports through these, the pool
 * included, so they sit below all of them.
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

const char *rift_path_down_reason_str(rift_path_down_reason r)
{
	static const char *const text[] = {
#define XX(name, msg) msg,
		RIFT_PATH_DOWN_MAP(XX)
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
	case RIFT_EVENT_FAILBACK:
		return "failback";
	case RIFT_EVENT_WRITTEN:
		return "written";
	case RIFT_EVENT_PATH_UP:
		return "path_up";
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

/* The last error of rift_ctx_create and rift_config_check, which have no
 * context to keep it in (rift_ctx_last_error(NULL)). */
static __thread char create_err[RIFT_ERRMSG_LEN];

int rift__ctx_fail(rift_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;
	char *buf = ctx ? ctx->errmsg : create_err;

	va_start(ap, fmt);
	vsnprintf(buf, RIFT_ERRMSG_LEN, fmt, ap);
	va_end(ap);
	return err;
}

const char *rift_ctx_last_error(const rift_ctx *ctx)
{
	return ctx ? ctx->errmsg : create_err;
}
