/*
 * rift-info and the device query API behind it.
 *
 * On the host (no RDMA device): the tool says so, explains, and exits 0;
 * --check points at the exact place of a config error; options are
 * checked; the memlock warning says what is needed and how to raise it.
 * In the soft-RoCE lab (--transport rdma): rift_devices() and rift-info
 * both show the rxe device with an ACTIVE Ethernet port and a RoCE v2 GID
 * for the lab's address.  Tests run from the repository root, after
 * `make all` has built build/bin/rift-info.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "transports/verbs/verbs.h"
#include "../runner.h"

#define TOOL	"build/bin/rift-info"
#define OUT_MAX (256 * 1024)

/* Run a shell command line; its exit status, stdout+stderr in *out. */
static int run(const char *cmd, char **out)
{
	char line[1024];
	size_t len = 0;
	int status;
	FILE *p;

	if (access(TOOL, X_OK) != 0)
		FAIL("%s is missing: run 'make all' and the tests from the "
		     "repository root",
		     TOOL);
	snprintf(line, sizeof(line), "%s 2>&1", cmd);
	p = popen(line, "r");
	CHECK(p != NULL);
	*out = calloc(1, OUT_MAX);
	CHECK(*out != NULL);
	while (len < OUT_MAX - 1) {
		size_t n = fread(*out + len, 1, OUT_MAX - 1 - len, p);

		if (n == 0)
			break;
		len += n;
	}
	status = pclose(p);
	printf("$ %s\n%s[exit %d]\n", cmd, *out,
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* A config file with these contents; the name goes to path. */
static void write_config(char *path, size_t len, const char *text)
{
	int fd;

	snprintf(path, len, "/tmp/rift-info-test-XXXXXX");
	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
	close(fd);
}

static void need_rdma(void)
{
	if (strcmp(rt_transport(), "rdma") != 0)
		SKIP("needs an RDMA device: run with --transport rdma (the "
		     "lab)");
}

static void need_no_device(void)
{
	char err[256];

	if (rift_devices(NULL, 0, err, sizeof(err)) != 0)
		SKIP("this machine has an RDMA device");
}

/* ---- host ---- */

TEST(rift_devices_without_a_device_is_not_an_error)
{
	rift_device_info one;
	char err[256] = "x";

	need_no_device();
	CHECK_EQ(rift_devices(&one, 1, err, sizeof(err)), 0);
	printf("err: %s\n", err);
	CHECK_EQ(rift_devices(NULL, -1, err, sizeof(err)), RIFT_EINVAL);
	CHECK_EQ(rift_devices(NULL, 1, err, sizeof(err)), RIFT_EINVAL);
	CHECK_CONTAINS(err, "max = 1");
	/* err may be left out. */
	CHECK_EQ(rift_devices(NULL, 0, NULL, 0), 0);
}

TEST(rift_info_without_a_device_explains_and_exits_0)
{
	char *out;

	need_no_device();
	CHECK_EQ(run(TOOL, &out), 0);
	CHECK_CONTAINS(out, "no RDMA device found.");
	CHECK_CONTAINS(out, "rdma_rxe");
	CHECK_CONTAINS(out, "rdma link add rxe0 type rxe netdev");
	CHECK_CONTAINS(out, "apt install rdma-core ibverbs-providers");
	CHECK_CONTAINS(out, "kernel modules:");
	CHECK_CONTAINS(out, "RLIMIT_MEMLOCK:");
	CHECK_CONTAINS(out, "huge pages:");
	free(out);

	CHECK_EQ(run(TOOL " --json", &out), 0);
	CHECK(out[0] == '{');
	CHECK_CONTAINS(out, "\"devices\": []");
	CHECK_CONTAINS(out, "\"no_device\": [\"");
	free(out);

	CHECK_EQ(run(TOOL " -l", &out), 0);
	CHECK_CONTAINS(out, "0 HCAs found:");
	free(out);
}

TEST(rift_info_check_accepts_a_good_config)
{
	char path[64], cmd[128], want[96], *out;

	write_config(path, sizeof(path),
		     "# a storage node\n[rdma]\nsq_depth = 512\n"
		     "[pool]\ninitial = \"32MiB\"\n");
	snprintf(cmd, sizeof(cmd), TOOL " --check %s", path);
	CHECK_EQ(run(cmd, &out), 0);
	snprintf(want, sizeof(want), "%s: ok\nnot from the defaults:\n", path);
	CHECK(!strncmp(out, want, strlen(want)));
	free(out);
	unlink(path);

	/* Nothing set: nothing to list. */
	write_config(path, sizeof(path), "# all defaults\n");
	snprintf(cmd, sizeof(cmd), TOOL " --check %s", path);
	CHECK_EQ(run(cmd, &out), 0);
	snprintf(want, sizeof(want), "%s: ok\nevery value is the default\n",
		 path);
	CHECK_STR(out, want);
	free(out);
	unlink(path);
}

/* The line of out that names key ("rdma.sq_depth = "), or NULL. */
static const char *line_of(const char *out, const char *key)
{
	char want[96];

	snprintf(want, sizeof(want), "\n    %s = ", key);
	return strstr(out, want);
}

TEST(rift_info_check_says_where_each_value_came_from)
{
	char path[64], cmd[256], want[160], *out;
	const char *l;

	/* The file sets three keys, one to its default value; the
	 * environment sets one of them again and one of its own. */
	write_config(path, sizeof(path),
		     "[progress]\npolling = \"adaptive\"\n"
		     "[rdma]\nsq_depth = 512\n"
		     "[session]\nsend_window = \"16MiB\"\n");
	snprintf(cmd, sizeof(cmd),
		 "RIFT_PROGRESS_POLLING=busy RIFT_POOL_MAX=2GiB " TOOL
		 " --check %s",
		 path);
	CHECK_EQ(run(cmd, &out), 0);
	/* the environment wins over the file, as in any rift program */
	l = line_of(out, "progress.polling");
	CHECK(l);
	CHECK(!strncmp(l, "\n    progress.polling = \"busy\" ", 31));
	CHECK_CONTAINS(l, " environment RIFT_PROGRESS_POLLING\n");
	l = line_of(out, "pool.max");
	CHECK(l);
	CHECK_CONTAINS(l, "= \"2GiB\" ");
	CHECK_CONTAINS(l, " environment RIFT_POOL_MAX\n");
	l = line_of(out, "rdma.sq_depth");
	CHECK(l);
	snprintf(want, sizeof(want), " file %s:4\n", path);
	CHECK_CONTAINS(l, want);
	l = line_of(out, "session.send_window");
	CHECK(l);
	snprintf(want, sizeof(want), " file %s:6 (the default value)\n", path);
	CHECK_CONTAINS(l, want);
	/* values from the defaults are not listed */
	CHECK(!line_of(out, "rdma.rq_depth"));
	CHECK_EQ(count_lines(out), 6); /* ok, the heading, 4 values */
	free(out);

	/* A mistake in the environment fails the check, naming it. */
	snprintf(cmd, sizeof(cmd), "RIFT_RDMA_SQ_DEPT=64 " TOOL " --check %s",
		 path);
	CHECK_EQ(run(cmd, &out), 1);
	CHECK_CONTAINS(out, "env RIFT_RDMA_SQ_DEPT: no such setting in [rdma]; "
			    "did you mean RIFT_RDMA_SQ_DEPTH?");
	CHECK(!strstr(out, ": ok"));
	free(out);
	snprintf(cmd, sizeof(cmd), "RIFT_RDMA_SQ_DEPTH=8 " TOOL " --check %s",
		 path);
	CHECK_EQ(run(cmd, &out), 1);
	CHECK_CONTAINS(out, "env RIFT_RDMA_SQ_DEPTH: ");
	free(out);
	unlink(path);
}

TEST(rift_info_check_names_the_place_of_an_error)
{
	char path[64], cmd[128], want[160], *out;

	write_config(path, sizeof(path), "# comment\n[rdma]\nsq_depth = 8\n");
	snprintf(cmd, sizeof(cmd), TOOL " --check %s", path);
	CHECK_EQ(run(cmd, &out), 1);
	snprintf(want, sizeof(want),
		 "%s:3:12: sq_depth = 8 is out of range 16..32768", path);
	CHECK_CONTAINS(out, want);
	free(out);

	write_config(path, sizeof(path), "[rdma]\n  sq_dept = 64\n");
	snprintf(cmd, sizeof(cmd), TOOL " --check=%s", path);
	CHECK_EQ(run(cmd, &out), 1);
	snprintf(want, sizeof(want),
		 "%s:2:3: unknown key 'sq_dept' in [rdma]; did you mean "
		 "'sq_depth'?",
		 path);
	CHECK_CONTAINS(out, want);
	free(out);
	unlink(path);

	/* Unreadable: the error of opening it. */
	CHECK_EQ(run(TOOL " --check /nonexistent/rift.toml", &out), 1);
	CHECK_CONTAINS(out, "/nonexistent/rift.toml: cannot open");
	free(out);

	/* --config goes through the same loader and fails the same way. */
	write_config(path, sizeof(path), "[rdma]\nsq_depth = 8\n");
	snprintf(cmd, sizeof(cmd), TOOL " --config %s", path);
	CHECK_EQ(run(cmd, &out), 1);
	snprintf(want, sizeof(want), "%s:2:12:", path);
	CHECK_CONTAINS(out, want);
	free(out);
	unlink(path);
}

TEST(rift_info_bad_option_exits_2_naming_it)
{
	char *out;

	CHECK_EQ(run(TOOL " --bogus", &out), 2);
	CHECK_CONTAINS(out, "'--bogus'");
	free(out);
	CHECK_EQ(run(TOOL " -z", &out), 2);
	CHECK_CONTAINS(out, "'z'");
	free(out);
	CHECK_EQ(run(TOOL " -i 0", &out), 2);
	CHECK_CONTAINS(out, "-i '0'");
	free(out);
	CHECK_EQ(run(TOOL " --check", &out), 2);
	CHECK_CONTAINS(out, "--check");
	free(out);
	CHECK_EQ(run(TOOL " stray", &out), 2);
	CHECK_CONTAINS(out, "'stray'");
	free(out);
}

TEST(rift_info_prints_its_version)
{
	char *out, want[64];

	/* as rift-perf -V: the library's version, which is the package's */
	snprintf(want, sizeof(want), "rift-info (rift %s)\n",
		 rift_version_string());
	CHECK_EQ(run(TOOL " -V", &out), 0);
	CHECK_STR(out, want);
	free(out);
	CHECK_EQ(run(TOOL " --version", &out), 0);
	CHECK_STR(out, want);
	free(out);
}

TEST(rift_info_warns_when_memlock_is_below_the_pool)
{
	char path[64], cmd[160], *out;

	/* Lowering a soft limit needs no privilege. */
	CHECK_EQ(run("ulimit -S -l 1024 && " TOOL, &out), 0);
	CHECK_CONTAINS(out, "RLIMIT_MEMLOCK:       1 MiB");
	CHECK_CONTAINS(out, "warning: the locked-memory limit (RLIMIT_MEMLOCK "
			    "1 MiB) is below what the pool");
	CHECK_CONTAINS(out, "16 MiB, pool.initial");
	CHECK_CONTAINS(out, "'ulimit -l 16384'");
	CHECK_CONTAINS(out, "LimitMEMLOCK=infinity");
	CHECK_CONTAINS(out, "/etc/security/limits.conf");
	free(out);

	/* A pool of one 2 MiB region fits under 4 MiB: nothing to say. */
	write_config(path, sizeof(path),
		     "[pool]\ninitial = \"2MiB\"\nincrement = \"2MiB\"\n"
		     "max = \"2MiB\"\n");
	snprintf(cmd, sizeof(cmd), "ulimit -S -l 4096 && " TOOL " --config %s",
		 path);
	CHECK_EQ(run(cmd, &out), 0);
	CHECK_CONTAINS(out, "2 MiB at start (pool.initial)\n");
	CHECK_CONTAINS(out, "2 MiB at most (pool.max)\n");
	CHECK(strstr(out, "warning:") == NULL);
	free(out);
	unlink(path);
}

TEST(memlock_need_counts_whole_pool_regions)
{
	rift_config cfg;
	uint64_t max = 0;

	/* Defaults: 16 MiB regions (pool_increment), 64 of them in 1 GiB. */
	CHECK_EQ(rift_config_memlock_need(NULL, &max), 16u << 20);
	CHECK_EQ(max, 1u << 30);

	rift_config_init(&cfg);
	CHECK_EQ(rift_config_memlock_need(&cfg, NULL), 16u << 20);

	/* Regions hold whole 2 MiB blocks: a 1 MiB increment becomes 2. */
	cfg.pool_increment = 1u << 20;
	cfg.pool_initial = 3u << 20;
	cfg.pool_max = 5u << 20;
	CHECK_EQ(rift_config_memlock_need(&cfg, &max), 4u << 20);
	CHECK_EQ(max, 4u << 20);

	/* The start never exceeds the whole regions that fit in pool_max. */
	cfg.pool_initial = 5u << 20;
	CHECK_EQ(rift_config_memlock_need(&cfg, &max), 4u << 20);

	/* A region that does not fit pool_max is still one region. */
	cfg.pool_increment = 64u << 20;
	cfg.pool_initial = 1u << 20;
	cfg.pool_max = 8u << 20;
	CHECK_EQ(rift_config_memlock_need(&cfg, &max), 64u << 20);
	CHECK_EQ(max, 64u << 20);

	cfg.pool_initial = 0;
	CHECK_EQ(rift_config_memlock_need(&cfg, &max), 0);

	/* Invalid: initial above max. */
	cfg.pool_initial = 16u << 20;
	max = 0;
	CHECK(rift_config_memlock_need(&cfg, &max) == UINT64_MAX);
	CHECK(max == UINT64_MAX);
	CHECK_CONTAINS(rift_ctx_last_error(NULL), "pool_initial");
}

/* ---- lab ---- */

/* The port's RoCE v2 GID whose IP is addr, or NULL. */
static const rift_gid_info *find_gid(const rift_port_info *p, const char *addr)
{
	for (uint32_t i = 0; i < p->gid_count && i < RIFT_PORT_MAX_GIDS; i++)
		if (p->gids[i].type == RIFT_GID_ROCE_V2 &&
		    strcmp(p->gids[i].ip, addr) == 0)
			return &p->gids[i];
	return NULL;
}

TEST_T(rift_devices_reports_the_rxe_device)
{
	rift_device_info *devs;
	const rift_device_info *d = NULL;
	const rift_gid_info *g = NULL;
	uint64_t opened, closed;
	char err[256];
	int n;

	need_rdma();
	n = rift_devices(NULL, 0, err, sizeof(err));
	CHECK(n >= 1);
	devs = calloc((size_t)n, sizeof(*devs));
	CHECK(devs != NULL);
	opened = rift__vb_dev_calls[RIFT_VB_DEV_open_device];
	closed = rift__vb_dev_calls[RIFT_VB_DEV_close_device];
	CHECK_EQ(rift_devices(devs, n, err, sizeof(err)), n);
	CHECK_STR(err, "");
	/* Every device opened was closed again. */
	CHECK_EQ(rift__vb_dev_calls[RIFT_VB_DEV_open_device] - opened, n);
	CHECK_EQ(rift__vb_dev_calls[RIFT_VB_DEV_close_device] - closed, n);
	for (int i = 0; i < n && !g; i++) {
		CHECK_EQ(devs[i].status, 0);
		CHECK(devs[i].port_count >= 1);
		g = find_gid(&devs[i].ports[0], rt_host());
		if (g)
			d = &devs[i];
	}
	if (!d)
		FAIL("no device has a RoCE v2 GID for %s", rt_host());
	printf("%s: guid %s, port 1 %s/%s, %s, mtu %u/%u, %" PRIu64
	       " Mb/s, GID[%u] %s (%s) on %s\n",
	       d->name, d->node_guid_str, d->ports[0].state_name,
	       d->ports[0].phys_state_name, d->ports[0].link_layer,
	       d->ports[0].active_mtu, d->ports[0].max_mtu,
	       d->ports[0].speed_mbps, g->index, g->gid, g->ip, g->netdev);
	CHECK(strncmp(d->name, "rxe", 3) == 0);
	CHECK_STR(d->transport, "InfiniBand");
	CHECK(d->node_guid != 0);
	CHECK_EQ(strlen(d->node_guid_str), 19);
	CHECK_EQ(d->ports[0].number, 1);
	CHECK_EQ(d->ports[0].state, 4);
	CHECK_STR(d->ports[0].state_name, "ACTIVE");
	CHECK_STR(d->ports[0].phys_state_name, "LINK_UP");
	CHECK_STR(d->ports[0].link_layer, "Ethernet");
	CHECK(d->ports[0].active_mtu >= 256 && d->ports[0].active_mtu <= 4096);
	CHECK(d->ports[0].max_mtu >= d->ports[0].active_mtu);
	CHECK(d->ports[0].speed_mbps > 0);
	CHECK(d->ports[0].gid_table_len >= d->ports[0].gid_count);
	CHECK(g->netdev[0] != '\0');
	CHECK_STR(d->ports[0].netdev, g->netdev);
	/* The IPv4-mapped GID of the lab address. */
	CHECK(strncmp(g->gid, "::ffff:", 7) == 0);
	CHECK_STR(g->gid + 7, rt_host());
	CHECK(d->limits.max_qp > 0 && d->limits.max_cqe > 0);
	free(devs);
}

TEST_T(rift_info_lists_the_rxe_device)
{
	char want[160], *out;

	need_rdma();
	CHECK_EQ(run(TOOL, &out), 0);
	CHECK_CONTAINS(out, "hca_id: rxe");
	CHECK(strstr(out, "no RDMA device") == NULL);
	CHECK_CONTAINS(out, "state ACTIVE physical_state LINK_UP netdev ");
	CHECK_CONTAINS(out, "ACTIVE (4)");
	CHECK_CONTAINS(out, "link_layer:         Ethernet");
	snprintf(want, sizeof(want), "::ffff:%s, RoCE v2, IPv4 %s, netdev ",
		 rt_host(), rt_host());
	CHECK_CONTAINS(out, want);
	CHECK_CONTAINS(out, "rdma_rxe (loaded)");
	free(out);

	CHECK_EQ(run(TOOL " --json -v", &out), 0);
	snprintf(want, sizeof(want),
		 "\"type\": \"RoCE v2\", \"ip\": \"%s\", \"netdev\": ",
		 rt_host());
	CHECK_CONTAINS(out, want);
	CHECK_CONTAINS(out, "\"state\": \"ACTIVE\"");
	CHECK_CONTAINS(out, "\"link_layer\": \"Ethernet\"");
	CHECK_CONTAINS(out, "\"max_qp\": ");
	free(out);

	/* -d and -i narrow the report; naming nothing is an error. */
	CHECK_EQ(run(TOOL " -d no_such_dev", &out), 1);
	CHECK_CONTAINS(out, "no RDMA device 'no_such_dev' (devices: rxe");
	free(out);
	CHECK_EQ(run(TOOL " -i 9", &out), 1);
	CHECK_CONTAINS(out, "has no port 9");
	free(out);
}
