/*
 * rift-info - what this machine offers rift: RDMA devices, ports and GIDs,
 * the kernel modules behind them, the locked-memory limit and huge pages
 * against what the configured pool needs, and a config file check: the
 * file and the RIFT_* environment as a rift program applies them, and
 * where each value that is not the default came from.
 *
 *   rift-info [-d DEV] [-i PORT] [-v] [--json] [--config FILE]
 *   rift-info -l
 *   rift-info --check FILE
 *
 * Uses only rift.h, like any user.  Options and words follow rdma-core's
 * ibv_devinfo (-d, -i, -l, -v, hca_id, port states) and iproute2's
 * `rdma link` (state ACTIVE physical_state LINK_UP netdev eth0).
 *
 * Exit status: 0 when the report was made, also on a machine without an
 * RDMA device (it says so and what to install or load); 1 for a real
 * error (a config file that does not load, -d or -i naming nothing, the
 * library failing to list devices or to query one); 2 for a bad option.
 *
 * The code is in several files; info.h says which holds what.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"

/* ---- main ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rift-info [options]      RDMA devices, modules and "
		"memory limits\n"
		"       rift-info --check FILE   validate a rift config file "
		"and "
		"the RIFT_*\n"
		"                                environment; show what is not "
		"the default\n"
		"\n"
		"Options:\n"
		"  -d, --ib-dev=DEV     only device DEV (default: all)\n"
		"  -i, --ib-port=PORT   only port PORT (default: all)\n"
		"  -l, --list           print only the device names\n"
		"  -v, --verbose        every GID entry (empty ones too) and "
		"the device limits\n"
		"      --json           the same report as JSON\n"
		"      --config=FILE    size the memory checks from FILE "
		"(plus RIFT_* variables)\n"
		"      --check=FILE     check FILE, then RIFT_* variables, and "
		"exit: 0 if they\n"
		"                       load (each value not from the defaults "
		"is listed\n"
		"                       with where it came from), 1 if not\n"
		"  -h, --help           this text\n"
		"  -V, --version        the version of rift\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	enum { OPT_JSON = 256, OPT_CONFIG, OPT_CHECK };
	static const struct option longopts[] = {
		{"ib-dev", required_argument, NULL, 'd'},
		{"ib-port", required_argument, NULL, 'i'},
		{"list", no_argument, NULL, 'l'},
		{"verbose", no_argument, NULL, 'v'},
		{"json", no_argument, NULL, OPT_JSON},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"check", required_argument, NULL, OPT_CHECK},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	while ((c = getopt_long(argc, argv, "d:i:lvhV", longopts, NULL)) !=
	       -1) {
		char *end;
		unsigned long v;

		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 'i':
			errno = 0;
			v = strtoul(optarg, &end, 0);
			if (errno || *end || end == optarg || v < 1 ||
			    v > 255) {
				fprintf(stderr,
					"rift-info: -i '%s': a port number is "
					"1..255\n",
					optarg);
				return EXIT_USAGE;
			}
			o->port = (unsigned)v;
			break;
		case 'l':
			o->list = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case OPT_CHECK:
			o->check = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			/* as rift-perf -V: the library is the package */
			printf("rift-info (rift %s)\n", rift_version_string());
			exit(0);
		default:
			/* getopt has named the option on stderr. */
			fprintf(stderr, "Try 'rift-info --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr,
			"rift-info: unexpected argument '%s'\n"
			"Try 'rift-info --help'.\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	return 0;
}

static int load_config(const struct opts *o, struct memory *mem)
{
	char err[RIFT_CONFIG_ERRLEN];

	rift_config_init(&mem->cfg);
	mem->cfg_src = "defaults";
	if (o->config) {
		if (rift_config_load(&mem->cfg, o->config, err, sizeof(err))) {
			fprintf(stderr, "rift-info: %s\n", err);
			return EXIT_ERROR;
		}
		mem->cfg_src = o->config;
	}
	if (rift_config_env(&mem->cfg, err, sizeof(err))) {
		fprintf(stderr, "rift-info: %s\n", err);
		return EXIT_ERROR;
	}
	return 0;
}

