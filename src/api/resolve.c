/*
 * resolve.c - host names of rift_connect resolved off the loop thread.
 *
 * getaddrinfo blocks for as long as DNS takes (seconds when a server does
 * not answer), and on the loop thread that would stall every connection
 * and timer of the context.  Numeric addresses are resolved in place
 * (they never block); a URL naming a host gets a job: a thread of its own
 * (names are resolved once per connection, so a thread per job is cheap
 * enough and needs no pool) resolves every address of the URL in order,
 * then wakes the loop through the job's eventfd.  The loop hands the
 * addresses to the connection and starts its first attempt, or ends it
 * with an ERROR event carrying RIFT_ENAME.  (glibc's getaddrinfo_a does the same with a thread
 * of its own and signals or a callback on that thread; an eventfd into
 * the loop is simpler to get right.)
 *
 * Lifetime: the thread and the loop each hold a reference.  A connection
 * closed (or its context destroyed) while its job runs lets go of the
 * job without waiting: the thread finishes getaddrinfo, finds nobody,
 * and the last reference frees it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "internal.h"
#include "session/session.h"

struct rift__resolve_job {
	pthread_mutex_t mu;
	int refs;
	int efd;
	rift__io io;
	rift_conn *conn; /* NULL once the connection let go */
	struct rift__hostport hosts[RIFT_URL_MAX_ADDRS];
	int family[RIFT_URL_MAX_ADDRS]; /* each host's, AF_UNSPEC: any */
	unsigned n_hosts;
	/* filled by the thread */
	struct sockaddr_storage addrs[RIFT_URL_MAX_ADDRS * 2];
	socklen_t lens[RIFT_URL_MAX_ADDRS * 2];
	uint8_t from[RIFT_URL_MAX_ADDRS * 2]; /* the host of each */
	unsigned n_addrs;
	int rc;
	char err[RIFT_ERRMSG_LEN];
	bool done;
};

static void job_unref(struct rift__resolve_job *job)
{
	int left;

	pthread_mutex_lock(&job->mu);
	left = --job->refs;
	pthread_mutex_unlock(&job->mu);
	if (left)
		return;
	close(job->efd);
	pthread_mutex_destroy(&job->mu);
	free(job);
}

/* Resolve hosts[0..n) in order into addrs (at most max), host i's of
 * family[i] only (its local address's), noting in from[] the host each
 * address came from; the count, or RIFT_ENAME / RIFT_EINVAL with err
 * filled. */
static int resolve_all(const struct rift__hostport *hosts, const int *family,
		       unsigned n, struct sockaddr_storage *addrs,
		       socklen_t *lens, uint8_t *from, unsigned max, char *err,
		       size_t errlen)
{
	unsigned got = 0;

	for (unsigned i = 0; i < n && got < max; i++) {
		int k = rift__resolve(&hosts[i], false, family[i], &addrs[got],
				      &lens[got], (int)(max - got), err, errlen);

		if (k < 0)
			return k;
		memset(from + got, (int)i, (size_t)k);
		got += (unsigned)k;
	}
	return (int)got;
}

static void *resolve_main(void *arg)
{
	struct rift__resolve_job *job = arg;
	uint64_t one = 1;
	int n;

	pthread_setname_np(pthread_self(), "rift-resolve");
	n = resolve_all(job->hosts, job->family, job->n_hosts, job->addrs,
			job->lens, job->from, RIFT_ARRAY_SIZE(job->addrs),
			job->err, sizeof(job->err));
	pthread_mutex_lock(&job->mu);
	job->rc = n < 0 ? n : 0;
	job->n_addrs = n < 0 ? 0 : (unsigned)n;
	job->done = true;
	pthread_mutex_unlock(&job->mu);
	/* The eventfd's write publishes the result (the loop reads it after
	 * epoll says so); the job stays alive until our reference goes. */
	if (write(job->efd, &one, sizeof(one)) < 0)
		RIFT_PLOG(RIFT_LOG_WARN, "resolver: eventfd: %s",
			  strerror(errno));
	job_unref(job);
	return NULL;
}

