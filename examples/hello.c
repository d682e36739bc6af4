/*
 * hello - the smallest rift program: a listener and a client in one
 * context exchange one message.  Built against the installed library with
 * pkg-config by `make test` (cc hello.c $(pkg-config --cflags --libs rift)).
 */
#include <stdio.h>
#include <string.h>

#include <rift.h>

static int done;

static void on_recv(rift_conn *conn, rift_msg *msg)
{
	printf("%s got \"%.*s\"\n", (char *)rift_conn_user(conn),
	       (int)rift_msg_len(msg), (const char *)rift_msg_data(msg));
	if (strcmp(rift_conn_user(conn), "server") == 0)
		rift_conn_send(conn, "pong", 4);
	else
		done = 1;
}

static void on_accept(rift_listener *l, rift_conn *conn)
{
	(void)l;
	rift_conn_set_user(conn, "server");
}

int main(void)
{
	static const rift_conn_callbacks cbs = { .on_recv = on_recv };
	rift_ctx *ctx;
	rift_listener *l;
	rift_conn *c;
	char url[64];
	int rc;

	if ((rc = rift_ctx_create(&ctx, NULL)) ||
	    (rc = rift_listen(ctx, "tcp://127.0.0.1:0", &cbs, NULL, on_accept, &l)))
		goto fail;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", rift_listener_port(l));
	if ((rc = rift_connect(ctx, url, &cbs, "client", &c)))
		goto fail;
	/* Sending before CONNECTED is refused: wait for the session first.
	 * RIFT_RUN_ONCE returns as soon as the loop did some work (the reply
	 * is not kept waiting for a timeout), or after 5 s without any. */
	while ((rc = rift_conn_send(c, "ping", 4)) == RIFT_ENOTCONN)
		if ((rc = rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 5000)) < 0)
			goto fail;
	if (rc)
		goto fail;
	while (!done)
		if ((rc = rift_ctx_run_mode(ctx, RIFT_RUN_ONCE, 5000)) < 0)
			goto fail;
	printf("librift %s\n", rift_version_string());
	return 0;
fail:
	fprintf(stderr, "hello: %s: %s\n", rift_err_name(rc),
		rift_ctx_last_error(ctx));
	return 1;
}