/* -d and -i name something that exists?  Says what does if not. */
static int check_selection(const rift_device_info *devs, int n,
			   const struct opts *o)
{
	const rift_device_info *d = NULL;
	char names[256] = "";
	size_t used = 0;

	for (int i = 0; i < n; i++) {
		if (used < sizeof(names))
			used += (size_t)snprintf(names + used,
						 sizeof(names) - used, "%s%s",
						 i ? ", " : "", devs[i].name);
		if (o->dev && strcmp(devs[i].name, o->dev) == 0)
			d = &devs[i];
	}
	if (o->dev && !d) {
		fprintf(stderr, "rift-info: no RDMA device '%s' (%s%s)\n",
			o->dev, n ? "devices: " : "there is none",
			n ? names : "");
		return EXIT_ERROR;
	}
	for (int i = 0; o->port && i < n; i++) {
		if (o->dev && &devs[i] != d)
			continue;
		if (o->port > devs[i].port_count) {
			fprintf(stderr,
				"rift-info: %s has no port %u (%u "
				"port%s)\n",
				devs[i].name, o->port, devs[i].port_count,
				devs[i].port_count == 1 ? "" : "s");
			return EXIT_ERROR;
		}
		if (o->port > RIFT_DEVICE_MAX_PORTS) {
			fprintf(stderr,
				"rift-info: %s port %u: rift reports "
				"at most %d ports per device\n",
				devs[i].name, o->port, RIFT_DEVICE_MAX_PORTS);
			return EXIT_ERROR;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct kernel k;
	struct modules m;
	struct memory mem;
	struct notes nt = {.n_warn = 0};
	rift_device_info *devs = NULL;
	char err[256], hints[16][400];
	int rc, n, n_hints = 0, status = 0;

	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	if (o.check)
		return check_file(o.check);
	memset(&mem, 0, sizeof(mem));
	rc = load_config(&o, &mem);
	if (rc)
		return rc;

	n = rift_devices(NULL, 0, err, sizeof(err));
	if (n > 0) {
		devs = calloc((size_t)n, sizeof(*devs));
		if (!devs) {
			fprintf(stderr,
				"rift-info: out of memory for %d "
				"devices\n",
				n);
			return EXIT_ERROR;
		}
		/* A device may come or go in between: take the smaller. */
		rc = rift_devices(devs, n, err, sizeof(err));
		n = rc < n ? rc : n;
	}
	if (n < 0) {
		fprintf(stderr,
			"rift-info: cannot list RDMA devices: %s (%s)\n", err,
			rift_err_name(n));
		status = EXIT_ERROR;
		n = 0;
	}
	if (o.list) {
		printf("%d HCA%s found:\n", n, n == 1 ? "" : "s");
		for (int i = 0; i < n; i++)
			printf("\t%s\n", devs[i].name);
		free(devs);
		return status;
	}
	if (!status && (o.dev || o.port) && n > 0) {
		status = check_selection(devs, n, &o);
		if (status) {
			free(devs);
			return status;
		}
	}

	kernel_init(&k);
	modules_scan(&k, &m);
	memory_scan(&mem, &nt);
	if (n == 0 && !status) {
		n_hints = no_device_hints(&k, &m, err, hints, 16);
		if (o.dev) {
			fprintf(stderr,
				"rift-info: no RDMA device '%s' (there "
				"is none)\n",
				o.dev);
			status = EXIT_ERROR;
		}
	}
	for (int i = 0; i < n; i++)
		if (devs[i].status &&
		    (!o.dev || strcmp(devs[i].name, o.dev) == 0))
			status = EXIT_ERROR;

	if (o.json) {
		json_report(devs, n, &o, &m, &mem, hints, n_hints, &nt);
	} else {
		if (n_hints) {
			printf("no RDMA device found.\n");
			for (int i = 0; i < n_hints; i++)
				print_wrapped("    ", hints[i], 6);
			putchar('\n');
		}
		for (int i = 0; i < n; i++)
			if (!o.dev || strcmp(devs[i].name, o.dev) == 0)
				print_device(&devs[i], &o);
		print_modules(&m, o.verbose);
		print_memory(&mem);
		for (int i = 0; i < nt.n_warn; i++)
			print_wrapped("warning: ", nt.warn[i], 4);
	}
	notes_free(&nt);
	kernel_free(&k);
	free(devs);
	return status;
}