static void job_done(rift__io *io, uint32_t revents)
{
	struct rift__resolve_job *job =
		rift__container_of(io, struct rift__resolve_job, io);
	rift_conn *conn = job->conn;
	uint64_t v;

	bool done;

	RIFT_UNUSED(revents);
	if (read(job->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RIFT_WARN(conn->ctx, "resolver: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&job->mu);
	done = job->done;
	pthread_mutex_unlock(&job->mu);
	if (!done)
		return; /* woken for nothing */
	rift__io_stop(conn->ctx, &job->io);
	conn->resolving = NULL;
	job->conn = NULL;
	if (job->rc) {
		rift__conn_error(conn, "%s", job->err);
		job_unref(job);
		rift__conn_die(conn, RIFT_EVENT_ERROR, RIFT_ENAME);
		return;
	}
	memcpy(conn->addrs, job->addrs, sizeof(job->addrs[0]) * job->n_addrs);
	memcpy(conn->addr_lens, job->lens, sizeof(job->lens[0]) * job->n_addrs);
	memcpy(conn->addr_url, job->from, job->n_addrs);
	conn->n_addrs = job->n_addrs;
	RIFT_DEBUG(conn->ctx, "resolved %u address%s", conn->n_addrs,
		   conn->n_addrs == 1 ? "" : "es");
	job_unref(job);
	rift__conn_attempt(conn);
}

static bool numeric(const char *host)
{
	struct in6_addr a;

	return inet_pton(AF_INET, host, &a) == 1 ||
	       inet_pton(AF_INET6, host, &a) == 1;
}

int rift__resolve_start(rift_conn *conn, const struct rift__url *url)
{
	rift_ctx *ctx = conn->ctx;
	struct rift__resolve_job *job;
	char err[RIFT_ERRMSG_LEN];
	int family[RIFT_URL_MAX_ADDRS];
	bool names = false;
	pthread_t t;
	sigset_t all, old;
	int rc, n;

	for (unsigned i = 0; i < url->n_addrs; i++) {
		int k = rift__conn_local(conn, i);

		if (url->addrs[i].host[0] == '\0')
			return rift__ctx_fail(ctx, RIFT_EINVAL,
					      "url: address %u has no host",
					      i + 1);
		names |= !numeric(url->addrs[i].host);
		/* A name's addresses of the other family could not be
		 * reached from its local address. */
		family[i] = k < 0 ? AF_UNSPEC : conn->locals[k].ss_family;
	}
	if (!names) {
		/* Literals: at once, nothing blocks. */
		n = resolve_all(url->addrs, family, url->n_addrs, conn->addrs,
				conn->addr_lens, conn->addr_url,
				RIFT_ARRAY_SIZE(conn->addrs), err, sizeof(err));
		if (n < 0)
			return rift__ctx_fail(ctx, n, "%s", err);
		conn->n_addrs = (unsigned)n;
		return 0;
	}
	job = calloc(1, sizeof(*job));
	if (!job)
		return rift__ctx_fail(ctx, RIFT_ENOMEM,
				      "rift_connect: out of memory");
	job->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (job->efd < 0) {
		rc = rift__ctx_fail(ctx, rift__from_errno(errno),
				    "rift_connect: eventfd: %s",
				    strerror(errno));
		free(job);
		return rc;
	}
	pthread_mutex_init(&job->mu, NULL);
	memcpy(job->hosts, url->addrs, sizeof(url->addrs[0]) * url->n_addrs);
	memcpy(job->family, family, sizeof(family[0]) * url->n_addrs);
	job->n_hosts = url->n_addrs;
	job->conn = conn;
	job->refs = 2;
	rc = rift__io_start(ctx, &job->io, job->efd, EPOLLIN, job_done);
	if (rc) {
		close(job->efd);
		pthread_mutex_destroy(&job->mu);
		free(job);
		return rift__ctx_fail(ctx, rc, "rift_connect: cannot watch "
					       "the resolver");
	}
	/* The thread takes no signal of the application's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, NULL, resolve_main, job);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		rift__io_stop(ctx, &job->io);
		close(job->efd);
		pthread_mutex_destroy(&job->mu);
		free(job);
		return rift__ctx_fail(ctx, RIFT_ENOMEM,
				      "rift_connect: no thread to resolve "
				      "'%s': %s", url->addrs[0].host,
				      strerror(rc));
	}
	pthread_detach(t);
	conn->resolving = job;
	return 0;
}

void rift__resolve_cancel(rift_conn *conn)
{
	struct rift__resolve_job *job = conn->resolving;

	if (!job)
		return;
	rift__io_stop(conn->ctx, &job->io);
	job->conn = NULL;
	conn->resolving = NULL;
	job_unref(job);
}
