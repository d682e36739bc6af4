/* rift-kv's config file and command line: every error names where. */
#include <unistd.h>

#include "../../examples/rift-kv/config.h"
#include "../runner.h"

static char path[64];

static const char *file(const char *text)
{
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/kvcfg-%d.toml", (int)getpid());
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Load text, run the checks; the error, or "" when it passed. */
static const char *load(struct kv_config *c, const char *text)
{
	static char err[KV_CFG_ERRLEN];

	kv_config_defaults(c);
	err[0] = '\0';
	if (kv_config_load(c, file(text), err, sizeof(err)) == 0)
		kv_config_check(c, err, sizeof(err));
	unlink(path);
	return err;
}

TEST(kv_config_file_sets_every_knob)
{
	struct kv_config c;
	char url[300];

	CHECK_STR(load(&c, "# rift-kv\n[network]\nport = 7000  # resp\n"
			   "bind = \"::1\"\nrdma_enabled = true\n"
			   "rdma_port = 7400\nrdma_bind = \"10.0.0.1\"\n"
			   "rdma_gid_index = 3\nrdma_queue_depth = 512\n"
			   "rdma_fallback = \"none\"\n"),
		  "");
	CHECK_EQ(c.port, 7000);
	CHECK_STR(c.bind, "::1");
	CHECK_EQ(c.rdma_enabled, 1);
	CHECK_EQ(c.rdma_port, 7400);
	CHECK_EQ(c.rdma_gid_index, 3);
	CHECK_EQ(c.rdma_queue_depth, 512);
	CHECK_EQ(c.rdma_fallback_tcp, 0);
	CHECK_EQ(kv_config_rift_url(&c, NULL, url, sizeof(url)), 0);
	CHECK_STR(url, "rdma://10.0.0.1:7400");
	CHECK_CONTAINS(c.origin[KV_RDMA_PORT], ".toml:6");
}

TEST(kv_config_replication_section)
{
	struct kv_config c;
	char url[300];

	CHECK_STR(load(&c, "[network]\nport = 7000\n[replication]\n"
			   "replicaof = \"10.0.0.1 6380\"\n"
			   "use_rdma_write = true\nbacklog_size = 65536\n"
			   "ring_size = 8192\nreplica_file = \"r.aof\"\n"),
		  "");
	CHECK_STR(c.replicaof, "auto://10.0.0.1:6380");
	CHECK_EQ(c.use_rdma_write, 1);
	CHECK_EQ(c.backlog_size, 65536);
	CHECK_EQ(c.ring_size, 8192);
	CHECK_STR(c.replica_file, "r.aof");
	/* a URL as it is, an IPv6 host in brackets; sections in any order */
	CHECK_STR(load(&c, "[replication]\nreplicaof = "
			   "\"rdma://10.0.0.1:6380,10.0.1.1:6380\"\n"
			   "[network]\nport = 7000\n"),
		  "");
	CHECK_STR(c.replicaof, "rdma://10.0.0.1:6380,10.0.1.1:6380");
	CHECK_EQ(kv_config_primary_url("::1", 3, "6380", 4, url, sizeof(url)), 0);
	CHECK_STR(url, "auto://[::1]:6380");
	CHECK_EQ(kv_config_primary_url("a b", 3, "6380", 4, url, sizeof(url)), -1);
	CHECK_EQ(kv_config_primary_url("h", 1, "0", 1, url, sizeof(url)), -1);
	CHECK_EQ(kv_config_primary_url("h", 1, "65536", 5, url, sizeof(url)), -1);
	/* defaults */
	CHECK_STR(load(&c, "[network]\n"), "");
	CHECK_EQ(c.use_rdma_write, 1);
	CHECK_EQ(c.backlog_size, 1 << 20);
	CHECK_EQ(c.ring_size, 1 << 20);
	CHECK_STR(c.replicaof, "");
	/* errors */
	CHECK_CONTAINS(load(&c, "[network]\nring_size = 8192\n"),
		       ".toml:2: ring_size belongs in [replication], not "
		       "[network]");
	CHECK_CONTAINS(load(&c, "[replication]\nport = 1\n"),
		       ".toml:2: port belongs in [network]");
	CHECK_CONTAINS(load(&c, "[replication]\n[replication]\n"),
		       ".toml:2: [replication] given twice");
	CHECK_CONTAINS(load(&c, "[replication]\nreplicaof = \"h 0\"\n"),
		       ".toml:2: replicaof = 'h 0': expected \"HOST PORT\"");
	CHECK_CONTAINS(load(&c, "[replication]\nring_size = 100\n"),
		       "4096..1073741824");
	CHECK_CONTAINS(load(&c, "[replication]\nbacklog_size = 1\n"),
		       "16384..17179869184");
	CHECK_CONTAINS(load(&c, "[replication]\nuse_rdma_write = false\n"
				"ring_size = 8192\n"),
		       ".toml:3: ring_size cannot take effect: use_rdma_write "
		       "= false");
}

TEST(kv_config_file_errors_name_file_line_key)
{
	struct kv_config c;

	CHECK_CONTAINS(load(&c, "[network]\nprot = 1\n"),
		       ".toml:2: unknown key 'prot'");
	CHECK_CONTAINS(load(&c, "[network]\nport = \"1\"\n"),
		       ".toml:2: port: expected an integer");
	CHECK_CONTAINS(load(&c, "[network]\nport = 0\n"),
		       ".toml:2: port = '0' is not an integer in 1..65535");
	CHECK_CONTAINS(load(&c, "[network]\nport = 12x\n"),
		       ".toml:2: port = '12x'");
	CHECK_CONTAINS(load(&c, "[network]\nport = 1 2\n"),
		       ".toml:2: port: unexpected text after the value");
	CHECK_CONTAINS(load(&c, "[network]\nbind = \"example.com\"\n"),
		       ".toml:2: bind = 'example.com' is not a numeric");
	CHECK_CONTAINS(load(&c, "[net]\n"), ".toml:1: unknown section [net]");
	CHECK_CONTAINS(load(&c, "port = 1\n"), ".toml:1: key 'port' before");
	CHECK_CONTAINS(load(&c, "[network]\nport = 1\nport = 2\n"),
		       ".toml:3: port set twice (first by");
	CHECK_CONTAINS(load(&c, "[network]\nbind = \"1.2.3.4\n"),
		       ".toml:2: bind: unterminated string");
	CHECK_CONTAINS(load(&c, "[network]\nrdma_enabled = 1\n"),
		       ".toml:2: rdma_enabled = '1': expected true or false");
	CHECK_CONTAINS(load(&c, "[network]\nrdma_queue_depth = 8\n"),
		       "16..32768");
}

TEST(kv_config_knobs_that_cannot_take_effect_are_refused)
{
	struct kv_config c;

	CHECK_CONTAINS(load(&c, "[network]\nrdma_gid_index = 1\n"),
		       ".toml:2: rdma_gid_index cannot take effect: RDMA is "
		       "off");
	CHECK_CONTAINS(load(&c, "[network]\nrdma_enabled = true\n"),
		       "needs rdma_port");
	CHECK_CONTAINS(load(&c, "[network]\nrdma_enabled = false\n"
				"rdma_port = 7400\n"),
		       ".toml:3: rdma_port cannot take effect");
	CHECK_CONTAINS(load(&c, "[network]\nrdma_port = 6379\n"),
		       "rdma_port 6379 is the RESP port too");
	CHECK_CONTAINS(load(&c, "[network]\nrdma_port = 1\nrdma_bind = "
				"\"1.1.1.1\"\nrdma_device = \"rxe0\"\n"),
		       "rdma_device and rdma_bind");
	CHECK_CONTAINS(load(&c, "[network]\nrift_url = \"tcp://0.0.0.0:1\"\n"
				"rdma_queue_depth = 64\n"),
		       ".toml:3: rdma_queue_depth cannot take effect: "
		       "rift_url");
	CHECK_CONTAINS(load(&c, "[network]\nrift_url = \"auto://0.0.0.0:1\"\n"
				"rdma_port = 5\n"),
		       ".toml:3: rdma_port cannot take effect with rift_url");
	/* rdma_port alone turns RDMA on, auto:// by default */
	CHECK_STR(load(&c, "[network]\nrdma_port = 7400\n"), "");
	CHECK_EQ(c.rdma_enabled, 1);
	CHECK_EQ(c.rdma_fallback_tcp, 1);
}

TEST(kv_config_command_line)
{
	struct kv_config c;
	char err[KV_CFG_ERRLEN], url[300];
	char *ok[] = { "rift-kv", "--port", "7001", "--rdma-port", "7401",
		       "--rdma-bind", "fd00::1", "--rdma-queue-depth", "128",
		       NULL };
	char *bad[] = { "rift-kv", "--port", "x", NULL };
	char *unknown[] = { "rift-kv", "--nope", "1", NULL };
	char *novalue[] = { "rift-kv", "--port", NULL };

	kv_config_defaults(&c);
	CHECK_EQ(kv_config_args(&c, 9, ok, err, sizeof(err)), 0);
	CHECK_EQ(c.port, 7001);
	CHECK_EQ(c.rdma_enabled, 1);
	CHECK_EQ(c.rdma_queue_depth, 128);
	CHECK_EQ(kv_config_rift_url(&c, NULL, url, sizeof(url)), 0);
	CHECK_STR(url, "auto://[fd00::1]:7401");
	kv_config_defaults(&c);
	CHECK_EQ(kv_config_args(&c, 3, bad, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "--port: port = 'x' is not an integer");
	kv_config_defaults(&c);
	CHECK_EQ(kv_config_args(&c, 3, unknown, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "--nope: unknown key 'nope'");
	kv_config_defaults(&c);
	CHECK_EQ(kv_config_args(&c, 2, novalue, err, sizeof(err)), -1);
	CHECK_CONTAINS(err, "--port needs a value");
}

TEST(kv_config_metrics_endpoint)
{
	struct kv_config c;
	char err[KV_CFG_ERRLEN];
	char *args[] = { "rift-kv", "--metrics-port", "0", "--metrics-bind",
			 "::1", NULL };

	/* off unless metrics_port is set; metrics_bind is bind's */
	CHECK_STR(load(&c, "[network]\n"), "");
	CHECK_EQ(c.metrics_port, -1);
	CHECK_STR(load(&c, "[network]\nmetrics_port = 9121\n"), "");
	CHECK_EQ(c.metrics_port, 9121);
	CHECK_STR(c.metrics_bind, "");
	CHECK_STR(load(&c, "[network]\nmetrics_port = 9121\n"
			   "metrics_bind = \"0.0.0.0\"\n"),
		  "");
	CHECK_STR(c.metrics_bind, "0.0.0.0");
	kv_config_defaults(&c);
	CHECK_EQ(kv_config_args(&c, 5, args, err, sizeof(err)), 0);
	CHECK_EQ(c.metrics_port, 0); /* any free port, on the ready line */
	CHECK_STR(c.metrics_bind, "::1");

	CHECK_CONTAINS(load(&c, "[network]\nmetrics_bind = \"0.0.0.0\"\n"),
		       ".toml:2: metrics_bind cannot take effect: no "
		       "metrics_port");
	CHECK_CONTAINS(load(&c, "[network]\nmetrics_port = 6379\n"),
		       ".toml:2: metrics_port 6379 is the RESP port too");
	CHECK_CONTAINS(load(&c, "[network]\nrdma_port = 7400\n"
				"metrics_port = 7400\n"),
		       ".toml:3: metrics_port 7400 is rdma_port too");
	CHECK_CONTAINS(load(&c, "[network]\nmetrics_port = 65536\n"),
		       "not an integer in 0..65535");
	CHECK_CONTAINS(load(&c, "[network]\nmetrics_bind = \"localhost\"\n"),
		       ".toml:2: metrics_bind = 'localhost' is not a numeric");
}

TEST(kv_config_request_limits)
{
	struct kv_config c;
	char err[KV_CFG_ERRLEN];
	char *args[] = { "rift-kv", "--proto-max-bulk-len", "2097152",
			 "--client-query-buffer-limit", "4194304", NULL };

	/* Redis's defaults */
	CHECK_STR(load(&c, "[network]\n"), "");
	CHECK_EQ(c.proto_max_bulk_len, (size_t)512 << 20);
	CHECK_EQ(c.client_query_buffer_limit, (size_t)1 << 30);
	CHECK_STR(load(&c, "[network]\nproto_max_bulk_len = 1048576\n"
			   "client_query_buffer_limit = 8388608\n"),
		  "");
	CHECK_EQ(c.proto_max_bulk_len, (size_t)1 << 20);
	CHECK_EQ(c.client_query_buffer_limit, (size_t)8 << 20);
	kv_config_defaults(&c);
	CHECK_EQ(kv_config_args(&c, 5, args, err, sizeof(err)), 0);
	CHECK_EQ(c.proto_max_bulk_len, (size_t)2 << 20);
	CHECK_EQ(c.client_query_buffer_limit, (size_t)4 << 20);
	/* a query limit alone may be below the default bulk limit */
	CHECK_STR(load(&c, "[network]\nclient_query_buffer_limit = "
			   "1048576\n"),
		  "");
	CHECK_CONTAINS(load(&c, "[network]\nproto_max_bulk_len = 1000\n"),
		       ".toml:2: proto_max_bulk_len = '1000' is not an "
		       "integer in 1048576..");
	CHECK_CONTAINS(load(&c, "[network]\nclient_query_buffer_limit = "
				"\"1gb\"\n"),
		       ".toml:2: client_query_buffer_limit: expected an "
		       "integer");
	CHECK_CONTAINS(load(&c, "[network]\nproto_max_bulk_len = 4194304\n"
				"client_query_buffer_limit = 4194304\n"),
		       ".toml:2: proto_max_bulk_len 4194304 cannot take "
		       "effect: a whole command is at most "
		       "client_query_buffer_limit 4194304 (");
}

/* Valkey's RDMA protocol: off unless valkey_rdma_port is set; RESP's TCP
 * port may share its number (as Valkey's do), the rift listener not. */
TEST(kv_config_valkey_rdma)
{
	struct kv_config c;
	char err[KV_CFG_ERRLEN];
	char *args[] = { "rift-kv", "--valkey-rdma-port", "6379",
			 "--valkey-rdma-bind", "10.77.0.1", NULL };

	CHECK_STR(load(&c, "[network]\n"), "");
	CHECK_EQ(c.valkey_rdma_port, 0);
	CHECK_STR(load(&c, "[network]\nvalkey_rdma_port = 6379\n"), "");
	CHECK_EQ(c.valkey_rdma_port, 6379);
	CHECK_EQ(c.rdma_enabled, 0); /* the rift listener stays off */
	kv_config_defaults(&c);
	CHECK_EQ(kv_config_args(&c, 5, args, err, sizeof(err)), 0);
	CHECK_EQ(c.valkey_rdma_port, 6379);
	CHECK_STR(c.valkey_rdma_bind, "10.77.0.1");
	CHECK_CONTAINS(load(&c, "[network]\nvalkey_rdma_bind = \"10.0.0.1\"\n"),
		       ".toml:2: valkey_rdma_bind cannot take effect: no "
		       "valkey_rdma_port");
	CHECK_CONTAINS(load(&c, "[network]\nrdma_port = 7400\n"
				"valkey_rdma_port = 7400\n"),
		       ".toml:3: valkey_rdma_port 7400 is rdma_port too");
	CHECK_CONTAINS(load(&c, "[network]\nvalkey_rdma_bind = \"host\"\n"),
		       "is not a numeric");
}
